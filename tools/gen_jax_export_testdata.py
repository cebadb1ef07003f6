#!/usr/bin/env python3
"""Generate serialized `jax.export` artifacts with inputs and JAX's outputs.

For every case below this script builds a small JAX function and seeded
inputs, exports it with ``jax.export.export(jax.jit(f), ...)(*args)``, writes
``exported.serialize()`` as ``model.jaxexport``, runs the function in JAX on
CPU and writes, for the JAX version it runs with,

    tests/data/jax_export/jax-<version>/<case>/model.jaxexport
    tests/data/jax_export/jax-<version>/<case>/in<i>.npy    (inputs in the order of in_avals,
                                                             i.e. the flattened argument pytree)
    tests/data/jax_export/jax-<version>/<case>/out<i>.npy   (outputs in the order of out_avals)
    tests/data/jax_export/jax-<version>/manifest.json       (one entry per case)

bf16 arrays are stored as their raw bits (``<u2``); the manifest says so
("encoding": "bf16_bits_u2").  The ``symbolic_batch`` case is exported with a
symbolic batch dimension and has no inputs or outputs: it exists to be refused.

Each JAX version gets its own virtual environment, made on first use in
``target/jax-venv-<version>`` with the Python that JAX release needs (found in
pyenv, ``~/.pyenv/versions/3.X.*``, or as ``python3.X`` on PATH) and the pinned
packages of ``JAX_RELEASES`` (in tools/jax_venv.py); the script then runs itself again in it.
Rerun (from the repository root, with any python3):

    python3 tools/gen_jax_export_testdata.py --jax 0.10.2     # Python 3.11
    python3 tools/gen_jax_export_testdata.py --jax 0.12.0.1   # Python 3.12

Older releases (issue 51: every JAX minor release since 0.4.30, serialization
version 2 on, MLIR bytecode version 1 on) run the same cases: where a release
lacks an API a case uses the script takes the older spelling (``jax.make_mesh``
falls back to ``Mesh``; without ``jax.set_mesh`` a multi-device export is called in a
``jax.jit`` with its shardings), and a case that
release cannot export at all is recorded in the manifest's ``not_exported``
list with JAX's error, not left out silently.  For these releases each case's
entry also says the module's MLIR bytecode version (``bytecode_version``, the
number after the bytecode magic) and its producer string; the committed data of
0.10.2 and 0.12.0.1 predates those fields (compute them from the files).

Cases are appended at the end of ``cases()`` only: inputs come from one seeded
generator in order, so the data of the earlier cases stays byte-identical.
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
                  help="write only these cases (symbolic_batch included), keeping the others' files and "
                       "manifest entries as they are (the modules hold this script's line numbers, so "
                       "regenerating a case whose code did not change still changes a few bytes)")
OPTIONS = ARGS.parse_args()
reexec_in_venv(OPTIONS.jax)

os.environ["JAX_PLATFORMS"] = "cpu"
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"

import numpy as np  # noqa: E402
import ml_dtypes  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import export  # noqa: E402

# Source locations in the modules name files without the folders of the machine that made them.
jax.config.update("jax_hlo_source_file_canonicalization_regex", r".*/")

BF16 = np.dtype(ml_dtypes.bfloat16)
ROOT = os.path.join(REPO, "tests", "data", "jax_export", f"jax-{OPTIONS.jax}")
# Releases whose committed data was written before bytecode_fields (kept byte-identical on --only).
DATA_BEFORE_BYTECODE_FIELDS = ("0.10.2", "0.12.0.1")


def mlp(params, x):
    h = jnp.maximum(x @ params["w1"] + params["b1"], 0.0)
    return h @ params["w2"] + params["b2"]


def unused_arg(x, unused, y):
    del unused
    return x * y + 1.0


def pytree_outputs(x, y):
    return {"sum": x + y, "stats": (jnp.max(x), jnp.mean(y)), "prod": [x * y]}


def int_bool(a, b, mask):
    picked = jnp.where(mask, a + b, a * b)
    return picked, a > b, jnp.bitwise_xor(a, b) // 3


def bf16_case(x, y):
    return jnp.tanh(x) * y + x


def multi_platform(x, w):
    return jnp.sin(x @ w)


def sharded(a, w):
    return jnp.tanh(a @ w), jnp.sum(a)


def symbolic(x):
    return jnp.sum(x * 2.0, axis=0)


def cnn(params, x):
    from jax import lax
    y = lax.conv_general_dilated(x, params["conv"], (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    y = jnp.maximum(y + params["bias"], 0.0)
    y = lax.reduce_window(y, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    return y.reshape(y.shape[0], -1) @ params["dense"]


def scan_rnn(wx, wh, h0, xs):
    def step(h, x):
        h = jnp.tanh(x @ wx + h @ wh)
        return h, h
    return jax.lax.scan(step, h0, xs)


def while_loop(x, limit):
    # Doubles x until its sum reaches limit; returns it and how many steps that took.
    def cond(carry):
        return jnp.sum(carry[1]) < limit
    def body(carry):
        return carry[0] + 1, carry[1] * 2 + 1
    return jax.lax.while_loop(cond, body, (jnp.int32(0), x))


def sort_top_k(x, keys):
    values, indices = jax.lax.top_k(x, 3)
    return jnp.sort(x, axis=-1), values, indices, jnp.argsort(keys, stable=True)


def rfft(x):
    spectrum = jnp.fft.rfft(x)
    return spectrum, jnp.fft.irfft(spectrum * 0.5, n=x.shape[-1])


def rng_case(raw_key, x):
    key = jax.random.wrap_key_data(raw_key, impl="threefry2x32")
    k1, k2 = jax.random.split(key)
    return jax.random.normal(k1, x.shape) + x, jax.random.bits(k2, (5,), dtype=jnp.uint32)


def bf16_matmul(x, w):
    return x @ w, jnp.dot(x, w, preferred_element_type=jnp.float32)


def header_fields(serialized):
    """What the artifact's header says: the serialization version, the JAX version (0.12 on),
    and the StableHLO version of the module (its bytecode producer string)."""
    from jax._src.export import serialization_generated as ser_flatbuf
    root = ser_flatbuf.Exported.GetRootAsExported(bytearray(serialized), 0)
    written_by = root.JaxVersion() if hasattr(root, "JaxVersion") else None
    stablehlo = re.search(rb"StableHLO_v([0-9]+\.[0-9]+\.[0-9]+)", root.MlirModuleSerializedAsNumpy().tobytes())
    return {"serialization_version": root.SerializationVersion(),
            "written_by_jax": written_by.decode() if written_by is not None else None,
            "stablehlo_version": stablehlo.group(1).decode()}


def bytecode_fields(serialized):
    """The module's MLIR bytecode version and producer (the header after the magic ``ML\\xefR``:
    a varint version, then the producer string, NUL-terminated)."""
    from jax._src.export import serialization_generated as ser_flatbuf
    root = ser_flatbuf.Exported.GetRootAsExported(bytearray(serialized), 0)
    module = root.MlirModuleSerializedAsNumpy().tobytes()
    assert module[:4] == b"ML\xefR", module[:4]
    first = module[4]
    assert first & 1, "a bytecode version of one varint byte"
    producer = module[5:module.index(b"\0", 5)].decode()
    return {"bytecode_version": first >> 1, "producer": producer}


def make_mesh(n):
    """A 1-D mesh "x" of n devices (jax.make_mesh from 0.4.35; Mesh before)."""
    if hasattr(jax, "make_mesh"):
        return jax.make_mesh((n,), ("x",))
    from jax.sharding import Mesh
    return Mesh(np.array(jax.devices()[:n]), ("x",))


def in_mesh(mesh):
    """The context a multi-device export is called in (jax.set_mesh, from 0.7)."""
    return jax.set_mesh(mesh)


def encode(arr):
    arr = np.asarray(arr)
    if arr.dtype == BF16:
        return arr.view(np.uint16).astype("<u2"), "bf16_bits_u2", "bfloat16"
    return arr, "plain", arr.dtype.name


def cases(rng):
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    params = {"w1": f32(8, 16) * 0.3, "b1": f32(16), "w2": f32(16, 3) * 0.3, "b2": f32(3)}
    yield dict(name="mlp_f32", fun=mlp, args=(params, f32(4, 8)), rtol=1e-5, atol=1e-5,
               description="MLP forward: dict of params (flattened w1... order by key), then x")
    yield dict(name="unused_arg", fun=unused_arg, args=(f32(3, 4), f32(5), f32(3, 4)), rtol=1e-6, atol=1e-6,
               description="the middle argument is unused: module_kept_var_idx = [0, 2]")
    yield dict(name="pytree_outputs", fun=pytree_outputs, args=(f32(2, 3), f32(2, 3)), rtol=1e-6, atol=1e-6,
               description="outputs in a dict of tuple and list: flattened in key order")
    a = rng.integers(-50, 50, size=(6,), dtype=np.int32)
    b = rng.integers(1, 50, size=(6,), dtype=np.int32)
    m = rng.integers(0, 2, size=(6,)).astype(bool)
    yield dict(name="int_bool", fun=int_bool, args=(a, b, m), rtol=0, atol=0,
               description="i32 and bool inputs and outputs (exact)")
    yield dict(name="bf16", fun=bf16_case, args=(f32(4, 4).astype(BF16), f32(4, 4).astype(BF16)),
               rtol=2e-2, atol=2e-2, description="bf16 in and out (raw bits in <u2 .npy)")
    yield dict(name="multi_platform", fun=multi_platform, args=(f32(2, 5), f32(5, 3)), rtol=1e-5, atol=1e-5,
               platforms=("cpu", "cuda"),
               description="exported for cpu and cuda: the module takes a platform index first")
    from jax.sharding import NamedSharding, PartitionSpec as P
    mesh = make_mesh(4)
    rows, whole = NamedSharding(mesh, P("x", None)), NamedSharding(mesh, P())
    yield dict(name="sharded_4dev", fun=sharded, args=(f32(8, 4), f32(4, 3)), rtol=1e-5, atol=1e-5,
               mesh=mesh, jit=dict(in_shardings=(rows, whole), out_shardings=(NamedSharding(mesh, P("x")), whole)),
               description="4 devices (mesh x=4): a split by rows, w replicated; outputs split and replicated")
    # Added with the JAX 0.12 data; appended so the cases above keep their inputs.
    cnn_params = {"conv": f32(3, 3, 3, 4) * 0.3, "bias": f32(4) * 0.1, "dense": f32(64, 5) * 0.2}
    yield dict(name="cnn", fun=cnn, args=(cnn_params, f32(2, 8, 8, 3)), rtol=1e-5, atol=1e-5,
               description="conv 3x3 SAME + relu + 2x2 max pool + dense (NHWC)")
    yield dict(name="scan_rnn", fun=scan_rnn, args=(f32(3, 4) * 0.5, f32(4, 4) * 0.5, f32(4), f32(6, 3)),
               rtol=1e-5, atol=1e-5, description="lax.scan: a tanh RNN over 6 steps, final and every state")
    yield dict(name="while_loop", fun=while_loop,
               args=(rng.integers(0, 5, size=(4,), dtype=np.int32), np.int32(1000)), rtol=0, atol=0,
               description="lax.while_loop with a data-dependent trip count (exact)")
    yield dict(name="sort_top_k", fun=sort_top_k,
               args=(f32(3, 10), rng.integers(0, 4, size=(8,), dtype=np.int32)), rtol=0, atol=0,
               description="jnp.sort, lax.top_k (values and int32 indices), stable argsort (exact)")
    yield dict(name="rfft", fun=rfft, args=(f32(4, 16),), rtol=1e-4, atol=1e-4,
               description="jnp.fft.rfft (complex64 out) and irfft back")
    yield dict(name="rng", fun=rng_case, args=(np.array([0, 42], dtype=np.uint32), f32(3, 4)), rtol=1e-5, atol=1e-5,
               description="jax.random threefry from raw key data: normal floats and uint32 bits")
    yield dict(name="bf16_matmul", fun=bf16_matmul, args=(f32(4, 8).astype(BF16), f32(8, 6).astype(BF16)),
               rtol=2e-2, atol=2e-2, description="bf16 @ bf16 to bf16, and to f32 (preferred_element_type)")


def write_case(case, out_dir):
    """Exports one case into out_dir; returns its manifest entry."""
    name = case["name"]
    os.makedirs(out_dir)
    fun = jax.jit(case["fun"], **case.get("jit", {}))
    exp = export.export(fun, platforms=case.get("platforms"))(*case["args"])
    serialized = exp.serialize()
    with open(os.path.join(out_dir, "model.jaxexport"), "wb") as f:
        f.write(serialized)
    # Round trip through JAX's own deserializer and run that, so the outputs are the
    # exported artifact's.
    # (a multi-device export is called inside its mesh)
    loaded = export.deserialize(serialized)
    if "mesh" in case and not hasattr(jax, "set_mesh"):
        # Before jax.set_mesh the call takes its devices from a jit with the export's shardings.
        outs = jax.jit(loaded.call, **case["jit"])(*case["args"])
    else:
        with in_mesh(case["mesh"]) if "mesh" in case else contextlib.nullcontext():
            outs = loaded.call(*case["args"])
    flat_in = jax.tree_util.tree_leaves(case["args"])
    flat_out = jax.tree_util.tree_leaves(outs)
    entry = {"name": name, "description": case["description"], "model": f"{name}/model.jaxexport",
             "platforms": list(exp.platforms), "module_kept_var_idx": list(exp.module_kept_var_idx),
             "calling_convention_version": exp.calling_convention_version,
             "function_name": exp.fun_name, "nr_devices": exp.nr_devices,
             **header_fields(serialized),
             **({} if OPTIONS.jax in DATA_BEFORE_BYTECODE_FIELDS else bytecode_fields(serialized)),
             # Leaf paths as jax.tree_util.keystr writes them; inputs are (args, kwargs).
             "in_paths": [jax.tree_util.keystr(p) for p, _ in
                          jax.tree_util.tree_flatten_with_path((case["args"], {}))[0]],
             "out_paths": [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(outs)[0]],
             "exact": case["rtol"] == 0, "rtol": case["rtol"], "atol": case["atol"],
             "inputs": [], "outputs": []}
    for kind, arrays in (("in", flat_in), ("out", flat_out)):
        for i, arr in enumerate(arrays):
            data, encoding, dtype = encode(arr)
            file = f"{kind}{i}.npy"
            np.save(os.path.join(out_dir, file), data)
            entry["inputs" if kind == "in" else "outputs"].append(
                {"file": f"{name}/{file}", "dtype": dtype, "shape": list(np.shape(arr)), "encoding": encoding})
    print(name, exp.platforms, exp.module_kept_var_idx, exp.calling_convention_version, file=sys.stderr)
    return entry


def main():
    rng = np.random.default_rng(20261130)
    only = set(OPTIONS.only.split(",")) if OPTIONS.only else None
    manifest_path = os.path.join(ROOT, "manifest.json")
    if only is None:
        if os.path.isdir(ROOT):
            shutil.rmtree(ROOT)
        os.makedirs(ROOT)
        previous = {"cases": []}
    else:
        with open(manifest_path) as f:
            previous = json.load(f)
    kept = {c["name"]: c for c in previous["cases"]}
    manifest = {"jax_version": jax.__version__, "jaxlib_version": jax.lib.__version__,
                "python": ".".join(map(str, sys.version_info[:3])), "cases": []}
    # Every case is built (its inputs come from the one generator, in order), only some written.
    for case in cases(rng):
        name = case["name"]
        if only is not None and name not in only:
            if name in kept:
                with open(os.path.join(ROOT, kept[name]["model"]), "rb") as f:
                    manifest["cases"].append({**kept[name], **header_fields(f.read())})
            continue
        out_dir = os.path.join(ROOT, name)
        if os.path.isdir(out_dir):
            shutil.rmtree(out_dir)
        try:
            manifest["cases"].append(write_case(case, out_dir))
        except Exception as e:  # noqa: BLE001 (what this JAX cannot export is recorded, with why)
            if OPTIONS.jax in DATA_BEFORE_BYTECODE_FIELDS:
                raise
            shutil.rmtree(out_dir, ignore_errors=True)
            reason = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            manifest.setdefault("not_exported", []).append({"name": name, "reason": reason[:400]})
            print(name, "NOT EXPORTED:", reason, file=sys.stderr)

    # A shape-polymorphic export: our runner must refuse it clearly.
    name = "symbolic_batch"
    if only is None or name in only:
        out_dir = os.path.join(ROOT, name)
        if os.path.isdir(out_dir):
            shutil.rmtree(out_dir)
        os.makedirs(out_dir)
        spec = jax.ShapeDtypeStruct(export.symbolic_shape("b, 4"), np.float32)
        exp = export.export(jax.jit(symbolic))(spec)
        with open(os.path.join(out_dir, "model.jaxexport"), "wb") as f:
            f.write(exp.serialize())
        manifest["symbolic"] = {"name": name, "model": f"{name}/model.jaxexport",
                                "in_shapes": [[str(d) for d in a.shape] for a in exp.in_avals]}
    else:
        manifest["symbolic"] = previous["symbolic"]

    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
