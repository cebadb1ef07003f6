//! The messages of gRPC's `ModelConfig` call (re-exported by `grpc::messages`): the subset of
//! Triton's `inference.ModelConfig` (`model_config.proto`) that this server fills, with that
//! file's field numbers and enum values, so that `tritonclient.grpc`'s `get_model_config` and
//! `perf_analyzer` read them. Fields left out are those this server has nothing to say in
//! (sequence batching, ensembles, optimization, warm-up, ...): a client reads their defaults.

/// `ModelConfigRequest`: a model and, optionally, its version.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelConfigRequest {
    /// The model's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its version; empty: the one served.
    #[prost(string, tag = "2")]
    pub version: String,
}

/// `ModelConfigResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelConfigResponse {
    /// The model's configuration.
    #[prost(message, optional, tag = "1")]
    pub config: Option<ModelConfig>,
}

/// `DataType`: a tensor's element type in a model configuration (`TYPE_FP32`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum DataType {
    /// `TYPE_INVALID`.
    TypeInvalid = 0,
    /// `TYPE_BOOL`.
    TypeBool = 1,
    /// `TYPE_UINT8`.
    TypeUint8 = 2,
    /// `TYPE_UINT16`.
    TypeUint16 = 3,
    /// `TYPE_UINT32`.
    TypeUint32 = 4,
    /// `TYPE_UINT64`.
    TypeUint64 = 5,
    /// `TYPE_INT8`.
    TypeInt8 = 6,
    /// `TYPE_INT16`.
    TypeInt16 = 7,
    /// `TYPE_INT32`.
    TypeInt32 = 8,
    /// `TYPE_INT64`.
    TypeInt64 = 9,
    /// `TYPE_FP16`.
    TypeFp16 = 10,
    /// `TYPE_FP32`.
    TypeFp32 = 11,
    /// `TYPE_FP64`.
    TypeFp64 = 12,
    /// `TYPE_STRING` (the protocol's `BYTES`; no model served here has one).
    TypeString = 13,
    /// `TYPE_BF16`.
    TypeBf16 = 14,
}

impl DataType {
    /// The name Triton's JSON gives it (`TYPE_FP32`).
    pub fn as_str_name(self) -> &'static str {
        match self {
            DataType::TypeInvalid => "TYPE_INVALID",
            DataType::TypeBool => "TYPE_BOOL",
            DataType::TypeUint8 => "TYPE_UINT8",
            DataType::TypeUint16 => "TYPE_UINT16",
            DataType::TypeUint32 => "TYPE_UINT32",
            DataType::TypeUint64 => "TYPE_UINT64",
            DataType::TypeInt8 => "TYPE_INT8",
            DataType::TypeInt16 => "TYPE_INT16",
            DataType::TypeInt32 => "TYPE_INT32",
            DataType::TypeInt64 => "TYPE_INT64",
            DataType::TypeFp16 => "TYPE_FP16",
            DataType::TypeFp32 => "TYPE_FP32",
            DataType::TypeFp64 => "TYPE_FP64",
            DataType::TypeString => "TYPE_STRING",
            DataType::TypeBf16 => "TYPE_BF16",
        }
    }
}

/// `ModelInput.Format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum InputFormat {
    /// `FORMAT_NONE`: no particular layout (every input served here).
    FormatNone = 0,
    /// `FORMAT_NHWC`.
    FormatNhwc = 1,
    /// `FORMAT_NCHW`.
    FormatNchw = 2,
}

impl InputFormat {
    /// The name Triton's JSON gives it (`FORMAT_NONE`).
    pub fn as_str_name(self) -> &'static str {
        match self {
            InputFormat::FormatNone => "FORMAT_NONE",
            InputFormat::FormatNhwc => "FORMAT_NHWC",
            InputFormat::FormatNchw => "FORMAT_NCHW",
        }
    }
}

/// `ModelInstanceGroup.Kind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum InstanceKind {
    /// `KIND_AUTO`.
    KindAuto = 0,
    /// `KIND_GPU`: instances on the GPUs of `gpus`, `count` on each.
    KindGpu = 1,
    /// `KIND_CPU`: `count` instances on the host.
    KindCpu = 2,
    /// `KIND_MODEL`: where the backend puts them (another accelerator than a GPU).
    KindModel = 3,
}

impl InstanceKind {
    /// The name Triton's JSON gives it (`KIND_CPU`).
    pub fn as_str_name(self) -> &'static str {
        match self {
            InstanceKind::KindAuto => "KIND_AUTO",
            InstanceKind::KindGpu => "KIND_GPU",
            InstanceKind::KindCpu => "KIND_CPU",
            InstanceKind::KindModel => "KIND_MODEL",
        }
    }
}

/// `ModelInput`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelInput {
    /// The input's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its element type.
    #[prost(enumeration = "DataType", tag = "2")]
    pub data_type: i32,
    /// Its layout.
    #[prost(enumeration = "InputFormat", tag = "3")]
    pub format: i32,
    /// Its shape, without the batch dimension when `max_batch_size` is over 0; -1 for a
    /// symbolic dimension.
    #[prost(int64, repeated, tag = "4")]
    pub dims: Vec<i64>,
    /// Whether it is a shape tensor (never, here).
    #[prost(bool, tag = "6")]
    pub is_shape_tensor: bool,
    /// Whether requests of a batch may differ in its shape.
    #[prost(bool, tag = "7")]
    pub allow_ragged_batch: bool,
    /// Whether a request may leave it out (never, here).
    #[prost(bool, tag = "8")]
    pub optional: bool,
    /// Whether it is in a non-linear layout (never, here).
    #[prost(bool, tag = "9")]
    pub is_non_linear_format_io: bool,
}

/// `ModelOutput`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelOutput {
    /// The output's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its element type.
    #[prost(enumeration = "DataType", tag = "2")]
    pub data_type: i32,
    /// Its shape, as an input's `dims`.
    #[prost(int64, repeated, tag = "3")]
    pub dims: Vec<i64>,
    /// A labels file for classifications (none, here).
    #[prost(string, tag = "4")]
    pub label_filename: String,
    /// Whether it is a shape tensor (never, here).
    #[prost(bool, tag = "6")]
    pub is_shape_tensor: bool,
    /// Whether it is in a non-linear layout (never, here).
    #[prost(bool, tag = "7")]
    pub is_non_linear_format_io: bool,
}

/// `ModelInstanceGroup`: where the model runs, and how many executions at once.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelInstanceGroup {
    /// The group's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// How many instances: in all for `KIND_CPU`, on each GPU of `gpus` for `KIND_GPU`.
    #[prost(int32, tag = "2")]
    pub count: i32,
    /// The GPUs (for `KIND_GPU`).
    #[prost(int32, repeated, tag = "3")]
    pub gpus: Vec<i32>,
    /// Where the instances run.
    #[prost(enumeration = "InstanceKind", tag = "4")]
    pub kind: i32,
    /// TensorRT optimization profiles (none, here).
    #[prost(string, repeated, tag = "5")]
    pub profile: Vec<String>,
    /// Whether the instances take no requests (never, here).
    #[prost(bool, tag = "7")]
    pub passive: bool,
    /// The host policy's name.
    #[prost(string, tag = "9")]
    pub host_policy: String,
}

/// `ModelDynamicBatching`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelDynamicBatching {
    /// The batch sizes executions run at.
    #[prost(int32, repeated, tag = "1")]
    pub preferred_batch_size: Vec<i32>,
    /// How long the first request of a batch waits for others, in microseconds.
    #[prost(uint64, tag = "2")]
    pub max_queue_delay_microseconds: u64,
    /// Whether answers keep the requests' order.
    #[prost(bool, tag = "3")]
    pub preserve_ordering: bool,
    /// Priority levels (none, here).
    #[prost(uint64, tag = "4")]
    pub priority_levels: u64,
    /// The default priority level (none, here).
    #[prost(uint64, tag = "5")]
    pub default_priority_level: u64,
}

/// `ModelVersionPolicy.Latest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LatestVersions {
    /// How many of the highest versions are served.
    #[prost(uint32, tag = "1")]
    pub num_versions: u32,
}

/// `ModelVersionPolicy` (only its `latest` choice is sent).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelVersionPolicy {
    /// `latest` (field 1 of the `policy_choice` oneof).
    #[prost(message, optional, tag = "1")]
    pub latest: Option<LatestVersions>,
}

/// `ModelTransactionPolicy`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelTransactionPolicy {
    /// Whether a request may have other than one response (never, here).
    #[prost(bool, tag = "1")]
    pub decoupled: bool,
}

/// `ModelConfig`: the fields this server fills.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelConfig {
    /// The model's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its platform (`pjrt_cpu`, ..., as its metadata says).
    #[prost(string, tag = "2")]
    pub platform: String,
    /// Which versions are served.
    #[prost(message, optional, tag = "3")]
    pub version_policy: Option<ModelVersionPolicy>,
    /// The most rows of a batch; 0: the model does not batch along a first dimension that
    /// `dims` leave out.
    #[prost(int32, tag = "4")]
    pub max_batch_size: i32,
    /// The inputs a request gives.
    #[prost(message, repeated, tag = "5")]
    pub input: Vec<ModelInput>,
    /// The outputs.
    #[prost(message, repeated, tag = "6")]
    pub output: Vec<ModelOutput>,
    /// Where it runs.
    #[prost(message, repeated, tag = "7")]
    pub instance_group: Vec<ModelInstanceGroup>,
    /// The program's file name.
    #[prost(string, tag = "8")]
    pub default_model_filename: String,
    /// Dynamic batching (field 11 of the `scheduling_choice` oneof), for a batched model.
    #[prost(message, optional, tag = "11")]
    pub dynamic_batching: Option<ModelDynamicBatching>,
    /// Its backend (`pjrt`).
    #[prost(string, tag = "17")]
    pub backend: String,
    /// One response per request.
    #[prost(message, optional, tag = "19")]
    pub model_transaction_policy: Option<ModelTransactionPolicy>,
    /// The backend's library file (none, here).
    #[prost(string, tag = "25")]
    pub runtime: String,
}
