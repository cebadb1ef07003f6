//! Raw copies of a buffer's bytes to the host ([`RawCopyRequest`]).

use std::ffi::{c_char, c_void};
use std::fmt;
use std::ptr::NonNull;

use crate::buffer::checks::{check_error_code, not_deleted};
use crate::buffer::host_transfer::HostTransfer;
use crate::buffer::Buffer;
use crate::call::pjrt_call;
use crate::error::{Error, ErrorCode, Result};
use crate::event::Event;
use crate::sys::{self, Args};

impl Buffer {
    /// Checks that `offset..offset+size` lies inside the buffer's on-device bytes.
    fn check_raw_range(&self, offset: usize, size: usize) -> Result<()> {
        not_deleted(self)?;
        let on_device = self.on_device_size()?;
        let end = offset.checked_add(size).filter(|end| *end <= on_device && *end <= i64::MAX as usize);
        if end.is_none() {
            return Err(Error::invalid(format!(
                "bytes {offset}..{offset}+{size} are outside the buffer's {on_device} on-device bytes"
            )));
        }
        Ok(())
    }

    /// Starts copying `destination.len()` raw on-device bytes, from byte `offset` on, into
    /// `destination` (`PJRT_Buffer_CopyRawToHost`). The range is checked against
    /// [`Buffer::on_device_size`] first. The transfer owns the vector until the copy finished.
    pub(crate) fn copy_raw_to_host_async(&self, offset: usize, mut destination: Vec<u8>) -> Result<HostTransfer> {
        let size = destination.len();
        self.check_raw_range(offset, size)?;
        if size == 0 {
            return Ok(HostTransfer::new(None, destination));
        }
        let mut args = sys::PJRT_Buffer_CopyRawToHost_Args::new();
        args.buffer = self.as_raw();
        args.dst = destination.as_mut_ptr() as *mut c_void;
        args.offset = offset as i64;
        args.transfer_size = size as i64;
        pjrt_call!(self.client().api(), PJRT_Buffer_CopyRawToHost, &mut args)?;
        match Event::from_raw(self.client().plugin(), Some(self.client()), args.event) {
            Some(event) => Ok(HostTransfer::new(Some(event), destination)),
            None => {
                // Nothing says when the plugin stops writing: the destination can never be freed.
                std::mem::forget(destination);
                Err(Error::invalid("PJRT_Buffer_CopyRawToHost returned no event"))
            }
        }
    }

    /// Prepares a raw copy of `size` bytes from `offset` whose destination is given later
    /// (`PJRT_Buffer_CopyRawToHostFuture`, 0.84): call [`RawCopyRequest::fulfill`] with the
    /// destination, or [`RawCopyRequest::fail`]; dropping the request fails it (CANCELLED).
    pub fn raw_copy_request(&self, offset: usize, size: usize) -> Result<RawCopyRequest<'_>> {
        self.check_raw_range(offset, size)?;
        let mut args = sys::PJRT_Buffer_CopyRawToHostFuture_Args::new();
        args.buffer = self.as_raw();
        args.offset = offset as i64;
        args.transfer_size = size as i64;
        pjrt_call!(self.client().api(), PJRT_Buffer_CopyRawToHostFuture, &mut args)?;
        // Own the event first, so that it is destroyed whatever happens next.
        let event = Event::from_raw(self.client().plugin(), Some(self.client()), args.event);
        let Some(callback) = args.future_ready_callback else {
            // No callback: nothing can be handed back; the callback data (if any) stays with the
            // plugin rather than being passed to something that is not there.
            return Err(Error::invalid("PJRT_Buffer_CopyRawToHostFuture returned no callback"));
        };
        let request = RawCopyRequest { buffer: self, event, callback, data: args.callback_data, size, consumed: false };
        if request.event.is_none() {
            // Without an event nothing would say when the destination is written: cancel now.
            return Err(Error::invalid("PJRT_Buffer_CopyRawToHostFuture returned no event"));
        }
        Ok(request)
    }
}

/// A raw copy waiting for its destination (see [`Buffer::raw_copy_request`]).
pub struct RawCopyRequest<'a> {
    buffer: &'a Buffer,
    event: Option<Event>,
    callback: unsafe extern "C" fn(*mut sys::PJRT_Buffer_CopyRawToHostFuture_Callback_Args),
    data: *mut c_void,
    size: usize,
    consumed: bool,
}

// SAFETY: the callback data is only handed back to the plugin, once, from whichever thread.
unsafe impl Send for RawCopyRequest<'_> {}

impl RawCopyRequest<'_> {
    /// The number of bytes the destination must have.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Hands the destination to the plugin, which then copies into it; the transfer owns the
    /// vector until the copy finished. A destination of the wrong size fails the request.
    pub fn fulfill(mut self, mut destination: Vec<u8>) -> Result<HostTransfer> {
        if destination.len() != self.size {
            let message = format!("the destination has {} bytes but the copy needs {}", destination.len(), self.size);
            self.complete(sys::PJRT_Error_Code::INVALID_ARGUMENT, &message, std::ptr::null_mut());
            return Err(Error::invalid(message));
        }
        let dst = if destination.is_empty() {
            NonNull::<u64>::dangling().as_ptr() as *mut c_void
        } else {
            destination.as_mut_ptr() as *mut c_void
        };
        self.complete(sys::PJRT_Error_Code::OK, "", dst);
        Ok(HostTransfer::new(self.event.take(), destination))
    }

    /// Fails the copy with `code` and `message` (its event then completes with that error).
    pub fn fail(mut self, code: ErrorCode, message: &str) -> Result<()> {
        let raw = check_error_code(code)?;
        self.complete(raw, message, std::ptr::null_mut());
        Ok(())
    }

    fn complete(&mut self, code: sys::PJRT_Error_Code, message: &str, dst: *mut c_void) {
        if std::mem::replace(&mut self.consumed, true) {
            return;
        }
        let mut args = sys::PJRT_Buffer_CopyRawToHostFuture_Callback_Args::new();
        args.callback_data = self.data;
        args.error_code = code;
        args.error_message = message.as_ptr() as *const c_char;
        args.error_message_size = message.len();
        args.dst = dst;
        // SAFETY: the callback and its data came from the plugin for this copy and are used
        // exactly once (`consumed`); `dst`, when set, is owned by the returned transfer until the
        // event completes; the message lives for the call.
        unsafe { (self.callback)(&mut args) };
    }
}

impl Drop for RawCopyRequest<'_> {
    fn drop(&mut self) {
        self.complete(sys::PJRT_Error_Code::CANCELLED, "the raw copy request was dropped", std::ptr::null_mut());
    }
}

impl fmt::Debug for RawCopyRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawCopyRequest").field("buffer", self.buffer).field("size", &self.size).finish()
    }
}
