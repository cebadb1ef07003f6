#!/usr/bin/env bash
# Runs the fake-plugin test suites (crates/pjrt-client/tests/client/fake_plugin.rs, the
# `fake_plugin::` tests of the `client` test binary, and the test binary hostile_plugin.rs) under
# valgrind's memcheck and fails on any "definitely lost" block and on any memory error (invalid
# read or write, use of uninitialised memory, bad free).
#
#   tools/leakcheck.sh [TEST-BINARY-ARGS...]     e.g.  tools/leakcheck.sh --test-threads=1
#
# Of the `client` binary only the fake_plugin:: tests run (tools/test-binary.sh skips its other
# modules); a filter among the arguments narrows each suite further.
#
# Exit status: 0 clean; 99 valgrind found a definite leak or a memory error; anything else: the
# build or a test failed. The full reports are in target/leakcheck/valgrind-<suite>.log (or under
# $CARGO_TARGET_DIR when set).
#
# The leaks hostile_plugin.rs makes on purpose (destinations of copies a plugin gave no
# completion event for, which must never be freed) are suppressed by tools/leakcheck.supp: they
# all happen inside its `watch_allocation`, which checks that they happened.
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

# The test builds the fake plugin itself (cargo build -p fake-plugin --target-dir
# target/fake-plugin) on first use. Build it here, natively, with the same command, so the
# test's own cargo run is a quick no-op (child processes are not traced by valgrind anyway).
echo "== build the fake plugin"
cargo build --quiet -p fake-plugin --target-dir target/fake-plugin

# TEST:MODULE for a module of a test binary, TEST for a whole one.
suites=(client:fake_plugin hostile_plugin)
status=0
for entry in "${suites[@]}"; do
    test="${entry%%:*}"
    module=""
    if [[ "$entry" == *:* ]]; then
        module="${entry#*:}"
    fi
    suite="${module:-$test}"
    echo "== build the $test test binary${module:+ (its $module:: tests)}"
    # The binary, then (for a module) the arguments that leave only the module's tests.
    invocation="$(tools/test-binary.sh "$test" ${module:+"$module"})"
    mapfile -t run <<<"$invocation"
    echo "   ${run[0]}"

    log="$out_dir/valgrind-$suite.log"
    echo "== run it under valgrind (a minute or two)"
    suite_status=0
    # The test process finds cargo through $CARGO (set here as cargo would set it).
    CARGO="${CARGO:-$(command -v cargo)}" RUST_BACKTRACE=0 valgrind \
        --leak-check=full \
        --show-leak-kinds=definite,possible \
        --errors-for-leak-kinds=definite \
        --error-exitcode=99 \
        --num-callers=40 \
        --suppressions=tools/leakcheck.supp \
        --log-file="$log" \
        "${run[@]}" "$@" || suite_status=$?

    echo "== valgrind summary for $suite ($log)"
    grep -E "definitely lost:|indirectly lost:|possibly lost:|still reachable:|suppressed:|ERROR SUMMARY:" "$log" \
        | sed 's/^==[0-9]*== */   /'
    case "$suite_status" in
        0) echo "leakcheck: $suite: no definite leaks and no memory errors" ;;
        99) echo "leakcheck: $suite: valgrind reported definite leaks or memory errors; see $log" >&2 ;;
        *) echo "leakcheck: $suite: the test binary failed (exit status $suite_status)" >&2 ;;
    esac
    if [[ "$status" == 0 ]]; then
        status=$suite_status
    fi
done
exit "$status"
