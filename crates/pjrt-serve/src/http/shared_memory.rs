//! Triton's system shared memory routes: `GET v2/systemsharedmemory[/region/NAME]/status`,
//! `POST v2/systemsharedmemory/region/NAME/register` (`{"key", "offset", "byte_size"}`),
//! `POST v2/systemsharedmemory[/region/NAME]/unregister`.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use bytes::Bytes;
use serde::Deserialize;
use serde_json::json;

use super::{json_response, AppState};
use crate::error::ServeError;
use crate::state::Shared;

/// The routes, to merge into the server's.
pub(super) fn routes() -> Router<Arc<Shared>> {
    Router::new()
        .route("/v2/systemsharedmemory/status", get(|State(shared): AppState| async move { status(&shared, "") }))
        .route(
            "/v2/systemsharedmemory/region/{name}/status",
            get(|State(shared): AppState, Path(name): Path<String>| async move { status(&shared, &name) }),
        )
        .route("/v2/systemsharedmemory/region/{name}/register", post(register))
        .route(
            "/v2/systemsharedmemory/unregister",
            post(|State(shared): AppState| async move { unregister(&shared, "") }),
        )
        .route(
            "/v2/systemsharedmemory/region/{name}/unregister",
            post(|State(shared): AppState, Path(name): Path<String>| async move { unregister(&shared, &name) }),
        )
}

fn status(shared: &Shared, name: &str) -> Result<Response, ServeError> {
    let regions = shared.shared_memory.status(name)?;
    let list: Vec<_> = regions
        .into_iter()
        .map(|r| json!({ "name": r.name, "key": r.key, "offset": r.offset, "byte_size": r.byte_size }))
        .collect();
    Ok(json_response(list.into()))
}

/// A register request's body.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RegisterBody {
    key: String,
    #[serde(default)]
    offset: u64,
    byte_size: u64,
}

async fn register(State(shared): AppState, Path(name): Path<String>, body: Bytes) -> Result<Response, ServeError> {
    let body: RegisterBody = serde_json::from_slice(&body).map_err(|e| {
        ServeError::BadRequest(format!(
            "the register request's body must be {{\"key\": string, \"offset\": bytes, \"byte_size\": bytes}}: {e}"
        ))
    })?;
    shared.shared_memory.register(&name, &body.key, body.offset, body.byte_size)?;
    Ok(json_response(json!({})))
}

fn unregister(shared: &Shared, name: &str) -> Result<Response, ServeError> {
    shared.shared_memory.unregister(name)?;
    Ok(json_response(json!({})))
}
