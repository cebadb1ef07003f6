//! Compiled programs: compiling them, the loaded executable and its metadata, running it. One job
//! per file:
//!
//! - `mod.rs`: [`LoadedExecutable`] and [`ArrayShape`]: made from the plugin's handle, the plain accessors, delete and drop.
//! - `compile.rs`: compiling on a client, the StableHLO version check, the one `PJRT_Program` both compiles send.
//! - `execute.rs`: the execute methods (one device, or one argument list per device) and their launch helpers.
//! - `execute_options.rs`: [`ExecuteOptions`](crate::ExecuteOptions) and [`ExecuteContext`](crate::ExecuteContext), as the launch's raw options.
//! - `execution.rs`: launched executions in flight, as futures.
//! - `outputs.rs`: [`Outputs`](crate::Outputs), what a single-device execution returns.
//! - `host_callbacks.rs`: host send and receive callbacks.
//! - `context_data.rs`: Rust values an execute context owns for FFI handlers.
//! - `metadata.rs`: what a compiled program reports: shapes, memory, the optimized program, fingerprints.
//! - `hlo.rs`: the parts of XLA's HLO protos read for a program's parameters.
//! - `compile_layouts.rs`: argument and result layouts in compile options.
//! - `unloaded.rs`: [`Executable`](crate::Executable), a compiled program not loaded, and serialization.
//! - `load.rs`: loading serialized executables with [`LoadOptions`](crate::LoadOptions).

pub(crate) mod compile;
pub(crate) mod compile_layouts;
pub(crate) mod context_data;
mod execute;
pub(crate) mod execute_options;
pub(crate) mod execution;
mod hlo;
pub(crate) mod host_callbacks;
pub(crate) mod load;
pub(crate) mod metadata;
pub(crate) mod outputs;
pub(crate) mod unloaded;

use std::fmt;
use std::ptr::NonNull;
use std::sync::OnceLock;

use crate::buffer::layout::MemoryLayout;
use crate::buffer::KnownShape;
use crate::call::release::release_if_in_callback;
use crate::call::{checked_slice, checked_string, pjrt_call, Api};
use crate::client::device::Device;
use crate::client::Client;
use crate::error::{Error, Result};
use crate::sys::{self, Args};
use pjrt_types::ElementType;

/// The type and shape of one parameter or output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArrayShape {
    /// The element type (`None` when the plugin reported a type this crate cannot map).
    pub element_type: Option<ElementType>,
    /// The dimensions.
    pub dims: Vec<i64>,
}

impl fmt::Display for ArrayShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.element_type {
            Some(t) => write!(f, "{t}{:?}", self.dims),
            None => write!(f, "?{:?}", self.dims),
        }
    }
}

/// A compiled program loaded onto devices.
///
/// `Send + Sync`: one executable can run from many threads at once (PJRT executes concurrently).
pub struct LoadedExecutable {
    client: Client,
    raw: NonNull<sys::PJRT_LoadedExecutable>,
    executable: NonNull<sys::PJRT_Executable>,
    name: String,
    num_replicas: usize,
    num_partitions: usize,
    portable: bool,
    outputs: Vec<ArrayShape>,
    /// The outputs' shapes again, given to every output buffer (inline or shared: no
    /// allocation and, up to rank 4, no atomic per execute); `None` for an element type this
    /// crate cannot map (the buffer then asks the plugin).
    output_shapes: Vec<Option<KnownShape>>,
    addressable_devices: Vec<NonNull<sys::PJRT_Device>>,
    /// The parameter shapes, or why they are unknown (argument checks are then off).
    parameters: OnceLock<std::result::Result<Vec<ArrayShape>, String>>,
    /// The parameters as the compiled program's signature says (set by `Client::compile`),
    /// used when the optimized program cannot be read; or why there are none.
    source_parameters: std::result::Result<Vec<ArrayShape>, String>,
    /// The argument layouts the program was compiled for (`CompileOptions::argument_layouts`;
    /// empty: the defaults). The plugins read an argument in whatever layout it has, so these
    /// are checked before every launch.
    argument_layouts: Vec<Option<MemoryLayout>>,
}

// SAFETY: PJRT loaded executables are thread-safe (XLA's PjRtLoadedExecutable::Execute may be
// called concurrently); the cached metadata is immutable or behind a OnceLock.
unsafe impl Send for LoadedExecutable {}
// SAFETY: as above.
unsafe impl Sync for LoadedExecutable {}

impl LoadedExecutable {
    pub(crate) fn new(client: &Client, raw: NonNull<sys::PJRT_LoadedExecutable>, portable: bool) -> Result<Self> {
        let api = client.api();
        let mut get = sys::PJRT_LoadedExecutable_GetExecutable_Args::new();
        get.loaded_executable = raw.as_ptr();
        if let Err(e) = pjrt_call!(api, PJRT_LoadedExecutable_GetExecutable, &mut get) {
            destroy_loaded(client, raw);
            return Err(e);
        }
        let Some(executable) = NonNull::new(get.executable) else {
            destroy_loaded(client, raw);
            return Err(Error::invalid("PJRT_LoadedExecutable_GetExecutable returned no executable"));
        };
        // From here on Drop cleans up both handles.
        let mut this = LoadedExecutable {
            client: client.clone(),
            raw,
            executable,
            name: String::new(),
            num_replicas: 1,
            num_partitions: 1,
            portable,
            outputs: Vec::new(),
            output_shapes: Vec::new(),
            addressable_devices: Vec::new(),
            parameters: OnceLock::new(),
            argument_layouts: Vec::new(),
            source_parameters: Err("the executable was loaded, not compiled from a program here".to_owned()),
        };
        let e = executable.as_ptr();
        let mut name = sys::PJRT_Executable_Name_Args::new();
        name.executable = e;
        pjrt_call!(api, PJRT_Executable_Name, &mut name)?;
        // SAFETY: owned by the executable, copied at once.
        this.name = unsafe {
            checked_string(name.executable_name, name.executable_name_size, "PJRT_Executable_Name", "the name")
        }?;
        let mut replicas = sys::PJRT_Executable_NumReplicas_Args::new();
        replicas.executable = e;
        pjrt_call!(api, PJRT_Executable_NumReplicas, &mut replicas)?;
        this.num_replicas = replicas.num_replicas;
        let mut partitions = sys::PJRT_Executable_NumPartitions_Args::new();
        partitions.executable = e;
        pjrt_call!(api, PJRT_Executable_NumPartitions, &mut partitions)?;
        this.num_partitions = partitions.num_partitions;
        let mut num_outputs = sys::PJRT_Executable_NumOutputs_Args::new();
        num_outputs.executable = e;
        pjrt_call!(api, PJRT_Executable_NumOutputs, &mut num_outputs)?;
        this.outputs = read_output_shapes(api, e, Some(num_outputs.num_outputs))?;
        this.output_shapes =
            this.outputs.iter().map(|shape| Some(KnownShape::new(shape.element_type?, &shape.dims))).collect();
        let mut devices = sys::PJRT_LoadedExecutable_AddressableDevices_Args::new();
        devices.executable = raw.as_ptr();
        pjrt_call!(api, PJRT_LoadedExecutable_AddressableDevices, &mut devices)?;
        // SAFETY: the device array is owned by the executable; devices are owned by the client.
        this.addressable_devices = unsafe {
            checked_slice(
                devices.addressable_devices,
                devices.num_addressable_devices,
                "PJRT_LoadedExecutable_AddressableDevices",
                "devices",
            )
        }?
        .iter()
        .filter_map(|d| NonNull::new(*d))
        .collect();
        Ok(this)
    }

    /// The client the executable is loaded on.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The module name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Number of replicas.
    pub fn num_replicas(&self) -> usize {
        self.num_replicas
    }

    /// Number of partitions.
    pub fn num_partitions(&self) -> usize {
        self.num_partitions
    }

    /// Number of outputs per device.
    pub fn num_outputs(&self) -> usize {
        self.outputs.len()
    }

    /// Element type and per-device shape of each output.
    pub fn output_shapes(&self) -> &[ArrayShape] {
        &self.outputs
    }

    /// The devices the executable runs on, in the order execution takes argument lists.
    /// Empty for portable executables.
    pub fn addressable_devices(&self) -> Vec<Device<'_>> {
        self.addressable_devices.iter().map(|d| Device::new(&self.client, *d)).collect()
    }

    /// Marks the executable deleted (frees device resources where the plugin supports it).
    pub fn delete(&self) -> Result<()> {
        let mut args = sys::PJRT_LoadedExecutable_Delete_Args::new();
        args.executable = self.raw.as_ptr();
        pjrt_call!(self.client.api(), PJRT_LoadedExecutable_Delete, &mut args)
    }

    /// Whether [`LoadedExecutable::delete`] was called (some plugins always say false).
    pub fn is_deleted(&self) -> Result<bool> {
        let mut args = sys::PJRT_LoadedExecutable_IsDeleted_Args::new();
        args.executable = self.raw.as_ptr();
        pjrt_call!(self.client.api(), PJRT_LoadedExecutable_IsDeleted, &mut args)?;
        // SAFETY: a byte of `args`, initialised by `new` and perhaps rewritten by the plugin.
        Ok(unsafe { crate::call::plugin_bool(&raw const args.is_deleted) })
    }

    /// The raw handle, for use with [`crate::sys`]. Do not destroy it.
    pub fn as_raw(&self) -> *mut sys::PJRT_LoadedExecutable {
        self.raw.as_ptr()
    }

    /// The `PJRT_Executable` behind this loaded executable (owned by it; do not destroy).
    pub(crate) fn raw_executable(&self) -> *mut sys::PJRT_Executable {
        self.executable.as_ptr()
    }
}

fn destroy_loaded(client: &Client, raw: NonNull<sys::PJRT_LoadedExecutable>) {
    let mut args = sys::PJRT_LoadedExecutable_Destroy_Args::new();
    args.executable = raw.as_ptr();
    let _ = pjrt_call!(client.api(), PJRT_LoadedExecutable_Destroy, &mut args);
}

impl Drop for LoadedExecutable {
    fn drop(&mut self) {
        release_if_in_callback!(LoadedExecutable {
            client: self.client.clone(),
            raw: self.raw,
            executable: self.executable,
            name: String::new(),
            num_replicas: self.num_replicas,
            num_partitions: self.num_partitions,
            portable: self.portable,
            outputs: Vec::new(),
            output_shapes: Vec::new(),
            addressable_devices: Vec::new(),
            parameters: OnceLock::new(),
            argument_layouts: Vec::new(),
            source_parameters: Err(String::new()),
        });
        let mut args = sys::PJRT_Executable_Destroy_Args::new();
        args.executable = self.executable.as_ptr();
        // Failures cannot be reported from Drop; they would only leak.
        let _ = pjrt_call!(self.client.api(), PJRT_Executable_Destroy, &mut args);
        destroy_loaded(&self.client, self.raw);
    }
}

impl fmt::Debug for LoadedExecutable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoadedExecutable")
            .field("name", &self.name)
            .field("replicas", &self.num_replicas)
            .field("partitions", &self.num_partitions)
            .field("outputs", &self.outputs)
            .finish()
    }
}

/// Element type and dimensions of each output of a PJRT executable
/// (`PJRT_Executable_OutputElementTypes` and `PJRT_Executable_OutputDimensions`), loaded or not.
/// `num_outputs`, when the caller asked `PJRT_Executable_NumOutputs`, must agree with both.
pub(crate) fn read_output_shapes(
    api: &Api,
    executable: *mut sys::PJRT_Executable,
    num_outputs: Option<usize>,
) -> Result<Vec<ArrayShape>> {
    const TYPES: &str = "PJRT_Executable_OutputElementTypes";
    const DIMS: &str = "PJRT_Executable_OutputDimensions";
    let mut types = sys::PJRT_Executable_OutputElementTypes_Args::new();
    types.executable = executable;
    pjrt_call!(api, PJRT_Executable_OutputElementTypes, &mut types)?;
    let mut dims = sys::PJRT_Executable_OutputDimensions_Args::new();
    dims.executable = executable;
    pjrt_call!(api, PJRT_Executable_OutputDimensions, &mut dims)?;
    // The calls describe the same outputs: counts that disagree are refused before any array
    // is read.
    let n = types.num_output_types;
    match num_outputs {
        Some(outputs) if outputs != n || dims.num_outputs != n => {
            return Err(Error::invalid(format!(
                "the plugin reports {outputs} outputs but {n} output types and {} output shapes",
                dims.num_outputs
            )))
        }
        None if dims.num_outputs != n => {
            return Err(Error::invalid(format!(
                "the plugin reports {n} output types but {} output shapes",
                dims.num_outputs
            )))
        }
        _ => {}
    }
    // SAFETY: arrays owned by the executable, of the sizes the plugin reported; copied now.
    unsafe {
        let element_types = checked_slice(types.output_types, n, TYPES, "output element types")?;
        let ranks = checked_slice(dims.dim_sizes, n, DIMS, "output ranks")?;
        let total = ranks
            .iter()
            .try_fold(0usize, |total, rank| total.checked_add(*rank))
            .ok_or_else(|| Error::invalid(format!("{DIMS} returned output ranks {ranks:?}, which overflow")))?;
        let flat = checked_slice(dims.dims, total, DIMS, "output dimensions")?;
        let mut at = 0;
        Ok(element_types
            .iter()
            .zip(ranks)
            .map(|(t, rank)| {
                let shape =
                    ArrayShape { element_type: Some(ElementType::from_i32(t.0)), dims: flat[at..at + rank].to_vec() };
                at += rank;
                shape
            })
            .collect())
    }
}
