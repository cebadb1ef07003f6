//! The messages of `inference.GRPCInferenceService` that this server answers.

use std::collections::HashMap;

pub use super::shared_memory::{
    SystemSharedMemoryRegionStatus, SystemSharedMemoryRegisterRequest, SystemSharedMemoryResponse,
    SystemSharedMemoryStatusRequest, SystemSharedMemoryStatusResponse, SystemSharedMemoryUnregisterRequest,
};
pub use super::statistics::{
    InferBatchStatistics, InferResponseStatistics, InferStatistics, MemoryUsage, ModelStatistics,
    ModelStatisticsRequest, ModelStatisticsResponse, StatisticDuration,
};
pub use crate::model_config::messages::*;

macro_rules! empty {
    ($($name:ident),*) => {$(
        #[doc = concat!("`", stringify!($name), "` (no fields).")]
        #[derive(Clone, PartialEq, prost::Message)]
        pub struct $name {}
    )*};
}
empty!(
    ServerLiveRequest,
    ServerReadyRequest,
    ServerMetadataRequest,
    RepositoryModelLoadResponse,
    RepositoryModelUnloadResponse
);

/// `ServerLiveResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ServerLiveResponse {
    /// The server is live.
    #[prost(bool, tag = "1")]
    pub live: bool,
}

/// `ServerReadyResponse` and `ModelReadyResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ReadyResponse {
    /// Ready.
    #[prost(bool, tag = "1")]
    pub ready: bool,
}

/// `ModelReadyRequest`, `ModelMetadataRequest`: a model and, optionally, its version.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelRequest {
    /// The model's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its version; empty: the one served.
    #[prost(string, tag = "2")]
    pub version: String,
}

/// `ServerMetadataResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ServerMetadataResponse {
    /// The server's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its version.
    #[prost(string, tag = "2")]
    pub version: String,
    /// The protocol extensions it has.
    #[prost(string, repeated, tag = "3")]
    pub extensions: Vec<String>,
}

/// `ModelMetadataResponse.TensorMetadata`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorMetadata {
    /// The tensor's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its datatype.
    #[prost(string, tag = "2")]
    pub datatype: String,
    /// Its shape, -1 for a symbolic dimension.
    #[prost(int64, repeated, tag = "3")]
    pub shape: Vec<i64>,
}

/// `ModelMetadataResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelMetadataResponse {
    /// The model's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its versions.
    #[prost(string, repeated, tag = "2")]
    pub versions: Vec<String>,
    /// Its platform.
    #[prost(string, tag = "3")]
    pub platform: String,
    /// Its inputs.
    #[prost(message, repeated, tag = "4")]
    pub inputs: Vec<TensorMetadata>,
    /// Its outputs.
    #[prost(message, repeated, tag = "5")]
    pub outputs: Vec<TensorMetadata>,
}

/// `InferParameter`: one value of a parameter map.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InferParameter {
    /// The value.
    #[prost(oneof = "ParameterChoice", tags = "1, 2, 3, 4, 5")]
    pub parameter_choice: Option<ParameterChoice>,
}

/// The values an `InferParameter` holds.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum ParameterChoice {
    /// `bool_param`.
    #[prost(bool, tag = "1")]
    BoolParam(bool),
    /// `int64_param`.
    #[prost(int64, tag = "2")]
    Int64Param(i64),
    /// `string_param`.
    #[prost(string, tag = "3")]
    StringParam(String),
    /// `double_param`.
    #[prost(double, tag = "4")]
    DoubleParam(f64),
    /// `uint64_param`.
    #[prost(uint64, tag = "5")]
    Uint64Param(u64),
}

/// `InferTensorContents`: a tensor's elements as typed lists (FP16 and BF16 only raw).
#[derive(Clone, PartialEq, prost::Message)]
pub struct InferTensorContents {
    /// BOOL.
    #[prost(bool, repeated, tag = "1")]
    pub bool_contents: Vec<bool>,
    /// INT8, INT16, INT32.
    #[prost(int32, repeated, tag = "2")]
    pub int_contents: Vec<i32>,
    /// INT64.
    #[prost(int64, repeated, tag = "3")]
    pub int64_contents: Vec<i64>,
    /// UINT8, UINT16, UINT32.
    #[prost(uint32, repeated, tag = "4")]
    pub uint_contents: Vec<u32>,
    /// UINT64.
    #[prost(uint64, repeated, tag = "5")]
    pub uint64_contents: Vec<u64>,
    /// FP32.
    #[prost(float, repeated, tag = "6")]
    pub fp32_contents: Vec<f32>,
    /// FP64.
    #[prost(double, repeated, tag = "7")]
    pub fp64_contents: Vec<f64>,
    /// BYTES (refused: no PJRT type).
    #[prost(bytes = "vec", repeated, tag = "8")]
    pub bytes_contents: Vec<Vec<u8>>,
}

/// `ModelInferRequest.InferInputTensor` and `ModelInferResponse.InferOutputTensor`, which
/// have the same fields and numbers.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InferTensor {
    /// The tensor's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its datatype.
    #[prost(string, tag = "2")]
    pub datatype: String,
    /// Its shape.
    #[prost(int64, repeated, tag = "3")]
    pub shape: Vec<i64>,
    /// Its parameters (`binary_data_size`, the shared-memory ones; others are refused by name).
    #[prost(map = "string, message", tag = "4")]
    pub parameters: HashMap<String, InferParameter>,
    /// Its elements, unless they are in the message's raw contents (this server sends raw
    /// ones).
    #[prost(message, optional, tag = "5")]
    pub contents: Option<InferTensorContents>,
}

/// An input tensor of a request.
pub type InferInputTensor = InferTensor;
/// An output tensor of a response.
pub type InferOutputTensor = InferTensor;

/// `ModelInferRequest.InferRequestedOutputTensor`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InferRequestedOutputTensor {
    /// The output's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its parameters (`binary_data`, true: gRPC answers every output raw).
    #[prost(map = "string, message", tag = "2")]
    pub parameters: HashMap<String, InferParameter>,
}

/// `ModelInferRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelInferRequest {
    /// The model.
    #[prost(string, tag = "1")]
    pub model_name: String,
    /// Its version; empty: the one served.
    #[prost(string, tag = "2")]
    pub model_version: String,
    /// The request's id, echoed.
    #[prost(string, tag = "3")]
    pub id: String,
    /// Request parameters (`binary_data_output`, `triton_enable_empty_final_response`; others are
    /// refused by name).
    #[prost(map = "string, message", tag = "4")]
    pub parameters: HashMap<String, InferParameter>,
    /// The inputs.
    #[prost(message, repeated, tag = "5")]
    pub inputs: Vec<InferInputTensor>,
    /// The outputs asked for; empty: all.
    #[prost(message, repeated, tag = "6")]
    pub outputs: Vec<InferRequestedOutputTensor>,
    /// Each input's bytes, in the order of `inputs` (or none: typed `contents`).
    #[prost(bytes = "vec", repeated, tag = "7")]
    pub raw_input_contents: Vec<Vec<u8>>,
}

/// `ModelInferResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelInferResponse {
    /// The model.
    #[prost(string, tag = "1")]
    pub model_name: String,
    /// Its version.
    #[prost(string, tag = "2")]
    pub model_version: String,
    /// The request's id.
    #[prost(string, tag = "3")]
    pub id: String,
    /// Response parameters.
    #[prost(map = "string, message", tag = "4")]
    pub parameters: HashMap<String, InferParameter>,
    /// The outputs.
    #[prost(message, repeated, tag = "5")]
    pub outputs: Vec<InferOutputTensor>,
    /// Each output's bytes, in the order of `outputs`.
    #[prost(bytes = "vec", repeated, tag = "6")]
    pub raw_output_contents: Vec<Vec<u8>>,
}

/// `RepositoryIndexRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RepositoryIndexRequest {
    /// The repository (this server has one).
    #[prost(string, tag = "1")]
    pub repository_name: String,
    /// Only the models ready to serve.
    #[prost(bool, tag = "2")]
    pub ready: bool,
}

/// `RepositoryIndexResponse.ModelIndex`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelIndex {
    /// The model.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its version.
    #[prost(string, tag = "2")]
    pub version: String,
    /// `READY`, `LOADING` or `UNAVAILABLE`.
    #[prost(string, tag = "3")]
    pub state: String,
    /// Why it is not ready.
    #[prost(string, tag = "4")]
    pub reason: String,
}

/// `RepositoryIndexResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RepositoryIndexResponse {
    /// The models.
    #[prost(message, repeated, tag = "1")]
    pub models: Vec<ModelIndex>,
}

/// `ModelRepositoryParameter`: one value of a load or unload parameter map.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelRepositoryParameter {
    /// The value.
    #[prost(oneof = "RepositoryParameterChoice", tags = "1, 2, 3, 4")]
    pub parameter_choice: Option<RepositoryParameterChoice>,
}

/// The values a `ModelRepositoryParameter` holds.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum RepositoryParameterChoice {
    /// `bool_param`.
    #[prost(bool, tag = "1")]
    BoolParam(bool),
    /// `int64_param`.
    #[prost(int64, tag = "2")]
    Int64Param(i64),
    /// `string_param`.
    #[prost(string, tag = "3")]
    StringParam(String),
    /// `bytes_param`.
    #[prost(bytes = "vec", tag = "4")]
    BytesParam(Vec<u8>),
}

/// `RepositoryModelLoadRequest` and `RepositoryModelUnloadRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RepositoryModelRequest {
    /// The repository (this server has one).
    #[prost(string, tag = "1")]
    pub repository_name: String,
    /// The model.
    #[prost(string, tag = "2")]
    pub model_name: String,
    /// Parameters: a load's `config` (`string_param`, a JSON model config), an unload's
    /// `unload_dependents` (`bool_param`); others are refused by name.
    #[prost(map = "string, message", tag = "3")]
    pub parameters: HashMap<String, ModelRepositoryParameter>,
}
