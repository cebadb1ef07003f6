//! Result shapes from operand shapes: StableHLO's shape functions for the ops `jax.export`
//! emits, used where a result type still has a `?` once the operands are static (and checked
//! against the declared type where it has none).

use crate::ir::{Attr, Dim, Op, Type};

use super::fold::{i64s, int_attr, Const};

/// The dimensions of a static tensor type; an error naming what is still dynamic.
pub(crate) fn static_dims(t: &Type) -> Result<Vec<u64>, String> {
    match t {
        Type::Tensor(t) => t
            .dims
            .iter()
            .map(|d| match d {
                Dim::Fixed(n) => Ok(*n),
                Dim::Dynamic => Err("an operand still has a dynamic dimension".to_string()),
            })
            .collect(),
        Type::Token | Type::Tuple(_) => Ok(Vec::new()),
        other => Err(format!("an operand of type {} is not a ranked tensor", crate::print::type_text(other))),
    }
}

pub(crate) fn is_static(t: &Type) -> bool {
    match t {
        Type::Tensor(t) => t.dims.iter().all(|d| matches!(d, Dim::Fixed(_))),
        Type::Tuple(ts) => ts.iter().all(is_static),
        Type::UnrankedTensor(_) => false,
        _ => true,
    }
}

/// Elementwise ops: the result has the shape of the operand of highest rank (`select`'s and
/// `clamp`'s other operands may be scalars).
const ELEMENTWISE: &[&str] = &[
    "abs",
    "add",
    "and",
    "atan2",
    "cbrt",
    "ceil",
    "clamp",
    "compare",
    "complex",
    "convert",
    "cosine",
    "count_leading_zeros",
    "divide",
    "exponential",
    "exponential_minus_one",
    "floor",
    "imag",
    "is_finite",
    "log",
    "log_plus_one",
    "logistic",
    "maximum",
    "minimum",
    "multiply",
    "negate",
    "not",
    "or",
    "popcnt",
    "power",
    "real",
    "reduce_precision",
    "remainder",
    "round_nearest_afz",
    "round_nearest_even",
    "rsqrt",
    "select",
    "shift_left",
    "shift_right_arithmetic",
    "shift_right_logical",
    "sign",
    "sine",
    "sqrt",
    "subtract",
    "tan",
    "tanh",
    "xor",
    "map",
    "uniform_quantize",
    "uniform_dequantize",
    "reverse",
    "cholesky",
    "dynamic_update_slice",
    "select_and_scatter",
    "all_reduce",
    "collective_permute",
    "cross-replica-sum",
    "stochastic_convert",
];

/// chlo's elementwise ops (when a producer kept them).
const CHLO_ELEMENTWISE: &[&str] = &[
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "bessel_i1e",
    "conj",
    "cosh",
    "digamma",
    "erf",
    "erf_inv",
    "erfc",
    "is_inf",
    "is_neg_inf",
    "is_pos_inf",
    "lgamma",
    "next_after",
    "polygamma",
    "sinh",
    "square",
    "tan",
    "zeta",
    "broadcast_add",
    "broadcast_multiply",
];

fn field<'a>(op: &'a Op, attr: &str, name: &str) -> Option<&'a Attr> {
    match op.attr(attr)? {
        Attr::Struct { fields, .. } => fields.iter().find(|(n, _)| *n == name).map(|(_, a)| a),
        _ => None,
    }
}

fn field_list(op: &Op, attr: &str, name: &str) -> Vec<i64> {
    match field(op, attr, name) {
        Some(Attr::I64Array(v)) => v.clone(),
        Some(Attr::Integer { value, .. }) => vec![*value],
        _ => Vec::new(),
    }
}

fn field_int(op: &Op, attr: &str, name: &str) -> Option<i64> {
    match field(op, attr, name)? {
        Attr::Integer { value, .. } => Some(*value),
        _ => None,
    }
}

fn idx(v: i64, rank: usize, what: &str) -> Result<usize, String> {
    usize::try_from(v).ok().filter(|&i| i < rank).ok_or_else(|| format!("{what} {v} is out of range for rank {rank}"))
}

fn nonneg(v: i64, what: &str) -> Result<u64, String> {
    u64::try_from(v).map_err(|_| format!("{what} is negative ({v})"))
}

/// Which of `rank` dimensions `list` names (entries out of range name none).
fn mask(list: &[i64], rank: usize) -> Vec<bool> {
    let mut m = vec![false; rank];
    for &x in list {
        if let Some(slot) = usize::try_from(x).ok().and_then(|i| m.get_mut(i)) {
            *slot = true;
        }
    }
    m
}

/// `(padded - window) / stride + 1`, StableHLO's window arithmetic (0 when the window does not fit).
fn window_out(
    size: u64,
    window: i64,
    stride: i64,
    base_dil: i64,
    win_dil: i64,
    lo: i64,
    hi: i64,
) -> Result<u64, String> {
    if window < 1 || stride < 1 || base_dil < 1 || win_dil < 1 {
        return Err("a window size, stride or dilation is not positive".to_string());
    }
    // In i128, where no sizes and attributes of 64 bits overflow.
    let (size, window, stride, base_dil, win_dil) =
        (i128::from(size), i128::from(window), i128::from(stride), i128::from(base_dil), i128::from(win_dil));
    let dilated = if size == 0 { 0 } else { (size - 1) * base_dil + 1 };
    let padded = dilated + i128::from(lo) + i128::from(hi);
    let eff = (window - 1) * win_dil + 1;
    let out = if padded < eff { 0 } else { (padded - eff) / stride + 1 };
    u64::try_from(out).map_err(|_| format!("a window's output size ({out}) does not fit in 64 bits"))
}

/// Padding as pairs: an `Nx2` dense attribute or constant.
pub(crate) fn padding_pairs(v: &[i64], rank: usize) -> Result<Vec<(i64, i64)>, String> {
    if v.is_empty() {
        return Ok(vec![(0, 0); rank]);
    }
    if v.len() != 2 * rank {
        return Err(format!("padding has {} values for {rank} dimensions", v.len()));
    }
    Ok(v.chunks(2).map(|p| (p[0], p[1])).collect())
}

/// The result dimensions of `op` (one list per result) from its operands' types and the
/// constants known for them; `Ok(None)` when this has no rule for the op (its declared result
/// types stand, and must be static). `shape_operands` are the constants of a dynamic op's shape
/// operands, already checked by the caller.
pub(crate) fn infer(op: &Op, ins: &[&Type], consts: &[Option<&Const>]) -> Result<Option<Vec<Vec<u64>>>, String> {
    let d = |i: usize| -> Result<Vec<u64>, String> {
        static_dims(ins.get(i).ok_or_else(|| format!("operand {i} is missing"))?)
    };
    let konst = |i: usize, what: &str| -> Result<Vec<i64>, String> {
        consts
            .get(i)
            .copied()
            .flatten()
            .map(|c| c.as_list().to_vec())
            .ok_or_else(|| format!("its {what} (operand {i}) is computed from data, not from shapes"))
    };
    let one = |v: Vec<u64>| Ok(Some(vec![v]));
    let (dialect, base) = op.name.split_once('.').unwrap_or(("", op.name.as_str()));
    if dialect == "chlo" {
        if CHLO_ELEMENTWISE.contains(&base) {
            return one(widest(ins)?);
        }
        if base == "top_k" {
            let mut v = d(0)?;
            let k = nonneg(int_attr(op, "k").ok_or("top_k has no k")?, "k")?;
            *v.last_mut().ok_or("top_k of a scalar")? = k;
            return Ok(Some(vec![v.clone(), v]));
        }
        return Ok(None);
    }
    if dialect == "sdy" {
        return match base {
            "sharding_constraint" | "reshard" | "propagation_barrier" => one(d(0)?),
            _ => Ok(None),
        };
    }
    if dialect != "stablehlo" {
        return Ok(None);
    }
    if ELEMENTWISE.contains(&base) {
        let v = if base == "dynamic_update_slice" || base == "select_and_scatter" { d(0)? } else { same_shape(ins)? };
        return Ok(Some(vec![v; op.results.len().max(1)]));
    }
    match base {
        "constant"
        | "iota"
        | "rng"
        | "rng_bit_generator"
        | "get_dimension_size"
        | "partition_id"
        | "replica_id"
        | "create_token"
        | "after_all"
        | "infeed"
        | "recv"
        | "custom_call"
        | "return"
        | "while"
        | "case"
        | "if"
        | "composite"
        | "all_gather"
        | "reduce_scatter"
        | "all_to_all"
        | "batch_norm_training"
        | "batch_norm_inference"
        | "batch_norm_grad"
        | "outfeed"
        | "send"
        | "tuple"
        | "get_tuple_element" => Ok(None),
        "optimization_barrier" => Ok(Some(ins.iter().map(|t| static_dims(t)).collect::<Result<_, _>>()?)),
        "sort" => Ok(Some((0..ins.len()).map(d).collect::<Result<_, _>>()?)),
        "bitcast_convert" => {
            let v = d(0)?;
            // StableHLO's num_bits (i8 → i4 adds a dimension of 2), not storage bytes.
            let width = |t: &Type| match t {
                Type::Tensor(t) => crate::ir::element_bits(&t.element),
                _ => None,
            };
            let (a, b) = (width(ins[0]), op.results.first().and_then(|r| width(&r.ty)));
            match (a, b) {
                (Some(a), Some(b)) if a == b => one(v),
                (Some(a), Some(b)) if a > b && a % b == 0 => one([v, vec![u64::from(a / b)]].concat()),
                (Some(a), Some(b)) if a < b && b % a == 0 => one(v[..v.len().saturating_sub(1)].to_vec()),
                _ => Ok(None),
            }
        }
        "broadcast_in_dim" => {
            let v = d(0)?;
            let map = i64s(op, "broadcast_dimensions").unwrap_or_default();
            let Some(Type::Tensor(declared)) = op.results.first().map(|r| &r.ty) else { return Ok(None) };
            if map.len() != v.len() {
                return Err(format!(
                    "broadcast_dimensions has {} entries for an operand of rank {}",
                    map.len(),
                    v.len()
                ));
            }
            let mut out: Vec<Option<u64>> =
                declared.dims.iter().map(|d| if let Dim::Fixed(n) = d { Some(*n) } else { None }).collect();
            for (k, &j) in map.iter().enumerate() {
                let j = idx(j, out.len(), "broadcast dimension")?;
                let size = *v.get(k).ok_or("broadcast_dimensions is longer than the operand's rank")?;
                if size != 1 || out[j].is_none() {
                    out[j] = Some(size);
                }
            }
            one(out
                .into_iter()
                .map(|o| o.ok_or("a result dimension is not given by the operand"))
                .collect::<Result<_, _>>()?)
        }
        "broadcast" => {
            let sizes = i64s(op, "broadcast_sizes").unwrap_or_default();
            let mut v: Vec<u64> = sizes.iter().map(|&s| nonneg(s, "a broadcast size")).collect::<Result<_, _>>()?;
            v.extend(d(0)?);
            one(v)
        }
        "transpose" => {
            let v = d(0)?;
            let perm = i64s(op, "permutation").unwrap_or_default();
            one(perm.iter().map(|&p| Ok(v[idx(p, v.len(), "permutation entry")?])).collect::<Result<_, String>>()?)
        }
        "reduce" | "argmax" => {
            let v = d(0)?;
            let dims: Vec<usize> = i64s(op, "dimensions")
                .unwrap_or_default()
                .iter()
                .map(|&x| idx(x, v.len(), "reduced dimension"))
                .collect::<Result<_, _>>()?;
            let mut gone = vec![false; v.len()];
            for i in dims {
                gone[i] = true;
            }
            let kept: Vec<u64> = v.iter().zip(gone).filter(|(_, g)| !g).map(|(&n, _)| n).collect();
            Ok(Some(vec![kept; op.results.len()]))
        }
        "dot_general" => {
            let (l, r) = (d(0)?, d(1)?);
            let lb = field_list(op, "dot_dimension_numbers", "lhs_batching_dimensions");
            let lc = field_list(op, "dot_dimension_numbers", "lhs_contracting_dimensions");
            let rb = field_list(op, "dot_dimension_numbers", "rhs_batching_dimensions");
            let rc = field_list(op, "dot_dimension_numbers", "rhs_contracting_dimensions");
            let mut out = Vec::new();
            for &b in &lb {
                out.push(l[idx(b, l.len(), "batch dimension")?]);
            }
            let (lskip, rskip) = (mask(&[lb, lc].concat(), l.len()), mask(&[rb, rc].concat(), r.len()));
            out.extend(l.iter().zip(lskip).filter(|(_, s)| !s).map(|(&n, _)| n));
            out.extend(r.iter().zip(rskip).filter(|(_, s)| !s).map(|(&n, _)| n));
            one(out)
        }
        "dot" => {
            let (l, r) = (d(0)?, d(1)?);
            let mut out = l[..l.len().saturating_sub(1)].to_vec();
            if r.len() == 2 {
                out.push(r[1]);
            }
            one(out)
        }
        "convolution" | "dynamic_conv" => {
            let (l, k) = (d(0)?, d(1)?);
            let dn = "dimension_numbers";
            let ib = idx(field_int(op, dn, "input_batch_dimension").ok_or("no dimension numbers")?, l.len(), "batch")?;
            let isp = field_list(op, dn, "input_spatial_dimensions");
            let kof = idx(
                field_int(op, dn, "kernel_output_feature_dimension").ok_or("no dimension numbers")?,
                k.len(),
                "feature",
            )?;
            let ksp = field_list(op, dn, "kernel_spatial_dimensions");
            let ob = field_int(op, dn, "output_batch_dimension").ok_or("no dimension numbers")?;
            let of = field_int(op, dn, "output_feature_dimension").ok_or("no dimension numbers")?;
            let osp = field_list(op, dn, "output_spatial_dimensions");
            let n = isp.len();
            let get = |name: &str, default: i64| {
                i64s(op, name).map_or_else(|| vec![default; n], |v| window_list(v, n, base == "dynamic_conv"))
            };
            let (strides, lhs_dil, rhs_dil) =
                (get("window_strides", 1), get("lhs_dilation", 1), get("rhs_dilation", 1));
            if strides.len() != n || lhs_dil.len() != n || rhs_dil.len() != n {
                return Err(format!("window attributes do not match the {n} spatial dimensions"));
            }
            let pad =
                if base == "dynamic_conv" { konst(2, "padding")? } else { i64s(op, "padding").unwrap_or_default() };
            let pad = padding_pairs(&pad, n)?;
            let bgc = int_attr(op, "batch_group_count").unwrap_or(1).max(1) as u64;
            let mut out = vec![0u64; n + 2];
            let rank = out.len();
            out[idx(ob, rank, "output batch")?] = l[ib] / bgc;
            out[idx(of, rank, "output feature")?] = k[kof];
            for i in 0..n {
                let size = l[idx(isp[i], l.len(), "spatial")?];
                let w = k[idx(*ksp.get(i).ok_or("kernel spatial dims")?, k.len(), "spatial")?] as i64;
                let o = idx(*osp.get(i).ok_or("output spatial dims")?, rank, "spatial")?;
                out[o] = window_out(size, w, strides[i], lhs_dil[i], rhs_dil[i], pad[i].0, pad[i].1)?;
            }
            one(out)
        }
        "reduce_window" => {
            let v = d(0)?;
            let n = v.len();
            let get = |name: &str| i64s(op, name).unwrap_or_else(|| vec![1; n]);
            let (w, s, bd, wd) =
                (get("window_dimensions"), get("window_strides"), get("base_dilations"), get("window_dilations"));
            let pad = padding_pairs(&i64s(op, "padding").unwrap_or_default(), n)?;
            if w.len() != n || s.len() != n || bd.len() != n || wd.len() != n {
                return Err("window attributes do not match the operand's rank".to_string());
            }
            let out = (0..n)
                .map(|i| window_out(v[i], w[i], s[i], bd[i], wd[i], pad[i].0, pad[i].1))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Some(vec![out; op.results.len()]))
        }
        "gather" | "dynamic_gather" => {
            let idxs = d(1)?;
            let sizes = if base == "dynamic_gather" {
                konst(2, "slice sizes")?
            } else {
                i64s(op, "slice_sizes").unwrap_or_default()
            };
            let dn = "dimension_numbers";
            let offset_dims = field_list(op, dn, "offset_dims");
            let collapsed = field_list(op, dn, "collapsed_slice_dims");
            let operand_batching = field_list(op, dn, "operand_batching_dims");
            let ivd = field_int(op, dn, "index_vector_dim").unwrap_or(idxs.len() as i64);
            let batch: Vec<u64> = idxs.iter().enumerate().filter(|(i, _)| *i as i64 != ivd).map(|(_, &n)| n).collect();
            let dropped = mask(&[collapsed, operand_batching].concat(), sizes.len());
            let offsets: Vec<u64> = sizes
                .iter()
                .zip(dropped)
                .filter(|(_, d)| !d)
                .map(|(&s, _)| nonneg(s, "a slice size"))
                .collect::<Result<_, _>>()?;
            let rank = batch.len() + offsets.len();
            let is_offset = mask(&offset_dims, rank);
            let mut out = Vec::with_capacity(rank);
            let (mut b, mut o) = (batch.iter(), offsets.iter());
            for offset in is_offset {
                let next = if offset { o.next() } else { b.next() };
                out.push(*next.ok_or("gather dimension numbers do not match the operands")?);
            }
            one(out)
        }
        "scatter" => Ok(Some((0..op.results.len()).map(d).collect::<Result<_, _>>()?)),
        "dynamic_slice" => one(i64s(op, "slice_sizes")
            .unwrap_or_default()
            .iter()
            .map(|&s| nonneg(s, "a slice size"))
            .collect::<Result<_, _>>()?),
        "slice" | "real_dynamic_slice" => {
            let v = d(0)?;
            let (start, limit, strides) = if base == "slice" {
                (
                    i64s(op, "start_indices").unwrap_or_default(),
                    i64s(op, "limit_indices").unwrap_or_default(),
                    i64s(op, "strides").unwrap_or_else(|| vec![1; v.len()]),
                )
            } else {
                (konst(1, "start indices")?, konst(2, "limit indices")?, konst(3, "strides")?)
            };
            if start.len() != v.len() || limit.len() != v.len() || strides.len() != v.len() {
                return Err("slice bounds do not match the operand's rank".to_string());
            }
            let out = (0..v.len())
                .map(|i| {
                    let (a, b, s) = (start[i], limit[i], strides[i]);
                    if a < 0 || b < a || b as u64 > v[i] || s < 1 {
                        return Err(format!("slice [{a}:{b}:{s}] is out of bounds for a dimension of size {}", v[i]));
                    }
                    Ok(((b - a) as u64).div_ceil(s as u64))
                })
                .collect::<Result<_, _>>()?;
            one(out)
        }
        "pad" | "dynamic_pad" => {
            let v = d(0)?;
            let (lo, hi, interior) = if base == "pad" {
                (
                    i64s(op, "edge_padding_low").unwrap_or_default(),
                    i64s(op, "edge_padding_high").unwrap_or_default(),
                    i64s(op, "interior_padding").unwrap_or_default(),
                )
            } else {
                (konst(2, "low padding")?, konst(3, "high padding")?, konst(4, "interior padding")?)
            };
            if lo.len() != v.len() || hi.len() != v.len() || interior.len() != v.len() {
                return Err("padding does not match the operand's rank".to_string());
            }
            let out = (0..v.len())
                .map(|i| {
                    if interior[i] < 0 {
                        return Err(format!("interior padding is negative ({})", interior[i]));
                    }
                    // In i128, where no sizes and attributes of 64 bits overflow.
                    let size = i128::from(v[i]);
                    let inner = if size == 0 { 0 } else { (size - 1) * i128::from(interior[i]) };
                    let n = size + inner + i128::from(lo[i]) + i128::from(hi[i]);
                    u64::try_from(n).map_err(|_| format!("a padded size ({n}) is negative or does not fit in 64 bits"))
                })
                .collect::<Result<_, _>>()?;
            one(out)
        }
        "concatenate" => {
            let axis = int_attr(op, "dimension").ok_or("concatenate has no dimension")?;
            let mut out = d(0)?;
            let a = idx(axis, out.len(), "concatenate dimension")?;
            for i in 1..ins.len() {
                let part = d(i)?;
                if part.len() != out.len() {
                    return Err(format!("operand {i} has rank {}, operand 0 rank {}", part.len(), out.len()));
                }
                out[a] = out[a].checked_add(part[a]).ok_or("the concatenated size overflows")?;
            }
            one(out)
        }
        "triangular_solve" => one(d(1)?),
        "fft" => {
            let mut v = d(0)?;
            let len: Vec<u64> = i64s(op, "fft_length")
                .unwrap_or_default()
                .iter()
                .map(|&n| nonneg(n, "an fft length"))
                .collect::<Result<_, _>>()?;
            let kind = match op.attr("fft_type") {
                Some(Attr::Enum(e)) => e.value,
                _ => "FFT",
            };
            let r = v.len();
            match kind {
                "RFFT" => {
                    if let (Some(last), Some(&n)) = (v.last_mut(), len.last()) {
                        *last = n / 2 + 1;
                    }
                }
                "IRFFT" if len.len() <= r => v[r - len.len()..].copy_from_slice(&len),
                _ => {}
            }
            one(v)
        }
        "reshape" | "dynamic_reshape" | "dynamic_broadcast_in_dim" | "dynamic_iota" => {
            if base == "reshape" {
                return Ok(None);
            }
            let i = if base == "dynamic_iota" { 0 } else { 1 };
            one(konst(i, "output shape")?
                .iter()
                .map(|&n| nonneg(n, "an output dimension"))
                .collect::<Result<_, _>>()?)
        }
        _ => Ok(None),
    }
}

/// [`widest`], where every operand must have that shape or be a scalar (`select`'s and
/// `clamp`'s may): StableHLO's elementwise ops do not broadcast.
fn same_shape(ins: &[&Type]) -> Result<Vec<u64>, String> {
    let v = widest(ins)?;
    for t in ins {
        if matches!(t, Type::Tensor(_)) {
            let w = static_dims(t)?;
            if !w.is_empty() && w != v {
                return Err(format!("its operands have the shapes {v:?} and {w:?}, which differ"));
            }
        }
    }
    Ok(v)
}

/// The dimensions of the operand of highest rank.
fn widest(ins: &[&Type]) -> Result<Vec<u64>, String> {
    let mut best: Option<Vec<u64>> = None;
    for t in ins {
        if matches!(t, Type::Tensor(_)) {
            let v = static_dims(t)?;
            if best.as_ref().is_none_or(|b| v.len() > b.len()) {
                best = Some(v);
            }
        }
    }
    best.ok_or_else(|| "no tensor operand".to_string())
}

/// A dynamic_conv's window attribute `v` for `n` spatial dimensions: `v` itself, or for a
/// longer list whose entries are all the same (JAX's 1-D `dynamic_conv` gives
/// `window_strides = array<i64: 2, 2>`, which MLIR's verifier lets through) its first `n`,
/// which any reading of it gives. A list that differs is left as it is, and refused.
pub(crate) fn window_list(v: Vec<i64>, n: usize, dynamic_conv: bool) -> Vec<i64> {
    if dynamic_conv && v.len() > n && v.windows(2).all(|w| w[0] == w[1]) {
        v[..n].to_vec()
    } else {
        v
    }
}
