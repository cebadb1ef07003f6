//! The server's one error, [`ServeError`]: each variant answers with one status (HTTP here, the
//! gRPC code from it), and keeps the error it comes from as its source. The front ends convert
//! it once each: `impl IntoResponse for ServeError` (in `http`) and
//! `impl From<ServeError> for tonic::Status` (in `grpc`).

use std::sync::Arc;

/// The error a [`ServeError`] comes from: a library's, kept whole (shared, as one error answers
/// every request of a batch).
pub type Source = Arc<dyn std::error::Error + Send + Sync>;

/// What is wrong with a request body; the message names the field or tensor.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ProtocolError(pub String);

/// What went wrong serving a request or loading a model.
///
/// ```
/// use pjrt_serve::ServeError;
/// let e = ServeError::load("m", "no such file");
/// assert_eq!(e.to_string(), "model \"m\" did not load: no such file");
/// assert_eq!(e.status(), 500);
/// assert!(std::error::Error::source(&e).is_some());
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The request is malformed or does not fit the model (HTTP 400); the message names the
    /// field, input or output.
    #[error("{0}")]
    BadRequest(String),
    /// The request's body is not the protocol's (HTTP 400); the error names the field or tensor.
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    /// The request's input shapes do not fit the model: its refinement or compile for them
    /// failed (HTTP 400).
    #[error("the input shapes do not fit model {model:?}: {source}")]
    Unfit {
        /// The model.
        model: String,
        /// Why: the refinement's or the compiler's error.
        source: Source,
    },
    /// The request's body could not be read: its connection failed (HTTP 400).
    #[error("the request's body could not be read: {0}")]
    BodyRead(#[source] Source),
    /// A missing or wrong bearer token (HTTP 401).
    #[error("a bearer token is required: send `Authorization: Bearer TOKEN`")]
    Unauthorized,
    /// A call this server does not allow as it runs, such as loading a model without model
    /// control (HTTP 403, gRPC `PERMISSION_DENIED`).
    #[error("{0}")]
    Forbidden(String),
    /// No such model or version, or route (HTTP 404).
    #[error("{0}")]
    NotFound(String),
    /// What the request would create exists already, such as a shared memory region of the
    /// same name (HTTP 409, gRPC `ALREADY_EXISTS`).
    #[error("{0}")]
    Conflict(String),
    /// A request's body did not arrive in time (HTTP 408, gRPC `DEADLINE_EXCEEDED`).
    #[error("{0}")]
    TimedOut(String),
    /// A body or tensor larger than the server takes (HTTP 413, gRPC `RESOURCE_EXHAUSTED`).
    #[error("{0}")]
    TooLarge(String),
    /// The model's queue is full, or the request waited in it too long, or the server's budget
    /// of bytes in flight is taken (HTTP 503): try again.
    #[error("{0}")]
    Unavailable(String),
    /// A model could not be loaded (the others are served), or a setting of the server (its
    /// repository, its TLS certificate) could not be read.
    #[error("model {model:?} did not load: {source}")]
    Load {
        /// The model's name (or its folder's; empty for a setting of the server).
        model: String,
        /// Why.
        source: Source,
    },
    /// The plugin failed running a request that was well-formed (HTTP 500): its error.
    #[error("{0}")]
    Run(#[source] Source),
    /// A task of the server (decoding, compiling, running, loading) panicked or was cancelled
    /// (HTTP 500).
    #[error("the {what} task failed: {source}")]
    Task {
        /// Which task.
        what: &'static str,
        /// Its join error.
        source: Source,
    },
    /// A port of the server failed.
    #[error("the {what} server failed: {source}")]
    Serve {
        /// Which port: `HTTP` or `gRPC`.
        what: &'static str,
        /// Its error.
        source: Arc<std::io::Error>,
    },
    /// Something the server itself got wrong (HTTP 500): a model's outputs that do not match
    /// its export, a batcher gone.
    #[error("{0}")]
    Internal(String),
}

impl ServeError {
    /// Model `model` did not load, for `source` (an error, or a message).
    pub fn load(model: impl Into<String>, source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> ServeError {
        ServeError::Load { model: model.into(), source: Arc::from(source.into()) }
    }

    /// The plugin (or the model's runner) failed a well-formed request.
    pub(crate) fn run(source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> ServeError {
        ServeError::Run(Arc::from(source.into()))
    }

    /// A task of the server failed.
    pub(crate) fn task(what: &'static str, source: tokio::task::JoinError) -> ServeError {
        ServeError::Task { what, source: Arc::new(source) }
    }

    /// The HTTP status code it answers with.
    ///
    /// ```
    /// assert_eq!(pjrt_serve::ServeError::BadRequest("no input x".into()).status(), 400);
    /// assert_eq!(pjrt_serve::ServeError::Unavailable("queue full".into()).status(), 503);
    /// ```
    pub fn status(&self) -> u16 {
        match self {
            ServeError::BadRequest(_)
            | ServeError::Protocol(_)
            | ServeError::Unfit { .. }
            | ServeError::BodyRead(_) => 400,
            ServeError::Unauthorized => 401,
            ServeError::Forbidden(_) => 403,
            ServeError::NotFound(_) => 404,
            ServeError::TimedOut(_) => 408,
            ServeError::Conflict(_) => 409,
            ServeError::TooLarge(_) => 413,
            ServeError::Unavailable(_) => 503,
            ServeError::Load { .. }
            | ServeError::Run(_)
            | ServeError::Task { .. }
            | ServeError::Serve { .. }
            | ServeError::Internal(_) => 500,
        }
    }
}

/// An error with what it was about: `{context}: {source}`, the source kept.
#[derive(Debug, thiserror::Error)]
#[error("{context}: {source}")]
pub(crate) struct Context {
    context: String,
    source: Box<dyn std::error::Error + Send + Sync>,
}

/// `source` with what it was about.
pub(crate) fn context(
    context: impl Into<String>,
    source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
) -> Context {
    Context { context: context.into(), source: source.into() }
}

/// `message` with every absolute path cut to its last component (`.../model.jaxexport`):
/// what clients are told of an error, while the server's log keeps the whole message. A path
/// is a run starting with `/` at the start of the message or after a space, quote, bracket or
/// `=`, up to the next space, quote, comma, colon or bracket.
pub(crate) fn without_paths(message: &str) -> String {
    let ends = |c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ',' | ':' | ')' | ']' | '}' | '`');
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    let mut previous: Option<char> = None;
    while let Some(c) = rest.chars().next() {
        let starts = c == '/'
            && previous.is_none_or(|p| p.is_whitespace() || matches!(p, '"' | '\'' | '(' | '[' | '{' | '=' | '`'));
        if starts {
            let len = rest.find(ends).unwrap_or(rest.len());
            let path = rest[..len].trim_end_matches(['.', ';']);
            let last = path.trim_end_matches('/').rsplit('/').next().unwrap_or_default();
            out.push_str(".../");
            out.push_str(last);
            previous = path.chars().last();
            rest = &rest[path.len()..];
        } else {
            out.push(c);
            previous = Some(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn absolute_paths_are_cut_to_their_last_component() {
        let cases = [
            (
                "model \"m\" did not load: /srv/models/m/model.jaxexport: not a jax.export file",
                "model \"m\" did not load: .../model.jaxexport: not a jax.export file",
            ),
            ("reading \"/home/u/repo/x/config.json\" failed", "reading \".../config.json\" failed"),
            ("/a/b holds 0 .jaxexport files.", ".../b holds 0 .jaxexport files."),
            ("see http://host/x and a/b/c and ratio 1/2", "see http://host/x and a/b/c and ratio 1/2"),
            ("(/root/x/), /y", "(.../x), .../y"),
        ];
        for (message, want) in cases {
            assert_eq!(super::without_paths(message), want);
        }
    }
}
