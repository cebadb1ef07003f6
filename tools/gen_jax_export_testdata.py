#!/usr/bin/env python3
"""Generate serialized `jax.export` artifacts with inputs and JAX's outputs.

For every case below this script builds a small JAX function and seeded
inputs, exports it with ``jax.export.export(jax.jit(f), ...)(*args)``, writes
``exported.serialize()`` as ``model.jaxexport``, runs the function in JAX on
CPU and writes

    tests/data/jax_export/<case>/model.jaxexport
    tests/data/jax_export/<case>/in<i>.npy    (inputs in the order of in_avals,
                                               i.e. the flattened argument pytree)
    tests/data/jax_export/<case>/out<i>.npy   (outputs in the order of out_avals)
    tests/data/jax_export/manifest.json       (one entry per case)

bf16 arrays are stored as their raw bits (``<u2``); the manifest says so
("encoding": "bf16_bits_u2").  The ``symbolic_batch`` case is exported with a
symbolic batch dimension and has no inputs or outputs: it exists to be refused.

Rerun (from the repository root):

    /tmp/jaxenv/bin/python tools/gen_jax_export_testdata.py

(jax 0.10.2 with numpy and ml_dtypes; the data in the repository was made with
that version.)
"""

import contextlib
import json
import os
import shutil
import sys

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
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "jax_export")


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
    mesh = jax.make_mesh((4,), ("x",))
    rows, whole = NamedSharding(mesh, P("x", None)), NamedSharding(mesh, P())
    yield dict(name="sharded_4dev", fun=sharded, args=(f32(8, 4), f32(4, 3)), rtol=1e-5, atol=1e-5,
               mesh=mesh, jit=dict(in_shardings=(rows, whole), out_shardings=(NamedSharding(mesh, P("x")), whole)),
               description="4 devices (mesh x=4): a split by rows, w replicated; outputs split and replicated")


def main():
    rng = np.random.default_rng(20261130)
    if os.path.isdir(ROOT):
        shutil.rmtree(ROOT)
    os.makedirs(ROOT)
    manifest = {"jax_version": jax.__version__, "cases": []}
    for case in cases(rng):
        name = case["name"]
        out_dir = os.path.join(ROOT, name)
        os.makedirs(out_dir)
        fun = jax.jit(case["fun"], **case.get("jit", {}))
        exp = export.export(fun, platforms=case.get("platforms"))(*case["args"])
        with open(os.path.join(out_dir, "model.jaxexport"), "wb") as f:
            f.write(exp.serialize())
        # Round trip through JAX's own deserializer and run that, so the outputs are the
        # exported artifact's.
        # (a multi-device export is called inside its mesh)
        with jax.set_mesh(case["mesh"]) if "mesh" in case else contextlib.nullcontext():
            outs = export.deserialize(exp.serialize()).call(*case["args"])
        flat_in = jax.tree_util.tree_leaves(case["args"])
        flat_out = jax.tree_util.tree_leaves(outs)
        entry = {"name": name, "description": case["description"], "model": f"{name}/model.jaxexport",
                 "platforms": list(exp.platforms), "module_kept_var_idx": list(exp.module_kept_var_idx),
                 "calling_convention_version": exp.calling_convention_version,
                 "function_name": exp.fun_name, "nr_devices": exp.nr_devices,
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
        manifest["cases"].append(entry)
        print(name, exp.platforms, exp.module_kept_var_idx, exp.calling_convention_version, file=sys.stderr)

    # A shape-polymorphic export: our runner must refuse it clearly.
    name = "symbolic_batch"
    os.makedirs(os.path.join(ROOT, name))
    spec = jax.ShapeDtypeStruct(export.symbolic_shape("b, 4"), np.float32)
    exp = export.export(jax.jit(symbolic))(spec)
    with open(os.path.join(ROOT, name, "model.jaxexport"), "wb") as f:
        f.write(exp.serialize())
    manifest["symbolic"] = {"name": name, "model": f"{name}/model.jaxexport",
                            "in_shapes": [[str(d) for d in a.shape] for a in exp.in_avals]}

    with open(os.path.join(ROOT, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
