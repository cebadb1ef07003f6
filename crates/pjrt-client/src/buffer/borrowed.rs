//! Uploads of borrowed host memory ([`Client::upload_bytes`], [`Client::upload_borrowed`]): the
//! plugin reads the data during the call, or until its done event, which the upload waits for.

use std::ffi::c_void;
use std::ptr::NonNull;

use crate::buffer::checks::{self, resolve_target, Target};
use crate::buffer::host_layout::{HostBufferSemantics, HostLayout};
use crate::buffer::{Buffer, Placement};
use crate::call::pjrt_call;
use crate::call::release::refuse_in_callback;
use crate::call::trace::span;
use crate::client::Client;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::sys::{self, Args};
use pjrt_types::ElementType;

impl Client {
    /// Uploads borrowed host bytes (checked: their size, their values where dense); returns
    /// once the plugin no longer reads them.
    pub(crate) fn upload_bytes(
        &self,
        data: &[u8],
        element_type: ElementType,
        dims: &[i64],
        layout: &HostLayout,
        placement: Placement<'_>,
    ) -> Result<Buffer> {
        if layout.byte_strides.is_none() {
            element_type.check_host_values(data)?;
        }
        // SAFETY: `data` is a live borrow of `data.len()` bytes for the whole call, which waits
        // until the plugin no longer reads it.
        unsafe { self.upload_borrowed(data.as_ptr(), data.len(), element_type, dims, layout, placement) }
    }

    /// [`Client::upload_bytes`] for host data given by pointer, so callers with strided
    /// views (whose gaps may belong to someone else) never form a slice over memory they do not
    /// own. Returns only once the plugin no longer reads the data.
    ///
    /// # Safety
    /// `data` must be readable, for the whole call, at every byte the shape and layout address
    /// (`len` bytes from `data` cover them all; checked here against the layout).
    pub(crate) unsafe fn upload_borrowed(
        &self,
        data: *const u8,
        len: usize,
        element_type: ElementType,
        dims: &[i64],
        layout: &HostLayout,
        placement: Placement<'_>,
    ) -> Result<Buffer> {
        if layout.semantics == HostBufferSemantics::CopyUntilTransferCompletes {
            // This upload waits for the plugin's done event before returning.
            refuse_in_callback(
                "Client::upload_with with HostBufferSemantics::CopyUntilTransferCompletes",
                "upload with HostBufferSemantics::CopyDuringCall (the default) or owned data (HostSource::owned)",
            )?;
        }
        let _span = span!(DEBUG, "upload", bytes = len, device = placement.trace_device(self));
        let api = self.api();
        checks::check_element_type(api, element_type)?;
        let mut device_layout = layout.check(self, element_type, dims, len)?;
        let mut args = sys::PJRT_Client_BufferFromHostBuffer_Args::new();
        args.client = self.raw();
        args.data = if len == 0 {
            std::ptr::NonNull::<u64>::dangling().as_ptr() as *const c_void
        } else {
            data as *const c_void
        };
        args.type_ = sys::PJRT_Buffer_Type(element_type.to_i32());
        args.dims = dims.as_ptr();
        args.num_dims = dims.len();
        layout.fill(&mut args, device_layout.as_mut());
        args.host_buffer_semantics = match layout.semantics {
            HostBufferSemantics::CopyDuringCall => sys::PJRT_HostBufferSemantics::ImmutableOnlyDuringCall,
            HostBufferSemantics::CopyUntilTransferCompletes => {
                sys::PJRT_HostBufferSemantics::ImmutableUntilTransferCompletes
            }
        };
        match resolve_target(self, placement)? {
            Target::Device(device) => args.device = device,
            Target::Memory(memory) => args.memory = memory,
        }
        pjrt_call!(api, PJRT_Client_BufferFromHostBuffer, &mut args)?;
        // Own both outputs before anything can fail, so that neither leaks.
        let done = Event::from_raw(self.plugin(), Some(self), args.done_with_host_buffer);
        let buffer = NonNull::new(args.buffer).map(|raw| Buffer::from_raw(self, raw));
        match (layout.semantics, done) {
            // `data` is borrowed only for this call: wait until the plugin is done with it.
            (HostBufferSemantics::CopyUntilTransferCompletes, Some(done)) => done.wait_until_complete()?,
            // No done event where the plugin may read later: the buffer's own readiness is the
            // only signal left (its contents are defined once the host data has been read). A
            // plugin that gives neither is refused.
            (HostBufferSemantics::CopyUntilTransferCompletes, None) => {
                if let Some(Ok(ready)) = buffer.as_ref().map(|b| b.ready_event()) {
                    let _ = ready.wait_until_complete();
                }
                return Err(Error::invalid(
                    "PJRT_Client_BufferFromHostBuffer returned no done_with_host_buffer event for \
                     kImmutableUntilTransferCompletes; upload with HostBufferSemantics::CopyDuringCall",
                ));
            }
            // The plugin copied the data during the call (the contract of these semantics,
            // checked on the CPU plugins by the test `copy_during_call_copies_during_the_call`):
            // nothing to wait for, but a failure it already knows of is reported.
            (HostBufferSemantics::CopyDuringCall, Some(done)) => {
                if done.is_ready()? {
                    done.error()?;
                }
            }
            (HostBufferSemantics::CopyDuringCall, None) => {}
        }
        let mut buffer = buffer.ok_or_else(|| Error::invalid("PJRT_Client_BufferFromHostBuffer returned no buffer"))?;
        buffer.set_known_shape(element_type, dims);
        Ok(buffer)
    }
}
