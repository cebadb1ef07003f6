//! Devices and memories: views of objects the client owns (never destroyed by us).

use std::fmt;
use std::ptr::NonNull;

use crate::call::named_value::{read_named_values, Value};
use crate::call::{checked_slice, checked_string, pjrt_call};
use crate::client::Client;
use crate::error::{Error, Result};
use crate::sys::{self, Args};

/// `PJRT_Memory_Kind_Id` exists from this API version on.
const KIND_ID_SINCE_MINOR: i32 = 48;

/// A device of a client. Borrowed from the client: it cannot outlive it. `Send + Sync` (a view of
/// a thread-safe PJRT device).
#[derive(Clone, Copy)]
pub struct Device<'c> {
    client: &'c Client,
    raw: NonNull<sys::PJRT_Device>,
}

// SAFETY: a device is owned by its client and PJRT's device functions are thread-safe; the view
// holds a `&Client` (which is Sync) and a pointer the client keeps valid while it lives.
unsafe impl Send for Device<'_> {}
// SAFETY: as above; every method only reads through thread-safe PJRT calls.
unsafe impl Sync for Device<'_> {}

macro_rules! description_string {
    ($(#[$m:meta])* $fn:ident, $slot:ident, $args:ident, $ptr:ident, $len:ident) => {
        $(#[$m])*
        pub fn $fn(&self) -> Result<String> {
            let mut args = sys::$args::new();
            args.device_description = self.description()?;
            pjrt_call!(self.client.api(), $slot, &mut args)?;
            // SAFETY: the string is owned by the device description, which lives with the client.
            unsafe { checked_string(args.$ptr, args.$len, stringify!($slot), "the string") }
        }
    };
}

impl<'c> Device<'c> {
    pub(crate) fn new(client: &'c Client, raw: NonNull<sys::PJRT_Device>) -> Self {
        Self { client, raw }
    }

    fn description(&self) -> Result<*mut sys::PJRT_DeviceDescription> {
        let mut args = sys::PJRT_Device_GetDescription_Args::new();
        args.device = self.raw.as_ptr();
        pjrt_call!(self.client.api(), PJRT_Device_GetDescription, &mut args)?;
        if args.device_description.is_null() {
            return Err(Error::invalid("PJRT_Device_GetDescription returned no description"));
        }
        Ok(args.device_description)
    }

    /// The client this device belongs to.
    pub fn client(&self) -> &'c Client {
        self.client
    }

    /// The global device id.
    pub fn id(&self) -> Result<i32> {
        let mut args = sys::PJRT_DeviceDescription_Id_Args::new();
        args.device_description = self.description()?;
        pjrt_call!(self.client.api(), PJRT_DeviceDescription_Id, &mut args)?;
        Ok(args.id)
    }

    /// The index of the process that owns this device.
    pub fn process_index(&self) -> Result<i32> {
        let mut args = sys::PJRT_DeviceDescription_ProcessIndex_Args::new();
        args.device_description = self.description()?;
        pjrt_call!(self.client.api(), PJRT_DeviceDescription_ProcessIndex, &mut args)?;
        Ok(args.process_index)
    }

    description_string!(
        /// The device kind, e.g. `"cpu"` or a GPU model name.
        kind, PJRT_DeviceDescription_Kind, PJRT_DeviceDescription_Kind_Args, device_kind, device_kind_size
    );
    description_string!(
        /// A detailed string for debugging.
        debug_string, PJRT_DeviceDescription_DebugString, PJRT_DeviceDescription_DebugString_Args,
        debug_string, debug_string_size
    );
    description_string!(
        /// A short string, e.g. `CpuDevice(id=0)`.
        to_string, PJRT_DeviceDescription_ToString, PJRT_DeviceDescription_ToString_Args, to_string,
        to_string_size
    );

    /// Vendor-specific attributes of the device description.
    pub fn attributes(&self) -> Result<Vec<(String, Value)>> {
        let mut args = sys::PJRT_DeviceDescription_Attributes_Args::new();
        args.device_description = self.description()?;
        pjrt_call!(self.client.api(), PJRT_DeviceDescription_Attributes, &mut args)?;
        // SAFETY: the array is owned by the description; checked to be an array, copied at once.
        unsafe {
            checked_slice(args.attributes, args.num_attributes, "PJRT_DeviceDescription_Attributes", "attributes")?;
            Ok(read_named_values(args.attributes, args.num_attributes))
        }
    }

    /// Whether this process can use the device.
    pub fn is_addressable(&self) -> Result<bool> {
        let mut args = sys::PJRT_Device_IsAddressable_Args::new();
        args.device = self.raw.as_ptr();
        pjrt_call!(self.client.api(), PJRT_Device_IsAddressable, &mut args)?;
        // SAFETY: a byte of `args`, initialised by `new` and perhaps rewritten by the plugin.
        Ok(unsafe { crate::call::plugin_bool(&raw const args.is_addressable) })
    }

    /// The device's hardware id within its process (-1 when not addressable).
    pub fn local_hardware_id(&self) -> Result<i32> {
        let mut args = sys::PJRT_Device_LocalHardwareId_Args::new();
        args.device = self.raw.as_ptr();
        pjrt_call!(self.client.api(), PJRT_Device_LocalHardwareId, &mut args)?;
        Ok(args.local_hardware_id)
    }

    /// The memories this device can address. Empty when the plugin answers UNIMPLEMENTED (a
    /// plugin without memories), as XLA's C API client reads that answer.
    pub fn memories(&self) -> Result<Vec<Memory<'c>>> {
        let mut args = sys::PJRT_Device_AddressableMemories_Args::new();
        args.device = self.raw.as_ptr();
        match pjrt_call!(self.client.api(), PJRT_Device_AddressableMemories, &mut args) {
            Err(e) if e.is_unimplemented() => return Ok(Vec::new()),
            other => other?,
        }
        // SAFETY: memories are owned by the client.
        let raw =
            unsafe { checked_slice(args.memories, args.num_memories, "PJRT_Device_AddressableMemories", "memories") }?;
        Ok(raw.iter().filter_map(|m| NonNull::new(*m)).map(|m| Memory::new(self.client, m)).collect())
    }

    /// The memory of kind `kind` (e.g. `"pinned_host"`) this device addresses, if any (XLA's
    /// `memory_space_by_kind`).
    pub fn memory_by_kind(&self, kind: &str) -> Result<Option<Memory<'c>>> {
        for memory in self.memories()? {
            if memory.kind()? == kind {
                return Ok(Some(memory));
            }
        }
        Ok(None)
    }

    /// The memory buffers go to by default.
    pub fn default_memory(&self) -> Result<Memory<'c>> {
        let mut args = sys::PJRT_Device_DefaultMemory_Args::new();
        args.device = self.raw.as_ptr();
        pjrt_call!(self.client.api(), PJRT_Device_DefaultMemory, &mut args)?;
        NonNull::new(args.memory)
            .map(|m| Memory::new(self.client, m))
            .ok_or_else(|| Error::invalid("the device has no default memory"))
    }

    /// The raw handle, for use with [`crate::sys`]. Do not destroy it.
    pub fn as_raw(&self) -> *mut sys::PJRT_Device {
        self.raw.as_ptr()
    }
}

impl PartialEq for Device<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.raw == other.raw
    }
}

impl fmt::Debug for Device<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_string() {
            Ok(s) => f.write_str(&s),
            Err(_) => write!(f, "Device({:p})", self.raw),
        }
    }
}

/// A memory space (device memory, pinned host memory, ...). Borrowed from the client.
/// `Send + Sync` (a view of a thread-safe PJRT memory).
#[derive(Clone, Copy)]
pub struct Memory<'c> {
    client: &'c Client,
    raw: NonNull<sys::PJRT_Memory>,
}

// SAFETY: as for `Device`: memories are owned by the client and their PJRT functions are
// thread-safe.
unsafe impl Send for Memory<'_> {}
// SAFETY: as above.
unsafe impl Sync for Memory<'_> {}

macro_rules! memory_string {
    ($(#[$m:meta])* $fn:ident, $slot:ident, $args:ident, $ptr:ident, $len:ident) => {
        $(#[$m])*
        pub fn $fn(&self) -> Result<String> {
            let mut args = sys::$args::new();
            args.memory = self.raw.as_ptr();
            pjrt_call!(self.client.api(), $slot, &mut args)?;
            // SAFETY: the string is owned by the memory, which lives with the client.
            unsafe { checked_string(args.$ptr, args.$len, stringify!($slot), "the string") }
        }
    };
}

impl<'c> Memory<'c> {
    pub(crate) fn new(client: &'c Client, raw: NonNull<sys::PJRT_Memory>) -> Self {
        Self { client, raw }
    }

    /// The client this memory belongs to.
    pub fn client(&self) -> &'c Client {
        self.client
    }

    /// The memory's id.
    pub fn id(&self) -> Result<i32> {
        let mut args = sys::PJRT_Memory_Id_Args::new();
        args.memory = self.raw.as_ptr();
        pjrt_call!(self.client.api(), PJRT_Memory_Id, &mut args)?;
        Ok(args.id)
    }

    memory_string!(
        /// The kind, e.g. `"device"`, `"pinned_host"`, `"unpinned_host"`.
        kind, PJRT_Memory_Kind, PJRT_Memory_Kind_Args, kind, kind_size
    );
    memory_string!(
        /// A detailed string for debugging.
        debug_string, PJRT_Memory_DebugString, PJRT_Memory_DebugString_Args, debug_string, debug_string_size
    );
    memory_string!(
        /// A short string, e.g. `CPU_DEVICE_0`.
        to_string, PJRT_Memory_ToString, PJRT_Memory_ToString_Args, to_string, to_string_size
    );

    /// A numeric id of the kind, unique within the platform.
    ///
    /// Plugins older than 0.48 have no `PJRT_Memory_Kind_Id`: the id is then the FarmHash
    /// `Fingerprint32` of [`Memory::kind`], as XLA's C API client computes it.
    ///
    /// ```
    /// # use pjrt_client::{Client, ClientOptions};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// let client = Client::new(&plugin, &ClientOptions::new())?;
    /// let memory = client.addressable_devices()[0].default_memory()?;
    /// println!("{} has kind id {}", memory.kind()?, memory.kind_id()?);
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn kind_id(&self) -> Result<i32> {
        if self.client.api().version().minor < KIND_ID_SINCE_MINOR {
            // Bits reinterpreted as XLA's `int` does.
            return Ok(crate::fingerprint::fingerprint32(self.kind()?.as_bytes()) as i32);
        }
        let mut args = sys::PJRT_Memory_Kind_Id_Args::new();
        args.memory = self.raw.as_ptr();
        pjrt_call!(self.client.api(), PJRT_Memory_Kind_Id, &mut args)?;
        Ok(args.kind_id)
    }

    /// The devices that can address this memory.
    pub fn devices(&self) -> Result<Vec<Device<'c>>> {
        let mut args = sys::PJRT_Memory_AddressableByDevices_Args::new();
        args.memory = self.raw.as_ptr();
        pjrt_call!(self.client.api(), PJRT_Memory_AddressableByDevices, &mut args)?;
        // SAFETY: devices are owned by the client.
        let raw =
            unsafe { checked_slice(args.devices, args.num_devices, "PJRT_Memory_AddressableByDevices", "devices") }?;
        Ok(raw.iter().filter_map(|d| NonNull::new(*d)).map(|d| Device::new(self.client, d)).collect())
    }

    /// The raw handle, for use with [`crate::sys`]. Do not destroy it.
    pub fn as_raw(&self) -> *mut sys::PJRT_Memory {
        self.raw.as_ptr()
    }
}

impl PartialEq for Memory<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.raw == other.raw
    }
}

impl fmt::Debug for Memory<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_string() {
            Ok(s) => f.write_str(&s),
            Err(_) => write!(f, "Memory({:p})", self.raw),
        }
    }
}
