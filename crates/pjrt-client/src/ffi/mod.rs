//! Custom calls written in Rust: typed XLA FFI handlers.
//!
//! A JAX program calls native code through a typed custom call (`stablehlo.custom_call` with
//! `api_version = 4`; `jax.ffi.ffi_call` in Python): XLA finds the handler by target name and
//! platform, and calls it with a *call frame* holding the operands, the result buffers and the
//! attributes. This module lets a Rust function be such a handler:
//!
//! 1. declare what it takes, a [`Signature`]: operand and result buffers (element type and rank,
//!    or any rank) and named attributes (scalars `i8`..`i64`, `u8`..`u64`, `f32`, `f64`, `bool`;
//!    arrays of numbers; strings). Python floats arrive as `f64`, Python ints as `i64`, enums as
//!    their integer;
//! 2. make a [`Handler`] from it and a closure that reads them through [`Call`];
//! 3. [`register`] it for a target name on a client's plugin, before compiling the programs that
//!    call it.
//!
//! ```
//! use pjrt_client::ffi::{self, Call, FfiError, Handler, Rank, Signature};
//! use pjrt_client::{Client, ClientOptions, CompileOptions, ExecuteOptions, Plugin, Program};
//! # fn main() -> pjrt_client::Result<()> {
//! let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
//! let client = Client::new(&plugin, &ClientOptions::new())?;
//!
//! // y = x * scale + offset, on f32 vectors.
//! let signature = Signature::new().arg::<f32>(Rank::Exact(1)).ret::<f32>(Rank::Exact(1))
//!     .attr::<f32>("scale").attr::<f64>("offset");
//! let handler = Handler::new("doc_affine", signature, |call: &Call| {
//!     let x = call.arg::<f32>(0)?;
//!     let scale: f32 = call.attr("scale")?;
//!     let offset = call.attr::<f64>("offset")? as f32;
//!     let mut y = call.ret::<f32>(0)?;
//!     if y.dims() != x.dims() {
//!         return Err(FfiError::invalid_argument("x and y differ in shape"));
//!     }
//!     y.copy_from_iter(x.as_slice().iter().map(|v| v * scale + offset));
//!     Ok(())
//! });
//! ffi::register(&client, "doc_affine", &handler)?;
//!
//! let program = Program::mlir_text(r#"
//! func.func public @main(%x: tensor<3xf32>) -> tensor<3xf32> {
//!   %y = stablehlo.custom_call @doc_affine(%x) {api_version = 4 : i32,
//!       backend_config = {scale = 2.0 : f32, offset = 0.5 : f64}} : (tensor<3xf32>) -> tensor<3xf32>
//!   return %y : tensor<3xf32>
//! }"#)?;
//! let exe = client.compile(&program, &CompileOptions::new())?;
//! let x = client.upload(&[1.0f32, 2.0, 3.0], &[3])?;
//! let y = exe.execute(&[&x], &ExecuteOptions::new())?[0].to_vec::<f32>()?;
//! assert_eq!(y, [2.5, 4.5, 6.5]);
//! # Ok(()) }
//! ```
//!
//! # What a handler checks
//! Before the closure runs, the call frame is decoded against the signature (see
//! [`FrameError`]): every struct is read by its own `struct_size` and no further (a shorter,
//! older struct is refused; of a longer, newer one only the known prefix is read), counts are
//! bounded, pointers are checked for NULL and alignment, every type tag, element type, rank and
//! attribute name and type is compared with the declaration (missing and extra attributes are
//! refused), and results must not overlap each other or an operand, except a result declared
//! with [`Signature::ret_aliasing`], which may be exactly its operand's memory (what
//! `output_operand_aliases` makes XLA pass) and is then written in place ([`Call::ret_in_place`]). A mismatch, an error the
//! closure returns, and a panic of the closure (caught at the C boundary) all come back to XLA
//! as an XLA FFI error naming what went wrong; the execution then fails with that message.
//!
//! What cannot be checked is the size of the memory behind a pointer: a non-NULL buffer is
//! taken to hold what its dimensions say, as the XLA FFI ABI promises. Errors are made with the
//! frame's own `XLA_FFI_Api`; a frame without a usable one (none, or of another major version;
//! XLA always passes its own) cannot get its error back: the function does not run, no result is
//! written, and the handler returns no error object.
//!
//! # Versions
//! The handler answers XLA's metadata query (made when it is registered) with
//! min(this crate's XLA FFI version, [`crate::sys::xla_ffi::XLA_FFI_API_MINOR`] = 0.4, the version of
//! the API in the query's frame): XLA refuses a handler that claims a newer minor than its own.
//! The 0.106 CPU plugin speaks XLA FFI 0.3 (an `XLA_FFI_Api` of 192 bytes), the 0.115 one 0.4
//! (200 bytes); their call frames are 168 bytes.
//!
//! # Limits
//! - Only the **execute** stage is reachable through PJRT (its FFI extension registers one
//!   function, the execute handler): no instantiate, prepare or initialize stage, and no
//!   per-instance state. A frame for another stage is refused.
//! - Operands and results are buffers (tokens and dictionaries are not supported); buffers of
//!   `pred` are read as [`Pred`] bytes, never as `bool`.
//! - Handlers are not command-buffer compatible (the trait is not claimed).
//! - The plugin's handler registry is global to the loaded plugin and permanent: a registration
//!   cannot be undone, and a target name, once registered, stays with its handler until the
//!   process exits. At most [`MAX_HANDLERS`] handlers can be registered in a process.
//!
//! # Registration
//! [`register`] registers once per loaded plugin (not per client): a second call with the same
//! handler for the same target is a no-op, with a different handler it is refused
//! ([`RegistrationErrorKind::Conflict`]). The plugin's own answer to `register_handler` proves
//! nothing (it answers OK when nothing was registered: when the handler does not answer the
//! metadata query, claims a newer FFI minor than the plugin's, or when a different handler
//! already holds the name), so each registration is proven by compiling a one-op program that
//! calls the target: before registering (it must fail: otherwise someone else, e.g. a raw
//! [`crate::extensions::FfiExtension::register_handler`], holds the name:
//! [`RegistrationErrorKind::TakenElsewhere`]) and after (it must compile:
//! [`RegistrationErrorKind::NotProven`] otherwise).
//!
//! # Built-in handlers
//! Handlers a program needs without knowing it (JAX's LAPACK kernels, which jaxlib registers in
//! its own process) come from a [`BuiltinProvider`]: [`crate::Client::compile`] and
//! [`crate::Client::deserialize_and_load`] let every provider of the client's options
//! ([`crate::ClientOptions::builtin_provider`]) and of the process ([`add_provider`]) register what
//! the program calls ([`register_builtin`]) before the plugin sees it. This crate has no provider
//! of its own: the crate pjrt-lapack's `client` feature has the one for JAX's LAPACK kernels, and
//! a program that calls one with no provider installed is refused with the line that installs it
//! ([`crate::Error::MissingBuiltinProvider`]).

mod decode;
#[doc(hidden)]
pub mod frames;
#[doc(hidden)]
pub mod library;
#[cfg(test)]
mod tests;
mod trampoline;

pub use crate::client::builtins::{add_provider, providers, BuiltinProvider};
pub use decode::{FrameError, MAX_COUNT, MAX_RANK, MAX_STRING};
pub use library::{FfiLibrary, FfiLibraryEntry, FfiLibraryTable};
pub use trampoline::MAX_HANDLERS;

use std::cell::Cell;
use std::collections::HashMap;
use std::fmt;
use std::mem::MaybeUninit;
use std::sync::{Arc, Mutex, OnceLock};

use crate::error::{Error, ErrorCode, Result};

use crate::client::Client;
use crate::compile_options::CompileOptions;
use crate::program::Program;
use crate::sys::xla_ffi as x;

use decode::{Decoded, RawAttr, RawBuffer};

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

    fn describe(self) -> String {
        match self.name() {
            "unknown" => format!("data type {}", self.0 .0),
            name => name.to_owned(),
        }
    }

    /// Bytes per element of the types a signature can declare.
    fn size(self) -> usize {
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

    fn align(self) -> usize {
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

/// The rank a buffer is declared with.
///
/// ```
/// use pjrt_client::ffi::{Rank, Signature};
/// let matrix_in_any_out = Signature::new().arg::<f32>(Rank::Exact(2)).ret::<f32>(Rank::Any);
/// assert_eq!(matrix_in_any_out.arg_count(), 1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rank {
    /// Exactly this many dimensions.
    Exact(usize),
    /// Any rank (up to [`MAX_RANK`]).
    Any,
}

/// A declared buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BufferSpec {
    pub(crate) dtype: DataType,
    pub(crate) rank: Option<usize>,
    /// For a result: the operand whose memory it may be (`output_operand_aliases`).
    pub(crate) alias: Option<usize>,
}

/// A declared attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AttrSpec {
    Scalar(DataType),
    Array(DataType),
    Str,
}

impl AttrSpec {
    fn describe(self) -> String {
        match self {
            AttrSpec::Scalar(t) => format!("a scalar of {}", t.describe()),
            AttrSpec::Array(t) => format!("an array of {}", t.describe()),
            AttrSpec::Str => "a string".to_owned(),
        }
    }
}

/// What a handler takes: operand buffers, result buffers and named attributes, in order.
///
/// ```
/// use pjrt_client::ffi::{Rank, Signature};
/// let signature = Signature::new()
///     .arg::<f32>(Rank::Exact(2))
///     .arg::<i64>(Rank::Any)
///     .ret::<f64>(Rank::Exact(0))
///     .attr::<bool>("transpose")
///     .attr_array::<i64>("axes")
///     .attr_str("mode");
/// assert_eq!(signature.arg_count(), 2);
/// assert_eq!(signature.ret_count(), 1);
/// assert_eq!(signature.attr_names().collect::<Vec<_>>(), ["transpose", "axes", "mode"]);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Signature {
    pub(crate) args: Vec<BufferSpec>,
    pub(crate) rets: Vec<BufferSpec>,
    pub(crate) attrs: Vec<(String, AttrSpec)>,
}

impl Signature {
    /// No operands, results or attributes.
    pub fn new() -> Signature {
        Signature::default()
    }

    /// One more operand: a buffer of `T` of `rank`.
    pub fn arg<T: FfiElement>(mut self, rank: Rank) -> Signature {
        self.args.push(BufferSpec { dtype: T::DATA_TYPE, rank: rank.into(), alias: None });
        self
    }

    /// One more result: a buffer of `T` of `rank`.
    pub fn ret<T: FfiElement>(mut self, rank: Rank) -> Signature {
        self.rets.push(BufferSpec { dtype: T::DATA_TYPE, rank: rank.into(), alias: None });
        self
    }

    /// One more result that may be the memory of operand `operand` (a program that declares
    /// `output_operand_aliases` for it hands both as the same buffer), of the operand's element
    /// type and rank. Read and write it with [`Call::ret_in_place`]: it holds the operand's
    /// values whether XLA aliased the two or not.
    ///
    /// ```
    /// use pjrt_client::ffi::{Rank, Signature};
    /// let in_place = Signature::new().arg::<f64>(Rank::Any).ret_aliasing(0);
    /// assert_eq!(in_place.ret_count(), 1);
    /// ```
    ///
    /// # Panics
    /// If operand `operand` is not declared yet.
    pub fn ret_aliasing(mut self, operand: usize) -> Signature {
        let Some(arg) = self.args.get(operand) else {
            panic!("Signature::ret_aliasing({operand}): only {} operands are declared", self.args.len())
        };
        self.rets.push(BufferSpec { alias: Some(operand), ..*arg });
        self
    }

    /// A scalar attribute `name` of type `T` (a name declared twice keeps its last declaration).
    pub fn attr<T: AttrScalar>(self, name: &str) -> Signature {
        self.with_attr(name, AttrSpec::Scalar(T::DATA_TYPE))
    }

    /// An array attribute `name` of elements `T` (from a dense array or numpy array attribute).
    pub fn attr_array<T: FfiElement>(self, name: &str) -> Signature {
        self.with_attr(name, AttrSpec::Array(T::DATA_TYPE))
    }

    /// A string attribute `name`.
    pub fn attr_str(self, name: &str) -> Signature {
        self.with_attr(name, AttrSpec::Str)
    }

    fn with_attr(mut self, name: &str, spec: AttrSpec) -> Signature {
        self.attrs.retain(|(n, _)| n != name);
        self.attrs.push((name.to_owned(), spec));
        self
    }

    /// The number of operands.
    pub fn arg_count(&self) -> usize {
        self.args.len()
    }

    /// The number of results.
    pub fn ret_count(&self) -> usize {
        self.rets.len()
    }

    /// The attribute names, in declaration order.
    pub fn attr_names(&self) -> impl Iterator<Item = &str> {
        self.attrs.iter().map(|(n, _)| n.as_str())
    }
}

impl From<Rank> for Option<usize> {
    fn from(rank: Rank) -> Self {
        match rank {
            Rank::Exact(rank) => Some(rank),
            Rank::Any => None,
        }
    }
}

/// An error a handler returns to XLA: a status code and a message. The execution that ran the
/// handler fails with it.
///
/// ```
/// use pjrt_client::ffi::FfiError;
/// use pjrt_client::ErrorCode;
/// let e = FfiError::invalid_argument("n must be positive");
/// assert_eq!(e.code(), ErrorCode::InvalidArgument);
/// assert_eq!(e.message(), "n must be positive");
/// assert_eq!(FfiError::from("boom".to_string()).code(), ErrorCode::Internal);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct FfiError {
    code: ErrorCode,
    message: String,
}

impl FfiError {
    /// An error with this code.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> FfiError {
        FfiError { code, message: message.into() }
    }

    /// `INVALID_ARGUMENT`.
    pub fn invalid_argument(message: impl Into<String>) -> FfiError {
        FfiError::new(ErrorCode::InvalidArgument, message)
    }

    /// `INTERNAL`.
    pub fn internal(message: impl Into<String>) -> FfiError {
        FfiError::new(ErrorCode::Internal, message)
    }

    /// The status code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl From<String> for FfiError {
    fn from(message: String) -> Self {
        FfiError::internal(message)
    }
}

impl From<&str> for FfiError {
    fn from(message: &str) -> Self {
        FfiError::internal(message)
    }
}

impl From<FrameError> for FfiError {
    fn from(e: FrameError) -> Self {
        FfiError::invalid_argument(e.to_string())
    }
}

/// An operand, read-only (from [`Call::arg`]).
///
/// ```
/// use pjrt_client::ffi::{Call, FfiError, Handler, Rank, Signature};
/// let sum_rows = Handler::new("sum_rows", Signature::new().arg::<f64>(Rank::Exact(2)).ret::<f64>(Rank::Exact(1)), |call: &Call| {
///     let x = call.arg::<f64>(0)?;
///     let [rows, cols] = [x.dims()[0] as usize, x.dims()[1] as usize];
///     let mut y = call.ret::<f64>(0)?;
///     y.copy_from_iter((0..rows).map(|r| x.as_slice()[r * cols..(r + 1) * cols].iter().sum()));
///     Ok::<(), FfiError>(())
/// });
/// assert_eq!(sum_rows.name(), "sum_rows");
/// ```
#[derive(Debug)]
pub struct BufferRef<'a, T> {
    dims: &'a [i64],
    data: &'a [T],
}

impl<'a, T> BufferRef<'a, T> {
    /// The dimensions.
    pub fn dims(&self) -> &'a [i64] {
        self.dims
    }

    /// The elements, row-major (XLA's default layout for custom-call operands).
    pub fn as_slice(&self) -> &'a [T] {
        self.data
    }
}

/// A result, to be written (from [`Call::ret`]). XLA hands out result memory uninitialised:
/// read it only after writing it, through [`BufferMut::as_mut_slice`] (which zero-fills it
/// first) or [`BufferMut::as_uninit_mut`].
///
/// ```
/// use pjrt_client::ffi::{Call, Handler, Rank, Signature};
/// let iota = Handler::new("iota", Signature::new().ret::<i32>(Rank::Exact(1)), |call: &Call| {
///     let mut out = call.ret::<i32>(0)?;
///     for (i, v) in out.as_mut_slice().iter_mut().enumerate() {
///         *v = i as i32;
///     }
///     Ok(())
/// });
/// assert_eq!(iota.signature().ret_count(), 1);
/// ```
#[derive(Debug)]
pub struct BufferMut<'a, T> {
    dims: &'a [i64],
    data: &'a mut [MaybeUninit<T>],
    initialized: bool,
}

impl<T: FfiElement> BufferMut<'_, T> {
    /// The dimensions.
    pub fn dims(&self) -> &[i64] {
        self.dims
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The elements, uninitialised until written.
    pub fn as_uninit_mut(&mut self) -> &mut [MaybeUninit<T>] {
        self.data
    }

    /// The elements as initialised values: zero-filled on the first call (one `memset`), so
    /// reading them is defined.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        if !self.initialized {
            // SAFETY: writing zero bytes over the buffer's own elements; zero is a valid value
            // of every `FfiElement`.
            unsafe { std::ptr::write_bytes(self.data.as_mut_ptr(), 0, self.data.len()) };
            self.initialized = true;
        }
        // SAFETY: every element is initialised (zero-filled above, or written since).
        unsafe { &mut *(self.data as *mut [MaybeUninit<T>] as *mut [T]) }
    }

    /// Writes the elements from `values` (as many as both have); returns how many were written.
    pub fn copy_from_iter(&mut self, values: impl IntoIterator<Item = T>) -> usize {
        let mut n = 0;
        for (slot, value) in self.data.iter_mut().zip(values) {
            slot.write(value);
            n += 1;
        }
        if n == self.data.len() {
            self.initialized = true;
        }
        n
    }

    /// Writes all elements from `values`, which must have [`Self::len`] of them.
    pub fn copy_from_slice(&mut self, values: &[T]) -> std::result::Result<(), FfiError> {
        if values.len() != self.data.len() {
            return Err(FfiError::invalid_argument(format!(
                "copy_from_slice: {} values for a result of {} elements",
                values.len(),
                self.data.len()
            )));
        }
        self.copy_from_iter(values.iter().copied());
        Ok(())
    }
}

/// One call of a handler: its operands, results and attributes, already checked against the
/// handler's [`Signature`]. Reading one with another type than declared, or one not declared,
/// is an error (never a reinterpretation); each result can be taken once.
///
/// ```
/// use pjrt_client::ffi::{Call, FfiError, Handler, Rank, Signature};
/// let signature = Signature::new().arg::<f32>(Rank::Any).ret::<f32>(Rank::Any)
///     .attr::<bool>("negate").attr_array::<f32>("bias").attr_str("note");
/// let handler = Handler::new("biased", signature, |call: &Call| {
///     let negate: bool = call.attr("negate")?;
///     let bias = call.attr_array::<f32>("bias")?;
///     let _note = call.attr_str("note")?;
///     let x = call.arg::<f32>(0)?;
///     let mut y = call.ret::<f32>(0)?;
///     let b = bias.first().copied().unwrap_or(0.0);
///     y.copy_from_iter(x.as_slice().iter().map(|v| if negate { -v + b } else { v + b }));
///     Ok::<(), FfiError>(())
/// });
/// assert_eq!(handler.signature().attr_names().count(), 3);
/// ```
pub struct Call<'a> {
    name: &'a str,
    signature: &'a Signature,
    decoded: &'a Decoded,
    /// Per result, then per operand: whether it was handed out (one allocation for both).
    taken: Vec<Cell<bool>>,
}

impl fmt::Debug for Call<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Call").field("handler", &self.name).field("signature", self.signature).finish()
    }
}

impl<'a> Call<'a> {
    /// The handler's name.
    pub fn handler_name(&self) -> &str {
        self.name
    }

    fn buffer_for<T: FfiElement>(
        &self,
        what: &str,
        i: usize,
        buffers: &'a [RawBuffer],
    ) -> std::result::Result<&'a RawBuffer, FfiError> {
        let buffer = buffers.get(i).ok_or_else(|| {
            FfiError::invalid_argument(format!("{what} {i} does not exist: the signature declares {}", buffers.len()))
        })?;
        if buffer.dtype != T::DATA_TYPE {
            return Err(FfiError::invalid_argument(format!(
                "{what} {i} is declared as {}, but was read as {}",
                buffer.dtype.name(),
                T::DATA_TYPE.name()
            )));
        }
        Ok(buffer)
    }

    /// Operand `i`, read as `T` (its declared element type).
    pub fn arg<T: FfiElement>(&self, i: usize) -> std::result::Result<BufferRef<'a, T>, FfiError> {
        let buffer = self.buffer_for::<T>("operand", i, &self.decoded.args)?;
        if let Some(r) = self.aliased_result_of(i) {
            if self.taken[r].get() {
                return Err(FfiError::invalid_argument(format!(
                    "operand {i} is the memory of result {r}, which was taken: read its values through that result"
                )));
            }
        }
        self.arg_taken(i).set(true);
        let data = if buffer.elements == 0 {
            &[][..]
        } else {
            // SAFETY: decoding checked that `data` is non-NULL and aligned for this element type
            // (T has its size and alignment, FfiElement's contract) and holds `elements`
            // elements (the frame's promise); operands are only read during the call, and no
            // result overlaps them (checked).
            unsafe { std::slice::from_raw_parts(buffer.data.cast::<T>().cast_const(), buffer.elements) }
        };
        Ok(BufferRef { dims: &buffer.dims, data })
    }

    /// Result `i`, written as `T` (its declared element type). Each result can be taken once
    /// per call.
    pub fn ret<T: FfiElement>(&self, i: usize) -> std::result::Result<BufferMut<'a, T>, FfiError> {
        let buffer = self.take_ret::<T>(i)?;
        let data = if buffer.elements == 0 {
            &mut [][..]
        } else {
            // SAFETY: as for operands, and: the memory is writable (results), overlaps no other
            // result or operand except its aliased operand, which is not read through `arg`
            // while the result is out (`take_ret`), and is handed out once per call (`taken`).
            unsafe { std::slice::from_raw_parts_mut(buffer.data.cast::<MaybeUninit<T>>(), buffer.elements) }
        };
        Ok(BufferMut { dims: &buffer.dims, data, initialized: false })
    }

    /// Result `i`, declared with [`Signature::ret_aliasing`], holding its operand's values:
    /// the operand's own memory when XLA aliased the two (nothing is copied), otherwise a copy
    /// made into the result. The operand cannot be read through [`Call::arg`] while this is out
    /// (nor this taken after it was read), when the two are one memory.
    ///
    /// ```
    /// use pjrt_client::ffi::{Call, Handler, Rank, Signature};
    /// let negate = Handler::new("negate", Signature::new().arg::<f32>(Rank::Any).ret_aliasing(0), |call: &Call| {
    ///     for v in call.ret_in_place::<f32>(0)?.as_mut_slice() {
    ///         *v = -*v;
    ///     }
    ///     Ok(())
    /// });
    /// assert_eq!(negate.signature().ret_count(), 1);
    /// ```
    pub fn ret_in_place<T: FfiElement>(&self, i: usize) -> std::result::Result<BufferMut<'a, T>, FfiError> {
        let Some(operand) = self.signature.rets.get(i).and_then(|r| r.alias) else {
            return Err(FfiError::invalid_argument(format!(
                "result {i} is not declared with Signature::ret_aliasing: take it with Call::ret"
            )));
        };
        let buffer = self.take_ret::<T>(i)?;
        let source = &self.decoded.args[operand];
        if buffer.dims != source.dims {
            return Err(FfiError::invalid_argument(format!(
                "result {i} ({:?}) and operand {operand} ({:?}) differ in shape: it cannot hold the operand's values",
                buffer.dims, source.dims
            )));
        }
        let mut out = BufferMut { dims: &buffer.dims, data: &mut [], initialized: true };
        if buffer.elements == 0 {
            return Ok(out);
        }
        // SAFETY: as in `ret`; the result is the operand's memory or disjoint from it (checked
        // when decoding), and of the same element count (same dims, same type: declared so).
        out.data = unsafe { std::slice::from_raw_parts_mut(buffer.data.cast::<MaybeUninit<T>>(), buffer.elements) };
        if !self.decoded.aliased[i] {
            // SAFETY: the operand holds `elements` values of T (as in `arg`) and does not
            // overlap the result (checked when decoding).
            unsafe {
                std::ptr::copy_nonoverlapping(
                    source.data.cast::<T>().cast_const(),
                    out.data.as_mut_ptr().cast::<T>(),
                    buffer.elements,
                )
            };
        }
        Ok(out)
    }

    /// The result, once: refused when taken before, or when it is its operand's memory and that
    /// operand was read through `arg`.
    fn take_ret<T: FfiElement>(&self, i: usize) -> std::result::Result<&'a RawBuffer, FfiError> {
        let buffer = self.buffer_for::<T>("result", i, &self.decoded.rets)?;
        if self.decoded.aliased[i] {
            if let Some(operand) = self.signature.rets[i].alias {
                if self.arg_taken(operand).get() {
                    return Err(FfiError::invalid_argument(format!(
                        "result {i} is the memory of operand {operand}, which was read through Call::arg: take \
                         the result with Call::ret_in_place and read the values there"
                    )));
                }
            }
        }
        if self.taken[i].replace(true) {
            return Err(FfiError::invalid_argument(format!("result {i} was taken twice in one call")));
        }
        Ok(buffer)
    }

    /// Whether operand `i` was read through `arg` (its flag after the results').
    fn arg_taken(&self, i: usize) -> &Cell<bool> {
        &self.taken[self.decoded.rets.len() + i]
    }

    /// The result that is operand `i`'s memory in this call, if any.
    fn aliased_result_of(&self, i: usize) -> Option<usize> {
        self.signature.rets.iter().enumerate().position(|(r, spec)| spec.alias == Some(i) && self.decoded.aliased[r])
    }

    fn attr_index(&self, name: &str) -> std::result::Result<usize, FfiError> {
        self.signature.attrs.iter().position(|(n, _)| n == name).ok_or_else(|| {
            FfiError::invalid_argument(format!("the attribute `{name}` is not declared in the handler's signature"))
        })
    }

    /// The scalar attribute `name`, as `T` (its declared type).
    pub fn attr<T: AttrScalar>(&self, name: &str) -> std::result::Result<T, FfiError> {
        let index = self.attr_index(name)?;
        match &self.decoded.attrs[index] {
            // SAFETY: decoding checked the value non-NULL, aligned and of this data type.
            RawAttr::Scalar { dtype, value } if *dtype == T::DATA_TYPE => Ok(unsafe { T::read(*value) }),
            _ => Err(self.wrong_type(name, index, &format!("a scalar of {}", T::DATA_TYPE.name()))),
        }
    }

    /// The array attribute `name`, as elements `T` (its declared element type).
    pub fn attr_array<T: FfiElement>(&self, name: &str) -> std::result::Result<&'a [T], FfiError> {
        let index = self.attr_index(name)?;
        match &self.decoded.attrs[index] {
            RawAttr::Array { dtype, data, len } if *dtype == T::DATA_TYPE => Ok(if *len == 0 {
                &[][..]
            } else {
                // SAFETY: decoding checked `data` non-NULL and aligned, of this data type, and
                // `len * size` within an address space; the frame promises `len` elements.
                unsafe { std::slice::from_raw_parts(data.cast::<T>(), *len) }
            }),
            _ => Err(self.wrong_type(name, index, &format!("an array of {}", T::DATA_TYPE.name()))),
        }
    }

    /// The string attribute `name` (an error if it is not UTF-8; see [`Call::attr_bytes`]).
    pub fn attr_str(&self, name: &str) -> std::result::Result<&'a str, FfiError> {
        let bytes = self.attr_bytes(name)?;
        std::str::from_utf8(bytes)
            .map_err(|_| FfiError::invalid_argument(format!("the attribute `{name}` is not UTF-8")))
    }

    /// The string attribute `name`, as bytes.
    pub fn attr_bytes(&self, name: &str) -> std::result::Result<&'a [u8], FfiError> {
        let index = self.attr_index(name)?;
        match &self.decoded.attrs[index] {
            RawAttr::Str { data, len } => Ok(if *len == 0 {
                &[][..]
            } else {
                // SAFETY: decoding checked `data` non-NULL; the frame promises `len` bytes.
                unsafe { std::slice::from_raw_parts(*data, *len) }
            }),
            _ => Err(self.wrong_type(name, index, "a string")),
        }
    }

    fn wrong_type(&self, name: &str, index: usize, asked: &str) -> FfiError {
        FfiError::invalid_argument(format!(
            "the attribute `{name}` is declared as {}, but was read as {asked}",
            self.signature.attrs[index].1.describe()
        ))
    }
}

type HandlerFn = dyn Fn(&Call<'_>) -> std::result::Result<(), FfiError> + Send + Sync;

pub(crate) struct HandlerInner {
    name: String,
    signature: Signature,
    function: Box<HandlerFn>,
}

/// A Rust function as an XLA FFI handler: a [`Signature`] and a closure. Cheap to clone (clones
/// are the same handler for [`register`]). See the [module docs](self) for a complete example.
///
/// ```
/// use pjrt_client::ffi::{Call, Handler, Signature};
/// let noop = Handler::new("noop", Signature::new(), |_: &Call| Ok(()));
/// let same = noop.clone();
/// assert_eq!(same.name(), "noop");
/// assert_eq!(same.signature(), &Signature::new());
/// ```
#[derive(Clone)]
pub struct Handler {
    inner: Arc<HandlerInner>,
}

impl fmt::Debug for Handler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handler").field("name", &self.inner.name).field("signature", &self.inner.signature).finish()
    }
}

impl Handler {
    /// A handler named `name` (used in its error messages) taking `signature`, running
    /// `function` for every call (possibly on several threads at once).
    pub fn new<F>(name: &str, signature: Signature, function: F) -> Handler
    where
        F: Fn(&Call<'_>) -> std::result::Result<(), FfiError> + Send + Sync + 'static,
    {
        Handler { inner: Arc::new(HandlerInner { name: name.to_owned(), signature, function: Box::new(function) }) }
    }

    /// The name given to [`Handler::new`].
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The signature.
    pub fn signature(&self) -> &Signature {
        &self.inner.signature
    }

    /// A C entry point (`XLA_FFI_Handler`) for this handler, for registering it by other means
    /// than [`register`] (another runtime's registry, a test that builds frames). Each call
    /// claims one of the process's [`MAX_HANDLERS`] entry points, for good; `None` when none is
    /// left.
    ///
    /// ```
    /// use pjrt_client::ffi::{Call, Handler, Signature};
    /// let handler = Handler::new("t", Signature::new(), |_: &Call| Ok(()));
    /// let entry = handler.entry_point().expect("a free entry point");
    /// // SAFETY: NULL is a frame the entry point accepts (it refuses it; with no API to report
    /// // through, it returns no error object).
    /// assert!(unsafe { entry(std::ptr::null_mut()) }.is_null());
    /// ```
    pub fn entry_point(&self) -> Option<x::XLA_FFI_Handler> {
        trampoline::claim(self.inner.clone())
    }

    /// Runs the handler on a call frame, as XLA would, and returns what it would return to XLA
    /// (`Ok` or the error); for tests of frames built by hand.
    ///
    /// ```
    /// use pjrt_client::ffi::{Call, Handler, Signature};
    /// let handler = Handler::new("t", Signature::new(), |_: &Call| Ok(()));
    /// // SAFETY: NULL is a frame this accepts (and refuses).
    /// let err = unsafe { handler.call_frame(std::ptr::null_mut()) }.unwrap_err();
    /// assert_eq!(err.message(), "handler `t`: the call frame is NULL");
    /// ```
    ///
    /// # Safety
    /// `frame` is NULL or a call frame as the XLA FFI ABI describes it: every non-NULL pointer
    /// in it points to what the ABI says, readable (results: writable) for the sizes its
    /// structs state.
    pub unsafe fn call_frame(&self, frame: *mut x::XLA_FFI_CallFrame) -> std::result::Result<(), FfiError> {
        // SAFETY: the caller's contract.
        match unsafe { self.inner.run(frame) } {
            Outcome::Done => Ok(()),
            Outcome::Failed(e) => Err(e),
        }
    }
}

pub(crate) enum Outcome {
    Done,
    Failed(FfiError),
}

impl HandlerInner {
    /// Decodes the frame, answers a metadata query or runs the function (panics caught).
    ///
    /// # Safety
    /// As [`Handler::call_frame`].
    pub(crate) unsafe fn run(&self, frame: *mut x::XLA_FFI_CallFrame) -> Outcome {
        let decoded = match crate::call::panic::catch(|| {
            // SAFETY: the caller's contract.
            unsafe { decode::decode(frame, &self.signature) }
        }) {
            Ok(Ok(decoded)) => decoded,
            Ok(Err(e)) => return Outcome::Failed(FfiError::invalid_argument(format!("handler `{}`: {e}", self.name))),
            Err(panic) => {
                return Outcome::Failed(FfiError::internal(format!(
                    "handler `{}`: decoding panicked: {panic}",
                    self.name
                )))
            }
        };
        match decoded {
            decode::Request::Metadata(metadata) => {
                // SAFETY: the caller's contract: the frame's api (if any) is a table.
                let theirs = unsafe { decode::frame_api(frame).and_then(|api| decode::api_version(api)) };
                // SAFETY: `metadata` is the non-NULL metadata struct of the frame's extension.
                match unsafe { answer_metadata(metadata, theirs) } {
                    Ok(()) => Outcome::Done,
                    Err(e) => Outcome::Failed(FfiError::invalid_argument(format!("handler `{}`: {e}", self.name))),
                }
            }
            decode::Request::Execute(decoded) => {
                let call = Call {
                    name: &self.name,
                    signature: &self.signature,
                    decoded: &decoded,
                    taken: (0..decoded.rets.len() + decoded.args.len()).map(|_| Cell::new(false)).collect(),
                };
                match crate::call::panic::catch(|| (self.function)(&call)) {
                    Ok(Ok(())) => Outcome::Done,
                    Ok(Err(e)) => {
                        Outcome::Failed(FfiError::new(e.code, format!("handler `{}`: {}", self.name, e.message)))
                    }
                    Err(panic) => {
                        Outcome::Failed(FfiError::internal(format!("handler `{}` panicked: {panic}", self.name)))
                    }
                }
            }
        }
    }
}

/// The FFI version a handler claims: min(ours, the frame's API version); ours when the frame
/// has no readable API.
pub(crate) fn claimed_version(theirs: Option<(i32, i32)>) -> (i32, i32) {
    let ours = (x::XLA_FFI_API_MAJOR, x::XLA_FFI_API_MINOR);
    match theirs {
        Some(theirs) if theirs < ours => theirs,
        _ => ours,
    }
}

/// # Safety
/// `metadata` is non-NULL and points to a writable `XLA_FFI_Metadata` of its `struct_size`.
unsafe fn answer_metadata(
    metadata: *mut x::XLA_FFI_Metadata,
    theirs: Option<(i32, i32)>,
) -> std::result::Result<(), FrameError> {
    use crate::sys::Args as _;
    if (metadata as usize) % std::mem::align_of::<x::XLA_FFI_Metadata>() != 0 {
        return Err(FrameError::Misaligned("the metadata".into()));
    }
    // SAFETY: non-NULL, aligned; the size first.
    let size = unsafe { metadata.cast::<usize>().read() };
    if size < x::XLA_FFI_Metadata::STRUCT_SIZE {
        return Err(FrameError::TooShort { what: "the metadata", size, expected: x::XLA_FFI_Metadata::STRUCT_SIZE });
    }
    let (major, minor) = claimed_version(theirs);
    // SAFETY: the struct holds the fields written (its size, checked); only the version numbers
    // and the traits are written, never the version's size or extension pointer.
    unsafe {
        // Byte offsets inside the checked size: no place of the whole (padded) struct is formed.
        use std::mem::offset_of;
        let bytes = metadata.cast::<u8>();
        let version = offset_of!(x::XLA_FFI_Metadata, api_version);
        bytes.add(version + offset_of!(x::XLA_FFI_Api_Version, major_version)).cast::<i32>().write(major);
        bytes.add(version + offset_of!(x::XLA_FFI_Api_Version, minor_version)).cast::<i32>().write(minor);
        bytes
            .add(offset_of!(x::XLA_FFI_Metadata, traits))
            .cast::<u32>()
            .write(x::XLA_FFI_Handler_TraitsBits::NONE.0 as u32);
    }
    Ok(())
}

pub use crate::error::RegistrationErrorKind;

/// The XLA platform name handlers of a client's platform are registered for: `Host` for `cpu`,
/// `CUDA` for `cuda`, `ROCM` for `rocm`, the platform name itself otherwise.
///
/// ```
/// assert_eq!(pjrt_client::ffi::xla_platform("cpu"), "Host");
/// assert_eq!(pjrt_client::ffi::xla_platform("cuda"), "CUDA");
/// ```
pub fn xla_platform(pjrt_platform: &str) -> String {
    match pjrt_platform {
        "cpu" | "host" => "Host".to_owned(),
        "cuda" | "gpu" => "CUDA".to_owned(),
        "rocm" => "ROCM".to_owned(),
        other => other.to_owned(),
    }
}

/// (plugin table address, target, platform).
type RegistryKey = (usize, String, String);

/// What holds a registered name.
#[derive(Clone)]
pub(crate) enum Identity {
    /// A handler of this process's copy of this crate.
    Ours(Arc<HandlerInner>),
    /// An entry point of a handler library (its address), and the library.
    Library(usize, std::path::PathBuf),
    /// A handler registered otherwise (found by the probe), left in place for a built-in one.
    Elsewhere,
}

impl Identity {
    fn same(&self, other: &Identity) -> bool {
        match (self, other) {
            (Identity::Ours(a), Identity::Ours(b)) => Arc::ptr_eq(a, b),
            (Identity::Library(a, _), Identity::Library(b, _)) => a == b,
            _ => false,
        }
    }

    fn describe(&self) -> String {
        match self {
            Identity::Ours(h) => format!("the handler `{}`", h.name),
            Identity::Library(_, path) => format!("a handler of the library {}", path.display()),
            Identity::Elsewhere => "a handler not registered through pjrt_client::ffi".to_owned(),
        }
    }
}

/// What this process registered: per plugin table, per (target, platform), the handler.
fn registry() -> &'static Mutex<HashMap<RegistryKey, Identity>> {
    static REGISTRY: OnceLock<Mutex<HashMap<RegistryKey, Identity>>> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

/// The one-op program that proves a registration: it calls `target` with no operands (the
/// handler never runs; compiling is what finds it). Target names are limited to ASCII letters,
/// digits, `_`, `.`, `-` and `$`.
///
/// ```
/// let probe = pjrt_client::ffi::probe_program("my_op")?;
/// assert!(probe.text().unwrap().contains("stablehlo.custom_call @\"my_op\"()"));
/// assert!(pjrt_client::ffi::probe_program("my op").is_err());
/// # Ok::<(), pjrt_client::Error>(())
/// ```
pub fn probe_program(target: &str) -> Result<Program> {
    if target.is_empty() || !target.chars().all(|c| c.is_ascii_alphanumeric() || "_.-$".contains(c)) {
        return Err(Error::InvalidArgument(format!(
            "the custom-call target {target:?} must be non-empty ASCII letters, digits, `_`, `.`, `-` or `$`"
        )));
    }
    Program::mlir_text(format!(
        "module @pjrt_ffi_probe {{\n  func.func public @main() {{\n    stablehlo.custom_call @\"{target}\"() \
         {{api_version = 4 : i32, has_side_effect = true}} : () -> ()\n    return\n  }}\n}}\n"
    ))
}

/// Registers `handler` for the custom-call target `target` on the client's plugin, for the
/// client's platform ([`xla_platform`]). See the module docs, "Registration": once per loaded
/// plugin, refused for a different handler, proven by compiling a probe program.
///
/// ```
/// use pjrt_client::ffi::{self, Call, Handler, Signature};
/// use pjrt_client::{Client, ClientOptions, CompileOptions, Plugin};
/// # let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
/// let client = Client::new(&plugin, &ClientOptions::new())?;
/// let probe = ffi::probe_program("doc_register_example")?;
/// assert!(client.compile(&probe, &CompileOptions::new()).is_err()); // no handler yet
/// ffi::register(&client, "doc_register_example", &Handler::new("noop", Signature::new(), |_: &Call| Ok(())))?;
/// client.compile(&probe, &CompileOptions::new())?; // found now, by every client of the plugin
/// # Ok::<(), pjrt_client::Error>(())
/// ```
pub fn register(client: &Client, target: &str, handler: &Handler) -> Result<()> {
    register_for_platform(client, target, &xla_platform(client.platform_name()), handler)
}

/// [`register`] for an explicit XLA platform name (`Host`, `CUDA`, ...).
///
/// ```
/// use pjrt_client::ffi::{self, Call, Handler, Signature};
/// use pjrt_client::{Client, ClientOptions, Plugin};
/// # let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
/// let client = Client::new(&plugin, &ClientOptions::new())?;
/// let noop = Handler::new("noop", Signature::new(), |_: &Call| Ok(()));
/// ffi::register_for_platform(&client, "doc_platform_example", "Host", &noop)?;
/// # Ok::<(), pjrt_client::Error>(())
/// ```
pub fn register_for_platform(client: &Client, target: &str, platform: &str, handler: &Handler) -> Result<()> {
    register_entry(client, target, platform, Identity::Ours(handler.inner.clone()), false, || {
        trampoline::claim(handler.inner.clone())
    })
}

/// [`register`] for a built-in handler (what a [`BuiltinProvider`] registers): a name some other
/// handler holds already (a plugin built with its own, a handler library) is left to it, and
/// this returns `Ok` without registering.
///
/// ```
/// use pjrt_client::ffi::{self, Call, Handler, Signature};
/// use pjrt_client::{Client, ClientOptions, CompileOptions, Plugin};
/// # let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
/// let client = Client::new(&plugin, &ClientOptions::new())?;
/// let noop = Handler::new("noop", Signature::new(), |_: &Call| Ok(()));
/// ffi::register(&client, "doc_builtin_example", &noop)?;
/// // Another handler for the same name: an error for `register`, left alone here.
/// let other = Handler::new("other", Signature::new(), |_: &Call| Ok(()));
/// assert!(ffi::register(&client, "doc_builtin_example", &other).is_err());
/// ffi::register_builtin(&client, "doc_builtin_example", &other)?;
/// # Ok::<(), pjrt_client::Error>(())
/// ```
pub fn register_builtin(client: &Client, target: &str, handler: &Handler) -> Result<()> {
    let platform = xla_platform(client.platform_name());
    register_entry(client, target, &platform, Identity::Ours(handler.inner.clone()), true, || {
        trampoline::claim(handler.inner.clone())
    })
}

/// Where an entry point comes from: claimed only when it is about to be registered.
pub(crate) trait EntrySource {
    fn entry(self) -> Option<x::XLA_FFI_Handler>;
}

impl EntrySource for x::XLA_FFI_Handler {
    fn entry(self) -> Option<x::XLA_FFI_Handler> {
        Some(self)
    }
}

impl<F: FnOnce() -> Option<x::XLA_FFI_Handler>> EntrySource for F {
    fn entry(self) -> Option<x::XLA_FFI_Handler> {
        self()
    }
}

pub(crate) fn register_entry(
    client: &Client,
    target: &str,
    platform: &str,
    identity: Identity,
    theirs_is_fine: bool,
    entry: impl EntrySource,
) -> Result<()> {
    let probe = probe_program(target)?;
    let plugin = client.plugin();
    let key = (plugin.raw_api() as usize, target.to_owned(), platform.to_owned());
    let fail = |kind: RegistrationErrorKind, message: String| Error::FfiRegistration {
        target: target.to_owned(),
        platform: platform.to_owned(),
        kind,
        message,
    };
    // Held across probing and registering: two threads never register the same target at once.
    let mut registered = registry().lock().unwrap_or_else(|p| p.into_inner());
    if let Some(existing) = registered.get(&key) {
        // A built-in handler defers to whatever holds the name.
        if theirs_is_fine || existing.same(&identity) {
            return Ok(());
        }
        return Err(fail(
            RegistrationErrorKind::Conflict,
            format!("{} is registered for it on this plugin already", existing.describe()),
        ));
    }
    let ffi = plugin
        .ffi_extension()
        .ok_or_else(|| fail(RegistrationErrorKind::NoFfiExtension, "the plugin has no FFI extension".into()))?;
    let options = CompileOptions::new();
    // Probes compile without `Client::compile`'s own registration of built-in handlers.
    if client.compile_program(&probe, &options).is_ok() {
        if theirs_is_fine {
            registered.insert(key, Identity::Elsewhere);
            return Ok(());
        }
        return Err(fail(
            RegistrationErrorKind::TakenElsewhere,
            "a program calling it compiles before registering: a handler not registered through pjrt_client::ffi \
             holds the name (the plugin's registry is permanent); choose another target name"
                .into(),
        ));
    }
    let entry = entry.entry().ok_or_else(|| {
        fail(RegistrationErrorKind::NoFreeSlot, format!("{MAX_HANDLERS} handlers are registered already"))
    })?;
    // SAFETY: `entry` is an `XLA_FFI_Handler` that stays callable for the process (a function of
    // this crate, or of a handler library that is never unloaded) and reads frames as the XLA
    // FFI ABI describes them, of any FFI 0.x version.
    unsafe { ffi.register_handler(target, platform, entry as *mut std::ffi::c_void, false) }.map_err(|e| match e {
        Error::Unsupported { .. } => fail(RegistrationErrorKind::NoFfiExtension, e.to_string()),
        other => other,
    })?;
    if let Err(e) = client.compile_program(&probe, &options) {
        return Err(fail(
            RegistrationErrorKind::NotProven,
            format!("the plugin answered OK, but a program calling it does not compile: {e}"),
        ));
    }
    registered.insert(key, identity);
    Ok(())
}
