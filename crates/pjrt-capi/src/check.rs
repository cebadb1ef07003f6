//! Checks of what C hands in, before anything is read through it: strings, arrays of tensors,
//! and each tensor's type, rank, dimensions and size against its bytes. What passes comes back
//! as Rust values (a path, a slice, an element type and dimensions) whose `unsafe` construction
//! argues from these checks.

use std::ffi::{c_char, CStr};
use std::path::Path;

use pjrt_client::ElementType;

use crate::failure::{Failure, Outcome};
use crate::types::*;

/// A NUL-terminated path from C; `what` names the parameter in messages.
///
/// # Safety
///
/// `ptr` is NULL or points to a NUL-terminated string that stays valid for `'a`.
pub(crate) unsafe fn path<'a>(ptr: *const c_char, what: &str) -> Outcome<&'a Path> {
    if ptr.is_null() {
        return Err(Failure::invalid(format!("{what} is NULL")));
    }
    // SAFETY: not NULL (checked above); the caller promises a NUL-terminated string valid for 'a.
    let bytes = unsafe { CStr::from_ptr(ptr) }.to_bytes();
    if bytes.is_empty() {
        return Err(Failure::invalid(format!("{what} is an empty string")));
    }
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        Ok(Path::new(std::ffi::OsStr::from_bytes(bytes)))
    }
    #[cfg(not(unix))]
    {
        std::str::from_utf8(bytes).map(Path::new).map_err(|_| Failure::invalid(format!("{what} is not UTF-8")))
    }
}

/// [`path`] where NULL means none.
///
/// # Safety
///
/// As for [`path`].
pub(crate) unsafe fn optional_path<'a>(ptr: *const c_char, what: &str) -> Outcome<Option<&'a Path>> {
    if ptr.is_null() {
        return Ok(None);
    }
    // SAFETY: the caller's promise, passed on.
    unsafe { path(ptr, what) }.map(Some)
}

/// A NUL-terminated UTF-8 string from C (NULL: none).
///
/// # Safety
///
/// As for [`path`].
pub(crate) unsafe fn optional_str<'a>(ptr: *const c_char, what: &str) -> Outcome<Option<&'a str>> {
    if ptr.is_null() {
        return Ok(None);
    }
    // SAFETY: not NULL; the caller promises a NUL-terminated string valid for 'a.
    let text = unsafe { CStr::from_ptr(ptr) };
    text.to_str().map(Some).map_err(|_| Failure::invalid(format!("{what} is not UTF-8")))
}

/// Checks that `ptr`, where a result goes, can take a `T`: not NULL, and aligned for it.
pub(crate) fn out<T>(ptr: *mut T, what: &str) -> Outcome {
    if ptr.is_null() {
        return Err(Failure::invalid(format!("{what} is NULL")));
    }
    if (ptr as usize) % std::mem::align_of::<T>() != 0 {
        return Err(Failure::invalid(format!("{what} is not aligned for its type")));
    }
    Ok(())
}

/// `n` tensors from `ptr`; `what` names the array (`inputs`).
///
/// # Safety
///
/// `ptr` is NULL or points to `n` initialised `pjrt_tensor`s that stay valid, and are not
/// written by anyone else, for `'a`.
pub(crate) unsafe fn tensors<'a>(ptr: *const pjrt_tensor, n: usize, what: &str) -> Outcome<&'a [pjrt_tensor]> {
    if n == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(Failure::invalid(format!("{what} is NULL, but n_{what} is {n}")));
    }
    if (ptr as usize) % std::mem::align_of::<pjrt_tensor>() != 0 {
        return Err(Failure::invalid(format!("{what} is not aligned for a pjrt_tensor")));
    }
    // Callers compare `n` with the model's count first: it is small, so this never overflows.
    if n > isize::MAX as usize / std::mem::size_of::<pjrt_tensor>() {
        return Err(Failure::invalid(format!("{what}: {n} tensors are more than memory holds")));
    }
    // SAFETY: not NULL, aligned, `n * size_of` fits an isize (checked above); the caller promises
    // `n` initialised tensors valid and unchanged for 'a.
    Ok(unsafe { std::slice::from_raw_parts(ptr, n) })
}

/// [`tensors`] for writing: the outputs.
///
/// # Safety
///
/// As for [`tensors`], and nobody else reads or writes them for `'a`.
pub(crate) unsafe fn tensors_mut<'a>(ptr: *mut pjrt_tensor, n: usize, what: &str) -> Outcome<&'a mut [pjrt_tensor]> {
    // SAFETY: the same checks as `tensors`, which makes them; the caller promises exclusive
    // access for 'a.
    unsafe { tensors(ptr, n, what) }?;
    // SAFETY: `tensors` accepted `n` tensors at `ptr` (not NULL, aligned, a size that fits, or
    // n = 0); the caller promises nobody else touches them for 'a.
    Ok(if n == 0 { &mut [] } else { unsafe { std::slice::from_raw_parts_mut(ptr, n) } })
}

/// A tensor's element type, from its `dtype`.
pub(crate) fn element_type(dtype: pjrt_dtype, what: &dyn std::fmt::Display) -> Outcome<ElementType> {
    let element_type = ElementType::from_i32(dtype);
    if !element_type.is_array_type() {
        return Err(Failure::invalid(format!("{what}: dtype {dtype} is not an element type (a PJRT_DTYPE_* value)")));
    }
    Ok(element_type)
}

/// A tensor's dimensions: `ndim` of them, each at least 0.
pub(crate) fn dims<'t>(tensor: &'t pjrt_tensor, what: &dyn std::fmt::Display) -> Outcome<&'t [i64]> {
    let ndim = usize::try_from(tensor.ndim)
        .ok()
        .filter(|&n| n <= PJRT_MAX_NDIM)
        .ok_or_else(|| Failure::invalid(format!("{what}: ndim {} is not in 0..={PJRT_MAX_NDIM}", tensor.ndim)))?;
    let dims = &tensor.dims[..ndim];
    if let Some(d) = dims.iter().find(|&&d| d < 0) {
        return Err(Failure::invalid(format!("{what}: dimension {d} of {dims:?} is negative")));
    }
    Ok(dims)
}

/// The bytes `dims` of `element_type` take on the host, dense; an error when that overflows.
pub(crate) fn byte_size(element_type: ElementType, dims: &[i64], what: &dyn std::fmt::Display) -> Outcome<usize> {
    dims.iter()
        .try_fold(1usize, |n, &d| usize::try_from(d).ok().and_then(|d| n.checked_mul(d)))
        .and_then(|count| element_type.host_bytes(count))
        .filter(|&bytes| bytes <= isize::MAX as usize)
        .ok_or_else(|| Failure::invalid(format!("{what}: {element_type}{dims:?} is more bytes than memory holds")))
}

/// An input tensor's element type, dimensions and bytes, each checked: a known dtype, a rank
/// within [`PJRT_MAX_NDIM`], no negative dimension, a size that does not overflow and equals
/// `nbytes`, data that is not NULL unless it is 0 bytes, and bools that are 0 or 1.
///
/// # Safety
///
/// `tensor.data` points to `tensor.nbytes` readable bytes (or is NULL) that stay valid and
/// unchanged for `'t`.
pub(crate) unsafe fn input<'t>(
    tensor: &'t pjrt_tensor,
    what: &dyn std::fmt::Display,
) -> Outcome<(ElementType, &'t [i64], &'t [u8])> {
    let element_type = element_type(tensor.dtype, what)?;
    let dims = dims(tensor, what)?;
    let bytes = byte_size(element_type, dims, what)?;
    if tensor.nbytes != bytes {
        return Err(Failure::invalid(format!(
            "{what}: nbytes is {} but {element_type}{dims:?} takes {bytes} bytes",
            tensor.nbytes
        )));
    }
    if bytes == 0 {
        return Ok((element_type, dims, &[]));
    }
    if tensor.data.is_null() {
        return Err(Failure::invalid(format!("{what}: data is NULL (for {bytes} bytes)")));
    }
    // SAFETY: not NULL, `bytes` (= nbytes) fits an isize (checked above); the caller promises
    // `nbytes` readable bytes at `data`, unchanged for 't. Any alignment: they are read as bytes.
    let data = unsafe { std::slice::from_raw_parts(tensor.data as *const u8, bytes) };
    if element_type == ElementType::PRED {
        // A bool byte other than 0 or 1 is no value XLA defines (its `not` flips bits).
        if let Some(at) = data.iter().position(|&b| b > 1) {
            return Err(Failure::invalid(format!("{what}: bool element {at} is {}, not 0 or 1", data[at])));
        }
    }
    Ok((element_type, dims, data))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(dtype: pjrt_dtype, dims: &[i64], nbytes: usize, data: *mut std::ffi::c_void) -> pjrt_tensor {
        let mut t = pjrt_tensor { data, nbytes, dtype, ndim: dims.len() as i32, ..pjrt_tensor::EMPTY };
        t.dims[..dims.len()].copy_from_slice(dims);
        t
    }

    fn message(result: Outcome<(ElementType, &[i64], &[u8])>) -> String {
        result.map(|_| ()).unwrap_err().message
    }

    #[test]
    fn inputs_are_checked_before_their_bytes_are_read() {
        let mut x = [1f32, 2., 3., 4.];
        let data = x.as_mut_ptr().cast();
        let what = &"inputs[0]";
        // SAFETY (all below): `data` is 16 readable bytes; other sizes are refused before any read.
        let good = tensor(PJRT_DTYPE_F32, &[2, 2], 16, data);
        let (element_type, dims, bytes) = unsafe { input(&good, what) }.unwrap();
        assert_eq!((element_type, dims, bytes.len()), (ElementType::F32, &[2i64, 2][..], 16));
        let bad = |t: pjrt_tensor| message(unsafe { input(&t, what) });
        assert!(bad(tensor(PJRT_DTYPE_F32, &[2, 2], 12, data)).contains("nbytes is 12 but f32[2, 2] takes 16"));
        assert!(bad(tensor(99, &[2], 8, data)).contains("dtype 99"));
        assert!(bad(tensor(PJRT_DTYPE_F32, &[2, -2], 16, data)).contains("negative"));
        assert!(bad(tensor(PJRT_DTYPE_F32, &[2, 2], 16, std::ptr::null_mut())).contains("data is NULL"));
        let mut t = tensor(PJRT_DTYPE_F32, &[2], 8, data);
        t.ndim = 9;
        assert!(bad(t).contains("ndim 9"));
        t.ndim = -1;
        assert!(bad(t).contains("ndim -1"));
        assert!(bad(tensor(PJRT_DTYPE_F64, &[1 << 40, 1 << 40], 16, data)).contains("more bytes than memory holds"));
        // Zero bytes: NULL data is fine.
        let empty = tensor(PJRT_DTYPE_F32, &[0, 3], 0, std::ptr::null_mut());
        assert_eq!(unsafe { input(&empty, what) }.unwrap().2.len(), 0);
    }
}
