//! Args structs for executable metadata, execute contexts, load options and host send/receive
//! callbacks (declared by hand from the API description; layouts checked in the tests below).

#![allow(non_camel_case_types, non_snake_case, missing_docs)]

use std::ffi::{c_char, c_int, c_void};

use super::types::*;

// ---- executable metadata ----
pjrt_struct!(PJRT_Executable_SizeOfGeneratedCodeInBytes_Args {
    struct_size: usize, extension_start: Ext, executable: *mut PJRT_Executable, size_in_bytes: i64,
});
pjrt_struct!(PJRT_Executable_GetCostAnalysis_Args {
    struct_size: usize, extension_start: Ext, executable: *mut PJRT_Executable, num_properties: usize,
    properties: *const PJRT_NamedValue,
});
pjrt_struct!(PJRT_Executable_OutputMemoryKinds_Args {
    struct_size: usize, extension_start: Ext, executable: *mut PJRT_Executable, num_outputs: usize,
    memory_kinds: *const *const c_char, memory_kind_sizes: *const usize,
});
pjrt_struct!(PJRT_Executable_ParameterMemoryKinds_Args {
    struct_size: usize, extension_start: Ext, executable: *mut PJRT_Executable, num_parameters: usize,
    memory_kinds: *const *const c_char, memory_kind_sizes: *const usize,
});
pjrt_struct!(PJRT_Executable_GetCompiledMemoryStats_Args {
    struct_size: usize, extension_start: Ext, executable: *mut PJRT_Executable,
    generated_code_size_in_bytes: i64, argument_size_in_bytes: i64, output_size_in_bytes: i64,
    alias_size_in_bytes: i64, temp_size_in_bytes: i64,
    host_generated_code_size_in_bytes: i64, host_argument_size_in_bytes: i64, host_output_size_in_bytes: i64,
    host_alias_size_in_bytes: i64, host_temp_size_in_bytes: i64,
    peak_memory_in_bytes: i64, total_size_in_bytes: i64, total_allocation_bytes: i64,
    indefinite_allocations: i64, peak_unpadded_heap_bytes: i64,
});
pjrt_struct!(PJRT_Executable_GetCompileOptions_Args {
    struct_size: usize, extension_start: Ext, executable: *mut PJRT_Executable,
    serialized_bytes: *const c_char, serialized_bytes_size: usize,
    serialized_compile_options: *mut PJRT_SerializedCompileOptions,
    serialized_compile_options_deleter: PJRT_SerializedCompileOptionsDeleter,
});
pjrt_struct!(PJRT_LoadedExecutable_GetDeviceAssignment_Args {
    struct_size: usize, extension_start: Ext, executable: *mut PJRT_LoadedExecutable,
    serialized_bytes: *const c_char, serialized_bytes_size: usize,
    serialized_device_assignment: *mut PJRT_DeviceAssignmentSerialized,
    serialized_device_assignment_deleter: PJRT_DeviceAssignmentSerializedDeleter,
});

/// `PJRT_LogicalDeviceIds`: a (replica, partition) pair.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PJRT_LogicalDeviceIds {
    pub replica: c_int,
    pub partition: c_int,
}

pjrt_struct!(PJRT_LoadedExecutable_AddressableDeviceLogicalIds_Args {
    struct_size: usize, extension_start: Ext, executable: *mut PJRT_LoadedExecutable,
    addressable_device_logical_ids: *mut PJRT_LogicalDeviceIds, num_addressable_device_logical_ids: usize,
});
pjrt_struct!(PJRT_LoadedExecutable_Fingerprint_Args {
    struct_size: usize, extension_start: Ext, executable: *mut PJRT_LoadedExecutable,
    executable_fingerprint: *const c_char, executable_fingerprint_size: usize,
});

// ---- execute contexts and load options ----
pjrt_struct!(PJRT_ExecuteContext_Create_Args {
    struct_size: usize, extension_start: Ext, context: *mut PJRT_ExecuteContext,
});
pjrt_struct!(PJRT_ExecuteContext_Destroy_Args {
    struct_size: usize, extension_start: Ext, context: *mut PJRT_ExecuteContext,
});
// `PJRT_LoadOptions` (0.111) has no `extension_start`.
pjrt_struct!(PJRT_LoadOptions {
    struct_size: usize, computation_origin: *const i32, computation_origin_size: usize,
    multi_slice_config: *mut PJRT_MultiSlice_Config,
});

// ---- host send/receive callbacks ----

/// Frees a chunk's data; called once with the chunk's `data` and `deleter_arg`.
pub type PJRT_ChunkDeleter = Option<unsafe extern "C" fn(data: *mut c_void, deleter_arg: *mut c_void)>;

/// `PJRT_Chunk`: bytes plus the function that frees them.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PJRT_Chunk {
    pub data: *mut c_void,
    pub size: usize,
    pub deleter: PJRT_ChunkDeleter,
    pub deleter_arg: *mut c_void,
}

/// Called for each chunk a device sends to the host. Returns NULL, or an error made with
/// `*callback_error`. Must free the chunk with its deleter.
///
/// `done` is C's `bool`, taken as the byte it is: a plugin may pass any byte, and a Rust `bool`
/// parameter holding one other than 0 or 1 would be undefined behaviour; read nonzero as true.
pub type PJRT_SendCallback = Option<
    unsafe extern "C" fn(
        chunk: *mut PJRT_Chunk,
        callback_error: *mut PJRT_CallbackError,
        total_size_in_bytes: usize,
        done: u8,
        user_arg: *mut c_void,
    ) -> *mut PJRT_Error,
>;

/// Called when a device waits for data from the host; owns `stream` and must destroy it.
pub type PJRT_RecvCallback = Option<unsafe extern "C" fn(stream: *mut PJRT_CopyToDeviceStream, user_arg: *mut c_void)>;

/// `PJRT_SendCallbackInfo` (no `struct_size`): the callback for one send channel.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PJRT_SendCallbackInfo {
    pub channel_id: i64,
    pub user_arg: *mut c_void,
    pub send_callback: PJRT_SendCallback,
}

/// `PJRT_RecvCallbackInfo` (no `struct_size`): the callback for one receive channel.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PJRT_RecvCallbackInfo {
    pub channel_id: i64,
    pub user_arg: *mut c_void,
    pub recv_callback: PJRT_RecvCallback,
}

pjrt_struct!(PJRT_CopyToDeviceStream_Destroy_Args {
    struct_size: usize, extension_start: Ext, stream: *mut PJRT_CopyToDeviceStream,
});
pjrt_struct!(PJRT_CopyToDeviceStream_AddChunk_Args {
    struct_size: usize, extension_start: Ext, stream: *mut PJRT_CopyToDeviceStream, chunk: *mut PJRT_Chunk,
    transfer_complete: *mut PJRT_Event,
});
pjrt_struct!(PJRT_CopyToDeviceStream_TotalBytes_Args {
    struct_size: usize, extension_start: Ext, stream: *mut PJRT_CopyToDeviceStream, total_bytes: i64,
});
pjrt_struct!(PJRT_CopyToDeviceStream_GranuleSize_Args {
    struct_size: usize, extension_start: Ext, stream: *mut PJRT_CopyToDeviceStream, granule_size_in_bytes: i64,
});
pjrt_struct!(PJRT_CopyToDeviceStream_CurrentBytes_Args {
    struct_size: usize, extension_start: Ext, stream: *mut PJRT_CopyToDeviceStream, current_bytes: i64,
});

#[cfg(test)]
mod tests {
    use std::mem::{offset_of, size_of};

    use super::*;

    /// Sizes from the API notes' slot table (the header's `*_STRUCT_SIZE` at 0.114/0.115).
    #[test]
    fn struct_sizes_match_the_published_layout() {
        let expected: &[(usize, usize, &str)] = &[
            (PJRT_Executable_SizeOfGeneratedCodeInBytes_Args::STRUCT_SIZE, 32, "SizeOfGeneratedCodeInBytes"),
            (PJRT_Executable_GetCostAnalysis_Args::STRUCT_SIZE, 40, "GetCostAnalysis"),
            (PJRT_Executable_OutputMemoryKinds_Args::STRUCT_SIZE, 48, "OutputMemoryKinds"),
            (PJRT_Executable_ParameterMemoryKinds_Args::STRUCT_SIZE, 48, "ParameterMemoryKinds"),
            (PJRT_Executable_GetCompiledMemoryStats_Args::STRUCT_SIZE, 144, "GetCompiledMemoryStats"),
            (PJRT_Executable_GetCompileOptions_Args::STRUCT_SIZE, 56, "GetCompileOptions"),
            (PJRT_LoadedExecutable_GetDeviceAssignment_Args::STRUCT_SIZE, 56, "GetDeviceAssignment"),
            (PJRT_LoadedExecutable_AddressableDeviceLogicalIds_Args::STRUCT_SIZE, 40, "AddressableDeviceLogicalIds"),
            (PJRT_LoadedExecutable_Fingerprint_Args::STRUCT_SIZE, 40, "LoadedExecutable_Fingerprint"),
            (PJRT_ExecuteContext_Create_Args::STRUCT_SIZE, 24, "ExecuteContext_Create"),
            (PJRT_ExecuteContext_Destroy_Args::STRUCT_SIZE, 24, "ExecuteContext_Destroy"),
            (PJRT_LoadOptions::STRUCT_SIZE, 32, "PJRT_LoadOptions"),
            (PJRT_CopyToDeviceStream_Destroy_Args::STRUCT_SIZE, 24, "CopyToDeviceStream_Destroy"),
            (PJRT_CopyToDeviceStream_AddChunk_Args::STRUCT_SIZE, 40, "CopyToDeviceStream_AddChunk"),
            (PJRT_CopyToDeviceStream_TotalBytes_Args::STRUCT_SIZE, 32, "CopyToDeviceStream_TotalBytes"),
            (PJRT_CopyToDeviceStream_GranuleSize_Args::STRUCT_SIZE, 32, "CopyToDeviceStream_GranuleSize"),
            (PJRT_CopyToDeviceStream_CurrentBytes_Args::STRUCT_SIZE, 32, "CopyToDeviceStream_CurrentBytes"),
        ];
        for (ours, theirs, name) in expected {
            assert_eq!(ours, theirs, "{name}");
        }
    }

    #[test]
    fn compiled_memory_stats_layout() {
        type S = PJRT_Executable_GetCompiledMemoryStats_Args;
        // 112 is the oldest size the CPU plugins accept: it ends with `peak_memory_in_bytes`.
        assert_eq!(offset_of!(S, peak_memory_in_bytes) + 8, 112);
        assert_eq!(offset_of!(S, total_size_in_bytes), 112);
        assert_eq!(offset_of!(S, peak_unpadded_heap_bytes), 136);
    }

    #[test]
    fn callback_struct_layouts() {
        assert_eq!(size_of::<PJRT_Chunk>(), 32);
        assert_eq!(offset_of!(PJRT_Chunk, deleter_arg), 24);
        assert_eq!(size_of::<PJRT_SendCallbackInfo>(), 24);
        assert_eq!(offset_of!(PJRT_SendCallbackInfo, send_callback), 16);
        assert_eq!(size_of::<PJRT_RecvCallbackInfo>(), 24);
        assert_eq!(offset_of!(PJRT_RecvCallbackInfo, recv_callback), 16);
        assert_eq!(size_of::<PJRT_LogicalDeviceIds>(), 8);
    }
}
