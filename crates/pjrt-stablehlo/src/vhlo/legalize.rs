//! VHLO ops mapped back to StableHLO (what StableHLO's `vhlo-legalize-to-stablehlo` does):
//! versioned names lose their `_vN`, attributes VHLO flattened are put back together
//! (`#stablehlo.dot<...>`, `#stablehlo.conv<...>`, gather/scatter dimension numbers, channel
//! handles), integer lists become `array<i64: ...>`, symbol names become `@refs`, and
//! attributes equal to StableHLO's defaults are dropped.

use super::table::{default_of, defaults_of, DefaultValue, OnRead};
use crate::error::{Error, Result};
use crate::ir::{Attr, ElementType, Type};

/// The inherent attributes of a VHLO op (`add_v1`), in property order; `None` for an op this
/// reader does not know.
pub(crate) fn property_names(op: &str) -> Option<&'static [&'static str]> {
    super::table::op_version(op).map(|o| o.attributes)
}

/// An op's attribute dictionary as an artifact older than bytecode version 5 holds it (no
/// properties): its inherent attributes (in property order) and the rest.
pub(crate) fn split_inherent(op: &str, mut dict: Attrs, at: usize) -> Result<(Attrs, Attrs)> {
    let names = property_names(op)
        .ok_or_else(|| Error::unsupported(at, format!("VHLO op {op} (not one this reader knows)")))?;
    let mut inherent = Vec::with_capacity(names.len());
    for n in names {
        if let Some(a) = take(&mut dict, n) {
            inherent.push(((*n).to_string(), a));
        }
    }
    Ok((inherent, dict))
}

/// `add_v1` -> `add`.
fn base_name(op: &str) -> &str {
    match op.rfind("_v") {
        Some(i) if op[i + 2..].bytes().all(|b| b.is_ascii_digit()) && i + 2 < op.len() => &op[..i],
        _ => op,
    }
}

type Attrs = Vec<(String, Attr)>;

fn take(attrs: &mut Attrs, name: &str) -> Option<Attr> {
    let i = attrs.iter().position(|(n, _)| n == name)?;
    Some(attrs.remove(i).1)
}

fn get<'x>(attrs: &'x Attrs, name: &str) -> Option<&'x Attr> {
    attrs.iter().find(|(n, _)| n == name).map(|(_, a)| a)
}

fn set(attrs: &mut Attrs, name: &str, value: Attr) {
    match attrs.iter_mut().find(|(n, _)| n == name) {
        Some(slot) => slot.1 = value,
        None => attrs.push((name.to_string(), value)),
    }
}

/// The elements of an integer dense attribute, as i64 (a splat repeated, up to 2^16 elements:
/// these are the short lists VHLO holds as tensors), each sign-extended from its own width.
fn dense_ints(a: &Attr) -> Option<Vec<i64>> {
    let Attr::Dense { ty, data } = a else { return None };
    let Type::Tensor(t) = ty else { return None };
    let (width, signed) = crate::ir::int_width(&t.element)?;
    let d = crate::ir::DenseData::new(ty, data).ok()?;
    if d.is_splat() && d.count() > 1 << 16 {
        return None;
    }
    (0..d.count())
        .map(|i| {
            let mut raw = [0u8; 8];
            let bytes = d.element(i)?;
            raw[..bytes.len()].copy_from_slice(bytes);
            Some(crate::ir::int_of_width(u64::from_le_bytes(raw), width, signed))
        })
        .collect()
}

fn all_eq(a: Option<&Attr>, v: i64) -> bool {
    a.and_then(dense_ints).is_some_and(|x| x.iter().all(|&e| e == v))
}

fn is_bool(a: Option<&Attr>, v: bool) -> bool {
    matches!(a, Some(Attr::Bool(b)) if *b == v)
}

fn is_int(a: Option<&Attr>, v: i64) -> bool {
    matches!(a, Some(Attr::Integer { value, .. }) if *value == v)
}

fn is_empty(a: Option<&Attr>) -> bool {
    match a {
        Some(Attr::Array(v)) => v.is_empty(),
        Some(Attr::Dict(v)) => v.is_empty(),
        Some(Attr::String(s)) => s.is_empty(),
        Some(Attr::Dense { data, .. }) => data.is_empty(),
        _ => false,
    }
}

fn is_none_type(a: Option<&Attr>) -> bool {
    matches!(a, Some(Attr::Type(Type::None)))
}

fn to_i64_array(attrs: &mut Attrs, name: &str, at: usize) -> Result<()> {
    if let Some(i) = attrs.iter().position(|(n, _)| n == name) {
        let v =
            dense_ints(&attrs[i].1).ok_or_else(|| Error::malformed(at, format!("{name} is not an integer tensor")))?;
        attrs[i].1 = Attr::I64Array(v);
    }
    Ok(())
}

fn to_bool_array(attrs: &mut Attrs, name: &str, at: usize) -> Result<()> {
    if let Some(i) = attrs.iter().position(|(n, _)| n == name) {
        let v =
            dense_ints(&attrs[i].1).ok_or_else(|| Error::malformed(at, format!("{name} is not a boolean tensor")))?;
        attrs[i].1 = Attr::BoolArray(v.into_iter().map(|x| x != 0).collect());
    }
    Ok(())
}

fn symbol(a: Attr, at: usize) -> Result<Attr> {
    match a {
        Attr::String(s) => Ok(Attr::SymbolRef(String::from_utf8_lossy(&s).into_owned())),
        _ => Err(Error::malformed(at, "a symbol name that is not a string")),
    }
}

/// Removes the integer-list fields `names` and gives them back as `array`s of a struct.
fn implode(attrs: &mut Attrs, names: &[(&'static str, bool)], at: usize) -> Result<Vec<(&'static str, Attr)>> {
    let mut fields = Vec::with_capacity(names.len());
    for &(name, scalar) in names {
        let a = take(attrs, name).ok_or_else(|| Error::malformed(at, format!("missing {name}")))?;
        if scalar {
            match a {
                Attr::Integer { .. } => fields.push((name, a)),
                _ => return Err(Error::malformed(at, format!("{name} is not an integer"))),
            }
        } else {
            let v = dense_ints(&a).ok_or_else(|| Error::malformed(at, format!("{name} is not an integer tensor")))?;
            fields.push((name, Attr::I64Array(v)));
        }
    }
    Ok(fields)
}

fn channel_handle(handle: Attr, ty: i64) -> Attr {
    Attr::Struct {
        mnemonic: "channel_handle",
        fields: vec![("handle", handle), ("type", Attr::Integer { value: ty, ty: Type::Scalar(ElementType::S64) })],
    }
}

fn precision_default(a: Option<&Attr>) -> bool {
    match a {
        Some(Attr::Array(v)) => v.iter().all(|p| matches!(p, Attr::Enum(e) if e.value == "DEFAULT")),
        _ => false,
    }
}

fn is_default_accuracy(a: Option<&Attr>) -> bool {
    match a {
        Some(Attr::Struct { fields, .. }) => fields.iter().all(|(n, v)| match (*n, v) {
            ("atol" | "rtol", Attr::Float { bits, .. }) => *bits << 1 == 0,
            ("ulps", Attr::Integer { value, .. }) => *value == 0,
            ("mode", Attr::Enum(e)) => e.value == "DEFAULT",
            _ => false,
        }),
        _ => false,
    }
}

/// Whether `a` holds the default `d` (an empty value of any kind counts as empty; a list of
/// any length as all ones or zeros).
fn holds(d: DefaultValue, a: Option<&Attr>) -> bool {
    match d {
        DefaultValue::EmptyString
        | DefaultValue::EmptyArray
        | DefaultValue::EmptyDict
        | DefaultValue::EmptyTensor
        | DefaultValue::EmptyBackendConfig => is_empty(a),
        DefaultValue::False => is_bool(a, false),
        DefaultValue::I32(v) | DefaultValue::I64(v) => is_int(a, v),
        DefaultValue::Enum(_, value) => matches!(a, Some(Attr::Enum(e)) if e.value == value),
        DefaultValue::Precision => precision_default(a),
        DefaultValue::Ones => all_eq(a, 1),
        DefaultValue::Padding | DefaultValue::NoReversal => all_eq(a, 0),
        DefaultValue::Accuracy => is_default_accuracy(a),
        DefaultValue::NoneType => is_none_type(a),
    }
}

/// Drops the attributes of op `base` that hold their defaults (the one VHLO table's).
fn drop_defaults(base: &str, a: &mut Attrs) {
    let dropped: Vec<&str> = defaults_of(base)
        .filter(|&(name, d, on_read)| {
            holds(d, get(a, name))
                && match on_read {
                    OnRead::Dropped => true,
                    OnRead::DroppedWith(other) => default_of(base, other).is_some_and(|(o, _)| holds(o, get(a, other))),
                    OnRead::Grouped | OnRead::Kept => false,
                }
        })
        .map(|(name, _, _)| name)
        .collect();
    for name in dropped {
        take(a, name);
    }
}

/// The StableHLO name and attributes of VHLO op `op` (`add_v1`), from its properties (in
/// declaration order) and its discardable attributes. `parent` is the enclosing op's name
/// (VHLO has one `return` for functions and regions).
pub(crate) fn legalize(
    op: &str,
    mut a: Attrs,
    discardable: Attrs,
    parent: Option<&str>,
    at: usize,
) -> Result<(String, Attrs)> {
    let base = base_name(op);
    let name = match base {
        "func" => "func.func".to_string(),
        "call" => "func.call".to_string(),
        "return" if parent == Some("func.func") => "func.return".to_string(),
        _ => format!("stablehlo.{base}"),
    };
    drop_defaults(base, &mut a);
    match base {
        "call" => {
            if let Some(c) = take(&mut a, "callee") {
                a.insert(0, ("callee".to_string(), symbol(c, at)?));
            }
        }
        "all_gather"
        | "all_reduce"
        | "reduce_scatter"
        | "all_to_all"
        | "collective_permute"
        | "collective_broadcast"
        | "collective_reduce" => {
            if let Some(i) = a.iter().position(|(n, _)| n == "channel_id") {
                let h = a[i].1.clone();
                a[i] = ("channel_handle".to_string(), channel_handle(h, 0));
            }
            for flag in ["use_global_device_ids", "has_dynamic_root"] {
                if let Some(Attr::Bool(true)) = get(&a, flag) {
                    set(&mut a, flag, Attr::Unit);
                }
            }
        }
        "send" | "recv" => {
            let id = take(&mut a, "channel_id").ok_or_else(|| Error::malformed(at, "missing channel_id"))?;
            let ty = match take(&mut a, "channel_type") {
                Some(Attr::Integer { value, .. }) => value,
                _ => return Err(Error::malformed(at, "missing channel_type")),
            };
            a.push(("channel_handle".to_string(), channel_handle(id, ty)));
        }
        "composite" => {
            if let Some(d) = take(&mut a, "decomposition") {
                a.push(("decomposition".to_string(), symbol(d, at)?));
            }
        }
        "convolution" | "dynamic_conv" => {
            if base == "dynamic_conv" {
                // dynamic_conv_v1's `padding` attribute: StableHLO's upgrade to v2 drops it
                // whatever it holds (the padding operand is the one that counts).
                take(&mut a, "padding");
            }
            let fields = implode(
                &mut a,
                &[
                    ("input_batch_dimension", true),
                    ("input_feature_dimension", true),
                    ("input_spatial_dimensions", false),
                    ("kernel_input_feature_dimension", true),
                    ("kernel_output_feature_dimension", true),
                    ("kernel_spatial_dimensions", false),
                    ("output_batch_dimension", true),
                    ("output_feature_dimension", true),
                    ("output_spatial_dimensions", false),
                ],
                at,
            )?;
            a.insert(0, ("dimension_numbers".to_string(), Attr::Struct { mnemonic: "conv", fields }));
            for n in ["lhs_dilation", "rhs_dilation", "window_strides"] {
                to_i64_array(&mut a, n, at)?;
            }
            to_bool_array(&mut a, "window_reversal", at)?;
        }
        "custom_call" => {
            if let Some(i) = a.iter().position(|(n, _)| n == "called_computations") {
                let Attr::Array(v) = std::mem::replace(&mut a[i].1, Attr::Unit) else {
                    return Err(Error::malformed(at, "called_computations is not an array"));
                };
                a[i].1 = Attr::Array(v.into_iter().map(|s| symbol(s, at)).collect::<Result<_>>()?);
            }
        }
        "dot_general" => {
            let fields = implode(
                &mut a,
                &[
                    ("lhs_batching_dimensions", false),
                    ("rhs_batching_dimensions", false),
                    ("lhs_contracting_dimensions", false),
                    ("rhs_contracting_dimensions", false),
                ],
                at,
            )?;
            a.insert(0, ("dot_dimension_numbers".to_string(), Attr::Struct { mnemonic: "dot", fields }));
            let algo = crate::names::DOT_ALGORITHM_FIELDS;
            if algo.iter().all(|n| get(&a, n).is_none()) {
                // dot_general_v1 has no algorithm.
            } else if is_none_type(get(&a, "lhs_precision_type")) || is_none_type(get(&a, "lhs_component_count")) {
                for n in algo {
                    take(&mut a, n);
                }
            } else {
                let mut fields = Vec::with_capacity(algo.len());
                for &n in algo {
                    fields.push((n, take(&mut a, n).ok_or_else(|| Error::malformed(at, format!("missing {n}")))?));
                }
                a.push(("algorithm".to_string(), Attr::Struct { mnemonic: "dot_algorithm", fields }));
            }
        }
        "dynamic_broadcast_in_dim" => {
            for n in ["broadcast_dimensions", "known_expanding_dimensions", "known_nonexpanding_dimensions"] {
                to_i64_array(&mut a, n, at)?;
            }
        }
        "gather" | "dynamic_gather" => {
            let mut names = vec![("offset_dims", false), ("collapsed_slice_dims", false)];
            if get(&a, "operand_batching_dims").is_some() {
                names.push(("operand_batching_dims", false));
                names.push(("start_indices_batching_dims", false));
            }
            names.push(("start_index_map", false));
            names.push(("index_vector_dim", true));
            let fields = implode(&mut a, &names, at)?;
            a.insert(0, ("dimension_numbers".to_string(), Attr::Struct { mnemonic: "gather", fields }));
            to_i64_array(&mut a, "slice_sizes", at)?;
        }
        "scatter" => {
            let mut names = vec![("update_window_dims", false), ("inserted_window_dims", false)];
            if get(&a, "input_batching_dims").is_some() {
                names.push(("input_batching_dims", false));
                names.push(("scatter_indices_batching_dims", false));
            }
            names.push(("scatter_dims_to_operand_dims", false));
            names.push(("index_vector_dim", true));
            let fields = implode(&mut a, &names, at)?;
            a.insert(0, ("scatter_dimension_numbers".to_string(), Attr::Struct { mnemonic: "scatter", fields }));
        }
        "reduce_window" => {
            for n in ["window_dimensions", "window_strides", "base_dilations", "window_dilations"] {
                to_i64_array(&mut a, n, at)?;
            }
        }
        "select_and_scatter" => {
            for n in ["window_dimensions", "window_strides"] {
                to_i64_array(&mut a, n, at)?;
            }
        }
        "fft" => to_i64_array(&mut a, "fft_length", at)?,
        "broadcast" => to_i64_array(&mut a, "broadcast_sizes", at)?,
        "dynamic_slice" => to_i64_array(&mut a, "slice_sizes", at)?,
        "reverse" | "map" | "reduce" => to_i64_array(&mut a, "dimensions", at)?,
        "transpose" => to_i64_array(&mut a, "permutation", at)?,
        "pad" => {
            for n in ["edge_padding_low", "edge_padding_high", "interior_padding"] {
                to_i64_array(&mut a, n, at)?;
            }
        }
        "slice" => {
            for n in ["start_indices", "limit_indices", "strides"] {
                to_i64_array(&mut a, n, at)?;
            }
        }
        "broadcast_in_dim" => to_i64_array(&mut a, "broadcast_dimensions", at)?,
        _ => {}
    }
    a.extend(discardable);
    Ok((name, a))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Dim, ElementType, TensorType};

    fn dense(dims: &[u64], e: ElementType, data: &[u8]) -> Attr {
        let ty = Type::Tensor(TensorType {
            dims: dims.iter().map(|&d| Dim::Fixed(d)).collect(),
            element: Box::new(Type::Scalar(e)),
            encoding: None,
        });
        Attr::Dense { ty, data: data.into() }
    }

    /// Each element is sign-extended from its own width (a sub-byte integer's low bits), a
    /// splat repeated, an `i1` 0 or 1; data that is neither a splat nor every element is none.
    #[test]
    fn integer_lists_read_each_element_at_its_width() {
        assert_eq!(dense_ints(&dense(&[3], ElementType::S4, &[0x0F, 0x07, 0x08])), Some(vec![-1, 7, -8]));
        assert_eq!(dense_ints(&dense(&[2], ElementType::U4, &[0x0F, 0x01])), Some(vec![15, 1]));
        assert_eq!(dense_ints(&dense(&[2], ElementType::S2, &[0x03, 0x01])), Some(vec![-1, 1]));
        assert_eq!(dense_ints(&dense(&[3], ElementType::S8, &[0xFF])), Some(vec![-1; 3]));
        assert_eq!(dense_ints(&dense(&[4], ElementType::PRED, &[1])), Some(vec![1; 4]));
        assert_eq!(dense_ints(&dense(&[4], ElementType::PRED, &[1, 0, 1, 1])), Some(vec![1, 0, 1, 1]));
        assert_eq!(dense_ints(&dense(&[2], ElementType::S64, &(-5i64).to_le_bytes())), Some(vec![-5, -5]));
        assert_eq!(dense_ints(&dense(&[0], ElementType::S64, &[])), Some(vec![]));
        assert_eq!(dense_ints(&dense(&[4], ElementType::PRED, &[1, 0])), None);
        assert_eq!(dense_ints(&dense(&[3], ElementType::S16, &[1, 0, 2, 0])), None);
    }
}
