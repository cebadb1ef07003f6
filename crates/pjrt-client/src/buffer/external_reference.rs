//! External references ([`ExternalReference`]): guards that keep a buffer's memory where it is
//! (`PJRT_Buffer_IncreaseExternalReferenceCount` / `Decrease...`), and the device pointer they
//! make safe to hold.

use std::ffi::c_void;
use std::fmt;

use crate::buffer::checks::not_deleted;
use crate::buffer::Buffer;
use crate::call::pjrt_call;
use crate::error::Result;
use crate::plugin::Plugin;
use crate::sys::{self, Args};

impl Buffer {
    /// Takes an external reference on the buffer: while the guard lives, the plugin must not
    /// free or move the buffer's memory (and refuses to donate it), so
    /// [`ExternalReference::device_pointer`] stays valid.
    pub fn external_reference(&self) -> Result<ExternalReference<'_>> {
        not_deleted(self)?;
        let raw = increase_external_reference(self.client().plugin(), self.as_raw())?;
        Ok(ExternalReference { buffer: self, _raw: raw })
    }
}

pub(crate) fn increase_external_reference(
    plugin: &Plugin,
    buffer: *mut sys::PJRT_Buffer,
) -> Result<RawExternalReference> {
    let mut args = sys::PJRT_Buffer_IncreaseExternalReferenceCount_Args::new();
    args.buffer = buffer;
    pjrt_call!(plugin.api(), PJRT_Buffer_IncreaseExternalReferenceCount, &mut args)?;
    Ok(RawExternalReference { plugin: plugin.clone(), buffer })
}

/// One external reference, given back on drop (exactly once).
pub(crate) struct RawExternalReference {
    plugin: Plugin,
    buffer: *mut sys::PJRT_Buffer,
}

// SAFETY: buffers are thread-safe; the pointer is only passed back to the plugin.
unsafe impl Send for RawExternalReference {}
// SAFETY: as above; no method reads through the pointer.
unsafe impl Sync for RawExternalReference {}

impl crate::buffer::Attachment for RawExternalReference {}

impl Drop for RawExternalReference {
    fn drop(&mut self) {
        let mut args = sys::PJRT_Buffer_DecreaseExternalReferenceCount_Args::new();
        args.buffer = self.buffer;
        // Cannot be reported from Drop; the count was increased by us, so it cannot be zero.
        let _ = pjrt_call!(self.plugin.api(), PJRT_Buffer_DecreaseExternalReferenceCount, &mut args);
    }
}

/// An external reference to a buffer's memory (`PJRT_Buffer_IncreaseExternalReferenceCount`),
/// released on drop.
pub struct ExternalReference<'a> {
    buffer: &'a Buffer,
    _raw: RawExternalReference,
}

impl ExternalReference<'_> {
    /// The opaque device memory pointer of the buffer (`OpaqueDeviceMemoryDataPointer`; on CPU a
    /// host address). Valid while this guard lives; dereferencing it is `unsafe` and may race
    /// with computations still writing the buffer (wait for [`Buffer::ready_event`] first).
    pub fn device_pointer(&self) -> Result<*mut c_void> {
        let mut args = sys::PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args::new();
        args.buffer = self.buffer.as_raw();
        pjrt_call!(self.buffer.client().api(), PJRT_Buffer_OpaqueDeviceMemoryDataPointer, &mut args)?;
        Ok(args.device_memory_ptr)
    }

    /// The buffer referred to.
    pub fn buffer(&self) -> &Buffer {
        self.buffer
    }
}

impl fmt::Debug for ExternalReference<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExternalReference").field("buffer", self.buffer).finish()
    }
}
