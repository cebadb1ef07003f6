//! Buffers that are views of existing memory: host memory the plugin reads in place (zero copy)
//! and device memory made elsewhere.

use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use crate::buffer::aligned::AlignedHostBuffer;
use crate::buffer::checks::{check_array, resolve_target, Target};
use crate::buffer::queries::increase_external_reference;
use crate::buffer::{Buffer, Placement};
use crate::call::panic::no_unwind;
use crate::call::pjrt_call;
use crate::call::release::CallbackScope;
use crate::client::Client;
use crate::element_type::ElementType;
use crate::error::{Error, Result};
use crate::sys::{self, Args};

/// The minor version that added `PJRT_Client_CreateViewOfDeviceBuffer_Args.memory`.
pub(crate) const VIEW_MEMORY_MINOR: i32 = 66;

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
