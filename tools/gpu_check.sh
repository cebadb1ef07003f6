#!/usr/bin/env bash
# One check on a GPU machine with no Rust toolchain and no network: one NVIDIA GPU (an H200),
# Python 3 with jax and jax-cuda13-pjrt 0.11.2 installed. It builds nothing: tools/gpu_prepare.sh
# made the binaries and the H200 artifact beforehand, into DIR (default target/gpu-check/).
#
#   tools/gpu_check.sh [--dry-run] [--rocm] [--dir DIR] [--plugin PATH] [--logs DIR]
#
# --rocm checks an AMD GPU instead, with JAX's ROCm plugin (jax-rocm7-pjrt or jax-rocm10-pjrt, found
# as jax_plugins.xla_rocm7 / xla_rocm10, or `pjrt plugin install rocm7` and --plugin PATH) and
# ROCm's runtime installed: the same parts, platform rocm, rocm-smi instead of nvidia-smi, and no
# artifact part (the prepared artifact is for an NVIDIA H200). Used only if a ROCm machine appears.
#
# Parts, one summary line each ("gpu_check: PART: PASS|FAIL ..."), exit status 1 if any fails:
#   info       `pjrt info` on the installed CUDA plugin: platform cuda, at least one device
#   conform    `pjrt conform`: no failed check
#   jax        every single-device program of tests/data/jax through `pjrt run`, against JAX's
#              outputs (integers bit-exact; floats within the case's tolerance, else within 100
#              times it, else for f32 within TF32's (rtol 1e-2), each tier counted apart: JAX
#              computed them on a CPU, and f32 products on a GPU may use TF32)
#   callbacks  host send/recv callbacks: the client test binary's ignored device test
#              (host_callbacks::send_and_recv_callbacks_on_a_device_plugin, PJRT_TEST_PLUGIN)
#   bench      `pjrt bench dispatch`: the safe library beside the raw C API
#   artifact   the H200 artifact compiled on a CPU-only machine, loaded and run; outputs against
#              the CPU plugin's
# --dry-run needs no GPU: checks that DIR holds runnable binaries (and the artifact, if any), the
# sizes, the glibc they need, finds the plugin if there is one, and prints the plan. CI runs it.
# Logs go to --logs DIR (default $OUT/gpu-check-logs when $OUT is set, as on the device machine,
# else a temporary folder), printed at the end.
set -uo pipefail
cd "$(dirname "$0")/.."

dir=target/gpu-check
dry=0
gpu=cuda
plugin=""
logs=""
while (($#)); do
    case "$1" in
        --dry-run) dry=1; shift ;;
        --rocm) gpu=rocm; shift ;;
        --dir) dir="${2:?--dir needs a folder}"; shift 2 ;;
        --plugin) plugin="${2:?--plugin needs a path}"; shift 2 ;;
        --logs) logs="${2:?--logs needs a folder}"; shift 2 ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
        *) echo "gpu_check: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
if [[ -z "$logs" ]]; then
    if [[ -n "${OUT:-}" ]]; then logs="$OUT/gpu-check-logs"
    elif ((dry)); then logs="LOGS"  # a dry run writes nothing
    else logs="$(mktemp -d /tmp/gpu-check.XXXXXX)"; fi
fi
((dry)) || mkdir -p "$logs"
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-1}"
# Keep pjrt's compile cache out of the home folder: every run compiles.
export PJRT_CACHE_DIR="$logs/compile-cache"

failed=0
summary=()
part() { # part NAME STATUS DETAIL
    local line="gpu_check: $1: $2${3:+ $3}"
    summary+=("$line")
    echo "$line"
    [[ $2 == PASS || $2 == DRY ]] || failed=1
}
started=$SECONDS
# cap N: N seconds, or what is left of the check's 5 minutes if less (at least 1).
cap() { local left=$((300 - (SECONDS - started))); ((left < $1)) && echo $((left > 1 ? left : 1)) || echo "$1"; }

# ---- the prepared folder -------------------------------------------------------------------
pjrt="$dir/bin/pjrt"
tests="$dir/bin/client-tests"
artifact="$dir/mlp-h200.pjrt"
problems=()
for file in "$pjrt" "$tests" "$dir/manifest.txt"; do
    [[ -f $file ]] || problems+=("missing $file")
done
for binary in "$pjrt" "$tests"; do
    [[ -x $binary ]] || continue
    if ! "$binary" --help >/dev/null 2>&1; then problems+=("$binary does not run here")
    fi
done
# (The list is read whole first: `grep -q` on a pipe can end it early, and pipefail makes that a failure.)
if [[ -x $tests ]] && ! grep -qx 'host_callbacks::send_and_recv_callbacks_on_a_device_plugin: test' \
    <<<"$("$tests" --list --ignored --format terse 2>/dev/null)"; then
    problems+=("$tests lacks host_callbacks::send_and_recv_callbacks_on_a_device_plugin")
fi
if command -v objdump >/dev/null; then
    for binary in "$pjrt" "$tests"; do
        [[ -f $binary ]] || continue
        needed="$(objdump -T "$binary" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -1)"
        [[ "$(printf '%s\n2.34\n' "$needed" | sort -V | tail -1)" == 2.34 ]] || problems+=("$binary needs GLIBC_$needed (> 2.34)")
    done
fi
total="$(du -sb "$dir" 2>/dev/null | cut -f1)"
((${total:-0} <= 48 * 1024 * 1024)) || problems+=("$dir is $total bytes (over 48 MiB)")
profile="$(sed -n 's/^profile: //p' "$dir/manifest.txt" 2>/dev/null)"
has_artifact=0
if [[ -f $artifact ]]; then
    has_artifact=1
    [[ -f "$dir/mlp-expected/out0.npy" ]] || problems+=("$artifact without $dir/mlp-expected/")
fi
if ((${#problems[@]})); then
    part prepared FAIL "$(IFS=';'; echo "${problems[*]}") (run tools/gpu_prepare.sh)"
else
    part prepared PASS "$dir: $total bytes, $profile binaries, artifact $( ((has_artifact)) && echo present || echo absent)"
fi

# ---- the plugin ----------------------------------------------------------------------------
# The plugin's Python module(s) and library: CUDA 13's, or ROCm's (7, then 10).
if [[ $gpu == rocm ]]; then modules=(xla_rocm7 xla_rocm10); library=xla_rocm_plugin.so
else modules=(xla_cuda13); library=xla_cuda_plugin.so; fi
for module in "${modules[@]}"; do
    [[ -n $plugin && -f $plugin ]] && break
    plugin="$(python3 -c "
import os, jax_plugins.$module as m
print(os.path.join(os.path.dirname(m.__file__), '$library'))" 2>/dev/null)"
    if [[ -z $plugin || ! -f $plugin ]]; then
        plugin="$(python3 -c 'import site, sys; print("\n".join(site.getsitepackages() + [site.getusersitepackages()] + sys.path))' 2>/dev/null \
            | while read -r base; do [[ -f "$base/jax_plugins/$module/$library" ]] && echo "$base/jax_plugins/$module/$library"; done | head -1)"
    fi
done

# ---- the JAX cases -------------------------------------------------------------------------
# One line per case: NAME DEVICES RUNNABLE(1/0 for CPU-only options) then the pjrt run arguments.
jax_plan() {
    python3 - <<'EOF'
import json, os, sys
root = "tests/data/jax"
for name in sorted(os.listdir(root)):
    meta_path = os.path.join(root, name, "meta.json")
    if not os.path.isfile(meta_path):
        continue
    meta = json.load(open(meta_path))
    devices = meta["replicas"] * meta["partitions"]
    cpu_only = any(k.startswith("xla_cpu_") for k in meta["xla_options"])
    args = [os.path.join(root, name, "program.mlir")]
    for k, v in meta["xla_options"].items():
        args += ["--xla-option", f"{k}={json.dumps(v) if not isinstance(v, str) else v}"]
    if meta["inputs"]:
        args += ["--input"] + [os.path.join(root, name, i["file"]) for i in meta["inputs"]]
    print(name, devices, 0 if cpu_only else 1, *args)
EOF
}

compare_outputs() { # compare_outputs EXPECTED_DIR GOT_DIR [META_JSON]: prints "strict", "loose", "tf32" or "fail: ..."
    python3 - "$@" <<'EOF'
import json, os, sys
import numpy as np
want_dir, got_dir = sys.argv[1], sys.argv[2]
meta = json.load(open(sys.argv[3])) if len(sys.argv) > 3 else None
specs = meta["outputs"] if meta else [
    {"file": f, "exact": False, "rtol": 1e-5, "atol": 1e-6}
    for f in sorted(f for f in os.listdir(want_dir) if f.endswith(".npy"))]
def as_float(a, spec):
    if spec.get("dtype") == "bfloat16":  # stored as 2-byte bits
        return (a.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    return a
level = "strict"
for i, spec in enumerate(specs):
    want = np.load(os.path.join(want_dir, spec["file"]))
    got = np.load(os.path.join(got_dir, f"out{i}.npy"))
    if want.shape != got.shape or want.dtype.itemsize != got.dtype.itemsize:
        print(f"fail: out{i} is {got.dtype}{list(got.shape)}, expected {want.dtype}{list(want.shape)}"); sys.exit()
    if spec["exact"] or (spec.get("dtype") != "bfloat16" and want.dtype.kind in "biuV"):
        if want.tobytes() != got.tobytes():
            print(f"fail: out{i} differs (bit-exact expected)"); sys.exit()
        continue
    w, g = as_float(want, spec), as_float(got.view(want.dtype), spec)
    if np.allclose(g, w, rtol=spec["rtol"], atol=spec["atol"], equal_nan=True):
        continue
    if np.allclose(g, w, rtol=100 * spec["rtol"], atol=100 * spec["atol"], equal_nan=True):
        level = "tf32" if level == "tf32" else "loose"; continue
    # f32 matrix products on the GPU may run in TF32 (10-bit mantissa), as JAX's default
    # precision allows: a tier of its own, reported apart.
    if want.dtype in (np.float32, np.complex64) and np.allclose(
            g, w, rtol=max(100 * spec["rtol"], 1e-2), atol=max(100 * spec["atol"], 1e-3), equal_nan=True):
        level = "tf32"; continue
    err = np.nanmax(np.abs(g.astype(np.complex128) - w.astype(np.complex128)))
    print(f"fail: out{i} off by up to {err:.3g} (rtol {spec['rtol']}, atol {spec['atol']})"); sys.exit()
print(level)
EOF
}

if ((dry)); then
    cases="$(jax_plan)"
    single="$(awk '$2 == 1 && $3 == 1 { n++ } END { print n + 0 }' <<<"$cases")"
    multi="$(awk '$2 > 1 { n++ } END { print n + 0 }' <<<"$cases")"
    cpu_only="$(awk '$3 == 0 { n++ } END { print n + 0 }' <<<"$cases")"
    cat <<EOF
gpu_check: plan (dry run; nothing is run on a GPU)
  plugin     ${plugin:-"(none here: found at run time via python3 -c 'import jax_plugins.${modules[0]}')"} ($gpu)
  info       $pjrt info --plugin PLUGIN --json
  conform    $pjrt conform PLUGIN --json $logs/conform.json
  jax        $pjrt run tests/data/jax/CASE/program.mlir --plugin PLUGIN --input ... --no-cache, for $single cases
             on one device (not run: $multi multi-device cases, $cpu_only with CPU-only XLA options)
  callbacks  PJRT_TEST_PLUGIN=PLUGIN $tests --ignored --exact host_callbacks::send_and_recv_callbacks_on_a_device_plugin
  bench      $pjrt bench dispatch --plugin PLUGIN --iters 5000 --json
  artifact   $( [[ $gpu == rocm ]] && echo "not run on ROCm (the artifact is for an NVIDIA H200)" || echo "$pjrt run $artifact --plugin PLUGIN --input examples/mlp/{b1,b2,w1,w2,x,y}.npy --no-cache $( ((has_artifact)) || echo "(absent here)")")
EOF
    python3 -c 'import numpy' 2>/dev/null || echo "  note: python3 has no numpy here; the GPU machine's (with jax) has"
    if ((single > 0)); then part plan DRY "$single JAX cases on one device; $((SECONDS - started)) s"
    else part plan FAIL "no JAX case found in tests/data/jax"; fi
    ((failed)) && { echo "gpu_check: dry run FAILED" >&2; exit 1; }
    echo "gpu_check: dry run passed"
    exit 0
fi

if [[ $profile != release ]]; then
    part setup FAIL "the binaries in $dir are $profile builds; run tools/gpu_prepare.sh without --debug"
fi
if [[ -z $plugin || ! -f $plugin ]]; then
    part setup FAIL "no $gpu plugin found (jax_plugins/{${modules[*]}} in python3's site-packages); give --plugin PATH"
    printf '%s\n' "${summary[@]}" >"$logs/summary.txt"
    exit 1
fi
echo "gpu_check: plugin $plugin; logs in $logs"
if [[ $gpu == rocm ]]; then command -v rocm-smi >/dev/null && rocm-smi --showproductname --showdriverversion >"$logs/rocm-smi.txt" 2>&1
else command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$logs/nvidia-smi.txt" 2>&1; fi

# info
if timeout "$(cap 60)" "$pjrt" info --plugin "$plugin" --json >"$logs/info.json" 2>"$logs/info.err"; then
    detail="$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
devs = d.get("devices", [])
kinds = ", ".join(sorted({x.get("kind", "?") for x in devs}))
version = d["platform_version"].replace("\n", " ")
print(d["platform"], len(devs), "|", "platform %s, %d device(s) (%s), API %s, %s" % (d["platform"], len(devs), kinds, d["api_version"], version))' "$logs/info.json")"
    read -r platform ndev _ <<<"$detail"
    detail="${detail#*| }"
    if [[ $platform == "$gpu" && $ndev -ge 1 ]]; then part info PASS "$detail"
    else part info FAIL "expected platform $gpu with a device: $detail"; fi
else
    part info FAIL "exit $? ($(tail -1 "$logs/info.err"))"
    ndev=1
fi

# conform
timeout "$(cap 150)" "$pjrt" conform "$plugin" --json "$logs/conform.json" >"$logs/conform.txt" 2>"$logs/conform.err"
status=$?
counts="$(python3 -c '
import collections, json, sys
c = collections.Counter(x["status"] for x in json.load(open(sys.argv[1]))["checks"])
print(" ".join(f"{k} {v}" for k, v in sorted(c.items())))' "$logs/conform.json" 2>/dev/null)"
if ((status == 0)); then part conform PASS "$counts"
else part conform FAIL "exit $status: ${counts:-no report} (see $logs/conform.txt)"; fi

# jax
strict=0; loose=0; tf32=0; bad=(); skipped=0; jax_started=$SECONDS
mkdir -p "$logs/jax"
while read -r name devices runnable args; do
    # Single-device cases only: the machine has one GPU (the multi-device ones need
    # --replicas / --shard-inputs and per-device outputs; tests/cli runs them on CPU devices).
    if ((devices > 1 || runnable == 0)); then skipped=$((skipped + 1)); continue; fi
    # The whole check has 5 minutes; the JAX cases get at most 150 s of them.
    if ((SECONDS - jax_started > 150)); then bad+=("$name: not run, the JAX part ran out of its 150 s"); continue; fi
    out="$logs/jax/$name"
    # shellcheck disable=SC2086  # the plan's arguments are paths without spaces
    if ! timeout "$(cap 30)" "$pjrt" run $args --plugin "$plugin" --output-dir "$out" --no-cache >"$out.log" 2>&1; then
        bad+=("$name: run failed ($(tail -1 "$out.log"))"); continue
    fi
    verdict="$(compare_outputs "tests/data/jax/$name" "$out" "tests/data/jax/$name/meta.json" 2>&1)"
    case "$verdict" in
        strict) strict=$((strict + 1)) ;;
        loose) loose=$((loose + 1)); echo "$name: within 100x the case's tolerance" >>"$logs/jax-not-strict.txt" ;;
        tf32) tf32=$((tf32 + 1)); echo "$name: within TF32 tolerance" >>"$logs/jax-not-strict.txt" ;;
        *) bad+=("$name: $verdict") ;;
    esac
done < <(jax_plan)
matched=$((strict + loose + tf32))
detail="$matched cases match JAX ($strict within the case's tolerance, $loose within 100x, $tf32 within TF32's rtol 1e-2), ${#bad[@]} failed, $skipped not run (multi-device, or CPU-only XLA options)"
if ((${#bad[@]} == 0 && matched > 0)); then part jax PASS "$detail"
else
    printf '%s\n' "${bad[@]}" >"$logs/jax-failures.txt"
    part jax FAIL "$detail: $(IFS=';'; echo "${bad[*]:0:3}")$( ((${#bad[@]} > 3)) && echo "; ... (all in $logs/jax-failures.txt)")"
fi

# callbacks
if PJRT_TEST_PLUGIN="$plugin" timeout "$(cap 90)" "$tests" --ignored --exact \
    host_callbacks::send_and_recv_callbacks_on_a_device_plugin >"$logs/callbacks.txt" 2>&1; then
    part callbacks PASS "$(grep -m1 '^test result' "$logs/callbacks.txt")"
else
    part callbacks FAIL "exit $? (see $logs/callbacks.txt: $(grep -m1 -E 'panicked|assert' "$logs/callbacks.txt"))"
fi

# bench
if timeout "$(cap 60)" "$pjrt" bench dispatch --plugin "$plugin" --iters 5000 --json >"$logs/bench.json" 2>"$logs/bench.err"; then
    part bench PASS "$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
safe, raw, ratio = d["safe"]["median_us"], d["raw"]["median_us"], d["safe_over_raw"]
print(f"dispatch median: safe {safe:.2f} us, raw C API {raw:.2f} us, ratio {ratio:.2f}")' "$logs/bench.json")"
else
    part bench FAIL "exit $? ($(tail -1 "$logs/bench.err"))"
fi

# artifact (for an NVIDIA H200: not a ROCm machine's)
if [[ $gpu == rocm ]]; then
    echo "gpu_check: artifact: not run (the prepared artifact was compiled for an NVIDIA H200)"
elif ((has_artifact)); then
    if timeout "$(cap 60)" "$pjrt" run "$artifact" --plugin "$plugin" --input examples/mlp/{b1,b2,w1,w2,x,y}.npy \
        --output-dir "$logs/artifact" --no-cache --json >"$logs/artifact.json" 2>"$logs/artifact.err"; then
        verdict="$(compare_outputs "$dir/mlp-expected" "$logs/artifact" 2>&1)"
        if [[ $verdict == strict || $verdict == loose || $verdict == tf32 ]]; then
            part artifact PASS "loaded and ran $(stat -c %s "$artifact") bytes; outputs match the CPU plugin's ($verdict)"
        else
            part artifact FAIL "$verdict"
        fi
    else
        part artifact FAIL "exit $? ($(tail -1 "$logs/artifact.err"))"
    fi
else
    part artifact FAIL "no $artifact (tools/gpu_prepare.sh without --skip-artifact)"
fi

printf '%s\n' "${summary[@]}" >"$logs/summary.txt"
echo "gpu_check: $((SECONDS - started)) s; logs in $logs"
((failed)) && { echo "gpu_check: FAILED" >&2; exit 1; }
echo "gpu_check: all parts passed"
