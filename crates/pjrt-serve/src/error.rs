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
    /// A body or tensor larger than the server takes (HTTP 413, gRPC `RESOURCE_EXHAUSTED`).
    #[error("{0}")]
    TooLarge(String),
    /// A request's body did not arrive in time (HTTP 408, gRPC `DEADLINE_EXCEEDED`).
    #[error("{0}")]
    TimedOut(String),
    /// A call this server does not allow as it runs, such as loading a model without model
    /// control (HTTP 403, gRPC `PERMISSION_DENIED`).
    #[error("{0}")]
    Forbidden(String),
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
            ServeError::Forbidden(_) => 403,
            ServeError::TimedOut(_) => 408,
            ServeError::TooLarge(_) => 413,
            ServeError::NotFound(_) => 404,
            ServeError::Unavailable(_) => 503,
            ServeError::Load { .. } | ServeError::Internal(_) => 500,
        }
    }
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
