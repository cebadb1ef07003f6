//! The crate's one error type.

use std::fmt;
use std::path::PathBuf;

use crate::sys;

/// A `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The status code carried by a plugin error (absl's codes).
///
/// Unknown codes from a newer plugin are kept as [`ErrorCode::Other`], never treated as
/// undefined behaviour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// 1
    Cancelled,
    /// 2 (compile-time MLIR failures come back as this)
    Unknown,
    /// 3
    InvalidArgument,
    /// 4
    DeadlineExceeded,
    /// 5
    NotFound,
    /// 6
    AlreadyExists,
    /// 7
    PermissionDenied,
    /// 8
    ResourceExhausted,
    /// 9
    FailedPrecondition,
    /// 10
    Aborted,
    /// 11
    OutOfRange,
    /// 12: the plugin does not implement this call.
    Unimplemented,
    /// 13
    Internal,
    /// 14
    Unavailable,
    /// 15
    DataLoss,
    /// 16
    Unauthenticated,
    /// A code this crate does not know (0 is reported here too: a plugin error should never be OK).
    Other(i32),
}

impl ErrorCode {
    /// Converts the raw C value.
    pub fn from_raw(code: sys::PJRT_Error_Code) -> Self {
        match code.0 {
            1 => Self::Cancelled,
            2 => Self::Unknown,
            3 => Self::InvalidArgument,
            4 => Self::DeadlineExceeded,
            5 => Self::NotFound,
            6 => Self::AlreadyExists,
            7 => Self::PermissionDenied,
            8 => Self::ResourceExhausted,
            9 => Self::FailedPrecondition,
            10 => Self::Aborted,
            11 => Self::OutOfRange,
            12 => Self::Unimplemented,
            13 => Self::Internal,
            14 => Self::Unavailable,
            15 => Self::DataLoss,
            16 => Self::Unauthenticated,
            other => Self::Other(other),
        }
    }

    /// The raw C value.
    pub fn to_raw(self) -> sys::PJRT_Error_Code {
        sys::PJRT_Error_Code(match self {
            Self::Cancelled => 1,
            Self::Unknown => 2,
            Self::InvalidArgument => 3,
            Self::DeadlineExceeded => 4,
            Self::NotFound => 5,
            Self::AlreadyExists => 6,
            Self::PermissionDenied => 7,
            Self::ResourceExhausted => 8,
            Self::FailedPrecondition => 9,
            Self::Aborted => 10,
            Self::OutOfRange => 11,
            Self::Unimplemented => 12,
            Self::Internal => 13,
            Self::Unavailable => 14,
            Self::DataLoss => 15,
            Self::Unauthenticated => 16,
            Self::Other(code) => code,
        })
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Self::Cancelled => "CANCELLED",
            Self::Unknown => "UNKNOWN",
            Self::InvalidArgument => "INVALID_ARGUMENT",
            Self::DeadlineExceeded => "DEADLINE_EXCEEDED",
            Self::NotFound => "NOT_FOUND",
            Self::AlreadyExists => "ALREADY_EXISTS",
            Self::PermissionDenied => "PERMISSION_DENIED",
            Self::ResourceExhausted => "RESOURCE_EXHAUSTED",
            Self::FailedPrecondition => "FAILED_PRECONDITION",
            Self::Aborted => "ABORTED",
            Self::OutOfRange => "OUT_OF_RANGE",
            Self::Unimplemented => "UNIMPLEMENTED",
            Self::Internal => "INTERNAL",
            Self::Unavailable => "UNAVAILABLE",
            Self::DataLoss => "DATA_LOSS",
            Self::Unauthenticated => "UNAUTHENTICATED",
            Self::Other(code) => return write!(f, "code {code}"),
        };
        f.write_str(name)
    }
}

/// Why a plugin could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The file does not exist.
    #[error("no such file")]
    NotFound,
    /// `dlopen` failed (not a shared library, wrong architecture, missing dependency, ...).
    #[error("cannot open it as a shared library: {0}")]
    Open(#[source] libloading::Error),
    /// The library exports no `GetPjrtApi`.
    #[error("it is a shared library but exports no `GetPjrtApi` symbol, so it is not a PJRT plugin")]
    MissingGetPjrtApi,
    /// `GetPjrtApi` returned NULL.
    #[error("`GetPjrtApi` returned NULL")]
    NullApi,
    /// The function table is too small to hold even the base functions.
    #[error("its PJRT_Api table is {struct_size} bytes, too small for a PJRT plugin (at least {min} expected)")]
    TableTooSmall {
        /// The plugin's `PJRT_Api.struct_size`.
        struct_size: usize,
        /// The smallest size this crate accepts.
        min: usize,
    },
    /// The plugin speaks an API version this crate cannot talk to safely.
    #[error("it implements PJRT API {major}.{minor}, which this client cannot use: {reason}")]
    IncompatibleVersion {
        /// The plugin's major version.
        major: i32,
        /// The plugin's minor version.
        minor: i32,
        /// Why.
        reason: &'static str,
    },
    /// `PJRT_Plugin_Initialize` failed.
    #[error("PJRT_Plugin_Initialize failed: {0}")]
    Initialize(#[source] Box<Error>),
}

/// Every error this crate returns.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The plugin returned an error from a call.
    #[error("{function} failed ({code}): {message}{}", DisplayPayloads(payloads))]
    Pjrt {
        /// The C function that failed, e.g. `PJRT_Client_Compile`.
        function: &'static str,
        /// The status code.
        code: ErrorCode,
        /// The plugin's message.
        message: String,
        /// The payloads the plugin attached (`PJRT_Error_ForEachPayload`, 0.99): `(key, value)`
        /// pairs, e.g. a type URL and a serialized proto. Shown after the message the way
        /// absl's `Status::ToString` writes them (` [key='value']`, other bytes as `\xNN`).
        payloads: Vec<(String, Vec<u8>)>,
    },
    /// The plugin does not provide this function: its table is too short, the slot is NULL, or
    /// the plugin's API version predates it.
    #[error(
        "{function} is not supported by this plugin (API {plugin_major}.{plugin_minor}; \
         it was added in 0.{since_minor}). Use a newer plugin, or avoid this call"
    )]
    Unsupported {
        /// The C function, or the feature, that is missing.
        function: &'static str,
        /// The minor version that introduced it.
        since_minor: i32,
        /// The plugin's major version.
        plugin_major: i32,
        /// The plugin's minor version.
        plugin_minor: i32,
    },
    /// A plugin could not be loaded.
    #[error("cannot load PJRT plugin {path}: {source}")]
    Load {
        /// The path that was tried.
        path: PathBuf,
        /// Why it failed.
        #[source]
        source: LoadError,
    },
    /// Finding or installing a plugin failed: the [`pjrt_plugins`] crate's error, with what to
    /// do.
    #[cfg(feature = "plugins")]
    #[error(transparent)]
    Plugins(#[from] pjrt_plugins::Error),
    /// The program was serialized for a StableHLO version outside the range the plugin reads
    /// (its `stablehlo_minimum_version` to `stablehlo_current_version`); refused before
    /// compiling, since the plugin would fail to parse it, or misread it.
    #[error(
        "the program is a StableHLO {program} artifact, but this plugin reads StableHLO {minimum} to {current}: {advice}"
    )]
    ProgramVersion {
        /// The version the program was serialized for.
        program: pjrt_types::StableHloVersion,
        /// The oldest version the plugin reads.
        minimum: pjrt_types::StableHloVersion,
        /// The newest version the plugin reads.
        current: pjrt_types::StableHloVersion,
        /// What to do about it.
        advice: &'static str,
    },
    /// An argument was rejected before it reached the plugin.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The program cannot be written as a StableHLO portable artifact for the version asked
    /// (or the plugin's, when a compile writes a newer artifact for it): an op, attribute or
    /// type that version lacks, named with the version it needs (feature `stablehlo`).
    #[cfg(feature = "stablehlo")]
    #[error("the program cannot be written as a StableHLO portable artifact: {0}")]
    Portable(pjrt_stablehlo::WriteError),
    /// The program's StableHLO (MLIR text or a portable artifact) cannot be read into the IR to
    /// be written again (feature `stablehlo`).
    #[cfg(feature = "stablehlo")]
    #[error("the program's StableHLO cannot be read to be written again: {0}")]
    StableHlo(pjrt_stablehlo::Error),
    /// An object of one plugin was passed to a call of another plugin. Refused before the call:
    /// a plugin reads whatever it is given as its own objects (two CPU plugins in one process
    /// abort on each other's clients). Data moves between plugins through the host
    /// ([`crate::Buffer::copy_to_client`]); programs are compiled again, or serialized and
    /// loaded, on the other plugin.
    #[error(
        "{what} belongs to the plugin {found}, but this call is on the plugin {expected}: objects of one plugin \
         cannot be used with another (move data through the host, e.g. Buffer::copy_to_client)"
    )]
    ForeignObject {
        /// What was passed, e.g. "the executable".
        what: &'static str,
        /// The plugin the call is on.
        expected: PathBuf,
        /// The plugin the object belongs to.
        found: PathBuf,
    },
    /// Memory about to be read in place as `bool` holds a byte other than 0 or 1 (a plugin
    /// stores PRED bytes as it was given them; a DLPack producer may write anything): such a
    /// `bool` is undefined behaviour, so the view is refused. Read the bytes as `u8` instead
    /// (nonzero means true), or copy them: [`crate::Buffer::to_vec`] maps them as numpy does.
    #[error(
        "element {index} of {what} is the byte {byte}, not a bool (0 or 1): read it as u8 (nonzero is true), \
         e.g. as_ndarray::<u8>(), or copy it with Buffer::to_vec::<bool>, which maps nonzero bytes to true"
    )]
    InvalidBool {
        /// What was to be viewed, e.g. "the DLPack tensor".
        what: &'static str,
        /// The first element (in memory order of the view's indices, row-major) that is not 0 or 1.
        index: usize,
        /// Its byte.
        byte: u8,
    },
    /// Memory others may be reading as immutable (host memory a buffer reads in place: shared
    /// bytes, an aligned upload, a read-only mapping, a DLPack tensor its producer marked
    /// read-only) was to be handed out in a form that would let it be written.
    #[error("{what} is read-only: {advice}")]
    ReadOnlyMemory {
        /// Whose memory it is.
        what: &'static str,
        /// What to do instead.
        advice: &'static str,
    },
    /// Registering an XLA FFI handler ([`crate::ffi::register`]) was refused or could not be
    /// proven.
    #[error("registering the XLA FFI handler for the custom call `{target}` on {platform}: {message} ({kind:?})")]
    FfiRegistration {
        /// The custom-call target name.
        target: String,
        /// The XLA platform name, e.g. `Host`.
        platform: String,
        /// Why.
        kind: RegistrationErrorKind,
        /// What happened and what to do.
        message: String,
    },
    /// A provider of built-in handlers ([`crate::ffi::BuiltinProvider`]) cannot supply the
    /// handlers a program calls: pjrt-lapack's, for one, when no LAPACK library loads.
    #[error("{provider}: {message}")]
    BuiltinUnavailable {
        /// The provider's name.
        provider: String,
        /// What failed, and what to do.
        message: String,
    },
    /// A program calls a custom call whose handler comes from a provider of built-in handlers
    /// ([`crate::ffi::BuiltinProvider`]) that is not installed, and the plugin refused it: JAX's
    /// LAPACK kernels (`lapack_*_ffi` on a CPU plugin), whose provider is the crate pjrt-lapack
    /// (its `client` feature). `line` installs it.
    #[error(
        "the program calls `{target}`, {what}, whose handler comes from a provider of built-in handlers that is not \
         installed: add `{line}` before compiling (the plugin said: {plugin_error})"
    )]
    MissingBuiltinProvider {
        /// The custom-call target.
        target: String,
        /// What it is.
        what: &'static str,
        /// The line of Rust that installs the provider for the process.
        line: &'static str,
        /// The plugin's refusal.
        plugin_error: Box<Error>,
    },
    /// A program calls a custom call that a provider of built-in handlers refuses for the plugin
    /// ([`crate::ffi::BuiltinProvider::prepare`]): pjrt-lapack's refuses a GPU kernel of JAX on a
    /// CPU plugin, a LAPACK kernel of jaxlib from before its FFI form, or one that JAX does not
    /// guarantee stable.
    #[error("the program calls the custom call `{target}`, which {advice}")]
    UnsupportedCustomCall {
        /// The custom-call target.
        target: String,
        /// Why it is refused and what to do.
        advice: &'static str,
    },
    /// The program holds a `dense<...>` literal of an element type XLA cannot import (`f6E2M3FN`,
    /// `f6E3M2FN`): sent to a plugin, it aborts the process (the 0.115 CPU plugin) or is refused,
    /// so the compile refuses it first.
    #[error(
        "the program has a dense literal of element type {element_type} (in `{op}`), which XLA cannot import: \
         the CPU plugin aborts the process on it. Write the constant in f32 and convert it \
         (`stablehlo.convert`), or pass the array as an argument"
    )]
    LiteralXlaCannotImport {
        /// The literal's element type.
        element_type: pjrt_types::ElementType,
        /// The op that holds it (`stablehlo.constant`).
        op: String,
    },
    /// A user callback panicked; the panic was caught at the C boundary.
    #[error("a callback panicked: {0}")]
    CallbackPanicked(String),
    /// A call that waits for the plugin was made inside a plugin callback (an [`crate::Event::on_ready`]
    /// callback, the `on_done` of [`crate::HostSource::on_done`], a host send or
    /// receive callback, ...). Refused before anything was started: the thread may be one the
    /// plugin needs to finish the very work waited for, and the wait would never end (the 0.106
    /// CPU plugin hangs so). `instead` names the call that does not wait; to wait, hand the work
    /// to a thread of your own. What a callback may do: the crate documentation,
    /// [*Callbacks and the plugin's threads*](crate#callbacks-and-the-plugins-threads).
    #[error(
        "{call} waits for the plugin and was called inside a plugin callback, on a thread the plugin may need \
         to finish that work (it would never return): {instead}, or wait on a thread of your own"
    )]
    BlockingInCallback {
        /// The call that was refused, e.g. `LoadedExecutable::execute`.
        call: &'static str,
        /// What to call instead, e.g. `use LoadedExecutable::execute_async and await the result
        /// outside the callback`.
        instead: &'static str,
    },
    /// A bounded wait ran out.
    #[error("timed out after {after:?} {what}")]
    Timeout {
        /// What was being waited for.
        what: &'static str,
        /// The time limit.
        after: std::time::Duration,
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
    /// A protobuf message from the plugin or the user could not be decoded.
    #[error("cannot decode {what}: {source}")]
    Decode {
        /// What was being decoded.
        what: &'static str,
        /// The decoder's error.
        #[source]
        source: prost::DecodeError,
    },
}

impl Error {
    /// The payloads a plugin attached to this error (`PJRT_Error_ForEachPayload`): `(key, value)`
    /// pairs, e.g. a type URL and a serialized proto. Empty for errors without payloads and for
    /// every error that did not come from the plugin.
    pub fn payloads(&self) -> &[(String, Vec<u8>)] {
        match self {
            Error::Pjrt { payloads, .. } => payloads,
            _ => &[],
        }
    }

    /// The PJRT status code, for errors that came from the plugin.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Error::Pjrt { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// Whether the plugin answered UNIMPLEMENTED: the seed (XLA's C API client) reads that answer
    /// of some queries as "nothing to report" rather than as a failure.
    pub(crate) fn is_unimplemented(&self) -> bool {
        self.code() == Some(ErrorCode::Unimplemented)
    }

    #[cold]
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Error::InvalidArgument(message.into())
    }

    #[cold]
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), source }
    }
}

/// Host data that is not a value of its sub-byte element type is an invalid argument.
impl From<pjrt_types::HostValueError> for Error {
    #[cold]
    fn from(e: pjrt_types::HostValueError) -> Self {
        Error::invalid(e.to_string())
    }
}

/// Escapes payload text so that it cannot contain `'`, `[` or `]`: printable ASCII other than
/// those and `\` stays, every other byte becomes `\xNN`.
fn escape_payload(bytes: &[u8], out: &mut String) {
    for &b in bytes {
        if (0x20..0x7f).contains(&b) && !matches!(b, b'\'' | b'\\' | b'[' | b']') {
            out.push(b as char);
        } else {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
}

/// Shows payloads after a message as ` [key='value']` items.
struct DisplayPayloads<'a>(&'a [(String, Vec<u8>)]);

impl std::fmt::Display for DisplayPayloads<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut text = String::new();
        for (key, value) in self.0 {
            text.push_str(" [");
            escape_payload(key.as_bytes(), &mut text);
            text.push_str("='");
            escape_payload(value, &mut text);
            text.push_str("']");
        }
        f.write_str(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_are_a_field_shown_after_the_message() {
        let payloads = vec![
            ("type.googleapis.com/x.Y".to_owned(), vec![0u8, 1, b'\'', b'[', b']', b'a', 0xff]),
            ("k [2]".to_owned(), b"plain text".to_vec()),
        ];
        let error = Error::Pjrt {
            function: "f",
            code: ErrorCode::Internal,
            message: "boom [not a payload] it's".into(),
            payloads: payloads.clone(),
        };
        assert_eq!(error.payloads(), payloads);
        assert_eq!(
            error.to_string(),
            "f failed (INTERNAL): boom [not a payload] it's [type.googleapis.com/x.Y='\\x00\\x01\\x27\\x5b\\x5da\\xff'] [k \\x5b2\\x5d='plain text']"
        );
        let plain =
            Error::Pjrt { function: "f", code: ErrorCode::Internal, message: "x ['y']".into(), payloads: vec![] };
        assert!(plain.payloads().is_empty());
        assert!(Error::invalid("z").payloads().is_empty());
    }
}

/// Why [`crate::ffi::register`] refused or failed (in [`Error::FfiRegistration`]).
///
/// ```
/// use pjrt_client::ffi::{self, Call, Handler, RegistrationErrorKind, Signature};
/// use pjrt_client::{Client, ClientOptions, Error, Plugin};
/// # let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
/// let client = Client::new(&plugin, &ClientOptions::new())?;
/// let first = Handler::new("first", Signature::new(), |_: &Call| Ok(()));
/// let second = Handler::new("second", Signature::new(), |_: &Call| Ok(()));
/// ffi::register(&client, "doc_kind_example", &first)?;
/// ffi::register(&client, "doc_kind_example", &first)?; // the same handler: nothing to do
/// let err = ffi::register(&client, "doc_kind_example", &second).unwrap_err();
/// assert!(matches!(err, Error::FfiRegistration { kind: RegistrationErrorKind::Conflict, .. }));
/// # Ok::<(), pjrt_client::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegistrationErrorKind {
    /// This crate registered a different handler for the target on this plugin already.
    Conflict,
    /// A probe program calling the target compiled before registering: a handler this crate did
    /// not register (a raw `register_handler`, jaxlib's) holds the name.
    TakenElsewhere,
    /// The probe program did not compile after registering: the plugin did not keep the handler.
    NotProven,
    /// [`crate::ffi::MAX_HANDLERS`] handlers are registered in this process already.
    NoFreeSlot,
    /// The plugin has no FFI extension (or no `register_handler`).
    NoFfiExtension,
}
