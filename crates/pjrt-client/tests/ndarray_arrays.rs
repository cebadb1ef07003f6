//! Buffers from and to `ndarray` arrays (feature `ndarray`).
#![cfg(feature = "ndarray")]

mod support;

use pjrt_client::ndarray::{s, Array2, ArrayD, IxDyn};
use pjrt_client::Placement;

#[test]
fn arrays_round_trip_contiguous_strided_and_reversed() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let a = Array2::from_shape_fn((4, 6), |(i, j)| (i * 10 + j) as f32);
        let b = client.buffer_from_array(&a, Placement::Default).unwrap();
        assert_eq!(b.to_array::<f32>().unwrap(), a.clone().into_dyn(), "{name}");
        // A strided view (every other column), read through byte strides.
        let view = a.slice(s![.., ..;2]);
        let b = client.buffer_from_array(&view, Placement::Default).unwrap();
        assert_eq!(b.to_array::<f32>().unwrap(), view.to_owned().into_dyn());
        // A transposed view (column-major strides).
        let t = a.t();
        let b = client.buffer_from_array(&t, Placement::Default).unwrap();
        assert_eq!(b.to_array::<f32>().unwrap(), t.to_owned().into_dyn());
        // Negative strides are copied to standard layout first.
        let r = a.slice(s![..;-1, ..]);
        let b = client.buffer_from_array(&r, Placement::Default).unwrap();
        assert_eq!(b.to_array::<f32>().unwrap(), r.to_owned().into_dyn());
        // Rank 0 and zero-size.
        let scalar = ArrayD::from_elem(IxDyn(&[]), 3i64);
        assert_eq!(client.buffer_from_array(&scalar, Placement::Default).unwrap().to_array::<i64>().unwrap(), scalar);
        let empty = ArrayD::<f32>::zeros(IxDyn(&[0, 3]));
        assert_eq!(client.buffer_from_array(&empty, Placement::Default).unwrap().to_array::<f32>().unwrap(), empty);
        assert!(client.buffer_from_array(&a, Placement::Default).unwrap().to_array::<i32>().is_err());
    }
}

/// Uploads `a` whole, as a strided view, transposed and reversed; each comes back equal.
fn round_trip_views<T>(client: &pjrt_client::Client, a: &Array2<T>, what: &str)
where
    T: pjrt_client::NativeType + PartialEq + std::fmt::Debug,
{
    let b = client.buffer_from_array(a, Placement::Default).unwrap();
    assert_eq!(b.element_type().unwrap(), T::ELEMENT_TYPE, "{what}");
    assert_eq!(b.to_array::<T>().unwrap(), a.clone().into_dyn(), "{what} contiguous");
    let strided = a.slice(s![.., 1..;2]);
    let b = client.buffer_from_array(&strided, Placement::Default).unwrap();
    assert_eq!(b.to_array::<T>().unwrap(), strided.to_owned().into_dyn(), "{what} strided");
    let t = a.t();
    let b = client.buffer_from_array(&t, Placement::Default).unwrap();
    assert_eq!(b.to_array::<T>().unwrap(), t.to_owned().into_dyn(), "{what} transposed");
    let r = a.slice(s![..;-1, ..]);
    let b = client.buffer_from_array(&r, Placement::Default).unwrap();
    assert_eq!(b.to_array::<T>().unwrap(), r.to_owned().into_dyn(), "{what} reversed");
}

#[test]
fn half_precision_and_complex_arrays_both_ways() {
    use pjrt_client::half::{bf16, f16};
    use pjrt_client::num_complex::Complex;
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let shape = (3, 4);
        let value = |i: usize, j: usize| (i * 4 + j) as f32 - 5.5;
        round_trip_views(&client, &Array2::from_shape_fn(shape, |(i, j)| f16::from_f32(value(i, j))), "f16");
        round_trip_views(&client, &Array2::from_shape_fn(shape, |(i, j)| bf16::from_f32(value(i, j))), "bf16");
        round_trip_views(
            &client,
            &Array2::from_shape_fn(shape, |(i, j)| Complex::new(value(i, j), -value(j, i))),
            "complex64",
        );
        round_trip_views(
            &client,
            &Array2::from_shape_fn(shape, |(i, j)| Complex::new(value(i, j) as f64, 0.25 * i as f64)),
            "complex128",
        );
        round_trip_views(&client, &Array2::from_shape_fn(shape, |(i, j)| (i + j) % 2 == 0), "bool");
        round_trip_views(&client, &Array2::from_shape_fn(shape, |(i, j)| (i * 4 + j) as u8), "u8");
        // The element type decides: an f16 buffer is not a bf16 array.
        let b = client.buffer_from_array(&Array2::from_elem((1, 1), f16::ONE), Placement::Default).unwrap();
        assert!(b.to_array::<bf16>().is_err());
    }
}
