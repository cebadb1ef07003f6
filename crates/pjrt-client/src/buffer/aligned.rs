//! Host memory the plugin may use in place: 64-byte aligned, owned, immutable while shared.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ffi::c_void;
use std::fmt;
use std::ptr::NonNull;
use std::sync::Arc;

use crate::buffer::checks::{check_element_type, resolve_target, Target};
use crate::buffer::external_reference::increase_external_reference;
use crate::buffer::host_layout::HostLayout;
use crate::buffer::{Buffer, Placement, ReadOnlyMemory};
use crate::call::pjrt_call;
use crate::call::trace::span;
use crate::client::Client;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::sys::{self, Args};
use pjrt_types::{native_bytes, ElementType, NativeType};

/// The alignment PJRT's CPU plugins require for zero-copy host memory.
pub const HOST_ALIGNMENT: usize = 64;

/// A 64-byte aligned, zero-initialised host allocation.
///
/// Upload it with [`HostSource::aligned`](crate::HostSource::aligned), which lets the plugin read it in place
/// (zero-copy) and holds a reference to it until the plugin says it is done: while shared, it
/// can be neither freed nor mutated (`Arc::get_mut` fails).
pub struct AlignedHostBuffer {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the allocation is owned exclusively by this value; `&self` gives read-only access and
// `&mut self` (exclusive) is required to write.
unsafe impl Send for AlignedHostBuffer {}
// SAFETY: as above: shared access is read-only.
unsafe impl Sync for AlignedHostBuffer {}

impl AlignedHostBuffer {
    fn layout(len: usize) -> Result<Layout> {
        Layout::from_size_align(len.max(1), HOST_ALIGNMENT)
            .map_err(|_| Error::invalid(format!("cannot allocate {len} aligned bytes")))
    }

    /// `len` zero bytes.
    pub fn zeroed(len: usize) -> Result<Self> {
        let layout = Self::layout(len)?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        let ptr =
            NonNull::new(ptr).ok_or_else(|| Error::invalid(format!("out of host memory allocating {len} bytes")))?;
        Ok(Self { ptr, len })
    }

    /// A copy of `bytes`.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let mut buffer = Self::zeroed(bytes.len())?;
        buffer.as_mut_bytes().copy_from_slice(bytes);
        Ok(buffer)
    }

    /// A copy of a typed slice.
    pub fn from_slice<T: NativeType>(values: &[T]) -> Result<Self> {
        Self::from_bytes(native_bytes(values))
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: `ptr` points to `len` initialised bytes owned by `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The bytes, writable (needs exclusive access: not while a buffer uses them).
    pub fn as_mut_bytes(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for AlignedHostBuffer {
    fn drop(&mut self) {
        if let Ok(layout) = Self::layout(self.len) {
            // SAFETY: allocated in `zeroed` with this very layout.
            unsafe { dealloc(self.ptr.as_ptr(), layout) };
        }
    }
}

impl fmt::Debug for AlignedHostBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AlignedHostBuffer").field("len", &self.len).finish()
    }
}

/// Host memory that stays where it is, unchanged, while shared: what a zero-copy upload may let
/// the plugin read in place ([`SharedBytes`], [`HostSource::shared`](crate::HostSource::shared)). Implemented for
/// [`AlignedHostBuffer`], `Vec<u8>` and `Box<[u8]>`; `pjrt-formats` implements it for the files
/// it reads into memory of its own, and for those it maps behind its `unsafe` `open_mapped`.
///
/// # Safety
/// `host_bytes` must return the same memory (pointer and length) every time it is called on one
/// value, and that memory must stay readable and unchanged while any shared reference to the
/// value exists (an `Arc` clone held by a buffer is one), and until the value is dropped. Moving
/// the value must not move the memory. A shared mapping of a file does not qualify by itself:
/// another writer changes what it reads, and a truncation makes reading it raise SIGBUS; an
/// implementation over one must be built by `unsafe` code whose caller promises neither
/// happens (as `memmap2::Mmap::map` asks).
pub unsafe trait SharedHostBytes: Send + Sync + 'static {
    /// The bytes.
    fn host_bytes(&self) -> &[u8];
}

// SAFETY: the allocation is fixed at creation, moves with no move of the value, and can only be
// written through `&mut self`, which no shared reference allows.
unsafe impl SharedHostBytes for AlignedHostBuffer {
    fn host_bytes(&self) -> &[u8] {
        self.as_bytes()
    }
}

// SAFETY: a vector's heap data does not move when the vector moves, and changes (or is
// reallocated) only through `&mut self`.
unsafe impl SharedHostBytes for Vec<u8> {
    fn host_bytes(&self) -> &[u8] {
        self
    }
}

// SAFETY: as for `Vec<u8>`.
unsafe impl SharedHostBytes for Box<[u8]> {
    fn host_bytes(&self) -> &[u8] {
        self
    }
}

/// A byte range of shared host memory, holding its owner: the host data of
/// [`HostSource::shared`](crate::HostSource::shared) (zero-copy where aligned) and of [`HostData::Shared`]
/// (copied asynchronously). Cloning it clones the `Arc`.
///
/// [`HostData::Shared`]: crate::buffer::host_data::HostData::Shared
#[derive(Clone)]
pub struct SharedBytes {
    owner: Arc<dyn SharedHostBytes>,
    start: usize,
    end: usize,
}

impl SharedBytes {
    /// All of `owner`'s bytes.
    pub fn new<T: SharedHostBytes>(owner: Arc<T>) -> SharedBytes {
        let end = owner.host_bytes().len();
        SharedBytes { owner, start: 0, end }
    }

    /// Bytes `range` of `owner`; an error if the range is not within its bytes.
    pub fn slice<T: SharedHostBytes>(owner: Arc<T>, range: std::ops::Range<usize>) -> Result<SharedBytes> {
        Self::slice_dyn(owner, range)
    }

    /// [`SharedBytes::slice`] for an owner already behind `dyn`.
    pub fn slice_dyn(owner: Arc<dyn SharedHostBytes>, range: std::ops::Range<usize>) -> Result<SharedBytes> {
        let len = owner.host_bytes().len();
        if range.start > range.end || range.end > len {
            return Err(Error::invalid(format!(
                "bytes {}..{} are not within the {len} bytes of the shared host memory",
                range.start, range.end
            )));
        }
        Ok(SharedBytes { owner, start: range.start, end: range.end })
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        // In range: checked at construction, and the owner's bytes never change (the trait's
        // contract).
        &self.owner.host_bytes()[self.start..self.end]
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    /// Whether the range is empty.
    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// Whether the bytes start at a multiple of [`HOST_ALIGNMENT`]: what
    /// [`HostSource::shared`](crate::HostSource::shared) needs to let the plugin read them in place.
    pub fn is_aligned(&self) -> bool {
        self.as_bytes().as_ptr() as usize % HOST_ALIGNMENT == 0
    }
}

impl fmt::Debug for SharedBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedBytes")
            .field("range", &(self.start..self.end))
            .field("aligned", &self.is_aligned())
            .finish()
    }
}

impl Client {
    /// The zero-copy upload: the plugin may read `host` for the buffer's whole life.
    pub(crate) fn upload_in_place(
        &self,
        host: &SharedBytes,
        element_type: ElementType,
        dims: &[i64],
        layout: &HostLayout,
        placement: Placement<'_>,
    ) -> Result<Buffer> {
        let _span = span!(DEBUG, "upload", bytes = host.len(), device = placement.trace_device(self), zero_copy = true);
        let api = self.api();
        check_element_type(api, element_type)?;
        layout.require_default_semantics("an upload of shared data")?;
        let bytes = host.as_bytes();
        let mut device_layout = layout.check(self, element_type, dims, bytes.len())?;
        if layout.byte_strides.is_none() {
            element_type.check_host_values(bytes)?;
        }
        let mut args = sys::PJRT_Client_BufferFromHostBuffer_Args::new();
        args.client = self.raw();
        args.data = if bytes.is_empty() {
            NonNull::<u64>::dangling().as_ptr() as *const c_void
        } else {
            bytes.as_ptr() as *const c_void
        };
        args.type_ = sys::PJRT_Buffer_Type(element_type.to_i32());
        args.dims = dims.as_ptr();
        args.num_dims = dims.len();
        layout.fill(&mut args, device_layout.as_mut());
        args.host_buffer_semantics = sys::PJRT_HostBufferSemantics::ImmutableZeroCopy;
        match resolve_target(self, placement)? {
            Target::Device(device) => args.device = device,
            Target::Memory(memory) => args.memory = memory,
        }
        pjrt_call!(api, PJRT_Client_BufferFromHostBuffer, &mut args)?;
        let buffer = NonNull::new(args.buffer).map(|raw| Buffer::from_raw(self, raw));
        if let Some(done) = Event::from_raw(self.plugin(), Some(self), args.done_with_host_buffer) {
            // Keep the memory alive until the plugin lets go of it.
            let keep = host.clone();
            if let Err(e) = done.on_ready(move |_| drop(keep)) {
                // Could not register: the only safe choice left is to never free the memory.
                std::mem::forget(host.clone());
                drop(buffer);
                return Err(e);
            }
        } else {
            // No event: the plugin gives no signal, so the memory must outlive the buffer. Leak
            // one reference rather than risk a use after free.
            std::mem::forget(host.clone());
        }
        let mut buffer = buffer.ok_or_else(|| Error::invalid("PJRT_Client_BufferFromHostBuffer returned no buffer"))?;
        // No donation while the caller shares `host` (see the doc comment). Without the
        // reference the buffer is refused (dropped here, which lets the plugin release `host`).
        let reference = increase_external_reference(self.plugin(), buffer.as_raw())?;
        // The caller may still be reading `host` (through `SharedBytes::as_bytes`, say): a DLPack
        // export of this buffer must say read-only.
        buffer.attach(Box::new(ReadOnlyMemory(reference)));
        buffer.set_known_shape(element_type, dims);
        Ok(buffer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_and_zeroed() {
        for len in [0, 1, 63, 64, 4096 + 3] {
            let b = AlignedHostBuffer::zeroed(len).unwrap();
            assert_eq!(b.as_bytes().as_ptr() as usize % HOST_ALIGNMENT, 0);
            assert!(b.as_bytes().iter().all(|x| *x == 0));
            assert_eq!(b.len(), len);
        }
        let b = AlignedHostBuffer::from_slice(&[1f32, 2.]).unwrap();
        assert_eq!(b.as_bytes(), [1f32.to_le_bytes(), 2f32.to_le_bytes()].concat());
    }
}
