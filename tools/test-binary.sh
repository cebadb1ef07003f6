#!/usr/bin/env bash
# Builds one integration-test binary of pjrt-client and prints its path (for the valgrind
# scripts, which run the binary itself rather than through cargo).
#
#   tools/test-binary.sh TEST [MODULE]      e.g.  tools/test-binary.sh hostile_plugin
#                                                 tools/test-binary.sh client soundness
#
# TEST is the binary's target name (`client`: tests/client/main.rs; or `hostile_plugin`, ...: a
# tests/*.rs of its own). With MODULE (a module of a binary whose tests are named `module::test`),
# the lines after the path are the arguments that confine a run of the binary to that module:
# `--skip OTHER::` for every other module. Skips rather than a `MODULE::` filter because libtest
# runs the tests that match any of its filters: a filter of the caller's would add tests from
# other modules, whereas with skips it narrows the module's tests as it always did. Run it as
#
#   invocation="$(tools/test-binary.sh client soundness)"; mapfile -t run <<<"$invocation"; "${run[@]}" ARGS...
set -euo pipefail
cd "$(dirname "$0")/.."
suite="${1:?usage: tools/test-binary.sh TEST [MODULE]}"
module="${2:-}"
binary="$(cargo test --quiet -p pjrt-client --test "$suite" --no-run --message-format=json \
    | SUITE="$suite" python3 -c '
import json, os, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == os.environ["SUITE"]:
        print(m["executable"])
')"
if [[ -z "$binary" || ! -x "$binary" ]]; then
    echo "could not find the $suite test binary of pjrt-client" >&2
    exit 2
fi
echo "$binary"
[[ -z "$module" ]] && exit 0

# Every test's name, and the modules they are in.
names="$("$binary" --list --format terse | sed -n 's/: test$//p')"
if ! grep -q "^$module::" <<<"$names"; then
    echo "the $suite test binary has no tests named $module::..." >&2
    exit 2
fi
skips=()
while read -r other; do
    [[ "$other" == "$module" ]] || skips+=(--skip "$other::")
done < <(sed -n 's/::.*//p' <<<"$names" | sort -u)
# A skip is a substring match: make sure the skips leave exactly the module's tests.
confined="$("$binary" --list --format terse "${skips[@]}" | sed -n 's/: test$//p')"
if [[ "$confined" != "$(grep "^$module::" <<<"$names")" ]]; then
    echo "skipping the other modules of the $suite test binary does not leave exactly $module's tests" >&2
    exit 2
fi
printf '%s\n' "${skips[@]}"
