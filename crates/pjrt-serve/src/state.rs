//! The server's shared state: its client, options, models and their queues, and the limits
//! every request draws on (devices, connections, the budget of bytes in flight).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use pjrt_client::Client;
use tokio::sync::{mpsc, oneshot, Semaphore};

use crate::budget::Budget;
use crate::devices::DevicePool;
use crate::error::ServeError;
use crate::metrics::Metrics;
use crate::model::{same_batch, BatchKeyPart, RequestArray, ServedModel};
use crate::options::ServerOptions;
use crate::protocol::{OutputTensor, RequestedOutput};
use crate::shared_memory::Registry;

/// A loaded model and its queue.
pub(crate) struct Entry {
    pub model: Arc<ServedModel>,
    /// Permits for the requests waiting or running: `max_queue` of them.
    pub queue: Arc<Semaphore>,
    /// The batcher requests go to, for a batched model.
    pub batcher: Option<mpsc::Sender<Pending>>,
}

pub(crate) struct Shared {
    pub client: Client,
    pub options: ServerOptions,
    pub models: RwLock<BTreeMap<String, Entry>>,
    /// The models of the repository index that are not served: loading for the first time, or
    /// unavailable and why (the index reports them; the served ones are `READY`).
    pub not_served: Mutex<BTreeMap<String, NotServed>>,
    /// The execution slots of the devices ([`ServerOptions::concurrent_executions`] over
    /// [`ServerOptions::replicas`]).
    pub devices: Arc<DevicePool>,
    pub metrics: Metrics,
    /// Places for connections ([`ServerOptions::max_connections`]), shared by both ports.
    pub connections: Arc<Semaphore>,
    /// The bytes of requests in flight ([`ServerOptions::max_inflight_bytes`]).
    pub budget: Budget,
    /// Compiles for requests' shapes run one at a time.
    pub compiling: Semaphore,
    /// The system shared memory regions clients registered.
    pub shared_memory: Registry,
}

impl Shared {
    /// The state of a server of no models yet on `client`.
    pub fn new(client: Client, options: ServerOptions) -> Shared {
        let devices = DevicePool::new(options.replicas, options.concurrent_executions);
        let connections = Arc::new(Semaphore::new(options.max_connections.clamp(1, Semaphore::MAX_PERMITS)));
        Shared {
            client,
            connections,
            budget: Budget::new(options.max_inflight_bytes),
            compiling: Semaphore::new(1),
            shared_memory: Registry::new(options.shared_memory),
            options,
            models: RwLock::new(BTreeMap::new()),
            not_served: Mutex::new(BTreeMap::new()),
            devices,
            metrics: Metrics::default(),
        }
    }
}

/// Where a model of the repository index stands when it is not served (a served model is
/// `READY`, also while a reload of it is under way: it serves the old one meanwhile).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum NotServed {
    /// Its first load is under way (`LOADING`).
    Loading,
    /// It did not load, and why (without the server's paths), or a client unloaded it
    /// ([`UNLOADED`]) (`UNAVAILABLE`).
    Unavailable(String),
}

/// The reason of a model a client unloaded, as Triton gives it.
pub(crate) const UNLOADED: &str = "unloaded";

impl NotServed {
    /// The state the repository index gives it.
    pub fn state(&self) -> &'static str {
        match self {
            NotServed::Loading => "LOADING",
            NotServed::Unavailable(_) => "UNAVAILABLE",
        }
    }

    /// Why, for the index: empty while it loads.
    pub fn reason(&self) -> &str {
        match self {
            NotServed::Loading => "",
            NotServed::Unavailable(reason) => reason,
        }
    }
}

/// A request waiting to be batched.
/// (Part of its model's queue: the batcher of [`Entry::batcher`] takes it.)
pub(crate) struct Pending {
    /// The inputs, in the model's order.
    pub inputs: Vec<RequestArray>,
    /// Their first dimension.
    pub rows: usize,
    /// Requests batch together only where these agree.
    pub key: Vec<BatchKeyPart>,
    pub wanted: Vec<RequestedOutput>,
    pub binary_default: bool,
    pub reply: oneshot::Sender<Result<Vec<OutputTensor>, ServeError>>,
    pub arrived: Instant,
    pub enqueued: Instant,
}

impl Pending {
    /// Whether this request may run in one batch with `other`: their keys agree, and so do the
    /// inputs every request of a batch gives alike.
    pub fn batches_with(&self, other: &Pending) -> bool {
        same_batch(&self.key, &self.inputs, &other.key, &other.inputs)
    }
}
