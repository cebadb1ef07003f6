//! Buffers from and to `ndarray` arrays (feature `ndarray`; `main.rs` declares this module only
//! with it: `cargo test -p pjrt-client --features ndarray --test client ndarray_arrays::`).

use pjrt_client::ndarray::{s, Array2, ArrayD, IxDyn};

use crate::support;
use pjrt_client::{HostSource, UploadOptions};

#[test]
fn arrays_round_trip_contiguous_strided_and_reversed() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let a = Array2::from_shape_fn((4, 6), |(i, j)| (i * 10 + j) as f32);
        let b = client.upload_with(&a, &UploadOptions::new()).unwrap();
        assert_eq!(b.to_host_array().unwrap().to_ndarray::<f32>().unwrap(), a.clone().into_dyn(), "{name}");
        // A strided view (every other column), read through byte strides.
        let view = a.slice(s![.., ..;2]);
        let b = client.upload_with(&view, &UploadOptions::new()).unwrap();
        assert_eq!(b.to_host_array().unwrap().to_ndarray::<f32>().unwrap(), view.to_owned().into_dyn());
        // A transposed view (column-major strides).
        let t = a.t();
        let b = client.upload_with(&t, &UploadOptions::new()).unwrap();
        assert_eq!(b.to_host_array().unwrap().to_ndarray::<f32>().unwrap(), t.to_owned().into_dyn());
        // Negative strides are copied to standard layout first.
        let r = a.slice(s![..;-1, ..]);
        let b = client.upload_with(&r, &UploadOptions::new()).unwrap();
        assert_eq!(b.to_host_array().unwrap().to_ndarray::<f32>().unwrap(), r.to_owned().into_dyn());
        // Rank 0 and zero-size.
        let scalar = ArrayD::from_elem(IxDyn(&[]), 3i64);
        assert_eq!(
            client
                .upload_with(&scalar, &UploadOptions::new())
                .unwrap()
                .to_host_array()
                .unwrap()
                .to_ndarray::<i64>()
                .unwrap(),
            scalar
        );
        let empty = ArrayD::<f32>::zeros(IxDyn(&[0, 3]));
        assert_eq!(
            client
                .upload_with(&empty, &UploadOptions::new())
                .unwrap()
                .to_host_array()
                .unwrap()
                .to_ndarray::<f32>()
                .unwrap(),
            empty
        );
        assert!(client
            .upload_with(&a, &UploadOptions::new())
            .unwrap()
            .to_host_array()
            .unwrap()
            .to_ndarray::<i32>()
            .is_err());
    }
}

/// Uploads `a` whole, as a strided view, transposed and reversed; each comes back equal.
fn round_trip_views<T>(client: &pjrt_client::Client, a: &Array2<T>, what: &str)
where
    T: pjrt_client::NativeType + PartialEq + std::fmt::Debug,
{
    let b = client.upload_with(a, &UploadOptions::new()).unwrap();
    assert_eq!(b.element_type().unwrap(), T::ELEMENT_TYPE, "{what}");
    assert_eq!(b.to_host_array().unwrap().to_ndarray::<T>().unwrap(), a.clone().into_dyn(), "{what} contiguous");
    let strided = a.slice(s![.., 1..;2]);
    let b = client.upload_with(&strided, &UploadOptions::new()).unwrap();
    assert_eq!(b.to_host_array().unwrap().to_ndarray::<T>().unwrap(), strided.to_owned().into_dyn(), "{what} strided");
    let t = a.t();
    let b = client.upload_with(&t, &UploadOptions::new()).unwrap();
    assert_eq!(b.to_host_array().unwrap().to_ndarray::<T>().unwrap(), t.to_owned().into_dyn(), "{what} transposed");
    let r = a.slice(s![..;-1, ..]);
    let b = client.upload_with(&r, &UploadOptions::new()).unwrap();
    assert_eq!(b.to_host_array().unwrap().to_ndarray::<T>().unwrap(), r.to_owned().into_dyn(), "{what} reversed");
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
        let b = client.upload_with(&Array2::from_elem((1, 1), f16::ONE), &UploadOptions::new()).unwrap();
        assert!(b.to_host_array().unwrap().to_ndarray::<bf16>().is_err());
    }
}

/// A strided view's gaps may belong to someone else (another view of the same array, borrowed
/// mutably), so the upload never forms a slice over them: only the elements are read. Here the
/// gap is a page no one may read (PROT_NONE) between the view's two elements; the upload reads
/// around it. (Forming a `&[u8]` over it is undefined behaviour whether or not it is read; this
/// shows that nothing reads the gap, while the code shows that no slice spans it.)
#[test]
fn strided_views_are_read_without_touching_their_gaps() {
    use std::ffi::c_void;
    extern "C" {
        fn mmap(addr: *mut c_void, len: usize, prot: i32, flags: i32, fd: i32, offset: i64) -> *mut c_void;
        fn mprotect(addr: *mut c_void, len: usize, prot: i32) -> i32;
        fn sysconf(name: i32) -> i64;
    }
    const PROT_NONE: i32 = 0;
    const PROT_READ_WRITE: i32 = 3;
    const MAP_PRIVATE_ANONYMOUS: i32 = 0x22;
    const SC_PAGESIZE: i32 = 30;
    // SAFETY: three fresh anonymous pages, the middle one made unreadable; never unmapped.
    let (first, page) = unsafe {
        let page = sysconf(SC_PAGESIZE) as usize;
        let map = mmap(std::ptr::null_mut(), 3 * page, PROT_READ_WRITE, MAP_PRIVATE_ANONYMOUS, -1, 0);
        assert!(map as isize != -1, "mmap failed");
        assert_eq!(mprotect((map as *mut u8).add(page).cast(), page, PROT_NONE), 0);
        let first = map as *mut i32;
        first.write(7);
        first.add(2 * page / 4).write(9);
        (first, page)
    };
    // Two i32 elements, one on the first page and one on the third.
    // SAFETY: both elements are readable for the view's life; the gap is never read here.
    let view = unsafe {
        pjrt_client::ndarray::ArrayView1::from_shape_ptr(
            pjrt_client::ndarray::ShapeBuilder::strides(2, 2 * page / 4),
            first as *const i32,
        )
    };
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let buffer = client.upload_with(&view, &UploadOptions::new()).unwrap();
        assert_eq!(buffer.to_vec::<i32>().unwrap(), [7, 9], "{name}");
    }
}

/// PRED bytes other than 0 and 1 (the plugins return what they were given) become valid
/// bools in an `ArrayD<bool>`: nonzero is true, as numpy reads them.
#[test]
fn pred_buffers_convert_to_valid_bool_arrays() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let buffer = client
            .upload_with(
                HostSource::bytes(&[2, 0, 1, 255], pjrt_client::ElementType::PRED, &[2, 2]),
                &UploadOptions::new(),
            )
            .unwrap();
        let array = buffer.to_host_array().unwrap().to_ndarray::<bool>().unwrap();
        assert_eq!(array, pjrt_client::ndarray::arr2(&[[true, false], [true, true]]).into_dyn(), "{name}");
        // SAFETY: reading the bytes behind the bools (initialised, valid bytes).
        let bytes: Vec<u8> = array.iter().map(|b| unsafe { (b as *const bool).cast::<u8>().read() }).collect();
        assert_eq!(bytes, [1, 0, 1, 1], "{name}");
    }
}

/// A PRED buffer uploaded from `[2, 0, 1, 255]` and exported keeps those bytes (the plugins
/// store PRED bytes as given): the tensor's `bool` view is refused, naming the first bad byte;
/// its `u8` view reads them. Bytes of 0 and 1 are viewed as `bool`, and only the elements a
/// strided view addresses are checked.
#[test]
fn dlpack_bool_views_refuse_bytes_other_than_0_and_1() {
    use pjrt_client::dlpack::{dtype_of, ffi};
    use pjrt_client::ndarray::{arr1, arr2};
    use pjrt_client::{AlignedHostBuffer, ElementType, Error};
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let export = |bytes: &[u8], dims: &[i64]| {
            let x =
                client.upload_with(HostSource::bytes(bytes, ElementType::PRED, dims), &UploadOptions::new()).unwrap();
            x.into_dlpack().unwrap()
        };
        let tensor = export(&[2, 0, 1, 255], &[2, 2]);
        match tensor.as_ndarray::<bool>() {
            Err(Error::InvalidBool { index: 0, byte: 2, .. }) => {}
            Err(e) => panic!("{name}: {e}"),
            Ok(view) => panic!("{name}: a bool view of {:?}", view.as_ptr()),
        }
        assert_eq!(tensor.as_ndarray::<u8>().unwrap(), arr2(&[[2u8, 0], [1, 255]]).into_dyn(), "{name}");
        let tensor = export(&[0, 1, 1, 255], &[4]);
        assert!(matches!(tensor.as_ndarray::<bool>(), Err(Error::InvalidBool { index: 3, byte: 255, .. })));
        let tensor = export(&[1, 0, 0, 1], &[2, 2]);
        assert_eq!(tensor.as_ndarray::<bool>().unwrap(), arr2(&[[true, false], [false, true]]).into_dyn());

        // A producer's tensor: every other byte, the gaps hold 7 (never read as bool).
        let host = std::sync::Arc::new(AlignedHostBuffer::from_bytes(&[1, 7, 0, 7, 1]).unwrap());
        let pred = dtype_of(ElementType::PRED).unwrap();
        let made = crate::dlpack::produce(host.clone(), 0, pred, &[3], Some(&[2]), |_| ());
        assert_eq!(made.tensor.as_ndarray::<bool>().unwrap(), arr1(&[true, false, true]).into_dyn());
        let made = crate::dlpack::produce(host, 0, pred, &[5], None, |_| ());
        assert!(matches!(made.tensor.as_ndarray::<bool>(), Err(Error::InvalidBool { index: 1, byte: 7, .. })));
        // u8 views of other 8-bit types stay refused.
        let s8 = crate::dlpack::produce(
            std::sync::Arc::new(AlignedHostBuffer::from_bytes(&[1]).unwrap()),
            0,
            ffi::DLDataType { code: ffi::code::INT, bits: 8, lanes: 1 },
            &[1],
            None,
            |_| (),
        );
        assert!(s8.tensor.as_ndarray::<u8>().is_err());
    }
}
