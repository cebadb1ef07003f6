//! Hand-written protobuf messages, with XLA's field numbers: the typed view of the compile
//! options (the fields this crate models) and the messages they nest.

use std::collections::BTreeMap;

/// `xla.CompileOptionsProto` (the fields this crate uses).
#[derive(Clone, PartialEq, prost::Message)]
pub struct CompileOptionsProto {
    /// 1: the layout of each argument (entry parameter), when the caller fixes them.
    #[prost(message, repeated, tag = "1")]
    pub argument_layouts: Vec<ShapeProto>,
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
    /// 2: the layout of the result (a tuple shape for several results).
    #[prost(message, optional, tag = "2")]
    pub result_layout: Option<ShapeProto>,
    /// 3
    #[prost(message, optional, tag = "3")]
    pub debug_options: Option<DebugOptionsProto>,
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
    /// 10
    #[prost(bool, tag = "10")]
    pub alias_passthrough_params: bool,
    /// 12
    #[prost(bool, repeated, packed = "false", tag = "12")]
    pub allow_spmd_sharding_propagation_to_output: Vec<bool>,
    /// 18
    /// 16
    #[prost(int64, repeated, tag = "16")]
    pub auto_spmd_partitioning_mesh_shape: Vec<i64>,
    /// 17
    #[prost(int64, repeated, tag = "17")]
    pub auto_spmd_partitioning_mesh_ids: Vec<i64>,
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

/// `xla.ShapeProto`: an array (or tuple) shape with its layout.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ShapeProto {
    /// 2: an `xla.PrimitiveType` (F32 = 11, TUPLE = 13, ...).
    #[prost(int32, tag = "2")]
    pub element_type: i32,
    /// 3
    #[prost(int64, repeated, tag = "3")]
    pub dimensions: Vec<i64>,
    /// 4: the element shapes of a tuple.
    #[prost(message, repeated, tag = "4")]
    pub tuple_shapes: Vec<ShapeProto>,
    /// 5
    #[prost(message, optional, tag = "5")]
    pub layout: Option<LayoutProto>,
}

/// `xla.LayoutProto` (the fields this crate uses).
#[derive(Clone, PartialEq, prost::Message)]
pub struct LayoutProto {
    /// 1: dimension numbers, most minor first.
    #[prost(int64, repeated, tag = "1")]
    pub minor_to_major: Vec<i64>,
    /// 6: tiles, outermost first.
    #[prost(message, repeated, tag = "6")]
    pub tiles: Vec<TileProto>,
}

/// `xla.TileProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TileProto {
    /// 1
    #[prost(int64, repeated, tag = "1")]
    pub dimensions: Vec<i64>,
}

/// `xla.DebugOptions` (the fields [`super::DebugOption`] names; the message has hundreds).
#[derive(Clone, PartialEq, prost::Message)]
pub struct DebugOptionsProto {
    /// 30
    #[prost(string, repeated, tag = "30")]
    pub xla_disable_hlo_passes: Vec<String>,
    /// 31
    #[prost(int32, tag = "31")]
    pub xla_backend_optimization_level: i32,
    /// 61
    #[prost(string, tag = "61")]
    pub xla_gpu_cuda_data_dir: String,
    /// 99
    #[prost(bool, tag = "99")]
    pub xla_cpu_enable_fast_math: bool,
    /// 109
    #[prost(string, tag = "109")]
    pub xla_dump_to: String,
    /// 110
    #[prost(string, tag = "110")]
    pub xla_dump_hlo_module_re: String,
    /// 111
    #[prost(string, tag = "111")]
    pub xla_dump_hlo_pass_re: String,
    /// 112
    #[prost(bool, tag = "112")]
    pub xla_dump_hlo_as_text: bool,
    /// 140
    #[prost(bool, tag = "140")]
    pub xla_cpu_enable_fast_min_max: bool,
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
