#!/usr/bin/env python3
"""Writes tests/data/safetensors: files made by the `safetensors` Python package, for the reader tests.

    python -m pip install safetensors numpy ml_dtypes   # safetensors 0.8.0 was used
    python tools/gen_safetensors_testdata.py

`all_dtypes.safetensors` holds one tensor per dtype (named after it, values from arange) plus
metadata; `all_dtypes.json` lists, for each tensor, the dtype, shape and the hex of the bytes numpy
holds, so the Rust reader is checked against numpy, not against our own writer.

`named_mlp.mlir` is a small JAX MLP exported with `jax.export` (which keeps the argument names
as locations, `loc("params['layer1']['w']")`); `named_mlp_params.safetensors` holds its weights
flattened with dots (`layer1.w`, as Flax/HF checkpoints name them), `named_mlp_x.npy` its input
and `named_mlp_out0.npy` JAX's result (needs jax, e.g. the venv of tools/gen_jax_testdata.py).
"""
import json
import os

import ml_dtypes
import numpy as np
from safetensors.numpy import save_file

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "data", "safetensors")

# Every dtype the package writes that PJRT can hold; the value is (numpy dtype, safetensors name).
DTYPES = {
    "bool": (np.bool_, "BOOL"),
    "u8": (np.uint8, "U8"),
    "i8": (np.int8, "I8"),
    "u16": (np.uint16, "U16"),
    "i16": (np.int16, "I16"),
    "u32": (np.uint32, "U32"),
    "i32": (np.int32, "I32"),
    "u64": (np.uint64, "U64"),
    "i64": (np.int64, "I64"),
    "f16": (np.float16, "F16"),
    "bf16": (ml_dtypes.bfloat16, "BF16"),
    "f32": (np.float32, "F32"),
    "f64": (np.float64, "F64"),
    "c64": (np.complex64, "C64"),
    "f8_e4m3": (ml_dtypes.float8_e4m3fn, "F8_E4M3"),
    "f8_e5m2": (ml_dtypes.float8_e5m2, "F8_E5M2"),
}


def values(name, dtype):
    """arange(6) shaped (2, 3): exact in every dtype (bool: alternating; signed: some negative)."""
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    if name == "bool":
        return (np.arange(6).reshape(2, 3) % 2 == 1)
    if name.startswith("i"):
        a = a - 2
    if name == "c64":
        return (a + 1j * (a + 0.5)).astype(dtype)
    return a.astype(dtype)


def main():
    os.makedirs(OUT, exist_ok=True)
    tensors = {name: values(name, dt) for name, (dt, _) in DTYPES.items()}
    tensors["scalar"] = np.array(7.5, dtype=np.float32)
    tensors["empty"] = np.zeros((0, 3), dtype=np.float32)
    path = os.path.join(OUT, "all_dtypes.safetensors")
    save_file(tensors, path, metadata={"format": "np", "generator": "tools/gen_safetensors_testdata.py"})
    expected = {}
    for name, array in tensors.items():
        st = DTYPES[name][1] if name in DTYPES else "F32"
        expected[name] = {"dtype": st, "shape": list(array.shape), "hex": array.tobytes().hex()}
    with open(os.path.join(OUT, "all_dtypes.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")


def named_mlp():
    import jax
    import jax.numpy as jnp
    from jax import export

    def f(params, x):
        h = jnp.tanh(x @ params["layer1"]["w"] + params["layer1"]["b"])
        return h @ params["out"]["w"]

    rng = np.random.default_rng(0)
    params = {
        "layer1": {"w": rng.standard_normal((3, 4), dtype=np.float32), "b": rng.standard_normal(4, dtype=np.float32)},
        "out": {"w": rng.standard_normal((4, 2), dtype=np.float32)},
    }
    x = rng.standard_normal((2, 3), dtype=np.float32)
    exported = export.export(jax.jit(f))(params, x)
    with open(os.path.join(OUT, "named_mlp.mlir"), "w") as out:
        out.write(exported.mlir_module())
    flat = {"layer1.w": params["layer1"]["w"], "layer1.b": params["layer1"]["b"], "out.w": params["out"]["w"]}
    save_file(flat, os.path.join(OUT, "named_mlp_params.safetensors"))
    np.save(os.path.join(OUT, "named_mlp_x.npy"), x)
    np.save(os.path.join(OUT, "named_mlp_out0.npy"), np.asarray(jax.jit(f)(params, x)))


if __name__ == "__main__":
    main()
    named_mlp()
