//! The standard gRPC health service, `grpc.health.v1.Health`, for Kubernetes' gRPC probes and
//! `grpc-health-probe`: `Check` answers `SERVING` while the server is ready (the readiness of
//! `ServerReady` and `GET /v2/health/ready`, [`crate::ServerOptions::strict_readiness`]) and
//! `NOT_SERVING` while it is not, for the service `""` (the server) and
//! `inference.GRPCInferenceService`; any other service is `NOT_FOUND`, as the protocol says.
//!
//! `Watch` answers `UNIMPLEMENTED`: a stream that never ends would hold the server's graceful
//! shutdown open, and the probes call `Check`.
//!
//! The messages are declared here with prost's derive from the protocol's `health.proto`
//! (grpc/grpc-proto), as [`super::messages`] are: no `tonic-health`, whose service would route
//! its calls apart from this server's (its token check, its budget of bytes in flight) and whose
//! status is set from outside, where here it is computed from the models' states at each call.

use std::sync::Arc;

use tonic::{Request, Response, Status};

use crate::repository;
use crate::state::Shared;

/// The service's name, as its calls' paths give it.
pub const SERVICE: &str = "grpc.health.v1.Health";

/// `HealthCheckRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HealthCheckRequest {
    /// The service asked about: `""` for the server as a whole.
    #[prost(string, tag = "1")]
    pub service: String,
}

/// `HealthCheckResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HealthCheckResponse {
    /// A [`ServingStatus`].
    #[prost(enumeration = "ServingStatus", tag = "1")]
    pub status: i32,
}

/// `HealthCheckResponse.ServingStatus`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum ServingStatus {
    /// `UNKNOWN`.
    Unknown = 0,
    /// `SERVING`: the server is ready.
    Serving = 1,
    /// `NOT_SERVING`: it runs, but is not ready (a model loads or failed to load).
    NotServing = 2,
    /// `SERVICE_UNKNOWN` (only `Watch` answers it, which this server does not have).
    ServiceUnknown = 3,
}

/// `Check`: the server's readiness, for the server or its inference service.
pub(crate) async fn check(
    shared: Arc<Shared>,
    request: Request<HealthCheckRequest>,
) -> Result<Response<HealthCheckResponse>, Status> {
    let service = request.into_inner().service;
    if !service.is_empty() && service != <super::GrpcService as tonic::server::NamedService>::NAME {
        return Err(Status::not_found(format!(
            "unknown service {service:?}: this server answers for \"\" (the server) and \
             \"inference.GRPCInferenceService\""
        )));
    }
    let status = match repository::server_ready(&shared) {
        Ok(()) => ServingStatus::Serving,
        Err(_) => ServingStatus::NotServing,
    };
    Ok(Response::new(HealthCheckResponse { status: status as i32 }))
}
