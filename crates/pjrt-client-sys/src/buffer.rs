//! Buffers: the `PJRT_Buffer` handle, its element types ([`PJRT_Buffer_Type`]) and memory
//! layouts, every call that makes one (from host data, views of device memory, uninitialized,
//! error and alias buffers, bitcasts, donation with a control dependency), queries it, copies it
//! (to a device, a memory, the host, raw bytes) and destroys it, and the asynchronous
//! host-to-device transfer manager (sizes in the tests below are the published `*_STRUCT_SIZE`
//! values).

#![allow(non_camel_case_types, non_snake_case, missing_docs)]

use std::ffi::{c_char, c_int, c_void};

use super::args::*;
use super::client::*;
use super::device::*;
use super::error::*;
use super::event::*;
use super::named_value::*;

opaque!(PJRT_Buffer, PJRT_AsyncHostToDeviceTransferManager, PJRT_FulfillAliasBufferCallback);

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
    /// `PJRT_Buffer_MemoryLayout_Type`.
    PJRT_Buffer_MemoryLayout_Type { Tiled = 0, Strides = 1 }
);

// ---- memory layouts ----
pjrt_struct!(PJRT_Buffer_MemoryLayout_Tiled {
    struct_size: usize, extension_start: Ext, minor_to_major: *const i64, minor_to_major_size: usize,
    tile_dims: *const i64, tile_dim_sizes: *const usize, num_tiles: usize,
});
pjrt_struct!(PJRT_Buffer_MemoryLayout_Strides {
    struct_size: usize, extension_start: Ext, byte_strides: *const i64, num_byte_strides: usize,
});

/// The union inside `PJRT_Buffer_MemoryLayout`; `type_` says which member is meant.
#[repr(C)]
#[derive(Clone, Copy)]
pub union PJRT_Buffer_MemoryLayout_Union {
    pub tiled: PJRT_Buffer_MemoryLayout_Tiled,
    pub strides: PJRT_Buffer_MemoryLayout_Strides,
}

impl std::fmt::Debug for PJRT_Buffer_MemoryLayout_Union {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PJRT_Buffer_MemoryLayout_Union")
    }
}

pjrt_struct!(PJRT_Buffer_MemoryLayout {
    struct_size: usize,
    extension_start: Ext,
    layout: PJRT_Buffer_MemoryLayout_Union,
    type_: PJRT_Buffer_MemoryLayout_Type,
});

// ---- from host data ----
pjrt_struct!(PJRT_Client_BufferFromHostBuffer_Args {
    struct_size: usize, extension_start: Ext, client: *mut PJRT_Client, data: *const c_void,
    type_: PJRT_Buffer_Type, dims: *const i64, num_dims: usize, byte_strides: *const i64,
    num_byte_strides: usize, host_buffer_semantics: PJRT_HostBufferSemantics,
    device: *mut PJRT_Device, memory: *mut PJRT_Memory, device_layout: *mut PJRT_Buffer_MemoryLayout,
    done_with_host_buffer: *mut PJRT_Event, buffer: *mut PJRT_Buffer,
});

// ---- the basics ----
pjrt_struct!(PJRT_Buffer_Destroy_Args { struct_size: usize, extension_start: Ext, buffer: *mut PJRT_Buffer });
pjrt_struct!(PJRT_Buffer_ElementType_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_Buffer, type_: PJRT_Buffer_Type,
});
pjrt_struct!(PJRT_Buffer_Dimensions_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_Buffer, dims: *const i64, num_dims: usize,
});
pjrt_struct!(PJRT_Buffer_ToHostBuffer_Args {
    struct_size: usize, extension_start: Ext, src: *mut PJRT_Buffer, host_layout: *mut PJRT_Buffer_MemoryLayout,
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

// ---- buffer queries ----
pjrt_struct!(PJRT_Buffer_UnpaddedDimensions_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_Buffer, unpadded_dims: *const i64, num_dims: usize,
});
pjrt_struct!(PJRT_Buffer_DynamicDimensionIndices_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_Buffer, dynamic_dim_indices: *const usize,
    num_dynamic_dims: usize,
});
pjrt_struct!(PJRT_Buffer_GetMemoryLayout_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_Buffer, layout: PJRT_Buffer_MemoryLayout,
});
pjrt_struct!(PJRT_Buffer_IsOnCpu_Args { struct_size: usize, extension_start: Ext, buffer: *mut PJRT_Buffer, is_on_cpu: bool });
pjrt_struct!(PJRT_Buffer_UnsafePointer_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_Buffer, buffer_pointer: usize,
});
pjrt_struct!(PJRT_Buffer_IncreaseExternalReferenceCount_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_Buffer,
});
pjrt_struct!(PJRT_Buffer_DecreaseExternalReferenceCount_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_Buffer,
});
pjrt_struct!(PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_Buffer, device_memory_ptr: *mut c_void,
});

// ---- views of existing memory ----
pub type PJRT_OnDeleteCallback = Option<unsafe extern "C" fn(device_buffer_ptr: *mut c_void, user_arg: *mut c_void)>;
pjrt_struct!(PJRT_Client_CreateViewOfDeviceBuffer_Args {
    struct_size: usize, extension_start: Ext, client: *mut PJRT_Client, device_buffer_ptr: *mut c_void,
    dims: *const i64, num_dims: usize, element_type: PJRT_Buffer_Type, layout: *mut PJRT_Buffer_MemoryLayout,
    device: *mut PJRT_Device, on_delete_callback: PJRT_OnDeleteCallback, on_delete_callback_arg: *mut c_void,
    stream: isize, buffer: *mut PJRT_Buffer, memory: *mut PJRT_Memory,
});

// ---- raw copies to the host ----
pjrt_struct!(PJRT_Buffer_CopyRawToHost_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_Buffer, dst: *mut c_void, offset: i64,
    transfer_size: i64, event: *mut PJRT_Event,
});
pjrt_struct!(PJRT_Buffer_CopyRawToHostFuture_Callback_Args {
    struct_size: usize, callback_data: *mut c_void, error_code: PJRT_Error_Code, error_message: *const c_char,
    error_message_size: usize, dst: *mut c_void,
});
pub type PJRT_CopyRawToHostFutureCallback =
    Option<unsafe extern "C" fn(args: *mut PJRT_Buffer_CopyRawToHostFuture_Callback_Args)>;
pjrt_struct!(PJRT_Buffer_CopyRawToHostFuture_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_Buffer, offset: i64, transfer_size: i64,
    event: *mut PJRT_Event, callback_data: *mut c_void, future_ready_callback: PJRT_CopyRawToHostFutureCallback,
});

// ---- buffers without host data ----
pjrt_struct!(PJRT_Client_CreateUninitializedBuffer_Args {
    struct_size: usize, extension_start: Ext, client: *mut PJRT_Client, shape_dims: *const i64,
    shape_num_dims: usize, shape_element_type: PJRT_Buffer_Type, shape_layout: *mut PJRT_Buffer_MemoryLayout,
    device: *mut PJRT_Device, memory: *mut PJRT_Memory, buffer: *mut PJRT_Buffer,
});
pjrt_struct!(PJRT_Client_CreateErrorBuffer_Args {
    struct_size: usize, extension_start: Ext, client: *mut PJRT_Client, error_code: PJRT_Error_Code,
    error_message: *const c_char, error_message_size: usize, shape_dims: *const i64, shape_num_dims: usize,
    shape_element_type: PJRT_Buffer_Type, shape_layout: *mut PJRT_Buffer_MemoryLayout, memory: *mut PJRT_Memory,
    buffer: *mut PJRT_Buffer, payload: *const PJRT_NamedValue, num_payload: usize,
});
pjrt_struct!(PJRT_Client_CreateAliasBuffer_Args {
    struct_size: usize, extension_start: Ext, client: *mut PJRT_Client, memory: *mut PJRT_Memory,
    shape_dims: *const i64, shape_num_dims: usize, shape_element_type: PJRT_Buffer_Type,
    shape_layout: *mut PJRT_Buffer_MemoryLayout, alias_buffer: *mut PJRT_Buffer,
    fulfill_alias_buffer_cb: *mut PJRT_FulfillAliasBufferCallback,
});
pjrt_struct!(PJRT_Client_FulfillAliasBuffer_Args {
    struct_size: usize, extension_start: Ext, client: *mut PJRT_Client, buffer: *mut PJRT_Buffer,
    status_code: PJRT_Error_Code, error_message: *const c_char, error_message_size: usize,
    fulfill_alias_buffer_cb: *mut PJRT_FulfillAliasBufferCallback,
});

// ---- bitcast and donation ----
pjrt_struct!(PJRT_Buffer_Bitcast_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_Buffer, element_type: PJRT_Buffer_Type,
    dims: *const i64, num_dims: usize, device_layout: *mut PJRT_Buffer_MemoryLayout, out_buffer: *mut PJRT_Buffer,
});
pjrt_struct!(PJRT_Buffer_DonateWithControlDependency_Callback_Args {
    struct_size: usize, callback_data: *mut c_void, error_code: PJRT_Error_Code, error_message: *const c_char,
    error_message_size: usize,
});
pub type PJRT_DependencyReadyCallback =
    Option<unsafe extern "C" fn(args: *mut PJRT_Buffer_DonateWithControlDependency_Callback_Args)>;
pjrt_struct!(PJRT_Buffer_DonateWithControlDependency_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_Buffer, callback_data: *mut c_void,
    dependency_ready_callback: PJRT_DependencyReadyCallback, out_buffer: *mut PJRT_Buffer,
});

// ---- asynchronous host-to-device transfers ----
pjrt_struct!(PJRT_ShapeSpec {
    struct_size: usize, extension_start: Ext, dims: *const i64, num_dims: usize, element_type: PJRT_Buffer_Type,
});
pjrt_struct!(PJRT_Client_CreateBuffersForAsyncHostToDevice_Args {
    struct_size: usize, extension_start: Ext, client: *mut PJRT_Client, shape_specs: *mut PJRT_ShapeSpec,
    num_shape_specs: usize, device_layouts: *mut *mut PJRT_Buffer_MemoryLayout, num_device_layouts: usize,
    memory: *mut PJRT_Memory, transfer_manager: *mut PJRT_AsyncHostToDeviceTransferManager,
});
pjrt_struct!(PJRT_AsyncHostToDeviceTransferManager_Destroy_Args {
    struct_size: usize, extension_start: Ext, transfer_manager: *mut PJRT_AsyncHostToDeviceTransferManager,
});
pjrt_struct!(PJRT_AsyncHostToDeviceTransferManager_TransferData_Args {
    struct_size: usize, extension_start: Ext, transfer_manager: *mut PJRT_AsyncHostToDeviceTransferManager,
    buffer_index: c_int, data: *const c_void, offset: i64, transfer_size: i64, is_last_transfer: bool,
    done_with_h2d_transfer: *mut PJRT_Event,
});
pjrt_struct!(PJRT_AsyncHostToDeviceTransferManager_TransferLiteral_Args {
    struct_size: usize, extension_start: Ext, transfer_manager: *mut PJRT_AsyncHostToDeviceTransferManager,
    buffer_index: c_int, data: *const c_void, shape_dims: *const i64, shape_num_dims: usize,
    shape_element_type: PJRT_Buffer_Type, shape_layout: *mut PJRT_Buffer_MemoryLayout,
    done_with_h2d_transfer: *mut PJRT_Event,
});
pjrt_struct!(PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer_Args {
    struct_size: usize, extension_start: Ext, transfer_manager: *mut PJRT_AsyncHostToDeviceTransferManager,
    buffer_index: c_int, buffer_out: *mut PJRT_Buffer,
});
pjrt_struct!(PJRT_AsyncHostToDeviceTransferManager_Device_Args {
    struct_size: usize, extension_start: Ext, transfer_manager: *mut PJRT_AsyncHostToDeviceTransferManager,
    device_out: *mut PJRT_Device,
});
pjrt_struct!(PJRT_AsyncHostToDeviceTransferManager_BufferCount_Args {
    struct_size: usize, extension_start: Ext, transfer_manager: *mut PJRT_AsyncHostToDeviceTransferManager,
    buffer_count: usize,
});
pjrt_struct!(PJRT_AsyncHostToDeviceTransferManager_BufferSize_Args {
    struct_size: usize, extension_start: Ext, transfer_manager: *mut PJRT_AsyncHostToDeviceTransferManager,
    buffer_index: c_int, buffer_size: usize,
});
pjrt_struct!(PJRT_AsyncHostToDeviceTransferManager_SetBufferError_Args {
    struct_size: usize, extension_start: Ext, transfer_manager: *mut PJRT_AsyncHostToDeviceTransferManager,
    buffer_index: c_int, error_code: PJRT_Error_Code, error_message: *const c_char, error_message_size: usize,
});
pjrt_struct!(PJRT_AsyncHostToDeviceTransferManager_AddMetadata_Args {
    struct_size: usize, extension_start: Ext, transfer_manager: *mut PJRT_AsyncHostToDeviceTransferManager,
    transfer_metadata: *const PJRT_NamedValue, num_metadata: usize,
});

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::offset_of;

    /// Sizes from the API notes' slot table (the header's `*_STRUCT_SIZE` at 0.114/0.115).
    #[test]
    fn struct_sizes_match_the_published_layout() {
        let expected: &[(usize, usize, &str)] = &[
            (PJRT_Client_BufferFromHostBuffer_Args::STRUCT_SIZE, 120, "PJRT_Client_BufferFromHostBuffer_Args"),
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
    fn host_buffer_layouts() {
        // The layouts an upload and a download take (typed, not `void*`).
        assert_eq!(offset_of!(PJRT_Client_BufferFromHostBuffer_Args, byte_strides), 56);
        assert_eq!(offset_of!(PJRT_Client_BufferFromHostBuffer_Args, device_layout), 96);
        assert_eq!(offset_of!(PJRT_Buffer_ToHostBuffer_Args, host_layout), 24);
        assert_eq!(offset_of!(PJRT_Buffer_ToHostBuffer_Args, dst_size), 40);
    }

    /// The published `*_STRUCT_SIZE` values (0.114 header; the plugins' minimums in the API notes).
    #[test]
    fn buffer_struct_sizes() {
        let expected: &[(usize, usize, &str)] = &[
            (PJRT_Buffer_MemoryLayout_Tiled::STRUCT_SIZE, 56, "MemoryLayout_Tiled"),
            (PJRT_Buffer_MemoryLayout_Strides::STRUCT_SIZE, 32, "MemoryLayout_Strides"),
            (PJRT_Buffer_MemoryLayout::STRUCT_SIZE, 76, "MemoryLayout"),
            (PJRT_Buffer_UnpaddedDimensions_Args::STRUCT_SIZE, 40, "UnpaddedDimensions"),
            (PJRT_Buffer_DynamicDimensionIndices_Args::STRUCT_SIZE, 40, "DynamicDimensionIndices"),
            (PJRT_Buffer_GetMemoryLayout_Args::STRUCT_SIZE, 104, "GetMemoryLayout"),
            (PJRT_Buffer_IsOnCpu_Args::STRUCT_SIZE, 25, "IsOnCpu"),
            (PJRT_Buffer_UnsafePointer_Args::STRUCT_SIZE, 32, "UnsafePointer"),
            (PJRT_Buffer_IncreaseExternalReferenceCount_Args::STRUCT_SIZE, 24, "IncreaseExternalReferenceCount"),
            (PJRT_Buffer_DecreaseExternalReferenceCount_Args::STRUCT_SIZE, 24, "DecreaseExternalReferenceCount"),
            (PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args::STRUCT_SIZE, 32, "OpaqueDeviceMemoryDataPointer"),
            (PJRT_Client_CreateViewOfDeviceBuffer_Args::STRUCT_SIZE, 112, "CreateViewOfDeviceBuffer"),
            (PJRT_Buffer_CopyRawToHost_Args::STRUCT_SIZE, 56, "CopyRawToHost"),
            (PJRT_Buffer_CopyRawToHostFuture_Callback_Args::STRUCT_SIZE, 48, "CopyRawToHostFuture_Callback"),
            (PJRT_Buffer_CopyRawToHostFuture_Args::STRUCT_SIZE, 64, "CopyRawToHostFuture"),
            (PJRT_Client_CreateUninitializedBuffer_Args::STRUCT_SIZE, 80, "CreateUninitializedBuffer"),
            (PJRT_Client_CreateErrorBuffer_Args::STRUCT_SIZE, 112, "CreateErrorBuffer"),
            (PJRT_Client_CreateAliasBuffer_Args::STRUCT_SIZE, 80, "CreateAliasBuffer"),
            (PJRT_Client_FulfillAliasBuffer_Args::STRUCT_SIZE, 64, "FulfillAliasBuffer"),
            (PJRT_Buffer_Bitcast_Args::STRUCT_SIZE, 64, "Bitcast"),
            (PJRT_Buffer_DonateWithControlDependency_Callback_Args::STRUCT_SIZE, 40, "Donate_Callback"),
            (PJRT_Buffer_DonateWithControlDependency_Args::STRUCT_SIZE, 48, "DonateWithControlDependency"),
            (PJRT_ShapeSpec::STRUCT_SIZE, 36, "ShapeSpec"),
            (PJRT_Client_CreateBuffersForAsyncHostToDevice_Args::STRUCT_SIZE, 72, "CreateBuffersForAsyncHostToDevice"),
            (PJRT_AsyncHostToDeviceTransferManager_Destroy_Args::STRUCT_SIZE, 24, "TM_Destroy"),
            (PJRT_AsyncHostToDeviceTransferManager_TransferData_Args::STRUCT_SIZE, 72, "TM_TransferData"),
            (PJRT_AsyncHostToDeviceTransferManager_TransferLiteral_Args::STRUCT_SIZE, 80, "TM_TransferLiteral"),
            (PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer_Args::STRUCT_SIZE, 40, "TM_RetrieveBuffer"),
            (PJRT_AsyncHostToDeviceTransferManager_Device_Args::STRUCT_SIZE, 32, "TM_Device"),
            (PJRT_AsyncHostToDeviceTransferManager_BufferCount_Args::STRUCT_SIZE, 32, "TM_BufferCount"),
            (PJRT_AsyncHostToDeviceTransferManager_BufferSize_Args::STRUCT_SIZE, 40, "TM_BufferSize"),
            (PJRT_AsyncHostToDeviceTransferManager_SetBufferError_Args::STRUCT_SIZE, 48, "TM_SetBufferError"),
            (PJRT_AsyncHostToDeviceTransferManager_AddMetadata_Args::STRUCT_SIZE, 40, "TM_AddMetadata"),
        ];
        for (ours, theirs, name) in expected {
            assert_eq!(ours, theirs, "{name}");
        }
    }

    #[test]
    fn buffer_field_offsets() {
        assert_eq!(offset_of!(PJRT_Buffer_MemoryLayout, layout), 16);
        assert_eq!(offset_of!(PJRT_Buffer_MemoryLayout, type_), 72);
        assert_eq!(std::mem::size_of::<PJRT_Buffer_MemoryLayout>(), 80);
        // The union's members (the header's `tiled` and `strides`): the larger one sets its size.
        assert_eq!(offset_of!(PJRT_Buffer_MemoryLayout_Tiled, minor_to_major), 16);
        assert_eq!(offset_of!(PJRT_Buffer_MemoryLayout_Tiled, tile_dims), 32);
        assert_eq!(offset_of!(PJRT_Buffer_MemoryLayout_Tiled, tile_dim_sizes), 40);
        assert_eq!(offset_of!(PJRT_Buffer_MemoryLayout_Tiled, num_tiles), 48);
        assert_eq!(offset_of!(PJRT_Buffer_MemoryLayout_Strides, byte_strides), 16);
        assert_eq!(offset_of!(PJRT_Buffer_MemoryLayout_Strides, num_byte_strides), 24);
        assert_eq!(std::mem::size_of::<PJRT_Buffer_MemoryLayout_Union>(), 56);
        assert_eq!(offset_of!(PJRT_Client_CreateViewOfDeviceBuffer_Args, layout), 56);
        assert_eq!(offset_of!(PJRT_Client_CreateViewOfDeviceBuffer_Args, element_type), 48);
        assert_eq!(offset_of!(PJRT_Client_CreateViewOfDeviceBuffer_Args, on_delete_callback), 72);
        assert_eq!(offset_of!(PJRT_Client_CreateViewOfDeviceBuffer_Args, stream), 88);
        assert_eq!(offset_of!(PJRT_Client_CreateErrorBuffer_Args, error_code), 24);
        assert_eq!(offset_of!(PJRT_Client_CreateErrorBuffer_Args, shape_element_type), 64);
        assert_eq!(offset_of!(PJRT_Client_CreateErrorBuffer_Args, buffer), 88);
        assert_eq!(offset_of!(PJRT_Buffer_CopyRawToHostFuture_Callback_Args, error_code), 16);
        assert_eq!(offset_of!(PJRT_Buffer_CopyRawToHostFuture_Callback_Args, dst), 40);
        assert_eq!(offset_of!(PJRT_AsyncHostToDeviceTransferManager_TransferData_Args, is_last_transfer), 56);
        assert_eq!(offset_of!(PJRT_AsyncHostToDeviceTransferManager_TransferLiteral_Args, shape_layout), 64);
        assert_eq!(offset_of!(PJRT_AsyncHostToDeviceTransferManager_SetBufferError_Args, error_code), 28);
        assert_eq!(offset_of!(PJRT_Client_CreateUninitializedBuffer_Args, shape_layout), 48);
        assert_eq!(offset_of!(PJRT_Client_CreateAliasBuffer_Args, fulfill_alias_buffer_cb), 72);
    }
}
