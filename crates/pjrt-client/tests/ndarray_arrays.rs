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
