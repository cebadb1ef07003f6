//! The TpuTopology extension (`PJRT_TpuTopology_Extension`): a TPU topology's processes, chips,
//! cores and logical devices, and subslices of it, as XLA's `PjRtCApiTopologyDescription` answers
//! them. Only the TPU plugin (`libtpu`) has it; it answers for topologies made without a TPU
//! ([`Topology::create`] with `TPU_SKIP_MDS_QUERY=1`).
//!
//! "Logical device" and "core" mean those of the topology's default core type, as in XLA's names
//! (`...OfDefaultType`). Every call checks what the plugin returns before it is used: a count,
//! an id or a coordinate below zero, more ids or dimensions than the caller's array holds, or a
//! NULL topology, is an [`Error::InvalidArgument`]-style error naming the member, never a value.
//!
//! [`Topology`] has one method per query, which finds the extension on the topology's plugin
//! (see [`Topology::process_count`] and its siblings; `topology.rs`).

mod topology;

use std::ptr::NonNull;

use crate::error::{Error, Result};
use crate::extensions::{ext_fn, TpuTopologyExtension};
use crate::sys::{self, Args};
use crate::topology::Topology;

type T = sys::PJRT_TpuTopology_Extension;

/// The most dimensions a coordinate or bounds array may have: the caller's arrays hold this many
/// (TPU coordinates have 3; the plugin says so with an error when it has more).
pub const MAX_TPU_DIMS: usize = 8;

/// A count, id or index the plugin returned, checked to be non-negative.
fn non_negative(value: i32, member: &'static str, what: &str) -> Result<i32> {
    if value < 0 {
        Err(Error::invalid(format!("{member} returned {value} for {what}, which cannot be negative")))
    } else {
        Ok(value)
    }
}

/// A count the plugin returned, as a `usize`.
fn count(value: i32, member: &'static str, what: &str) -> Result<usize> {
    Ok(non_negative(value, member, what)? as usize)
}

/// The first `len` entries of `buffer` (the caller's array of `buffer.len()` entries that the
/// plugin filled), each checked to be non-negative; an error when `len` exceeds the array.
fn filled(buffer: &[i32], len: usize, member: &'static str, what: &str) -> Result<Vec<i32>> {
    if len > buffer.len() {
        return Err(Error::invalid(format!(
            "{member} returned {len} {what}, more than the {} the caller's array holds",
            buffer.len()
        )));
    }
    buffer[..len].iter().map(|&v| non_negative(v, member, what)).collect()
}

/// Calls a query that answers one `int32_t` about the whole topology, and checks it.
macro_rules! count_query {
    ($(#[$m:meta])* $fn:ident, $member:ident, $args:ident, $out:ident, $what:literal) => {
        $(#[$m])*
        pub fn $fn(&self, topology: &Topology) -> Result<usize> {
            self.same_plugin(topology.plugin().api())?;
            let (f, name) = ext_fn!(self, T, $member);
            let mut args = sys::$args::new();
            args.topology = topology.as_raw();
            // SAFETY: args built with `Args::new`; the topology is live (borrowed).
            self.api.check(unsafe { f(&mut args) }, name)?;
            count(args.$out, name, $what)
        }
    };
}

/// Calls a query that fills a caller's array of [`MAX_TPU_DIMS`] coordinates or bounds.
macro_rules! dims_query {
    ($(#[$m:meta])* $fn:ident, $member:ident, $args:ident, $max:ident, $ptr:ident, $num:ident, $what:literal) => {
        $(#[$m])*
        pub fn $fn(&self, topology: &Topology) -> Result<Vec<i32>> {
            self.same_plugin(topology.plugin().api())?;
            let (f, name) = ext_fn!(self, T, $member);
            let mut buffer = [0i32; MAX_TPU_DIMS];
            let mut args = sys::$args::new();
            args.topology = topology.as_raw();
            args.$max = buffer.len();
            args.$ptr = buffer.as_mut_ptr();
            // SAFETY: args built with `Args::new`; the array holds `$max` entries and outlives the
            // call; the topology is live.
            self.api.check(unsafe { f(&mut args) }, name)?;
            filled(&buffer, args.$num, name, $what)
        }
    };
}

/// Calls a query that answers one flag about the topology.
macro_rules! flag_query {
    ($(#[$m:meta])* $fn:ident, $member:ident, $args:ident, $out:ident) => {
        $(#[$m])*
        pub fn $fn(&self, topology: &Topology) -> Result<bool> {
            self.same_plugin(topology.plugin().api())?;
            let (f, name) = ext_fn!(self, T, $member);
            let mut args = sys::$args::new();
            args.topology = topology.as_raw();
            // SAFETY: args built with `Args::new`; the topology is live.
            self.api.check(unsafe { f(&mut args) }, name)?;
            Ok(args.$out != 0)
        }
    };
}

impl TpuTopologyExtension<'_> {
    count_query!(
        /// The number of processes (hosts) of the topology (XLA's `ProcessCount`).
        process_count, process_count, PJRT_TpuTopology_ProcessCount_Args, process_count, "the process count"
    );
    count_query!(
        /// The number of chips each process drives (`ChipsPerProcess`).
        chips_per_process, chips_per_process, PJRT_TpuTopology_ChipsPerProcess_Args, chips_per_process,
        "the chips per process"
    );
    count_query!(
        /// The number of cores of the default type on each chip (`CoreCountOfDefaultTypePerChip`).
        core_count_of_default_type_per_chip, core_count_per_chip, PJRT_TpuTopology_CoreCountPerChip_Args,
        core_count_of_default_type_per_chip, "the cores per chip"
    );
    count_query!(
        /// The number of chips (`ChipCount`).
        chip_count, chip_count, PJRT_TpuTopology_ChipCount_Args, chip_count, "the chip count"
    );
    count_query!(
        /// The number of cores of the default type (`CoreCountOfDefaultType`).
        core_count_of_default_type, core_count, PJRT_TpuTopology_CoreCount_Args, core_count_of_default_type,
        "the core count"
    );
    count_query!(
        /// The number of logical devices of the default type (`LogicalDeviceCountOfDefaultType`).
        logical_device_count_of_default_type, logical_device_count, PJRT_TpuTopology_LogiDeviceCount_Args,
        logical_device_count_of_default_type, "the logical device count"
    );
    count_query!(
        /// The number of logical devices of the default type on each process
        /// (`LogicalDeviceCountOfDefaultTypePerProcess`).
        logical_device_count_of_default_type_per_process, logical_device_count_per_process,
        PJRT_TpuTopology_LogiDeviceCountPerProcess_Args, logical_device_count_of_default_type_per_process,
        "the logical devices per process"
    );
    count_query!(
        /// The number of logical devices of the default type on each chip
        /// (`LogicalDeviceCountOfDefaultTypePerChip`).
        logical_device_count_of_default_type_per_chip, logical_device_count_per_chip,
        PJRT_TpuTopology_LogiDeviceCountPerChip_Args, logical_device_count_of_default_type_per_chip,
        "the logical devices per chip"
    );
    count_query!(
        /// The number of cores of the default type on each process
        /// (`CoreCountOfDefaultTypePerProcess`).
        core_count_of_default_type_per_process, core_count_per_process, PJRT_TpuTopology_CoreCountPerProcess_Args,
        core_count_of_default_type_per_process, "the cores per process"
    );

    dims_query!(
        /// The bounds of the chips one process drives, per dimension (`ChipsPerProcessBounds`).
        chips_per_process_bounds, chips_per_process_bounds, PJRT_TpuTopology_ChipsPerProcessBounds_Args,
        chip_per_process_bounds_max_dims, chip_per_process_bounds, chip_per_process_bounds_num_dims,
        "chips-per-process bounds"
    );
    dims_query!(
        /// The bounds of the chips of the topology, per dimension (`ChipBounds`).
        chip_bounds, chip_bounds, PJRT_TpuTopology_ChipBounds_Args, chip_bounds_max_dims, chip_bounds,
        chip_bounds_num_dims, "chip bounds"
    );
    dims_query!(
        /// The bounds of the processes of the topology, per dimension (`ProcessBounds`).
        process_bounds, process_bounds, PJRT_TpuTopology_ProcessBounds_Args, process_bounds_max_dims,
        process_bounds, process_bounds_num_dims, "process bounds"
    );

    flag_query!(
        /// Whether the topology is a subslice of a larger one (`is_subslice_topology`).
        is_subslice_topology, is_subslice_topology, PJRT_TpuTopology_IsSubsliceTopology_Args, is_subslice_topology
    );
    flag_query!(
        /// Whether the topology has the enhanced barrier enabled.
        is_enhanced_barrier_enabled, is_enhanced_barrier_enabled, PJRT_TpuTopology_IsEnhancedBarrierEnabled_Args,
        is_enhanced_barrier_enabled
    );
    flag_query!(
        /// Whether the topology's chips have limited ICI (inter-chip interconnect) connectivity.
        has_limited_ici_connectivity, has_limited_ici_connectivity, PJRT_TpuTopology_HasLimitedIciConnectivity_Args,
        has_limited_ici_connectivity
    );

    /// The ids of the topology's processes (`ProcessIds`). The caller's array holds
    /// [`Self::process_count`] ids.
    pub fn process_ids(&self, topology: &Topology) -> Result<Vec<i32>> {
        let capacity = self.process_count(topology)?;
        let (f, name) = ext_fn!(self, T, process_ids);
        let mut buffer = vec![0i32; capacity];
        let mut args = sys::PJRT_TpuTopology_ProcessIds_Args::new();
        args.topology = topology.as_raw();
        args.max_process_ids = i32::try_from(capacity).map_err(|_| Error::invalid("too many processes"))?;
        args.process_ids = buffer.as_mut_ptr();
        // SAFETY: args built with `Args::new`; the array holds `max_process_ids` entries and
        // outlives the call; the topology is live.
        self.api.check(unsafe { f(&mut args) }, name)?;
        filled(&buffer, args.num_process_ids, name, "process ids")
    }

    /// The ids of the logical devices (of the default type) that process `process_id` drives
    /// (`LogicalDeviceOfDefaultTypeIdsOnProcess`). The caller's array holds
    /// [`Self::logical_device_count_of_default_type_per_process`] ids.
    pub fn logical_device_of_default_type_ids_on_process(
        &self,
        topology: &Topology,
        process_id: i32,
    ) -> Result<Vec<i32>> {
        let capacity = self.logical_device_count_of_default_type_per_process(topology)?;
        let (f, name) = ext_fn!(self, T, logical_device_ids_on_process);
        let mut buffer = vec![0i32; capacity];
        let mut args = sys::PJRT_TpuTopology_LogiDeviceIdsOnProcess_Args::new();
        args.topology = topology.as_raw();
        args.process_id = process_id;
        args.max_logical_device_ids = i32::try_from(capacity).map_err(|_| Error::invalid("too many devices"))?;
        args.logical_device_of_default_type_ids = buffer.as_mut_ptr();
        // SAFETY: as in `process_ids`.
        self.api.check(unsafe { f(&mut args) }, name)?;
        filled(&buffer, args.num_logical_device_ids, name, "logical device ids")
    }

    /// The process that drives chip `chip_id`, and the chip's index on that process
    /// (`ProcessIdAndIndexOnProcessForChip`).
    pub fn process_id_and_index_on_process_for_chip(&self, topology: &Topology, chip_id: i32) -> Result<(i32, i32)> {
        self.same_plugin(topology.plugin().api())?;
        let (f, name) = ext_fn!(self, T, proc_id_and_idx_on_proc_for_chip);
        let mut args = sys::PJRT_TpuTopology_ProcIdAndIdxOnProcForChip_Args::new();
        args.topology = topology.as_raw();
        args.chip_id = chip_id;
        // SAFETY: args built with `Args::new`; the topology is live.
        self.api.check(unsafe { f(&mut args) }, name)?;
        Ok((
            non_negative(args.process_id, name, "the process id")?,
            non_negative(args.index_on_process, name, "the index")?,
        ))
    }

    /// The process that drives logical device `device_id`, and the device's index on that
    /// process (`ProcessIdAndIndexOnProcessForLogicalDeviceOfDefaultType`).
    pub fn process_id_and_index_on_process_for_logical_device_of_default_type(
        &self,
        topology: &Topology,
        device_id: i32,
    ) -> Result<(i32, i32)> {
        self.same_plugin(topology.plugin().api())?;
        let (f, name) = ext_fn!(self, T, proc_id_and_idx_on_proc_for_logi_device);
        let mut args = sys::PJRT_TpuTopology_ProcIdAndIdxOnProcForLogiDevice_Args::new();
        args.topology = topology.as_raw();
        args.device_id = device_id;
        // SAFETY: args built with `Args::new`; the topology is live.
        self.api.check(unsafe { f(&mut args) }, name)?;
        Ok((
            non_negative(args.process_id, name, "the process id")?,
            non_negative(args.index_on_process, name, "the index")?,
        ))
    }

    /// The coordinates of process `process_id` in the grid of processes (`ProcessCoordFromId`).
    pub fn process_coord_from_id(&self, topology: &Topology, process_id: i32) -> Result<Vec<i32>> {
        self.same_plugin(topology.plugin().api())?;
        let (f, name) = ext_fn!(self, T, process_coord_from_id);
        let mut buffer = [0i32; MAX_TPU_DIMS];
        let mut args = sys::PJRT_TpuTopology_ProcessCoordFromId_Args::new();
        args.topology = topology.as_raw();
        args.process_id = process_id;
        args.coords_max_dims = buffer.len();
        args.coords = buffer.as_mut_ptr();
        // SAFETY: args built with `Args::new`; the array holds `coords_max_dims` entries.
        self.api.check(unsafe { f(&mut args) }, name)?;
        filled(&buffer, args.coords_num_dims, name, "process coordinates")
    }

    /// The id of the chip at `coords` (`ChipIdFromCoord`).
    pub fn chip_id_from_coord(&self, topology: &Topology, coords: &[i32]) -> Result<i32> {
        self.same_plugin(topology.plugin().api())?;
        let (f, name) = ext_fn!(self, T, chip_id_from_coord);
        let mut args = sys::PJRT_TpuTopology_ChipIdFromCoord_Args::new();
        args.topology = topology.as_raw();
        args.coords = coords.as_ptr();
        args.coords_num_dims = coords.len();
        // SAFETY: args built with `Args::new`; `coords` outlives the call.
        self.api.check(unsafe { f(&mut args) }, name)?;
        non_negative(args.chip_id, name, "the chip id")
    }

    /// The id of the logical device (of the default type) that is core `core_index` of the chip
    /// at `chip_coords` (`LogicalDeviceOfDefaultTypeIdFromChipCoordAndCoreIndex`).
    pub fn logical_device_of_default_type_id_from_chip_coord_and_core_index(
        &self,
        topology: &Topology,
        chip_coords: &[i32],
        core_index: i32,
    ) -> Result<i32> {
        self.same_plugin(topology.plugin().api())?;
        let (f, name) = ext_fn!(self, T, logical_device_id_from_chip_coord_and_idx);
        let mut args = sys::PJRT_TpuTopology_LogiDeviceIdFromChipCoordAndIdx_Args::new();
        args.topology = topology.as_raw();
        args.chip_coords = chip_coords.as_ptr();
        args.chip_coords_num_dims = chip_coords.len();
        args.logical_device_index_on_chip = core_index;
        // SAFETY: args built with `Args::new`; `chip_coords` outlives the call.
        self.api.check(unsafe { f(&mut args) }, name)?;
        non_negative(args.logical_device_of_default_type_id, name, "the device id")
    }

    /// The coordinates of the chip that holds logical device `device_id`, and the device's core
    /// index on it (`ChipCoordAndCoreIndexForLogicalDeviceOfDefaultType`).
    pub fn chip_coord_and_core_index_for_logical_device_of_default_type(
        &self,
        topology: &Topology,
        device_id: i32,
    ) -> Result<(Vec<i32>, i32)> {
        self.same_plugin(topology.plugin().api())?;
        let (f, name) = ext_fn!(self, T, chip_coord_and_idx_for_logi_device);
        let mut buffer = [0i32; MAX_TPU_DIMS];
        let mut args = sys::PJRT_TpuTopology_ChipCoordAndIdxForLogiDevice_Args::new();
        args.topology = topology.as_raw();
        args.device_id = device_id;
        args.chip_coords_max_dims = buffer.len();
        args.chip_coords = buffer.as_mut_ptr();
        // SAFETY: args built with `Args::new`; the array holds `chip_coords_max_dims` entries.
        self.api.check(unsafe { f(&mut args) }, name)?;
        let coords = filled(&buffer, args.chip_coords_num_dims, name, "chip coordinates")?;
        Ok((coords, non_negative(args.device_index_on_chip, name, "the core index")?))
    }

    /// Whether chip `dest_chip_id` can be reached directly from `source_chip_id` on a topology
    /// with limited ICI routing.
    pub fn is_reachable_over_limited_ici(
        &self,
        topology: &Topology,
        source_chip_id: i32,
        dest_chip_id: i32,
    ) -> Result<bool> {
        self.same_plugin(topology.plugin().api())?;
        let (f, name) = ext_fn!(self, T, is_reachable_over_limited_ici);
        let mut args = sys::PJRT_TpuTopology_IsReachableOverLimitedIci_Args::new();
        args.topology = topology.as_raw();
        args.source_chip_id = source_chip_id;
        args.dest_chip_id = dest_chip_id;
        // SAFETY: args built with `Args::new`; the topology is live.
        self.api.check(unsafe { f(&mut args) }, name)?;
        Ok(args.is_reachable_over_limited_ici != 0)
    }

    /// The subslice of the topology with `chips_per_host_bounds` chips per host and
    /// `host_bounds` hosts (`Subslice`): a new topology, owned (destroyed on drop).
    pub fn subslice(
        &self,
        topology: &Topology,
        chips_per_host_bounds: &[i32],
        host_bounds: &[i32],
    ) -> Result<Topology> {
        self.same_plugin(topology.plugin().api())?;
        let (f, name) = ext_fn!(self, T, subslice);
        let mut args = sys::PJRT_TpuTopology_Subslice_Args::new();
        args.topology = topology.as_raw();
        args.chips_per_host_bounds = chips_per_host_bounds.as_ptr();
        args.chips_per_host_bounds_num_dims = chips_per_host_bounds.len();
        args.host_bounds = host_bounds.as_ptr();
        args.host_bounds_num_dims = host_bounds.len();
        // SAFETY: args built with `Args::new`; both arrays outlive the call.
        self.api.check(unsafe { f(&mut args) }, name)?;
        let raw = NonNull::new(args.subslice_topology)
            .ok_or_else(|| Error::invalid(format!("{name} returned no topology")))?;
        // SAFETY: a new topology of this plugin, the caller's to destroy (the header's contract).
        Ok(unsafe { Topology::from_owned(topology.plugin(), raw) })
    }

    /// The topology with its host bounds replaced by `host_bounds`: a new topology, owned.
    pub fn replace_host_bounds(&self, topology: &Topology, host_bounds: &[i32]) -> Result<Topology> {
        self.same_plugin(topology.plugin().api())?;
        let (f, name) = ext_fn!(self, T, replace_host_bounds);
        let mut args = sys::PJRT_TpuTopology_ReplaceHostBounds_Args::new();
        args.topology = topology.as_raw();
        args.host_bounds = host_bounds.as_ptr();
        args.host_bounds_dim_num = host_bounds.len();
        // SAFETY: args built with `Args::new`; the array outlives the call.
        self.api.check(unsafe { f(&mut args) }, name)?;
        let raw =
            NonNull::new(args.new_topology).ok_or_else(|| Error::invalid(format!("{name} returned no topology")))?;
        // SAFETY: a new topology of this plugin, the caller's to destroy.
        Ok(unsafe { Topology::from_owned(topology.plugin(), raw) })
    }

    /// The id, in `subslice`, of device `full_device_id` of the full topology `full`, for a
    /// subslice placed at `subslice_origin` (chip coordinates).
    pub fn subslice_device_id_from_full_device_id(
        &self,
        full: &Topology,
        subslice: &Topology,
        subslice_origin: &[i32],
        full_device_id: i32,
    ) -> Result<i32> {
        self.same_plugin(full.plugin().api())?;
        self.same_plugin(subslice.plugin().api())?;
        let (f, name) = ext_fn!(self, T, subslice_device_id_from_full_device_id);
        let mut args = sys::PJRT_TpuTopology_SubsliceDeviceIdFromFullDeviceId_Args::new();
        args.client_topology = full.as_raw();
        args.subslice_topology = subslice.as_raw();
        args.subslice_origin = subslice_origin.as_ptr();
        args.subslice_origin_dim_num = subslice_origin.len();
        args.full_device_id = full_device_id;
        // SAFETY: args built with `Args::new`; both topologies are live, the array outlives the call.
        self.api.check(unsafe { f(&mut args) }, name)?;
        non_negative(args.subslice_device_id, name, "the subslice device id")
    }
}
