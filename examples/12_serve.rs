//! 12: serve `jax.export` models over HTTP with the Open Inference Protocol, and call them.
//!
//! `pjrt serve` (the CLI) is this, as a command: a `pjrt_serve::Server` holds a client and
//! its models, and speaks the protocol NVIDIA Triton and KServe clients speak (here over
//! HTTP; gRPC with `Server::serve_grpc`). This example serves two models in-process:
//!
//! - the CNN of the JAX test data, called with JSON tensors, whose answer equals what
//!   `JaxExport::run` (and so `pjrt run`) computes;
//! - the shape-polymorphic MLP (`x: f32[b, 8]`) with dynamic batching: eight concurrent
//!   requests of one row each run in fewer executions, padded to batch sizes compiled at load,
//!   and the metrics (`/metrics`, Prometheus) show it.
//!
//! The requests are plain HTTP (ureq); from Python, `tritonclient.http` works unchanged
//! (docs/serving.md). Run it with `cargo run -p pjrt-examples --example 12_serve`.

use std::path::PathBuf;

use pjrt_client::{Client, ClientOptions, Plugin};
use pjrt_formats::jax_export::JaxExport;
use pjrt_formats::npy::NpyArray;
use pjrt_serve::config::BatchingConfig;
use pjrt_serve::{ModelConfig, Server, ServerOptions};
use serde_json::{json, Value};

fn data(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/jax_export").join(path)
}

fn tensor(name: &str, a: &NpyArray) -> Value {
    json!({ "name": name, "datatype": "FP32", "shape": a.dims, "data": a.to_vec::<f32>().unwrap() })
}

fn post(url: &str, body: &Value) -> Result<Value, Box<dyn std::error::Error>> {
    let mut response = ureq::post(url).send(body.to_string())?;
    Ok(serde_json::from_slice(&response.body_mut().read_to_vec()?)?)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |line| eprintln!("{line}"))?.load_path())?;
    let client = Client::new(&plugin, &ClientOptions::new())?;
    let server = Server::new(client.clone(), ServerOptions::default());

    // The CNN: static shapes, compiled at load.
    server.load(ModelConfig::new("cnn", data("jax-0.10.2/cnn/model.jaxexport")))?;
    // The symbolic MLP, batched: up to 8 rows, buckets 1, 2, 4 and 8 compiled at load.
    let mut batching = BatchingConfig::new(8);
    batching.max_queue_delay = std::time::Duration::from_millis(20);
    server
        .load(ModelConfig::new("mlp", data("symbolic/jax-0.10.2/mlp_batch/model.jaxexport")).with_batching(batching))?;
    for model in server.models() {
        let inputs: Vec<String> =
            model.inputs().iter().map(|i| format!("{} {}{:?}", i.name, i.datatype, i.shape)).collect();
        println!("loaded {} in {:.0} ms: {}", model.name(), model.load_ms(), inputs.join(", "));
    }

    let runtime = tokio::runtime::Runtime::new()?;
    let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
    let base = format!("http://{}", listener.local_addr()?);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = runtime.spawn({
        let server = server.clone();
        async move {
            server
                .serve(listener, async {
                    let _ = stopped.await;
                })
                .await
        }
    });
    println!("serving on {base}");

    // The CNN over JSON: the same answer as JaxExport::run.
    let inputs: Vec<NpyArray> =
        (0..4).map(|i| NpyArray::read(&data(&format!("jax-0.10.2/cnn/in{i}.npy")))).collect::<Result<_, _>>()?;
    let request = json!({ "inputs": inputs.iter().enumerate().map(|(i, a)| tensor(&format!("input{i}"), a)).collect::<Vec<_>>() });
    let answer = post(&format!("{base}/v2/models/cnn/infer"), &request)?;
    let served: Vec<f32> =
        answer["outputs"][0]["data"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap() as f32).collect();
    let direct = JaxExport::read(data("jax-0.10.2/cnn/model.jaxexport"))?.run(&client, &inputs)?[0].to_vec::<f32>()?;
    assert_eq!(served, direct);
    println!("cnn: {} logits over HTTP, equal to JaxExport::run's", answer["outputs"][0]["shape"]);

    // Eight concurrent one-row requests to the batched MLP.
    let dir = "symbolic/jax-0.10.2/mlp_batch/ok2";
    let x = NpyArray::read(&data(&format!("{dir}/in0.npy")))?.to_vec::<f32>()?;
    let weights: Vec<NpyArray> =
        (1..5).map(|i| NpyArray::read(&data(&format!("{dir}/in{i}.npy")))).collect::<Result<_, _>>()?;
    std::thread::scope(|scope| {
        for row in 0..8 {
            let (base, x, weights) = (&base, &x, &weights);
            scope.spawn(move || {
                let row = row % 5;
                let mut inputs = vec![
                    json!({ "name": "input0", "datatype": "FP32", "shape": [1, 8], "data": x[row * 8..row * 8 + 8] }),
                ];
                inputs.extend(weights.iter().enumerate().map(|(i, a)| tensor(&format!("input{}", i + 1), a)));
                let answer = post(&format!("{base}/v2/models/mlp/infer"), &json!({ "inputs": inputs })).unwrap();
                assert_eq!(answer["outputs"][0]["shape"], json!([1, 3]));
            });
        }
    });
    let mut metrics = ureq::get(format!("{base}/metrics")).call()?;
    let metrics = metrics.body_mut().read_to_string()?;
    for line in metrics.lines().filter(|l| l.starts_with("pjrt_serve_batch_size_") && !l.contains("bucket")) {
        println!("  {line}");
    }
    let count = metrics.lines().find(|l| l.starts_with("pjrt_serve_batch_size_count{model=\"mlp\"}")).unwrap();
    let executions: f64 = count.rsplit(' ').next().unwrap().parse()?;
    println!("mlp: 8 requests in {executions} executions; executables compiled: {}", server.models()[1].executables());
    assert!(executions <= 8.0);

    stop.send(()).ok();
    runtime.block_on(serving)??;
    Ok(())
}
