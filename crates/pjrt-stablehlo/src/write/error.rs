//! What can keep a module from being written for a target.

use pjrt_types::Version;

/// Why [`crate::write_bytecode`] cannot write a module for its target.
///
/// ```
/// use pjrt_stablehlo::{write_bytecode, Version, WriteError};
/// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/formats/tanh_mul.portable-1.0.0.mlirbc");
/// let module = pjrt_stablehlo::read_bytecode(&std::fs::read(path).unwrap()).unwrap();
/// let err = write_bytecode(&module, Version::new(0, 1, 0)).unwrap_err();
/// assert!(matches!(err, WriteError::Target { .. }), "{err}");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// `target` is outside [`Version::MINIMUM`]..=[`Version::CURRENT`].
    #[error(
        "StableHLO {target} is not a version this writer can target: choose one from {} to {}",
        Version::MINIMUM,
        Version::CURRENT
    )]
    Target {
        /// The version asked for.
        target: Version,
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
        needs: Version,
        /// The version asked for.
        target: Version,
    },
    /// Something the module holds that has no VHLO form (an op of another dialect, ...).
    #[error("{what} has no form in a StableHLO portable artifact: lower or remove it before writing")]
    Unrepresentable {
        /// What it is.
        what: String,
    },
}
