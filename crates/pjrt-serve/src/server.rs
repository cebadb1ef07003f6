//! The server: loading and unloading models, and serving its HTTP and gRPC ports.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex, RwLock};

use pjrt_client::Client;
use pjrt_formats::compile_cache::CompileCache;
use tokio::sync::Semaphore;

use crate::config::{self, ModelConfig};
use crate::error::{self, ServeError};
use crate::model::ServedModel;
use crate::options::ServerOptions;
use crate::state::{Entry, Shared};
#[cfg(feature = "tls")]
use crate::tls::TlsConfig;
use crate::{batching, budget, devices, grpc, http, listen, metrics};

/// A model server: a client, its models, its limits. Cheap to clone (shared state).
#[derive(Clone)]
pub struct Server {
    pub(crate) shared: Arc<Shared>,
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
