//! Unit tests of the reader, the writer and the packing.

use super::*;
use crate::npy::Dtype;

fn file(header: &str, data: &[u8]) -> Vec<u8> {
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

#[test]
fn every_tensor_starts_aligned_to_its_element_size() {
    let odd = [7u8; 3];
    let f4 = [0x21u8];
    let (h, f, d, c) = ([0u8; 2], [0u8; 4 * 3], [0u8; 8], [0u8; 16]);
    let tensors = [
        ("odd", TensorView::new(ElementType::U8, &[3], &odd).unwrap()),
        ("f4", TensorView::new(ElementType::F4E2M1FN, &[2], &f4).unwrap()),
        ("half", TensorView::new(ElementType::F16, &[1], &h).unwrap()),
        ("f32", TensorView::new(ElementType::F32, &[3], &f).unwrap()),
        ("f64", TensorView::new(ElementType::F64, &[1], &d).unwrap()),
        ("s64", TensorView::new(ElementType::S64, &[2], &c).unwrap()),
    ];
    let bytes = to_bytes(&tensors, &[]).unwrap();
    let data_start = 8 + u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    assert_eq!(data_start % DATA_ALIGNMENT, 0);
    let st = SafeTensors::from_bytes(bytes.clone()).unwrap();
    assert_eq!(st.names().collect::<Vec<_>>(), ["f64", "s64", "f32", "half", "odd", "f4"]);
    for (name, view) in st.tensors() {
        let offset = view.bytes().as_ptr() as usize - st.storage.bytes().as_ptr() as usize - data_start;
        let size = view.dtype().bits().unwrap().div_ceil(8);
        assert_eq!(offset % size, 0, "{name} at {offset}");
    }
    // The bytes are the ones given, each under its own name.
    assert_eq!(st.tensor("odd").unwrap().bytes(), odd);
    assert_eq!(st.tensor("f4").unwrap().bytes(), f4);
}

#[test]
fn round_trip_in_memory() {
    let a: Vec<u8> = [1f32, 2., 3., 4., 5., 6.].iter().flat_map(|v| v.to_le_bytes()).collect();
    let b = [1u8, 0, 1];
    let tensors = [
        ("a", TensorView::new(ElementType::F32, &[2, 3], &a).unwrap()),
        ("b\"odd name", TensorView::new(ElementType::PRED, &[3], &b).unwrap()),
        ("empty", TensorView::new(ElementType::S64, &[0, 4], &[]).unwrap()),
    ];
    let bytes = to_bytes(&tensors, &[("format", "np")]).unwrap();
    assert_eq!((8 + u64::from_le_bytes(bytes[..8].try_into().unwrap())) % 64, 0);
    let st = SafeTensors::from_bytes(bytes).unwrap();
    // Widest first: the (empty) s64, the f32, then the bool.
    assert_eq!(st.names().collect::<Vec<_>>(), ["empty", "a", "b\"odd name"]);
    assert_eq!(st.tensor("a").unwrap().to_vec::<f32>().unwrap(), [1., 2., 3., 4., 5., 6.]);
    assert_eq!(st.tensor("b\"odd name").unwrap().to_vec::<bool>().unwrap(), [true, false, true]);
    assert_eq!(st.tensor("empty").unwrap().dims(), [0, 4]);
    assert_eq!(st.metadata().get("format").map(String::as_str), Some("np"));
    assert_eq!(st.data_bytes(), 27);
    match st.tensor("c") {
        Err(e @ SafetensorsError::NotFound { .. }) => {
            assert!(e.to_string().contains("'empty', 'a', 'b\"odd name'"), "{e}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn writer_rejects_bad_input() {
    let v = TensorView::new(ElementType::U8, &[1], &[7]).unwrap();
    assert!(matches!(to_bytes(&[("x", v), ("x", v)], &[]), Err(SafetensorsError::DuplicateName(_))));
    assert!(to_bytes(&[("__metadata__", v)], &[]).is_err());
    assert!(to_bytes(&[("x", v)], &[("k", "1"), ("k", "2")]).is_err());
    assert!(matches!(
        TensorView::new(ElementType::C128, &[1], &[0; 16]),
        Err(SafetensorsError::UnsupportedElementType { .. })
    ));
    assert!(matches!(TensorView::new(ElementType::F32, &[2], &[0; 7]), Err(SafetensorsError::SizeMismatch { .. })));
    assert!(matches!(
        TensorView::new(ElementType::F32, &[i64::MAX, 2], &[]),
        Err(SafetensorsError::ShapeOverflow { .. })
    ));
    match TensorView::new(ElementType::U8, &[3, -1, -2], &[]) {
        Err(e @ SafetensorsError::NegativeDimension { axis: 1, .. }) => {
            assert!(e.to_string().contains("shape [3, -1, -2], whose dimension at axis 1 is negative"), "{e}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn dimensions_above_i64_max_are_refused() {
    // i64::MAX itself is a dimension (too large for memory here); one more is not.
    let h = r#"{"w":{"dtype":"U8","shape":[9223372036854775807, 2],"data_offsets":[0,0]}}"#;
    assert!(matches!(SafeTensors::from_bytes(file(h, &[])), Err(SafetensorsError::ShapeOverflow { .. })));
    for big in ["9223372036854775808", "18446744073709551615"] {
        let h = format!(r#"{{"w":{{"dtype":"U8","shape":[0, {big}],"data_offsets":[0,0]}}}}"#);
        match SafeTensors::from_bytes(file(&h, &[])) {
            Err(e @ SafetensorsError::DimensionTooLarge { axis: 1, .. }) => {
                assert!(e.to_string().contains(&format!("tensor 'w' has shape dimension {big} at axis 1")), "{e}")
            }
            other => panic!("{big}: {other:?}"),
        }
    }
}

#[test]
fn duplicate_names_are_found() {
    let h =
        r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}"#;
    match SafeTensors::from_bytes(file(h, &[1, 2])) {
        Err(SafetensorsError::DuplicateName(name)) => assert_eq!(name, "a"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn dtype_names_round_trip() {
    for (name, t) in DTYPES {
        assert_eq!(element_type_of(name), Some(*t));
        assert_eq!(dtype_name(*t), Some(*name));
    }
    assert_eq!(element_type_of("F4"), Some(ElementType::F4E2M1FN));
    assert_eq!(dtype_name(ElementType::F4E2M1FN), Some("F4"));
    for unsupported in ["F6_E2M3", "F6_E3M2", "I4", "U4"] {
        assert_eq!(element_type_of(unsupported), None, "{unsupported}");
    }
    assert_eq!(dtype_name(ElementType::S4), None);
}

#[test]
fn sub_byte_packing_round_trips() {
    use ElementType as T;
    // F4: low nibble first; an odd count pads the high nibble of the last byte with zero.
    assert_eq!(pack_sub_byte(T::F4E2M1FN, &[0x1, 0x2, 0x3, 0x4, 0xf]).unwrap(), [0x21, 0x43, 0x0f]);
    assert_eq!(unpack_sub_byte(T::F4E2M1FN, &[0x21, 0x43, 0x0f], 5).unwrap(), [1, 2, 3, 4, 15]);
    assert_eq!(unpack_sub_byte(T::F4E2M1FN, &[0x21, 0x43, 0x0f], 6).unwrap(), [1, 2, 3, 4, 15, 0]);
    // Signed values may come sign-extended; they are packed as their low bits.
    assert_eq!(pack_sub_byte(T::S4, &[0xff, 0x08, 0x07]).unwrap(), [0x8f, 0x07]);
    // 2- and 1-bit types: least significant bits first.
    assert_eq!(pack_sub_byte(T::U2, &[1, 2, 3, 0, 3]).unwrap(), [0b00_11_10_01, 0b11]);
    assert_eq!(pack_sub_byte(T::U1, &[1, 0, 1, 1, 0, 0, 0, 1, 1]).unwrap(), [0b1000_1101, 1]);
    // 6-bit values straddle bytes.
    let f6 = [0x3f, 0x01, 0x20, 0x15, 0x2a];
    let packed = pack_sub_byte(T::F6E2M3FN, &f6).unwrap();
    assert_eq!(packed.len(), 4);
    assert_eq!(packed[0], 0x3f | (0x01 << 6));
    assert_eq!(unpack_sub_byte(T::F6E2M3FN, &packed, 5).unwrap(), f6);
    // Every odd and even count of every sub-byte type round trips.
    let mut seed = 7u32;
    for t in ElementType::ALL.iter().copied().filter(|t| t.is_sub_byte()) {
        let bits = t.bits().unwrap();
        for count in 0..20usize {
            let values: Vec<u8> = (0..count)
                .map(|_| {
                    seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                    ((seed >> 16) as u8) & ((1u16 << bits) - 1) as u8
                })
                .collect();
            let packed = pack_sub_byte(t, &values).unwrap();
            assert_eq!(packed.len(), (count * bits).div_ceil(8), "{t} x{count}");
            assert_eq!(unpack_sub_byte(t, &packed, count).unwrap(), values, "{t} x{count}");
        }
    }
    // Values that are not of the type, and sizes that do not match, are errors.
    assert!(pack_sub_byte(T::U4, &[16]).is_err());
    assert!(pack_sub_byte(T::S2, &[0xfd]).is_err());
    assert!(unpack_sub_byte(T::F4E2M1FN, &[0, 0], 5).is_err());
    assert!(unpack_sub_byte(T::F4E2M1FN, &[0], 3).is_err());
    // Whole-byte types pass through.
    assert_eq!(pack_sub_byte(T::U8, &[200, 1]).unwrap(), [200, 1]);
    assert_eq!(unpack_sub_byte(T::S8, &[200, 1], 2).unwrap(), [200, 1]);
}

#[test]
fn f4_tensors_round_trip_packed() {
    let codes = [2u8, 7, 9, 15, 0, 1]; // 1.0, 6.0, -0.5, -6.0, 0, 0.5
    let packed = pack_sub_byte(ElementType::F4E2M1FN, &codes).unwrap();
    assert_eq!(packed, [0x72, 0xf9, 0x10]);
    let view = TensorView::new(ElementType::F4E2M1FN, &[2, 3], &packed).unwrap();
    let bytes = to_bytes(&[("w", view)], &[]).unwrap();
    let header_len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header = std::str::from_utf8(&bytes[8..8 + header_len]).unwrap();
    assert!(header.contains(r#""w":{"dtype":"F4","shape":[2, 3],"data_offsets":[0,3]}"#), "{header}");
    assert_eq!(&bytes[8 + header_len..], packed);
    let file = SafeTensors::from_bytes(bytes).unwrap();
    let back = file.tensor("w").unwrap();
    assert_eq!((back.dtype(), back.dims(), back.bytes()), (ElementType::F4E2M1FN, &[2i64, 3][..], &packed[..]));
    assert_eq!(&*back.host_bytes().unwrap(), codes);
    let array = back.to_npy().unwrap();
    assert_eq!((array.dtype, array.dims.clone(), array.data.clone()), (Dtype::U8, vec![2, 3], codes.to_vec()));
    // Other tensors keep borrowing the file's bytes.
    let u8s = [1u8, 2];
    let plain = TensorView::new(ElementType::U8, &[2], &u8s).unwrap();
    assert!(matches!(plain.host_bytes().unwrap(), std::borrow::Cow::Borrowed(_)));
}

#[test]
fn f4_tensors_must_fill_whole_bytes() {
    // An odd element count leaves half a byte: the format (and its reference reader)
    // refuses that, in files and in the writer.
    let h = r#"{"w":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}}"#;
    match SafeTensors::from_bytes(file(h, &[0x21, 0x03])) {
        Err(e @ SafetensorsError::Misaligned { .. }) => {
            assert!(e.to_string().contains("3 f4e2m1fn elements"), "{e}")
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        TensorView::new(ElementType::F4E2M1FN, &[3], &[0x21, 0x03]),
        Err(SafetensorsError::Misaligned { .. })
    ));
    // A size that is not the packed size is a mismatch.
    let h = r#"{"w":{"dtype":"F4","shape":[4],"data_offsets":[0,4]}}"#;
    assert!(matches!(SafeTensors::from_bytes(file(h, &[0; 4])), Err(SafetensorsError::SizeMismatch { .. })));
    assert!(matches!(
        TensorView::new(ElementType::F4E2M1FN, &[4], &[0; 4]),
        Err(SafetensorsError::SizeMismatch { .. })
    ));
}
