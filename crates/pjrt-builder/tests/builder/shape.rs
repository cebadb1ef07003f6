//! Shape ops against numpy: broadcast_in_dim, reshape, transpose, slice, dynamic_slice,
//! dynamic_update_slice, concatenate, pad (interior and negative), reverse,
//! get_dimension_size; empty and rank-0 arrays. Integers, so every result is bit-exact.

use pjrt_builder::Function;
use pjrt_client::ElementType;

use crate::harness::{assert_exact, data, run_on_both};

#[test]
fn shape_ops_match_numpy() {
    let d = data("shape");
    let f = Function::new("shapes");
    let x = f.parameter(ElementType::S32, &d.dims("x")).unwrap();
    let v = f.parameter(ElementType::S32, &d.dims("v")).unwrap();
    let starts = f.parameter(ElementType::S32, &d.dims("ds_starts")).unwrap();
    let update = f.parameter(ElementType::S32, &d.dims("update")).unwrap();
    let fl = f.parameter(ElementType::F32, &d.dims("f")).unwrap();
    let start: Vec<_> = (0..3).map(|i| starts.slice(&[i], &[i + 1], &[1]).unwrap().reshape(&[]).unwrap()).collect();
    let start: Vec<_> = start.iter().collect();
    let five = f.scalar(5i32).unwrap();
    let outputs = [
        ("broadcast", v.broadcast_in_dim(&[2, 3, 4], &[1])),
        ("broadcast_scalar", five.broadcast_in_dim(&[2, 2], &[])),
        (
            "broadcast_ones",
            x.slice(&[0, 0, 0], &[2, 1, 4], &[1, 1, 1]).unwrap().broadcast_in_dim(&[2, 3, 4], &[0, 1, 2]),
        ),
        ("reshape", x.reshape(&[6, 4])),
        ("reshape_scalar", five.reshape(&[1, 1])),
        ("transpose", x.transpose(&[2, 0, 1])),
        ("slice", x.slice(&[0, 1, 0], &[2, 3, 4], &[1, 1, 3])),
        ("slice_empty", x.slice(&[0, 1, 0], &[2, 1, 4], &[1, 1, 1])),
        ("dynamic_slice", x.dynamic_slice(&start, &[1, 2, 2])),
        ("dynamic_update_slice", x.dynamic_update_slice(&update, &start)),
        (
            "concatenate",
            x.concatenate(
                &[
                    &x.slice(&[0, 0, 0], &[2, 1, 4], &[1, 1, 1])
                        .unwrap()
                        .multiply(&f.splat(2i32, &[2, 1, 4]).unwrap())
                        .unwrap(),
                    &x.slice(&[0, 0, 0], &[2, 0, 4], &[1, 1, 1]).unwrap(),
                ],
                1,
            ),
        ),
        ("pad", x.pad(&f.scalar(-1i32).unwrap(), &[1, 0, -1], &[0, 2, -2], &[0, 1, 2])),
        ("pad_negative", x.pad(&f.scalar(0i32).unwrap(), &[-1, -1, -1], &[0, -1, -2], &[0, 0, 0])),
        ("reverse", x.reverse(&[0, 2])),
        ("dimension_size", x.get_dimension_size(2)),
        ("f_transpose", fl.transpose(&[1, 0])),
    ];
    let values: Vec<_> = outputs.iter().map(|(n, v)| v.as_ref().unwrap_or_else(|e| panic!("{n}: {e}"))).collect();
    let program = f.finish(&values).unwrap();
    let inputs = ["x", "v", "ds_starts", "update", "f"].map(|n| d.array(n));
    for (plugin, out) in run_on_both(&f, &program, &inputs) {
        for (i, (name, _)) in outputs.iter().enumerate() {
            assert_exact(plugin, name, &out[i], &d.array(&format!("{name}_want")));
        }
    }
}

#[test]
fn shape_errors_say_what_fits() {
    let f = Function::new("errors");
    let x = f.parameter(ElementType::F32, &[2, 3]).unwrap();
    let i = f.scalar(0i32).unwrap();
    let u = f.scalar(0u32).unwrap();
    let msg = |r: Result<pjrt_builder::Value<'_>, pjrt_builder::BuildError>| r.unwrap_err().to_string();
    assert!(msg(x.broadcast_in_dim(&[3, 3], &[0, 1])).contains("must be equal or 1"));
    assert!(msg(x.broadcast_in_dim(&[2, 3], &[0])).contains("one result dimension per operand dimension"));
    assert!(msg(x.broadcast_in_dim(&[2, 3], &[1, 1])).contains("appears twice"));
    assert_eq!(
        msg(x.reshape(&[4])),
        "stablehlo.reshape: operand types tensor<2x3xf32>: reshape to tensor<4xf32> changes the number of elements; \
         it must keep it"
    );
    assert!(msg(x.transpose(&[0, 2])).contains("out of range for rank 2"));
    assert!(msg(x.slice(&[0, 2], &[2, 1], &[1, 1])).contains("start (2) <= limit (1)"));
    assert!(msg(x.slice(&[0, 0], &[2, 3], &[1, 0])).contains("stride (0) >= 1"));
    assert!(msg(x.dynamic_slice(&[&i, &u], &[1, 1])).contains("scalar integers of one type"));
    assert!(msg(x.dynamic_slice(&[&i, &i], &[1, 4])).contains("slice_sizes"));
    assert!(msg(x.concatenate(&[&f.splat(0f32, &[2, 2]).unwrap()], 0)).contains("except dimension 0"));
    assert!(msg(x.pad(&f.scalar(0f32).unwrap(), &[0, -3], &[0, -1], &[0, 0])).contains("may remove at most"));
    assert!(msg(x.pad(&i, &[0, 0], &[0, 0], &[0, 0])).contains("the padding value must be tensor<f32>"));
    assert!(msg(x.get_dimension_size(2)).contains("out of range"));
}
