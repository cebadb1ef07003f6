//! `pjrt-serve`: a model server for `jax.export` models (and `.mlir`, `.mlirbc` programs and AOT
//! artifacts of `pjrt compile`) on any PJRT plugin, without Python,
//! speaking the Open Inference Protocol (KServe v2, as NVIDIA Triton does) over HTTP/REST,
//! with Triton's binary tensor data, model repository, model configuration and statistics
//! extensions and its metric names, and over gRPC as Triton's
//! `inference.GRPCInferenceService` ([`Server::serve_grpc`], [`grpc`]) beside the standard
//! health service.
//!
//! A [`Server`] holds a client and the models loaded onto it ([`Server::load`], from
//! [`ModelConfig`]s: a model repository folder or `NAME=PATH` specs); [`Server::router`] is its
//! HTTP service (axum), [`Server::serve`] runs it on a listener until a shutdown signal, then
//! drains the requests in flight.
//!
//! | route | what |
//! |---|---|
//! | `GET /v2/health/live` | 200 `{"live": true}` while the server runs |
//! | `GET /v2/health/ready` | 200 `{"ready": true}`, or 503 `{"ready": false, "error"}` while a model loads or after one failed to load ([`ServerOptions::strict_readiness`]) |
//! | `GET /v2` | the server's name, version and extensions |
//! | `GET /v2/models/NAME[/versions/V]` | a model's inputs and outputs (datatype, shape, `-1` for symbolic dimensions) |
//! | `GET /v2/models/NAME[/versions/V]/ready` | 200 `{"name", "ready": true}`; 503 `{"ready": false}` while it loads, after it failed or was unloaded; 404 for a model the server does not know |
//! | `GET /v2/models/NAME[/versions/V]/config` | its configuration as Triton's `ModelConfig` (`max_batch_size`, `input`/`output` with `data_type` and `dims`, `dynamic_batching`, `instance_group`) |
//! | `POST /v2/models/NAME[/versions/V]/infer` | run it: JSON tensors, or binary ones after `Inference-Header-Content-Length` bytes of JSON |
//! | `POST /v2/repository/index` | every model with its state: `READY`, `LOADING`, `UNAVAILABLE` and why (`unloaded` for one a client unloaded) |
//! | `POST /v2/repository/models/NAME/load`, `.../unload` | model control ([`ServerOptions::model_control`]): a load may carry Triton's `{"parameters": {"config": "<JSON model config>"}}`, used in place of the folder's `config.json` |
//! | `GET /v2/models[/NAME[/versions/V]]/stats` | Triton's statistics extension: per model version, requests (success, fail, queue, compute input/infer/output: counts and nanoseconds), inferences, executions, per batch size |
//! | `GET /metrics` | Prometheus metrics: ours (`pjrt_serve_*`) and Triton's (`nv_inference_*`, labels `model` and `version`) |
//! | `GET /v2/systemsharedmemory[/region/NAME]/status`, `POST /v2/systemsharedmemory/region/NAME/register` (`{"key", "offset", "byte_size"}`), `POST /v2/systemsharedmemory[/region/NAME]/unregister` | Triton's system shared memory extension ([`ServerOptions::shared_memory`]): regions of `/dev/shm` objects that an input or output names (parameters `shared_memory_region`, `shared_memory_offset`, `shared_memory_byte_size`) to be read from or written to instead of the body |
//!
//! Every request is bounded: its body ([`ServerOptions::max_body_bytes`], 413 beyond), its
//! model's queue ([`ServerOptions::max_queue`], 503 at once when full), the server's budget of
//! request bytes in flight ([`ServerOptions::max_inflight_bytes`]: bodies as they arrive and
//! input tensors before they are decoded, 503 at once when full), its body's arrival
//! ([`ServerOptions::body_timeout`]) and its wait for the device
//! ([`ServerOptions::queue_timeout`], 503); the model, the queue and the budget are checked
//! before the body is read. Connections are bounded too ([`ServerOptions::max_connections`],
//! [`ServerOptions::header_timeout`]). A wrong name, datatype, shape or byte count is a 400
//! whose message names it. A request whose client disconnects while it waits leaves the queue.
//! A model the server does not know is answered in Triton's words (`Request for unknown model:
//! 'NAME' is not found`), a load that fails says `failed to load 'NAME'`.
//!
//! The gRPC port also has the standard health service, `grpc.health.v1.Health` ([`grpc::health`]):
//! `Check` answers `SERVING` while the server is ready, for Kubernetes' gRPC probes.
//!
//! ```
//! use pjrt_serve::{ModelConfig, Server, ServerOptions};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
//! let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
//! let server = Server::new(client, ServerOptions::default());
//! let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/jax_export/jax-0.10.2/cnn/model.jaxexport");
//! server.load(ModelConfig::new("cnn", model))?;
//! assert_eq!(server.models()[0].inputs()[3].shape, [2, 8, 8, 3]);
//!
//! let runtime = tokio::runtime::Runtime::new()?;
//! let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
//! let url = format!("http://{}/v2/models/cnn/ready", listener.local_addr()?);
//! let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
//! let serving = runtime.spawn({
//!     let server = server.clone();
//!     async move { server.serve(listener, async { let _ = stopped.await; }).await }
//! });
//! assert_eq!(ureq::get(&url).call()?.status(), 200);
//! stop.send(()).unwrap(); // (a real server waits for Ctrl-C: tokio::signal::ctrl_c())
//! runtime.block_on(serving)??;
//! # Ok(()) }
//! ```

mod error;
mod datatype;
pub mod protocol;
pub mod config;
mod shapes;
mod statistics;
mod model;
#[cfg(feature = "tls")]
mod tls;
mod options;
mod budget;
mod shared_memory;
mod devices;
pub mod metrics;
mod state;
mod auth;
mod compile;
mod batching;
mod dispatch;
mod repository;
mod control;
mod model_config;
mod listen;
mod http;
pub mod grpc;
mod server;

pub use config::ModelConfig;
pub use datatype::Datatype;
pub use error::ServeError;
pub use model::{ServedModel, TensorSpec};
pub use options::ServerOptions;
pub use server::Server;
#[cfg(feature = "tls")]
pub use tls::TlsConfig;
