#!/usr/bin/env bash
# Runs the C example (examples/c/run_models --quick: the exported MLP, every bad-input case and
# 4 threads x 5 runs; the transformer is left out to keep it short) under valgrind's memcheck
# on the default CPU plugin, and fails on any memory error that the plugin did not raise itself
# (tools/capi_memcheck.supp) and on any byte definitely lost.
#
#   tools/capi_memcheck.sh          # builds libpjrt (debug) and the example first
#
# Exit status: 0 clean; 99 valgrind found an error or a definite leak; anything else: the build
# or the example failed. The full report is in $CARGO_TARGET_DIR/c-example/valgrind.log.
#
# As tools/memcheck.sh explains, the plugin compiles for the host CPU and valgrind 3.19 cannot
# decode AVX-512: XLA_FLAGS=--xla_cpu_max_isa=AVX2 is set on every host (a cap, not a need on
# hosts without AVX-512).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v valgrind >/dev/null; then
    echo "capi_memcheck: valgrind is not installed (apt-get install valgrind)" >&2
    exit 2
fi
target_dir="$(realpath -m "${CARGO_TARGET_DIR:-target}")"
cargo build -q -p pjrt-capi
make -s -C examples/c CARGO_TARGET_DIR="$target_dir"
binary="$target_dir/c-example/debug/run_models"
log="$target_dir/c-example/valgrind.log"

echo "== the C example under valgrind (about 30 s)"
status=0
XLA_FLAGS="${XLA_FLAGS:+$XLA_FLAGS }--xla_cpu_max_isa=AVX2" TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}" \
valgrind \
    --error-exitcode=99 \
    --leak-check=full \
    --errors-for-leak-kinds=definite \
    --suppressions=tools/capi_memcheck.supp \
    --num-callers=40 \
    --log-file="$log" \
    "$binary" --quick tests/data || status=$?

echo "== valgrind summary ($log)"
grep -E "ERROR SUMMARY:|definitely lost:" "$log" | sed 's/^==[0-9]*== */   /'
case "$status" in
    0) echo "capi_memcheck: no memory errors outside the plugin, 0 bytes definitely lost" ;;
    99) echo "capi_memcheck: valgrind reported errors; see $log" >&2 ;;
    *) echo "capi_memcheck: the example failed (exit status $status)" >&2 ;;
esac
exit "$status"
