//! Donation with a control dependency: a buffer's memory handed to a new buffer that waits for a
//! [`ControlDependency`].

use std::ffi::{c_char, c_void};
use std::fmt;
use std::ptr::NonNull;

use crate::buffer::checks::{check_error_code, not_deleted};
use crate::buffer::Buffer;
use crate::call::pjrt_call;
use crate::call::release::release_if_in_callback;
use crate::client::Client;
use crate::error::{Error, ErrorCode, Result};
use crate::sys::{self, Args};

impl Buffer {
    /// Donates this buffer's memory to a new buffer that becomes usable only once the returned
    /// [`ControlDependency`] is marked ready (`PJRT_Buffer_DonateWithControlDependency`, 0.88).
    /// This buffer then reports [`Buffer::is_deleted`].
    pub fn donate_with_control_dependency(&self) -> Result<(Buffer, ControlDependency)> {
        not_deleted(self)?;
        let mut args = sys::PJRT_Buffer_DonateWithControlDependency_Args::new();
        args.buffer = self.as_raw();
        pjrt_call!(self.client().api(), PJRT_Buffer_DonateWithControlDependency, &mut args)?;
        let buffer = NonNull::new(args.out_buffer).map(|raw| Buffer::from_raw(self.client(), raw));
        let dependency = args.dependency_ready_callback.map(|callback| ControlDependency {
            client: self.client().clone(),
            callback,
            data: args.callback_data,
            consumed: false,
        });
        match (buffer, dependency) {
            (Some(buffer), Some(dependency)) => Ok((buffer, dependency)),
            _ => Err(Error::invalid("PJRT_Buffer_DonateWithControlDependency returned no buffer or no callback")),
        }
    }
}

/// The dependency a donated buffer waits for (see [`Buffer::donate_with_control_dependency`]).
/// Dropping it unsignalled fails it with CANCELLED, so nothing waits forever. It keeps the
/// client alive (its callback is the plugin's, valid only while the client is).
pub struct ControlDependency {
    client: Client,
    callback: unsafe extern "C" fn(*mut sys::PJRT_Buffer_DonateWithControlDependency_Callback_Args),
    data: *mut c_void,
    consumed: bool,
}

// SAFETY: the callback data is handed back to the plugin exactly once, from any thread.
unsafe impl Send for ControlDependency {}

impl ControlDependency {
    /// Signals that the dependency is satisfied: the new buffer becomes usable.
    pub fn ready(mut self) {
        self.complete(sys::PJRT_Error_Code::OK, "");
    }

    /// Signals that the dependency failed: the new buffer carries `code` and `message`.
    pub fn fail(mut self, code: ErrorCode, message: &str) -> Result<()> {
        let raw = check_error_code(code)?;
        self.complete(raw, message);
        Ok(())
    }

    fn complete(&mut self, code: sys::PJRT_Error_Code, message: &str) {
        if std::mem::replace(&mut self.consumed, true) {
            return;
        }
        let mut args = sys::PJRT_Buffer_DonateWithControlDependency_Callback_Args::new();
        args.callback_data = self.data;
        args.error_code = code;
        args.error_message = message.as_ptr() as *const c_char;
        args.error_message_size = message.len();
        // SAFETY: callback and data came from the plugin and are used exactly once.
        unsafe { (self.callback)(&mut args) };
    }
}

impl Drop for ControlDependency {
    fn drop(&mut self) {
        release_if_in_callback!(ControlDependency {
            client: self.client.clone(),
            callback: self.callback,
            data: self.data,
            consumed: std::mem::replace(&mut self.consumed, true),
        });
        self.complete(sys::PJRT_Error_Code::CANCELLED, "the control dependency was dropped");
    }
}

impl fmt::Debug for ControlDependency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ControlDependency").field("signalled", &self.consumed).finish()
    }
}
