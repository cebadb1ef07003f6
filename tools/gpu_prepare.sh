#!/usr/bin/env bash
# Makes, on this machine (cargo, no GPU needed), everything tools/gpu_check.sh needs on the GPU
# machine, which has no Rust toolchain and no network, into one folder (default target/gpu-check/):
#
#   bin/pjrt            the release `pjrt` CLI, stripped
#   bin/client-tests    pjrt-client's `client` test binary (for host_callbacks:: on the GPU), stripped
#   mlp-h200.pjrt       examples/mlp/train_step.mlir compiled for an H200 with the pinned cuda13
#                       plugin (`pjrt compile --plugin cuda13 --target h200`): an artifact loads only
#                       on the plugin build that compiled it, jax-cuda13-pjrt 0.11.2 on that machine
#   mlp-expected/       the same program's outputs on the CPU plugin, to compare the GPU's with
#   manifest.txt        what was built, when, sizes, SHA-256, the newest glibc symbol each needs
#
#   tools/gpu_prepare.sh [--out DIR] [--skip-artifact] [--debug]
#
# --skip-artifact: no artifact (no CUDA plugin download; the check then fails its artifact part).
# --debug: debug binaries instead of release (CI's dry run, which reuses CI's debug build; the
#          check refuses to run such a folder on a GPU: its bench figures would mean nothing).
# Fails if a binary needs glibc newer than 2.34 or the folder exceeds 48 MiB (64 MiB go to the
# GPU machine with the working tree, which takes the rest).
set -euo pipefail
cd "$(dirname "$0")/.."

out=target/gpu-check
artifact=1
profile=release
while (($#)); do
    case "$1" in
        --out) out="${2:?--out needs a folder}"; shift 2 ;;
        --skip-artifact) artifact=0; shift ;;
        --debug) profile=debug; shift ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
        *) echo "gpu_prepare: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
export CARGO_TERM_COLOR=never
max_glibc=2.34
limit_bytes=$((48 * 1024 * 1024))

rm -rf "$out"
mkdir -p "$out/bin"
release_flag=()
[[ $profile == release ]] && release_flag=(--release)

echo "gpu_prepare: building pjrt ($profile)"
cargo build -q "${release_flag[@]}" -p pjrt-cli --bin pjrt
strip -o "$out/bin/pjrt" "target/$profile/pjrt"

echo "gpu_prepare: building pjrt-client's client test binary ($profile)"
tests="$(cargo test -q "${release_flag[@]}" -p pjrt-client --test client --no-run --message-format=json | python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "client":
        print(m["executable"])')"
[[ -n "$tests" && -x "$tests" ]] || { echo "gpu_prepare: could not find the client test binary" >&2; exit 1; }
strip -o "$out/bin/client-tests" "$tests"
listed="$("$out/bin/client-tests" --list --ignored --format terse)"
grep -qx 'host_callbacks::send_and_recv_callbacks_on_a_device_plugin: test' <<<"$listed" \
    || { echo "gpu_prepare: the test binary lacks host_callbacks::send_and_recv_callbacks_on_a_device_plugin" >&2; exit 1; }

# glibc: the GPU machine's is unknown beyond "2.34 or newer"; refuse anything that needs more.
newest_glibc() { objdump -T "$1" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -1; }
for binary in "$out"/bin/*; do
    needed="$(newest_glibc "$binary")"
    if [[ "$(printf '%s\n%s\n' "$needed" "$max_glibc" | sort -V | tail -1)" != "$max_glibc" ]]; then
        echo "gpu_prepare: $binary needs GLIBC_$needed, newer than $max_glibc" >&2
        exit 1
    fi
done

if ((artifact)); then
    echo "gpu_prepare: compiling examples/mlp/train_step.mlir for the H200 (plugin cuda13)"
    if ! "$out/bin/pjrt" compile examples/mlp/train_step.mlir --plugin cuda13 --target h200 \
        -o "$out/mlp-h200.pjrt" --json >"$out/mlp-h200.json"; then
        echo "gpu_prepare: compiling the H200 artifact failed (needs \`pjrt plugin install cuda13\` and" \
            "\`pjrt compile --target\`, issue 14 items 1-2); --skip-artifact leaves it out" >&2
        exit 1
    fi
    echo "gpu_prepare: its expected outputs, from the CPU plugin"
    "$out/bin/pjrt" run examples/mlp/train_step.mlir --plugin cpu --input examples/mlp/{b1,b2,w1,w2,x,y}.npy \
        --output-dir "$out/mlp-expected" --no-cache >/dev/null
fi

{
    echo "made: $(date -u +%Y-%m-%dT%H:%M:%SZ) by tools/gpu_prepare.sh"
    echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
    echo "profile: $profile"
    for binary in "$out"/bin/*; do
        echo "binary: ${binary#"$out"/} $(stat -c %s "$binary") bytes, needs GLIBC_$(newest_glibc "$binary"), sha256 $(sha256sum "$binary" | cut -d' ' -f1)"
    done
    if [[ -f "$out/mlp-h200.pjrt" ]]; then
        echo "artifact: mlp-h200.pjrt $(stat -c %s "$out/mlp-h200.pjrt") bytes, sha256 $(sha256sum "$out/mlp-h200.pjrt" | cut -d' ' -f1)"
        echo "artifact-report: $(tr -d '\n' <"$out/mlp-h200.json")"
    else
        echo "artifact: none (--skip-artifact)"
    fi
} >"$out/manifest.txt"

total="$(du -sb "$out" | cut -f1)"
echo "total: $total bytes" >>"$out/manifest.txt"
cat "$out/manifest.txt"
if ((total > limit_bytes)); then
    echo "gpu_prepare: $out is $total bytes, over the $limit_bytes allowed" >&2
    exit 1
fi
echo "gpu_prepare: ready in $out; send it along (device tool: carry [\"$out\"]) and run tools/gpu_check.sh"
