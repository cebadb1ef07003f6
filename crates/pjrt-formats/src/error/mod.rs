//! The error of this crate: the client's own errors, and the file formats' errors.

use std::path::PathBuf;

mod artifact;
mod binding;
mod jax_export;

pub use artifact::ArtifactError;
pub use binding::BindingError;
pub use jax_export::{InputOrOutput, JaxExportError, LegacyLapackError, Unrunnable};

use crate::npy::NpyError;
use crate::safetensors::SafetensorsError;

/// Every error this crate returns: an error of the client (a plugin call, an argument refused,
/// a file that cannot be read), or of a file format.
///
/// ```
/// use pjrt_formats::npy::NpyArray;
/// let error = NpyArray::from_bytes(b"\x93NUMPY garbage").unwrap_err();
/// let error = pjrt_formats::Error::from(error);
/// assert!(matches!(error, pjrt_formats::Error::Npy(_)));
/// assert!(error.client().is_none());
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An error of the client: from the plugin, or an argument refused before it.
    #[error(transparent)]
    Client(#[from] pjrt_client::Error),
    /// A `.npy` file could not be read or written.
    #[error(transparent)]
    Npy(#[from] NpyError),
    /// A `.safetensors` file could not be read or written.
    #[error(transparent)]
    Safetensors(#[from] SafetensorsError),
    /// An AOT artifact (`pjrt compile`'s file) is malformed.
    #[error(transparent)]
    Artifact(#[from] ArtifactError),
    /// A `jax.export` artifact is malformed, or of a serialization version this reader does not
    /// know; or a model is used in a way it does not allow (another platform, inputs that do not
    /// fit it) or holds something this crate cannot run.
    #[error(transparent)]
    JaxExport(#[from] JaxExportError),
    /// A weights file's tensors could not be bound to a model's arguments
    /// ([`crate::binding::bind`]).
    #[error(transparent)]
    Binding(#[from] BindingError),
    /// There is no default compile cache folder: no `PJRT_CACHE_DIR`, `XDG_CACHE_HOME` or
    /// home folder ([`crate::compile_cache::CompileCache::default_dir`]).
    #[error(
        "there is no compile cache folder (no PJRT_CACHE_DIR, XDG_CACHE_HOME or HOME, and no home in the password \
         database); set PJRT_CACHE_DIR to a folder only you can write"
    )]
    NoCacheFolder,
    /// A shape-polymorphic model's shape assertion failed for the inputs' shapes: the message
    /// is the one JAX gives for them (a constraint broken, a dimension shared by two inputs
    /// with two sizes, a division with a remainder). Give inputs of shapes the model accepts.
    #[error("{message}")]
    ShapeAssertion {
        /// JAX's message, its values filled in.
        message: String,
    },
    /// A shape-polymorphic model could not be made static for the inputs' shapes (a shape
    /// that depends on data, or an op the refiner has no shape rule for).
    #[error(transparent)]
    Refine(pjrt_stablehlo::RefineError),
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A model this crate cannot run: a [`JaxExportError::Unrunnable`].
impl From<Unrunnable> for Error {
    fn from(e: Unrunnable) -> Self {
        Error::JaxExport(e.into())
    }
}

/// Finding or verifying a plugin (or a trusted cache folder) failed: kept as the client's
/// [`pjrt_client::Error::Plugins`], where every plugin error of a program is.
impl From<pjrt_plugins::Error> for Error {
    fn from(e: pjrt_plugins::Error) -> Self {
        Error::Client(e.into())
    }
}

impl Error {
    /// The client's error, when this is one.
    pub fn client(&self) -> Option<&pjrt_client::Error> {
        match self {
            Error::Client(e) => Some(e),
            _ => None,
        }
    }

    /// The PJRT status code, for errors that came from the plugin.
    pub fn code(&self) -> Option<pjrt_client::ErrorCode> {
        self.client().and_then(pjrt_client::Error::code)
    }

    /// The message of an [`pjrt_client::Error::InvalidArgument`], when this is one.
    pub fn invalid_argument(&self) -> Option<&str> {
        match self {
            Error::Client(pjrt_client::Error::InvalidArgument(m)) => Some(m),
            _ => None,
        }
    }

    /// Prefixes the message of an invalid-argument error with `context` (other errors are
    /// returned as they are), e.g. to say which input it is about.
    pub fn context(self, context: impl std::fmt::Display) -> Self {
        match self {
            Error::Client(pjrt_client::Error::InvalidArgument(m)) => Error::invalid(format!("{context}: {m}")),
            other => other,
        }
    }

    #[cold]
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Error::Client(pjrt_client::Error::InvalidArgument(message.into()))
    }

    #[cold]
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Client(pjrt_client::Error::Io { path: path.into(), source })
    }
}
