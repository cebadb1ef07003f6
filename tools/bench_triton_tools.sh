#!/usr/bin/env bash
# Triton's load tool, perf_analyzer (HTTP and gRPC), beside our own load generator, `pjrt bench
# serve` (HTTP, binary tensors), against one `pjrt serve` (release build) on the same machine, at
# concurrency 1..4: the exported MLP of the test data (unbatched, f32[4,8] and its weights in
# each request) and Triton's example model "simple" (add_sub, int32 [b,16], batched: at most 8
# rows, a 2 ms gathering window). Prints a markdown table of requests per second and p50/p99
# latency (docs/serving.md has it).
#
#   tools/bench_triton_tools.sh [CLIENTS_VENV]
#
# CLIENTS_VENV: a virtual environment with tools/serving-clients.txt installed (default: the one
# .ci/run keeps, ~/.cache/pjrt-client/ci-serving-clients-venv). perf_analyzer needs Debian's
# libb64-0d. Build the server first: cargo build --release -p pjrt-cli.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${1:-$HOME/.cache/pjrt-client/ci-serving-clients-venv}"
PJRT="${PJRT:-target/release/pjrt}"
REQUESTS="${REQUESTS:-2000}"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"; kill $(jobs -p) 2>/dev/null || true' EXIT

cudart="$("$VENV/bin/python" -c 'import nvidia.cuda_runtime as c, os; print(os.path.join(list(c.__path__)[0], "lib"))')"
mkdir -p "$scratch/models/simple" "$scratch/models/mlp"
cp tests/data/jax_export/symbolic/jax-0.10.2/add_sub/model.jaxexport "$scratch/models/simple/"
echo '{"inputs": ["INPUT0", "INPUT1"], "outputs": ["OUTPUT0", "OUTPUT1"],
       "batching": {"batch_independent": true, "max_batch_size": 8}}' >"$scratch/models/simple/config.json"
mlp=tests/data/jax_export/jax-0.10.2/mlp_f32
cp "$mlp/model.jaxexport" "$scratch/models/mlp/"
python3 -c 'import numpy as np, sys; a = np.arange(16, dtype=np.int32).reshape(1, 16); np.save(sys.argv[1], a); np.save(sys.argv[2], -a)' \
    "$scratch/a.npy" "$scratch/b.npy" 2>/dev/null || "$VENV/bin/python" -c \
    'import numpy as np, sys; a = np.arange(16, dtype=np.int32).reshape(1, 16); np.save(sys.argv[1], a); np.save(sys.argv[2], -a)' \
    "$scratch/a.npy" "$scratch/b.npy"

env PJRT_CACHE_DIR="$scratch/cache" "$PJRT" serve "$scratch/models" --port 0 --grpc-port 0 >"$scratch/stdout" 2>"$scratch/stderr" &
until grep -q 'http://' "$scratch/stdout"; do sleep 0.05; done
line="$(head -1 "$scratch/stdout")"
url="${line#*http://}"; url="${url%% *}"
grpc="${line#*grpc://}"; grpc="${grpc%% *}"

echo "| model | client | c=1 req/s (p50/p99 ms) | c=2 | c=3 | c=4 |"
echo "|---|---|---|---|---|---|"
for model in mlp simple; do
    if [ "$model" = mlp ]; then
        inputs=(--input "$mlp/in0.npy" --input "$mlp/in1.npy" --input "$mlp/in2.npy" --input "$mlp/in3.npy" --input "$mlp/in4.npy")
    else
        inputs=(--input "$scratch/a.npy" --input "$scratch/b.npy")
    fi
    "$PJRT" bench --json serve --url "http://$url" --model "$model" "${inputs[@]}" --requests "$REQUESTS" \
        --concurrency 1,2,3,4 --label pjrt >"$scratch/bench.json"
    python3 - "$model" "$scratch/bench.json" <<'EOF'
import json, sys
model, path = sys.argv[1:]
levels = json.load(open(path))["levels"]
cells = [f"{l['throughput_rps']:.0f} ({l['p50_ms']:.2f}/{l['p99_ms']:.2f})" for l in levels]
print(f"| {model} | `pjrt bench serve` (HTTP) | " + " | ".join(cells) + " |")
EOF
    for protocol in http grpc; do
        address="$url"; [ "$protocol" = grpc ] && address="$grpc"
        LD_LIBRARY_PATH="$cudart" "$VENV/bin/perf_analyzer" -m "$model" -u "$address" -i "$protocol" \
            --concurrency-range 1:4 --measurement-interval 2000 --max-trials 20 -f "$scratch/pa.csv" >"$scratch/pa.log" 2>&1 ||
            { cat "$scratch/pa.log" >&2; exit 1; }
        python3 - "$model" "$protocol" "$scratch/pa.csv" <<'EOF'
import csv, sys
model, protocol, path = sys.argv[1:]
rows = list(csv.DictReader(open(path)))
cells = [f"{float(r['Inferences/Second']):.0f} ({float(r['p50 latency']) / 1000:.2f}/{float(r['p99 latency']) / 1000:.2f})" for r in rows]
print(f"| {model} | perf_analyzer ({'HTTP' if protocol == 'http' else 'gRPC'}) | " + " | ".join(cells) + " |")
EOF
    done
done
