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
            np.lib.format.write_array(buf, np.array(arrays[name], order="C"), allow_pickle=False)  # keeps rank 0
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


# ---- constant: constants of every element type, splats, empty and rank-0, iota (tests/builder/constant.rs) ----
# The f8 family and int4 through ml_dtypes (what JAX uses for them).
F8_TYPES = {
    "f16": np.float16,
    "bf16": "bfloat16",
    "f8e5m2": "float8_e5m2",
    "f8e4m3fn": "float8_e4m3fn",
    "f8e4m3b11fnuz": "float8_e4m3b11fnuz",
    "f8e5m2fnuz": "float8_e5m2fnuz",
    "f8e4m3fnuz": "float8_e4m3fnuz",
    "f8e4m3": "float8_e4m3",
    "f8e3m4": "float8_e3m4",
    # StableHLO 1.8.0 types; f4 one byte per element on the host (the low bits). (The 6-bit
    # floats are refused by the builder: XLA's CPU plugins cannot compile them.)
    "f4e2m1fn": "float4_e2m1fn",
    "f8e8m0fnu": "float8_e8m0fnu",
}


def constant():
    import ml_dtypes

    out = {}
    # Values every small float type holds or rounds (ties to even): sign, zero, fractions, the
    # largest normal of the narrowest types, NaN where the type has one.
    values = f32([0.0, 1.0, -1.5, 0.3, 2.75, -7.0, 13.0, 0.0625, 100.0, -0.0])
    for name, dtype in F8_TYPES.items():
        dt = np.dtype(getattr(ml_dtypes, dtype)) if isinstance(dtype, str) else np.dtype(dtype)
        v = values.astype(dt)
        bits = v.view(np.uint8 if dt.itemsize == 1 else np.uint16)
        out[f"{name}_bits"] = bits  # the constant's host bytes (f32 values rounded to nearest even)
        out[f"{name}_as_f32_want"] = v.astype(np.float32)  # its values widened
    out["f32_source"] = values
    # Integers at their limits.
    for name, dt in [("s8", np.int8), ("s16", np.int16), ("s32", np.int32), ("s64", np.int64),
                     ("u8", np.uint8), ("u16", np.uint16), ("u32", np.uint32), ("u64", np.uint64)]:
        info = np.iinfo(dt)
        out[f"{name}_want"] = np.array([info.min, info.max, 0, 1, info.max // 3], dtype=dt)
    # int4/uint4: every value, widened to s32 by the device.
    out["s4_as_s32_want"] = np.arange(-8, 8, dtype=np.int32)
    out["u4_as_s32_want"] = np.arange(0, 16, dtype=np.int32)
    out["s2_as_s32_want"] = np.arange(-2, 2, dtype=np.int32)
    out["u2_as_s32_want"] = np.arange(0, 4, dtype=np.int32)
    # Floats with every special value (exact bits).
    out["f32_special_want"] = np.array([np.nan, np.inf, -np.inf, -0.0, 1e-30, 3.4028235e38, -1.0], dtype=np.float32)
    out["f64_special_want"] = np.array([np.nan, np.inf, -np.inf, -0.0, 1e-300, 1.7976931348623157e308], dtype=np.float64)
    out["c64_want"] = np.array([1 + 2j, -3.5j, np.inf + 0j], dtype=np.complex64)
    out["c128_want"] = np.array([[1 - 1j], [0.25 + 4j]], dtype=np.complex128)
    out["pred_want"] = np.array([[True, False, True], [False, False, True]])
    out["pred_as_s32_want"] = out["pred_want"].astype(np.int32)
    out["splat_want"] = np.full((2, 3), -2.5, dtype=np.float32)
    out["scalar_want"] = np.array(7, dtype=np.int32)
    out["empty_want"] = np.zeros((0, 3), dtype=np.float32)
    out["iota_s32_want"] = np.broadcast_to(np.arange(3, dtype=np.int32), (2, 3)).copy()
    out["iota_f32_want"] = np.broadcast_to(np.arange(4, dtype=np.float32)[:, None], (4, 2)).copy()
    out["iota_u8_want"] = np.arange(5, dtype=np.uint8)
    return out


# ---- elementwise: unary, binary, compare, select, clamp, convert, bitcast, reduce_precision (tests/builder/elementwise.rs) ----
def _total_order_key(a):
    i = a.view(np.int32).astype(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFF) - 1, i)


def _c_div(a, b):
    return np.array([int(x / y) if (x >= 0) == (y >= 0) else -(abs(int(x)) // abs(int(y))) for x, y in zip(a.tolist(), b.tolist())])


def elementwise():
    import ml_dtypes

    nan, inf = np.nan, np.inf
    x = f32([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.75, 1e-3, -1e-3, 20.0, -20.0, 100.0, 1e-30, nan, inf, -inf, 2.5, -0.5])
    y = f32([2.0, 3.0, -1.0, 0.0, 0.5, 2.0, -1.25, 7.0, 1e-3, -3.0, 0.25, 20.0, 1.0, 1.0, 2.0, nan, 2.5, 4.0])
    d = x.astype(np.float64)
    e = y.astype(np.float64)
    out = {"x": x, "y": y}
    with np.errstate(all="ignore"):
        unary = {
            "abs": np.abs(d),
            "negate": -d,
            "exp": np.exp(d),
            "exp_minus_one": np.expm1(d),
            "log": np.log(d),
            "log_plus_one": np.log1p(d),
            "logistic": 1.0 / (1.0 + np.exp(-d)),
            "tanh": np.tanh(d),
            "sine": np.sin(d),
            "cosine": np.cos(d),
            "tan": np.tan(d),
            "sqrt": np.sqrt(d),
            "rsqrt": 1.0 / np.sqrt(d),
            "cbrt": np.cbrt(d),
            "floor": np.floor(d),
            "ceil": np.ceil(d),
            "round_nearest_afz": np.copysign(np.floor(np.abs(d) + 0.5), d),
            "round_nearest_even": np.rint(d),
            "sign": np.where(d == 0, d, np.sign(d)),  # sign(-0.0) is -0.0
        }
        binary = {
            "add": d + e,
            "subtract": d - e,
            "multiply": d * e,
            "divide": d / e,
            "remainder": np.fmod(d, e),
            "maximum": np.maximum(d, e),
            "minimum": np.minimum(d, e),
            "power": np.power(d, e),
            "atan2": np.arctan2(d, e),
        }
    for k, v in {**unary, **binary}.items():
        out[f"{k}_want"] = f32(v)
    out["is_finite_want"] = np.isfinite(x)

    # Signed and unsigned integers: wrapping arithmetic, C division, bit ops, shifts past the width.
    a = np.array([0, 1, -1, 7, -7, 2147483647, -2147483648, 123456, -99, 64], dtype=np.int32)
    b = np.array([3, -2, 5, 2, 2, 2, 3, -1000, -99, 40], dtype=np.int32)
    A, B = a.astype(np.int64), b.astype(np.int64)
    wrap = lambda v: (np.asarray(v, dtype=np.int64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    out["i_a"], out["i_b"] = a, b
    out["i_add_want"] = wrap(A + B)
    out["i_subtract_want"] = wrap(A - B)
    out["i_multiply_want"] = wrap(A * B)
    q = _c_div(A, B)
    out["i_divide_want"] = wrap(q)
    out["i_remainder_want"] = wrap(A - q * B)
    out["i_maximum_want"] = np.maximum(a, b)
    out["i_minimum_want"] = np.minimum(a, b)
    out["i_and_want"], out["i_or_want"], out["i_xor_want"] = a & b, a | b, a ^ b
    shifts = np.array([0, 1, 31, 32, 33, 5, 1, 100, -1, 3], dtype=np.int32)  # -1 is 2^32-1 unsigned: past the width
    S = shifts.astype(np.int64) & 0xFFFFFFFF
    out["i_shifts"] = shifts
    out["i_shift_left_want"] = wrap(np.where(S < 32, (A << np.minimum(S, 31)) , 0))
    out["i_shift_right_arithmetic_want"] = wrap(np.where(S < 32, A >> np.minimum(S, 31), np.where(A < 0, -1, 0)))
    U = A & 0xFFFFFFFF
    out["i_shift_right_logical_want"] = wrap(np.where(S < 32, U >> np.minimum(S, 31), 0))
    out["i_popcnt_want"] = np.array([bin(v & 0xFFFFFFFF).count("1") for v in A.tolist()], dtype=np.int32)
    out["i_count_leading_zeros_want"] = np.array([32 - (v & 0xFFFFFFFF).bit_length() for v in A.tolist()], dtype=np.int32)
    out["i_not_want"] = ~a
    out["i_abs_want"] = wrap(np.abs(A))
    out["i_negate_want"] = wrap(-A)
    out["i_sign_want"] = np.sign(a)
    out["i_power_want"] = wrap(np.array([pow(int(p), int(r), 1 << 32) if r >= 0 else 0 for p, r in zip([2, 3, -2, 1, 0], [10, 3, 5, 99, 0])]))
    out["i_power_base"] = np.array([2, 3, -2, 1, 0], dtype=np.int32)
    out["i_power_exp"] = np.array([10, 3, 5, 99, 0], dtype=np.int32)
    # Integer division where it would trap: XLA's results (x / 0 = -1, x % 0 = x,
    # MIN / -1 = MIN, MIN % -1 = 0), written out rather than computed by numpy (which warns).
    MIN = -2147483648
    out["z_a"] = np.array([7, -7, MIN, MIN, 0, 5], dtype=np.int32)
    out["z_b"] = np.array([0, 0, -1, 0, 0, -1], dtype=np.int32)
    out["z_divide_want"] = np.array([-1, -1, MIN, -1, -1, -5], dtype=np.int32)
    out["z_remainder_want"] = np.array([7, -7, 0, MIN, 0, 0], dtype=np.int32)
    out["z_divide_self_xor_want"] = np.full(6, -1, dtype=np.int32)  # a / (a ^ a)
    out["z_remainder_self_xor_want"] = out["z_a"]  # a % (a ^ a)
    out["z_u8_a"] = np.array([5, 0, 255], dtype=np.uint8)
    out["z_u8_divide_want"] = np.array([255, 255, 255], dtype=np.uint8)  # all bits set
    out["z_u8_remainder_want"] = out["z_u8_a"]
    # |iota| and |z * z| for complex z (XLA's simplifier mistakes both for non-negative reals).
    out["z_c"] = np.array([1 + 1j, -2j, 3], dtype=np.complex64)
    out["z_abs_iota_want"] = np.arange(3, dtype=np.float32)
    out["z_abs_square_want"] = f32(np.abs(out["z_c"].astype(np.complex128) ** 2))
    # u8: wrapping, unsigned compare.
    ua = np.array([0, 1, 200, 255, 128, 7], dtype=np.uint8)
    ub = np.array([1, 255, 100, 2, 3, 7], dtype=np.uint8)
    out["u_a"], out["u_b"] = ua, ub
    out["u_add_want"] = (ua.astype(np.int64) + ub).astype(np.uint8)
    out["u_multiply_want"] = (ua.astype(np.int64) * ub % 256).astype(np.uint8)
    out["u_divide_want"] = ua // ub
    out["u_lt_want"] = ua < ub
    # Predicates.
    p = np.array([True, True, False, False])
    q2 = np.array([True, False, True, False])
    out["p"], out["q"] = p, q2
    out["p_and_want"], out["p_or_want"], out["p_xor_want"], out["p_not_want"] = p & q2, p | q2, p ^ q2, ~p

    # compare: FLOAT (NaN unordered), TOTALORDER, SIGNED, UNSIGNED.
    with np.errstate(all="ignore"):
        for name, fn in [("eq", np.equal), ("ne", np.not_equal), ("ge", np.greater_equal), ("gt", np.greater),
                         ("le", np.less_equal), ("lt", np.less)]:
            out[f"cmp_{name}_want"] = fn(x, y)
            out[f"cmp_i_{name}_want"] = fn(a, b)
    out["cmp_total_lt_want"] = _total_order_key(x) < _total_order_key(y)
    out["cmp_total_eq_want"] = _total_order_key(x) == _total_order_key(y)
    out["cmp_u32_lt_want"] = a.view(np.uint32) < b.view(np.uint32)

    # select, clamp.
    out["select_want"] = np.where(x > y, x, y)
    with np.errstate(all="ignore"):
        out["clamp_want"] = f32(np.minimum(np.maximum(d, -1.0), 2.0))
        # Tensor bounds: finite operands only (XLA's CPU clamp with tensor bounds does not
        # propagate a NaN operand the way its scalar-bound form does).
        out["clamp_each_want"] = f32(np.minimum(np.maximum(d[:13], -np.abs(e[:13])), np.abs(e[:13])))

    # convert: f32 → s32 (toward zero; finite inputs in range), f16, bf16 (nearest even), f64,
    # i1 (x != 0); s32 → f32 (rounding); i1 → f32.
    finite = f32([0.0, -0.0, 1.9, -1.9, 2.5, -2.5, 1e6, 65519.0, 65520.0, 1.00000012, 3.4e38, 1e-3])
    out["conv_finite"] = finite
    out["conv_s32_want"] = np.trunc(finite[:8]).astype(np.int32)
    out["conv_f16_want"] = finite.astype(np.float16)
    out["conv_bf16_bits_want"] = finite.astype(ml_dtypes.bfloat16).view(np.uint16)
    out["conv_f64_want"] = finite.astype(np.float64)
    out["conv_pred_want"] = x != 0
    big = np.array([16777217, -16777219, 2147483647, 3, -7], dtype=np.int32)
    out["conv_big"] = big
    out["conv_big_f32_want"] = big.astype(np.float32)
    out["conv_pred_f32_want"] = p.astype(np.float32)
    out["conv_f8e4m3fn_bits_want"] = finite[:6].astype(ml_dtypes.float8_e4m3fn).view(np.uint8)

    # bitcast_convert.
    out["bitcast_u32_want"] = x.view(np.uint32)
    out["bitcast_u8_want"] = x[:4].view(np.uint8).reshape(4, 4)
    out["bitcast_back_want"] = x[:4]

    # reduce_precision: (5, 10) rounds like f16, (8, 7) like bf16 (finite inputs).
    out["rp_f16_want"] = finite.astype(np.float16).astype(np.float32)
    out["rp_bf16_want"] = finite.astype(ml_dtypes.bfloat16).astype(np.float32)

    # complex.
    re = f32([1.0, -2.0, 0.0, 3.0])
    im = f32([0.5, 0.0, -4.0, 4.0])
    out["c_re"], out["c_im"] = re, im
    out["c_want"] = (re + 1j * im).astype(np.complex64)
    out["c_abs_want"] = f32(np.abs(re.astype(np.float64) + 1j * im.astype(np.float64)))
    out["c_real_want"], out["c_imag_want"] = re, im
    out["c_exp_want"] = np.exp(re.astype(np.float64) + 1j * im.astype(np.float64)).astype(np.complex64)
    return out


# ---- shape: broadcast_in_dim .. get_dimension_size (tests/builder/shape.rs) ----
def _pad(a, value, low, high, interior):
    """stablehlo.pad in numpy: interior padding, then edges (negative edges crop)."""
    shape = [0 if n == 0 else n + (n - 1) * i for n, i in zip(a.shape, interior)]
    inner = np.full(shape, value, dtype=a.dtype)
    inner[tuple(slice(None, None, i + 1) for i in interior)] = a
    out = inner
    for axis, (lo, hi) in enumerate(zip(low, high)):
        if lo > 0:
            out = np.concatenate([np.full(out.shape[:axis] + (lo,) + out.shape[axis + 1:], value, a.dtype), out], axis)
        elif lo < 0:
            out = np.take(out, range(-lo, out.shape[axis]), axis)
        if hi > 0:
            out = np.concatenate([out, np.full(out.shape[:axis] + (hi,) + out.shape[axis + 1:], value, a.dtype)], axis)
        elif hi < 0:
            out = np.take(out, range(0, out.shape[axis] + hi), axis)
    return out


def shape():
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    v = np.array([10, 20, 30], dtype=np.int32)
    out = {"x": x, "v": v}
    out["broadcast_want"] = np.broadcast_to(v[None, :, None], (2, 3, 4)).copy()
    out["broadcast_scalar_want"] = np.full((2, 2), 5, dtype=np.int32)
    out["broadcast_ones_want"] = np.broadcast_to(x[:, :1, :], (2, 3, 4)).copy()  # a size-1 dimension repeated
    out["reshape_want"] = x.reshape(6, 4)
    out["reshape_scalar_want"] = np.array(5, dtype=np.int32).reshape(1, 1)
    out["transpose_want"] = x.transpose(2, 0, 1).copy()
    out["slice_want"] = x[0:2, 1:3, 0:4:3].copy()
    out["slice_empty_want"] = x[:, 1:1, :].copy()
    # dynamic_slice: starts clamped so the block fits.
    starts = np.array([1, 2, -5], dtype=np.int32)
    out["ds_starts"] = starts
    s = [min(max(int(st), 0), n - k) for st, n, k in zip(starts, x.shape, (1, 2, 2))]
    out["dynamic_slice_want"] = x[s[0]:s[0] + 1, s[1]:s[1] + 2, s[2]:s[2] + 2].copy()
    upd = -np.arange(4, dtype=np.int32).reshape(1, 2, 2) - 1
    out["update"] = upd
    u = x.copy()
    u[s[0]:s[0] + 1, s[1]:s[1] + 2, s[2]:s[2] + 2] = upd
    out["dynamic_update_slice_want"] = u
    out["concatenate_want"] = np.concatenate([x, x[:, :1, :] * 2, x[:, :0, :]], axis=1)
    out["pad_want"] = _pad(x, np.int32(-1), [1, 0, -1], [0, 2, -2], [0, 1, 2])
    out["pad_negative_want"] = _pad(x, np.int32(0), [-1, -1, -1], [0, -1, -2], [0, 0, 0])
    out["reverse_want"] = np.flip(x, axis=(0, 2)).copy()
    out["dimension_size_want"] = np.array(x.shape[2], dtype=np.int32)
    f = f32([[1.5, -0.0], [np.nan, np.inf]])
    out["f"] = f
    out["f_transpose_want"] = f.T.copy()
    return out


# ---- linalg: dot_general, convolution (tests/builder/linalg.rs) ----
def _conv(lhs, rhs, strides, padding, lhs_dil, rhs_dil, fgc):
    """A reference convolution on NHWC input, HWIO kernel, in float64 loops."""
    n, h, w, c = lhs.shape
    kh, kw, ci, co = rhs.shape
    # dilate the input, then pad (negative pads crop)
    dh, dw = (h - 1) * lhs_dil[0] + 1, (w - 1) * lhs_dil[1] + 1
    dil = np.zeros((n, dh, dw, c))
    dil[:, ::lhs_dil[0], ::lhs_dil[1], :] = lhs
    p = _pad(dil, 0.0, [0, padding[0][0], padding[1][0], 0], [0, padding[0][1], padding[1][1], 0], [0, 0, 0, 0])
    wh, ww = (kh - 1) * rhs_dil[0] + 1, (kw - 1) * rhs_dil[1] + 1
    oh, ow = (p.shape[1] - wh) // strides[0] + 1, (p.shape[2] - ww) // strides[1] + 1
    out = np.zeros((n, oh, ow, co))
    per_group_out = co // fgc
    for b in range(n):
        for i in range(oh):
            for j in range(ow):
                for o in range(co):
                    g = o // per_group_out
                    acc = 0.0
                    for u in range(kh):
                        for v in range(kw):
                            for k in range(ci):
                                acc += p[b, i * strides[0] + u * rhs_dil[0], j * strides[1] + v * rhs_dil[1], g * ci + k] * rhs[u, v, k, o]
                    out[b, i, j, o] = acc
    return out


def linalg():
    rng = np.random.default_rng(1818)
    a = f32(rng.standard_normal((2, 3, 4)))
    b = f32(rng.standard_normal((2, 4, 5)))
    m = f32(rng.standard_normal((3, 4)))
    out = {"a": a, "b": b, "m": m}
    out["batched_want"] = f32(np.einsum("bik,bkj->bij", a.astype(np.float64), b.astype(np.float64)))
    # contract a's dims 1 and 2 with m's 0 and 1 (no batch): a vector of 2
    out["double_contract_want"] = f32(np.einsum("bij,ij->b", a.astype(np.float64), m.astype(np.float64)))
    # outer product: no contracting dims
    out["outer_want"] = f32(np.einsum("i,j->ij", m[0].astype(np.float64), m[1].astype(np.float64)))
    ia = np.arange(-6, 6, dtype=np.int32).reshape(3, 4)
    out["ia"] = ia
    out["int_want"] = (ia.astype(np.int64) @ ia.T.astype(np.int64)).astype(np.int32)
    img = f32(rng.standard_normal((2, 5, 6, 4)))
    k = f32(rng.standard_normal((3, 2, 2, 6)))  # feature_group_count 2: 4 input features -> 2 per group
    out["img"], out["kernel"] = img, k
    out["conv_want"] = f32(_conv(img.astype(np.float64), k.astype(np.float64), (2, 1), ((1, 1), (0, -1)), (1, 1), (1, 2), 2))
    k1 = f32(rng.standard_normal((2, 2, 4, 3)))
    out["kernel1"] = k1
    out["conv_dilated_want"] = f32(_conv(img.astype(np.float64), k1.astype(np.float64), (1, 1), ((0, 0), (1, 0)), (2, 1), (1, 1), 1))
    # window_reversal along the first spatial dimension: the kernel flipped along it
    out["conv_reversed_want"] = f32(_conv(img.astype(np.float64), np.flip(k1, 0).astype(np.float64), (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1), 1))
    # batch_group_count 2 (how weight gradients of grouped convolutions look): numpy has no
    # reference for its grouping, so JAX's lax computes it, in float32 at HIGHEST precision.
    import jax
    jax.config.update("jax_platforms", "cpu")
    kb = f32(rng.standard_normal((2, 2, 4, 6)))
    out["kernel_bg"] = kb
    out["conv_batch_groups_want"] = np.asarray(jax.lax.conv_general_dilated(
        img, kb, window_strides=(1, 2), padding=((1, 0), (0, 0)), dimension_numbers=("NHWC", "HWIO", "NHWC"),
        batch_group_count=2, precision=jax.lax.Precision.HIGHEST))
    return out


# ---- reduce: reduce with one and two operands (tests/builder/reduce.rs) ----
def reduce():
    rng = np.random.default_rng(18181)
    x = f32(rng.standard_normal((3, 4, 5)))
    x[1, 2, 3] = 7.0  # a clear maximum
    xi = rng.integers(-1000, 1000, size=(3, 4, 5)).astype(np.int32)
    xi[2, 1, :] = 999  # ties: argmax takes the first
    out = {"x": x, "xi": xi}
    d = x.astype(np.float64)
    out["sum_want"] = f32(d.sum(axis=(0, 2)))
    out["max_want"] = x.max(axis=1)
    out["min_all_want"] = np.array(x.min(), dtype=np.float32)
    out["prod_want"] = f32(np.prod(d, axis=2))
    out["isum_want"] = xi.sum(axis=2).astype(np.int32)
    out["argmax_want"] = np.argmax(xi, axis=2).astype(np.int32)
    out["argmax_value_want"] = xi.max(axis=2)
    out["empty_sum_want"] = np.zeros(3, dtype=np.float32)  # reducing a 3x0 array: the init
    out["nan"] = f32([1.0, np.nan, 3.0])
    out["nan_max_want"] = np.array(np.nan, dtype=np.float32)  # maximum propagates NaN
    return out


# ==== regions: reduce_window/select_and_scatter, sort, gather/scatter, control flow, collectives,
# SPMD (tests/builder/{window,sort,gather,control,collectives,sharding}.rs) ====
def _reduce_window(x, init, op, window, strides, base_dil, win_dil, padding):
    """StableHLO's reduce_window: pad (edges and base dilation) with init, then windows."""
    x = np.asarray(x)
    rank = x.ndim
    dil_shape = [0 if n == 0 else (n - 1) * b + 1 for n, b in zip(x.shape, base_dil)]
    d = np.full(dil_shape, init, dtype=x.dtype)
    d[tuple(slice(None, None, b) for b in base_dil)] = x
    for axis, (lo, hi) in enumerate(padding):
        if lo < 0:
            d = np.take(d, range(-lo, d.shape[axis]), axis=axis)
        if hi < 0:
            d = np.take(d, range(0, d.shape[axis] + hi), axis=axis)
        pads = [(0, 0)] * rank
        pads[axis] = (max(lo, 0), max(hi, 0))
        d = np.pad(d, pads, constant_values=init)
    span = [(w - 1) * wd + 1 for w, wd in zip(window, win_dil)]
    out_shape = [0 if p < s else (p - s) // st + 1 for p, s, st in zip(d.shape, span, strides)]
    out = np.full(out_shape, init, dtype=x.dtype)
    for idx in np.ndindex(*out_shape):
        sl = tuple(slice(i * st, i * st + s, wd) for i, st, s, wd in zip(idx, strides, span, win_dil))
        acc = init
        for v in d[sl].reshape(-1):
            acc = op(acc, v)
        out[idx] = acc
    return out


def window():
    rng = np.random.default_rng(1801)
    x = f32(rng.standard_normal((4, 6)))
    xi = rng.integers(-50, 50, size=(4, 6)).astype(np.int32)
    out = {"x": x, "xi": xi}
    one = [1, 1]
    out["maxpool_want"] = _reduce_window(x, np.float32(-np.inf), max, [2, 2], [2, 2], one, one, [(0, 0), (0, 0)])
    # sums in float64, rounded once (the plugin sums in f32: compared within 1e-5)
    out["boxsum_want"] = f32(_reduce_window(x.astype(np.float64), 0.0, lambda a, b: a + b, [3, 3], one, one, one, [(1, 1), (1, 1)]))
    out["dilated_want"] = _reduce_window(xi, np.int32(0), lambda a, b: a + b, [2, 2], [1, 2], [2, 1], [1, 2], [(0, 0), (1, -1)])
    out["cropped_want"] = _reduce_window(xi, np.int32(-(2**31)), max, [2, 1], [1, 1], one, one, [(-1, 0), (0, -2)])
    # select_and_scatter, select >= (the first maximum in row-major order wins), scatter +
    src = f32(rng.integers(1, 9, size=(2, 3)))
    out["source"] = src
    sas = np.zeros_like(x)
    for i in range(2):
        for j in range(3):
            w = x[2 * i:2 * i + 2, 2 * j:2 * j + 2]
            a, b = np.unravel_index(np.argmax(w), w.shape)
            sas[2 * i + a, 2 * j + b] += src[i, j]
    out["sas_want"] = sas
    src2 = f32(rng.integers(1, 9, size=(2, 4)))  # 3x3 windows, stride 1: overlapping
    out["source2"] = src2
    sas2 = np.zeros_like(x)
    for i in range(2):
        for j in range(4):
            w = x[i:i + 3, j:j + 3]
            a, b = np.unravel_index(np.argmax(w), w.shape)
            sas2[i + a, j + b] += src2[i, j]
    out["sas_overlap_want"] = sas2
    # two operands together: 2x2 argmax pooling of xi (value, flat index; ties: the smaller index)
    vals, idxs = np.zeros((2, 3), np.int32), np.zeros((2, 3), np.int32)
    for i in range(2):
        for j in range(3):
            w = xi[2 * i:2 * i + 2, 2 * j:2 * j + 2]
            a, b = np.unravel_index(np.argmax(w), w.shape)  # argmax: the first maximum
            vals[i, j], idxs[i, j] = w[a, b], (2 * i + a) * 6 + (2 * j + b)
    out["argmax_pool_want"], out["argmax_pool_index_want"] = vals, idxs
    # edges: a rank-0 input (the window is the element: init 0 + x), an empty dimension
    out["scalar"] = np.array(2.5, dtype=np.float32)
    out["scalar_want"] = np.array(2.5, dtype=np.float32)
    out["empty"] = np.zeros((0, 3), dtype=np.float32)
    out["empty_want"] = _reduce_window(out["empty"], np.float32(0), lambda a, b: a + b, [1, 2], [1, 1], [1, 1], [1, 1], [(0, 0), (0, 0)])
    # a window larger than the input: no windows
    out["too_big_want"] = _reduce_window(x, np.float32(0), lambda a, b: a + b, [5, 1], [1, 1], [1, 1], [1, 1], [(0, 0), (0, 0)])
    return out


def sort():
    rng = np.random.default_rng(1802)
    x = f32(rng.integers(-5, 5, size=(3, 8)))
    keys = rng.integers(0, 3, size=(10,)).astype(np.int32)  # many ties: stability shows
    special = f32([3.0, np.nan, -np.inf, 1.0, np.inf, -2.0, np.nan])
    out = {"x": x, "keys": keys, "special": special}
    out["ascending_want"] = np.sort(x, axis=1)
    out["descending_dim0_want"] = -np.sort(-x, axis=0)
    out["argsort_want"] = np.argsort(keys, kind="stable").astype(np.int32)
    out["sorted_keys_want"] = np.sort(keys, kind="stable")
    out["special_want"] = np.sort(special)  # NaN last (total order, positive NaN)
    # edges: empty, one element, rank 0 is not sortable (no dimension): refused by the builder
    out["empty"] = np.zeros(0, dtype=np.int32)
    out["empty_want"] = np.sort(out["empty"])
    out["one"] = np.array([7], dtype=np.int32)
    out["one_want"] = np.sort(out["one"])
    return out


def gather():
    rng = np.random.default_rng(1803)
    table = f32(rng.standard_normal((5, 3)))
    ids = np.array([[4], [0], [2], [2]], dtype=np.int32)
    grid = np.arange(20, dtype=np.int32).reshape(4, 5)
    points = np.array([[3, 4], [0, 0], [2, 1]], dtype=np.int32)
    batched = np.arange(24, dtype=np.float32).reshape(2, 4, 3)
    bidx = np.array([[3, 1], [0, 0]], dtype=np.int32)
    out = {"table": table, "ids": ids, "grid": grid, "points": points, "batched": batched, "bidx": bidx}
    out["rows_want"] = table[ids[:, 0]]
    out["points_want"] = grid[points[:, 0], points[:, 1]]
    out["clamped_want"] = grid[2:4, 3:5][None]  # start (3, 4) clamped to (2, 3)
    out["implicit_want"] = table[np.array([1, 3])]
    out["batched_want"] = np.stack([batched[b, bidx[b]] for b in range(2)])
    # scatter: rows added (duplicates add up), an index past the end skipped
    upd = rng.integers(-9, 9, size=(5, 3)).astype(np.int32)
    sidx = np.array([[1], [3], [1], [7], [0]], dtype=np.int32)
    base = np.arange(12, dtype=np.int32).reshape(4, 3)
    out.update({"base": base, "upd": upd, "sidx": sidx})
    added = base.copy()
    for k, r in enumerate(sidx[:, 0]):
        if 0 <= r < 4:
            added[r] += upd[k]
    out["scatter_add_want"] = added
    # scatter with "replace" on unique 2-D points of grid, and max
    vals = np.array([100, -100, 7], dtype=np.int32)
    out["vals"] = vals
    replaced = grid.copy()
    maxed = grid.copy()
    for (i, j), v in zip(points, vals):
        replaced[i, j] = v
        maxed[i, j] = max(maxed[i, j], v)
    out["scatter_replace_want"] = replaced
    out["scatter_max_want"] = maxed
    # edges: no indices (an empty gather; a scatter that changes nothing)
    out["no_ids"] = np.zeros((0, 1), dtype=np.int32)
    out["no_rows_want"] = table[out["no_ids"][:, 0]]
    out["no_updates"] = np.zeros((0, 3), dtype=np.int32)
    out["unchanged_want"] = base.copy()
    return out


def control():
    rng = np.random.default_rng(1804)
    x = f32(rng.standard_normal(3))
    out = {"x": x, "n": np.array(5, dtype=np.int32)}
    acc = np.zeros(3, dtype=np.float32)
    for _ in range(5):  # acc = acc * 0.5 + x, n times (f32 arithmetic, as the device)
        acc = acc * np.float32(0.5) + x
    out["loop_want"] = acc
    out["loop_count_want"] = np.array(5, dtype=np.int32)
    # Collatz steps of 27 (a data-dependent loop)
    c, steps = 27, 0
    while c != 1:
        c = c // 2 if c % 2 == 0 else 3 * c + 1
        steps += 1
    out["collatz_want"] = np.array(steps, dtype=np.int32)
    s = x.sum(dtype=np.float32)
    out["if_want"] = f32(x.astype(np.float64) * 2.0) if s > 0 else -x
    out["if_false_want"] = -x if s > 0 else x * np.float32(2.0)
    # case on n - 4 (=1), n - 10 (-6: last branch), n - 5 (0): branch k returns x * k + k
    out["case_want"] = np.stack([x * np.float32(k) + np.float32(k) for k in (1, 2, 0)])
    # nested regions: for i in 0..n: acc += x if i is even else -x (an if inside a while body),
    # then a case whose branch 1 sums acc with a reduce (a reduce inside a case branch)
    acc = np.zeros(3, dtype=np.float32)
    for i in range(5):
        acc = acc + (x if i % 2 == 0 else -x)
    out["nested_want"] = acc
    out["nested_sum_want"] = np.array(acc.astype(np.float64).sum(), dtype=np.float32)
    # edges: a loop that never runs (its init), a one-branch case, an if on empty tensors
    out["zero_loop_want"] = np.zeros(3, dtype=np.float32)
    out["one_branch_want"] = x + np.float32(1)
    out["empty_if_want"] = np.zeros((0, 2), dtype=np.float32)
    return out


def collectives():
    # 4 replicas, replica k's argument x_k (2x4, small integers: sums exact)
    rng = np.random.default_rng(1805)
    xs = rng.integers(-9, 9, size=(4, 2, 4)).astype(np.float32)
    out = {"xs": xs}
    out["sum_all_want"] = np.broadcast_to(xs.sum(axis=0), (4, 2, 4)).copy()
    pair = [[0, 2], [1, 3]]
    out["max_pairs_want"] = np.stack([np.maximum(xs[g[0]], xs[g[1]]) for k in range(4) for g in pair if k in g])
    out["gather_want"] = np.stack([np.concatenate([xs[0], xs[1], xs[2], xs[3]], axis=1)] * 4)
    total = xs.sum(axis=0)  # 2x4, scattered by columns: replica k gets column k
    out["reduce_scatter_want"] = np.stack([total[:, k:k + 1] for k in range(4)])
    # all_to_all: split dimension 1 (4 columns) in 4, concatenate along 0: replica k gets
    # column k of every replica, stacked
    out["all_to_all_want"] = np.stack([np.concatenate([xs[j][:, k:k + 1] for j in range(4)], axis=0) for k in range(4)])
    # collective_permute: a ring k -> k+1 without 3 -> 0, so replica 0 gets zeros
    out["permute_want"] = np.stack([np.zeros((2, 4), np.float32), xs[0], xs[1], xs[2]])
    return out


def sharding():
    rng = np.random.default_rng(1806)
    x = f32(rng.integers(-4, 4, size=(4, 3)))
    w = f32(rng.integers(-4, 4, size=(3, 2)))
    y = x @ w
    return {"x": x, "w": w, "y_want": y, "colsum_want": y.sum(axis=0)}


# ---- nn: the lax-style helpers of src/nn.rs (tests/builder/nn.rs) ----
def _log_softmax(d, axis):
    m = d.max(axis=axis, keepdims=True)
    s = d - m
    return s - np.log(np.exp(s).sum(axis=axis, keepdims=True))


def nn():
    rng = np.random.default_rng(1818)
    out = {}
    # matmul of every rank pairing it accepts
    for name, (sa, sb) in {
        "vv": ((4,), (4,)), "mv": ((2, 4), (4,)), "vm": ((4,), (4, 3)), "mm": ((2, 4), (4, 3)),
        "sm": ((2, 3, 4), (4, 5)), "ss": ((2, 3, 4), (2, 4, 5)),
    }.items():
        a, b = f32(rng.standard_normal(sa)), f32(rng.standard_normal(sb))
        out[f"mm_{name}_a"], out[f"mm_{name}_b"] = a, b
        out[f"mm_{name}_want"] = f32(np.matmul(a.astype(np.float64), b.astype(np.float64)))
    # reductions: sum/max/min/mean/variance over some dimensions, all, and none
    x = f32(rng.standard_normal((3, 4, 5)) * 3 + 1)
    d = x.astype(np.float64)
    out["r_x"] = x
    out["r_sum_want"] = f32(d.sum(axis=(0, 2)))
    out["r_max_want"] = x.max(axis=1)
    out["r_min_want"] = x.min(axis=(0, 1))
    out["r_mean_want"] = f32(d.mean(axis=(0, 2)))
    out["r_mean_all_want"] = f32(d.mean())
    out["r_mean_none_want"] = x
    out["r_var_want"] = f32(d.var(axis=2))
    xi = rng.integers(-100, 100, size=(4, 6)).astype(np.int32)
    out["r_xi"] = xi
    out["r_isum_want"] = xi.sum(axis=1).astype(np.int32)
    out["r_imax_want"] = xi.max(axis=0)
    out["r_imin_want"] = xi.min(axis=1)
    out["r_nan"] = f32([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]])
    out["r_nan_max_want"] = f32([np.nan, 6.0])
    # softmax, log_softmax, logsumexp along the last axis: ordinary rows, large values (no
    # overflow after the shift), -inf entries, a row of -inf (logsumexp -inf, softmax NaN)
    s = f32(rng.standard_normal((5, 6)))
    s[1] = f32([1000, 999, 998, 1000, 0, -1000])
    s[2, 3] = -np.inf
    s[3] = -np.inf
    s[4, 0] = np.inf
    out["s_x"] = s
    d = s.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = d.max(axis=1, keepdims=True)
        e = np.exp(d - m)
        out["s_softmax_want"] = f32(e / e.sum(axis=1, keepdims=True))
        out["s_log_softmax_want"] = f32(_log_softmax(d, 1))
        mf = np.where(np.isfinite(m), m, 0.0)
        out["s_logsumexp_want"] = f32(np.log(np.exp(d - mf).sum(axis=1)) + mf[:, 0])
    # softmax along axis 0 of a finite tensor
    out["s0_x"] = f32(rng.standard_normal((3, 4)))
    d0 = out["s0_x"].astype(np.float64)
    out["s0_softmax_want"] = f32(np.exp(d0) / np.exp(d0).sum(axis=0, keepdims=True))
    # argmax/argmin: ties take the first index, NaN is the extreme, integers too
    a = f32(rng.standard_normal((4, 5)))
    a[1, :] = 2.0
    a[2, 3] = np.nan
    a[3, 1] = np.nan
    a[3, 4] = np.nan
    out["a_x"] = a
    out["a_argmax_want"] = np.argmax(a, axis=1).astype(np.int32)
    out["a_argmin_want"] = np.argmin(a, axis=1).astype(np.int32)
    out["a_argmax0_want"] = np.argmax(a, axis=0).astype(np.int64)
    ai = rng.integers(-5, 5, size=(3, 7)).astype(np.int32)
    out["a_xi"] = ai
    out["a_iargmax_want"] = np.argmax(ai, axis=1).astype(np.int32)
    out["a_iargmin_want"] = np.argmin(ai, axis=1).astype(np.int32)
    # one_hot: labels in range, out of range (-1, depth) give zero rows
    labels = np.array([[0, 3, 1], [-1, 4, 2]], dtype=np.int32)
    out["o_labels"] = labels
    out["o_want"] = (labels[..., None] == np.arange(4)).astype(np.float32)
    # activations (NaN and infinities included)
    v = f32(np.concatenate([rng.standard_normal(10) * 3, [0.0, -0.0, np.inf, -np.inf, np.nan, 20.0, -20.0]]))
    out["act_x"] = v
    d = v.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        out["act_relu_want"] = np.maximum(v, np.float32(0))
        out["act_gelu_want"] = f32(0.5 * d * (1 + np.tanh(np.sqrt(2 / np.pi) * (d + 0.044715 * d ** 3))))
        out["act_silu_want"] = f32(d / (1 + np.exp(-d)))
    # cross-entropy with probabilities and with integer labels
    logits = f32(rng.standard_normal((4, 5)) * 2)
    probs = f32(rng.dirichlet(np.ones(5), size=4))
    ce_labels = np.array([0, 4, 2, 2], dtype=np.int32)
    out["ce_logits"], out["ce_probs"], out["ce_labels"] = logits, probs, ce_labels
    ls = _log_softmax(logits.astype(np.float64), 1)
    out["ce_want"] = f32(-(probs.astype(np.float64) * ls).sum(axis=1))
    out["ce_sparse_want"] = f32(-ls[np.arange(4), ce_labels])
    return out


FAMILIES = {
    "smoke": smoke,
    "constant": constant,
    "elementwise": elementwise,
    "shape": shape,
    "linalg": linalg,
    "reduce": reduce,
    # regions
    "window": window,
    "sort": sort,
    "gather": gather,
    "control": control,
    "collectives": collectives,
    "sharding": sharding,
    "nn": nn,
}


def main(names):
    os.makedirs(OUT, exist_ok=True)
    for name in names or sorted(FAMILIES):
        with np.errstate(over="ignore"):  # overflow to inf is what some cases test
            arrays = FAMILIES[name]()
        write_npz(os.path.join(OUT, name + ".npz"), arrays)
        print(f"wrote tests/data/builder/{name}.npz ({len(arrays)} arrays)")


if __name__ == "__main__":
    main(sys.argv[1:])
