//! Every elementwise op against numpy, on f32 inputs with NaN, ±inf, ±0 and tiny and huge
//! values, on i32 (wrapping, C division, shifts past the width), u8 and i1.
//!
//! Tolerances (f32): exact for the ops IEEE specifies exactly (abs, negate, floor, ceil, the
//! roundings, sign, add, subtract, multiply, divide, remainder, maximum, minimum, sqrt; numpy's
//! float64 result rounded once is the IEEE f32 result); 1e-5 relative (1e-6 absolute near 0) for
//! the transcendental ones (XLA's CPU approximations are within a few ulp), 2e-5 for `power` and
//! `tan` (composed of log/exp, sin/cos).

use pjrt_builder::{BuildError, ComparisonDirection, ComparisonType, Function, Value};
use pjrt_client::num_complex::Complex;
use pjrt_client::{ElementType, HostArray};

use crate::harness::{assert_close_f32, assert_exact, assert_same_f32, data, run_on_both};

/// Runs `outputs(f, inputs)` on both plugins and checks each output against `NAME_want`.
fn check(
    inputs: &[&str],
    build: impl for<'f> Fn(&'f Function, &[Value<'f>]) -> Vec<(&'static str, Result<Value<'f>, BuildError>)>,
    compare: impl Fn(&str, &str, &HostArray, &HostArray),
) {
    let d = data("elementwise");
    let f = Function::new("elementwise");
    let params: Vec<Value<'_>> = inputs
        .iter()
        .map(|name| {
            let a = d.array(name);
            f.parameter(a.element_type(), a.dims()).unwrap()
        })
        .collect();
    let built = build(&f, &params);
    let names: Vec<&str> = built.iter().map(|(n, _)| *n).collect();
    let values: Vec<Value<'_>> = built.into_iter().map(|(n, v)| v.unwrap_or_else(|e| panic!("{n}: {e}"))).collect();
    let refs: Vec<&Value<'_>> = values.iter().collect();
    let program = f.finish(&refs).unwrap();
    let arrays: Vec<HostArray> = inputs.iter().map(|n| d.array(n)).collect();
    for (plugin, out) in run_on_both(&f, &program, &arrays) {
        for (i, name) in names.iter().enumerate() {
            compare(plugin, name, &out[i], &d.array(&format!("{name}_want")));
        }
    }
}

#[test]
fn exact_f32_ops_match_ieee() {
    check(
        &["x", "y"],
        |_, p| {
            let (x, y) = (&p[0], &p[1]);
            vec![
                ("abs", x.abs()),
                ("negate", x.negate()),
                ("floor", x.floor()),
                ("ceil", x.ceil()),
                ("round_nearest_afz", x.round_nearest_afz()),
                ("round_nearest_even", x.round_nearest_even()),
                ("sign", x.sign()),
                ("sqrt", x.sqrt()),
                ("add", x.add(y)),
                ("subtract", x.subtract(y)),
                ("multiply", x.multiply(y)),
                ("divide", x.divide(y)),
                ("remainder", x.remainder(y)),
                ("maximum", x.maximum(y)),
                ("minimum", x.minimum(y)),
            ]
        },
        |plugin, name, got, want| {
            if matches!(name, "maximum" | "minimum") {
                // StableHLO propagates a NaN from either operand; XLA's CPU backend (its fast
                // min/max) only from the first: x[15] = -inf against y[15] = NaN gives -inf.
                // That element is checked to be one of the two, the others exactly.
                let (mut g, w) = (got.to_vec::<f32>().unwrap(), want.to_vec::<f32>().unwrap());
                assert!(g[15].is_nan() || g[15] == f32::NEG_INFINITY, "{plugin}: {name}[15] = {}", g[15]);
                g[15] = w[15];
                let got = HostArray::from_elements(vec![g.len() as i64], &g).unwrap();
                assert_same_f32(plugin, name, &got, want)
            } else {
                assert_same_f32(plugin, name, got, want)
            }
        },
    );
}

#[test]
fn transcendental_f32_ops_are_within_tolerance() {
    check(
        &["x", "y"],
        |_, p| {
            let (x, y) = (&p[0], &p[1]);
            vec![
                ("exp", x.exp()),
                ("exp_minus_one", x.exp_minus_one()),
                ("log", x.log()),
                ("log_plus_one", x.log_plus_one()),
                ("logistic", x.logistic()),
                ("tanh", x.tanh()),
                ("sine", x.sine()),
                ("cosine", x.cosine()),
                ("tan", x.tan()),
                ("rsqrt", x.rsqrt()),
                ("cbrt", x.cbrt()),
                ("power", x.power(y)),
                ("atan2", x.atan2(y)),
            ]
        },
        |plugin, name, got, want| {
            let rel = if matches!(name, "power" | "tan") { 2e-5 } else { 1e-5 };
            assert_close_f32(plugin, name, got, want, rel, 1e-6)
        },
    );
}

#[test]
fn integer_ops_wrap_and_shift_like_stablehlo() {
    check(
        &["i_a", "i_b", "i_shifts", "i_power_base", "i_power_exp"],
        |_, p| {
            let (a, b, s) = (&p[0], &p[1], &p[2]);
            vec![
                ("i_add", a.add(b)),
                ("i_subtract", a.subtract(b)),
                ("i_multiply", a.multiply(b)),
                ("i_divide", a.divide(b)),
                ("i_remainder", a.remainder(b)),
                ("i_maximum", a.maximum(b)),
                ("i_minimum", a.minimum(b)),
                ("i_and", a.and(b)),
                ("i_or", a.or(b)),
                ("i_xor", a.xor(b)),
                ("i_shift_left", a.shift_left(s)),
                ("i_shift_right_arithmetic", a.shift_right_arithmetic(s)),
                ("i_shift_right_logical", a.shift_right_logical(s)),
                ("i_popcnt", a.popcnt()),
                ("i_count_leading_zeros", a.count_leading_zeros()),
                ("i_not", a.not()),
                ("i_abs", a.abs()),
                ("i_negate", a.negate()),
                ("i_sign", a.sign()),
                ("i_power", p[3].power(&p[4])),
            ]
        },
        assert_exact,
    );
    check(
        &["u_a", "u_b", "p", "q"],
        |_, v| {
            let (a, b, p, q) = (&v[0], &v[1], &v[2], &v[3]);
            vec![
                ("u_add", a.add(b)),
                ("u_multiply", a.multiply(b)),
                ("u_divide", a.divide(b)),
                ("u_lt", a.compare(b, ComparisonDirection::Lt)),
                ("p_and", p.and(q)),
                ("p_or", p.or(q)),
                ("p_xor", p.xor(q)),
                ("p_not", p.not()),
            ]
        },
        assert_exact,
    );
}

#[test]
fn integer_division_never_traps_and_complex_abs_stays_real() {
    check(
        &["z_a", "z_b", "z_u8_a", "z_c"],
        |f, v| {
            let (a, b, u, c) = (&v[0], &v[1], &v[2], &v[3]);
            let u_zero = f.splat(0u8, &[3]).unwrap();
            let iota = f.iota(ElementType::C64, &[3], 0).unwrap();
            vec![
                ("z_divide", a.divide(b)),
                ("z_remainder", a.remainder(b)),
                // a ^ a is zero; XLA folds it, and 0.10's compiler folded the division natively.
                ("z_divide_self_xor", a.xor(a).and_then(|z| a.divide(&z))),
                ("z_remainder_self_xor", a.xor(a).and_then(|z| a.remainder(&z))),
                ("z_u8_divide", u.divide(&u_zero)),
                ("z_u8_remainder", u.remainder(&u_zero)),
                ("z_abs_iota", iota.abs()),
                ("z_abs_square", c.multiply(c).and_then(|s| s.abs())),
            ]
        },
        |plugin, name, got, want| {
            if name == "z_abs_square" {
                assert_close_f32(plugin, name, got, want, 1e-6, 0.0)
            } else {
                assert_exact(plugin, name, got, want)
            }
        },
    );
}

#[test]
fn compare_select_and_clamp() {
    use ComparisonDirection::*;
    check(
        &["x", "y", "i_a", "i_b"],
        |f, p| {
            let (x, y, a, b) = (&p[0], &p[1], &p[2], &p[3]);
            let low = f.scalar(-1f32).unwrap();
            let high = f.scalar(2f32).unwrap();
            let bound = y.slice(&[0], &[13], &[1]).unwrap().abs().unwrap();
            let finite_x = x.slice(&[0], &[13], &[1]).unwrap();
            vec![
                ("cmp_eq", x.compare(y, Eq)),
                ("cmp_ne", x.compare(y, Ne)),
                ("cmp_ge", x.compare(y, Ge)),
                ("cmp_gt", x.compare(y, Gt)),
                ("cmp_le", x.compare(y, Le)),
                ("cmp_lt", x.compare(y, Lt)),
                ("cmp_i_eq", a.compare(b, Eq)),
                ("cmp_i_ne", a.compare(b, Ne)),
                ("cmp_i_ge", a.compare(b, Ge)),
                ("cmp_i_gt", a.compare(b, Gt)),
                ("cmp_i_le", a.compare(b, Le)),
                ("cmp_i_lt", a.compare(b, Lt)),
                ("cmp_total_lt", x.compare_as(y, Lt, ComparisonType::TotalOrder)),
                ("cmp_total_eq", x.compare_as(y, Eq, ComparisonType::TotalOrder)),
                (
                    "cmp_u32_lt",
                    a.bitcast_convert(ElementType::U32)
                        .and_then(|ua| ua.compare(&b.bitcast_convert(ElementType::U32)?, Lt)),
                ),
                ("select", x.compare(y, Gt).and_then(|c| c.select(x, y))),
                ("clamp", x.clamp(&low, &high)),
                ("clamp_each", finite_x.clamp(&bound.negate().unwrap(), &bound)),
            ]
        },
        |plugin, name, got, want| {
            if name == "clamp_each" {
                // numpy's minimum(-0.0, 0.0) is 0.0, IEEE's -0.0: zeros compare equal here.
                assert_close_f32(plugin, name, got, want, 0.0, 0.0)
            } else if got.element_type() == ElementType::F32 {
                assert_same_f32(plugin, name, got, want)
            } else {
                assert_exact(plugin, name, got, want)
            }
        },
    );
}

#[test]
fn convert_bitcast_reduce_precision_and_complex() {
    check(
        &["conv_finite", "conv_big", "x", "p", "c_re", "c_im"],
        |_, v| {
            let (fin, big, x, p) = (&v[0], &v[1], &v[2], &v[3]);
            let first8 = fin.slice(&[0], &[8], &[1]).unwrap();
            let first6 = fin.slice(&[0], &[6], &[1]).unwrap();
            let x4 = x.slice(&[0], &[4], &[1]).unwrap();
            let complex = v[4].complex(&v[5]).unwrap();
            vec![
                ("conv_s32", first8.convert(ElementType::S32)),
                ("conv_f16", fin.convert(ElementType::F16)),
                ("conv_bf16_bits", fin.convert(ElementType::BF16).and_then(|b| b.bitcast_convert(ElementType::U16))),
                ("conv_f64", fin.convert(ElementType::F64)),
                ("conv_pred", x.convert(ElementType::PRED)),
                ("conv_big_f32", big.convert(ElementType::F32)),
                ("conv_pred_f32", p.convert(ElementType::F32)),
                (
                    "conv_f8e4m3fn_bits",
                    first6.convert(ElementType::F8E4M3FN).and_then(|b| b.bitcast_convert(ElementType::U8)),
                ),
                ("bitcast_u32", x.bitcast_convert(ElementType::U32)),
                ("bitcast_u8", x4.bitcast_convert(ElementType::U8)),
                ("bitcast_back", x4.bitcast_convert(ElementType::U8).and_then(|b| b.bitcast_convert(ElementType::F32))),
                ("rp_f16", fin.reduce_precision(5, 10)),
                ("rp_bf16", fin.reduce_precision(8, 7)),
                ("c", Ok(complex.clone())),
                ("c_abs", complex.abs()),
                ("c_real", complex.real()),
                ("c_imag", complex.imag()),
                ("c_exp", complex.exp()),
                ("is_finite", x.is_finite()),
            ]
        },
        |plugin, name, got, want| match name {
            "c_abs" => assert_close_f32(plugin, name, got, want, 1e-6, 0.0),
            "c_exp" => {
                // Complex exp: each part within 1e-5 relative of the modulus.
                let (g, w) = (got.to_vec::<Complex<f32>>().unwrap(), want.to_vec::<Complex<f32>>().unwrap());
                for (a, b) in g.iter().zip(&w) {
                    assert!((a - b).norm() <= 1e-5 * b.norm(), "{plugin}: c_exp: got {g:?}, want {w:?}");
                }
            }
            _ if got.element_type() == ElementType::F32 => assert_same_f32(plugin, name, got, want),
            _ => assert_exact(plugin, name, got, want),
        },
    );
}

#[test]
fn elementwise_errors_name_the_op_and_types() {
    let f = Function::new("errors");
    let x = f.parameter(ElementType::F32, &[2]).unwrap();
    let i = f.parameter(ElementType::S32, &[2]).unwrap();
    let p = f.parameter(ElementType::PRED, &[2]).unwrap();
    let c = f.parameter(ElementType::C64, &[2]).unwrap();
    let x3 = f.parameter(ElementType::F32, &[3]).unwrap();
    let msg = |r: Result<Value<'_>, BuildError>| r.unwrap_err().to_string();
    assert_eq!(
        msg(x.add(&i)),
        "stablehlo.add: operand types tensor<2xf32> and tensor<2xi32>: they differ; elementwise operands must have \
         the same type (convert or broadcast_in_dim one first)"
    );
    assert_eq!(
        msg(i.exp()),
        "stablehlo.exponential: operand types tensor<2xi32>: stablehlo.exponential takes float, complex elements"
    );
    assert!(msg(x.shift_left(&x)).contains("takes signed integer, unsigned integer elements"));
    assert!(msg(p.add(&p)).contains("stablehlo.add"));
    assert!(msg(x.compare_as(&x, ComparisonDirection::Lt, ComparisonType::Signed)).contains("compare_type SIGNED"));
    assert!(msg(c.compare(&c, ComparisonDirection::Lt)).contains("only with Eq and Ne"));
    assert!(msg(x.select(&x, &x)).contains("the predicate must be tensor<i1> or tensor<2xi1>"));
    assert!(msg(c.convert(ElementType::F32)).contains("take .real() first"));
    assert!(msg(x3.bitcast_convert(ElementType::F64)).contains("needs a last dimension of 2"));
    assert!(msg(x.reduce_precision(0, 3)).contains("exponent_bits 0"));
    assert!(msg(x.clamp(&i, &i)).contains("stablehlo.clamp"));
    // The abs of a complex is real; complex from two parts.
    assert_eq!(c.abs().unwrap().element_type(), Some(ElementType::F32));
    assert_eq!(x.complex(&x).unwrap().element_type(), Some(ElementType::C64));
}

#[test]
fn chained_width_changing_bitcasts_compile_and_keep_the_bits() {
    // f32 -> 2 x f16 -> 2 x 2 x i8: XLA's simplifier used to join the two bitcasts into one of
    // the wrong shape and reject the program (found by the builder fuzz target). The chain
    // must give the bytes a single f32 -> 4 x i8 bitcast gives.
    let f = Function::new("bitcast_chain");
    let x = f.parameter(ElementType::F32, &[3]).unwrap();
    let chained = x.bitcast_convert(ElementType::F16).and_then(|h| h.bitcast_convert(ElementType::S8)).unwrap();
    assert_eq!(chained.dims(), [3, 2, 2]);
    let direct = x.bitcast_convert(ElementType::S8).unwrap();
    let program = f.finish(&[&chained, &direct]).unwrap();
    let input = HostArray::from_elements(vec![3], &[1.5f32, -0.0, f32::NAN]).unwrap();
    for (plugin, out) in run_on_both(&f, &program, &[input]) {
        let (a, b) = (out[0].to_vec::<i8>().unwrap(), out[1].to_vec::<i8>().unwrap());
        assert_eq!(a, b, "{plugin}: the chained bitcast changed the bytes");
        let want: Vec<i8> = [1.5f32, -0.0, f32::NAN].iter().flat_map(|v| v.to_le_bytes()).map(|b| b as i8).collect();
        assert_eq!(b, want, "{plugin}: f32 -> i8 bitcast");
    }
}
