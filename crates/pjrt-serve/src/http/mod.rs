//! The HTTP/REST routes of the Open Inference Protocol (and Triton's extensions) over the
//! shared state.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use bytes::Bytes;
use serde_json::{json, Value};

use crate::budget::{self, Budgeted, Chunks, Held};
use crate::error::ServeError;
use crate::metrics::Loaded;
use crate::model::TensorSpec;
use crate::protocol::{
    check_bools, decode_checked, decode_header, error_body, infer_response_parts, short_binary, short_header,
    unclaimed, Header, InferRequest, EXTENSIONS,
};
use crate::state::Shared;
use crate::{auth, control, dispatch, repository};

mod shared_memory;

type AppState = State<Arc<Shared>>;

/// The header that gives the JSON part's length in a binary tensor data body.
const HEADER_LENGTH: &str = "inference-header-content-length";

fn respond(status: u16, content_type: &'static str, body: Vec<u8>) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

fn json_response(value: Value) -> Response {
    respond(200, "application/json", value.to_string().into_bytes())
}

/// An error's answer: its status, `{"error": message}`, and a `WWW-Authenticate` challenge
/// for a missing token.
impl IntoResponse for ServeError {
    fn into_response(self) -> Response {
        let mut response = respond(self.status(), "application/json", error_body(&self.to_string()));
        if matches!(self, ServeError::Unauthorized) {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

pub(crate) fn router(shared: Arc<Shared>) -> Router {
    let model_routes = |prefix: &str| {
        Router::new()
            .route(prefix, get(model_metadata))
            .route(&format!("{prefix}/ready"), get(model_ready))
            .route(&format!("{prefix}/config"), get(model_config))
            .route(&format!("{prefix}/infer"), post(infer))
    };
    Router::new()
        .route("/v2/health/live", get(|| async { json_response(json!({ "live": true })) }))
        .route("/v2/health/ready", get(server_ready))
        .route("/v2", get(server_metadata))
        .merge(model_routes("/v2/models/{name}"))
        .merge(model_routes("/v2/models/{name}/versions/{version}"))
        .route("/v2/repository/index", post(repository_index))
        .route("/v2/repository/models/{name}/load", post(repository_load))
        .route("/v2/repository/models/{name}/unload", post(repository_unload))
        .route("/metrics", get(metrics))
        .route("/v2/models/stats", get(|State(shared): AppState| async move { statistics(&shared, "", "") }))
        .route("/v2/models/{name}/stats", get(model_statistics))
        .route("/v2/models/{name}/versions/{version}/stats", get(model_statistics))
        .merge(shared_memory::routes())
        .fallback(|request: Request| async move {
            let e = ServeError::NotFound(format!(
                "{} {} is not a route of this server (the Open Inference Protocol's, its extensions {}, /metrics)",
                request.method(),
                request.uri().path(),
                EXTENSIONS.join(", ")
            ));
            unread(request.headers(), e.into_response())
        })
        .layer(middleware::from_fn_with_state(shared.clone(), guard))
        .with_state(shared)
}

/// Refuses, before anything is read of their bodies, requests without the bearer token (when
/// the server has one; the health routes and `/metrics` may be left open) and requests that
/// declare a body over the limit.
async fn guard(State(shared): AppState, request: Request, next: Next) -> Response {
    let open = shared.options.open_health_and_metrics
        && request.method() == axum::http::Method::GET
        && matches!(request.uri().path(), "/v2/health/live" | "/v2/health/ready" | "/metrics");
    if !open && !auth::authorized(&shared.options, request.headers().get(header::AUTHORIZATION)) {
        return unread(request.headers(), ServeError::Unauthorized.into_response());
    }
    let declared = request.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > shared.options.max_body_bytes as u64) {
        let message = format!(
            "the body is {} bytes, over this server's limit of {} (--max-body-mib)",
            declared.unwrap_or(0),
            shared.options.max_body_bytes
        );
        return unread(request.headers(), ServeError::TooLarge(message).into_response());
    }
    if request.uri().path().ends_with("/infer") {
        // (The infer route reads its body itself, after it has found the model and a place in
        // its queue.)
        return next.run(request).await;
    }
    // The other routes take small bodies (`{}`), read here so that the connection stays usable
    // after an answer that ignores them.
    let (parts, body) = request.into_parts();
    let declared = declared.and_then(|n| usize::try_from(n).ok());
    let mut body = Budgeted::new(body, shared.budget.reservation(), SMALL_BODY, shared.options.body_timeout);
    match budget::read_all(&mut body, declared).await {
        Ok(bytes) => next.run(Request::from_parts(parts, Body::from(bytes))).await,
        Err(e) => unread(&parts.headers, e.into_response()),
    }
}

/// The most a request to a route other than infer may send.
const SMALL_BODY: usize = 64 << 10;

/// An answer given without reading the request's body: the connection closes after it (the
/// rest of the body is not read), and says so, so that an HTTP/1.1 client does not send its
/// next request on it. (HTTP/2 has no such header: its stream is reset.)
pub(crate) fn unread(request: &HeaderMap, mut response: Response) -> Response {
    let empty = request.get(header::CONTENT_LENGTH).is_some_and(|v| v.as_bytes() == b"0")
        || (request.get(header::CONTENT_LENGTH).is_none() && request.get(header::TRANSFER_ENCODING).is_none());
    if !empty {
        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

async fn server_metadata() -> Response {
    json_response(json!({
        "name": "pjrt-serve",
        "version": env!("CARGO_PKG_VERSION"),
        "extensions": EXTENSIONS,
    }))
}

fn specs(list: &[TensorSpec]) -> Value {
    list.iter().map(|s| json!({ "name": s.name, "datatype": s.datatype.name(), "shape": s.shape })).collect()
}

async fn model_metadata(
    State(shared): AppState,
    Path(params): Path<HashMap<String, String>>,
) -> Result<Response, ServeError> {
    let dispatch::Found { model, .. } = dispatch::find(&shared, &params)?;
    Ok(json_response(json!({
        "name": model.name(),
        "versions": [model.version()],
        "platform": format!("pjrt_{}", shared.client.platform_name()),
        "inputs": specs(model.inputs()),
        "outputs": specs(model.outputs()),
    })))
}

async fn model_config(
    State(shared): AppState,
    Path(params): Path<HashMap<String, String>>,
) -> Result<Response, ServeError> {
    let dispatch::Found { model, .. } = dispatch::find(&shared, &params)?;
    Ok(json_response(crate::model_config::to_json(&crate::model_config::of(&shared, &model))))
}

/// `{"ready": true}`, or 503 `{"ready": false, "error": which models are not}`.
async fn server_ready(State(shared): AppState) -> Response {
    match repository::server_ready(&shared) {
        Ok(()) => json_response(json!({ "ready": true })),
        Err(why) => respond(503, "application/json", json!({ "ready": false, "error": why }).to_string().into_bytes()),
    }
}

/// 200 `{"name", "ready": true}`; a model of the index that is not ready (loading, failed,
/// unloaded) 503 `{"name", "ready": false, "error"}` (KServe's status; Triton's clients read
/// any status but 200 as not ready); an unknown one 404.
async fn model_ready(
    State(shared): AppState,
    Path(params): Path<HashMap<String, String>>,
) -> Result<Response, ServeError> {
    let name = params.get("name").map(String::as_str).unwrap_or_default();
    let version = params.get("version").map(String::as_str).filter(|v| !v.is_empty());
    Ok(match repository::model_ready(&shared, name, version)? {
        None => json_response(json!({ "name": name, "ready": true })),
        Some(state) => {
            let mut why = format!("Model version not ready: '{name}' is {}", state.state());
            if !state.reason().is_empty() {
                why = format!("{why} ({})", state.reason());
            }
            let body = json!({ "name": name, "ready": false, "error": why });
            respond(503, "application/json", body.to_string().into_bytes())
        }
    })
}

async fn infer(State(shared): AppState, Path(params): Path<HashMap<String, String>>, request: Request) -> Response {
    let arrived = Instant::now();
    let (parts, body) = request.into_parts();
    let found = match dispatch::find(&shared, &params) {
        Ok(found) => found,
        Err(e) => return unread(&parts.headers, e.into_response()),
    };
    let mut read = false;
    match run_infer(&shared, &found, &parts.headers, body, arrived, &mut read).await {
        Ok(response) => response,
        Err(e) => {
            dispatch::record_failure(&shared, &found.model, &e, arrived);
            let response = e.into_response();
            if read {
                response
            } else {
                unread(&parts.headers, response)
            }
        }
    }
}

/// Runs an inference request: its model found, the headers, the queue and the budget checked
/// before its body is read (within the budget, as it arrives), then decoded off the async
/// runtime straight into its tensors (each one's bytes taken of the budget from its declared
/// shape before it is decoded). `read` says whether the body was read.
async fn run_infer(
    shared: &Arc<Shared>,
    found: &dispatch::Found,
    headers: &HeaderMap,
    body: Body,
    arrived: Instant,
    read: &mut bool,
) -> Result<Response, ServeError> {
    if let Some(encoding) = headers.get(header::CONTENT_ENCODING) {
        if encoding.as_bytes() != b"identity" {
            return Err(ServeError::BadRequest(format!(
                "Content-Encoding {encoding:?} is not supported: send the body uncompressed"
            )));
        }
    }
    let json_length = match headers.get(HEADER_LENGTH) {
        None => None,
        Some(v) => Some(
            v.to_str()
                .ok()
                .and_then(|s| s.trim().parse::<usize>().ok())
                .ok_or_else(|| ServeError::BadRequest(format!("{HEADER_LENGTH} must be a byte count, not {v:?}")))?,
        ),
    };
    // The queue first: a full one answers at once, before any work on the body.
    let model = &found.model;
    let permit = dispatch::admit(shared, model, found.queue.clone())?;
    let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
    let reservation = shared.budget.reservation();
    if let Some(n) = declared {
        shared.budget.check_room(n, "the request's body")?;
    }
    let mut body = Budgeted::new(body, reservation.clone(), shared.options.max_body_bytes, shared.options.body_timeout);
    let request = match json_length {
        // JSON only: the body whole, its `data` decoded straight into each tensor's bytes.
        None => {
            let bytes = budget::read_all(&mut body, declared).await?;
            *read = true;
            drop(body);
            dispatch::decode_off_runtime(shared, model, &reservation, move |check| decode_checked(&bytes, None, check))
                .await?
        }
        // Binary tensor data: the JSON header first, then the rest of the body read straight
        // into the binary inputs' own bytes (each frame copied once, not buffered whole first).
        Some(n) => {
            let (json, first) = budget::read_until(&mut body, declared, Some(n)).await?;
            if json.len() < n {
                *read = true;
                return Err(short_header(n, json.len()));
            }
            let binary_len = declared.map(|d| d.saturating_sub(n));
            let header = dispatch::decode_off_runtime(shared, model, &reservation, move |check| {
                decode_header(&json, binary_len, check)
            })
            .await?;
            let request = read_binary(&mut body, first, header).await?;
            *read = true;
            drop(body);
            reservation.release_body();
            request
        }
    };
    let id = request.id.clone();
    let (outputs, placed) = dispatch::run_placing(shared, found, permit, request.into(), arrived).await?;
    // The outputs' bytes go out as they were downloaded, after the JSON.
    let (parts, header_length) = infer_response_parts(model.name(), model.version(), id.as_deref(), outputs, &placed);
    let content_type = if header_length.is_some() { "application/octet-stream" } else { "application/json" };
    // The request's bytes stay taken of the budget until its answer is sent.
    let mut response = Response::new(Body::new(Held::new(Chunks::new(parts), reservation)));
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Some(n) = header_length {
        response.headers_mut().insert(HEADER_LENGTH, HeaderValue::from(n));
    }
    Ok(response)
}

/// Reads the rest of a body, after its JSON header (`first`: what of it came with the header's
/// last frame), straight into the binary inputs of `header`, in order: each frame's bytes are
/// copied once, into the tensor they belong to. Their byte counts were checked (and taken of
/// the budget) with the header.
async fn read_binary<B>(body: &mut Budgeted<B>, first: Bytes, header: Header) -> Result<InferRequest, ServeError>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let Header { mut request, binary } = header;
    for &(i, bytes) in &binary {
        request.inputs[i].data.reserve_exact(bytes);
    }
    let (mut next, mut extra) = (0, 0usize);
    let mut data = first;
    loop {
        let mut rest = &data[..];
        while !rest.is_empty() {
            // The next input with bytes to come, if any.
            while binary.get(next).is_some_and(|&(i, bytes)| request.inputs[i].data.len() == bytes) {
                next += 1;
            }
            let Some(&(i, bytes)) = binary.get(next) else {
                extra += rest.len();
                break;
            };
            let tensor = &mut request.inputs[i].data;
            let n = (bytes - tensor.len()).min(rest.len());
            tensor.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
        }
        match budget::next_data(body).await? {
            Some(frame) => data = frame,
            None => break,
        }
    }
    if let Some(&(i, bytes)) = binary.iter().find(|&&(i, bytes)| request.inputs[i].data.len() < bytes) {
        let input = &request.inputs[i];
        return Err(short_binary(&input.name, bytes, input.data.len()));
    }
    if extra > 0 {
        return Err(unclaimed(extra));
    }
    for &(i, _) in &binary {
        let input = &request.inputs[i];
        check_bools(&input.name, input.datatype, &input.data)?;
    }
    Ok(request)
}

async fn repository_index(State(shared): AppState, body: Bytes) -> Result<Response, ServeError> {
    let ready_only = control::http_index_ready(&body)?;
    // (As Triton's: a version when there is one, a reason when there is one.)
    let index = repository::index(&shared, ready_only).into_iter().map(|m| {
        let mut entry = json!({ "name": m.name, "state": m.state });
        if let Some(version) = m.version {
            entry["version"] = version.into();
        }
        if !m.reason.is_empty() {
            entry["reason"] = m.reason.into();
        }
        entry
    });
    Ok(json_response(Value::Array(index.collect())))
}

/// A load, with Triton's `{"parameters": {"config": "<JSON model config>"}}` if given.
async fn repository_load(
    State(shared): AppState,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Response, ServeError> {
    repository::check_model_control(&shared)?;
    let config = control::load_config(&name, control::http_params(&body, "load")?)?;
    repository::load_by_name(shared, name, config).await?;
    Ok(respond(200, "application/json", b"{}".to_vec()))
}

async fn repository_unload(
    State(shared): AppState,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Response, ServeError> {
    repository::check_model_control(&shared)?;
    control::unload_params(control::http_params(&body, "unload")?)?;
    repository::unload_by_name(&shared, &name)?;
    Ok(respond(200, "application/json", b"{}".to_vec()))
}

async fn metrics(State(shared): AppState) -> Response {
    let loaded: Vec<Loaded> = {
        let models = shared.models.read().unwrap_or_else(|e| e.into_inner());
        models
            .values()
            .map(|e| Loaded {
                name: e.model.name().to_string(),
                version: e.model.version().to_string(),
                executables: e.model.executables(),
                pending: shared.options.max_queue.saturating_sub(e.queue.available_permits()),
            })
            .collect()
    };
    respond(200, "text/plain; version=0.0.4", shared.metrics.render_loaded(&loaded).into_bytes())
}

/// Triton's statistics extension: `GET /v2/models[/NAME[/versions/V]]/stats`.
fn statistics(shared: &Shared, name: &str, version: &str) -> Result<Response, ServeError> {
    let listed = dispatch::statistics(shared, name, version)?;
    let stats: Vec<Value> = listed.iter().map(|m| m.stats.json(&m.name, &m.version)).collect();
    Ok(json_response(json!({ "model_stats": stats })))
}

async fn model_statistics(
    State(shared): AppState,
    Path(params): Path<HashMap<String, String>>,
) -> Result<Response, ServeError> {
    let param = |key: &str| params.get(key).map(String::as_str).unwrap_or_default();
    statistics(&shared, param("name"), param("version"))
}
