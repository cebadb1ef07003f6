#!/usr/bin/env python3
"""One small jax.export per family of ops JAX emits, for pjrt-stablehlo's round-trip test.

Writes tests/data/stablehlo_ops/jax-<version>/<name>.jaxexport, and JAX's MLIR text of the same
module beside it as <name>.mlir (for the text parser's tests). No inputs: the test makes
deterministic inputs from the avals, runs the bytecode and the printed text on both CPU plugins
and compares the results bit for bit). Sharded cases (Shardy: sdy.mesh, sdy.sharding,
sharding constraints, shard_map's manual computation and collectives) are exported for 4 CPU
devices.

Run with a JAX venv (tools/gen_jax_export_testdata.py makes target/jax-venv-<version>):

    target/jax-venv-0.10.2/bin/python tools/gen_stablehlo_ops_testdata.py
    target/jax-venv-0.12.0.1/bin/python tools/gen_stablehlo_ops_testdata.py
"""

import os

os.environ["JAX_PLATFORMS"] = "cpu"
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import export, lax  # noqa: E402
from jax._src.lax import windowed_reductions  # noqa: E402

jax.config.update("jax_enable_x64", True)

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def s(shape, dtype=jnp.float32):
    return jax.ShapeDtypeStruct(shape, dtype)


f32, i32 = jnp.float32, jnp.int32


def cases():
    c = {}
    c["unary_float"] = (
        lambda x: [jnp.abs(x), -x, jnp.exp(x), jnp.expm1(x), jnp.log(jnp.abs(x) + 1), jnp.log1p(jnp.abs(x)),
                   jnp.sin(x), jnp.cos(x), jnp.tan(x), jnp.tanh(x), jax.nn.sigmoid(x), jnp.sqrt(jnp.abs(x)),
                   lax.rsqrt(jnp.abs(x) + 1), jnp.cbrt(x), jnp.floor(x), jnp.ceil(x), jnp.round(x),
                   lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO), jnp.sign(x), jnp.isfinite(x),
                   lax.reduce_precision(x, 5, 10), lax.erf(x), lax.lgamma(jnp.abs(x) + 1)],
        [s((3, 4))])
    c["binary_float"] = (
        lambda x, y: [x + y, x - y, x * y, x / (jnp.abs(y) + 1), jnp.remainder(x, 3.0), jnp.power(jnp.abs(x), y),
                      jnp.maximum(x, y), jnp.minimum(x, y), jnp.arctan2(x, y), x < y, x == y, x >= y,
                      jnp.where(x > y, x, y), jnp.clip(x, -0.5, 0.5), lax.nextafter(x, y)],
        [s((2, 5)), s((2, 5))])
    c["integer_ops"] = (
        lambda a, b: [a & b, a | b, a ^ b, ~a, a << (b & 7), a >> (b & 7), lax.shift_right_logical(a, b & 7),
                      lax.population_count(a), lax.clz(a), a // (jnp.abs(b) + 1), a % (jnp.abs(b) + 1),
                      jnp.abs(a), -a, a < b, jnp.maximum(a, b)],
        [s((6,), i32), s((6,), i32)])
    c["dtypes"] = (
        lambda a, b, c_, d, e, f, g: [a.astype(jnp.float16) * 2, b.astype(jnp.bfloat16) + 1, c_ * 2, d + 1, e | 1,
                                      f.astype(jnp.float8_e4m3fn).astype(f32), g.astype(jnp.int4).astype(i32),
                                      lax.bitcast_convert_type(a, jnp.int32), a.astype(jnp.float64)],
        [s((4,)), s((4,)), s((4,), jnp.int8), s((4,), jnp.uint16), s((4,), jnp.uint64), s((4,)), s((4,), i32)])
    c["complex"] = (
        lambda x, y: (lambda z: [z * z, jnp.real(z), jnp.imag(z), jnp.abs(z), jnp.exp(z), jnp.conj(z)])(lax.complex(x, y)),
        [s((3,)), s((3,))])
    c["reductions"] = (
        lambda x: [jnp.sum(x, 0), jnp.max(x, 1), jnp.min(x), jnp.prod(x, 1), jnp.argmax(x, 1), jnp.argmin(x, 0),
                   jnp.all(x > 0, 1), jnp.any(x > 0), jnp.cumsum(x, 1), jnp.cumprod(x, 0), lax.cummax(x, 1)],
        [s((3, 5))])
    c["shapes"] = (
        lambda x: [x.reshape(5, 3), x.T, jnp.flip(x, 1), jnp.pad(x, ((1, 0), (2, 1))),
                   lax.pad(x, f32(0), ((0, 0, 1), (1, 1, 2))), jnp.concatenate([x, x], 0), x[1:, ::2],
                   jnp.broadcast_to(x[:, None, :], (3, 2, 5)), jnp.arange(6, dtype=f32).reshape(2, 3),
                   jnp.expand_dims(x, 0), jnp.tile(x, (1, 2)), jnp.stack([x, x])],
        [s((3, 5))])
    c["dot"] = (
        lambda a, b, c_: [a @ b, jnp.einsum("bij,bjk->bik", c_, c_), jnp.dot(a, b, precision=lax.Precision.HIGHEST),
                          jnp.tensordot(a, b.T, axes=([1], [1])), jnp.outer(a[0], b[:, 0])],
        [s((4, 3)), s((3, 2)), s((2, 3, 3))])
    c["conv"] = (
        lambda x, w, w2: [lax.conv_general_dilated(x, w, (1, 1), "SAME"),
                          lax.conv_general_dilated(x, w, (2, 1), ((1, 0), (0, 1)), lhs_dilation=(1, 2), rhs_dilation=(2, 1)),
                          lax.conv_general_dilated(x, w2, (1, 1), "VALID", feature_group_count=2),
                          lax.conv_transpose(x, w, (2, 2), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW")),
                          lax.conv_general_dilated(jnp.transpose(x, (0, 2, 3, 1)), jnp.transpose(w, (2, 3, 1, 0)), (1, 1), "SAME",
                                                   dimension_numbers=("NHWC", "HWIO", "NHWC"))],
        [s((1, 2, 6, 6)), s((3, 2, 3, 3)), s((4, 1, 2, 2))])
    c["pooling"] = (
        lambda x: [lax.reduce_window(x, f32(-jnp.inf), lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID"),
                   lax.reduce_window(x, f32(0), lax.add, (1, 1, 3, 3), (1, 1, 1, 1), "SAME"),
                   # The gradient of max pooling: select_and_scatter.
                   jax.grad(lambda y: jnp.sum(windowed_reductions._reduce_window_max(
                       y, (1, 1, 2, 2), (1, 1, 2, 2), ((0, 0),) * 4)))(x)],
        [s((1, 2, 4, 4))])
    c["gather_scatter"] = (
        lambda x, i: [x[i], x[:, i], x[i, i], x.at[i].add(1.0), x.at[i].set(0.0), x.at[i, 0].max(5.0), x.at[i].mul(2.0),
                      jnp.take_along_axis(x[:3], jnp.abs(i)[:, None] % 4, 1),
                      lax.dynamic_slice(x, (i[0] % 2, i32(1)), (2, 2)),
                      lax.dynamic_update_slice(x, jnp.ones((2, 2), f32), (i[1] % 2, i32(0)))],
        [s((4, 4)), s((3,), i32)])
    c["sort"] = (
        lambda x, k: [jnp.sort(x, 1), jnp.argsort(x, 0), lax.sort((k, x[0]), num_keys=1), lax.top_k(x, 2)[0],
                      jnp.sort(x, 1, stable=True)],
        [s((3, 5)), s((5,), i32)])
    c["control_flow"] = (
        lambda x, n: [lax.fori_loop(0, 5, lambda i, v: v * 1.5 + i, x),
                      lax.while_loop(lambda v: v[1] < n, lambda v: (v[0] + 1.0, v[1] + 1), (x, 0))[0],
                      lax.cond(n > 2, lambda v: v * 2, lambda v: v - 1, x),
                      lax.switch(n % 3, [lambda v: v, lambda v: -v, lambda v: v * v], x),
                      lax.scan(lambda cr, v: (cr + v, cr * v), jnp.zeros((), f32), x)[1],
                      lax.map(jnp.sin, x)],
        [s((4,)), s((), i32)])
    c["fft"] = (
        lambda x: [jnp.fft.fft(x.astype(jnp.complex64)), jnp.fft.ifft(x.astype(jnp.complex64)), jnp.fft.rfft(x),
                   jnp.fft.irfft(jnp.fft.rfft(x)), jnp.fft.fft2(x.reshape(2, 4).astype(jnp.complex64))],
        [s((8,))])
    c["random"] = (
        lambda k: (lambda key: [jax.random.normal(key, (3,)), jax.random.uniform(key, (2, 2)),
                                jax.random.bits(jax.random.key(7, impl="rbg"), (4,)),
                                jax.random.randint(key, (5,), 0, 10)])(jax.random.wrap_key_data(k)),
        [s((2,), jnp.uint32)])
    c["linalg"] = (
        lambda a, b: (lambda spd: [jnp.linalg.cholesky(spd), lax.linalg.triangular_solve(spd, b, left_side=True, lower=True),
                                   jnp.linalg.inv(spd), jnp.linalg.det(spd), jnp.linalg.qr(a)[1],
                                   jnp.linalg.eigh(spd)[0], jnp.linalg.svd(a, compute_uv=False)])(a @ a.T + 4 * jnp.eye(3, dtype=f32)),
        [s((3, 3)), s((3, 2))])
    c["misc"] = (
        lambda x: [lax.optimization_barrier((x, x * 2))[1], lax.stop_gradient(x) + 1, jax.nn.softmax(x),
                   jax.nn.gelu(x), jax.nn.relu(x), jax.checkpoint(lambda y: jnp.sin(y) * 2)(x),
                   jax.grad(lambda y: jnp.sum(jnp.tanh(y) ** 2))(x), jnp.linspace(0, 1, 5, dtype=f32)],
        [s((2, 3))])
    c["float64"] = (
        lambda x, y: [x * y + 1, jnp.exp(x), x.astype(jnp.float32), (x @ y.T)],
        [s((2, 3), jnp.float64), s((2, 3), jnp.float64)])
    c["bool_consts"] = (
        lambda x: [jnp.where(jnp.array([[True, False, True], [False, False, True]]), x, 0.0),
                   x * jnp.array([1.0, 2.0, 3.0], f32), jnp.logical_not(x > 0), jnp.full((2, 2), True)],
        [s((2, 3))])
    return c


def sharded_cases():
    from jax.sharding import NamedSharding, PartitionSpec as P
    mesh = jax.make_mesh((4,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
    sh = NamedSharding(mesh, P("x"))
    rep = NamedSharding(mesh, P())
    c = {}

    def constraint(a, w):
        h = jnp.tanh(a @ w)
        h = jax.lax.with_sharding_constraint(h, NamedSharding(mesh, P("x", None)))
        return h.sum(0), h
    c["sharded_constraint"] = (constraint, [s((8, 4)), s((4, 3))], (sh, rep), (rep, sh))

    def collectives(a):
        def body(b):
            total = jax.lax.psum(b, "x")
            gathered = jax.lax.all_gather(b, "x", tiled=True)
            shifted = jax.lax.ppermute(b, "x", [(i, (i + 1) % 4) for i in range(4)])
            mx = jax.lax.pmax(b, "x")
            return total, gathered.sum(0, keepdims=True), shifted, mx
        return jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=(P(), P(), P("x"), P()), check_vma=False)(a)
    c["sharded_collectives"] = (collectives, [s((8, 2))], (sh,), (rep, rep, sh, rep))
    return c


def write(out, name, exp):
    open(os.path.join(out, f"{name}.jaxexport"), "wb").write(exp.serialize())
    open(os.path.join(out, f"{name}.mlir"), "w").write(exp.mlir_module())
    print(name, len(exp.mlir_module_serialized))


def main():
    out = os.path.join(REPO, "tests", "data", "stablehlo_ops", f"jax-{jax.__version__}")
    os.makedirs(out, exist_ok=True)
    for name, (fun, args) in cases().items():
        exp = export.export(jax.jit(fun))(*args)
        write(out, name, exp)
    for name, (fun, args, in_sh, out_sh) in sharded_cases().items():
        exp = export.export(jax.jit(fun, in_shardings=in_sh, out_shardings=out_sh))(*args)
        write(out, name, exp)


if __name__ == "__main__":
    main()
