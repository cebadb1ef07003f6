//! The Open Inference Protocol over gRPC, as Triton's `inference.GRPCInferenceService` (the
//! service and field numbers `tritonclient.grpc` speaks): server live/ready/metadata, model
//! ready/metadata, infer, and the repository index, load and unload. Its other calls (streaming
//! inference, model config and statistics, shared memory, trace, log settings) answer
//! UNIMPLEMENTED.
//!
//! The messages are declared here with prost's derive, from the service's published
//! definition: no code generation, no `.proto` file in the tree.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use tonic::{Request, Response, Status};

use http_body_util::BodyExt as _;

use crate::budget::{Budgeted, Reservation};
use crate::error::ServeError;
use crate::{dispatch, Shared};

mod wire;

/// The messages of `inference.GRPCInferenceService` that this server answers.
pub mod messages {
    use std::collections::HashMap;

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
        /// Its parameters (an input's are refused when given: none is implemented).
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
        /// Its parameters (refused when given).
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
        /// Request parameters (refused when given).
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
        /// `READY` or `UNAVAILABLE`.
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
        /// The value (any is refused: none is implemented).
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
        /// Parameters (refused when given).
        #[prost(map = "string, message", tag = "3")]
        pub parameters: HashMap<String, ModelRepositoryParameter>,
    }
}

use messages::*;

/// The gRPC status of an error, as Triton answers.
fn status(e: &ServeError) -> Status {
    let message = e.to_string();
    match e {
        ServeError::BadRequest(_) => Status::invalid_argument(message),
        ServeError::NotFound(_) => Status::not_found(message),
        ServeError::Unavailable(_) => Status::unavailable(message),
        ServeError::Unauthorized => Status::unauthenticated(message),
        ServeError::Forbidden(_) => Status::permission_denied(message),
        ServeError::TooLarge(_) => Status::resource_exhausted(message),
        ServeError::TimedOut(_) => Status::deadline_exceeded(message),
        ServeError::Load { .. } | ServeError::Internal(_) => Status::internal(message),
    }
}

fn bad(message: impl Into<String>) -> ServeError {
    ServeError::BadRequest(message.into())
}

/// A unary handler as tonic's `UnaryService`.
struct Unary<F>(F);

impl<F, Req, Resp, Fut> tonic::codegen::Service<Request<Req>> for Unary<F>
where
    F: FnMut(Request<Req>) -> Fut,
    Fut: Future<Output = Result<Response<Resp>, Status>>,
{
    type Response = Response<Resp>;
    type Error = Status;
    type Future = Fut;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Status>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Req>) -> Fut {
        (self.0)(request)
    }
}

/// The service, over the server's shared state.
#[derive(Clone)]
pub(crate) struct GrpcService {
    pub shared: Arc<Shared>,
}

impl tonic::server::NamedService for GrpcService {
    const NAME: &'static str = "inference.GRPCInferenceService";
}

type HttpResponse = tonic::codegen::http::Response<tonic::body::Body>;
type BoxFuture = Pin<Box<dyn Future<Output = Result<HttpResponse, Infallible>> + Send>>;

impl<B> tonic::codegen::Service<http::Request<B>> for GrpcService
where
    B: http_body::Body<Data = bytes::Bytes> + Send + Unpin + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = HttpResponse;
    type Error = Infallible;
    type Future = BoxFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> BoxFuture {
        let shared = self.shared.clone();
        let open = shared.options.open_health_and_metrics
            && matches!(
                request.uri().path(),
                "/inference.GRPCInferenceService/ServerLive" | "/inference.GRPCInferenceService/ServerReady"
            );
        if !open && !crate::http::authorized(&shared, request.headers().get("authorization")) {
            let status = status(&ServeError::Unauthorized);
            return Box::pin(async move { Ok(status.into_http()) });
        }
        let infer = request.uri().path() == "/inference.GRPCInferenceService/ModelInfer";
        // The message's bytes are taken of the budget as they arrive, before tonic buffers
        // them; only ModelInfer takes a large one.
        let limit = if infer { shared.options.max_body_bytes } else { SMALL_MESSAGE };
        let reservation = shared.budget.reservation();
        let (mut parts, body) = request.into_parts();
        parts.extensions.insert(reservation.clone());
        let body = Budgeted::new(body, reservation, limit.saturating_add(5), shared.options.body_timeout)
            .map_err(|e| status(&e.into_serve_error()));
        let request = http::Request::from_parts(parts, tonic::body::Body::new(body));
        macro_rules! unary {
            ($handler:ident) => {
                Box::pin(async move {
                    let codec = tonic::codec::ProstCodec::default();
                    let mut grpc =
                        tonic::server::Grpc::new(codec).apply_max_message_size_config(Some(limit), Some(usize::MAX));
                    let service = Unary(move |r| $handler(shared.clone(), r));
                    Ok(grpc.unary(service, request).await)
                })
            };
        }
        match request.uri().path() {
            "/inference.GRPCInferenceService/ServerLive" => unary!(server_live),
            "/inference.GRPCInferenceService/ServerReady" => unary!(server_ready),
            "/inference.GRPCInferenceService/ServerMetadata" => unary!(server_metadata),
            "/inference.GRPCInferenceService/ModelReady" => unary!(model_ready),
            "/inference.GRPCInferenceService/ModelMetadata" => unary!(model_metadata),
            "/inference.GRPCInferenceService/ModelInfer" => Box::pin(async move {
                // The message as bytes: read by hand, bounded, after the model is found.
                let mut grpc =
                    tonic::server::Grpc::new(MessageBytes).apply_max_message_size_config(Some(limit), Some(usize::MAX));
                let service = Unary(move |r| model_infer(shared.clone(), r));
                Ok(grpc.unary(service, request).await)
            }),
            "/inference.GRPCInferenceService/RepositoryIndex" => unary!(repository_index),
            "/inference.GRPCInferenceService/RepositoryModelLoad" => unary!(repository_load),
            "/inference.GRPCInferenceService/RepositoryModelUnload" => unary!(repository_unload),
            path => {
                let status = Status::unimplemented(format!("{path} is not implemented by pjrt serve"));
                Box::pin(async move { Ok(status.into_http()) })
            }
        }
    }
}

/// The most a call other than ModelInfer may send.
const SMALL_MESSAGE: usize = 64 << 10;

/// A codec whose requests are their encoded bytes (the message tonic buffered, not copied) and
/// whose answers are `ModelInferResponse`s.
struct MessageBytes;

impl tonic::codec::Codec for MessageBytes {
    type Encode = ModelInferResponse;
    type Decode = bytes::Bytes;
    type Encoder = MessageBytes;
    type Decoder = MessageBytes;

    fn encoder(&mut self) -> MessageBytes {
        MessageBytes
    }

    fn decoder(&mut self) -> MessageBytes {
        MessageBytes
    }
}

impl tonic::codec::Encoder for MessageBytes {
    type Item = ModelInferResponse;
    type Error = Status;

    fn encode(&mut self, item: ModelInferResponse, dst: &mut tonic::codec::EncodeBuf<'_>) -> Result<(), Status> {
        prost::Message::encode(&item, dst).map_err(|e| Status::internal(format!("encoding the answer: {e}")))
    }
}

impl tonic::codec::Decoder for MessageBytes {
    type Item = bytes::Bytes;
    type Error = Status;

    fn decode(&mut self, src: &mut tonic::codec::DecodeBuf<'_>) -> Result<Option<bytes::Bytes>, Status> {
        use bytes::Buf as _;
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}

async fn server_live(_: Arc<Shared>, _: Request<ServerLiveRequest>) -> Result<Response<ServerLiveResponse>, Status> {
    Ok(Response::new(ServerLiveResponse { live: true }))
}

async fn server_ready(_: Arc<Shared>, _: Request<ServerReadyRequest>) -> Result<Response<ReadyResponse>, Status> {
    Ok(Response::new(ReadyResponse { ready: true }))
}

async fn server_metadata(
    _: Arc<Shared>,
    _: Request<ServerMetadataRequest>,
) -> Result<Response<ServerMetadataResponse>, Status> {
    Ok(Response::new(ServerMetadataResponse {
        name: "pjrt-serve".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        extensions: vec!["binary_tensor_data".into(), "model_repository".into()],
    }))
}

fn version_of(v: &str) -> Option<&str> {
    Some(v).filter(|v| !v.is_empty())
}

async fn model_ready(shared: Arc<Shared>, request: Request<ModelRequest>) -> Result<Response<ReadyResponse>, Status> {
    let r = request.into_inner();
    let ready = dispatch::find_model(&shared, &r.name, version_of(&r.version)).is_ok();
    Ok(Response::new(ReadyResponse { ready }))
}

async fn model_metadata(
    shared: Arc<Shared>,
    request: Request<ModelRequest>,
) -> Result<Response<ModelMetadataResponse>, Status> {
    let r = request.into_inner();
    let model = dispatch::find_model(&shared, &r.name, version_of(&r.version)).map_err(|e| status(&e))?.model;
    let specs = |list: &[crate::TensorSpec]| {
        list.iter()
            .map(|s| TensorMetadata {
                name: s.name.clone(),
                datatype: s.datatype.name().into(),
                shape: s.shape.clone(),
            })
            .collect()
    };
    Ok(Response::new(ModelMetadataResponse {
        name: model.name().into(),
        versions: vec![model.version().into()],
        platform: format!("pjrt_{}", shared.client.platform_name()),
        inputs: specs(model.inputs()),
        outputs: specs(model.outputs()),
    }))
}

fn refuse_parameters<V>(parameters: &HashMap<String, V>, what: &str) -> Result<(), ServeError> {
    match parameters.keys().next() {
        Some(key) => Err(bad(format!("{what}: parameter {key:?} is not supported here"))),
        None => Ok(()),
    }
}

async fn model_infer(
    shared: Arc<Shared>,
    request: Request<bytes::Bytes>,
) -> Result<Response<ModelInferResponse>, Status> {
    let arrived = Instant::now();
    let reservation =
        request.extensions().get::<Arc<Reservation>>().cloned().unwrap_or_else(|| shared.budget.reservation());
    let message = request.into_inner();
    // The envelope only (names, shapes: bounded), then the model, then the queue.
    let call = wire::read_infer_call(&message).map_err(|e| status(&e))?;
    let found =
        dispatch::find_model(&shared, &call.model_name, version_of(&call.model_version)).map_err(|e| status(&e))?;
    let model = found.model.clone();
    let result = async {
        let permit = dispatch::admit(&shared, &model, found.queue.clone())?;
        let request = dispatch::decode_off_runtime(&model, &reservation, move |check| {
            let decoded = wire::infer_request(call, check);
            drop(message);
            decoded
        })
        .await?;
        let id = request.id.clone().unwrap_or_default();
        let outputs = dispatch::run(&shared, &found, permit, request, arrived).await?;
        Ok::<_, ServeError>((id, outputs))
    }
    .await;
    let (id, outputs) = result.map_err(|e| {
        dispatch::record_failure(&shared, model.name(), &e, arrived);
        status(&e)
    })?;
    let mut response = ModelInferResponse {
        model_name: model.name().into(),
        model_version: model.version().into(),
        id,
        ..Default::default()
    };
    for o in outputs {
        response.outputs.push(InferOutputTensor {
            name: o.name,
            datatype: o.datatype.name().into(),
            shape: o.shape,
            ..Default::default()
        });
        response.raw_output_contents.push(o.data);
    }
    Ok(Response::new(response))
}

async fn repository_index(
    shared: Arc<Shared>,
    request: Request<RepositoryIndexRequest>,
) -> Result<Response<RepositoryIndexResponse>, Status> {
    let ready_only = request.into_inner().ready;
    let mut models = Vec::new();
    for entry in shared.models.read().unwrap_or_else(|e| e.into_inner()).values() {
        models.push(ModelIndex {
            name: entry.model.name().into(),
            version: entry.model.version().into(),
            state: "READY".into(),
            reason: String::new(),
        });
    }
    if !ready_only {
        for (name, reason) in shared.failed.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            models.push(ModelIndex {
                name: name.clone(),
                version: String::new(),
                state: "UNAVAILABLE".into(),
                reason: reason.clone(),
            });
        }
    }
    Ok(Response::new(RepositoryIndexResponse { models }))
}

async fn repository_load(
    shared: Arc<Shared>,
    request: Request<RepositoryModelRequest>,
) -> Result<Response<RepositoryModelLoadResponse>, Status> {
    let r = request.into_inner();
    crate::http::check_model_control(&shared).map_err(|e| status(&e))?;
    refuse_parameters(&r.parameters, "the load request").map_err(|e| status(&e))?;
    crate::http::load_from_repository(shared, r.model_name).await.map_err(|e| status(&e))?;
    Ok(Response::new(RepositoryModelLoadResponse {}))
}

async fn repository_unload(
    shared: Arc<Shared>,
    request: Request<RepositoryModelRequest>,
) -> Result<Response<RepositoryModelUnloadResponse>, Status> {
    let r = request.into_inner();
    crate::http::check_model_control(&shared).map_err(|e| status(&e))?;
    refuse_parameters(&r.parameters, "the unload request").map_err(|e| status(&e))?;
    crate::http::unload(shared, &r.model_name).map_err(|e| status(&e))?;
    Ok(Response::new(RepositoryModelUnloadResponse {}))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::InferRequest;
    use prost::Message as _;

    /// A request through the wire reader, as the server reads it.
    fn infer_request(m: ModelInferRequest) -> Result<InferRequest, ServeError> {
        let bytes = bytes::Bytes::from(m.encode_to_vec());
        wire::infer_request(wire::read_infer_call(&bytes)?, &mut |_| Ok(()))
    }

    fn input(name: &str, datatype: &str, shape: Vec<i64>, contents: Option<InferTensorContents>) -> InferInputTensor {
        InferInputTensor { name: name.into(), datatype: datatype.into(), shape, parameters: HashMap::new(), contents }
    }

    #[test]
    fn field_numbers_are_the_services() {
        // Hand-encoded: field 1, 2 and 3 as length-delimited strings (tags 0x0a, 0x12, 0x1a).
        let m = ServerMetadataResponse { name: "a".into(), version: "b".into(), extensions: vec!["c".into()] };
        assert_eq!(m.encode_to_vec(), [0x0a, 1, b'a', 0x12, 1, b'b', 0x1a, 1, b'c']);
        // raw_input_contents is field 7 of ModelInferRequest, raw_output_contents field 6 of the response.
        let request = ModelInferRequest { raw_input_contents: vec![vec![9]], ..Default::default() };
        assert_eq!(request.encode_to_vec(), [0x3a, 1, 9]);
        let response = ModelInferResponse { raw_output_contents: vec![vec![9]], ..Default::default() };
        assert_eq!(response.encode_to_vec(), [0x32, 1, 9]);
    }

    #[test]
    fn typed_and_raw_contents_become_little_endian_bytes() {
        let typed = ModelInferRequest {
            inputs: vec![
                input(
                    "x",
                    "FP32",
                    vec![2],
                    Some(InferTensorContents { fp32_contents: vec![1.5, -2.0], ..Default::default() }),
                ),
                input(
                    "i",
                    "INT16",
                    vec![1],
                    Some(InferTensorContents { int_contents: vec![-7], ..Default::default() }),
                ),
                input(
                    "b",
                    "BOOL",
                    vec![2],
                    Some(InferTensorContents { bool_contents: vec![true, false], ..Default::default() }),
                ),
            ],
            ..Default::default()
        };
        let r = infer_request(typed).unwrap();
        assert_eq!(r.inputs[0].data, [1.5f32.to_le_bytes(), (-2.0f32).to_le_bytes()].concat());
        assert_eq!(r.inputs[1].data, (-7i16).to_le_bytes());
        assert_eq!(r.inputs[2].data, [1, 0]);
        let raw = ModelInferRequest {
            inputs: vec![input("h", "FP16", vec![1], None)],
            raw_input_contents: vec![vec![0, 0x3c]],
            ..Default::default()
        };
        assert_eq!(infer_request(raw).unwrap().inputs[0].data, [0, 0x3c]);
    }

    #[test]
    fn wrong_requests_are_refused_naming_what_is_wrong() {
        let cases: Vec<(ModelInferRequest, &str)> = vec![
            (
                ModelInferRequest {
                    inputs: vec![input("x", "FP32", vec![3], None)],
                    raw_input_contents: vec![vec![0; 8]],
                    ..Default::default()
                },
                "8 bytes of data, but 3 FP32 elements",
            ),
            (
                ModelInferRequest {
                    inputs: vec![input("x", "FP32", vec![1], None), input("y", "FP32", vec![1], None)],
                    raw_input_contents: vec![vec![0; 4]],
                    ..Default::default()
                },
                "raw_input_contents has 1 entries for 2 inputs",
            ),
            (
                ModelInferRequest {
                    inputs: vec![input("x", "BOOL", vec![1], None)],
                    raw_input_contents: vec![vec![2]],
                    ..Default::default()
                },
                "byte 2",
            ),
            (
                ModelInferRequest {
                    inputs: vec![input(
                        "x",
                        "INT8",
                        vec![1],
                        Some(InferTensorContents { int_contents: vec![300], ..Default::default() }),
                    )],
                    ..Default::default()
                },
                "300 is out of range",
            ),
            (
                ModelInferRequest {
                    inputs: vec![input("x", "BF16", vec![1], Some(InferTensorContents::default()))],
                    ..Default::default()
                },
                "raw_input_contents",
            ),
            (ModelInferRequest { inputs: vec![input("x", "BYTES", vec![1], None)], ..Default::default() }, "BYTES"),
            (ModelInferRequest { inputs: vec![input("x", "FP32", vec![-1], None)], ..Default::default() }, "negative"),
            (
                ModelInferRequest { inputs: vec![input("x", "FP32", vec![1], None)], ..Default::default() },
                "no contents",
            ),
            (
                ModelInferRequest {
                    parameters: HashMap::from([(
                        "priority".to_string(),
                        InferParameter { parameter_choice: Some(ParameterChoice::Int64Param(1)) },
                    )]),
                    ..Default::default()
                },
                "\"priority\" is not supported",
            ),
        ];
        for (request, says) in cases {
            let e = infer_request(request).unwrap_err();
            assert!(e.to_string().contains(says), "{e} does not say {says:?}");
            assert_eq!(status(&e).code(), tonic::Code::InvalidArgument);
        }
    }

    /// Random bytes decoded as a request, and requests with random sizes, give errors, never a
    /// panic or an allocation beyond the message.
    #[test]
    fn hostile_messages_are_errors() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let valid = ModelInferRequest {
            model_name: "m".into(),
            inputs: vec![input("x", "FP32", vec![2, 2], None)],
            raw_input_contents: vec![vec![0; 16]],
            ..Default::default()
        }
        .encode_to_vec();
        for _ in 0..5000 {
            let mut bytes = valid.clone();
            for _ in 0..1 + next() % 4 {
                let at = next() as usize % bytes.len();
                bytes[at] = next() as u8;
            }
            let bytes = bytes::Bytes::from(bytes);
            if let Ok(call) = wire::read_infer_call(&bytes) {
                let _ = wire::infer_request(call, &mut |_| Ok(()));
            }
        }
        let huge = ModelInferRequest {
            inputs: vec![input("x", "FP64", vec![i64::MAX, i64::MAX], None)],
            raw_input_contents: vec![vec![]],
            ..Default::default()
        };
        assert!(infer_request(huge).unwrap_err().to_string().contains("too many elements"));
    }

    /// Typed contents, packed (as prost writes them) or one element per field, are decoded
    /// into the declared shape's bytes and never past them; contents in another type's field
    /// are refused by name.
    #[test]
    fn typed_contents_are_decoded_no_further_than_the_shape() {
        let int64 = |n: usize| InferTensorContents { int64_contents: vec![0; n], ..Default::default() };
        let request = |shape: i64, contents| ModelInferRequest {
            inputs: vec![input("x", "INT64", vec![shape], Some(contents))],
            ..Default::default()
        };
        assert_eq!(infer_request(request(3, int64(3))).unwrap().inputs[0].data, [0; 24]);
        let e = infer_request(request(3, int64(1 << 20))).unwrap_err().to_string();
        assert!(e.contains("more than the 3 elements"), "{e}");
        let e = infer_request(request(3, int64(2))).unwrap_err().to_string();
        assert!(e.contains("2 elements of contents, but its shape has 3"), "{e}");
        let mut checked = Vec::new();
        let fp32 =
            ModelInferRequest { inputs: vec![input("x", "FP32", vec![2], Some(int64(2)))], ..Default::default() };
        let bytes = bytes::Bytes::from(fp32.encode_to_vec());
        let call = wire::read_infer_call(&bytes).unwrap();
        let e = wire::infer_request(call, &mut |h| {
            checked.push((h.name.to_string(), h.bytes));
            Ok(())
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("int64_contents, but FP32's are in fp32_contents"), "{e}");
        assert_eq!(checked, [("x".to_string(), 8)]);
        // Unpacked: field 3 (varint) twice, inside contents (field 5) of input field 5.
        let contents = [0x18, 0x07, 0x18, 0x7f];
        let mut tensor = vec![0x0a, 1, b'x', 0x12, 5];
        tensor.extend(b"INT64");
        tensor.extend([0x1a, 1, 2, 0x2a, contents.len() as u8]);
        tensor.extend(contents);
        let mut message = vec![0x2a, tensor.len() as u8];
        message.extend(tensor);
        let bytes = bytes::Bytes::from(message);
        let request = wire::infer_request(wire::read_infer_call(&bytes).unwrap(), &mut |_| Ok(())).unwrap();
        assert_eq!(request.inputs[0].data, [7i64.to_le_bytes(), 127i64.to_le_bytes()].concat());
    }
}
