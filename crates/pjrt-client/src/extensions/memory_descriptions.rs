//! The MemoryDescriptions extension (`PJRT_MemoryDescriptions_Extension`): the memory kinds of a
//! device description.

use crate::call::{pjrt_call, slice_from_raw, string_from_raw};
use crate::client::device::Device;
use crate::error::{Error, Result};
use crate::extensions::{ext_fn, MemoryDescriptionsExtension};
use crate::sys::{self, Args};

/// One kind of memory a device has (from its description, without a client's memory objects).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct MemoryDescription {
    /// The kind, e.g. `"device"` or `"pinned_host"`.
    pub kind: String,
    /// The kind's id.
    pub kind_id: i32,
    /// Whether this is the device's default memory. Never set by plugins of extension version 0
    /// (0.59–0.60), which report no default.
    pub is_default: bool,
}

/// Pre-filled into `default_memory_index` before the call: a version-0 plugin (0.59, no such
/// field) leaves it as it is. No plugin writes it: a valid index is below the number of
/// descriptions, and "no default" is `SIZE_MAX`.
pub(crate) const DEFAULT_INDEX_NOT_WRITTEN: usize = usize::MAX - 1;

/// The default description's index from what the plugin left in `default_memory_index`: `None`
/// when not written (version 0), `SIZE_MAX` ("no default"), or not an index into `count`
/// descriptions.
pub(crate) fn default_memory_index(raw: usize, count: usize) -> Option<usize> {
    match raw {
        DEFAULT_INDEX_NOT_WRITTEN | usize::MAX => None,
        index if index < count => Some(index),
        _ => None,
    }
}

impl<'p> MemoryDescriptionsExtension<'p> {
    /// The memory descriptions of a device (the CPU plugins report none).
    ///
    /// Extension version 0 (0.59) had the same struct size but args without
    /// `default_memory_index`: the 48-byte version-1 args are sent to both, with the index
    /// pre-filled with a value no plugin writes, so a version-0 plugin's descriptions come back
    /// with no default (rather than the first one). An index that is not below the number of
    /// descriptions also means no default.
    pub fn device_memory_descriptions(&self, device: &Device<'_>) -> Result<Vec<MemoryDescription>> {
        let api = device.client().api();
        self.same_plugin(api)?;
        // Checked before any call, so a missing member is reported without touching the device.
        ext_fn!(self, sys::PJRT_MemoryDescriptions_Extension, PJRT_DeviceDescription_MemoryDescriptions);
        let mut description = sys::PJRT_Device_GetDescription_Args::new();
        description.device = device.as_raw();
        pjrt_call!(api, PJRT_Device_GetDescription, &mut description)?;
        if description.device_description.is_null() {
            return Err(Error::invalid("PJRT_Device_GetDescription returned no description"));
        }
        // SAFETY: the description is owned by the device's client, which the device keeps alive.
        unsafe { self.memory_descriptions_raw(description.device_description) }
    }

    /// The memory descriptions of a topology's device description (XLA's
    /// `PjRtDeviceDescription::memory_spaces`).
    pub fn description_memory_descriptions(
        &self,
        description: &crate::topology::device_description::DeviceDescription<'_>,
    ) -> Result<Vec<MemoryDescription>> {
        self.same_plugin(description.topology().plugin().api())?;
        // SAFETY: the description is owned by its topology, which the borrow keeps alive.
        unsafe { self.memory_descriptions_raw(description.as_raw()) }
    }

    /// # Safety
    /// `description` must be a live device description of this plugin.
    pub(super) unsafe fn memory_descriptions_raw(
        &self,
        description: *mut sys::PJRT_DeviceDescription,
    ) -> Result<Vec<MemoryDescription>> {
        type M = sys::PJRT_MemoryDescriptions_Extension;
        let (get, name) = ext_fn!(self, M, PJRT_DeviceDescription_MemoryDescriptions);
        let mut args = sys::PJRT_DeviceDescription_MemoryDescriptions_Args::new();
        args.device_description = description;
        args.default_memory_index = DEFAULT_INDEX_NOT_WRITTEN;
        // SAFETY: args built with `Args::new` (48 bytes, which a version-0 plugin also accepts:
        // its 40-byte args are a prefix); the description is live (caller's contract).
        self.api.check(unsafe { get(&mut args) }, name)?;
        // SAFETY: an array owned by the device description.
        let descriptions = unsafe { slice_from_raw(args.memory_descriptions, args.num_memory_descriptions) };
        if descriptions.is_empty() {
            return Ok(Vec::new());
        }
        let default = default_memory_index(args.default_memory_index, descriptions.len());
        let (kind_fn, kind_name) = ext_fn!(self, M, PJRT_MemoryDescription_Kind);
        let mut out = Vec::with_capacity(descriptions.len());
        for (i, d) in descriptions.iter().enumerate() {
            let mut kind = sys::PJRT_MemoryDescription_Kind_Args::new();
            kind.memory_description = *d;
            // SAFETY: args built with `Args::new`; the description is owned by the device's.
            self.api.check(unsafe { kind_fn(&mut kind) }, kind_name)?;
            out.push(MemoryDescription {
                // SAFETY: the string lives as long as the memory description.
                kind: unsafe { string_from_raw(kind.kind, kind.kind_size) },
                kind_id: kind.kind_id,
                is_default: default == Some(i),
            });
        }
        Ok(out)
    }
}
