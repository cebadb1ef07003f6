//! Triton's statistics extension (`/v2/models[/NAME[/versions/V]]/stats`, gRPC
//! `ModelStatistics`) and Triton's metric names on `/metrics`: after inferences over HTTP and
//! gRPC and a failed request, the counts and durations are what Triton's tools read
//! (perf_analyzer: every field an unsigned integer, equal compute counts, the version a number),
//! for an unbatched and a batched model.

use pjrt_serve::grpc::messages::{InferInputTensor, ModelInferRequest, ServerMetadataResponse};
use pjrt_serve::grpc::messages::{ModelStatisticsRequest, ModelStatisticsResponse, ServerMetadataRequest};
use pjrt_serve::{Server, ServerOptions};
use prost::Message as _;
use serde_json::{json, Value};

use crate::harness::{client, data, npy, temp_dir, Running};

/// The value of the sample `key` (`name{labels}`) of a scrape.
fn sample(metrics: &str, key: &str) -> u64 {
    let prefix = format!("{key} ");
    let line = metrics.lines().find(|l| l.starts_with(&prefix)).unwrap_or_else(|| panic!("no {key} in {metrics}"));
    line[prefix.len()..].parse().unwrap_or_else(|e| panic!("{line}: {e}"))
}

/// A `{count, ns}` of a model's statistics.
fn tally(stat: &Value, path: &[&str]) -> (u64, u64) {
    let mut v = stat;
    for key in path {
        v = &v[key];
    }
    let field = |k: &str| v[k].as_u64().unwrap_or_else(|| panic!("{path:?}.{k} is no unsigned integer: {stat}"));
    (field("count"), field("ns"))
}

fn stats_of(server: &Running, path: &str) -> Vec<Value> {
    let (status, answer) = server.get_json(path);
    assert_eq!(status, 200, "{path}: {answer}");
    answer["model_stats"].as_array().unwrap_or_else(|| panic!("{path}: {answer}")).clone()
}

#[test]
fn statistics_count_inferences_over_http_and_grpc_and_failures_as_triton_does() {
    let server = crate::serve(ServerOptions::default());
    let (_, meta) = server.get_json("/v2");
    assert!(meta["extensions"].as_array().unwrap().contains(&json!("statistics")), "{meta}");
    let answer = server.grpc("ServerMetadata", &ServerMetadataRequest {}, &[]);
    assert!(ServerMetadataResponse::decode(&answer.body[..]).unwrap().extensions.contains(&"statistics".into()));

    // Served, not run yet: listed with zeros.
    let before = stats_of(&server, "/v2/models/mlp/stats");
    assert_eq!(before.len(), 1);
    assert_eq!((before[0]["name"].as_str(), before[0]["version"].as_str()), (Some("mlp"), Some("1")));
    assert_eq!(before[0]["last_inference"], 0);
    assert_eq!(tally(&before[0], &["inference_stats", "success"]), (0, 0));

    let started_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    let x = npy("jax_export/jax-0.10.2/mlp_f32/in4.npy");
    for _ in 0..3 {
        let (status, answer) =
            server.post_json("/v2/models/mlp/infer", &json!({ "inputs": [crate::tensor_json("x", &x)] }));
        assert_eq!(status, 200, "{answer}");
    }
    let request = ModelInferRequest {
        model_name: "mlp".into(),
        inputs: vec![InferInputTensor {
            name: "x".into(),
            datatype: "FP32".into(),
            shape: vec![4, 8],
            ..Default::default()
        }],
        raw_input_contents: vec![x.data.clone()],
        ..Default::default()
    };
    for _ in 0..2 {
        assert_eq!(server.grpc("ModelInfer", &request, &[]).code, 0);
    }
    // A request that does not fit the model fails.
    let bad = json!({ "inputs": [{ "name": "x", "datatype": "FP32", "shape": [2, 8], "data": vec![0.0; 16] }] });
    assert_eq!(server.post_json("/v2/models/mlp/infer", &bad).0, 400);

    let stats = stats_of(&server, "/v2/models/mlp/stats");
    assert_eq!(stats.len(), 1, "{stats:?}");
    let s = &stats[0];
    assert_eq!((s["inference_count"].as_u64(), s["execution_count"].as_u64()), (Some(5), Some(5)), "{s}");
    let last = s["last_inference"].as_u64().unwrap();
    assert!(last >= started_ms && last <= started_ms + 600_000, "{last} vs {started_ms}");
    let (success, success_ns) = tally(s, &["inference_stats", "success"]);
    assert_eq!(success, 5, "{s}");
    let (queue, queue_ns) = tally(s, &["inference_stats", "queue"]);
    assert_eq!(queue, 5, "{s}");
    let mut compute_ns = 0;
    for phase in ["compute_input", "compute_infer", "compute_output"] {
        let (count, ns) = tally(s, &["inference_stats", phase]);
        assert_eq!(count, 5, "{phase}: {s}");
        assert!(ns > 0, "{phase}: {s}");
        compute_ns += ns;
    }
    assert!(success_ns > 0 && queue_ns <= success_ns && queue_ns + compute_ns <= success_ns, "{s}");
    let (fail, fail_ns) = tally(s, &["inference_stats", "fail"]);
    assert!(fail == 1 && fail_ns > 0, "{s}");
    for cache in ["cache_hit", "cache_miss"] {
        assert_eq!(tally(s, &["inference_stats", cache]), (0, 0), "{s}");
    }
    // One batch size (an unbatched model's requests are batch size 1), five executions.
    let batches = s["batch_stats"].as_array().unwrap();
    assert_eq!(batches.len(), 1, "{s}");
    assert_eq!(batches[0]["batch_size"], 1);
    assert_eq!(tally(&batches[0], &["compute_infer"]).0, 5);
    assert_eq!(s["memory_usage"], json!([]));

    // The same by version, over gRPC, and among every model's.
    assert_eq!(stats_of(&server, "/v2/models/mlp/versions/1/stats"), stats);
    let answer =
        server.grpc("ModelStatistics", &ModelStatisticsRequest { name: "mlp".into(), version: "1".into() }, &[]);
    assert_eq!(answer.code, 0, "{answer:?}");
    let grpc = ModelStatisticsResponse::decode(&answer.body[..]).unwrap();
    let g = &grpc.model_stats[0];
    assert_eq!((g.name.as_str(), g.version.as_str(), g.inference_count, g.execution_count), ("mlp", "1", 5, 5));
    assert_eq!(g.last_inference, last);
    let i = g.inference_stats.clone().unwrap();
    assert_eq!((i.success.unwrap().count, i.success.unwrap().ns), (success, success_ns));
    assert_eq!((i.queue.unwrap().ns, i.fail.unwrap().count), (queue_ns, 1));
    assert_eq!((g.batch_stats[0].batch_size, g.batch_stats[0].compute_infer.unwrap().count), (1, 5));
    let all = stats_of(&server, "/v2/models/stats");
    let names: Vec<&str> = all.iter().map(|m| m["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["mlp", "mlp_batch"]);
    let answer = server.grpc("ModelStatistics", &ModelStatisticsRequest::default(), &[]);
    assert_eq!(ModelStatisticsResponse::decode(&answer.body[..]).unwrap().model_stats.len(), 2);

    // A model or version neither served nor with statistics: 404, NOT_FOUND.
    for path in ["/v2/models/nope/stats", "/v2/models/mlp/versions/2/stats"] {
        let (status, answer) = server.get_json(path);
        assert_eq!(status, 404, "{path}: {answer}");
        assert!(answer["error"].as_str().unwrap().contains("no statistics"), "{answer}");
    }
    let answer =
        server.grpc("ModelStatistics", &ModelStatisticsRequest { name: "nope".into(), ..Default::default() }, &[]);
    assert_eq!(answer.code, 5, "{answer:?}");

    // Triton's metric names, labelled with the model and version, agree with the statistics.
    let metrics = server.get_text("/metrics");
    let key = |name: &str| format!("{name}{{model=\"mlp\",version=\"1\"}}");
    assert_eq!(sample(&metrics, &key("nv_inference_request_success")), 5);
    assert_eq!(sample(&metrics, &key("nv_inference_count")), 5);
    assert_eq!(sample(&metrics, &key("nv_inference_exec_count")), 5);
    assert_eq!(sample(&metrics, &key("nv_inference_request_duration_us")), success_ns / 1000);
    assert_eq!(sample(&metrics, &key("nv_inference_queue_duration_us")), queue_ns / 1000);
    for phase in ["input", "infer", "output"] {
        let (_, ns) = tally(s, &["inference_stats", &format!("compute_{phase}")]);
        assert_eq!(sample(&metrics, &key(&format!("nv_inference_compute_{phase}_duration_us"))), ns / 1000);
    }
    assert_eq!(sample(&metrics, "nv_inference_request_failure{model=\"mlp\",reason=\"OTHER\",version=\"1\"}"), 1);
    assert_eq!(sample(&metrics, "nv_inference_request_failure{model=\"mlp\",reason=\"REJECTED\",version=\"1\"}"), 0);
    assert_eq!(sample(&metrics, &key("nv_inference_pending_request_count")), 0);
    // A model served but not run has its metrics at zero.
    assert_eq!(sample(&metrics, "nv_inference_request_success{model=\"mlp_batch\",version=\"1\"}"), 0);
    assert!(metrics.contains("# TYPE nv_inference_queue_duration_us counter"), "{metrics}");
    assert!(metrics.contains("# TYPE nv_inference_pending_request_count gauge"), "{metrics}");
    // Ours are still there.
    assert!(metrics.contains("pjrt_serve_requests_total{model=\"mlp\",outcome=\"success\"} 5"), "{metrics}");
}

#[test]
fn a_batched_models_statistics_count_rows_executions_and_batch_sizes() {
    let repo = temp_dir("stats-batch-repo");
    let model = repo.join("mlp_batch");
    std::fs::create_dir_all(&model).unwrap();
    std::fs::copy(data("jax_export/symbolic/jax-0.10.2/mlp_batch/model.jaxexport"), model.join("model.jaxexport"))
        .unwrap();
    let batching = json!({ "batch_independent": true, "max_batch_size": 8, "max_queue_delay_ms": 200 });
    let config = json!({ "inputs": ["x", "w1", "b1", "w2", "b2"], "batching": batching });
    std::fs::write(model.join("config.json"), config.to_string()).unwrap();
    let server = Server::new(client(), ServerOptions::default());
    assert!(server.load_repository(&repo).unwrap().is_empty());
    let server = Running::start(server);

    let dir = "jax_export/symbolic/jax-0.10.2/mlp_batch/ok2";
    let x = npy(&format!("{dir}/in0.npy")).to_vec::<f32>().unwrap();
    let mut weights: Vec<Value> = Vec::new();
    for (i, name) in ["w1", "b1", "w2", "b2"].iter().enumerate() {
        let a = npy(&format!("{dir}/in{}.npy", i + 1));
        weights.push(json!({ "name": name, "datatype": "FP32", "shape": a.dims, "data": a.to_vec::<f32>().unwrap() }));
    }
    // Eight requests at once, of one or two rows: 11 rows.
    let rows_of = |k: usize| if k % 3 == 0 { 2 } else { 1 };
    let barrier = std::sync::Barrier::new(8);
    std::thread::scope(|scope| {
        for k in 0..8 {
            let (server, barrier, x, weights) = (&server, &barrier, &x, &weights);
            scope.spawn(move || {
                let rows = rows_of(k);
                let mut inputs =
                    vec![json!({ "name": "x", "datatype": "FP32", "shape": [rows, 8], "data": x[..rows * 8] })];
                inputs.extend(weights.iter().cloned());
                barrier.wait();
                let (status, answer) = server.post_json("/v2/models/mlp_batch/infer", &json!({ "inputs": inputs }));
                assert_eq!(status, 200, "{answer}");
            });
        }
    });
    let rows: u64 = (0..8).map(|k| rows_of(k) as u64).sum();
    let stats = stats_of(&server, "/v2/models/mlp_batch/stats");
    let s = &stats[0];
    let executions = s["execution_count"].as_u64().unwrap();
    assert_eq!(s["inference_count"].as_u64(), Some(rows), "{s}");
    assert!(executions < 8, "no two requests were batched together: {s}");
    // Each request counts once, with its batch's compute phases.
    for stat in ["success", "queue", "compute_input", "compute_infer", "compute_output"] {
        assert_eq!(tally(s, &["inference_stats", stat]).0, 8, "{stat}: {s}");
    }
    // The batch sizes are the executions' rows: they add up to the executions and the rows.
    let batches = s["batch_stats"].as_array().unwrap();
    let count = |b: &Value| tally(b, &["compute_infer"]).0;
    assert_eq!(batches.iter().map(count).sum::<u64>(), executions, "{s}");
    assert_eq!(batches.iter().map(|b| b["batch_size"].as_u64().unwrap() * count(b)).sum::<u64>(), rows, "{s}");
    assert!(batches.iter().all(|b| tally(b, &["compute_infer"]).1 > 0), "{s}");

    let metrics = server.get_text("/metrics");
    let key = |name: &str| format!("{name}{{model=\"mlp_batch\",version=\"1\"}}");
    assert_eq!(sample(&metrics, &key("nv_inference_request_success")), 8);
    assert_eq!(sample(&metrics, &key("nv_inference_count")), rows);
    assert_eq!(sample(&metrics, &key("nv_inference_exec_count")), executions);
}
