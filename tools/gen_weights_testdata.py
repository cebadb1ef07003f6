#!/usr/bin/env python3
"""Writes tests/data/weights: jax.export models whose weights are a nested, mixed-dtype dict,
the weights saved by Python's `safetensors` under several spellings of their names, an input
and JAX's output; for the tests of binding weights to a model's inputs by name
(`pjrt_formats::binding`, `pjrt run --params`, `pjrt bench run`, `pjrt serve`, `Runner`).

Python's `safetensors` writer sorts tensors by dtype (widest first), then name: a model's
inputs (in the order of its flattened pytree) are not in file order, which is why weights
must be bound by name.

Cases (each in its own folder, with a line in manifest.json):

* ``mixed``: ``f(params, x)`` with ``params = {a: f32[3], b: i32[], c: f32[3],
  block_0: {kernel: f32[3,3], bias: f32[3]}, block_1: {kernel: f32[3,3], bias: f32[3]},
  scale: bf16[3]}`` (a and c, the two kernels and the two biases have the same dtype and
  shape). Its weights are saved three times: ``params_dotted.safetensors`` (``block_0.kernel``,
  as Flax's ``flatten_dict(sep=".")`` writes them), ``params_slashed.safetensors``
  (``params/block_0/kernel``, with the root) and ``params_bracketed.safetensors``
  (``params['block_0']['kernel']``, JAX's own argument names).
* ``haiku_cnn``: a hand-written ResNet-style block in Haiku's layout, ``f(params, state, x)``:
  ``params`` keyed by Haiku module names (``cnn/~/conv_0``: ``w``, ``b``; ``cnn/~/bn_0``:
  ``scale``, ``offset``; ``cnn/~/linear``: ``w``, ``b``) and ``state`` holding batch-norm
  moving averages with int32 counters (``cnn/~/bn_0/~/mean_ema``: ``counter``, ``hidden``,
  ``average``; the same for ``var_ema``), as Haiku's ``BatchNorm`` keeps them. Both are saved in
  one file, keyed ``module/name`` as Haiku users flatten them (``cnn/~/conv_0/w``).
  (Hand-written in plain JAX with Haiku's tree, so that no Haiku install is needed.)

Run with the JAX 0.10.2 venv of tools/jax_venv.py (made on first use), with safetensors in it:

    python3 tools/gen_weights_testdata.py
    # target/jax-venv-0.10.2/bin/python -m pip install safetensors   (once, if missing)
"""

import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jax_venv import REPO, reexec_in_venv  # noqa: E402

JAX = "0.10.2"
reexec_in_venv(JAX)

os.environ["JAX_PLATFORMS"] = "cpu"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
from jax import export  # noqa: E402

try:
    import safetensors  # noqa: E402
    from safetensors.numpy import save_file  # noqa: E402
except ImportError:
    sys.exit(f"safetensors is missing: {sys.executable} -m pip install safetensors")

# Source locations in the modules name files without the folders of the machine that made them.
jax.config.update("jax_hlo_source_file_canonicalization_regex", r".*/")

OUT = os.path.join(REPO, "tests", "data", "weights")
RNG = np.random.default_rng(46)


def normal(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def mixed(params, x):
    h = x * params["a"] + params["c"] * params["b"].astype(jnp.float32)
    h = jnp.tanh(h @ params["block_0"]["kernel"] + params["block_0"]["bias"])
    h = h @ params["block_1"]["kernel"] + params["block_1"]["bias"]
    return h * params["scale"].astype(jnp.float32)


def mixed_case():
    params = {
        "a": normal(3),
        "b": np.array(3, dtype=np.int32),
        "c": normal(3),
        "block_0": {"kernel": normal(3, 3), "bias": normal(3)},
        "block_1": {"kernel": normal(3, 3), "bias": normal(3)},
        "scale": normal(3).astype(ml_dtypes.bfloat16),
    }
    x = normal(2, 3)
    flat = {}
    for key, value in params.items():
        if isinstance(value, dict):
            for inner, leaf in value.items():
                flat[(key, inner)] = leaf
        else:
            flat[(key,)] = value
    spellings = {
        "params_dotted.safetensors": lambda path: ".".join(path),
        "params_slashed.safetensors": lambda path: "/".join(("params", *path)),
        "params_bracketed.safetensors": lambda path: "params" + "".join(f"['{k}']" for k in path),
    }
    return "mixed", mixed, (params, x), {
        name: {spell(path): leaf for path, leaf in flat.items()} for name, spell in spellings.items()
    }


def haiku_cnn(params, state, x):
    conv = params["cnn/~/conv_0"]
    y = jax.lax.conv_general_dilated(x, conv["w"], (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    y = y + conv["b"]
    bn = params["cnn/~/bn_0"]
    mean = state["cnn/~/bn_0/~/mean_ema"]
    var = state["cnn/~/bn_0/~/var_ema"]
    # Haiku's ExponentialMovingAverage debiases `hidden` by its step counter.
    decay = 0.9
    mean_avg = mean["hidden"] / (1 - decay ** mean["counter"].astype(jnp.float32))
    var_avg = var["hidden"] / (1 - decay ** var["counter"].astype(jnp.float32))
    y = (y - mean_avg) * jax.lax.rsqrt(var_avg + 1e-5) * bn["scale"] + bn["offset"]
    y = y + 0.1 * (mean["average"] - var["average"])
    y = jax.nn.relu(y).mean(axis=(1, 2))
    linear = params["cnn/~/linear"]
    return y @ linear["w"] + linear["b"]


def haiku_case():
    channels = 4
    params = {
        "cnn/~/conv_0": {"w": normal(3, 3, 1, channels) * 0.5, "b": normal(channels)},
        "cnn/~/bn_0": {"scale": normal(channels), "offset": normal(channels)},
        "cnn/~/linear": {"w": normal(channels, 2), "b": normal(2)},
    }
    state = {
        "cnn/~/bn_0/~/mean_ema": {
            "counter": np.array(7, dtype=np.int32),
            "hidden": normal(channels) * 0.1,
            "average": normal(channels) * 0.1,
        },
        "cnn/~/bn_0/~/var_ema": {
            "counter": np.array(5, dtype=np.int32),
            "hidden": np.abs(normal(channels)) + 0.5,
            "average": np.abs(normal(channels)) + 0.5,
        },
    }
    x = normal(2, 6, 6, 1)
    flat = {}
    for tree in (params, state):
        for module, leaves in tree.items():
            for name, leaf in leaves.items():
                flat[f"{module}/{name}"] = leaf
    return "haiku_cnn", haiku_cnn, (params, state, x), {"weights.safetensors": flat}


def main():
    manifest = {"jax_version": jax.__version__, "safetensors_version": safetensors.__version__, "cases": []}
    for name, fn, args, files in (mixed_case(), haiku_case()):
        folder = os.path.join(OUT, name)
        os.makedirs(folder, exist_ok=True)
        exported = export.export(jax.jit(fn))(*args)
        with open(os.path.join(folder, "model.jaxexport"), "wb") as f:
            f.write(exported.serialize())
        out = np.asarray(jax.jit(fn)(*args))
        np.save(os.path.join(folder, "x.npy"), args[-1])
        np.save(os.path.join(folder, "out0.npy"), out)
        for file, tensors in files.items():
            save_file(tensors, os.path.join(folder, file), metadata={"generator": "tools/gen_weights_testdata.py"})
        paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(args)[0]]
        manifest["cases"].append({
            "name": name,
            "model": f"{name}/model.jaxexport",
            "input": f"{name}/x.npy",
            "output": f"{name}/out0.npy",
            "weights": sorted(files),
            "in_paths": paths,
            "in_avals": [str(a) for a in exported.in_avals],
            "rtol": 1e-5,
            "atol": 1e-5,
        })
    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
