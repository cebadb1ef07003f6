//! The `PJRT_Api` function table at 0.115: all 138 slots, in order, with the minor version that
//! introduced each one and the args struct it takes. [`SLOTS`] lists their names (the parity
//! document and the fault-matrix guard read it). Also the table's version header
//! ([`PJRT_Api_Version`]) and the calls on the plugin as a whole (initialize, attributes).

#![allow(non_camel_case_types, non_snake_case, missing_docs)]

use std::ffi::c_int;

use super::args::*;
use super::buffer::*;
use super::client::*;
use super::device::*;
use super::error::*;
use super::event::*;
use super::executable::*;
use super::named_value::*;
use super::topology::*;

/// `PJRT_Api_Version`, embedded in `PJRT_Api`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PJRT_Api_Version {
    pub struct_size: usize,
    pub extension_start: Ext,
    pub major_version: c_int,
    pub minor_version: c_int,
}

// ---- the plugin ----
pjrt_struct!(PJRT_Plugin_Initialize_Args { struct_size: usize, extension_start: Ext });
pjrt_struct!(PJRT_Plugin_Attributes_Args {
    struct_size: usize, extension_start: Ext, attributes: *const PJRT_NamedValue, num_attributes: usize,
});

/// What the crate knows about one slot of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotInfo {
    /// Position in the table (slot `i` lives at byte offset `40 + 8 * i`).
    pub index: usize,
    /// The C name, e.g. `PJRT_Client_Create`.
    pub name: &'static str,
    /// The minor API version that added the slot (0 for the original block).
    pub since_minor: i32,
}

/// Byte offset of the first slot inside `PJRT_Api`.
pub const FIRST_SLOT_OFFSET: usize = 40;

macro_rules! api_table {
    (@ret) => { *mut PJRT_Error };
    (@ret void) => { () };
    ($( $index:literal $name:ident ( $args:ty ) $(-> $ret:ident)? since $minor:literal ; )+) => {
        /// `PJRT_Api`: a header followed by function pointers. Never copy it, and never read a
        /// slot before checking that it lies inside the plugin's `struct_size`.
        #[repr(C)]
        pub struct PJRT_Api {
            pub struct_size: usize,
            pub extension_start: *mut PJRT_Extension_Base,
            pub pjrt_api_version: PJRT_Api_Version,
            $(pub $name: Option<unsafe extern "C" fn(args: *mut $args) -> api_table!(@ret $($ret)?)>,)+
        }

        /// Every slot of [`PJRT_Api`], in table order.
        pub const SLOTS: &[SlotInfo] = &[
            $(SlotInfo { index: $index, name: stringify!($name), since_minor: $minor },)+
        ];
    };
}

api_table! {
    0 PJRT_Error_Destroy(PJRT_Error_Destroy_Args) -> void since 0;
    1 PJRT_Error_Message(PJRT_Error_Message_Args) -> void since 0;
    2 PJRT_Error_GetCode(PJRT_Error_GetCode_Args) since 0;
    3 PJRT_Plugin_Initialize(PJRT_Plugin_Initialize_Args) since 0;
    4 PJRT_Plugin_Attributes(PJRT_Plugin_Attributes_Args) since 0;
    5 PJRT_Event_Destroy(PJRT_Event_Destroy_Args) since 0;
    6 PJRT_Event_IsReady(PJRT_Event_IsReady_Args) since 0;
    7 PJRT_Event_Error(PJRT_Event_Error_Args) since 0;
    8 PJRT_Event_Await(PJRT_Event_Await_Args) since 0;
    9 PJRT_Event_OnReady(PJRT_Event_OnReady_Args) since 0;
    10 PJRT_Client_Create(PJRT_Client_Create_Args) since 0;
    11 PJRT_Client_Destroy(PJRT_Client_Destroy_Args) since 0;
    12 PJRT_Client_PlatformName(PJRT_Client_PlatformName_Args) since 0;
    13 PJRT_Client_ProcessIndex(PJRT_Client_ProcessIndex_Args) since 0;
    14 PJRT_Client_PlatformVersion(PJRT_Client_PlatformVersion_Args) since 0;
    15 PJRT_Client_Devices(PJRT_Client_Devices_Args) since 0;
    16 PJRT_Client_AddressableDevices(PJRT_Client_AddressableDevices_Args) since 0;
    17 PJRT_Client_LookupDevice(PJRT_Client_LookupDevice_Args) since 0;
    18 PJRT_Client_LookupAddressableDevice(PJRT_Client_LookupAddressableDevice_Args) since 0;
    19 PJRT_Client_AddressableMemories(PJRT_Client_AddressableMemories_Args) since 0;
    20 PJRT_Client_Compile(PJRT_Client_Compile_Args) since 0;
    21 PJRT_Client_DefaultDeviceAssignment(PJRT_Client_DefaultDeviceAssignment_Args) since 0;
    22 PJRT_Client_BufferFromHostBuffer(PJRT_Client_BufferFromHostBuffer_Args) since 0;
    23 PJRT_DeviceDescription_Id(PJRT_DeviceDescription_Id_Args) since 0;
    24 PJRT_DeviceDescription_ProcessIndex(PJRT_DeviceDescription_ProcessIndex_Args) since 0;
    25 PJRT_DeviceDescription_Attributes(PJRT_DeviceDescription_Attributes_Args) since 0;
    26 PJRT_DeviceDescription_Kind(PJRT_DeviceDescription_Kind_Args) since 0;
    27 PJRT_DeviceDescription_DebugString(PJRT_DeviceDescription_DebugString_Args) since 0;
    28 PJRT_DeviceDescription_ToString(PJRT_DeviceDescription_ToString_Args) since 0;
    29 PJRT_Device_GetDescription(PJRT_Device_GetDescription_Args) since 0;
    30 PJRT_Device_IsAddressable(PJRT_Device_IsAddressable_Args) since 0;
    31 PJRT_Device_LocalHardwareId(PJRT_Device_LocalHardwareId_Args) since 0;
    32 PJRT_Device_AddressableMemories(PJRT_Device_AddressableMemories_Args) since 0;
    33 PJRT_Device_DefaultMemory(PJRT_Device_DefaultMemory_Args) since 0;
    34 PJRT_Device_MemoryStats(PJRT_Device_MemoryStats_Args) since 0;
    35 PJRT_Memory_Id(PJRT_Memory_Id_Args) since 0;
    36 PJRT_Memory_Kind(PJRT_Memory_Kind_Args) since 0;
    37 PJRT_Memory_DebugString(PJRT_Memory_DebugString_Args) since 0;
    38 PJRT_Memory_ToString(PJRT_Memory_ToString_Args) since 0;
    39 PJRT_Memory_AddressableByDevices(PJRT_Memory_AddressableByDevices_Args) since 0;
    40 PJRT_Executable_Destroy(PJRT_Executable_Destroy_Args) since 0;
    41 PJRT_Executable_Name(PJRT_Executable_Name_Args) since 0;
    42 PJRT_Executable_NumReplicas(PJRT_Executable_NumReplicas_Args) since 0;
    43 PJRT_Executable_NumPartitions(PJRT_Executable_NumPartitions_Args) since 0;
    44 PJRT_Executable_NumOutputs(PJRT_Executable_NumOutputs_Args) since 0;
    45 PJRT_Executable_SizeOfGeneratedCodeInBytes(PJRT_Executable_SizeOfGeneratedCodeInBytes_Args) since 0;
    46 PJRT_Executable_GetCostAnalysis(PJRT_Executable_GetCostAnalysis_Args) since 0;
    47 PJRT_Executable_OutputMemoryKinds(PJRT_Executable_OutputMemoryKinds_Args) since 0;
    48 PJRT_Executable_OptimizedProgram(PJRT_Executable_OptimizedProgram_Args) since 0;
    49 PJRT_Executable_Serialize(PJRT_Executable_Serialize_Args) since 0;
    50 PJRT_LoadedExecutable_Destroy(PJRT_LoadedExecutable_Destroy_Args) since 0;
    51 PJRT_LoadedExecutable_GetExecutable(PJRT_LoadedExecutable_GetExecutable_Args) since 0;
    52 PJRT_LoadedExecutable_AddressableDevices(PJRT_LoadedExecutable_AddressableDevices_Args) since 0;
    53 PJRT_LoadedExecutable_Delete(PJRT_LoadedExecutable_Delete_Args) since 0;
    54 PJRT_LoadedExecutable_IsDeleted(PJRT_LoadedExecutable_IsDeleted_Args) since 0;
    55 PJRT_LoadedExecutable_Execute(PJRT_LoadedExecutable_Execute_Args) since 0;
    56 PJRT_Executable_DeserializeAndLoad(PJRT_Executable_DeserializeAndLoad_Args) since 0;
    57 PJRT_LoadedExecutable_Fingerprint(PJRT_LoadedExecutable_Fingerprint_Args) since 0;
    58 PJRT_Buffer_Destroy(PJRT_Buffer_Destroy_Args) since 0;
    59 PJRT_Buffer_ElementType(PJRT_Buffer_ElementType_Args) since 0;
    60 PJRT_Buffer_Dimensions(PJRT_Buffer_Dimensions_Args) since 0;
    61 PJRT_Buffer_UnpaddedDimensions(PJRT_Buffer_UnpaddedDimensions_Args) since 0;
    62 PJRT_Buffer_DynamicDimensionIndices(PJRT_Buffer_DynamicDimensionIndices_Args) since 0;
    63 PJRT_Buffer_GetMemoryLayout(PJRT_Buffer_GetMemoryLayout_Args) since 0;
    64 PJRT_Buffer_OnDeviceSizeInBytes(PJRT_Buffer_OnDeviceSizeInBytes_Args) since 0;
    65 PJRT_Buffer_Device(PJRT_Buffer_Device_Args) since 0;
    66 PJRT_Buffer_Memory(PJRT_Buffer_Memory_Args) since 0;
    67 PJRT_Buffer_Delete(PJRT_Buffer_Delete_Args) since 0;
    68 PJRT_Buffer_IsDeleted(PJRT_Buffer_IsDeleted_Args) since 0;
    69 PJRT_Buffer_CopyToDevice(PJRT_Buffer_CopyToDevice_Args) since 0;
    70 PJRT_Buffer_ToHostBuffer(PJRT_Buffer_ToHostBuffer_Args) since 0;
    71 PJRT_Buffer_IsOnCpu(PJRT_Buffer_IsOnCpu_Args) since 0;
    72 PJRT_Buffer_ReadyEvent(PJRT_Buffer_ReadyEvent_Args) since 0;
    73 PJRT_Buffer_UnsafePointer(PJRT_Buffer_UnsafePointer_Args) since 0;
    74 PJRT_Buffer_IncreaseExternalReferenceCount(PJRT_Buffer_IncreaseExternalReferenceCount_Args) since 0;
    75 PJRT_Buffer_DecreaseExternalReferenceCount(PJRT_Buffer_DecreaseExternalReferenceCount_Args) since 0;
    76 PJRT_Buffer_OpaqueDeviceMemoryDataPointer(PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args) since 0;
    77 PJRT_CopyToDeviceStream_Destroy(PJRT_CopyToDeviceStream_Destroy_Args) since 0;
    78 PJRT_CopyToDeviceStream_AddChunk(PJRT_CopyToDeviceStream_AddChunk_Args) since 0;
    79 PJRT_CopyToDeviceStream_TotalBytes(PJRT_CopyToDeviceStream_TotalBytes_Args) since 0;
    80 PJRT_CopyToDeviceStream_GranuleSize(PJRT_CopyToDeviceStream_GranuleSize_Args) since 0;
    81 PJRT_CopyToDeviceStream_CurrentBytes(PJRT_CopyToDeviceStream_CurrentBytes_Args) since 0;
    82 PJRT_TopologyDescription_Create(PJRT_TopologyDescription_Create_Args) since 0;
    83 PJRT_TopologyDescription_Destroy(PJRT_TopologyDescription_Destroy_Args) since 0;
    84 PJRT_TopologyDescription_PlatformName(PJRT_TopologyDescription_PlatformName_Args) since 0;
    85 PJRT_TopologyDescription_PlatformVersion(PJRT_TopologyDescription_PlatformVersion_Args) since 0;
    86 PJRT_TopologyDescription_GetDeviceDescriptions(PJRT_TopologyDescription_GetDeviceDescriptions_Args) since 0;
    87 PJRT_TopologyDescription_Serialize(PJRT_TopologyDescription_Serialize_Args) since 0;
    88 PJRT_TopologyDescription_Attributes(PJRT_TopologyDescription_Attributes_Args) since 0;
    89 PJRT_Compile(PJRT_Compile_Args) since 0;
    90 PJRT_Executable_OutputElementTypes(PJRT_Executable_OutputElementTypes_Args) since 29;
    91 PJRT_Executable_OutputDimensions(PJRT_Executable_OutputDimensions_Args) since 29;
    92 PJRT_Buffer_CopyToMemory(PJRT_Buffer_CopyToMemory_Args) since 32;
    93 PJRT_Client_CreateViewOfDeviceBuffer(PJRT_Client_CreateViewOfDeviceBuffer_Args) since 33;
    94 PJRT_Executable_Fingerprint(PJRT_Executable_Fingerprint_Args) since 35;
    95 PJRT_Client_TopologyDescription(PJRT_Client_TopologyDescription_Args) since 36;
    96 PJRT_Executable_GetCompiledMemoryStats(PJRT_Executable_GetCompiledMemoryStats_Args) since 40;
    97 PJRT_Memory_Kind_Id(PJRT_Memory_Kind_Id_Args) since 48;
    98 PJRT_ExecuteContext_Create(PJRT_ExecuteContext_Create_Args) since 52;
    99 PJRT_ExecuteContext_Destroy(PJRT_ExecuteContext_Destroy_Args) since 52;
    100 PJRT_Buffer_CopyRawToHost(PJRT_Buffer_CopyRawToHost_Args) since 57;
    101 PJRT_AsyncHostToDeviceTransferManager_Destroy(PJRT_AsyncHostToDeviceTransferManager_Destroy_Args) since 60;
    102 PJRT_AsyncHostToDeviceTransferManager_TransferData(PJRT_AsyncHostToDeviceTransferManager_TransferData_Args) since 60;
    103 PJRT_Client_CreateBuffersForAsyncHostToDevice(PJRT_Client_CreateBuffersForAsyncHostToDevice_Args) since 60;
    104 PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer(PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer_Args) since 62;
    105 PJRT_AsyncHostToDeviceTransferManager_Device(PJRT_AsyncHostToDeviceTransferManager_Device_Args) since 62;
    106 PJRT_AsyncHostToDeviceTransferManager_BufferCount(PJRT_AsyncHostToDeviceTransferManager_BufferCount_Args) since 62;
    107 PJRT_AsyncHostToDeviceTransferManager_BufferSize(PJRT_AsyncHostToDeviceTransferManager_BufferSize_Args) since 62;
    108 PJRT_AsyncHostToDeviceTransferManager_SetBufferError(PJRT_AsyncHostToDeviceTransferManager_SetBufferError_Args) since 62;
    109 PJRT_AsyncHostToDeviceTransferManager_AddMetadata(PJRT_AsyncHostToDeviceTransferManager_AddMetadata_Args) since 62;
    110 PJRT_Client_DmaMap(PJRT_Client_DmaMap_Args) since 67;
    111 PJRT_Client_DmaUnmap(PJRT_Client_DmaUnmap_Args) since 67;
    112 PJRT_Client_CreateUninitializedBuffer(PJRT_Client_CreateUninitializedBuffer_Args) since 69;
    113 PJRT_Client_UpdateGlobalProcessInfo(PJRT_Client_UpdateGlobalProcessInfo_Args) since 73;
    114 PJRT_TopologyDescription_Deserialize(PJRT_TopologyDescription_Deserialize_Args) since 75;
    115 PJRT_Client_CreateAliasBuffer(PJRT_Client_CreateAliasBuffer_Args) since 77;
    116 PJRT_Client_FulfillAliasBuffer(PJRT_Client_FulfillAliasBuffer_Args) since 77;
    117 PJRT_LoadedExecutable_GetDeviceAssignment(PJRT_LoadedExecutable_GetDeviceAssignment_Args) since 79;
    118 PJRT_Client_CreateErrorBuffer(PJRT_Client_CreateErrorBuffer_Args) since 82;
    119 PJRT_AsyncHostToDeviceTransferManager_TransferLiteral(PJRT_AsyncHostToDeviceTransferManager_TransferLiteral_Args) since 83;
    120 PJRT_Buffer_CopyRawToHostFuture(PJRT_Buffer_CopyRawToHostFuture_Args) since 84;
    121 PJRT_Device_PoisonExecution(PJRT_Device_PoisonExecution_Args) since 85;
    122 PJRT_Device_CreateAsyncTrackingEvent(PJRT_Device_CreateAsyncTrackingEvent_Args) since 86;
    123 PJRT_AsyncTrackingEvent_Destroy(PJRT_AsyncTrackingEvent_Destroy_Args) since 86;
    124 PJRT_Executable_GetCompileOptions(PJRT_Executable_GetCompileOptions_Args) since 87;
    125 PJRT_Buffer_DonateWithControlDependency(PJRT_Buffer_DonateWithControlDependency_Args) since 88;
    126 PJRT_Event_Create(PJRT_Event_Create_Args) since 89;
    127 PJRT_Event_Set(PJRT_Event_Set_Args) since 89;
    128 PJRT_Device_GetAttributes(PJRT_Device_GetAttributes_Args) since 92;
    129 PJRT_Client_Load(PJRT_Client_Load_Args) since 95;
    130 PJRT_LoadedExecutable_AddressableDeviceLogicalIds(PJRT_LoadedExecutable_AddressableDeviceLogicalIds_Args) since 96;
    131 PJRT_Buffer_Bitcast(PJRT_Buffer_Bitcast_Args) since 98;
    132 PJRT_Error_ForEachPayload(PJRT_Error_ForEachPayload_Args) since 99;
    133 PJRT_TopologyDescription_Fingerprint(PJRT_TopologyDescription_Fingerprint_Args) since 101;
    134 PJRT_Executable_ParameterMemoryKinds(PJRT_Executable_ParameterMemoryKinds_Args) since 102;
    135 PJRT_Device_ClearMemoryStats(PJRT_Device_ClearMemoryStats_Args) since 106;
    136 PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace(PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace_Args) since 109;
    137 PJRT_TopologyDescription_GetMemorySpaceKindIds(PJRT_TopologyDescription_GetMemorySpaceKindIds_Args) since 110;
}

/// Number of slots in the table this crate was written against (0.115).
pub const SLOT_COUNT: usize = 138;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_has_138_slots_in_order() {
        assert_eq!(SLOTS.len(), SLOT_COUNT);
        assert_eq!(std::mem::size_of::<PJRT_Api>(), FIRST_SLOT_OFFSET + 8 * SLOT_COUNT);
        for (i, slot) in SLOTS.iter().enumerate() {
            assert_eq!(slot.index, i);
        }
        assert_eq!(std::mem::offset_of!(PJRT_Api, PJRT_Client_Create), 120);
        assert_eq!(std::mem::offset_of!(PJRT_Api, PJRT_Buffer_CopyRawToHost), 840);
        assert_eq!(std::mem::offset_of!(PJRT_Api, PJRT_Device_ClearMemoryStats), 1120);
        assert_eq!(std::mem::offset_of!(PJRT_Api, PJRT_TopologyDescription_GetMemorySpaceKindIds), 1136);
        assert_eq!(std::mem::offset_of!(PJRT_Api, pjrt_api_version) + 16, 32);
    }

    #[test]
    fn plugin_struct_sizes() {
        assert_eq!(PJRT_Plugin_Initialize_Args::STRUCT_SIZE, 16);
        assert_eq!(PJRT_Plugin_Attributes_Args::STRUCT_SIZE, 32);
    }

    #[test]
    fn minors_never_decrease_after_the_base_block() {
        for pair in SLOTS[90..].windows(2) {
            assert!(pair[0].since_minor <= pair[1].since_minor, "{} then {}", pair[0].name, pair[1].name);
        }
    }
}
