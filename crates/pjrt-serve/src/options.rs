//! The server's limits and settings.

use std::path::PathBuf;
use std::time::Duration;

#[cfg(feature = "tls")]
use crate::tls::TlsConfig;

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
    /// `ServerLive`, `ServerReady` and `grpc.health.v1.Health`) and `/metrics` answer without
    /// it, for Kubernetes probes and Prometheus scrapers. Off by default.
    pub open_health_and_metrics: bool,
    /// The repository folder `/v2/repository/models/NAME/load` reads models from, if any.
    pub repository: Option<PathBuf>,
    /// Whether clients may load and unload models (Triton's `--model-control-mode explicit`).
    /// Off by default, as in Triton: the load and unload calls answer 403 (gRPC
    /// `PERMISSION_DENIED`); the repository index is always served.
    pub model_control: bool,
    /// Whether the server is ready only when every model it knows is (Triton's
    /// `--strict-readiness`, on by default): `GET /v2/health/ready`, gRPC `ServerReady` and the
    /// gRPC health service answer not ready while a model loads or after one failed to load (a
    /// model a client unloaded does not count). Off: ready whenever the server runs.
    pub strict_readiness: bool,
    /// Whether same-host clients may register system shared memory regions (Triton's
    /// `--allow-client-shm`) and have inputs read from and outputs written to them. Off by
    /// default: the register and unregister calls answer 403 (gRPC `PERMISSION_DENIED`). A
    /// client that may register a region may have the server read any object under
    /// `/dev/shm` the server's user may open.
    pub shared_memory: bool,
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
            strict_readiness: true,
            shared_memory: false,
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

    /// With strict readiness on (the default) or off: see [`ServerOptions::strict_readiness`].
    ///
    /// ```
    /// assert!(pjrt_serve::ServerOptions::default().strict_readiness);
    /// assert!(!pjrt_serve::ServerOptions::default().with_strict_readiness(false).strict_readiness);
    /// ```
    pub fn with_strict_readiness(mut self, on: bool) -> ServerOptions {
        self.strict_readiness = on;
        self
    }

    /// Lets same-host clients register system shared memory regions
    /// ([`ServerOptions::shared_memory`]).
    ///
    /// ```
    /// assert!(pjrt_serve::ServerOptions::default().with_shared_memory(true).shared_memory);
    /// ```
    pub fn with_shared_memory(mut self, on: bool) -> ServerOptions {
        self.shared_memory = on;
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
