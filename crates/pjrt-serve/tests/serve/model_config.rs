//! Triton's model configuration extension, over HTTP and gRPC: static models (`max_batch_size`
//! 0, whole shapes), a symbolic one (`-1`), a batched one (`max_batch_size`, `dims` without the
//! batch dimension, `dynamic_batching` from `config.json`'s knobs by Triton's names), a
//! batched one with an input that is not batched (0, whole shapes, dynamic batching kept), the
//! versions path and unknown models; and what `perf_analyzer` checks: every configured input
//! has metadata, whose shape without its first dimension (when `max_batch_size` is over 0) is
//! the configuration's `dims`.

use pjrt_serve::grpc::messages::{DataType, InstanceKind, ModelConfigRequest, ModelConfigResponse, ModelRequest};
use pjrt_serve::grpc::messages::{ModelMetadataResponse, ServerMetadataRequest, ServerMetadataResponse};
use pjrt_serve::{ModelConfig, Server, ServerOptions};
use prost::Message as _;
use serde_json::{json, Value};

use crate::harness::{client, data, temp_dir, Running};

/// A model folder of `repo` named `name` with the program of test data `program` and
/// `config` as its `config.json`.
fn model_folder(repo: &std::path::Path, name: &str, program: &str, config: Value) {
    let folder = repo.join(name);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::copy(data(&format!("jax_export/{program}/model.jaxexport")), folder.join("model.jaxexport")).unwrap();
    std::fs::write(folder.join("config.json"), config.to_string()).unwrap();
}

fn serve() -> Running {
    let repo = temp_dir("config-repo");
    // Both inputs and both outputs lead with the batch dimension `b`; Triton's names for the
    // batching knobs.
    model_folder(
        &repo,
        "shared_dim",
        "symbolic/jax-0.10.2/shared_dim",
        json!({ "inputs": ["a", "b"], "batching": { "batch_independent": true, "max_batch_size": 8,
                "max_queue_delay_microseconds": 500, "preferred_batch_size": [2] } }),
    );
    // x leads with the batch dimension, the weights a request gives do not.
    model_folder(
        &repo,
        "mlp_batch",
        "symbolic/jax-0.10.2/mlp_batch",
        json!({ "batching": { "batch_independent": true, "max_batch_size": 2, "max_queue_delay_ms": 3 } }),
    );
    let mut options = ServerOptions::default();
    options.concurrent_executions = 3;
    let server = Server::new(client(), options);
    assert!(server.load_repository(&repo).unwrap().is_empty());
    server.load(ModelConfig::new("int_bool", data("jax_export/jax-0.10.2/int_bool/model.jaxexport"))).unwrap();
    server.load(ModelConfig::new("bf16", data("jax_export/jax-0.10.2/bf16/model.jaxexport"))).unwrap();
    server
        .load(ModelConfig::new("symbolic", data("jax_export/symbolic/jax-0.10.2/mlp_batch/model.jaxexport")))
        .unwrap();
    Running::start(server)
}

fn http_config(server: &Running, name: &str) -> Value {
    let (status, config) = server.get_json(&format!("/v2/models/{name}/config"));
    assert_eq!(status, 200, "{config}");
    config
}

/// What `perf_analyzer`'s model parser requires of a configuration and the model's metadata.
fn check_as_perf_analyzer_does(config: &Value, metadata: &Value) {
    let max_batch_size = config["max_batch_size"].as_i64().expect("max_batch_size is a number");
    assert!(config["platform"].is_string() && config["platform"] != "ensemble", "{config}");
    assert_eq!(config["model_transaction_policy"]["decoupled"], false, "{config}");
    assert!(config.get("sequence_batching").is_none() && config.get("ensemble_scheduling").is_none());
    for (which, meta) in [("input", "inputs"), ("output", "outputs")] {
        let tensors = config[which].as_array().unwrap();
        assert_eq!(tensors.len(), metadata[meta].as_array().unwrap().len(), "{config} {metadata}");
        for tensor in tensors {
            let spec = metadata[meta].as_array().unwrap().iter().find(|m| m["name"] == tensor["name"]);
            let spec = spec.unwrap_or_else(|| panic!("no metadata found for {which} tensor {}", tensor["name"]));
            let shape = spec["shape"].as_array().unwrap();
            let shape = if max_batch_size > 0 { &shape[1..] } else { &shape[..] };
            assert_eq!(tensor["dims"].as_array().unwrap(), shape, "{which} {}", tensor["name"]);
            assert_eq!(tensor["data_type"], format!("TYPE_{}", spec["datatype"].as_str().unwrap()));
            assert_eq!(tensor["is_shape_tensor"], false);
            if which == "input" {
                assert_eq!(tensor["optional"], false);
            }
        }
    }
}

#[test]
fn http_configs_have_tritons_shape_and_agree_with_the_metadata() {
    let server = serve();
    for name in ["int_bool", "bf16", "symbolic", "shared_dim", "mlp_batch"] {
        let config = http_config(&server, name);
        let (status, metadata) = server.get_json(&format!("/v2/models/{name}"));
        assert_eq!(status, 200);
        check_as_perf_analyzer_does(&config, &metadata);
        assert_eq!(config["name"], name);
        assert_eq!(config["platform"], metadata["platform"]);
        assert_eq!(config["backend"], "pjrt");
        assert_eq!(config["default_model_filename"], "model.jaxexport");
        assert_eq!(config["version_policy"], json!({ "latest": { "num_versions": 1 } }));
        // The server's three execution slots, on the host.
        assert_eq!(
            config["instance_group"],
            json!([{ "name": name, "kind": "KIND_CPU", "count": 3, "gpus": [],
            "secondary_devices": [], "profile": [], "passive": false, "host_policy": "" }])
        );
    }

    // Static, unbatched: whole shapes.
    let config = http_config(&server, "int_bool");
    assert_eq!(config["max_batch_size"], 0);
    assert!(config.get("dynamic_batching").is_none(), "{config}");
    assert_eq!(
        config["input"][2],
        json!({ "name": "input2", "data_type": "TYPE_BOOL", "format": "FORMAT_NONE", "dims": [6],
                "is_shape_tensor": false, "allow_ragged_batch": false, "optional": false, "is_non_linear_format_io": false })
    );
    assert_eq!(
        config["output"][0],
        json!({ "name": "output0", "data_type": "TYPE_INT32", "dims": [6], "label_filename": "",
                "is_shape_tensor": false, "is_non_linear_format_io": false })
    );
    assert_eq!(http_config(&server, "bf16")["output"][0]["data_type"], "TYPE_BF16");

    // Symbolic, unbatched: -1 where the metadata has it.
    let config = http_config(&server, "symbolic");
    assert_eq!(config["max_batch_size"], 0);
    assert_eq!(config["input"][0]["dims"], json!([-1, 8]));
    assert_eq!(config["input"][1]["dims"], json!([8, 16]));
    assert_eq!(config["output"][0]["dims"], json!([-1, 3]));

    // Batched: max_batch_size, dims without the batch dimension, the knobs by Triton's names.
    let config = http_config(&server, "shared_dim");
    assert_eq!(config["max_batch_size"], 8);
    assert_eq!(config["input"][0]["name"], "a");
    assert_eq!(config["input"][0]["dims"], json!([4]));
    assert_eq!(config["input"][1]["dims"], json!([3]));
    assert_eq!(config["output"][0]["dims"], json!([7]));
    assert_eq!(config["output"][1]["dims"], json!([]));
    assert_eq!(config["dynamic_batching"]["preferred_batch_size"], json!([2, 8]));
    assert_eq!(config["dynamic_batching"]["max_queue_delay_microseconds"], 500);

    // Batched, but its weights are not: no batch dimension to leave out.
    let config = http_config(&server, "mlp_batch");
    assert_eq!(config["max_batch_size"], 0);
    assert_eq!(config["input"][0]["dims"], json!([-1, 8]));
    assert_eq!(config["dynamic_batching"]["preferred_batch_size"], json!([]));
    assert_eq!(config["dynamic_batching"]["max_queue_delay_microseconds"], 3000);

    // The versions path, unknown versions and models.
    let (status, versioned) = server.get_json("/v2/models/shared_dim/versions/1/config");
    assert_eq!((status, &versioned), (200, &http_config(&server, "shared_dim")));
    let (status, answer) = server.get_json("/v2/models/shared_dim/versions/2/config");
    assert_eq!(status, 404, "{answer}");
    assert!(answer["error"].as_str().unwrap().contains("'shared_dim' version 2 is not found"), "{answer}");
    let (status, answer) = server.get_json("/v2/models/nope/config");
    assert_eq!(status, 404, "{answer}");
    assert!(answer["error"].as_str().unwrap().contains("Request for unknown model: 'nope' is not found"), "{answer}");

    let (_, metadata) = server.get_json("/v2");
    assert!(metadata["extensions"].as_array().unwrap().contains(&json!("model_configuration")), "{metadata}");
}

#[test]
fn grpc_configs_are_the_http_ones() {
    let server = serve();
    for name in ["int_bool", "symbolic", "shared_dim", "mlp_batch"] {
        let request = ModelConfigRequest { name: name.into(), version: String::new() };
        let answer = server.grpc("ModelConfig", &request, &[]);
        assert_eq!(answer.code, 0, "{answer:?}");
        let config = ModelConfigResponse::decode(&answer.body[..]).unwrap().config.expect("a config");
        let http = http_config(&server, name);
        assert_eq!(config.name, name);
        assert_eq!(config.platform, http["platform"].as_str().unwrap());
        assert_eq!(config.backend, "pjrt");
        assert_eq!(i64::from(config.max_batch_size), http["max_batch_size"].as_i64().unwrap());
        for (i, input) in config.input.iter().enumerate() {
            assert_eq!(input.name, http["input"][i]["name"].as_str().unwrap());
            assert_eq!(json!(input.dims), http["input"][i]["dims"]);
            let data_type = DataType::try_from(input.data_type).unwrap().as_str_name();
            assert_eq!(data_type, http["input"][i]["data_type"].as_str().unwrap());
        }
        for (i, output) in config.output.iter().enumerate() {
            assert_eq!(json!(output.dims), http["output"][i]["dims"]);
        }
        assert_eq!(config.instance_group.len(), 1);
        assert_eq!(config.instance_group[0].kind, InstanceKind::KindCpu as i32);
        assert_eq!(config.instance_group[0].count, 3);
        assert_eq!(config.version_policy.unwrap().latest.unwrap().num_versions, 1);
        assert!(!config.model_transaction_policy.unwrap().decoupled);
        match &config.dynamic_batching {
            None => assert!(http.get("dynamic_batching").is_none()),
            Some(b) => {
                assert_eq!(json!(b.preferred_batch_size), http["dynamic_batching"]["preferred_batch_size"]);
                assert_eq!(
                    json!(b.max_queue_delay_microseconds),
                    http["dynamic_batching"]["max_queue_delay_microseconds"]
                );
            }
        }
        // What perf_analyzer reads: every input is in the metadata, with the config's dims after
        // the batch dimension.
        let metadata = server.grpc("ModelMetadata", &ModelRequest { name: name.into(), version: String::new() }, &[]);
        let metadata = ModelMetadataResponse::decode(&metadata.body[..]).unwrap();
        for input in &config.input {
            let spec = metadata.inputs.iter().find(|m| m.name == input.name).expect("metadata for the input");
            let skip = usize::from(config.max_batch_size > 0);
            assert_eq!(spec.shape[skip..], input.dims[..]);
        }
    }

    let versioned =
        server.grpc("ModelConfig", &ModelConfigRequest { name: "shared_dim".into(), version: "1".into() }, &[]);
    assert_eq!(versioned.code, 0, "{versioned:?}");
    let unknown =
        server.grpc("ModelConfig", &ModelConfigRequest { name: "shared_dim".into(), version: "2".into() }, &[]);
    assert_eq!(unknown.code, 5, "NOT_FOUND: {unknown:?}");
    let unknown = server.grpc("ModelConfig", &ModelConfigRequest { name: "nope".into(), version: String::new() }, &[]);
    assert_eq!(unknown.code, 5, "NOT_FOUND: {unknown:?}");
    assert!(unknown.message.contains("Request for unknown model: 'nope' is not found"), "{unknown:?}");

    let answer = server.grpc("ServerMetadata", &ServerMetadataRequest {}, &[]);
    let metadata = ServerMetadataResponse::decode(&answer.body[..]).unwrap();
    assert!(metadata.extensions.iter().any(|e| e == "model_configuration"), "{metadata:?}");
}

#[test]
fn config_json_takes_tritons_names_for_the_batching_knobs_but_not_both_names() {
    let repo = temp_dir("config-knobs");
    let batching = |extra: Value| {
        let mut b = json!({ "batch_independent": true, "max_batch_size": 8 });
        b.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        json!({ "batching": b })
    };
    model_folder(
        &repo,
        "triton",
        "symbolic/jax-0.10.2/shared_dim",
        batching(json!({
        "max_queue_delay_microseconds": 1500, "preferred_batch_size": [4] })),
    );
    let config = ModelConfig::from_folder(&repo.join("triton")).unwrap();
    let b = config.batching.unwrap();
    assert_eq!(b.max_queue_delay, std::time::Duration::from_micros(1500));
    assert_eq!(b.preferred_batch_sizes, [4]);
    assert_eq!(b.buckets(), [4, 8]);

    model_folder(
        &repo,
        "ours",
        "symbolic/jax-0.10.2/shared_dim",
        batching(json!({
        "max_queue_delay_ms": 2, "preferred_batch_sizes": [2] })),
    );
    let b = ModelConfig::from_folder(&repo.join("ours")).unwrap().batching.unwrap();
    assert_eq!((b.max_queue_delay, b.preferred_batch_sizes), (std::time::Duration::from_millis(2), vec![2]));

    for (both, names) in [
        (
            json!({ "max_queue_delay_ms": 2, "max_queue_delay_microseconds": 2000 }),
            ["max_queue_delay_ms", "max_queue_delay_microseconds"],
        ),
        (
            json!({ "preferred_batch_sizes": [2], "preferred_batch_size": [2] }),
            ["preferred_batch_sizes", "preferred_batch_size"],
        ),
    ] {
        model_folder(&repo, "both", "symbolic/jax-0.10.2/shared_dim", batching(both));
        let err = ModelConfig::from_folder(&repo.join("both")).unwrap_err().to_string();
        assert!(names.iter().all(|n| err.contains(&format!("{n:?}"))), "{err}");
    }
    model_folder(
        &repo,
        "bad",
        "symbolic/jax-0.10.2/shared_dim",
        batching(json!({ "max_queue_delay_microseconds": 1.5 })),
    );
    let err = ModelConfig::from_folder(&repo.join("bad")).unwrap_err().to_string();
    assert!(err.contains("\"max_queue_delay_microseconds\""), "{err}");
}
