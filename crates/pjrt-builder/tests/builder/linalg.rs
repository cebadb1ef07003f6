//! dot_general (batched, two contracting dimensions, outer product, integers) and convolution
//! (strides, padding with a negative side, input and kernel dilation, window reversal, feature
//! groups) against numpy, batch groups against JAX. f32 sums of a few dozen products: 1e-5 relative, 1e-5 absolute near zero (numpy sums
//! in f64, the plugin in f32 in its own order).

use pjrt_builder::{ConvDimensions, Convolution, DotDimensions, Function, Precision};
use pjrt_client::ElementType;

use crate::harness::{assert_close_f32, assert_exact, data, run_on_both};

#[test]
fn dot_general_and_convolution_match_numpy() {
    let d = data("linalg");
    let f = Function::new("linalg");
    let names = ["a", "b", "m", "ia", "img", "kernel", "kernel1", "kernel_bg"];
    let p: Vec<_> = names
        .iter()
        .map(|n| {
            let a = d.array(n);
            f.parameter(a.element_type(), a.dims()).unwrap()
        })
        .collect();
    let (a, b, m, ia, img, kernel, kernel1, kernel_bg) = (&p[0], &p[1], &p[2], &p[3], &p[4], &p[5], &p[6], &p[7]);
    let double = DotDimensions { lhs_contracting: vec![1, 2], rhs_contracting: vec![0, 1], ..Default::default() };
    let row = |i: i64| m.slice(&[i, 0], &[i + 1, 4], &[1, 1]).unwrap().reshape(&[4]).unwrap();
    let conv = Convolution::new(ConvDimensions::channels_last(2))
        .strides(&[2, 1])
        .padding(&[(1, 1), (0, -1)])
        .dilation(&[], &[1, 2])
        .groups(2, 1)
        .precision(Precision::Highest, Precision::Highest);
    let conv1 = Convolution::new(ConvDimensions::channels_last(2)).padding(&[(0, 0), (1, 0)]).dilation(&[2, 1], &[]);
    let outputs = [
        ("batched", a.dot_general(b, &DotDimensions::batched_matmul(), Some((Precision::Highest, Precision::Highest)))),
        ("double_contract", a.dot_general(m, &double, None)),
        ("outer", row(0).dot_general(&row(1), &DotDimensions::default(), None)),
        ("int", ia.dot_general(&ia.transpose(&[1, 0]).unwrap(), &DotDimensions::matmul(), None)),
        ("conv", img.convolution(kernel, &conv)),
        ("conv_dilated", img.convolution(kernel1, &conv1)),
        (
            "conv_reversed",
            img.convolution(kernel1, &Convolution::new(ConvDimensions::channels_last(2)).reversal(&[true, false])),
        ),
        (
            "conv_batch_groups",
            img.convolution(
                kernel_bg,
                &Convolution::new(ConvDimensions::channels_last(2))
                    .strides(&[1, 2])
                    .padding(&[(1, 0), (0, 0)])
                    .groups(1, 2),
            ),
        ),
    ];
    let values: Vec<_> = outputs.iter().map(|(n, v)| v.as_ref().unwrap_or_else(|e| panic!("{n}: {e}"))).collect();
    let program = f.finish(&values).unwrap();
    let inputs = names.map(|n| d.array(n));
    for (plugin, out) in run_on_both(&f, &program, &inputs) {
        for (i, (name, _)) in outputs.iter().enumerate() {
            let want = d.array(&format!("{name}_want"));
            if want.element_type() == ElementType::F32 {
                assert_close_f32(plugin, name, &out[i], &want, 1e-5, 1e-5);
            } else {
                assert_exact(plugin, name, &out[i], &want);
            }
        }
    }
}

#[test]
fn linalg_errors_say_what_fits() {
    let f = Function::new("errors");
    let a = f.parameter(ElementType::F32, &[2, 3]).unwrap();
    let b = f.parameter(ElementType::F32, &[2, 3]).unwrap();
    let i = f.parameter(ElementType::S32, &[3, 2]).unwrap();
    let msg = |r: Result<pjrt_builder::Value<'_>, pjrt_builder::BuildError>| r.unwrap_err().to_string();
    assert!(msg(a.dot_general(&b, &DotDimensions::matmul(), None))
        .contains("contracting dimensions lhs 1 (size 3) and rhs 0 (size 2) must have the same size"));
    assert!(msg(a.dot_general(&i, &DotDimensions::matmul(), None)).contains("one element type"));
    let unpaired = DotDimensions { lhs_contracting: vec![1], ..Default::default() };
    assert!(msg(a.dot_general(&b, &unpaired, None)).contains("must pair up"));
    let img = f.parameter(ElementType::F32, &[1, 4, 4, 3]).unwrap();
    let k = f.parameter(ElementType::F32, &[2, 2, 2, 4]).unwrap();
    let conv = Convolution::new(ConvDimensions::channels_last(2));
    assert!(msg(img.convolution(&k, &conv)).contains("input features (3) / feature groups"));
    let k5 = f.parameter(ElementType::F32, &[5, 1, 3, 1]).unwrap();
    assert!(msg(img.convolution(&k5, &conv)).contains("smaller than the dilated window"));
    assert!(msg(img.convolution(&k, &conv.clone().strides(&[1]))).contains("need 2 entries"));
    let k0 = f.parameter(ElementType::F32, &[0, 2, 3, 4]).unwrap();
    assert!(msg(img.convolution(&k0, &conv)).contains("kernel's spatial dimension 0 is empty"));
}
