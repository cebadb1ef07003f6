//! New shapes of a symbolic model under churn: at most `max_request_shapes` compile over the
//! model's life, a dimension outside its `symbolic_dims` bound is refused before anything
//! compiles, and what requests compile never goes into the shared compile cache, where what the
//! operator loaded stays.

use pjrt_formats::compile_cache::CompileCache;
use pjrt_serve::{Server, ServerOptions};
use serde_json::{json, Value};

use crate::harness::{client, data, npy, temp_dir, Running};

fn metric(text: &str, name: &str) -> u64 {
    let line = text.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("no {name} in {text}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

#[test]
fn shape_churn_compiles_at_most_the_bound_and_leaves_the_compile_cache_alone() {
    let repo = temp_dir("churn");
    std::fs::create_dir_all(repo.join("mlp_batch")).unwrap();
    std::fs::copy(
        data("jax_export/symbolic/jax-0.10.2/mlp_batch/model.jaxexport"),
        repo.join("mlp_batch/model.jaxexport"),
    )
    .unwrap();
    std::fs::write(
        repo.join("mlp_batch/config.json"),
        br#"{"max_request_shapes": 4, "symbolic_dims": {"b": {"min": 1, "max": 16}}}"#,
    )
    .unwrap();
    std::fs::create_dir_all(repo.join("cnn")).unwrap();
    std::fs::copy(data("jax_export/jax-0.10.2/cnn/model.jaxexport"), repo.join("cnn/model.jaxexport")).unwrap();
    let cache = temp_dir("churn-cache");
    let mut options = ServerOptions::default();
    options.compile_cache = Some(cache.clone());
    let server = Server::new(client(), options);
    assert!(server.load_repository(&repo).unwrap().is_empty());
    let loaded = CompileCache::open(&cache).unwrap().info().unwrap().entries;
    assert_eq!(loaded, 1, "the CNN's executable, compiled at load");
    let server = Running::start(server);

    let dir = "jax_export/symbolic/jax-0.10.2/mlp_batch/ok1";
    let weights: Vec<Value> = (1..5)
        .map(|i| {
            let a = npy(&format!("{dir}/in{i}.npy"));
            json!({ "name": format!("input{i}"), "datatype": "FP32", "shape": a.dims, "data": a.to_vec::<f32>().unwrap() })
        })
        .collect();
    let infer = |rows: usize| {
        let x = json!({ "name": "input0", "datatype": "FP32", "shape": [rows, 8], "data": vec![0.5f32; rows * 8] });
        let mut inputs = vec![x];
        inputs.extend(weights.iter().cloned());
        server.post_json("/v2/models/mlp_batch/infer", &json!({ "inputs": inputs }))
    };
    // Twelve sizes, twice: the first four compile once each, the others are refused.
    let mut answered = 0;
    for round in 0..2 {
        for rows in 1..=12 {
            let (status, answer) = infer(rows);
            if rows <= 4 {
                assert_eq!(status, 200, "round {round}, {rows} rows: {answer}");
                assert_eq!(answer["outputs"][0]["shape"], json!([rows, 3]));
                answered += 1;
            } else {
                assert_eq!(status, 400, "round {round}, {rows} rows: {answer}");
                assert!(answer["error"].as_str().unwrap().contains("max_request_shapes"), "{answer}");
            }
        }
    }
    // Outside its bound: refused before anything compiles.
    let (status, answer) = infer(17);
    assert_eq!(status, 400, "{answer}");
    assert!(answer["error"].as_str().unwrap().contains("allows 1 to 16 (symbolic_dims)"), "{answer}");

    let metrics = server.get_text("/metrics");
    // 25 requests, 8 answered: 4 compiles.
    assert_eq!(answered, 8);
    assert_eq!(metric(&metrics, "pjrt_serve_compiles_total{model=\"mlp_batch\"}"), 4, "{metrics}");
    assert_eq!(metric(&metrics, "pjrt_serve_executables{model=\"mlp_batch\"}"), 4, "{metrics}");
    // Nothing of it went into the shared compile cache; the CNN's executable is still there
    // and answers.
    assert_eq!(CompileCache::open(&cache).unwrap().info().unwrap().entries, loaded);
    assert_eq!(server.get_json("/v2/models/cnn/ready").0, 200);
    assert_eq!(metric(&metrics, "pjrt_serve_executables{model=\"cnn\"}"), 1, "{metrics}");
}

/// A bound that names no symbolic dimension of the model is a load error that says which
/// there are.
#[test]
fn a_bound_on_a_dimension_the_model_lacks_is_a_load_error() {
    let repo = temp_dir("churn-bad");
    std::fs::create_dir_all(repo.join("m")).unwrap();
    std::fs::copy(data("jax_export/symbolic/jax-0.10.2/mlp_batch/model.jaxexport"), repo.join("m/model.jaxexport"))
        .unwrap();
    std::fs::write(repo.join("m/config.json"), br#"{"symbolic_dims": {"t": {"sizes": [8, 16]}}}"#).unwrap();
    let errors = Server::new(client(), ServerOptions::default()).load_repository(&repo).unwrap();
    assert_eq!(errors.len(), 1);
    assert!(errors[0].to_string().contains("symbolic dimensions: b"), "{}", errors[0]);
    std::fs::write(repo.join("m/config.json"), br#"{"symbolic_dims": {"b": {"min": 9, "max": 2}}}"#).unwrap();
    let errors = Server::new(client(), ServerOptions::default()).load_repository(&repo).unwrap();
    assert!(errors[0].to_string().contains("min 9 over max 2"), "{}", errors[0]);
}
