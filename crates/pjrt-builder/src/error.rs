//! What building a program can refuse.

use pjrt_types::StableHloVersion;

/// Why an op, a constant or a whole program was refused. Every message names what was given and
/// what is expected, so it says what to change.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// An op's operands have types the op does not accept (`stablehlo.add: operand types
    /// tensor<2x3xf32> and tensor<3x2xf32> differ; ...`).
    #[error("{op}: operand types {operands}: {expected}")]
    OperandTypes {
        /// The op (`stablehlo.add`).
        op: &'static str,
        /// The operands' types, as MLIR spells them.
        operands: String,
        /// What the op expects.
        expected: String,
    },
    /// An op's attribute (dimensions, permutation, sizes, ...) is out of range or inconsistent
    /// with its operands.
    #[error("{op}: {message}")]
    InvalidAttribute {
        /// The op.
        op: &'static str,
        /// What is wrong and what is expected.
        message: String,
    },
    /// A value from another [`crate::Function`], or from a region that is closed or not visible
    /// here (a region's values live only inside it; `reduce`-like bodies see only their
    /// arguments and what they build).
    #[error("{op}: {message}")]
    ValueNotVisible {
        /// The op that was given the value.
        op: &'static str,
        /// Which value and why.
        message: String,
    },
    /// A region's closure returned values of the wrong number or types.
    #[error("{op}: the region returned {returned}, expected {expected}")]
    RegionResults {
        /// The op whose region it is.
        op: &'static str,
        /// The types returned.
        returned: String,
        /// The types expected.
        expected: String,
    },
    /// A shape with a negative dimension, or element counts that do not match.
    #[error("invalid shape: {message}")]
    InvalidShape {
        /// What is wrong.
        message: String,
    },
    /// An element type StableHLO cannot spell (TOKEN, INVALID, S1, U1, unknown values).
    #[error("element type {element}: {message}")]
    UnsupportedElementType {
        /// The element type's name.
        element: String,
        /// Why, and what to use.
        message: String,
    },
    /// A constant's data does not fit its type and shape.
    #[error("constant: {message}")]
    InvalidConstant {
        /// What is wrong.
        message: String,
    },
    /// The program needs a newer StableHLO than the plugin reads.
    #[error(
        "the program needs StableHLO {needed} (for {needed_by}) but the plugin reads StableHLO {plugin} at most: \
         use a newer plugin or avoid {needed_by}"
    )]
    VersionTooNew {
        /// The version the program needs.
        needed: StableHloVersion,
        /// The first op or type that needs it.
        needed_by: String,
        /// The newest version the plugin reads.
        plugin: StableHloVersion,
    },
    /// `finish` was called with a region still open, or with outputs that are not valid.
    #[error("finish: {message}")]
    Finish {
        /// What is wrong.
        message: String,
    },
    /// Making the `pjrt_client::Program` failed (feature `client`).
    #[cfg(feature = "client")]
    #[error("making the program: {0}")]
    Program(#[from] pjrt_client::Error),
}
