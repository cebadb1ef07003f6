//! The element types of buffers and attributes: [`DataType`], [`FfiElement`], [`Pred`],
//! [`AttrScalar`].

use std::fmt;

use crate::sys::xla_ffi as x;

/// An XLA element type (`XLA_FFI_DataType`: XLA's `PrimitiveType` numbers, not PJRT's).
///
/// ```
/// use pjrt_client::ffi::{DataType, FfiElement};
/// use pjrt_client::sys::xla_ffi::XLA_FFI_DataType;
/// assert_eq!(<f32 as FfiElement>::DATA_TYPE, DataType(XLA_FFI_DataType::F32));
/// assert_eq!(DataType(XLA_FFI_DataType::S64).name(), "s64");
/// assert_eq!(DataType(XLA_FFI_DataType(99)).name(), "unknown");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct DataType(pub x::XLA_FFI_DataType);

impl DataType {
    /// The lower-case name (`f32`, `s64`, `pred`, ...), `unknown` for a value this crate does not
    /// know.
    pub fn name(self) -> &'static str {
        use x::XLA_FFI_DataType as T;
        match self.0 {
            T::PRED => "pred",
            T::S8 => "s8",
            T::S16 => "s16",
            T::S32 => "s32",
            T::S64 => "s64",
            T::U8 => "u8",
            T::U16 => "u16",
            T::U32 => "u32",
            T::U64 => "u64",
            T::F16 => "f16",
            T::BF16 => "bf16",
            T::F32 => "f32",
            T::F64 => "f64",
            T::C64 => "c64",
            T::C128 => "c128",
            T::TOKEN => "token",
            T::INVALID => "invalid",
            _ => "unknown",
        }
    }

    pub(super) fn describe(self) -> String {
        match self.name() {
            "unknown" => format!("data type {}", self.0 .0),
            name => name.to_owned(),
        }
    }

    /// Bytes per element of the types a signature can declare.
    pub(super) fn size(self) -> usize {
        use x::XLA_FFI_DataType as T;
        match self.0 {
            T::PRED | T::S8 | T::U8 => 1,
            T::S16 | T::U16 | T::F16 | T::BF16 => 2,
            T::S32 | T::U32 | T::F32 => 4,
            T::S64 | T::U64 | T::F64 | T::C64 => 8,
            T::C128 => 16,
            _ => 1,
        }
    }

    pub(super) fn align(self) -> usize {
        use x::XLA_FFI_DataType as T;
        match self.0 {
            T::C64 => 4,
            T::C128 => 8,
            _ => self.size(),
        }
    }
}

impl fmt::Debug for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

/// A Rust type that buffer elements (and array attribute elements) of an XLA element type are
/// read as: every bit pattern of its size is a valid value. Implemented for `i8`..`i64`,
/// `u8`..`u64`, `f32`, `f64`, `half::f16`, `half::bf16`, `Complex<f32>`, `Complex<f64>` and
/// [`Pred`] (never for `bool`: a plugin may store true as any nonzero byte).
///
/// ```
/// use pjrt_client::ffi::{FfiElement, Pred};
/// assert_eq!(<i64 as FfiElement>::DATA_TYPE.name(), "s64");
/// assert_eq!(<Pred as FfiElement>::DATA_TYPE.name(), "pred");
/// assert_eq!(<pjrt_client::num_complex::Complex<f32> as FfiElement>::DATA_TYPE.name(), "c64");
/// ```
///
/// # Safety
/// `Self` has the size and at most the alignment of [`Self::DATA_TYPE`]'s elements, and every
/// bit pattern of that size is a valid `Self`.
pub unsafe trait FfiElement: Copy + Send + Sync + 'static {
    /// The XLA element type.
    const DATA_TYPE: DataType;
}

macro_rules! ffi_elements {
    ($($t:ty => $c:ident),+ $(,)?) => {$(
        // SAFETY: a plain number type of that element type's size; any bits are a value.
        unsafe impl FfiElement for $t {
            const DATA_TYPE: DataType = DataType(x::XLA_FFI_DataType::$c);
        }
    )+};
}

ffi_elements! {
    i8 => S8, i16 => S16, i32 => S32, i64 => S64, u8 => U8, u16 => U16, u32 => U32, u64 => U64,
    f32 => F32, f64 => F64, half::f16 => F16, half::bf16 => BF16,
    num_complex::Complex<f32> => C64, num_complex::Complex<f64> => C128,
}

/// An element of a `pred` buffer: the byte as stored (a plugin may store true as any nonzero
/// byte, which would not be a valid `bool`).
///
/// ```
/// use pjrt_client::ffi::Pred;
/// assert!(Pred(2).get());
/// assert!(!Pred(0).get());
/// assert_eq!(Pred::from(true), Pred(1));
/// ```
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Pred(pub u8);

impl Pred {
    /// Nonzero is true.
    pub fn get(self) -> bool {
        self.0 != 0
    }
}

impl From<bool> for Pred {
    fn from(value: bool) -> Self {
        Pred(value as u8)
    }
}

// SAFETY: one byte, any value.
unsafe impl FfiElement for Pred {
    const DATA_TYPE: DataType = DataType(x::XLA_FFI_DataType::PRED);
}

/// A type a scalar attribute is read as: the numbers of [`FfiElement`] and `bool` (read from
/// its byte, nonzero is true).
///
/// ```
/// use pjrt_client::ffi::AttrScalar;
/// assert_eq!(<bool as AttrScalar>::DATA_TYPE.name(), "pred");
/// assert_eq!(<f64 as AttrScalar>::DATA_TYPE.name(), "f64"); // what a Python float arrives as
/// ```
pub trait AttrScalar: Copy + sealed::Sealed + 'static {
    /// The XLA element type of the scalar.
    const DATA_TYPE: DataType;
    /// Reads it.
    ///
    /// # Safety
    /// `ptr` is non-NULL, aligned and holds a value of [`Self::DATA_TYPE`].
    #[doc(hidden)]
    unsafe fn read(ptr: *const u8) -> Self;
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! attr_scalars {
    ($($t:ty),+) => {$(
        impl sealed::Sealed for $t {}
        impl AttrScalar for $t {
            const DATA_TYPE: DataType = <$t as FfiElement>::DATA_TYPE;
            unsafe fn read(ptr: *const u8) -> Self {
                // SAFETY: the caller's contract; any bits are a value of a number type.
                unsafe { ptr.cast::<$t>().read() }
            }
        }
    )+};
}

attr_scalars!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

impl sealed::Sealed for bool {}
impl AttrScalar for bool {
    const DATA_TYPE: DataType = DataType(x::XLA_FFI_DataType::PRED);
    unsafe fn read(ptr: *const u8) -> Self {
        // SAFETY: the caller's contract; read as a byte, never as a bool.
        unsafe { ptr.read() != 0 }
    }
}
