//! Buffers: host bytes with a shape, a device and a memory. Uploads, downloads and copies, views
//! of device memory, alias buffers, raw copies whose destination comes later, donation with a
//! control dependency, and the buffer queries.

use std::ffi::c_void;
use std::panic::catch_unwind;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use pjrt_client::ElementType;
use pjrt_client_sys::{self as sys, Args, PJRT_Error, PJRT_Error_Code};

use crate::calls::{checked_args, guarded, handle, lock, slot_fn, sys_bytes, OK};
use crate::clients::client;
use crate::counters::{bump, COUNTERS};
use crate::devices::{device_index, device_ptr, memory_index, memory_ptr, placement, DEVICES, MEMORIES};
use crate::errors::{invalid, new_error};
use crate::events::{handed_out_event, new_event, on_fake_thread, EventState, FakeEvent};
use crate::faults::{fault_for, injected_failure, injects, null_handle, shape_array, Fault, IMPOSSIBLE_COUNT};
use crate::scenarios::{config, SizeLie};

pub(crate) struct FakeBuffer {
    pub(crate) element_type: sys::PJRT_Buffer_Type,
    dims: Vec<i64>,
    pub(crate) bytes: Vec<u8>,
    device: usize,
    memory: usize,
    deleted: AtomicBool,
    /// External references taken (`IncreaseExternalReferenceCount`) and not yet released.
    external_references: AtomicI64,
    /// The error of an error buffer (`PJRT_Client_CreateErrorBuffer`): its ready event fails.
    pub(crate) error: Option<(PJRT_Error_Code, String)>,
    /// Its dense layout, for `PJRT_Buffer_GetMemoryLayout` (rank-1 .. 0).
    minor_to_major: Vec<i64>,
}

pub(crate) fn new_buffer(
    element_type: sys::PJRT_Buffer_Type,
    dims: Vec<i64>,
    bytes: Vec<u8>,
    device: usize,
    memory: usize,
) -> *mut sys::PJRT_Buffer {
    bump(&COUNTERS.buffers_created);
    let buffer = FakeBuffer {
        element_type,
        bytes,
        device,
        memory,
        deleted: AtomicBool::new(false),
        external_references: AtomicI64::new(0),
        error: None,
        minor_to_major: (0..dims.len() as i64).rev().collect(),
        dims,
    };
    Box::into_raw(Box::new(buffer)).cast()
}

pub(crate) fn buffer<'a>(ptr: *mut sys::PJRT_Buffer) -> Result<&'a FakeBuffer, *mut PJRT_Error> {
    // SAFETY: the client library passes buffers this plugin created and has not destroyed.
    unsafe { handle::<FakeBuffer, _>(ptr, "buffer") }
}

/// What a copy to the host gives for `bytes`, which start at byte `offset` of `buffer`: the
/// stored bytes, except PRED in the `hostile_pred` scenarios, whose true values come back as 2
/// (at even positions) or 0xff (at odd ones), as a plugin may (it returns PRED bytes unchanged).
fn host_copy_of(buffer: &FakeBuffer, offset: usize, bytes: &[u8]) -> Vec<u8> {
    if !config().hostile.pred || buffer.element_type != sys::PJRT_Buffer_Type::PRED {
        return bytes.to_vec();
    }
    bytes
        .iter()
        .enumerate()
        .map(|(i, b)| match (*b, (offset + i) % 2) {
            (0, _) => 0,
            (_, 0) => {
                bump(&COUNTERS.hostile_pred_bytes);
                2
            }
            _ => {
                bump(&COUNTERS.hostile_pred_bytes);
                0xff
            }
        })
        .collect()
}

pub(crate) fn live_buffer<'a>(ptr: *mut sys::PJRT_Buffer) -> Result<&'a FakeBuffer, *mut PJRT_Error> {
    let buffer = buffer(ptr)?;
    if buffer.deleted.load(Ordering::SeqCst) {
        return Err(new_error(PJRT_Error_Code::FAILED_PRECONDITION, "fake: the buffer was deleted"));
    }
    Ok(buffer)
}

/// Reads the host data of an upload: dense, or gathered with byte strides.
///
/// # Safety
/// `data` must point to the host array the strides describe (the client checked its length).
unsafe fn read_host_data(
    data: *const c_void,
    dims: &[i64],
    strides: Option<&[i64]>,
    element_bytes: usize,
    size: usize,
) -> Vec<u8> {
    if size == 0 {
        return Vec::new();
    }
    let Some(strides) = strides else {
        // SAFETY: a dense array of `size` bytes (caller's guarantee).
        return unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) }.to_vec();
    };
    let mut out = Vec::with_capacity(size);
    let count: usize = dims.iter().map(|d| *d as usize).product();
    let mut index = vec![0i64; dims.len()];
    for _ in 0..count {
        let offset: i64 = index.iter().zip(strides).map(|(i, s)| i * s).sum();
        // SAFETY: every element lies inside the strided array (caller's guarantee).
        let element = unsafe { std::slice::from_raw_parts(data.cast::<u8>().add(offset as usize), element_bytes) };
        out.extend_from_slice(element);
        for axis in (0..dims.len()).rev() {
            index[axis] += 1;
            if index[axis] < dims[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
    out
}

slot_fn!(PJRT_Client_BufferFromHostBuffer => fn client_buffer_from_host_buffer(
    args: PJRT_Client_BufferFromHostBuffer_Args, fault
) {
    bump(&COUNTERS.buffer_from_host_calls);
    client(args.client)?;
    if args.data.is_null() {
        return Err(invalid("fake: data is NULL"));
    }
    let known = (1..=33).contains(&args.type_.0) && args.type_ != sys::PJRT_Buffer_Type::TOKEN;
    if !known {
        // A real plugin aborts or crashes here (API notes, §7); the tests check it is never
        // reached.
        return Err(invalid(format!("fake: bad element type {}", args.type_.0)));
    }
    let (device, memory) = placement(args.device, args.memory)?;
    let dims = if args.num_dims == 0 {
        Vec::new()
    } else if args.dims.is_null() {
        return Err(invalid("fake: dims is NULL"));
    } else {
        // SAFETY: the client passes `num_dims` readable dimensions.
        unsafe { std::slice::from_raw_parts(args.dims, args.num_dims) }.to_vec()
    };
    if dims.iter().any(|d| *d < 0) {
        return Err(invalid("fake: negative dimension"));
    }
    // SAFETY: the client passes NULL or a live layout.
    if !unsafe { is_row_major(args.device_layout, dims.len()) } {
        // The fake keeps every buffer row-major: storing another layout's data would lie.
        return Err(new_error(PJRT_Error_Code::UNIMPLEMENTED, "fake: device layouts other than row-major"));
    }
    let element_type = ElementType::from_i32(args.type_.0);
    let count = dims.iter().try_fold(1usize, |n, d| n.checked_mul(*d as usize));
    let size = count.and_then(|c| element_type.host_bytes(c)).ok_or_else(|| invalid("fake: too large"))?;
    let strides = if args.byte_strides.is_null() {
        None
    } else {
        if args.num_byte_strides != dims.len() {
            return Err(invalid("fake: one byte stride per dimension"));
        }
        // SAFETY: the client passes `num_byte_strides` readable strides.
        Some(unsafe { std::slice::from_raw_parts(args.byte_strides, args.num_byte_strides) })
    };
    let element_bytes = element_type.bits().unwrap_or(8).div_ceil(8);
    // SAFETY: the client checked that `data` holds the array its dims and strides describe.
    let bytes = unsafe { read_host_data(args.data, &dims, strides, element_bytes, size) };
    if injects(fault, Fault::NullOutput) {
        // The transfer "happened" but no buffer comes back; the done event still does.
        args.buffer = null_mut();
    } else {
        args.buffer = new_buffer(args.type_, dims, bytes, device, memory);
    }
    // The data was copied above: a NULL done event (hostile) still leaves nothing to read later.
    args.done_with_host_buffer = if config().hostile.null_events {
        bump(&COUNTERS.null_events_returned);
        null_mut()
    } else {
        new_event("PJRT_Client_BufferFromHostBuffer")
    };
    Ok(())
});

slot_fn!(PJRT_Buffer_Destroy => fn buffer_destroy(args: PJRT_Buffer_Destroy_Args, fault) {
    if !args.buffer.is_null() {
        // SAFETY: a buffer this plugin created; the client library destroys it once.
        drop(unsafe { Box::from_raw(args.buffer.cast::<FakeBuffer>()) });
        bump(&COUNTERS.buffers_destroyed);
        if on_fake_thread() {
            bump(&COUNTERS.buffers_destroyed_on_fake_threads);
        }
        let view = {
            let mut views = lock(&VIEWS);
            views.iter().position(|v| v.buffer == args.buffer as usize).map(|at| views.swap_remove(at))
        };
        if let Some(view) = view {
            // SAFETY: the callback and argument the client gave for this view, called once.
            unsafe { (view.on_delete)(view.memory as *mut c_void, view.arg as *mut c_void) };
        }
    }
    Ok(())
});

// ---- views of device memory and donation with a control dependency ----

/// A view's on-delete callback, called when its buffer is destroyed.
struct FakeView {
    buffer: usize,
    memory: usize,
    on_delete: unsafe extern "C" fn(*mut c_void, *mut c_void),
    arg: usize,
}

static VIEWS: Mutex<Vec<FakeView>> = Mutex::new(Vec::new());

// The fake's "device memory" is host memory: the view copies it at once (a real plugin reads it
// in place until the on-delete callback).
slot_fn!(PJRT_Client_CreateViewOfDeviceBuffer => fn client_create_view(
    args: PJRT_Client_CreateViewOfDeviceBuffer_Args, fault
) {
    bump(&COUNTERS.view_calls);
    client(args.client)?;
    // SAFETY: the client passes `num_dims` readable dimensions.
    let (dims, size) = unsafe { shape_of(args.dims, args.num_dims, args.element_type) }?;
    let (device, memory) = placement(args.device, args.memory)?;
    let Some(on_delete) = args.on_delete_callback else {
        return Err(invalid("fake: a view needs an on-delete callback"));
    };
    if args.device_buffer_ptr.is_null() {
        return Err(invalid("fake: NULL device memory"));
    }
    if args.stream != 0 {
        // Echoes the stream, so a client can see it arrived.
        return Err(new_error(PJRT_Error_Code::UNIMPLEMENTED, format!("fake: views on stream {}", args.stream)));
    }
    // SAFETY: the client passes NULL or a live layout.
    if !unsafe { is_row_major(args.layout, dims.len()) } {
        return Err(new_error(PJRT_Error_Code::UNIMPLEMENTED, "fake: view layouts other than row-major"));
    }
    if injects(fault, Fault::NullOutput) {
        args.buffer = null_mut();
        return Ok(());
    }
    // SAFETY: the client passes memory holding the array's dense bytes.
    let bytes = unsafe { sys_bytes(args.device_buffer_ptr.cast(), size) }.to_vec();
    args.buffer = new_buffer(args.element_type, dims, bytes, device, memory);
    lock(&VIEWS).push(FakeView {
        buffer: args.buffer as usize,
        memory: args.device_buffer_ptr as usize,
        on_delete,
        arg: args.on_delete_callback_arg as usize,
    });
    Ok(())
});

/// Whether `layout` is absent or the dense row-major layout of a rank-`rank` array (the only
/// layout the fake keeps buffers in).
///
/// # Safety
/// `layout` is NULL or points to a layout whose arrays hold the counts it gives.
unsafe fn is_row_major(layout: *const sys::PJRT_Buffer_MemoryLayout, rank: usize) -> bool {
    if layout.is_null() {
        return true;
    }
    // SAFETY: the caller's contract.
    let layout = unsafe { &*layout };
    if layout.type_ != sys::PJRT_Buffer_MemoryLayout_Type::Tiled {
        return false;
    }
    // SAFETY: `type_` says the tiled member is meant.
    let tiled = unsafe { layout.layout.tiled };
    if tiled.num_tiles != 0 || tiled.minor_to_major_size != rank {
        return false;
    }
    if rank == 0 {
        return true;
    }
    // SAFETY: the caller's contract: `minor_to_major_size` readable entries.
    let order = unsafe { std::slice::from_raw_parts(tiled.minor_to_major, rank) };
    order.iter().copied().eq((0..rank as i64).rev())
}

// ---- alias buffers ----

/// The fulfil callback object of an alias buffer: the shape a source must have (not the alias
/// itself, which the client may destroy first).
struct FakeAlias {
    element_type: sys::PJRT_Buffer_Type,
    dims: Vec<i64>,
}

slot_fn!(PJRT_Client_CreateAliasBuffer => fn client_create_alias_buffer(args: PJRT_Client_CreateAliasBuffer_Args, fault) {
    client(args.client)?;
    // SAFETY: the client passes `shape_num_dims` readable dimensions.
    let (dims, size) = unsafe { shape_of(args.shape_dims, args.shape_num_dims, args.shape_element_type) }?;
    let memory = memory_index(args.memory)?;
    if injects(fault, Fault::NullOutput) {
        args.alias_buffer = null_mut();
        args.fulfill_alias_buffer_cb = null_mut();
        return Ok(());
    }
    // The fake's alias holds zeros: its data is not replaced on fulfilment.
    let alias = FakeAlias { element_type: args.shape_element_type, dims: dims.clone() };
    args.alias_buffer = new_buffer(args.shape_element_type, dims, vec![0; size], MEMORIES[memory].devices[0], memory);
    args.fulfill_alias_buffer_cb = Box::into_raw(Box::new(alias)).cast();
    bump(&COUNTERS.aliases_created);
    Ok(())
});

// Written out rather than with `slot_fn!`: the callback object is consumed whether or not the
// call (or an injected failure) succeeds, as the real plugins do.
pub(crate) unsafe extern "C" fn client_fulfill_alias_buffer(
    raw: *mut sys::PJRT_Client_FulfillAliasBuffer_Args,
) -> *mut PJRT_Error {
    const SLOT: &str = "PJRT_Client_FulfillAliasBuffer";
    guarded(SLOT, || {
        // SAFETY: the client passes a valid args struct that it does not touch during the call.
        let args = match unsafe { checked_args(raw, "PJRT_Client_FulfillAliasBuffer_Args") } {
            Ok(args) => args,
            Err(error) => return error,
        };
        if args.fulfill_alias_buffer_cb.is_null() {
            return invalid("fake: no fulfil callback");
        }
        // SAFETY: a `Box<FakeAlias>` this plugin leaked; the client hands it back once.
        let alias = unsafe { Box::from_raw(args.fulfill_alias_buffer_cb.cast::<FakeAlias>()) };
        bump(&COUNTERS.aliases_destroyed);
        if fault_for(SLOT) == Some(Fault::Fail) {
            return injected_failure(SLOT, Fault::Fail);
        }
        if let Err(error) = client(args.client) {
            return error;
        }
        if args.status_code != PJRT_Error_Code::OK {
            // Like the CPU plugins: the alias fails, and the call returns the status it was given.
            // SAFETY: the client passes `error_message_size` readable bytes.
            let message = unsafe { sys_bytes(args.error_message, args.error_message_size) };
            return new_error(args.status_code, String::from_utf8_lossy(message));
        }
        match live_buffer(args.buffer) {
            Ok(source) if source.element_type != alias.element_type || source.dims != alias.dims => {
                invalid("fake: the source's shape is not the alias's")
            }
            Ok(source) => {
                // The source's memory moves into the alias.
                source.deleted.store(true, Ordering::SeqCst);
                OK
            }
            Err(error) => error,
        }
    })
}

// ---- raw copies whose destination comes later ----

/// A raw copy waiting for its destination: the bytes (read at once) and the event to complete.
struct FakeRawCopy {
    bytes: Vec<u8>,
    event: Arc<EventState>,
}

unsafe extern "C" fn raw_copy_ready(args: *mut sys::PJRT_Buffer_CopyRawToHostFuture_Callback_Args) {
    let _ = catch_unwind(|| {
        // SAFETY: the client passes a valid args struct with the data this plugin handed out.
        let Some(args) = (unsafe { args.as_mut() }) else { return };
        if args.callback_data.is_null() {
            return;
        }
        // SAFETY: a `Box<FakeRawCopy>` this plugin leaked; the client completes it once.
        let copy = unsafe { Box::from_raw(args.callback_data.cast::<FakeRawCopy>()) };
        bump(&COUNTERS.raw_copy_requests_destroyed);
        let failure = if args.error_code != PJRT_Error_Code::OK {
            // SAFETY: the client passes `error_message_size` readable bytes.
            let message = unsafe { sys_bytes(args.error_message, args.error_message_size) };
            Some((args.error_code, String::from_utf8_lossy(message).into_owned()))
        } else if args.dst.is_null() {
            Some((PJRT_Error_Code::INVALID_ARGUMENT, "fake: no destination".to_owned()))
        } else {
            // SAFETY: the client passes a destination of the requested size.
            unsafe { std::ptr::copy_nonoverlapping(copy.bytes.as_ptr(), args.dst.cast::<u8>(), copy.bytes.len()) };
            None
        };
        copy.event.complete(failure);
    });
}

// `null_output` leaves the event NULL but hands out the callback: the client must still complete
// (cancel) the request, so that its data comes back.
slot_fn!(PJRT_Buffer_CopyRawToHostFuture => fn buffer_copy_raw_to_host_future(
    args: PJRT_Buffer_CopyRawToHostFuture_Args, fault
) {
    let buffer = live_buffer(args.buffer)?;
    let (offset, size) = (usize::try_from(args.offset), usize::try_from(args.transfer_size));
    let (Ok(offset), Ok(size)) = (offset, size) else {
        return Err(invalid("fake: negative offset or size"));
    };
    let Some(bytes) = offset.checked_add(size).and_then(|end| buffer.bytes.get(offset..end)) else {
        return Err(invalid("fake: the range is outside the buffer"));
    };
    let state = Arc::new(EventState::default());
    let copy = FakeRawCopy { bytes: host_copy_of(buffer, offset, bytes), event: state.clone() };
    args.callback_data = Box::into_raw(Box::new(copy)).cast();
    args.future_ready_callback = Some(raw_copy_ready);
    bump(&COUNTERS.raw_copy_requests_created);
    args.event = if injects(fault, Fault::NullOutput) {
        null_mut()
    } else if config().hostile.null_events {
        bump(&COUNTERS.null_events_returned);
        null_mut()
    } else {
        bump(&COUNTERS.events_created);
        Box::into_raw(Box::new(FakeEvent(state))).cast()
    };
    Ok(())
});

/// The callback data of a control dependency: only its life is tracked.
struct FakeDependency;

unsafe extern "C" fn dependency_ready(args: *mut sys::PJRT_Buffer_DonateWithControlDependency_Callback_Args) {
    let _ = catch_unwind(|| {
        // SAFETY: the client passes a valid args struct with the data this plugin handed out.
        let Some(args) = (unsafe { args.as_mut() }) else { return };
        if !args.callback_data.is_null() {
            // SAFETY: a `Box<FakeDependency>` this plugin leaked; the client signals it once.
            drop(unsafe { Box::from_raw(args.callback_data.cast::<FakeDependency>()) });
            bump(&COUNTERS.dependencies_destroyed);
        }
    });
}

// The new buffer holds the bytes at once (a real plugin would hold back its readiness until the
// dependency is signalled); the old one is deleted, as donated.
slot_fn!(PJRT_Buffer_DonateWithControlDependency => fn buffer_donate_with_control_dependency(
    args: PJRT_Buffer_DonateWithControlDependency_Args, fault
) {
    let old = live_buffer(args.buffer)?;
    if injects(fault, Fault::NullOutput) {
        args.out_buffer = null_mut();
        args.dependency_ready_callback = None;
        args.callback_data = null_mut();
        return Ok(());
    }
    args.out_buffer = new_buffer(old.element_type, old.dims.clone(), old.bytes.clone(), old.device, old.memory);
    old.deleted.store(true, Ordering::SeqCst);
    args.callback_data = Box::into_raw(Box::new(FakeDependency)).cast();
    args.dependency_ready_callback = Some(dependency_ready);
    bump(&COUNTERS.dependencies_created);
    Ok(())
});

slot_fn!(PJRT_Buffer_ElementType => fn buffer_element_type(args: PJRT_Buffer_ElementType_Args, fault) {
    args.type_ = buffer(args.buffer)?.element_type;
    Ok(())
});

slot_fn!(PJRT_Buffer_Dimensions => fn buffer_dimensions(args: PJRT_Buffer_Dimensions_Args, fault) {
    let buffer = buffer(args.buffer)?;
    args.dims = buffer.dims.as_ptr();
    args.num_dims = buffer.dims.len();
    shape_array(fault, &mut args.dims, &mut args.num_dims);
    Ok(())
});

slot_fn!(PJRT_Buffer_OnDeviceSizeInBytes => fn buffer_on_device_size(args: PJRT_Buffer_OnDeviceSizeInBytes_Args, fault) {
    let size = live_buffer(args.buffer)?.bytes.len();
    // Hostile sizes: smaller than the data (a raw copy sized from it must stay inside).
    args.on_device_size_in_bytes = if config().hostile.sizes.is_some() { size / 2 } else { size };
    Ok(())
});

// ---- buffer extras ----

// The deprecated layout query: dense, no tiles.
slot_fn!(PJRT_Buffer_GetMemoryLayout => fn buffer_get_memory_layout(args: PJRT_Buffer_GetMemoryLayout_Args, fault) {
    let b = buffer(args.buffer)?;
    let mut tiled = sys::PJRT_Buffer_MemoryLayout_Tiled::new();
    tiled.minor_to_major = b.minor_to_major.as_ptr();
    tiled.minor_to_major_size = b.minor_to_major.len();
    shape_array(fault, &mut tiled.minor_to_major, &mut tiled.minor_to_major_size);
    args.layout.layout = sys::PJRT_Buffer_MemoryLayout_Union { tiled };
    args.layout.type_ = sys::PJRT_Buffer_MemoryLayout_Type::Tiled;
    Ok(())
});

slot_fn!(PJRT_Buffer_IsOnCpu => fn buffer_is_on_cpu(args: PJRT_Buffer_IsOnCpu_Args, fault) {
    buffer(args.buffer)?;
    crate::scenarios::set_bool(&raw mut args.is_on_cpu, true);
    Ok(())
});

slot_fn!(PJRT_Buffer_UnpaddedDimensions => fn buffer_unpadded_dimensions(args: PJRT_Buffer_UnpaddedDimensions_Args, fault) {
    let b = buffer(args.buffer)?;
    args.unpadded_dims = b.dims.as_ptr();
    args.num_dims = b.dims.len();
    shape_array(fault, &mut args.unpadded_dims, &mut args.num_dims);
    Ok(())
});

slot_fn!(PJRT_Buffer_DynamicDimensionIndices => fn buffer_dynamic_dimension_indices(
    args: PJRT_Buffer_DynamicDimensionIndices_Args, fault
) {
    buffer(args.buffer)?;
    // No dynamic dimensions; a count only a fault makes non-zero.
    static NONE: [usize; 1] = [0];
    args.dynamic_dim_indices = NONE.as_ptr();
    args.num_dynamic_dims = 0;
    shape_array(fault, &mut args.dynamic_dim_indices, &mut args.num_dynamic_dims);
    if injects(fault, Fault::NullOutput) {
        args.num_dynamic_dims = 1;
    }
    Ok(())
});

slot_fn!(PJRT_Buffer_UnsafePointer => fn buffer_unsafe_pointer(args: PJRT_Buffer_UnsafePointer_Args, fault) {
    args.buffer_pointer = buffer(args.buffer)?.bytes.as_ptr() as usize;
    Ok(())
});

slot_fn!(PJRT_Buffer_OpaqueDeviceMemoryDataPointer => fn buffer_device_pointer(
    args: PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args, fault
) {
    args.device_memory_ptr = null_handle(fault, buffer(args.buffer)?.bytes.as_ptr().cast_mut().cast());
    Ok(())
});

slot_fn!(PJRT_Buffer_IncreaseExternalReferenceCount => fn buffer_increase_references(
    args: PJRT_Buffer_IncreaseExternalReferenceCount_Args, fault
) {
    buffer(args.buffer)?.external_references.fetch_add(1, Ordering::SeqCst);
    Ok(())
});

slot_fn!(PJRT_Buffer_DecreaseExternalReferenceCount => fn buffer_decrease_references(
    args: PJRT_Buffer_DecreaseExternalReferenceCount_Args, fault
) {
    let b = buffer(args.buffer)?;
    if b.external_references.fetch_sub(1, Ordering::SeqCst) <= 0 {
        b.external_references.fetch_add(1, Ordering::SeqCst);
        return Err(invalid("fake: no external reference to release"));
    }
    Ok(())
});

slot_fn!(PJRT_Buffer_CopyRawToHost => fn buffer_copy_raw_to_host(args: PJRT_Buffer_CopyRawToHost_Args, fault) {
    let b = buffer(args.buffer)?;
    let (offset, size) = (usize::try_from(args.offset), usize::try_from(args.transfer_size));
    let (Ok(offset), Ok(size)) = (offset, size) else { return Err(invalid("fake: negative offset or size")) };
    if offset.checked_add(size).is_none_or(|end| end > b.bytes.len()) {
        return Err(invalid("fake: the range is outside the buffer"));
    }
    if size > 0 {
        if args.dst.is_null() {
            return Err(invalid("fake: dst is NULL"));
        }
        let bytes = host_copy_of(b, offset, &b.bytes[offset..offset + size]);
        // SAFETY: the client passes `transfer_size` writable bytes at `dst`.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), args.dst.cast::<u8>(), size) };
    }
    args.event = handed_out_event(fault, "PJRT_Buffer_CopyRawToHost");
    Ok(())
});

slot_fn!(PJRT_Buffer_Bitcast => fn buffer_bitcast(args: PJRT_Buffer_Bitcast_Args, fault) {
    let b = buffer(args.buffer)?;
    let dims: Vec<i64> = if args.num_dims == 0 {
        Vec::new()
    } else {
        // SAFETY: the client passes `num_dims` readable dimensions.
        unsafe { std::slice::from_raw_parts(args.dims, args.num_dims) }.to_vec()
    };
    let count = dims.iter().try_fold(1usize, |n, d| usize::try_from(*d).ok().and_then(|d| n.checked_mul(d)));
    let size = count.and_then(|c| ElementType::from_i32(args.element_type.0).host_bytes(c));
    if size != Some(b.bytes.len()) {
        return Err(invalid("fake: a bitcast keeps the byte size"));
    }
    if injects(fault, Fault::NullOutput) {
        args.out_buffer = null_mut();
        return Ok(());
    }
    args.out_buffer = new_buffer(args.element_type, dims, b.bytes.clone(), b.device, b.memory);
    Ok(())
});

slot_fn!(PJRT_Buffer_Delete => fn buffer_delete(args: PJRT_Buffer_Delete_Args, fault) {
    buffer(args.buffer)?.deleted.store(true, Ordering::SeqCst);
    Ok(())
});

slot_fn!(PJRT_Buffer_IsDeleted => fn buffer_is_deleted(args: PJRT_Buffer_IsDeleted_Args, fault) {
    args.is_deleted = buffer(args.buffer)?.deleted.load(Ordering::SeqCst);
    Ok(())
});

slot_fn!(PJRT_Buffer_Device => fn buffer_device(args: PJRT_Buffer_Device_Args, fault) {
    args.device = null_handle(fault, device_ptr(buffer(args.buffer)?.device));
    Ok(())
});

slot_fn!(PJRT_Buffer_Memory => fn buffer_memory(args: PJRT_Buffer_Memory_Args, fault) {
    args.memory = null_handle(fault, memory_ptr(buffer(args.buffer)?.memory));
    Ok(())
});

slot_fn!(PJRT_Buffer_ReadyEvent => fn buffer_ready_event(args: PJRT_Buffer_ReadyEvent_Args, fault) {
    let b = buffer(args.buffer)?;
    args.event = handed_out_event(fault, "PJRT_Buffer_ReadyEvent");
    if let (Some(error), false) = (&b.error, args.event.is_null()) {
        // An error buffer is never ready with data: its event completes with the error at once.
        // SAFETY: the event was just made by `new_event`.
        let state = unsafe { &(*args.event.cast::<FakeEvent>()).0 };
        let mut inner = lock(&state.inner);
        inner.result = Some(Some(error.clone()));
    }
    Ok(())
});

/// Dims and element type of a shape the client passes, checked like a real plugin would.
///
/// # Safety
/// `dims` must be NULL or point to `num_dims` readable values.
pub(crate) unsafe fn shape_of(
    dims: *const i64,
    num_dims: usize,
    element_type: sys::PJRT_Buffer_Type,
) -> Result<(Vec<i64>, usize), *mut PJRT_Error> {
    let dims: Vec<i64> =
        if num_dims == 0 { Vec::new() } else { unsafe { std::slice::from_raw_parts(dims, num_dims) }.to_vec() };
    let count = dims.iter().try_fold(1usize, |n, d| usize::try_from(*d).ok().and_then(|d| n.checked_mul(d)));
    let size = count
        .and_then(|c| ElementType::from_i32(element_type.0).host_bytes(c))
        .ok_or_else(|| invalid("fake: a shape with a negative dimension, a bad type or too many bytes"))?;
    Ok((dims, size))
}

slot_fn!(PJRT_Client_CreateUninitializedBuffer => fn client_create_uninitialized_buffer(
    args: PJRT_Client_CreateUninitializedBuffer_Args, fault
) {
    client(args.client)?;
    // SAFETY: the client passes `shape_num_dims` readable dimensions.
    let (dims, size) = unsafe { shape_of(args.shape_dims, args.shape_num_dims, args.shape_element_type) }?;
    let (device, memory) = placement(args.device, args.memory)?;
    args.buffer = if injects(fault, Fault::NullOutput) {
        null_mut()
    } else {
        new_buffer(args.shape_element_type, dims, vec![0; size], device, memory)
    };
    Ok(())
});

slot_fn!(PJRT_Client_CreateErrorBuffer => fn client_create_error_buffer(args: PJRT_Client_CreateErrorBuffer_Args, fault) {
    client(args.client)?;
    // SAFETY: the client passes `shape_num_dims` readable dimensions.
    let (dims, size) = unsafe { shape_of(args.shape_dims, args.shape_num_dims, args.shape_element_type) }?;
    let memory = memory_index(args.memory)?;
    if args.error_code.0 == 0 {
        return Err(invalid("fake: an error buffer needs an error code"));
    }
    // SAFETY: the client passes `error_message_size` readable bytes.
    let message = String::from_utf8_lossy(unsafe { sys_bytes(args.error_message, args.error_message_size) }).into_owned();
    if injects(fault, Fault::NullOutput) {
        args.buffer = null_mut();
        return Ok(());
    }
    let raw = new_buffer(args.shape_element_type, dims, vec![0; size], MEMORIES[memory].devices[0], memory);
    // SAFETY: just made by `new_buffer`, not shared yet.
    unsafe { (*raw.cast::<FakeBuffer>()).error = Some((args.error_code, message)) };
    args.buffer = raw;
    Ok(())
});

// Without `dst`, reports the size; with it, copies at once (the event may still complete late:
// the client must not rely on the data before it does).
slot_fn!(PJRT_Buffer_ToHostBuffer => fn buffer_to_host(args: PJRT_Buffer_ToHostBuffer_Args, fault) {
    let buffer = live_buffer(args.src)?;
    // SAFETY: the client passes NULL or a live layout.
    if !unsafe { is_row_major(args.host_layout, buffer.dims.len()) } {
        return Err(new_error(PJRT_Error_Code::UNIMPLEMENTED, "fake: host layouts other than row-major"));
    }
    let size = buffer.bytes.len();
    if args.dst.is_null() {
        args.dst_size = if injects(fault, Fault::BadCount) {
            IMPOSSIBLE_COUNT
        } else {
            match config().hostile.sizes {
                None => size,
                Some(SizeLie::More) => size + 8,
                Some(SizeLie::Fewer) => size.saturating_sub(1),
            }
        };
        return Ok(());
    }
    if args.dst_size < size {
        return Err(invalid(format!("fake: dst_size {} < {size}", args.dst_size)));
    }
    let bytes = host_copy_of(buffer, 0, &buffer.bytes);
    // SAFETY: the client passes `dst_size >= size` writable bytes at `dst`.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), args.dst.cast::<u8>(), size) };
    args.event = handed_out_event(fault, "PJRT_Buffer_ToHostBuffer");
    Ok(())
});

slot_fn!(PJRT_Buffer_CopyToDevice => fn buffer_copy_to_device(args: PJRT_Buffer_CopyToDevice_Args, fault) {
    let source = live_buffer(args.buffer)?;
    let device = device_index(args.dst_device)?;
    args.dst_buffer = if injects(fault, Fault::NullOutput) {
        null_mut()
    } else {
        let memory = DEVICES[device].default_memory;
        new_buffer(source.element_type, source.dims.clone(), source.bytes.clone(), device, memory)
    };
    Ok(())
});

slot_fn!(PJRT_Buffer_CopyToMemory => fn buffer_copy_to_memory(args: PJRT_Buffer_CopyToMemory_Args, fault) {
    let source = live_buffer(args.buffer)?;
    let memory = memory_index(args.dst_memory)?;
    args.dst_buffer = if injects(fault, Fault::NullOutput) {
        null_mut()
    } else {
        let device = MEMORIES[memory].devices[0];
        new_buffer(source.element_type, source.dims.clone(), source.bytes.clone(), device, memory)
    };
    Ok(())
});
