//! One call of a handler, as its closure reads it: [`Call`], [`BufferRef`], [`BufferMut`],
//! and the error it returns, [`FfiError`].

use std::cell::Cell;
use std::fmt;
use std::mem::MaybeUninit;

use crate::error::ErrorCode;

use super::decode::{Decoded, FrameError, RawAttr, RawBuffer};
use super::signature::Signature;
use super::types::{AttrScalar, FfiElement};

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
    pub(super) code: ErrorCode,
    pub(super) message: String,
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
    pub(super) name: &'a str,
    pub(super) signature: &'a Signature,
    pub(super) decoded: &'a Decoded,
    /// Per result, then per operand: whether it was handed out (one allocation for both).
    pub(super) taken: Vec<Cell<bool>>,
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

    /// How many operands the call has: the handler's declared ones, less the optional ones the
    /// call leaves out ([`Signature::arg_optional`](super::Signature::arg_optional)).
    pub fn arg_count(&self) -> usize {
        self.decoded.args.len()
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
