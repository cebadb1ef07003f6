#!/usr/bin/env bash
# Cold versus warm `pjrt run` of examples/mlp/train_step.mlir through the compile cache.
#
#   tools/bench_compile_cache.sh [PLUGIN] [RUNS]      (default: cpu 7)
#
# Cold: RUNS runs, each with an emptied cache dir (every run compiles). Warm: RUNS runs on the
# filled cache (every run loads the serialized executable). Prints the medians of the
# `timings_ms` that `pjrt run --json` reports, and whether warm `load` is at most 1/20 of cold
# `compile`. Uses target/release/pjrt (built if missing), or $PJRT_BIN.
set -euo pipefail
cd "$(dirname "$0")/.."
plugin=${1:-cpu}
runs=${2:-7}
pjrt=${PJRT_BIN:-target/release/pjrt}
if [ ! -x "$pjrt" ]; then
    cargo build --release -q -p pjrt-cli
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run() {
    PJRT_CACHE_DIR="$work/cache" "$pjrt" run examples/mlp/train_step.mlir --plugin "$plugin" --json \
        --output-dir "$work/out" --input examples/mlp/{b1,b2,w1,w2,x,y}.npy 2>/dev/null
}
for _ in $(seq "$runs"); do
    rm -rf "$work/cache"
    run >>"$work/cold.jsonl"
done
for _ in $(seq "$runs"); do
    run >>"$work/warm.jsonl"
done
python3 - "$work" "$plugin" <<'PY'
import json, statistics, sys
work, plugin = sys.argv[1], sys.argv[2]
def load(name, want):
    rows = [json.loads(line) for line in open(f"{work}/{name}.jsonl")]
    bad = [r["cache"] for r in rows if r["cache"] != want]
    if bad:
        sys.exit(f"{name} runs should all be cache {want}, got {bad}")
    return {k: statistics.median(r["timings_ms"][k] for r in rows) for k in rows[0]["timings_ms"]}
cold, warm = load("cold", "miss"), load("warm", "hit")
print(f"plugin {plugin}: median of {sum(1 for _ in open(work + '/cold.jsonl'))} runs each, ms")
print(f"{'':6} {'compile':>9} {'load':>9} {'transfer':>9} {'execute':>9} {'total':>9}")
for name, t in (("cold", cold), ("warm", warm)):
    print(f"{name:6} " + " ".join(f"{t[k]:9.2f}" for k in ("compile", "load", "transfer", "execute", "total")))
ratio = warm["load"] / cold["compile"]
print(f"warm load / cold compile = 1/{1 / ratio:.0f} (target: at most 1/20): {'met' if ratio <= 1 / 20 else 'NOT met'}")
PY
