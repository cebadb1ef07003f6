//! Compile options: our own `prost` declarations of XLA's `CompileOptionsProto` family (field
//! numbers from the published proto), and a builder that never produces options that abort a
//! plugin.

use std::collections::BTreeMap;

use prost::Message;

use crate::error::{Error, Result};

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
#[derive(Clone, Debug, PartialEq)]
pub struct CompileOptions {
    proto: proto::CompileOptionsProto,
    /// Bytes given by the user, sent as they are (unknown fields kept) plus any missing
    /// replica/partition counts appended.
    raw: Option<Vec<u8>>,
}

impl Default for CompileOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl CompileOptions {
    /// 1 replica, 1 partition, the plugin's default device.
    pub fn new() -> Self {
        Self {
            proto: proto::CompileOptionsProto {
                executable_build_options: Some(proto::ExecutableBuildOptionsProto {
                    num_replicas: 1,
                    num_partitions: 1,
                    ..Default::default()
                }),
                ..Default::default()
            },
            raw: None,
        }
    }

    /// Takes a serialized `CompileOptionsProto` (e.g. one JAX produced). Fields this crate does
    /// not model are kept. Missing replica or partition counts are set to 1 (an options proto
    /// without them aborts XLA).
    pub fn from_proto_bytes(bytes: &[u8]) -> Result<Self> {
        let proto = proto::CompileOptionsProto::decode(bytes)
            .map_err(|source| Error::Decode { what: "CompileOptionsProto", source })?;
        let mut options = Self { proto, raw: Some(bytes.to_vec()) };
        let build = options.proto.executable_build_options.get_or_insert_with(Default::default);
        // Protobuf merges a repeated embedded message field, so appending
        // `executable_build_options { num_replicas: 1 }` sets just that field.
        let mut patch = proto::ExecutableBuildOptionsProto::default();
        if build.num_replicas == 0 {
            build.num_replicas = 1;
            patch.num_replicas = 1;
        }
        if build.num_partitions == 0 {
            build.num_partitions = 1;
            patch.num_partitions = 1;
        }
        if patch != proto::ExecutableBuildOptionsProto::default() {
            let patch = proto::CompileOptionsProto { executable_build_options: Some(patch), ..Default::default() };
            if let Some(raw) = options.raw.as_mut() {
                raw.extend(patch.encode_to_vec());
            }
        }
        options.validate()?;
        Ok(options)
    }

    fn build(&mut self) -> &mut proto::ExecutableBuildOptionsProto {
        self.raw = None; // an edit re-encodes from the model
        self.proto.executable_build_options.get_or_insert_with(Default::default)
    }

    fn build_ref(&self) -> Option<&proto::ExecutableBuildOptionsProto> {
        self.proto.executable_build_options.as_ref()
    }

    /// Number of replicas (data-parallel copies), at least 1.
    pub fn num_replicas(mut self, replicas: i64) -> Self {
        self.build().num_replicas = replicas;
        self
    }

    /// Number of partitions (SPMD shards), at least 1.
    pub fn num_partitions(mut self, partitions: i64) -> Self {
        self.build().num_partitions = partitions;
        self
    }

    /// Which device runs each replica and partition. Also sets the replica and partition counts.
    pub fn device_assignment(mut self, assignment: &DeviceAssignment) -> Self {
        let build = self.build();
        build.num_replicas = assignment.replicas() as i64;
        build.num_partitions = assignment.partitions() as i64;
        build.device_assignment = Some(assignment.to_proto());
        self
    }

    /// Turns on SPMD partitioning (needed for `num_partitions > 1` with sharding annotations).
    pub fn use_spmd_partitioning(mut self, on: bool) -> Self {
        self.build().use_spmd_partitioning = on;
        self
    }

    /// Uses the Shardy partitioner (modern JAX lowers `sdy` shardings).
    pub fn use_shardy_partitioner(mut self, on: bool) -> Self {
        self.build().use_shardy_partitioner = on;
        self
    }

    /// Compiles an executable that is not bound to devices; run it with an explicit device.
    pub fn compile_portable_executable(mut self, on: bool) -> Self {
        self.raw = None;
        self.proto.compile_portable_executable = on;
        self
    }

    /// Sets an XLA debug option (`env_option_overrides`), e.g.
    /// `xla_option("xla_cpu_enable_fast_math", false)`.
    pub fn xla_option(mut self, name: impl Into<String>, value: impl Into<XlaOptionValue>) -> Self {
        self.raw = None;
        let value = value.into().0;
        self.proto.env_option_overrides.insert(name.into(), proto::OptionOverrideProto { value: Some(value) });
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

    /// The typed model of the options.
    pub fn proto(&self) -> &proto::CompileOptionsProto {
        &self.proto
    }

    /// Checks everything that would make a plugin abort rather than return an error.
    pub fn validate(&self) -> Result<()> {
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
        Ok(match &self.raw {
            Some(raw) => raw.clone(),
            None => self.proto.encode_to_vec(),
        })
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
        assert_eq!(CompileOptions::new().to_bytes().unwrap(), vec![0x1a, 0x04, 0x20, 0x01, 0x28, 0x01]);
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
}
