//! Programs, compilation and executables: [`PJRT_Program`], compiling (by a client, or ahead of
//! time against a topology), loading and deserializing, the `PJRT_Executable` and
//! `PJRT_LoadedExecutable` handles and their metadata, execute contexts and load options, and what
//! an execution takes: [`PJRT_ExecuteOptions`], the execute args, and the host send/receive
//! callbacks with their copy-to-device streams (layouts checked in the tests below).

#![allow(non_camel_case_types, non_snake_case, missing_docs)]

use std::ffi::{c_char, c_int, c_void};

use super::args::*;
use super::buffer::*;
use super::client::*;
use super::device::*;
use super::error::*;
use super::event::*;
use super::named_value::*;
use super::topology::*;

opaque!(
    PJRT_Executable,
    PJRT_LoadedExecutable,
    PJRT_ExecuteContext,
    PJRT_SerializedExecutable,
    PJRT_SerializedCompileOptions,
    PJRT_DeviceAssignmentSerialized,
    PJRT_MultiSlice_Config,
    PJRT_CopyToDeviceStream,
);

pub type PJRT_SerializedExecutableDeleter = Option<unsafe extern "C" fn(exec: *mut PJRT_SerializedExecutable)>;
pub type PJRT_SerializedCompileOptionsDeleter =
    Option<unsafe extern "C" fn(options: *mut PJRT_SerializedCompileOptions)>;
pub type PJRT_DeviceAssignmentSerializedDeleter =
    Option<unsafe extern "C" fn(da: *mut PJRT_DeviceAssignmentSerialized)>;

// ---- programs and compilation ----
pjrt_struct!(PJRT_Program {
    struct_size: usize, extension_start: Ext, code: *mut c_char, code_size: usize,
    format: *const c_char, format_size: usize,
});
pjrt_struct!(PJRT_Client_Compile_Args {
    struct_size: usize, extension_start: Ext, client: *mut PJRT_Client, program: *const PJRT_Program,
    compile_options: *const c_char, compile_options_size: usize, executable: *mut PJRT_LoadedExecutable,
});
pjrt_struct!(PJRT_Compile_Args {
    struct_size: usize, extension_start: Ext, topology: *const PJRT_TopologyDescription, program: *const PJRT_Program,
    compile_options: *const c_char, compile_options_size: usize, client: *mut PJRT_Client,
    executable: *mut PJRT_Executable,
});
pjrt_struct!(PJRT_Client_Load_Args {
    struct_size: usize, extension_start: Ext, client: *mut PJRT_Client, executable: *mut PJRT_Executable,
    compile_options: *const c_char, compile_options_size: usize, loaded_executable: *mut PJRT_LoadedExecutable,
});
pjrt_struct!(PJRT_Executable_DeserializeAndLoad_Args {
    struct_size: usize, extension_start: Ext, client: *mut PJRT_Client, serialized_executable: *const c_char,
    serialized_executable_size: usize, loaded_executable: *mut PJRT_LoadedExecutable,
    overridden_serialized_compile_options: *const c_char, overridden_serialized_compile_options_size: usize,
    load_options: *mut c_void,
});

// ---- executables ----
pjrt_struct!(PJRT_Executable_Destroy_Args { struct_size: usize, extension_start: Ext, executable: *mut PJRT_Executable });
pjrt_struct!(PJRT_LoadedExecutable_Destroy_Args {
    struct_size: usize, extension_start: Ext, executable: *mut PJRT_LoadedExecutable,
});
pjrt_struct!(PJRT_LoadedExecutable_GetExecutable_Args {
    struct_size: usize, extension_start: Ext, loaded_executable: *mut PJRT_LoadedExecutable,
    executable: *mut PJRT_Executable,
});
pjrt_struct!(PJRT_Executable_Name_Args {
    struct_size: usize, extension_start: Ext, executable: *mut PJRT_Executable,
    executable_name: *const c_char, executable_name_size: usize,
});
pjrt_struct!(PJRT_Executable_NumReplicas_Args {
    struct_size: usize, extension_start: Ext, executable: *mut PJRT_Executable, num_replicas: usize,
});
pjrt_struct!(PJRT_Executable_NumPartitions_Args {
    struct_size: usize, extension_start: Ext, executable: *mut PJRT_Executable, num_partitions: usize,
});
pjrt_struct!(PJRT_Executable_NumOutputs_Args {
    struct_size: usize, extension_start: Ext, executable: *mut PJRT_Executable, num_outputs: usize,
});
pjrt_struct!(PJRT_Executable_Fingerprint_Args {
    struct_size: usize, extension_start: Ext, executable: *mut PJRT_Executable,
    executable_fingerprint: *const c_char, executable_fingerprint_size: usize,
});
pjrt_struct!(PJRT_Executable_OutputElementTypes_Args {
    struct_size: usize, extension_start: Ext, executable: *mut PJRT_Executable,
    output_types: *mut PJRT_Buffer_Type, num_output_types: usize,
});
pjrt_struct!(PJRT_Executable_OutputDimensions_Args {
    struct_size: usize, extension_start: Ext, executable: *mut PJRT_Executable, num_outputs: usize,
    dims: *const i64, dim_sizes: *const usize,
});
pjrt_struct!(PJRT_Executable_OptimizedProgram_Args {
    struct_size: usize, extension_start: Ext, executable: *mut PJRT_Executable, program: *mut PJRT_Program,
});
pjrt_struct!(PJRT_Executable_Serialize_Args {
    struct_size: usize, extension_start: Ext, executable: *const PJRT_Executable,
    serialized_bytes: *const c_char, serialized_bytes_size: usize,
    serialized_executable: *mut PJRT_SerializedExecutable,
    serialized_executable_deleter: PJRT_SerializedExecutableDeleter,
});
pjrt_struct!(PJRT_LoadedExecutable_AddressableDevices_Args {
    struct_size: usize, extension_start: Ext, executable: *mut PJRT_LoadedExecutable,
    addressable_devices: *const *mut PJRT_Device, num_addressable_devices: usize,
});
pjrt_struct!(PJRT_LoadedExecutable_Delete_Args {
    struct_size: usize, extension_start: Ext, executable: *mut PJRT_LoadedExecutable,
});
pjrt_struct!(PJRT_LoadedExecutable_IsDeleted_Args {
    struct_size: usize, extension_start: Ext, executable: *mut PJRT_LoadedExecutable, is_deleted: bool,
});

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

// ---- execution ----
pjrt_struct!(PJRT_ExecuteOptions {
    struct_size: usize, extension_start: Ext, send_callbacks: *mut *mut c_void, recv_callbacks: *mut *mut c_void,
    num_send_ops: usize, num_recv_ops: usize, launch_id: c_int,
    non_donatable_input_indices: *const i64, num_non_donatable_input_indices: usize,
    context: *mut PJRT_ExecuteContext, call_location: *const c_char, num_tasks: usize,
    task_ids: *mut c_int, incarnation_ids: *mut i64, multi_slice_config: *mut PJRT_MultiSlice_Config,
    use_major_to_minor_data_layout_for_callbacks: bool,
    hlo_output_callbacks: *mut c_void, num_hlo_output_callbacks: usize,
});
pjrt_struct!(PJRT_LoadedExecutable_Execute_Args {
    struct_size: usize, extension_start: Ext, executable: *mut PJRT_LoadedExecutable,
    options: *mut PJRT_ExecuteOptions, argument_lists: *const *const *mut PJRT_Buffer,
    num_devices: usize, num_args: usize, output_lists: *const *mut *mut PJRT_Buffer,
    device_complete_events: *mut *mut PJRT_Event, execute_device: *mut PJRT_Device,
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
            (PJRT_Program::STRUCT_SIZE, 48, "PJRT_Program"),
            (PJRT_Client_Compile_Args::STRUCT_SIZE, 56, "PJRT_Client_Compile_Args"),
            (PJRT_Compile_Args::STRUCT_SIZE, 64, "PJRT_Compile"),
            (PJRT_Client_Load_Args::STRUCT_SIZE, 56, "Client_Load"),
            (PJRT_Executable_DeserializeAndLoad_Args::STRUCT_SIZE, 72, "DeserializeAndLoad"),
            (PJRT_Executable_Destroy_Args::STRUCT_SIZE, 24, "PJRT_Executable_Destroy_Args"),
            (PJRT_LoadedExecutable_Destroy_Args::STRUCT_SIZE, 24, "PJRT_LoadedExecutable_Destroy_Args"),
            (PJRT_LoadedExecutable_GetExecutable_Args::STRUCT_SIZE, 32, "PJRT_LoadedExecutable_GetExecutable_Args"),
            (PJRT_Executable_Name_Args::STRUCT_SIZE, 40, "PJRT_Executable_Name_Args"),
            (PJRT_Executable_NumReplicas_Args::STRUCT_SIZE, 32, "PJRT_Executable_NumReplicas_Args"),
            (PJRT_Executable_NumPartitions_Args::STRUCT_SIZE, 32, "PJRT_Executable_NumPartitions_Args"),
            (PJRT_Executable_NumOutputs_Args::STRUCT_SIZE, 32, "PJRT_Executable_NumOutputs_Args"),
            (PJRT_Executable_Fingerprint_Args::STRUCT_SIZE, 40, "PJRT_Executable_Fingerprint_Args"),
            (PJRT_Executable_OutputElementTypes_Args::STRUCT_SIZE, 40, "PJRT_Executable_OutputElementTypes_Args"),
            (PJRT_Executable_OutputDimensions_Args::STRUCT_SIZE, 48, "PJRT_Executable_OutputDimensions_Args"),
            (PJRT_Executable_OptimizedProgram_Args::STRUCT_SIZE, 32, "PJRT_Executable_OptimizedProgram_Args"),
            (PJRT_Executable_Serialize_Args::STRUCT_SIZE, 56, "PJRT_Executable_Serialize_Args"),
            (
                PJRT_LoadedExecutable_AddressableDevices_Args::STRUCT_SIZE,
                40,
                "PJRT_LoadedExecutable_AddressableDevices_Args",
            ),
            (PJRT_LoadedExecutable_Delete_Args::STRUCT_SIZE, 24, "PJRT_LoadedExecutable_Delete_Args"),
            (PJRT_LoadedExecutable_IsDeleted_Args::STRUCT_SIZE, 25, "PJRT_LoadedExecutable_IsDeleted_Args"),
            (PJRT_ExecuteOptions::STRUCT_SIZE, 144, "PJRT_ExecuteOptions"),
            (PJRT_LoadedExecutable_Execute_Args::STRUCT_SIZE, 80, "PJRT_LoadedExecutable_Execute_Args"),
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
    fn execute_options_layout() {
        assert_eq!(offset_of!(PJRT_ExecuteOptions, launch_id), 48);
        assert_eq!(offset_of!(PJRT_ExecuteOptions, context), 72);
        assert_eq!(offset_of!(PJRT_ExecuteOptions, use_major_to_minor_data_layout_for_callbacks), 120);
        assert_eq!(offset_of!(PJRT_ExecuteOptions, hlo_output_callbacks), 128);
        assert_eq!(offset_of!(PJRT_LoadedExecutable_Execute_Args, execute_device), 72);
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
