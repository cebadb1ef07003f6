#!/usr/bin/env python3
"""Check tests/data/jax/: file format, and replay every case through XLA.

For each case folder this script

  1. checks that program.mlir, meta.json and the in*/out*.npy files described
     by meta.json are there, with the dtypes and shapes that meta.json states
     (bfloat16 stored as '<V2' or '<u2' bits as recorded in "encoding");
  2. compiles program.mlir with jaxlib's own PJRT CPU client, giving it ONLY
     what a plain PJRT client would have to set from meta.json (num_replicas,
     num_partitions, use_spmd_partitioning when partitions > 1,
     use_shardy_partitioner = meta["use_shardy"], env_option_overrides =
     meta["xla_options"]) -- not JAX's compile_options.pb -- and also once
     with compile_options.pb when present;
  3. feeds each device its slice of the inputs (see README.md) and compares
     the results with out*.npy using the per-output tolerances.

Run (from the repository root, with the venv of tools/gen_jax_testdata.py):
    /tmp/jaxenv/bin/python tools/check_jax_testdata.py
Prints one line per case and "N passed, N failed" at the end.
"""

import glob
import json
import os
import re
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
os.environ["JAX_PLATFORMS"] = "cpu"

import numpy as np  # noqa: E402
import ml_dtypes  # noqa: E402
import jax  # noqa: E402
from jax._src import xla_bridge  # noqa: E402
from jax._src.lib import xla_client as xc  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

jax.config.update("jax_enable_x64", True)
ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    "tests", "data", "jax")
BF16 = np.dtype(ml_dtypes.bfloat16)


def load(d, m):
    a = np.load(os.path.join(d, m["file"]), allow_pickle=False)
    hdr = open(os.path.join(d, m["file"]), "rb").read(256)
    descr = re.search(rb"'descr': '([^']*)'", hdr).group(1).decode()
    assert list(a.shape) == m["shape"], (m, a.shape)
    if m["dtype"] == "bfloat16":
        want = {"bf16_bits_v2": "<V2", "bf16_bits_u2": "<u2"}[m["encoding"]]
        assert descr == want, (m, descr)
        a = a.view(BF16)
    else:
        assert m["encoding"] == "plain" and a.dtype.name == m["dtype"], (m, a.dtype)
        assert descr[0] in "<|", descr
    return a


def compare(got, want, m):
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape)
    if m["exact"]:
        return np.array_equal(got, want)
    if want.dtype == BF16:
        got, want = got.astype(np.float32), want.astype(np.float32)
    return np.allclose(got, want, rtol=m["rtol"], atol=m["atol"], equal_nan=True)


def check_case(d, backend):
    meta = json.load(open(os.path.join(d, "meta.json")))
    text = open(os.path.join(d, "program.mlir")).read()
    assert text.startswith("module @") and "func.func public @main(" in text
    ins = [load(d, m) for m in meta["inputs"]]
    outs = [load(d, m) for m in meta["outputs"]]
    nrep, npart = meta["replicas"], meta["partitions"]
    ndev = nrep * npart
    devs = jax.devices()[:ndev]

    variants = []
    o = xc.CompileOptions()
    o.num_replicas, o.num_partitions = nrep, npart
    b = o.executable_build_options
    if npart > 1:
        b.use_spmd_partitioning = True
    b.use_shardy_partitioner = bool(meta.get("use_shardy", False))
    if meta["xla_options"]:
        o.env_option_overrides = list(meta["xla_options"].items())
    variants.append(("minimal", o))
    pb = os.path.join(d, "compile_options.pb")
    if os.path.exists(pb):
        variants.append(("jax_pb", xc.CompileOptions.ParseFromString(open(pb, "rb").read())))

    if ndev == 1:
        arrs = [jax.device_put(x, devs[0]) for x in ins]
        out_axes = [None] * len(outs)
    else:
        mesh = Mesh(np.array(devs), ("d",))
        arrs = []
        for x, s in zip(ins, meta["input_shardings"]):
            spec = P(*([None] * s["axis"] + ["d"])) if s else P()
            arrs.append(jax.device_put(x, NamedSharding(mesh, spec)))
        out_axes = [s["axis"] if s else None for s in meta["output_shardings"]]

    for vname, opts in variants:
        exe = backend.compile_and_load(text, xc.DeviceList(tuple(devs)), opts)
        res = exe.execute_sharded(arrs).disassemble_into_single_device_arrays()
        assert len(res) == len(outs), (len(res), len(outs))
        for j, (shards, want, m, ax) in enumerate(zip(res, outs, meta["outputs"], out_axes)):
            shards = [np.asarray(s) for s in shards]
            if ax is None:
                for k, s in enumerate(shards):
                    if not compare(s, want, m):
                        return f"{vname}: out{j} device {k} mismatch: {s} vs {want}"
            else:
                g = np.concatenate(shards, axis=ax)
                if not compare(g, want, m):
                    return f"{vname}: out{j} mismatch: {g} vs {want}"
    return None


def main():
    backend = xla_bridge.get_backend("cpu")
    passed = failed = 0
    for d in sorted(glob.glob(os.path.join(ROOT, "*", ""))):
        name = os.path.basename(os.path.dirname(d))
        try:
            err = check_case(d, backend)
        except Exception as e:  # noqa: BLE001
            err = f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
        if err:
            failed += 1
            print(f"FAIL {name}: {err}")
        else:
            passed += 1
            print(f"ok   {name}")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
