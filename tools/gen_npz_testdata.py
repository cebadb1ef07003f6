#!/usr/bin/env python3
"""Writes tests/data/npz: the MLP example's inputs as numpy writes them with np.savez (stored
members) and np.savez_compressed (deflated members), for the .npz reader and `pjrt run --params`.

    python -m pip install numpy   # numpy 2.x was used
    python tools/gen_npz_testdata.py

`mlp_weights.npz` / `mlp_weights_compressed.npz` hold b1, b2, w1, w2 (the parameters of
examples/mlp/train_step.mlir, whose x and y stay .npy inputs); `mixed.npz` holds one array per
dtype the reader must handle (bool, int8, uint16, int32, int64, float16, float32, float64,
complex64, a Fortran-order float32 matrix and a big-endian int32 vector), compressed.
"""
import os

import numpy as np

ROOT = os.path.join(os.path.dirname(__file__), "..")
OUT = os.path.join(ROOT, "tests", "data", "npz")
os.makedirs(OUT, exist_ok=True)

weights = {n: np.load(os.path.join(ROOT, "examples", "mlp", f"{n}.npy")) for n in ["b1", "b2", "w1", "w2"]}
np.savez(os.path.join(OUT, "mlp_weights.npz"), **weights)
np.savez_compressed(os.path.join(OUT, "mlp_weights_compressed.npz"), **weights)

mixed = {
    "bool": np.array([True, False, True]),
    "i8": np.arange(-3, 3, dtype=np.int8),
    "u16": np.arange(4, dtype=np.uint16),
    "i32": np.arange(6, dtype=np.int32).reshape(2, 3),
    "i64": np.arange(3, dtype=np.int64) - 1,
    "f16": np.array([0.5, -2.0], dtype=np.float16),
    "f32": np.linspace(0, 1, 5, dtype=np.float32),
    "f64": np.array([1e-300, 3.0]),
    "c64": np.array([1 + 2j, -3j], dtype=np.complex64),
    "fortran": np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)),
    "big_endian": np.arange(3, dtype=">i4"),
}
np.savez_compressed(os.path.join(OUT, "mixed.npz"), **mixed)
np.savez(os.path.join(OUT, "mixed_stored.npz"), **mixed)
