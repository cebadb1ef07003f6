#!/usr/bin/env bash
# The load test of docs/serving.md: `pjrt serve` beside a Python server that calls
# jax.jit(exported.call) (tools/jax_oip_server.py), both driven by the same load generator
# (`pjrt bench serve`, binary tensors, concurrency 1..16) on the same machine, one server at
# a time. Models: the exported MLP (tests/data) and the 27M-parameter decoder transformer of
# tools/gen_transformer_export.py (weights from safetensors, uploaded once by both servers).
# Per server and model: throughput and p50/p99 latency per concurrency level; start-to-ready
# time; peak memory (VmHWM) after the load. Writes OUT/serving.json; tools/plot_serving.py
# draws the plots from it.
#
#     tools/bench_serve.sh [OUT]        # default OUT: docs/figures
#
# Needs a release build (cargo build --release -p pjrt-cli) and JAX 0.10.2's venv
# (target/jax-venv-0.10.2, made by tools/jax_venv.py), which also writes the transformer.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-docs/figures}"
PJRT="${PJRT:-target/release/pjrt}"
PY="${JAX_PYTHON:-target/jax-venv-0.10.2/bin/python}"
REQUESTS="${REQUESTS:-300}"
mkdir -p "$OUT"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"; kill $(jobs -p) 2>/dev/null || true' EXIT

"$PY" tools/gen_transformer_export.py export "$scratch/tfm" >/dev/null
mlp=tests/data/jax_export/jax-0.10.2/mlp_f32
mlp_inputs=(--input "$mlp/in0.npy" --input "$mlp/in1.npy" --input "$mlp/in2.npy" --input "$mlp/in3.npy" --input "$mlp/in4.npy")
models=(--model "mlp=$mlp/model.jaxexport" --model "transformer=$scratch/tfm/model.jaxexport:params=$scratch/tfm/params.safetensors")

# Starts a server ($@), waits for its ready line; sets PID, URL and READY_MS (from the spawn).
start() {
    local log="$scratch/stdout.$RANDOM"
    local t0
    t0=$(date +%s%N)
    "$@" >"$log" 2>"$scratch/server.log" &
    PID=$!
    until grep -q 'http://' "$log"; do
        kill -0 "$PID" 2>/dev/null || { cat "$scratch/server.log" >&2; exit 1; }
        sleep 0.005
    done
    READY_MS=$(( ($(date +%s%N) - t0) / 1000000 ))
    URL=$(grep -o 'http://[0-9.:]*' "$log" | head -1)
}

peak_mib() { awk '/VmHWM/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }

results="$scratch/results.jsonl"
: >"$results"
for server in "pjrt serve" "JAX"; do
    if [ "$server" = "pjrt serve" ]; then
        start env PJRT_CACHE_DIR="$scratch/cache" "$PJRT" serve --port 0 --no-grpc "${models[@]}"
    else
        start "$PY" tools/jax_oip_server.py --port 0 "${models[@]}"
    fi
    echo "$server: ready in $READY_MS ms at $URL" >&2
    for model in mlp transformer; do
        if [ "$model" = mlp ]; then inputs=("${mlp_inputs[@]}"); else inputs=(--input "$scratch/tfm/tokens.npy"); fi
        requests=$REQUESTS
        [ "$model" = transformer ] && requests=$((REQUESTS / 3))
        "$PJRT" bench --json serve --url "$URL" --model "$model" "${inputs[@]}" --requests "$requests" \
            --concurrency 1,2,4,8,16 --label "$server" >"$scratch/bench.json"
        python3 - "$server" "$model" "$READY_MS" "$scratch/bench.json" >>"$results" <<'EOF'
import json, sys
server, model, ready, path = sys.argv[1:]
report = json.load(open(path))
print(json.dumps({"server": server, "model": model, "ready_ms": int(ready), "levels": report["levels"]}))
EOF
    done
    peak=$(peak_mib "$PID")
    kill "$PID"
    wait "$PID" 2>/dev/null || true
    python3 - "$server" "$peak" >>"$results" <<'EOF'
import json, sys
print(json.dumps({"server": sys.argv[1], "peak_mib": float(sys.argv[2])}))
EOF
done

python3 - "$results" "$OUT/serving.json" <<'EOF'
import json, os, platform, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
summary = {"machine": f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.machine()}",
           "runs": [r for r in rows if "levels" in r],
           "memory": {r["server"]: r["peak_mib"] for r in rows if "peak_mib" in r}}
json.dump(summary, open(sys.argv[2], "w"), indent=1)
print(json.dumps(summary["memory"]))
EOF
echo "wrote $OUT/serving.json" >&2
