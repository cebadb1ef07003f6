//! Memories: the `PJRT_Memory_*` slots (the memory objects are declared in `devices.rs`).

use std::ffi::c_int;

use crate::calls::slot_fn;
use crate::devices::{memory_index, tables, MEMORIES};
use crate::faults::{set_string, shape_array};
use crate::scenarios::config;

slot_fn!(PJRT_Memory_Id => fn memory_id(args: PJRT_Memory_Id_Args, fault) {
    args.id = memory_index(args.memory)? as c_int;
    Ok(())
});

slot_fn!(PJRT_Memory_Kind => fn memory_kind(args: PJRT_Memory_Kind_Args, fault) {
    let index = memory_index(args.memory)?;
    let kind = if index == 2 { config().shared_memory_kind } else { MEMORIES[index].kind };
    set_string(fault, kind, &mut args.kind, &mut args.kind_size);
    Ok(())
});

slot_fn!(PJRT_Memory_Kind_Id => fn memory_kind_id(args: PJRT_Memory_Kind_Id_Args, fault) {
    args.kind_id = MEMORIES[memory_index(args.memory)?].kind_id;
    Ok(())
});

slot_fn!(PJRT_Memory_DebugString => fn memory_debug_string(args: PJRT_Memory_DebugString_Args, fault) {
    let index = memory_index(args.memory)?;
    set_string(fault, MEMORIES[index].debug_string, &mut args.debug_string, &mut args.debug_string_size);
    Ok(())
});

slot_fn!(PJRT_Memory_ToString => fn memory_to_string(args: PJRT_Memory_ToString_Args, fault) {
    let index = memory_index(args.memory)?;
    set_string(fault, MEMORIES[index].to_string, &mut args.to_string, &mut args.to_string_size);
    Ok(())
});

slot_fn!(PJRT_Memory_AddressableByDevices => fn memory_addressable_by_devices(
    args: PJRT_Memory_AddressableByDevices_Args, fault
) {
    let devices = &tables().memory_devices[memory_index(args.memory)?];
    args.devices = devices.as_ptr();
    args.num_devices = devices.len();
    shape_array(fault, &mut args.devices, &mut args.num_devices);
    Ok(())
});
