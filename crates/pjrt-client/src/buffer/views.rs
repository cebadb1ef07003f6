//! Buffers that are views of existing memory: host memory the plugin reads in place (zero copy)
//! and device memory made elsewhere.

use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use crate::buffer::aligned::AlignedHostBuffer;
use crate::buffer::checks::{check_array, resolve_target, Target};
use crate::buffer::external_reference::increase_external_reference;
use crate::buffer::layout::MemoryLayout;
use crate::buffer::raw_layout::RawLayout;
use crate::buffer::{Buffer, Placement, ReadOnlyMemory};
use crate::call::panic::no_unwind;
use crate::call::pjrt_call;
use crate::call::release::CallbackScope;
use crate::client::Client;
use crate::error::{Error, Result};
use crate::sys::{self, Args};
use pjrt_types::ElementType;

/// The minor version that added `PJRT_Client_CreateViewOfDeviceBuffer_Args.memory`.
pub(crate) const VIEW_MEMORY_MINOR: i32 = 66;

/// How a view reads the memory it is given: its layout and, for device memory, the stream that
/// produces it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ViewOptions {
    /// The layout of the viewed memory (`layout`); `None`: the plugin's default for the shape.
    /// Checked against the shape, and the memory's size against the layout, before the call.
    pub layout: Option<MemoryLayout>,
    /// A platform stream (e.g. a `cudaStream_t` as an integer) on which the memory's producer
    /// runs, so the plugin orders the view's uses after it (`stream`). For GPU plugins; XLA's
    /// CPU client refuses any stream (UNIMPLEMENTED). `None` sends 0, "no stream".
    pub stream: Option<isize>,
}

impl ViewOptions {
    /// No layout, no stream: the plugin's defaults.
    ///
    /// ```
    /// use pjrt_client::ViewOptions;
    /// let options = ViewOptions::new();
    /// assert_eq!((options.layout, options.stream), (None, None));
    /// ```
    pub fn new() -> ViewOptions {
        ViewOptions::default()
    }

    /// Views the memory in `layout`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use pjrt_client::{AlignedHostBuffer, ElementType, MemoryLayout, Placement, ViewOptions};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// // Host memory holding a [2,3] array column-major.
    /// let host = Arc::new(AlignedHostBuffer::from_slice(&[1f32, 4., 2., 5., 3., 6.])?);
    /// let options = ViewOptions::new().with_layout(MemoryLayout::column_major(2));
    /// let view = client.view_of_aligned_with(host, ElementType::F32, &[2, 3], Placement::Default, &options)?;
    /// assert_eq!(view.to_vec::<f32>()?, [1., 2., 3., 4., 5., 6.]);
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn with_layout(mut self, layout: MemoryLayout) -> ViewOptions {
        self.layout = Some(layout);
        self
    }

    /// Orders the view after work on `stream` (see [`ViewOptions::stream`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use pjrt_client::{AlignedHostBuffer, ElementType, ErrorCode, Placement, ViewOptions};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// let host = Arc::new(AlignedHostBuffer::from_slice(&[1f32, 2.])?);
    /// let options = ViewOptions::new().with_stream(7);
    /// // The CPU plugin has no streams: it refuses.
    /// let refused = client.view_of_aligned_with(host, ElementType::F32, &[2], Placement::Default, &options);
    /// assert_eq!(refused.unwrap_err().code(), Some(ErrorCode::Unimplemented));
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn with_stream(mut self, stream: isize) -> ViewOptions {
        self.stream = Some(stream);
        self
    }
}

/// What a view keeps alive until the plugin's on-delete callback runs.
pub(crate) struct ViewKeepAlive {
    host: Option<Arc<AlignedHostBuffer>>,
    on_delete: Option<Box<dyn FnOnce() + Send>>,
}

/// Shared between the view's creator and the on-delete callback: whoever comes first takes the
/// payload. The callback owns one reference (handed over as `user_arg`).
pub(crate) struct ViewState {
    payload: Mutex<Option<ViewKeepAlive>>,
}

pub(crate) unsafe extern "C" fn view_on_delete(_device_buffer_ptr: *mut c_void, user_arg: *mut c_void) {
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

/// The bytes a view of an array of `element_type` and `dims` reads: the dense size, or the span
/// of the options' layout. The element type is checked first (a zero type aborts the plugins).
fn view_span(client: &Client, element_type: ElementType, dims: &[i64], options: &ViewOptions) -> Result<usize> {
    let dense = check_array(client.api(), element_type, dims)?;
    match &options.layout {
        Some(layout) => layout.host_span(element_type, dims),
        None => Ok(dense),
    }
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
        self.view_of_aligned_with(host, element_type, dims, placement, &ViewOptions::default())
    }

    /// [`Client::view_of_aligned`] with a layout (and a stream, which the CPU plugins refuse):
    /// `host` must hold exactly the bytes the layout spans (see [`ViewOptions::with_layout`]).
    /// Tiled layouts with tiles are refused: their padding is the plugin's to choose.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use pjrt_client::{AlignedHostBuffer, ElementType, MemoryLayout, Placement, ViewOptions};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// // A [3,2] array kept column-major in host memory: the view reads it in place.
    /// let host = Arc::new(AlignedHostBuffer::from_slice(&[1u16, 3, 5, 2, 4, 6])?);
    /// let options = ViewOptions::new().with_layout(MemoryLayout::column_major(2));
    /// let view = client.view_of_aligned_with(host.clone(), ElementType::U16, &[3, 2], Placement::Default, &options)?;
    /// assert_eq!(view.to_vec::<u16>()?, [1, 2, 3, 4, 5, 6]);
    /// // The memory must be exactly what the layout spans.
    /// let short = Arc::new(AlignedHostBuffer::from_slice(&[1u16, 3, 5, 2])?);
    /// assert!(client.view_of_aligned_with(short, ElementType::U16, &[3, 2], Placement::Default, &options).is_err());
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn view_of_aligned_with(
        &self,
        host: Arc<AlignedHostBuffer>,
        element_type: ElementType,
        dims: &[i64],
        placement: Placement<'_>,
        options: &ViewOptions,
    ) -> Result<Buffer> {
        if self.platform_name() != "cpu" {
            return Err(Error::invalid(format!(
                "a view of host memory needs the CPU platform (this client is {}); use the unsafe \
                 view_of_device_pointer with device memory",
                self.platform_name()
            )));
        }
        let size = view_span(self, element_type, dims, options)?;
        if size != host.len() {
            return Err(Error::invalid(format!(
                "the host buffer has {} bytes but shape {dims:?} of {element_type} needs {size}{}",
                host.len(),
                options.layout.as_ref().map(|l| format!(" in layout {l}")).unwrap_or_default()
            )));
        }
        // The memory is only read through the view; the external reference taken below keeps
        // the plugin from donating (and so writing) it.
        let ptr = host.as_bytes().as_ptr() as *mut c_void;
        let keep = ViewKeepAlive { host: Some(host), on_delete: None };
        // SAFETY: `ptr` points to `size` bytes owned by `keep.host`, which stays alive until the
        // on-delete callback; the alignment is checked inside.
        let mut buffer = unsafe { self.create_view(ptr, element_type, dims, placement, options, keep) }?;
        let reference = increase_external_reference(self.plugin(), buffer.as_raw())?;
        // Other clones of `host` may be reading it: a DLPack export of the view says read-only.
        buffer.attach(Box::new(ReadOnlyMemory(reference)));
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
    /// the buffer is donated to an execution, and so may the consumer of a DLPack export of the
    /// view ([`Buffer::into_dlpack`] does not flag it read-only).
    pub unsafe fn view_of_device_pointer(
        &self,
        ptr: *mut c_void,
        element_type: ElementType,
        dims: &[i64],
        placement: Placement<'_>,
        on_delete: Option<Box<dyn FnOnce() + Send>>,
    ) -> Result<Buffer> {
        // SAFETY: the caller's contract (the default options: dense row-major, no stream).
        unsafe {
            self.view_of_device_pointer_with(ptr, element_type, dims, placement, &ViewOptions::default(), on_delete)
        }
    }

    /// [`Client::view_of_device_pointer`] with a layout and a stream ([`ViewOptions`]). The
    /// layout is checked against the shape first; tiled layouts with tiles are refused (their
    /// size is the plugin's to choose, so the contract below could not be stated).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use pjrt_client::{AlignedHostBuffer, ElementType, MemoryLayout, Placement, ViewOptions};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// // On CPU, device memory is host memory (64-byte aligned).
    /// let memory = Arc::new(AlignedHostBuffer::from_slice(&[1i32, 3, 2, 4])?);
    /// let ptr = memory.as_bytes().as_ptr() as *mut std::ffi::c_void;
    /// let options = ViewOptions::new().with_layout(MemoryLayout::column_major(2));
    /// let keep = memory.clone();
    /// // SAFETY: `keep` holds the 16 bytes until the plugin calls `on_delete`; nothing writes them.
    /// let view = unsafe {
    ///     client.view_of_device_pointer_with(ptr, ElementType::S32, &[2, 2], Placement::Default, &options, Some(Box::new(move || drop(keep))))
    /// }?;
    /// assert_eq!(view.to_vec::<i32>()?, [1, 2, 3, 4]);
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    ///
    /// # Safety
    /// As [`Client::view_of_device_pointer`], with the memory holding at least the bytes the
    /// layout spans (the dense size for a tiled layout without tiles; for strides, the furthest
    /// element plus one), and `options.stream` a stream of the target device, or `None`.
    pub unsafe fn view_of_device_pointer_with(
        &self,
        ptr: *mut c_void,
        element_type: ElementType,
        dims: &[i64],
        placement: Placement<'_>,
        options: &ViewOptions,
        on_delete: Option<Box<dyn FnOnce() + Send>>,
    ) -> Result<Buffer> {
        // Checked before anything else: element type 0 aborts the process.
        view_span(self, element_type, dims, options)?;
        let keep = ViewKeepAlive { host: None, on_delete };
        // SAFETY: the caller's contract.
        unsafe { self.create_view(ptr, element_type, dims, placement, options, keep) }
    }

    /// `element_type`, `dims` and `options` must have passed [`view_span`] (both callers need its
    /// size first): it refuses the element types that abort the plugin (0 does).
    ///
    /// # Safety
    /// As [`Client::view_of_device_pointer`], with `keep` holding what the memory depends on.
    unsafe fn create_view(
        &self,
        ptr: *mut c_void,
        element_type: ElementType,
        dims: &[i64],
        placement: Placement<'_>,
        options: &ViewOptions,
        keep: ViewKeepAlive,
    ) -> Result<Buffer> {
        let mut layout = options.layout.as_ref().map(|l| RawLayout::new(l, element_type, dims)).transpose()?;
        if element_type.is_sub_byte() {
            // A view reads device memory, where sub-byte types are packed in a plugin-specific
            // way; the sizes checked here are host sizes (one byte per element).
            return Err(Error::invalid(format!(
                "views of {element_type} memory are not supported: sub-byte types are packed on the device; \
                 upload one byte per element with Client::upload_with and HostSource::bytes instead"
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
        args.element_type = sys::PJRT_Buffer_Type(element_type.to_i32());
        if let Some(layout) = layout.as_mut() {
            args.layout = layout.as_mut_ptr();
        }
        args.stream = options.stream.unwrap_or(0);
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
        let mut buffer = Buffer::from_raw(self, raw);
        buffer.set_known_shape(element_type, dims);
        Ok(buffer)
    }
}
