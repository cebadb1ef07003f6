//! Model control as Triton's (`--model-control explicit`, `with_model_control(true)` in every
//! test here): a load with a `config` override (Triton's parameter, over HTTP and gRPC) used in
//! place of the folder's config.json, a bad override failing the load with `failed to load`
//! and changing nothing, `file:` overrides and unknown parameters refused by name, an unload
//! that keeps the model in the index as `UNAVAILABLE` (`unloaded`), unknown models answered in
//! Triton's words.

use std::collections::HashMap;

use pjrt_serve::grpc::messages::{
    ModelMetadataResponse, ModelRepositoryParameter, ModelRequest, ReadyResponse, RepositoryIndexRequest,
    RepositoryIndexResponse, RepositoryModelRequest, RepositoryParameterChoice,
};
use pjrt_serve::ServerOptions;
use prost::Message as _;
use serde_json::{json, Value};

use crate::harness::{npy, Running};

fn serve() -> Running {
    crate::serve(ServerOptions::default().with_model_control(true))
}

/// An HTTP load of `name` with `config` as Triton's clients send it.
fn load_with(server: &Running, name: &str, config: &str) -> (u16, Value) {
    server.post_json(&format!("/v2/repository/models/{name}/load"), &json!({ "parameters": { "config": config } }))
}

/// A gRPC load or unload request of `name` with `parameters`.
fn grpc_request(name: &str, parameters: Vec<(&str, RepositoryParameterChoice)>) -> RepositoryModelRequest {
    let parameters: HashMap<String, ModelRepositoryParameter> = parameters
        .into_iter()
        .map(|(k, v)| (k.to_string(), ModelRepositoryParameter { parameter_choice: Some(v) }))
        .collect();
    RepositoryModelRequest { model_name: name.into(), parameters, ..Default::default() }
}

fn config_param(config: &str) -> Vec<(&'static str, RepositoryParameterChoice)> {
    vec![("config", RepositoryParameterChoice::StringParam(config.into()))]
}

fn tensor_names(meta: &Value, which: &str) -> Vec<String> {
    meta[which].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
}

/// The index as `(name, state, reason)`.
fn index(server: &Running) -> Vec<(String, String, String)> {
    let (status, index) = server.post_json("/v2/repository/index", &json!({}));
    assert_eq!(status, 200, "{index}");
    let field = |m: &Value, k: &str| m[k].as_str().unwrap_or_default().to_string();
    index.as_array().unwrap().iter().map(|m| (field(m, "name"), field(m, "state"), field(m, "reason"))).collect()
}

#[test]
fn a_config_override_is_used_in_place_of_the_folders_config_over_http_and_grpc() {
    let server = serve();
    // The folder's config.json names the MLP's input x and output y; the override renames them.
    let (status, answer) = load_with(&server, "mlp", r#"{"inputs": ["features"], "outputs": ["logits"]}"#);
    assert_eq!(status, 200, "{answer}");
    let (_, meta) = server.get_json("/v2/models/mlp");
    assert_eq!(
        (tensor_names(&meta, "inputs"), tensor_names(&meta, "outputs")),
        (vec!["features".into()], vec!["logits".into()])
    );
    let x = npy("jax_export/jax-0.10.2/mlp_f32/in4.npy");
    let request = json!({ "inputs": [{ "name": "features", "datatype": "FP32", "shape": x.dims, "data": x.to_vec::<f32>().unwrap() }] });
    let (status, answer) = server.post_json("/v2/models/mlp/infer", &request);
    assert_eq!((status, &answer["outputs"][0]["name"]), (200, &json!("logits")), "{answer}");

    // Over gRPC: what the override leaves out takes its default, not config.json's value.
    let load = grpc_request("mlp", config_param(r#"{"version": "2"}"#));
    let answer = server.grpc("RepositoryModelLoad", &load, &[]);
    assert_eq!(answer.code, 0, "{answer:?}");
    let answer = server.grpc("ModelMetadata", &ModelRequest { name: "mlp".into(), version: String::new() }, &[]);
    let meta = ModelMetadataResponse::decode(&answer.body[..]).unwrap();
    assert_eq!((meta.versions, meta.inputs[0].name.as_str()), (vec!["2".to_string()], "input0"));

    // A load without one reads config.json again.
    let (status, _) = server.post_json("/v2/repository/models/mlp/load", &json!({}));
    assert_eq!(status, 200);
    let (_, meta) = server.get_json("/v2/models/mlp");
    assert_eq!((tensor_names(&meta, "inputs"), &meta["versions"]), (vec!["x".into()], &json!(["1"])));
}

#[test]
fn a_bad_override_fails_the_load_and_changes_nothing() {
    let server = serve();
    let cases = [
        // Triton's example client's "wrong format".
        (r#""parameters": {"config": {{"max_batch_size": "16"}}}"#, "the config override is not JSON"),
        (r#"{"bogus": 1}"#, "unknown field \"bogus\""),
        (r#"{"inputs": "x"}"#, "\"inputs\" must be a list of names"),
        (r#"{"batching": {"max_batch_size": 4}}"#, "batch_independent"),
        (r#"{"program": "../mlp_batch/model.jaxexport"}"#, "\"program\" must name a file of the model's folder"),
        (r#"{"params": "/etc/passwd"}"#, "\"params\" must name a file of the model's folder"),
        (r#"{"name": "other"}"#, "the config override names model 'other'"),
    ];
    for (config, says) in cases {
        let (status, answer) = load_with(&server, "mlp", config);
        let message = answer["error"].as_str().unwrap_or_default();
        assert_eq!(status, 400, "{config}: {answer}");
        assert!(message.starts_with("failed to load 'mlp': ") && message.contains(says), "{config}: {message}");
        // Over gRPC alike: INVALID_ARGUMENT.
        let answer = server.grpc("RepositoryModelLoad", &grpc_request("mlp", config_param(config)), &[]);
        assert_eq!(answer.code, 3, "{config}: {answer:?}");
        assert!(answer.message.starts_with("failed to load 'mlp': ") && answer.message.contains(says), "{answer:?}");
    }
    // The model is served as before, and the server ready.
    let (_, meta) = server.get_json("/v2/models/mlp");
    assert_eq!(tensor_names(&meta, "inputs"), ["x"]);
    assert_eq!(server.get_json("/v2/health/ready").0, 200);
    assert!(index(&server).iter().all(|(_, state, _)| state == "READY"));

    // A config that is not a string (gRPC), file: overrides and other parameters: refused by name.
    let int = grpc_request("mlp", vec![("config", RepositoryParameterChoice::Int64Param(16))]);
    let answer = server.grpc("RepositoryModelLoad", &int, &[]);
    assert!(answer.code == 3 && answer.message.contains("must have string type"), "{answer:?}");
    let file = grpc_request("mlp", vec![("file:1/model.jaxexport", RepositoryParameterChoice::BytesParam(vec![0; 8]))]);
    let answer = server.grpc("RepositoryModelLoad", &file, &[]);
    // (A failed load in Triton's status and words, which Triton's example client checks: INTERNAL,
    // "failed to poll from model repository".)
    assert_eq!(answer.code, 13, "INTERNAL: {answer:?}");
    assert!(answer.message.contains("failed to poll from model repository: file: overrides are not supported"));
    let body = json!({ "parameters": { "config": "{}", "file:1/model.jaxexport": "AAAA" } });
    let (status, answer) = server.post_json("/v2/repository/models/mlp/load", &body);
    assert_eq!(status, 500, "{answer}");
    assert!(answer["error"].as_str().unwrap().contains("parameter 'file:1/model.jaxexport'"), "{answer}");
    let body = json!({ "parameters": { "priority": 1 } });
    let (status, answer) = server.post_json("/v2/repository/models/mlp/load", &body);
    assert_eq!(status, 400, "{answer}");
    assert!(answer["error"].as_str().unwrap().starts_with("Unrecognized load parameter 'priority'"), "{answer}");
    let (status, answer) = server.post_raw("/v2/repository/models/mlp/load", &[], b"{not json");
    assert!(status == 400 && answer.contains("not JSON"), "{answer}");
}

#[test]
fn an_unloaded_model_stays_in_the_index_as_unavailable() {
    let server = serve();
    // As tritonclient.http sends it.
    let body = json!({ "parameters": { "unload_dependents": false } });
    let (status, answer) = server.post_json("/v2/repository/models/mlp/unload", &body);
    assert_eq!(status, 200, "{answer}");
    assert!(index(&server).contains(&("mlp".into(), "UNAVAILABLE".into(), "unloaded".into())), "{:?}", index(&server));
    // Not ready, its requests answered in Triton's words; the server stays ready (as Triton's).
    let (status, ready) = server.get_json("/v2/models/mlp/ready");
    assert_eq!((status, &ready["ready"]), (503, &json!(false)));
    let (status, answer) = server.post_json("/v2/models/mlp/infer", &json!({ "inputs": [] }));
    assert_eq!(status, 404);
    assert!(answer["error"]
        .as_str()
        .unwrap()
        .starts_with("Request for unknown model: 'mlp' has no available versions"));
    assert_eq!(server.get_json("/v2/health/ready").0, 200);
    // The index of ready models leaves it out.
    let (_, ready_only) = server.post_json("/v2/repository/index", &json!({ "ready": true }));
    assert_eq!(ready_only, json!([{ "name": "mlp_batch", "version": "1", "state": "READY" }]));

    // Over gRPC, as tritonclient.grpc sends it (unload_dependents always set).
    let unload = grpc_request("mlp_batch", vec![("unload_dependents", RepositoryParameterChoice::BoolParam(false))]);
    let answer = server.grpc("RepositoryModelUnload", &unload, &[]);
    assert_eq!(answer.code, 0, "{answer:?}");
    let answer = server.grpc("RepositoryIndex", &RepositoryIndexRequest::default(), &[]);
    let models = RepositoryIndexResponse::decode(&answer.body[..]).unwrap().models;
    assert!(models.iter().all(|m| m.state == "UNAVAILABLE" && m.reason == "unloaded"), "{models:?}");
    let ready = server.grpc("ModelReady", &ModelRequest { name: "mlp_batch".into(), version: String::new() }, &[]);
    assert_eq!((ready.code, ReadyResponse::decode(&ready.body[..]).unwrap().ready), (0, false));

    // Unloading what the server never had, or with another parameter: refused.
    let (status, answer) = server.post_json("/v2/repository/models/nope/unload", &json!({}));
    assert_eq!(status, 404, "{answer}");
    assert!(answer["error"].as_str().unwrap().starts_with("Request for unknown model: 'nope' is not found"));
    let body = json!({ "parameters": { "force": true } });
    let (status, answer) = server.post_json("/v2/repository/models/mlp/unload", &body);
    assert_eq!(status, 400, "{answer}");
    assert!(answer["error"].as_str().unwrap().starts_with("Unrecognized unload parameter 'force'"), "{answer}");

    // Loaded again: READY.
    let (status, _) = server.post_json("/v2/repository/models/mlp/load", &json!({}));
    assert_eq!(status, 200);
    assert_eq!(server.get_json("/v2/models/mlp/ready").0, 200);
    assert!(index(&server).contains(&("mlp".into(), "READY".into(), String::new())));
}

#[test]
fn unknown_models_are_answered_in_tritons_words() {
    let server = serve();
    // A load of a model the repository does not have (Triton's example client's wrong_model_name).
    let (status, answer) = server.post_json("/v2/repository/models/wrong_model_name/load", &json!({}));
    assert_eq!(status, 404, "{answer}");
    assert!(answer["error"].as_str().unwrap().starts_with("failed to load 'wrong_model_name'"), "{answer}");
    let answer = server.grpc("RepositoryModelLoad", &grpc_request("wrong_model_name", Vec::new()), &[]);
    assert!(answer.code == 5 && answer.message.starts_with("failed to load 'wrong_model_name'"), "{answer:?}");
    // Metadata and inference of a model that is not served.
    let (status, answer) = server.get_json("/v2/models/nope");
    assert_eq!(status, 404);
    assert_eq!(answer["error"], "Request for unknown model: 'nope' is not found (served models: mlp, mlp_batch)");
    let answer = server.grpc("ModelMetadata", &ModelRequest { name: "nope".into(), version: String::new() }, &[]);
    assert!(answer.code == 5 && answer.message.starts_with("Request for unknown model: 'nope' is not found"));
}

/// Triton's batching fields at a config's top level, as Triton's example clients override a
/// config (`{"max_batch_size":"16"}`: a string, as protobuf's JSON writes integers):
/// `max_batch_size` alone batches without a window, `dynamic_batching` sets its knobs, and
/// what Triton's fields cannot mean here is refused by name.
#[test]
fn tritons_batching_fields_configure_batching() {
    let dir = crate::harness::temp_dir("triton-batching");
    let simple = dir.join("simple");
    std::fs::create_dir_all(&simple).unwrap();
    let model = crate::harness::data("jax_export/symbolic/jax-0.10.2/add_sub/model.jaxexport");
    std::fs::copy(model, simple.join("model.jaxexport")).unwrap();
    let names = r#""inputs": ["INPUT0", "INPUT1"], "outputs": ["OUTPUT0", "OUTPUT1"]"#;
    std::fs::write(simple.join("config.json"), format!(r#"{{{names}, "max_batch_size": 8}}"#)).unwrap();
    let options = ServerOptions::default().with_model_control(true).with_repository(&dir);
    let server = pjrt_serve::Server::new(crate::harness::client(), options);
    assert!(server.load_repository(&dir).unwrap().is_empty());
    let server = Running::start(server);
    let config = |server: &Running| server.get_json("/v2/models/simple/config").1;
    let first = config(&server);
    assert_eq!(first["max_batch_size"], 8, "{first}");
    assert_eq!(first["dynamic_batching"]["max_queue_delay_microseconds"], 0, "{first}");
    assert_eq!(first["input"][0]["dims"], json!([16]), "{first}");

    let (status, answer) = load_with(&server, "simple", &format!(r#"{{{names}, "max_batch_size": "16"}}"#));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(config(&server)["max_batch_size"], 16);
    let dynamic = r#""dynamic_batching": {"preferred_batch_size": [2, "4"], "max_queue_delay_microseconds": "500"}"#;
    let (status, answer) = load_with(&server, "simple", &format!(r#"{{{names}, "max_batch_size": 8, {dynamic}}}"#));
    assert_eq!(status, 200, "{answer}");
    let batched = config(&server);
    assert_eq!(batched["dynamic_batching"]["preferred_batch_size"], json!([2, 4, 8]), "{batched}");
    assert_eq!(batched["dynamic_batching"]["max_queue_delay_microseconds"], 500, "{batched}");
    // Requests run batched, with the export's answers.
    let rows: Vec<i32> = (0..48).collect();
    let input = |name: &str| json!({ "name": name, "datatype": "INT32", "shape": [3, 16], "data": rows });
    let request = json!({ "inputs": [input("INPUT0"), input("INPUT1")] });
    let (status, answer) = server.post_json("/v2/models/simple/infer", &request);
    assert_eq!(status, 200, "{answer}");
    let doubled: Vec<i64> = rows.iter().map(|&v| 2 * i64::from(v)).collect();
    assert_eq!(answer["outputs"][0]["data"], json!(doubled), "{answer}");
    assert_eq!(answer["outputs"][1]["data"], json!(vec![0; 48]), "{answer}");

    // max_batch_size 0: not batched.
    let (status, answer) = load_with(&server, "simple", &format!(r#"{{{names}, "max_batch_size": 0}}"#));
    assert_eq!(status, 200, "{answer}");
    let unbatched = config(&server);
    assert!(unbatched["max_batch_size"] == 0 && unbatched.get("dynamic_batching").is_none(), "{unbatched}");

    for (override_, says) in [
        (r#"{"dynamic_batching": {}}"#, r#""dynamic_batching" needs "max_batch_size" over 0"#),
        (r#"{"max_batch_size": 8, "batching": {"batch_independent": true, "max_batch_size": 8}}"#, "not both"),
        (
            r#"{"max_batch_size": 8, "dynamic_batching": {"priority_levels": 2}}"#,
            r#""priority_levels" is not supported"#,
        ),
        (
            r#"{"max_batch_size": 4, "dynamic_batching": {"preferred_batch_size": [8]}}"#,
            "not between 1 and max_batch_size",
        ),
        (r#"{"max_batch_size": "many"}"#, "must be a whole number"),
    ] {
        let (status, answer) = load_with(&server, "simple", override_);
        let message = answer["error"].as_str().unwrap_or_default();
        assert!(status == 400 && message.contains("failed to load 'simple'") && message.contains(says), "{answer}");
    }
}
