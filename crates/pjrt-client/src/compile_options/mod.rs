//! Compile options: a serialized `CompileOptionsProto` edited in place, entry by entry (so every
//! field survives every edit, also those this crate does not model), a typed view of the fields
//! it does model (our own `prost` declarations, field numbers from XLA's published proto), and a
//! builder that never produces options that abort a plugin.
//!
//! - `mod.rs`: the builder, [`CompileOptions`], with [`DebugOption`] and [`DeviceAssignment`].
//! - `proto.rs`: the typed view, [`proto`]: our own `prost` messages, with XLA's field numbers.
//! - `wire.rs`: the wire-format editor the serialized options are kept in, entry by entry.

pub mod proto;
mod wire;

use std::collections::BTreeMap;

use prost::Message as _;

use crate::error::{Error, Result};
use wire::{Field, Message};

pub use proto::OptionValue;

/// Which devices run which replica and partition: `devices[replica][partition]` = device id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceAssignment {
    devices: Vec<Vec<i64>>,
}

impl DeviceAssignment {
    /// `devices[replica][partition]` = global device id. Every row must have the same length.
    pub fn new(devices: Vec<Vec<i64>>) -> Result<Self> {
        let partitions = devices.first().map(|r| r.len()).unwrap_or(0);
        if devices.is_empty() || partitions == 0 {
            return Err(Error::invalid("a device assignment needs at least one replica and one partition"));
        }
        if devices.iter().any(|r| r.len() != partitions) {
            return Err(Error::invalid("every replica of a device assignment needs the same number of partitions"));
        }
        Ok(Self { devices })
    }

    /// Number of replicas.
    pub fn num_replicas(&self) -> usize {
        self.devices.len()
    }

    /// Number of partitions.
    pub fn num_partitions(&self) -> usize {
        self.devices[0].len()
    }

    /// Device id of one replica and partition.
    pub fn device(&self, replica: usize, partition: usize) -> Option<i64> {
        self.devices.get(replica)?.get(partition).copied()
    }

    /// Every device id, replica-major.
    pub fn device_ids(&self) -> impl Iterator<Item = i64> + '_ {
        self.devices.iter().flatten().copied()
    }

    fn to_proto(&self) -> proto::DeviceAssignmentProto {
        proto::DeviceAssignmentProto {
            replica_count: self.num_replicas() as i32,
            computation_count: self.num_partitions() as i32,
            computation_devices: (0..self.num_partitions())
                .map(|p| proto::ComputationDevice { replica_device_ids: self.devices.iter().map(|r| r[p]).collect() })
                .collect(),
        }
    }

    fn from_proto(p: &proto::DeviceAssignmentProto) -> Result<Self> {
        let bad = || Error::invalid("the device assignment in the compile options is inconsistent");
        let replicas = usize::try_from(p.replica_count).ok().filter(|&r| r >= 1).ok_or_else(bad)?;
        let partitions = usize::try_from(p.computation_count).ok().filter(|&c| c >= 1).ok_or_else(bad)?;
        // The counts come from untrusted bytes: check them against the ids actually present
        // before allocating anything of their size (a 21-byte proto claiming 2^31 replicas
        // used to request 48 GiB here).
        if p.computation_devices.len() != partitions
            || p.computation_devices.iter().any(|c| c.replica_device_ids.len() != replicas)
        {
            return Err(bad());
        }
        let devices =
            (0..replicas).map(|r| p.computation_devices.iter().map(|c| c.replica_device_ids[r]).collect()).collect();
        Ok(Self { devices })
    }
}

/// Options for compiling a program. The defaults (1 replica, 1 partition) are always valid.
///
/// Options read with [`CompileOptions::from_proto_bytes`] keep every field, also those this crate
/// does not model: an edit rewrites only the fields it sets, all others keep their bytes.
///
/// ```
/// use pjrt_client::{CompileOptions, ExecuteOptions, Program};
///
/// // Replicas, partitions (SPMD), XLA debug options; checked before any plugin sees them.
/// let spmd = CompileOptions::new().num_partitions(4).use_spmd_partitioning(true);
/// assert_eq!((spmd.num_replicas_requested(), spmd.num_partitions_requested()), (1, 4));
/// assert!(CompileOptions::new().num_replicas(0).validate().is_err());
/// // The serialized `CompileOptionsProto` (what JAX's compile_options.pb files hold) round-trips.
/// let bytes = spmd.to_bytes()?;
/// assert_eq!(CompileOptions::from_proto_bytes(&bytes)?.num_partitions_requested(), 4);
///
/// // To get JAX's numbers from a JAX-lowered program, compile with JAX's XLA settings:
/// // on CPU, max/min propagate NaN as in JAX.
/// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
/// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
/// let program = Program::mlir_text(r#"
///   func.func @main(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
///     %0 = stablehlo.maximum %a, %b : tensor<2xf32>
///     return %0 : tensor<2xf32>
///   }"#)?;
/// let options = CompileOptions::new().jax_defaults("cpu").xla_option("xla_cpu_enable_fast_math", false);
/// let exe = client.compile(&program, &options)?;
/// let a = client.upload(&[f32::NAN, 1.], &[2])?;
/// let b = client.upload(&[1f32, 2.], &[2])?;
/// let max = exe.execute(&[&a, &b], &ExecuteOptions::new())?[0].to_vec::<f32>()?;
/// assert!(max[0].is_nan());
/// assert_eq!(max[1], 2.);
/// # Ok::<(), pjrt_client::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct CompileOptions {
    /// The serialized options, entry by entry: what [`CompileOptions::to_bytes`] sends. Edits
    /// rewrite only the entries they set, so fields this crate does not model survive them.
    wire: Message,
    /// The typed view of `wire`, decoded again after every edit.
    proto: proto::CompileOptionsProto,
    /// Why an edit could not be made (it was then left out), reported by `validate`. Edits only
    /// re-read what `from_proto_bytes` already checked, so this stays `None`; it exists so that a
    /// builder method never has to panic.
    defect: Option<String>,
}

/// Two options are equal when they send the same bytes.
impl PartialEq for CompileOptions {
    fn eq(&self, other: &Self) -> bool {
        self.wire == other.wire && self.defect == other.defect
    }
}

impl Default for CompileOptions {
    fn default() -> Self {
        Self::new()
    }
}

/// Field numbers, from XLA's `compile_options.proto`.
mod field {
    /// `CompileOptionsProto.argument_layouts`.
    pub const ARGUMENT_LAYOUTS: u32 = 1;
    /// `CompileOptionsProto.parameter_is_tupled_arguments`.
    pub const TUPLED_ARGUMENTS: u32 = 2;
    /// `CompileOptionsProto.executable_build_options`.
    pub const BUILD: u32 = 3;
    /// `CompileOptionsProto.profile_version`.
    pub const PROFILE_VERSION: u32 = 5;
    /// `ExecutableBuildOptionsProto.device_ordinal`.
    pub const DEVICE_ORDINAL: u32 = 1;
    /// `ExecutableBuildOptionsProto.result_layout`.
    pub const RESULT_LAYOUT: u32 = 2;
    /// `ExecutableBuildOptionsProto.debug_options`.
    pub const DEBUG_OPTIONS: u32 = 3;
    /// `ExecutableBuildOptionsProto.use_auto_spmd_partitioning`.
    pub const AUTO_SPMD: u32 = 7;
    /// `ExecutableBuildOptionsProto.alias_passthrough_params`.
    pub const ALIAS_PASSTHROUGH: u32 = 10;
    /// `ExecutableBuildOptionsProto.auto_spmd_partitioning_mesh_shape`.
    pub const MESH_SHAPE: u32 = 16;
    /// `ExecutableBuildOptionsProto.auto_spmd_partitioning_mesh_ids`.
    pub const MESH_IDS: u32 = 17;
    /// `CompileOptionsProto.compile_portable_executable`.
    pub const PORTABLE: u32 = 4;
    /// `CompileOptionsProto.env_option_overrides`, a map: entries of {key = 1, value = 2}.
    pub const OVERRIDES: u32 = 7;
    /// Map entry key.
    pub const KEY: u32 = 1;
    /// Map entry value.
    pub const VALUE: u32 = 2;
    /// `ExecutableBuildOptionsProto.num_replicas`.
    pub const REPLICAS: u32 = 4;
    /// `ExecutableBuildOptionsProto.num_partitions`.
    pub const PARTITIONS: u32 = 5;
    /// `ExecutableBuildOptionsProto.use_spmd_partitioning`.
    pub const SPMD: u32 = 6;
    /// `ExecutableBuildOptionsProto.device_assignment`.
    pub const ASSIGNMENT: u32 = 9;
    /// `ExecutableBuildOptionsProto.use_shardy_partitioner`.
    pub const SHARDY: u32 = 19;
}

/// Names of the messages, for errors.
const OPTIONS_NAME: &str = "CompileOptionsProto";
const BUILD_NAME: &str = "ExecutableBuildOptionsProto";
const ENTRY_NAME: &str = "env_option_overrides entry";
const DEBUG_NAME: &str = "DebugOptions";

/// The largest protobuf field number.
const MAX_FIELD_NUMBER: u32 = (1 << 29) - 1;

/// A packed repeated int64 field (how XLA writes them).
fn packed_int64(number: u32, values: &[i64]) -> Field {
    let mut payload = Vec::with_capacity(values.len() * 2);
    for &v in values {
        prost::encoding::encode_varint(v as u64, &mut payload);
    }
    Field::bytes(number, &payload)
}

/// One field of XLA's `DebugOptions`, for [`CompileOptions::debug_option`]: typed for the
/// common ones, raw (field number and value, from XLA's `xla.proto`) for the rest.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DebugOption {
    /// `xla_dump_to` (109): a directory XLA writes the HLO of each compilation into.
    DumpTo(String),
    /// `xla_dump_hlo_as_text` (112).
    DumpHloAsText(bool),
    /// `xla_dump_hlo_module_re` (110): dump only modules whose name matches.
    DumpHloModuleRe(String),
    /// `xla_dump_hlo_pass_re` (111): also dump before and after the passes that match.
    DumpHloPassRe(String),
    /// `xla_cpu_enable_fast_math` (99).
    CpuEnableFastMath(bool),
    /// `xla_cpu_enable_fast_min_max` (140): `false` propagates NaN through min/max.
    CpuEnableFastMinMax(bool),
    /// `xla_backend_optimization_level` (31).
    BackendOptimizationLevel(i32),
    /// `xla_disable_hlo_passes` (30): pass names to skip.
    DisableHloPasses(Vec<String>),
    /// `xla_gpu_cuda_data_dir` (61): the folder XLA:GPU takes `bin/ptxas` and
    /// `nvvm/libdevice/libdevice.10.bc` from when it compiles for an NVIDIA GPU
    /// (`pjrt_plugins::cuda_data_dir` finds the one installed beside a CUDA plugin). Per
    /// compilation, instead of `XLA_FLAGS` or `PATH` for the whole process.
    ///
    /// ```
    /// use pjrt_client::{CompileOptions, DebugOption};
    ///
    /// let options = CompileOptions::new().debug_option(DebugOption::GpuCudaDataDir("/opt/cuda".into()));
    /// assert!(options.xla_options().contains_key("xla_gpu_cuda_data_dir"));
    /// ```
    GpuCudaDataDir(String),
    /// Any varint field (bool, int32, int64, enum) by number; a negative int as its two's
    /// complement (`value as u64`), as protobuf writes it.
    RawVarint {
        /// The field number in `xla.DebugOptions`.
        number: u32,
        /// The value.
        value: u64,
    },
    /// Any string, bytes or message field by number (one entry; for a repeated field, the list
    /// becomes this one element).
    RawBytes {
        /// The field number in `xla.DebugOptions`.
        number: u32,
        /// The payload.
        value: Vec<u8>,
    },
}

impl DebugOption {
    /// The option's XLA name and value, for `env_option_overrides` (None: raw or repeated).
    fn by_name(&self) -> Option<(&'static str, XlaOptionValue)> {
        Some(match self {
            DebugOption::DumpTo(dir) => ("xla_dump_to", dir.as_str().into()),
            DebugOption::DumpHloAsText(on) => ("xla_dump_hlo_as_text", (*on).into()),
            DebugOption::DumpHloModuleRe(re) => ("xla_dump_hlo_module_re", re.as_str().into()),
            DebugOption::DumpHloPassRe(re) => ("xla_dump_hlo_pass_re", re.as_str().into()),
            DebugOption::CpuEnableFastMath(on) => ("xla_cpu_enable_fast_math", (*on).into()),
            DebugOption::CpuEnableFastMinMax(on) => ("xla_cpu_enable_fast_min_max", (*on).into()),
            DebugOption::GpuCudaDataDir(dir) => ("xla_gpu_cuda_data_dir", dir.as_str().into()),
            DebugOption::BackendOptimizationLevel(level) => {
                ("xla_backend_optimization_level", i64::from(*level).into())
            }
            DebugOption::DisableHloPasses(_) | DebugOption::RawVarint { .. } | DebugOption::RawBytes { .. } => {
                return None
            }
        })
    }

    /// The field number and the entries that set it (none: the proto3 default).
    fn entries(&self) -> (u32, Vec<Field>) {
        let text = |number: u32, s: &str| {
            (number, if s.is_empty() { vec![] } else { vec![Field::bytes(number, s.as_bytes())] })
        };
        let flag = |number: u32, on: bool| (number, scalar(number, on.into()).into_iter().collect());
        match self {
            DebugOption::DumpTo(dir) => text(109, dir),
            DebugOption::DumpHloAsText(on) => flag(112, *on),
            DebugOption::DumpHloModuleRe(re) => text(110, re),
            DebugOption::DumpHloPassRe(re) => text(111, re),
            DebugOption::CpuEnableFastMath(on) => flag(99, *on),
            DebugOption::CpuEnableFastMinMax(on) => flag(140, *on),
            DebugOption::GpuCudaDataDir(dir) => text(61, dir),
            // int32 is sign-extended on the wire.
            DebugOption::BackendOptimizationLevel(level) => {
                (31, scalar(31, *level as i64 as u64).into_iter().collect())
            }
            DebugOption::DisableHloPasses(passes) => {
                (30, passes.iter().map(|p| Field::bytes(30, p.as_bytes())).collect())
            }
            DebugOption::RawVarint { number, value } => (*number, vec![Field::varint(*number, *value)]),
            DebugOption::RawBytes { number, value } => (*number, vec![Field::bytes(*number, value)]),
        }
    }
}

fn decode_view(bytes: &[u8]) -> Result<proto::CompileOptionsProto> {
    proto::CompileOptionsProto::decode(bytes).map_err(|source| Error::Decode { what: OPTIONS_NAME, source })
}

/// A proto3 scalar: its default value is not written (as XLA and prost write them).
fn scalar(number: u32, value: u64) -> Option<Field> {
    (value != 0).then(|| Field::varint(number, value))
}

/// Whether a map entry of `env_option_overrides` has key `name`.
fn override_key_is(entry: &Field, name: &str) -> bool {
    // Every entry was parsed when the options were read, so `ok()` loses nothing; an entry that
    // would not parse is kept rather than guessed at.
    entry
        .payload()
        .and_then(|payload| Message::parse(payload, ENTRY_NAME).ok())
        .is_some_and(|entry| entry.last_bytes(field::KEY) == name.as_bytes())
}

impl CompileOptions {
    /// 1 replica, 1 partition, the plugin's default device.
    pub fn new() -> Self {
        let build = Message::new(vec![Field::varint(field::REPLICAS, 1), Field::varint(field::PARTITIONS, 1)]);
        Self {
            wire: Message::new(vec![Field::bytes(field::BUILD, &build.encode())]),
            proto: proto::CompileOptionsProto {
                executable_build_options: Some(proto::ExecutableBuildOptionsProto {
                    num_replicas: 1,
                    num_partitions: 1,
                    ..Default::default()
                }),
                ..Default::default()
            },
            defect: None,
        }
    }

    /// Takes a serialized `CompileOptionsProto` (e.g. one JAX produced). Every field is kept as
    /// it is, including those this crate does not model, also through later edits. Missing
    /// replica or partition counts are set to 1 (an options proto without them aborts XLA).
    pub fn from_proto_bytes(bytes: &[u8]) -> Result<Self> {
        let proto = decode_view(bytes)?;
        let wire = Message::parse(bytes, OPTIONS_NAME)?;
        // Edits parse the build options and the override entries again: refuse now what they
        // could not parse then.
        Message::parse(&wire.merged(field::BUILD, BUILD_NAME)?, BUILD_NAME)?;
        for entry in wire.fields().iter().filter(|f| f.number() == field::OVERRIDES) {
            // prost reads a map entry of any wire type as length-delimited, so its typed view
            // would disagree with the bytes: refused here.
            let payload = entry.payload().ok_or_else(|| {
                Error::invalid(format!("malformed {OPTIONS_NAME}: an {ENTRY_NAME} is not length-delimited"))
            })?;
            Message::parse(payload, ENTRY_NAME)?;
        }
        let mut options = Self { wire, proto, defect: None };
        let (no_replicas, no_partitions) = (options.raw_replicas() == 0, options.raw_partitions() == 0);
        if no_replicas || no_partitions {
            options.edit_build(|build| {
                if no_replicas {
                    build.set(field::REPLICAS, Some(Field::varint(field::REPLICAS, 1)));
                }
                if no_partitions {
                    build.set(field::PARTITIONS, Some(Field::varint(field::PARTITIONS, 1)));
                }
            });
        }
        options.validate()?;
        Ok(options)
    }

    /// Applies `change` to the top-level entries and decodes the typed view again; an edit that
    /// fails is left out and recorded in `defect`.
    fn edit(&mut self, change: impl FnOnce(&mut Message) -> Result<()>) {
        let mut wire = self.wire.clone();
        match change(&mut wire).and_then(|()| decode_view(&wire.encode())) {
            Ok(proto) => {
                self.wire = wire;
                self.proto = proto;
            }
            Err(e) => {
                self.defect.get_or_insert_with(|| format!("editing the compile options failed: {e}"));
            }
        }
    }

    /// Applies `change` to `executable_build_options`. Its occurrences are read as one message
    /// (their concatenation, which is how protobuf merges them) and written back as one, where
    /// the first was; entries `change` does not set keep their bytes.
    fn edit_build(&mut self, change: impl FnOnce(&mut Message)) {
        self.edit(|top| {
            let mut build = Message::parse(&top.merged(field::BUILD, BUILD_NAME)?, BUILD_NAME)?;
            change(&mut build);
            top.set(field::BUILD, Some(Field::bytes(field::BUILD, &build.encode())));
            Ok(())
        })
    }

    fn build_ref(&self) -> Option<&proto::ExecutableBuildOptionsProto> {
        self.proto.executable_build_options.as_ref()
    }

    /// Number of replicas (data-parallel copies), at least 1.
    pub fn num_replicas(mut self, replicas: usize) -> Self {
        self.edit_build(|build| build.set(field::REPLICAS, scalar(field::REPLICAS, replicas as u64)));
        self
    }

    /// Number of partitions (SPMD shards), at least 1.
    pub fn num_partitions(mut self, partitions: usize) -> Self {
        self.edit_build(|build| build.set(field::PARTITIONS, scalar(field::PARTITIONS, partitions as u64)));
        self
    }

    /// Which device runs each replica and partition. Also sets the replica and partition counts.
    pub fn device_assignment(mut self, assignment: &DeviceAssignment) -> Self {
        let encoded = assignment.to_proto().encode_to_vec();
        self.edit_build(|build| {
            build.set(field::REPLICAS, scalar(field::REPLICAS, assignment.num_replicas() as u64));
            build.set(field::PARTITIONS, scalar(field::PARTITIONS, assignment.num_partitions() as u64));
            build.set(field::ASSIGNMENT, Some(Field::bytes(field::ASSIGNMENT, &encoded)));
        });
        self
    }

    /// Turns on SPMD partitioning (needed for `num_partitions > 1` with sharding annotations).
    pub fn use_spmd_partitioning(mut self, on: bool) -> Self {
        self.edit_build(|build| build.set(field::SPMD, scalar(field::SPMD, on.into())));
        self
    }

    /// Uses the Shardy partitioner (modern JAX lowers `sdy` shardings).
    pub fn use_shardy_partitioner(mut self, on: bool) -> Self {
        self.edit_build(|build| build.set(field::SHARDY, scalar(field::SHARDY, on.into())));
        self
    }

    /// Compiles an executable that is not bound to devices; run it with an explicit device.
    pub fn compile_portable_executable(mut self, on: bool) -> Self {
        self.edit(|top| {
            top.set(field::PORTABLE, scalar(field::PORTABLE, on.into()));
            Ok(())
        });
        self
    }

    /// Records why an edit was refused; [`CompileOptions::validate`] reports it.
    pub(crate) fn refuse(&mut self, why: String) {
        self.defect.get_or_insert(why);
    }

    /// Sets `argument_layouts` to these serialized `ShapeProto`s (the layouts module encodes
    /// them; see `CompileOptions::argument_layouts`).
    pub(crate) fn set_argument_layouts(&mut self, shapes: &[Vec<u8>]) {
        let entries = shapes.iter().map(|s| Field::bytes(field::ARGUMENT_LAYOUTS, s)).collect();
        self.edit(|top| {
            top.set_all(field::ARGUMENT_LAYOUTS, entries);
            Ok(())
        });
    }

    /// Sets `executable_build_options.result_layout` to this serialized `ShapeProto`.
    pub(crate) fn set_result_layout(&mut self, shape: &[u8]) {
        self.edit_build(|build| build.set(field::RESULT_LAYOUT, Some(Field::bytes(field::RESULT_LAYOUT, shape))));
    }

    /// The device ordinal XLA compiles for (`executable_build_options.device_ordinal`; -1 or
    /// unset: the plugin chooses). The CPU plugins place by device assignment, not by this.
    pub fn device_ordinal(mut self, ordinal: i64) -> Self {
        self.edit_build(|build| build.set(field::DEVICE_ORDINAL, scalar(field::DEVICE_ORDINAL, ordinal as u64)));
        self
    }

    /// Whether the entry computation takes its arguments as one tuple
    /// (`parameter_is_tupled_arguments`).
    pub fn parameter_is_tupled_arguments(mut self, on: bool) -> Self {
        self.edit(|top| {
            top.set(field::TUPLED_ARGUMENTS, scalar(field::TUPLED_ARGUMENTS, on.into()));
            Ok(())
        });
        self
    }

    /// The profile version for profile-guided compilation (`profile_version`; 0: none).
    pub fn profile_version(mut self, version: i64) -> Self {
        self.edit(|top| {
            top.set(field::PROFILE_VERSION, scalar(field::PROFILE_VERSION, version as u64));
            Ok(())
        });
        self
    }

    /// Lets parameters that are passed through to the outputs alias them
    /// (`executable_build_options.alias_passthrough_params`).
    pub fn alias_passthrough_params(mut self, on: bool) -> Self {
        self.edit_build(|build| build.set(field::ALIAS_PASSTHROUGH, scalar(field::ALIAS_PASSTHROUGH, on.into())));
        self
    }

    /// Turns on automatic SPMD partitioning over a device mesh: `mesh_shape` (e.g. `[2, 2]`)
    /// and the device ids laid out on it, row-major (empty: `0..n`). Sets
    /// `use_auto_spmd_partitioning`, `auto_spmd_partitioning_mesh_shape` and `_mesh_ids`.
    /// A mesh whose ids do not fill its shape is refused by [`CompileOptions::validate`].
    pub fn auto_spmd_partitioning(mut self, mesh_shape: &[i64], mesh_ids: &[i64]) -> Self {
        let size = mesh_shape.iter().try_fold(1i64, |n, &d| if d >= 1 { n.checked_mul(d) } else { None });
        match size {
            None => self.refuse(format!("the auto-SPMD mesh shape {mesh_shape:?} needs dimensions of at least 1")),
            Some(n) if !mesh_ids.is_empty() && n != mesh_ids.len() as i64 => self.refuse(format!(
                "the auto-SPMD mesh {mesh_shape:?} has {n} places but {} device ids were given",
                mesh_ids.len()
            )),
            Some(_) => {
                let (shape, ids) =
                    (packed_int64(field::MESH_SHAPE, mesh_shape), packed_int64(field::MESH_IDS, mesh_ids));
                self.edit_build(|build| {
                    build.set(field::AUTO_SPMD, Some(Field::varint(field::AUTO_SPMD, 1)));
                    build.set(field::MESH_SHAPE, Some(shape));
                    build.set(field::MESH_IDS, (!mesh_ids.is_empty()).then_some(ids));
                });
            }
        }
        self
    }

    /// Sets one of XLA's debug options (`DebugOptions`).
    ///
    /// XLA reads a `DebugOptions` message as the whole set: a field it does not carry is its
    /// proto default (0, false, ""), not XLA's usual default, and a message made of one field
    /// makes the CPU plugins fail ("Too many extra compilation parts", from a split count of 0).
    /// So:
    /// - when the options already carry a `DebugOptions` message (as JAX's serialized options
    ///   do, read with [`CompileOptions::from_proto_bytes`]), the field is set in it, every other
    ///   field keeping its bytes;
    /// - otherwise a typed option is sent by name in `env_option_overrides` (as
    ///   [`CompileOptions::xla_option`] does), which XLA applies on top of its defaults, while a
    ///   raw field or [`DebugOption::DisableHloPasses`] (which have no name to send) is refused
    ///   by [`CompileOptions::validate`], as is a raw field number of 0 or past 2^29 - 1.
    ///
    /// ```
    /// use pjrt_client::compile_options::OptionValue;
    /// use pjrt_client::{CompileOptions, DebugOption};
    ///
    /// // No DebugOptions message yet: sent by name, on top of XLA's defaults.
    /// let options = CompileOptions::new().debug_option(DebugOption::DumpTo("/tmp/xla-dump".into()));
    /// assert_eq!(options.xla_options()["xla_dump_to"].value, Some(OptionValue::String("/tmp/xla-dump".into())));
    /// assert!(CompileOptions::new().debug_option(DebugOption::RawVarint { number: 298, value: 1 }).validate().is_err());
    ///
    /// // Options that carry a DebugOptions message (here a one-field one, as JAX would send a full
    /// // one) are edited in place.
    /// let jax_like = [0x1a, 0x09, 0x20, 0x01, 0x28, 0x01, 0x1a, 0x03, 0x98, 0x06, 0x01]; // fast math on
    /// let read = CompileOptions::from_proto_bytes(&jax_like)?
    ///     .debug_option(DebugOption::DumpTo("/tmp/xla-dump".into()))
    ///     .debug_option(DebugOption::RawVarint { number: 298, value: 1 }); // xla_cpu_use_thunk_runtime
    /// assert_eq!(read.debug_options().unwrap().xla_dump_to, "/tmp/xla-dump");
    /// assert!(read.xla_options().is_empty());
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn debug_option(mut self, option: DebugOption) -> Self {
        // Checked before any entry is built (encoding a key of field 0 would panic).
        if let DebugOption::RawVarint { number, .. } | DebugOption::RawBytes { number, .. } = option {
            if number == 0 || number > MAX_FIELD_NUMBER {
                self.refuse(format!("{number} is not a protobuf field number (1 to {MAX_FIELD_NUMBER})"));
                return self;
            }
        }
        if self.debug_options().is_none() {
            return match option.by_name() {
                Some((name, value)) => self.xla_option(name, value),
                None => {
                    self.refuse(format!(
                        "{option:?} can only be set in a DebugOptions message, and these options carry none: a \
                         message made from scratch lacks XLA's defaults (the CPU plugins then fail to compile). \
                         Start from options that carry one (e.g. JAX's, through from_proto_bytes), or set the \
                         option by name with xla_option"
                    ));
                    self
                }
            };
        }
        let (number, entries) = option.entries();
        self.edit(|top| {
            let mut build = Message::parse(&top.merged(field::BUILD, BUILD_NAME)?, BUILD_NAME)?;
            let mut debug = Message::parse(&build.merged(field::DEBUG_OPTIONS, DEBUG_NAME)?, DEBUG_NAME)?;
            debug.set_all(number, entries);
            build.set(field::DEBUG_OPTIONS, Some(Field::bytes(field::DEBUG_OPTIONS, &debug.encode())));
            top.set(field::BUILD, Some(Field::bytes(field::BUILD, &build.encode())));
            Ok(())
        });
        self
    }

    /// Sets an XLA debug option (`env_option_overrides`), e.g.
    /// `xla_option("xla_cpu_enable_fast_math", false)`. Replaces any earlier value of the same
    /// option; the other options keep their bytes.
    pub fn xla_option(mut self, name: impl Into<String>, value: impl Into<XlaOptionValue>) -> Self {
        let name = name.into();
        let value = proto::OptionOverrideProto { value: Some(value.into().0) }.encode_to_vec();
        let entry = Message::new(vec![Field::bytes(field::KEY, name.as_bytes()), Field::bytes(field::VALUE, &value)]);
        let entry = Field::bytes(field::OVERRIDES, &entry.encode());
        self.edit(|top| {
            // Protobuf keeps the last entry of a key: all of this key's go, the others stay.
            top.replace(|f| f.number() == field::OVERRIDES && override_key_is(f, &name), Some(entry));
            Ok(())
        });
        self
    }

    /// Sets the XLA options in which JAX's own compilation differs from what a PJRT plugin uses
    /// by default on `platform`, so a program lowered by JAX computes JAX's numbers. Later calls
    /// to [`CompileOptions::xla_option`] override these.
    ///
    /// On CPU: `xla_cpu_enable_fast_min_max = false` (JAX propagates NaN through min/max; the CPU
    /// plugins otherwise return the non-NaN operand).
    pub fn jax_defaults(self, platform: &str) -> Self {
        match platform {
            "cpu" => self.xla_option("xla_cpu_enable_fast_min_max", false),
            _ => self,
        }
    }

    /// Replicas requested ([`CompileOptions::num_replicas`]); 0 when the proto holds none or a
    /// value that is not a count (which [`CompileOptions::validate`] refuses).
    pub fn num_replicas_requested(&self) -> usize {
        usize::try_from(self.raw_replicas()).unwrap_or(0)
    }

    /// Partitions requested ([`CompileOptions::num_partitions`]); 0 as for replicas.
    pub fn num_partitions_requested(&self) -> usize {
        usize::try_from(self.raw_partitions()).unwrap_or(0)
    }

    /// The proto's replica count as it is (it may be negative in bytes read from elsewhere).
    fn raw_replicas(&self) -> i64 {
        self.build_ref().map(|b| b.num_replicas).unwrap_or(0)
    }

    /// The proto's partition count as it is.
    fn raw_partitions(&self) -> i64 {
        self.build_ref().map(|b| b.num_partitions).unwrap_or(0)
    }

    /// Whether a portable executable is requested.
    pub fn is_portable(&self) -> bool {
        self.proto.compile_portable_executable
    }

    /// The device assignment, if one was given.
    pub fn assignment(&self) -> Result<Option<DeviceAssignment>> {
        match self.build_ref().and_then(|b| b.device_assignment.as_ref()) {
            Some(p) => DeviceAssignment::from_proto(p).map(Some),
            None => Ok(None),
        }
    }

    /// The typed view of `executable_build_options`, if present.
    pub fn build_options(&self) -> Option<&proto::ExecutableBuildOptionsProto> {
        self.build_ref()
    }

    /// The typed view of `executable_build_options.debug_options`, if present (the fields
    /// [`DebugOption`] names; all others are kept in the bytes).
    pub fn debug_options(&self) -> Option<&proto::DebugOptionsProto> {
        self.build_ref()?.debug_options.as_ref()
    }

    /// The XLA option overrides.
    pub fn xla_options(&self) -> &BTreeMap<String, proto::OptionOverrideProto> {
        &self.proto.env_option_overrides
    }

    /// The typed view of the fields this crate models, decoded from the current bytes.
    pub fn proto(&self) -> &proto::CompileOptionsProto {
        &self.proto
    }

    /// Checks everything that would make a plugin abort rather than return an error.
    pub fn validate(&self) -> Result<()> {
        if let Some(defect) = &self.defect {
            return Err(Error::invalid(defect.clone()));
        }
        let replicas = self.raw_replicas();
        let partitions = self.raw_partitions();
        if replicas < 1 {
            return Err(Error::invalid(format!("num_replicas must be at least 1, got {replicas}")));
        }
        if partitions < 1 {
            return Err(Error::invalid(format!("num_partitions must be at least 1, got {partitions}")));
        }
        if replicas.checked_mul(partitions).is_none_or(|n| n > i32::MAX as i64) {
            return Err(Error::invalid("num_replicas × num_partitions is too large"));
        }
        if let Some(assignment) = self.assignment()? {
            if assignment.num_replicas() as i64 != replicas || assignment.num_partitions() as i64 != partitions {
                return Err(Error::invalid(format!(
                    "the device assignment is {}×{} but the options ask for {replicas} replicas × {partitions} partitions",
                    assignment.num_replicas(),
                    assignment.num_partitions()
                )));
            }
        }
        Ok(())
    }

    /// The serialized `CompileOptionsProto`, validated.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        self.validate()?;
        Ok(self.wire.encode())
    }
}

/// A value for [`CompileOptions::xla_option`].
#[derive(Clone, Debug, PartialEq)]
pub struct XlaOptionValue(pub OptionValue);

impl From<bool> for XlaOptionValue {
    fn from(v: bool) -> Self {
        Self(OptionValue::Bool(v))
    }
}
impl From<i64> for XlaOptionValue {
    fn from(v: i64) -> Self {
        Self(OptionValue::Int(v))
    }
}
impl From<f64> for XlaOptionValue {
    fn from(v: f64) -> Self {
        Self(OptionValue::Double(v))
    }
}
impl From<&str> for XlaOptionValue {
    fn from(v: &str) -> Self {
        Self(OptionValue::String(v.to_owned()))
    }
}
impl From<String> for XlaOptionValue {
    fn from(v: String) -> Self {
        Self(OptionValue::String(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_the_known_minimum() {
        // executable_build_options { num_replicas: 1, num_partitions: 1 }: observed to work.
        let bytes = CompileOptions::new().to_bytes().unwrap();
        assert_eq!(bytes, vec![0x1a, 0x04, 0x20, 0x01, 0x28, 0x01]);
        // The typed view written by hand in `new` is the one of those bytes.
        assert_eq!(CompileOptions::from_proto_bytes(&bytes).unwrap().proto(), CompileOptions::new().proto());
    }

    #[test]
    fn zero_counts_are_rejected() {
        assert!(CompileOptions::new().num_replicas(0).to_bytes().is_err());
        assert!(CompileOptions::new().num_partitions(usize::MAX).to_bytes().is_err());
    }

    #[test]
    fn empty_bytes_are_patched_not_sent_empty() {
        let options = CompileOptions::from_proto_bytes(&[]).unwrap();
        let bytes = options.to_bytes().unwrap();
        let decoded = proto::CompileOptionsProto::decode(bytes.as_slice()).unwrap();
        let build = decoded.executable_build_options.unwrap();
        assert_eq!((build.num_replicas, build.num_partitions), (1, 1));
    }

    #[test]
    fn partial_bytes_keep_user_fields() {
        // num_replicas = 2 only; the patch must add num_partitions = 1 and keep replicas = 2.
        let options = CompileOptions::from_proto_bytes(&[0x1a, 0x02, 0x20, 0x02]).unwrap();
        let decoded = proto::CompileOptionsProto::decode(options.to_bytes().unwrap().as_slice()).unwrap();
        let build = decoded.executable_build_options.unwrap();
        assert_eq!((build.num_replicas, build.num_partitions), (2, 1));
    }

    #[test]
    fn garbage_is_a_decode_error() {
        assert!(matches!(CompileOptions::from_proto_bytes(&[0xff, 0xff, 0xff]), Err(Error::Decode { .. })));
    }

    #[test]
    fn huge_assignment_counts_are_refused_without_allocating() {
        // Found while fuzzing (fuzz/corpus/compile_options/regression-device-assignment-oom):
        // executable_build_options { 1 replica, 1 partition, device_assignment { replica_count:
        // 2^31-1, computation_count: 1, one computation with one id } } made from_proto allocate
        // 2^31-1 vectors before noticing the ids are missing.
        let bytes = [
            0x1a, 0x13, 0x20, 0x01, 0x28, 0x01, 0x4a, 0x0d, 0x08, 0xff, 0xff, 0xff, 0xff, 0x07, 0x10, 0x01, 0x1a, 0x03,
            0x0a, 0x01, 0x00,
        ];
        assert!(matches!(CompileOptions::from_proto_bytes(&bytes), Err(Error::InvalidArgument(_))));
        // The same with the counts swapped, and with negative counts.
        let swapped = proto::DeviceAssignmentProto {
            replica_count: 1,
            computation_count: i32::MAX,
            computation_devices: vec![proto::ComputationDevice { replica_device_ids: vec![0] }],
        };
        assert!(DeviceAssignment::from_proto(&swapped).is_err());
        let negative = proto::DeviceAssignmentProto { replica_count: -1, computation_count: -1, ..swapped };
        assert!(DeviceAssignment::from_proto(&negative).is_err());
        // A consistent 2x3 assignment still reads back.
        let a = DeviceAssignment::new(vec![vec![0, 1, 2], vec![3, 4, 5]]).unwrap();
        assert_eq!(DeviceAssignment::from_proto(&a.to_proto()).unwrap(), a);
    }

    #[test]
    fn assignment_must_match_counts() {
        let a = DeviceAssignment::new(vec![vec![0, 1]]).unwrap();
        let o = CompileOptions::new().device_assignment(&a).num_partitions(1);
        assert!(o.validate().is_err());
        let o = CompileOptions::new().device_assignment(&a);
        assert!(o.validate().is_ok());
        assert!(DeviceAssignment::new(vec![vec![0], vec![]]).is_err());
    }
    /// Builds serialized messages for the tests: `(number, Value)` entries.
    enum V<'a> {
        Int(u64),
        Bytes(&'a [u8]),
        Fixed32(u32),
    }

    fn msg(entries: &[(u32, V)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (number, value) in entries {
            match value {
                V::Int(v) => out.extend(Field::varint(*number, *v).raw()),
                V::Bytes(b) => out.extend(Field::bytes(*number, b).raw()),
                V::Fixed32(v) => {
                    prost::encoding::encode_key(*number, prost::encoding::WireType::ThirtyTwoBit, &mut out);
                    out.extend(v.to_le_bytes());
                }
            }
        }
        out
    }

    fn entries(bytes: &[u8]) -> Vec<(u32, Vec<u8>)> {
        Message::parse(bytes, "test").unwrap().fields().iter().map(|f| (f.number(), f.raw().to_vec())).collect()
    }

    /// The entries of `bytes` whose number is not in `edited`, in order, byte for byte.
    fn untouched(bytes: &[u8], edited: &[u32]) -> Vec<(u32, Vec<u8>)> {
        entries(bytes).into_iter().filter(|(n, _)| !edited.contains(n)).collect()
    }

    /// `executable_build_options` of `bytes`, its occurrences concatenated.
    fn build_of(bytes: &[u8]) -> Vec<u8> {
        Message::parse(bytes, "test").unwrap().merged(3, "test").unwrap()
    }

    fn override_entry(key: &str, value: OptionValue) -> Vec<u8> {
        let value = proto::OptionOverrideProto { value: Some(value) }.encode_to_vec();
        msg(&[(1, V::Bytes(key.as_bytes())), (2, V::Bytes(&value))])
    }

    /// A `CompileOptionsProto` with fields this crate does not model, at both levels.
    fn with_unknown_fields() -> Vec<u8> {
        let debug_options = msg(&[(2, V::Int(1)), (61, V::Bytes(b"/cuda_sdk_lib")), (300, V::Int(7))]);
        let build = msg(&[
            (1, V::Int(-1i64 as u64)),                // device_ordinal, 10 bytes
            (2, V::Bytes(&[0x08, 0x0b, 0x10, 0x04])), // result_layout
            (3, V::Bytes(&debug_options)),            // debug_options
            (4, V::Int(1)),
            (5, V::Int(1)),
            (13, V::Bytes(&[0x0a, 0x00])), // comp_envs
            (14, V::Bytes(b"fdo")),        // fdo_profile
            (20, V::Fixed32(0x3f80_0000)), // exec_time_optimization_effort = 1.0
            (999, V::Int(5)),              // newer than this crate
        ]);
        msg(&[
            (1, V::Bytes(&[0x08, 0x0b])), // argument_layouts
            (1, V::Bytes(&[0x08, 0x06])),
            (3, V::Bytes(&build)),
            (5, V::Int(3)),           // profile_version
            (6, V::Bytes(b"slices")), // serialized_multi_slice_config
            (7, V::Bytes(&override_entry("xla_cpu_enable_fast_math", OptionValue::Bool(true)))),
            (8, V::Bytes(&[0x0a, 0x02, 0x68, 0x69])), // target_config
            (10, V::Int(2)),                          // matrix_unit_operand_precision
            (12345, V::Bytes(b"future")),
        ])
    }

    #[test]
    fn unknown_fields_survive_every_builder_method() {
        let input = with_unknown_fields();
        let read = CompileOptions::from_proto_bytes(&input).unwrap();
        assert_eq!(read.to_bytes().unwrap(), input, "no edit: the bytes go out as they came");
        let assignment = DeviceAssignment::new(vec![vec![0], vec![1]]).unwrap();
        // (what, edit, top-level fields it may change, build fields it may change)
        type Edit = Box<dyn Fn(CompileOptions) -> CompileOptions>;
        let edits: Vec<(&str, Edit, &[u32], &[u32])> = vec![
            ("num_replicas same", Box::new(|o| o.num_replicas(1)), &[3], &[4]),
            ("num_replicas", Box::new(|o| o.num_replicas(2)), &[3], &[4]),
            ("num_partitions", Box::new(|o| o.num_partitions(3)), &[3], &[5]),
            ("device_assignment", Box::new(move |o| o.device_assignment(&assignment)), &[3], &[4, 5, 9]),
            ("use_spmd_partitioning", Box::new(|o| o.use_spmd_partitioning(true)), &[3], &[6]),
            ("use_shardy_partitioner", Box::new(|o| o.use_shardy_partitioner(true)), &[3], &[19]),
            ("compile_portable_executable", Box::new(|o| o.compile_portable_executable(true)), &[4], &[]),
            ("xla_option", Box::new(|o| o.xla_option("xla_cpu_enable_fast_min_max", false)), &[7], &[]),
            ("jax_defaults", Box::new(|o| o.jax_defaults("cpu")), &[7], &[]),
            ("device_ordinal", Box::new(|o| o.device_ordinal(2)), &[3], &[1]),
            ("parameter_is_tupled_arguments", Box::new(|o| o.parameter_is_tupled_arguments(true)), &[2], &[]),
            ("profile_version", Box::new(|o| o.profile_version(9)), &[5], &[]),
            ("alias_passthrough_params", Box::new(|o| o.alias_passthrough_params(true)), &[3], &[10]),
            (
                "auto_spmd_partitioning",
                Box::new(|o| o.auto_spmd_partitioning(&[2, 2], &[3, 2, 1, 0])),
                &[3],
                &[7, 16, 17],
            ),
            ("debug_option", Box::new(|o| o.debug_option(DebugOption::DumpTo("/d".into()))), &[3], &[3]),
        ];
        for (what, edit, top, build) in edits {
            let out = edit(read.clone()).to_bytes().unwrap();
            assert_eq!(untouched(&out, top), untouched(&input, top), "{what}: top-level fields");
            assert_eq!(
                untouched(&build_of(&out), build),
                untouched(&build_of(&input), build),
                "{what}: executable_build_options fields"
            );
            // Exactly one build occurrence, where it was.
            let numbers: Vec<u32> = entries(&out).iter().map(|(n, _)| *n).collect();
            assert_eq!(numbers.iter().position(|&n| n == 3), Some(2), "{what}");
            assert_eq!(numbers.iter().filter(|&&n| n == 3).count(), 1, "{what}");
            // The typed view is the one of the bytes sent.
            let edited = CompileOptions::from_proto_bytes(&out).unwrap();
            assert_eq!(edited.proto().encode_to_vec(), edit(read.clone()).proto().encode_to_vec(), "{what}");
        }
        let o = read.clone().num_replicas(2).num_partitions(3).use_shardy_partitioner(true);
        assert_eq!((o.num_replicas_requested(), o.num_partitions_requested()), (2, 3));
        assert!(o.proto().executable_build_options.as_ref().unwrap().use_shardy_partitioner);
        let portable = read.clone().compile_portable_executable(true);
        assert!(portable.is_portable());
        // Turned off again, the field is gone (proto3 writes no default) and the rest unchanged.
        assert_eq!(portable.compile_portable_executable(false).to_bytes().unwrap(), input);
        assert_eq!(read.jax_defaults("cpu").xla_options().len(), 2);
    }

    #[test]
    fn every_new_setter_round_trips_through_the_bytes() {
        let o = CompileOptions::new()
            .device_ordinal(3)
            .parameter_is_tupled_arguments(true)
            .profile_version(-7)
            .alias_passthrough_params(true)
            .auto_spmd_partitioning(&[2, 3], &[5, 4, 3, 2, 1, 0]);
        let read = CompileOptions::from_proto_bytes(&o.to_bytes().unwrap()).unwrap();
        assert_eq!(read, o);
        let build = read.build_options().unwrap();
        assert_eq!(build.device_ordinal, 3);
        assert!(build.alias_passthrough_params && build.use_auto_spmd_partitioning);
        assert_eq!(build.auto_spmd_partitioning_mesh_shape, [2, 3]);
        assert_eq!(build.auto_spmd_partitioning_mesh_ids, [5, 4, 3, 2, 1, 0]);
        assert!(read.proto().parameter_is_tupled_arguments);
        assert_eq!(read.proto().profile_version, -7);
        // Off again: the fields are gone, the bytes are those of the defaults.
        let off = read
            .device_ordinal(0)
            .parameter_is_tupled_arguments(false)
            .profile_version(0)
            .alias_passthrough_params(false);
        assert_eq!(off.proto().profile_version, 0);
        assert!(!off.build_options().unwrap().alias_passthrough_params);
        // A mesh without ids is allowed; ids that do not fill it, or a 0-sized mesh, are not.
        let no_ids = CompileOptions::new().auto_spmd_partitioning(&[4], &[]);
        assert!(no_ids.build_options().unwrap().auto_spmd_partitioning_mesh_ids.is_empty());
        assert!(CompileOptions::new().auto_spmd_partitioning(&[2, 2], &[0, 1, 2]).validate().is_err());
        assert!(CompileOptions::new().auto_spmd_partitioning(&[2, 0], &[]).validate().is_err());
        assert!(CompileOptions::new().auto_spmd_partitioning(&[i64::MAX, 2], &[]).validate().is_err());
    }

    #[test]
    fn debug_options_edit_one_field_and_keep_the_rest() {
        let input = with_unknown_fields();
        let read = CompileOptions::from_proto_bytes(&input).unwrap();
        let debug_of = |o: &CompileOptions| {
            let build = Message::parse(&build_of(&o.to_bytes().unwrap()), "b").unwrap();
            build.merged(3, "debug").unwrap()
        };
        let before = debug_of(&read);
        let o = read
            .clone()
            .debug_option(DebugOption::DumpTo("/tmp/d".into()))
            .debug_option(DebugOption::DumpHloAsText(true))
            .debug_option(DebugOption::CpuEnableFastMath(true))
            .debug_option(DebugOption::BackendOptimizationLevel(-1))
            .debug_option(DebugOption::DisableHloPasses(vec!["a".into(), "b".into()]))
            .debug_option(DebugOption::RawVarint { number: 2, value: 0 })
            .debug_option(DebugOption::RawBytes { number: 110, value: b"jit_.*".to_vec() });
        let debug = o.debug_options().unwrap();
        assert_eq!(debug.xla_dump_to, "/tmp/d");
        assert!(debug.xla_dump_hlo_as_text && debug.xla_cpu_enable_fast_math);
        assert_eq!(debug.xla_backend_optimization_level, -1);
        assert_eq!(debug.xla_disable_hlo_passes, ["a", "b"]);
        assert_eq!(debug.xla_dump_hlo_module_re, "jit_.*");
        // The debug fields not set here (61, 300) keep their bytes; 2 was rewritten.
        let after = debug_of(&o);
        let untouched_debug = |b: &[u8]| untouched(b, &[2, 30, 31, 99, 109, 110, 112]);
        assert_eq!(untouched_debug(&after), untouched_debug(&before));
        assert_eq!(entries(&after).iter().filter(|(n, _)| *n == 2).count(), 1);
        // Round trip, and a second edit of the same field replaces it.
        assert_eq!(CompileOptions::from_proto_bytes(&o.to_bytes().unwrap()).unwrap(), o);
        let o = o.debug_option(DebugOption::DisableHloPasses(vec![])).debug_option(DebugOption::DumpTo(String::new()));
        assert!(o.debug_options().unwrap().xla_disable_hlo_passes.is_empty());
        assert_eq!(o.debug_options().unwrap().xla_dump_to, "");
        // Without a DebugOptions message: typed options go by name, the others are refused.
        let named = CompileOptions::new()
            .debug_option(DebugOption::DumpTo("/d".into()))
            .debug_option(DebugOption::BackendOptimizationLevel(2));
        assert!(named.debug_options().is_none());
        assert_eq!(named.xla_options()["xla_dump_to"].value, Some(OptionValue::String("/d".into())));
        assert_eq!(named.xla_options()["xla_backend_optimization_level"].value, Some(OptionValue::Int(2)));
        for option in [
            DebugOption::DisableHloPasses(vec!["a".into()]),
            DebugOption::RawVarint { number: 298, value: 1 },
            DebugOption::RawBytes { number: 61, value: vec![] },
        ] {
            let o = CompileOptions::new().debug_option(option.clone());
            assert!(matches!(o.validate(), Err(Error::InvalidArgument(_))), "{option:?}");
        }
        for number in [0, 1 << 29] {
            let o = CompileOptions::new().debug_option(DebugOption::RawVarint { number, value: 1 });
            assert!(matches!(o.validate(), Err(Error::InvalidArgument(_))), "{number}");
        }
    }

    #[test]
    fn xla_option_replaces_only_its_own_key() {
        let a1 = override_entry("a", OptionValue::Int(1));
        let b = override_entry("b", OptionValue::String("x".into()));
        let a2 = override_entry("a", OptionValue::Int(2));
        let c = override_entry("c", OptionValue::Double(0.5));
        let input = msg(&[
            (7, V::Bytes(&a1)),
            (3, V::Bytes(&[0x20, 0x01, 0x28, 0x01])),
            (7, V::Bytes(&b)),
            (7, V::Bytes(&a2)),
            (7, V::Bytes(&c)),
        ]);
        let read = CompileOptions::from_proto_bytes(&input).unwrap();
        assert_eq!(read.xla_options()["a"].value, Some(OptionValue::Int(2)), "the last entry of a key wins");

        let out = read.clone().xla_option("a", true).to_bytes().unwrap();
        let new_a = override_entry("a", OptionValue::Bool(true));
        let expected = msg(&[
            (7, V::Bytes(&new_a)),
            (3, V::Bytes(&[0x20, 0x01, 0x28, 0x01])),
            (7, V::Bytes(&b)),
            (7, V::Bytes(&c)),
        ]);
        assert_eq!(out, expected);
        let edited = read.clone().xla_option("a", true);
        assert_eq!(edited.xla_options()["a"].value, Some(OptionValue::Bool(true)));
        assert_eq!(edited.xla_options().len(), 3);

        // A new key goes at the end; "ab" is not "a".
        let out = read.clone().xla_option("ab", "y").to_bytes().unwrap();
        let mut expected = input.clone();
        expected.extend(Field::bytes(7, &override_entry("ab", OptionValue::String("y".into()))).raw());
        assert_eq!(out, expected);

        // An entry without a key is the key "".
        let keyless = msg(&[(2, V::Bytes(&[0x10, 0x01]))]);
        let input = msg(&[(3, V::Bytes(&[0x20, 0x01, 0x28, 0x01])), (7, V::Bytes(&keyless)), (7, V::Bytes(&b))]);
        let out = CompileOptions::from_proto_bytes(&input).unwrap().xla_option("", false).to_bytes().unwrap();
        let empty = override_entry("", OptionValue::Bool(false));
        assert_eq!(out, msg(&[(3, V::Bytes(&[0x20, 0x01, 0x28, 0x01])), (7, V::Bytes(&empty)), (7, V::Bytes(&b))]));
    }

    #[test]
    fn several_build_occurrences_merge_only_when_edited() {
        let first = [0x20, 0x02, 0xb8, 0x3e, 0x05]; // num_replicas 2, field 999 = 5
        let second = [0x28, 0x03, 0x20, 0x04, 0x12, 0x00]; // num_partitions 3, num_replicas 4, result_layout {}
        let input = msg(&[(3, V::Bytes(&first)), (5, V::Int(9)), (3, V::Bytes(&second)), (12345, V::Int(1))]);
        let read = CompileOptions::from_proto_bytes(&input).unwrap();
        assert_eq!(
            (read.num_replicas_requested(), read.num_partitions_requested()),
            (4, 3),
            "merged: the later value wins"
        );
        assert_eq!(read.to_bytes().unwrap(), input);
        // An edit elsewhere leaves both occurrences as they are.
        let portable = read.clone().compile_portable_executable(true).to_bytes().unwrap();
        let mut expected = input.clone();
        expected.extend([0x20, 0x01]);
        assert_eq!(portable, expected);
        // An edit inside: one occurrence, where the first was, both payloads' other entries kept.
        let out = read.clone().num_replicas(6).to_bytes().unwrap();
        let merged = [0x20, 0x06, 0xb8, 0x3e, 0x05, 0x28, 0x03, 0x12, 0x00];
        assert_eq!(out, msg(&[(3, V::Bytes(&merged)), (5, V::Int(9)), (12345, V::Int(1))]));
        let edited = read.num_replicas(6);
        assert_eq!((edited.num_replicas_requested(), edited.num_partitions_requested()), (6, 3));
    }

    #[test]
    fn missing_counts_are_patched_in_place() {
        let layouts = (1, V::Bytes(&[0x08, 0x0b]));
        let target = (8, V::Bytes(&[0x0a, 0x00]));
        // num_replicas = 2 only, between unknown fields.
        let input = msg(&[layouts, (3, V::Bytes(&[0x20, 0x02, 0x6a, 0x01, 0x00])), target]);
        let out = CompileOptions::from_proto_bytes(&input).unwrap().to_bytes().unwrap();
        let layouts = (1, V::Bytes(&[0x08, 0x0b]));
        let target = (8, V::Bytes(&[0x0a, 0x00]));
        let expected = msg(&[layouts, (3, V::Bytes(&[0x20, 0x02, 0x6a, 0x01, 0x00, 0x28, 0x01])), target]);
        assert_eq!(out, expected);
        // No build options at all: appended.
        let out = CompileOptions::from_proto_bytes(&[0x28, 0x07]).unwrap().to_bytes().unwrap();
        assert_eq!(out, [0x28, 0x07, 0x1a, 0x04, 0x20, 0x01, 0x28, 0x01]);
        // An explicit 0 is replaced where it was.
        let out = CompileOptions::from_proto_bytes(&[0x1a, 0x04, 0x28, 0x00, 0x20, 0x01]).unwrap().to_bytes().unwrap();
        assert_eq!(out, [0x1a, 0x04, 0x28, 0x01, 0x20, 0x01]);
    }

    #[test]
    fn malformed_options_are_errors_not_panics() {
        let ok_build = [0x1a, 0x04, 0x20, 0x01, 0x28, 0x01];
        let with = |tail: &[u8]| [&ok_build[..], tail].concat();
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("truncated varint", with(&[0x28, 0x80])),
            ("truncated key", with(&[0x88])),
            ("length past the end", with(&[0x0a, 0x05, 0x00])),
            ("4 GiB claimed", with(&[0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f])),
            ("truncated fixed32", with(&[0xfd, 0x01, 0x00])),
            ("top-level group", with(&[0xfb, 0x01, 0xfc, 0x01])),
            ("lone end-group", with(&[0xfc, 0x01])),
            ("field number 0", with(&[0x00, 0x01])),
            ("group inside the build options", vec![0x1a, 0x06, 0x20, 0x01, 0x28, 0x01, 0xfb, 0x01, 0xfc, 0x01]),
            ("length past the build options", vec![0x1a, 0x06, 0x20, 0x01, 0x28, 0x01, 0x12, 0x05]),
            ("build options as a varint", vec![0x18, 0x01]),
            ("group inside an override entry", with(&[0x3a, 0x05, 0x0a, 0x01, 0x61, 0x1b, 0x1c])),
            // prost reads this as an empty entry, then profile_version = 129 (checked below).
            ("override entry as a fixed32", with(&[0x3d, 0x00, 0x28, 0x81, 0x01])),
        ];
        assert!(proto::CompileOptionsProto::decode(&with(&[0x3d, 0x00, 0x28, 0x81, 0x01])[..]).is_ok());
        for (what, bytes) in cases {
            let result = CompileOptions::from_proto_bytes(&bytes);
            assert!(
                matches!(result, Err(Error::Decode { .. } | Error::InvalidArgument(_))),
                "{what}: {bytes:02x?} gave {result:?}"
            );
        }
    }

    #[test]
    fn typed_view_and_equality_follow_the_bytes() {
        let a = DeviceAssignment::new(vec![vec![3, 1]]).unwrap();
        let o = CompileOptions::new().xla_option("x", 1i64).device_assignment(&a).use_spmd_partitioning(true);
        let sent = proto::CompileOptionsProto::decode(o.to_bytes().unwrap().as_slice()).unwrap();
        assert_eq!(&sent, o.proto());
        assert_eq!(o.assignment().unwrap(), Some(a.clone()));
        // Replacing a device assignment replaces it (a message field would merge otherwise).
        let b = DeviceAssignment::new(vec![vec![5, 6]]).unwrap();
        assert_eq!(o.clone().device_assignment(&b).assignment().unwrap(), Some(b));
        assert_eq!(CompileOptions::new().num_replicas(3).num_replicas(2), CompileOptions::new().num_replicas(2));
        assert_eq!(CompileOptions::new().num_replicas(1), CompileOptions::new());
        assert_ne!(CompileOptions::new().num_replicas(2), CompileOptions::new());
        // validate still applies after edits.
        assert!(o.clone().num_partitions(1).validate().is_err());
        assert!(o.num_replicas(usize::MAX - 4).to_bytes().is_err());
    }
}
