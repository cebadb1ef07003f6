#!/usr/bin/env bash
# Runs the soundness regression tests (crates/pjrt-client/tests/client/soundness.rs: sub-byte
# uploads that used to read past the host buffer, PRED reads, zero-copy donation, handles that
# outlive their client, two plugins in one process, ...) on the real CPU plugins under valgrind's
# memcheck, and fails on any invalid read or write, bad free or mismatched free.
#
#   tools/memcheck.sh [TEST-BINARY-ARGS...]     e.g.  tools/memcheck.sh odd_counts
#
# Only the `soundness::` tests of the `client` test binary run (tools/test-binary.sh skips its
# other modules); a filter among the arguments narrows them further.
#
# Exit status: 0 clean; 99 valgrind found a memory error; anything else: the build or a test
# failed. The full report is in target/memcheck/valgrind.log (or under $CARGO_TARGET_DIR).
#
# - The plugins compile programs with a JIT for the CPU it runs on (LLVM's model of the host CPU,
#   whose name implies its features, whatever valgrind's emulated CPUID hides); valgrind 3.19
#   cannot decode AVX-512, so on a host with AVX-512 (`avx512f` in /proc/cpuinfo: most Intel
#   Xeons, AMD Zen 4) the programs must be compiled for AVX2 (`XLA_FLAGS=--xla_cpu_max_isa=AVX2`,
#   set before the plugins load; both CPU plugins take it). On a host without AVX-512 it is not
#   needed (on an AMD EPYC Zen 3 the run is clean without it too): it is a maximum, and AVX2 is
#   about the most there. It is set on both kinds all the same, so both run under the same
#   flags; the script says which kind of host it is on.
# - tools/memcheck.supp suppresses only the plugins' own uses of uninitialised values (see
#   there); invalid reads and writes are never suppressed.
# - Leaks are not checked here (the plugins keep process-wide state); tools/leakcheck.sh checks
#   them on the fake plugin.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v valgrind >/dev/null; then
    echo "memcheck: valgrind is not installed (apt-get install valgrind)" >&2
    exit 2
fi

target_dir="${CARGO_TARGET_DIR:-target}"
out_dir="$target_dir/memcheck"
mkdir -p "$out_dir"
log="$out_dir/valgrind.log"

echo "== build the test binary"
# The binary, then the arguments that leave only its soundness:: tests.
invocation="$(tools/test-binary.sh client soundness)"
mapfile -t run <<<"$invocation"
binary="${run[0]}"
echo "   $binary (soundness::)"

echo "== install the plugins (outside valgrind)"
"$binary" --exact soundness::objects_of_another_plugin_are_refused_before_the_call >/dev/null 2>&1 || true

if grep -qw avx512f /proc/cpuinfo 2>/dev/null; then
    echo "== this host has AVX-512: the plugins compile for AVX2 (--xla_cpu_max_isa=AVX2), which valgrind decodes"
else
    echo "== this host has no AVX-512: --xla_cpu_max_isa=AVX2 is set all the same (a cap, not needed here)"
fi

echo "== run it under valgrind (about a minute)"
status=0
XLA_FLAGS="${XLA_FLAGS:+$XLA_FLAGS }--xla_cpu_max_isa=AVX2" TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}" \
RUST_BACKTRACE=0 valgrind \
    --error-exitcode=99 \
    --suppressions=tools/memcheck.supp \
    --num-callers=40 \
    --log-file="$log" \
    "${run[@]}" --test-threads=1 "$@" || status=$?

echo "== valgrind summary ($log)"
grep -E "ERROR SUMMARY:" "$log" | sed 's/^==[0-9]*== */   /'
case "$status" in
    0) echo "memcheck: no memory errors" ;;
    99) echo "memcheck: valgrind reported memory errors; see $log" >&2 ;;
    *) echo "memcheck: the test binary failed (exit status $status)" >&2 ;;
esac
exit "$status"
