//! Device descriptions of a topology (`PJRT_TopologyDescription_GetDeviceDescriptions`): what a
//! device is, without a client or the device itself (XLA's `PjRtCApiDeviceDescription`).

use std::fmt;
use std::ptr::NonNull;

use crate::call::named_value::{read_named_values, Value};
use crate::call::{checked_slice, checked_string, pjrt_call, Api};
use crate::error::Result;
use crate::sys::{self, Args};
use crate::topology::Topology;

/// One device of a [`Topology`], borrowed from it (made by [`Topology::device_descriptions`]).
#[derive(Clone, Copy)]
pub struct DeviceDescription<'t> {
    topology: &'t Topology,
    raw: NonNull<sys::PJRT_DeviceDescription>,
}

// SAFETY: descriptions are immutable and owned by the topology, which is Sync; PJRT's description
// accessors are thread-safe.
unsafe impl Send for DeviceDescription<'_> {}
// SAFETY: as above.
unsafe impl Sync for DeviceDescription<'_> {}

macro_rules! string_query {
    ($(#[$m:meta])* $fn:ident, $slot:ident, $args:ident, $ptr:ident, $len:ident) => {
        $(#[$m])*
        pub fn $fn(&self) -> Result<String> {
            let mut args = sys::$args::new();
            args.device_description = self.raw.as_ptr();
            pjrt_call!(self.api(), $slot, &mut args)?;
            // SAFETY: the string is owned by the description, which the topology keeps alive.
            unsafe { checked_string(args.$ptr, args.$len, stringify!($slot), "the string") }
        }
    };
}

impl<'t> DeviceDescription<'t> {
    pub(crate) fn new(topology: &'t Topology, raw: NonNull<sys::PJRT_DeviceDescription>) -> Self {
        DeviceDescription { topology, raw }
    }

    fn api(&self) -> &Api {
        self.topology.plugin().api()
    }

    /// The topology this description belongs to.
    pub fn topology(&self) -> &'t Topology {
        self.topology
    }

    /// The global device id.
    pub fn id(&self) -> Result<i32> {
        let mut args = sys::PJRT_DeviceDescription_Id_Args::new();
        args.device_description = self.raw.as_ptr();
        pjrt_call!(self.api(), PJRT_DeviceDescription_Id, &mut args)?;
        Ok(args.id)
    }

    /// The index of the process that would own the device.
    pub fn process_index(&self) -> Result<i32> {
        let mut args = sys::PJRT_DeviceDescription_ProcessIndex_Args::new();
        args.device_description = self.raw.as_ptr();
        pjrt_call!(self.api(), PJRT_DeviceDescription_ProcessIndex, &mut args)?;
        Ok(args.process_index)
    }

    string_query!(
        /// The device kind, e.g. `"cpu"`.
        kind, PJRT_DeviceDescription_Kind, PJRT_DeviceDescription_Kind_Args, device_kind, device_kind_size
    );
    string_query!(
        /// A detailed string for debugging.
        debug_string, PJRT_DeviceDescription_DebugString, PJRT_DeviceDescription_DebugString_Args,
        debug_string, debug_string_size
    );
    string_query!(
        /// A short string, e.g. `CpuDevice(id=0)`.
        to_string, PJRT_DeviceDescription_ToString, PJRT_DeviceDescription_ToString_Args, to_string,
        to_string_size
    );

    /// Vendor-specific attributes.
    pub fn attributes(&self) -> Result<Vec<(String, Value)>> {
        let mut args = sys::PJRT_DeviceDescription_Attributes_Args::new();
        args.device_description = self.raw.as_ptr();
        pjrt_call!(self.api(), PJRT_DeviceDescription_Attributes, &mut args)?;
        // SAFETY: the array is owned by the description; checked to be an array, copied at once.
        unsafe {
            checked_slice(args.attributes, args.num_attributes, "PJRT_DeviceDescription_Attributes", "attributes")?;
            Ok(read_named_values(args.attributes, args.num_attributes))
        }
    }

    /// The raw handle, for use with [`crate::sys`]. Do not destroy it.
    pub fn as_raw(&self) -> *mut sys::PJRT_DeviceDescription {
        self.raw.as_ptr()
    }
}

impl fmt::Debug for DeviceDescription<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceDescription").field("id", &self.id().ok()).field("kind", &self.kind().ok()).finish()
    }
}
