#!/usr/bin/env bash
# Runs the fake-plugin test suite (crates/pjrt-client/tests/fake_plugin.rs) under valgrind's
# memcheck and fails on any "definitely lost" block and on any memory error (invalid read or
# write, use of uninitialised memory, bad free).
#
#   tools/leakcheck.sh [TEST-BINARY-ARGS...]     e.g.  tools/leakcheck.sh --test-threads=1
#
# Exit status: 0 clean; 99 valgrind found a definite leak or a memory error; anything else: the
# build or a test failed. The full report is in target/leakcheck/valgrind.log (or under
# $CARGO_TARGET_DIR when set).
#
# Why valgrind: LeakSanitizer needs a nightly toolchain (-Zsanitizer=leak); valgrind works on the
# stable build as it is. "Possibly lost" blocks are reported but do not fail the run: the plugin
# registry (a process-wide map, plugins are never unloaded) is reachable only through interior
# pointers of its hash table, which memcheck classifies as "possibly lost".
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v valgrind >/dev/null; then
    echo "leakcheck: valgrind is not installed (apt-get install valgrind)" >&2
    exit 2
fi

target_dir="${CARGO_TARGET_DIR:-target}"
out_dir="$target_dir/leakcheck"
mkdir -p "$out_dir"
log="$out_dir/valgrind.log"

# The test builds the fake plugin itself (cargo build -p fake-plugin --target-dir
# target/fake-plugin) on first use. Build it here, natively, with the same command, so the
# test's own cargo run is a quick no-op (child processes are not traced by valgrind anyway).
echo "== build the fake plugin"
cargo build --quiet -p fake-plugin --target-dir target/fake-plugin

echo "== build the test binary"
binary="$(cargo test --quiet -p pjrt-client --test fake_plugin --no-run --message-format=json \
    | python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "fake_plugin":
        print(m["executable"])
')"
if [[ -z "$binary" || ! -x "$binary" ]]; then
    echo "leakcheck: could not find the fake_plugin test binary" >&2
    exit 2
fi
echo "   $binary"

echo "== run it under valgrind (a minute or less)"
status=0
# The test process finds cargo through $CARGO (set here as cargo would set it).
CARGO="${CARGO:-$(command -v cargo)}" RUST_BACKTRACE=0 valgrind \
    --leak-check=full \
    --show-leak-kinds=definite,possible \
    --errors-for-leak-kinds=definite \
    --error-exitcode=99 \
    --num-callers=40 \
    --log-file="$log" \
    "$binary" "$@" || status=$?

echo "== valgrind summary ($log)"
grep -E "definitely lost:|indirectly lost:|possibly lost:|still reachable:|ERROR SUMMARY:" "$log" | sed 's/^==[0-9]*== */   /'
case "$status" in
    0) echo "leakcheck: no definite leaks and no memory errors" ;;
    99) echo "leakcheck: valgrind reported definite leaks or memory errors; see $log" >&2 ;;
    *) echo "leakcheck: the test binary failed (exit status $status)" >&2 ;;
esac
exit "$status"
