//! Element types of buffers and the Rust types that map onto them.

use std::fmt;

/// A PJRT element type (`PJRT_Buffer_Type`), kept as the raw integer so that values from newer
/// plugins are data, not undefined behaviour.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ElementType(i32);

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
    /// The MLIR spelling of the type as a tensor element (`f32`, `ui8`, `complex<f64>`,
    /// `f8E4M3FN`, ...), as StableHLO writes it; `None` for what StableHLO cannot spell (TOKEN,
    /// INVALID, S1/U1, a type this crate does not know). The one table `pjrt-builder` emits and
    /// `pjrt-stablehlo` prints with.
    ///
    /// ```
    /// use pjrt_types::ElementType;
    /// assert_eq!(ElementType::U8.mlir_name(), Some("ui8"));
    /// assert_eq!(ElementType::C128.mlir_name(), Some("complex<f64>"));
    /// assert_eq!(ElementType::TOKEN.mlir_name(), None);
    /// ```
    pub fn mlir_name(self) -> Option<&'static str> {
        Some(match self {
            ElementType::PRED => "i1",
            ElementType::S2 => "i2",
            ElementType::S4 => "i4",
            ElementType::S8 => "i8",
            ElementType::S16 => "i16",
            ElementType::S32 => "i32",
            ElementType::S64 => "i64",
            ElementType::U2 => "ui2",
            ElementType::U4 => "ui4",
            ElementType::U8 => "ui8",
            ElementType::U16 => "ui16",
            ElementType::U32 => "ui32",
            ElementType::U64 => "ui64",
            ElementType::F16 => "f16",
            ElementType::F32 => "f32",
            ElementType::F64 => "f64",
            ElementType::BF16 => "bf16",
            ElementType::C64 => "complex<f32>",
            ElementType::C128 => "complex<f64>",
            ElementType::F8E5M2 => "f8E5M2",
            ElementType::F8E4M3FN => "f8E4M3FN",
            ElementType::F8E4M3B11FNUZ => "f8E4M3B11FNUZ",
            ElementType::F8E5M2FNUZ => "f8E5M2FNUZ",
            ElementType::F8E4M3FNUZ => "f8E4M3FNUZ",
            ElementType::F8E4M3 => "f8E4M3",
            ElementType::F8E3M4 => "f8E3M4",
            ElementType::F8E8M0FNU => "f8E8M0FNU",
            ElementType::F4E2M1FN => "f4E2M1FN",
            ElementType::F6E2M3FN => "f6E2M3FN",
            ElementType::F6E3M2FN => "f6E3M2FN",
            _ => return None,
        })
    }

    /// The element type MLIR spells `name` as a tensor element (`f32`, `ui8`, `i1`,
    /// `complex<f64>`, `f8E4M3FN`, ...): the inverse of [`ElementType::mlir_name`], and MLIR's
    /// signed integers (`si32`) as the signless ones (`i32`), the same type to PJRT; `None` for
    /// a name without a PJRT type (`index`, `tf32`, `!stablehlo.token`, ...).
    ///
    /// ```
    /// use pjrt_types::ElementType;
    /// assert_eq!(ElementType::from_mlir_name("ui8"), Some(ElementType::U8));
    /// assert_eq!(ElementType::from_mlir_name("i1"), Some(ElementType::PRED));
    /// assert_eq!(ElementType::from_mlir_name("si16"), Some(ElementType::S16));
    /// assert_eq!(ElementType::from_mlir_name("complex<f32>"), Some(ElementType::C64));
    /// assert_eq!(ElementType::from_mlir_name("index"), None);
    /// ```
    pub fn from_mlir_name(name: &str) -> Option<ElementType> {
        let signed_width = name.strip_prefix("si").filter(|w| !w.is_empty() && w.bytes().all(|c| c.is_ascii_digit()));
        ElementType::ALL.iter().copied().find(|t| match (t.mlir_name(), signed_width) {
            (Some(mlir), Some(width)) => mlir.strip_prefix('i') == Some(width),
            (mlir, None) => mlir == Some(name),
            _ => false,
        })
    }

    /// The `PJRT_Buffer_Type` value (what `pjrt_client::sys::PJRT_Buffer_Type` wraps).
    ///
    /// ```
    /// assert_eq!(pjrt_types::ElementType::F32.to_i32(), 11);
    /// ```
    pub const fn to_i32(self) -> i32 {
        self.0
    }

    /// Wraps a `PJRT_Buffer_Type` value (any value: unknown ones stay representable).
    ///
    /// ```
    /// use pjrt_types::ElementType;
    /// assert_eq!(ElementType::from_i32(13), ElementType::BF16);
    /// assert!(!ElementType::from_i32(99).is_array_type());
    /// ```
    pub const fn from_i32(raw: i32) -> Self {
        ElementType(raw)
    }

    /// Whether the element type holds data that can be uploaded (not INVALID, TOKEN or unknown).
    pub fn is_array_type(self) -> bool {
        self.bits().is_some()
    }

    /// Whether elements are narrower than a byte (S4, U4, S2, U2, S1, U1, F4E2M1FN, the 6-bit
    /// F6 types): on the host each one takes a whole byte (see [`ElementType::host_bytes`]).
    pub fn is_sub_byte(self) -> bool {
        self.bits().is_some_and(|bits| bits < 8)
    }

    /// Bytes one element takes in a host buffer: `bits / 8`, and 1 for the sub-byte types.
    /// `None` for non-array types.
    pub fn host_element_bytes(self) -> Option<usize> {
        self.bits().map(|bits| bits.div_ceil(8))
    }

    /// Bytes that `count` elements take in a dense host buffer. `None` on overflow or for
    /// non-array types.
    ///
    /// Sub-byte types are **one element per byte** on the host, the value in the low bits:
    /// that is what XLA reads and writes for host buffers (it packs them on the device itself),
    /// and how `ml_dtypes` holds `int4`, `uint4`, `float4_e2m1fn`, ... arrays in numpy. A packed
    /// host buffer would be read past its end. Downloads give the low bits only (int4 -1 is
    /// `0x0f`; [`ElementType::sign_extend_host_values`] widens them to `i8`); uploads take that
    /// form, or signed values sign-extended (`0xff`), see [`ElementType::check_host_values`].
    /// [`ElementType::packed_bytes`] gives the packed size (device memory, safetensors' F4).
    pub fn host_bytes(self, count: usize) -> Option<usize> {
        count.checked_mul(self.host_element_bytes()?)
    }

    /// Bytes that `count` elements take packed without gaps (`ceil(count * bits / 8)`): how
    /// devices store sub-byte types and how safetensors stores F4. Equal to
    /// [`ElementType::host_bytes`] for types of whole bytes.
    pub fn packed_bytes(self, count: usize) -> Option<usize> {
        let bits = self.bits()?;
        if bits >= 8 {
            count.checked_mul(bits / 8)
        } else {
            count.checked_mul(bits).map(|b| b.div_ceil(8))
        }
    }

    fn is_signed_sub_byte(self) -> bool {
        matches!(self, ElementType::S4 | ElementType::S2 | ElementType::S1)
    }

    /// Checks that every byte of a host buffer of a sub-byte type holds one value of the type:
    /// its low `bits` bits with the others zero (as XLA and `ml_dtypes` store them), or for
    /// S4, S2 and S1 a negative value sign-extended (`-1` as `0xff`). Any other byte would have
    /// bits the plugin drops, silently changing the value. Types of whole bytes are not checked
    /// (every byte pattern is a value).
    ///
    /// ```
    /// use pjrt_types::ElementType;
    /// // int4 -8, -1, 0, 7 as ml_dtypes stores them, and -1 sign-extended.
    /// assert!(ElementType::S4.check_host_values(&[0x08, 0x0f, 0, 7, 0xff]).is_ok());
    /// assert!(ElementType::S4.check_host_values(&[0x10]).is_err());
    /// assert!(ElementType::U4.check_host_values(&[15]).is_ok());
    /// assert!(ElementType::U4.check_host_values(&[0xff]).is_err());
    /// ```
    pub fn check_host_values(self, bytes: &[u8]) -> Result<(), HostValueError> {
        let Some(bits) = self.bits().filter(|b| *b < 8) else { return Ok(()) };
        let signed = self.is_signed_sub_byte();
        let high = 0xffu8 << bits; // the bits a value leaves zero (or, sign-extended, one)
        let sign = 1u8 << (bits - 1);
        let ok = |b: u8| b & high == 0 || (signed && b & high == high && b & sign != 0);
        match bytes.iter().position(|b| !ok(*b)) {
            None => Ok(()),
            Some(index) => Err(HostValueError { element_type: self, index, byte: bytes[index] }),
        }
    }

    /// Rewrites host bytes of S4, S2 or S1 (the low bits, as downloads give them) as `i8`
    /// values, sign-extended: int4 `0x0f` becomes `0xff` (-1). Other types are left as they are.
    ///
    /// ```
    /// use pjrt_types::ElementType;
    /// let mut bytes = [0x08, 0x0f, 0x00, 0x07];
    /// ElementType::S4.sign_extend_host_values(&mut bytes);
    /// assert_eq!(bytes.map(|b| b as i8), [-8, -1, 0, 7]);
    /// ```
    pub fn sign_extend_host_values(self, bytes: &mut [u8]) {
        let Some(bits) = self.bits().filter(|_| self.is_signed_sub_byte()) else { return };
        let shift = 8 - bits as u32;
        for b in bytes {
            *b = (((*b << shift) as i8) >> shift) as u8;
        }
    }

    /// Whether this is an integer or boolean type (results compare bit-exactly).
    pub fn is_integral(self) -> bool {
        matches!(self.0, 1..=9 | 21 | 22 | 24 | 25 | 30 | 31)
    }
}

/// A byte of host data that is not a value of its sub-byte element type
/// ([`ElementType::check_host_values`]): which element, and the byte.
///
/// ```
/// let err = pjrt_types::ElementType::U4.check_host_values(&[1, 0x20]).unwrap_err();
/// assert_eq!((err.index, err.byte), (1, 0x20));
/// assert!(err.to_string().contains("not a 4-bit value"), "{err}");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HostValueError {
    /// The element type the data was checked as.
    pub element_type: ElementType,
    /// The element (and byte) index.
    pub index: usize,
    /// The byte.
    pub byte: u8,
}

impl fmt::Display for HostValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bits = self.element_type.bits().unwrap_or(8);
        write!(
            f,
            "element {} of the {} host data is the byte {:#04x}, which is not a {bits}-bit value: sub-byte types \
             take one element per byte on the host, the value in the low {bits} bits{}",
            self.index,
            self.element_type,
            self.byte,
            if self.element_type.is_signed_sub_byte() { " (negative values may also be sign-extended)" } else { "" }
        )
    }
}

impl std::error::Error for HostValueError {}

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
/// Reading a buffer into such a type copies the plugin's bytes, except for PRED: a plugin
/// stores and returns PRED bytes unchanged (the CPU plugins give back `[2, 1, 0]` for an upload
/// of `[2, 1, 0]`), so PRED bytes are read the way numpy casts bytes to `bool`: every nonzero
/// byte is `true` (1), zero is `false`, before they become `Self`.
///
/// # Safety
/// `Self` must have the size and bit layout of `ELEMENT_TYPE`, no padding, and every bit
/// pattern of that size must be a valid `Self` — for PRED, the bytes 0 and 1 (the only ones
/// this crate ever produces for it).
pub unsafe trait NativeType: Copy + Send + Sync + 'static {
    /// The matching element type.
    const ELEMENT_TYPE: ElementType;
}

macro_rules! native {
    ($($t:ty => $e:ident),+ $(,)?) => {$(
        // SAFETY: same size and layout as the PJRT type; every bit pattern is a value, and for
        // `bool` (PRED) the library hands over only the bytes 0 and 1.
        unsafe impl NativeType for $t { const ELEMENT_TYPE: ElementType = ElementType::$e; }
    )+};
}

native!(
    bool => PRED, i8 => S8, i16 => S16, i32 => S32, i64 => S64, u8 => U8, u16 => U16,
    u32 => U32, u64 => U64, f32 => F32, f64 => F64,
);
#[cfg(feature = "half")]
native!(half::f16 => F16, half::bf16 => BF16);
#[cfg(feature = "num-complex")]
native!(num_complex::Complex<f32> => C64, num_complex::Complex<f64> => C128);

/// The memory of native values, as bytes (what an upload hands a plugin).
///
/// ```
/// assert_eq!(pjrt_types::native_bytes(&[1u16, 2]), [1, 0, 2, 0]);
/// ```
pub fn native_bytes<T: NativeType>(values: &[T]) -> &[u8] {
    // SAFETY: `T: NativeType` has no padding, so its memory is plain initialised bytes; the view
    // covers exactly the slice and borrows it.
    unsafe { std::slice::from_raw_parts(values.as_ptr() as *const u8, std::mem::size_of_val(values)) }
}

/// Host bytes of `T::ELEMENT_TYPE` as values of `T`, PRED bytes mapped as numpy casts bytes to
/// `bool` ([`normalize_pred`]). Bytes past the last whole element are ignored (callers pass the
/// dense size of a shape, a whole number of elements).
///
/// ```
/// assert_eq!(pjrt_types::native_values::<u16>(&[1, 0, 2, 0, 9]), [1, 2]);
/// assert_eq!(pjrt_types::native_values::<bool>(&[0, 1, 7]), [false, true, true]);
/// ```
pub fn native_values<T: NativeType>(bytes: &[u8]) -> Vec<T> {
    let count = bytes.len() / std::mem::size_of::<T>();
    let mut out = Vec::<T>::with_capacity(count);
    let size = count * std::mem::size_of::<T>();
    // SAFETY: `out` has room for `size` bytes; the bytes are mapped to 0 and 1 for PRED before
    // `set_len` makes them values, and `T: NativeType` accepts every other bit pattern.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), out.as_mut_ptr() as *mut u8, size);
        if T::ELEMENT_TYPE == ElementType::PRED {
            normalize_pred(std::slice::from_raw_parts_mut(out.as_mut_ptr() as *mut u8, size));
        }
        out.set_len(count);
    }
    out
}

/// Maps PRED bytes as numpy casts bytes to `bool`: nonzero is true (1), zero is false. A plugin
/// returns PRED bytes unchanged, whatever they are, so they are never read as `bool` unmapped.
///
/// ```
/// let mut bytes = [0, 1, 2, 255];
/// pjrt_types::normalize_pred(&mut bytes);
/// assert_eq!(bytes, [0, 1, 1, 1]);
/// ```
pub fn normalize_pred(bytes: &mut [u8]) {
    for b in bytes {
        *b = u8::from(*b != 0);
    }
}

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
        assert_eq!(ElementType::S4.host_bytes(3), Some(3));
        assert_eq!(ElementType::S4.packed_bytes(3), Some(2));
        assert_eq!(ElementType::F6E2M3FN.host_bytes(4), Some(4));
        assert_eq!(ElementType::F6E2M3FN.packed_bytes(4), Some(3));
        assert_eq!(ElementType::U1.packed_bytes(9), Some(2));
        assert_eq!(ElementType::C128.host_bytes(2), Some(32));
        assert_eq!(ElementType::TOKEN.host_bytes(1), None);
        assert_eq!(ElementType::F64.host_bytes(usize::MAX), None);
    }

    #[test]
    fn sub_byte_host_values_are_checked() {
        // Low bits, and negative values sign-extended.
        assert!(ElementType::S2.check_host_values(&[0, 1, 2, 3, 0xfe, 0xff]).is_ok());
        assert!(ElementType::S2.check_host_values(&[4]).is_err());
        assert!(ElementType::S2.check_host_values(&[0xfd]).is_err()); // -3: not a 2-bit value
        assert!(ElementType::S4.check_host_values(&[0xf8, 0x08]).is_ok());
        assert!(ElementType::S4.check_host_values(&[0xf7]).is_err());
        assert!(ElementType::U1.check_host_values(&[0, 1]).is_ok());
        assert!(ElementType::U1.check_host_values(&[2]).is_err());
        assert!(ElementType::U1.check_host_values(&[0xff]).is_err());
        assert!(ElementType::S1.check_host_values(&[0xff, 0, 1]).is_ok());
        assert!(ElementType::S1.check_host_values(&[2]).is_err());
        assert!(ElementType::F4E2M1FN.check_host_values(&[15]).is_ok());
        assert!(ElementType::F4E2M1FN.check_host_values(&[16]).is_err());
        assert!(ElementType::F6E3M2FN.check_host_values(&[63]).is_ok());
        assert!(ElementType::F6E3M2FN.check_host_values(&[64]).is_err());
        // Whole-byte types take any byte.
        assert!(ElementType::S8.check_host_values(&[0x80, 0x7f]).is_ok());
    }

    #[test]
    fn sign_extension_of_sub_byte_values() {
        let mut s2 = [0, 1, 2, 3];
        ElementType::S2.sign_extend_host_values(&mut s2);
        assert_eq!(s2.map(|b| b as i8), [0, 1, -2, -1]);
        let mut s1 = [0, 1];
        ElementType::S1.sign_extend_host_values(&mut s1);
        assert_eq!(s1.map(|b| b as i8), [0, -1]);
        let mut u4 = [15];
        ElementType::U4.sign_extend_host_values(&mut u4);
        assert_eq!(u4, [15]);
    }

    #[test]
    fn unknown_values_are_data() {
        let t = ElementType::from_i32(77);
        assert_eq!(t.since_minor(), None);
        assert!(!t.is_array_type());
        assert_eq!(format!("{t}"), "ElementType(77)");
    }
}
