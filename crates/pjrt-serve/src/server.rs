//! The server: its models loaded and unloaded, its HTTP and gRPC ports served.

use std::future::Future;
use std::sync::Arc;

use pjrt_client::Client;

use crate::config::ModelConfig;
use crate::error::ServeError;
use crate::model::ServedModel;
use crate::options::ServerOptions;
use crate::state::Shared;
#[cfg(feature = "tls")]
use crate::tls::TlsConfig;
use crate::{grpc, http, listen, repository};

/// A model server: a client, its models, its limits. Cheap to clone (shared state).
#[derive(Clone)]
pub struct Server {
    shared: Arc<Shared>,
}

impl Server {
    /// A server of no models yet on `client`.
    pub fn new(client: Client, options: ServerOptions) -> Server {
        Server { shared: Arc::new(Shared::new(client, options)) }
    }

    /// Loads (or reloads) a model: reads it, uploads its weights, compiles a static one. A
    /// reload replaces the model for new requests; those in flight finish on the old one (and
    /// a reload that fails leaves the old one served). Blocks while it compiles; meanwhile a
    /// model not served yet is `LOADING` in the repository index and the server is not ready
    /// ([`ServerOptions::strict_readiness`]), and one that fails is `UNAVAILABLE` with why.
    pub fn load(&self, config: ModelConfig) -> Result<(), ServeError> {
        repository::load(&self.shared, config)
    }

    /// Loads every model of a repository folder: the errors of those that did not load (the
    /// others are served).
    pub fn load_repository(&self, root: &std::path::Path) -> Result<Vec<ServeError>, ServeError> {
        repository::load_all(&self.shared, root)
    }

    /// Stops serving a model (requests in flight finish); it stays in the repository index as
    /// `UNAVAILABLE`, reason `unloaded`, which does not keep the server from being ready (nor
    /// does a model that failed to load, once unloaded). False if none was served.
    pub fn unload(&self, name: &str) -> bool {
        repository::unload(&self.shared, name).unwrap_or(false)
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
            .map_err(|e| ServeError::Serve { what: "gRPC", source: std::sync::Arc::new(e) })
    }
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("models", &self.models()).finish_non_exhaustive()
    }
}
