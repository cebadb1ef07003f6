//! Compiling a request's shapes: one compile at a time over the server, off the async runtime,
//! the wait bounded by the queue timeout (what the HTTP and gRPC requests and the batcher share).

use std::sync::Arc;

use crate::error::ServeError;
use crate::model::ServedModel;
use crate::shapes::Signature;
use crate::state::Shared;

/// Makes sure an executable is compiled for `signature` before the request takes a device
/// slot: one compiled at load or for an earlier request, else compiled now (off the async
/// runtime, one compile at a time over the server, the wait bounded by the queue timeout), if
/// the model may compile one more for requests (400 if not).
pub(crate) async fn prepare(shared: &Shared, model: &Arc<ServedModel>, signature: Signature) -> Result<(), ServeError> {
    if model.signatures().is_compiled(&signature) {
        return Ok(());
    }
    let _slot = tokio::time::timeout(shared.options.queue_timeout, shared.compiling.acquire())
        .await
        .map_err(|_| {
            ServeError::Unavailable(format!(
                "the request waited {:?} to compile its shapes without getting to: try again later",
                shared.options.queue_timeout
            ))
        })?
        .map_err(|_| ServeError::Unavailable("the server is shutting down".into()))?;
    // Another request may have compiled it meanwhile.
    if model.signatures().is_compiled(&signature) {
        return Ok(());
    }
    model.signatures().check_room(model.name()).map_err(ServeError::BadRequest)?;
    let compiling = model.clone();
    tokio::task::spawn_blocking(move || compiling.compile_for_requests(&signature))
        .await
        .map_err(|e| ServeError::task("compile", e))??;
    shared.metrics.compiled(model.name());
    Ok(())
}
