//! The TpuTopology extension (type 16; extension version 1): what a TPU topology says about its
//! processes, chips, cores and logical devices, and subslices of it. Only the TPU plugin
//! (`libtpu`) has it.
//!
//! Declared from the layout of XLA's `pjrt_c_api_tpu_topology_extension.h` as read in the public
//! repository (two revisions), and checked against `libtpu` 0.0.52 (API 0.117), whose node is 280
//! bytes. The 27 members declared here (offsets 24 to 232, 240 bytes) are the same, in the same
//! order, in both revisions read. What follows them is not: one revision has three members after
//! `process_bounds` (slice configs and a platform config), the other four (a routing strategy
//! before them), and `libtpu` 0.0.52 has five. Those trailing members are not declared, so never
//! read.
//!
//! None of the args structs has an `extension_start`: they are declared as the header lays them
//! out. C `bool` outputs are declared as `u8` and read as `!= 0`, so a plugin byte other than 0
//! or 1 cannot make an invalid Rust `bool`.

#![allow(non_camel_case_types, non_snake_case, missing_docs)]

use super::ExtFn;
use crate::topology::*;

pjrt_struct!(
    /// `subslice_topology` is the caller's, to destroy with `PJRT_TopologyDescription_Destroy`.
    PJRT_TpuTopology_Subslice_Args {
        struct_size: usize, topology: *const PJRT_TopologyDescription, chips_per_host_bounds: *const i32,
        chips_per_host_bounds_num_dims: usize, host_bounds: *const i32, host_bounds_num_dims: usize,
        subslice_topology: *mut PJRT_TopologyDescription,
    }
);
pjrt_struct!(PJRT_TpuTopology_IsSubsliceTopology_Args {
    struct_size: usize, topology: *const PJRT_TopologyDescription, is_subslice_topology: u8,
});
pjrt_struct!(PJRT_TpuTopology_SubsliceDeviceIdFromFullDeviceId_Args {
    struct_size: usize, client_topology: *const PJRT_TopologyDescription,
    subslice_topology: *const PJRT_TopologyDescription, subslice_origin: *const i32, subslice_origin_dim_num: usize,
    full_device_id: i32, subslice_device_id: i32,
});
pjrt_struct!(
    /// `new_topology` is the caller's, to destroy with `PJRT_TopologyDescription_Destroy`.
    PJRT_TpuTopology_ReplaceHostBounds_Args {
        struct_size: usize, topology: *const PJRT_TopologyDescription, host_bounds: *const i32,
        host_bounds_dim_num: usize, new_topology: *mut PJRT_TopologyDescription,
    }
);
pjrt_struct!(PJRT_TpuTopology_IsEnhancedBarrierEnabled_Args {
    struct_size: usize, topology: *const PJRT_TopologyDescription, is_enhanced_barrier_enabled: u8,
});
pjrt_struct!(PJRT_TpuTopology_HasLimitedIciConnectivity_Args {
    struct_size: usize, topology: *const PJRT_TopologyDescription, has_limited_ici_connectivity: u8,
});
pjrt_struct!(PJRT_TpuTopology_IsReachableOverLimitedIci_Args {
    struct_size: usize, topology: *const PJRT_TopologyDescription, source_chip_id: i32, dest_chip_id: i32,
    is_reachable_over_limited_ici: u8,
});

/// Declares the args of the queries that answer one `int32_t` about the whole topology.
macro_rules! count_args {
    ($($name:ident => $out:ident),+ $(,)?) => {$(
        pjrt_struct!($name { struct_size: usize, topology: *const PJRT_TopologyDescription, $out: i32 });
    )+};
}
count_args!(
    PJRT_TpuTopology_ProcessCount_Args => process_count,
    PJRT_TpuTopology_ChipsPerProcess_Args => chips_per_process,
    PJRT_TpuTopology_CoreCountPerChip_Args => core_count_of_default_type_per_chip,
    PJRT_TpuTopology_ChipCount_Args => chip_count,
    PJRT_TpuTopology_CoreCount_Args => core_count_of_default_type,
    PJRT_TpuTopology_LogiDeviceCount_Args => logical_device_count_of_default_type,
    PJRT_TpuTopology_LogiDeviceCountPerProcess_Args => logical_device_count_of_default_type_per_process,
    PJRT_TpuTopology_LogiDeviceCountPerChip_Args => logical_device_count_of_default_type_per_chip,
    PJRT_TpuTopology_CoreCountPerProcess_Args => core_count_of_default_type_per_process,
);

pjrt_struct!(
    /// `process_ids` is the caller's array of `max_process_ids` elements.
    PJRT_TpuTopology_ProcessIds_Args {
        struct_size: usize, topology: *const PJRT_TopologyDescription, max_process_ids: i32,
        process_ids: *mut i32, num_process_ids: usize,
    }
);
pjrt_struct!(
    /// `logical_device_of_default_type_ids` is the caller's array of `max_logical_device_ids`
    /// elements.
    PJRT_TpuTopology_LogiDeviceIdsOnProcess_Args {
        struct_size: usize, topology: *const PJRT_TopologyDescription, process_id: i32,
        max_logical_device_ids: i32, logical_device_of_default_type_ids: *mut i32, num_logical_device_ids: usize,
    }
);
pjrt_struct!(PJRT_TpuTopology_ProcIdAndIdxOnProcForChip_Args {
    struct_size: usize, topology: *const PJRT_TopologyDescription, chip_id: i32, process_id: i32,
    index_on_process: i32,
});
pjrt_struct!(PJRT_TpuTopology_ProcIdAndIdxOnProcForLogiDevice_Args {
    struct_size: usize, topology: *const PJRT_TopologyDescription, device_id: i32, process_id: i32,
    index_on_process: i32,
});
pjrt_struct!(
    /// `coords` is the caller's array of `coords_max_dims` elements.
    PJRT_TpuTopology_ProcessCoordFromId_Args {
        struct_size: usize, topology: *const PJRT_TopologyDescription, process_id: i32, coords_max_dims: usize,
        coords: *mut i32, coords_num_dims: usize,
    }
);
pjrt_struct!(PJRT_TpuTopology_ChipIdFromCoord_Args {
    struct_size: usize, topology: *const PJRT_TopologyDescription, coords: *const i32, coords_num_dims: usize,
    chip_id: i32,
});
pjrt_struct!(PJRT_TpuTopology_LogiDeviceIdFromChipCoordAndIdx_Args {
    struct_size: usize, topology: *const PJRT_TopologyDescription, chip_coords: *const i32,
    chip_coords_num_dims: usize, logical_device_index_on_chip: i32, logical_device_of_default_type_id: i32,
});
pjrt_struct!(
    /// `chip_coords` is the caller's array of `chip_coords_max_dims` elements.
    PJRT_TpuTopology_ChipCoordAndIdxForLogiDevice_Args {
        struct_size: usize, topology: *const PJRT_TopologyDescription, device_id: i32, chip_coords_max_dims: usize,
        chip_coords: *mut i32, chip_coords_num_dims: usize, device_index_on_chip: i32,
    }
);
pjrt_struct!(
    /// `chip_per_process_bounds` is the caller's array of `chip_per_process_bounds_max_dims`
    /// elements.
    PJRT_TpuTopology_ChipsPerProcessBounds_Args {
        struct_size: usize, topology: *const PJRT_TopologyDescription, chip_per_process_bounds_max_dims: usize,
        chip_per_process_bounds: *mut i32, chip_per_process_bounds_num_dims: usize,
    }
);
pjrt_struct!(
    /// `chip_bounds` is the caller's array of `chip_bounds_max_dims` elements.
    PJRT_TpuTopology_ChipBounds_Args {
        struct_size: usize, topology: *const PJRT_TopologyDescription, chip_bounds_max_dims: usize,
        chip_bounds: *mut i32, chip_bounds_num_dims: usize,
    }
);
pjrt_struct!(
    /// `process_bounds` is the caller's array of `process_bounds_max_dims` elements.
    PJRT_TpuTopology_ProcessBounds_Args {
        struct_size: usize, topology: *const PJRT_TopologyDescription, process_bounds_max_dims: usize,
        process_bounds: *mut i32, process_bounds_num_dims: usize,
    }
);

ext_struct!(
    /// `PJRT_TpuTopology_Extension`: a TPU topology's processes, chips, cores and logical devices
    /// (of the default core type), and subslices of it.
    ///
    /// Since-minors: the PJRT CHANGELOG names no version for this extension or its members; 117
    /// is an upper bound, the API version of the first plugin the layout was checked against
    /// (`libtpu` 0.0.52). The members after `process_bounds` are not declared (see the module
    /// docs).
    PJRT_TpuTopology_Extension = TpuTopology {
        subslice: ExtFn<PJRT_TpuTopology_Subslice_Args> = since 117,
        is_subslice_topology: ExtFn<PJRT_TpuTopology_IsSubsliceTopology_Args> = since 117,
        subslice_device_id_from_full_device_id: ExtFn<PJRT_TpuTopology_SubsliceDeviceIdFromFullDeviceId_Args> = since 117,
        replace_host_bounds: ExtFn<PJRT_TpuTopology_ReplaceHostBounds_Args> = since 117,
        is_enhanced_barrier_enabled: ExtFn<PJRT_TpuTopology_IsEnhancedBarrierEnabled_Args> = since 117,
        has_limited_ici_connectivity: ExtFn<PJRT_TpuTopology_HasLimitedIciConnectivity_Args> = since 117,
        is_reachable_over_limited_ici: ExtFn<PJRT_TpuTopology_IsReachableOverLimitedIci_Args> = since 117,
        process_count: ExtFn<PJRT_TpuTopology_ProcessCount_Args> = since 117,
        chips_per_process: ExtFn<PJRT_TpuTopology_ChipsPerProcess_Args> = since 117,
        core_count_per_chip: ExtFn<PJRT_TpuTopology_CoreCountPerChip_Args> = since 117,
        chip_count: ExtFn<PJRT_TpuTopology_ChipCount_Args> = since 117,
        core_count: ExtFn<PJRT_TpuTopology_CoreCount_Args> = since 117,
        logical_device_count_per_process: ExtFn<PJRT_TpuTopology_LogiDeviceCountPerProcess_Args> = since 117,
        logical_device_count: ExtFn<PJRT_TpuTopology_LogiDeviceCount_Args> = since 117,
        logical_device_count_per_chip: ExtFn<PJRT_TpuTopology_LogiDeviceCountPerChip_Args> = since 117,
        core_count_per_process: ExtFn<PJRT_TpuTopology_CoreCountPerProcess_Args> = since 117,
        process_ids: ExtFn<PJRT_TpuTopology_ProcessIds_Args> = since 117,
        logical_device_ids_on_process: ExtFn<PJRT_TpuTopology_LogiDeviceIdsOnProcess_Args> = since 117,
        proc_id_and_idx_on_proc_for_chip: ExtFn<PJRT_TpuTopology_ProcIdAndIdxOnProcForChip_Args> = since 117,
        proc_id_and_idx_on_proc_for_logi_device: ExtFn<PJRT_TpuTopology_ProcIdAndIdxOnProcForLogiDevice_Args> = since 117,
        process_coord_from_id: ExtFn<PJRT_TpuTopology_ProcessCoordFromId_Args> = since 117,
        chip_id_from_coord: ExtFn<PJRT_TpuTopology_ChipIdFromCoord_Args> = since 117,
        logical_device_id_from_chip_coord_and_idx: ExtFn<PJRT_TpuTopology_LogiDeviceIdFromChipCoordAndIdx_Args> = since 117,
        chip_coord_and_idx_for_logi_device: ExtFn<PJRT_TpuTopology_ChipCoordAndIdxForLogiDevice_Args> = since 117,
        chips_per_process_bounds: ExtFn<PJRT_TpuTopology_ChipsPerProcessBounds_Args> = since 117,
        chip_bounds: ExtFn<PJRT_TpuTopology_ChipBounds_Args> = since 117,
        process_bounds: ExtFn<PJRT_TpuTopology_ProcessBounds_Args> = since 117,
    }
);
