//! Uploads of host data the plugin may hold past the call ([`HostData`]): owned data handed back
//! when the plugin is done, and shared bytes read in place or copied asynchronously.

use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use crate::buffer::aligned::{AlignedHostBuffer, SharedBytes};
use crate::buffer::checks::{check_array, resolve_target, Target};
use crate::buffer::host_layout::HostLayout;
use crate::buffer::{Buffer, Placement};
use crate::call::pjrt_call;
use crate::call::release::in_plugin_callback;
use crate::call::trace::span;
use crate::client::Client;
use crate::error::{Error, Result};
use crate::event::{Event, OnReady};
use crate::sys::{self, Args};
use pjrt_types::ElementType;

/// Host data an upload can own until the plugin is done with it.
#[derive(Debug)]
#[non_exhaustive]
pub enum HostData {
    /// 64-byte aligned memory, shared.
    Aligned(Arc<AlignedHostBuffer>),
    /// A plain vector.
    Bytes(Vec<u8>),
    /// A range of shared memory (a file's bytes, say), its owner held until the plugin is done.
    Shared(SharedBytes),
}

impl HostData {
    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            HostData::Aligned(a) => a.as_bytes(),
            HostData::Bytes(v) => v,
            HostData::Shared(s) => s.as_bytes(),
        }
    }
}

impl From<Vec<u8>> for HostData {
    fn from(v: Vec<u8>) -> Self {
        HostData::Bytes(v)
    }
}

impl From<SharedBytes> for HostData {
    fn from(s: SharedBytes) -> Self {
        HostData::Shared(s)
    }
}

impl From<Arc<AlignedHostBuffer>> for HostData {
    fn from(a: Arc<AlignedHostBuffer>) -> Self {
        HostData::Aligned(a)
    }
}

impl Client {
    /// The upload of [`HostSource::shared`](crate::HostSource::shared): in place
    /// (`kImmutableZeroCopy`, never donated) where the bytes start at a multiple of
    /// [`HOST_ALIGNMENT`](crate::HOST_ALIGNMENT), else copied asynchronously
    /// (`kImmutableUntilTransferCompletes`) on the plugin's own threads. Either way the call
    /// returns at once and `host`'s owner is kept alive until the plugin's done-with-host-buffer
    /// event fires (for in-place buffers: until they are destroyed).
    pub(crate) fn upload_shared(
        &self,
        host: &SharedBytes,
        element_type: ElementType,
        dims: &[i64],
        layout: &HostLayout,
        placement: Placement<'_>,
    ) -> Result<Buffer> {
        if host.is_aligned() {
            return self.upload_in_place(host, element_type, dims, layout, placement);
        }
        // The plugin reports a failed copy through the buffer itself (its ready event), so the
        // done callback has nothing to add: it only releases the data.
        let (buffer, _released) = self.upload_owned(
            HostData::Shared(host.clone()),
            element_type,
            dims,
            layout,
            placement,
            Box::new(|_, _| ()),
        )?;
        Ok(buffer)
    }

    /// The upload of [`HostSource::owned`](crate::HostSource::owned), with
    /// `ImmutableUntilTransferCompletes`: the call returns at once, the plugin reads `data`
    /// asynchronously, and when it is done (its done-with-host-buffer event) `on_done` runs
    /// with the event's status and gets the data back. A panic in `on_done` is caught and
    /// reported by the returned [`OnReady`]. The strides are checked to stay within the data.
    pub(crate) fn upload_owned(
        &self,
        data: HostData,
        element_type: ElementType,
        dims: &[i64],
        layout: &HostLayout,
        placement: Placement<'_>,
        on_done: Box<dyn FnOnce(Result<()>, HostData) + Send + 'static>,
    ) -> Result<(Buffer, OnReady)> {
        let _span = span!(DEBUG, "upload", bytes = data.as_bytes().len(), device = placement.trace_device(self));
        check_array(self.api(), element_type, dims)?;
        layout.require_default_semantics("an upload of owned or shared data")?;
        let len = data.as_bytes().len();
        let mut device_layout = layout.check(self, element_type, dims, len)?;
        if layout.byte_strides.is_none() {
            element_type.check_host_values(data.as_bytes())?;
        }
        let target = resolve_target(self, placement)?;
        let ptr = if len == 0 {
            NonNull::<u64>::dangling().as_ptr() as *const c_void
        } else {
            data.as_bytes().as_ptr() as *const c_void
        };
        // The data lives in a slot the callback empties; if the callback cannot be registered
        // the data is still here, and is freed only once the plugin is known to be done.
        let slot = Arc::new(Mutex::new(Some(data)));
        let mut args = sys::PJRT_Client_BufferFromHostBuffer_Args::new();
        args.client = self.raw();
        args.data = ptr;
        args.type_ = sys::PJRT_Buffer_Type(element_type.to_i32());
        args.dims = dims.as_ptr();
        args.num_dims = dims.len();
        layout.fill(&mut args, device_layout.as_mut());
        args.host_buffer_semantics = sys::PJRT_HostBufferSemantics::ImmutableUntilTransferCompletes;
        match target {
            Target::Device(device) => args.device = device,
            Target::Memory(memory) => args.memory = memory,
        }
        pjrt_call!(self.api(), PJRT_Client_BufferFromHostBuffer, &mut args)?;
        let buffer = NonNull::new(args.buffer).map(|raw| Buffer::from_raw(self, raw));
        let Some(done) = Event::from_raw(self.plugin(), Some(self), args.done_with_host_buffer) else {
            // No signal of when the plugin stops reading: the data must never be freed.
            std::mem::forget(slot);
            return match buffer {
                Some(_) => Err(Error::invalid("PJRT_Client_BufferFromHostBuffer returned no done event")),
                None => Err(Error::invalid("PJRT_Client_BufferFromHostBuffer returned no buffer")),
            };
        };
        let shared = slot.clone();
        let registered = done.on_ready(move |status| {
            let data = shared.lock().unwrap_or_else(|p| p.into_inner()).take();
            if let Some(data) = data {
                on_done(status, data);
            }
        });
        let on_ready = match registered {
            Ok(on_ready) => on_ready,
            Err(e) => {
                // Wait for the plugin to let go of the data before freeing it; if that cannot be
                // seen, leak it. Inside a plugin callback the wait may never end: leak it there.
                if in_plugin_callback() {
                    std::mem::forget(slot);
                } else {
                    let _ = done.leak_if_in_use(done.wait_until_complete(), &mut Some(slot));
                }
                return Err(e);
            }
        };
        let mut buffer = buffer.ok_or_else(|| Error::invalid("PJRT_Client_BufferFromHostBuffer returned no buffer"))?;
        buffer.set_known_shape(element_type, dims);
        Ok((buffer, on_ready))
    }
}
