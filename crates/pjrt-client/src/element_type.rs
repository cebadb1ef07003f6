//! Element types of buffers and the Rust types that map onto them.

use std::fmt;

use num_complex::Complex;

use crate::sys::PJRT_Buffer_Type;

/// A PJRT element type (`PJRT_Buffer_Type`), kept as the raw integer so that values from newer
/// plugins are data, not undefined behaviour.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ElementType(pub(crate) i32);

macro_rules! element_types {
    ($( $name:ident = $raw:literal, $text:literal, bits $bits:literal, since $minor:literal; )+) => {
        impl ElementType {
            $(
                #[doc = concat!("`", $text, "`")]
                pub const $name: ElementType = ElementType($raw);
            )+

            /// Every element type this crate knows.
            pub const ALL: &'static [ElementType] = &[$(ElementType::$name),+];

            /// The short lowercase name XLA uses (`f32`, `bf16`, `pred`, ...).
            pub fn name(self) -> &'static str {
                match self.0 { $($raw => $text,)+ _ => "unknown" }
            }

            /// Bits per element, or `None` for TOKEN, INVALID and unknown values.
            pub fn bits(self) -> Option<usize> {
                match self.0 { $($raw => if $bits == 0 { None } else { Some($bits) },)+ _ => None }
            }

            /// The minor API version that introduced this type (`None` if unknown to this crate).
            pub fn since_minor(self) -> Option<i32> {
                match self.0 { $($raw => Some($minor),)+ _ => None }
            }

            /// Looks a type up by its XLA name (`"f32"`, `"bf16"`, ...).
            pub fn from_name(name: &str) -> Option<ElementType> {
                match name { $($text => Some(ElementType::$name),)+ _ => None }
            }
        }
    };
}

// Minor versions: the base set predates the changelog; F8E4M3/F8E3M4 0.55, TOKEN 0.50,
// F4E2M1FN/F8E8M0FNU 0.63, S1/U1 0.94, F6* 0.114 (see the API notes, section 6.2).
element_types! {
    INVALID = 0, "invalid", bits 0, since 0;
    PRED = 1, "pred", bits 8, since 0;
    S8 = 2, "s8", bits 8, since 0;
    S16 = 3, "s16", bits 16, since 0;
    S32 = 4, "s32", bits 32, since 0;
    S64 = 5, "s64", bits 64, since 0;
    U8 = 6, "u8", bits 8, since 0;
    U16 = 7, "u16", bits 16, since 0;
    U32 = 8, "u32", bits 32, since 0;
    U64 = 9, "u64", bits 64, since 0;
    F16 = 10, "f16", bits 16, since 0;
    F32 = 11, "f32", bits 32, since 0;
    F64 = 12, "f64", bits 64, since 0;
    BF16 = 13, "bf16", bits 16, since 0;
    C64 = 14, "c64", bits 64, since 0;
    C128 = 15, "c128", bits 128, since 0;
    F8E5M2 = 16, "f8e5m2", bits 8, since 0;
    F8E4M3FN = 17, "f8e4m3fn", bits 8, since 0;
    F8E4M3B11FNUZ = 18, "f8e4m3b11fnuz", bits 8, since 0;
    F8E5M2FNUZ = 19, "f8e5m2fnuz", bits 8, since 0;
    F8E4M3FNUZ = 20, "f8e4m3fnuz", bits 8, since 0;
    S4 = 21, "s4", bits 4, since 0;
    U4 = 22, "u4", bits 4, since 0;
    TOKEN = 23, "token", bits 0, since 50;
    S2 = 24, "s2", bits 2, since 50;
    U2 = 25, "u2", bits 2, since 50;
    F8E4M3 = 26, "f8e4m3", bits 8, since 55;
    F8E3M4 = 27, "f8e3m4", bits 8, since 55;
    F8E8M0FNU = 28, "f8e8m0fnu", bits 8, since 63;
    F4E2M1FN = 29, "f4e2m1fn", bits 4, since 63;
    S1 = 30, "s1", bits 1, since 94;
    U1 = 31, "u1", bits 1, since 94;
    F6E2M3FN = 32, "f6e2m3fn", bits 6, since 114;
    F6E3M2FN = 33, "f6e3m2fn", bits 6, since 114;
}

impl ElementType {
    /// The raw `PJRT_Buffer_Type` value.
    pub fn to_raw(self) -> PJRT_Buffer_Type {
        PJRT_Buffer_Type(self.0)
    }

    /// Wraps a raw value (any value: unknown ones stay representable).
    pub fn from_raw(raw: PJRT_Buffer_Type) -> Self {
        ElementType(raw.0)
    }

    /// Whether the element type holds data that can be uploaded (not INVALID, TOKEN or unknown).
    pub fn is_array_type(self) -> bool {
        self.bits().is_some()
    }

    /// Bytes that `count` elements take in a dense host buffer, sub-byte types packed.
    /// `None` on overflow or for non-array types.
    pub fn host_bytes(self, count: usize) -> Option<usize> {
        let bits = self.bits()?;
        if bits >= 8 {
            count.checked_mul(bits / 8)
        } else {
            count.checked_mul(bits).map(|b| b.div_ceil(8))
        }
    }

    /// Whether this is an integer or boolean type (results compare bit-exactly).
    pub fn is_integral(self) -> bool {
        matches!(self.0, 1..=9 | 21 | 22 | 24 | 25 | 30 | 31)
    }
}

impl fmt::Debug for ElementType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.since_minor() {
            Some(_) => f.write_str(self.name()),
            None => write!(f, "ElementType({})", self.0),
        }
    }
}

impl fmt::Display for ElementType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// A Rust type whose values are stored exactly as one PJRT element type.
///
/// # Safety
/// `Self` must have the size and bit layout of `ELEMENT_TYPE` and no padding or invalid bit
/// patterns that the plugin could produce (bool: PJRT writes only 0 and 1).
pub unsafe trait NativeType: Copy + Send + Sync + 'static {
    /// The matching element type.
    const ELEMENT_TYPE: ElementType;
}

macro_rules! native {
    ($($t:ty => $e:ident),+ $(,)?) => {$(
        // SAFETY: same size and layout as the PJRT type.
        unsafe impl NativeType for $t { const ELEMENT_TYPE: ElementType = ElementType::$e; }
    )+};
}

native!(
    bool => PRED, i8 => S8, i16 => S16, i32 => S32, i64 => S64, u8 => U8, u16 => U16,
    u32 => U32, u64 => U64, half::f16 => F16, half::bf16 => BF16, f32 => F32, f64 => F64,
    Complex<f32> => C64, Complex<f64> => C128,
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for &t in ElementType::ALL {
            assert_eq!(ElementType::from_name(t.name()), Some(t));
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(ElementType::F32.host_bytes(3), Some(12));
        assert_eq!(ElementType::S4.host_bytes(3), Some(2));
        assert_eq!(ElementType::C128.host_bytes(2), Some(32));
        assert_eq!(ElementType::TOKEN.host_bytes(1), None);
        assert_eq!(ElementType::F64.host_bytes(usize::MAX), None);
    }

    #[test]
    fn unknown_values_are_data() {
        let t = ElementType::from_raw(PJRT_Buffer_Type(77));
        assert_eq!(t.since_minor(), None);
        assert!(!t.is_array_type());
        assert_eq!(format!("{t}"), "ElementType(77)");
    }
}
