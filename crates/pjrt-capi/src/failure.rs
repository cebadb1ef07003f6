//! What a call failed with: a [`Failure`], a status code and a message. The libraries' errors
//! become one here, in one place: their code where they have one, and their message.

use crate::registry::HandleError;
use crate::types::*;

/// What a call failed with: the status it returns.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) code: pjrt_code,
    pub(crate) message: String,
}

/// What a body returns.
pub(crate) type Outcome<T = ()> = Result<T, Failure>;

impl Failure {
    /// A failure of `code`.
    #[cold]
    pub(crate) fn new(code: pjrt_code, message: impl Into<String>) -> Failure {
        Failure { code, message: message.into() }
    }

    /// The caller passed something wrong.
    #[cold]
    pub(crate) fn invalid(message: impl Into<String>) -> Failure {
        Failure::new(PJRT_CODE_INVALID_ARGUMENT, message)
    }

    /// `what: ` before the message.
    #[cold]
    pub(crate) fn context(self, what: impl std::fmt::Display) -> Failure {
        Failure { message: format!("{what}: {}", self.message), ..self }
    }

    /// A refused handle, named: `argument` is the parameter (`model`), `kind` the handle's type.
    #[cold]
    pub(crate) fn handle(error: HandleError, argument: &str, kind: &str) -> Failure {
        Failure::invalid(match error {
            HandleError::Null => format!("{argument} is NULL"),
            HandleError::Foreign => {
                format!("{argument} is not a {kind} (a handle of another kind, or no handle at all)")
            }
            HandleError::Freed => format!("{argument}: this {kind} was freed already"),
        })
    }
}

/// The code of a client error: the plugin's own, or what kind of failure it is.
fn client_code(error: &pjrt_client::Error) -> pjrt_code {
    use pjrt_client::Error as E;
    match error {
        E::Pjrt { code, .. } => code.to_raw().0,
        E::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => PJRT_CODE_NOT_FOUND,
        E::Io { source, .. } if source.kind() == std::io::ErrorKind::PermissionDenied => PJRT_CODE_PERMISSION_DENIED,
        E::Unsupported { .. } => PJRT_CODE_UNIMPLEMENTED,
        E::Plugins(e) => plugins_code(e),
        E::Load { .. } => PJRT_CODE_FAILED_PRECONDITION,
        _ => PJRT_CODE_INVALID_ARGUMENT,
    }
}

fn plugins_code(error: &pjrt_plugins::Error) -> pjrt_code {
    match error {
        pjrt_plugins::Error::NotFound { .. } => PJRT_CODE_NOT_FOUND,
        _ => PJRT_CODE_FAILED_PRECONDITION,
    }
}

impl From<pjrt_client::Error> for Failure {
    #[cold]
    fn from(error: pjrt_client::Error) -> Failure {
        Failure::new(client_code(&error), error.to_string())
    }
}

impl From<pjrt_formats::Error> for Failure {
    #[cold]
    fn from(error: pjrt_formats::Error) -> Failure {
        let code = error.client().map_or(PJRT_CODE_INVALID_ARGUMENT, client_code);
        Failure::new(code, error.to_string())
    }
}

impl From<pjrt_plugins::Error> for Failure {
    #[cold]
    fn from(error: pjrt_plugins::Error) -> Failure {
        Failure::new(plugins_code(&error), error.to_string())
    }
}
