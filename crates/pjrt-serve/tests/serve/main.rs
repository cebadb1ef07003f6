//! `pjrt-serve` over HTTP on the default CPU plugin: the exported MLP (weights from a
//! safetensors file), a shape-polymorphic MLP at several batch sizes, bad and hostile requests,
//! the queue bound, the token, the repository extension and the metrics.

mod arguments;
mod batching;
mod floors;
mod grpc_client;
mod grpc_infer;
mod harness;
mod health;
mod hostile;
mod model_config;
mod model_control;
mod programs;
mod replicas;
mod shared_memory;
mod shapes;
mod statistics;
mod streamed;
mod warmup;
mod weights;
#[cfg(feature = "tls")]
mod tls;

use harness::{client, data, npy, Running};
use pjrt_formats::jax_export::JaxExport;
use pjrt_formats::npy::NpyArray;
use pjrt_serve::{ModelConfig, Server, ServerOptions};
use serde_json::{json, Value};

/// A repository with the MLP (`mlp_f32`: weights b1, b2, w1, w2 in `params.safetensors`, the
/// request gives x) and the shape-polymorphic MLP (`mlp_batch`: every input from the request).
fn repository() -> std::path::PathBuf {
    let dir = harness::temp_dir("repo");
    let mlp = dir.join("mlp");
    std::fs::create_dir_all(&mlp).unwrap();
    std::fs::copy(data("jax_export/jax-0.10.2/mlp_f32/model.jaxexport"), mlp.join("model.jaxexport")).unwrap();
    let weights: Vec<NpyArray> = (0..4).map(|i| npy(&format!("jax_export/jax-0.10.2/mlp_f32/in{i}.npy"))).collect();
    let names = ["b1", "b2", "w1", "w2"];
    let views: Vec<(&str, pjrt_formats::safetensors::TensorView<'_>)> = names
        .iter()
        .zip(&weights)
        .map(|(n, a)| (*n, pjrt_formats::safetensors::TensorView::from_npy(a).unwrap()))
        .collect();
    std::fs::write(mlp.join("params.safetensors"), pjrt_formats::safetensors::to_bytes(&views, &[]).unwrap()).unwrap();
    std::fs::write(mlp.join("config.json"), br#"{"inputs": ["x"], "outputs": ["y"]}"#).unwrap();
    let batch = dir.join("mlp_batch");
    std::fs::create_dir_all(&batch).unwrap();
    std::fs::copy(data("jax_export/symbolic/jax-0.10.2/mlp_batch/model.jaxexport"), batch.join("model.jaxexport"))
        .unwrap();
    dir
}

fn serve(options: ServerOptions) -> Running {
    let repo = repository();
    let server = Server::new(client(), options.with_repository(&repo));
    let errors = server.load_repository(&repo).unwrap();
    assert!(errors.is_empty(), "{errors:?}");
    Running::start(server)
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

fn json_data(v: &Value) -> Vec<f32> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect()
}

fn tensor_json(name: &str, a: &NpyArray) -> Value {
    json!({ "name": name, "datatype": "FP32", "shape": a.dims, "data": a.to_vec::<f32>().unwrap() })
}

#[test]
fn the_mlp_answers_in_json_and_binary_with_pjrt_runs_outputs() {
    let server = serve(ServerOptions::default());
    let (status, meta) = server.get_json("/v2/models/mlp");
    assert_eq!(status, 200, "{meta}");
    assert_eq!(meta["inputs"], json!([{ "name": "x", "datatype": "FP32", "shape": [4, 8] }]));
    assert_eq!(meta["outputs"], json!([{ "name": "y", "datatype": "FP32", "shape": [4, 3] }]));
    assert_eq!(meta["versions"], json!(["1"]));

    let dir = "jax_export/jax-0.10.2/mlp_f32";
    let inputs: Vec<NpyArray> = (0..5).map(|i| npy(&format!("{dir}/in{i}.npy"))).collect();
    // What `pjrt run` computes (JaxExport::run on the same plugin), and what JAX did.
    let model = JaxExport::read(data(&format!("{dir}/model.jaxexport"))).unwrap();
    let expected = model.run(&client(), &inputs).unwrap()[0].to_vec::<f32>().unwrap();
    let jax = npy(&format!("{dir}/out0.npy")).to_vec::<f32>().unwrap();
    for (a, b) in expected.iter().zip(&jax) {
        assert!((a - b).abs() <= 1e-5 + 1e-5 * b.abs(), "{expected:?} vs JAX's {jax:?}");
    }

    let request = json!({ "id": "r1", "inputs": [tensor_json("x", &inputs[4])] });
    let (status, answer) = server.post_json("/v2/models/mlp/infer", &request);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["id"], "r1");
    assert_eq!(answer["model_name"], "mlp");
    assert_eq!(answer["outputs"][0]["name"], "y");
    assert_eq!(answer["outputs"][0]["shape"], json!([4, 3]));
    assert_eq!(json_data(&answer["outputs"][0]["data"]), expected);

    // Triton's binary tensor data: x as bytes after the JSON, y asked for as bytes.
    let header = json!({
        "inputs": [{ "name": "x", "datatype": "FP32", "shape": [4, 8], "parameters": { "binary_data_size": 128 } }],
        "outputs": [{ "name": "y", "parameters": { "binary_data": true } }],
    });
    let (status, json_part, binary) = server.post_binary("/v2/models/mlp/versions/1/infer", &header, &inputs[4].data);
    assert_eq!(status, 200, "{json_part}");
    assert_eq!(json_part["outputs"][0]["parameters"]["binary_data_size"], 48);
    assert_eq!(f32s(&binary), expected);
}

#[test]
fn a_symbolic_model_answers_at_every_batch_size_and_refuses_shapes_that_do_not_fit() {
    let server = serve(ServerOptions::default());
    let (_, meta) = server.get_json("/v2/models/mlp_batch");
    assert_eq!(meta["inputs"][0], json!({ "name": "input0", "datatype": "FP32", "shape": [-1, 8] }));
    assert_eq!(meta["outputs"][0]["shape"], json!([-1, 3]));
    let dir = "jax_export/symbolic/jax-0.10.2/mlp_batch";
    for ok in ["ok0", "ok1", "ok2", "ok1"] {
        let inputs: Vec<Value> =
            (0..5).map(|i| tensor_json(&format!("input{i}"), &npy(&format!("{dir}/{ok}/in{i}.npy")))).collect();
        let (status, answer) = server.post_json("/v2/models/mlp_batch/infer", &json!({ "inputs": inputs }));
        assert_eq!(status, 200, "{ok}: {answer}");
        let want = npy(&format!("{dir}/{ok}/out0.npy"));
        assert_eq!(answer["outputs"][0]["shape"], json!(want.dims), "{ok}");
        for (a, b) in json_data(&answer["outputs"][0]["data"]).iter().zip(want.to_vec::<f32>().unwrap()) {
            assert!((a - b).abs() <= 1e-5 + 1e-5 * b.abs(), "{ok}: {a} vs JAX's {b}");
        }
    }
    // Three batch sizes, three executables: the repeated one was not compiled again.
    let metrics = server.get_text("/metrics");
    assert!(metrics.contains("pjrt_serve_executables{model=\"mlp_batch\"} 3"), "{metrics}");
    assert!(metrics.contains("pjrt_serve_requests_total{model=\"mlp_batch\",outcome=\"success\"} 4"), "{metrics}");
    assert!(metrics.contains("pjrt_serve_batch_size_count{model=\"mlp_batch\"} 4"), "{metrics}");

    for (bad, says) in
        [("bad0", "Expected value >= 1 for dimension variable 'b'"), ("bad1", "input \"input0\" has shape [3, 7]")]
    {
        let inputs: Vec<Value> =
            (0..5).map(|i| tensor_json(&format!("input{i}"), &npy(&format!("{dir}/{bad}/in{i}.npy")))).collect();
        let (status, answer) = server.post_json("/v2/models/mlp_batch/infer", &json!({ "inputs": inputs }));
        assert_eq!(status, 400, "{bad}: {answer}");
        assert!(answer["error"].as_str().unwrap().contains(says), "{bad}: {answer}");
    }
}

#[test]
fn bad_requests_are_answered_400_or_404_naming_what_is_wrong() {
    let server = serve(ServerOptions::default().with_max_body_bytes(64 << 10));
    let x = |datatype: &str, shape: Value, data: Value| json!({ "inputs": [{ "name": "x", "datatype": datatype, "shape": shape, "data": data }] });
    let ones = json!(vec![1.0; 32]);
    let cases: Vec<(&str, Value, u16, &str)> = vec![
        (
            "/v2/models/nope/infer",
            x("FP32", json!([4, 8]), ones.clone()),
            404,
            "Request for unknown model: 'nope' is not found (served models: mlp, mlp_batch)",
        ),
        (
            "/v2/models/mlp/versions/7/infer",
            x("FP32", json!([4, 8]), ones.clone()),
            404,
            "Request for unknown model: 'mlp' version 7 is not found",
        ),
        ("/v2/models/mlp/infer", x("FP64", json!([4, 8]), ones.clone()), 400, "is FP64, but the model takes FP32"),
        ("/v2/models/mlp/infer", x("FP32", json!([8, 4]), ones.clone()), 400, "has shape [8, 4]"),
        ("/v2/models/mlp/infer", x("FP32", json!([4, 8]), json!([1.0, 2.0])), 400, "has 2 elements"),
        ("/v2/models/mlp/infer", x("BYTES", json!([4, 8]), ones.clone()), 400, "BYTES"),
        ("/v2/models/mlp/infer", x("FP32", json!([4, -8]), ones.clone()), 400, "negative"),
        ("/v2/models/mlp/infer", x("FP32", json!([4, 8]), json!(vec!["a"; 32])), 400, "is not a number"),
        ("/v2/models/mlp/infer", json!({ "inputs": [] }), 400, "input \"x\""),
        (
            "/v2/models/mlp/infer",
            json!({ "inputs": [{ "name": "z", "datatype": "FP32", "shape": [1], "data": [1] }] }),
            400,
            "no input \"z\"",
        ),
        ("/v2/models/mlp/infer", json!({ "inputs": 3 }), 400, "\"inputs\""),
        (
            "/v2/models/mlp/infer",
            json!({ "inputs": x("FP32", json!([4, 8]), ones.clone())["inputs"], "outputs": [{ "name": "q" }] }),
            400,
            "no output \"q\"",
        ),
        (
            "/v2/models/mlp/infer",
            json!({ "inputs": x("FP32", json!([4, 8]), ones.clone())["inputs"], "parameters": { "classification": 3 } }),
            400,
            "classification",
        ),
    ];
    for (path, body, status, says) in cases {
        let (got, answer) = server.post_json(path, &body);
        assert_eq!(got, status, "{path} {body}: {answer}");
        let message = answer["error"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{body}: {message:?} does not say {says:?}");
    }
    // Binary data whose size disagrees with the shape, or that the header length overruns.
    let header = json!({ "inputs": [{ "name": "x", "datatype": "FP32", "shape": [4, 8], "parameters": { "binary_data_size": 100 } }] });
    let (status, answer, _) = server.post_binary("/v2/models/mlp/infer", &header, &[0; 100]);
    assert_eq!(status, 400);
    assert!(answer["error"].as_str().unwrap().contains("binary_data_size is 100 bytes"), "{answer}");
    let (status, body) = server.post_raw("/v2/models/mlp/infer", &[("Inference-Header-Content-Length", "999")], b"{}");
    assert_eq!(status, 400, "{body}");
    let (status, body) = server.post_raw("/v2/models/mlp/infer", &[], b"{not json");
    assert_eq!((status, body.contains("not JSON")), (400, true), "{body}");
    let (status, body) = server.post_raw("/v2/models/mlp/infer", &[("Content-Encoding", "gzip")], b"{}");
    assert_eq!((status, body.contains("Content-Encoding")), (400, true), "{body}");
    // A body over the limit.
    let (status, _) = server.post_raw("/v2/models/mlp/infer", &[], &vec![b' '; 65 << 10]);
    assert_eq!(status, 413);
    // Triton's calls this server does not have.
    let (status, answer) = server.get_json("/v2/models/mlp/trace/setting");
    assert_eq!(status, 404, "{answer}");
    // And the server still answers.
    let (status, _) = server.post_json("/v2/models/mlp/infer", &x("FP32", json!([4, 8]), ones));
    assert_eq!(status, 200);
    let metrics = server.get_text("/metrics");
    assert!(metrics.contains("pjrt_serve_requests_total{model=\"mlp\",outcome=\"failure\"}"), "{metrics}");
}

/// Mutated bodies (bytes flipped, cut, spliced; JSON and binary) are answered 400 (or 200),
/// never 500 or a dropped connection, and the server goes on serving.
#[test]
fn hostile_bodies_never_crash_the_server() {
    let server = serve(ServerOptions::default());
    let x = npy("jax_export/jax-0.10.2/mlp_f32/in4.npy");
    let json_body = json!({ "inputs": [tensor_json("x", &x)], "outputs": [{ "name": "y" }] }).to_string().into_bytes();
    let header = json!({ "inputs": [{ "name": "x", "datatype": "FP32", "shape": [4, 8], "parameters": { "binary_data_size": 128 } }] })
        .to_string()
        .into_bytes();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for round in 0..400 {
        let binary = round % 2 == 1;
        let mut body = if binary { [header.clone(), x.data.clone()].concat() } else { json_body.clone() };
        for _ in 0..1 + next() % 4 {
            let at = (next() as usize) % body.len();
            match next() % 4 {
                0 => body[at] = next() as u8,
                1 => body.truncate(at.max(1)),
                2 => body.insert(at, b"[{\"-1e999,:"[next() as usize % 11]),
                _ => body.splice(at..at, std::iter::repeat_n(b'[', 1 + next() as usize % 3000)).for_each(drop),
            }
        }
        let length = header.len().to_string();
        let headers: &[(&str, &str)] = if binary { &[("Inference-Header-Content-Length", &length)] } else { &[] };
        let (status, answer) = server.post_raw("/v2/models/mlp/infer", headers, &body);
        assert!(status == 200 || status == 400, "round {round}: {status} {answer}");
    }
    let (status, _) = server.get_json("/v2/health/live");
    assert_eq!(status, 200);
}

#[test]
fn a_full_queue_answers_503_at_once_and_counts_the_rejection() {
    let server = serve(ServerOptions::default().with_max_queue(0));
    let x = npy("jax_export/jax-0.10.2/mlp_f32/in4.npy");
    let (status, answer) = server.post_json("/v2/models/mlp/infer", &json!({ "inputs": [tensor_json("x", &x)] }));
    assert_eq!(status, 503, "{answer}");
    assert!(answer["error"].as_str().unwrap().contains("try again"), "{answer}");
    let metrics = server.get_text("/metrics");
    assert!(metrics.contains("pjrt_serve_requests_total{model=\"mlp\",outcome=\"rejected\"} 1"), "{metrics}");
}

#[test]
fn the_bearer_token_is_required_when_set() {
    let server = serve(ServerOptions::default().with_token("s3cret"));
    let (status, answer) = server.get_json("/v2/health/ready");
    assert_eq!(status, 401, "{answer}");
    for wrong in ["Bearer wrong", "Bearer s3cret2", "Basic s3cret", "Bearers3cret", "s3cret"] {
        let (status, _) = server.get_json_with("/v2/health/ready", &[("Authorization", wrong)]);
        assert_eq!(status, 401, "{wrong}");
    }
    // The scheme is case-insensitive (RFC 9110, 11.1).
    for right in ["Bearer s3cret", "bearer s3cret", "BEARER s3cret", "bEaReR  s3cret"] {
        let (status, _) = server.get_json_with("/v2/health/ready", &[("Authorization", right)]);
        assert_eq!(status, 200, "{right}");
    }
    // Without the flag, health and metrics need the token too.
    assert_eq!(server.get_json("/v2/health/live").0, 401);
    let (status, _) = server.post_raw("/metrics", &[], b"");
    assert_eq!(status, 401);
}

#[test]
fn health_and_metrics_may_be_left_open_for_probes_and_scrapers() {
    let mut options = ServerOptions::default().with_token("s3cret");
    options.open_health_and_metrics = true;
    let server = serve(options);
    for path in ["/v2/health/live", "/v2/health/ready"] {
        assert_eq!(server.get_json(path).0, 200, "{path}");
    }
    assert!(server.get_text("/metrics").contains("pjrt_serve_executables"));
    // Everything else still needs the token.
    for path in ["/v2", "/v2/models/mlp", "/v2/models/mlp/ready"] {
        assert_eq!(server.get_json(path).0, 401, "{path}");
    }
    assert_eq!(server.post_json("/v2/repository/index", &json!({})).0, 401);
    assert_eq!(server.post_json("/v2/models/mlp/infer", &json!({})).0, 401);
}

#[test]
fn the_repository_extension_indexes_loads_and_unloads() {
    let repo = repository();
    std::fs::create_dir_all(repo.join("broken")).unwrap();
    std::fs::write(repo.join("broken/model.jaxexport"), b"not a model").unwrap();
    let options = ServerOptions::default().with_repository(&repo).with_model_control(true);
    let server = Server::new(client(), options);
    let errors = server.load_repository(&repo).unwrap();
    // The broken model is reported; the others are served.
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].to_string().contains("\"broken\""), "{}", errors[0]);
    let server = Running::start(server);
    let (status, index) = server.post_json("/v2/repository/index", &json!({}));
    assert_eq!(status, 200);
    let states: Vec<(String, String)> = index
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["name"].as_str().unwrap().to_string(), m["state"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(
        states,
        [("mlp", "READY"), ("mlp_batch", "READY"), ("broken", "UNAVAILABLE")]
            .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    // The reason says what is wrong, without the server's paths.
    let reason = index[2]["reason"].as_str().unwrap();
    assert!(reason.contains("model.jaxexport") && !reason.contains(repo.to_str().unwrap()), "{reason}");
    let (status, _) = server.post_json("/v2/repository/models/mlp/unload", &json!({}));
    assert_eq!(status, 200);
    // Unloaded: in the index, not ready.
    let (status, _) = server.get_json("/v2/models/mlp/ready");
    assert_eq!(status, 503);
    let (status, answer) = server.post_json("/v2/repository/models/mlp/load", &json!({}));
    assert_eq!(status, 200, "{answer}");
    let (status, _) = server.get_json("/v2/models/mlp/ready");
    assert_eq!(status, 200);
    let (status, answer) = server.post_json("/v2/repository/models/..%2Fetc/load", &json!({}));
    assert_eq!(status, 400, "{answer}");
    // A model that does not load: why, without paths.
    let (status, answer) = server.post_json("/v2/repository/models/broken/load", &json!({}));
    let message = answer["error"].as_str().unwrap();
    assert_eq!(status, 400, "{answer}");
    assert!(message.starts_with("failed to load 'broken': "), "{message}");
    assert!(message.contains("model.jaxexport") && !message.contains(repo.to_str().unwrap()), "{message}");
}

/// A name probes nothing: no folder, a file and a folder that is not a model's get the same
/// answer, which has no path.
#[test]
fn load_errors_name_no_paths_and_tell_no_folders_apart() {
    let repo = repository();
    std::fs::create_dir_all(repo.join("notes")).unwrap();
    std::fs::write(repo.join("notes/readme.txt"), b"hi").unwrap();
    std::fs::write(repo.join("file"), b"x").unwrap();
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    let options = ServerOptions::default().with_repository(&repo).with_model_control(true);
    let server = Running::start(Server::new(client(), options));
    for name in ["missing", "notes", "file"] {
        let (status, answer) = server.post_json(&format!("/v2/repository/models/{name}/load"), &json!({}));
        assert_eq!(status, 404, "{name}: {answer}");
        assert_eq!(answer["error"], format!("failed to load '{name}': no model folder '{name}' in the repository"));
    }
    let (status, answer) = server.post_json("/v2/repository/models/.git/load", &json!({}));
    assert_eq!(status, 400, "{answer}");
    assert!(!answer.to_string().contains(repo.to_str().unwrap()), "{answer}");
}

/// As in Triton, clients load and unload models only when the server says so.
#[test]
fn model_control_is_off_by_default() {
    let server = serve(ServerOptions::default());
    for call in ["load", "unload"] {
        let (status, answer) = server.post_json(&format!("/v2/repository/models/mlp/{call}"), &json!({}));
        assert_eq!(status, 403, "{call}: {answer}");
        assert!(answer["error"].as_str().unwrap().contains("--model-control explicit"), "{answer}");
    }
    // The model is still served; the index is still there.
    assert_eq!(server.get_json("/v2/models/mlp/ready").0, 200);
    assert_eq!(server.post_json("/v2/repository/index", &json!({})).0, 200);
}

#[test]
fn server_metadata_and_health() {
    let server = serve(ServerOptions::default());
    let (status, meta) = server.get_json("/v2");
    assert_eq!(status, 200);
    assert_eq!(meta["name"], "pjrt-serve");
    assert!(meta["extensions"].as_array().unwrap().contains(&json!("binary_tensor_data")));
    for path in ["/v2/health/live", "/v2/health/ready", "/v2/models/mlp/ready", "/v2/models/mlp/versions/1/ready"] {
        assert_eq!(server.get_json(path).0, 200, "{path}");
    }
    let loaded: Vec<String> = server.server.models().iter().map(|m| m.name().to_string()).collect();
    assert_eq!(loaded, ["mlp", "mlp_batch"]);
    assert!(server.server.models().iter().all(|m| m.load_ms() > 0.0));
}

#[test]
fn model_specs_parse() {
    let config: ModelConfig = "tfm=/m/model.jaxexport".parse().unwrap();
    assert_eq!((config.name.as_str(), config.params), ("tfm", None));
    assert!("=x".parse::<ModelConfig>().is_err());
    assert!("name".parse::<ModelConfig>().is_err());
}

/// Over gRPC alike: the bearer scheme in any case, health open with the flag, model control
/// off by default.
#[test]
fn grpc_checks_the_token_probes_and_model_control_as_http_does() {
    use pjrt_serve::grpc::messages::{RepositoryModelRequest, ServerLiveRequest, ServerMetadataRequest};
    let mut options = ServerOptions::default().with_token("s3cret");
    options.open_health_and_metrics = true;
    let server = serve(options);
    assert_eq!(server.grpc("ServerLive", &ServerLiveRequest {}, &[]).code, 0);
    // UNAUTHENTICATED without the token, OK with it in any case.
    assert_eq!(server.grpc("ServerMetadata", &ServerMetadataRequest {}, &[]).code, 16);
    let lower = [("authorization", "bearer s3cret")];
    assert_eq!(server.grpc("ServerMetadata", &ServerMetadataRequest {}, &lower).code, 0);
    let load = RepositoryModelRequest { model_name: "mlp".into(), ..Default::default() };
    for call in ["RepositoryModelLoad", "RepositoryModelUnload"] {
        let answer = server.grpc(call, &load, &lower);
        // PERMISSION_DENIED.
        assert_eq!(answer.code, 7, "{call}: {answer:?}");
        assert!(answer.message.contains("--model-control explicit"), "{answer:?}");
    }
}

/// ModelInfer over gRPC, with raw and with typed contents, answers what HTTP does; errors are
/// the same statuses as Triton's.
#[test]
fn grpc_infer_answers_with_raw_and_typed_contents() {
    use pjrt_serve::grpc::messages::{InferInputTensor, InferTensorContents, ModelInferRequest, ModelInferResponse};
    use prost::Message as _;
    let server = serve(ServerOptions::default());
    let x = npy("jax_export/jax-0.10.2/mlp_f32/in4.npy");
    let (_, answer) = server.post_json("/v2/models/mlp/infer", &json!({ "inputs": [tensor_json("x", &x)] }));
    let expected = json_data(&answer["outputs"][0]["data"]);
    let tensor = |contents| InferInputTensor {
        name: "x".into(),
        datatype: "FP32".into(),
        shape: vec![4, 8],
        parameters: Default::default(),
        contents,
    };
    let raw = ModelInferRequest {
        model_name: "mlp".into(),
        id: "g1".into(),
        inputs: vec![tensor(None)],
        raw_input_contents: vec![x.data.clone()],
        ..Default::default()
    };
    let typed = ModelInferRequest {
        model_name: "mlp".into(),
        inputs: vec![tensor(Some(InferTensorContents {
            fp32_contents: x.to_vec::<f32>().unwrap(),
            ..Default::default()
        }))],
        ..Default::default()
    };
    for request in [raw, typed] {
        let answer = server.grpc("ModelInfer", &request, &[]);
        assert_eq!(answer.code, 0, "{answer:?}");
        let response = ModelInferResponse::decode(&answer.body[..]).unwrap();
        assert_eq!(response.id, request.id);
        assert_eq!(response.outputs[0].shape, [4, 3]);
        assert_eq!(f32s(&response.raw_output_contents[0]), expected);
    }
    // An unknown model is NOT_FOUND, a wrong datatype INVALID_ARGUMENT naming it.
    let unknown = ModelInferRequest { model_name: "nope".into(), ..Default::default() };
    assert_eq!(server.grpc("ModelInfer", &unknown, &[]).code, 5);
    let wrong = ModelInferRequest {
        model_name: "mlp".into(),
        inputs: vec![InferInputTensor { datatype: "INT64".into(), ..tensor(None) }],
        raw_input_contents: vec![vec![0; 256]],
        ..Default::default()
    };
    let answer = server.grpc("ModelInfer", &wrong, &[]);
    assert_eq!(answer.code, 3, "{answer:?}");
    assert!(answer.message.contains("is INT64, but the model takes FP32"), "{answer:?}");
}
