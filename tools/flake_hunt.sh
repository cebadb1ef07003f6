#!/usr/bin/env bash
# Runs `pjrt run` on this repository's JAX test programs many times under CPU load, to hunt
# failures that show only now and then (a plugin thread alive at exit, a race under load).
#
#     tools/flake_hunt.sh [--runs 500] [--load 10] [--plugins "cpu cpu-0.106"] [--pjrt PATH] [--keep DIR]
#
# Each run takes the next single-device case of tests/data/jax (program.mlir and its inputs) and
# the next plugin, with a compile cache of its own for the hunt (so most runs load a cached
# executable, as users' runs do). A run fails when `pjrt run` exits non-zero, is killed by a
# signal, prints a panic or a plugin CHECK failure, or writes outputs that differ from the
# first run of the same case on the same plugin (same host, same binary: they must be equal).
# Beside it, --load busy loops keep the CPUs loaded; they end with the hunt. Prints one line
# per failure (its log kept under --keep) and a summary line:
#     flake_hunt: RUNS runs, FAILED failed (load L, plugins P)
# Exit status 1 if any run failed.
set -uo pipefail
cd "$(dirname "$0")/.."

runs=500 load=10 plugins="cpu cpu-0.106" pjrt=target/debug/pjrt keep=""
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) runs="$2"; shift 2 ;;
        --load) load="$2"; shift 2 ;;
        --plugins) plugins="$2"; shift 2 ;;
        --pjrt) pjrt="$2"; shift 2 ;;
        --keep) keep="$2"; shift 2 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
[ -x "$pjrt" ] || { echo "no pjrt binary at $pjrt (cargo build -p pjrt-cli)" >&2; exit 2; }

work="$(mktemp -d)"
keep="${keep:-$work/failures}"
mkdir -p "$keep"
loaders=()
cleanup() {
    for p in "${loaders[@]}"; do kill "$p" 2>/dev/null; done
    rm -rf "$work/cache" "$work/out" "$work/ref"
}
trap cleanup EXIT

# Single-device cases: one replica, one partition, every input given whole.
cases=()
for meta in tests/data/jax/*/meta.json; do
    dir="$(dirname "$meta")"
    if grep -q '"replicas": 1,' "$meta" && grep -q '"partitions": 1,' "$meta" && grep -q '"input_mode": "single"' "$meta"; then
        cases+=("$dir")
    fi
done
read -r -a plugin_list <<<"$plugins"
[ ${#cases[@]} -gt 0 ] || { echo "no single-device cases under tests/data/jax" >&2; exit 2; }

for _ in $(seq "$load"); do
    (while :; do :; done) &
    loaders+=("$!")
done

export PJRT_CACHE_DIR="$work/cache"
failed=0
for i in $(seq 0 $((runs - 1))); do
    case_dir="${cases[$((i % ${#cases[@]}))]}"
    plugin="${plugin_list[$(((i / ${#cases[@]}) % ${#plugin_list[@]}))]}"
    name="$(basename "$case_dir")-$plugin"
    inputs=()
    for f in "$case_dir"/in*.npy; do [ -e "$f" ] && inputs+=("$f"); done
    rm -rf "$work/out"
    mkdir -p "$work/out"
    log="$work/log"
    "$pjrt" run --plugin "$plugin" "$case_dir/program.mlir" ${inputs[@]:+--input "${inputs[@]}"} \
        --output-dir "$work/out" >"$log" 2>&1
    status=$?
    why=""
    if [ $status -ne 0 ]; then
        why="exit status $status"
    elif grep -q "panicked at\|Check failed\|recursive_mutex\|terminate called" "$log"; then
        why="a panic or CHECK failure in the log"
    elif [ -d "$work/ref/$name" ]; then
        for out in "$work/ref/$name"/*.npy; do
            cmp -s "$out" "$work/out/$(basename "$out")" || why="$(basename "$out") differs from the first run's"
        done
    else
        mkdir -p "$work/ref/$name" && cp "$work/out"/*.npy "$work/ref/$name/" 2>/dev/null
    fi
    if [ -n "$why" ]; then
        failed=$((failed + 1))
        cp "$log" "$keep/run$i-$name.log"
        echo "flake_hunt: run $i ($name): $why; log: $keep/run$i-$name.log"
    fi
done
echo "flake_hunt: $runs runs, $failed failed (load $load, plugins $plugins)"
[ $failed -eq 0 ]
