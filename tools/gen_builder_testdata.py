#!/usr/bin/env python3
"""Writes tests/data/builder/FAMILY.npz: inputs and expected outputs for crates/pjrt-builder's
tests (tests/builder/FAMILY.rs), computed independently of the builder by numpy (JAX only where
numpy cannot). Deterministic: fixed seeds, and the .npz members carry a fixed timestamp, so a
re-run writes identical bytes.

    /tmp/jaxenv/bin/python tools/gen_builder_testdata.py            # every family
    /tmp/jaxenv/bin/python tools/gen_builder_testdata.py smoke shape # some

(numpy 2.4 and ml_dtypes 0.7 were used.) Each family is one function returning its arrays by
name, registered in FAMILIES at the bottom; a family's arrays are named `case_input`/`case_want`
by convention. Float expectations are computed in float64 and rounded once to the tested type.
"""
import io
import os
import sys
import zipfile

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "tests", "data", "builder")


def write_npz(path, arrays):
    """np.savez without the wall-clock timestamps (stored members, in name order)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as z:
        for name in sorted(arrays):
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.ascontiguousarray(arrays[name]), allow_pickle=False)
            info = zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            z.writestr(info, buf.getvalue())


def f32(a):
    return np.asarray(a, dtype=np.float64).astype(np.float32)


# ---- smoke: one program through the core ops (tests/builder/smoke.rs) ----
def smoke():
    rng = np.random.default_rng(18)
    x = f32(rng.standard_normal((2, 3)))
    w = f32(rng.standard_normal((3, 4)))
    b = f32(rng.standard_normal(4))
    x64, w64, b64 = x.astype(np.float64), w.astype(np.float64), b.astype(np.float64)
    y = np.tanh(x64 @ w64 + b64)
    return {
        "x": x,
        "w": w,
        "b": b,
        # tanh(x @ w + b)
        "hidden_want": f32(y),
        # sum over dimension 1 of exp(hidden)
        "rowsum_want": f32(np.exp(y).sum(axis=1)),
        # log(|hidden|) - (-hidden) / 2, max with hidden
        "mix_want": f32(np.maximum(np.log(np.abs(y)) - (-y) / 2.0, y)),
        # hidden > 0 ? hidden : 0 (select on compare), transposed
        "relu_t_want": f32(np.where(y > 0, y, 0.0).T),
        # trunc(x * 10) as int32 (f32 multiply, as the device does it), reshaped to 6
        "int_want": np.trunc(x * np.float32(10)).astype(np.int32).reshape(6),
    }


FAMILIES = {
    "smoke": smoke,
}


def main(names):
    os.makedirs(OUT, exist_ok=True)
    for name in names or sorted(FAMILIES):
        arrays = FAMILIES[name]()
        write_npz(os.path.join(OUT, name + ".npz"), arrays)
        print(f"wrote tests/data/builder/{name}.npz ({len(arrays)} arrays)")


if __name__ == "__main__":
    main(sys.argv[1:])
