"""Writes tests/data/formats: one small JAX function as MLIR text, MLIR bytecode, a StableHLO
portable artifact (target 1.0.0) and a serialized HloModuleProto, with inputs and JAX's output.

Rerun: python3 -m venv /tmp/jaxenv && /tmp/jaxenv/bin/pip install jax jaxlib numpy
       /tmp/jaxenv/bin/python tools/gen_format_testdata.py
"""
import os
os.environ["JAX_PLATFORMS"]="cpu"
import jax, jax.numpy as jnp, numpy as np
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "formats")
os.makedirs(out, exist_ok=True)
def f(a, b):
    return jnp.tanh(a) * b + 1.0
a = np.arange(6, dtype=np.float32).reshape(2, 3) / 7
b = np.full((2, 3), 2.0, np.float32)
lowered = jax.jit(f).lower(a, b)
ir = lowered.compiler_ir("stablehlo")
import io
buf = io.BytesIO()
ir.operation.write_bytecode(buf)
open(f"{out}/tanh_mul.mlirbc", "wb").write(buf.getvalue())
open(f"{out}/tanh_mul.mlir", "w").write(lowered.as_text())
try:
    hlo = lowered.compiler_ir("hlo")
    open(f"{out}/tanh_mul.hlo.pb", "wb").write(hlo.as_serialized_hlo_module_proto())
except Exception as e:
    print("hlo failed:", e)
np.save(f"{out}/a.npy", a); np.save(f"{out}/b.npy", b)
np.save(f"{out}/expected.npy", np.asarray(jax.jit(f)(a, b)))
print(jax.__version__, sorted(os.listdir(out)))
from jaxlib.mlir.dialects import stablehlo as shlo
art = shlo.serialize_portable_artifact_str(lowered.as_text(), "1.0.0")
open(f"{out}/tanh_mul.portable-1.0.0.mlirbc", "wb").write(art if isinstance(art, bytes) else art.encode("latin1"))
