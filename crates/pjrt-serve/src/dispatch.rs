//! What the HTTP and gRPC front ends share: finding a model, its queue, the wait for the
//! device, the run off the async runtime, the metrics of each request, and the models'
//! statistics.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

use crate::budget::Reservation;
use crate::error::ServeError;
use crate::model::ServedModel;
use crate::protocol::{Check, HeldRequest, InputHeader, OutputTensor, SharedMemoryRef};
use crate::state::{Entry, NotServed, Pending, Shared};
use crate::statistics::{Answered, Execution, Phases, VersionStatistics};

/// A model found, its queue and its batcher (for a batched model).
pub(crate) struct Found {
    pub model: Arc<ServedModel>,
    pub queue: Arc<Semaphore>,
    pub batcher: Option<mpsc::Sender<Pending>>,
}

/// The model `params` names (`name`, optional `version`: empty is any), or 404.
pub(crate) fn find(shared: &Shared, params: &HashMap<String, String>) -> Result<Found, ServeError> {
    let name = params.get("name").map(String::as_str).unwrap_or_default();
    let version = params.get("version").map(String::as_str).filter(|v| !v.is_empty());
    find_model(shared, name, version)
}

/// The model `name` (at `version`, if given) and its queue, or 404 in Triton's words
/// (`Request for unknown model: ...`), then ours; 503 for a model whose first load is under way.
pub(crate) fn find_model(shared: &Shared, name: &str, version: Option<&str>) -> Result<Found, ServeError> {
    let models = shared.models.read().unwrap_or_else(|e| e.into_inner());
    let Some(entry) = models.get(name) else {
        let not_served = shared.not_served.lock().unwrap_or_else(|e| e.into_inner());
        return Err(match not_served.get(name) {
            Some(NotServed::Loading) => ServeError::Unavailable(format!(
                "Request for unknown model: '{name}' has no available versions (it is loading: try again once it is \
                 ready)"
            )),
            Some(NotServed::Unavailable(reason)) => ServeError::NotFound(format!(
                "Request for unknown model: '{name}' has no available versions (it is UNAVAILABLE: {reason})"
            )),
            None => unknown_model(name, &models),
        });
    };
    if let Some(version) = version {
        if version != entry.model.version() {
            return Err(ServeError::NotFound(format!(
                "Request for unknown model: '{name}' version {version} is not found (it serves version {})",
                entry.model.version()
            )));
        }
    }
    Ok(Found { model: entry.model.clone(), queue: entry.queue.clone(), batcher: entry.batcher.clone() })
}

/// A model the server does not know, in Triton's words (`Request for unknown model: 'NAME' is
/// not found`), with the models it serves.
pub(crate) fn unknown_model(name: &str, models: &BTreeMap<String, Entry>) -> ServeError {
    let served = if models.is_empty() {
        "this server serves no model".to_string()
    } else {
        format!("served models: {}", models.keys().map(String::as_str).collect::<Vec<_>>().join(", "))
    };
    ServeError::NotFound(format!("Request for unknown model: '{name}' is not found ({served})"))
}

/// Decodes a request off the async threads: `decode` is handed the check each declared input
/// passes before its data is decoded (its name, datatype and shape against the model's, then
/// its bytes taken from the server's budget, unless they stay in the body:
/// [`InputHeader::in_body`]). Whatever `decode` owns (the body) is dropped when it returns, and
/// the body's share of the budget is released then, unless an input keeps a slice of it: then
/// the body's share stays taken as long as the request's reservation (which such a body holds:
/// [`crate::budget::hold`]). An input in shared memory is read from its region by the check,
/// its bytes taken of the budget first.
pub(crate) async fn decode_off_runtime<T: Send + 'static>(
    shared: &Arc<Shared>,
    model: &Arc<ServedModel>,
    reservation: &Arc<Reservation>,
    decode: impl FnOnce(&mut Check<'_>) -> Result<T, ServeError> + Send + 'static,
) -> Result<T, ServeError> {
    let (shared, model, reservation) = (shared.clone(), model.clone(), reservation.clone());
    tokio::task::spawn_blocking(move || {
        let mut in_body = false;
        let decoded = decode(&mut |input| {
            check_declared(&model, input)?;
            if input.in_body {
                in_body = true;
                return Ok(None);
            }
            reservation.take(input.bytes, &format!("input {:?}", input.name))?;
            match input.shared_memory {
                Some(place) => Ok(Some(shared.shared_memory.read(place)?.into())),
                None => Ok(None),
            }
        });
        if !in_body {
            reservation.release_body();
        }
        decoded
    })
    .await
    .map_err(|e| ServeError::task("decoding", e))?
}

/// Checks an input a request declares against the model's, before its data is decoded: the
/// name, datatype and shape (as [`ServedModel::arrange`] does again with the data).
pub(crate) fn check_declared(model: &ServedModel, input: &InputHeader<'_>) -> Result<(), ServeError> {
    let bad = |m: String| ServeError::BadRequest(format!("model {:?}: {m}", model.name()));
    let Some((index, spec)) = model.inputs().iter().enumerate().find(|(_, s)| s.name == input.name) else {
        let names: Vec<&str> = model.inputs().iter().map(|s| s.name.as_str()).collect();
        return Err(bad(format!("it has no input {:?} (its inputs: {})", input.name, names.join(", "))));
    };
    if input.datatype != spec.datatype {
        return Err(bad(format!("input {:?} is {}, but the model takes {}", spec.name, input.datatype, spec.datatype)));
    }
    let fits = input.shape.len() == spec.shape.len()
        && input.shape.iter().zip(&spec.shape).all(|(&d, &want)| want < 0 || d == want);
    if !fits {
        return Err(bad(format!(
            "input {:?} has shape {:?}, but the model takes {:?} (-1: any size)",
            spec.name, input.shape, spec.shape
        )));
    }
    model.signatures().check_dims(index, &spec.name, input.shape).map_err(bad)
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
/// (bounded), the run on a blocking thread; records its success (with its execution's phases,
/// for the statistics).
pub(crate) async fn run(
    shared: &Arc<Shared>,
    found: &Found,
    permit: OwnedSemaphorePermit,
    request: HeldRequest,
    arrived: Instant,
) -> Result<Vec<OutputTensor>, ServeError> {
    let model = found.model.clone();
    let inputs = model.arrange_held(request.inputs)?;
    if let Some(batcher) = &found.batcher {
        // (An unbatched request's outputs are checked by ServedModel::infer.)
        model.check_wanted(&request.outputs)?;
        let (rows, key) = model.batch_rows(&inputs)?;
        let (reply, answer) = tokio::sync::oneshot::channel();
        let pending = Pending {
            inputs,
            rows,
            key,
            wanted: request.outputs,
            binary_default: request.binary_data_output,
            reply,
            arrived,
            enqueued: Instant::now(),
        };
        batcher.try_send(pending).map_err(|e| {
            ServeError::Unavailable(match e {
                mpsc::error::TrySendError::Full(_) => {
                    format!("model {:?}'s batch queue is full: try again later", model.name())
                }
                mpsc::error::TrySendError::Closed(_) => format!("model {:?} is being unloaded", model.name()),
            })
        })?;
        // Held until the answer: the queue bound counts requests in the batcher too. If this
        // future is dropped (the client went away), the batcher sees the reply closed.
        let _permit = permit;
        return match tokio::time::timeout(shared.options.queue_timeout, answer).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(ServeError::Internal("the batcher stopped before answering".into())),
            Err(_) => Err(ServeError::Unavailable(format!(
                "the request was not answered within {:?}: try again later",
                shared.options.queue_timeout
            ))),
        };
    }
    let queued = Instant::now();
    // A new shape compiles before the request takes a device slot, not holding one.
    crate::compile::prepare(shared, &model, model.signature(&inputs)).await?;
    let device = tokio::time::timeout(shared.options.queue_timeout, shared.devices.acquire())
        .await
        .map_err(|_| {
            ServeError::Unavailable(format!(
                "the request waited {:?} for the device without getting it: try again later",
                shared.options.queue_timeout
            ))
        })?
        .map_err(|_| ServeError::Unavailable("the server is shutting down".into()))?;
    let queue = queued.elapsed();
    let (wanted, binary_default) = (request.outputs, request.binary_data_output);
    let runner = model.clone();
    let replica = device.replica;
    // The device and queue permits go with the work: a client that disconnects now does not
    // free the device before the plugin is done with it.
    let (outputs, phases) = tokio::task::spawn_blocking(move || {
        let _held = (device, permit);
        let _span =
            tracing::info_span!("serve_request", model = runner.name(), queue_ms = queue.as_secs_f64() * 1e3).entered();
        let mut phases = Phases::default();
        runner.infer_held(inputs, &wanted, binary_default, replica, &mut phases).map(|outputs| (outputs, phases))
    })
    .await
    .map_err(|e| ServeError::task("inference", e))??;
    // (An unbatched model's request is one inference of batch size 1, as Triton counts those
    // of a model without max_batch_size.)
    let answered = [Answered { inferences: 1, queue, total: arrived.elapsed() }];
    shared.metrics.executed(
        model.name(),
        model.version(),
        &Execution { replica, batch_size: 1, phases, answered: &answered },
    );
    Ok(outputs)
}

/// [`run`], with the outputs the request asks for in shared memory written there (their regions
/// found before it runs): the outputs, and for each one where it went (its data then empty).
pub(crate) async fn run_placing(
    shared: &Arc<Shared>,
    found: &Found,
    permit: OwnedSemaphorePermit,
    request: HeldRequest,
    arrived: Instant,
) -> Result<(Vec<OutputTensor>, Vec<Option<SharedMemoryRef>>), ServeError> {
    let places = shared.shared_memory.outputs(&request.outputs)?;
    let mut outputs = run(shared, found, permit, request, arrived).await?;
    if places.is_empty() {
        let none = vec![None; outputs.len()];
        return Ok((outputs, none));
    }
    tokio::task::spawn_blocking(move || {
        let placed = places.write(&mut outputs)?;
        Ok((outputs, placed))
    })
    .await
    .map_err(|e| ServeError::task("writing to shared memory", e))?
}

/// Counts a request to `model` that failed (or was refused for a full queue, or waited too
/// long).
pub(crate) fn record_failure(shared: &Shared, model: &ServedModel, error: &ServeError, arrived: Instant) {
    shared.metrics.failed(model.name(), model.version(), error, arrived.elapsed());
}

/// One model version's statistics, as the routes list them.
pub(crate) struct ModelStatistics {
    /// The model.
    pub name: String,
    /// Its version.
    pub version: String,
    /// What it did.
    pub stats: VersionStatistics,
}

/// The statistics of the model versions a request names: every one when `name` is empty, every
/// version of `name` when `version` is empty; a 404 when there is none. (Which versions there
/// are: [`crate::statistics`].)
pub(crate) fn statistics(shared: &Shared, name: &str, version: &str) -> Result<Vec<ModelStatistics>, ServeError> {
    let mut found: BTreeMap<(String, String), VersionStatistics> = shared.metrics.statistics();
    {
        let models = shared.models.read().unwrap_or_else(|e| e.into_inner());
        for entry in models.values() {
            let key = (entry.model.name().to_string(), entry.model.version().to_string());
            found.entry(key).or_default();
        }
    }
    let known: Vec<String> = found.keys().map(|(n, v)| format!("{n} (version {v})")).collect();
    let listed: Vec<ModelStatistics> = found
        .into_iter()
        .filter(|((n, v), _)| (name.is_empty() || n == name) && (version.is_empty() || v == version))
        .map(|((name, version), stats)| ModelStatistics { name, version, stats })
        .collect();
    if listed.is_empty() && !name.is_empty() {
        let what =
            if version.is_empty() { format!("model {name:?}") } else { format!("model {name:?} version {version:?}") };
        return Err(ServeError::NotFound(format!(
            "{what} is not served and has no statistics (models: {})",
            if known.is_empty() { "none".to_string() } else { known.join(", ") }
        )));
    }
    Ok(listed)
}
