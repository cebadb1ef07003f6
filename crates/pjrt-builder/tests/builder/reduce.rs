//! reduce with one operand (sum, max, min, product; f32 and i32), two operands (argmax with
//! the first index on ties), over an empty dimension (the init), NaN propagated by the body.
//! f32 sums and products: 1e-5 relative, 1e-5 absolute near zero (numpy sums in f64, the plugin
//! in f32 in its own order).

use pjrt_builder::{ComparisonDirection, Function};
use pjrt_client::ElementType;

use crate::harness::{assert_close_f32, assert_exact, assert_same_f32, data, run_on_both};

#[test]
fn reductions_match_numpy() {
    let d = data("reduce");
    let f = Function::new("reductions");
    let x = f.parameter(ElementType::F32, &d.dims("x")).unwrap();
    let xi = f.parameter(ElementType::S32, &d.dims("xi")).unwrap();
    let nan = f.parameter(ElementType::F32, &d.dims("nan")).unwrap();
    let zero = f.scalar(0f32).unwrap();
    let sum = x.reduce(&zero, &[0, 2], |_, a, b| a.add(b)).unwrap();
    let max = x.reduce(&f.scalar(f32::NEG_INFINITY).unwrap(), &[1], |_, a, b| a.maximum(b)).unwrap();
    let min_all = x.reduce(&f.scalar(f32::INFINITY).unwrap(), &[0, 1, 2], |_, a, b| a.minimum(b)).unwrap();
    let prod = x.reduce(&f.scalar(1f32).unwrap(), &[2], |_, a, b| a.multiply(b)).unwrap();
    let isum = xi.reduce(&f.scalar(0i32).unwrap(), &[2], |_, a, b| a.add(b)).unwrap();
    // argmax over dimension 2: (value, index) pairs, the larger value or on ties the smaller index.
    let index = f.iota(ElementType::S32, &[3, 4, 5], 2).unwrap();
    let arg = f
        .reduce_many(&[&xi, &index], &[&f.scalar(i32::MIN).unwrap(), &f.scalar(0i32).unwrap()], &[2], |_, acc, v| {
            let greater = v[0].compare(&acc[0], ComparisonDirection::Gt)?;
            let equal = v[0].compare(&acc[0], ComparisonDirection::Eq)?;
            let earlier = v[1].compare(&acc[1], ComparisonDirection::Lt)?;
            let take = greater.or(&equal.and(&earlier)?)?;
            Ok(vec![take.select(&v[0], &acc[0])?, take.select(&v[1], &acc[1])?])
        })
        .unwrap();
    let empty = f.splat(1f32, &[3, 0]).unwrap().reduce(&zero, &[1], |_, a, b| a.add(b)).unwrap();
    // StableHLO's maximum propagates NaN, but XLA's CPU backend (fast min/max) keeps a NaN only
    // from its first operand, and a reduce may pass the element second: a body that checks for
    // NaN itself gives NaN on both plugins.
    let nan_max = nan
        .reduce(&f.scalar(f32::NEG_INFINITY).unwrap(), &[0], |_, a, b| {
            let m = a.maximum(b)?;
            let m = b.compare(b, ComparisonDirection::Ne)?.select(b, &m)?;
            a.compare(a, ComparisonDirection::Ne)?.select(a, &m)
        })
        .unwrap();
    let program = f.finish(&[&sum, &max, &min_all, &prod, &isum, &arg[1], &arg[0], &empty, &nan_max]).unwrap();
    for (plugin, out) in run_on_both(&f, &program, &[d.array("x"), d.array("xi"), d.array("nan")]) {
        assert_close_f32(plugin, "sum", &out[0], &d.array("sum_want"), 1e-5, 1e-5);
        assert_same_f32(plugin, "max", &out[1], &d.array("max_want"));
        assert_same_f32(plugin, "min_all", &out[2], &d.array("min_all_want"));
        assert_close_f32(plugin, "prod", &out[3], &d.array("prod_want"), 1e-5, 1e-6);
        assert_exact(plugin, "isum", &out[4], &d.array("isum_want"));
        assert_exact(plugin, "argmax", &out[5], &d.array("argmax_want"));
        assert_exact(plugin, "argmax_value", &out[6], &d.array("argmax_value_want"));
        assert_same_f32(plugin, "empty_sum", &out[7], &d.array("empty_sum_want"));
        assert_same_f32(plugin, "nan_max", &out[8], &d.array("nan_max_want"));
    }
}

#[test]
fn reduce_checks_inits_dimensions_and_the_body() {
    let f = Function::new("errors");
    let x = f.parameter(ElementType::F32, &[2, 3]).unwrap();
    let zero_i = f.scalar(0i32).unwrap();
    let zero = f.scalar(0f32).unwrap();
    let msg = |r: Result<pjrt_builder::Value<'_>, pjrt_builder::BuildError>| r.unwrap_err().to_string();
    assert!(msg(x.reduce(&zero_i, &[0], |_, a, b| a.add(b)))
        .contains("each init must be a scalar of its input's element type"));
    assert!(msg(x.reduce(&zero, &[2], |_, a, b| a.add(b))).contains("out of range for rank 2"));
    assert_eq!(
        msg(x.reduce(&zero, &[0], |_, a, _| a.convert(ElementType::S32))),
        "stablehlo.reduce: the region returned tensor<i32>, expected tensor<f32>"
    );
    // The body's own error comes back as it is.
    assert!(msg(x.reduce(&zero, &[0], |_, a, _| a.add(&a.convert(ElementType::S32)?))).contains("stablehlo.add"));
    // After a failed body the function is still usable.
    let ok = x.reduce(&zero, &[0, 1], |_, a, b| a.add(b)).unwrap();
    assert!(f.finish(&[&ok]).is_ok());
}
