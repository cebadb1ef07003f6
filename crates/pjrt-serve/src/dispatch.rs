//! What the HTTP and gRPC front ends share: finding a model, its queue, the wait for the
//! device, the run off the async runtime, and the metrics of each request.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::ServeError;
use crate::model::ServedModel;
use crate::protocol::{InferRequest, OutputTensor};
use crate::Shared;

/// The model `params` names (`name`, optional `version`: empty is any) and its queue, or 404.
pub(crate) fn find(
    shared: &Shared,
    params: &HashMap<String, String>,
) -> Result<(Arc<ServedModel>, Arc<Semaphore>), ServeError> {
    let name = params.get("name").map(String::as_str).unwrap_or_default();
    let version = params.get("version").map(String::as_str).filter(|v| !v.is_empty());
    find_model(shared, name, version)
}

/// The model `name` (at `version`, if given) and its queue, or 404.
pub(crate) fn find_model(
    shared: &Shared,
    name: &str,
    version: Option<&str>,
) -> Result<(Arc<ServedModel>, Arc<Semaphore>), ServeError> {
    let models = shared.models.read().unwrap_or_else(|e| e.into_inner());
    let Some(entry) = models.get(name) else {
        let names: Vec<&str> = models.keys().map(String::as_str).collect();
        return Err(ServeError::NotFound(format!("no model {name:?} is served (models: {})", names.join(", "))));
    };
    if let Some(version) = version {
        if version != entry.model.version() {
            return Err(ServeError::NotFound(format!(
                "model {name:?} has no version {version:?} (it serves version {})",
                entry.model.version()
            )));
        }
    }
    Ok((entry.model.clone(), entry.queue.clone()))
}

/// A place in the model's queue, or 503 at once when it is full.
pub(crate) fn admit(
    shared: &Shared,
    model: &ServedModel,
    queue: Arc<Semaphore>,
) -> Result<OwnedSemaphorePermit, ServeError> {
    queue.try_acquire_owned().map_err(|_| {
        ServeError::Unavailable(format!(
            "model {:?} has {} requests waiting or running, its most: try again later",
            model.name(),
            shared.options.max_queue
        ))
    })
}

/// Runs an admitted request: its inputs matched to the model's, the wait for the device
/// (bounded), the run on a blocking thread; records its success.
pub(crate) async fn run(
    shared: &Arc<Shared>,
    model: Arc<ServedModel>,
    permit: OwnedSemaphorePermit,
    request: InferRequest,
    arrived: Instant,
) -> Result<Vec<OutputTensor>, ServeError> {
    let inputs = model.arrange(request.inputs)?;
    let queued = Instant::now();
    let device = tokio::time::timeout(shared.options.queue_timeout, shared.device.clone().acquire_owned())
        .await
        .map_err(|_| {
            ServeError::Unavailable(format!(
                "the request waited {:?} for the device without getting it: try again later",
                shared.options.queue_timeout
            ))
        })?
        .map_err(|_| ServeError::Unavailable("the server is shutting down".into()))?;
    let queue_seconds = queued.elapsed().as_secs_f64();
    let (wanted, binary_default) = (request.outputs, request.binary_data_output);
    let runner = model.clone();
    // The device and queue permits go with the work: a client that disconnects now does not
    // free the device before the plugin is done with it.
    let outputs = tokio::task::spawn_blocking(move || {
        let _held = (device, permit);
        runner.infer(inputs, &wanted, binary_default)
    })
    .await
    .map_err(|e| ServeError::Internal(format!("the inference task failed: {e}")))??;
    shared.metrics.batch(model.name(), 1);
    shared.metrics.request(model.name(), true, queue_seconds, arrived.elapsed().as_secs_f64());
    Ok(outputs)
}

/// Counts a request that failed (or was refused for a full queue).
pub(crate) fn record_failure(shared: &Shared, model: &str, error: &ServeError, arrived: Instant) {
    if matches!(error, ServeError::Unavailable(_)) {
        shared.metrics.rejected(model);
    } else {
        shared.metrics.request(model, false, 0.0, arrived.elapsed().as_secs_f64());
    }
}
