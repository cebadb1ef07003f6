//! StableHLO's enum attributes: each enum's name and its values in VHLO's order. The bytecode
//! decoder reads values by index, the text parser by name; both give [`crate::ir::EnumAttr`]s
//! that point into these tables.

pub(crate) const COMPARISON_DIRECTION: &[&str] = &["EQ", "NE", "GE", "GT", "LE", "LT"];
pub(crate) const COMPARISON_TYPE: &[&str] = &["NOTYPE", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"];
pub(crate) const FFT_TYPE: &[&str] = &["FFT", "IFFT", "RFFT", "IRFFT"];
pub(crate) const PRECISION: &[&str] = &["DEFAULT", "HIGH", "HIGHEST"];
pub(crate) const RNG_ALGORITHM: &[&str] = &["DEFAULT", "THREE_FRY", "PHILOX"];
/// VHLO numbers these from 1.
pub(crate) const RNG_DISTRIBUTION: &[&str] = &["UNIFORM", "NORMAL"];
pub(crate) const TRANSPOSE: &[&str] = &["TRANSPOSE_INVALID", "NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"];
pub(crate) const RESULT_ACCURACY_MODE: &[&str] = &["DEFAULT", "HIGHEST", "TOLERANCE"];

/// Every enum: its name (as `#stablehlo<NAME VALUE>` spells it) and values.
pub(crate) const ENUMS: &[(&str, &[&str])] = &[
    ("comparison_direction", COMPARISON_DIRECTION),
    ("comparison_type", COMPARISON_TYPE),
    ("fft_type", FFT_TYPE),
    ("precision", PRECISION),
    ("rng_algorithm", RNG_ALGORITHM),
    ("rng_distribution", RNG_DISTRIBUTION),
    ("transpose", TRANSPOSE),
    ("result_accuracy_mode", RESULT_ACCURACY_MODE),
];

/// The enum `kind`'s value `value`, as static strings, if both exist.
pub(crate) fn enum_value(kind: &str, value: &str) -> Option<crate::ir::EnumAttr> {
    let (kind, values) = ENUMS.iter().find(|(k, _)| *k == kind)?;
    let value = values.iter().find(|v| **v == value)?;
    Some(crate::ir::EnumAttr { kind, value })
}

/// The fields of `#stablehlo.dot_algorithm`, in order (VHLO has them as dot_general's
/// properties).
pub(crate) const DOT_ALGORITHM_FIELDS: &[&str] = &[
    "lhs_precision_type",
    "rhs_precision_type",
    "accumulation_type",
    "lhs_component_count",
    "rhs_component_count",
    "num_primitive_operations",
    "allow_imprecise_accumulation",
];

/// A `#stablehlo.conv`'s fields in the order of its `[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]`
/// layout: per part (input, kernel, output) the batch-like and feature-like dimension fields,
/// the spatial dimensions field, and the letters the two are written as.
pub(crate) const CONV_PARTS: [(&str, &str, &str, char, char); 3] = [
    ("input_batch_dimension", "input_feature_dimension", "input_spatial_dimensions", 'b', 'f'),
    ("kernel_input_feature_dimension", "kernel_output_feature_dimension", "kernel_spatial_dimensions", 'i', 'o'),
    ("output_batch_dimension", "output_feature_dimension", "output_spatial_dimensions", 'b', 'f'),
];
