//! The async host-to-device transfer manager: buffers filled piece by piece.

use std::ffi::c_int;
use std::ptr::null_mut;
use std::sync::Mutex;

use pjrt_client_sys::{self as sys, PJRT_Error, PJRT_Error_Code};

use crate::buffers::{new_buffer, shape_of, FakeBuffer};
use crate::calls::{handle, lock, slot_fn, sys_bytes};
use crate::clients::client;
use crate::counters::{bump, COUNTERS};
use crate::devices::{device_ptr, memory_index, MEMORIES};
use crate::errors::invalid;
use crate::events::handed_out_event;
use crate::faults::{injects, null_handle, Fault};
use crate::scenarios::config;

/// One buffer of a transfer manager: its shape and the bytes received so far.
struct FakeTransferSlot {
    element_type: sys::PJRT_Buffer_Type,
    dims: Vec<i64>,
    bytes: Mutex<Vec<u8>>,
    error: Mutex<Option<(PJRT_Error_Code, String)>>,
}

struct FakeTransferManager {
    device: usize,
    memory: usize,
    slots: Vec<FakeTransferSlot>,
}

fn transfer_manager<'a>(
    ptr: *mut sys::PJRT_AsyncHostToDeviceTransferManager,
) -> Result<&'a FakeTransferManager, *mut PJRT_Error> {
    // SAFETY: the client library passes managers this plugin created and has not destroyed.
    unsafe { handle::<FakeTransferManager, _>(ptr, "transfer manager") }
}

fn transfer_slot(manager: &FakeTransferManager, index: c_int) -> Result<&FakeTransferSlot, *mut PJRT_Error> {
    usize::try_from(index).ok().and_then(|i| manager.slots.get(i)).ok_or_else(|| invalid("fake: no such buffer index"))
}

slot_fn!(PJRT_Client_CreateBuffersForAsyncHostToDevice => fn client_create_transfer_manager(
    args: PJRT_Client_CreateBuffersForAsyncHostToDevice_Args, fault
) {
    client(args.client)?;
    let memory = memory_index(args.memory)?;
    if args.num_shape_specs == 0 || args.shape_specs.is_null() {
        return Err(invalid("fake: no shape specs"));
    }
    // SAFETY: the client passes `num_shape_specs` readable specs.
    let specs = unsafe { std::slice::from_raw_parts(args.shape_specs, args.num_shape_specs) };
    let mut slots = Vec::with_capacity(specs.len());
    for spec in specs {
        // SAFETY: each spec's dims are readable for `num_dims` values.
        let (dims, size) = unsafe { shape_of(spec.dims, spec.num_dims, spec.element_type) }?;
        slots.push(FakeTransferSlot {
            element_type: spec.element_type,
            dims,
            bytes: Mutex::new(vec![0; size]),
            error: Mutex::new(None),
        });
    }
    if injects(fault, Fault::NullOutput) {
        args.transfer_manager = null_mut();
        return Ok(());
    }
    let manager = FakeTransferManager { device: MEMORIES[memory].devices[0], memory, slots };
    args.transfer_manager = Box::into_raw(Box::new(manager)).cast();
    bump(&COUNTERS.transfer_managers_created);
    Ok(())
});

slot_fn!(PJRT_AsyncHostToDeviceTransferManager_Destroy => fn transfer_manager_destroy(
    args: PJRT_AsyncHostToDeviceTransferManager_Destroy_Args, fault
) {
    if !args.transfer_manager.is_null() {
        // SAFETY: a manager this plugin created; the client destroys it once.
        drop(unsafe { Box::from_raw(args.transfer_manager.cast::<FakeTransferManager>()) });
        bump(&COUNTERS.transfer_managers_destroyed);
    }
    Ok(())
});

slot_fn!(PJRT_AsyncHostToDeviceTransferManager_TransferData => fn transfer_manager_transfer_data(
    args: PJRT_AsyncHostToDeviceTransferManager_TransferData_Args, fault
) {
    let slot = transfer_slot(transfer_manager(args.transfer_manager)?, args.buffer_index)?;
    let (Ok(offset), Ok(size)) = (usize::try_from(args.offset), usize::try_from(args.transfer_size)) else {
        return Err(invalid("fake: negative offset or size"));
    };
    let mut bytes = lock(&slot.bytes);
    if offset.checked_add(size).is_none_or(|end| end > bytes.len()) {
        return Err(invalid("fake: the transfer is outside the buffer"));
    }
    // SAFETY: the client passes `transfer_size` readable bytes, alive until the done event.
    bytes[offset..offset + size].copy_from_slice(unsafe { sys_bytes(args.data.cast(), size) });
    drop(bytes);
    args.done_with_h2d_transfer = handed_out_event(fault, "PJRT_AsyncHostToDeviceTransferManager_TransferData");
    Ok(())
});

slot_fn!(PJRT_AsyncHostToDeviceTransferManager_TransferLiteral => fn transfer_manager_transfer_literal(
    args: PJRT_AsyncHostToDeviceTransferManager_TransferLiteral_Args, fault
) {
    let slot = transfer_slot(transfer_manager(args.transfer_manager)?, args.buffer_index)?;
    if args.shape_layout.is_null() {
        return Err(invalid("fake: a literal needs a layout (the real plugin aborts without one)"));
    }
    let mut bytes = lock(&slot.bytes);
    let size = bytes.len();
    // SAFETY: the client passes the whole literal: the buffer's size in bytes.
    bytes.copy_from_slice(unsafe { sys_bytes(args.data.cast(), size) });
    drop(bytes);
    args.done_with_h2d_transfer = handed_out_event(fault, "PJRT_AsyncHostToDeviceTransferManager_TransferLiteral");
    Ok(())
});

slot_fn!(PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer => fn transfer_manager_retrieve_buffer(
    args: PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer_Args, fault
) {
    let manager = transfer_manager(args.transfer_manager)?;
    let slot = transfer_slot(manager, args.buffer_index)?;
    if injects(fault, Fault::NullOutput) {
        args.buffer_out = null_mut();
        return Ok(());
    }
    let raw = new_buffer(slot.element_type, slot.dims.clone(), lock(&slot.bytes).clone(), manager.device, manager.memory);
    // SAFETY: just made by `new_buffer`, not shared yet.
    unsafe { (*raw.cast::<FakeBuffer>()).error = lock(&slot.error).clone() };
    args.buffer_out = raw;
    Ok(())
});

slot_fn!(PJRT_AsyncHostToDeviceTransferManager_Device => fn transfer_manager_device(
    args: PJRT_AsyncHostToDeviceTransferManager_Device_Args, fault
) {
    args.device_out = null_handle(fault, device_ptr(transfer_manager(args.transfer_manager)?.device));
    Ok(())
});

slot_fn!(PJRT_AsyncHostToDeviceTransferManager_BufferCount => fn transfer_manager_buffer_count(
    args: PJRT_AsyncHostToDeviceTransferManager_BufferCount_Args, fault
) {
    args.buffer_count = transfer_manager(args.transfer_manager)?.slots.len();
    Ok(())
});

slot_fn!(PJRT_AsyncHostToDeviceTransferManager_BufferSize => fn transfer_manager_buffer_size(
    args: PJRT_AsyncHostToDeviceTransferManager_BufferSize_Args, fault
) {
    let size = lock(&transfer_slot(transfer_manager(args.transfer_manager)?, args.buffer_index)?.bytes).len();
    // Hostile sizes: more than the buffer holds (TransferData still checks its real size).
    args.buffer_size = if config().hostile.sizes.is_some() { size + 8 } else { size };
    Ok(())
});

slot_fn!(PJRT_AsyncHostToDeviceTransferManager_SetBufferError => fn transfer_manager_set_buffer_error(
    args: PJRT_AsyncHostToDeviceTransferManager_SetBufferError_Args, fault
) {
    let slot = transfer_slot(transfer_manager(args.transfer_manager)?, args.buffer_index)?;
    // SAFETY: the client passes `error_message_size` readable bytes.
    let message = String::from_utf8_lossy(unsafe { sys_bytes(args.error_message, args.error_message_size) }).into_owned();
    *lock(&slot.error) = Some((args.error_code, message));
    Ok(())
});

slot_fn!(PJRT_AsyncHostToDeviceTransferManager_AddMetadata => fn transfer_manager_add_metadata(
    args: PJRT_AsyncHostToDeviceTransferManager_AddMetadata_Args, fault
) {
    transfer_manager(args.transfer_manager)?;
    if args.num_metadata > 0 && args.transfer_metadata.is_null() {
        return Err(invalid("fake: metadata is NULL"));
    }
    Ok(())
});
