"""Generate a `jax.export` artifact lowered for CUDA on 8 devices, without a GPU.

JAX lowers for a platform it does not run on (``platforms=("cuda",)``); the 8-device mesh comes
from the CPU backend (``--xla_force_host_platform_device_count=8``). The model cannot run here,
so there are no inputs or outputs: `pjrt compile --target h100 --devices 8` compiles it (test
`gpu_target_cli::a_cuda_export_for_8_devices_compiles_for_8_h100s`).

    tests/data/jax_export_cuda/mlp_8dev/model.jaxexport

Rerun (from the repository root), with jax 0.10.2 as for tools/gen_jax_export_testdata.py:

    /tmp/jaxenv/bin/python tools/gen_cuda_export_testdata.py
"""

import os

os.environ["JAX_PLATFORMS"] = "cpu"
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import export  # noqa: E402
from jax.sharding import NamedSharding, PartitionSpec as P  # noqa: E402

jax.config.update("jax_hlo_source_file_canonicalization_regex", r".*/")

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "jax_export_cuda")


def mlp(w1, b1, w2, b2, x):
    h = jnp.maximum(x @ w1 + b1, 0.0)
    return h @ w2 + b2


def main():
    mesh = jax.make_mesh((8,), ("batch",))
    rows, whole = NamedSharding(mesh, P("batch", None)), NamedSharding(mesh, P())
    f32 = lambda *s: jax.ShapeDtypeStruct(s, jnp.float32)  # noqa: E731
    fun = jax.jit(mlp, in_shardings=(whole, whole, whole, whole, rows), out_shardings=rows)
    exp = export.export(fun, platforms=("cuda",))(f32(8, 16), f32(16), f32(16, 3), f32(3), f32(64, 8))
    out = os.path.join(ROOT, "mlp_8dev")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "model.jaxexport"), "wb") as f:
        f.write(exp.serialize())
    print(f"jax {jax.__version__}: platforms {exp.platforms}, {exp.nr_devices} devices, "
          f"{len(exp.serialize())} bytes -> {out}/model.jaxexport")


if __name__ == "__main__":
    main()
