//! The service: the calls routed by path, each a unary handler over the server's shared state.

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
use crate::state::Shared;
use crate::{auth, control, dispatch, repository};

use super::health::check as health_check;
use super::messages::*;
use super::shared_memory::{register as shm_register, status as shm_status, unregister as shm_unregister};
use super::statistics::model_statistics;
use super::wire;

/// The gRPC status of an error, as Triton answers: its code from the error's HTTP status, its
/// message the error's, the error kept as its source.
impl From<ServeError> for Status {
    fn from(e: ServeError) -> Status {
        let code = match e.status() {
            400 => tonic::Code::InvalidArgument,
            401 => tonic::Code::Unauthenticated,
            403 => tonic::Code::PermissionDenied,
            404 => tonic::Code::NotFound,
            408 => tonic::Code::DeadlineExceeded,
            409 => tonic::Code::AlreadyExists,
            413 => tonic::Code::ResourceExhausted,
            503 => tonic::Code::Unavailable,
            _ => tonic::Code::Internal,
        };
        let mut status = Status::new(code, e.to_string());
        status.set_source(Arc::new(e));
        status
    }
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
                "/inference.GRPCInferenceService/ServerLive"
                    | "/inference.GRPCInferenceService/ServerReady"
                    | "/grpc.health.v1.Health/Check"
                    | "/grpc.health.v1.Health/Watch"
            );
        if !open && !auth::authorized(&shared.options, request.headers().get("authorization")) {
            let status = Status::from(ServeError::Unauthorized);
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
            .map_err(|e| Status::from(e.into_serve_error()));
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
            "/inference.GRPCInferenceService/ModelConfig" => unary!(model_config),
            "/inference.GRPCInferenceService/ModelInfer" => Box::pin(async move {
                // The message as bytes: read by hand, bounded, after the model is found.
                let mut grpc =
                    tonic::server::Grpc::new(MessageBytes).apply_max_message_size_config(Some(limit), Some(usize::MAX));
                let service = Unary(move |r| model_infer(shared.clone(), r));
                Ok(grpc.unary(service, request).await)
            }),
            "/inference.GRPCInferenceService/ModelStatistics" => unary!(model_statistics),
            "/inference.GRPCInferenceService/RepositoryIndex" => unary!(repository_index),
            "/inference.GRPCInferenceService/RepositoryModelLoad" => unary!(repository_load),
            "/inference.GRPCInferenceService/RepositoryModelUnload" => unary!(repository_unload),
            "/inference.GRPCInferenceService/SystemSharedMemoryStatus" => unary!(shm_status),
            "/inference.GRPCInferenceService/SystemSharedMemoryRegister" => unary!(shm_register),
            "/inference.GRPCInferenceService/SystemSharedMemoryUnregister" => unary!(shm_unregister),
            "/grpc.health.v1.Health/Check" => unary!(health_check),
            "/grpc.health.v1.Health/Watch" => {
                let status = Status::unimplemented(
                    "grpc.health.v1.Health/Watch is not implemented by pjrt serve: call Check (as Kubernetes' gRPC \
                     probes do)",
                );
                Box::pin(async move { Ok(status.into_http()) })
            }
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

async fn server_ready(shared: Arc<Shared>, _: Request<ServerReadyRequest>) -> Result<Response<ReadyResponse>, Status> {
    Ok(Response::new(ReadyResponse { ready: repository::server_ready(&shared).is_ok() }))
}

async fn server_metadata(
    _: Arc<Shared>,
    _: Request<ServerMetadataRequest>,
) -> Result<Response<ServerMetadataResponse>, Status> {
    Ok(Response::new(ServerMetadataResponse {
        name: "pjrt-serve".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        extensions: crate::protocol::EXTENSIONS.iter().map(|e| e.to_string()).collect(),
    }))
}

fn version_of(v: &str) -> Option<&str> {
    Some(v).filter(|v| !v.is_empty())
}

/// Ready or not for a model of the index (loading, failed, unloaded: not ready); an unknown
/// model is `NOT_FOUND`, in Triton's words.
async fn model_ready(shared: Arc<Shared>, request: Request<ModelRequest>) -> Result<Response<ReadyResponse>, Status> {
    let r = request.into_inner();
    let ready = repository::model_ready(&shared, &r.name, version_of(&r.version))?.is_none();
    Ok(Response::new(ReadyResponse { ready }))
}

async fn model_metadata(
    shared: Arc<Shared>,
    request: Request<ModelRequest>,
) -> Result<Response<ModelMetadataResponse>, Status> {
    let r = request.into_inner();
    let model = dispatch::find_model(&shared, &r.name, version_of(&r.version))?.model;
    let specs = |list: &[crate::model::TensorSpec]| {
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

async fn model_config(
    shared: Arc<Shared>,
    request: Request<ModelConfigRequest>,
) -> Result<Response<ModelConfigResponse>, Status> {
    let r = request.into_inner();
    let model = dispatch::find_model(&shared, &r.name, version_of(&r.version))?.model;
    Ok(Response::new(ModelConfigResponse { config: Some(crate::model_config::of(&shared, &model)) }))
}

async fn model_infer(
    shared: Arc<Shared>,
    request: Request<bytes::Bytes>,
) -> Result<Response<ModelInferResponse>, Status> {
    let arrived = Instant::now();
    let reservation =
        request.extensions().get::<Arc<Reservation>>().cloned().unwrap_or_else(|| shared.budget.reservation());
    // The message holds the request's reservation: the inputs kept as slices of it keep its
    // bytes taken of the budget as long as they live.
    let message = crate::budget::hold(request.into_inner(), &reservation);
    // The envelope only (names, shapes: bounded), then the model, then the queue.
    let call = wire::read_infer_call(&message)?;
    let found = dispatch::find_model(&shared, &call.model_name, version_of(&call.model_version))?;
    let model = found.model.clone();
    let result = async {
        let permit = dispatch::admit(&shared, &model, found.queue.clone())?;
        let (id, request) = dispatch::decode_off_runtime(&shared, &model, &reservation, move |check| {
            let decoded = wire::infer_request(call, check);
            drop(message);
            decoded
        })
        .await?;
        let outputs = dispatch::run_placing(&shared, &found, permit, request, arrived).await?;
        Ok::<_, ServeError>((id, outputs))
    }
    .await;
    let (id, (outputs, placed)) = result.map_err(|e| {
        dispatch::record_failure(&shared, &model, &e, arrived);
        Status::from(e)
    })?;
    let mut response = ModelInferResponse {
        model_name: model.name().into(),
        model_version: model.version().into(),
        id,
        ..Default::default()
    };
    for (o, place) in outputs.into_iter().zip(placed) {
        // (An output written to shared memory has its place as parameters, and empty raw
        // contents: Triton keeps one raw entry per output, which tritonclient indexes by.)
        let parameters = place.map(output_parameters).unwrap_or_default();
        response.outputs.push(InferOutputTensor {
            name: o.name,
            datatype: o.datatype.name().into(),
            shape: o.shape,
            parameters,
            ..Default::default()
        });
        response.raw_output_contents.push(o.data);
    }
    Ok(Response::new(response))
}

/// The parameters of an output written to shared memory: its region, offset and byte size.
fn output_parameters(place: crate::protocol::SharedMemoryRef) -> HashMap<String, InferParameter> {
    use crate::protocol::{SHM_BYTE_SIZE, SHM_OFFSET, SHM_REGION};
    let param = |choice| InferParameter { parameter_choice: Some(choice) };
    HashMap::from([
        (SHM_REGION.to_string(), param(ParameterChoice::StringParam(place.region))),
        (SHM_OFFSET.to_string(), param(ParameterChoice::Int64Param(place.offset as i64))),
        (SHM_BYTE_SIZE.to_string(), param(ParameterChoice::Int64Param(place.byte_size as i64))),
    ])
}

async fn repository_index(
    shared: Arc<Shared>,
    request: Request<RepositoryIndexRequest>,
) -> Result<Response<RepositoryIndexResponse>, Status> {
    let ready_only = request.into_inner().ready;
    let models = repository::index(&shared, ready_only)
        .into_iter()
        .map(|m| ModelIndex {
            state: m.state.into(),
            name: m.name,
            version: m.version.unwrap_or_default(),
            reason: m.reason,
        })
        .collect();
    Ok(Response::new(RepositoryIndexResponse { models }))
}

/// A repository call's parameters as model control reads them.
fn control_params(parameters: HashMap<String, ModelRepositoryParameter>) -> Vec<(String, control::Param)> {
    let value = |p: ModelRepositoryParameter| match p.parameter_choice {
        Some(RepositoryParameterChoice::StringParam(text)) => control::Param::Text(text),
        Some(RepositoryParameterChoice::BoolParam(_)) => control::Param::Bool,
        Some(RepositoryParameterChoice::Int64Param(_)) => control::Param::Other("int64_param"),
        Some(RepositoryParameterChoice::BytesParam(_)) => control::Param::Other("bytes_param"),
        None => control::Param::Other("no value"),
    };
    parameters.into_iter().map(|(key, p)| (key, value(p))).collect()
}

/// A load, with Triton's `config` parameter (`string_param`: a JSON model config) if given.
async fn repository_load(
    shared: Arc<Shared>,
    request: Request<RepositoryModelRequest>,
) -> Result<Response<RepositoryModelLoadResponse>, Status> {
    let r = request.into_inner();
    repository::check_model_control(&shared)?;
    let config = control::load_config(&r.model_name, control_params(r.parameters))?;
    repository::load_by_name(shared, r.model_name, config).await?;
    Ok(Response::new(RepositoryModelLoadResponse {}))
}

/// An unload (`unload_dependents`, which `tritonclient.grpc` always sends, is taken: this server
/// has no ensembles).
async fn repository_unload(
    shared: Arc<Shared>,
    request: Request<RepositoryModelRequest>,
) -> Result<Response<RepositoryModelUnloadResponse>, Status> {
    let r = request.into_inner();
    repository::check_model_control(&shared)?;
    control::unload_params(control_params(r.parameters))?;
    repository::unload_by_name(&shared, &r.model_name)?;
    Ok(Response::new(RepositoryModelUnloadResponse {}))
}
