//! Compile options: a serialized `CompileOptionsProto` edited in place, entry by entry (so every
//! field survives every edit, also those this crate does not model), a typed view of the fields
//! it does model (our own `prost` declarations, field numbers from XLA's published proto), and a
//! builder that never produces options that abort a plugin.

mod wire;

use std::collections::BTreeMap;

use prost::Message as _;

use crate::error::{Error, Result};
use wire::{Field, Message};

/// Hand-written protobuf messages, with XLA's field numbers.
pub mod proto {
    use std::collections::BTreeMap;

    /// `xla.CompileOptionsProto` (the fields this crate uses).
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct CompileOptionsProto {
        /// 2
        #[prost(bool, tag = "2")]
        pub parameter_is_tupled_arguments: bool,
        /// 3
        #[prost(message, optional, tag = "3")]
        pub executable_build_options: Option<ExecutableBuildOptionsProto>,
        /// 4
        #[prost(bool, tag = "4")]
        pub compile_portable_executable: bool,
        /// 5
        #[prost(int64, tag = "5")]
        pub profile_version: i64,
        /// 7: XLA debug options by name (`xla_cpu_enable_fast_math`, ...).
        #[prost(btree_map = "string, message", tag = "7")]
        pub env_option_overrides: BTreeMap<String, OptionOverrideProto>,
        /// 9
        #[prost(bool, tag = "9")]
        pub allow_in_place_mlir_modification: bool,
        /// 11
        #[prost(string, optional, tag = "11")]
        pub compiler_variant: Option<String>,
    }

    /// `xla.ExecutableBuildOptionsProto` (the fields this crate uses).
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ExecutableBuildOptionsProto {
        /// 1
        #[prost(int64, tag = "1")]
        pub device_ordinal: i64,
        /// 4
        #[prost(int64, tag = "4")]
        pub num_replicas: i64,
        /// 5
        #[prost(int64, tag = "5")]
        pub num_partitions: i64,
        /// 6
        #[prost(bool, tag = "6")]
        pub use_spmd_partitioning: bool,
        /// 7
        #[prost(bool, tag = "7")]
        pub use_auto_spmd_partitioning: bool,
        /// 9
        #[prost(message, optional, tag = "9")]
        pub device_assignment: Option<DeviceAssignmentProto>,
        /// 12
        #[prost(bool, repeated, packed = "false", tag = "12")]
        pub allow_spmd_sharding_propagation_to_output: Vec<bool>,
        /// 18
        #[prost(bool, repeated, packed = "false", tag = "18")]
        pub allow_spmd_sharding_propagation_to_parameters: Vec<bool>,
        /// 19
        #[prost(bool, tag = "19")]
        pub use_shardy_partitioner: bool,
        /// 22
        #[prost(int64, tag = "22")]
        pub process_index: i64,
        /// 23
        #[prost(int64, tag = "23")]
        pub process_count: i64,
    }

    /// `xla.DeviceAssignmentProto`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct DeviceAssignmentProto {
        /// 1
        #[prost(int32, tag = "1")]
        pub replica_count: i32,
        /// 2
        #[prost(int32, tag = "2")]
        pub computation_count: i32,
        /// 3: one entry per computation (partition), each listing a device per replica.
        #[prost(message, repeated, tag = "3")]
        pub computation_devices: Vec<ComputationDevice>,
    }

    /// `xla.DeviceAssignmentProto.ComputationDevice`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ComputationDevice {
        /// 1
        #[prost(int64, repeated, tag = "1")]
        pub replica_device_ids: Vec<i64>,
    }

    /// `xla.OptionOverrideProto`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct OptionOverrideProto {
        /// The value.
        #[prost(oneof = "OptionValue", tags = "1, 2, 3, 4")]
        pub value: Option<OptionValue>,
    }

    /// The oneof of [`OptionOverrideProto`].
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum OptionValue {
        /// 1
        #[prost(string, tag = "1")]
        String(String),
        /// 2
        #[prost(bool, tag = "2")]
        Bool(bool),
        /// 3
        #[prost(int64, tag = "3")]
        Int(i64),
        /// 4
        #[prost(double, tag = "4")]
        Double(f64),
    }
}

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
    pub fn replicas(&self) -> usize {
        self.devices.len()
    }

    /// Number of partitions.
    pub fn partitions(&self) -> usize {
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
            replica_count: self.replicas() as i32,
            computation_count: self.partitions() as i32,
            computation_devices: (0..self.partitions())
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
/// use pjrt_client::{CompileOptions, Placement, Program};
///
/// // Replicas, partitions (SPMD), XLA debug options; checked before any plugin sees them.
/// let spmd = CompileOptions::new().num_partitions(4).use_spmd_partitioning(true);
/// assert_eq!((spmd.replicas(), spmd.partitions()), (1, 4));
/// assert!(CompileOptions::new().num_replicas(0).validate().is_err());
/// // The serialized `CompileOptionsProto` (what JAX's compile_options.pb files hold) round-trips.
/// let bytes = spmd.to_bytes()?;
/// assert_eq!(CompileOptions::from_proto_bytes(&bytes)?.partitions(), 4);
///
/// // To get JAX's numbers from a JAX-lowered program, compile with JAX's XLA settings:
/// // on CPU, max/min propagate NaN as in JAX.
/// # let plugin = pjrt_client::Plugin::load(pjrt_client::locate::resolve_or_install(None, |_| ())?.path)?;
/// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
/// let program = Program::mlir_text(r#"
///   func.func @main(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
///     %0 = stablehlo.maximum %a, %b : tensor<2xf32>
///     return %0 : tensor<2xf32>
///   }"#)?;
/// let options = CompileOptions::new().jax_defaults("cpu").xla_option("xla_cpu_enable_fast_math", false);
/// let exe = client.compile(&program, &options)?;
/// let a = client.buffer_from_slice(&[f32::NAN, 1.], &[2], Placement::Default)?;
/// let b = client.buffer_from_slice(&[1f32, 2.], &[2], Placement::Default)?;
/// let max = exe.execute(&[&a, &b])?[0].to_vec::<f32>()?;
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
    /// `CompileOptionsProto.executable_build_options`.
    pub const BUILD: u32 = 3;
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
        let (no_replicas, no_partitions) = (options.replicas() == 0, options.partitions() == 0);
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
    pub fn num_replicas(mut self, replicas: i64) -> Self {
        self.edit_build(|build| build.set(field::REPLICAS, scalar(field::REPLICAS, replicas as u64)));
        self
    }

    /// Number of partitions (SPMD shards), at least 1.
    pub fn num_partitions(mut self, partitions: i64) -> Self {
        self.edit_build(|build| build.set(field::PARTITIONS, scalar(field::PARTITIONS, partitions as u64)));
        self
    }

    /// Which device runs each replica and partition. Also sets the replica and partition counts.
    pub fn device_assignment(mut self, assignment: &DeviceAssignment) -> Self {
        let encoded = assignment.to_proto().encode_to_vec();
        self.edit_build(|build| {
            build.set(field::REPLICAS, scalar(field::REPLICAS, assignment.replicas() as u64));
            build.set(field::PARTITIONS, scalar(field::PARTITIONS, assignment.partitions() as u64));
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

    /// Replicas requested.
    pub fn replicas(&self) -> i64 {
        self.build_ref().map(|b| b.num_replicas).unwrap_or(0)
    }

    /// Partitions requested.
    pub fn partitions(&self) -> i64 {
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
        let replicas = self.replicas();
        let partitions = self.partitions();
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
            if assignment.replicas() as i64 != replicas || assignment.partitions() as i64 != partitions {
                return Err(Error::invalid(format!(
                    "the device assignment is {}×{} but the options ask for {replicas} replicas × {partitions} partitions",
                    assignment.replicas(),
                    assignment.partitions()
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
        assert!(CompileOptions::new().num_partitions(-1).to_bytes().is_err());
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
        assert_eq!((o.replicas(), o.partitions()), (2, 3));
        assert!(o.proto().executable_build_options.as_ref().unwrap().use_shardy_partitioner);
        let portable = read.clone().compile_portable_executable(true);
        assert!(portable.is_portable());
        // Turned off again, the field is gone (proto3 writes no default) and the rest unchanged.
        assert_eq!(portable.compile_portable_executable(false).to_bytes().unwrap(), input);
        assert_eq!(read.jax_defaults("cpu").xla_options().len(), 2);
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
        assert_eq!((read.replicas(), read.partitions()), (4, 3), "merged: the later value wins");
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
        assert_eq!((edited.replicas(), edited.partitions()), (6, 3));
    }

    #[test]
    fn missing_counts_are_patched_in_place() {
        let layouts = (1, V::Bytes(&[0x08, 0x0b]));
        let target = (8, V::Bytes(&[0x0a, 0x00]));
        // num_replicas = 2 only, between unknown fields.
        let input = msg(&[layouts, (3, V::Bytes(&[0x20, 0x02, 0x1a, 0x01, 0x00])), target]);
        let out = CompileOptions::from_proto_bytes(&input).unwrap().to_bytes().unwrap();
        let layouts = (1, V::Bytes(&[0x08, 0x0b]));
        let target = (8, V::Bytes(&[0x0a, 0x00]));
        let expected = msg(&[layouts, (3, V::Bytes(&[0x20, 0x02, 0x1a, 0x01, 0x00, 0x28, 0x01])), target]);
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
        assert!(o.num_replicas(-5).to_bytes().is_err());
    }
}
