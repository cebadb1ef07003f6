//! The elementary functions (ChloDecompositionPatterns.td, ChloDecompositionPatternsMath.td
//! and ChloLegalizeToStablehlo.cpp's cosh, sinh and next_after): square, cosh, sinh, the
//! real inverse trigonometric and hyperbolic functions, the `is_inf` family, tan, next_after
//! and mulhi.

use super::build::{is_complex, is_float, max_finite, Builder, V};
use crate::ir::ElementType;

/// `f` computed in `f32` for an `f16` or `bf16` value (ChloLegalizeToStablehlo.cpp's
/// materializeWithUpcast), in the value's own type otherwise.
pub(super) fn with_upcast(b: &mut Builder, x: &V, f: impl FnOnce(&mut Builder, &V) -> V) -> V {
    match x.element() {
        Some(e @ (ElementType::F16 | ElementType::BF16)) => {
            let wide = b.convert(x, ElementType::F32);
            let r = f(b, &wide);
            b.convert(&r, e)
        }
        _ => f(b, x),
    }
}

fn real_only(x: &V, name: &str) -> Result<ElementType, String> {
    match x.element() {
        Some(e) if is_float(e) => Ok(e),
        Some(e) => Err(format!("{name} of {e:?} is not lowered (the real float types are)")),
        None => Err("an operand that is not a tensor".to_string()),
    }
}

/// e^(x + log(1/2)) ± e^(log(1/2) - x): cosh (`add`) or sinh (`subtract`) away from 0.
fn exp_half_pair(b: &mut Builder, x: &V, combine: &str) -> V {
    let half = b.konst(x, 0.5);
    let log_half = b.un("log", &half);
    let sum = b.add(x, &log_half);
    let up = b.un("exponential", &sum);
    let diff = b.sub(&log_half, x);
    let down = b.un("exponential", &diff);
    b.bin(combine, &up, &down)
}

pub(super) fn unary(b: &mut Builder, name: &str, x: &V) -> Result<V, String> {
    let e = x.element().ok_or("an operand that is not a tensor")?;
    Ok(match name {
        "square" if is_complex(e) => {
            let re = b.part("real", x);
            let im = b.part("imag", x);
            let finite = b.is_finite(&re);
            let (are, aim) = (b.un("abs", &re), b.un("abs", &im));
            let same = b.cmp("EQ", &are, &aim);
            let both = b.bin("and", &finite, &same);
            let zero = b.konst(&re, 0.0);
            let (d, s) = (b.sub(&re, &im), b.add(&re, &im));
            let ds = b.mul(&d, &s);
            let real = b.select(&both, &zero, &ds);
            let two = b.konst(&re, 2.0);
            let xy = b.mul(&re, &im);
            let imag = b.mul(&two, &xy);
            b.complex(&real, &imag)
        }
        "square" => b.mul(x, x),
        "cosh" => with_upcast(b, x, |b, x| exp_half_pair(b, x, "add")),
        "sinh" if is_complex(e) => exp_half_pair(b, x, "subtract"),
        "sinh" => {
            real_only(x, name)?;
            with_upcast(b, x, |b, x| {
                let large = exp_half_pair(b, x, "subtract");
                // (expm1(x) + expm1(x) / (expm1(x) + 1)) / 2: no cancellation near 0.
                let m1 = b.un("exponential_minus_one", x);
                let one = b.konst(x, 1.0);
                let half = b.konst(x, 0.5);
                let m1p1 = b.add(&m1, &one);
                let ratio = b.div(&m1, &m1p1);
                let sum = b.add(&m1, &ratio);
                let small = b.mul(&half, &sum);
                let ax = b.un("abs", x);
                let lt = b.cmp("LT", &ax, &one);
                b.select(&lt, &small, &large)
            })
        }
        "atan" => {
            real_only(x, name)?;
            let one = b.konst(x, 1.0);
            b.bin("atan2", x, &one)
        }
        "atanh" => {
            real_only(x, name)?;
            let ax = b.un("abs", x);
            let one = b.konst(x, 1.0);
            let gt = b.cmp("GT", &ax, &one);
            let nan = b.konst(x, f64::NAN);
            let l = b.un("log_plus_one", x);
            let nx = b.un("negate", x);
            let r = b.un("log_plus_one", &nx);
            let d = b.sub(&l, &r);
            let half = b.konst(x, 0.5);
            let v = b.mul(&d, &half);
            b.select(&gt, &nan, &v)
        }
        "asin" => {
            real_only(x, name)?;
            let one = b.konst(x, 1.0);
            let (omx, opx) = (b.sub(&one, x), b.add(&one, x));
            let p = b.mul(&omx, &opx);
            let s = b.un("sqrt", &p);
            let den = b.add(&one, &s);
            let ta = b.bin("atan2", x, &den);
            b.add(&ta, &ta)
        }
        "acos" => {
            real_only(x, name)?;
            let one = b.konst(x, 1.0);
            let (omx, opx) = (b.sub(&one, x), b.add(&one, x));
            let p = b.mul(&omx, &opx);
            let s = b.un("sqrt", &p);
            b.bin("atan2", &s, x)
        }
        "acosh" => {
            let e = real_only(x, name)?;
            let max = b.konst(x, max_finite(e));
            let two = b.konst(x, 2.0);
            let limit = b.div(&max, &two);
            let ge = b.cmp("GE", x, &limit);
            let log2 = b.un("log", &two);
            let logx = b.un("log", x);
            let large = b.add(&log2, &logx);
            let one = b.konst(x, 1.0);
            let xm1 = b.sub(x, &one);
            let sm = b.un("sqrt", &xm1);
            let xp1 = b.add(x, &one);
            let sp = b.un("sqrt", &xp1);
            let sum = b.add(&sp, &sm);
            let prod = b.mul(&sm, &sum);
            let small = b.un("log_plus_one", &prod);
            b.select(&ge, &large, &small)
        }
        "asinh" => {
            let e = real_only(x, name)?;
            let sign = b.un("sign", x);
            let ax = b.un("abs", x);
            let max = b.konst(x, max_finite(e));
            let root = b.un("sqrt", &max);
            let ge = b.cmp("GE", &ax, &root);
            let two = b.konst(x, 2.0);
            let log2 = b.un("log", &two);
            let logax = b.un("log", &ax);
            let large = b.add(&log2, &logax);
            let ax2 = b.mul(&ax, &ax);
            let one = b.konst(x, 1.0);
            let op = b.add(&one, &ax2);
            let s = b.un("sqrt", &op);
            let den = b.add(&one, &s);
            let q = b.div(&ax2, &den);
            let t = b.add(&ax, &q);
            let small = b.un("log_plus_one", &t);
            let v = b.select(&ge, &large, &small);
            b.mul(&sign, &v)
        }
        "is_inf" | "is_pos_inf" | "is_neg_inf" => {
            real_only(x, name)?;
            let v = if name == "is_inf" { b.un("abs", x) } else { x.clone() };
            let inf = b.konst(x, if name == "is_neg_inf" { f64::NEG_INFINITY } else { f64::INFINITY });
            b.cmp("EQ", &v, &inf)
        }
        "tan" => b.un("tan", x),
        _ => return Err("not an op the writer lowers".to_string()),
    })
}

pub(super) fn binary(b: &mut Builder, name: &str, x: &V, y: &V) -> Result<V, String> {
    match name {
        "next_after" => next_after(b, x, y),
        "mulhi" => mulhi(b, x, y),
        _ => Err("not an op the writer lowers".to_string()),
    }
}

/// The integer type of `bits` bits, signed or not.
fn int_type(bits: u32, signed: bool) -> Option<ElementType> {
    Some(match (bits, signed) {
        (8, true) => ElementType::S8,
        (16, true) => ElementType::S16,
        (32, true) => ElementType::S32,
        (64, true) => ElementType::S64,
        (8, false) => ElementType::U8,
        (16, false) => ElementType::U16,
        (32, false) => ElementType::U32,
        (64, false) => ElementType::U64,
        _ => return None,
    })
}

fn next_after(b: &mut Builder, x: &V, y: &V) -> Result<V, String> {
    let e = real_only(x, "next_after")?;
    let bits = crate::ir::float_width(&crate::ir::Type::Scalar(e)).ok_or("a float without a width")?;
    let it = int_type(bits, true).ok_or("a float of no integer width")?;
    let (xi, yi) = (b.bitcast(x, it), b.bitcast(y, it));
    let (xnan, ynan) = (b.cmp("NE", x, x), b.cmp("NE", y, y));
    let nan_input = b.bin("or", &xnan, &ynan);
    let nan = b.konst(x, f64::NAN);
    let nan_i = b.bitcast(&nan, it);
    let sign_bit = 1u64 << (bits - 1);
    let sign_mask = b.konst_int(&xi, sign_bit);
    let magnitude_mask = b.konst_int(&xi, !sign_bit);
    let (xa, ya) = (b.bin("and", &xi, &magnitude_mask), b.bin("and", &yi, &magnitude_mask));
    let equal = b.cmp("EQ", x, y);
    let zero = b.konst_int(&xi, 0);
    let (xz, yz) = (b.cmp("EQ", &xa, &zero), b.cmp("EQ", &ya, &zero));
    let (xs, ys) = (b.bin("and", &xi, &sign_mask), b.bin("and", &yi, &sign_mask));
    let one = b.konst_int(&xi, 1);
    let smallest = b.bin("or", &ys, &one);
    let disagree = b.cmp("NE", &xs, &ys);
    let larger = b.cmp("GT", &xa, &ya);
    let smaller = b.bin("or", &larger, &disagree);
    let minus_one = b.konst_int(&xi, u64::MAX);
    let step = b.select(&smaller, &minus_one, &one);
    let stepped = b.add(&xi, &step);
    let from_zero = b.select(&yz, &yi, &smallest);
    let r = b.select(&xz, &from_zero, &stepped);
    let r = b.select(&equal, &yi, &r);
    let r = b.select(&nan_input, &nan_i, &r);
    Ok(b.bitcast(&r, e))
}

fn mulhi(b: &mut Builder, x: &V, y: &V) -> Result<V, String> {
    let e = x.element().ok_or("an operand that is not a tensor")?;
    let (bits, signed) = crate::ir::int_width(&crate::ir::Type::Scalar(e))
        .filter(|(w, _)| *w >= 8)
        .ok_or_else(|| format!("mulhi of {e:?} (an integer of 8 to 64 bits is lowered)"))?;
    if bits < 64 {
        let wide = int_type(bits * 2, signed).ok_or("no wider integer")?;
        let (xw, yw) = (b.convert(x, wide), b.convert(y, wide));
        let p = b.mul(&xw, &yw);
        let n = b.konst_int(&p, u64::from(bits));
        let shift = if signed { "shift_right_arithmetic" } else { "shift_right_logical" };
        let hi = b.bin(shift, &p, &n);
        return Ok(b.convert(&hi, e));
    }
    if !signed {
        return Ok(mulhi_u64(b, x, y));
    }
    // (x, y) as u64, then hi -= y where x < 0 and hi -= x where y < 0.
    let (xu, yu) = (b.convert(x, ElementType::U64), b.convert(y, ElementType::U64));
    let hi = mulhi_u64(b, &xu, &yu);
    let zero = b.konst_int(x, 0);
    let zero_u = b.konst_int(&xu, 0);
    let xneg = b.cmp("LT", x, &zero);
    let ycorr = b.select(&xneg, &yu, &zero_u);
    let hi = b.sub(&hi, &ycorr);
    let yneg = b.cmp("LT", y, &zero);
    let xcorr = b.select(&yneg, &xu, &zero_u);
    let hi = b.sub(&hi, &xcorr);
    Ok(b.convert(&hi, e))
}

/// The high 64 bits of a u64 product, from 32-bit halves.
fn mulhi_u64(b: &mut Builder, x: &V, y: &V) -> V {
    let n32 = b.konst_int(x, 32);
    let low = b.konst_int(x, 0xFFFF_FFFF);
    let (a_hi, b_hi) = (b.bin("shift_right_logical", x, &n32), b.bin("shift_right_logical", y, &n32));
    let (a_lo, b_lo) = (b.bin("and", x, &low), b.bin("and", y, &low));
    let p0 = b.mul(&a_lo, &b_lo);
    let p1 = b.mul(&a_lo, &b_hi);
    let p2 = b.mul(&a_hi, &b_lo);
    let p3 = b.mul(&a_hi, &b_hi);
    let carry_p0 = b.bin("shift_right_logical", &p0, &n32);
    let mid1 = b.add(&p1, &carry_p0);
    let mid1_lo = b.bin("and", &mid1, &low);
    let mid2 = b.add(&p2, &mid1_lo);
    let c1 = b.bin("shift_right_logical", &mid1, &n32);
    let c2 = b.bin("shift_right_logical", &mid2, &n32);
    let s = b.add(&p3, &c1);
    b.add(&s, &c2)
}
