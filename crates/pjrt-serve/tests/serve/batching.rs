//! Dynamic batching: concurrent requests to the shape-polymorphic MLP run in batches (the
//! metrics show batches of more than one request), padded to buckets compiled at load (the
//! executables stay at the bucket count), and each answer is its own rows.

use pjrt_serve::{Server, ServerOptions};
use serde_json::{json, Value};

use crate::harness::{client, data, npy, temp_dir, Running};

fn batched_repository(batching: Value) -> std::path::PathBuf {
    let dir = temp_dir("batch-repo");
    let model = dir.join("mlp_batch");
    std::fs::create_dir_all(&model).unwrap();
    std::fs::copy(data("jax_export/symbolic/jax-0.10.2/mlp_batch/model.jaxexport"), model.join("model.jaxexport"))
        .unwrap();
    std::fs::write(
        model.join("config.json"),
        json!({ "inputs": ["x", "w1", "b1", "w2", "b2"], "batching": batching }).to_string(),
    )
    .unwrap();
    dir
}

fn histogram(metrics: &str, name: &str) -> (f64, f64) {
    let value = |suffix: &str| {
        let key = format!("{name}_{suffix}{{model=\"mlp_batch\"}} ");
        let line = metrics.lines().find(|l| l.starts_with(&key)).unwrap_or_else(|| panic!("no {key} in {metrics}"));
        line[key.len()..].parse::<f64>().unwrap()
    };
    (value("sum"), value("count"))
}

#[test]
fn concurrent_requests_run_in_batches_padded_to_buckets_compiled_at_load() {
    // A wide gathering window, so that the 16 requests meet in it even on a slow or busy host.
    let repo = batched_repository(json!({ "batch_independent": true, "max_batch_size": 8, "max_queue_delay_ms": 200 }));
    let server = Server::new(client(), ServerOptions::default());
    assert!(server.load_repository(&repo).unwrap().is_empty());
    let server = Running::start(server);
    // Buckets 1, 2, 4 and 8 are compiled at load.
    let metrics = server.get_text("/metrics");
    assert!(metrics.contains("pjrt_serve_executables{model=\"mlp_batch\"} 4"), "{metrics}");

    // Five rows of x and their outputs as JAX computed them (ok2: batch 5).
    let dir = "jax_export/symbolic/jax-0.10.2/mlp_batch/ok2";
    let x = npy(&format!("{dir}/in0.npy")).to_vec::<f32>().unwrap();
    let want = npy(&format!("{dir}/out0.npy")).to_vec::<f32>().unwrap();
    let weights: Vec<Value> = ["w1", "b1", "w2", "b2"]
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let a = npy(&format!("{dir}/in{}.npy", i + 1));
            json!({ "name": name, "datatype": "FP32", "shape": a.dims, "data": a.to_vec::<f32>().unwrap() })
        })
        .collect();
    let barrier = std::sync::Barrier::new(16);
    std::thread::scope(|scope| {
        for k in 0..16 {
            let (server, barrier, x, want, weights) = (&server, &barrier, &x, &want, &weights);
            scope.spawn(move || {
                // Request k asks for row k % 5 (one row) or rows 0..2 (two rows).
                let (first, rows) = if k % 3 == 0 { (0, 2) } else { (k % 5, 1) };
                let mut inputs = vec![json!({ "name": "x", "datatype": "FP32", "shape": [rows, 8], "data": x[first * 8..(first + rows) * 8] })];
                inputs.extend(weights.iter().cloned());
                barrier.wait();
                let (status, answer) = server.post_json("/v2/models/mlp_batch/infer", &json!({ "inputs": inputs }));
                assert_eq!(status, 200, "{answer}");
                assert_eq!(answer["outputs"][0]["shape"], json!([rows, 3]));
                let got: Vec<f32> =
                    answer["outputs"][0]["data"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap() as f32).collect();
                for (a, b) in got.iter().zip(&want[first * 3..(first + rows) * 3]) {
                    assert!((a - b).abs() <= 1e-5 + 1e-5 * b.abs(), "request {k}: {got:?} vs JAX's {b}");
                }
            });
        }
    });
    let metrics = server.get_text("/metrics");
    let (requests_in_batches, batches) = histogram(&metrics, "pjrt_serve_batch_size");
    assert_eq!(requests_in_batches, 16.0, "{metrics}");
    assert!(batches < 16.0, "no two requests were batched together: {metrics}");
    // Still the four bucket executables: batching compiled nothing new.
    assert!(metrics.contains("pjrt_serve_executables{model=\"mlp_batch\"} 4"), "{metrics}");
    assert!(metrics.contains("pjrt_serve_requests_total{model=\"mlp_batch\",outcome=\"success\"} 16"), "{metrics}");
}

#[test]
fn batching_is_refused_where_it_cannot_hold_and_requests_over_the_bound_are_400s() {
    // Without the declaration that rows are independent.
    let repo = batched_repository(json!({ "max_batch_size": 8 }));
    let errors = Server::new(client(), ServerOptions::default()).load_repository(&repo).unwrap();
    assert!(errors[0].to_string().contains("batch_independent"), "{}", errors[0]);
    // A model of static shapes.
    let repo = temp_dir("batch-static");
    std::fs::create_dir_all(repo.join("cnn")).unwrap();
    std::fs::copy(data("jax_export/jax-0.10.2/cnn/model.jaxexport"), repo.join("cnn/model.jaxexport")).unwrap();
    std::fs::write(repo.join("cnn/config.json"), br#"{"batching": {"batch_independent": true, "max_batch_size": 4}}"#)
        .unwrap();
    let errors = Server::new(client(), ServerOptions::default()).load_repository(&repo).unwrap();
    assert!(errors[0].to_string().contains("symbolic"), "{}", errors[0]);

    let repo = batched_repository(json!({ "batch_independent": true, "max_batch_size": 2, "max_queue_delay_ms": 0 }));
    let server = Server::new(client(), ServerOptions::default());
    assert!(server.load_repository(&repo).unwrap().is_empty());
    let server = Running::start(server);
    let dir = "jax_export/symbolic/jax-0.10.2/mlp_batch/ok1";
    let names = ["x", "w1", "b1", "w2", "b2"];
    let inputs: Vec<Value> = (0..5)
        .map(|i| {
            let a = npy(&format!("{dir}/in{i}.npy"));
            json!({ "name": names[i], "datatype": "FP32", "shape": a.dims, "data": a.to_vec::<f32>().unwrap() })
        })
        .collect();
    let (status, answer) = server.post_json("/v2/models/mlp_batch/infer", &json!({ "inputs": inputs }));
    assert_eq!(status, 400, "{answer}");
    assert!(answer["error"].as_str().unwrap().contains("1 to 2 rows (max_batch_size), not 3"), "{answer}");
}
