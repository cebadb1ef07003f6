use std::error::Error as _;

use super::array::fortran_to_c;
use super::dtype::counts;
use super::header::MAGIC;
use super::*;

/// `np.save` of `np.arange(6, dtype=np.float32).reshape(2, 3)` (NumPy 2.4).
const NP_F32_2X3: &[u8] = b"\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }                                                          \x0a\x00\x00\x00\x00\x00\x00\x80?\x00\x00\x00@\x00\x00@@\x00\x00\x80@\x00\x00\xa0@";
/// `np.save` of `np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3))`.
const NP_I32_FORTRAN_2X3: &[u8] = b"\x93NUMPY\x01\x00v\x00{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }                                                           \x0a\x00\x00\x00\x00\x03\x00\x00\x00\x01\x00\x00\x00\x04\x00\x00\x00\x02\x00\x00\x00\x05\x00\x00\x00";
/// `np.save` of `np.array([1+2j, -3.5-0.25j], dtype='>c8')`.
const NP_C64_BIG: &[u8] = b"\x93NUMPY\x01\x00v\x00{'descr': '>c8', 'fortran_order': False, 'shape': (2,), }                                                            \x0a?\x80\x00\x00@\x00\x00\x00\xc0`\x00\x00\xbe\x80\x00\x00";
/// `np.save` of `np.array([1, -2, 3], dtype='>i2')`.
const NP_I16_BIG: &[u8] = b"\x93NUMPY\x01\x00v\x00{'descr': '>i2', 'fortran_order': False, 'shape': (3,), }                                                            \x0a\x00\x01\xff\xfe\x00\x03";

/// Builds a version 1.0 file around an arbitrary header text.
fn file_v1(header: &str, data: &[u8]) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

fn file_v2(major: u8, header: &str, data: &[u8]) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&[major, 0]);
    out.extend_from_slice(&(header.len() as u32).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

fn header_err(bytes: &[u8]) -> String {
    match NpyArray::from_bytes(bytes) {
        Err(NpyError::BadHeader(msg)) => msg,
        other => panic!("expected BadHeader, got {other:?}"),
    }
}

/// Deterministic pseudo-random bytes.
fn bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

#[test]
fn writes_exactly_what_numpy_writes() {
    let values: Vec<f32> = (0..6).map(|i| i as f32).collect();
    let a = NpyArray::from_elements(vec![2, 3], &values).unwrap();
    assert_eq!(a.to_bytes(), NP_F32_2X3);
    assert_eq!(a.header_bytes().len(), 128, "the data starts at 128");
    assert_eq!(NpyArray::from_bytes(NP_F32_2X3).unwrap(), a);
}

#[test]
fn header_layout() {
    for (shape, dict) in [
        (vec![], "{'descr': '<f8', 'fortran_order': False, 'shape': (), }"),
        (vec![5], "{'descr': '<f8', 'fortran_order': False, 'shape': (5,), }"),
        (vec![0, 3, 7], "{'descr': '<f8', 'fortran_order': False, 'shape': (0, 3, 7), }"),
    ] {
        let n = shape.iter().product::<i64>() as usize;
        let a = NpyArray::new(Dtype::F64, shape.clone(), vec![0; n * 8]).unwrap();
        let h = a.header_bytes();
        assert_eq!(&h[..8], b"\x93NUMPY\x01\x00");
        let hlen = u16::from_le_bytes([h[8], h[9]]) as usize;
        assert_eq!(h.len(), 10 + hlen);
        assert_eq!(h.len() % 64, 0);
        assert_eq!(*h.last().unwrap(), b'\n');
        let text = std::str::from_utf8(&h[10..]).unwrap();
        assert!(text.starts_with(dict), "{text:?}");
        assert!(text[dict.len()..text.len() - 1].bytes().all(|b| b == b' '));
        // Spare room for the first axis to grow, as NumPy leaves it.
        let spare = if shape.is_empty() { 0 } else { 20 };
        assert!(text.len() - 1 - dict.len() >= spare);
    }
}

#[test]
fn round_trip_every_dtype_and_rank() {
    let shapes: [&[i64]; 8] = [&[], &[1], &[5], &[0], &[2, 3], &[0, 3], &[2, 3, 4], &[3, 0, 2]];
    for (i, dtype) in Dtype::ALL.into_iter().enumerate() {
        for (j, shape) in shapes.iter().enumerate() {
            let n = shape.iter().product::<i64>() as usize;
            let data = bytes(n * dtype.size(), (i * 100 + j) as u64);
            let a = NpyArray::new(dtype, shape.to_vec(), data).unwrap();
            let file = a.to_bytes();
            assert_eq!(file.len() - a.data.len(), a.header_bytes().len());
            assert_eq!(a.header_bytes().len() % 64, 0);
            let b = NpyArray::from_bytes(&file).unwrap();
            assert_eq!(a, b, "{dtype:?} {shape:?}");
            assert_eq!(b.element_count(), n);
        }
    }
}

#[test]
fn file_round_trip_and_path_in_errors() {
    let dir = std::env::temp_dir().join(format!("npy-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("a.npy");
    let a = NpyArray::from_elements(vec![2, 2], &[1i64, -2, 3, i64::MIN]).unwrap();
    a.write(&path).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), a.to_bytes());
    assert_eq!(NpyArray::read(&path).unwrap(), a);

    let missing = dir.join("missing.npy");
    let err = NpyArray::read(&missing).unwrap_err();
    assert!(matches!(err, NpyError::Io { .. }));
    assert!(err.to_string().contains("missing.npy"), "{err}");
    assert!(err.source().is_some());

    let bad = dir.join("bad.npy");
    std::fs::write(&bad, b"hello world").unwrap();
    let err = NpyArray::read(&bad).unwrap_err();
    assert!(err.to_string().contains("bad.npy"), "{err}");
    assert!(matches!(err.without_path(), NpyError::BadMagic));

    let inconsistent = NpyArray { dtype: Dtype::F32, dims: vec![3], data: vec![0; 11] };
    assert!(matches!(inconsistent.write(&dir.join("c.npy")), Err(NpyError::SizeMismatch { expected: 12, actual: 11 })));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn reads_fortran_order() {
    let a = NpyArray::from_bytes(NP_I32_FORTRAN_2X3).unwrap();
    assert_eq!(a.dims, vec![2, 3]);
    assert_eq!(a.to_vec::<i32>().unwrap(), vec![0, 1, 2, 3, 4, 5]);

    // np.asfortranarray(np.arange(24, dtype=np.uint8).reshape(2, 3, 4)) data section.
    let f: &[u8] = b"\x00\x0c\x04\x10\x08\x14\x01\r\x05\x11\t\x15\x02\x0e\x06\x12\n\x16\x03\x0f\x07\x13\x0b\x17";
    let file = file_v1("{'descr': '|u1', 'fortran_order': True, 'shape': (2, 3, 4), }\n", f);
    let a = NpyArray::from_bytes(&file).unwrap();
    assert_eq!(a.data, (0..24).collect::<Vec<u8>>());

    // Rank 1 and zero-size Fortran arrays are unchanged.
    let file = file_v1("{'descr': '<u2', 'fortran_order': True, 'shape': (2,)}", b"\x01\x00\x02\x00");
    assert_eq!(NpyArray::from_bytes(&file).unwrap().to_vec::<u16>().unwrap(), vec![1, 2]);
    let file = file_v1("{'descr': '<u2', 'fortran_order': True, 'shape': (0, 4)}", b"");
    assert_eq!(NpyArray::from_bytes(&file).unwrap().dims, vec![0, 4]);
}

#[test]
fn fortran_transpose_general() {
    // Element (i, j, k, l) of a 2x3x4x5 array stored in Fortran order.
    let shape = [2i64, 3, 4, 5];
    let mut f = vec![0u32; 120];
    for i in 0..2 {
        for j in 0..3 {
            for k in 0..4 {
                for l in 0..5 {
                    let c = ((i * 3 + j) * 4 + k) * 5 + l;
                    let fo = i + 2 * (j + 3 * (k + 4 * l));
                    f[fo] = c as u32;
                }
            }
        }
    }
    let data: Vec<u8> = f.iter().flat_map(|v| v.to_le_bytes()).collect();
    let out = fortran_to_c(&data, &counts(&shape), 4);
    let a = NpyArray::new(Dtype::U32, shape.to_vec(), out).unwrap();
    assert_eq!(a.to_vec::<u32>().unwrap(), (0..120).collect::<Vec<u32>>());
}

#[test]
fn reads_big_endian() {
    let a = NpyArray::from_bytes(NP_I16_BIG).unwrap();
    assert_eq!(a.dtype, Dtype::I16);
    assert_eq!(a.to_vec::<i16>().unwrap(), vec![1, -2, 3]);

    let a = NpyArray::from_bytes(NP_C64_BIG).unwrap();
    assert_eq!(a.dtype, Dtype::C64);
    let parts: Vec<f32> = a.data.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(parts, vec![1.0, 2.0, -3.5, -0.25]);

    // Big-endian and Fortran order together; written back little-endian C order.
    let mut data = Vec::new();
    for v in [0.5f64, 3.0, 1.0, 4.0, 2.0, 5.0] {
        data.extend_from_slice(&v.to_be_bytes());
    }
    let file = file_v1("{'descr': '>f8', 'fortran_order': True, 'shape': (2, 3), }", &data);
    let a = NpyArray::from_bytes(&file).unwrap();
    assert_eq!(a.to_vec::<f64>().unwrap(), vec![0.5, 1.0, 2.0, 3.0, 4.0, 5.0]);
    assert!(String::from_utf8_lossy(&a.to_bytes()).contains("'<f8'"));

    // One-byte types and V2 are never swapped.
    let file = file_v1("{'descr': '>V2', 'fortran_order': False, 'shape': (1,), }", b"\x01\x02");
    assert_eq!(NpyArray::from_bytes(&file).unwrap().data, vec![1, 2]);
}

#[test]
fn descr_parsing() {
    use Endian::*;
    for dtype in Dtype::ALL {
        let (d, e) = Dtype::from_descr(dtype.descr()).unwrap();
        assert_eq!(d, dtype);
        let expected = if dtype.size() == 1 || dtype == Dtype::V2 { NotApplicable } else { Little };
        assert_eq!(e, expected, "{dtype:?}");
    }
    let cases = [
        ("?", Dtype::Bool, NotApplicable),
        ("<b1", Dtype::Bool, NotApplicable),
        ("<i1", Dtype::I8, NotApplicable),
        ("<u1", Dtype::U8, NotApplicable),
        (">f4", Dtype::F32, Big),
        (">c16", Dtype::C128, Big),
        ("=i8", Dtype::I64, Endian::NATIVE),
        ("f2", Dtype::F16, Endian::NATIVE),
        ("<V2", Dtype::V2, NotApplicable),
        ("|V2", Dtype::V2, NotApplicable),
        ("|V1", Dtype::V1, NotApplicable),
        ("<V1", Dtype::V1, NotApplicable),
    ];
    for (s, d, e) in cases {
        assert_eq!(Dtype::from_descr(s).unwrap(), (d, e), "{s}");
    }
    for s in ["<U10", "O", "|O", "<M8[ns]", "<f16", "|S5", "", "<", "<i3", "<V4", "f4 "] {
        match Dtype::from_descr(s) {
            Err(NpyError::UnsupportedDtype { descr }) => assert_eq!(descr, s),
            other => panic!("{s:?}: {other:?}"),
        }
    }
    let msg = Dtype::from_descr("<U10").unwrap_err().to_string();
    assert!(msg.contains("<U10") && msg.contains("<f4") && msg.contains("V2"), "{msg}");
}

#[test]
fn lenient_header_syntax() {
    let data = [7u8, 0, 0, 0, 9, 0, 0, 0];
    for header in [
        "{'shape': (2,), 'fortran_order': False, 'descr': '<i4'}",
        "{\"descr\": \"<i4\", \"fortran_order\": False, \"shape\": (2,)}\n",
        "  {  'descr' : '<i4' ,\n 'fortran_order':False,'shape':( 2 , ) , }   \t\n",
        "{'descr': u'<i4', 'fortran_order': False, 'shape': (2L,), }",
    ] {
        let a = NpyArray::from_bytes(&file_v1(header, &data)).unwrap();
        assert_eq!(a.to_vec::<i32>().unwrap(), vec![7, 9], "{header}");
    }
    // Versions 2.0 and 3.0 (u32 header length; 3.0 is UTF-8).
    for major in [2, 3] {
        let h = "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }\n";
        let a = NpyArray::from_bytes(&file_v2(major, h, &data)).unwrap();
        assert_eq!(a.to_vec::<i32>().unwrap(), vec![7, 9]);
    }
    // A rank 0 scalar.
    let a =
        NpyArray::from_bytes(&file_v1("{'descr': '<f8', 'fortran_order': False, 'shape': ()}", &7.5f64.to_le_bytes()))
            .unwrap();
    assert_eq!(a.dims, Vec::<i64>::new());
    assert_eq!(a.to_vec::<f64>().unwrap(), vec![7.5]);
}

#[test]
fn version_2_written_for_huge_headers() {
    // A rank high enough that the header exceeds 65535 bytes.
    let shape = vec![1i64; 30_000];
    let a = NpyArray::new(Dtype::U8, shape, vec![42]).unwrap();
    let file = a.to_bytes();
    assert_eq!(&file[6..8], &[2, 0]);
    let hlen = u32::from_le_bytes(file[8..12].try_into().unwrap()) as usize;
    assert_eq!((12 + hlen) % 64, 0);
    assert_eq!(NpyArray::from_bytes(&file).unwrap(), a);
}

#[test]
fn malformed_inputs() {
    let good = NP_F32_2X3;
    // Bad magic and truncation anywhere.
    assert!(matches!(NpyArray::from_bytes(b""), Err(NpyError::BadMagic)));
    assert!(matches!(NpyArray::from_bytes(b"\x93NUMP"), Err(NpyError::BadMagic)));
    assert!(matches!(NpyArray::from_bytes(b"PK\x03\x04 this is a zip"), Err(NpyError::BadMagic)));
    for len in 0..good.len() {
        assert!(NpyArray::from_bytes(&good[..len]).is_err(), "prefix of {len} bytes");
    }
    match NpyArray::from_bytes(&good[..good.len() - 1]) {
        Err(e @ NpyError::SizeMismatch { expected: 24, actual: 23 }) => {
            assert!(e.to_string().contains("truncated"), "{e}")
        }
        other => panic!("{other:?}"),
    }
    // Trailing bytes.
    let mut long = good.to_vec();
    long.push(0);
    match NpyArray::from_bytes(&long) {
        Err(e @ NpyError::SizeMismatch { expected: 24, actual: 25 }) => {
            assert!(e.to_string().contains("extra"), "{e}")
        }
        other => panic!("{other:?}"),
    }
    // Versions.
    let mut v = good.to_vec();
    v[6] = 4;
    assert!(matches!(NpyArray::from_bytes(&v), Err(NpyError::UnsupportedVersion { major: 4, minor: 0 })));
    v[6] = 1;
    v[7] = 1;
    assert!(matches!(NpyArray::from_bytes(&v), Err(NpyError::UnsupportedVersion { major: 1, minor: 1 })));
    // Header length past the end of the input.
    let mut v = good.to_vec();
    v[8] = 0xff;
    v[9] = 0xff;
    assert!(header_err(&v).contains("truncated"));
    let mut v = file_v2(2, "{}", b"");
    v[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(header_err(&v).contains("truncated"));
    // Version 3.0 header that is not UTF-8.
    let mut v = file_v2(3, "{'descr': '<i4', 'fortran_order': False, 'shape': (), }", &[0; 4]);
    v[14] = 0xff;
    assert!(header_err(&v).contains("UTF-8"));

    let f = |h: &str| file_v1(h, &[0u8; 8]);
    // Huge shapes: error without allocating.
    match NpyArray::from_bytes(&f("{'descr': '<f4', 'fortran_order': False, 'shape': (1152921504606846976,), }")) {
        Err(NpyError::SizeMismatch { expected, actual: 8 }) => assert_eq!(expected, 1 << 62),
        other => panic!("{other:?}"),
    }
    for h in [
        "{'descr': '<f8', 'fortran_order': False, 'shape': (1152921504606846976, 16), }",
        "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 0), }",
        "{'descr': '<u2', 'fortran_order': False, 'shape': (9223372036854775807,), }",
    ] {
        let err = NpyArray::from_bytes(&f(h)).unwrap_err();
        assert!(matches!(err, NpyError::ShapeOverflow { .. }), "{h}: {err:?}");
        assert!(err.to_string().contains("would need more than"), "{err}");
    }
    // Counts above i64::MAX (the largest PJRT dimension), in u64 or beyond it: a header error.
    for big in ["9223372036854775808", "18446744073709551615", "99999999999999999999999"] {
        let h = format!("{{'descr': '<u1', 'fortran_order': False, 'shape': (2, {big}), }}");
        let err = header_err(&f(&h));
        assert!(err.contains("axis 1 is above 9223372036854775807"), "{err}");
    }
    // Negative dimension.
    assert!(header_err(&f("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }")).contains("negative"));
    // Unknown descr, structured dtype.
    match NpyArray::from_bytes(&f("{'descr': '<U2', 'fortran_order': False, 'shape': (1,), }")) {
        Err(NpyError::UnsupportedDtype { descr }) => assert_eq!(descr, "<U2"),
        other => panic!("{other:?}"),
    }
    match NpyArray::from_bytes(&f(
        "{'descr': [('a', '<f4'), ('b', '<i4', (2,))], 'fortran_order': False, 'shape': (1,), }",
    )) {
        Err(NpyError::UnsupportedDtype { descr }) => {
            assert_eq!(descr, "[('a', '<f4'), ('b', '<i4', (2,))]")
        }
        other => panic!("{other:?}"),
    }
    // Missing, extra and duplicate keys; wrong value types; bad syntax.
    let bad_headers = [
        ("{'descr': '<f4', 'fortran_order': False}", "missing key 'shape'"),
        ("{'descr': '<f4', 'shape': (2,)}", "missing key 'fortran_order'"),
        ("{'fortran_order': False, 'shape': (2,)}", "missing key 'descr'"),
        ("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", "unexpected key"),
        ("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", "duplicate"),
        ("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", "fortran_order"),
        ("{'descr': '<f4', 'fortran_order': False, 'shape': 2}", "tuple"),
        ("{'descr': '<f4', 'fortran_order': False, 'shape': (2)}", "tuple"),
        ("{'descr': '<f4', 'fortran_order': False, 'shape': [2]}", "tuple"),
        ("{'descr': '<f4', 'fortran_order': False, 'shape': ('2',)}", "integers"),
        ("{'descr': '<f4', 'fortran_order': False, 'shape': (2.0,)}", "integer"),
        ("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", "expected"),
        ("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x", "after"),
        ("{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}", "expected"),
        ("{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}", "expected"),
        ("{'descr: '<f4', 'fortran_order': False, 'shape': (2,)}", ""),
        ("{'descr': '<f4', 'fortran_order': false, 'shape': (2,)}", "True, False"),
        ("{1: '<f4'}", "keys must be strings"),
        ("['descr', '<f4']", "dict"),
        ("", "dict"),
        ("{'descr': '\\x3c', 'fortran_order': False, 'shape': (2,)}", "escape"),
        ("{'descr': '<f4', 'fortran_order': False, 'shape': (2,,)}", "expected a value"),
    ];
    for (h, needle) in bad_headers {
        let msg = header_err(&f(h));
        assert!(msg.contains(needle), "{h}: {msg}");
    }
    // Deep nesting does not overflow the stack.
    let deep =
        format!("{{'descr': {}1{}, 'fortran_order': False, 'shape': (2,)}}", "(".repeat(10_000), ")".repeat(10_000));
    assert!(header_err(&f(&deep)).contains("nested"));
}

#[test]
fn never_panics_on_mutations() {
    // Flip, truncate and splice bytes of valid files; only errors may come out.
    let seeds: Vec<Vec<u8>> = vec![
        NP_F32_2X3.to_vec(),
        NP_I32_FORTRAN_2X3.to_vec(),
        NP_C64_BIG.to_vec(),
        file_v2(3, "{'descr': '>c16', 'fortran_order': True, 'shape': (1, 2), }", &[1; 32]),
    ];
    let noise = bytes(1 << 16, 7);
    let mut k = 0usize;
    for seed in &seeds {
        for i in 0..2000 {
            let mut v = seed.clone();
            let pos = noise[k % noise.len()] as usize * 7 % v.len();
            k += 1;
            match i % 4 {
                0 => v[pos] = noise[k % noise.len()],
                1 => v.truncate(pos),
                2 => v.insert(pos, b"(),'0123456789-{}[]:"[pos % 20]),
                _ => {
                    v[pos] ^= 1 << (i % 8);
                }
            }
            k += 1;
            if let Ok(a) = NpyArray::from_bytes(&v) {
                a.validate().unwrap();
            }
        }
    }
}

#[test]
fn element_helpers() {
    let a = NpyArray::from_elements(vec![3], &[true, false, true]).unwrap();
    assert_eq!(a.dtype, Dtype::Bool);
    assert_eq!(a.data, vec![1, 0, 1]);
    assert_eq!(a.to_vec::<bool>().unwrap(), vec![true, false, true]);
    assert!(matches!(a.to_vec::<u8>(), Err(NpyError::DtypeMismatch { requested: Dtype::U8, actual: Dtype::Bool })));
    assert!(matches!(
        NpyArray::from_elements(vec![2, 2], &[1u16, 2, 3]),
        Err(NpyError::SizeMismatch { expected: 8, actual: 6 })
    ));
    assert!(matches!(NpyArray::new(Dtype::F64, vec![i64::MAX, 2], vec![]), Err(NpyError::ShapeOverflow { .. })));
    let huge = NpyArray { dtype: Dtype::U8, dims: vec![i64::MAX, 3], data: vec![] };
    assert_eq!(huge.element_count(), usize::MAX);
    // Negative dimensions: refused by new and validate (and so by write), named by axis.
    let err = NpyArray::new(Dtype::U8, vec![2, -3], vec![]).unwrap_err();
    assert!(matches!(&err, NpyError::NegativeDimension { axis: 1, dims } if dims == &[2, -3]), "{err:?}");
    assert!(err.to_string().contains("dimension -3 at axis 1 of shape (2, -3) is negative"), "{err}");
    let negative = NpyArray { dtype: Dtype::U8, dims: vec![-1], data: vec![] };
    assert!(matches!(negative.validate(), Err(NpyError::NegativeDimension { axis: 0, .. })));
    assert_eq!(negative.element_count(), 0);
    assert_eq!(Dtype::C64.to_string(), "complex64");
}
