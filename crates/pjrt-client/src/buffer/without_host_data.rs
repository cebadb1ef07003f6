//! Buffers without host data: uninitialized, error and alias buffers ([`AliasFulfiller`]).

use std::ffi::c_char;
use std::fmt;
use std::ptr::NonNull;

use crate::buffer::checks::{check_array, check_error_code, not_deleted, resolve_memory, resolve_target, Target};
use crate::buffer::raw_layout::RawLayout;
use crate::buffer::{Buffer, Placement};
use crate::call::pjrt_call;
use crate::call::release::release_if_in_callback;
use crate::client::Client;
use crate::error::{Error, ErrorCode, Result};
use crate::sys::{self, Args};
use pjrt_types::ElementType;

impl Client {
    /// A buffer whose memory is allocated but not written (`PJRT_Client_CreateUninitializedBuffer`,
    /// 0.69). Its contents are unspecified until a computation writes them.
    pub fn create_uninitialized_buffer(
        &self,
        element_type: ElementType,
        dims: &[i64],
        placement: Placement<'_>,
    ) -> Result<Buffer> {
        check_array(self.api(), element_type, dims)?;
        let target = resolve_target(self, placement)?;
        let mut layout = RawLayout::dense(dims.len());
        let mut args = sys::PJRT_Client_CreateUninitializedBuffer_Args::new();
        args.client = self.raw();
        args.shape_dims = dims.as_ptr();
        args.shape_num_dims = dims.len();
        args.shape_element_type = sys::PJRT_Buffer_Type(element_type.to_i32());
        args.shape_layout = layout.as_mut_ptr();
        match target {
            Target::Device(device) => args.device = device,
            Target::Memory(memory) => args.memory = memory,
        }
        pjrt_call!(self.api(), PJRT_Client_CreateUninitializedBuffer, &mut args)?;
        let mut buffer = NonNull::new(args.buffer)
            .map(|raw| Buffer::from_raw(self, raw))
            .ok_or_else(|| Error::invalid("PJRT_Client_CreateUninitializedBuffer returned no buffer"))?;
        buffer.set_known_shape(element_type, dims);
        Ok(buffer)
    }

    /// A buffer that carries an error instead of data (`PJRT_Client_CreateErrorBuffer`, 0.82):
    /// its ready event fails with `code` and `message`, and so does an execution given it.
    pub fn create_error_buffer(
        &self,
        code: ErrorCode,
        message: &str,
        element_type: ElementType,
        dims: &[i64],
        placement: Placement<'_>,
    ) -> Result<Buffer> {
        let raw_code = check_error_code(code)?;
        check_array(self.api(), element_type, dims)?;
        let memory = resolve_memory(self, placement)?;
        let mut layout = RawLayout::dense(dims.len());
        // The full 0.103+ size (112 bytes): the 0.115 plugin demands it, older ones accept it.
        let mut args = sys::PJRT_Client_CreateErrorBuffer_Args::new();
        args.client = self.raw();
        args.error_code = raw_code;
        args.error_message = message.as_ptr() as *const c_char;
        args.error_message_size = message.len();
        args.shape_dims = dims.as_ptr();
        args.shape_num_dims = dims.len();
        args.shape_element_type = sys::PJRT_Buffer_Type(element_type.to_i32());
        args.shape_layout = layout.as_mut_ptr();
        args.memory = memory;
        pjrt_call!(self.api(), PJRT_Client_CreateErrorBuffer, &mut args)?;
        let mut buffer = NonNull::new(args.buffer)
            .map(|raw| Buffer::from_raw(self, raw))
            .ok_or_else(|| Error::invalid("PJRT_Client_CreateErrorBuffer returned no buffer"))?;
        buffer.set_known_shape(element_type, dims);
        Ok(buffer)
    }

    /// A buffer whose data is supplied later by another buffer (`PJRT_Client_CreateAliasBuffer`,
    /// 0.77): fulfil it with [`AliasFulfiller::fulfill`] (or fail it). Created with an explicit
    /// dense layout, which the plugins require.
    pub fn create_alias_buffer(
        &self,
        element_type: ElementType,
        dims: &[i64],
        placement: Placement<'_>,
    ) -> Result<(Buffer, AliasFulfiller)> {
        check_array(self.api(), element_type, dims)?;
        let memory = resolve_memory(self, placement)?;
        let mut layout = RawLayout::dense(dims.len());
        let mut args = sys::PJRT_Client_CreateAliasBuffer_Args::new();
        args.client = self.raw();
        args.memory = memory;
        args.shape_dims = dims.as_ptr();
        args.shape_num_dims = dims.len();
        args.shape_element_type = sys::PJRT_Buffer_Type(element_type.to_i32());
        args.shape_layout = layout.as_mut_ptr();
        pjrt_call!(self.api(), PJRT_Client_CreateAliasBuffer, &mut args)?;
        // Own both outputs before anything can fail.
        let buffer = NonNull::new(args.alias_buffer).map(|raw| Buffer::from_raw(self, raw));
        let fulfiller = NonNull::new(args.fulfill_alias_buffer_cb).map(|callback| AliasFulfiller {
            client: self.clone(),
            callback,
            memory,
            element_type,
            dims: dims.to_vec(),
            consumed: false,
        });
        match (buffer, fulfiller) {
            (Some(mut buffer), Some(fulfiller)) => {
                buffer.set_known_shape(element_type, dims);
                Ok((buffer, fulfiller))
            }
            _ => Err(Error::invalid("PJRT_Client_CreateAliasBuffer returned no buffer or no callback")),
        }
    }
}

/// Supplies the data of an alias buffer (see [`Client::create_alias_buffer`]). Dropping it
/// unfulfilled fails the alias buffer with CANCELLED, so nothing waits on it forever.
pub struct AliasFulfiller {
    client: Client,
    callback: NonNull<sys::PJRT_FulfillAliasBufferCallback>,
    memory: *mut sys::PJRT_Memory,
    element_type: ElementType,
    dims: Vec<i64>,
    consumed: bool,
}

// SAFETY: the callback object is handed back to the plugin exactly once, from any thread (the
// plugin's alias machinery is thread-safe); the memory pointer is only compared.
unsafe impl Send for AliasFulfiller {}
// SAFETY: `&self` methods only read plain fields.
unsafe impl Sync for AliasFulfiller {}

impl AliasFulfiller {
    /// Makes the alias buffer read `buffer`'s data. `buffer` must have the alias's element type
    /// and dimensions, belong to the same client and live in the same memory; if it does not,
    /// the error is returned and the alias is failed (CANCELLED), as when dropped.
    ///
    /// `buffer`'s memory moves into the alias: `buffer` then reports [`Buffer::is_deleted`]
    /// (both CPU plugins donate it).
    pub fn fulfill(mut self, buffer: &Buffer) -> Result<()> {
        if !buffer.client().same_client(&self.client) {
            return Err(Error::invalid("the buffer belongs to another client"));
        }
        not_deleted(buffer)?;
        let (element_type, dims) = (buffer.element_type()?, buffer.dimensions()?);
        if element_type != self.element_type || dims != self.dims.as_slice() {
            return Err(Error::invalid(format!(
                "the alias is {}{:?} but the buffer is {element_type}{dims:?}",
                self.element_type, self.dims
            )));
        }
        if buffer.memory()?.as_raw() != self.memory {
            return Err(Error::invalid("the buffer lives in another memory than the alias"));
        }
        self.complete(buffer.as_raw(), sys::PJRT_Error_Code::OK, "")
    }

    /// Fails the alias buffer with `code` and `message`.
    pub fn fail(mut self, code: ErrorCode, message: &str) -> Result<()> {
        let raw = check_error_code(code)?;
        match self.complete(std::ptr::null_mut(), raw, message) {
            // The CPU plugins fail the alias and then return the very status they were given
            // (and log it): that is the requested outcome, not a failure.
            Err(Error::Pjrt { code: returned, message: m, .. }) if returned == code && m == message => Ok(()),
            other => other,
        }
    }

    /// The alias's element type.
    pub fn element_type(&self) -> ElementType {
        self.element_type
    }

    /// The alias's dimensions.
    pub fn dimensions(&self) -> &[i64] {
        &self.dims
    }

    fn complete(&mut self, buffer: *mut sys::PJRT_Buffer, code: sys::PJRT_Error_Code, message: &str) -> Result<()> {
        if std::mem::replace(&mut self.consumed, true) {
            return Ok(());
        }
        let mut args = sys::PJRT_Client_FulfillAliasBuffer_Args::new();
        args.client = self.client.raw();
        args.buffer = buffer;
        args.status_code = code;
        args.error_message = message.as_ptr() as *const c_char;
        args.error_message_size = message.len();
        args.fulfill_alias_buffer_cb = self.callback.as_ptr();
        // The callback object is handed over once, whether or not the call succeeds.
        pjrt_call!(self.client.api(), PJRT_Client_FulfillAliasBuffer, &mut args)
    }
}

impl Drop for AliasFulfiller {
    fn drop(&mut self) {
        release_if_in_callback!(AliasFulfiller {
            client: self.client.clone(),
            callback: self.callback,
            memory: self.memory,
            element_type: self.element_type,
            dims: std::mem::take(&mut self.dims),
            consumed: std::mem::replace(&mut self.consumed, true),
        });
        let _ = self.complete(
            std::ptr::null_mut(),
            sys::PJRT_Error_Code::CANCELLED,
            "the alias buffer was dropped without being fulfilled",
        );
    }
}

impl fmt::Debug for AliasFulfiller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AliasFulfiller({}{:?})", self.element_type, self.dims)
    }
}
