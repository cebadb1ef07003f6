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
}

/// The result of a `pjrt` command.
pub type Result<T> = std::result::Result<T, Error>;
