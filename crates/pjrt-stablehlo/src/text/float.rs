//! Float literals as the bits of their type: f64 and f32 exactly as Rust parses them
//! (correctly rounded), f16/bf16 through `half`, and the 8-, 6- and 4-bit formats by the
//! nearest of their (at most 256) values, ties to an even encoding.

use crate::ir::{ElementType, Type};

/// How a small float format spends its bits.
#[derive(Clone, Copy)]
struct Mini {
    exponent: u32,
    mantissa: u32,
    bias: i32,
    /// IEEE-like: the top exponent is inf/NaN.
    ieee: bool,
    /// `FN`: no inf; all exponent and mantissa bits set is NaN.
    fn_nan: bool,
    /// `FNUZ`: no inf, no -0; the sign bit alone is NaN.
    fnuz: bool,
    /// No sign bit (`E8M0FNU`).
    unsigned: bool,
}

fn mini(e: ElementType) -> Option<Mini> {
    let m = |exponent, mantissa, bias, ieee, fn_nan, fnuz| Mini {
        exponent,
        mantissa,
        bias,
        ieee,
        fn_nan,
        fnuz,
        unsigned: false,
    };
    Some(match e {
        ElementType::F8E5M2 => m(5, 2, 15, true, false, false),
        ElementType::F8E4M3 => m(4, 3, 7, true, false, false),
        ElementType::F8E3M4 => m(3, 4, 3, true, false, false),
        ElementType::F8E4M3FN => m(4, 3, 7, false, true, false),
        ElementType::F8E4M3B11FNUZ => m(4, 3, 11, false, false, true),
        ElementType::F8E5M2FNUZ => m(5, 2, 16, false, false, true),
        ElementType::F8E4M3FNUZ => m(4, 3, 8, false, false, true),
        ElementType::F6E2M3FN => m(2, 3, 1, false, false, false),
        ElementType::F6E3M2FN => m(3, 2, 3, false, false, false),
        ElementType::F4E2M1FN => m(2, 1, 1, false, false, false),
        ElementType::F8E8M0FNU => Mini { unsigned: true, ..m(8, 0, 127, false, false, false) },
        _ => return None,
    })
}

impl Mini {
    fn bits(self) -> u32 {
        self.exponent + self.mantissa + u32::from(!self.unsigned)
    }

    /// The value of encoding `x` (NaN for NaN encodings).
    fn decode(self, x: u32) -> f64 {
        let sign_bit = if self.unsigned { 0 } else { 1 << (self.exponent + self.mantissa) };
        let max_e = (1u32 << self.exponent) - 1;
        let e = (x >> self.mantissa) & max_e;
        let m = x & ((1 << self.mantissa) - 1);
        if self.unsigned {
            return if e == max_e { f64::NAN } else { 2f64.powi(e as i32 - self.bias) };
        }
        if self.fnuz && x == sign_bit {
            return f64::NAN;
        }
        if self.fn_nan && e == max_e && m == (1 << self.mantissa) - 1 {
            return f64::NAN;
        }
        let sign = if x & sign_bit != 0 { -1.0 } else { 1.0 };
        if self.ieee && e == max_e {
            return if m == 0 { sign * f64::INFINITY } else { f64::NAN };
        }
        let frac = f64::from(m) / f64::from(1u32 << self.mantissa);
        let v = if e == 0 { frac * 2f64.powi(1 - self.bias) } else { (1.0 + frac) * 2f64.powi(e as i32 - self.bias) };
        sign * v
    }

    /// The nearest encoding of `v`, or `None` when the format cannot hold it (NaN or inf
    /// where it has none, a negative number in an unsigned format).
    fn encode(self, v: f64) -> Option<u32> {
        let n = 1u32 << self.bits();
        if v.is_nan() {
            return (0..n).find(|&x| self.decode(x).is_nan());
        }
        if v.is_infinite() && !self.ieee {
            return None;
        }
        if self.unsigned && v < 0.0 {
            return None;
        }
        let mut best: Option<(u32, f64)> = None;
        for x in 0..n {
            let d = self.decode(x);
            if d.is_nan() {
                continue;
            }
            // -0 for a negative zero where the format has one.
            if d == 0.0 && v == 0.0 && d.is_sign_negative() != v.is_sign_negative() {
                continue;
            }
            let err = if d == v { 0.0 } else { (d - v).abs() };
            best = match best {
                Some((bx, be)) if be < err || (be == err && bx & 1 == 0) => Some((bx, be)),
                _ => Some((x, err)),
            };
        }
        best.map(|(x, _)| x)
    }
}

/// The bits of float literal `text` (`1.5`, `-2e3`, `inf`, `nan`) as element type `ty`, or why not.
pub(crate) fn float_bits(text: &str, ty: &Type) -> Result<u64, String> {
    let e = match ty {
        Type::Scalar(e) => *e,
        Type::Tf32 => ElementType::F32,
        _ => return Err("a float literal for a type that is not a float".into()),
    };
    let v: f64 = text.parse().map_err(|_| format!("`{text}` is not a number"))?;
    Ok(match e {
        ElementType::F64 => v.to_bits(),
        ElementType::F32 => {
            // Parsed as f32 directly: one rounding, as MLIR does it.
            let f: f32 = text.parse().map_err(|_| format!("`{text}` is not a number"))?;
            if matches!(ty, Type::Tf32) {
                // tf32 keeps f32's top 19 bits.
                u64::from(f.to_bits() >> 13)
            } else {
                u64::from(f.to_bits())
            }
        }
        ElementType::F16 => u64::from(half::f16::from_f64(v).to_bits()),
        ElementType::BF16 => u64::from(half::bf16::from_f64(v).to_bits()),
        _ => match mini(e) {
            Some(m) => u64::from(m.encode(v).ok_or_else(|| format!("{text} is not representable as {}", e.name()))?),
            None => return Err(format!("a float literal for element type {}", e.name())),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bits(text: &str, e: ElementType) -> u64 {
        float_bits(text, &Type::Scalar(e)).unwrap()
    }

    #[test]
    fn the_common_formats_encode_as_ieee_says() {
        assert_eq!(bits("1.0", ElementType::F32), 0x3F80_0000);
        assert_eq!(bits("-2.5e+00", ElementType::F64), (-2.5f64).to_bits());
        assert_eq!(bits("1.0", ElementType::BF16), 0x3F80);
        assert_eq!(bits("inf", ElementType::F16), 0x7C00);
    }

    #[test]
    fn small_formats_take_the_nearest_value_and_refuse_what_they_lack() {
        assert_eq!(bits("1.0", ElementType::F8E4M3FN), 0x38);
        assert_eq!(bits("448", ElementType::F8E4M3FN), 0x7E);
        assert_eq!(bits("nan", ElementType::F8E4M3FN), 0x7F);
        assert_eq!(bits("-0.0", ElementType::F8E5M2), 0x80);
        assert_eq!(bits("nan", ElementType::F8E4M3FNUZ), 0x80);
        assert_eq!(bits("6.0", ElementType::F4E2M1FN), 0x7);
        assert_eq!(bits("1.0", ElementType::F8E8M0FNU), 127);
        assert!(float_bits("inf", &Type::Scalar(ElementType::F4E2M1FN)).is_err());
        assert!(float_bits("-1", &Type::Scalar(ElementType::F8E8M0FNU)).is_err());
    }
}
