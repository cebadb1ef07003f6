//! The client: the `PJRT_Client` handle, its creation (options, and the key-value store callbacks
//! through which the processes of a distributed job share data), its platform, process and device
//! queries, DMA mapping of host memory (0.67) and global process info (0.73).
//!
//! The calls of a client that make buffers, executables or topologies are declared with those
//! objects (`buffer.rs`, `executable.rs`, `topology.rs`).

#![allow(non_camel_case_types, non_snake_case, missing_docs)]

use std::ffi::{c_char, c_int, c_void};

use super::args::*;
use super::device::*;
use super::error::*;
use super::named_value::*;

opaque!(PJRT_Client);

// ---- key-value store callbacks ----
pub type PJRT_KeyValueGetCallback =
    Option<unsafe extern "C" fn(args: *mut PJRT_KeyValueGetCallback_Args) -> *mut PJRT_Error>;
pub type PJRT_KeyValuePutCallback =
    Option<unsafe extern "C" fn(args: *mut PJRT_KeyValuePutCallback_Args) -> *mut PJRT_Error>;
pub type PJRT_KeyValueTryGetCallback =
    Option<unsafe extern "C" fn(args: *mut PJRT_KeyValueTryGetCallback_Args) -> *mut PJRT_Error>;

/// Frees a value returned by the get callback. The plugin copies the value first, then calls it.
pub type PJRT_KeyValueGetCallback_ValueDeleter = Option<unsafe extern "C" fn(value: *mut c_char)>;
/// Frees a value returned by the try-get callback.
pub type PJRT_KeyValueTryGetCallback_ValueDeleter = Option<unsafe extern "C" fn(value: *mut c_char)>;

// `callback_error` is a pointer to the plugin's error factory (a pointer to a function pointer),
// valid for the duration of the call; a callback that fails returns what the factory made.

// Blocking get: wait up to `timeout_in_ms` for the key.
pjrt_struct!(PJRT_KeyValueGetCallback_Args {
    struct_size: usize, extension_start: Ext, key: *const c_char, key_size: usize,
    timeout_in_ms: c_int, callback_error: *mut PJRT_CallbackError, user_arg: *mut c_void,
    value: *mut c_char, value_size: usize, value_deleter_callback: PJRT_KeyValueGetCallback_ValueDeleter,
});

// Non-blocking get: NOT_FOUND at once when the key is absent.
pjrt_struct!(PJRT_KeyValueTryGetCallback_Args {
    struct_size: usize, extension_start: Ext, key: *const c_char, key_size: usize,
    callback_error: *mut PJRT_CallbackError, user_arg: *mut c_void,
    value: *mut c_char, value_size: usize, value_deleter_callback: PJRT_KeyValueTryGetCallback_ValueDeleter,
});

// Put: `value` only lives for the duration of the call.
pjrt_struct!(PJRT_KeyValuePutCallback_Args {
    struct_size: usize, extension_start: Ext, key: *const c_char, key_size: usize,
    value: *const c_char, value_size: usize, callback_error: *mut PJRT_CallbackError, user_arg: *mut c_void,
});

// ---- the client ----
pjrt_struct!(PJRT_Client_Create_Args {
    struct_size: usize, extension_start: Ext, create_options: *const PJRT_NamedValue, num_options: usize,
    kv_get_callback: PJRT_KeyValueGetCallback, kv_get_user_arg: *mut c_void,
    kv_put_callback: PJRT_KeyValuePutCallback, kv_put_user_arg: *mut c_void,
    client: *mut PJRT_Client,
    kv_try_get_callback: PJRT_KeyValueTryGetCallback, kv_try_get_user_arg: *mut c_void,
});
pjrt_struct!(PJRT_Client_Destroy_Args { struct_size: usize, extension_start: Ext, client: *mut PJRT_Client });
pjrt_struct!(PJRT_Client_PlatformName_Args {
    struct_size: usize, extension_start: Ext, client: *mut PJRT_Client,
    platform_name: *const c_char, platform_name_size: usize,
});
pjrt_struct!(PJRT_Client_ProcessIndex_Args {
    struct_size: usize, extension_start: Ext, client: *mut PJRT_Client, process_index: c_int,
});
pjrt_struct!(PJRT_Client_PlatformVersion_Args {
    struct_size: usize, extension_start: Ext, client: *mut PJRT_Client,
    platform_version: *const c_char, platform_version_size: usize,
});
pjrt_struct!(PJRT_Client_Devices_Args {
    struct_size: usize, extension_start: Ext, client: *mut PJRT_Client,
    devices: *const *mut PJRT_Device, num_devices: usize,
});
pjrt_struct!(PJRT_Client_AddressableDevices_Args {
    struct_size: usize, extension_start: Ext, client: *mut PJRT_Client,
    addressable_devices: *const *mut PJRT_Device, num_addressable_devices: usize,
});
pjrt_struct!(PJRT_Client_LookupDevice_Args {
    struct_size: usize, extension_start: Ext, client: *mut PJRT_Client, id: c_int, device: *mut PJRT_Device,
});
pjrt_struct!(PJRT_Client_LookupAddressableDevice_Args {
    struct_size: usize, extension_start: Ext, client: *mut PJRT_Client, local_hardware_id: c_int,
    addressable_device: *mut PJRT_Device,
});
pjrt_struct!(PJRT_Client_AddressableMemories_Args {
    struct_size: usize, extension_start: Ext, client: *mut PJRT_Client,
    addressable_memories: *const *mut PJRT_Memory, num_addressable_memories: usize,
});
pjrt_struct!(PJRT_Client_DefaultDeviceAssignment_Args {
    struct_size: usize, extension_start: Ext, client: *mut PJRT_Client, num_replicas: c_int,
    num_partitions: c_int, default_assignment_size: usize, default_assignment: *mut c_int,
});

// ---- DMA mapping (0.67) ----

// Registers host memory `[data, data + size)` for direct transfers.
pjrt_struct!(PJRT_Client_DmaMap_Args {
    struct_size: usize, extension_start: Ext, client: *mut PJRT_Client, data: *mut c_void, size: usize,
});
// Undoes a `DmaMap` of `data`.
pjrt_struct!(PJRT_Client_DmaUnmap_Args {
    struct_size: usize, extension_start: Ext, client: *mut PJRT_Client, data: *mut c_void,
});

// ---- global process info (0.73) ----

c_enum!(
    /// The state of one process of a distributed job, as a coordination service reports it.
    PJRT_ProcessState {
        kUnspecified = 0, kUninitialized = 1, kDisconnected = 2, kConnected = 3, kError = 4,
    }
);

// One process's state. No `extension_start`: `struct_size` is followed directly by the fields.
pjrt_struct!(PJRT_ProcessInfo {
    struct_size: usize, task_id: c_int, incarnation_id: u64, state: PJRT_ProcessState, error_code: c_int,
    error_message: *const c_char, error_message_size: usize,
});
pjrt_struct!(PJRT_Client_UpdateGlobalProcessInfo_Args {
    struct_size: usize, extension_start: Ext, client: *mut PJRT_Client, process_infos: *mut PJRT_ProcessInfo,
    num_process_infos: usize,
});

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::offset_of;

    /// Sizes from the API notes' slot table (the header's `*_STRUCT_SIZE` at 0.114/0.115).
    #[test]
    fn struct_sizes_match_the_published_layout() {
        let expected: &[(usize, usize, &str)] = &[
            (PJRT_Client_Create_Args::STRUCT_SIZE, 88, "PJRT_Client_Create_Args"),
            (PJRT_Client_Destroy_Args::STRUCT_SIZE, 24, "PJRT_Client_Destroy_Args"),
            (PJRT_Client_PlatformName_Args::STRUCT_SIZE, 40, "PJRT_Client_PlatformName_Args"),
            (PJRT_Client_ProcessIndex_Args::STRUCT_SIZE, 28, "PJRT_Client_ProcessIndex_Args"),
            (PJRT_Client_PlatformVersion_Args::STRUCT_SIZE, 40, "PJRT_Client_PlatformVersion_Args"),
            (PJRT_Client_Devices_Args::STRUCT_SIZE, 40, "PJRT_Client_Devices_Args"),
            (PJRT_Client_AddressableDevices_Args::STRUCT_SIZE, 40, "PJRT_Client_AddressableDevices_Args"),
            (PJRT_Client_LookupDevice_Args::STRUCT_SIZE, 40, "PJRT_Client_LookupDevice_Args"),
            (PJRT_Client_LookupAddressableDevice_Args::STRUCT_SIZE, 40, "PJRT_Client_LookupAddressableDevice_Args"),
            (PJRT_Client_AddressableMemories_Args::STRUCT_SIZE, 40, "PJRT_Client_AddressableMemories_Args"),
            (PJRT_Client_DefaultDeviceAssignment_Args::STRUCT_SIZE, 48, "PJRT_Client_DefaultDeviceAssignment_Args"),
        ];
        for (ours, theirs, name) in expected {
            assert_eq!(ours, theirs, "{name}");
        }
        assert_eq!(offset_of!(PJRT_Client_Create_Args, kv_try_get_user_arg), 80);
    }

    #[test]
    fn new_sets_struct_size_and_zeroes() {
        let args = PJRT_Client_Create_Args::new();
        assert_eq!(args.struct_size, 88);
        assert!(args.create_options.is_null() && args.client.is_null() && args.kv_get_callback.is_none());
    }

    #[test]
    fn kv_args_layout() {
        assert_eq!(offset_of!(PJRT_KeyValueGetCallback_Args, key), 16);
        assert_eq!(offset_of!(PJRT_KeyValueGetCallback_Args, key_size), 24);
        assert_eq!(offset_of!(PJRT_KeyValueGetCallback_Args, timeout_in_ms), 32);
        assert_eq!(offset_of!(PJRT_KeyValueGetCallback_Args, callback_error), 40);
        assert_eq!(offset_of!(PJRT_KeyValueGetCallback_Args, user_arg), 48);
        assert_eq!(offset_of!(PJRT_KeyValueGetCallback_Args, value), 56);
        assert_eq!(offset_of!(PJRT_KeyValueGetCallback_Args, value_size), 64);
        assert_eq!(PJRT_KeyValueGetCallback_Args::STRUCT_SIZE, 80);

        assert_eq!(offset_of!(PJRT_KeyValueTryGetCallback_Args, callback_error), 32);
        assert_eq!(offset_of!(PJRT_KeyValueTryGetCallback_Args, user_arg), 40);
        assert_eq!(offset_of!(PJRT_KeyValueTryGetCallback_Args, value), 48);
        assert_eq!(offset_of!(PJRT_KeyValueTryGetCallback_Args, value_size), 56);
        assert_eq!(PJRT_KeyValueTryGetCallback_Args::STRUCT_SIZE, 72);

        assert_eq!(offset_of!(PJRT_KeyValuePutCallback_Args, value), 32);
        assert_eq!(offset_of!(PJRT_KeyValuePutCallback_Args, value_size), 40);
        assert_eq!(offset_of!(PJRT_KeyValuePutCallback_Args, callback_error), 48);
        assert_eq!(PJRT_KeyValuePutCallback_Args::STRUCT_SIZE, 64);

        let args = PJRT_KeyValueGetCallback_Args::new();
        assert_eq!(args.struct_size, 80);
        assert!(args.value_deleter_callback.is_none());
    }

    #[test]
    fn dma_and_process_info_layout() {
        assert_eq!(PJRT_Client_DmaMap_Args::STRUCT_SIZE, 40);
        assert_eq!(offset_of!(PJRT_Client_DmaMap_Args, data), 24);
        assert_eq!(PJRT_Client_DmaUnmap_Args::STRUCT_SIZE, 32);
        assert_eq!(offset_of!(PJRT_ProcessInfo, task_id), 8);
        assert_eq!(offset_of!(PJRT_ProcessInfo, incarnation_id), 16);
        assert_eq!(offset_of!(PJRT_ProcessInfo, state), 24);
        assert_eq!(offset_of!(PJRT_ProcessInfo, error_code), 28);
        assert_eq!(offset_of!(PJRT_ProcessInfo, error_message), 32);
        assert_eq!(PJRT_ProcessInfo::STRUCT_SIZE, 48);
        assert_eq!(PJRT_Client_UpdateGlobalProcessInfo_Args::STRUCT_SIZE, 40);
    }
}
