//! Health as the protocol, KServe's SDK and Kubernetes have it: JSON bodies (`{"live": true}`,
//! `{"ready": ...}`), a server that is not ready while a model of its repository failed to load
//! (Triton's strict readiness; `strict_readiness` off relaxes it), model readiness false for
//! that model, and the standard gRPC health service (`grpc.health.v1.Health/Check`).

use std::time::Duration;

use pjrt_serve::grpc::health::{HealthCheckRequest, HealthCheckResponse, ServingStatus};
use pjrt_serve::grpc::messages::{ModelRequest, ReadyResponse, ServerReadyRequest};
use pjrt_serve::{Server, ServerOptions};
use prost::Message as _;
use serde_json::json;

use crate::grpc_client::{self, GrpcAnswer};
use crate::harness::{client, Running};

/// The test repository and a model folder that does not load (`broken`), served with
/// `options`.
fn serve_with_broken(options: ServerOptions) -> Running {
    let repo = crate::repository();
    std::fs::create_dir_all(repo.join("broken")).unwrap();
    std::fs::write(repo.join("broken/model.jaxexport"), b"not a model").unwrap();
    let server = Server::new(client(), options.with_repository(&repo));
    let errors = server.load_repository(&repo).unwrap();
    assert_eq!(errors.len(), 1, "{errors:?}");
    Running::start(server)
}

/// `grpc.health.v1.Health/METHOD` for `service`.
fn health_call(server: &Running, method: &str, service: &str, headers: &[(&str, &str)]) -> GrpcAnswer {
    let request = HealthCheckRequest { service: service.into() }.encode_to_vec();
    let path = format!("/grpc.health.v1.Health/{method}");
    grpc_client::call(server.grpc_address(), &path, &request, headers, Duration::from_secs(60)).unwrap()
}

/// `Check`'s status for `service`.
fn check(server: &Running, service: &str) -> ServingStatus {
    let answer = health_call(server, "Check", service, &[]);
    assert_eq!(answer.code, 0, "{answer:?}");
    HealthCheckResponse::decode(&answer.body[..]).unwrap().status()
}

fn grpc_ready(server: &Running, method: &str, message: &impl prost::Message) -> (u32, bool, String) {
    let answer = server.grpc(method, message, &[]);
    let ready = answer.code == 0 && ReadyResponse::decode(&answer.body[..]).unwrap().ready;
    (answer.code, ready, answer.message)
}

#[test]
fn a_model_that_failed_to_load_makes_the_server_not_ready_in_json_and_grpc() {
    let server = serve_with_broken(ServerOptions::default().with_model_control(true));
    // Live regardless, as KServe's SDK reads it.
    assert_eq!(server.get_json("/v2/health/live"), (200, json!({ "live": true })));
    let (status, ready) = server.get_json("/v2/health/ready");
    assert_eq!((status, &ready["ready"]), (503, &json!(false)), "{ready}");
    assert!(ready["error"].as_str().unwrap().contains("'broken' is UNAVAILABLE"), "{ready}");

    // The models that loaded are ready; the one that failed is not, and says why.
    assert_eq!(server.get_json("/v2/models/mlp/ready"), (200, json!({ "name": "mlp", "ready": true })));
    assert_eq!(server.get_json("/v2/models/mlp/versions/1/ready").0, 200);
    let (status, broken) = server.get_json("/v2/models/broken/ready");
    assert_eq!((status, &broken["ready"]), (503, &json!(false)), "{broken}");
    assert!(broken["error"].as_str().unwrap().starts_with("Model version not ready: 'broken' is UNAVAILABLE"));
    let (status, nope) = server.get_json("/v2/models/nope/ready");
    assert_eq!(status, 404, "{nope}");
    assert!(nope["error"].as_str().unwrap().starts_with("Request for unknown model: 'nope' is not found"), "{nope}");
    // Its requests are answered in Triton's words, with the state.
    let (status, answer) = server.post_json("/v2/models/broken/infer", &json!({ "inputs": [] }));
    assert_eq!(status, 404, "{answer}");
    let message = answer["error"].as_str().unwrap();
    assert!(message.starts_with("Request for unknown model: 'broken' has no available versions (it is UNAVAILABLE: "));

    // The index has it UNAVAILABLE with the reason.
    let (_, index) = server.post_json("/v2/repository/index", &json!({}));
    let broken = index.as_array().unwrap().iter().find(|m| m["name"] == "broken").unwrap();
    assert_eq!(broken["state"], "UNAVAILABLE");
    assert!(broken["reason"].as_str().unwrap().contains("model.jaxexport"), "{broken}");

    // gRPC alike: ServerReady false, ModelReady per model, NOT_FOUND for an unknown one.
    assert_eq!(grpc_ready(&server, "ServerReady", &ServerReadyRequest {}), (0, false, String::new()));
    let model = |name: &str| ModelRequest { name: name.into(), version: String::new() };
    assert_eq!(grpc_ready(&server, "ModelReady", &model("mlp")), (0, true, String::new()));
    assert_eq!(grpc_ready(&server, "ModelReady", &model("broken")), (0, false, String::new()));
    let (code, _, message) = grpc_ready(&server, "ModelReady", &model("nope"));
    assert_eq!(code, 5, "{message}");
    assert!(message.starts_with("Request for unknown model: 'nope' is not found"), "{message}");

    // The health service: NOT_SERVING for the server and its inference service.
    assert_eq!(check(&server, ""), ServingStatus::NotServing);
    assert_eq!(check(&server, "inference.GRPCInferenceService"), ServingStatus::NotServing);

    // A client unloads the broken model: it no longer counts, as in Triton.
    let (status, answer) = server.post_json("/v2/repository/models/broken/unload", &json!({}));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(server.get_json("/v2/health/ready"), (200, json!({ "ready": true })));
    assert_eq!(check(&server, ""), ServingStatus::Serving);
    assert_eq!(grpc_ready(&server, "ServerReady", &ServerReadyRequest {}), (0, true, String::new()));
}

#[test]
fn strict_readiness_off_is_ready_with_a_model_that_failed() {
    let server = serve_with_broken(ServerOptions::default().with_strict_readiness(false));
    assert_eq!(server.get_json("/v2/health/ready"), (200, json!({ "ready": true })));
    assert_eq!(check(&server, ""), ServingStatus::Serving);
    assert_eq!(grpc_ready(&server, "ServerReady", &ServerReadyRequest {}), (0, true, String::new()));
    // The model itself is still not ready.
    assert_eq!(server.get_json("/v2/models/broken/ready").0, 503);
}

#[test]
fn the_grpc_health_service_serves_a_ready_server_and_knows_its_services() {
    let mut options = ServerOptions::default().with_token("s3cret");
    options.open_health_and_metrics = true;
    let server = crate::serve(options);
    // Open without the token, for Kubernetes' gRPC probes.
    assert_eq!(check(&server, ""), ServingStatus::Serving);
    assert_eq!(check(&server, "inference.GRPCInferenceService"), ServingStatus::Serving);
    // An unknown service is NOT_FOUND, as the health protocol says.
    let answer = health_call(&server, "Check", "some.Other", &[]);
    assert_eq!(answer.code, 5, "{answer:?}");
    assert!(answer.message.contains("unknown service \"some.Other\""), "{answer:?}");
    // Watch is not implemented: UNIMPLEMENTED, saying to call Check.
    let answer = health_call(&server, "Watch", "", &[]);
    assert_eq!(answer.code, 12, "{answer:?}");
    assert!(answer.message.contains("call Check"), "{answer:?}");

    // Without the flag, the health service needs the token too.
    let server = crate::serve(ServerOptions::default().with_token("s3cret"));
    assert_eq!(health_call(&server, "Check", "", &[]).code, 16);
    let answer = health_call(&server, "Check", "", &[("authorization", "Bearer s3cret")]);
    assert_eq!(answer.code, 0, "{answer:?}");
    assert_eq!(HealthCheckResponse::decode(&answer.body[..]).unwrap().status(), ServingStatus::Serving);
}
