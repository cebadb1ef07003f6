//! The dtype table: the element kinds a `.npy` header can name ([`Dtype`], [`Endian`]), the
//! Rust types that hold them ([`NpyElement`]), and the byte size of an array of them.

use std::fmt;

use pjrt_client::ElementType;

use super::NpyError;

/// The descrs accepted by [`Dtype::from_descr`], for error messages.
pub(super) const SUPPORTED_DESCRS: &str = "|b1 (or ?), |i1, <i2, <i4, <i8, |u1, <u2, <u4, <u8, \
     <f2, <f4, <f8, <c8, <c16, |V2 (bfloat16 as saved by ml_dtypes) and |V1 (ml_dtypes' int4, \
     uint4, float4_e2m1fn, ...), \
     each also with a '>' (big-endian) or '=' (native) byte-order prefix";

/// Element kinds that a .npy header can describe and that PJRT can hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Dtype {
    /// Boolean, one byte per element (`|b1`), 0 or 1.
    Bool,
    /// Signed 8-bit integer (`|i1`).
    I8,
    /// Signed 16-bit integer (`<i2`).
    I16,
    /// Signed 32-bit integer (`<i4`).
    I32,
    /// Signed 64-bit integer (`<i8`).
    I64,
    /// Unsigned 8-bit integer (`|u1`).
    U8,
    /// Unsigned 16-bit integer (`<u2`).
    U16,
    /// Unsigned 32-bit integer (`<u4`).
    U32,
    /// Unsigned 64-bit integer (`<u8`).
    U64,
    /// IEEE 754 half-precision float (`<f2`).
    F16,
    /// IEEE 754 single-precision float (`<f4`).
    F32,
    /// IEEE 754 double-precision float (`<f8`).
    F64,
    /// Complex number made of two `f32` (real, then imaginary) (`<c8`).
    C64,
    /// Complex number made of two `f64` (real, then imaginary) (`<c16`).
    C128,
    /// 2-byte opaque void (`<V2`/`|V2`): how ml_dtypes' bfloat16 arrays are saved.
    V2,
    /// 1-byte opaque void (`|V1`): how ml_dtypes saves its 1-byte types (`int4`, `uint4`,
    /// `float4_e2m1fn`, the float8 types, ...), which numpy cannot name. Read as raw bytes:
    /// [`crate::ClientExt::upload_npy`] takes it for a sub-byte parameter (one element per
    /// byte, as ml_dtypes stores them) and otherwise as `u8`.
    V1,
}

impl Dtype {
    /// Every dtype, in declaration order.
    pub const ALL: [Dtype; 16] = [
        Dtype::Bool,
        Dtype::I8,
        Dtype::I16,
        Dtype::I32,
        Dtype::I64,
        Dtype::U8,
        Dtype::U16,
        Dtype::U32,
        Dtype::U64,
        Dtype::F16,
        Dtype::F32,
        Dtype::F64,
        Dtype::C64,
        Dtype::C128,
        Dtype::V2,
        Dtype::V1,
    ];

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Dtype::Bool | Dtype::I8 | Dtype::U8 | Dtype::V1 => 1,
            Dtype::I16 | Dtype::U16 | Dtype::F16 | Dtype::V2 => 2,
            Dtype::I32 | Dtype::U32 | Dtype::F32 => 4,
            Dtype::I64 | Dtype::U64 | Dtype::F64 | Dtype::C64 => 8,
            Dtype::C128 => 16,
        }
    }

    /// The canonical little-endian descr NumPy writes for this dtype, e.g. `"<f4"`.
    pub fn descr(self) -> &'static str {
        match self {
            Dtype::Bool => "|b1",
            Dtype::I8 => "|i1",
            Dtype::I16 => "<i2",
            Dtype::I32 => "<i4",
            Dtype::I64 => "<i8",
            Dtype::U8 => "|u1",
            Dtype::U16 => "<u2",
            Dtype::U32 => "<u4",
            Dtype::U64 => "<u8",
            Dtype::F16 => "<f2",
            Dtype::F32 => "<f4",
            Dtype::F64 => "<f8",
            Dtype::C64 => "<c8",
            Dtype::C128 => "<c16",
            Dtype::V2 => "|V2",
            Dtype::V1 => "|V1",
        }
    }

    /// NumPy's name for this dtype, e.g. `"float32"` (`"V2"`, `"V1"` for the opaque voids).
    pub fn name(self) -> &'static str {
        match self {
            Dtype::Bool => "bool",
            Dtype::I8 => "int8",
            Dtype::I16 => "int16",
            Dtype::I32 => "int32",
            Dtype::I64 => "int64",
            Dtype::U8 => "uint8",
            Dtype::U16 => "uint16",
            Dtype::U32 => "uint32",
            Dtype::U64 => "uint64",
            Dtype::F16 => "float16",
            Dtype::F32 => "float32",
            Dtype::F64 => "float64",
            Dtype::C64 => "complex64",
            Dtype::C128 => "complex128",
            Dtype::V2 => "V2",
            Dtype::V1 => "V1",
        }
    }

    /// Size in bytes of the unit that byte order applies to: the element
    /// itself, or each half of a complex number. 1 means "no byte order".
    pub(super) fn swap_unit(self) -> usize {
        match self {
            Dtype::C64 => 4,
            Dtype::C128 => 8,
            Dtype::V2 | Dtype::V1 => 1,
            other => other.size(),
        }
    }

    /// Parses a `.npy` header `descr` string such as `"<f4"`, `">i8"`, `"|b1"`.
    ///
    /// Accepts the byte-order prefixes `<` (little-endian), `>` (big-endian),
    /// `=` (native) and `|` (not applicable, as NumPy writes for 1-byte
    /// types), or no prefix (native). `"?"` is bool; `"<V2"`/`"|V2"` is the
    /// opaque 2-byte void that ml_dtypes' bfloat16 arrays are saved as, `"|V1"`
    /// the 1-byte one of its int4, uint4, float4 and float8 arrays. The
    /// returned [`Endian`] is [`Endian::NotApplicable`] for 1-byte types and
    /// `V2`, and for `=`/`|`/no prefix it is the byte order of this machine.
    ///
    /// Anything else (strings like `<U10`, objects `O`, structured dtypes,
    /// datetimes `<M8[ns]`, `<f16` long doubles, ...) is
    /// [`NpyError::UnsupportedDtype`].
    pub fn from_descr(descr: &str) -> Result<(Dtype, Endian), NpyError> {
        let unsupported = || NpyError::UnsupportedDtype { descr: descr.to_string() };
        let (prefix, rest) = match descr.as_bytes().first() {
            Some(&c @ (b'<' | b'>' | b'=' | b'|')) => (Some(c), descr.get(1..).unwrap_or("")),
            _ => (None, descr),
        };
        let dtype = match rest {
            "?" | "b1" => Dtype::Bool,
            "i1" => Dtype::I8,
            "i2" => Dtype::I16,
            "i4" => Dtype::I32,
            "i8" => Dtype::I64,
            "u1" => Dtype::U8,
            "u2" => Dtype::U16,
            "u4" => Dtype::U32,
            "u8" => Dtype::U64,
            "f2" => Dtype::F16,
            "f4" => Dtype::F32,
            "f8" => Dtype::F64,
            "c8" => Dtype::C64,
            "c16" => Dtype::C128,
            "V2" => Dtype::V2,
            "V1" => Dtype::V1,
            _ => return Err(unsupported()),
        };
        let endian = if dtype.swap_unit() == 1 {
            Endian::NotApplicable
        } else {
            match prefix {
                Some(b'<') => Endian::Little,
                Some(b'>') => Endian::Big,
                _ => Endian::NATIVE,
            }
        };
        Ok((dtype, endian))
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Byte order of the data in a `.npy` file, as given by its descr prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Endian {
    /// Least significant byte first (`<`).
    Little,
    /// Most significant byte first (`>`).
    Big,
    /// Byte order does not matter: 1-byte types and opaque voids (`|`).
    NotApplicable,
}

impl Endian {
    /// The byte order of the machine this code runs on.
    pub const NATIVE: Endian = if cfg!(target_endian = "big") { Endian::Big } else { Endian::Little };
}

/// Byte size of an array: an error if a dimension is negative, or if the size (or the size of
/// the same shape with every zero dimension replaced by one) exceeds `isize::MAX` bytes.
pub(super) fn checked_byte_len(dtype: Dtype, dims: &[i64]) -> Result<usize, NpyError> {
    if let Some(axis) = dims.iter().position(|&d| d < 0) {
        return Err(NpyError::NegativeDimension { axis, dims: dims.to_vec() });
    }
    let overflow = || NpyError::ShapeOverflow { dtype, dims: dims.to_vec() };
    let mut bound = dtype.size();
    let mut count: usize = 1;
    for &d in dims {
        let d = usize::try_from(d).map_err(|_| overflow())?;
        bound = bound.checked_mul(d.max(1)).ok_or_else(overflow)?;
        count = count.checked_mul(d).ok_or_else(overflow)?;
    }
    if bound > isize::MAX as usize {
        return Err(overflow());
    }
    count.checked_mul(dtype.size()).ok_or_else(overflow)
}

/// The dimensions as element counts, for dimensions already checked by [`checked_byte_len`]
/// (a negative one, which that refuses, would count as 0).
pub(super) fn counts(dims: &[i64]) -> Vec<usize> {
    dims.iter().map(|&d| usize::try_from(d).unwrap_or(0)).collect()
}

/// Rust element types that map one-to-one onto a [`Dtype`].
pub trait NpyElement: Copy + private::Sealed {
    /// The dtype whose elements are this type.
    const DTYPE: Dtype;
    /// Appends the little-endian bytes of `self`.
    fn append_le(&self, out: &mut Vec<u8>);
    /// Decodes one element from exactly `DTYPE.size()` little-endian bytes
    /// (a shorter slice yields a value built from zero-filled bytes).
    fn from_le(bytes: &[u8]) -> Self;
}

mod private {
    pub trait Sealed {}
}

macro_rules! npy_element_num {
    ($($t:ty => $d:ident),* $(,)?) => {$(
        impl private::Sealed for $t {}
        impl NpyElement for $t {
            const DTYPE: Dtype = Dtype::$d;
            fn append_le(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn from_le(bytes: &[u8]) -> Self {
                let mut buf = [0u8; std::mem::size_of::<$t>()];
                let n = buf.len().min(bytes.len());
                buf[..n].copy_from_slice(&bytes[..n]);
                <$t>::from_le_bytes(buf)
            }
        }
    )*};
}

npy_element_num!(
    i8 => I8, i16 => I16, i32 => I32, i64 => I64,
    u8 => U8, u16 => U16, u32 => U32, u64 => U64,
    f32 => F32, f64 => F64,
);

macro_rules! npy_element_bits {
    ($($t:ty => $d:ident),* $(,)?) => {$(
        impl private::Sealed for $t {}
        impl NpyElement for $t {
            const DTYPE: Dtype = Dtype::$d;
            fn append_le(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn from_le(bytes: &[u8]) -> Self {
                <$t>::from_bits(<u16 as NpyElement>::from_le(bytes))
            }
        }
    )*};
}

// bfloat16 is stored as ml_dtypes (and so JAX) saves it: the opaque 2-byte void `V2`.
npy_element_bits!(pjrt_client::half::f16 => F16, pjrt_client::half::bf16 => V2);

macro_rules! npy_element_complex {
    ($($t:ty => $d:ident),* $(,)?) => {$(
        impl private::Sealed for pjrt_client::num_complex::Complex<$t> {}
        impl NpyElement for pjrt_client::num_complex::Complex<$t> {
            const DTYPE: Dtype = Dtype::$d;
            fn append_le(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.re.to_le_bytes());
                out.extend_from_slice(&self.im.to_le_bytes());
            }
            fn from_le(bytes: &[u8]) -> Self {
                let half = std::mem::size_of::<$t>();
                let re = <$t as NpyElement>::from_le(bytes.get(..half).unwrap_or(&[]));
                let im = <$t as NpyElement>::from_le(bytes.get(half..).unwrap_or(&[]));
                pjrt_client::num_complex::Complex::new(re, im)
            }
        }
    )*};
}

npy_element_complex!(f32 => C64, f64 => C128);

impl private::Sealed for bool {}
impl NpyElement for bool {
    const DTYPE: Dtype = Dtype::Bool;
    fn append_le(&self, out: &mut Vec<u8>) {
        out.push(u8::from(*self));
    }
    fn from_le(bytes: &[u8]) -> Self {
        bytes.first().is_some_and(|&b| b != 0)
    }
}

/// The element type a `.npy` dtype uploads as. `V2` (ml_dtypes' bfloat16) is bf16; `u2` data may
/// also be taken as bf16 when the program's parameter asks for it (see [`crate::ClientExt::upload_npy`]). `V1`
/// (how ml_dtypes saves int4, uint4, float4, ...) is raw bytes: `u8`, unless a sub-byte
/// parameter asks for it.
pub fn element_type_of(dtype: Dtype) -> ElementType {
    match dtype {
        Dtype::Bool => ElementType::PRED,
        Dtype::I8 => ElementType::S8,
        Dtype::I16 => ElementType::S16,
        Dtype::I32 => ElementType::S32,
        Dtype::I64 => ElementType::S64,
        Dtype::U8 | Dtype::V1 => ElementType::U8,
        Dtype::U16 => ElementType::U16,
        Dtype::U32 => ElementType::U32,
        Dtype::U64 => ElementType::U64,
        Dtype::F16 => ElementType::F16,
        Dtype::F32 => ElementType::F32,
        Dtype::F64 => ElementType::F64,
        Dtype::C64 => ElementType::C64,
        Dtype::C128 => ElementType::C128,
        Dtype::V2 => ElementType::BF16,
    }
}

/// The `.npy` dtype an element type is written as; bf16 is written as its raw bits (`<u2`).
///
/// Sub-byte types are widened, since numpy has no dtype for them (ml_dtypes saves its int4 as
/// the opaque `|V1`, which loses the type): S4, S2 and S1 as `int8` (sign-extended by
/// [`crate::BufferExt::to_npy`]), U4, U2 and U1 as `uint8`, and F4E2M1FN, F6E2M3FN, F6E3M2FN as `uint8`
/// holding the raw bit code (`float4_e2m1fn` 1.0 is 2). [`crate::ClientExt::upload_npy`] takes them back.
///
/// ```
/// use pjrt_formats::dtype_of;
/// use pjrt_formats::npy::Dtype;
/// use pjrt_client::ElementType;
/// assert_eq!(dtype_of(ElementType::S4), Some(Dtype::I8));
/// assert_eq!(dtype_of(ElementType::F4E2M1FN), Some(Dtype::U8));
/// assert_eq!(dtype_of(ElementType::F8E4M3FN), None);
/// ```
pub fn dtype_of(element_type: ElementType) -> Option<Dtype> {
    Some(match element_type {
        ElementType::PRED => Dtype::Bool,
        ElementType::S8 | ElementType::S4 | ElementType::S2 | ElementType::S1 => Dtype::I8,
        ElementType::S16 => Dtype::I16,
        ElementType::S32 => Dtype::I32,
        ElementType::S64 => Dtype::I64,
        ElementType::U8
        | ElementType::U4
        | ElementType::U2
        | ElementType::U1
        | ElementType::F4E2M1FN
        | ElementType::F6E2M3FN
        | ElementType::F6E3M2FN => Dtype::U8,
        ElementType::U16 | ElementType::BF16 => Dtype::U16,
        ElementType::U32 => Dtype::U32,
        ElementType::U64 => Dtype::U64,
        ElementType::F16 => Dtype::F16,
        ElementType::F32 => Dtype::F32,
        ElementType::F64 => Dtype::F64,
        ElementType::C64 => Dtype::C64,
        ElementType::C128 => Dtype::C128,
        _ => return None,
    })
}
