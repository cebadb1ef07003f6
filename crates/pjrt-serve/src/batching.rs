//! Dynamic batching: a thread per batched model gathers queued requests whose shapes agree
//! (but for their rows) for up to `max_queue_delay`, up to `max_batch_size` rows, concatenates
//! them along the first dimension, pads with zero rows to the next bucket, runs the batch on
//! the device and splits the outputs back per request. Requests whose client went away are
//! dropped before they run.

use std::collections::VecDeque;
use std::sync::{Arc, Weak};
use std::time::Instant;

use tokio::sync::mpsc;

use crate::error::ServeError;
use crate::model::{select_outputs, BatchKeyPart, RequestArray, ServedModel};
use crate::protocol::OutputTensor;
use crate::state::{Pending, Shared};
use crate::statistics::{Answered, Execution, Phases};

/// Starts the batcher of `model`: the sender requests go to. The thread ends when every sender
/// is gone (the model unloaded or replaced, its last requests answered) or the server is.
pub(crate) fn start(model: Arc<ServedModel>, shared: Weak<Shared>, capacity: usize) -> mpsc::Sender<Pending> {
    let (tx, rx) = mpsc::channel(capacity.max(1));
    let name = format!("pjrt-serve-batch-{}", model.name());
    let spawned = std::thread::Builder::new().name(name).spawn(move || {
        let runtime = match tokio::runtime::Builder::new_current_thread().enable_time().build() {
            Ok(runtime) => runtime,
            Err(e) => return tracing::error!("the batcher of {} did not start: {e}", model.name()),
        };
        runtime.block_on(batch_loop(model, shared, rx));
    });
    if let Err(e) = spawned {
        // The receiver is gone with the closure: requests answer 503 ("not accepting").
        tracing::error!("the batcher thread did not start: {e}");
    }
    tx
}

async fn batch_loop(model: Arc<ServedModel>, shared: Weak<Shared>, mut rx: mpsc::Receiver<Pending>) {
    let Some(config) = model.batching().cloned() else { return };
    let max = config.max_batch_size;
    // Requests received while gathering a batch of other shapes: they lead the next ones.
    let mut held: VecDeque<Pending> = VecDeque::new();
    loop {
        let first = match held.pop_front() {
            Some(p) => p,
            None => match rx.recv().await {
                Some(p) => p,
                None => return,
            },
        };
        if first.reply.is_closed() {
            continue;
        }
        let deadline = first.enqueued + config.max_queue_delay;
        let mut rows = first.rows;
        let mut batch = vec![first];
        let mut i = 0;
        while i < held.len() && rows < max {
            if held[i].batches_with(&batch[0]) && rows + held[i].rows <= max {
                let p = held.remove(i).expect("in range");
                rows += p.rows;
                batch.push(p);
            } else {
                i += 1;
            }
        }
        let mut closed = false;
        while rows < max {
            let now = tokio::time::Instant::now();
            let deadline = tokio::time::Instant::from_std(deadline);
            if now >= deadline {
                break;
            }
            match tokio::time::timeout(deadline - now, rx.recv()).await {
                Ok(Some(p)) if p.batches_with(&batch[0]) && rows + p.rows <= max => {
                    rows += p.rows;
                    batch.push(p);
                }
                Ok(Some(p)) => held.push_back(p),
                Ok(None) => {
                    closed = true;
                    break;
                }
                Err(_) => break,
            }
        }
        // A client that disconnected (or gave up waiting) is not run for.
        batch.retain(|p| !p.reply.is_closed());
        if !batch.is_empty() {
            let Some(shared) = shared.upgrade() else { return };
            run_batch(&model, &shared, batch).await;
        }
        if closed && held.is_empty() {
            return;
        }
    }
}

/// Runs one batch on the device and answers each of its requests.
async fn run_batch(model: &Arc<ServedModel>, shared: &Arc<Shared>, batch: Vec<Pending>) {
    // The batch's inputs, and its shapes compiled (a new one outside the device's slots).
    let assembled = match assemble(model, &batch) {
        Ok(assembled) => {
            crate::compile::prepare(shared, model, model.signature(&assembled.0)).await.map(|()| assembled)
        }
        Err(e) => Err(e),
    };
    let (inputs, bucket) = match assembled {
        Ok(assembled) => assembled,
        Err(e) => {
            for p in batch {
                let _ = p.reply.send(Err(e.clone()));
            }
            return;
        }
    };
    let Ok(device) = shared.devices.acquire().await else {
        for p in batch {
            let _ = p.reply.send(Err(ServeError::Unavailable("the server is shutting down".into())));
        }
        return;
    };
    let started = Instant::now();
    let rows: usize = batch.iter().map(|p| p.rows).sum();
    let mut phases = Phases::default();
    let result = {
        let _span = tracing::info_span!("serve_batch", model = model.name(), requests = batch.len(), rows).entered();
        model.run(inputs, device.replica, &mut phases).and_then(|outputs| {
            let splitting = Instant::now();
            let split = split(outputs, &batch, bucket);
            phases.output += splitting.elapsed();
            split
        })
    };
    let replica = device.replica;
    drop(device);
    match result {
        Ok(per_request) => {
            // Each request's rows are its inferences; the execution's batch size is theirs
            // together (not the bucket it was padded to).
            let answered: Vec<Answered> = batch
                .iter()
                .map(|p| Answered {
                    inferences: p.rows as u64,
                    queue: started.duration_since(p.enqueued),
                    total: p.arrived.elapsed(),
                })
                .collect();
            let execution = Execution { replica, batch_size: rows as u64, phases, answered: &answered };
            shared.metrics.executed(model.name(), model.version(), &execution);
            for (p, outputs) in batch.into_iter().zip(per_request) {
                let _ = p.reply.send(Ok(select_outputs(outputs, &p.wanted, p.binary_default)));
            }
        }
        // (Failures are counted where each request is answered, as unbatched ones are.)
        Err(e) => {
            shared.metrics.execution(model.name(), batch.len(), replica);
            for p in batch {
                let _ = p.reply.send(Err(e.clone()));
            }
        }
    }
}

/// The batch's inputs concatenated and padded to its bucket, and the bucket.
fn assemble(model: &ServedModel, batch: &[Pending]) -> Result<(Vec<RequestArray>, usize), ServeError> {
    let config = model.batching().ok_or_else(|| ServeError::Internal("the model is not batched".into()))?;
    let rows: usize = batch.iter().map(|p| p.rows).sum();
    let bucket = config
        .bucket_for(rows)
        .ok_or_else(|| ServeError::Internal(format!("a batch of {rows} rows is over max_batch_size")))?;
    let mut inputs = Vec::with_capacity(batch[0].inputs.len());
    for (j, part) in batch[0].key.iter().enumerate() {
        let BatchKeyPart::Rows(rest) = part else {
            // The same in every request of the batch (its key says so).
            inputs.push(batch[0].inputs[j].clone());
            continue;
        };
        let element_type = batch[0].inputs[j].element_type();
        let row_bytes = batch[0].inputs[j].data().len() / batch[0].rows;
        let mut data = Vec::with_capacity(row_bytes * bucket);
        for p in batch {
            data.extend_from_slice(p.inputs[j].data());
        }
        // Zero rows up to the bucket: the model's rows are independent (its config says so).
        data.resize(row_bytes * bucket, 0);
        let mut dims = Vec::with_capacity(rest.len() + 1);
        dims.push(bucket as i64);
        dims.extend_from_slice(rest);
        inputs.push(RequestArray::new(element_type, dims, data.into()).map_err(ServeError::Internal)?);
    }
    Ok((inputs, bucket))
}

/// A batch's outputs split back per request.
fn split(outputs: Vec<OutputTensor>, batch: &[Pending], bucket: usize) -> Result<Vec<Vec<OutputTensor>>, ServeError> {
    let mut per_request: Vec<Vec<OutputTensor>> = batch.iter().map(|_| Vec::with_capacity(outputs.len())).collect();
    for output in outputs {
        if output.shape.first() != Some(&(bucket as i64)) {
            return Err(ServeError::Internal(format!(
                "output {:?} has shape {:?}, not {bucket} rows first: the model is not batchable",
                output.name, output.shape
            )));
        }
        let row_bytes = output.data.len() / bucket;
        let mut offset = 0;
        for (p, outputs) in batch.iter().zip(per_request.iter_mut()) {
            let mut shape = output.shape.clone();
            shape[0] = p.rows as i64;
            let data = output.data[offset * row_bytes..(offset + p.rows) * row_bytes].to_vec();
            offset += p.rows;
            outputs.push(OutputTensor {
                name: output.name.clone(),
                datatype: output.datatype,
                shape,
                data,
                binary: false,
            });
        }
    }
    Ok(per_request)
}
