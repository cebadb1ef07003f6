//! The table: this copy's `PJRT_Api`, built once as its scenario says.

use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::OnceLock;

use pjrt_client_sys::{self as sys, PJRT_Error, PJRT_Error_Code};

use crate::buffers::{
    buffer_bitcast, buffer_copy_raw_to_host, buffer_copy_raw_to_host_future, buffer_copy_to_device,
    buffer_copy_to_memory, buffer_decrease_references, buffer_delete, buffer_destroy, buffer_device,
    buffer_device_pointer, buffer_dimensions, buffer_donate_with_control_dependency, buffer_dynamic_dimension_indices,
    buffer_element_type, buffer_get_memory_layout, buffer_increase_references, buffer_is_deleted, buffer_is_on_cpu,
    buffer_memory, buffer_on_device_size, buffer_ready_event, buffer_to_host, buffer_unpadded_dimensions,
    buffer_unsafe_pointer, client_buffer_from_host_buffer, client_create_alias_buffer, client_create_error_buffer,
    client_create_uninitialized_buffer, client_create_view, client_fulfill_alias_buffer,
};
use crate::calls::guarded;
use crate::clients::{
    client_addressable_devices, client_addressable_memories, client_create, client_default_device_assignment,
    client_destroy, client_devices, client_dma_map, client_dma_unmap, client_lookup_addressable_device,
    client_lookup_device, client_platform_name, client_platform_version, client_process_index,
    client_update_global_process_info,
};
use crate::compile::{
    client_compile, client_load, executable_deserialize_and_load, executable_serialize, topology_compile,
};
use crate::counters::{bump, COUNTERS};
use crate::custom_partitioner::custom_partitioner_chain;
use crate::devices::{
    async_tracking_event_destroy, description_attributes, description_debug_string, description_id, description_kind,
    description_process_index, description_to_string, device_addressable_memories, device_clear_memory_stats,
    device_create_async_tracking_event, device_default_memory, device_get_attributes, device_get_description,
    device_is_addressable, device_local_hardware_id, device_memory_stats, device_poison_execution,
};
use crate::error_slots::{error_destroy, error_for_each_payload, error_get_code, error_message};
use crate::errors::new_error;
use crate::events::{event_await, event_create, event_destroy, event_error, event_is_ready, event_on_ready, event_set};
use crate::executables::{
    executable_code_size, executable_compiled_memory_stats, executable_cost_analysis, executable_destroy,
    executable_fingerprint, executable_get_compile_options, executable_name, executable_num_outputs,
    executable_num_partitions, executable_num_replicas, executable_optimized_program, executable_output_dimensions,
    executable_output_memory_kinds, executable_output_types, executable_parameter_memory_kinds,
    loaded_addressable_devices, loaded_delete, loaded_destroy, loaded_fingerprint, loaded_get_device_assignment,
    loaded_get_executable, loaded_is_deleted, loaded_logical_ids,
};
use crate::execute::{execute_context_create, execute_context_destroy, loaded_execute};
use crate::host_receives::{
    stream_add_chunk, stream_current_bytes, stream_destroy, stream_granule_size, stream_total_bytes,
};
use crate::memories::{
    memory_addressable_by_devices, memory_debug_string, memory_id, memory_kind, memory_kind_id, memory_to_string,
};
use crate::old_extensions::old_extensions;
use crate::plugin::{plugin_attributes, plugin_initialize};
use crate::scenarios::Config;
use crate::topology::{
    client_topology, topology_attributes, topology_canonical_shape, topology_create, topology_deserialize,
    topology_destroy, topology_device_descriptions, topology_fingerprint, topology_kind_ids, topology_platform_name,
    topology_platform_version, topology_serialize,
};
use crate::transfer_manager::{
    client_create_transfer_manager, transfer_manager_add_metadata, transfer_manager_buffer_count,
    transfer_manager_buffer_size, transfer_manager_destroy, transfer_manager_device, transfer_manager_retrieve_buffer,
    transfer_manager_set_buffer_error, transfer_manager_transfer_data, transfer_manager_transfer_literal,
};

/// What the 0.106 CPU plugin has after its last slot (observed; see the API notes, §1.1).
const GARBAGE: usize = 0x39f0_0000_0101;
/// Garbage words placed after every table.
const GARBAGE_WORDS: usize = 16;

/// Every slot the fake does not implement points here: like the real plugins, no slot inside
/// the table is NULL unless a scenario says so, and a missing feature fails at call time.
unsafe extern "C" fn unimplemented_slot(_args: *mut c_void) -> *mut PJRT_Error {
    guarded("unimplemented_slot", || {
        bump(&COUNTERS.unimplemented_calls);
        new_error(PJRT_Error_Code::UNIMPLEMENTED, "fake: not implemented")
    })
}

/// Builds this copy's table once and leaks it (a plugin's table lives as long as the process).
///
/// The table is a word array longer than `PJRT_Api`: the typed struct is filled first (so every
/// function is checked against its slot's type), copied in, and then everything after
/// `struct_size` is overwritten with non-NULL garbage, as found after the 0.106 plugin's table.
pub(crate) fn table(config: &Config) -> *const sys::PJRT_Api {
    static TABLE: OnceLock<usize> = OnceLock::new();
    let address = *TABLE.get_or_init(|| {
        // SAFETY: every field of `PJRT_Api` is an integer, a raw pointer or an `Option` of a
        // function pointer, for all of which all-zero bytes are a valid value (0, NULL, None).
        let mut api: sys::PJRT_Api = unsafe { std::mem::zeroed() };
        api.struct_size = config.struct_size;
        if config.hostile.old_extensions {
            api.extension_start = old_extensions();
        } else if config.custom_partitioner {
            api.extension_start = custom_partitioner_chain();
        } else if config.profiler {
            api.extension_start = crate::profiler::profiler_chain();
        }
        api.pjrt_api_version = sys::PJRT_Api_Version {
            struct_size: 24,
            extension_start: null_mut(),
            major_version: config.major,
            minor_version: config.minor,
        };
        api.PJRT_Error_Destroy = Some(error_destroy);
        api.PJRT_Error_Message = Some(error_message);
        api.PJRT_Error_GetCode = Some(error_get_code);
        api.PJRT_Error_ForEachPayload = Some(error_for_each_payload);
        api.PJRT_Plugin_Initialize = Some(plugin_initialize);
        api.PJRT_Plugin_Attributes = Some(plugin_attributes);
        api.PJRT_Event_Destroy = Some(event_destroy);
        api.PJRT_Event_IsReady = Some(event_is_ready);
        api.PJRT_Event_Error = Some(event_error);
        api.PJRT_Event_Await = Some(event_await);
        api.PJRT_Event_OnReady = Some(event_on_ready);
        api.PJRT_Event_Create = Some(event_create);
        api.PJRT_Event_Set = Some(event_set);
        api.PJRT_Client_Create = Some(client_create);
        api.PJRT_Client_DmaMap = Some(client_dma_map);
        api.PJRT_Client_CreateBuffersForAsyncHostToDevice = Some(client_create_transfer_manager);
        api.PJRT_AsyncHostToDeviceTransferManager_Destroy = Some(transfer_manager_destroy);
        api.PJRT_AsyncHostToDeviceTransferManager_TransferData = Some(transfer_manager_transfer_data);
        api.PJRT_AsyncHostToDeviceTransferManager_TransferLiteral = Some(transfer_manager_transfer_literal);
        api.PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer = Some(transfer_manager_retrieve_buffer);
        api.PJRT_AsyncHostToDeviceTransferManager_Device = Some(transfer_manager_device);
        api.PJRT_AsyncHostToDeviceTransferManager_BufferCount = Some(transfer_manager_buffer_count);
        api.PJRT_AsyncHostToDeviceTransferManager_BufferSize = Some(transfer_manager_buffer_size);
        api.PJRT_AsyncHostToDeviceTransferManager_SetBufferError = Some(transfer_manager_set_buffer_error);
        api.PJRT_AsyncHostToDeviceTransferManager_AddMetadata = Some(transfer_manager_add_metadata);
        api.PJRT_Client_CreateUninitializedBuffer = Some(client_create_uninitialized_buffer);
        api.PJRT_Client_CreateErrorBuffer = Some(client_create_error_buffer);
        api.PJRT_Buffer_IsOnCpu = Some(buffer_is_on_cpu);
        api.PJRT_Buffer_GetMemoryLayout = Some(buffer_get_memory_layout);
        api.PJRT_Buffer_UnpaddedDimensions = Some(buffer_unpadded_dimensions);
        api.PJRT_Buffer_DynamicDimensionIndices = Some(buffer_dynamic_dimension_indices);
        api.PJRT_Buffer_UnsafePointer = Some(buffer_unsafe_pointer);
        api.PJRT_Buffer_OpaqueDeviceMemoryDataPointer = Some(buffer_device_pointer);
        api.PJRT_Buffer_IncreaseExternalReferenceCount = Some(buffer_increase_references);
        api.PJRT_Buffer_DecreaseExternalReferenceCount = Some(buffer_decrease_references);
        api.PJRT_Buffer_CopyRawToHost = Some(buffer_copy_raw_to_host);
        api.PJRT_Buffer_Bitcast = Some(buffer_bitcast);
        api.PJRT_Client_TopologyDescription = Some(client_topology);
        api.PJRT_TopologyDescription_PlatformName = Some(topology_platform_name);
        api.PJRT_TopologyDescription_PlatformVersion = Some(topology_platform_version);
        api.PJRT_TopologyDescription_GetDeviceDescriptions = Some(topology_device_descriptions);
        api.PJRT_TopologyDescription_Attributes = Some(topology_attributes);
        api.PJRT_TopologyDescription_Fingerprint = Some(topology_fingerprint);
        api.PJRT_TopologyDescription_Serialize = Some(topology_serialize);
        api.PJRT_TopologyDescription_GetMemorySpaceKindIds = Some(topology_kind_ids);
        api.PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace = Some(topology_canonical_shape);
        api.PJRT_Executable_SizeOfGeneratedCodeInBytes = Some(executable_code_size);
        api.PJRT_Executable_GetCostAnalysis = Some(executable_cost_analysis);
        api.PJRT_Executable_OutputMemoryKinds = Some(executable_output_memory_kinds);
        api.PJRT_Executable_ParameterMemoryKinds = Some(executable_parameter_memory_kinds);
        api.PJRT_Executable_GetCompiledMemoryStats = Some(executable_compiled_memory_stats);
        api.PJRT_Executable_GetCompileOptions = Some(executable_get_compile_options);
        api.PJRT_LoadedExecutable_GetDeviceAssignment = Some(loaded_get_device_assignment);
        api.PJRT_LoadedExecutable_AddressableDeviceLogicalIds = Some(loaded_logical_ids);
        api.PJRT_LoadedExecutable_Fingerprint = Some(loaded_fingerprint);
        api.PJRT_ExecuteContext_Create = Some(execute_context_create);
        api.PJRT_ExecuteContext_Destroy = Some(execute_context_destroy);
        api.PJRT_Device_MemoryStats = Some(device_memory_stats);
        api.PJRT_Device_ClearMemoryStats = Some(device_clear_memory_stats);
        api.PJRT_Device_GetAttributes = Some(device_get_attributes);
        api.PJRT_Device_PoisonExecution = Some(device_poison_execution);
        api.PJRT_Device_CreateAsyncTrackingEvent = Some(device_create_async_tracking_event);
        api.PJRT_AsyncTrackingEvent_Destroy = Some(async_tracking_event_destroy);
        api.PJRT_Client_DmaUnmap = Some(client_dma_unmap);
        api.PJRT_Client_UpdateGlobalProcessInfo = Some(client_update_global_process_info);
        api.PJRT_Client_Destroy = Some(client_destroy);
        api.PJRT_Client_PlatformName = Some(client_platform_name);
        api.PJRT_Client_ProcessIndex = Some(client_process_index);
        api.PJRT_Client_PlatformVersion = Some(client_platform_version);
        api.PJRT_Client_Devices = Some(client_devices);
        api.PJRT_Client_AddressableDevices = Some(client_addressable_devices);
        api.PJRT_Client_LookupDevice = Some(client_lookup_device);
        api.PJRT_Client_LookupAddressableDevice = Some(client_lookup_addressable_device);
        api.PJRT_Client_AddressableMemories = Some(client_addressable_memories);
        api.PJRT_Client_Compile = Some(client_compile);
        api.PJRT_Client_DefaultDeviceAssignment = Some(client_default_device_assignment);
        api.PJRT_Client_BufferFromHostBuffer = Some(client_buffer_from_host_buffer);
        api.PJRT_DeviceDescription_Id = Some(description_id);
        api.PJRT_DeviceDescription_ProcessIndex = Some(description_process_index);
        api.PJRT_DeviceDescription_Attributes = Some(description_attributes);
        api.PJRT_DeviceDescription_Kind = Some(description_kind);
        api.PJRT_DeviceDescription_DebugString = Some(description_debug_string);
        api.PJRT_DeviceDescription_ToString = Some(description_to_string);
        api.PJRT_Device_GetDescription = Some(device_get_description);
        api.PJRT_Device_IsAddressable = Some(device_is_addressable);
        api.PJRT_Device_LocalHardwareId = Some(device_local_hardware_id);
        api.PJRT_Device_AddressableMemories = Some(device_addressable_memories);
        api.PJRT_Device_DefaultMemory = Some(device_default_memory);
        api.PJRT_Memory_Id = Some(memory_id);
        api.PJRT_Memory_Kind = Some(memory_kind);
        api.PJRT_Memory_DebugString = Some(memory_debug_string);
        api.PJRT_Memory_ToString = Some(memory_to_string);
        api.PJRT_Memory_AddressableByDevices = Some(memory_addressable_by_devices);
        api.PJRT_Memory_Kind_Id = Some(memory_kind_id);
        api.PJRT_Executable_Destroy = Some(executable_destroy);
        api.PJRT_Executable_Name = Some(executable_name);
        api.PJRT_Executable_NumReplicas = Some(executable_num_replicas);
        api.PJRT_Executable_NumPartitions = Some(executable_num_partitions);
        api.PJRT_Executable_NumOutputs = Some(executable_num_outputs);
        api.PJRT_Executable_OptimizedProgram = Some(executable_optimized_program);
        api.PJRT_Executable_OutputElementTypes = Some(executable_output_types);
        api.PJRT_Executable_OutputDimensions = Some(executable_output_dimensions);
        api.PJRT_Executable_Fingerprint = Some(executable_fingerprint);
        api.PJRT_LoadedExecutable_Destroy = Some(loaded_destroy);
        api.PJRT_LoadedExecutable_GetExecutable = Some(loaded_get_executable);
        api.PJRT_LoadedExecutable_AddressableDevices = Some(loaded_addressable_devices);
        api.PJRT_LoadedExecutable_Delete = Some(loaded_delete);
        api.PJRT_LoadedExecutable_IsDeleted = Some(loaded_is_deleted);
        api.PJRT_LoadedExecutable_Execute = Some(loaded_execute);
        api.PJRT_Executable_Serialize = Some(executable_serialize);
        api.PJRT_CopyToDeviceStream_Destroy = Some(stream_destroy);
        api.PJRT_CopyToDeviceStream_AddChunk = Some(stream_add_chunk);
        api.PJRT_CopyToDeviceStream_TotalBytes = Some(stream_total_bytes);
        api.PJRT_CopyToDeviceStream_GranuleSize = Some(stream_granule_size);
        api.PJRT_CopyToDeviceStream_CurrentBytes = Some(stream_current_bytes);
        api.PJRT_Client_CreateAliasBuffer = Some(client_create_alias_buffer);
        api.PJRT_Client_FulfillAliasBuffer = Some(client_fulfill_alias_buffer);
        api.PJRT_Buffer_CopyRawToHostFuture = Some(buffer_copy_raw_to_host_future);
        api.PJRT_Client_CreateViewOfDeviceBuffer = Some(client_create_view);
        api.PJRT_Buffer_DonateWithControlDependency = Some(buffer_donate_with_control_dependency);
        api.PJRT_TopologyDescription_Create = Some(topology_create);
        api.PJRT_TopologyDescription_Deserialize = Some(topology_deserialize);
        api.PJRT_TopologyDescription_Destroy = Some(topology_destroy);
        api.PJRT_Compile = Some(topology_compile);
        api.PJRT_Client_Load = Some(client_load);
        api.PJRT_Executable_DeserializeAndLoad = Some(executable_deserialize_and_load);
        api.PJRT_Buffer_Destroy = Some(buffer_destroy);
        api.PJRT_Buffer_ElementType = Some(buffer_element_type);
        api.PJRT_Buffer_Dimensions = Some(buffer_dimensions);
        api.PJRT_Buffer_OnDeviceSizeInBytes = Some(buffer_on_device_size);
        api.PJRT_Buffer_Device = Some(buffer_device);
        api.PJRT_Buffer_Memory = Some(buffer_memory);
        api.PJRT_Buffer_Delete = Some(buffer_delete);
        api.PJRT_Buffer_IsDeleted = Some(buffer_is_deleted);
        api.PJRT_Buffer_CopyToDevice = Some(buffer_copy_to_device);
        api.PJRT_Buffer_CopyToMemory = Some(buffer_copy_to_memory);
        api.PJRT_Buffer_ToHostBuffer = Some(buffer_to_host);
        api.PJRT_Buffer_ReadyEvent = Some(buffer_ready_event);

        const WORD: usize = std::mem::size_of::<usize>();
        let api_words = std::mem::size_of::<sys::PJRT_Api>() / WORD;
        let mut words = vec![0usize; api_words + GARBAGE_WORDS].into_boxed_slice();
        // SAFETY: `words` has room for the whole `PJRT_Api` (which has no padding: a header of
        // words and two i32s, then pointers), both are 8-aligned, and they do not overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(
                std::ptr::addr_of!(api).cast::<u8>(),
                words.as_mut_ptr().cast::<u8>(),
                std::mem::size_of::<sys::PJRT_Api>(),
            );
        }
        let first_slot = sys::FIRST_SLOT_OFFSET / WORD;
        for word in &mut words[first_slot..api_words] {
            if *word == 0 {
                *word = unimplemented_slot as *const () as usize;
            }
        }
        if config.null_client_create {
            words[std::mem::offset_of!(sys::PJRT_Api, PJRT_Client_Create) / WORD] = 0;
        }
        // Whatever lies past the plugin's own struct_size is not a slot of it.
        let end = config.struct_size.div_ceil(WORD).max(first_slot);
        for word in &mut words[end..] {
            *word = GARBAGE;
        }
        Box::leak(words).as_ptr() as usize
    });
    address as *const sys::PJRT_Api
}
