#!/usr/bin/env python3
"""Per-call latency of real models: JAX against `pjrt bench run` (safe API) and its raw C path.

Needs jax and numpy (not run by CI). Builds each model with JAX, exports it with `jax.export`
(written with its inputs as .npy under --out), then alternates, --alternations times:

  * JAX: `jax.jit(exported.call)` on inputs already on the device, each call timed up to
    `block_until_ready()` (JAX's own CPU client, jaxlib's C++ PjRt client);
  * `pjrt bench run MODEL --input ... --raw --json`: this library's `LoadedExecutable::execute`
    and, alternated with it in blocks, the raw C API on the same executable and device buffers
    (`PJRT_LoadedExecutable_Execute` + `PJRT_Event_Await` + destroys) on the PJRT CPU plugin.

It prints p10 / median / p90 per side and alternation, and the ratios (pjrt / JAX, raw / JAX;
below 1 is faster than JAX). Where the raw C path is above JAX by the same margin as the safe
path, the gap is the plugin's (its C API wrapper), not this library's.

Linear algebra (`--models linalg`, or a family `solve,svd`, or single models `svd_1024_f64`):
`jnp.linalg.solve(a, b)` (a random n x n matrix, b a vector), `jnp.linalg.cholesky` (an SPD
matrix), `jnp.linalg.eigh` (a symmetric one) and `jnp.linalg.svd(a, full_matrices=False)`, at
n = 256 and 1024, f32 and f64: on CPU they are the `lapack_*_ffi` custom calls (jaxlib's
kernels under JAX, pjrt-client's built-in ones under pjrt), both over scipy's OpenBLAS. Each is
timed per call with an iteration count calibrated from one JAX call (--linalg-seconds per side
and alternation, at least 3 calls; --linalg-iters fixes it), 10 alternations unless
--alternations says otherwise, without the raw C path (a call takes milliseconds, dispatch is
noise) and with one call in flight. The OpenBLAS thread count is OPENBLAS_NUM_THREADS for both
sides (--blas-threads sets it); the script prints what each side's OpenBLAS reports (its
library, version, core kernel and threads) and the CPU count, and ends with a summary table.

Shape-polymorphic models (`--models symbolic`): the 6-layer, 29M-parameter transformer of
tools/gen_transformer_export.py exported with tokens (b, t), t <= 256 (its `symbolic` export),
weights as arguments. For each of --symbolic-shapes (every one new to both sides), the time to
first result: from the tokens in host memory (the weights already on the device, the export
already deserialized) to the logits in host memory, which at a new shape is refinement +
compile + upload + run + download. JAX: `jax.jit(exported.call)(params, tokens)` and
`exported.call(params, tokens)`, in turn, each after `jax.clear_caches()`, the logits brought
to the host with np.asarray (on CPU a view of the device buffer: no copy, where pjrt's `to_npy`
copies them); JAX's persistent compilation cache is not set. pjrt: the `first_result` example
of pjrt-formats (`cargo build --release -p pjrt-formats --example first_result`), in its own
process after JAX's side, a `jax_export::Runner` without a compile cache on the CPU plugin
`pjrt run` would take (PJRT_PLUGIN chooses another): `Runner::executable` (refine, write bytecode,
compile), the tokens' upload, execute, download; the table's `exe` column is the first call's
`Runner::executable` alone. Both sides run one call at a shape outside the list first
(untimed), so neither pays its one-time setup in the figures; process start, plugin load and
the weights' upload are outside them too. Then --symbolic-repeats more calls at each shape (the
executable a lookup on both sides): their median is the repeated-shape cost. --symbolic-rounds
times over, the sides' order alternating (each round starts JAX's caches cleared and a new pjrt
process, so every shape is new again); the table gives medians over the rounds and the
per-round pjrt/JAX-jit ratios' median, min and max.

With --startup it also times the whole process to the first result, warm caches on both sides:
`pjrt run MODEL` (compile cache) against a fresh Python that imports JAX, deserializes the
model and runs it once with JAX's persistent compilation cache (wall time and peak RSS).

Usage (from the repository root, after `cargo build --release -p pjrt-cli`):

    /tmp/jaxenv/bin/python tools/bench_vs_jax.py                 # MLP and CNN, 3 alternations
    /tmp/jaxenv/bin/python tools/bench_vs_jax.py --plugin cpu-0.106 --iters 5000 --startup
    /tmp/jaxenv/bin/python tools/bench_vs_jax.py --models mlp --json results.json
    /tmp/jaxenv/bin/python tools/bench_vs_jax.py --client-option asynchronous=false   # 0.115 plugin
    target/jax-venv-0.10.2/bin/python tools/bench_vs_jax.py --models linalg --blas-threads 1
    target/jax-venv-0.10.2/bin/python tools/bench_vs_jax.py --models svd_1024_f64,eigh --alternations 3
    target/jax-venv-0.10.2/bin/python tools/bench_vs_jax.py --models symbolic --json symbolic.json

Numbers are only meaningful on a quiet machine: run nothing else meanwhile.
"""

import argparse
import contextlib
import glob
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

# OpenBLAS sizes its thread pool when it is loaded: --blas-threads must reach the environment
# before JAX (and the scipy it loads its LAPACK from) is imported, and the pjrt processes
# inherit it.
_early = argparse.ArgumentParser(add_help=False)
_early.add_argument("--blas-threads", type=int, default=None)
_blas_threads = _early.parse_known_args()[0].blas_threads
if _blas_threads is not None:
    os.environ["OPENBLAS_NUM_THREADS"] = str(_blas_threads)
os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def mlp_model(rng):
    """An MLP forward: 64 -> 256 -> 256 -> 10, batch 8, tanh."""
    def f(w1, b1, w2, b2, w3, b3, x):
        h = jnp.tanh(x @ w1 + b1)
        h = jnp.tanh(h @ w2 + b2)
        return h @ w3 + b3
    shapes = [(64, 256), (256,), (256, 256), (256,), (256, 10), (10,), (8, 64)]
    return f, [rng.standard_normal(s).astype(np.float32) * 0.1 for s in shapes]


def cnn_model(rng):
    """A small CNN forward: 28x28x1 batch 4, conv 3x3x8, relu, conv 3x3x16 stride 2, relu, mean, dense 10."""
    def conv(x, w, stride):
        return jax.lax.conv_general_dilated(x, w, (stride, stride), "SAME",
                                            dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def f(k1, k2, w, b, x):
        h = jax.nn.relu(conv(x, k1, 1))
        h = jax.nn.relu(conv(h, k2, 2))
        return h.mean(axis=(1, 2)) @ w + b
    shapes = [(3, 3, 1, 8), (3, 3, 8, 16), (16, 10), (10,), (4, 28, 28, 1)]
    return f, [rng.standard_normal(s).astype(np.float32) * 0.1 for s in shapes]


MODELS = {"mlp": mlp_model, "cnn": cnn_model}

LINALG_FAMILIES = ("solve", "cholesky", "eigh", "svd")
LINALG_SIZES = (256, 1024)
LINALG_DTYPES = {"f32": np.float32, "f64": np.float64}
LINALG = [f"{f}_{n}_{d}" for f in LINALG_FAMILIES for n in LINALG_SIZES for d in LINALG_DTYPES]


def linalg_model(name, rng):
    """Model `family_n_dtype`: (function, inputs) of one jnp.linalg call on an n x n matrix."""
    family, n, dtype = name.split("_")
    n, dtype = int(n), LINALG_DTYPES[dtype]
    a = rng.standard_normal((n, n))
    if family == "solve":
        return jnp.linalg.solve, [a.astype(dtype), rng.standard_normal(n).astype(dtype)]
    if family == "cholesky":
        return jnp.linalg.cholesky, [(a @ a.T / n + np.eye(n)).astype(dtype)]
    # eigh and svd return named tuples, which jax.export serializes only registered: plain ones.
    if family == "eigh":
        return (lambda x: tuple(jnp.linalg.eigh(x))), [((a + a.T) / 2).astype(dtype)]
    return (lambda x: tuple(jnp.linalg.svd(x, full_matrices=False))), [a.astype(dtype)]


SYMBOLIC = ["transformer_symbolic"]


def expand_models(spec):
    """--models: names, `linalg` (all 16) or a family (its 4 sizes and types), `symbolic`, in order, once each."""
    names = []
    for part in filter(None, spec.split(",")):
        if part == "linalg":
            more = LINALG
        elif part in ("symbolic", *SYMBOLIC):
            more = SYMBOLIC
        elif part in LINALG_FAMILIES:
            more = [m for m in LINALG if m.startswith(part + "_")]
        elif part in MODELS or part in LINALG:
            more = [part]
        else:
            sys.exit(f"unknown model {part!r}: choose from {', '.join(MODELS)}, linalg, "
                     f"{', '.join(LINALG_FAMILIES)}, {', '.join(LINALG)} or symbolic")
        names += [m for m in more if m not in names]
    return names


def is_linalg(name):
    return name in LINALG


def x64_for(name):
    """A context in which model `name` is built and run: 64-bit types on for the f64 models only."""
    return jax.enable_x64(name.endswith("_f64"))


def export(name, out_dir, rng):
    """Exports model `name` to out_dir/name/model.jaxexport with in0.npy, ...; returns (call, args, paths)."""
    fun, args = linalg_model(name, rng) if is_linalg(name) else MODELS[name](rng)
    exported = jax.export.export(jax.jit(fun))(*args)
    folder = out_dir / name
    folder.mkdir(parents=True, exist_ok=True)
    model = folder / "model.jaxexport"
    model.write_bytes(exported.serialize())
    inputs = []
    for i, a in enumerate(args):
        path = folder / f"in{i}.npy"
        np.save(path, a)
        inputs.append(path)
    return exported, args, model, inputs


def percentiles(samples_ns):
    s = np.sort(np.asarray(samples_ns, dtype=np.float64)) / 1e3
    at = lambda q: float(s[int(round((len(s) - 1) * q))])  # noqa: E731 (same rule as pjrt bench)
    return {"p10_us": at(0.1), "median_us": at(0.5), "p90_us": at(0.9), "p99_us": at(0.99)}


def time_jax(exported, args, iters):
    call = jax.jit(exported.call)
    on_device = [jax.device_put(a) for a in args]
    # jax.block_until_ready: a linear-algebra model returns a tuple (eigh, svd).
    for _ in range(max(iters // 10, 1)):
        jax.block_until_ready(call(*on_device))
    samples = []
    for _ in range(iters):
        t = time.perf_counter_ns()
        jax.block_until_ready(call(*on_device))
        samples.append(time.perf_counter_ns() - t)
    return percentiles(samples)


def calibrate_iters(exported, args, seconds, most):
    """Calls per side and alternation for a slow model: `seconds` worth of calls, 3 to `most`."""
    call = jax.jit(exported.call)
    on_device = [jax.device_put(a) for a in args]
    jax.block_until_ready(call(*on_device))  # compiles
    best = math.inf
    for _ in range(2):
        t = time.perf_counter()
        jax.block_until_ready(call(*on_device))
        best = min(best, time.perf_counter() - t)
    return max(3, min(most, math.ceil(seconds / best))), best


def time_pjrt(pjrt, plugin, model, inputs, iters, client_options=(), raw=True, in_flight=None):
    cmd = [pjrt, "bench", "run", str(model), "--input", *map(str, inputs), "--iters", str(iters), "--json"]
    if raw:
        cmd.append("--raw")
    if in_flight is not None:
        cmd += ["--in-flight", str(in_flight)]
    if plugin:
        cmd += ["--plugin", plugin]
    for option in client_options:
        cmd += ["--client-option", option]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed (status {out.returncode}):\n{out.stderr.strip()}")
    report = json.loads(out.stdout)
    pick = lambda v: {k: report[v][k] for k in ("p10_us", "median_us", "p90_us", "p99_us")}  # noqa: E731
    return pick("safe"), (pick("raw") if raw else None), report


# Forks and execs the command, then reports its wall time and peak RSS. A fork of this script
# itself would not do: a child's peak RSS counts the pages it shared with its (large, JAX-loaded)
# parent before exec, so the child is forked from this small Python instead.
LAUNCHER = """
import os, sys, time
t = time.perf_counter()
pid = os.fork()
if pid == 0:
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(time.perf_counter() - t, usage.ru_maxrss, os.waitstatus_to_exitcode(status))
"""


def wait_rusage(cmd, env=None):
    """Runs cmd; returns (wall seconds from fork to exit, peak RSS MiB)."""
    out = subprocess.run([sys.executable, "-S", "-c", LAUNCHER, *cmd], env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    wall, peak_kib, code = float(out[0]), int(out[1]), int(out[2])
    if code != 0:
        raise RuntimeError(f"{cmd[0]} failed with status {code}")
    return wall, peak_kib / 1024


JAX_STARTUP = """
import sys, numpy as np, jax
jax.config.update("jax_compilation_cache_dir", sys.argv[1])
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
exported = jax.export.deserialize(bytearray(open(sys.argv[2], "rb").read()))
args = [np.load(p) for p in sys.argv[3:]]
out = jax.jit(exported.call)(*args)
np.asarray(jax.tree_util.tree_leaves(out)[0])
"""


def startup(pjrt, plugin, model, inputs, work, runs=3):
    """Median whole-process time to first result and peak RSS, warm caches, for pjrt run and JAX."""
    env = dict(os.environ, PJRT_CACHE_DIR=str(work / "pjrt-cache"))
    cmd = [pjrt, "run", str(model), "--input", *map(str, inputs), "-o", str(work / "out")]
    if plugin:
        cmd += ["--plugin", plugin]
    jax_cmd = [sys.executable, "-c", JAX_STARTUP, str(work / "jax-cache"), str(model), *map(str, inputs)]
    wait_rusage(cmd, env)  # fill both caches
    wait_rusage(jax_cmd)
    ours, theirs = [], []
    for _ in range(runs):
        ours.append(wait_rusage(cmd, env))
        theirs.append(wait_rusage(jax_cmd))
    med = lambda rows: (statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows))  # noqa: E731
    return med(ours), med(theirs)


# What an OpenBLAS says about itself: run here on the library JAX loaded, and in a fresh Python
# (same environment) on the one pjrt loads.
OPENBLAS_PROBE = """
def openblas_report(path):
    import ctypes
    lib = ctypes.CDLL(path)
    info = {"library": path}
    for prefix in ("scipy_openblas_", "openblas_"):
        if hasattr(lib, prefix + "get_config"):
            for what, kind in (("config", ctypes.c_char_p), ("corename", ctypes.c_char_p),
                               ("num_threads", ctypes.c_int)):
                f = getattr(lib, prefix + "get_" + what)
                f.restype = kind
                v = f()
                info[what] = v.decode() if isinstance(v, bytes) else v
            break
    return info
"""
exec(OPENBLAS_PROBE)  # defines openblas_report


def openblas_of_jax():
    """The OpenBLAS jaxlib's LAPACK kernels call, as it reports itself: scipy's (jaxlib takes its routines
    from scipy.linalg.cython_lapack), not numpy's 64-bit-integer one that is loaded beside it."""
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "openblas" in line.lower() and ".so" in line}
    scipys = sorted(p for p in paths if "/scipy.libs/" in p or "scipy_openblas32" in p)
    return openblas_report(scipys[0]) if scipys else {"library": None, "note": f"(not loaded; loaded: {paths})"}


def openblas_of_pjrt():
    """The OpenBLAS pjrt-client loads (PJRT_LAPACK_LIBRARY, else scipy-openblas32 in the plugin cache), as it
    reports itself under this environment (it sizes its threads the same way in the pjrt process)."""
    path = os.environ.get("PJRT_LAPACK_LIBRARY")
    if not path:
        cache = os.environ.get("PJRT_PLUGIN_CACHE") or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "pjrt-client", "plugins")
        found = sorted(glob.glob(os.path.join(cache, "scipy-openblas32-*", "scipy_openblas32", "lib",
                                              "libscipy_openblas.so")))
        if not found:
            return {"library": None, "note": "not installed yet (pjrt plugin install openblas)"}
        path = found[-1]
    probe = OPENBLAS_PROBE + "\nimport json, sys\nprint(json.dumps(openblas_report(sys.argv[1])))"
    return json.loads(subprocess.run([sys.executable, "-S", "-c", probe, path], check=True,
                                     capture_output=True, text=True).stdout)


def describe_openblas(side, info):
    if not info.get("library"):
        return f"  {side}: no OpenBLAS found {info.get('note', '')}"
    return (f"  {side}: {info['library']}\n      {info.get('config', '?')}, core {info.get('corename', '?')}, "
            f"{info.get('num_threads', '?')} threads")


def print_linalg_summary(rows):
    print("\nlinear algebra: median per call of each side, pjrt/JAX = median over alternations of the "
          "per-alternation ratio of medians")
    print(f"  {'model':16} {'calls':>5} {'alt':>3} {'JAX ms':>9} {'pjrt ms':>9} {'pjrt/JAX':>8} "
          f"{'min':>6} {'max':>6}  <=1.05  load")
    for name, e in rows:
        if "error" in e:
            print(f"  {name:16} {e['iters']:>5}   pjrt failed: {e['error'].splitlines()[-1][:90]}")
            continue
        ratios = [r["pjrt"]["median_us"] / r["jax"]["median_us"] for r in e["alternations"]]
        jax_ms = statistics.median(r["jax"]["median_us"] for r in e["alternations"]) / 1e3
        pjrt_ms = statistics.median(r["pjrt"]["median_us"] for r in e["alternations"]) / 1e3
        ratio = e["pjrt_over_jax_median_us"]
        print(f"  {name:16} {e['iters']:>5} {len(ratios):>3} {jax_ms:>9.3f} {pjrt_ms:>9.3f} {ratio:>8.3f} "
              f"{min(ratios):>6.3f} {max(ratios):>6.3f}  {'yes' if ratio <= 1.05 else 'NO ':6} "
              f"{e['load_average_1min']:.1f}")
    print("  (load: the 1-minute load average after the model; the benchmark itself adds about one per BLAS "
          "thread, more is other work on the machine)")


def parse_shapes(spec):
    """`1x16,4x64`: [(1, 16), (4, 64)]."""
    return [tuple(int(d) for d in part.split("x")) for part in filter(None, spec.split(","))]


def bench_symbolic(args, out_dir, rng):
    """Time to first result at new shapes and the repeated-shape cost, JAX and pjrt (see the docstring)."""
    sys.path.insert(0, str(ROOT / "tools"))
    import gen_transformer_export as tfm

    folder = out_dir / "transformer_symbolic"
    folder.mkdir(parents=True, exist_ok=True)
    exported = tfm.export_symbolic()
    model = folder / "model.jaxexport"
    model.write_bytes(exported.serialize())
    params = tfm.init_params(seq=tfm.MAX_SEQ)
    # The flattened pytree's order (sorted names) is the export's input order.
    for i, (_, a) in enumerate(sorted(params.items())):
        np.save(folder / f"in{i}.npy", a)
    warmup, shapes = parse_shapes(args.symbolic_warmup)[0], parse_shapes(args.symbolic_shapes)
    if warmup in shapes or len(set(shapes)) != len(shapes):
        sys.exit("--symbolic-shapes must be distinct and leave out --symbolic-warmup")
    tokens = {s: rng.integers(0, tfm.VOCAB, size=s, dtype=np.int32) for s in [warmup, *shapes]}
    paths = {}
    for s, t in tokens.items():
        paths[s] = folder / f"tokens_{s[0]}x{s[1]}.npy"
        np.save(paths[s], t)

    on_device = jax.device_put(params)
    jitted = jax.jit(exported.call)

    def jax_round():
        rows = {}
        for name, call in (("jax_jit", jitted), ("jax_call", exported.call)):
            # Every shape new again (and the two ways share none of JAX's in-memory caches).
            jax.clear_caches()
            np.asarray(call(on_device, tokens[warmup]))
            rows[name] = {}
            for s in shapes:
                t = time.perf_counter()
                np.asarray(call(on_device, tokens[s]))
                first = (time.perf_counter() - t) * 1e3
                repeat = []
                for _ in range(args.symbolic_repeats):
                    t = time.perf_counter()
                    np.asarray(call(on_device, tokens[s]))
                    repeat.append((time.perf_counter() - t) * 1e3)
                rows[name][s] = {"first_ms": first, "repeat_ms": repeat}
        return rows

    def pjrt_round():
        cmd = [args.first_result, str(model), str(folder), str(args.symbolic_repeats), str(paths[warmup]),
               *(str(paths[s]) for s in shapes)]
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed (status {out.returncode}):\n{out.stderr.strip()}")
        plugin = next((line for line in out.stderr.splitlines() if line.startswith("plugin ")), "plugin ?")
        return {tuple(r["shape"]): r for r in map(json.loads, out.stdout.splitlines())}, plugin

    rounds = []
    for k in range(args.symbolic_rounds):
        # Alternate which side goes first, so neither always runs on a warmer machine.
        if k % 2 == 0:
            theirs = jax_round()
            ours, plugin = pjrt_round()
        else:
            ours, plugin = pjrt_round()
            theirs = jax_round()
        rounds.append({**theirs, "pjrt": ours})

    med = statistics.median
    print(f"\ntransformer_symbolic ({model}, {model.stat().st_size} bytes; {len(exported.in_avals)} inputs, "
          f"tokens {exported.in_avals[-1]}), {args.symbolic_rounds} rounds; pjrt's {plugin}; JAX {jax.__version__}")
    print("  first: time to first result at a new shape (median over rounds); exe: its Runner::executable; "
          f"repeat: median of {args.symbolic_repeats} calls at it (median over rounds); ms")
    print(f"  {'b x t':>9} {'first: call':>11} {'jit':>7} {'pjrt':>7} {'exe':>7} {'pjrt/jit':>8} {'min':>6} "
          f"{'max':>6}   {'repeat: call':>12} {'jit':>7} {'pjrt':>7}")
    entry = {"warmup": list(warmup), "repeats": args.symbolic_repeats, "pjrt_plugin": plugin, "shapes": []}
    for s in shapes:
        per = {side: [r[side][s] for r in rounds] for side in ("jax_call", "jax_jit", "pjrt")}
        first = {side: med(x["first_ms"] for x in rows) for side, rows in per.items()}
        repeat = {side: med(med(x["repeat_ms"]) if x["repeat_ms"] else math.nan for x in rows)
                  for side, rows in per.items()}
        ratios = [p["first_ms"] / j["first_ms"] for p, j in zip(per["pjrt"], per["jax_jit"])]
        exe = med(x["executable_ms"] for x in per["pjrt"])
        print(f"  {s[0]:>3} x {s[1]:<4} {first['jax_call']:>11.1f} {first['jax_jit']:>7.1f} {first['pjrt']:>7.1f} "
              f"{exe:>7.1f} {med(ratios):>8.3f} {min(ratios):>6.3f} {max(ratios):>6.3f}   "
              f"{repeat['jax_call']:>12.3f} {repeat['jax_jit']:>7.3f} {repeat['pjrt']:>7.3f}")
        entry["shapes"].append({"shape": list(s), "first_ms": first, "repeat_ms": repeat, "pjrt_executable_ms": exe,
                                "pjrt_over_jit_first": med(ratios), "rounds": per})
    entry["load_average_1min"] = os.getloadavg()[0]
    return entry


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pjrt", default=str(ROOT / "target/release/pjrt"), help="the pjrt binary")
    parser.add_argument("--plugin", default=None, help="pjrt --plugin (default: the CPU plugin pjrt finds)")
    parser.add_argument("--models", default="mlp,cnn",
                        help="comma-separated: " + ",".join(MODELS) + ", linalg (all of " + ",".join(LINALG_FAMILIES)
                        + " at n = 256 and 1024, f32 and f64), a family, or one model such as svd_1024_f64")
    parser.add_argument("--iters", type=int, default=5000, help="timed calls per side and alternation (mlp, cnn)")
    parser.add_argument("--alternations", type=int, default=None,
                        help="default 3 for mlp and cnn, 10 for the linear algebra")
    parser.add_argument("--linalg-seconds", type=float, default=0.5,
                        help="time per side and alternation a linear-algebra model's call count is sized for "
                             "(from one JAX call; at least 3 calls)")
    parser.add_argument("--linalg-iters", type=int, default=None,
                        help="timed calls per side and alternation for every linear-algebra model (instead of "
                             "--linalg-seconds)")
    parser.add_argument("--linalg-max-iters", type=int, default=500, help="most calls --linalg-seconds may choose")
    parser.add_argument("--blas-threads", type=int, default=None,
                        help="OPENBLAS_NUM_THREADS for both sides (default: the environment's, else OpenBLAS's "
                             "choice, one per core)")
    parser.add_argument("--pjrt-lapack", default=None, metavar="PATH|jax",
                        help="PJRT_LAPACK_LIBRARY for the pjrt side: a LAPACK library, or `jax` for the very OpenBLAS "
                             "file JAX's kernels call (scipy's bundled one), to set the kernels apart from the build")
    parser.add_argument("--symbolic-shapes", default="1x16,2x32,1x64,4x64,2x100,8x128,1x256,4x256",
                        help="symbolic: the (b x t) token shapes, each new to both sides")
    parser.add_argument("--symbolic-warmup", default="1x8", help="symbolic: the untimed first call's shape")
    parser.add_argument("--symbolic-repeats", type=int, default=20, help="symbolic: calls at each shape after the first")
    parser.add_argument("--symbolic-rounds", type=int, default=3,
                        help="symbolic: rounds of both sides (each shape new again in each: JAX's caches cleared, "
                             "a new pjrt process)")
    parser.add_argument("--first-result", default=str(ROOT / "target/release/examples/first_result"),
                        help="symbolic: pjrt-formats' first_result example")
    parser.add_argument("--out", default=None, help="where to write the models (default: a temporary folder)")
    parser.add_argument("--startup", action="store_true", help="also time the whole process to a first result")
    parser.add_argument("--client-option", action="append", default=[], metavar="NAME=VALUE",
                        help="a client create option for pjrt bench run (e.g. asynchronous=false); repeatable")
    parser.add_argument("--json", default=None, help="write every figure to this file")
    args = parser.parse_args()

    out_dir = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="bench-vs-jax-"))
    rng = np.random.default_rng(20261201)
    names = expand_models(args.models)
    results = {"jax": jax.__version__, "client_options": args.client_option, "date": time.strftime("%Y-%m-%d"), "machine": os.uname().nodename,
               "cores": os.cpu_count(), "models": {}}
    linalg_rows = []
    if any(map(is_linalg, names)):
        # Load jaxlib's LAPACK (scipy's OpenBLAS) before asking it what it runs on.
        jax.block_until_ready(jnp.linalg.cholesky(jnp.eye(2)))
        jax_openblas = openblas_of_jax()
        if args.pjrt_lapack:
            os.environ["PJRT_LAPACK_LIBRARY"] = jax_openblas["library"] if args.pjrt_lapack == "jax" else args.pjrt_lapack
        threads = {"OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS"),
                   "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"), "cpu_count": os.cpu_count(),
                   "sched_getaffinity": len(os.sched_getaffinity(0)),
                   "jax_openblas": jax_openblas, "pjrt_openblas": openblas_of_pjrt()}
        results["threads"] = threads
        print(f"threads: OPENBLAS_NUM_THREADS={threads['OPENBLAS_NUM_THREADS']}, "
              f"OMP_NUM_THREADS={threads['OMP_NUM_THREADS']}, {threads['cpu_count']} CPUs "
              f"({threads['sched_getaffinity']} usable); OpenBLAS as each side loads it:")
        print(describe_openblas("JAX (scipy's)", threads["jax_openblas"]))
        print(describe_openblas("pjrt (pjrt-client's)", threads["pjrt_openblas"]))
    for name in names:
        if name in SYMBOLIC:
            results["models"][name] = bench_symbolic(args, out_dir, rng)
            if args.json:
                Path(args.json).write_text(json.dumps(results, indent=2))
            continue
        linalg = is_linalg(name)
        alternations = args.alternations or (10 if linalg else 3)
        with x64_for(name) if linalg else contextlib.nullcontext():
            exported, host_args, model, inputs = export(name, out_dir, rng)
            iters, one_call_s = args.iters, None
            if linalg:
                if args.linalg_iters:
                    iters = args.linalg_iters
                else:
                    iters, one_call_s = calibrate_iters(exported, host_args, args.linalg_seconds, args.linalg_max_iters)
            rows, report = [], {}
            pjrt_side = lambda: time_pjrt(args.pjrt, args.plugin, model, inputs, iters,  # noqa: E731
                                          args.client_option, raw=not linalg, in_flight=1 if linalg else None)
            try:
                for k in range(alternations):
                    # Alternate which side goes first, so neither always runs on a warmer machine.
                    if k % 2 == 0:
                        j = time_jax(exported, host_args, iters)
                        safe, raw, report = pjrt_side()
                    else:
                        safe, raw, report = pjrt_side()
                        j = time_jax(exported, host_args, iters)
                    rows.append({"jax": j, "pjrt": safe, "raw": raw})
            except RuntimeError as error:
                if not linalg:
                    raise
                # One kernel missing or failing should not cost the other models' figures.
                print(f"\n{name}: pjrt failed, skipped: {error}")
                results["models"][name] = {"error": str(error), "iters": iters}
                linalg_rows.append((name, results["models"][name]))
                continue
        entry = {"alternations": rows, "iters": iters, "pjrt_plugin": report.get("plugin"),
                 "pjrt_plugin_api": report.get("api_version"), "load_average_1min": os.getloadavg()[0]}
        if one_call_s is not None:
            entry["calibration_call_s"] = one_call_s
        sides = ("jax", "pjrt") if linalg else ("jax", "pjrt", "raw")
        print(f"\n{name} ({model}), {iters} calls per side, {alternations} alternations")
        print(f"  {'':4} {'side':5} {'p10 us':>8} {'median':>8} {'p90':>8}   {'pjrt/jax p10':>12} {'median':>7}"
              + ("" if linalg else f"   {'raw/jax p10':>11} {'median':>7}"))
        for k, r in enumerate(rows):
            for side in sides:
                s = r[side]
                extra = ""
                if side == "pjrt":
                    extra = f"   {s['p10_us'] / r['jax']['p10_us']:>12.3f} {s['median_us'] / r['jax']['median_us']:>7.3f}"
                if side == "raw":
                    extra = f"   {'':>12} {'':>7}   {s['p10_us'] / r['jax']['p10_us']:>11.3f}" \
                            f" {s['median_us'] / r['jax']['median_us']:>7.3f}"
                print(f"  #{k + 1:<3} {side:5} {s['p10_us']:>8.2f} {s['median_us']:>8.2f} {s['p90_us']:>8.2f}{extra}")
        for q in ("p10_us", "median_us", "p90_us"):
            ratio = statistics.median(r["pjrt"][q] / r["jax"][q] for r in rows)
            entry[f"pjrt_over_jax_{q}"] = ratio
            if linalg:
                print(f"  median over alternations, {q[:-3]:>6}: pjrt/jax {ratio:.3f}")
                continue
            raw_ratio = statistics.median(r["raw"][q] / r["jax"][q] for r in rows)
            entry[f"raw_over_jax_{q}"] = raw_ratio
            print(f"  median over alternations, {q[:-3]:>6}: pjrt/jax {ratio:.3f}, raw/jax {raw_ratio:.3f}")
        if args.startup:
            with tempfile.TemporaryDirectory() as work:
                (ours, theirs) = startup(args.pjrt, args.plugin, model, inputs, Path(work))
            entry["startup"] = {"pjrt_run_s": ours[0], "pjrt_run_peak_mib": ours[1],
                                "jax_s": theirs[0], "jax_peak_mib": theirs[1]}
            print(f"  whole process to first result (warm caches): pjrt run {ours[0] * 1e3:.0f} ms, "
                  f"{ours[1]:.0f} MiB; JAX {theirs[0] * 1e3:.0f} ms, {theirs[1]:.0f} MiB")
        results["models"][name] = entry
        if linalg:
            linalg_rows.append((name, entry))
        if args.json:  # after each model, so a long run that is stopped keeps what it measured
            Path(args.json).write_text(json.dumps(results, indent=2))
    if linalg_rows:
        print_linalg_summary(linalg_rows)
        t = results["threads"]
        measured = [e for _, e in linalg_rows if "error" not in e] or [{}]
        print(f"  threads: OPENBLAS_NUM_THREADS={t['OPENBLAS_NUM_THREADS']}, JAX's OpenBLAS "
              f"{t['jax_openblas'].get('num_threads')}, pjrt's {t['pjrt_openblas'].get('num_threads')}, "
              f"{t['cpu_count']} CPUs; pjrt plugin {measured[-1].get('pjrt_plugin')} "
              f"(API {measured[-1].get('pjrt_plugin_api')})")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
