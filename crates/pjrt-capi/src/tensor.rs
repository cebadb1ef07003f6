//! The memory of outputs the library allocates (a `pjrt_tensor` whose `data` was NULL), and
//! `pjrt_tensor_free`. Each allocation is recorded by address, so `pjrt_tensor_free` frees only
//! what this library allocated and did not free yet: a caller's own buffer, or a second free,
//! is an error, not a bad free.

use std::alloc::Layout;
use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::boundary::guard;
use crate::failure::{Failure, Outcome};
use crate::types::*;

/// The alignment of output memory: a cache line, enough for every element type (and for the
/// plugins' zero-copy uploads, should the caller feed an output back in).
const ALIGN: usize = 64;

/// Live allocations: address to size in bytes.
static ALLOCATIONS: Mutex<BTreeMap<usize, usize>> = Mutex::new(BTreeMap::new());

fn layout(bytes: usize) -> Outcome<Layout> {
    Layout::from_size_align(bytes.max(1), ALIGN)
        .map_err(|_| Failure::new(PJRT_CODE_RESOURCE_EXHAUSTED, format!("{bytes} bytes are too many to allocate")))
}

/// Allocates `bytes` (at least one, so that `data` is never NULL), aligned to 64 bytes, and
/// records them for [`pjrt_tensor_free`].
pub(crate) fn allocate(bytes: usize) -> Outcome<*mut u8> {
    let layout = layout(bytes)?;
    // SAFETY: the layout's size is at least 1.
    let data = unsafe { std::alloc::alloc(layout) };
    if data.is_null() {
        return Err(Failure::new(PJRT_CODE_RESOURCE_EXHAUSTED, format!("cannot allocate {bytes} bytes for an output")));
    }
    ALLOCATIONS.lock().unwrap_or_else(|e| e.into_inner()).insert(data as usize, bytes);
    Ok(data)
}

/// Frees memory from [`allocate`]; an error if `data` is not such memory (any more).
pub(crate) fn release(data: *mut u8) -> Outcome {
    let bytes = ALLOCATIONS.lock().unwrap_or_else(|e| e.into_inner()).remove(&(data as usize)).ok_or_else(|| {
        Failure::invalid(
            "tensor->data was not allocated by this library, or was freed already (free buffers of your own yourself)",
        )
    })?;
    // SAFETY: `data` was allocated by `allocate` with this layout (the record says so) and is
    // freed once: its record is gone.
    unsafe { std::alloc::dealloc(data, layout(bytes)?) };
    Ok(())
}

/// Frees an output the library allocated (`pjrt_model_run` with the output's `data` NULL) and
/// sets its `data` to NULL and `nbytes` to 0 (`dtype`, `ndim` and `dims` stay). NULL, and a
/// tensor whose `data` is NULL, are ignored; memory the library did not allocate, or freed
/// already, is an error (and left alone).
///
/// Thread-safe (for different tensors).
///
/// # Safety
///
/// `tensor` is NULL or points to a `pjrt_tensor` no other thread is using.
#[no_mangle]
pub unsafe extern "C" fn pjrt_tensor_free(tensor: *mut pjrt_tensor) -> *mut pjrt_status {
    guard("pjrt_tensor_free", || {
        if tensor.is_null() {
            return Ok(());
        }
        crate::check::out(tensor, "tensor")?;
        // SAFETY: not NULL and aligned (checked above); the caller promises a pjrt_tensor
        // nobody else is using.
        let tensor = unsafe { &mut *tensor };
        if tensor.data.is_null() {
            return Ok(());
        }
        release(tensor.data.cast())?;
        tensor.data = std::ptr::null_mut();
        tensor.nbytes = 0;
        Ok(())
    })
}
