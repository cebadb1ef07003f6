#!/usr/bin/env bash
# What a run from C costs over the same run from Rust: the exported MLP through libpjrt from the
# C example (examples/c/run_models --bench RUNS) and through the library from Rust
# (crates/pjrt-capi/benches/overhead.rs: pjrt_model_run called from Rust, the library doing the
# same steps, Runner::run), release builds, the two processes alternated ROUNDS times.
#
#   tools/bench_capi.sh [RUNS] [ROUNDS]      # defaults: 20000 runs per round, 3 alternations
#   tools/bench_capi.sh --callgrind [CALLS]  # instructions per call instead (default 300 calls)
#
# Each figure is the median of RUNS calls, each timed alone (after 1,000 to warm up); in the Rust
# process the C API's call and the library's alternate call by call, and the median of their
# paired differences is the overhead. Both sides use the client options
# PJRT_BENCH_CLIENT_OPTIONS (default asynchronous=false: short, steady runs on the calling
# thread). The goal (issue 56): C at most 1 µs over Rust, on the same model and inputs. Not run
# in CI (timings on a shared machine say little); docs/c-api.md has the figures and the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
callgrind=
if [ "${1:-}" = --callgrind ]; then
    callgrind=1
    shift
fi
runs="${1:-20000}"
rounds="${2:-3}"
target_dir="$(realpath -m "${CARGO_TARGET_DIR:-target}")"

cargo build -q --release -p pjrt-capi
cargo bench -q -p pjrt-capi --bench overhead --no-run
make -s -C examples/c PROFILE=release CARGO_TARGET_DIR="$target_dir"
bench="$(cargo bench -q -p pjrt-capi --bench overhead --no-run --message-format=json 2>/dev/null \
    | python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "overhead" and m.get("executable"):
        print(m["executable"])')"
echo "== host: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(nproc) cores"

if [ -n "$callgrind" ]; then
    # Instructions per call, which the host's noise does not move. Each run collects one path
    # (--toggle-collect: only inside its function): pjrt_model_run called from C (the C example,
    # 1,000 warm-up calls + CALLS), capi_call and same_steps_call of the Rust bench (20 + CALLS).
    # A path's instructions split into the library calls both make (Client::upload_with,
    # LoadedExecutable::execute, Buffer::copy_to_bytes, dropping the buffers: mostly the
    # plugin's work, whose count moves by a few percent between processes) and the rest: what
    # the path itself adds, the figure to compare.
    calls="${1:-300}"
    out="$target_dir/c-example/callgrind"
    mkdir -p "$out"
    export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}" XLA_FLAGS="${XLA_FLAGS:+$XLA_FLAGS }--xla_cpu_max_isa=AVX2"
    valgrind --tool=callgrind --toggle-collect='pjrt_model_run' --callgrind-out-file="$out/c.out" \
        --log-file="$out/c.log" "$target_dir/c-example/release/run_models" --bench "$calls" tests/data >/dev/null
    for path in capi same runner; do
        function="${path}_call"
        [ "$path" = same ] && function=same_steps_call
        PJRT_BENCH_COUNT="$calls" PJRT_BENCH_ONLY="$path" valgrind --tool=callgrind \
            --toggle-collect="overhead::$function" --callgrind-out-file="$out/$path.out" \
            --log-file="$out/$path.log" "$bench" >/dev/null
    done
    python3 - "$out" "$calls" <<'PY'
import re, subprocess, sys
out, calls = sys.argv[1], int(sys.argv[2])
# The library calls every path makes, whose work is mostly the plugin's: uploads, the
# execution, the download (into the caller's bytes, or a new vector for Runner::run), the
# buffers dropped.
shared = ["pjrt_client::buffer::borrowed::<impl pjrt_client::client::Client>::upload_borrowed",
          "pjrt_client::executable::execute::<impl pjrt_client::executable::LoadedExecutable>::execute",
          "pjrt_client::buffer::host_copy::<impl pjrt_client::buffer::Buffer>::copy_to_bytes",
          "pjrt_client::buffer::download::<impl pjrt_client::buffer::Buffer>::to_bytes",
          "core::ptr::drop_in_place<pjrt_client::buffer::Buffer>"]
def inclusive(file):
    text = subprocess.run(["callgrind_annotate", "--threshold=100", "--inclusive=yes", file],
                          capture_output=True, text=True).stdout
    costs = {}
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\([^)]*\)\s+\S*?:(.+?) \[", line)
        if m:
            costs.setdefault(m.group(2), int(m.group(1).replace(",", "")))
    return costs
rows = []
for label, file, function, n in [("pjrt_model_run called from C", "c.out", "pjrt_model_run", calls + 1000),
                                 ("pjrt_model_run called from Rust", "capi.out", "overhead::capi_call", calls + 20),
                                 ("rust, the same steps", "same.out", "overhead::same_steps_call", calls + 20),
                                 ("rust, Runner::run", "runner.out", "overhead::runner_call", calls + 20)]:
    costs = inclusive(f"{out}/{file}")
    total = costs[function]
    library = sum(costs.get(f, 0) for f in shared)
    rows.append((label, total / n, library / n, (total - library) / n))
print("instructions per call (callgrind):      total  library calls  the path's own")
for label, total, library, own in rows:
    print(f"  {label:<32} {total:9.0f} {library:14.0f} {own:15.0f}")
c, same, runner = rows[0][3], rows[2][3], rows[3][3]
print(f"  the C API's own over the same steps' own: {c - same:+.0f}; over Runner::run's own: {c - runner:+.0f}")
PY
    exit 0
fi
for round in $(seq "$rounds"); do
    echo "-- alternation $round"
    TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}" "$target_dir/c-example/release/run_models" --bench "$runs" tests/data
    TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}" "$bench" "$runs"
done
