//! The CLI's own error: what a `pjrt` command can fail with. The libraries' errors are wrapped
//! unchanged (their messages already say what to do); `ui::report_error` adds the hints.

/// An error of a `pjrt` command.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A PJRT call, plugin load or client operation failed.
    #[error(transparent)]
    Client(#[from] pjrt_client::Error),
    /// Reading or writing a file format (`.npy`, `.mlir`, artifacts, ...) failed.
    #[error(transparent)]
    Formats(#[from] pjrt_formats::Error),
    /// The arguments do not fit together, or do not fit the program or the files they name
    /// (clap checks each one alone); the message says what to change.
    #[error("invalid argument: {0}")]
    Usage(String),
    /// `pjrt capi install`: a library to copy is missing, or a file could not be written.
    #[error(transparent)]
    CapiInstall(#[from] pjrt::install::InstallError),
    /// A command's results could not be written to stdout (its reader has gone away, or the
    /// write failed); [`crate::main_with_args`] ends quietly in the first case.
    #[error(transparent)]
    Stdout(#[from] crate::out::StdoutError),
    /// `pjrt serve`: a model did not load, or the server failed.
    #[cfg(feature = "serve")]
    #[error(transparent)]
    Serve(#[from] pjrt_serve::ServeError),
}

impl Error {
    /// The client's error, when this is one (also inside a file-format error).
    pub fn client(&self) -> Option<&pjrt_client::Error> {
        match self {
            Error::Client(e) => Some(e),
            Error::Formats(e) => e.client(),
            _ => None,
        }
    }

    /// The message of a usage error or of a library's invalid argument.
    pub fn invalid_argument(&self) -> Option<&str> {
        match self {
            Error::Usage(m) | Error::Client(pjrt_client::Error::InvalidArgument(m)) => Some(m),
            Error::Formats(e) => e.invalid_argument(),
            _ => None,
        }
    }

    /// Prefixes the message of a usage or invalid-argument error with `context` (say, which
    /// input it is about); other errors are returned as they are.
    pub fn context(self, context: impl std::fmt::Display) -> Self {
        match self {
            Error::Usage(m) | Error::Client(pjrt_client::Error::InvalidArgument(m)) => {
                Error::Usage(format!("{context}: {m}"))
            }
            Error::Formats(e) => Error::Formats(e.context(context)),
            other => other,
        }
    }
}

/// A safetensors file could not be read: a file-format error.
impl From<pjrt_formats::safetensors::SafetensorsError> for Error {
    fn from(e: pjrt_formats::safetensors::SafetensorsError) -> Self {
        Error::Formats(e.into())
    }
}

/// A `.npy` file could not be read: a file-format error.
impl From<pjrt_formats::npy::NpyError> for Error {
    fn from(e: pjrt_formats::npy::NpyError) -> Self {
        Error::Formats(e.into())
    }
}

/// Finding or installing a plugin failed: kept as the client's error, as the library keeps it.
impl From<pjrt_plugins::Error> for Error {
    fn from(e: pjrt_plugins::Error) -> Self {
        Error::Client(e.into())
    }
}

/// The result of a `pjrt` command.
pub type Result<T> = std::result::Result<T, Error>;
