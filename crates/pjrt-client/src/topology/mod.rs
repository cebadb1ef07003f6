//! Topologies (the devices a program can be compiled for, with or without those devices
//! present), ahead-of-time compilation against them, and serialized executables.

pub(crate) mod device_description;
pub(crate) mod gpu_target;

use std::ffi::c_char;
use std::fmt;
use std::ptr::NonNull;

use crate::buffer::checks::check_array;
use crate::call::named_value::{read_named_values, RawNamedValues, Value};
use crate::call::release::release_if_in_callback;
use crate::call::trace::span;
use crate::call::{checked_slice, checked_string, pjrt_call};
use crate::client::Client;
use crate::compile_options::CompileOptions;
use crate::error::{Error, Result};
use crate::executable::compile::{check_stablehlo_version, RawProgram};
use crate::executable::unloaded::Executable;
use crate::plugin::Plugin;
use crate::program::Program;
use crate::sys::{self, Args};
use crate::topology::device_description::DeviceDescription;
use pjrt_types::ElementType;

/// A topology description: which devices exist, for compilation.
///
/// Either owned (made by [`Topology::create`] or [`Topology::deserialize`], destroyed on drop)
/// or borrowed from a client ([`Client::topology`], kept alive by a client handle, never
/// destroyed by us).
pub struct Topology {
    plugin: Plugin,
    client: Option<Client>,
    raw: NonNull<sys::PJRT_TopologyDescription>,
    owned: bool,
    /// For a GPU target's topology: the CUDA compiler pieces found beside the plugin, handed to
    /// each compilation that does not name its own ([`Topology::for_gpu_target`]).
    cuda_data_dir: Option<std::path::PathBuf>,
}

// SAFETY: topology descriptions are immutable after creation and PJRT's accessors are
// thread-safe; an owned one is destroyed exactly once, in Drop.
unsafe impl Send for Topology {}
// SAFETY: as above; all methods take `&self` and only read.
unsafe impl Sync for Topology {}

impl Client {
    /// The topology of this client's devices (owned by the client).
    pub fn topology(&self) -> Result<Topology> {
        let mut args = sys::PJRT_Client_TopologyDescription_Args::new();
        args.client = self.raw();
        pjrt_call!(self.api(), PJRT_Client_TopologyDescription, &mut args)?;
        let raw = NonNull::new(args.topology).ok_or_else(|| Error::invalid("the client returned no topology"))?;
        Ok(Topology {
            plugin: self.plugin().clone(),
            client: Some(self.clone()),
            raw,
            owned: false,
            cuda_data_dir: None,
        })
    }
}

impl Topology {
    /// Creates a topology by name with plugin-specific options (`PJRT_TopologyDescription_Create`).
    /// Many plugins (the CPU ones among them) do not implement this and say UNIMPLEMENTED.
    pub fn create(plugin: &Plugin, name: &str, options: &[(String, Value)]) -> Result<Topology> {
        if options.iter().any(|(_, v)| matches!(v, Value::Unknown(_))) {
            return Err(Error::invalid("topology options must have a known value type"));
        }
        let raw_options = RawNamedValues::new(options);
        let mut args = sys::PJRT_TopologyDescription_Create_Args::new();
        args.topology_name = name.as_ptr() as *const c_char;
        args.topology_name_size = name.len();
        args.create_options = raw_options.as_ptr();
        args.num_options = raw_options.len();
        pjrt_call!(plugin.api(), PJRT_TopologyDescription_Create, &mut args)?;
        let raw = NonNull::new(args.topology).ok_or_else(|| Error::invalid("the plugin returned no topology"))?;
        Ok(Topology { plugin: plugin.clone(), client: None, raw, owned: true, cuda_data_dir: None })
    }

    /// Takes ownership of a topology the plugin made for the caller.
    ///
    /// # Safety
    /// `raw` must be a live topology of `plugin` that the caller must destroy, and nobody else.
    pub(crate) unsafe fn from_owned(plugin: &Plugin, raw: NonNull<sys::PJRT_TopologyDescription>) -> Topology {
        Topology { plugin: plugin.clone(), client: None, raw, owned: true, cuda_data_dir: None }
    }

    /// Rebuilds a topology from [`Topology::serialize`]'s bytes.
    pub fn deserialize(plugin: &Plugin, bytes: &[u8]) -> Result<Topology> {
        let mut args = sys::PJRT_TopologyDescription_Deserialize_Args::new();
        args.serialized_topology = bytes.as_ptr() as *const c_char;
        args.serialized_topology_size = bytes.len();
        pjrt_call!(plugin.api(), PJRT_TopologyDescription_Deserialize, &mut args)?;
        let raw = NonNull::new(args.topology).ok_or_else(|| Error::invalid("the plugin returned no topology"))?;
        Ok(Topology { plugin: plugin.clone(), client: None, raw, owned: true, cuda_data_dir: None })
    }

    /// The platform name, e.g. `cpu` or `tpu`.
    pub fn platform_name(&self) -> Result<String> {
        let mut args = sys::PJRT_TopologyDescription_PlatformName_Args::new();
        args.topology = self.raw.as_ptr();
        pjrt_call!(self.plugin.api(), PJRT_TopologyDescription_PlatformName, &mut args)?;
        // SAFETY: owned by the topology; copied at once.
        unsafe {
            checked_string(
                args.platform_name,
                args.platform_name_size,
                "PJRT_TopologyDescription_PlatformName",
                "the name",
            )
        }
    }

    /// XLA's id of the platform (`PjRtPlatformId`): the FarmHash `Fingerprint64` of
    /// [`Topology::platform_name`], as for [`Client::platform_id`].
    ///
    /// ```
    /// # use pjrt_client::{Client, ClientOptions};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// let client = Client::new(&plugin, &ClientOptions::new())?;
    /// let topology = client.topology()?;
    /// assert_eq!(topology.platform_id()?, client.platform_id());
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn platform_id(&self) -> Result<u64> {
        Ok(crate::fingerprint::fingerprint64(self.platform_name()?.as_bytes()))
    }

    /// The platform version, as the plugin reports it (XLA's topology adds no prefix either).
    pub fn platform_version(&self) -> Result<String> {
        let mut args = sys::PJRT_TopologyDescription_PlatformVersion_Args::new();
        args.topology = self.raw.as_ptr();
        pjrt_call!(self.plugin.api(), PJRT_TopologyDescription_PlatformVersion, &mut args)?;
        // SAFETY: owned by the topology; copied at once.
        unsafe {
            checked_string(
                args.platform_version,
                args.platform_version_size,
                "PJRT_TopologyDescription_PlatformVersion",
                "the version",
            )
        }
    }

    /// Number of device descriptions.
    pub fn device_count(&self) -> Result<usize> {
        let mut args = sys::PJRT_TopologyDescription_GetDeviceDescriptions_Args::new();
        args.topology = self.raw.as_ptr();
        pjrt_call!(self.plugin.api(), PJRT_TopologyDescription_GetDeviceDescriptions, &mut args)?;
        // SAFETY: the array is owned by the topology.
        Ok(unsafe {
            checked_slice(
                args.descriptions,
                args.num_descriptions,
                "PJRT_TopologyDescription_GetDeviceDescriptions",
                "descriptions",
            )
        }?
        .len())
    }

    /// The descriptions of the topology's devices.
    pub fn device_descriptions(&self) -> Result<Vec<DeviceDescription<'_>>> {
        let mut args = sys::PJRT_TopologyDescription_GetDeviceDescriptions_Args::new();
        args.topology = self.raw.as_ptr();
        pjrt_call!(self.plugin.api(), PJRT_TopologyDescription_GetDeviceDescriptions, &mut args)?;
        // SAFETY: the array is owned by the topology, which `self` keeps alive.
        let raw = unsafe {
            checked_slice(
                args.descriptions,
                args.num_descriptions,
                "PJRT_TopologyDescription_GetDeviceDescriptions",
                "descriptions",
            )
        }?;
        Ok(raw.iter().filter_map(|d| NonNull::new(*d)).map(|d| DeviceDescription::new(self, d)).collect())
    }

    /// The plugin this topology belongs to.
    pub fn plugin(&self) -> &Plugin {
        &self.plugin
    }

    /// The raw handle, for use with [`crate::sys`]. Do not destroy it.
    pub fn as_raw(&self) -> *mut sys::PJRT_TopologyDescription {
        self.raw.as_ptr()
    }

    /// Topology attributes (plugin-specific).
    pub fn attributes(&self) -> Result<Vec<(String, Value)>> {
        let mut args = sys::PJRT_TopologyDescription_Attributes_Args::new();
        args.topology = self.raw.as_ptr();
        pjrt_call!(self.plugin.api(), PJRT_TopologyDescription_Attributes, &mut args)?;
        // SAFETY: owned by the topology; copied at once.
        unsafe {
            let attributes = checked_slice(
                args.attributes,
                args.num_attributes,
                "PJRT_TopologyDescription_Attributes",
                "attributes",
            )?;
            Ok(read_named_values(attributes.as_ptr(), attributes.len()))
        }
    }

    /// A fingerprint that identifies the topology.
    pub fn fingerprint(&self) -> Result<u64> {
        let mut args = sys::PJRT_TopologyDescription_Fingerprint_Args::new();
        args.topology = self.raw.as_ptr();
        pjrt_call!(self.plugin.api(), PJRT_TopologyDescription_Fingerprint, &mut args)?;
        Ok(args.fingerprint)
    }

    /// The kind ids of the memory spaces the topology's devices have (0.110+).
    pub fn memory_space_kind_ids(&self) -> Result<Vec<i32>> {
        let mut args = sys::PJRT_TopologyDescription_GetMemorySpaceKindIds_Args::new();
        args.topology = self.raw.as_ptr();
        pjrt_call!(self.plugin.api(), PJRT_TopologyDescription_GetMemorySpaceKindIds, &mut args)?;
        // SAFETY: owned by the topology; copied at once.
        Ok(unsafe {
            checked_slice(
                args.memory_space_kind_ids,
                args.num_memory_space_kind_ids,
                "PJRT_TopologyDescription_GetMemorySpaceKindIds",
                "kind ids",
            )
        }?
        .to_vec())
    }

    /// The shape a memory space stores an array of `element_type` and `dims` as
    /// (`PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace`, 0.109), for the memory kind
    /// `memory_kind_id` (one of [`Topology::memory_space_kind_ids`], checked first: the plugin is
    /// never asked about a kind it did not list). The plugin chooses the layout.
    pub fn canonical_shape(
        &self,
        memory_kind_id: i32,
        element_type: ElementType,
        dims: &[i64],
    ) -> Result<CanonicalShape> {
        const SLOT: &str = "PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace";
        let api = self.plugin.api();
        check_array(api, element_type, dims)?;
        let kinds = self.memory_space_kind_ids()?;
        if !kinds.contains(&memory_kind_id) {
            return Err(Error::invalid(format!(
                "memory kind id {memory_kind_id} is not one of this topology's memory kinds {kinds:?}"
            )));
        }
        let mut args = sys::PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace_Args::new();
        args.topology = self.raw.as_ptr();
        args.memory_space_kind_id = memory_kind_id;
        args.dims = dims.as_ptr();
        args.num_dims = dims.len();
        args.element_type = sys::PJRT_Buffer_Type(element_type.to_i32());
        pjrt_call!(api, PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace, &mut args)?;
        // SAFETY: the bytes live until the deleter is called, right after the copy.
        let bytes =
            unsafe { checked_slice(args.serialized_shape as *const u8, args.serialized_shape_size, SLOT, "the shape") }
                .map(|b| b.to_vec());
        if let Some(deleter) = args.serialized_shape_deleter {
            // SAFETY: called once, on the bytes the plugin handed out.
            unsafe { deleter(args.serialized_shape) };
        }
        CanonicalShape::decode(bytes?)
    }

    /// Serializes the topology (the bytes are plugin-specific).
    pub fn serialize(&self) -> Result<Vec<u8>> {
        let mut args = sys::PJRT_TopologyDescription_Serialize_Args::new();
        args.topology = self.raw.as_ptr();
        pjrt_call!(self.plugin.api(), PJRT_TopologyDescription_Serialize, &mut args)?;
        // SAFETY: the bytes live until the deleter is called, which happens right after the copy.
        let bytes = unsafe {
            checked_slice(
                args.serialized_bytes as *const u8,
                args.serialized_bytes_size,
                "PJRT_TopologyDescription_Serialize",
                "the bytes",
            )
        }
        .map(<[u8]>::to_vec);
        if let Some(deleter) = args.serialized_topology_deleter {
            // SAFETY: called once, on the object the plugin handed out.
            unsafe { deleter(args.serialized_topology) };
        }
        bytes
    }

    /// Compiles `program` for this topology without needing its devices (`PJRT_Compile`). With
    /// `client`, the plugin may use it for device information; it must be a client of the
    /// topology's plugin ([`Error::ForeignObject`] otherwise).
    ///
    /// Ahead-of-time compilation: compile once, serialize, load later (the CPU plugin at API
    /// 0.115 implements it; 0.106 does not):
    ///
    /// ```
    /// use pjrt_client::{Client, ClientOptions, CompileOptions, ExecuteOptions, Plugin, Program};
    ///     ///
    /// // The default CPU plugin (API 0.115), installed into the cache if needed.
    /// let plugin = Plugin::load(pjrt_plugins::install(pjrt_plugins::default_plugin(), |line| eprintln!("{line}"))?)?;
    /// let client = Client::new(&plugin, &ClientOptions::new())?;
    /// let program = Program::mlir_text(r#"
    ///   func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
    ///     %0 = stablehlo.add %a, %b : tensor<4xf32>
    ///     return %0 : tensor<4xf32>
    ///   }"#)?;
    /// let options = CompileOptions::new();
    /// let topology = client.topology()?;
    /// assert_eq!(topology.platform_name()?, "cpu");
    /// let compiled = topology.compile(&program, &options, None)?; // no devices needed
    /// let bytes = compiled.serialize()?; // store these, e.g. in a file
    ///     ///
    /// // Later, possibly in another process: load and run.
    /// let exe = client.deserialize_and_load(&bytes)?;
    /// let x = client.upload(&[1f32, 2., 3., 4.], &[4])?;
    /// assert_eq!(exe.execute(&[&x, &x], &ExecuteOptions::new())?[0].to_vec::<f32>()?, [2., 4., 6., 8.]);
    /// // Or load the compiled program directly.
    /// let loaded = client.load(&compiled, &options)?;
    /// assert_eq!(loaded.execute(&[&x, &x], &ExecuteOptions::new())?[0].to_vec::<f32>()?, [2., 4., 6., 8.]);
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn compile(&self, program: &Program, options: &CompileOptions, client: Option<&Client>) -> Result<Executable> {
        let _span = span!(INFO, "compile", format = program.format().as_pjrt_str(), bytes = program.code().len());
        if let Some(client) = client {
            self.plugin.check_same(client.plugin(), "the client")?;
        }
        let program = &*crate::program::for_plugin(program, self.plugin.stablehlo_current_version())?;
        check_stablehlo_version(&self.plugin, program)?;
        crate::program::refuse_what_aborts_plugins(program)?;
        let with_data_dir;
        let options = match &self.cuda_data_dir {
            Some(dir) if !sets_cuda_data_dir(options) => {
                with_data_dir = options
                    .clone()
                    .debug_option(crate::compile_options::DebugOption::GpuCudaDataDir(dir.display().to_string()));
                &with_data_dir
            }
            _ => options,
        };
        let options_bytes = options.to_bytes()?;
        let raw_program = RawProgram::new(program);
        let mut args = sys::PJRT_Compile_Args::new();
        args.topology = self.raw.as_ptr();
        args.program = raw_program.as_ptr();
        args.compile_options = options_bytes.as_ptr() as *const c_char;
        args.compile_options_size = options_bytes.len();
        args.client = client.map(|c| c.raw()).unwrap_or(std::ptr::null_mut());
        pjrt_call!(self.plugin.api(), PJRT_Compile, &mut args)?;
        let raw = NonNull::new(args.executable).ok_or_else(|| Error::invalid("PJRT_Compile returned no executable"))?;
        Ok(Executable { plugin: self.plugin.clone(), raw })
    }
}

/// Whether `options` name the CUDA data folder themselves (by name or in a DebugOptions message).
fn sets_cuda_data_dir(options: &CompileOptions) -> bool {
    options.xla_options().contains_key("xla_gpu_cuda_data_dir")
        || options.debug_options().is_some_and(|d| !d.xla_gpu_cuda_data_dir.is_empty())
}

impl Drop for Topology {
    fn drop(&mut self) {
        release_if_in_callback!(Topology {
            plugin: self.plugin.clone(),
            client: self.client.take(),
            raw: self.raw,
            owned: std::mem::replace(&mut self.owned, false),
            cuda_data_dir: None,
        });
        if self.owned {
            let mut args = sys::PJRT_TopologyDescription_Destroy_Args::new();
            args.topology = self.raw.as_ptr();
            let _ = pjrt_call!(self.plugin.api(), PJRT_TopologyDescription_Destroy, &mut args);
        }
        let _ = &self.client; // a borrowed topology lives as long as this client handle
    }
}

impl fmt::Debug for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Topology").field("platform", &self.platform_name().ok()).field("owned", &self.owned).finish()
    }
}

/// A shape as a memory space stores it: the serialized `xla.ShapeProto` the plugin returned,
/// with the parts this crate reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CanonicalShape {
    /// The serialized `xla.ShapeProto`.
    pub bytes: Vec<u8>,
    /// `xla.PrimitiveType` number (not a PJRT buffer type: F32 is 11 in both, but not all agree).
    pub primitive_type: i32,
    /// Dimensions.
    pub dims: Vec<i64>,
    /// The layout's minor-to-major order, when the shape has a layout.
    pub minor_to_major: Option<Vec<i64>>,
}

impl CanonicalShape {
    fn decode(bytes: Vec<u8>) -> Result<CanonicalShape> {
        use prost::Message;
        let proto = shape_proto::ShapeProto::decode(bytes.as_slice())
            .map_err(|source| Error::Decode { what: "the canonical shape (xla.ShapeProto)", source })?;
        Ok(CanonicalShape {
            primitive_type: proto.element_type,
            dims: proto.dimensions,
            minor_to_major: proto.layout.map(|l| l.minor_to_major),
            bytes,
        })
    }
}

/// The fields of `xla.ShapeProto` / `xla.LayoutProto` read here (field numbers from the
/// published `xla_data.proto`).
mod shape_proto {
    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct ShapeProto {
        #[prost(int32, tag = "2")]
        pub element_type: i32,
        #[prost(int64, repeated, tag = "3")]
        pub dimensions: Vec<i64>,
        #[prost(message, optional, tag = "5")]
        pub layout: Option<LayoutProto>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct LayoutProto {
        #[prost(int64, repeated, tag = "1")]
        pub minor_to_major: Vec<i64>,
    }
}
