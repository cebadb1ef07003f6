//! [`ArtifactError`]: what is wrong with an AOT artifact's bytes (`crate::artifact` reads them).

use std::path::PathBuf;

/// What is wrong with the bytes of an artifact file ([`crate::artifact::Artifact::from_bytes`], [`crate::artifact::Artifact::read`]).
///
/// ```
/// use pjrt_formats::artifact::{Artifact, ArtifactError};
///
/// let e = Artifact::from_bytes(b"PJRT-AOT\x01\x00").unwrap_err();
/// assert!(matches!(e, pjrt_formats::Error::Artifact(ArtifactError::Truncated { expected: 4, at: 8 })), "{e}");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ArtifactError {
    /// The file at `path` is not a readable artifact; `source` says why.
    #[error("{}: {source}", path.display())]
    InFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        source: Box<ArtifactError>,
    },
    /// The bytes do not start with the artifact magic.
    #[error("not a pjrt artifact: it does not start with `PJRT-AOT`")]
    NotAnArtifact,
    /// Another format version than the one this build reads.
    #[error(
        "artifact format version {version} is not supported (this build reads version {supported}); recompile it \
         with `pjrt compile`"
    )]
    Version {
        /// The version the file says.
        version: u32,
        /// The version this build reads.
        supported: u32,
    },
    /// The header is longer than a reader takes.
    #[error("artifact header is {len} bytes, more than the {limit} allowed")]
    HeaderTooLong {
        /// What the header length field says.
        len: usize,
        /// The longest header read.
        limit: usize,
    },
    /// A header field is out of its range (a flag byte, a count, a target, a string).
    #[error("artifact header: {0}")]
    Header(String),
    /// The file ends before a field that must be there.
    #[error("artifact is truncated: {expected} more bytes expected at offset {at}")]
    Truncated {
        /// The bytes the field needs.
        expected: usize,
        /// Where it starts (in the file, or in the header for header fields).
        at: usize,
    },
    /// The header is complete but no executable follows it.
    #[error("artifact is truncated: it holds no executable")]
    NoExecutable,
    /// The executable's bytes do not match the SHA-256 of the header.
    #[error("artifact is corrupt: the executable's SHA-256 does not match its header")]
    Checksum,
}
