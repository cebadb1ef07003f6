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

With --startup it also times the whole process to the first result, warm caches on both sides:
`pjrt run MODEL` (compile cache) against a fresh Python that imports JAX, deserializes the
model and runs it once with JAX's persistent compilation cache (wall time and peak RSS).

Usage (from the repository root, after `cargo build --release -p pjrt-cli`):

    /tmp/jaxenv/bin/python tools/bench_vs_jax.py                 # MLP and CNN, 3 alternations
    /tmp/jaxenv/bin/python tools/bench_vs_jax.py --plugin cpu-0.106 --iters 5000 --startup
    /tmp/jaxenv/bin/python tools/bench_vs_jax.py --models mlp --json results.json
    /tmp/jaxenv/bin/python tools/bench_vs_jax.py --client-option asynchronous=false   # 0.115 plugin

Numbers are only meaningful on a quiet machine: run nothing else meanwhile.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

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


def export(name, out_dir, rng):
    """Exports model `name` to out_dir/name/model.jaxexport with in0.npy, ...; returns (call, args, paths)."""
    fun, args = MODELS[name](rng)
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
    for _ in range(max(iters // 10, 1)):
        call(*on_device).block_until_ready()
    samples = []
    for _ in range(iters):
        t = time.perf_counter_ns()
        call(*on_device).block_until_ready()
        samples.append(time.perf_counter_ns() - t)
    return percentiles(samples)


def time_pjrt(pjrt, plugin, model, inputs, iters, client_options=()):
    cmd = [pjrt, "bench", "run", str(model), "--input", *map(str, inputs), "--iters", str(iters), "--raw", "--json"]
    if plugin:
        cmd += ["--plugin", plugin]
    for option in client_options:
        cmd += ["--client-option", option]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    report = json.loads(out.stdout)
    pick = lambda v: {k: report[v][k] for k in ("p10_us", "median_us", "p90_us", "p99_us")}  # noqa: E731
    return pick("safe"), pick("raw"), report


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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pjrt", default=str(ROOT / "target/release/pjrt"), help="the pjrt binary")
    parser.add_argument("--plugin", default=None, help="pjrt --plugin (default: the CPU plugin pjrt finds)")
    parser.add_argument("--models", default="mlp,cnn", help="comma-separated: " + ",".join(MODELS))
    parser.add_argument("--iters", type=int, default=5000, help="timed calls per side and alternation")
    parser.add_argument("--alternations", type=int, default=3)
    parser.add_argument("--out", default=None, help="where to write the models (default: a temporary folder)")
    parser.add_argument("--startup", action="store_true", help="also time the whole process to a first result")
    parser.add_argument("--client-option", action="append", default=[], metavar="NAME=VALUE",
                        help="a client create option for pjrt bench run (e.g. asynchronous=false); repeatable")
    parser.add_argument("--json", default=None, help="write every figure to this file")
    args = parser.parse_args()

    out_dir = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="bench-vs-jax-"))
    rng = np.random.default_rng(20261201)
    results = {"jax": jax.__version__, "client_options": args.client_option, "date": time.strftime("%Y-%m-%d"), "machine": os.uname().nodename,
               "cores": os.cpu_count(), "models": {}}
    for name in args.models.split(","):
        exported, host_args, model, inputs = export(name, out_dir, rng)
        rows = []
        for k in range(args.alternations):
            # Alternate which side goes first, so neither always runs on a warmer machine.
            if k % 2 == 0:
                j = time_jax(exported, host_args, args.iters)
                safe, raw, _ = time_pjrt(args.pjrt, args.plugin, model, inputs, args.iters, args.client_option)
            else:
                safe, raw, _ = time_pjrt(args.pjrt, args.plugin, model, inputs, args.iters, args.client_option)
                j = time_jax(exported, host_args, args.iters)
            rows.append({"jax": j, "pjrt": safe, "raw": raw})
        entry = {"alternations": rows}
        print(f"\n{name} ({model}), {args.iters} calls per side, {args.alternations} alternations")
        print(f"  {'':4} {'side':5} {'p10 us':>8} {'median':>8} {'p90':>8}   {'pjrt/jax p10':>12} {'median':>7}"
              f"   {'raw/jax p10':>11} {'median':>7}")
        for k, r in enumerate(rows):
            for side in ("jax", "pjrt", "raw"):
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
            raw_ratio = statistics.median(r["raw"][q] / r["jax"][q] for r in rows)
            entry[f"pjrt_over_jax_{q}"] = ratio
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
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
