#!/usr/bin/env python3
"""Generate a `jax.export` artifact that calls a custom call written in Rust.

The function below calls the XLA FFI target ``pjrt_tutorial_scale_shift`` with
``jax.ffi.ffi_call`` (a typed custom call, ``api_version = 4``), between two
ordinary JAX operations, and is exported with the safety check for that custom
call disabled (``jax.export`` refuses custom calls it does not know otherwise).
JAX cannot run it (no handler is registered in jaxlib), so the expected outputs
are computed with numpy from the op's definition:

    scale_shift(x; scale: f32, shift: f64, repeat: i64, mode: str)
        = x * scale + shift, applied `repeat` times; mode must be "affine".

It writes

    tests/data/ffi/jax-<version>/scale_shift/model.jaxexport
    tests/data/ffi/jax-<version>/scale_shift/in0.npy
    tests/data/ffi/jax-<version>/scale_shift/out<i>.npy

The handler is the one of examples/10_custom_call_in_rust.rs. Like
gen_jax_export_testdata.py this makes its own virtual environment in
``target/jax-venv-<version>`` (binary wheels only) and runs itself again in it.
Rerun from the repository root with any python3:

    python3 tools/gen_ffi_export_testdata.py --jax 0.10.2
"""

import argparse
import os
import sys

sys.dont_write_bytecode = True  # importing jax_venv leaves no tools/__pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jax_venv import REPO, reexec_in_venv  # noqa: E402

TARGET = "pjrt_tutorial_scale_shift"

ARGS = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ARGS.add_argument("--jax", required=True, choices=["0.10.2"])
OPTIONS = ARGS.parse_args()
reexec_in_venv(OPTIONS.jax, pip_options=["--only-binary=:all:"])

os.environ["JAX_PLATFORMS"] = "cpu"

import numpy as np  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import export  # noqa: E402

jax.config.update("jax_hlo_source_file_canonicalization_regex", r".*/")

SCALE, SHIFT, REPEAT = np.float32(2.0), 0.5, 3


def scale_shift(x):
    # Python floats arrive at the handler as f64, Python ints as i64; numpy scalars keep their type.
    return jax.ffi.ffi_call(TARGET, jax.ShapeDtypeStruct(x.shape, x.dtype))(
        x, scale=SCALE, shift=SHIFT, repeat=REPEAT, mode="affine")


def model(x):
    y = scale_shift(jnp.tanh(x))
    return y + 1.0, jnp.sum(y, axis=-1)


def reference(x):
    y = np.tanh(x.astype(np.float32))
    for _ in range(REPEAT):
        y = (y * SCALE + np.float32(SHIFT)).astype(np.float32)
    return (y + np.float32(1.0)).astype(np.float32), y.sum(axis=-1, dtype=np.float32)


def main():
    x = np.random.default_rng(28).standard_normal((2, 5)).astype(np.float32)
    exported = export.export(jax.jit(model), platforms=["cpu"],
                             disabled_checks=[export.DisabledSafetyCheck.custom_call(TARGET)])(x)
    root = os.path.join(REPO, "tests", "data", "ffi", f"jax-{OPTIONS.jax}", "scale_shift")
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "model.jaxexport"), "wb") as f:
        f.write(exported.serialize())
    np.save(os.path.join(root, "in0.npy"), x)
    for i, out in enumerate(reference(x)):
        np.save(os.path.join(root, f"out{i}.npy"), out)
    text = exported.mlir_module()
    assert f"@{TARGET}" in text and "mhlo.backend_config = {" in text, text
    print(f"wrote {root}")


main()
