//! Args structs for client_types (declared by hand from the API description).
//!
//! The key-value store callbacks of `PJRT_Client_Create`: the plugin calls them with these args
//! structs to share data between processes (for example each process's local topology).

#![allow(non_camel_case_types, non_snake_case, missing_docs)]

use std::ffi::{c_char, c_int, c_void};

#[allow(unused_imports)]
use super::types::*;

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

// ---- error payloads (0.99) ----

/// Called once per payload of an error; the strings live only during the call.
pub type PJRT_Error_PayloadVisitor = Option<
    unsafe extern "C" fn(
        key: *const c_char,
        key_size: usize,
        value: *const c_char,
        value_size: usize,
        user_arg: *mut c_void,
    ),
>;
pjrt_struct!(PJRT_Error_ForEachPayload_Args {
    struct_size: usize, extension_start: Ext, error: *const PJRT_Error, visitor: PJRT_Error_PayloadVisitor,
    user_arg: *mut c_void,
});

// ---- canonical shapes (0.109) ----

/// Frees `serialized_shape`; call it once.
pub type PJRT_SerializedShapeDeleter = Option<unsafe extern "C" fn(shape: *const c_char)>;
// The shape a memory space would store `dims`/`element_type` (optional `layout`) as; the output is
// a serialized `xla.ShapeProto`.
pjrt_struct!(PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace_Args {
    struct_size: usize, extension_start: Ext, topology: *const PJRT_TopologyDescription, memory_space_kind_id: c_int,
    dims: *const i64, num_dims: usize, element_type: PJRT_Buffer_Type, layout: *const super::PJRT_Buffer_MemoryLayout,
    serialized_shape: *const c_char, serialized_shape_size: usize, serialized_shape_deleter: PJRT_SerializedShapeDeleter,
});

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::offset_of;

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
    fn parity_args_layout() {
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
        assert_eq!(offset_of!(PJRT_Error_ForEachPayload_Args, visitor), 24);
        assert_eq!(PJRT_Error_ForEachPayload_Args::STRUCT_SIZE, 40);
        type Canonical = PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace_Args;
        assert_eq!(offset_of!(Canonical, memory_space_kind_id), 24);
        assert_eq!(offset_of!(Canonical, dims), 32);
        assert_eq!(offset_of!(Canonical, element_type), 48);
        assert_eq!(offset_of!(Canonical, layout), 56);
        assert_eq!(offset_of!(Canonical, serialized_shape), 64);
        assert_eq!(Canonical::STRUCT_SIZE, 88);
    }
}
