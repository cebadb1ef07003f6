//! The server's shared state: its client, options, models and their queues, and the limits
//! every request draws on (devices, connections, the budget of bytes in flight).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};

use pjrt_client::Client;
use tokio::sync::Semaphore;

use crate::model::ServedModel;
use crate::options::ServerOptions;
use crate::{batching, budget, devices, metrics};

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
