//! Buffers: arrays on a device, and the transfers between host and device. This file holds the
//! [`Buffer`] type and its core (where it lives, its type and dimensions, copies to other devices
//! and memories, deletion), and [`Placement`]; each other file has one job:
//!
//! - `aligned.rs`: host memory the plugin may use in place (`AlignedHostBuffer`, `SharedBytes`);
//! - `bitcast.rs`: the same bytes seen as another element type or shape;
//! - `borrowed.rs`: uploads of borrowed host memory, done once the plugin no longer reads it;
//! - `checks.rs`: the argument checks shared by the buffer calls;
//! - `client_copy.rs`: copies of a buffer to another client, through the host;
//! - `dma.rs`: DMA mapping of host memory (`DmaMapping`);
//! - `donation.rs`: donation with a control dependency (`ControlDependency`);
//! - `download.rs`: downloads, every way a buffer's contents come back to the host;
//! - `external_reference.rs`: external references that pin a buffer's memory (`ExternalReference`);
//! - `host_copy.rs`: device-to-host copies into memory the caller owns;
//! - `host_data.rs`: uploads of owned or shared host data the plugin may hold past the call;
//! - `host_layout.rs`: how an upload reads its host data and lays it out (`HostLayout`);
//! - `host_transfer.rs`: a device-to-host copy in flight (`HostTransfer`);
//! - `layout.rs`: memory layouts (`MemoryLayout`) and their checks;
//! - `ndarray.rs`: `ndarray` conveniences (feature `ndarray`);
//! - `queries.rs`: queries beyond the core: CPU residence, pointers, dynamic dimensions, layouts;
//! - `raw_copy.rs`: raw copies of a buffer's bytes to the host (`RawCopyRequest`);
//! - `raw_layout.rs`: a memory layout in the plugin's form (`RawLayout`);
//! - `transfer_manager.rs`: the asynchronous host-to-device transfer manager;
//! - `upload.rs`: uploads, every way host data becomes a buffer (`HostSource`, `UploadOptions`);
//! - `views.rs`: buffers that are views of existing host or device memory;
//! - `without_host_data.rs`: uninitialized, error and alias buffers (`AliasFulfiller`).

pub(crate) mod aligned;
pub(crate) mod bitcast;
pub(crate) mod borrowed;
pub(crate) mod checks;
pub(crate) mod client_copy;
pub(crate) mod dma;
pub(crate) mod donation;
pub mod download;
pub(crate) mod external_reference;
pub(crate) mod host_copy;
pub(crate) mod host_data;
pub(crate) mod host_layout;
pub(crate) mod host_transfer;
pub(crate) mod layout;
#[cfg(feature = "ndarray")]
mod ndarray;
pub(crate) mod queries;
pub(crate) mod raw_copy;
pub(crate) mod raw_layout;
pub(crate) mod transfer_manager;
pub mod upload;
pub(crate) mod views;
pub(crate) mod without_host_data;

use std::ffi::c_void;
use std::fmt;
use std::ptr::NonNull;
use std::sync::{Arc, OnceLock};

use crate::call::release::release_if_in_callback;
use crate::call::{checked_slice, pjrt_call};
use crate::client::device::{Device, Memory};
use crate::client::Client;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::sys::{self, Args};
use pjrt_types::ElementType;
// DLPack names HostLayout here; to go once `dlpack/mod.rs` imports it from `buffer::host_layout`.
pub(crate) use host_layout::HostLayout;
use host_transfer::HostTransfer;
pub(crate) use layout::dense_byte_size;
use layout::MemoryLayout;
use raw_layout::RawLayout;

/// Where an upload goes.
#[derive(Clone, Copy, Debug, Default)]
#[non_exhaustive]
pub enum Placement<'a> {
    /// The client's first addressable device.
    #[default]
    Default,
    /// A device (its default memory).
    Device(&'a Device<'a>),
    /// A specific memory (e.g. `pinned_host`).
    Memory(&'a Memory<'a>),
}

impl Placement<'_> {
    /// The id of the device an upload goes to, for trace spans (-1 for a memory, or where the
    /// plugin does not say).
    #[cfg_attr(not(feature = "tracing"), allow(dead_code))]
    pub(crate) fn trace_device(&self, client: &Client) -> i64 {
        let id = match self {
            Placement::Default => client.addressable_devices().first().map(|d| d.id()),
            Placement::Device(device) => Some(device.id()),
            Placement::Memory(_) => None,
        };
        id.and_then(|id| id.ok()).map_or(-1, i64::from)
    }
}

/// How many dimensions [`KnownShape`] holds inline.
const INLINE_RANK: usize = 4;

/// A type and dimensions known without asking the plugin (an upload's, an executable's
/// outputs'), given to each buffer made with them: held inline up to rank 4, so that a copy is a
/// plain copy of a few words (an `Arc` clone and drop would be two locked atomics per output and
/// execute), and shared above.
#[derive(Clone, Debug)]
pub(crate) enum KnownShape {
    Inline { element_type: ElementType, rank: u32, dims: [i64; INLINE_RANK] },
    Shared(ElementType, Arc<[i64]>),
}

impl KnownShape {
    pub(crate) fn new(element_type: ElementType, dims: &[i64]) -> KnownShape {
        if dims.len() > INLINE_RANK {
            return KnownShape::Shared(element_type, Arc::from(dims));
        }
        let mut inline = [0; INLINE_RANK];
        inline[..dims.len()].copy_from_slice(dims);
        // At most INLINE_RANK, checked above.
        KnownShape::Inline { element_type, rank: dims.len() as u32, dims: inline }
    }

    pub(crate) fn get(&self) -> (ElementType, &[i64]) {
        match self {
            KnownShape::Inline { element_type, rank, dims } => {
                (*element_type, dims.get(..*rank as usize).unwrap_or(dims))
            }
            KnownShape::Shared(element_type, dims) => (*element_type, dims),
        }
    }
}

/// Whether a buffer of `element_type` and `dims` is what a parameter of `expected_type` (any when
/// `None`) and `expected_dims` takes. The dims are compared element by element, not as slices: a
/// slice comparison is a `bcmp` call on the execute hot path.
#[inline]
pub(crate) fn shape_fits(
    expected_type: Option<ElementType>,
    expected_dims: &[i64],
    element_type: ElementType,
    dims: &[i64],
) -> bool {
    expected_type.is_none_or(|t| t == element_type)
        && dims.len() == expected_dims.len()
        && dims.iter().zip(expected_dims).all(|(a, b)| a == b)
}

/// Where a [`Buffer`]'s type and dimensions come from (one field: the buffer is moved often, by
/// value in [`crate::Outputs`]).
enum BufferShape {
    /// Given by whoever made the buffer and knew it (an upload, an executable's outputs): a
    /// plain value, as filling a `OnceLock` costs an atomic read-modify-write per buffer.
    Known(KnownShape),
    /// Otherwise the shape as the plugin reports it, asked once.
    Queried(OnceLock<(ElementType, Arc<[i64]>)>),
}

/// An array on a device. Dropping it frees the device memory.
///
/// `Send + Sync`: PJRT buffers may be used from any thread; the buffer keeps its client alive.
pub struct Buffer {
    client: Client,
    raw: NonNull<sys::PJRT_Buffer>,
    shape: BufferShape,
    // Something that must go away just before the buffer is destroyed (e.g. the external
    // reference a view of host memory holds so that it cannot be donated).
    attached: Option<Box<dyn Attachment>>,
}

/// What a buffer keeps until just before it is destroyed ([`Buffer::attach`]).
pub(crate) trait Attachment: Send + Sync {
    /// Whether the buffer's memory is host memory that others may be reading as immutable
    /// (shared bytes read in place, a view of a read-only DLPack tensor): nothing may write it,
    /// so a DLPack export says read-only.
    fn read_only_memory(&self) -> bool {
        false
    }
}

/// An attachment of a buffer whose memory others may be reading as immutable (see
/// [`Attachment::read_only_memory`]).
pub(crate) struct ReadOnlyMemory<T>(pub(crate) T);

impl<T: Send + Sync> Attachment for ReadOnlyMemory<T> {
    fn read_only_memory(&self) -> bool {
        true
    }
}

// SAFETY: PJRT buffers are thread-safe (XLA's PjRtBuffer methods may be called concurrently);
// this handle owns its buffer exclusively and the cached shape is immutable or behind a OnceLock.
unsafe impl Send for Buffer {}
// SAFETY: as above; `&self` methods only call thread-safe PJRT functions.
unsafe impl Sync for Buffer {}

impl Buffer {
    pub(crate) fn from_raw(client: &Client, raw: NonNull<sys::PJRT_Buffer>) -> Buffer {
        Buffer { client: client.clone(), raw, shape: BufferShape::Queried(OnceLock::new()), attached: None }
    }

    /// Attaches `value` to the buffer: it is dropped just before the buffer is destroyed.
    pub(crate) fn attach(&mut self, value: Box<dyn Attachment>) {
        self.attached = Some(value);
    }

    /// Whether the buffer's memory is host memory others may be reading as immutable (see
    /// [`Attachment::read_only_memory`]).
    pub(crate) fn has_read_only_memory(&self) -> bool {
        self.attached.as_ref().is_some_and(|a| a.read_only_memory())
    }

    /// The client that owns this buffer.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Whether this buffer is `client`'s and has the type (any when `None`) and dimensions
    /// given, as far as known without asking the plugin (`false` when not known yet).
    #[inline]
    pub(crate) fn fits(&self, client: &Client, expected_type: Option<ElementType>, expected_dims: &[i64]) -> bool {
        let Some((element_type, dims)) = self.known_shape() else { return false };
        self.client.same_client(client) && shape_fits(expected_type, expected_dims, element_type, dims)
    }

    /// The element type and dimensions when known without asking the plugin: given at creation,
    /// or asked before.
    #[inline]
    fn known_shape(&self) -> Option<(ElementType, &[i64])> {
        match &self.shape {
            BufferShape::Known(known) => Some(known.get()),
            BufferShape::Queried(queried) => queried.get().map(|(element_type, dims)| (*element_type, &dims[..])),
        }
    }

    /// The element type and dimensions (known, or asked from the plugin once).
    pub(crate) fn shape(&self) -> Result<(ElementType, &[i64])> {
        let queried = match &self.shape {
            BufferShape::Known(known) => return Ok(known.get()),
            BufferShape::Queried(queried) => queried,
        };
        if let Some((element_type, dims)) = queried.get() {
            return Ok((*element_type, dims));
        }
        let api = self.client.api();
        let mut t = sys::PJRT_Buffer_ElementType_Args::new();
        t.buffer = self.raw.as_ptr();
        pjrt_call!(api, PJRT_Buffer_ElementType, &mut t)?;
        let mut d = sys::PJRT_Buffer_Dimensions_Args::new();
        d.buffer = self.raw.as_ptr();
        pjrt_call!(api, PJRT_Buffer_Dimensions, &mut d)?;
        // SAFETY: the dims array is owned by the buffer; copied at once.
        let dims = unsafe { checked_slice(d.dims, d.num_dims, "PJRT_Buffer_Dimensions", "dimensions") }?.to_vec();
        if let Some(bad) = dims.iter().find(|d| **d < 0) {
            return Err(Error::invalid(format!("PJRT_Buffer_Dimensions returned a negative dimension ({bad})")));
        }
        let (element_type, dims) = queried.get_or_init(|| (ElementType::from_i32(t.type_.0), Arc::from(dims)));
        Ok((*element_type, dims))
    }

    /// The element type.
    pub fn element_type(&self) -> Result<ElementType> {
        Ok(self.shape()?.0)
    }

    /// The dimensions.
    pub fn dimensions(&self) -> Result<&[i64]> {
        Ok(self.shape()?.1)
    }

    /// Number of elements.
    pub fn element_count(&self) -> Result<usize> {
        let dims = self.dimensions()?;
        dims.iter()
            .try_fold(1usize, |n, d| usize::try_from(*d).ok().and_then(|d| n.checked_mul(d)))
            .ok_or_else(|| Error::invalid(format!("the buffer's shape {dims:?} has no element count")))
    }

    /// The device the buffer lives on.
    pub fn device(&self) -> Result<Device<'_>> {
        let mut args = sys::PJRT_Buffer_Device_Args::new();
        args.buffer = self.raw.as_ptr();
        pjrt_call!(self.client.api(), PJRT_Buffer_Device, &mut args)?;
        NonNull::new(args.device)
            .map(|d| Device::new(&self.client, d))
            .ok_or_else(|| Error::invalid("the buffer reports no device"))
    }

    /// The memory the buffer lives in. An error when the plugin cannot tell (UNIMPLEMENTED, or
    /// no memory); [`Buffer::memory_if_reported`] reads those answers as "none", as XLA does.
    pub fn memory(&self) -> Result<Memory<'_>> {
        let mut args = sys::PJRT_Buffer_Memory_Args::new();
        args.buffer = self.raw.as_ptr();
        pjrt_call!(self.client.api(), PJRT_Buffer_Memory, &mut args)?;
        NonNull::new(args.memory)
            .map(|m| Memory::new(&self.client, m))
            .ok_or_else(|| Error::invalid("the buffer reports no memory"))
    }

    /// The memory the buffer lives in, or `None` when the plugin does not say: it answers
    /// UNIMPLEMENTED or reports no memory (XLA's C API client's `memory_space()` returns null for
    /// both). Other errors are errors.
    ///
    /// ```
    /// # use pjrt_client::{Client, ClientOptions};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// let client = Client::new(&plugin, &ClientOptions::new())?;
    /// let buffer = client.upload(&[1f32, 2.], &[2])?;
    /// let memory = buffer.memory_if_reported()?.expect("the CPU plugins report a buffer's memory");
    /// assert_eq!(memory.kind()?, "device");
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn memory_if_reported(&self) -> Result<Option<Memory<'_>>> {
        let mut args = sys::PJRT_Buffer_Memory_Args::new();
        args.buffer = self.raw.as_ptr();
        match pjrt_call!(self.client.api(), PJRT_Buffer_Memory, &mut args) {
            Err(e) if e.is_unimplemented() => return Ok(None),
            other => other?,
        }
        Ok(NonNull::new(args.memory).map(|m| Memory::new(&self.client, m)))
    }

    /// Bytes the buffer takes on the device (may include padding).
    pub fn on_device_size(&self) -> Result<usize> {
        let mut args = sys::PJRT_Buffer_OnDeviceSizeInBytes_Args::new();
        args.buffer = self.raw.as_ptr();
        pjrt_call!(self.client.api(), PJRT_Buffer_OnDeviceSizeInBytes, &mut args)?;
        Ok(args.on_device_size_in_bytes)
    }

    /// Frees the device memory now; the handle stays valid and reports [`Buffer::is_deleted`].
    pub fn delete(&self) -> Result<()> {
        let mut args = sys::PJRT_Buffer_Delete_Args::new();
        args.buffer = self.raw.as_ptr();
        pjrt_call!(self.client.api(), PJRT_Buffer_Delete, &mut args)
    }

    /// Whether [`Buffer::delete`] was called (or the buffer was donated).
    pub fn is_deleted(&self) -> Result<bool> {
        let mut args = sys::PJRT_Buffer_IsDeleted_Args::new();
        args.buffer = self.raw.as_ptr();
        pjrt_call!(self.client.api(), PJRT_Buffer_IsDeleted, &mut args)?;
        // SAFETY: a byte of `args`, initialised by `new` and perhaps rewritten by the plugin.
        Ok(unsafe { crate::call::plugin_bool(&raw const args.is_deleted) })
    }

    /// An event that completes when the buffer's data is ready.
    pub fn ready_event(&self) -> Result<Event> {
        let mut args = sys::PJRT_Buffer_ReadyEvent_Args::new();
        args.buffer = self.raw.as_ptr();
        pjrt_call!(self.client.api(), PJRT_Buffer_ReadyEvent, &mut args)?;
        Event::from_raw(self.client.plugin(), Some(&self.client), args.event)
            .ok_or_else(|| Error::invalid("PJRT_Buffer_ReadyEvent returned no event"))
    }

    /// Bytes a dense host copy takes (asks the plugin, which knows sub-byte packing).
    pub fn host_size(&self) -> Result<usize> {
        self.host_size_in(&self.row_major()?)
    }

    /// Bytes a host copy in `layout` takes: computed from the layout here (tiled layouts without
    /// tiles, or strides), and checked against the size the plugin reports for it, so that a
    /// destination sized from it can never be written past.
    ///
    /// ```
    /// use pjrt_client::MemoryLayout;
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// let x = client.upload(&[1f32, 2., 3., 4., 5., 6.], &[2, 3])?;
    /// assert_eq!(x.host_size_in(&MemoryLayout::column_major(2))?, 24);
    /// // A layout that does not order the buffer's dimensions is refused before any call.
    /// assert!(x.host_size_in(&MemoryLayout::column_major(3)).is_err());
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn host_size_in(&self, layout: &MemoryLayout) -> Result<usize> {
        if self.is_deleted()? {
            return Err(Error::invalid("the buffer was deleted"));
        }
        let (element_type, dims) = self.shape()?;
        let expected = layout.host_span(element_type, dims)?;
        let mut raw_layout = RawLayout::new(layout, element_type, dims)?;
        let mut args = sys::PJRT_Buffer_ToHostBuffer_Args::new();
        args.src = self.raw.as_ptr();
        args.host_layout = raw_layout.as_mut_ptr();
        // dst = NULL asks for the size only.
        pjrt_call!(self.client.api(), PJRT_Buffer_ToHostBuffer, &mut args)?;
        let size = args.dst_size;
        // The plugin's size must be the size of the layout (for dense layouts one byte per
        // element for sub-byte types); a strided destination may hold gaps the plugin need not
        // count. Any larger size would make the copy write past the destination sized here.
        let fits = match layout {
            MemoryLayout::Strides { .. } => size <= expected,
            _ => size == expected,
        };
        if !fits {
            return Err(Error::invalid(format!(
                "PJRT_Buffer_ToHostBuffer reports {size} bytes for a host copy of {element_type}{dims:?} in \
                 layout {layout}, which takes {expected}"
            )));
        }
        Ok(expected)
    }

    /// The dense row-major layout of this buffer's rank, which host copies use unless asked
    /// otherwise (without it the plugin would copy in the device layout).
    pub(crate) fn row_major(&self) -> Result<MemoryLayout> {
        Ok(MemoryLayout::dense(self.dimensions()?.len()))
    }

    /// Starts `PJRT_Buffer_ToHostBuffer` into `destination`, which holds exactly the
    /// [`Buffer::host_size_in`] of `layout` (the callers have asked for it once).
    pub(crate) fn start_host_copy(&self, mut destination: Vec<u8>, layout: &MemoryLayout) -> Result<HostTransfer> {
        let size = destination.len();
        let (element_type, dims) = self.shape()?;
        let mut raw_layout = RawLayout::new(layout, element_type, dims)?;
        let mut args = sys::PJRT_Buffer_ToHostBuffer_Args::new();
        args.src = self.raw.as_ptr();
        args.host_layout = raw_layout.as_mut_ptr();
        args.dst = if size == 0 {
            NonNull::<u64>::dangling().as_ptr() as *mut c_void
        } else {
            destination.as_mut_ptr() as *mut c_void
        };
        args.dst_size = size;
        pjrt_call!(self.client.api(), PJRT_Buffer_ToHostBuffer, &mut args)?;
        match Event::from_raw(self.client.plugin(), Some(&self.client), args.event) {
            Some(event) => Ok(HostTransfer::new(Some(event), destination)),
            None => {
                // Nothing says when the plugin stops writing: the destination can never be freed
                // or handed out.
                std::mem::forget(destination);
                Err(Error::invalid("PJRT_Buffer_ToHostBuffer returned no completion event"))
            }
        }
    }

    /// Copies the buffer to another device of the same client.
    pub fn copy_to_device(&self, device: &Device<'_>) -> Result<Buffer> {
        if !device.client().same_client(&self.client) {
            return Err(Error::invalid("the device belongs to another client"));
        }
        let mut args = sys::PJRT_Buffer_CopyToDevice_Args::new();
        args.buffer = self.raw.as_ptr();
        args.dst_device = device.as_raw();
        pjrt_call!(self.client.api(), PJRT_Buffer_CopyToDevice, &mut args)?;
        NonNull::new(args.dst_buffer)
            .map(|b| Buffer::from_raw(&self.client, b))
            .ok_or_else(|| Error::invalid("PJRT_Buffer_CopyToDevice returned no buffer"))
    }

    /// Copies the buffer into another memory (e.g. `pinned_host`).
    pub fn copy_to_memory(&self, memory: &Memory<'_>) -> Result<Buffer> {
        if !memory.client().same_client(&self.client) {
            return Err(Error::invalid("the memory belongs to another client"));
        }
        let mut args = sys::PJRT_Buffer_CopyToMemory_Args::new();
        args.buffer = self.raw.as_ptr();
        args.dst_memory = memory.as_raw();
        pjrt_call!(self.client.api(), PJRT_Buffer_CopyToMemory, &mut args)?;
        NonNull::new(args.dst_buffer)
            .map(|b| Buffer::from_raw(&self.client, b))
            .ok_or_else(|| Error::invalid("PJRT_Buffer_CopyToMemory returned no buffer"))
    }

    /// The raw handle, for use with [`crate::sys`]. Do not destroy it.
    pub fn as_raw(&self) -> *mut sys::PJRT_Buffer {
        self.raw.as_ptr()
    }

    /// Records the shape the buffer was made with (uploads, views, ...): no query later, and no
    /// allocation up to rank 4.
    pub(crate) fn set_known_shape(&mut self, element_type: ElementType, dims: &[i64]) {
        self.shape = BufferShape::Known(KnownShape::new(element_type, dims));
    }

    /// Takes ownership of an output buffer whose shape the executable that produced it already
    /// knows (no allocation, no query).
    pub(crate) fn from_raw_with_shape(client: &Client, raw: NonNull<sys::PJRT_Buffer>, shape: &KnownShape) -> Buffer {
        Buffer { client: client.clone(), raw, shape: BufferShape::Known(shape.clone()), attached: None }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        release_if_in_callback!(Buffer {
            client: self.client.clone(),
            raw: self.raw,
            shape: BufferShape::Queried(OnceLock::new()),
            attached: self.attached.take(),
        });
        drop(self.attached.take());
        let mut args = sys::PJRT_Buffer_Destroy_Args::new();
        args.buffer = self.raw.as_ptr();
        // A failure cannot be reported from Drop; the plugin would only leak the buffer.
        let _ = pjrt_call!(self.client.api(), PJRT_Buffer_Destroy, &mut args);
    }
}

impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.shape() {
            Ok((t, dims)) => write!(f, "Buffer({t}{dims:?})"),
            Err(_) => write!(f, "Buffer({:p})", self.raw),
        }
    }
}

/// What to do instead of a download that waits, inside a plugin callback.
pub(crate) const DOWNLOAD_INSTEAD: &str =
    "start the copy with Buffer::to_bytes_async and await the transfer, or take its bytes in an on_ready \
     callback of its event";
#[cfg(test)]
mod tests {
    use super::KnownShape;
    use crate::ElementType;

    #[test]
    fn known_shapes_are_inline_up_to_rank_4_and_shared_above() {
        for dims in [&[][..], &[7], &[2, 3, 4, 5]] {
            let known = KnownShape::new(ElementType::F32, dims);
            assert!(matches!(known, KnownShape::Inline { .. }), "{dims:?}");
            assert_eq!(known.get(), (ElementType::F32, dims));
            assert_eq!(known.clone().get(), (ElementType::F32, dims));
        }
        let rank5 = KnownShape::new(ElementType::S8, &[1, 2, 3, 4, 5]);
        assert!(matches!(rank5, KnownShape::Shared(..)));
        assert_eq!(rank5.get(), (ElementType::S8, &[1, 2, 3, 4, 5][..]));
    }
}
