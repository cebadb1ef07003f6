//! Devices and memories: immortal objects shared by every client of this copy, and the slots of
//! devices and their descriptions (the memory slots are in `memories.rs`).
//!
//! - device 0: memories 0 ("device", default) and 2 ("pinned_host")
//! - device 1: memories 1 ("device", default) and 2 ("pinned_host")

use std::ffi::c_int;
use std::ptr::null_mut;
use std::sync::OnceLock;

use pjrt_client_sys::{self as sys, PJRT_Error};

use crate::calls::slot_fn;
use crate::counters::{bump, COUNTERS};
use crate::errors::invalid;
use crate::faults::{injects, null_handle, set_string, shape_array, Fault};
use crate::plugin::{int64_attribute, Immortal};

/// The object behind a `PJRT_Device*`; its description is the embedded field.
struct DeviceObject {
    index: usize,
    description: DescriptionObject,
}

struct DescriptionObject {
    index: usize,
}

/// The object behind a `PJRT_Memory*`.
struct MemoryObject {
    index: usize,
}

static DEVICE_OBJECTS: [DeviceObject; 2] = [
    DeviceObject { index: 0, description: DescriptionObject { index: 0 } },
    DeviceObject { index: 1, description: DescriptionObject { index: 1 } },
];
static MEMORY_OBJECTS: [MemoryObject; 3] =
    [MemoryObject { index: 0 }, MemoryObject { index: 1 }, MemoryObject { index: 2 }];

pub(crate) struct DeviceInfo {
    to_string: &'static str,
    debug_string: &'static str,
    memories: &'static [usize],
    pub(crate) default_memory: usize,
}

pub(crate) const DEVICES: [DeviceInfo; 2] = [
    DeviceInfo {
        to_string: "FakeDevice(id=0)",
        debug_string: "FakeDevice(id=0, process=0)",
        memories: &[0, 2],
        default_memory: 0,
    },
    DeviceInfo {
        to_string: "FakeDevice(id=1)",
        debug_string: "FakeDevice(id=1, process=0)",
        memories: &[1, 2],
        default_memory: 1,
    },
];
const DEVICE_KIND: &str = "fake";

pub(crate) struct MemoryInfo {
    pub(crate) kind: &'static str,
    pub(crate) kind_id: i32,
    pub(crate) to_string: &'static str,
    pub(crate) debug_string: &'static str,
    pub(crate) devices: &'static [usize],
}

pub(crate) const MEMORIES: [MemoryInfo; 3] = [
    MemoryInfo {
        kind: "device",
        kind_id: 0,
        to_string: "FAKE_DEVICE_0",
        debug_string: "FakeMemory(device, 0)",
        devices: &[0],
    },
    MemoryInfo {
        kind: "device",
        kind_id: 0,
        to_string: "FAKE_DEVICE_1",
        debug_string: "FakeMemory(device, 1)",
        devices: &[1],
    },
    MemoryInfo {
        kind: "pinned_host",
        kind_id: 1,
        to_string: "FAKE_PINNED_HOST",
        debug_string: "FakeMemory(pinned_host)",
        devices: &[0, 1],
    },
];

pub(crate) fn device_ptr(index: usize) -> *mut sys::PJRT_Device {
    std::ptr::addr_of!(DEVICE_OBJECTS[index]).cast_mut().cast()
}

pub(crate) fn description_ptr(index: usize) -> *mut sys::PJRT_DeviceDescription {
    std::ptr::addr_of!(DEVICE_OBJECTS[index].description).cast_mut().cast()
}

pub(crate) fn memory_ptr(index: usize) -> *mut sys::PJRT_Memory {
    std::ptr::addr_of!(MEMORY_OBJECTS[index]).cast_mut().cast()
}

pub(crate) fn device_index(ptr: *mut sys::PJRT_Device) -> Result<usize, *mut PJRT_Error> {
    DEVICE_OBJECTS
        .iter()
        .find(|d| device_ptr(d.index) == ptr)
        .map(|d| d.index)
        .ok_or_else(|| invalid("fake: not a device of this plugin"))
}

// ---- device statistics, attributes, poisoning and tracking events ----

slot_fn!(PJRT_Device_MemoryStats => fn device_memory_stats(args: PJRT_Device_MemoryStats_Args, fault) {
    device_index(args.device)?;
    args.bytes_in_use = 1024;
    args.peak_bytes_in_use = 4096;
    crate::scenarios::set_bool(&raw mut args.peak_bytes_in_use_is_set, true);
    Ok(())
});

slot_fn!(PJRT_Device_ClearMemoryStats => fn device_clear_memory_stats(args: PJRT_Device_ClearMemoryStats_Args, fault) {
    device_index(args.device)?;
    Ok(())
});

/// What `PJRT_Device_GetAttributes` hands out: the list and its owner, freed by the deleter.
struct FakeDeviceAttributes(Vec<sys::PJRT_NamedValue>);

unsafe extern "C" fn device_attributes_deleter(attributes: *mut sys::PJRT_Device_Attributes) {
    if !attributes.is_null() {
        // SAFETY: a `Box<FakeDeviceAttributes>` this plugin leaked; the client frees it once.
        drop(unsafe { Box::from_raw(attributes.cast::<FakeDeviceAttributes>()) });
        bump(&COUNTERS.device_attributes_destroyed);
    }
}

slot_fn!(PJRT_Device_GetAttributes => fn device_get_attributes(args: PJRT_Device_GetAttributes_Args, fault) {
    let index = device_index(args.device)?;
    let owned = Box::new(FakeDeviceAttributes(vec![int64_attribute(c"fake_device_index", index as i64)]));
    args.attributes = owned.0.as_ptr();
    args.num_attributes = owned.0.len();
    args.device_attributes = Box::into_raw(owned).cast();
    args.attributes_deleter = Some(device_attributes_deleter);
    bump(&COUNTERS.device_attributes_created);
    shape_array(fault, &mut args.attributes, &mut args.num_attributes);
    Ok(())
});

slot_fn!(PJRT_Device_PoisonExecution => fn device_poison_execution(args: PJRT_Device_PoisonExecution_Args, fault) {
    device_index(args.device)?;
    if args.error_code.0 == 0 {
        return Err(invalid("fake: poisoning with OK"));
    }
    // Nothing runs on the fake's devices: nothing to poison.
    args.poisoned = false;
    Ok(())
});

/// An async tracking event: only its life is tracked.
struct FakeTrackingEvent;

slot_fn!(PJRT_Device_CreateAsyncTrackingEvent => fn device_create_async_tracking_event(
    args: PJRT_Device_CreateAsyncTrackingEvent_Args, fault
) {
    device_index(args.device)?;
    if injects(fault, Fault::NullOutput) {
        args.event = null_mut();
        return Ok(());
    }
    args.event = Box::into_raw(Box::new(FakeTrackingEvent)).cast();
    bump(&COUNTERS.tracking_events_created);
    Ok(())
});

slot_fn!(PJRT_AsyncTrackingEvent_Destroy => fn async_tracking_event_destroy(args: PJRT_AsyncTrackingEvent_Destroy_Args, fault) {
    if !args.event.is_null() {
        // SAFETY: an event this plugin created; the client destroys it once.
        drop(unsafe { Box::from_raw(args.event.cast::<FakeTrackingEvent>()) });
        bump(&COUNTERS.tracking_events_destroyed);
    }
    Ok(())
});

pub(crate) fn description_index(ptr: *mut sys::PJRT_DeviceDescription) -> Result<usize, *mut PJRT_Error> {
    DEVICE_OBJECTS
        .iter()
        .find(|d| description_ptr(d.description.index) == ptr)
        .map(|d| d.description.index)
        .ok_or_else(|| invalid("fake: not a device description of this plugin"))
}

/// Where an upload goes: the memory when one is given, else the device's default memory.
pub(crate) fn placement(
    device: *mut sys::PJRT_Device,
    memory: *mut sys::PJRT_Memory,
) -> Result<(usize, usize), *mut PJRT_Error> {
    if memory.is_null() {
        let device = device_index(device)?;
        Ok((device, DEVICES[device].default_memory))
    } else {
        let memory = memory_index(memory)?;
        Ok((MEMORIES[memory].devices[0], memory))
    }
}

pub(crate) fn memory_index(ptr: *mut sys::PJRT_Memory) -> Result<usize, *mut PJRT_Error> {
    MEMORY_OBJECTS
        .iter()
        .find(|m| memory_ptr(m.index) == ptr)
        .map(|m| m.index)
        .ok_or_else(|| invalid("fake: not a memory of this plugin"))
}

/// Pointer arrays handed out by the topology queries, built once.
pub(crate) struct Tables {
    pub(crate) devices: Vec<*mut sys::PJRT_Device>,
    pub(crate) memories: Vec<*mut sys::PJRT_Memory>,
    device_memories: Vec<Vec<*mut sys::PJRT_Memory>>,
    pub(crate) memory_devices: Vec<Vec<*mut sys::PJRT_Device>>,
    device_attributes: Vec<Vec<sys::PJRT_NamedValue>>,
}

pub(crate) fn tables() -> &'static Tables {
    static TABLES: OnceLock<Immortal<Tables>> = OnceLock::new();
    &TABLES
        .get_or_init(|| {
            Immortal(Tables {
                devices: (0..DEVICES.len()).map(device_ptr).collect(),
                memories: (0..MEMORIES.len()).map(memory_ptr).collect(),
                device_memories: DEVICES.iter().map(|d| d.memories.iter().map(|&m| memory_ptr(m)).collect()).collect(),
                memory_devices: MEMORIES.iter().map(|m| m.devices.iter().map(|&d| device_ptr(d)).collect()).collect(),
                device_attributes: (0..DEVICES.len())
                    .map(|i| vec![int64_attribute(c"core_count", 1), int64_attribute(c"fake_index", i as i64)])
                    .collect(),
            })
        })
        .0
}

// ---- devices and their descriptions ----

slot_fn!(PJRT_Device_GetDescription => fn device_get_description(args: PJRT_Device_GetDescription_Args, fault) {
    let index = device_index(args.device)?;
    args.device_description = null_handle(fault, description_ptr(index));
    Ok(())
});

slot_fn!(PJRT_DeviceDescription_Id => fn description_id(args: PJRT_DeviceDescription_Id_Args, fault) {
    args.id = description_index(args.device_description)? as c_int;
    Ok(())
});

slot_fn!(PJRT_DeviceDescription_ProcessIndex => fn description_process_index(
    args: PJRT_DeviceDescription_ProcessIndex_Args, fault
) {
    description_index(args.device_description)?;
    args.process_index = 0;
    Ok(())
});

slot_fn!(PJRT_DeviceDescription_Attributes => fn description_attributes(args: PJRT_DeviceDescription_Attributes_Args, fault) {
    let attributes = &tables().device_attributes[description_index(args.device_description)?];
    args.attributes = attributes.as_ptr();
    args.num_attributes = attributes.len();
    shape_array(fault, &mut args.attributes, &mut args.num_attributes);
    Ok(())
});

slot_fn!(PJRT_DeviceDescription_Kind => fn description_kind(args: PJRT_DeviceDescription_Kind_Args, fault) {
    description_index(args.device_description)?;
    set_string(fault, DEVICE_KIND, &mut args.device_kind, &mut args.device_kind_size);
    Ok(())
});

slot_fn!(PJRT_DeviceDescription_DebugString => fn description_debug_string(
    args: PJRT_DeviceDescription_DebugString_Args, fault
) {
    let index = description_index(args.device_description)?;
    set_string(fault, DEVICES[index].debug_string, &mut args.debug_string, &mut args.debug_string_size);
    Ok(())
});

slot_fn!(PJRT_DeviceDescription_ToString => fn description_to_string(args: PJRT_DeviceDescription_ToString_Args, fault) {
    let index = description_index(args.device_description)?;
    set_string(fault, DEVICES[index].to_string, &mut args.to_string, &mut args.to_string_size);
    Ok(())
});

slot_fn!(PJRT_Device_IsAddressable => fn device_is_addressable(args: PJRT_Device_IsAddressable_Args, fault) {
    device_index(args.device)?;
    crate::scenarios::set_bool(&raw mut args.is_addressable, true);
    Ok(())
});

slot_fn!(PJRT_Device_LocalHardwareId => fn device_local_hardware_id(args: PJRT_Device_LocalHardwareId_Args, fault) {
    args.local_hardware_id = device_index(args.device)? as c_int;
    Ok(())
});

slot_fn!(PJRT_Device_AddressableMemories => fn device_addressable_memories(args: PJRT_Device_AddressableMemories_Args, fault) {
    let memories = &tables().device_memories[device_index(args.device)?];
    args.memories = memories.as_ptr();
    args.num_memories = memories.len();
    shape_array(fault, &mut args.memories, &mut args.num_memories);
    Ok(())
});

slot_fn!(PJRT_Device_DefaultMemory => fn device_default_memory(args: PJRT_Device_DefaultMemory_Args, fault) {
    let index = device_index(args.device)?;
    args.memory = null_handle(fault, memory_ptr(DEVICES[index].default_memory));
    Ok(())
});
