#!/usr/bin/env python3
"""Generate shape-polymorphic `jax.export` models with JAX's answers at concrete shapes.

Every case below is a small JAX function exported with symbolic dimensions
(``jax.export.symbolic_shape``, one ``SymbolicScope`` per case so that the
arguments share their dimension variables and constraints), for the CPU.  The
model is then called by JAX itself (``exp.call``, after a serialize /
deserialize round trip) at a few concrete shapes, and at shapes that break a
constraint or a shared dimension, where JAX refuses.  For the JAX version V given
by ``--jax`` it writes

    tests/data/jax_export/symbolic/jax-V/<case>/model.jaxexport   (exp.serialize())
    tests/data/jax_export/symbolic/jax-V/<case>/program.mlir      (exp.mlir_module(), JAX's text; 0.10.2 only)
    tests/data/jax_export/symbolic/jax-V/<case>/ok<k>/in<i>.npy   (inputs in the order of in_avals)
    tests/data/jax_export/symbolic/jax-V/<case>/ok<k>/out<j>.npy  (JAX's results, order of out_avals)
    tests/data/jax_export/symbolic/jax-V/<case>/bad<k>/in<i>.npy  (inputs JAX refuses)
    tests/data/jax_export/symbolic/jax-V/manifest.json

The manifest gives, per case, the symbolic shape of every argument (the strings
given to ``symbolic_shape``), the constraints, the concrete dims of each "ok"
and "bad" set, the dtypes of inputs and outputs (float32 unless said), the
tolerances, and for each bad set the exception JAX raised (``str(e)`` and the
type's name).  The script prints, per case, the operations and custom-call
targets the module uses.

The script runs itself again in ``target/jax-venv-V`` (tools/jax_venv.py; made
on first use).  Rerun from the repository root with any python3:

    python3 tools/gen_symbolic_testdata.py --jax 0.10.2

The other releases of tools/jax_venv.py (every JAX minor release since 0.4.30,
issue 51) write the same cases (the inputs are the same draws) but no
``program.mlir``: the test data of those releases is their serialized models
(the text of JAX 0.10.2 stands for the MLIR text path), which keeps the
committed data small.  Their manifests also give, per case, the artifact's
serialization version, calling convention version, StableHLO version and MLIR
bytecode version, and list in ``not_exported`` (with JAX's error) a case that
release cannot export.  Without ``jax.set_mesh`` (before 0.7) the multi-device
case is called in a ``jax.jit`` with its shardings; without ``jax.make_mesh``
its mesh is a ``Mesh`` of the first devices.

Cases are appended at the end of ``cases()`` only: inputs come from one seeded
generator in order, so the data of the earlier cases stays the same.  ``--only
NAME[,NAME...]`` writes only those cases (the others' inputs are still drawn, so
the generator's order holds) and keeps the other entries of the manifest.

``sharded_batch`` is exported for 2 devices: the script sets
XLA_FLAGS=--xla_force_host_platform_device_count=2 before it imports JAX (the
single-device cases do not depend on it).
"""

import argparse
import contextlib
import json
import os
import re
import shutil
import sys

sys.dont_write_bytecode = True  # importing jax_venv leaves no tools/__pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jax_venv import JAX_RELEASES, REPO, reexec_in_venv  # noqa: E402

ARGS = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ARGS.add_argument("--jax", required=True, choices=sorted(JAX_RELEASES),
                  help="the JAX version to export with (its venv is made in target/ when needed)")
ARGS.add_argument("--only", metavar="NAME[,NAME...]",
                  help="write only these cases, keeping the other cases' files and manifest entries")
OPTIONS = ARGS.parse_args()
JAX_VERSION = OPTIONS.jax
reexec_in_venv(JAX_VERSION)
# The release whose data holds program.mlir and whose manifest predates the per-case header fields.
TEXT_RELEASE = "0.10.2"

os.environ["JAX_PLATFORMS"] = "cpu"
# Two CPU devices for the multi-device case (sharded_batch).
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"

import numpy as np  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import export, lax  # noqa: E402

# Source locations in the modules name files without the folders of the machine that made them.
jax.config.update("jax_hlo_source_file_canonicalization_regex", r".*/")

ROOT = os.path.join(REPO, "tests", "data", "jax_export", "symbolic", f"jax-{JAX_VERSION}")
GENERATOR = "tools/gen_symbolic_testdata.py"

F32 = "float32"
I32 = "int32"


# ---------------------------------------------------------------------------------------------------------------
# The functions.

def mlp_batch(x, w1, b1, w2, b2):
    h = jnp.maximum(x @ w1 + b1, 0.0)
    return h @ w2 + b2


def reshape_two_dims(x, w):
    b, t, f = x.shape
    y = (x.reshape(b * t, f) @ w).reshape(b, t, f)
    return y, jnp.sum(y, axis=1)


def double_batch(x, z):
    b = x.shape[0]
    doubled = jnp.concatenate([x, x], axis=0).reshape(-1)  # 2*b*4 elements
    half = b // 2
    pairs = x[: 2 * half].reshape(half, 8)  # floor division of a dimension variable
    # z is (2*k, 3): k is found from z's leading dim by division, which must be exact.
    k = z.shape[0] // 2
    z_pairs = z.reshape(k, 6)
    return doubled, pairs, z_pairs * 2.0


def shared_dim(x, y):
    return jnp.concatenate([x, y], axis=1), jnp.sum(x, axis=1) * jnp.sum(y, axis=1)


def causal_attention(q, k, v):
    t, d = q.shape
    mask = jnp.tril(jnp.ones((t, t), dtype=bool))
    scores = (q @ k.T) / np.float32(np.sqrt(d))
    scores = jnp.where(mask, scores, -jnp.inf)
    # The same mask built from iotas, applied again (a no-op on the values).
    rows = lax.broadcasted_iota(jnp.int32, (t, t), 0)
    cols = lax.broadcasted_iota(jnp.int32, (t, t), 1)
    scores = jnp.where(cols <= rows, scores, -jnp.inf)
    return jax.nn.softmax(scores, axis=-1) @ v


def pad_slice(x):
    p = jnp.pad(x, ((2, 3), (1, 1)), constant_values=1.5)
    return p[::2], x[1:-1], x[::-3]


def iota_argmax(x):
    b, n = x.shape
    rows = jnp.arange(b, dtype=jnp.int32)
    shifted = x + rows[:, None].astype(x.dtype)
    return rows, jnp.argmax(shifted, axis=1).astype(jnp.int32), jnp.argmax(x, axis=0).astype(jnp.int32), shifted


def while_loop(c):
    fixed = lax.fori_loop(0, 5, lambda i, c: c * 0.9 + jnp.sin(c) * (i + 1).astype(c.dtype) * 0.1, c)
    # A trip count that is a dimension: b steps, each adding a row index.
    b = c.shape[0]

    def body(carry):
        i, acc = carry
        return i + 1, acc + jnp.where(jnp.arange(b) == i, 1.0, 0.0)[:, None].astype(acc.dtype)

    steps, counted = lax.while_loop(lambda carry: carry[0] < b, body, (jnp.int32(0), c))
    return fixed, counted, steps


def _layernorm(h, gamma, beta):
    mean = jnp.mean(h, axis=-1, keepdims=True)
    var = jnp.mean((h - mean) ** 2, axis=-1, keepdims=True)
    return (h - mean) * lax.rsqrt(var + 1e-5) * gamma + beta


def transformer(x, w_in, pos, gamma1, beta1, wq, wk, wv, wo, gamma2, beta2, w1, w2):
    b, t, _ = x.shape
    heads, d_model = 2, w_in.shape[1]
    d_head = d_model // heads
    h = x @ w_in + pos[:t]  # t <= 16: the positional table has 16 rows
    a = _layernorm(h, gamma1, beta1)
    split = lambda m: (a @ m).reshape(b, t, heads, d_head).transpose(0, 2, 1, 3)  # noqa: E731
    q, k, v = split(wq), split(wk), split(wv)
    scores = jnp.einsum("bhqd,bhkd->bhqk", q, k) / np.float32(np.sqrt(d_head))
    mask = jnp.tril(jnp.ones((t, t), dtype=bool))
    scores = jnp.where(mask, scores, -jnp.inf)
    att = jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(scores, axis=-1), v)
    h = h + att.transpose(0, 2, 1, 3).reshape(b, t, d_model) @ wo
    m = _layernorm(h, gamma2, beta2)
    return h + jax.nn.gelu(m @ w1) @ w2


def conv_pool(x, kernel):
    y = lax.conv_general_dilated(x, kernel, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    y = jnp.maximum(y, 0.0)
    pooled = lax.reduce_window(y, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    # With stride 2, SAME padding depends on the spatial size: JAX pads with computed amounts.
    strided = lax.conv_general_dilated(x, kernel, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return pooled, jnp.cumsum(pooled, axis=1), strided


def gather_take(table, idx, w):
    taken = jnp.take(table, idx, axis=0)  # mode "fill": out of range gives NaN
    indexed = table[idx]  # numpy indexing: negative indices count from the end
    return taken * w, indexed, table[idx[0]]


def top_k_sort(x):
    values, indices = lax.top_k(x, 3)
    return values, indices, jnp.sort(x, axis=1), jnp.sort(x, axis=0)


def linalg_batch(a, rhs):
    # A batch of vectors is solved as a batch of one-column matrices (jnp.linalg.solve's rule since 0.5).
    return jnp.linalg.solve(a, rhs[..., None])[..., 0]


def random_bits(x):
    key = jax.random.key(0, impl="rbg")
    bits = jax.random.bits(key, x.shape, dtype=jnp.uint32)
    return x + (bits >> 8).astype(jnp.float32) / np.float32(2 ** 24), bits


def sharded_batch(x, w):
    # Rows stay on their device; the column sums need every device's rows (an all-reduce).
    return jnp.tanh(x @ w) * 2.0, jnp.sum(x, axis=0)


# ---------------------------------------------------------------------------------------------------------------
# The cases: argument specs and shape sets.

def cases():
    """Each case: its function, per argument a symbolic shape string and a dtype, the constraints,
    the dims of each ok and bad input set (one list of dims per argument), the tolerances, and
    optionally `make(rng, dims_list)` for inputs other than standard normals."""
    yield dict(name="mlp_batch", fun=mlp_batch,
               description="2-layer MLP, relu; x: (b, 8), weights of static shape",
               shapes=["b, 8", "8, 16", "16", "16, 3", "3"],
               ok=[[[1, 8]], [[3, 8]], [[5, 8]]], static=[[8, 16], [16], [16, 3], [3]],
               bad=[[[0, 8]], [[3, 7]]], rtol=1e-5, atol=1e-5)
    yield dict(name="reshape_two_dims", fun=reshape_two_dims,
               description="x: (b, t, 4) reshaped to (b*t, 4), matmul, reshaped back; and its sum over t",
               shapes=["b, t, 4", "4, 4"], ok=[[[2, 3, 4]], [[1, 5, 4]], [[4, 2, 4]]], static=[[4, 4]],
               bad=[[[2, 0, 4]]], rtol=1e-5, atol=1e-5)
    yield dict(name="double_batch", fun=double_batch,
               description="outputs of 2*b*4 elements (concatenate, reshape(-1)), (b//2, 8) (floor division of "
                           "a dimension), and z: (2*k, 3) reshaped to (k, 6): k comes from z's leading dim "
                           "by an exact division",
               shapes=["b, 4", "2*k, 3"], ok=[[[2, 4], [4, 3]], [[5, 4], [2, 3]], [[3, 4], [6, 3]]],
               bad=[[[3, 4], [5, 3]], [[3, 4], [0, 3]]], rtol=0, atol=0)
    yield dict(name="shared_dim", fun=shared_dim,
               description="x: (b, 4) and y: (b, 3) share b: concatenate on axis 1, product of row sums",
               shapes=["b, 4", "b, 3"], ok=[[[1, 4], [1, 3]], [[3, 4], [3, 3]], [[5, 4], [5, 3]]],
               bad=[[[3, 4], [2, 3]]], rtol=1e-6, atol=1e-6)
    yield dict(name="causal_attention", fun=causal_attention,
               description="q, k, v: (t, 8); causal mask from jnp.tril(ones((t, t))) and from iota compare; "
                           "softmax",
               shapes=["t, 8", "t, 8", "t, 8"],
               ok=[[[1, 8]] * 3, [[5, 8]] * 3, [[12, 8]] * 3],
               bad=[[[5, 8], [4, 8], [5, 8]]], rtol=1e-5, atol=1e-5)
    yield dict(name="pad_slice", fun=pad_slice,
               description="x: (n, 4) with n >= 3: jnp.pad (2, 3), (1, 1) with 1.5, then [::2]; x[1:-1]; x[::-3]",
               shapes=["n, 4"], constraints=["n >= 3"], ok=[[[3, 4]], [[6, 4]], [[11, 4]]],
               bad=[[[2, 4]]], rtol=0, atol=0)
    yield dict(name="iota_argmax", fun=iota_argmax,
               description="x: (b, n): jnp.arange(b) (int32), x + arange(b)[:, None], argmax over the symbolic "
                           "axes 1 and 0 (int32)",
               shapes=["b, n"], ok=[[[1, 4]], [[3, 7]], [[5, 16]]], bad=[[[0, 4]]], rtol=0, atol=0,
               out_dtypes=[I32, I32, I32, F32])
    yield dict(name="while_loop", fun=while_loop,
               description="c: (b, 4): lax.fori_loop with 5 steps over the carry, and a lax.while_loop of b steps "
                           "(the trip count is the dimension); the step count as int32",
               shapes=["b, 4"], ok=[[[1, 4]], [[3, 4]], [[5, 4]]], bad=[[[0, 4]]], rtol=1e-5, atol=1e-5,
               out_dtypes=[F32, F32, I32])
    yield dict(name="transformer", fun=transformer,
               description="transformer block: x: (b, t, 8) @ w_in (8, 16) + pos[:t] (pos: (16, 16)), layernorm, "
                           "2-head causal attention, residual, layernorm, gelu MLP (16 -> 32 -> 16), residual; "
                           "t <= 16",
               shapes=["b, t, 8", "8, 16", "16, 16", "16", "16", "16, 16", "16, 16", "16, 16", "16, 16", "16",
                       "16", "16, 32", "32, 16"],
               constraints=["t <= 16"],
               static=[[8, 16], [16, 16], [16], [16], [16, 16], [16, 16], [16, 16], [16, 16], [16], [16],
                       [16, 32], [32, 16]],
               ok=[[[1, 1, 8]], [[2, 7, 8]], [[3, 16, 8]]], bad=[[[2, 17, 8]], [[0, 4, 8]]],
               rtol=1e-4, atol=1e-4, make=make_transformer)
    yield dict(name="conv_pool", fun=conv_pool,
               description="x: (b, h, w, 3) NHWC, h, w >= 2: 3x3 SAME conv (kernel (3, 3, 3, 4)) + relu, 2x2/2 "
                           "max pool (lax.reduce_window, VALID), cumsum over the pooled rows; and the conv with stride 2 "
                           "(SAME padding computed from h and w)",
               shapes=["b, h, w, 3", "3, 3, 3, 4"], constraints=["h >= 2", "w >= 2"], static=[[3, 3, 3, 4]],
               ok=[[[1, 4, 4, 3]], [[2, 6, 8, 3]], [[3, 5, 7, 3]]], bad=[[[2, 1, 4, 3]]],
               rtol=1e-5, atol=1e-5)
    yield dict(name="gather_take", fun=gather_take,
               description="table: (r, 4), idx: (n,) int32 in [-r, r) but for the last, r + 1 (when n >= 2), "
                           "w: (n, 4): jnp.take(table, idx, axis=0) * w (negatives count from the end; out of "
                           "range gives a NaN row: mode fill), table[idx] (out of range clamps), table[idx[0]]; "
                           "NaN matches NaN",
               shapes=["r, 4", "n", "n, 4"], dtypes=[F32, I32, F32],
               ok=[[[3, 4], [5], [5, 4]], [[8, 4], [2], [2, 4]], [[16, 4], [9], [9, 4]]],
               bad=[[[3, 4], [5], [4, 4]]], rtol=1e-6, atol=1e-6, make=make_gather)
    yield dict(name="top_k_sort", fun=top_k_sort,
               description="x: (b, n) with n >= 3: lax.top_k(x, 3) (values, int32 indices), jnp.sort on axes 1 "
                           "and 0",
               shapes=["b, n"], constraints=["n >= 3"], ok=[[[1, 3]], [[3, 8]], [[5, 16]]], bad=[[[2, 2]]],
               rtol=0, atol=0, out_dtypes=[F32, I32, F32, F32])
    yield dict(name="linalg_batch", fun=linalg_batch,
               description="jnp.linalg.solve of a: (b, 4, 4) (diagonally dominant) and rhs: (b, 4): LAPACK getrf "
                           "custom call with a symbolic batch",
               shapes=["b, 4, 4", "b, 4"], ok=[[[1, 4, 4], [1, 4]], [[3, 4, 4], [3, 4]], [[5, 4, 4], [5, 4]]],
               bad=[[[3, 4, 4], [2, 4]]], rtol=1e-4, atol=1e-5, make=make_solve)
    yield dict(name="random_bits", fun=random_bits,
               description="x: (b, 4) + uint32 bits of jax.random.bits(key(0, impl='rbg'), x.shape) scaled to "
                           "[0, 1); the bits too (uint32)",
               shapes=["b, 4"], ok=[[[1, 4]], [[3, 4]], [[5, 4]]], bad=[[[0, 4]]], rtol=1e-6, atol=1e-6,
               out_dtypes=[F32, "uint32"])
    from jax.sharding import NamedSharding, PartitionSpec as P
    if hasattr(jax, "make_mesh"):
        mesh = jax.make_mesh((2,), ("x",))
    else:
        from jax.sharding import Mesh
        mesh = Mesh(np.array(jax.devices()[:2]), ("x",))
    rows, whole = NamedSharding(mesh, P("x", None)), NamedSharding(mesh, P())
    # The batch must be even, 2*k (JAX refuses to split a plain b in 2): each device takes k rows.
    yield dict(name="sharded_batch", fun=sharded_batch,
               description="2 devices (mesh x=2): x: (2*k, 8) split by rows, w: (8, 4) replicated; tanh(x @ w) * 2 "
                           "split by rows, sum(x, axis=0) replicated",
               shapes=["2*k, 8", "8, 4"], static=[[8, 4]], ok=[[[2, 8]], [[4, 8]], [[6, 8]]],
               bad=[[[3, 8]], [[0, 8]]],
               rtol=1e-5, atol=1e-5, mesh=mesh,
               jit=dict(in_shardings=(rows, whole), out_shardings=(NamedSharding(mesh, P("x")), whole)))
    # Triton's "simple" model (its example clients' INPUT0 + INPUT1, INPUT0 - INPUT1), batched:
    # served as "simple" by tools/check_triton_tools.py.
    yield dict(name="add_sub", fun=add_sub,
               description="a, b: (b, 16) int32: a + b and a - b (Triton's example model \"simple\", batched)",
               shapes=["b, 16", "b, 16"], dtypes=[I32, I32], ok=[[[1, 16], [1, 16]], [[4, 16], [4, 16]]],
               bad=[[[2, 16], [3, 16]]], rtol=0, atol=0, out_dtypes=[I32, I32], make=make_add_sub)


def add_sub(a, b):
    return a + b, a - b


def make_add_sub(rng, dims):
    return [rng.integers(-100, 100, size=d, dtype=np.int32) for d in dims]


def make_transformer(rng, dims):
    arrays = [randn(rng, dims[0])]
    for d in dims[1:]:
        a = randn(rng, d)
        # Scale the matrices so the activations stay of order 1; gammas near 1.
        arrays.append(a * np.float32(0.3) if len(d) == 2 else a * np.float32(0.1) + np.float32(1.0))
    return arrays


def make_gather(rng, dims):
    r, n = dims[0][0], dims[1][0]
    idx = rng.integers(-r, r, size=(n,), dtype=np.int32)
    if n >= 2:
        idx[-1] = r + 1  # out of range: jnp.take fills NaN, indexing clamps
    return [randn(rng, dims[0]), idx, randn(rng, dims[2])]


def make_solve(rng, dims):
    a = randn(rng, dims[0]) + np.float32(4.0) * np.eye(dims[0][-1], dtype=np.float32)
    return [a, randn(rng, dims[1])]


def randn(rng, shape):
    return rng.standard_normal(shape).astype(np.float32)


# ---------------------------------------------------------------------------------------------------------------
# Writing.

OP_RE = re.compile(r'(?:^\s*|= |\()"?((?:stablehlo|chlo|func|mhlo|sdy|shape|tensor|arith)\.[a-z_]+)\b', re.M)
FUNC_RE = re.compile(r"func\.func (?:public |private )?@([A-Za-z0-9_.]+?)(?:_[0-9]+)?\(")
COMPOSITE_RE = re.compile(r'stablehlo\.composite "([^"]+)"')
TARGET_RE = re.compile(r"custom_call @([A-Za-z0-9_.]+)")
ASSERT_MSG_RE = re.compile(r'error_message = "((?:[^"\\]|\\.)*)"')


def inventory(text):
    ops = set(OP_RE.findall(text))
    # func.return and func.call are printed bare.
    if re.search(r"^\s*return\b", text, re.M):
        ops.add("func.return")
    if re.search(r"(?:^\s*|= )call @", text, re.M):
        ops.add("func.call")
    ops.update(f"composite {name}" for name in COMPOSITE_RE.findall(text))
    return sorted(ops), sorted(set(TARGET_RE.findall(text))), sorted(set(FUNC_RE.findall(text)))


def call(exp, inputs, case=None):
    if case is not None and "mesh" in case and not hasattr(jax, "set_mesh"):
        # Before jax.set_mesh the call takes its devices from a jit with the export's shardings.
        outs = jax.jit(exp.call, **case["jit"])(*inputs)
    else:
        outs = exp.call(*inputs)
    return [np.asarray(o) for o in jax.tree_util.tree_leaves(outs)]


def refusal(exp, inputs, case=None):
    """What JAX raises when `exp` is called on `inputs`: (str, type name, str of its cause or None)."""
    try:
        call(exp, inputs, case)
    except Exception as e:  # noqa: BLE001 (whatever JAX raises is the answer)
        return str(e), type(e).__name__, None if e.__cause__ is None else str(e.__cause__)
    raise AssertionError(f"JAX accepted inputs of shapes {[list(a.shape) for a in inputs]}")


def header_fields(serialized):
    """The artifact's serialization version, the module's StableHLO version (bytecode producer)
    and MLIR bytecode version (the varint after the magic ``ML\\xefR``)."""
    from jax._src.export import serialization_generated as ser_flatbuf
    root = ser_flatbuf.Exported.GetRootAsExported(bytearray(serialized), 0)
    module = root.MlirModuleSerializedAsNumpy().tobytes()
    assert module[:4] == b"ML\xefR" and module[4] & 1, module[:5]
    stablehlo = re.search(rb"StableHLO_v([0-9]+\.[0-9]+\.[0-9]+)", module)
    return {"serialization_version": root.SerializationVersion(), "stablehlo_version": stablehlo.group(1).decode(),
            "bytecode_version": module[4] >> 1}


def dtype_name(a):
    return np.asarray(a).dtype.name


def input_sets(case, rng):
    """Every (kind, k, dims, inputs) of the case, its inputs drawn from `rng` in order."""
    static = case.get("static", [])
    make = case.get("make", lambda rng, dims: [randn(rng, d) for d in dims])
    sets = []
    for kind in ("ok", "bad"):
        for k, dims in enumerate(case[kind]):
            dims = [list(d) for d in dims] + [list(d) for d in static]
            sets.append((kind, k, dims, make(rng, dims)))
    return sets


def in_mesh(case):
    """A multi-device export is called inside its mesh."""
    if "mesh" in case and hasattr(jax, "set_mesh"):
        return jax.set_mesh(case["mesh"])
    return contextlib.nullcontext()


def write_case(case, rng):
    name = case["name"]
    out_dir = os.path.join(ROOT, name)
    os.makedirs(out_dir)
    shapes, constraints = case["shapes"], case.get("constraints", [])
    dtypes = case.get("dtypes", [F32] * len(shapes))
    scope = export.SymbolicScope(constraints)
    specs = [jax.ShapeDtypeStruct(export.symbolic_shape(s, scope=scope), np.dtype(dt)) for s, dt in zip(shapes, dtypes)]
    exp = export.export(jax.jit(case["fun"], **case.get("jit", {})), platforms=("cpu",))(*specs)
    serialized = exp.serialize()
    with open(os.path.join(out_dir, "model.jaxexport"), "wb") as f:
        f.write(serialized)
    # JAX's own MLIR text of the module (what `pjrt run program.mlir` refines, issue 33).
    text = exp.mlir_module()
    if JAX_VERSION == TEXT_RELEASE:
        with open(os.path.join(out_dir, "program.mlir"), "w") as f:
            f.write(text)
    # The answers are the artifact's (JAX's own deserializer, then call); the exported object
    # must agree with them.
    loaded = export.deserialize(serialized)
    entry = {"name": name, "description": case["description"], "model": f"{name}/model.jaxexport",
             "polymorphic_shapes": shapes, "constraints": constraints,
             "in_avals": [str(a) for a in exp.in_avals], "out_avals": [str(a) for a in exp.out_avals],
             "input_dtypes": dtypes, "output_dtypes": None, "exact": case["rtol"] == 0,
             "rtol": case["rtol"], "atol": case["atol"], "ok": [], "bad": []}
    if JAX_VERSION != TEXT_RELEASE:
        entry.update(calling_convention_version=exp.calling_convention_version, **header_fields(serialized))
    if exp.nr_devices > 1:  # only there, so the single-device entries stay as they were
        entry["nr_devices"] = exp.nr_devices
        entry["in_shardings"] = [str(s) for s in exp.in_shardings_jax(case["mesh"])]
        entry["out_shardings"] = [str(s) for s in exp.out_shardings_jax(case["mesh"])]
    for kind, k, dims, inputs in input_sets(case, rng):
        assert [list(a.shape) for a in inputs] == dims and [dtype_name(a) for a in inputs] == dtypes
        sub = f"{kind}{k}"
        os.makedirs(os.path.join(out_dir, sub))
        for i, a in enumerate(inputs):
            np.save(os.path.join(out_dir, sub, f"in{i}.npy"), a)
        record = {"dir": f"{name}/{sub}", "inputs": dims}
        if kind == "ok":
            with in_mesh(case):
                outs = call(loaded, inputs, case)
                fresh_outs = call(exp, inputs, case)
            for o, fresh in zip(outs, fresh_outs, strict=True):
                np.testing.assert_array_equal(o, fresh)
            for j, o in enumerate(outs):
                np.save(os.path.join(out_dir, sub, f"out{j}.npy"), o)
            record["outputs"] = [list(o.shape) for o in outs]
            out_dtypes = [dtype_name(o) for o in outs]
            assert out_dtypes == case.get("out_dtypes", [F32] * len(outs)), (name, out_dtypes)
            entry["output_dtypes"] = out_dtypes
        else:
            with in_mesh(case):
                record["error"], record["error_type"], cause = refusal(exp, inputs, case)
            assert cause is None, (name, sub, cause)
            # JAX 0.10.2 does not serialize the constraints (serialization.py: "TODO(necula):
            # serialize the constraints"), so the deserialized model leaves them to the
            # module's shape assertions, checked during shape refinement, which may fail
            # first on an operation whose shapes the broken constraint makes invalid.
            with in_mesh(case):
                error, error_type, cause = refusal(loaded, inputs, case)
            record["deserialized_error"], record["deserialized_error_type"] = error, error_type
            record["deserialized_error_cause"] = cause
        entry[kind].append(record)
    ops, targets, funcs = inventory(text)
    messages = sorted(set(ASSERT_MSG_RE.findall(text)))
    return entry, ops, targets, funcs, messages


def main():
    rng = np.random.default_rng(20261202)
    only = set(OPTIONS.only.split(",")) if OPTIONS.only else None
    manifest_path = os.path.join(ROOT, "manifest.json")
    if only is None:
        if os.path.isdir(ROOT):
            shutil.rmtree(ROOT)
        os.makedirs(ROOT)
        kept = {}
    else:
        with open(manifest_path) as f:
            kept = {c["name"]: c for c in json.load(f)["cases"]}
        unknown = only - {c["name"] for c in cases()}
        assert not unknown, f"--only: no case {sorted(unknown)}"
    manifest = {"jax": jax.__version__, "jaxlib": jax.lib.__version__, "generator": GENERATOR,
                "python": ".".join(map(str, sys.version_info[:3])),
                "notes": "error/error_type: what exp.call raises on the bad inputs, exp being the Exported that "
                         "jax.export.export returned (its symbolic scope holds the constraints). "
                         f"deserialized_error*: the same call on export.deserialize(model bytes): JAX {JAX_VERSION} does "
                         "not serialize the constraints, so they are checked only by the module's shape_assertion "
                         "custom calls during shape refinement, which can first fail on an operation instead "
                         "(the cause is then that operation's error); ok outputs are the deserialized model's, "
                         "checked equal to the Exported's.",
                "cases": []}
    all_messages = set()
    for case in cases():
        if only is not None and case["name"] not in only:
            # Its inputs are drawn all the same, so the later cases' stay as a full run makes them.
            input_sets(case, rng)
            if case["name"] in kept:
                manifest["cases"].append(kept[case["name"]])
            continue
        if os.path.isdir(os.path.join(ROOT, case["name"])):
            shutil.rmtree(os.path.join(ROOT, case["name"]))
        try:
            entry, ops, targets, funcs, messages = write_case(case, rng)
        except Exception as e:  # noqa: BLE001 (what this JAX cannot export is recorded, with why)
            if JAX_VERSION == TEXT_RELEASE:
                raise
            shutil.rmtree(os.path.join(ROOT, case["name"]), ignore_errors=True)
            reason = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            manifest.setdefault("not_exported", []).append({"name": case["name"], "reason": reason[:400]})
            print(f"{case['name']}: NOT EXPORTED: {reason}")
            continue
        manifest["cases"].append(entry)
        all_messages.update(messages)
        print(f"{entry['name']}: ops {' '.join(ops)}; custom_call {' '.join(targets) or '-'}; "
              f"functions {' '.join(funcs)}")
        for bad in entry["bad"]:
            print(f"  {bad['dir']} {bad['inputs'][:3]}: {bad['error_type']}: {bad['error'][:200]}")
            if bad["deserialized_error"] != bad["error"]:
                cause = (bad["deserialized_error_cause"] or "").split("\n")[0]
                print(f"    deserialized: {bad['deserialized_error_type']}: {bad['deserialized_error']} {cause[:300]}")
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    print("shape_assertion error_message templates:")
    for m in sorted(all_messages):
        print("  " + m)


if __name__ == "__main__":
    main()
