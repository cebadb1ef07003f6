//! reduce_window (max pooling, padded box sums, base and window dilation with strides,
//! negative padding, two operands: argmax pooling) and select_and_scatter (max pooling's
//! gradient, disjoint and overlapping windows) against numpy. f32 box sums: 1e-5 relative, 1e-5 absolute near zero (numpy sums
//! in f64); maxima and integer sums exact.

use pjrt_builder::{BuildError, ComparisonDirection, Function, Value, Window};
use pjrt_client::ElementType;

use crate::harness::{assert_close_f32, assert_exact, assert_same_f32, data, run_on_both};

#[test]
fn windows_match_numpy() {
    let d = data("window");
    let f = Function::new("windows");
    let x = f.parameter(ElementType::F32, &d.dims("x")).unwrap();
    let xi = f.parameter(ElementType::S32, &d.dims("xi")).unwrap();
    let source = f.parameter(ElementType::F32, &d.dims("source")).unwrap();
    let source2 = f.parameter(ElementType::F32, &d.dims("source2")).unwrap();
    let ninf = f.scalar(f32::NEG_INFINITY).unwrap();
    let pool = Window::new(&[2, 2]).strides(&[2, 2]);
    let maxpool = x.reduce_window(&ninf, &pool, |_, a, b| a.maximum(b)).unwrap();
    let boxsum = x
        .reduce_window(&f.scalar(0f32).unwrap(), &Window::new(&[3, 3]).padding(&[(1, 1), (1, 1)]), |_, a, b| a.add(b))
        .unwrap();
    let dilated_window = Window::new(&[2, 2]).strides(&[1, 2]).dilations(&[2, 1], &[1, 2]).padding(&[(0, 0), (1, -1)]);
    let dilated = xi.reduce_window(&f.scalar(0i32).unwrap(), &dilated_window, |_, a, b| a.add(b)).unwrap();
    let cropped = xi
        .reduce_window(&f.scalar(i32::MIN).unwrap(), &Window::new(&[2, 1]).padding(&[(-1, 0), (0, -2)]), |_, a, b| {
            a.maximum(b)
        })
        .unwrap();
    let zero = f.scalar(0f32).unwrap();
    let sas = x.select_and_scatter(&source, &zero, &pool, ge, |_, a, b| a.add(b)).unwrap();
    let sas_overlap = x.select_and_scatter(&source2, &zero, &Window::new(&[3, 3]), ge, |_, a, b| a.add(b)).unwrap();
    // Two operands reduced together: (value, flat index) argmax pooling.
    let index = f.iota(ElementType::S32, &[24], 0).unwrap().reshape(&[4, 6]).unwrap();
    let inits = [&f.scalar(i32::MIN).unwrap(), &f.scalar(i32::MAX).unwrap()];
    let arg = f
        .reduce_window_many(&[&xi, &index], &inits, &pool, |_, acc, v| {
            let greater = v[0].compare(&acc[0], ComparisonDirection::Gt)?;
            let tie = v[0]
                .compare(&acc[0], ComparisonDirection::Eq)?
                .and(&v[1].compare(&acc[1], ComparisonDirection::Lt)?)?;
            let take = greater.or(&tie)?;
            Ok(vec![take.select(&v[0], &acc[0])?, take.select(&v[1], &acc[1])?])
        })
        .unwrap();
    let program = f.finish(&[&maxpool, &boxsum, &dilated, &cropped, &sas, &sas_overlap, &arg[0], &arg[1]]).unwrap();
    let inputs = [d.array("x"), d.array("xi"), d.array("source"), d.array("source2")];
    for (plugin, out) in run_on_both(&f, &program, &inputs) {
        assert_same_f32(plugin, "maxpool", &out[0], &d.array("maxpool_want"));
        assert_close_f32(plugin, "boxsum", &out[1], &d.array("boxsum_want"), 1e-5, 1e-5);
        assert_exact(plugin, "dilated", &out[2], &d.array("dilated_want"));
        assert_exact(plugin, "cropped", &out[3], &d.array("cropped_want"));
        assert_same_f32(plugin, "select_and_scatter", &out[4], &d.array("sas_want"));
        assert_same_f32(plugin, "select_and_scatter overlapping", &out[5], &d.array("sas_overlap_want"));
        assert_exact(plugin, "argmax pooling values", &out[6], &d.array("argmax_pool_want"));
        assert_exact(plugin, "argmax pooling indices", &out[7], &d.array("argmax_pool_index_want"));
    }
}

#[test]
fn windows_are_checked() {
    let f = Function::new("errors");
    let x = f.parameter(ElementType::F32, &[4, 6]).unwrap();
    let zero = f.scalar(0f32).unwrap();
    let msg = |r: Result<pjrt_builder::Value<'_>, pjrt_builder::BuildError>| r.unwrap_err().to_string();
    assert!(msg(x.reduce_window(&zero, &Window::new(&[2]), add)).contains("need 2 entries each"));
    assert!(msg(x.reduce_window(&zero, &Window::new(&[2, 0]), add)).contains(">= 1"));
    assert!(msg(x.reduce_window(&zero, &Window::new(&[1, 1]).padding(&[(-5, 0), (0, 0)]), add)).contains("crops more"));
    assert!(msg(x.reduce_window(&f.scalar(0i32).unwrap(), &Window::new(&[1, 1]), add)).contains("each init must be"));
    let source = f.splat(1f32, &[2, 2]).unwrap();
    let e = msg(x.select_and_scatter(&source, &zero, &Window::new(&[2, 2]).strides(&[2, 2]), ge, add));
    assert!(e.contains("the windows' output shape [2, 3]"), "{e}");
    let source = f.splat(1f32, &[2, 3]).unwrap();
    let e = msg(x.select_and_scatter(&source, &zero, &Window::new(&[2, 2]).strides(&[2, 2]), add, add));
    assert_eq!(e, "stablehlo.select_and_scatter: the region returned tensor<f32> (select), expected tensor<i1>");
    // Still usable after the errors.
    let ok = x.reduce_window(&zero, &Window::new(&[2, 2]), add).unwrap();
    assert_eq!(ok.dims(), [3, 5]);
    assert!(f.finish(&[&ok]).is_ok());
}

fn ge<'f>(_: &'f Function, a: &Value<'f>, b: &Value<'f>) -> Result<Value<'f>, BuildError> {
    a.compare(b, ComparisonDirection::Ge)
}

fn add<'f>(_: &'f Function, a: &Value<'f>, b: &Value<'f>) -> Result<Value<'f>, BuildError> {
    a.add(b)
}

#[test]
fn window_edge_cases_match_numpy() {
    let d = data("window");
    let f = Function::new("window_edges");
    let scalar = f.parameter(ElementType::F32, &[]).unwrap();
    let empty = f.parameter(ElementType::F32, &[0, 3]).unwrap();
    let x = f.parameter(ElementType::F32, &d.dims("x")).unwrap();
    let zero = f.scalar(0f32).unwrap();
    // The init must be the body's identity: XLA turns a one-element window into the element.
    let rank0 = scalar.reduce_window(&zero, &Window::new(&[]), add).unwrap();
    let none = empty.reduce_window(&zero, &Window::new(&[1, 2]), add).unwrap();
    let too_big = x.reduce_window(&zero, &Window::new(&[5, 1]), add).unwrap();
    assert_eq!(too_big.dims(), [0, 6]);
    let program = f.finish(&[&rank0, &none, &too_big]).unwrap();
    for (plugin, out) in run_on_both(&f, &program, &[d.array("scalar"), d.array("empty"), d.array("x")]) {
        assert_same_f32(plugin, "rank 0", &out[0], &d.array("scalar_want"));
        assert_same_f32(plugin, "empty input", &out[1], &d.array("empty_want"));
        assert_same_f32(plugin, "window larger than the input", &out[2], &d.array("too_big_want"));
    }
}
