//! Warm-up before a model is served: every signature compiled at load (here the buckets of a
//! `symbolic_dims` size list, and the shapes of the config's samples) runs once, counted in
//! the metrics, so a warmed model's first request compiles nothing; `"warmup": false` leaves
//! it to the first request. Counters, not timings, say so (the figure is in docs/serving.md).

use pjrt_serve::{Server, ServerOptions};
use serde_json::{json, Value};

use crate::harness::{client, data, npy, temp_dir, Running};

fn metric(text: &str, name: &str) -> u64 {
    let line = text.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("no {name} in {text}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

fn serve(config: &str) -> (Running, Vec<pjrt_serve::ServeError>) {
    let repo = temp_dir("warmup");
    std::fs::create_dir_all(repo.join("mlp")).unwrap();
    let dir = data("jax_export/symbolic/jax-0.10.2/mlp_batch");
    std::fs::copy(dir.join("model.jaxexport"), repo.join("mlp/model.jaxexport")).unwrap();
    std::fs::copy(dir.join("ok2/in0.npy"), repo.join("mlp/x5.npy")).unwrap();
    std::fs::write(repo.join("mlp/config.json"), config).unwrap();
    let server = Server::new(client(), ServerOptions::default());
    let errors = server.load_repository(&repo).unwrap();
    (Running::start(server), errors)
}

fn infer(server: &Running, case: &str) -> (u16, Value) {
    let dir = format!("jax_export/symbolic/jax-0.10.2/mlp_batch/{case}");
    let inputs: Vec<Value> = (0..5)
        .map(|i| {
            let a = npy(&format!("{dir}/in{i}.npy"));
            json!({ "name": format!("input{i}"), "datatype": "FP32", "shape": a.dims, "data": a.to_vec::<f32>().unwrap() })
        })
        .collect();
    server.post_json("/v2/models/mlp/infer", &json!({ "inputs": inputs }))
}

#[test]
fn a_warmed_model_compiles_nothing_on_its_first_request() {
    // Batch sizes 1 and 3 (ok0, ok1): both compiled and run at load.
    let (server, errors) = serve(r#"{"symbolic_dims": {"b": {"sizes": [1, 3]}}}"#);
    assert!(errors.is_empty(), "{errors:?}");
    let metrics = server.get_text("/metrics");
    assert_eq!(metric(&metrics, "pjrt_serve_warmup_executions_total{model=\"mlp\"}"), 2, "{metrics}");
    assert_eq!(metric(&metrics, "pjrt_serve_executables{model=\"mlp\"}"), 2, "{metrics}");
    // Warm-up is not a client's request: Triton's statistics count none.
    let (_, stats) = server.get_json("/v2/models/mlp/stats");
    assert_eq!(stats["model_stats"][0]["execution_count"], 0, "{stats}");
    for case in ["ok1", "ok0", "ok1"] {
        let (status, answer) = infer(&server, case);
        assert_eq!(status, 200, "{answer}");
    }
    let metrics = server.get_text("/metrics");
    assert_eq!(metric(&metrics, "pjrt_serve_compiles_total{model=\"mlp\"}"), 0, "{metrics}");
    assert_eq!(metric(&metrics, "pjrt_serve_executables{model=\"mlp\"}"), 2, "{metrics}");

    // Without warm-up, the first request of each size compiles.
    let (cold, errors) = serve(r#"{"symbolic_dims": {"b": {"sizes": [1, 3]}}, "warmup": false}"#);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(metric(&cold.get_text("/metrics"), "pjrt_serve_executables{model=\"mlp\"}"), 0);
    assert_eq!(infer(&cold, "ok1").0, 200);
    let metrics = cold.get_text("/metrics");
    assert_eq!(metric(&metrics, "pjrt_serve_compiles_total{model=\"mlp\"}"), 1, "{metrics}");
    assert_eq!(metric(&metrics, "pjrt_serve_warmup_executions_total{model=\"mlp\"}"), 0, "{metrics}");
}

#[test]
fn warmup_samples_are_run_and_their_shapes_compiled_at_load() {
    // input0's sample has 5 rows; the others (weights given by requests) are zeros of the
    // fixed shapes, so the samples do not make a signature: with all five named they do.
    let dir = data("jax_export/symbolic/jax-0.10.2/mlp_batch/ok2");
    let samples: serde_json::Map<String, Value> =
        (0..5).map(|i| (format!("input{i}"), json!(dir.join(format!("in{i}.npy")).display().to_string()))).collect();
    let config = json!({ "warmup": { "samples": samples } }).to_string();
    let (server, errors) = serve(&config);
    assert!(errors.is_empty(), "{errors:?}");
    let metrics = server.get_text("/metrics");
    assert_eq!(metric(&metrics, "pjrt_serve_warmup_executions_total{model=\"mlp\"}"), 1, "{metrics}");
    let (status, answer) = infer(&server, "ok2");
    assert_eq!(status, 200, "{answer}");
    let metrics = server.get_text("/metrics");
    assert_eq!(metric(&metrics, "pjrt_serve_compiles_total{model=\"mlp\"}"), 0, "{metrics}");

    // A sample for an input the model has not, or of the wrong shape, or a key we do not know,
    // fails the load, saying which.
    let (_, errors) = serve(r#"{"warmup": {"samples": {"x": "x5.npy"}}}"#);
    assert!(errors[0].to_string().contains("warmup samples name \"x\", which is no input"), "{}", errors[0]);
    let (_, errors) = serve(r#"{"warmup": {"samples": {"input1": "x5.npy"}}}"#);
    assert!(errors[0].to_string().contains("but input \"input1\" takes [8, 16]"), "{}", errors[0]);
    let (_, errors) = serve(r#"{"warmup": {"count": 2}}"#);
    assert!(errors[0].to_string().contains("warmup's \"count\" is not supported"), "{}", errors[0]);
}
