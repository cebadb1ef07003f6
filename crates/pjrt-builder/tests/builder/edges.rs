//! Empty and rank-0 arrays through every op family: each program compiles and runs on both
//! plugins with the shapes the builder inferred; rank-0 values are checked too (exactly:
//! small integers and values every float op gives exactly).

use pjrt_builder::{ConvDimensions, Convolution, DotDimensions, Function};
use pjrt_client::{ElementType, HostArray};

use crate::harness::run_on_both;

#[test]
fn empty_arrays_flow_through_every_family() {
    let f = Function::new("empty");
    let e = f.parameter(ElementType::F32, &[0, 3]).unwrap();
    let full = f.parameter(ElementType::F32, &[2, 3]).unwrap();
    let zero = f.scalar(0f32).unwrap();
    let i = f.scalar(0i32).unwrap();
    let outputs = [
        e.exp().unwrap(),
        e.add(&e).unwrap(),
        e.compare(&e, pjrt_builder::ComparisonDirection::Lt).unwrap(),
        e.convert(ElementType::S8).unwrap(),
        e.reduce(&zero, &[0], |_, a, b| a.add(b)).unwrap(),
        e.reduce(&zero, &[1], |_, a, b| a.add(b)).unwrap(),
        e.transpose(&[1, 0]).unwrap(),
        e.reverse(&[0, 1]).unwrap(),
        e.slice(&[0, 1], &[0, 3], &[1, 2]).unwrap(),
        e.pad(&zero, &[1, 0], &[0, -1], &[2, 1]).unwrap(),
        e.concatenate(&[&full], 0).unwrap(),
        e.dot_general(&full.transpose(&[1, 0]).unwrap(), &DotDimensions::matmul(), None).unwrap(),
        e.transpose(&[1, 0]).unwrap().dot_general(&e, &DotDimensions::matmul(), None).unwrap(),
        e.reshape(&[3, 0, 1]).unwrap(),
        e.broadcast_in_dim(&[2, 0, 3], &[1, 2]).unwrap(),
        full.dynamic_slice(&[&i, &i], &[0, 2]).unwrap(),
        full.dynamic_update_slice(&e, &[&i, &i]).unwrap(),
        f.iota(ElementType::S32, &[0, 3], 1).unwrap(),
        e.reshape(&[0, 3, 1, 1])
            .unwrap()
            .convolution(
                &f.splat(1f32, &[1, 1, 1, 2]).unwrap(),
                &Convolution::new(ConvDimensions::channels_last(2)).padding(&[(0, 0), (0, 0)]),
            )
            .unwrap(),
        e.get_dimension_size(0).unwrap(),
    ];
    let refs: Vec<_> = outputs.iter().collect();
    let program = f.finish(&refs).unwrap();
    let inputs = [
        HostArray::new(ElementType::F32, vec![0, 3], vec![]).unwrap(),
        HostArray::from_elements(vec![2, 3], &[1f32, 2., 3., 4., 5., 6.]).unwrap(),
    ];
    for (plugin, out) in run_on_both(&f, &program, &inputs) {
        for (k, (got, built)) in out.iter().zip(&outputs).enumerate() {
            assert_eq!(got.dims(), built.dims(), "{plugin}: output {k}: the plugin's shape is the builder's");
            assert_eq!(Some(got.element_type()), built.element_type(), "{plugin}: output {k}");
        }
        // Sums over an empty dimension are the init; the rest are checked by shape above.
        assert_eq!(out[5].to_vec::<f32>().unwrap(), Vec::<f32>::new(), "{plugin}");
        assert_eq!(out[4].to_vec::<f32>().unwrap(), [0f32; 3], "{plugin}");
        assert_eq!(out[9].dims(), [1, 4], "{plugin}: no interior padding between no rows; 3 columns + 2 - 1");
        assert_eq!(out[10].to_vec::<f32>().unwrap(), [1f32, 2., 3., 4., 5., 6.], "{plugin}");
        assert_eq!(out[12].to_vec::<f32>().unwrap(), [0f32; 9], "{plugin}: contracting an empty dimension");
        assert_eq!(out[16].to_vec::<f32>().unwrap(), [1f32, 2., 3., 4., 5., 6.], "{plugin}");
        assert_eq!(out[19].to_vec::<i32>().unwrap(), [0], "{plugin}");
    }
}

#[test]
fn rank_zero_values_flow_through_every_family() {
    let f = Function::new("scalars");
    let x = f.parameter(ElementType::F32, &[]).unwrap();
    let n = f.parameter(ElementType::S32, &[]).unwrap();
    let two = f.scalar(2f32).unwrap();
    let outputs = [
        x.multiply(&two).unwrap(),                                                // 3
        x.sqrt().unwrap().multiply(&x.sqrt().unwrap()).unwrap().floor().unwrap(), // 1
        n.shift_left(&f.scalar(3i32).unwrap()).unwrap(),                          // 56
        x.reshape(&[1, 1]).unwrap(),
        x.broadcast_in_dim(&[2, 2], &[]).unwrap(),
        x.transpose(&[]).unwrap(),
        x.reverse(&[]).unwrap(),
        x.slice(&[], &[], &[]).unwrap(),
        x.pad(&two, &[], &[], &[]).unwrap(),
        x.reduce(&f.scalar(0f32).unwrap(), &[], |_, a, b| a.add(b)).unwrap(),
        x.dot_general(&two, &DotDimensions::default(), None).unwrap(), // 3
        x.dynamic_slice(&[], &[]).unwrap(),
        x.dynamic_update_slice(&two, &[]).unwrap(), // 2
        x.compare(&two, pjrt_builder::ComparisonDirection::Lt).unwrap().select(&x, &two).unwrap(), // 1.5
        n.convert(ElementType::F64).unwrap(),
    ];
    let refs: Vec<_> = outputs.iter().collect();
    let program = f.finish(&refs).unwrap();
    let inputs =
        [HostArray::from_elements(vec![], &[1.5f32]).unwrap(), HostArray::from_elements(vec![], &[7i32]).unwrap()];
    for (plugin, out) in run_on_both(&f, &program, &inputs) {
        for (k, (got, built)) in out.iter().zip(&outputs).enumerate() {
            assert_eq!(got.dims(), built.dims(), "{plugin}: output {k}");
        }
        let f32s = |k: usize| out[k].to_vec::<f32>().unwrap();
        assert_eq!(f32s(0), [3.0], "{plugin}");
        assert_eq!(f32s(1), [1.0], "{plugin}");
        assert_eq!(out[2].to_vec::<i32>().unwrap(), [56], "{plugin}");
        assert_eq!(f32s(3), [1.5], "{plugin}");
        assert_eq!(f32s(4), [1.5; 4], "{plugin}");
        for k in [5, 6, 7, 8, 11, 13] {
            assert_eq!(f32s(k), [1.5], "{plugin}: output {k}");
        }
        // Reducing over no dimensions, from the identity: the operand (StableHLO leaves how often
        // a non-identity init is combined to the implementation).
        assert_eq!(f32s(9), [1.5], "{plugin}");
        assert_eq!(f32s(10), [3.0], "{plugin}");
        assert_eq!(f32s(12), [2.0], "{plugin}");
        assert_eq!(out[14].to_vec::<f64>().unwrap(), [7.0], "{plugin}");
    }
}
