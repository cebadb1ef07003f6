//! `.npy` files held as stored (`MappedNpy`, read once into memory of its own): every core
//! dtype round-trips through a device on both CPU plugins, Fortran order goes through byte
//! strides, big-endian files are converted, JAX's bfloat16 (`V2`) files load as bf16, and
//! sub-byte parameters take int8/uint8/`V1` files.

use std::path::{Path, PathBuf};

use pjrt_client::half::{bf16, f16};
use pjrt_client::{DownloadOptions, ElementType, Placement};
use pjrt_formats::npy::{Dtype, Endian, MappedNpy, NpyArray, NpyError};
use pjrt_formats::{BufferExt as _, ClientExt as _};

use crate::support;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pjrt-npy-mapped-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Six elements of `dtype` with distinct, exactly representable values, little-endian.
fn sample(dtype: Dtype) -> Vec<u8> {
    let values = [0.0f64, 1.0, -2.0, 3.5, 100.0, -0.25];
    let mut out = Vec::new();
    for (i, v) in values.iter().enumerate() {
        match dtype {
            Dtype::Bool => out.push((i % 2) as u8),
            Dtype::I8 => out.push((i as i8 - 3) as u8),
            Dtype::U8 | Dtype::V1 => out.push(i as u8 * 40),
            Dtype::I16 => out.extend((i as i16 * -1000).to_le_bytes()),
            Dtype::U16 => out.extend((i as u16 * 9000).to_le_bytes()),
            Dtype::I32 => out.extend((i as i32 * -100_000).to_le_bytes()),
            Dtype::U32 => out.extend((i as u32 * 700_000_000).to_le_bytes()),
            Dtype::I64 => out.extend((i as i64 * -(1 << 40)).to_le_bytes()),
            Dtype::U64 => out.extend((i as u64).wrapping_mul(3 << 61).to_le_bytes()),
            Dtype::F16 => out.extend(f16::from_f64(*v).to_le_bytes()),
            Dtype::V2 => out.extend(bf16::from_f64(*v).to_le_bytes()),
            Dtype::F32 => out.extend((*v as f32).to_le_bytes()),
            Dtype::F64 => out.extend(v.to_le_bytes()),
            Dtype::C64 => {
                out.extend((*v as f32).to_le_bytes());
                out.extend((-*v as f32).to_le_bytes());
            }
            Dtype::C128 => {
                out.extend(v.to_le_bytes());
                out.extend((v * 2.0).to_le_bytes());
            }
            other => panic!("no sample for {other}"),
        }
    }
    out
}

fn write(dir: &Path, name: &str, array: &NpyArray) -> PathBuf {
    let path = dir.join(name);
    array.write(&path).unwrap();
    path
}

#[test]
fn every_core_dtype_round_trips_through_a_device() {
    let dir = temp_dir("dtypes");
    for plugin in support::PLUGINS {
        let client = support::client(plugin, 1);
        for dtype in Dtype::ALL {
            let array = NpyArray::new(dtype, vec![2, 3], sample(dtype)).unwrap();
            let path = write(&dir, &format!("{dtype}.npy"), &array);
            let mapped = MappedNpy::open(&path).unwrap();
            assert_eq!((mapped.dtype(), mapped.dims()), (dtype, &[2i64, 3][..]));
            assert!(mapped.is_c_order_little_endian());
            assert_eq!(mapped.bytes(), &array.data[..], "{dtype}: the mapping holds the data as written");
            assert_eq!(mapped.to_array(), array);
            let buffer = client.upload_mapped_npy(&mapped, None, Placement::Default).unwrap();
            let back = buffer.to_npy().unwrap();
            assert_eq!(back.dims, array.dims, "{plugin} {dtype}");
            assert_eq!(back.data, array.data, "{plugin} {dtype}");
            // bf16 comes back as raw bits (`<u2`), raw bytes (`V1`, no parameter asking for a
            // sub-byte type) as `u8`, everything else as itself.
            let want = match dtype {
                Dtype::V2 => Dtype::U16,
                Dtype::V1 => Dtype::U8,
                other => other,
            };
            assert_eq!(back.dtype, want, "{plugin} {dtype}");
            if dtype == Dtype::V2 {
                assert_eq!(buffer.element_type().unwrap(), ElementType::BF16);
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A version 1.0 `.npy` file from a header dict and the data bytes.
fn npy_file(header: &str, data: &[u8]) -> Vec<u8> {
    let mut h = header.to_string();
    while (10 + h.len() + 1) % 64 != 0 {
        h.push(' ');
    }
    h.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((h.len() as u16).to_le_bytes());
    out.extend(h.as_bytes());
    out.extend(data);
    out
}

#[test]
fn fortran_order_and_big_endian_files() {
    let dir = temp_dir("layouts");
    // A 2x3 int32 array [[0, 1, 2], [3, 4, 5]] stored column-major: 0 3 1 4 2 5.
    let fortran: Vec<u8> = [0i32, 3, 1, 4, 2, 5].iter().flat_map(|v| v.to_le_bytes()).collect();
    let f_path = dir.join("fortran.npy");
    std::fs::write(&f_path, npy_file("{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }", &fortran)).unwrap();
    // The same values big-endian in C order.
    let big: Vec<u8> = (0i32..6).flat_map(|v| v.to_be_bytes()).collect();
    let b_path = dir.join("big.npy");
    std::fs::write(&b_path, npy_file("{'descr': '>i4', 'fortran_order': False, 'shape': (2, 3), }", &big)).unwrap();
    for plugin in support::PLUGINS {
        let client = support::client(plugin, 1);
        for path in [&f_path, &b_path] {
            let mapped = MappedNpy::open(path).unwrap();
            assert!(!mapped.is_c_order_little_endian());
            assert_eq!(mapped.to_array().to_vec::<i32>().unwrap(), [0, 1, 2, 3, 4, 5]);
            let buffer = client.upload_mapped_npy(&mapped, None, Placement::Default).unwrap();
            assert_eq!(buffer.to_vec::<i32>().unwrap(), [0, 1, 2, 3, 4, 5], "{plugin} {}", path.display());
        }
        assert_eq!(MappedNpy::open(&b_path).unwrap().endian(), Endian::Big);
        assert!(MappedNpy::open(&f_path).unwrap().fortran_order());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn jax_bfloat16_files_load_as_bf16() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/jax/ew_bfloat16_v2");
    let mapped = MappedNpy::open(&root.join("in0.npy")).unwrap();
    assert_eq!(mapped.dtype(), Dtype::V2);
    let client = support::client("cpu", 1);
    let buffer = client.upload_mapped_npy(&mapped, Some(ElementType::BF16), Placement::Default).unwrap();
    assert_eq!(buffer.element_type().unwrap(), ElementType::BF16);
    assert_eq!(buffer.to_npy().unwrap().data, NpyArray::read(&root.join("in0.npy")).unwrap().data);
    // A parameter of another type is refused before the upload.
    assert!(client.upload_mapped_npy(&mapped, Some(ElementType::F32), Placement::Default).is_err());
}

#[test]
fn broken_files_are_refused_on_open() {
    let dir = temp_dir("broken");
    let empty = dir.join("empty.npy");
    std::fs::write(&empty, b"").unwrap();
    assert!(matches!(MappedNpy::open(&empty).unwrap_err().without_path(), NpyError::BadMagic));
    let truncated = dir.join("truncated.npy");
    std::fs::write(
        &truncated,
        npy_file("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000,), }", &[0; 8]),
    )
    .unwrap();
    assert!(matches!(MappedNpy::open(&truncated).unwrap_err().without_path(), NpyError::SizeMismatch { .. }));
    assert!(matches!(MappedNpy::open(&dir.join("missing.npy")), Err(NpyError::Io { .. })));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn half_and_complex_elements_convert_both_ways() {
    use pjrt_client::num_complex::Complex;
    let h = [f16::from_f32(1.5), f16::from_f32(-2.0)];
    let a = NpyArray::from_elements(vec![2], &h).unwrap();
    assert_eq!((a.dtype, a.to_vec::<f16>().unwrap()), (Dtype::F16, h.to_vec()));
    let b = [bf16::from_f32(3.0), bf16::from_f32(-0.5)];
    let a = NpyArray::from_elements(vec![2], &b).unwrap();
    assert_eq!((a.dtype, a.to_vec::<bf16>().unwrap()), (Dtype::V2, b.to_vec()));
    let c = [Complex::new(1f32, -1.), Complex::new(0.5, 2.)];
    let a = NpyArray::from_elements(vec![2], &c).unwrap();
    assert_eq!((a.dtype, a.to_vec::<Complex<f32>>().unwrap()), (Dtype::C64, c.to_vec()));
    let z = [Complex::new(1f64, -1.)];
    let a = NpyArray::from_elements(vec![], &z).unwrap();
    assert_eq!((a.dtype, a.to_vec::<Complex<f64>>().unwrap()), (Dtype::C128, z.to_vec()));
    assert!(a.to_vec::<Complex<f32>>().is_err());
}

#[test]
fn sub_byte_parameters_take_widened_files() {
    let dir = temp_dir("sub-byte");
    // int4 values as int8, in Fortran order (so the upload goes through byte strides): the
    // 2x3 array [[-8, -1, 0], [1, 5, 7]] stored column-major.
    let s4 = dir.join("s4.npy");
    let column_major = [-8i8, 1, -1, 5, 0, 7].map(|v| v as u8);
    std::fs::write(&s4, npy_file("{'descr': '|i1', 'fortran_order': True, 'shape': (2, 3), }", &column_major)).unwrap();
    // ml_dtypes' int4 file: `|V1`, the values in the low bits (-1 is 0x0f).
    let v1 = dir.join("v1.npy");
    std::fs::write(&v1, npy_file("{'descr': '|V1', 'fortran_order': False, 'shape': (3,), }", &[0x08, 0x0f, 0x07]))
        .unwrap();
    // A uint8 file with 16, which no uint4 holds.
    let u4 = dir.join("u4.npy");
    NpyArray::from_elements(vec![3], &[0u8, 15, 16]).unwrap().write(&u4).unwrap();
    for plugin in support::PLUGINS {
        let client = support::client(plugin, 1);
        let mapped = MappedNpy::open(&s4).unwrap();
        let buffer = client.upload_mapped_npy(&mapped, Some(ElementType::S4), Placement::Default).unwrap();
        assert_eq!(buffer.element_type().unwrap(), ElementType::S4);
        // The plugin gives the low bits; download_npy widens them back to int8.
        assert_eq!(buffer.to_bytes(DownloadOptions::new()).unwrap(), [0x8, 0xf, 0x0, 0x1, 0x5, 0x7], "{plugin}");
        let back = buffer.to_npy().unwrap();
        assert_eq!((back.dtype, back.dims.clone()), (Dtype::I8, vec![2, 3]));
        assert_eq!(back.to_vec::<i8>().unwrap(), [-8, -1, 0, 1, 5, 7], "{plugin}");
        let buffer = client
            .upload_mapped_npy(&MappedNpy::open(&v1).unwrap(), Some(ElementType::S4), Placement::Default)
            .unwrap();
        assert_eq!(buffer.to_npy().unwrap().to_vec::<i8>().unwrap(), [-8, -1, 7], "{plugin}");
        let err = client
            .upload_mapped_npy(&MappedNpy::open(&u4).unwrap(), Some(ElementType::U4), Placement::Default)
            .unwrap_err()
            .to_string();
        assert!(err.contains("element 2") && err.contains("16") && err.contains("u4"), "{err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn mapped_files_upload_in_place_and_outlive_the_reader() {
    let values: Vec<f32> = (0..256).map(|i| i as f32 * 0.5 - 3.0).collect();
    for name in support::PLUGINS {
        let path = temp_dir(&format!("in-place-{name}")).join("w.npy");
        NpyArray::from_elements(vec![16, 16], &values).unwrap().write(&path).unwrap();
        let file = MappedNpy::open(&path).unwrap();
        let shared = file.shared_bytes();
        assert!(shared.is_aligned(), ".npy headers pad the data to 64 bytes");
        let client = support::client(name, 1);
        let buffer = client.upload_mapped_npy(&file, None, Placement::Default).unwrap();
        assert_eq!(buffer.unsafe_pointer().unwrap() as *const u8, file.bytes().as_ptr(), "{name}: in place");
        // The reader and the file go first; the buffer still reads the bytes read at open time.
        drop((file, shared));
        std::fs::remove_file(&path).unwrap();
        assert_eq!(buffer.to_vec::<f32>().unwrap(), values, "{name}");
    }
}
