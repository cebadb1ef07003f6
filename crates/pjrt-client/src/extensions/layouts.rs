//! The Layouts extension (`PJRT_Layouts_Extension`): default layouts of clients and topologies,
//! the layouts of buffers and of executables' parameters and outputs.

use std::fmt;

use crate::buffer::checks::check_element_type;
use crate::buffer::Buffer;
use crate::call::{slice_from_raw, Api};
use crate::client::Client;
use crate::error::{Error, Result};
use crate::executable::LoadedExecutable;
use crate::extensions::{ext_fn, LayoutsExtension};
use crate::sys::{self, Args};
use pjrt_types::ElementType;

/// A memory layout as the plugin serializes it: on the CPU plugins the text of the
/// minor-to-major order, e.g. `{1,0}`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct SerializedLayout(Vec<u8>);

impl SerializedLayout {
    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The bytes as text, when they are UTF-8.
    pub fn as_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.0).ok()
    }

    /// The bytes.
    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }
}

impl fmt::Display for SerializedLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.0))
    }
}

impl fmt::Debug for SerializedLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SerializedLayout({:?})", String::from_utf8_lossy(&self.0))
    }
}

impl PartialEq<str> for SerializedLayout {
    fn eq(&self, other: &str) -> bool {
        self.0 == other.as_bytes()
    }
}

impl PartialEq<&str> for SerializedLayout {
    fn eq(&self, other: &&str) -> bool {
        self.0 == other.as_bytes()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ExecutableSide {
    Outputs,
    Parameters,
}

/// Destroys an owned `PJRT_Layouts_MemoryLayout` on drop.
pub(crate) struct OwnedLayout<'a, 'p> {
    ext: &'a LayoutsExtension<'p>,
    layout: *mut sys::PJRT_Layouts_MemoryLayout,
    destroy: unsafe extern "C" fn(*mut sys::PJRT_Layouts_MemoryLayout_Destroy_Args) -> *mut sys::PJRT_Error,
    name: &'static str,
}

impl Drop for OwnedLayout<'_, '_> {
    fn drop(&mut self) {
        let mut args = sys::PJRT_Layouts_MemoryLayout_Destroy_Args::new();
        args.layout = self.layout;
        // SAFETY: the layout was returned to us by the plugin and is destroyed exactly once.
        let error = unsafe { (self.destroy)(&mut args) };
        // A failure cannot be reported from Drop; the error itself is still freed.
        let _ = self.ext.api.check(error, self.name);
    }
}

impl<'p> LayoutsExtension<'p> {
    /// The layout the client gives a new array of `element_type` and `dims` by default.
    pub fn client_default_layout(
        &self,
        client: &Client,
        element_type: ElementType,
        dims: &[i64],
    ) -> Result<SerializedLayout> {
        let (destroy, destroy_name) = self.check_default_layout_request(client.api(), element_type, dims)?;
        let (get, name) = ext_fn!(self, sys::PJRT_Layouts_Extension, PJRT_Layouts_PJRT_Client_GetDefaultLayout);
        let mut args = sys::PJRT_Layouts_PJRT_Client_GetDefaultLayout_Args::new();
        args.client = client.raw();
        args.type_ = sys::PJRT_Buffer_Type(element_type.to_i32());
        args.dims = dims.as_ptr();
        args.num_dims = dims.len();
        // SAFETY: args built with `Args::new`; the client belongs to this plugin (checked) and the
        // dims outlive the call.
        self.api.check(unsafe { get(&mut args) }, name)?;
        let layout = self.own(args.layout, destroy, destroy_name, name)?;
        self.serialize(layout.layout)
    }

    /// The layout a topology's devices give a new array of `element_type` and `dims` by default
    /// (XLA's `PjRtTopologyDescription::GetDefaultLayout`).
    pub fn topology_default_layout(
        &self,
        topology: &crate::topology::Topology,
        element_type: ElementType,
        dims: &[i64],
    ) -> Result<SerializedLayout> {
        let (destroy, destroy_name) = self.check_default_layout_request(topology.plugin().api(), element_type, dims)?;
        let (get, name) = ext_fn!(self, sys::PJRT_Layouts_Extension, PJRT_Layouts_PJRT_Topology_GetDefaultLayout);
        let mut args = sys::PJRT_Layouts_PJRT_Topology_GetDefaultLayout_Args::new();
        args.topology_description = topology.as_raw();
        args.type_ = sys::PJRT_Buffer_Type(element_type.to_i32());
        args.dims = dims.as_ptr();
        args.num_dims = dims.len();
        // SAFETY: args built with `Args::new`; the topology belongs to this plugin (checked) and
        // the dims outlive the call.
        self.api.check(unsafe { get(&mut args) }, name)?;
        let layout = self.own(args.layout, destroy, destroy_name, name)?;
        self.serialize(layout.layout)
    }

    /// The layout of a buffer on its device.
    pub fn buffer_layout(&self, buffer: &Buffer) -> Result<SerializedLayout> {
        self.same_plugin(buffer.client().api())?;
        // SAFETY: the buffer is alive (borrowed) and belongs to this plugin.
        unsafe { self.buffer_layout_raw(buffer.as_raw()) }
    }

    /// # Safety
    /// `buffer` must be a live buffer of this plugin.
    pub(super) unsafe fn buffer_layout_raw(&self, buffer: *mut sys::PJRT_Buffer) -> Result<SerializedLayout> {
        type L = sys::PJRT_Layouts_Extension;
        let (destroy, destroy_name) = ext_fn!(self, L, PJRT_Layouts_MemoryLayout_Destroy);
        ext_fn!(self, L, PJRT_Layouts_MemoryLayout_Serialize);
        let (get, name) = ext_fn!(self, L, PJRT_Layouts_PJRT_Buffer_MemoryLayout);
        let mut args = sys::PJRT_Layouts_PJRT_Buffer_MemoryLayout_Args::new();
        args.buffer = buffer;
        // SAFETY: args built with `Args::new`; the buffer is live (caller's contract).
        self.api.check(unsafe { get(&mut args) }, name)?;
        let layout = self.own(args.layout, destroy, destroy_name, name)?;
        self.serialize(layout.layout)
    }

    /// The layouts of an executable's outputs.
    pub fn executable_output_layouts(&self, executable: &LoadedExecutable) -> Result<Vec<SerializedLayout>> {
        self.same_plugin(executable.client().api())?;
        // SAFETY: the executable is alive (borrowed) and belongs to this plugin.
        unsafe { self.executable_layouts_raw(executable.raw_executable(), ExecutableSide::Outputs) }
    }

    /// The layouts of an executable's parameters.
    pub fn executable_parameter_layouts(&self, executable: &LoadedExecutable) -> Result<Vec<SerializedLayout>> {
        self.same_plugin(executable.client().api())?;
        // SAFETY: the executable is alive (borrowed) and belongs to this plugin.
        unsafe { self.executable_layouts_raw(executable.raw_executable(), ExecutableSide::Parameters) }
    }

    /// # Safety
    /// `executable` must be a live executable of this plugin.
    pub(super) unsafe fn executable_layouts_raw(
        &self,
        executable: *mut sys::PJRT_Executable,
        side: ExecutableSide,
    ) -> Result<Vec<SerializedLayout>> {
        type L = sys::PJRT_Layouts_Extension;
        // The layouts are owned by the executable: serialized, never destroyed.
        let (layouts, count) = match side {
            ExecutableSide::Outputs => {
                let (get, name) = ext_fn!(self, L, PJRT_Layouts_PJRT_Executable_GetOutputLayouts);
                ext_fn!(self, L, PJRT_Layouts_MemoryLayout_Serialize);
                let mut args = sys::PJRT_Layouts_PJRT_Executable_GetOutputLayouts_Args::new();
                args.executable = executable;
                // SAFETY: args built with `Args::new`; the executable is live.
                self.api.check(unsafe { get(&mut args) }, name)?;
                (args.layouts, args.num_outputs)
            }
            ExecutableSide::Parameters => {
                let (get, name) = ext_fn!(self, L, PJRT_Layouts_PJRT_Executable_GetParameterLayouts);
                ext_fn!(self, L, PJRT_Layouts_MemoryLayout_Serialize);
                let mut args = sys::PJRT_Layouts_PJRT_Executable_GetParameterLayouts_Args::new();
                args.executable = executable;
                // SAFETY: as above.
                self.api.check(unsafe { get(&mut args) }, name)?;
                (args.layouts, args.num_parameters)
            }
        };
        // SAFETY: an array of `count` layouts owned by the executable, which outlives this call.
        let layouts = unsafe { slice_from_raw(layouts as *const *mut sys::PJRT_Layouts_MemoryLayout, count) };
        layouts.iter().map(|l| self.serialize(*l)).collect()
    }

    /// What a default-layout query needs checked before the plugin allocates a layout: the
    /// owner (client or topology) is this plugin's, the element type and dims are valid, and
    /// the functions that serialize and free the result exist. Returns the destroy function.
    #[allow(clippy::type_complexity)]
    fn check_default_layout_request(
        &self,
        owner_api: &Api,
        element_type: ElementType,
        dims: &[i64],
    ) -> Result<(
        unsafe extern "C" fn(*mut sys::PJRT_Layouts_MemoryLayout_Destroy_Args) -> *mut sys::PJRT_Error,
        &'static str,
    )> {
        self.same_plugin(owner_api)?;
        check_element_type(self.api, element_type)?;
        if let Some(d) = dims.iter().find(|d| **d < 0) {
            return Err(Error::invalid(format!("negative dimension {d} in {dims:?}")));
        }
        type L = sys::PJRT_Layouts_Extension;
        let destroy = ext_fn!(self, L, PJRT_Layouts_MemoryLayout_Destroy);
        ext_fn!(self, L, PJRT_Layouts_MemoryLayout_Serialize);
        Ok(destroy)
    }

    pub(super) fn own<'a>(
        &'a self,
        layout: *mut sys::PJRT_Layouts_MemoryLayout,
        destroy: unsafe extern "C" fn(*mut sys::PJRT_Layouts_MemoryLayout_Destroy_Args) -> *mut sys::PJRT_Error,
        destroy_name: &'static str,
        producer: &'static str,
    ) -> Result<OwnedLayout<'a, 'p>> {
        if layout.is_null() {
            return Err(Error::invalid(format!("{producer} returned no layout")));
        }
        Ok(OwnedLayout { ext: self, layout, destroy, name: destroy_name })
    }

    /// Serializes a live layout and frees the serialization.
    pub(super) fn serialize(&self, layout: *mut sys::PJRT_Layouts_MemoryLayout) -> Result<SerializedLayout> {
        if layout.is_null() {
            return Err(Error::invalid("the plugin returned a NULL layout"));
        }
        let (serialize, name) = ext_fn!(self, sys::PJRT_Layouts_Extension, PJRT_Layouts_MemoryLayout_Serialize);
        let mut args = sys::PJRT_Layouts_MemoryLayout_Serialize_Args::new();
        args.layout = layout;
        // SAFETY: args built with `Args::new`; the layout is live (owned by us or an executable).
        self.api.check(unsafe { serialize(&mut args) }, name)?;
        // SAFETY: the bytes live as long as `serialized_layout`, which is freed just below.
        let bytes = unsafe { slice_from_raw(args.serialized_bytes as *const u8, args.serialized_bytes_size) }.to_vec();
        if let (Some(deleter), false) = (args.serialized_layout_deleter, args.serialized_layout.is_null()) {
            // SAFETY: called once on the object it was returned for, as the API requires.
            unsafe { deleter(args.serialized_layout) };
        }
        Ok(SerializedLayout(bytes))
    }
}
