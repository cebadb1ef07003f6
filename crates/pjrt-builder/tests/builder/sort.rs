//! sort: ascending along a dimension, descending along another, a stable argsort with many
//! ties (two operands), NaN and infinities with the total-order comparison, against numpy
//! (exact).

use pjrt_builder::{BuildError, ComparisonDirection, ComparisonType, Function, Value};
use pjrt_client::ElementType;

use crate::harness::{assert_exact, assert_same_f32, data, run_on_both};

#[test]
fn sorts_match_numpy() {
    let d = data("sort");
    let f = Function::new("sorts");
    let x = f.parameter(ElementType::F32, &d.dims("x")).unwrap();
    let keys = f.parameter(ElementType::S32, &d.dims("keys")).unwrap();
    let special = f.parameter(ElementType::F32, &d.dims("special")).unwrap();
    let ascending = x.sort(1, false, |_, a, b| a.compare(b, ComparisonDirection::Lt)).unwrap();
    let descending = x.sort(0, false, |_, a, b| a.compare(b, ComparisonDirection::Gt)).unwrap();
    let index = f.iota(ElementType::S32, &d.dims("keys"), 0).unwrap();
    let arg = f.sort(&[&keys, &index], 0, true, |_, l, r| l[0].compare(&r[0], ComparisonDirection::Lt)).unwrap();
    let total =
        special.sort(0, true, |_, a, b| a.compare_as(b, ComparisonDirection::Lt, ComparisonType::TotalOrder)).unwrap();
    let program = f.finish(&[&ascending, &descending, &arg[1], &arg[0], &total]).unwrap();
    for (plugin, out) in run_on_both(&f, &program, &[d.array("x"), d.array("keys"), d.array("special")]) {
        assert_same_f32(plugin, "ascending", &out[0], &d.array("ascending_want"));
        assert_same_f32(plugin, "descending", &out[1], &d.array("descending_dim0_want"));
        assert_exact(plugin, "stable argsort", &out[2], &d.array("argsort_want"));
        assert_exact(plugin, "sorted keys", &out[3], &d.array("sorted_keys_want"));
        assert_same_f32(plugin, "total order", &out[4], &d.array("special_want"));
    }
}

#[test]
fn sort_edge_cases_match_numpy() {
    let d = data("sort");
    let f = Function::new("sort_edges");
    let empty = f.parameter(ElementType::S32, &[0]).unwrap();
    let one = f.parameter(ElementType::S32, &[1]).unwrap();
    let sorted_empty = empty.sort(0, true, lt).unwrap();
    let sorted_one = one.sort(0, false, lt).unwrap();
    let program = f.finish(&[&sorted_empty, &sorted_one]).unwrap();
    for (plugin, out) in run_on_both(&f, &program, &[d.array("empty"), d.array("one")]) {
        assert_exact(plugin, "empty", &out[0], &d.array("empty_want"));
        assert_exact(plugin, "one element", &out[1], &d.array("one_want"));
    }
    // A rank-0 tensor has no dimension to sort along.
    let s = f.scalar(1i32).unwrap();
    assert!(s.sort(0, true, lt).unwrap_err().to_string().contains("out of range"));
}

#[test]
fn sort_is_checked() {
    let f = Function::new("errors");
    let x = f.parameter(ElementType::F32, &[3, 4]).unwrap();
    let y = f.parameter(ElementType::S32, &[4]).unwrap();
    assert!(x.sort(2, true, lt).unwrap_err().to_string().contains("dimension 2 is out of range"));
    let e = f.sort(&[&x, &y], 0, true, |_, l, r| l[0].compare(&r[0], ComparisonDirection::Lt)).unwrap_err();
    assert!(e.to_string().contains("same dimensions"), "{e}");
    let e = x.sort(0, true, |_, a, b| a.add(b)).unwrap_err();
    assert_eq!(e.to_string(), "stablehlo.sort: the region returned tensor<f32>, expected tensor<i1>");
    // The comparator sees only its arguments.
    let outside = f.scalar(0f32).unwrap();
    let e = x.sort(0, true, |_, a, _| a.compare(&outside, ComparisonDirection::Lt)).unwrap_err();
    assert!(e.to_string().contains("from outside this region"), "{e}");
}

fn lt<'f>(_: &'f Function, a: &Value<'f>, b: &Value<'f>) -> Result<Value<'f>, BuildError> {
    a.compare(b, ComparisonDirection::Lt)
}
