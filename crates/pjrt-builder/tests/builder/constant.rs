//! Constants of every element type (exact bits), splats, empty and rank-0 constants, iota.

use pjrt_builder::{BuildError, Function};
use pjrt_client::num_complex::Complex;
use pjrt_client::{ElementType, HostArray};

use crate::harness::{assert_exact, assert_same_f32, data, run_on_both};

/// The small float types, by their names in the data file.
const SMALL_FLOATS: &[(&str, ElementType)] = &[
    ("f16", ElementType::F16),
    ("bf16", ElementType::BF16),
    ("f8e5m2", ElementType::F8E5M2),
    ("f8e4m3fn", ElementType::F8E4M3FN),
    ("f8e4m3b11fnuz", ElementType::F8E4M3B11FNUZ),
    ("f8e5m2fnuz", ElementType::F8E5M2FNUZ),
    ("f8e4m3fnuz", ElementType::F8E4M3FNUZ),
    ("f8e4m3", ElementType::F8E4M3),
    ("f8e3m4", ElementType::F8E3M4),
    ("f4e2m1fn", ElementType::F4E2M1FN),
    ("f8e8m0fnu", ElementType::F8E8M0FNU),
];

fn host(element: ElementType, dims: &[i64], bytes: Vec<u8>) -> HostArray {
    HostArray::new(element, dims.to_vec(), bytes).unwrap()
}

#[test]
fn small_float_constants_keep_their_bits_and_widen_like_ml_dtypes() {
    let d = data("constant");
    let f = Function::new("small_floats");
    // Per type: the constant's bits, f32 values rounded on the device, and the bits widened.
    let mut outputs = Vec::new();
    for &(name, element) in SMALL_FLOATS {
        let bits = d.array(&format!("{name}_bits"));
        let n = bits.dims()[0];
        let c = f.constant_bits(element, bits.data(), &[n]).unwrap();
        let from_f32 = f.constant(&d.values::<f32>("f32_source"), &[n]).unwrap().convert(element).unwrap();
        outputs.push(c.clone());
        outputs.push(from_f32);
        outputs.push(c.convert(ElementType::F32).unwrap());
    }
    let refs: Vec<_> = outputs.iter().collect();
    let program = f.finish(&refs).unwrap();
    for (plugin, out) in run_on_both(&f, &program, &[]) {
        let mut out = out.iter();
        for &(name, element) in SMALL_FLOATS {
            let bits = d.array(&format!("{name}_bits"));
            let want = host(element, &[bits.dims()[0]], bits.data().to_vec());
            let widened = d.array(&format!("{name}_as_f32_want"));
            {
                assert_exact(plugin, &format!("{name} constant"), out.next().unwrap(), &want);
                let rounded = out.next().unwrap();
                if element == ElementType::F8E8M0FNU {
                    // 0 and negative numbers are outside E8M0's domain (powers of two): XLA
                    // gives 2^-127 and |x|'s power, ml_dtypes NaN. Compared where positive.
                    let source = d.values::<f32>("f32_source");
                    for (i, s) in source.iter().enumerate().filter(|(_, s)| **s > 0.0) {
                        assert_eq!(rounded.data()[i], bits.data()[i], "{plugin}: f32 {s} converted to {name}");
                    }
                } else {
                    assert_exact(plugin, &format!("f32 converted to {name}"), rounded, &want);
                }
            }
            let got = out.next().unwrap();
            if element == ElementType::F8E8M0FNU && plugin == "cpu-0.106" {
                // jaxlib 0.10's XLA widens E8M0's NaN (0xff) to +inf (0.11's gives NaN).
                let (g, w) = (got.to_vec::<f32>().unwrap(), widened.to_vec::<f32>().unwrap());
                for (a, b) in g.iter().zip(&w) {
                    assert!(if b.is_nan() { *a == f32::INFINITY } else { a == b }, "{plugin}: {name} as f32: {g:?}");
                }
            } else {
                assert_same_f32(plugin, &format!("{name} as f32"), got, &widened);
            }
        }
    }
}

#[test]
fn integer_complex_pred_and_special_float_constants_are_exact() {
    let d = data("constant");
    let f = Function::new("exact_constants");
    let ints = [
        f.constant(&d.values::<i8>("s8_want"), &[5]).unwrap(),
        f.constant(&d.values::<i16>("s16_want"), &[5]).unwrap(),
        f.constant(&d.values::<i32>("s32_want"), &[5]).unwrap(),
        f.constant(&d.values::<i64>("s64_want"), &[5]).unwrap(),
        f.constant(&d.values::<u8>("u8_want"), &[5]).unwrap(),
        f.constant(&d.values::<u16>("u16_want"), &[5]).unwrap(),
        f.constant(&d.values::<u32>("u32_want"), &[5]).unwrap(),
        f.constant(&d.values::<u64>("u64_want"), &[5]).unwrap(),
    ];
    // int4: every value, from host bytes (low bits, or sign-extended for S4), widened on the device.
    let s4: Vec<u8> = (-8i8..8).map(|v| v as u8).collect();
    let u4: Vec<u8> = (0u8..16).collect();
    let s4 = f.constant_bits(ElementType::S4, &s4, &[16]).unwrap().convert(ElementType::S32).unwrap();
    let u4 = f.constant_bits(ElementType::U4, &u4, &[16]).unwrap().convert(ElementType::S32).unwrap();
    let s2 = f.constant_bits(ElementType::S2, &[0xfe, 0xff, 0, 1], &[4]).unwrap().convert(ElementType::S32).unwrap();
    let u2 = f.constant_bits(ElementType::U2, &[0, 1, 2, 3], &[4]).unwrap().convert(ElementType::S32).unwrap();
    let f32s = f.constant(&d.values::<f32>("f32_special_want"), &[7]).unwrap();
    let f64s = f.constant(&d.values::<f64>("f64_special_want"), &[6]).unwrap();
    let c64 = f.constant(&d.values::<Complex<f32>>("c64_want"), &[3]).unwrap();
    let c128 = f.constant(&d.values::<Complex<f64>>("c128_want"), &[2, 1]).unwrap();
    let pred = f.constant(&d.values::<bool>("pred_want"), &[2, 3]).unwrap();
    let pred_s32 = pred.convert(ElementType::S32).unwrap();
    let splat = f.splat(-2.5f32, &[2, 3]).unwrap();
    let scalar = f.scalar(7i32).unwrap();
    let empty = f.constant::<f32>(&[], &[0, 3]).unwrap();
    let iota_s32 = f.iota(ElementType::S32, &[2, 3], 1).unwrap();
    let iota_f32 = f.iota(ElementType::F32, &[4, 2], 0).unwrap();
    let iota_u8 = f.iota(ElementType::U8, &[5], 0).unwrap();
    let mut outputs: Vec<_> = ints.iter().collect();
    outputs.extend([
        &s4, &u4, &s2, &u2, &f32s, &f64s, &c64, &c128, &pred, &pred_s32, &splat, &scalar, &empty, &iota_s32, &iota_f32,
        &iota_u8,
    ]);
    let text = f.to_mlir(&outputs).unwrap();
    assert!(text.contains(r#"dense<"0x000020C0"> : tensor<f32>"#), "a splat is one element, broadcast:\n{text}");
    assert!(text.contains("dense<> : tensor<0x3xf32>"), "{text}");
    let program = f.finish(&outputs).unwrap();
    let names = [
        "s8_want",
        "s16_want",
        "s32_want",
        "s64_want",
        "u8_want",
        "u16_want",
        "u32_want",
        "u64_want",
        "s4_as_s32_want",
        "u4_as_s32_want",
        "s2_as_s32_want",
        "u2_as_s32_want",
        "f32_special_want",
        "f64_special_want",
        "c64_want",
        "c128_want",
        "pred_want",
        "pred_as_s32_want",
        "splat_want",
        "scalar_want",
        "empty_want",
        "iota_s32_want",
        "iota_f32_want",
        "iota_u8_want",
    ];
    for (plugin, out) in run_on_both(&f, &program, &[]) {
        for (i, name) in names.iter().enumerate() {
            assert_exact(plugin, name, &out[i], &d.array(name));
        }
    }
}

#[test]
fn constants_refuse_wrong_sizes_and_values() {
    let f = Function::new("bad_constants");
    let err = f.constant(&[1f32, 2.], &[3]).unwrap_err();
    assert!(matches!(err, BuildError::InvalidConstant { .. }), "{err}");
    assert!(err.to_string().contains("8 bytes given for tensor<3xf32>"), "{err}");
    assert!(f.constant_bits(ElementType::PRED, &[2], &[]).is_err());
    assert!(f.constant_bits(ElementType::U4, &[0x10], &[]).is_err(), "u4 holds 0..=15");
    assert!(f.constant_bits(ElementType::TOKEN, &[], &[0]).is_err());
    assert!(f.splat_bits(ElementType::F32, &[0; 2], &[2]).is_err());
    assert!(f.iota(ElementType::F32, &[2], 1).is_err());
    assert!(f.iota(ElementType::PRED, &[2], 0).is_err());
    assert!(f.constant::<f32>(&[], &[-1]).is_err());
    assert!(f.constant::<f32>(&[], &[i64::MAX, 2, 0]).is_err(), "more elements than i64 holds");
    // Types the CPU plugins cannot compile, or abort on, are refused when the value is made.
    for six_bit in [ElementType::F6E2M3FN, ElementType::F6E3M2FN] {
        let err = f.parameter(six_bit, &[2]).unwrap_err();
        assert!(err.to_string().contains("6-bit floats"), "{err}");
        assert!(f.splat(1f32, &[2]).unwrap().convert(six_bit).is_err());
    }
    let two_bit = f.constant_bits(ElementType::S2, &[1, 0], &[2]).unwrap();
    let err = two_bit.concatenate(&[&two_bit], 0).unwrap_err();
    assert!(err.to_string().contains("2-bit integers"), "{err}");
    assert!(two_bit.dot_general(&two_bit, &pjrt_builder::DotDimensions::default(), None).is_err());
}
