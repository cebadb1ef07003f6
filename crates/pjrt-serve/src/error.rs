//! The server's errors, each with the HTTP status it answers with.

/// What went wrong serving a request or loading a model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The request is malformed or does not fit the model (HTTP 400); the message names the
    /// field, input or output.
    #[error("{0}")]
    BadRequest(String),
    /// No such model or version (HTTP 404).
    #[error("{0}")]
    NotFound(String),
    /// The model's queue is full, or the request waited in it too long (HTTP 503): try again.
    #[error("{0}")]
    Unavailable(String),
    /// A missing or wrong bearer token (HTTP 401).
    #[error("a bearer token is required: send `Authorization: Bearer TOKEN`")]
    Unauthorized,
    /// A model could not be loaded; the others are served.
    #[error("model {model:?} did not load: {message}")]
    Load {
        /// The model's name (or its folder's).
        model: String,
        /// Why.
        message: String,
    },
    /// The plugin failed running a request that was well-formed (HTTP 500).
    #[error("{0}")]
    Internal(String),
}

impl ServeError {
    /// The HTTP status code it answers with.
    ///
    /// ```
    /// assert_eq!(pjrt_serve::ServeError::BadRequest("no input x".into()).status(), 400);
    /// assert_eq!(pjrt_serve::ServeError::Unavailable("queue full".into()).status(), 503);
    /// ```
    pub fn status(&self) -> u16 {
        match self {
            ServeError::BadRequest(_) => 400,
            ServeError::Unauthorized => 401,
            ServeError::NotFound(_) => 404,
            ServeError::Unavailable(_) => 503,
            ServeError::Load { .. } | ServeError::Internal(_) => 500,
        }
    }
}
