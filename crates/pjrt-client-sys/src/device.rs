//! Devices, their memories and their descriptions: the `PJRT_Device`, `PJRT_Memory` and
//! `PJRT_DeviceDescription` handles and their calls (ids, kinds, attributes, addressable
//! memories), and the device calls added later (memory statistics, poisoning an execution,
//! attributes, async tracking events).

#![allow(non_camel_case_types, non_snake_case, missing_docs)]

use std::ffi::{c_char, c_int};

use super::args::*;
use super::error::*;
use super::named_value::*;

opaque!(PJRT_Device, PJRT_DeviceDescription, PJRT_Memory, PJRT_Device_Attributes, PJRT_AsyncTrackingEvent);

// ---- device descriptions ----
pjrt_struct!(PJRT_DeviceDescription_Id_Args {
    struct_size: usize, extension_start: Ext, device_description: *mut PJRT_DeviceDescription, id: c_int,
});
pjrt_struct!(PJRT_DeviceDescription_ProcessIndex_Args {
    struct_size: usize, extension_start: Ext, device_description: *mut PJRT_DeviceDescription,
    process_index: c_int,
});
pjrt_struct!(PJRT_DeviceDescription_Attributes_Args {
    struct_size: usize, extension_start: Ext, device_description: *mut PJRT_DeviceDescription,
    num_attributes: usize, attributes: *const PJRT_NamedValue,
});
pjrt_struct!(PJRT_DeviceDescription_Kind_Args {
    struct_size: usize, extension_start: Ext, device_description: *mut PJRT_DeviceDescription,
    device_kind: *const c_char, device_kind_size: usize,
});
pjrt_struct!(PJRT_DeviceDescription_DebugString_Args {
    struct_size: usize, extension_start: Ext, device_description: *mut PJRT_DeviceDescription,
    debug_string: *const c_char, debug_string_size: usize,
});
pjrt_struct!(PJRT_DeviceDescription_ToString_Args {
    struct_size: usize, extension_start: Ext, device_description: *mut PJRT_DeviceDescription,
    to_string: *const c_char, to_string_size: usize,
});

// ---- devices ----
pjrt_struct!(PJRT_Device_GetDescription_Args {
    struct_size: usize, extension_start: Ext, device: *mut PJRT_Device,
    device_description: *mut PJRT_DeviceDescription,
});
pjrt_struct!(PJRT_Device_IsAddressable_Args {
    struct_size: usize, extension_start: Ext, device: *mut PJRT_Device, is_addressable: bool,
});
pjrt_struct!(PJRT_Device_LocalHardwareId_Args {
    struct_size: usize, extension_start: Ext, device: *mut PJRT_Device, local_hardware_id: c_int,
});
pjrt_struct!(PJRT_Device_AddressableMemories_Args {
    struct_size: usize, extension_start: Ext, device: *mut PJRT_Device,
    memories: *const *mut PJRT_Memory, num_memories: usize,
});
pjrt_struct!(PJRT_Device_DefaultMemory_Args {
    struct_size: usize, extension_start: Ext, device: *mut PJRT_Device, memory: *mut PJRT_Memory,
});

// ---- memories ----
pjrt_struct!(PJRT_Memory_Id_Args { struct_size: usize, extension_start: Ext, memory: *mut PJRT_Memory, id: c_int });
pjrt_struct!(PJRT_Memory_Kind_Args {
    struct_size: usize, extension_start: Ext, memory: *mut PJRT_Memory, kind: *const c_char, kind_size: usize,
});
pjrt_struct!(PJRT_Memory_Kind_Id_Args {
    struct_size: usize, extension_start: Ext, memory: *mut PJRT_Memory, kind_id: c_int,
});
pjrt_struct!(PJRT_Memory_DebugString_Args {
    struct_size: usize, extension_start: Ext, memory: *mut PJRT_Memory,
    debug_string: *const c_char, debug_string_size: usize,
});
pjrt_struct!(PJRT_Memory_ToString_Args {
    struct_size: usize, extension_start: Ext, memory: *mut PJRT_Memory,
    to_string: *const c_char, to_string_size: usize,
});
pjrt_struct!(PJRT_Memory_AddressableByDevices_Args {
    struct_size: usize, extension_start: Ext, memory: *mut PJRT_Memory,
    devices: *const *mut PJRT_Device, num_devices: usize,
});

// ---- device extras ----
pjrt_struct!(PJRT_Device_MemoryStats_Args {
    struct_size: usize, extension_start: Ext, device: *mut PJRT_Device, bytes_in_use: i64,
    peak_bytes_in_use: i64, peak_bytes_in_use_is_set: bool, num_allocs: i64, num_allocs_is_set: bool,
    largest_alloc_size: i64, largest_alloc_size_is_set: bool, bytes_limit: i64, bytes_limit_is_set: bool,
    bytes_reserved: i64, bytes_reserved_is_set: bool, peak_bytes_reserved: i64, peak_bytes_reserved_is_set: bool,
    bytes_reservable_limit: i64, bytes_reservable_limit_is_set: bool, largest_free_block_bytes: i64,
    largest_free_block_bytes_is_set: bool, pool_bytes: i64, pool_bytes_is_set: bool, peak_pool_bytes: i64,
    peak_pool_bytes_is_set: bool, peak_allocated_bytes: i64, peak_allocated_bytes_is_set: bool,
});
pjrt_struct!(PJRT_Device_ClearMemoryStats_Args { struct_size: usize, extension_start: Ext, device: *mut PJRT_Device });
pjrt_struct!(PJRT_Device_PoisonExecution_Args {
    struct_size: usize, extension_start: Ext, device: *mut PJRT_Device, launch_id: i32,
    error_code: PJRT_Error_Code, error_message: *const c_char, error_message_size: usize, poisoned: bool,
    payload: *const PJRT_NamedValue, num_payload: usize,
});
pjrt_struct!(PJRT_Device_GetAttributes_Args {
    struct_size: usize, extension_start: Ext, device: *mut PJRT_Device, attributes: *const PJRT_NamedValue,
    num_attributes: usize, device_attributes: *mut PJRT_Device_Attributes,
    attributes_deleter: Option<unsafe extern "C" fn(device_attributes: *mut PJRT_Device_Attributes)>,
});
pjrt_struct!(PJRT_Device_CreateAsyncTrackingEvent_Args {
    struct_size: usize, extension_start: Ext, device: *mut PJRT_Device, description: *const c_char,
    description_size: usize, event: *mut PJRT_AsyncTrackingEvent,
});
pjrt_struct!(PJRT_AsyncTrackingEvent_Destroy_Args {
    struct_size: usize, extension_start: Ext, event: *mut PJRT_AsyncTrackingEvent,
});

#[cfg(test)]
mod tests {
    use super::*;

    /// Sizes from the API notes' slot table (the header's `*_STRUCT_SIZE` at 0.114/0.115).
    #[test]
    fn struct_sizes_match_the_published_layout() {
        let expected: &[(usize, usize, &str)] = &[
            (PJRT_DeviceDescription_Id_Args::STRUCT_SIZE, 28, "PJRT_DeviceDescription_Id_Args"),
            (PJRT_DeviceDescription_ProcessIndex_Args::STRUCT_SIZE, 28, "PJRT_DeviceDescription_ProcessIndex_Args"),
            (PJRT_DeviceDescription_Attributes_Args::STRUCT_SIZE, 40, "PJRT_DeviceDescription_Attributes_Args"),
            (PJRT_DeviceDescription_Kind_Args::STRUCT_SIZE, 40, "PJRT_DeviceDescription_Kind_Args"),
            (PJRT_DeviceDescription_DebugString_Args::STRUCT_SIZE, 40, "PJRT_DeviceDescription_DebugString_Args"),
            (PJRT_DeviceDescription_ToString_Args::STRUCT_SIZE, 40, "PJRT_DeviceDescription_ToString_Args"),
            (PJRT_Device_GetDescription_Args::STRUCT_SIZE, 32, "PJRT_Device_GetDescription_Args"),
            (PJRT_Device_IsAddressable_Args::STRUCT_SIZE, 25, "PJRT_Device_IsAddressable_Args"),
            (PJRT_Device_LocalHardwareId_Args::STRUCT_SIZE, 28, "PJRT_Device_LocalHardwareId_Args"),
            (PJRT_Device_AddressableMemories_Args::STRUCT_SIZE, 40, "PJRT_Device_AddressableMemories_Args"),
            (PJRT_Device_DefaultMemory_Args::STRUCT_SIZE, 32, "PJRT_Device_DefaultMemory_Args"),
            (PJRT_Memory_Id_Args::STRUCT_SIZE, 28, "PJRT_Memory_Id_Args"),
            (PJRT_Memory_Kind_Args::STRUCT_SIZE, 40, "PJRT_Memory_Kind_Args"),
            (PJRT_Memory_Kind_Id_Args::STRUCT_SIZE, 28, "PJRT_Memory_Kind_Id_Args"),
            (PJRT_Memory_DebugString_Args::STRUCT_SIZE, 40, "PJRT_Memory_DebugString_Args"),
            (PJRT_Memory_ToString_Args::STRUCT_SIZE, 40, "PJRT_Memory_ToString_Args"),
            (PJRT_Memory_AddressableByDevices_Args::STRUCT_SIZE, 40, "PJRT_Memory_AddressableByDevices_Args"),
        ];
        for (ours, theirs, name) in expected {
            assert_eq!(ours, theirs, "{name}");
        }
    }

    #[test]
    fn device_extra_struct_sizes() {
        assert_eq!(PJRT_Device_MemoryStats_Args::STRUCT_SIZE, 201);
        assert_eq!(PJRT_Device_ClearMemoryStats_Args::STRUCT_SIZE, 24);
        assert_eq!(PJRT_Device_PoisonExecution_Args::STRUCT_SIZE, 72);
        assert_eq!(PJRT_Device_GetAttributes_Args::STRUCT_SIZE, 56);
        assert_eq!(PJRT_Device_CreateAsyncTrackingEvent_Args::STRUCT_SIZE, 48);
        assert_eq!(PJRT_AsyncTrackingEvent_Destroy_Args::STRUCT_SIZE, 24);
    }
}
