//! Buffers beyond plain uploads and downloads: views of existing memory, raw copies, external
//! references, layouts, dynamic dimensions, uninitialized, error and alias buffers, bitcasts,
//! donation with a control dependency, cross-client copies and uploads with a done callback.
//!
//! Every call is validated before it reaches the plugin (element types the plugin knows,
//! non-negative dimensions, consistent sizes, handles of the same client), because several of
//! these functions abort the process on bad input instead of returning an error.

use std::ffi::{c_char, c_void};
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use crate::buffer::aligned::AlignedHostBuffer;
use crate::buffer::{dense_byte_size, Buffer, HostLayout, HostTransfer, Placement};
use crate::call::release::{release_if_in_callback, CallbackScope};
use crate::call::{checked_slice, pjrt_call, Api};
use crate::client::Client;
use crate::element_type::ElementType;
use crate::error::{Error, ErrorCode, Result};
use crate::event::{Event, OnReady};
use crate::plugin::Plugin;
use crate::sys::{self, Args};

// ---------------------------------------------------------------------------------------------
// Shared validation
// ---------------------------------------------------------------------------------------------

/// Refuses element types the plugin does not know (unknown to this crate, newer than the
/// plugin's minor) and those that cannot hold array data (INVALID, TOKEN): several plugins abort
/// on them rather than returning an error.
pub(crate) fn check_element_type(api: &Api, element_type: ElementType) -> Result<()> {
    match element_type.since_minor() {
        None => return Err(Error::invalid(format!("unknown element type {element_type}"))),
        Some(minor) if minor > api.version().minor => {
            return Err(api.unsupported_feature(element_type.name(), minor));
        }
        Some(_) => {}
    }
    if !element_type.is_array_type() {
        return Err(Error::invalid(format!("element type {element_type} cannot hold array data")));
    }
    Ok(())
}

/// Checks element type and dimensions of an array and returns its dense byte size.
pub(crate) fn check_array(api: &Api, element_type: ElementType, dims: &[i64]) -> Result<usize> {
    check_element_type(api, element_type)?;
    dense_byte_size(element_type, dims)
}

/// Where a new buffer goes, resolved against its client.
pub(crate) enum Target {
    Device(*mut sys::PJRT_Device),
    Memory(*mut sys::PJRT_Memory),
}

pub(crate) fn resolve_target(client: &Client, placement: Placement<'_>) -> Result<Target> {
    match placement {
        Placement::Default => client
            .first_addressable_device()
            .map(Target::Device)
            .ok_or_else(|| Error::invalid("the client has no addressable device")),
        Placement::Device(device) => {
            if !device.client().same_client(client) {
                return Err(Error::invalid("the device belongs to another client"));
            }
            Ok(Target::Device(device.as_raw()))
        }
        Placement::Memory(memory) => {
            if !memory.client().same_client(client) {
                return Err(Error::invalid("the memory belongs to another client"));
            }
            Ok(Target::Memory(memory.as_raw()))
        }
    }
}

/// The memory a placement means (a device's default memory for devices).
pub(crate) fn resolve_memory(client: &Client, placement: Placement<'_>) -> Result<*mut sys::PJRT_Memory> {
    match placement {
        Placement::Memory(memory) => {
            if !memory.client().same_client(client) {
                return Err(Error::invalid("the memory belongs to another client"));
            }
            Ok(memory.as_raw())
        }
        Placement::Device(device) => {
            if !device.client().same_client(client) {
                return Err(Error::invalid("the device belongs to another client"));
            }
            Ok(device.default_memory()?.as_raw())
        }
        Placement::Default => {
            let device = client
                .addressable_devices()
                .into_iter()
                .next()
                .ok_or_else(|| Error::invalid("the client has no addressable device"))?;
            Ok(device.default_memory()?.as_raw())
        }
    }
}

/// An error code and message to hand to the plugin: OK is refused (it would not be an error).
fn check_error_code(code: ErrorCode) -> Result<sys::PJRT_Error_Code> {
    let raw = code.to_raw();
    if raw.0 <= 0 || raw.0 > 16 {
        return Err(Error::invalid(format!("{code} is not an error code a plugin accepts (1..=16)")));
    }
    Ok(raw)
}

/// A dense row-major layout (tiled, minor_to_major = [rank-1 .. 0], no tiles) in the plugin's
/// form. Some calls abort without an explicit layout; this one is always accepted.
pub(crate) struct DenseLayout {
    // Owns the array `raw` points into (heap memory: moving the struct does not move it).
    _minor_to_major: Box<[i64]>,
    raw: sys::PJRT_Buffer_MemoryLayout,
}

impl DenseLayout {
    pub(crate) fn new(rank: usize) -> DenseLayout {
        let minor_to_major: Box<[i64]> = (0..rank as i64).rev().collect();
        let mut tiled = sys::PJRT_Buffer_MemoryLayout_Tiled::new();
        tiled.minor_to_major = if rank == 0 { NonNull::<i64>::dangling().as_ptr() } else { minor_to_major.as_ptr() };
        tiled.minor_to_major_size = rank;
        let mut raw = sys::PJRT_Buffer_MemoryLayout::new();
        raw.layout = sys::PJRT_Buffer_MemoryLayout_Union { tiled };
        raw.type_ = sys::PJRT_Buffer_MemoryLayout_Type::Tiled;
        DenseLayout { _minor_to_major: minor_to_major, raw }
    }

    /// The plugin reads the layout during the call only; `&mut self` keeps it alive meanwhile.
    pub(crate) fn as_mut_ptr(&mut self) -> *mut sys::PJRT_Buffer_MemoryLayout {
        &mut self.raw
    }
}

fn not_deleted(buffer: &Buffer) -> Result<()> {
    if buffer.is_deleted()? {
        return Err(Error::invalid("the buffer was deleted (or donated)"));
    }
    Ok(())
}

/// Runs `f` without letting a panic unwind into the plugin.
fn no_unwind(f: impl FnOnce()) {
    let _ = catch_unwind(AssertUnwindSafe(f));
}

// ---------------------------------------------------------------------------------------------
// Memory layouts
// ---------------------------------------------------------------------------------------------

/// How a buffer's elements are laid out in device memory.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MemoryLayout {
    /// A minor-to-major dimension order, optionally with tiles.
    Tiled {
        /// Logical dimension numbers, most minor (fastest varying) first.
        minor_to_major: Vec<i64>,
        /// Tile shapes, outermost tiling first (empty: no tiling).
        tiles: Vec<Vec<i64>>,
    },
    /// Byte strides per dimension.
    Strides {
        /// Bytes to step per dimension.
        byte_strides: Vec<i64>,
    },
}

impl MemoryLayout {
    /// The dense row-major layout of a rank-`rank` array: minor_to_major = [rank-1, ..., 0].
    pub fn dense(rank: usize) -> MemoryLayout {
        MemoryLayout::Tiled { minor_to_major: (0..rank as i64).rev().collect(), tiles: Vec::new() }
    }

    /// Reads the text the Layouts extension serializes a layout to (XLA's layout notation):
    /// `{1,0}`, or with tiles `{1,0:T(8,128)(2,1)}`. Anything else (element sizes, memory spaces,
    /// ...) gives `None`.
    pub fn parse(text: &str) -> Option<MemoryLayout> {
        let inner = text.trim().strip_prefix('{')?.strip_suffix('}')?;
        let (order, rest) = match inner.split_once(':') {
            Some((order, rest)) => (order, Some(rest)),
            None => (inner, None),
        };
        let ints = |s: &str| -> Option<Vec<i64>> {
            let s = s.trim();
            if s.is_empty() {
                return Some(Vec::new());
            }
            s.split(',').map(|d| d.trim().parse::<i64>().ok()).collect()
        };
        let minor_to_major = ints(order)?;
        let mut tiles = Vec::new();
        if let Some(rest) = rest {
            let mut rest = rest.trim().strip_prefix('T')?;
            while !rest.is_empty() {
                let body = rest.strip_prefix('(')?;
                let end = body.find(')')?;
                tiles.push(ints(&body[..end])?);
                rest = &body[end + 1..];
            }
            if tiles.is_empty() {
                return None;
            }
        }
        Some(MemoryLayout::Tiled { minor_to_major, tiles })
    }
}

impl fmt::Display for MemoryLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let join = |v: &[i64]| v.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(",");
        match self {
            MemoryLayout::Tiled { minor_to_major, tiles } => {
                write!(f, "{{{}", join(minor_to_major))?;
                if !tiles.is_empty() {
                    f.write_str(":T")?;
                    for tile in tiles {
                        write!(f, "({})", join(tile))?;
                    }
                }
                f.write_str("}")
            }
            MemoryLayout::Strides { byte_strides } => write!(f, "strides({})", join(byte_strides)),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Buffer queries
// ---------------------------------------------------------------------------------------------

impl Buffer {
    /// Whether the buffer lives in memory the host CPU can address directly.
    pub fn is_on_cpu(&self) -> Result<bool> {
        let mut args = sys::PJRT_Buffer_IsOnCpu_Args::new();
        args.buffer = self.as_raw();
        pjrt_call!(self.client().api(), PJRT_Buffer_IsOnCpu, &mut args)?;
        Ok(args.is_on_cpu)
    }

    /// The indices of the dimensions whose size is only known at run time (empty: all static).
    pub fn dynamic_dimension_indices(&self) -> Result<Vec<usize>> {
        let rank = self.dimensions()?.len();
        let mut args = sys::PJRT_Buffer_DynamicDimensionIndices_Args::new();
        args.buffer = self.as_raw();
        pjrt_call!(self.client().api(), PJRT_Buffer_DynamicDimensionIndices, &mut args)?;
        const F: &str = "PJRT_Buffer_DynamicDimensionIndices";
        // SAFETY: the array is owned by the buffer, which is alive; copied at once.
        let indices = unsafe { checked_slice(args.dynamic_dim_indices, args.num_dynamic_dims, F, "indices") }?;
        if let Some(bad) = indices.iter().find(|i| **i >= rank) {
            return Err(Error::invalid(format!("{F} returned index {bad} for a rank-{rank} buffer")));
        }
        Ok(indices.to_vec())
    }

    /// The dimensions without padding: equal to [`Buffer::dimensions`] except for dynamic
    /// dimensions, which may be smaller.
    pub fn unpadded_dimensions(&self) -> Result<Vec<i64>> {
        let dims = self.dimensions()?.to_vec();
        let mut args = sys::PJRT_Buffer_UnpaddedDimensions_Args::new();
        args.buffer = self.as_raw();
        pjrt_call!(self.client().api(), PJRT_Buffer_UnpaddedDimensions, &mut args)?;
        const F: &str = "PJRT_Buffer_UnpaddedDimensions";
        // SAFETY: the array is owned by the buffer, which is alive; copied at once.
        let unpadded = unsafe { checked_slice(args.unpadded_dims, args.num_dims, F, "dimensions") }?.to_vec();
        if unpadded.len() != dims.len() || unpadded.iter().zip(&dims).any(|(u, d)| *u < 0 || u > d) {
            return Err(Error::invalid(format!("{F} returned {unpadded:?} for a buffer of dimensions {dims:?}")));
        }
        Ok(unpadded)
    }

    /// The buffer's memory layout: through the Layouts extension where the plugin has it, else
    /// through the deprecated `PJRT_Buffer_GetMemoryLayout`.
    pub fn memory_layout(&self) -> Result<MemoryLayout> {
        not_deleted(self)?;
        let plugin = self.client().plugin();
        if let Some(ext) = plugin.layouts_extension() {
            let serialized = ext.buffer_layout(self)?;
            if let Some(layout) = serialized.as_str().and_then(MemoryLayout::parse) {
                return Ok(layout);
            }
            // A notation this crate cannot read: ask the older slot, and name both if it fails.
            return self.legacy_memory_layout().map_err(|e| {
                Error::invalid(format!("cannot read the layout {serialized} from the Layouts extension; {e}"))
            });
        }
        self.legacy_memory_layout()
    }

    /// The layout as the deprecated `PJRT_Buffer_GetMemoryLayout` slot reports it (prefer
    /// [`Buffer::memory_layout`]).
    pub fn legacy_memory_layout(&self) -> Result<MemoryLayout> {
        not_deleted(self)?;
        let rank = self.dimensions()?.len();
        let mut args = sys::PJRT_Buffer_GetMemoryLayout_Args::new();
        args.buffer = self.as_raw();
        args.layout.struct_size = sys::PJRT_Buffer_MemoryLayout::STRUCT_SIZE;
        pjrt_call!(self.client().api(), PJRT_Buffer_GetMemoryLayout, &mut args)?;
        const F: &str = "PJRT_Buffer_GetMemoryLayout";
        let layout = args.layout;
        match layout.type_ {
            sys::PJRT_Buffer_MemoryLayout_Type::Tiled => {
                // SAFETY: `type_` says the tiled member is the one written.
                let tiled = unsafe { layout.layout.tiled };
                // SAFETY: the arrays are owned by the buffer (alive); copied at once.
                let minor_to_major =
                    unsafe { checked_slice(tiled.minor_to_major, tiled.minor_to_major_size, F, "minor_to_major") }?
                        .to_vec();
                let mut sorted = minor_to_major.clone();
                sorted.sort_unstable();
                if sorted != (0..rank as i64).collect::<Vec<_>>() {
                    return Err(Error::invalid(format!(
                        "{F} returned minor_to_major {minor_to_major:?} for a rank-{rank} buffer"
                    )));
                }
                // SAFETY: as above.
                let sizes = unsafe { checked_slice(tiled.tile_dim_sizes, tiled.num_tiles, F, "tile sizes") }?;
                let total = sizes
                    .iter()
                    .try_fold(0usize, |n, s| n.checked_add(*s))
                    .ok_or_else(|| Error::invalid(format!("{F} returned impossible tile sizes")))?;
                // SAFETY: as above.
                let flat = unsafe { checked_slice(tiled.tile_dims, total, F, "tile dimensions") }?;
                let mut tiles = Vec::with_capacity(sizes.len());
                let mut at = 0;
                for size in sizes {
                    tiles.push(flat[at..at + size].to_vec());
                    at += size;
                }
                Ok(MemoryLayout::Tiled { minor_to_major, tiles })
            }
            sys::PJRT_Buffer_MemoryLayout_Type::Strides => {
                // SAFETY: `type_` says the strides member is the one written.
                let strides = unsafe { layout.layout.strides };
                // SAFETY: owned by the buffer; copied at once.
                let byte_strides =
                    unsafe { checked_slice(strides.byte_strides, strides.num_byte_strides, F, "byte strides") }?
                        .to_vec();
                if byte_strides.len() != rank {
                    return Err(Error::invalid(format!("{F} returned {} strides for rank {rank}", byte_strides.len())));
                }
                Ok(MemoryLayout::Strides { byte_strides })
            }
            other => Err(Error::invalid(format!("{F} returned an unknown layout type {}", other.0))),
        }
    }

    /// A platform-dependent address of the buffer's data (on CPU a host address). It may become
    /// invalid at any moment unless an [`ExternalReference`] is held; dereferencing it is up to
    /// the caller and `unsafe`.
    pub fn unsafe_pointer(&self) -> Result<*mut c_void> {
        not_deleted(self)?;
        let mut args = sys::PJRT_Buffer_UnsafePointer_Args::new();
        args.buffer = self.as_raw();
        pjrt_call!(self.client().api(), PJRT_Buffer_UnsafePointer, &mut args)?;
        Ok(args.buffer_pointer as *mut c_void)
    }

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

// ---------------------------------------------------------------------------------------------
// Raw copies to the host
// ---------------------------------------------------------------------------------------------

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
    pub fn copy_raw_to_host_async(&self, offset: usize, mut destination: Vec<u8>) -> Result<HostTransfer> {
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

    /// Copies `size` raw on-device bytes from byte `offset` on, and waits for them.
    pub fn copy_raw_to_host(&self, offset: usize, size: usize) -> Result<Vec<u8>> {
        let mut destination = Vec::new();
        destination
            .try_reserve_exact(size)
            .map_err(|_| Error::invalid(format!("cannot allocate {size} host bytes for the copy")))?;
        destination.resize(size, 0);
        self.copy_raw_to_host_async(offset, destination)?.wait()
    }

    /// Prepares a raw copy of `size` bytes from `offset` whose destination is given later
    /// (`PJRT_Buffer_CopyRawToHostFuture`, 0.84): call [`RawCopyRequest::fulfill`] with the
    /// destination, or [`RawCopyRequest::fail`]; dropping the request fails it (CANCELLED).
    pub fn copy_raw_to_host_future(&self, offset: usize, size: usize) -> Result<RawCopyRequest<'_>> {
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

/// A raw copy waiting for its destination (see [`Buffer::copy_raw_to_host_future`]).
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

// ---------------------------------------------------------------------------------------------
// Views of existing memory
// ---------------------------------------------------------------------------------------------

/// The minor version that added `PJRT_Client_CreateViewOfDeviceBuffer_Args.memory`.
const VIEW_MEMORY_MINOR: i32 = 66;

/// What a view keeps alive until the plugin's on-delete callback runs.
struct ViewKeepAlive {
    host: Option<Arc<AlignedHostBuffer>>,
    on_delete: Option<Box<dyn FnOnce() + Send>>,
}

/// Shared between the view's creator and the on-delete callback: whoever comes first takes the
/// payload. The callback owns one reference (handed over as `user_arg`).
struct ViewState {
    payload: Mutex<Option<ViewKeepAlive>>,
}

unsafe extern "C" fn view_on_delete(_device_buffer_ptr: *mut c_void, user_arg: *mut c_void) {
    let _scope = CallbackScope::enter();
    no_unwind(|| {
        // Taken out of the hand-off table once; a second call, or an argument never given, finds
        // nothing (see `crate::call::handoff`).
        let Some(state) = crate::call::handoff::take::<Arc<ViewState>>(user_arg) else { return };
        let payload = state.payload.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(ViewKeepAlive { host, on_delete }) = payload {
            drop(host);
            if let Some(on_delete) = on_delete {
                on_delete();
            }
        }
    });
}

impl Client {
    /// The alignment the plugin requires of memory it views (`CreateViewOfDeviceBuffer`):
    /// 64 bytes on CPU; `None` when this crate does not know the platform's requirement.
    pub fn view_alignment(&self) -> Option<usize> {
        (self.platform_name() == "cpu").then_some(crate::buffer::aligned::HOST_ALIGNMENT)
    }

    /// A buffer that reads `host` in place (`PJRT_Client_CreateViewOfDeviceBuffer`): no copy.
    /// Only on the CPU platform, where host memory is device memory. The `Arc` is kept until
    /// the plugin's on-delete callback (when the buffer is destroyed), so the memory can be
    /// neither freed nor mutated meanwhile; the view also holds an external reference, so the
    /// plugin refuses to donate it (a donated view would be written).
    pub fn view_of_aligned(
        &self,
        host: Arc<AlignedHostBuffer>,
        element_type: ElementType,
        dims: &[i64],
        placement: Placement<'_>,
    ) -> Result<Buffer> {
        if self.platform_name() != "cpu" {
            return Err(Error::invalid(format!(
                "a view of host memory needs the CPU platform (this client is {}); use the unsafe \
                 view_of_device_pointer with device memory",
                self.platform_name()
            )));
        }
        let size = check_array(self.api(), element_type, dims)?;
        if size != host.len() {
            return Err(Error::invalid(format!(
                "the host buffer has {} bytes but shape {dims:?} of {element_type} needs {size}",
                host.len()
            )));
        }
        // The memory is only read through the view; the external reference taken below keeps
        // the plugin from donating (and so writing) it.
        let ptr = host.as_bytes().as_ptr() as *mut c_void;
        let keep = ViewKeepAlive { host: Some(host), on_delete: None };
        // SAFETY: `ptr` points to `size` bytes owned by `keep.host`, which stays alive until the
        // on-delete callback; the alignment is checked inside.
        let mut buffer = unsafe { self.create_view(ptr, element_type, dims, placement, keep) }?;
        let reference = increase_external_reference(self.plugin(), buffer.as_raw())?;
        buffer.attach(Box::new(reference));
        Ok(buffer)
    }

    /// A buffer that views existing device memory at `ptr` (`PJRT_Client_CreateViewOfDeviceBuffer`).
    /// `on_delete` runs (once, panics caught) when the plugin no longer uses the memory.
    /// The pointer's alignment is checked against [`Client::view_alignment`] first.
    ///
    /// # Safety
    /// `ptr` must point to memory of the target device or memory holding at least the array's
    /// dense size (row-major), valid and not used elsewhere in ways that conflict with the
    /// buffer (e.g. freed or written while computations read it) until `on_delete` runs, or
    /// until the buffer is dropped when no callback is given. The plugin may write into it if
    /// the buffer is donated to an execution.
    pub unsafe fn view_of_device_pointer(
        &self,
        ptr: *mut c_void,
        element_type: ElementType,
        dims: &[i64],
        placement: Placement<'_>,
        on_delete: Option<Box<dyn FnOnce() + Send>>,
    ) -> Result<Buffer> {
        check_array(self.api(), element_type, dims)?;
        let keep = ViewKeepAlive { host: None, on_delete };
        // SAFETY: the caller's contract.
        unsafe { self.create_view(ptr, element_type, dims, placement, keep) }
    }

    /// # Safety
    /// As [`Client::view_of_device_pointer`], with `keep` holding what the memory depends on.
    unsafe fn create_view(
        &self,
        ptr: *mut c_void,
        element_type: ElementType,
        dims: &[i64],
        placement: Placement<'_>,
        keep: ViewKeepAlive,
    ) -> Result<Buffer> {
        // The element type is converted before anything else is checked: 0 aborts the process.
        check_array(self.api(), element_type, dims)?;
        if element_type.is_sub_byte() {
            // A view reads device memory, where sub-byte types are packed in a plugin-specific
            // way; the sizes checked here are host sizes (one byte per element).
            return Err(Error::invalid(format!(
                "views of {element_type} memory are not supported: sub-byte types are packed on the device; \
                 upload one byte per element with buffer_from_bytes instead"
            )));
        }
        if ptr.is_null() {
            return Err(Error::invalid("the device pointer is NULL"));
        }
        if let Some(alignment) = self.view_alignment() {
            if (ptr as usize) % alignment != 0 {
                return Err(Error::invalid(format!(
                    "the memory at {ptr:p} is not aligned to {alignment} bytes, as the {} plugin requires for views",
                    self.platform_name()
                )));
            }
        }
        let target = resolve_target(self, placement)?;
        if matches!(target, Target::Memory(_)) && self.api().version().minor < VIEW_MEMORY_MINOR {
            // An older plugin has no `memory` field: it would read a NULL device and refuse, or
            // worse, place the view on a device it picks.
            return Err(self.api().unsupported_feature(
                "PJRT_Client_CreateViewOfDeviceBuffer_Args.memory (a view placed in a memory)",
                VIEW_MEMORY_MINOR,
            ));
        }
        let state = Arc::new(ViewState { payload: Mutex::new(Some(keep)) });
        let mut args = sys::PJRT_Client_CreateViewOfDeviceBuffer_Args::new();
        args.client = self.raw();
        args.device_buffer_ptr = ptr;
        args.dims = dims.as_ptr();
        args.num_dims = dims.len();
        args.element_type = element_type.to_raw();
        match target {
            Target::Device(device) => args.device = device,
            Target::Memory(memory) => args.memory = memory,
        }
        args.on_delete_callback = Some(view_on_delete);
        args.on_delete_callback_arg = crate::call::handoff::give(state.clone());
        if let Err(e) = pjrt_call!(self.api(), PJRT_Client_CreateViewOfDeviceBuffer, &mut args) {
            // No buffer refers to the memory: release what it depended on now. The callback's
            // entry stays in the hand-off table (a few bytes) in case the plugin still calls it.
            let payload = state.payload.lock().unwrap_or_else(|p| p.into_inner()).take();
            drop(payload);
            return Err(e);
        }
        let Some(raw) = NonNull::new(args.buffer) else {
            // No buffer to delete, so no on-delete callback: release what it depended on now.
            let payload = state.payload.lock().unwrap_or_else(|p| p.into_inner()).take();
            drop(payload);
            return Err(Error::invalid("PJRT_Client_CreateViewOfDeviceBuffer returned no buffer"));
        };
        let buffer = Buffer::from_raw(self, raw);
        buffer.set_known_shape(element_type, dims);
        Ok(buffer)
    }
}

// ---------------------------------------------------------------------------------------------
// Buffers without host data: uninitialized, error and alias buffers
// ---------------------------------------------------------------------------------------------

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
        let mut layout = DenseLayout::new(dims.len());
        let mut args = sys::PJRT_Client_CreateUninitializedBuffer_Args::new();
        args.client = self.raw();
        args.shape_dims = dims.as_ptr();
        args.shape_num_dims = dims.len();
        args.shape_element_type = element_type.to_raw();
        args.shape_layout = layout.as_mut_ptr();
        match target {
            Target::Device(device) => args.device = device,
            Target::Memory(memory) => args.memory = memory,
        }
        pjrt_call!(self.api(), PJRT_Client_CreateUninitializedBuffer, &mut args)?;
        let buffer = NonNull::new(args.buffer)
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
        let mut layout = DenseLayout::new(dims.len());
        // The full 0.103+ size (112 bytes): the 0.115 plugin demands it, older ones accept it.
        let mut args = sys::PJRT_Client_CreateErrorBuffer_Args::new();
        args.client = self.raw();
        args.error_code = raw_code;
        args.error_message = message.as_ptr() as *const c_char;
        args.error_message_size = message.len();
        args.shape_dims = dims.as_ptr();
        args.shape_num_dims = dims.len();
        args.shape_element_type = element_type.to_raw();
        args.shape_layout = layout.as_mut_ptr();
        args.memory = memory;
        pjrt_call!(self.api(), PJRT_Client_CreateErrorBuffer, &mut args)?;
        let buffer = NonNull::new(args.buffer)
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
        let mut layout = DenseLayout::new(dims.len());
        let mut args = sys::PJRT_Client_CreateAliasBuffer_Args::new();
        args.client = self.raw();
        args.memory = memory;
        args.shape_dims = dims.as_ptr();
        args.shape_num_dims = dims.len();
        args.shape_element_type = element_type.to_raw();
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
            (Some(buffer), Some(fulfiller)) => {
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

// ---------------------------------------------------------------------------------------------
// Bitcast and donation
// ---------------------------------------------------------------------------------------------

impl Buffer {
    /// The same bytes seen as another element type and/or shape (`PJRT_Buffer_Bitcast`, 0.98),
    /// with the default layout. The dense byte sizes must be equal (`f32[4]` → `f32[2,2]` or `s32[4]`).
    ///
    /// The memory moves to the new buffer: this buffer then reports [`Buffer::is_deleted`] (both
    /// CPU plugins donate the source).
    pub fn bitcast(&self, element_type: ElementType, dims: &[i64]) -> Result<Buffer> {
        let api = self.client().api();
        let new_size = check_array(api, element_type, dims)?;
        not_deleted(self)?;
        let old_type = self.element_type()?;
        let old_dims = self.dimensions()?;
        let old_size = dense_byte_size(old_type, old_dims)?;
        if new_size != old_size {
            return Err(Error::invalid(format!(
                "cannot bitcast {old_type}{old_dims:?} ({old_size} bytes) to {element_type}{dims:?} ({new_size} bytes)"
            )));
        }
        let mut args = sys::PJRT_Buffer_Bitcast_Args::new();
        args.buffer = self.as_raw();
        args.element_type = element_type.to_raw();
        args.dims = dims.as_ptr();
        args.num_dims = dims.len();
        pjrt_call!(api, PJRT_Buffer_Bitcast, &mut args)?;
        let buffer = NonNull::new(args.out_buffer)
            .map(|raw| Buffer::from_raw(self.client(), raw))
            .ok_or_else(|| Error::invalid("PJRT_Buffer_Bitcast returned no buffer"))?;
        buffer.set_known_shape(element_type, dims);
        Ok(buffer)
    }

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

// ---------------------------------------------------------------------------------------------
// Copies between clients, and uploads with a done callback
// ---------------------------------------------------------------------------------------------

impl Buffer {
    /// Copies the buffer to another client (possibly of another plugin) through the host: a
    /// dense host copy, then an upload to `placement` of `client`. The element type must be
    /// known to the target plugin.
    pub fn copy_to_client(&self, client: &Client, placement: Placement<'_>) -> Result<Buffer> {
        let element_type = self.element_type()?;
        let dims = self.dimensions()?.to_vec();
        check_element_type(client.api(), element_type)?;
        let bytes = self.to_host_bytes()?;
        client.buffer_from_bytes(&bytes, element_type, &dims, &HostLayout::default(), placement)
    }
}

/// Host data an upload can own until the plugin is done with it.
#[derive(Debug)]
#[non_exhaustive]
pub enum HostData {
    /// 64-byte aligned memory, shared.
    Aligned(Arc<AlignedHostBuffer>),
    /// A plain vector.
    Bytes(Vec<u8>),
}

impl HostData {
    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            HostData::Aligned(a) => a.as_bytes(),
            HostData::Bytes(v) => v,
        }
    }
}

impl From<Vec<u8>> for HostData {
    fn from(v: Vec<u8>) -> Self {
        HostData::Bytes(v)
    }
}

impl From<Arc<AlignedHostBuffer>> for HostData {
    fn from(a: Arc<AlignedHostBuffer>) -> Self {
        HostData::Aligned(a)
    }
}

impl Client {
    /// Uploads host data the upload owns, with `ImmutableUntilTransferCompletes`: the call
    /// returns at once, the plugin reads `data` asynchronously, and when it is done (its
    /// done-with-host-buffer event) `on_done` runs with the event's status and gets the data
    /// back. A panic in `on_done` is caught and reported by the returned [`OnReady`].
    pub fn buffer_from_host_data<F>(
        &self,
        data: impl Into<HostData>,
        element_type: ElementType,
        dims: &[i64],
        placement: Placement<'_>,
        on_done: F,
    ) -> Result<(Buffer, OnReady)>
    where
        F: FnOnce(Result<()>, HostData) + Send + 'static,
    {
        let data = data.into();
        let size = check_array(self.api(), element_type, dims)?;
        if data.as_bytes().len() != size {
            return Err(Error::invalid(format!(
                "the host data has {} bytes but shape {dims:?} of {element_type} needs {size}",
                data.as_bytes().len()
            )));
        }
        element_type.check_host_values(data.as_bytes())?;
        let target = resolve_target(self, placement)?;
        let ptr = if size == 0 {
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
        args.type_ = element_type.to_raw();
        args.dims = dims.as_ptr();
        args.num_dims = dims.len();
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
                // seen, leak it.
                let _ = done.leak_if_in_use(done.wait_until_complete(), &mut Some(slot));
                return Err(e);
            }
        };
        let buffer = buffer.ok_or_else(|| Error::invalid("PJRT_Client_BufferFromHostBuffer returned no buffer"))?;
        buffer.set_known_shape(element_type, dims);
        Ok((buffer, on_ready))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_parse_and_print() {
        assert_eq!(MemoryLayout::parse("{0}"), Some(MemoryLayout::dense(1)));
        assert_eq!(MemoryLayout::parse("{1,0}"), Some(MemoryLayout::dense(2)));
        assert_eq!(MemoryLayout::parse("{}"), Some(MemoryLayout::dense(0)));
        assert_eq!(
            MemoryLayout::parse("{1,0:T(8,128)(2,1)}"),
            Some(MemoryLayout::Tiled { minor_to_major: vec![1, 0], tiles: vec![vec![8, 128], vec![2, 1]] })
        );
        assert_eq!(MemoryLayout::parse("{1,0:T(8,128)(2,1)}").unwrap().to_string(), "{1,0:T(8,128)(2,1)}");
        assert_eq!(MemoryLayout::dense(3).to_string(), "{2,1,0}");
        for bad in ["", "1,0", "{1,x}", "{1,0:E(4)}", "{1,0:T(8,128}", "{1,0:T}"] {
            assert_eq!(MemoryLayout::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn dense_layout_points_into_its_own_array() {
        let mut layout = DenseLayout::new(3);
        let raw = layout.as_mut_ptr();
        // SAFETY: built as tiled just above; the array lives in `layout`.
        unsafe {
            assert_eq!((*raw).type_, sys::PJRT_Buffer_MemoryLayout_Type::Tiled);
            assert_eq!((*raw).struct_size, 76);
            let tiled = (*raw).layout.tiled;
            assert_eq!(std::slice::from_raw_parts(tiled.minor_to_major, tiled.minor_to_major_size), [2, 1, 0]);
            assert_eq!(tiled.num_tiles, 0);
        }
    }

    #[test]
    fn error_codes_are_checked() {
        assert!(check_error_code(ErrorCode::Internal).is_ok());
        assert!(check_error_code(ErrorCode::Other(0)).is_err());
        assert!(check_error_code(ErrorCode::Other(99)).is_err());
    }
}
