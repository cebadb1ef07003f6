//! A load benchmark of gRPC `ModelInfer` with raw inputs (a measurement, not a check; `pjrt
//! bench serve` speaks HTTP only):
//!
//! ```text
//! cargo bench -p pjrt-serve --bench grpc_load
//! ```
//!
//! The symbolic MLP (`mlp_batch`) at `ROWS` rows of 8 FP32 (default 65536: 2 MiB per request,
//! as `raw_input_contents`), at 1 and 16 clients, each client one HTTP/2 connection sending
//! its requests back to back; prints requests per second and MiB of input per second.

use std::time::{Duration, Instant};

use pjrt_formats::npy::NpyArray;
use pjrt_serve::grpc::messages::{InferInputTensor, ModelInferRequest};
use pjrt_serve::{ModelConfig, Server, ServerOptions};
use prost::Message as _;

// The integration tests' server harness and HTTP/2 client, shared with this benchmark.
#[allow(dead_code)]
#[path = "../tests/serve/grpc_client.rs"]
mod grpc_client;
#[allow(dead_code)]
#[path = "../tests/serve/harness.rs"]
mod harness;

use crate::harness::{client, data, npy, Running};

/// `requests` calls of `message` (encoded, framed) on one connection; panics on a failed one.
async fn client_loop(address: String, message: bytes::Bytes, requests: usize) {
    let tcp = tokio::net::TcpStream::connect(&address).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    let (h2, connection) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let mut h2 = h2.ready().await.unwrap();
    for _ in 0..requests {
        let request = http::Request::post(format!("http://{address}/inference.GRPCInferenceService/ModelInfer"))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(())
            .unwrap();
        let (response, mut send) = h2.send_request(request, false).unwrap();
        send.send_data(message.clone(), true).unwrap();
        let (parts, mut body) = response.await.unwrap().into_parts();
        let mut got = 0;
        while let Some(chunk) = body.data().await {
            let chunk = chunk.unwrap();
            got += chunk.len();
            let _ = body.flow_control().release_capacity(chunk.len());
        }
        let trailers = body.trailers().await.unwrap().unwrap_or_default();
        let status = trailers.get("grpc-status").or_else(|| parts.headers.get("grpc-status"));
        assert_eq!(status.and_then(|s| s.to_str().ok()), Some("0"), "{trailers:?} {parts:?}");
        assert!(got > 0);
        h2 = h2.ready().await.unwrap();
    }
}

fn main() {
    let rows: usize = std::env::var("ROWS").ok().and_then(|r| r.parse().ok()).unwrap_or(65536);
    let requests: usize = std::env::var("REQUESTS").ok().and_then(|r| r.parse().ok()).unwrap_or(400);
    let server = Server::new(client(), ServerOptions::default());
    server
        .load(ModelConfig::new("mlp_batch", data("jax_export/symbolic/jax-0.10.2/mlp_batch/model.jaxexport")))
        .unwrap();
    let server = Running::start(server);
    let dir = "jax_export/symbolic/jax-0.10.2/mlp_batch/ok0";
    let mut inputs: Vec<NpyArray> = (0..5).map(|i| npy(&format!("{dir}/in{i}.npy"))).collect();
    // input0 is [rows, 8]: its one row repeated.
    inputs[0].data = inputs[0].data.repeat(rows);
    inputs[0].dims = vec![rows as i64, 8];
    let request = ModelInferRequest {
        model_name: "mlp_batch".into(),
        inputs: inputs
            .iter()
            .enumerate()
            .map(|(i, a)| InferInputTensor {
                name: format!("input{i}"),
                datatype: "FP32".into(),
                shape: a.dims.clone(),
                parameters: Default::default(),
                contents: None,
            })
            .collect(),
        raw_input_contents: inputs.iter().map(|a| a.data.clone()).collect(),
        ..Default::default()
    };
    let encoded = request.encode_to_vec();
    let mut framed = vec![0u8];
    framed.extend_from_slice(&(encoded.len() as u32).to_be_bytes());
    framed.extend_from_slice(&encoded);
    let message = bytes::Bytes::from(framed);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(4).enable_all().build().unwrap();
    let address = server.grpc_address().to_string();
    // Warm up: the shape compiles once.
    runtime.block_on(client_loop(address.clone(), message.clone(), 5));
    let mb = encoded.len() as f64 / (1 << 20) as f64;
    for clients in [1usize, 16] {
        let each = requests / clients;
        let started = Instant::now();
        runtime.block_on(async {
            let tasks: Vec<_> =
                (0..clients).map(|_| tokio::spawn(client_loop(address.clone(), message.clone(), each))).collect();
            for t in tasks {
                t.await.unwrap();
            }
        });
        let seconds = started.elapsed().as_secs_f64().max(Duration::from_micros(1).as_secs_f64());
        let rate = (each * clients) as f64 / seconds;
        eprintln!(
            "grpc ModelInfer, {rows} rows ({mb:.2} MiB a message), {clients} clients: {rate:.1} requests/s, {:.0} MiB/s",
            rate * mb
        );
    }
}
