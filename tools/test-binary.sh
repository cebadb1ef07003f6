#!/usr/bin/env bash
# Builds one integration-test binary of pjrt-client and prints its path (for the valgrind
# scripts, which run the binary itself rather than through cargo).
#
#   tools/test-binary.sh SUITE      e.g.  tools/test-binary.sh soundness
set -euo pipefail
cd "$(dirname "$0")/.."
suite="${1:?usage: tools/test-binary.sh SUITE}"
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
