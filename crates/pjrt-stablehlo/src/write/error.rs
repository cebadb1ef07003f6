//! What can keep a module from being written for a target.

use pjrt_types::StableHloVersion;

/// Why [`crate::write_bytecode`] cannot write a module for its target.
///
/// ```
/// use pjrt_stablehlo::{write_bytecode, StableHloVersion, WriteError};
/// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/formats/tanh_mul.portable-1.0.0.mlirbc");
/// let module = pjrt_stablehlo::read_bytecode(&std::fs::read(path).unwrap()).unwrap();
/// let err = write_bytecode(&module, StableHloVersion::new(0, 1, 0)).unwrap_err();
/// assert!(matches!(err, WriteError::Target { .. }), "{err}");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// `target` is outside [`crate::MINIMUM_VERSION`]..=[`crate::NEWEST_READ_VERSION`].
    #[error(
        "StableHLO {target} is not a version this writer can target: choose one from {} to {}",
        crate::MINIMUM_VERSION,
        crate::NEWEST_READ_VERSION
    )]
    Target {
        /// The version asked for.
        target: StableHloVersion,
    },
    /// An op, attribute or type that does not exist at `target` (or whose attributes need a
    /// newer op version).
    #[error(
        "{what} needs StableHLO {needs}; the target is {target}: compile for a newer plugin, or export without it"
    )]
    NotInVersion {
        /// The op, attribute or type.
        what: String,
        /// The oldest StableHLO version that has it.
        needs: StableHloVersion,
        /// The version asked for.
        target: StableHloVersion,
    },
    /// A `chlo` op the writer cannot express as StableHLO ops (VHLO has no CHLO): one outside
    /// the ops [`crate::write_bytecode`] lowers, or of a type or shape its decomposition
    /// does not take.
    #[error("{op} cannot be written as StableHLO: {reason}")]
    Chlo {
        /// The op (`chlo.erf_inv`).
        op: String,
        /// Why.
        reason: String,
    },
    /// Something the module holds that has no VHLO form (an op of another dialect, ...).
    #[error("{what} has no form in a StableHLO portable artifact: lower or remove it before writing")]
    Unrepresentable {
        /// What it is.
        what: String,
    },
}
