#!/usr/bin/env python3
"""Generate JAX-lowered StableHLO test programs with inputs and JAX's outputs.

What it does
------------
For every case defined below this script

  1. builds a small JAX function and deterministic inputs (seeded numpy RNG),
  2. lowers it with ``jax.jit(...).lower(...)`` (or ``jax.pmap`` / a sharded
     ``jax.jit`` for the multi-device cases) and keeps ``lowered.as_text()``,
  3. compiles it once through JAX on the CPU backend, recording the serialized
     ``CompileOptionsProto`` that JAX hands to XLA for exactly that compile,
  4. runs the compiled executable in JAX on CPU and records the outputs,

and writes ``tests/data/jax/<case>/`` with ``program.mlir``, ``in<i>.npy``,
``out<i>.npy``, ``meta.json`` and ``compile_options.pb``.  It finally writes
``tests/data/jax/index.json`` listing every case folder present.
The folder format is described in ``tests/data/jax/README.md``.

Two JAX versions are used:

* the current JAX (0.10.2 when the data was made) for every case except the
  replica-based one: since JAX 0.8 ``jax.pmap`` is lowered through
  ``shard_map`` and every JAX module has ``mhlo.num_replicas = 1``;
* a legacy JAX (0.7.2) only for ``pmap_psum_replicas``, the last JAX whose
  ``pmap`` still lowers to ``mhlo.num_replicas = 2``.  The main run starts
  the legacy interpreter as a subprocess when ``--legacy-python`` is given.

How to rerun (from the repository root)
---------------------------------------
    python3 -m venv /tmp/jaxenv && \\
      /tmp/jaxenv/bin/pip install jax==0.10.2 jaxlib==0.10.2 numpy ml_dtypes
    python3 -m venv /tmp/jaxenv_legacy && \\
      /tmp/jaxenv_legacy/bin/pip install jax==0.7.2 jaxlib==0.7.2 numpy ml_dtypes
    /tmp/jaxenv/bin/python tools/gen_jax_testdata.py \\
      --legacy-python /tmp/jaxenv_legacy/bin/python

Options: ``--out DIR`` (default: tests/data/jax next to this tools/ folder),
``--only NAME[,NAME...]`` to regenerate some cases, ``--legacy`` (used
internally: generate only the legacy replica cases with the running JAX).

The script sets XLA_FLAGS=--xla_force_host_platform_device_count=4 and
JAX_PLATFORMS=cpu itself before importing JAX, and enables jax_enable_x64.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import zlib

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
os.environ["JAX_PLATFORMS"] = "cpu"

import numpy as np  # noqa: E402
import ml_dtypes  # noqa: E402
import jax  # noqa: E402
import jaxlib  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax._src import compiler as _jax_compiler  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

jax.config.update("jax_enable_x64", True)

BF16 = np.dtype(ml_dtypes.bfloat16)
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO_ROOT, "tests", "data", "jax")

# ---------------------------------------------------------------------------
# Capturing the CompileOptions that JAX passes to XLA.
# JAX builds them in jax._src.compiler.get_compile_options (called from
# pxla) and hands them to compiler.backend_compile_and_load, which it looks up
# as a module global; wrapping that function records the exact object.
# ---------------------------------------------------------------------------
_CAPTURED_OPTIONS = []
_orig_backend_compile_and_load = _jax_compiler.backend_compile_and_load


def _capturing_backend_compile_and_load(backend, module, executable_devices,
                                        options, *args, **kwargs):
    _CAPTURED_OPTIONS.append(options.SerializeAsString())
    return _orig_backend_compile_and_load(backend, module, executable_devices,
                                          options, *args, **kwargs)


_jax_compiler.backend_compile_and_load = _capturing_backend_compile_and_load


# ---------------------------------------------------------------------------
# Tolerances, per output.
# ---------------------------------------------------------------------------
def tol(rtol, atol=0.0):
    return {"exact": False, "rtol": float(rtol), "atol": float(atol)}


EXACT = {"exact": True, "rtol": 0.0, "atol": 0.0}

# Plain arithmetic (+ - * /, dot of small integers-valued data...) vs
# transcendental functions, per float dtype.
F16_ARITH, F16_TRANS = tol(1e-3, 1e-3), tol(2e-3, 2e-3)
BF16_ARITH, BF16_TRANS = tol(1e-2, 1e-2), tol(2e-2, 2e-2)
F32_ARITH, F32_TRANS = tol(1e-6, 1e-7), tol(1e-5, 1e-6)
F64_ARITH, F64_TRANS = tol(1e-13, 1e-15), tol(1e-12, 1e-14)


def default_tol(dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_ or np.issubdtype(dtype, np.integer):
        return EXACT
    if dtype == BF16:
        return BF16_TRANS
    if dtype == np.float16:
        return F16_TRANS
    if dtype in (np.float32, np.complex64):
        return F32_TRANS
    return F64_TRANS


# ---------------------------------------------------------------------------
# Case registry.
# ---------------------------------------------------------------------------
CASES = {}


def case(name, legacy=False):
    def deco(fn):
        CASES[name] = (fn, legacy)
        return fn
    return deco


def rng_for(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def logical_dtype_name(dt):
    dt = np.dtype(dt)
    return "bfloat16" if dt == BF16 else dt.name


def encode_array(arr, bf16_encoding):
    """Returns (array to np.save, encoding string)."""
    arr = np.array(arr, order="C", copy=True)  # keeps rank 0 (ascontiguousarray would not)
    if arr.dtype == BF16:
        if bf16_encoding == "bf16_bits_v2":
            return arr, "bf16_bits_v2"
        return arr.view(np.uint16).astype("<u2"), "bf16_bits_u2"
    if arr.dtype.byteorder == ">":
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    return arr, "plain"


def save_npy(path, arr):
    with open(path, "wb") as f:
        np.save(f, arr, allow_pickle=False)


def mlir_main_arity(text):
    """(number of parameters, number of results) of func.func public @main."""
    line = next(l for l in text.splitlines() if "func.func public @main(" in l)
    line = re.sub(r'"[^"]*"', '""', line)  # sharding strings contain brackets
    head, _, results = line.partition(") -> ")
    nparams = head.count("%arg")
    if results.startswith("("):
        # results are "(tensor<..> {attrs}, tensor<..> {attrs}) {"; count
        # top-level entries.
        depth, count, body = 0, 1, results[1:]
        for ch in body:
            if ch in "<({[":
                depth += 1
            elif ch in ">)}]":
                if depth == 0:
                    break
                depth -= 1
            elif ch == "," and depth == 0:
                count += 1
        nresults = count
    else:
        nresults = 1
    return nparams, nresults


def write_case(out_dir, name, *, text, inputs, outputs, out_tols, description,
               replicas=1, partitions=1, input_mode="single", shard_axis=None,
               input_shardings=None, output_shardings=None, use_shardy=None,
               per_device_leading_axis=None, per_device_input_shapes=None,
               per_device_output_shapes=None, xla_options=None,
               bf16_input_encoding="bf16_bits_u2", compile_options=None,
               extra_meta=None):
    assert text.startswith("module @"), text[:40]
    assert "func.func public @main(" in text
    nparams, nresults = mlir_main_arity(text)
    assert nparams == len(inputs), (name, nparams, len(inputs))
    assert nresults == len(outputs), (name, nresults, len(outputs))
    assert len(out_tols) == len(outputs), (name, len(out_tols), len(outputs))
    assert f"mhlo.num_replicas = {replicas} : i32" in text, name
    assert f"mhlo.num_partitions = {partitions} : i32" in text, name

    d = os.path.join(out_dir, name)
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    with open(os.path.join(d, "program.mlir"), "w") as f:
        f.write(text)

    in_meta, out_meta = [], []
    for i, x in enumerate(inputs):
        x = np.asarray(x)
        arr, enc = encode_array(x, bf16_input_encoding)
        save_npy(os.path.join(d, f"in{i}.npy"), arr)
        in_meta.append({"file": f"in{i}.npy", "dtype": logical_dtype_name(x.dtype),
                        "shape": list(x.shape), "encoding": enc})
    for i, y in enumerate(outputs):
        y = np.asarray(y)
        arr, enc = encode_array(y, "bf16_bits_u2")  # bf16 outputs: always <u2
        save_npy(os.path.join(d, f"out{i}.npy"), arr)
        m = {"file": f"out{i}.npy", "dtype": logical_dtype_name(y.dtype),
             "shape": list(y.shape), "encoding": enc}
        m.update(out_tols[i])
        out_meta.append(m)

    meta = {
        "replicas": replicas,
        "partitions": partitions,
        "rtol": max(t["rtol"] for t in out_tols) if out_tols else 0.0,
        "atol": max(t["atol"] for t in out_tols) if out_tols else 0.0,
        "exact": all(t["exact"] for t in out_tols),
        "equal_nan": True,
        "description": description,
        "jax_version": jax.__version__,
        "jaxlib_version": jaxlib.__version__,
        "input_mode": input_mode,
        "shard_axis": shard_axis,
        "xla_options": xla_options or {},
        "inputs": in_meta,
        "outputs": out_meta,
    }
    if per_device_leading_axis is not None:
        meta["per_device_leading_axis"] = per_device_leading_axis
    if input_shardings is not None:
        meta["input_shardings"] = input_shardings
        meta["output_shardings"] = output_shardings
    if use_shardy is not None:
        meta["use_shardy"] = use_shardy
    if per_device_input_shapes is not None:
        meta["per_device_input_shapes"] = per_device_input_shapes
        meta["per_device_output_shapes"] = per_device_output_shapes
    if extra_meta:
        meta.update(extra_meta)
    meta["compile_options_file"] = "compile_options.pb" if compile_options else None
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    if compile_options:
        with open(os.path.join(d, "compile_options.pb"), "wb") as f:
            f.write(compile_options)


def compile_and_run(lowered, args, compiler_options=None):
    """Compiles `lowered` once through JAX (capturing CompileOptions) and runs it."""
    _CAPTURED_OPTIONS.clear()
    if compiler_options:
        compiled = lowered.compile(compiler_options=compiler_options)
    else:
        compiled = lowered.compile()
    assert len(_CAPTURED_OPTIONS) == 1, len(_CAPTURED_OPTIONS)
    opts = _CAPTURED_OPTIONS[0]
    outs = compiled(*args)
    leaves = [np.asarray(o) for o in jax.tree_util.tree_leaves(outs)]
    return leaves, opts


def simple_case(out_dir, name, fn, args, description, out_tols=None,
                bf16_input_encoding="bf16_bits_u2", compiler_options=None,
                extra_meta=None):
    """Single-device jit case. `out_tols`: list (per output) or None (by dtype)."""
    jitted = jax.jit(fn, keep_unused=True)
    lowered = jitted.lower(*args)
    text = lowered.as_text()
    outs, opts = compile_and_run(lowered, args, compiler_options)
    # Cross-check against an ordinary call of the jitted function.
    if not compiler_options:
        ref = [np.asarray(o) for o in jax.tree_util.tree_leaves(jitted(*args))]
        for a, b in zip(outs, ref):
            assert a.dtype == b.dtype and a.shape == b.shape
            assert np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"), name
    if out_tols is None:
        out_tols = [default_tol(o.dtype) for o in outs]
    elif isinstance(out_tols, dict):
        out_tols = [out_tols] * len(outs)
    flat_args = jax.tree_util.tree_leaves(args)
    write_case(out_dir, name, text=text, inputs=flat_args, outputs=outs,
               out_tols=out_tols, description=description,
               xla_options=compiler_options,
               bf16_input_encoding=bf16_input_encoding, compile_options=opts,
               extra_meta=extra_meta)


# ---------------------------------------------------------------------------
# 1. Elementwise, one case per dtype.
# ---------------------------------------------------------------------------
@case("ew_bool")
def _(out, name):
    r = rng_for(name)
    a = r.integers(0, 2, (2, 3)).astype(np.bool_)
    b = r.integers(0, 2, (2, 3)).astype(np.bool_)
    simple_case(out, name, lambda a, b: (a & b, a ^ b, ~a, a | b), (a, b),
                "bool (2,3): logical and, xor, not, or")


def _int_case(out, name, dtype):
    dt = np.dtype(dtype)
    bits = dt.itemsize * 8
    info = np.iinfo(dt)
    r = rng_for(name)
    lo = max(info.min, -100)
    hi = min(info.max, 100)
    a = r.integers(lo, hi + 1, (2, 3)).astype(dt)
    b = r.integers(lo, hi + 1, (2, 3)).astype(dt)
    b[b == 0] = 7  # nonzero divisors
    if dt.kind == "i":
        # make sure some negative operands are present for trunc-vs-floor div
        a.flat[0] = dt.type(-37)
        b.flat[1] = dt.type(-5)
    s = r.integers(0, bits, (2, 3)).astype(dt)  # shift amounts in [0, bits)

    def f(a, b, s):
        shr = lax.shift_right_arithmetic if dt.kind == "i" else lax.shift_right_logical
        return (a + b, a * b, jnp.maximum(a, b), jnp.minimum(a, b),
                lax.shift_left(a, s), shr(a, s), lax.shift_right_logical(a, s),
                a & b, a | b, a ^ b, ~a, lax.div(a, b), lax.rem(a, b),
                jnp.floor_divide(a, b), a - b)
    simple_case(out, name, f, (a, b, s),
                f"{dt.name} (2,3): add, mul, max, min, shift_left, shift_right "
                "(arith for signed / logical), shift_right_logical, and, or, xor, "
                "not, lax.div (truncating), lax.rem, jnp.floor_divide, sub. "
                "Wrapping overflow as in XLA. Shift amounts in [0, bits).")


for _dt in ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]:
    case(f"ew_{_dt}")(lambda out, name, _dt=_dt: _int_case(out, name, _dt))


def _float_ew(a, b):
    return (a + b, a * b, a / b, jnp.exp(a), jnp.tanh(a), jnp.sqrt(jnp.abs(b)),
            jnp.sin(a))


def _float_case(out, name, dtype, arith, trans, bf16_input_encoding="bf16_bits_u2",
                extra=""):
    r = rng_for(name)
    a = r.uniform(-2, 2, (2, 3)).astype(dtype)
    b = r.uniform(0.5, 3, (2, 3)).astype(dtype)
    b.flat[::2] *= -1  # some negative divisors
    simple_case(out, name, _float_ew, (a, b),
                f"{logical_dtype_name(dtype)} (2,3): add, mul, div, exp, tanh, "
                "sqrt(abs(b)), sin" + extra,
                out_tols=[arith, arith, arith, trans, trans, trans, trans],
                bf16_input_encoding=bf16_input_encoding)


@case("ew_float16")
def _(out, name):
    _float_case(out, name, np.float16, F16_ARITH, F16_TRANS)


@case("ew_bfloat16_v2")
def _(out, name):
    _float_case(out, name, BF16, BF16_ARITH, BF16_TRANS,
                bf16_input_encoding="bf16_bits_v2",
                extra=". Inputs stored as '<V2' (np.save of an ml_dtypes bfloat16 "
                "array); outputs as '<u2' bits.")


@case("ew_bfloat16_u2")
def _(out, name):
    _float_case(out, name, BF16, BF16_ARITH, BF16_TRANS,
                bf16_input_encoding="bf16_bits_u2",
                extra=". Inputs and outputs stored as '<u2' bfloat16 bits.")


@case("ew_float32")
def _(out, name):
    _float_case(out, name, np.float32, F32_ARITH, F32_TRANS)


@case("ew_float64")
def _(out, name):
    _float_case(out, name, np.float64, F64_ARITH, F64_TRANS)


def _complex_case(out, name, dtype, arith, trans):
    r = rng_for(name)
    a = (r.uniform(-2, 2, (5,)) + 1j * r.uniform(-2, 2, (5,))).astype(dtype)
    b = (r.uniform(-2, 2, (5,)) + 1j * r.uniform(-2, 2, (5,))).astype(dtype)
    simple_case(out, name, lambda a, b: (a + b, a * b, jnp.conj(a), jnp.abs(a)),
                (a, b), f"{np.dtype(dtype).name} (5,): add, mul, conj, abs "
                "(abs gives the real dtype)",
                out_tols=[arith, arith, EXACT, trans])


@case("ew_complex64")
def _(out, name):
    _complex_case(out, name, np.complex64, F32_ARITH, F32_TRANS)


@case("ew_complex128")
def _(out, name):
    _complex_case(out, name, np.complex128, F64_ARITH, F64_TRANS)


# ---------------------------------------------------------------------------
# 2. dot
# ---------------------------------------------------------------------------
@case("dot_f32")
def _(out, name):
    r = rng_for(name)
    x = r.standard_normal((4, 8)).astype(np.float32)
    w = r.standard_normal((8, 3)).astype(np.float32)
    simple_case(out, name, lambda x, w: x @ w, (x, w),
                "f32 matmul (4,8)@(8,3)", out_tols=[tol(1e-5, 1e-5)])


@case("dot_i32")
def _(out, name):
    r = rng_for(name)
    x = r.integers(-20, 20, (4, 8)).astype(np.int32)
    w = r.integers(-20, 20, (8, 3)).astype(np.int32)
    simple_case(out, name, lambda x, w: x @ w, (x, w), "int32 matmul (4,8)@(8,3)")


# ---------------------------------------------------------------------------
# 3. Reductions
# ---------------------------------------------------------------------------
@case("reduce_f32")
def _(out, name):
    r = rng_for(name)
    x = r.standard_normal((4, 6)).astype(np.float32)

    def f(x):
        return (jnp.sum(x, axis=1), jnp.max(x, axis=0), jnp.argmax(x, axis=1),
                jnp.mean(x), jnp.cumsum(x, axis=1), jnp.min(x),
                jnp.prod(x, axis=0))
    simple_case(out, name, f, (x,),
                "f32 (4,6): sum(axis=1), max(axis=0), argmax(axis=1) -> int64, "
                "mean (scalar), cumsum(axis=1), min (scalar), prod(axis=0)",
                out_tols=[tol(1e-5, 1e-6), EXACT, EXACT, tol(1e-5, 1e-6),
                          tol(1e-5, 1e-6), EXACT, tol(1e-5, 1e-6)])


# ---------------------------------------------------------------------------
# 4. Control flow
# ---------------------------------------------------------------------------
@case("while_collatz_i32")
def _(out, name):
    x = np.array([1, 2, 3, 6, 7, 9, 27, 97], np.int32)

    def f(x):
        def cond(c):
            v, _ = c
            return jnp.any(v != 1)

        def body(c):
            v, steps = c
            done = v == 1
            nxt = jnp.where(v % 2 == 0, v // 2, 3 * v + 1)
            return jnp.where(done, v, nxt), steps + jnp.where(done, 0, 1).astype(jnp.int32)
        _, steps = lax.while_loop(cond, body, (x, jnp.zeros_like(x)))
        return steps
    simple_case(out, name, f, (x,),
                "lax.while_loop: Collatz step counts of an int32 (8,) vector")


@case("while_halve_f32")
def _(out, name):
    x = np.array(37.5, np.float32)

    def f(x):
        def body(c):
            v, n = c
            return v * 0.5, n + 1
        return lax.while_loop(lambda c: c[0] >= 1.0, body, (x, jnp.int32(0)))
    simple_case(out, name, f, (x,),
                "lax.while_loop: halve a scalar f32 until < 1; returns (value, count)",
                out_tols=[F32_ARITH, EXACT])


@case("cond_f32")
def _(out, name):
    r = rng_for(name)
    x = r.standard_normal((5,)).astype(np.float32)
    pred = np.array(True)
    k = np.array(-2, np.int32)

    def f(pred, k, x):
        a = lax.cond(pred, lambda v: jnp.sin(v) * 2.0, lambda v: jnp.cos(v) - 1.0, x)
        b = lax.cond(k > 0, lambda v: v + 1.0, lambda v: v * v, x)
        c = lax.switch(jnp.clip(k + 3, 0, 2), [lambda v: -v, lambda v: v * 3.0,
                                               lambda v: jnp.exp(v)], x)
        return a, b, c
    simple_case(out, name, f, (pred, k, x),
                "lax.cond with a bool scalar predicate (true branch taken), "
                "lax.cond on int32 k>0 (false branch taken), lax.switch index 1",
                out_tols=[F32_TRANS, F32_ARITH, F32_ARITH])


@case("fori_loop_f32")
def _(out, name):
    r = rng_for(name)
    x = r.uniform(-1, 1, (6,)).astype(np.float32)

    def f(x):
        def body(i, c):
            acc, v = c
            return acc + v * i.astype(jnp.float32), v * 0.9 + 0.1
        return lax.fori_loop(0, 10, body, (jnp.zeros_like(x), x))
    simple_case(out, name, f, (x,),
                "lax.fori_loop(0,10): acc += v*i; v = 0.9 v + 0.1 (f32 (6,))",
                out_tols=tol(1e-5, 1e-5))


@case("scan_rnn_f32")
def _(out, name):
    r = rng_for(name)
    h0 = r.standard_normal((4,)).astype(np.float32)
    xs = r.standard_normal((7, 4)).astype(np.float32)
    w = (r.standard_normal((4, 4)) * 0.5).astype(np.float32)

    def f(h0, xs, w):
        def step(h, x):
            h = jnp.tanh(h @ w + x)
            return h, jnp.sum(h)
        return lax.scan(step, h0, xs)
    simple_case(out, name, f, (h0, xs, w),
                "lax.scan: tiny tanh RNN over 7 steps; returns (final h (4,), "
                "per-step sums (7,))", out_tols=tol(1e-5, 1e-5))


# ---------------------------------------------------------------------------
# 5. Multiple outputs
# ---------------------------------------------------------------------------
@case("multi_output")
def _(out, name):
    r = rng_for(name)
    x = r.standard_normal((2, 3)).astype(np.float32)
    n = r.integers(-50, 50, (4,)).astype(np.int32)

    def f(x, n):
        return x * 2.0 - 1.0, n * 3 + 1, jnp.sum(x) > 0.0
    simple_case(out, name, f, (x, n),
                "returns a tuple (f32 (2,3), int32 (4,), bool scalar)",
                out_tols=[F32_ARITH, EXACT, EXACT])


# ---------------------------------------------------------------------------
# 6. Rank 0 and zero-size
# ---------------------------------------------------------------------------
@case("scalar_f32_i32")
def _(out, name):
    x = np.array(1.75, np.float32)
    n = np.array(-6, np.int32)
    simple_case(out, name, lambda x, n: (x * 2.0 + 1.0, n * 3 - 1, x * n.astype(jnp.float32)),
                (x, n), "rank-0 f32 and int32 inputs and outputs",
                out_tols=[F32_ARITH, EXACT, F32_ARITH])


@case("zero_size_f32")
def _(out, name):
    x = np.zeros((0, 3), np.float32)
    simple_case(out, name, lambda x: (x * 2.0 + 1.0, jnp.sum(x), jnp.max(x, initial=-jnp.inf)),
                (x,), "zero-size input (0,3) f32 -> (0,3) output; sum of it -> 0.0 "
                "scalar; max with initial -inf -> -inf scalar",
                out_tols=[F32_ARITH, EXACT, EXACT])


# ---------------------------------------------------------------------------
# 7. MLP forward + loss + gradient
# ---------------------------------------------------------------------------
@case("mlp_value_and_grad")
def _(out, name):
    r = rng_for(name)
    params = {
        "w1": (r.standard_normal((4, 8)) * 0.3).astype(np.float32),
        "b1": (r.standard_normal((8,)) * 0.1).astype(np.float32),
        "w2": (r.standard_normal((8, 3)) * 0.3).astype(np.float32),
        "b2": (r.standard_normal((3,)) * 0.1).astype(np.float32),
    }
    x = r.standard_normal((5, 4)).astype(np.float32)
    y = r.uniform(0, 1, (5, 3)).astype(np.float32)

    def loss(params, x, y):
        h = jnp.tanh(x @ params["w1"] + params["b1"])
        p = jax.nn.sigmoid(h @ params["w2"] + params["b2"])
        return jnp.mean((p - y) ** 2)

    def f(params, x, y):
        return jax.value_and_grad(loss)(params, x, y)
    simple_case(out, name, f, (params, x, y),
                "2-layer MLP (tanh, sigmoid), MSE loss and its gradient via "
                "jax.value_and_grad. Inputs in pytree order: b1 (8,), b2 (3,), "
                "w1 (4,8), w2 (8,3), x (5,4), y (5,3). Outputs: loss scalar, "
                "then grads d b1, d b2, d w1, d w2.",
                out_tols=tol(1e-5, 1e-6))


# ---------------------------------------------------------------------------
# 8. Mixed ops
# ---------------------------------------------------------------------------
@case("mixed_ops")
def _(out, name):
    r = rng_for(name)
    x = r.integers(-8, 8, (10,)).astype(np.float32)  # integer-valued: exact sums
    idx = np.array([3, 0, 7, 3, 9, 3], np.int32)     # duplicates for scatter-add
    v = r.integers(-4, 4, (6,)).astype(np.float32)
    m = r.standard_normal((3, 4)).astype(np.float32)
    start = np.array(2, np.int32)

    def f(x, idx, v, m, start):
        gathered = x[idx]
        scattered = x.at[idx].add(v)
        sorted_m = jnp.sort(m, axis=1)
        where = jnp.where(m > 0, m, -m * 0.5)
        soft = jax.nn.softmax(m, axis=-1)
        as_i32 = (m * 10.0).astype(jnp.int32)            # f32 -> i32 (trunc)
        as_f16 = as_i32.astype(jnp.float16)               # i32 -> f16
        as_u8 = jnp.abs(as_i32).astype(jnp.uint8)          # i32 -> u8
        io = lax.iota(jnp.int32, 5) * 2
        cat = jnp.concatenate([x[:4], v], axis=0)
        rt = jnp.transpose(jnp.reshape(m, (4, 3)))
        ds = lax.dynamic_slice(x, (start,), (4,))
        return (gathered, scattered, sorted_m, where, soft, as_i32, as_f16,
                as_u8, io, cat, rt, ds)
    simple_case(out, name, f, (x, idx, v, m, start),
                "gather x[idx], scatter-add with duplicate indices, sort, where, "
                "softmax, convert f32->i32->f16 and ->u8, iota, concatenate, "
                "reshape+transpose, dynamic_slice with runtime start",
                out_tols=[EXACT, EXACT, EXACT, F32_ARITH, F32_TRANS, EXACT, EXACT,
                          EXACT, EXACT, EXACT, EXACT, EXACT])


@case("conv2d_f32")
def _(out, name):
    r = rng_for(name)
    x = r.standard_normal((1, 2, 6, 6)).astype(np.float32)  # NCHW
    k = r.standard_normal((3, 2, 3, 3)).astype(np.float32)  # OIHW

    def f(x, k):
        y = lax.conv_general_dilated(x, k, window_strides=(1, 1), padding="SAME")
        return jax.nn.relu(y), lax.reduce_window(y, -jnp.inf, lax.max, (1, 1, 2, 2),
                                                  (1, 1, 2, 2), "VALID")
    simple_case(out, name, f, (x, k),
                "2-D convolution NCHW/OIHW SAME padding, relu, 2x2 max-pool "
                "(reduce_window)", out_tols=tol(1e-5, 1e-5))


# ---------------------------------------------------------------------------
# 11. XLA option dependent results (env_option_overrides)
# ---------------------------------------------------------------------------
_FMM_X = np.array([1.0, np.nan, -2.0, np.inf, 3.0, -np.inf, 0.0, 5.5], np.float32)
_FMM_Y = np.array([np.nan, 2.0, -3.0, 1.0, np.inf, 0.0, -0.0, 3.0], np.float32)
# Compared as values (tolerance 0, NaN == NaN, -0 == +0), not bit-exactly:
# NaN payloads/signs and the sign of zero from min/max are not pinned down.


def _fmm_fn(x, y):
    return jnp.maximum(x, y), jnp.minimum(x, y), jnp.max(x)


@case("nan_minmax_default")
def _(out, name):
    simple_case(out, name, _fmm_fn, (_FMM_X, _FMM_Y),
                "max/min/reduce-max with NaN operands under XLA's default "
                "(xla_cpu_enable_fast_min_max=false): NaN propagates. Same "
                "program as nan_minmax_fast_min_max.",
                out_tols=tol(0.0, 0.0))


@case("nan_minmax_fast_min_max")
def _(out, name):
    simple_case(out, name, _fmm_fn, (_FMM_X, _FMM_Y),
                "Same program as nan_minmax_default, compiled by JAX with "
                "compiler_options={'xla_cpu_enable_fast_min_max': True} "
                "(env_option_overrides): max(1,NaN)=1, min(1,NaN)=1, reduce max "
                "ignores the NaN. The outputs differ from nan_minmax_default only "
                "if the option reaches the compiler.",
                out_tols=tol(0.0, 0.0),
                compiler_options={"xla_cpu_enable_fast_min_max": True})


# ---------------------------------------------------------------------------
# 9/10. Multi-device
# ---------------------------------------------------------------------------
def _pmap_fn(x):
    return lax.psum(x, "i") + x * lax.axis_index("i")


@case("pmap_psum_replicas", legacy=True)
def _(out, name):
    # Needs a JAX whose pmap lowers with mhlo.num_replicas (JAX < 0.8).
    devs = jax.devices()[:2]
    x = np.arange(6, dtype=np.float32).reshape(2, 3) * 1.5 - 2.0
    pf = jax.pmap(_pmap_fn, axis_name="i", devices=devs)
    lowered = pf.lower(x)
    text = lowered.as_text()
    outs, opts = compile_and_run(lowered, (x,))
    ref = np.asarray(pf(x))
    assert np.array_equal(ref, outs[0])
    write_case(out, name, text=text, inputs=[x], outputs=outs, out_tols=[F32_ARITH],
               description="jax.pmap(lambda x: psum(x,'i') + x*axis_index('i')) "
               "over 2 devices, lowered by a JAX whose pmap uses replicas "
               "(mhlo.num_replicas=2, stablehlo.replica_id, all_reduce over "
               "replica groups). in0/out0 hold the per-device arrays stacked on "
               "axis 0: device k gets in0[k:k+1] (its parameter is (1,3): JAX "
               "keeps the mapped axis as size 1) and produces out0[k:k+1].",
               replicas=2, partitions=1, input_mode="sharded", shard_axis=0,
               per_device_leading_axis=True,
               input_shardings=[{"axis": 0}], output_shardings=[{"axis": 0}],
               per_device_input_shapes=[[1, 3]], per_device_output_shapes=[[1, 3]],
               compile_options=opts,
               extra_meta={"device_assignment": [[0], [1]]})


def _pmap_shardmap_case(out, name, use_shardy):
    # What current JAX makes of the same pmap: shard_map, num_partitions=2.
    prev = jax.config.jax_use_shardy_partitioner
    jax.config.update("jax_use_shardy_partitioner", use_shardy)
    try:
        devs = jax.devices()[:2]
        x = np.arange(6, dtype=np.float32).reshape(2, 3) * 1.5 - 2.0
        pf = jax.pmap(_pmap_fn, axis_name="i", devices=devs)
        lowered = pf.lower(x)
        text = lowered.as_text()
        outs, opts = compile_and_run(lowered, (x,))
        ref = np.asarray(pf(x))
        assert np.array_equal(ref, outs[0])
    finally:
        jax.config.update("jax_use_shardy_partitioner", prev)
    if use_shardy:
        assert "sdy.manual_computation" in text
        how = ("Lowered with Shardy: an sdy.manual_computation holds the "
               "per-device body.")
    else:
        assert "@SPMDFullToShardShape" in text and "sdy." not in text
        how = ("Lowered with jax_use_shardy_partitioner=False (GSPMD): "
               "stablehlo.custom_call @Sharding / @SPMDFullToShardShape / "
               "@SPMDShardToFullShape around a call to a private @shmap_body "
               "(these custom_calls are XLA built-ins consumed by the SPMD "
               "partitioner).")
    write_case(out, name, text=text, inputs=[x], outputs=outs, out_tols=[F32_ARITH],
               description="The pmap of pmap_psum_replicas lowered by current JAX: "
               "pmap is implemented with shard_map, so the module has "
               "mhlo.num_partitions=2, num_replicas=1, stablehlo.partition_id and "
               "an all_reduce with use_global_device_ids. " + how + " "
               "in0/out0 are the global (2,3) arrays split on axis 0: partition k "
               "gets in0[k:k+1] and produces out0[k:k+1].",
               replicas=1, partitions=2, input_mode="sharded", shard_axis=0,
               per_device_leading_axis=True,
               input_shardings=[{"axis": 0}], output_shardings=[{"axis": 0}],
               use_shardy=use_shardy,
               per_device_input_shapes=[[1, 3]], per_device_output_shapes=[[1, 3]],
               compile_options=opts,
               extra_meta={"device_assignment": [[0, 1]]})


@case("pmap_psum_shardmap")
def _(out, name):
    _pmap_shardmap_case(out, name, True)


@case("pmap_psum_shardmap_gspmd")
def _(out, name):
    _pmap_shardmap_case(out, name, False)


def _sharded_matmul_case(out, name, use_shardy):
    prev = jax.config.jax_use_shardy_partitioner
    jax.config.update("jax_use_shardy_partitioner", use_shardy)
    try:
        mesh = Mesh(np.array(jax.devices()[:2]), ("x",))
        row = NamedSharding(mesh, P("x"))
        rep = NamedSharding(mesh, P())
        r = rng_for("sharded_matmul")  # same data for both variants
        x = r.standard_normal((8, 4)).astype(np.float32)
        w = r.standard_normal((4, 3)).astype(np.float32)
        b = r.standard_normal((3,)).astype(np.float32)

        def f(x, w, b):
            y = jnp.tanh(x * 2.0 + 1.0) @ w + b
            return y, jnp.sum(y, axis=1), jnp.sum(y, axis=0)
        jitted = jax.jit(f, in_shardings=(row, rep, rep),
                         out_shardings=(row, row, rep), keep_unused=True)
        args = (jax.device_put(x, row), jax.device_put(w, rep), jax.device_put(b, rep))
        lowered = jitted.lower(*args)
        text = lowered.as_text()
        outs, opts = compile_and_run(lowered, args)
        ref = [np.asarray(o) for o in jitted(*args)]
        for a, c in zip(outs, ref):
            assert np.array_equal(a, c)
        if use_shardy:
            assert "sdy.sharding" in text
        else:
            assert "mhlo.sharding" in text and "sdy." not in text
        write_case(out, name, text=text, inputs=[x, w, b], outputs=outs,
                   out_tols=[tol(1e-5, 1e-5)] * 3,
                   description="jax.jit over a 2-device Mesh(('x',)): "
                   "y = tanh(2x+1) @ w + b with x (8,4) sharded on rows, w (4,3) "
                   "and b (3,) replicated; outputs y (8,3) and row sums (8,) "
                   "sharded on axis 0, column sums (3,) replicated (needs a "
                   "cross-partition all-reduce). Files hold GLOBAL arrays. "
                   + ("Lowered with Shardy (sdy dialect)." if use_shardy else
                      "Lowered with jax_use_shardy_partitioner=False (GSPMD "
                      "mhlo.sharding attributes)."),
                   replicas=1, partitions=2, input_mode="sharded", shard_axis=0,
                   input_shardings=[{"axis": 0}, None, None],
                   output_shardings=[{"axis": 0}, {"axis": 0}, None],
                   use_shardy=use_shardy,
                   per_device_input_shapes=[[4, 4], [4, 3], [3]],
                   per_device_output_shapes=[[4, 3], [4], [3]],
                   compile_options=opts,
                   extra_meta={"device_assignment": [[0, 1]]})
    finally:
        jax.config.update("jax_use_shardy_partitioner", prev)


@case("sharded_matmul_shardy")
def _(out, name):
    _sharded_matmul_case(out, name, True)


@case("sharded_matmul_gspmd")
def _(out, name):
    _sharded_matmul_case(out, name, False)


# ---------------------------------------------------------------------------
def write_index(out_dir):
    cases = []
    for n in sorted(os.listdir(out_dir)):
        mp = os.path.join(out_dir, n, "meta.json")
        if os.path.isfile(mp):
            with open(mp) as f:
                m = json.load(f)
            cases.append({"name": n, "replicas": m["replicas"],
                          "partitions": m["partitions"],
                          "jax_version": m["jax_version"]})
    with open(os.path.join(out_dir, "index.json"), "w") as f:
        json.dump({"cases": cases}, f, indent=2)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--only", default="")
    ap.add_argument("--legacy", action="store_true",
                    help="generate only the legacy (replica) cases")
    ap.add_argument("--legacy-python", default="",
                    help="python of a venv with jax 0.7.2, run for the legacy cases")
    a = ap.parse_args()
    only = set(filter(None, a.only.split(",")))
    unknown = only - set(CASES)
    if unknown:
        sys.exit(f"unknown cases: {sorted(unknown)}")
    os.makedirs(a.out, exist_ok=True)
    print(f"jax {jax.__version__}, jaxlib {jaxlib.__version__}, "
          f"devices {jax.devices()}", flush=True)
    want_legacy = []
    for name, (fn, legacy) in CASES.items():
        if only and name not in only:
            continue
        if legacy != a.legacy:
            if legacy:
                want_legacy.append(name)
            continue
        print(f"  {name}", flush=True)
        # An identical earlier program (lowering and executable are cached by
        # JAX) would skip the compile whose options are recorded.
        jax.clear_caches()
        fn(a.out, name)
    if want_legacy and not a.legacy:
        if a.legacy_python:
            subprocess.run([a.legacy_python, os.path.abspath(__file__), "--legacy",
                            "--out", a.out, "--only", ",".join(want_legacy)],
                           check=True)
        else:
            print(f"skipped (need --legacy-python): {want_legacy}", flush=True)
    write_index(a.out)


if __name__ == "__main__":
    main()
