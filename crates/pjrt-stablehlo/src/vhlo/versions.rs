//! The StableHLO versions in which each VHLO op exists (facts from StableHLO's VHLO op
//! declarations: the name and version range of each): the writer picks, for a target, the op
//! version that exists there, and names the version an op needs where none does.

use std::collections::HashMap;
use std::sync::OnceLock;

use pjrt_types::StableHloVersion;

/// The oldest StableHLO version a portable artifact can be written for: 0.9.0, VHLO's first.
///
/// ```
/// assert_eq!(pjrt_stablehlo::MINIMUM_VERSION.to_string(), "0.9.0");
/// ```
pub const MINIMUM_VERSION: StableHloVersion = StableHloVersion::new(0, 9, 0);

/// The newest StableHLO version this crate reads and writes: 1.20.0 (what the 0.115 CPU
/// plugin reads).
///
/// ```
/// assert_eq!(pjrt_stablehlo::CURRENT_VERSION.to_string(), "1.20.0");
/// ```
pub const CURRENT_VERSION: StableHloVersion = StableHloVersion::new(1, 20, 0);

/// The newest StableHLO version whose portable artifacts this crate reads: 1.22.0 (tested on
/// StableHLO's serializer's output at every minor version from [`MINIMUM_VERSION`] to this
/// one). An artifact of a newer version is read where it uses nothing newer; where it does, the
/// error ([`crate::Error::Unsupported`]) says the artifact is newer than this reader.
///
/// ```
/// assert_eq!(pjrt_stablehlo::NEWEST_READ_VERSION.to_string(), "1.22.0");
/// assert!(pjrt_stablehlo::NEWEST_READ_VERSION >= pjrt_stablehlo::CURRENT_VERSION);
/// ```
pub const NEWEST_READ_VERSION: StableHloVersion = StableHloVersion::new(1, 22, 0);

/// The MLIR bytecode version a portable artifact for `target` is written in (as StableHLO's
/// serializer picks it: 0 before 0.10.0, 1 before 0.12.0, 3 before 0.14.0, 4 before 0.15.0, 6
/// since); `None` outside [`MINIMUM_VERSION`]..=[`CURRENT_VERSION`].
pub(crate) fn bytecode_version(target: StableHloVersion) -> Option<u64> {
    let v = |minor| StableHloVersion::new(0, minor, 0);
    Some(match target {
        s if s < MINIMUM_VERSION || s > CURRENT_VERSION => return None,
        s if s < v(10) => 0,
        s if s < v(12) => 1,
        s if s < v(14) => 3,
        s if s < v(15) => 4,
        _ => 6,
    })
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Range {
    pub min: StableHloVersion,
    pub max: Option<StableHloVersion>,
}

impl Range {
    pub(crate) fn contains(&self, v: StableHloVersion) -> bool {
        self.min <= v && self.max.is_none_or(|m| v <= m)
    }
}

const OPS: &[(&str, &str, &str)] = &[
    ("abs_v1", "0.9.0", "current"),
    ("add_v1", "0.9.0", "current"),
    ("after_all_v1", "0.9.0", "current"),
    ("all_gather_v1", "0.9.0", "1.4.0"),
    ("all_gather_v2", "1.5.0", "current"),
    ("all_reduce_v1", "0.9.0", "1.4.0"),
    ("all_reduce_v2", "1.5.0", "current"),
    ("all_to_all_v1", "0.9.0", "1.4.0"),
    ("all_to_all_v2", "1.5.0", "current"),
    ("and_v1", "0.9.0", "current"),
    ("async_start_v1", "1.15.0", "current"),
    ("async_done_v1", "1.15.0", "current"),
    ("atan2_v1", "0.9.0", "current"),
    ("batch_norm_grad_v1", "0.9.0", "current"),
    ("batch_norm_inference_v1", "0.9.0", "current"),
    ("batch_norm_training_v1", "0.9.0", "current"),
    ("bitcast_convert_v1", "0.9.0", "current"),
    ("broadcast_in_dim_v1", "0.9.0", "current"),
    ("broadcast_v1", "0.9.0", "current"),
    ("call_v1", "0.9.0", "current"),
    ("case_v1", "0.9.0", "current"),
    ("cbrt_v1", "0.9.0", "1.9.0"),
    ("cbrt_v2", "1.10.0", "current"),
    ("ceil_v1", "0.9.0", "current"),
    ("cholesky_v1", "0.9.0", "current"),
    ("clamp_v1", "0.9.0", "current"),
    ("count_leading_zeros_v1", "0.9.0", "current"),
    ("cross-replica-sum_v1", "0.9.0", "current"),
    ("collective_broadcast_v1", "0.16.0", "1.19.0"),
    ("collective_broadcast_v2", "1.20.0", "current"),
    ("collective_reduce_v1", "1.19.0", "current"),
    ("collective_permute_v1", "0.9.0", "current"),
    ("compare_v1", "0.9.0", "current"),
    ("complex_v1", "0.9.0", "current"),
    ("composite_v1", "0.19.0", "1.13.0"),
    ("composite_v2", "1.14.0", "current"),
    ("concatenate_v1", "0.9.0", "current"),
    ("constant_v1", "0.9.0", "current"),
    ("convert_v1", "0.9.0", "current"),
    ("convolution_v1", "0.9.0", "current"),
    ("cosine_v1", "0.9.0", "1.9.0"),
    ("cosine_v2", "1.10.0", "current"),
    ("create_token_v1", "0.9.0", "current"),
    ("custom_call_v1", "0.9.0", "1.17.0"),
    ("custom_call_v2", "1.18.0", "current"),
    ("divide_v1", "0.9.0", "current"),
    ("dot_general_v1", "0.9.0", "1.5.0"),
    ("dot_general_v2", "1.6.0", "current"),
    ("dot_v1", "0.9.0", "current"),
    ("dynamic_broadcast_in_dim_v1", "0.9.0", "current"),
    ("dynamic_conv_v1", "0.9.0", "0.19.0"),
    ("dynamic_conv_v2", "0.20.0", "current"),
    ("dynamic_gather_v1", "0.9.0", "1.0.0"),
    ("dynamic_gather_v2", "1.1.0", "current"),
    ("dynamic_iota_v1", "0.9.0", "current"),
    ("dynamic_pad_v1", "0.9.0", "current"),
    ("dynamic_reshape_v1", "0.9.0", "current"),
    ("dynamic_slice_v1", "0.9.0", "current"),
    ("dynamic_update_slice_v1", "0.9.0", "current"),
    ("einsum_v1", "0.9.0", "current"),
    ("exponential_minus_one_v1", "0.9.0", "1.9.0"),
    ("exponential_minus_one_v2", "1.10.0", "current"),
    ("exponential_v1", "0.9.0", "1.8.0"),
    ("exponential_v2", "1.9.0", "current"),
    ("fft_v1", "0.9.0", "current"),
    ("floor_v1", "0.9.0", "current"),
    ("func_v1", "0.9.0", "current"),
    ("gather_v1", "0.9.0", "1.0.0"),
    ("gather_v2", "1.1.0", "current"),
    ("get_dimension_size_v1", "0.9.0", "current"),
    ("get_tuple_element_v1", "0.9.0", "current"),
    ("if_v1", "0.9.0", "current"),
    ("imag_v1", "0.9.0", "current"),
    ("infeed_v1", "0.9.0", "current"),
    ("iota_v1", "0.9.0", "current"),
    ("is_finite_v1", "0.9.0", "current"),
    ("log_plus_one_v1", "0.9.0", "1.9.0"),
    ("log_plus_one_v2", "1.10.0", "current"),
    ("logistic_v1", "0.9.0", "1.9.0"),
    ("logistic_v2", "1.10.0", "current"),
    ("log_v1", "0.9.0", "1.9.0"),
    ("log_v2", "1.10.0", "current"),
    ("map_v1", "0.9.0", "current"),
    ("maximum_v1", "0.9.0", "current"),
    ("minimum_v1", "0.9.0", "current"),
    ("multiply_v1", "0.9.0", "current"),
    ("negate_v1", "0.9.0", "current"),
    ("not_v1", "0.9.0", "current"),
    ("optimization_barrier_v1", "0.9.0", "current"),
    ("or_v1", "0.9.0", "current"),
    ("outfeed_v1", "0.9.0", "current"),
    ("pad_v1", "0.9.0", "current"),
    ("partition_id_v1", "0.9.0", "current"),
    ("popcnt_v1", "0.9.0", "current"),
    ("power_v1", "0.9.0", "current"),
    ("real_dynamic_slice_v1", "0.9.0", "current"),
    ("real_v1", "0.9.0", "current"),
    ("recv_v1", "0.9.0", "1.11.0"),
    ("recv_v2", "1.12.0", "current"),
    ("reduce_v1", "0.9.0", "current"),
    ("reduce_precision_v1", "0.9.0", "current"),
    ("reduce_scatter_v1", "0.9.0", "current"),
    ("reduce_window_v1", "0.9.0", "current"),
    ("remainder_v1", "0.9.0", "current"),
    ("replica_id_v1", "0.9.0", "current"),
    ("reshape_v1", "0.9.0", "current"),
    ("return_v1", "0.9.0", "current"),
    ("reverse_v1", "0.9.0", "current"),
    ("rng_bit_generator_v1", "0.9.0", "current"),
    ("rng_v1", "0.9.0", "current"),
    ("round_nearest_even_v1", "0.9.0", "current"),
    ("round_nearest_afz_v1", "0.9.0", "current"),
    ("rsqrt_v1", "0.9.0", "1.9.0"),
    ("rsqrt_v2", "1.10.0", "current"),
    ("scatter_v1", "0.9.0", "1.0.0"),
    ("scatter_v2", "1.1.0", "current"),
    ("select_and_scatter_v1", "0.9.0", "current"),
    ("select_v1", "0.9.0", "current"),
    ("send_v1", "0.9.0", "1.11.0"),
    ("send_v2", "1.12.0", "current"),
    ("set_dimension_size_v1", "0.9.0", "current"),
    ("shift_left_v1", "0.9.0", "current"),
    ("shift_right_arithmetic_v1", "0.9.0", "current"),
    ("shift_right_logical_v1", "0.9.0", "current"),
    ("sign_v1", "0.9.0", "current"),
    ("sine_v1", "0.9.0", "1.9.0"),
    ("sine_v2", "1.10.0", "current"),
    ("slice_v1", "0.9.0", "current"),
    ("sort_v1", "0.9.0", "current"),
    ("sqrt_v1", "0.9.0", "1.9.0"),
    ("sqrt_v2", "1.10.0", "current"),
    ("subtract_v1", "0.9.0", "current"),
    ("tan_v1", "1.4.0", "1.9.0"),
    ("tan_v2", "1.10.0", "current"),
    ("tanh_v1", "0.9.0", "1.9.0"),
    ("tanh_v2", "1.10.0", "current"),
    ("torch_index_select_v1", "0.9.0", "current"),
    ("transpose_v1", "0.9.0", "current"),
    ("triangular_solve_v1", "0.9.0", "current"),
    ("tuple_v1", "0.9.0", "current"),
    ("unary_einsum_v1", "0.9.0", "current"),
    ("uniform_dequantize_v1", "0.9.0", "current"),
    ("uniform_quantize_v1", "0.9.0", "current"),
    ("while_v1", "0.9.0", "current"),
    ("xor_v1", "0.9.0", "current"),
];

fn parse(s: &str) -> Option<StableHloVersion> {
    StableHloVersion::parse(s)
}

/// The VHLO versions of the StableHLO op `base` (`add`: `add_v1`), oldest first, with the
/// StableHLO versions each exists in. The table is read once (the writer asks for every op).
pub(crate) fn op_versions(base: &str) -> &'static [(&'static str, Range)] {
    static BY_BASE: OnceLock<HashMap<&'static str, Vec<(&'static str, Range)>>> = OnceLock::new();
    let by_base = BY_BASE.get_or_init(|| {
        let mut map: HashMap<&'static str, Vec<(&'static str, Range)>> = HashMap::new();
        for &(name, min, max) in OPS {
            let (Some((op, _)), Some(min)) = (name.rsplit_once("_v"), parse(min)) else { continue };
            map.entry(op).or_default().push((name, Range { min, max: parse(max) }));
        }
        for versions in map.values_mut() {
            versions.sort_by_key(|(_, r)| r.min);
        }
        map
    });
    by_base.get(base).map_or(&[], Vec::as_slice)
}

#[cfg(test)]
mod tests {
    #[test]
    fn bytecode_versions_follow_the_targets() {
        use super::{bytecode_version, CURRENT_VERSION};
        let v = pjrt_types::StableHloVersion::new;
        assert_eq!(bytecode_version(v(0, 8, 9)), None);
        assert_eq!(bytecode_version(v(0, 9, 0)), Some(0));
        assert_eq!(bytecode_version(v(0, 11, 3)), Some(1));
        assert_eq!(bytecode_version(v(0, 13, 0)), Some(3));
        assert_eq!(bytecode_version(v(0, 14, 9)), Some(4));
        assert_eq!(bytecode_version(v(1, 16, 1)), Some(6));
        assert_eq!(bytecode_version(CURRENT_VERSION), Some(6));
        assert_eq!(bytecode_version(v(1, 20, 1)), None);
    }
}
