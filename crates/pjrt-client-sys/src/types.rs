//! Handles, enums and args structs of the PJRT C API, declared by hand from the API's public
//! description (see `shared/reference/pjrt-c-api-notes.md`).
//!
//! Rules kept here:
//! - every C enum is an `i32` newtype with associated constants, so an unknown value from a newer
//!   plugin is data, not undefined behaviour;
//! - every args struct gets `STRUCT_SIZE` = offset of its last field + that field's size (the
//!   header's `*_STRUCT_SIZE`), never `size_of` (which would include tail padding);
//! - args are built only through [`Args::new`], which zero-fills and sets `struct_size`.

#![allow(non_camel_case_types, non_snake_case, missing_docs)]

use std::ffi::{c_char, c_int, c_void};

opaque!(
    PJRT_Error,
    PJRT_Client,
    PJRT_Device,
    PJRT_DeviceDescription,
    PJRT_Memory,
    PJRT_Buffer,
    PJRT_Event,
    PJRT_Executable,
    PJRT_LoadedExecutable,
    PJRT_TopologyDescription,
    PJRT_ExecuteContext,
    PJRT_SerializedExecutable,
    PJRT_SerializedCompileOptions,
    PJRT_DeviceAssignmentSerialized,
    PJRT_CopyToDeviceStream,
    PJRT_AsyncHostToDeviceTransferManager,
    PJRT_MultiSlice_Config,
    PJRT_SerializedTopology,
    PJRT_Device_Attributes,
    PJRT_AsyncTrackingEvent,
);

c_enum!(
    /// `PJRT_Error_Code`: the absl status codes.
    PJRT_Error_Code {
        OK = 0, CANCELLED = 1, UNKNOWN = 2, INVALID_ARGUMENT = 3, DEADLINE_EXCEEDED = 4,
        NOT_FOUND = 5, ALREADY_EXISTS = 6, PERMISSION_DENIED = 7, RESOURCE_EXHAUSTED = 8,
        FAILED_PRECONDITION = 9, ABORTED = 10, OUT_OF_RANGE = 11, UNIMPLEMENTED = 12,
        INTERNAL = 13, UNAVAILABLE = 14, DATA_LOSS = 15, UNAUTHENTICATED = 16,
    }
);

c_enum!(
    /// `PJRT_Buffer_Type`.
    PJRT_Buffer_Type {
        INVALID = 0, PRED = 1, S8 = 2, S16 = 3, S32 = 4, S64 = 5, U8 = 6, U16 = 7, U32 = 8,
        U64 = 9, F16 = 10, F32 = 11, F64 = 12, BF16 = 13, C64 = 14, C128 = 15, F8E5M2 = 16,
        F8E4M3FN = 17, F8E4M3B11FNUZ = 18, F8E5M2FNUZ = 19, F8E4M3FNUZ = 20, S4 = 21, U4 = 22,
        TOKEN = 23, S2 = 24, U2 = 25, F8E4M3 = 26, F8E3M4 = 27, F8E8M0FNU = 28, F4E2M1FN = 29,
        S1 = 30, U1 = 31, F6E2M3FN = 32, F6E3M2FN = 33,
    }
);

c_enum!(
    /// `PJRT_HostBufferSemantics`.
    PJRT_HostBufferSemantics {
        ImmutableOnlyDuringCall = 0, ImmutableUntilTransferCompletes = 1,
        ImmutableZeroCopy = 2, MutableZeroCopy = 3,
    }
);

c_enum!(
    /// `PJRT_NamedValue_Type`.
    PJRT_NamedValue_Type { String = 0, Int64 = 1, Int64List = 2, Float = 3, Bool = 4 }
);

c_enum!(
    /// `PJRT_Extension_Type` (append-only; unknown values must be skipped).
    PJRT_Extension_Type {
        Gpu_Custom_Call = 0, Profiler = 1, Custom_Partitioner = 2, Stream = 3, Layouts = 4,
        FFI = 5, MemoryDescriptions = 6, Triton = 7, RawBuffer = 8, PhaseCompile = 9,
        Example = 10, Unknown = 11, CrossHostTransfers = 12, ExecutableMetadata = 13,
        Callback = 14, HostAllocator = 15, TpuTopology = 16, TpuExecutable = 17, Megascale = 18,
        Shardings = 19, AbiVersion = 20, Collectives = 21, MultiSlice = 22,
        HostMemoryAllocator = 23, XlaTransform = 24,
    }
);

c_enum!(
    /// `PJRT_Buffer_MemoryLayout_Type`.
    PJRT_Buffer_MemoryLayout_Type { Tiled = 0, Strides = 1 }
);

/// Every args struct: zero-filled construction with the right `struct_size`.
///
/// # Safety
/// Implementors must be `#[repr(C)]`, start with a `usize` `struct_size`, and be valid when
/// all-zero (pointers, integers, bools and `Option<fn>` only).
pub unsafe trait Args: Sized {
    /// Offset of the last field plus its size: what the header calls `*_STRUCT_SIZE`.
    const STRUCT_SIZE: usize;
    /// A zero-filled value with `struct_size` set.
    fn new() -> Self {
        // SAFETY: the trait's contract says all-zero is a valid value and the first field is
        // the `usize` struct_size.
        unsafe {
            let mut value: Self = std::mem::zeroed();
            *(&mut value as *mut Self as *mut usize) = Self::STRUCT_SIZE;
            value
        }
    }
}

/// The `extension_start` field type.
pub type Ext = *mut PJRT_Extension_Base;

/// `PJRT_Extension_Base`: the head of every extension struct.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PJRT_Extension_Base {
    pub struct_size: usize,
    pub type_: PJRT_Extension_Type,
    pub next: *mut PJRT_Extension_Base,
}

/// `PJRT_Api_Version`, embedded in `PJRT_Api`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PJRT_Api_Version {
    pub struct_size: usize,
    pub extension_start: Ext,
    pub major_version: c_int,
    pub minor_version: c_int,
}

/// The value union of `PJRT_NamedValue`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union PJRT_NamedValue_Value {
    pub string_value: *const c_char,
    pub int64_value: i64,
    pub int64_array_value: *const i64,
    pub float_value: f32,
    pub bool_value: bool,
}

impl std::fmt::Debug for PJRT_NamedValue_Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PJRT_NamedValue_Value")
    }
}

pub type PJRT_Event_OnReadyCallback = Option<unsafe extern "C" fn(error: *mut PJRT_Error, user_arg: *mut c_void)>;
pub type PJRT_CallbackError =
    Option<unsafe extern "C" fn(code: PJRT_Error_Code, message: *const c_char, message_size: usize) -> *mut PJRT_Error>;
pub type PJRT_KeyValueGetCallback =
    Option<unsafe extern "C" fn(args: *mut super::PJRT_KeyValueGetCallback_Args) -> *mut PJRT_Error>;
pub type PJRT_KeyValuePutCallback =
    Option<unsafe extern "C" fn(args: *mut super::PJRT_KeyValuePutCallback_Args) -> *mut PJRT_Error>;
pub type PJRT_KeyValueTryGetCallback =
    Option<unsafe extern "C" fn(args: *mut super::PJRT_KeyValueTryGetCallback_Args) -> *mut PJRT_Error>;
pub type PJRT_SerializedExecutableDeleter = Option<unsafe extern "C" fn(exec: *mut PJRT_SerializedExecutable)>;
pub type PJRT_SerializedCompileOptionsDeleter =
    Option<unsafe extern "C" fn(options: *mut PJRT_SerializedCompileOptions)>;
pub type PJRT_DeviceAssignmentSerializedDeleter =
    Option<unsafe extern "C" fn(da: *mut PJRT_DeviceAssignmentSerialized)>;

pjrt_struct!(PJRT_NamedValue {
    struct_size: usize, extension_start: Ext, name: *const c_char, name_size: usize,
    type_: PJRT_NamedValue_Type, value: PJRT_NamedValue_Value, value_size: usize,
});

// ---- errors ----
pjrt_struct!(PJRT_Error_Destroy_Args { struct_size: usize, extension_start: Ext, error: *mut PJRT_Error });
pjrt_struct!(PJRT_Error_Message_Args {
    struct_size: usize, extension_start: Ext, error: *const PJRT_Error, message: *const c_char, message_size: usize,
});
pjrt_struct!(PJRT_Error_GetCode_Args {
    struct_size: usize, extension_start: Ext, error: *const PJRT_Error, code: PJRT_Error_Code,
});

// ---- plugin ----
pjrt_struct!(PJRT_Plugin_Initialize_Args { struct_size: usize, extension_start: Ext });
pjrt_struct!(PJRT_Plugin_Attributes_Args {
    struct_size: usize, extension_start: Ext, attributes: *const PJRT_NamedValue, num_attributes: usize,
});

// ---- events ----
pjrt_struct!(PJRT_Event_Destroy_Args { struct_size: usize, extension_start: Ext, event: *mut PJRT_Event });
pjrt_struct!(PJRT_Event_IsReady_Args { struct_size: usize, extension_start: Ext, event: *mut PJRT_Event, is_ready: bool });
pjrt_struct!(PJRT_Event_Error_Args { struct_size: usize, extension_start: Ext, event: *mut PJRT_Event });
pjrt_struct!(PJRT_Event_Await_Args { struct_size: usize, extension_start: Ext, event: *mut PJRT_Event });
pjrt_struct!(PJRT_Event_OnReady_Args {
    struct_size: usize, extension_start: Ext, event: *mut PJRT_Event,
    callback: PJRT_Event_OnReadyCallback, user_arg: *mut c_void,
});
pjrt_struct!(PJRT_Event_Create_Args { struct_size: usize, extension_start: Ext, event: *mut PJRT_Event });
pjrt_struct!(PJRT_Event_Set_Args {
    struct_size: usize, extension_start: Ext, event: *mut PJRT_Event, error_code: PJRT_Error_Code,
    error_message: *const c_char, error_message_size: usize,
});

// ---- client ----
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
pjrt_struct!(PJRT_Program {
    struct_size: usize, extension_start: Ext, code: *mut c_char, code_size: usize,
    format: *const c_char, format_size: usize,
});
pjrt_struct!(PJRT_Client_Compile_Args {
    struct_size: usize, extension_start: Ext, client: *mut PJRT_Client, program: *const PJRT_Program,
    compile_options: *const c_char, compile_options_size: usize, executable: *mut PJRT_LoadedExecutable,
});
pjrt_struct!(PJRT_Client_DefaultDeviceAssignment_Args {
    struct_size: usize, extension_start: Ext, client: *mut PJRT_Client, num_replicas: c_int,
    num_partitions: c_int, default_assignment_size: usize, default_assignment: *mut c_int,
});
pjrt_struct!(PJRT_Client_BufferFromHostBuffer_Args {
    struct_size: usize, extension_start: Ext, client: *mut PJRT_Client, data: *const c_void,
    type_: PJRT_Buffer_Type, dims: *const i64, num_dims: usize, byte_strides: *const i64,
    num_byte_strides: usize, host_buffer_semantics: PJRT_HostBufferSemantics,
    device: *mut PJRT_Device, memory: *mut PJRT_Memory, device_layout: *mut super::PJRT_Buffer_MemoryLayout,
    done_with_host_buffer: *mut PJRT_Event, buffer: *mut PJRT_Buffer,
});

// ---- device descriptions and devices ----
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

// ---- buffers ----
pjrt_struct!(PJRT_Buffer_Destroy_Args { struct_size: usize, extension_start: Ext, buffer: *mut PJRT_Buffer });
pjrt_struct!(PJRT_Buffer_ElementType_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_Buffer, type_: PJRT_Buffer_Type,
});
pjrt_struct!(PJRT_Buffer_Dimensions_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_Buffer, dims: *const i64, num_dims: usize,
});
pjrt_struct!(PJRT_Buffer_ToHostBuffer_Args {
    struct_size: usize, extension_start: Ext, src: *mut PJRT_Buffer, host_layout: *mut super::PJRT_Buffer_MemoryLayout,
    dst: *mut c_void, dst_size: usize, event: *mut PJRT_Event,
});
pjrt_struct!(PJRT_Buffer_OnDeviceSizeInBytes_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_Buffer, on_device_size_in_bytes: usize,
});
pjrt_struct!(PJRT_Buffer_Delete_Args { struct_size: usize, extension_start: Ext, buffer: *mut PJRT_Buffer });
pjrt_struct!(PJRT_Buffer_IsDeleted_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_Buffer, is_deleted: bool,
});
pjrt_struct!(PJRT_Buffer_Device_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_Buffer, device: *mut PJRT_Device,
});
pjrt_struct!(PJRT_Buffer_Memory_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_Buffer, memory: *mut PJRT_Memory,
});
pjrt_struct!(PJRT_Buffer_ReadyEvent_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_Buffer, event: *mut PJRT_Event,
});
pjrt_struct!(PJRT_Buffer_CopyToDevice_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_Buffer, dst_device: *mut PJRT_Device,
    dst_buffer: *mut PJRT_Buffer,
});
pjrt_struct!(PJRT_Buffer_CopyToMemory_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_Buffer, dst_memory: *mut PJRT_Memory,
    dst_buffer: *mut PJRT_Buffer,
});

// ---- topologies and ahead-of-time compilation ----
pub type PJRT_SerializedTopologyDeleter = Option<unsafe extern "C" fn(topology: *mut PJRT_SerializedTopology)>;

pjrt_struct!(PJRT_Client_TopologyDescription_Args {
    struct_size: usize, extension_start: Ext, client: *mut PJRT_Client, topology: *mut PJRT_TopologyDescription,
});
pjrt_struct!(PJRT_TopologyDescription_Create_Args {
    struct_size: usize, extension_start: Ext, topology_name: *const c_char, topology_name_size: usize,
    create_options: *const PJRT_NamedValue, num_options: usize, topology: *mut PJRT_TopologyDescription,
});
pjrt_struct!(PJRT_TopologyDescription_Destroy_Args {
    struct_size: usize, extension_start: Ext, topology: *mut PJRT_TopologyDescription,
});
pjrt_struct!(PJRT_TopologyDescription_PlatformName_Args {
    struct_size: usize, extension_start: Ext, topology: *const PJRT_TopologyDescription,
    platform_name: *const c_char, platform_name_size: usize,
});
pjrt_struct!(PJRT_TopologyDescription_PlatformVersion_Args {
    struct_size: usize, extension_start: Ext, topology: *const PJRT_TopologyDescription,
    platform_version: *const c_char, platform_version_size: usize,
});
pjrt_struct!(PJRT_TopologyDescription_GetDeviceDescriptions_Args {
    struct_size: usize, extension_start: Ext, topology: *const PJRT_TopologyDescription,
    descriptions: *const *mut PJRT_DeviceDescription, num_descriptions: usize,
});
pjrt_struct!(PJRT_TopologyDescription_Serialize_Args {
    struct_size: usize, extension_start: Ext, topology: *mut PJRT_TopologyDescription,
    serialized_bytes: *const c_char, serialized_bytes_size: usize,
    serialized_topology: *mut PJRT_SerializedTopology, serialized_topology_deleter: PJRT_SerializedTopologyDeleter,
});
pjrt_struct!(PJRT_TopologyDescription_Attributes_Args {
    struct_size: usize, extension_start: Ext, topology: *mut PJRT_TopologyDescription,
    attributes: *const PJRT_NamedValue, num_attributes: usize,
});
pjrt_struct!(PJRT_TopologyDescription_Deserialize_Args {
    struct_size: usize, extension_start: Ext, serialized_topology: *const c_char, serialized_topology_size: usize,
    topology: *mut PJRT_TopologyDescription,
});
pjrt_struct!(PJRT_TopologyDescription_Fingerprint_Args {
    struct_size: usize, extension_start: Ext, topology: *const PJRT_TopologyDescription, fingerprint: u64,
});
pjrt_struct!(PJRT_TopologyDescription_GetMemorySpaceKindIds_Args {
    struct_size: usize, extension_start: Ext, topology: *const PJRT_TopologyDescription,
    memory_space_kind_ids: *const c_int, num_memory_space_kind_ids: usize,
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
            (PJRT_NamedValue::STRUCT_SIZE, 56, "PJRT_NamedValue"),
            (PJRT_Error_Destroy_Args::STRUCT_SIZE, 24, "PJRT_Error_Destroy_Args"),
            (PJRT_Error_Message_Args::STRUCT_SIZE, 40, "PJRT_Error_Message_Args"),
            (PJRT_Error_GetCode_Args::STRUCT_SIZE, 28, "PJRT_Error_GetCode_Args"),
            (PJRT_Plugin_Initialize_Args::STRUCT_SIZE, 16, "PJRT_Plugin_Initialize_Args"),
            (PJRT_Plugin_Attributes_Args::STRUCT_SIZE, 32, "PJRT_Plugin_Attributes_Args"),
            (PJRT_Event_Destroy_Args::STRUCT_SIZE, 24, "PJRT_Event_Destroy_Args"),
            (PJRT_Event_IsReady_Args::STRUCT_SIZE, 25, "PJRT_Event_IsReady_Args"),
            (PJRT_Event_Error_Args::STRUCT_SIZE, 24, "PJRT_Event_Error_Args"),
            (PJRT_Event_Await_Args::STRUCT_SIZE, 24, "PJRT_Event_Await_Args"),
            (PJRT_Event_OnReady_Args::STRUCT_SIZE, 40, "PJRT_Event_OnReady_Args"),
            (PJRT_Event_Create_Args::STRUCT_SIZE, 24, "PJRT_Event_Create_Args"),
            (PJRT_Event_Set_Args::STRUCT_SIZE, 48, "PJRT_Event_Set_Args"),
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
            (PJRT_Program::STRUCT_SIZE, 48, "PJRT_Program"),
            (PJRT_Client_Compile_Args::STRUCT_SIZE, 56, "PJRT_Client_Compile_Args"),
            (PJRT_Client_DefaultDeviceAssignment_Args::STRUCT_SIZE, 48, "PJRT_Client_DefaultDeviceAssignment_Args"),
            (PJRT_Client_BufferFromHostBuffer_Args::STRUCT_SIZE, 120, "PJRT_Client_BufferFromHostBuffer_Args"),
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
            (PJRT_Buffer_Destroy_Args::STRUCT_SIZE, 24, "PJRT_Buffer_Destroy_Args"),
            (PJRT_Buffer_ElementType_Args::STRUCT_SIZE, 28, "PJRT_Buffer_ElementType_Args"),
            (PJRT_Buffer_Dimensions_Args::STRUCT_SIZE, 40, "PJRT_Buffer_Dimensions_Args"),
            (PJRT_Buffer_ToHostBuffer_Args::STRUCT_SIZE, 56, "PJRT_Buffer_ToHostBuffer_Args"),
            (PJRT_Buffer_OnDeviceSizeInBytes_Args::STRUCT_SIZE, 32, "PJRT_Buffer_OnDeviceSizeInBytes_Args"),
            (PJRT_Buffer_Delete_Args::STRUCT_SIZE, 24, "PJRT_Buffer_Delete_Args"),
            (PJRT_Buffer_IsDeleted_Args::STRUCT_SIZE, 25, "PJRT_Buffer_IsDeleted_Args"),
            (PJRT_Buffer_Device_Args::STRUCT_SIZE, 32, "PJRT_Buffer_Device_Args"),
            (PJRT_Buffer_Memory_Args::STRUCT_SIZE, 32, "PJRT_Buffer_Memory_Args"),
            (PJRT_Buffer_ReadyEvent_Args::STRUCT_SIZE, 32, "PJRT_Buffer_ReadyEvent_Args"),
            (PJRT_Buffer_CopyToDevice_Args::STRUCT_SIZE, 40, "PJRT_Buffer_CopyToDevice_Args"),
            (PJRT_Buffer_CopyToMemory_Args::STRUCT_SIZE, 40, "PJRT_Buffer_CopyToMemory_Args"),
        ];
        for (ours, theirs, name) in expected {
            assert_eq!(ours, theirs, "{name}");
        }
    }

    #[test]
    fn named_value_layout() {
        assert_eq!(std::mem::offset_of!(PJRT_NamedValue, type_), 32);
        // The layouts an upload and a download take (typed, not `void*`).
        assert_eq!(std::mem::offset_of!(PJRT_Client_BufferFromHostBuffer_Args, byte_strides), 56);
        assert_eq!(std::mem::offset_of!(PJRT_Client_BufferFromHostBuffer_Args, device_layout), 96);
        assert_eq!(std::mem::offset_of!(PJRT_Buffer_ToHostBuffer_Args, host_layout), 24);
        assert_eq!(std::mem::offset_of!(PJRT_Buffer_ToHostBuffer_Args, dst_size), 40);
        assert_eq!(std::mem::offset_of!(PJRT_NamedValue, value), 40);
        assert_eq!(std::mem::offset_of!(PJRT_NamedValue, value_size), 48);
    }

    #[test]
    fn execute_options_layout() {
        assert_eq!(std::mem::offset_of!(PJRT_ExecuteOptions, launch_id), 48);
        assert_eq!(std::mem::offset_of!(PJRT_ExecuteOptions, context), 72);
        assert_eq!(std::mem::offset_of!(PJRT_ExecuteOptions, use_major_to_minor_data_layout_for_callbacks), 120);
        assert_eq!(std::mem::offset_of!(PJRT_ExecuteOptions, hlo_output_callbacks), 128);
        assert_eq!(std::mem::offset_of!(PJRT_LoadedExecutable_Execute_Args, execute_device), 72);
        assert_eq!(std::mem::offset_of!(PJRT_Client_Create_Args, kv_try_get_user_arg), 80);
    }

    #[test]
    fn new_sets_struct_size_and_zeroes() {
        let args = PJRT_Client_Create_Args::new();
        assert_eq!(args.struct_size, 88);
        assert!(args.create_options.is_null() && args.client.is_null() && args.kv_get_callback.is_none());
    }

    #[test]
    fn topology_and_aot_struct_sizes() {
        let expected: &[(usize, usize, &str)] = &[
            (PJRT_Client_TopologyDescription_Args::STRUCT_SIZE, 32, "Client_TopologyDescription"),
            (PJRT_TopologyDescription_Create_Args::STRUCT_SIZE, 56, "TopologyDescription_Create"),
            (PJRT_TopologyDescription_Destroy_Args::STRUCT_SIZE, 24, "TopologyDescription_Destroy"),
            (PJRT_TopologyDescription_PlatformName_Args::STRUCT_SIZE, 40, "TopologyDescription_PlatformName"),
            (PJRT_TopologyDescription_PlatformVersion_Args::STRUCT_SIZE, 40, "TopologyDescription_PlatformVersion"),
            (PJRT_TopologyDescription_GetDeviceDescriptions_Args::STRUCT_SIZE, 40, "GetDeviceDescriptions"),
            (PJRT_TopologyDescription_Serialize_Args::STRUCT_SIZE, 56, "TopologyDescription_Serialize"),
            (PJRT_TopologyDescription_Attributes_Args::STRUCT_SIZE, 40, "TopologyDescription_Attributes"),
            (PJRT_TopologyDescription_Deserialize_Args::STRUCT_SIZE, 40, "TopologyDescription_Deserialize"),
            (PJRT_TopologyDescription_Fingerprint_Args::STRUCT_SIZE, 32, "TopologyDescription_Fingerprint"),
            (PJRT_TopologyDescription_GetMemorySpaceKindIds_Args::STRUCT_SIZE, 40, "GetMemorySpaceKindIds"),
            (PJRT_Compile_Args::STRUCT_SIZE, 64, "PJRT_Compile"),
            (PJRT_Client_Load_Args::STRUCT_SIZE, 56, "Client_Load"),
            (PJRT_Executable_DeserializeAndLoad_Args::STRUCT_SIZE, 72, "DeserializeAndLoad"),
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
