//! `pjrt-serve`: a model server for `jax.export` models on any PJRT plugin, without Python,
//! speaking the Open Inference Protocol (KServe v2, as NVIDIA Triton does) over HTTP/REST,
//! with Triton's binary tensor data and model repository extensions, and over gRPC as Triton's
//! `inference.GRPCInferenceService` ([`Server::serve_grpc`], [`grpc`]).
//!
//! A [`Server`] holds a client and the models loaded onto it ([`Server::load`], from
//! [`ModelConfig`]s: a model repository folder or `NAME=PATH` specs); [`Server::router`] is its
//! HTTP service (axum), [`Server::serve`] runs it on a listener until a shutdown signal, then
//! drains the requests in flight.
//!
//! | route | what |
//! |---|---|
//! | `GET /v2/health/live`, `/v2/health/ready` | 200 while the server runs |
//! | `GET /v2` | the server's name, version and extensions |
//! | `GET /v2/models/NAME[/versions/V]` | a model's inputs and outputs (datatype, shape, `-1` for symbolic dimensions) |
//! | `GET /v2/models/NAME[/versions/V]/ready` | 200 when the model is loaded |
//! | `POST /v2/models/NAME[/versions/V]/infer` | run it: JSON tensors, or binary ones after `Inference-Header-Content-Length` bytes of JSON |
//! | `POST /v2/repository/index`, `/v2/repository/models/NAME/load`, `.../unload` | the repository extension (load and unload with [`ServerOptions::model_control`]) |
//! | `GET /metrics` | Prometheus metrics |
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

mod batching;
mod budget;
mod compile;
pub mod config;
mod datatype;
mod devices;
mod dispatch;
mod error;
pub mod grpc;
mod http;
mod listen;
pub mod metrics;
mod model;
pub mod protocol;
mod shapes;
#[cfg(feature = "tls")]
mod tls;

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use pjrt_client::Client;
use pjrt_formats::compile_cache::CompileCache;
use tokio::sync::Semaphore;

pub use config::ModelConfig;
pub use datatype::Datatype;
pub use error::ServeError;
pub use model::{ServedModel, TensorSpec};
#[cfg(feature = "tls")]
pub use tls::TlsConfig;

/// The server's limits and settings.
///
/// ```
/// let options = pjrt_serve::ServerOptions::default();
/// assert_eq!(options.max_body_bytes, 64 << 20);
/// assert_eq!(options.max_queue, 64);
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ServerOptions {
    /// The largest request body taken (413 beyond).
    pub max_body_bytes: usize,
    /// How many requests of one model may wait or run at once; one more is answered 503 at once.
    pub max_queue: usize,
    /// How long a request may wait for the device before it is answered 503.
    pub queue_timeout: Duration,
    /// A bearer token every request must carry (`Authorization: Bearer TOKEN`, the scheme in
    /// any case), if set.
    pub token: Option<String>,
    /// With a token: the health routes (`/v2/health/live`, `/v2/health/ready`, gRPC
    /// `ServerLive` and `ServerReady`) and `/metrics` answer without it, for Kubernetes probes
    /// and Prometheus scrapers. Off by default.
    pub open_health_and_metrics: bool,
    /// The repository folder `/v2/repository/models/NAME/load` reads models from, if any.
    pub repository: Option<PathBuf>,
    /// Whether clients may load and unload models (Triton's `--model-control-mode explicit`).
    /// Off by default, as in Triton: the load and unload calls answer 403 (gRPC
    /// `PERMISSION_DENIED`); the repository index is always served.
    pub model_control: bool,
    /// Where the server writes what it does not tell clients: the whole error of a model that
    /// did not load (with its paths), which clients get without paths. `None`: nowhere but
    /// `tracing` (a `WARN` event).
    pub log: Option<fn(&str)>,
    /// The compile cache executables are loaded from and kept in, if any.
    pub compile_cache: Option<PathBuf>,
    /// How many executions may run at once, over all devices (default: the host's cores; PJRT
    /// clients are thread-safe, and a CPU plugin runs concurrent executions side by side).
    pub concurrent_executions: usize,
    /// How many devices serve each model (the client's first ones), fed from one queue per
    /// model; the client needs that many (`cpu_device_count` on a CPU plugin).
    pub replicas: usize,
    /// The server's budget of request bytes in flight: bodies as they arrive and the input
    /// tensors decoded from them, until their answers are sent. A request that does not fit
    /// while others hold the budget is answered 503 at once (413 if it could never fit).
    pub max_inflight_bytes: usize,
    /// How many connections the HTTP and gRPC ports hold at once, together; more wait in the
    /// listen backlog until one closes.
    pub max_connections: usize,
    /// How long a connection may take to send a request's head (HTTP/1) or its preface
    /// (HTTP/2) before it is closed; an idle HTTP/1 keep-alive connection is closed after as
    /// long.
    pub header_timeout: Duration,
    /// How long a request's body may take to arrive whole (408, gRPC `DEADLINE_EXCEEDED`
    /// after), and how long an answer may wait for the client to read it before the connection
    /// is closed.
    pub body_timeout: Duration,
    /// Serve HTTPS and gRPC over TLS with this certificate (feature `tls`).
    #[cfg(feature = "tls")]
    pub tls: Option<TlsConfig>,
}

impl Default for ServerOptions {
    fn default() -> ServerOptions {
        ServerOptions {
            max_body_bytes: 64 << 20,
            max_queue: 64,
            queue_timeout: Duration::from_secs(30),
            token: None,
            open_health_and_metrics: false,
            repository: None,
            model_control: false,
            log: None,
            compile_cache: None,
            concurrent_executions: std::thread::available_parallelism().map_or(1, |n| n.get()),
            replicas: 1,
            max_inflight_bytes: 512 << 20,
            max_connections: 512,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(60),
            #[cfg(feature = "tls")]
            tls: None,
        }
    }
}

impl ServerOptions {
    /// With a bearer token.
    pub fn with_token(mut self, token: impl Into<String>) -> ServerOptions {
        self.token = Some(token.into());
        self
    }

    /// With a queue bound per model.
    pub fn with_max_queue(mut self, max_queue: usize) -> ServerOptions {
        self.max_queue = max_queue;
        self
    }

    /// With a body size bound.
    pub fn with_max_body_bytes(mut self, max_body_bytes: usize) -> ServerOptions {
        self.max_body_bytes = max_body_bytes;
        self
    }

    /// With a budget of request bytes in flight.
    ///
    /// ```
    /// let options = pjrt_serve::ServerOptions::default().with_max_inflight_bytes(64 << 20);
    /// assert_eq!(options.max_inflight_bytes, 64 << 20);
    /// ```
    pub fn with_max_inflight_bytes(mut self, bytes: usize) -> ServerOptions {
        self.max_inflight_bytes = bytes;
        self
    }

    /// Serving each model on the client's first `replicas` devices.
    pub fn with_replicas(mut self, replicas: usize) -> ServerOptions {
        self.replicas = replicas.max(1);
        self
    }

    /// With a repository folder for the load and unload calls.
    pub fn with_repository(mut self, repository: impl Into<PathBuf>) -> ServerOptions {
        self.repository = Some(repository.into());
        self
    }

    /// With model control on: clients may load and unload the repository's models.
    ///
    /// ```
    /// assert!(!pjrt_serve::ServerOptions::default().model_control);
    /// assert!(pjrt_serve::ServerOptions::default().with_model_control(true).model_control);
    /// ```
    pub fn with_model_control(mut self, on: bool) -> ServerOptions {
        self.model_control = on;
        self
    }

    /// Writes `line` to the server's log ([`ServerOptions::log`], and a `tracing` event).
    pub(crate) fn log(&self, line: &str) {
        tracing::warn!("{line}");
        if let Some(log) = self.log {
            log(line);
        }
    }
}

/// A loaded model and its queue.
pub(crate) struct Entry {
    pub model: Arc<ServedModel>,
    /// Permits for the requests waiting or running: `max_queue` of them.
    pub queue: Arc<Semaphore>,
    /// The batcher requests go to, for a batched model.
    pub batcher: Option<tokio::sync::mpsc::Sender<batching::Pending>>,
}

pub(crate) struct Shared {
    pub client: Client,
    pub options: ServerOptions,
    pub models: RwLock<BTreeMap<String, Entry>>,
    /// Models that did not load, with why (the repository index reports them).
    pub failed: Mutex<BTreeMap<String, String>>,
    /// The execution slots of the devices ([`ServerOptions::concurrent_executions`] over
    /// [`ServerOptions::replicas`]).
    pub devices: Arc<devices::DevicePool>,
    pub metrics: metrics::Metrics,
    /// Places for connections ([`ServerOptions::max_connections`]), shared by both ports.
    pub connections: Arc<Semaphore>,
    /// The bytes of requests in flight ([`ServerOptions::max_inflight_bytes`]).
    pub budget: budget::Budget,
    /// Compiles for requests' shapes run one at a time.
    pub compiling: Semaphore,
}

/// A model server: a client, its models, its limits. Cheap to clone (shared state).
#[derive(Clone)]
pub struct Server {
    shared: Arc<Shared>,
}

impl Server {
    /// A server of no models yet on `client`.
    pub fn new(client: Client, options: ServerOptions) -> Server {
        let devices = devices::DevicePool::new(options.replicas, options.concurrent_executions);
        let connections = Arc::new(Semaphore::new(options.max_connections.clamp(1, Semaphore::MAX_PERMITS)));
        Server {
            shared: Arc::new(Shared {
                client,
                connections,
                budget: budget::Budget::new(options.max_inflight_bytes),
                compiling: Semaphore::new(1),
                options,
                models: RwLock::new(BTreeMap::new()),
                failed: Mutex::new(BTreeMap::new()),
                devices,
                metrics: metrics::Metrics::default(),
            }),
        }
    }

    /// Loads (or reloads) a model: reads it, uploads its weights, compiles a static one. A
    /// reload replaces the model for new requests; those in flight finish on the old one.
    /// Blocks while it compiles.
    pub fn load(&self, config: ModelConfig) -> Result<(), ServeError> {
        let name = config.name.clone();
        let cache = match &self.shared.options.compile_cache {
            Some(dir) => Some(
                CompileCache::open(dir)
                    .map_err(|e| ServeError::Load { model: name.clone(), message: e.to_string() })?,
            ),
            None => None,
        };
        match ServedModel::load(&self.shared.client, config, cache, self.shared.options.replicas) {
            Ok(model) => {
                let model = Arc::new(model);
                let max_queue = self.shared.options.max_queue;
                let batcher =
                    model.batching().map(|_| batching::start(model.clone(), Arc::downgrade(&self.shared), max_queue));
                let entry = Entry { model, queue: Arc::new(Semaphore::new(max_queue)), batcher };
                self.shared.models.write().unwrap_or_else(|e| e.into_inner()).insert(name.clone(), entry);
                self.shared.failed.lock().unwrap_or_else(|e| e.into_inner()).remove(&name);
                Ok(())
            }
            Err(e) => {
                self.record_failure(name, &e);
                Err(e)
            }
        }
    }

    /// Loads every model of a repository folder: the errors of those that did not load (the
    /// others are served).
    pub fn load_repository(&self, root: &std::path::Path) -> Result<Vec<ServeError>, ServeError> {
        let mut errors = Vec::new();
        for config in config::read_repository(root)? {
            let loaded = match config {
                Ok(config) => self.load(config),
                // (Server::load records the models that fail to load; here, the folders that
                // are not models at all.)
                Err(e) => {
                    if let ServeError::Load { model, .. } = &e {
                        self.record_failure(model.clone(), &e);
                    }
                    Err(e)
                }
            };
            errors.extend(loaded.err());
        }
        Ok(errors)
    }

    /// Keeps why model `name` did not load, for the repository index: without the server's
    /// paths (the caller has the whole error).
    fn record_failure(&self, name: String, e: &ServeError) {
        let reason = error::without_paths(&e.to_string());
        self.shared.failed.lock().unwrap_or_else(|e| e.into_inner()).insert(name, reason);
    }

    /// Stops serving a model (requests in flight finish); false if there was none.
    pub fn unload(&self, name: &str) -> bool {
        self.shared.models.write().unwrap_or_else(|e| e.into_inner()).remove(name).is_some()
    }

    /// The models served now.
    pub fn models(&self) -> Vec<Arc<ServedModel>> {
        let models = self.shared.models.read().unwrap_or_else(|e| e.into_inner());
        models.values().map(|e| e.model.clone()).collect()
    }

    /// The HTTP service.
    pub fn router(&self) -> axum::Router {
        http::router(self.shared.clone())
    }

    /// Serves on `listener` until `shutdown` completes, then finishes the requests in flight;
    /// over TLS when the options have a certificate.
    pub async fn serve(
        &self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        listen::serve(listener, self.router(), self.port(false), shutdown).await
    }

    /// How a port of this server serves.
    fn port(&self, http2_only: bool) -> listen::Port {
        let options = &self.shared.options;
        listen::Port {
            connections: self.shared.connections.clone(),
            header_timeout: options.header_timeout,
            body_timeout: options.body_timeout,
            http2_only,
            #[cfg(feature = "tls")]
            tls: options.tls.as_ref().map(TlsConfig::server_config),
        }
    }
}

impl Server {
    /// Serves the gRPC service (`inference.GRPCInferenceService`, what `tritonclient.grpc`
    /// speaks) on `listener` until `shutdown` completes, then finishes the calls in flight.
    pub async fn serve_grpc(
        &self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        let service = grpc::GrpcService { shared: self.shared.clone() };
        listen::serve(listener, service, self.port(true), shutdown)
            .await
            .map_err(|e| ServeError::Internal(format!("the gRPC server failed: {e}")))
    }
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("models", &self.models()).finish_non_exhaustive()
    }
}
