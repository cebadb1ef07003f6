//! [`Topology`]'s TPU queries: XLA's `PjRtCApiTopologyDescription` answers them through the TPU
//! plugin's TpuTopology extension, and so does each method here
//! ([`crate::extensions::TpuTopologyExtension`], which checks every count, id and coordinate the
//! plugin returns). On a plugin without the extension (every one but `libtpu`) each method is
//! [`Error::Unsupported`](crate::Error::Unsupported).
//!
//! ```no_run
//! use pjrt_client::{Plugin, Topology};
//! // libtpu creates TPU topologies without a TPU when told not to ask the cloud metadata server.
//! std::env::set_var("TPU_SKIP_MDS_QUERY", "1");
//! let plugin = Plugin::load(pjrt_plugins::install_verified(pjrt_plugins::known_plugin("tpu").unwrap(), |_| ())?)?;
//! let topology = Topology::create(&plugin, "v4:2x2x2", &[])?;
//! assert_eq!(topology.chip_count()?, 8);
//! assert_eq!(topology.core_count_of_default_type_per_chip()?, 2);
//! let (coords, core) = topology.chip_coord_and_core_index_for_logical_device_of_default_type(3)?;
//! assert_eq!(topology.logical_device_of_default_type_id_from_chip_coord_and_core_index(&coords, core)?, 3);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::error::Result;
use crate::extensions::TpuTopologyExtension;
use crate::topology::Topology;

impl Topology {
    /// The TpuTopology extension of this topology's plugin, or [`Error::Unsupported`](crate::Error::Unsupported).
    fn tpu_topology(&self) -> Result<TpuTopologyExtension<'_>> {
        self.plugin().tpu_topology_extension().ok_or_else(|| {
            self.plugin().api().unsupported_feature("PJRT_TpuTopology_Extension (only the TPU plugin has it)", 117)
        })
    }

    /// The number of processes (hosts) (XLA's `ProcessCount`).
    pub fn process_count(&self) -> Result<usize> {
        self.tpu_topology()?.process_count(self)
    }

    /// The number of chips each process drives (`ChipsPerProcess`).
    pub fn chips_per_process(&self) -> Result<usize> {
        self.tpu_topology()?.chips_per_process(self)
    }

    /// The number of cores of the default type on each chip (`CoreCountOfDefaultTypePerChip`).
    pub fn core_count_of_default_type_per_chip(&self) -> Result<usize> {
        self.tpu_topology()?.core_count_of_default_type_per_chip(self)
    }

    /// The number of chips (`ChipCount`).
    pub fn chip_count(&self) -> Result<usize> {
        self.tpu_topology()?.chip_count(self)
    }

    /// The number of cores of the default type (`CoreCountOfDefaultType`).
    pub fn core_count_of_default_type(&self) -> Result<usize> {
        self.tpu_topology()?.core_count_of_default_type(self)
    }

    /// The number of logical devices of the default type (`LogicalDeviceCountOfDefaultType`).
    pub fn logical_device_count_of_default_type(&self) -> Result<usize> {
        self.tpu_topology()?.logical_device_count_of_default_type(self)
    }

    /// The number of logical devices of the default type on each process
    /// (`LogicalDeviceCountOfDefaultTypePerProcess`).
    pub fn logical_device_count_of_default_type_per_process(&self) -> Result<usize> {
        self.tpu_topology()?.logical_device_count_of_default_type_per_process(self)
    }

    /// The number of logical devices of the default type on each chip
    /// (`LogicalDeviceCountOfDefaultTypePerChip`).
    pub fn logical_device_count_of_default_type_per_chip(&self) -> Result<usize> {
        self.tpu_topology()?.logical_device_count_of_default_type_per_chip(self)
    }

    /// The number of cores of the default type on each process
    /// (`CoreCountOfDefaultTypePerProcess`).
    pub fn core_count_of_default_type_per_process(&self) -> Result<usize> {
        self.tpu_topology()?.core_count_of_default_type_per_process(self)
    }

    /// The ids of the processes (`ProcessIds`).
    pub fn process_ids(&self) -> Result<Vec<i32>> {
        self.tpu_topology()?.process_ids(self)
    }

    /// The bounds of the chips one process drives, per dimension (`ChipsPerProcessBounds`).
    pub fn chips_per_process_bounds(&self) -> Result<Vec<i32>> {
        self.tpu_topology()?.chips_per_process_bounds(self)
    }

    /// The bounds of the chips, per dimension (`ChipBounds`).
    pub fn chip_bounds(&self) -> Result<Vec<i32>> {
        self.tpu_topology()?.chip_bounds(self)
    }

    /// The bounds of the processes, per dimension (`ProcessBounds`).
    pub fn process_bounds(&self) -> Result<Vec<i32>> {
        self.tpu_topology()?.process_bounds(self)
    }

    /// Whether this topology is a subslice of a larger one (`is_subslice_topology`).
    pub fn is_subslice_topology(&self) -> Result<bool> {
        self.tpu_topology()?.is_subslice_topology(self)
    }

    /// The ids of the logical devices (of the default type) that process `process_id` drives
    /// (`LogicalDeviceOfDefaultTypeIdsOnProcess`).
    pub fn logical_device_of_default_type_ids_on_process(&self, process_id: i32) -> Result<Vec<i32>> {
        self.tpu_topology()?.logical_device_of_default_type_ids_on_process(self, process_id)
    }

    /// The process that drives chip `chip_id` and the chip's index on it
    /// (`ProcessIdAndIndexOnProcessForChip`).
    pub fn process_id_and_index_on_process_for_chip(&self, chip_id: i32) -> Result<(i32, i32)> {
        self.tpu_topology()?.process_id_and_index_on_process_for_chip(self, chip_id)
    }

    /// The process that drives logical device `device_id` and the device's index on it
    /// (`ProcessIdAndIndexOnProcessForLogicalDeviceOfDefaultType`).
    pub fn process_id_and_index_on_process_for_logical_device_of_default_type(
        &self,
        device_id: i32,
    ) -> Result<(i32, i32)> {
        self.tpu_topology()?.process_id_and_index_on_process_for_logical_device_of_default_type(self, device_id)
    }

    /// The coordinates of process `process_id` in the grid of processes (`ProcessCoordFromId`).
    pub fn process_coord_from_id(&self, process_id: i32) -> Result<Vec<i32>> {
        self.tpu_topology()?.process_coord_from_id(self, process_id)
    }

    /// The id of the chip at `coords` (`ChipIdFromCoord`).
    pub fn chip_id_from_coord(&self, coords: &[i32]) -> Result<i32> {
        self.tpu_topology()?.chip_id_from_coord(self, coords)
    }

    /// The id of the logical device that is core `core_index` of the chip at `chip_coords`
    /// (`LogicalDeviceOfDefaultTypeIdFromChipCoordAndCoreIndex`).
    pub fn logical_device_of_default_type_id_from_chip_coord_and_core_index(
        &self,
        chip_coords: &[i32],
        core_index: i32,
    ) -> Result<i32> {
        self.tpu_topology()?.logical_device_of_default_type_id_from_chip_coord_and_core_index(
            self,
            chip_coords,
            core_index,
        )
    }

    /// The coordinates of the chip that holds logical device `device_id` and the device's core
    /// index on it (`ChipCoordAndCoreIndexForLogicalDeviceOfDefaultType`).
    pub fn chip_coord_and_core_index_for_logical_device_of_default_type(
        &self,
        device_id: i32,
    ) -> Result<(Vec<i32>, i32)> {
        self.tpu_topology()?.chip_coord_and_core_index_for_logical_device_of_default_type(self, device_id)
    }

    /// The subslice with `chips_per_host_bounds` chips per host and `host_bounds` hosts
    /// (`Subslice`): a new topology of the same plugin.
    pub fn subslice(&self, chips_per_host_bounds: &[i32], host_bounds: &[i32]) -> Result<Topology> {
        self.tpu_topology()?.subslice(self, chips_per_host_bounds, host_bounds)
    }
}
