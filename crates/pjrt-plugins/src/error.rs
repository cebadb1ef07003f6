//! What finding or installing a plugin can fail with.

use std::path::PathBuf;

/// An error of finding, verifying or installing a plugin.
///
/// ```
/// let e = pjrt_plugins::resolve(Some("no-such-plugin")).unwrap_err();
/// assert!(matches!(e, pjrt_plugins::Error::NotFound { .. }), "{e}");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No plugin was found where one was looked for.
    #[error(
        "no PJRT plugin found. Looked in:\n{tried}\nSet PJRT_PLUGIN to a plugin's path, or install the default CPU \
         plugin (pjrt_plugins::install)"
    )]
    NotFound {
        /// Every place that was searched, one per line.
        tried: String,
    },
    /// Installing a plugin failed.
    #[error("installing plugin {name} failed: {message}")]
    Install {
        /// What was being installed.
        name: String,
        /// What went wrong and what to do.
        message: String,
    },
    /// A cache folder (or a file in it) that another user could change: what it holds is not
    /// trusted (see the crate's "Trust"). The plugin cache then hashes every time, python's
    /// answer is not remembered, and the compile cache refuses to open.
    #[error(
        "{folder} is not a folder only you can change: {component} {reason}; make it yours and not writable by \
         group or others (chown, chmod go-w), or choose another folder (PJRT_PLUGIN_CACHE, PJRT_CACHE_DIR)"
    )]
    UntrustedFolder {
        /// The folder (or file) that was checked, as given.
        folder: PathBuf,
        /// The resolved path component that failed the check.
        component: PathBuf,
        /// Why: who owns it, or who may write it.
        reason: String,
    },
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    #[cold]
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), source }
    }
}

/// The result of this crate's functions.
pub type Result<T> = std::result::Result<T, Error>;
