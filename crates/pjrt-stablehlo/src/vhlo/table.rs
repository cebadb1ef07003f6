//! The one VHLO table: every version of every VHLO op, with the StableHLO versions it exists
//! in and its inherent attributes (`OPS`); each attribute's default (`DEFAULTS`); the scalar
//! types with their type codes and first versions (`SCALARS`), the enums with their attribute
//! codes (`ENUMS`), and the other attributes and types newer than 0.9.0 with the version each
//! first exists in (facts from StableHLO's VhloOps.td, VhloAttrs.td, VhloTypes.td, VhloEnums.td
//! and VhloBytecode.cpp). The reader (`super::legalize`, `crate::read`, `crate::decode`) takes
//! an op's attributes, the defaults it drops and the codes it decodes from here; the writer
//! (`crate::write`) the op version a target has, its attributes, the defaults it fills in, the
//! codes it encodes and the version an attribute or type needs: they cannot disagree.
//!
//! StableHLO 1.21.0 and 1.22.0 add no VHLO op, attribute or type: the dialect of jaxlib
//! 0.12.0.1 (StableHLO 1.22.0) has the op versions, attributes and types of 1.20.0 and no
//! other, and its artifacts at 1.21.0 and 1.22.0 are its 1.20.0 ones with another producer
//! (tests/data/vhlo/index-jax-0.12.0.1.json); `CURRENT` rows hold through 1.22.0.

use std::collections::HashMap;
use std::sync::OnceLock;

use pjrt_types::StableHloVersion;

use crate::ir::ElementType;
use crate::names;

/// One version of a VHLO op (`all_gather_v2`): the StableHLO versions it exists in (both
/// bounds inclusive, as VhloOps.td states them) and its inherent attributes in property order
/// (sorted by name).
#[derive(Debug)]
pub(crate) struct OpVersion {
    pub name: &'static str,
    pub since: StableHloVersion,
    /// The last StableHLO version with this op version; `None` while it is current.
    pub until: Option<StableHloVersion>,
    pub attributes: &'static [&'static str],
}

impl OpVersion {
    /// Whether StableHLO `version` has this op version. A last version holds for every patch
    /// release of its minor version: StableHLO adds op versions only in a new minor version, and
    /// JAX wrote patch releases (1.8.2 with exponential_v1, whose range ends at 1.8.0; 1.13.7
    /// with composite_v1, ending at 1.13.0).
    pub(crate) fn contains(&self, version: StableHloVersion) -> bool {
        self.since <= version && self.until.is_none_or(|u| (version.major, version.minor) <= (u.major, u.minor))
    }

    /// The op this is a version of: `all_gather_v2` -> `all_gather`.
    pub(crate) fn base(&self) -> &'static str {
        self.name.rsplit_once("_v").map_or(self.name, |(base, _)| base)
    }
}

const fn v(major: u32, minor: u32) -> StableHloVersion {
    StableHloVersion::new(major, minor, 0)
}

/// An op version still in the newest StableHLO.
const CURRENT: Option<StableHloVersion> = None;

const fn op(
    name: &'static str,
    since: StableHloVersion,
    until: Option<StableHloVersion>,
    attributes: &'static [&'static str],
) -> OpVersion {
    OpVersion { name, since, until, attributes }
}

/// Every VHLO op version, sorted by name. A new op version: a row here, the defaults of its
/// new attributes in `DEFAULTS` (its upgrade in `super::legalize` and `crate::write`'s
/// convert).
#[rustfmt::skip]
pub(crate) const OPS: &[OpVersion] = &[
    op("abs_v1", v(0, 9), CURRENT, &[]),
    op("add_v1", v(0, 9), CURRENT, &[]),
    op("after_all_v1", v(0, 9), CURRENT, &[]),
    op("all_gather_v1", v(0, 9), Some(v(1, 4)), &["all_gather_dim", "channel_id", "replica_groups", "use_global_device_ids"]),
    op("all_gather_v2", v(1, 5), CURRENT, &["all_gather_dim", "channel_id", "replica_groups", "use_global_device_ids"]),
    op("all_reduce_v1", v(0, 9), Some(v(1, 4)), &["channel_id", "replica_groups", "use_global_device_ids"]),
    op("all_reduce_v2", v(1, 5), CURRENT, &["channel_id", "replica_groups", "use_global_device_ids"]),
    op("all_to_all_v1", v(0, 9), Some(v(1, 4)), &["channel_id", "concat_dimension", "replica_groups", "split_count", "split_dimension"]),
    op("all_to_all_v2", v(1, 5), CURRENT, &["channel_id", "concat_dimension", "replica_groups", "split_count", "split_dimension"]),
    op("and_v1", v(0, 9), CURRENT, &[]),
    op("async_done_v1", v(1, 15), CURRENT, &[]),
    op("async_start_v1", v(1, 15), CURRENT, &[]),
    op("atan2_v1", v(0, 9), CURRENT, &[]),
    op("batch_norm_grad_v1", v(0, 9), CURRENT, &["epsilon", "feature_index"]),
    op("batch_norm_inference_v1", v(0, 9), CURRENT, &["epsilon", "feature_index"]),
    op("batch_norm_training_v1", v(0, 9), CURRENT, &["epsilon", "feature_index"]),
    op("bitcast_convert_v1", v(0, 9), CURRENT, &[]),
    op("broadcast_in_dim_v1", v(0, 9), CURRENT, &["broadcast_dimensions"]),
    op("broadcast_v1", v(0, 9), CURRENT, &["broadcast_sizes"]),
    op("call_v1", v(0, 9), CURRENT, &["callee"]),
    op("case_v1", v(0, 9), CURRENT, &[]),
    op("cbrt_v1", v(0, 9), Some(v(1, 9)), &[]),
    op("cbrt_v2", v(1, 10), CURRENT, &["result_accuracy"]),
    op("ceil_v1", v(0, 9), CURRENT, &[]),
    op("cholesky_v1", v(0, 9), CURRENT, &["lower"]),
    op("clamp_v1", v(0, 9), CURRENT, &[]),
    op("collective_broadcast_v1", v(0, 16), Some(v(1, 19)), &["channel_id", "replica_groups"]),
    op("collective_broadcast_v2", v(1, 20), CURRENT, &["channel_id", "has_dynamic_root", "replica_groups"]),
    op("collective_permute_v1", v(0, 9), CURRENT, &["channel_id", "source_target_pairs"]),
    op("collective_reduce_v1", v(1, 19), CURRENT, &["channel_id", "has_dynamic_root", "replica_groups", "use_global_device_ids"]),
    op("compare_v1", v(0, 9), CURRENT, &["compare_type", "comparison_direction"]),
    op("complex_v1", v(0, 9), CURRENT, &[]),
    op("composite_v1", v(0, 19), Some(v(1, 13)), &["composite_attributes", "decomposition", "name", "version"]),
    op("composite_v2", v(1, 14), CURRENT, &["composite_attributes", "decomposition", "name", "version"]),
    op("concatenate_v1", v(0, 9), CURRENT, &["dimension"]),
    op("constant_v1", v(0, 9), CURRENT, &["value"]),
    op("convert_v1", v(0, 9), CURRENT, &[]),
    op("convolution_v1", v(0, 9), CURRENT, &["batch_group_count", "feature_group_count", "input_batch_dimension", "input_feature_dimension", "input_spatial_dimensions", "kernel_input_feature_dimension", "kernel_output_feature_dimension", "kernel_spatial_dimensions", "lhs_dilation", "output_batch_dimension", "output_feature_dimension", "output_spatial_dimensions", "padding", "precision_config", "rhs_dilation", "window_reversal", "window_strides"]),
    op("cosine_v1", v(0, 9), Some(v(1, 9)), &[]),
    op("cosine_v2", v(1, 10), CURRENT, &["result_accuracy"]),
    op("count_leading_zeros_v1", v(0, 9), CURRENT, &[]),
    op("create_token_v1", v(0, 9), CURRENT, &[]),
    op("cross-replica-sum_v1", v(0, 9), CURRENT, &["replica_groups"]),
    op("custom_call_v1", v(0, 9), Some(v(1, 17)), &["api_version", "backend_config", "call_target_name", "called_computations", "has_side_effect", "operand_layouts", "output_operand_aliases", "result_layouts"]),
    op("custom_call_v2", v(1, 18), CURRENT, &["api_version", "backend_config", "call_target_name", "called_computations", "has_side_effect", "operand_layouts", "output_operand_aliases", "result_layouts", "result_tilings"]),
    op("divide_v1", v(0, 9), CURRENT, &[]),
    op("dot_general_v1", v(0, 9), Some(v(1, 5)), &["lhs_batching_dimensions", "lhs_contracting_dimensions", "precision_config", "rhs_batching_dimensions", "rhs_contracting_dimensions"]),
    op("dot_general_v2", v(1, 6), CURRENT, &["accumulation_type", "allow_imprecise_accumulation", "lhs_batching_dimensions", "lhs_component_count", "lhs_contracting_dimensions", "lhs_precision_type", "num_primitive_operations", "precision_config", "rhs_batching_dimensions", "rhs_component_count", "rhs_contracting_dimensions", "rhs_precision_type"]),
    op("dot_v1", v(0, 9), CURRENT, &["precision_config"]),
    op("dynamic_broadcast_in_dim_v1", v(0, 9), CURRENT, &["broadcast_dimensions", "known_expanding_dimensions", "known_nonexpanding_dimensions"]),
    op("dynamic_conv_v1", v(0, 9), Some(v(0, 19)), &["batch_group_count", "feature_group_count", "input_batch_dimension", "input_feature_dimension", "input_spatial_dimensions", "kernel_input_feature_dimension", "kernel_output_feature_dimension", "kernel_spatial_dimensions", "lhs_dilation", "output_batch_dimension", "output_feature_dimension", "output_spatial_dimensions", "padding", "precision_config", "rhs_dilation", "window_reversal", "window_strides"]),
    op("dynamic_conv_v2", v(0, 20), CURRENT, &["batch_group_count", "feature_group_count", "input_batch_dimension", "input_feature_dimension", "input_spatial_dimensions", "kernel_input_feature_dimension", "kernel_output_feature_dimension", "kernel_spatial_dimensions", "lhs_dilation", "output_batch_dimension", "output_feature_dimension", "output_spatial_dimensions", "precision_config", "rhs_dilation", "window_reversal", "window_strides"]),
    op("dynamic_gather_v1", v(0, 9), Some(v(1, 0)), &["collapsed_slice_dims", "index_vector_dim", "indices_are_sorted", "offset_dims", "start_index_map"]),
    op("dynamic_gather_v2", v(1, 1), CURRENT, &["collapsed_slice_dims", "index_vector_dim", "indices_are_sorted", "offset_dims", "operand_batching_dims", "start_index_map", "start_indices_batching_dims"]),
    op("dynamic_iota_v1", v(0, 9), CURRENT, &["iota_dimension"]),
    op("dynamic_pad_v1", v(0, 9), CURRENT, &[]),
    op("dynamic_reshape_v1", v(0, 9), CURRENT, &[]),
    op("dynamic_slice_v1", v(0, 9), CURRENT, &["slice_sizes"]),
    op("dynamic_update_slice_v1", v(0, 9), CURRENT, &[]),
    op("einsum_v1", v(0, 9), CURRENT, &["einsum_config"]),
    op("exponential_minus_one_v1", v(0, 9), Some(v(1, 9)), &[]),
    op("exponential_minus_one_v2", v(1, 10), CURRENT, &["result_accuracy"]),
    op("exponential_v1", v(0, 9), Some(v(1, 8)), &[]),
    op("exponential_v2", v(1, 9), CURRENT, &["result_accuracy"]),
    op("fft_v1", v(0, 9), CURRENT, &["fft_length", "fft_type"]),
    op("floor_v1", v(0, 9), CURRENT, &[]),
    op("func_v1", v(0, 9), CURRENT, &["arg_attrs", "function_type", "res_attrs", "sym_name", "sym_visibility"]),
    op("gather_v1", v(0, 9), Some(v(1, 0)), &["collapsed_slice_dims", "index_vector_dim", "indices_are_sorted", "offset_dims", "slice_sizes", "start_index_map"]),
    op("gather_v2", v(1, 1), CURRENT, &["collapsed_slice_dims", "index_vector_dim", "indices_are_sorted", "offset_dims", "operand_batching_dims", "slice_sizes", "start_index_map", "start_indices_batching_dims"]),
    op("get_dimension_size_v1", v(0, 9), CURRENT, &["dimension"]),
    op("get_tuple_element_v1", v(0, 9), CURRENT, &["index"]),
    op("if_v1", v(0, 9), CURRENT, &[]),
    op("imag_v1", v(0, 9), CURRENT, &[]),
    op("infeed_v1", v(0, 9), CURRENT, &["infeed_config", "layout"]),
    op("iota_v1", v(0, 9), CURRENT, &["iota_dimension"]),
    op("is_finite_v1", v(0, 9), CURRENT, &[]),
    op("log_plus_one_v1", v(0, 9), Some(v(1, 9)), &[]),
    op("log_plus_one_v2", v(1, 10), CURRENT, &["result_accuracy"]),
    op("log_v1", v(0, 9), Some(v(1, 9)), &[]),
    op("log_v2", v(1, 10), CURRENT, &["result_accuracy"]),
    op("logistic_v1", v(0, 9), Some(v(1, 9)), &[]),
    op("logistic_v2", v(1, 10), CURRENT, &["result_accuracy"]),
    op("map_v1", v(0, 9), CURRENT, &["dimensions"]),
    op("maximum_v1", v(0, 9), CURRENT, &[]),
    op("minimum_v1", v(0, 9), CURRENT, &[]),
    op("multiply_v1", v(0, 9), CURRENT, &[]),
    op("negate_v1", v(0, 9), CURRENT, &[]),
    op("not_v1", v(0, 9), CURRENT, &[]),
    op("optimization_barrier_v1", v(0, 9), CURRENT, &[]),
    op("or_v1", v(0, 9), CURRENT, &[]),
    op("outfeed_v1", v(0, 9), CURRENT, &["outfeed_config"]),
    op("pad_v1", v(0, 9), CURRENT, &["edge_padding_high", "edge_padding_low", "interior_padding"]),
    op("partition_id_v1", v(0, 9), CURRENT, &[]),
    op("popcnt_v1", v(0, 9), CURRENT, &[]),
    op("power_v1", v(0, 9), CURRENT, &[]),
    op("real_dynamic_slice_v1", v(0, 9), CURRENT, &[]),
    op("real_v1", v(0, 9), CURRENT, &[]),
    op("recv_v1", v(0, 9), Some(v(1, 11)), &["channel_id", "channel_type", "is_host_transfer"]),
    op("recv_v2", v(1, 12), CURRENT, &["channel_id", "channel_type", "is_host_transfer", "source_target_pairs"]),
    op("reduce_precision_v1", v(0, 9), CURRENT, &["exponent_bits", "mantissa_bits"]),
    op("reduce_scatter_v1", v(0, 9), CURRENT, &["channel_id", "replica_groups", "scatter_dimension", "use_global_device_ids"]),
    op("reduce_v1", v(0, 9), CURRENT, &["dimensions"]),
    op("reduce_window_v1", v(0, 9), CURRENT, &["base_dilations", "padding", "window_dilations", "window_dimensions", "window_strides"]),
    op("remainder_v1", v(0, 9), CURRENT, &[]),
    op("replica_id_v1", v(0, 9), CURRENT, &[]),
    op("reshape_v1", v(0, 9), CURRENT, &[]),
    op("return_v1", v(0, 9), CURRENT, &[]),
    op("reverse_v1", v(0, 9), CURRENT, &["dimensions"]),
    op("rng_bit_generator_v1", v(0, 9), CURRENT, &["rng_algorithm"]),
    op("rng_v1", v(0, 9), CURRENT, &["rng_distribution"]),
    op("round_nearest_afz_v1", v(0, 9), CURRENT, &[]),
    op("round_nearest_even_v1", v(0, 9), CURRENT, &[]),
    op("rsqrt_v1", v(0, 9), Some(v(1, 9)), &[]),
    op("rsqrt_v2", v(1, 10), CURRENT, &["result_accuracy"]),
    op("scatter_v1", v(0, 9), Some(v(1, 0)), &["index_vector_dim", "indices_are_sorted", "inserted_window_dims", "scatter_dims_to_operand_dims", "unique_indices", "update_window_dims"]),
    op("scatter_v2", v(1, 1), CURRENT, &["index_vector_dim", "indices_are_sorted", "input_batching_dims", "inserted_window_dims", "scatter_dims_to_operand_dims", "scatter_indices_batching_dims", "unique_indices", "update_window_dims"]),
    op("select_and_scatter_v1", v(0, 9), CURRENT, &["padding", "window_dimensions", "window_strides"]),
    op("select_v1", v(0, 9), CURRENT, &[]),
    op("send_v1", v(0, 9), Some(v(1, 11)), &["channel_id", "channel_type", "is_host_transfer"]),
    op("send_v2", v(1, 12), CURRENT, &["channel_id", "channel_type", "is_host_transfer", "source_target_pairs"]),
    op("set_dimension_size_v1", v(0, 9), CURRENT, &["dimension"]),
    op("shift_left_v1", v(0, 9), CURRENT, &[]),
    op("shift_right_arithmetic_v1", v(0, 9), CURRENT, &[]),
    op("shift_right_logical_v1", v(0, 9), CURRENT, &[]),
    op("sign_v1", v(0, 9), CURRENT, &[]),
    op("sine_v1", v(0, 9), Some(v(1, 9)), &[]),
    op("sine_v2", v(1, 10), CURRENT, &["result_accuracy"]),
    op("slice_v1", v(0, 9), CURRENT, &["limit_indices", "start_indices", "strides"]),
    op("sort_v1", v(0, 9), CURRENT, &["dimension", "is_stable"]),
    op("sqrt_v1", v(0, 9), Some(v(1, 9)), &[]),
    op("sqrt_v2", v(1, 10), CURRENT, &["result_accuracy"]),
    op("subtract_v1", v(0, 9), CURRENT, &[]),
    op("tan_v1", v(1, 4), Some(v(1, 9)), &[]),
    op("tan_v2", v(1, 10), CURRENT, &["result_accuracy"]),
    op("tanh_v1", v(0, 9), Some(v(1, 9)), &[]),
    op("tanh_v2", v(1, 10), CURRENT, &["result_accuracy"]),
    op("torch_index_select_v1", v(0, 9), CURRENT, &["batch_dims", "dim"]),
    op("transpose_v1", v(0, 9), CURRENT, &["permutation"]),
    op("triangular_solve_v1", v(0, 9), CURRENT, &["left_side", "lower", "transpose_a", "unit_diagonal"]),
    op("tuple_v1", v(0, 9), CURRENT, &[]),
    op("unary_einsum_v1", v(0, 9), CURRENT, &["einsum_config"]),
    op("uniform_dequantize_v1", v(0, 9), CURRENT, &[]),
    op("uniform_quantize_v1", v(0, 9), CURRENT, &[]),
    op("while_v1", v(0, 9), CURRENT, &[]),
    op("xor_v1", v(0, 9), CURRENT, &[]),
];

/// A VHLO scalar type: its element type, its VhloBytecode type code, its MLIR name, and the
/// StableHLO version it first exists in.
pub(crate) struct ScalarType {
    pub element: ElementType,
    pub code: u64,
    pub name: &'static str,
    pub since: StableHloVersion,
}

const fn scalar(element: ElementType, code: u64, name: &'static str, since: StableHloVersion) -> ScalarType {
    ScalarType { element, code, name, since }
}

#[rustfmt::skip]
const SCALARS: &[ScalarType] = &[
    scalar(ElementType::PRED, 0, "i1", v(0, 9)),
    scalar(ElementType::BF16, 2, "bf16", v(0, 9)),
    scalar(ElementType::F16, 3, "f16", v(0, 9)),
    scalar(ElementType::F32, 4, "f32", v(0, 9)),
    scalar(ElementType::F64, 5, "f64", v(0, 9)),
    scalar(ElementType::F8E4M3FN, 6, "f8E4M3FN", v(0, 9)),
    scalar(ElementType::F8E5M2, 7, "f8E5M2", v(0, 9)),
    scalar(ElementType::S4, 10, "i4", v(0, 9)),
    scalar(ElementType::S8, 11, "i8", v(0, 9)),
    scalar(ElementType::S16, 12, "i16", v(0, 9)),
    scalar(ElementType::S32, 13, "i32", v(0, 9)),
    scalar(ElementType::S64, 14, "i64", v(0, 9)),
    scalar(ElementType::U4, 15, "ui4", v(0, 9)),
    scalar(ElementType::U8, 16, "ui8", v(0, 9)),
    scalar(ElementType::U16, 17, "ui16", v(0, 9)),
    scalar(ElementType::U32, 18, "ui32", v(0, 9)),
    scalar(ElementType::U64, 19, "ui64", v(0, 9)),
    scalar(ElementType::F8E4M3FNUZ, 27, "f8E4M3FNUZ", v(0, 10)),
    scalar(ElementType::F8E5M2FNUZ, 28, "f8E5M2FNUZ", v(0, 10)),
    scalar(ElementType::F8E4M3B11FNUZ, 29, "f8E4M3B11FNUZ", v(0, 11)),
    scalar(ElementType::S2, 31, "i2", v(1, 2)),
    scalar(ElementType::U2, 32, "ui2", v(1, 2)),
    scalar(ElementType::F8E4M3, 35, "f8E4M3", v(1, 7)),
    scalar(ElementType::F8E3M4, 36, "f8E3M4", v(1, 7)),
    scalar(ElementType::F4E2M1FN, 37, "f4E2M1FN", v(1, 8)),
    scalar(ElementType::F6E2M3FN, 38, "f6E2M3FN", v(1, 8)),
    scalar(ElementType::F6E3M2FN, 39, "f6E3M2FN", v(1, 8)),
    scalar(ElementType::F8E8M0FNU, 40, "f8E8M0FNU", v(1, 8)),
];

/// The VHLO scalar type of element type `e`; `None` for one VHLO has no scalar for (complex
/// types are a type of their own).
pub(crate) fn scalar_by_element(e: ElementType) -> Option<&'static ScalarType> {
    SCALARS.iter().find(|s| s.element == e)
}

/// The VHLO scalar type of type code `code`; `None` for a code of another type.
pub(crate) fn scalar_by_code(code: u64) -> Option<&'static ScalarType> {
    SCALARS.iter().find(|s| s.code == code)
}

/// The other VHLO attributes and types newer than 0.9.0, as the writer names them, with the
/// StableHLO version each first exists in.
#[rustfmt::skip]
const ATTRIBUTES_AND_TYPES: &[(&str, StableHloVersion)] = &[
    ("per-axis quantization", v(0, 18)),
    ("tf32", v(1, 6)),
    ("none", v(1, 6)),
    ("#stablehlo.result_accuracy", v(1, 9)),
    ("memref", v(1, 13)),
    ("!stablehlo.future", v(1, 15)),
    ("#stablehlo.axis_ref", v(1, 16)),
    ("#stablehlo.mesh", v(1, 16)),
    ("#stablehlo.mesh_axis", v(1, 16)),
    ("#stablehlo.sub_axis_info", v(1, 16)),
    ("#stablehlo.replica_group_mesh_axes", v(1, 16)),
];

/// The value VHLO holds for an attribute StableHLO leaves out (VhloOps.td's defaults, as
/// `stablehlo-legalize-to-vhlo` fills them in): the writer writes it for an attribute a module
/// lacks, the reader drops an attribute that holds it (as `vhlo-legalize-to-stablehlo` does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DefaultValue {
    /// An empty string.
    EmptyString,
    /// An empty array.
    EmptyArray,
    /// An empty dictionary.
    EmptyDict,
    /// An empty 1-D i64 tensor.
    EmptyTensor,
    /// A custom call's backend config: an empty dictionary with the typed FFI (api_version 4),
    /// an empty string otherwise.
    EmptyBackendConfig,
    /// `false`.
    False,
    /// An i32.
    I32(i64),
    /// An i64.
    I64(i64),
    /// An enum's value (kind, value).
    Enum(&'static str, &'static str),
    /// `DEFAULT` precision for both operands.
    Precision,
    /// 1 for each spatial dimension (an i64 tensor).
    Ones,
    /// No padding: 0 before and after each spatial dimension (an i64 tensor of n x 2).
    Padding,
    /// `false` for each spatial dimension (an i1 tensor).
    NoReversal,
    /// `#stablehlo.result_accuracy` with tolerances 0 and mode `DEFAULT`.
    Accuracy,
    /// The `none` type.
    NoneType,
}

/// What the reader does with an attribute that holds its default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnRead {
    /// Drops it.
    Dropped,
    /// Drops it where the other attribute named holds its default too (a custom call's
    /// operand and result layouts go together).
    DroppedWith(&'static str),
    /// Drops it with the other fields of its group where the group's first fields hold theirs
    /// (a dot algorithm's fields: all or none; `super::legalize` puts them together).
    Grouped,
    /// Keeps it: an older op version lacks it, and StableHLO's attribute states it (the batching
    /// dimensions of a gather's or scatter's dimension numbers).
    Kept,
}

const COLLECTIVES: &[&str] = &[
    "all_gather",
    "all_reduce",
    "all_to_all",
    "collective_broadcast",
    "collective_permute",
    "collective_reduce",
    "reduce_scatter",
];
const CONVOLUTIONS: &[&str] = &["convolution", "dynamic_conv"];
const WINDOWED: &[&str] = &["convolution", "dynamic_conv", "reduce_window", "select_and_scatter"];
const WITH_ACCURACY: &[&str] = &[
    "cbrt",
    "cosine",
    "exponential",
    "exponential_minus_one",
    "log",
    "log_plus_one",
    "logistic",
    "rsqrt",
    "sine",
    "sqrt",
    "tan",
    "tanh",
];

use DefaultValue::*;
use OnRead::*;

/// Each attribute's default, by the ops (base names) that hold it.
#[rustfmt::skip]
const DEFAULTS: &[(&[&str], &str, DefaultValue, OnRead)] = &[
    (&["func"], "sym_visibility", EmptyString, Dropped),
    (&["func"], "arg_attrs", EmptyArray, Dropped),
    (&["func"], "res_attrs", EmptyArray, Dropped),
    (COLLECTIVES, "channel_id", I64(0), Dropped),
    (&["all_gather", "all_reduce", "collective_reduce", "reduce_scatter"], "use_global_device_ids", False, Dropped),
    (&["collective_broadcast", "collective_reduce"], "has_dynamic_root", False, Dropped),
    (&["send", "recv"], "is_host_transfer", False, Dropped),
    (&["send", "recv"], "source_target_pairs", EmptyTensor, Dropped),
    (&["cholesky"], "lower", False, Dropped),
    (&["compare"], "compare_type", Enum("comparison_type", "NOTYPE"), Dropped),
    (&["composite"], "version", I32(0), Dropped),
    (&["composite"], "composite_attributes", EmptyDict, Dropped),
    (WINDOWED, "window_strides", Ones, Dropped),
    (WINDOWED, "padding", Padding, Dropped),
    (CONVOLUTIONS, "lhs_dilation", Ones, Dropped),
    (CONVOLUTIONS, "rhs_dilation", Ones, Dropped),
    (CONVOLUTIONS, "window_reversal", NoReversal, Dropped),
    (&["convolution", "dynamic_conv", "dot", "dot_general"], "precision_config", Precision, Dropped),
    (&["custom_call"], "has_side_effect", False, Dropped),
    (&["custom_call"], "backend_config", EmptyBackendConfig, Dropped),
    (&["custom_call"], "api_version", I32(1), Dropped),
    (&["custom_call"], "called_computations", EmptyArray, Dropped),
    (&["custom_call"], "operand_layouts", EmptyArray, DroppedWith("result_layouts")),
    (&["custom_call"], "result_layouts", EmptyArray, DroppedWith("operand_layouts")),
    (&["custom_call"], "output_operand_aliases", EmptyArray, Dropped),
    (&["custom_call"], "result_tilings", EmptyArray, Dropped),
    (&["dot_general"], "lhs_precision_type", NoneType, Grouped),
    (&["dot_general"], "rhs_precision_type", NoneType, Grouped),
    (&["dot_general"], "accumulation_type", NoneType, Grouped),
    (&["dot_general"], "lhs_component_count", NoneType, Grouped),
    (&["dot_general"], "rhs_component_count", NoneType, Grouped),
    (&["dot_general"], "num_primitive_operations", NoneType, Grouped),
    (&["dot_general"], "allow_imprecise_accumulation", NoneType, Grouped),
    (&["dynamic_broadcast_in_dim"], "known_expanding_dimensions", EmptyTensor, Dropped),
    (&["dynamic_broadcast_in_dim"], "known_nonexpanding_dimensions", EmptyTensor, Dropped),
    (&["gather", "dynamic_gather", "scatter"], "indices_are_sorted", False, Dropped),
    (&["scatter"], "unique_indices", False, Dropped),
    (&["gather", "dynamic_gather"], "operand_batching_dims", EmptyTensor, Kept),
    (&["gather", "dynamic_gather"], "start_indices_batching_dims", EmptyTensor, Kept),
    (&["scatter"], "input_batching_dims", EmptyTensor, Kept),
    (&["scatter"], "scatter_indices_batching_dims", EmptyTensor, Kept),
    (&["infeed"], "infeed_config", EmptyString, Dropped),
    (&["infeed"], "layout", EmptyArray, Dropped),
    (&["outfeed"], "outfeed_config", EmptyString, Dropped),
    (&["reduce_window"], "base_dilations", Ones, Dropped),
    (&["reduce_window"], "window_dilations", Ones, Dropped),
    (&["sort"], "dimension", I64(-1), Dropped),
    (&["sort"], "is_stable", False, Dropped),
    (WITH_ACCURACY, "result_accuracy", Accuracy, Dropped),
];

/// The default of attribute `attribute` of the op `base` (`sort`), and what the reader does
/// with it; `None` for an attribute StableHLO always states.
pub(crate) fn default_of(base: &str, attribute: &str) -> Option<(DefaultValue, OnRead)> {
    DEFAULTS.iter().find(|(ops, a, _, _)| *a == attribute && ops.contains(&base)).map(|&(_, _, d, r)| (d, r))
}

/// The attributes of the op `base` that have defaults, with each default.
pub(crate) fn defaults_of(base: &str) -> impl Iterator<Item = (&'static str, DefaultValue, OnRead)> + '_ {
    DEFAULTS.iter().filter(move |(ops, _, _, _)| ops.contains(&base)).map(|&(_, a, d, r)| (a, d, r))
}

/// A VHLO enum attribute's encoding (VhloBytecode's attribute code, and the number of its
/// first value: the values follow in StableHLO's order).
#[derive(Debug)]
pub(crate) struct EnumEncoding {
    pub kind: &'static str,
    pub code: u64,
    pub values: &'static [&'static str],
    pub first: u64,
}

#[rustfmt::skip]
const ENUMS: &[EnumEncoding] = &[
    EnumEncoding { kind: "comparison_direction", code: 3, values: names::COMPARISON_DIRECTION, first: 0 },
    EnumEncoding { kind: "comparison_type", code: 4, values: names::COMPARISON_TYPE, first: 0 },
    EnumEncoding { kind: "fft_type", code: 7, values: names::FFT_TYPE, first: 0 },
    EnumEncoding { kind: "precision", code: 11, values: names::PRECISION, first: 0 },
    EnumEncoding { kind: "rng_algorithm", code: 12, values: names::RNG_ALGORITHM, first: 0 },
    EnumEncoding { kind: "rng_distribution", code: 13, values: names::RNG_DISTRIBUTION, first: 1 },
    EnumEncoding { kind: "transpose", code: 16, values: names::TRANSPOSE, first: 0 },
    EnumEncoding { kind: "result_accuracy_mode", code: 19, values: names::RESULT_ACCURACY_MODE, first: 0 },
];

/// The encoding of the enum `kind` (`precision`); `None` for one VHLO lacks.
pub(crate) fn enum_by_kind(kind: &str) -> Option<&'static EnumEncoding> {
    ENUMS.iter().find(|e| e.kind == kind)
}

/// The enum VHLO attribute code `code` encodes; `None` for a code of another attribute.
pub(crate) fn enum_by_code(code: u64) -> Option<&'static EnumEncoding> {
    ENUMS.iter().find(|e| e.code == code)
}

/// The version VHLO attribute or type `what` first exists in, for those newer than 0.9.0.
pub(crate) fn introduced(what: &str) -> Option<StableHloVersion> {
    let scalar = SCALARS.iter().find(|s| s.name == what && s.since > crate::MINIMUM_VERSION).map(|s| s.since);
    scalar.or_else(|| ATTRIBUTES_AND_TYPES.iter().find(|(name, _)| *name == what).map(|&(_, since)| since))
}

/// The VHLO op version `name` (`add_v1`); `None` for one this table does not hold.
pub(crate) fn op_version(name: &str) -> Option<&'static OpVersion> {
    OPS.binary_search_by(|o| o.name.cmp(name)).ok().map(|i| &OPS[i])
}

/// The versions of the StableHLO op `base` (`add`), oldest first (empty for one VHLO lacks).
pub(crate) fn op_versions(base: &str) -> &'static [&'static OpVersion] {
    static BY_BASE: OnceLock<HashMap<&'static str, Vec<&'static OpVersion>>> = OnceLock::new();
    let by_base = BY_BASE.get_or_init(|| {
        let mut map: HashMap<&'static str, Vec<&'static OpVersion>> = HashMap::new();
        for o in OPS {
            map.entry(o.base()).or_default().push(o);
        }
        for versions in map.values_mut() {
            versions.sort_by_key(|o| o.since);
        }
        map
    });
    by_base.get(base).map_or(&[], Vec::as_slice)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows sorted by name (the reader looks them up by binary search), attributes sorted (the
    /// property order), and each op's versions one after the other: the first from 0.9.0 or
    /// later, each next one from the minor version after its predecessor's last, the newest
    /// current.
    #[test]
    fn the_table_is_ordered_and_each_ops_versions_follow_each_other() {
        assert!(OPS.windows(2).all(|w| w[0].name < w[1].name));
        for o in OPS {
            assert!(o.attributes.windows(2).all(|w| w[0] < w[1]), "{}", o.name);
            assert!(o.since >= crate::MINIMUM_VERSION, "{}", o.name);
            let versions = op_versions(o.base());
            let n = versions.iter().position(|x| x.name == o.name).unwrap();
            assert_eq!(o.name, format!("{}_v{}", o.base(), n + 1));
            match versions.get(n + 1) {
                Some(next) => {
                    let until = o.until.unwrap_or_else(|| panic!("{} is current before {}", o.name, next.name));
                    assert_eq!(next.since, v(until.major, until.minor + 1), "{} after {}", next.name, o.name);
                }
                None => assert!(o.until.is_none(), "{} is not current and has no successor", o.name),
            }
        }
        assert_eq!(op_version("collective_broadcast_v2").map(|o| o.since), Some(v(1, 20)));
        assert!(op_version("add_v2").is_none());
        assert_eq!(op_versions("log").iter().map(|o| o.name).collect::<Vec<_>>(), ["log_v1", "log_v2"]);
        assert_eq!(introduced("!stablehlo.future"), Some(v(1, 15)));
        assert_eq!(introduced("f32"), None);
    }

    /// Each default is of an attribute that a version of each op it names holds, named once.
    #[test]
    fn each_default_belongs_to_its_ops() {
        for (i, (ops, attribute, _, on_read)) in DEFAULTS.iter().enumerate() {
            for base in *ops {
                let versions = op_versions(base);
                assert!(
                    versions.iter().any(|o| o.attributes.contains(attribute)),
                    "{base} has no attribute {attribute}"
                );
                assert_eq!(default_of(base, attribute).map(|(_, r)| r), Some(*on_read));
                assert!(
                    !DEFAULTS[i + 1..].iter().any(|(o, a, _, _)| a == attribute && o.contains(base)),
                    "{base}'s {attribute} twice"
                );
            }
            if let DroppedWith(other) = on_read {
                assert!(ops.iter().all(|b| default_of(b, other).is_some()), "{attribute} with {other}");
            }
        }
        assert_eq!(default_of("sort", "dimension"), Some((I64(-1), Dropped)));
        assert_eq!(default_of("concatenate", "dimension"), None);
        assert_eq!(default_of("triangular_solve", "lower"), None);
    }

    #[test]
    fn each_scalar_type_has_one_code() {
        for (i, t) in SCALARS.iter().enumerate() {
            assert!(SCALARS[i + 1..].iter().all(|o| o.code != t.code && o.element != t.element), "{}", t.name);
            assert_eq!(scalar_by_code(t.code).map(|s| s.name), Some(t.name));
            assert_eq!(scalar_by_element(t.element).map(|s| s.code), Some(t.code));
            assert!(t.since >= crate::MINIMUM_VERSION, "{}", t.name);
        }
        assert_eq!(introduced("f8E4M3FNUZ"), Some(v(0, 10)));
        assert_eq!(introduced("i2"), Some(v(1, 2)));
        assert_eq!(introduced("f8E4M3FN"), None);
        assert!(scalar_by_element(ElementType::C64).is_none());
    }

    #[test]
    fn each_enum_has_one_code() {
        for e in ENUMS {
            assert_eq!(enum_by_code(e.code).map(|x| x.kind), Some(e.kind));
            assert_eq!(enum_by_kind(e.kind).map(|x| x.code), Some(e.code));
        }
        assert_eq!(enum_by_kind("precision").map(|e| e.values), Some(names::PRECISION));
        assert!(enum_by_code(5).is_none());
    }
    #[test]
    fn a_last_version_covers_the_patch_releases_of_its_minor() {
        let v = StableHloVersion::new;
        let at =
            |t| super::op_versions("exponential").iter().filter(|o| o.contains(t)).map(|o| o.name).collect::<Vec<_>>();
        assert_eq!(at(v(1, 8, 0)), ["exponential_v1"]);
        assert_eq!(at(v(1, 8, 2)), ["exponential_v1"]);
        assert_eq!(at(v(1, 9, 0)), ["exponential_v2"]);
    }
}
