//! The readers' one error type: what was wrong and where in the file (a byte offset; a line and
//! column too for text).

use pjrt_types::StableHloVersion;

/// Why a portable artifact could not be read. Every variant carries the byte offset (from the
/// start of the bytecode) where reading stopped.
///
/// ```
/// let err = pjrt_stablehlo::read_bytecode(b"not bytecode").unwrap_err();
/// assert_eq!(err.offset(), 0);
/// assert!(err.to_string().contains("magic"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The bytes are not well-formed MLIR bytecode (truncated, an index out of range, a bad
    /// encoding). The file is damaged or not a portable artifact: export it again.
    #[error("malformed MLIR bytecode at byte {offset}: {what}; the file is damaged or not a StableHLO portable artifact (export it again)")]
    Malformed {
        /// Byte offset in the bytecode.
        offset: usize,
        /// What was wrong.
        what: String,
    },
    /// Well-formed bytecode using something this reader does not know (a newer bytecode
    /// version, an unknown VHLO attribute or type code, an op outside VHLO and builtin).
    #[error("unsupported MLIR bytecode at byte {offset}: {what}; export with an older JAX/StableHLO target, or update pjrt-stablehlo")]
    Unsupported {
        /// Byte offset in the bytecode.
        offset: usize,
        /// What is not supported.
        what: String,
    },
    /// MLIR text that does not parse: where (line and column from 1, in characters, and the
    /// byte offset) and what was expected there.
    #[error("MLIR text does not parse at line {line}, column {column}: {what}")]
    Syntax {
        /// The line, from 1.
        line: usize,
        /// The column, from 1, in characters.
        column: usize,
        /// The byte offset in the text.
        offset: usize,
        /// What was expected, and what was found.
        what: String,
    },
    /// A size or nesting limit of [`crate::Limits`] was exceeded.
    #[error("MLIR bytecode exceeds a reader limit at byte {offset}: {what}; raise the limit in pjrt_stablehlo::Limits if the file is trusted")]
    Limit {
        /// Byte offset in the bytecode.
        offset: usize,
        /// Which limit.
        what: String,
    },
}

impl Error {
    /// The byte offset where reading stopped.
    ///
    /// ```
    /// let err = pjrt_stablehlo::read_bytecode(b"ML\xefR").unwrap_err();
    /// assert_eq!(err.offset(), 4);
    /// ```
    pub fn offset(&self) -> usize {
        match self {
            Error::Malformed { offset, .. }
            | Error::Unsupported { offset, .. }
            | Error::Limit { offset, .. }
            | Error::Syntax { offset, .. } => *offset,
        }
    }

    pub(crate) fn malformed(offset: usize, what: impl Into<String>) -> Error {
        Error::Malformed { offset, what: what.into() }
    }

    pub(crate) fn unsupported(offset: usize, what: impl Into<String>) -> Error {
        Error::Unsupported { offset, what: what.into() }
    }

    pub(crate) fn limit(offset: usize, what: impl Into<String>) -> Error {
        Error::Limit { offset, what: what.into() }
    }

    /// The error with where it happened added to what it says (`in vhlo.convolution_v1`).
    pub(crate) fn within(self, context: &str) -> Error {
        match self {
            Error::Malformed { offset, what } => Error::Malformed { offset, what: format!("{what} (in {context})") },
            Error::Unsupported { offset, what } => {
                Error::Unsupported { offset, what: format!("{what} (in {context})") }
            }
            other => other,
        }
    }

    /// The error of reading an artifact whose producer string is `producer`, told against the
    /// versions this reader reads: outside them (newer than [`crate::NEWEST_READ_VERSION`],
    /// older than [`crate::MINIMUM_VERSION`]), [`Error::Unsupported`] saying so (the file may
    /// be sound); inside, the version is named (the file is damaged, or holds a form of that
    /// version this reader misses: a bug to report).
    pub(crate) fn for_producer(self, producer: &str) -> Error {
        let Some(version) = producer.strip_prefix("StableHLO_v").and_then(StableHloVersion::parse) else {
            return self;
        };
        let (offset, what, malformed) = match self {
            Error::Malformed { offset, what } => (offset, what, true),
            Error::Unsupported { offset, what } => (offset, what, false),
            other => return other,
        };
        let relation = if version > crate::NEWEST_READ_VERSION {
            format!("newer than the newest this reader knows ({})", crate::NEWEST_READ_VERSION)
        } else if version < crate::MINIMUM_VERSION {
            format!("older than the oldest portable artifact version ({})", crate::MINIMUM_VERSION)
        } else {
            let what = format!(
                "{what}; the artifact is StableHLO {version}, a version this reader reads (and is tested on): \
                 if the file is not damaged, it holds a form of {version} this reader misses: please report it"
            );
            return if malformed { Error::Malformed { offset, what } } else { Error::Unsupported { offset, what } };
        };
        Error::Unsupported {
            offset,
            what: format!("{what}, in a StableHLO {version} artifact, {relation}: the file may well be sound"),
        }
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
