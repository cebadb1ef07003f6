//! The ops whose static form takes as attributes what their dynamic form takes as operands
//! (`dynamic_broadcast_in_dim` -> `broadcast_in_dim`, ...), the custom calls JAX emits for
//! dynamic ops that have no StableHLO op (`stablehlo.dynamic_reduce_window`, ...), and the
//! `shape_assertion`s JAX checks the dimension variables with.

use crate::ir::{Attr, ElementType, Op, Region, Type};

use super::fold::{i64_dense, Const};
use super::RefineError;

fn take_attr(op: &mut Op, name: &str) -> Option<Attr> {
    let i = op.attributes.iter().position(|(n, _)| n == name)?;
    Some(op.attributes.remove(i).1)
}

fn set_attr(op: &mut Op, name: &str, value: Attr) {
    match op.attributes.iter_mut().find(|(n, _)| n == name) {
        Some(slot) => slot.1 = value,
        None => op.attributes.push((name.to_string(), value)),
    }
}

fn list(consts: &[Option<&Const>], i: usize) -> Vec<i64> {
    // The caller computed the result shape from the same constants, so they are there.
    consts.get(i).copied().flatten().map(|c| c.vals.clone()).unwrap_or_default()
}

/// Rewrites a dynamic op whose shape operands are known (`consts`, one per operand) into its
/// static form, after its result types were refined. Other ops are left as they are.
pub(crate) fn to_static(op: &mut Op, consts: &[Option<&Const>]) {
    let Some(base) = op.name.strip_prefix("stablehlo.") else { return };
    let (name, keep) = match base {
        "dynamic_broadcast_in_dim" => {
            take_attr(op, "known_expanding_dimensions");
            take_attr(op, "known_nonexpanding_dimensions");
            ("broadcast_in_dim", 1)
        }
        "dynamic_reshape" => ("reshape", 1),
        "dynamic_iota" => ("iota", 0),
        "real_dynamic_slice" => {
            set_attr(op, "start_indices", Attr::I64Array(list(consts, 1)));
            set_attr(op, "limit_indices", Attr::I64Array(list(consts, 2)));
            set_attr(op, "strides", Attr::I64Array(list(consts, 3)));
            ("slice", 1)
        }
        "dynamic_pad" => {
            set_attr(op, "edge_padding_low", Attr::I64Array(list(consts, 2)));
            set_attr(op, "edge_padding_high", Attr::I64Array(list(consts, 3)));
            set_attr(op, "interior_padding", Attr::I64Array(list(consts, 4)));
            ("pad", 2)
        }
        "dynamic_gather" => {
            set_attr(op, "slice_sizes", Attr::I64Array(list(consts, 2)));
            ("gather", 2)
        }
        "dynamic_conv" => {
            let pad = list(consts, 2);
            let pairs = (pad.len() / 2) as u64;
            // Window attributes longer than the spatial dimensions (all one value, or shape
            // refinement refused the op): the convolution takes one per dimension.
            for name in ["window_strides", "lhs_dilation", "rhs_dilation"] {
                if let Some(Attr::I64Array(v)) = op.attr(name) {
                    let v = super::shapes::window_list(v.clone(), pairs as usize, true);
                    set_attr(op, name, Attr::I64Array(v));
                }
            }
            if let Some(Attr::BoolArray(v)) = op.attr("window_reversal") {
                if v.len() > pairs as usize && v.windows(2).all(|w| w[0] == w[1]) {
                    let v = v[..pairs as usize].to_vec();
                    set_attr(op, "window_reversal", Attr::BoolArray(v));
                }
            }
            set_attr(op, "padding", i64_dense(&[pairs, 2], &pad));
            ("convolution", 2)
        }
        _ => return,
    };
    op.name = format!("stablehlo.{name}");
    op.operands.truncate(keep);
}

/// What to do with a custom call.
pub(crate) enum CustomCall {
    /// Keep it (perhaps rewritten into another op, which the caller then refines).
    Keep,
    /// A `shape_assertion` that holds: drop it (plugins have no handler for it).
    Drop,
}

/// The dimensions of each result.
pub(crate) type ResultDims = Vec<Vec<u64>>;

/// The call's target name.
pub(crate) fn target(op: &Op) -> Option<&[u8]> {
    match op.attr("call_target_name")? {
        Attr::String(s) => Some(s),
        _ => None,
    }
}

/// A custom call's refinement: `shape_assertion` evaluated (JAX's message filled in when it
/// fails), JAX's dynamic-op custom calls rewritten to static ops, and `indices_of_shape_operands`
/// (the result shapes JAX passes to a custom call with dynamic results) used and removed.
/// `body` finds a function by name and clones its body as a region with fresh value ids.
/// Returns the result dimensions when the call gives them.
pub(crate) fn custom_call(
    op: &mut Op,
    consts: &[Option<&Const>],
    types: &[&Type],
    body: &mut dyn FnMut(&str) -> Result<Region, String>,
) -> Result<(CustomCall, Option<ResultDims>), RefineError> {
    let name = target(op).map(|t| String::from_utf8_lossy(t).into_owned()).unwrap_or_default();
    let unrefinable = |what: String| RefineError::Unrefinable { op: format!("stablehlo.custom_call @{name}"), what };
    let dims_of = |i: usize, what: &str| -> Result<Vec<u64>, RefineError> {
        let c =
            consts.get(i).copied().flatten().ok_or_else(|| {
                unrefinable(format!("its {what} (operand {i}) is computed from data, not from shapes"))
            })?;
        c.vals
            .iter()
            .map(|&v| u64::try_from(v).map_err(|_| unrefinable(format!("its {what} has a negative size"))))
            .collect()
    };
    // The operand whose shape a rewritten call keeps (a hostile module may give it none).
    let first_dims = || -> Result<Vec<u64>, RefineError> {
        let t = types.first().ok_or_else(|| unrefinable("it has no operands".to_string()))?;
        super::shapes::static_dims(t).map_err(unrefinable)
    };
    match name.as_str() {
        "shape_assertion" => {
            let holds = consts
                .first()
                .copied()
                .flatten()
                .ok_or_else(|| unrefinable("the assertion depends on the data, not only on shapes".to_string()))?;
            if holds.vals.iter().all(|&v| v != 0) {
                return Ok((CustomCall::Drop, None));
            }
            let template = match op.attr("error_message") {
                Some(Attr::String(s)) => String::from_utf8_lossy(s).into_owned(),
                _ => "a shape assertion failed".to_string(),
            };
            let values: Vec<Option<i64>> =
                consts.iter().skip(1).map(|c| c.and_then(|c| c.vals.first().copied())).collect();
            Err(RefineError::ShapeAssertion { message: format_message(&template, &values) })
        }
        "stablehlo.dynamic_reduce_window" => {
            let n = consts.len().checked_sub(5).filter(|k| k % 2 == 0).ok_or_else(|| {
                unrefinable("it does not have inputs, initial values and five shape operands".to_string())
            })? / 2;
            let [w, s, bd, wd, pad] = [0, 1, 2, 3, 4].map(|k| list(consts, 2 * n + k));
            for k in 0..5 {
                dims_of(2 * n + k, "window")?;
            }
            if pad.len() % 2 != 0 {
                return Err(unrefinable(format!("its padding has {} values, not pairs", pad.len())));
            }
            let callee = match op.attr("called_computations") {
                Some(Attr::Array(v)) => match v.first() {
                    Some(Attr::SymbolRef(s)) => s.clone(),
                    _ => String::new(),
                },
                _ => String::new(),
            };
            let region = body(&callee).map_err(unrefinable)?;
            op.name = "stablehlo.reduce_window".to_string();
            op.operands.truncate(2 * n);
            op.attributes.retain(|(k, _)| k.starts_with("mhlo.") && k != "mhlo.backend_config");
            op.attributes.push(("window_dimensions".into(), Attr::I64Array(w)));
            op.attributes.push(("window_strides".into(), Attr::I64Array(s)));
            op.attributes.push(("base_dilations".into(), Attr::I64Array(bd)));
            op.attributes.push(("window_dilations".into(), Attr::I64Array(wd)));
            op.attributes.push(("padding".into(), i64_dense(&[(pad.len() / 2) as u64, 2], &pad)));
            op.regions = vec![region];
            Ok((CustomCall::Keep, None))
        }
        "stablehlo.dynamic_rng_bit_generator" => {
            let shape = dims_of(1, "output shape")?;
            let algorithm = op
                .attr("rng_algorithm")
                .cloned()
                .unwrap_or(Attr::Enum(crate::ir::EnumAttr { kind: "rng_algorithm", value: "DEFAULT" }));
            let state = first_dims()?;
            op.name = "stablehlo.rng_bit_generator".to_string();
            op.operands.truncate(1);
            op.attributes = vec![("rng_algorithm".into(), algorithm)];
            Ok((CustomCall::Keep, Some(vec![state, shape])))
        }
        "stablehlo.dynamic_top_k" => {
            let k = dims_of(1, "k")?;
            let k = *k.first().ok_or_else(|| unrefinable("k is not a scalar".to_string()))?;
            let mut dims = first_dims()?;
            *dims.last_mut().ok_or_else(|| unrefinable("top_k of a scalar".to_string()))? = k;
            op.name = "chlo.top_k".to_string();
            op.operands.truncate(1);
            op.attributes = vec![("k".into(), Attr::Integer { value: k as i64, ty: Type::Scalar(ElementType::S64) })];
            Ok((CustomCall::Keep, Some(vec![dims.clone(), dims])))
        }
        // JAX before 0.9 writes a lax.top_k with symbolic shapes as this custom call (which
        // today's XLA does not implement once refined), its k in `mhlo.attributes` (a static
        // number): it becomes chlo.top_k, whose results are the operand's shape with its last
        // dimension k. Of static shapes (a static module) it stays as JAX wrote it.
        "mhlo.topk" if !op.results.iter().all(|r| super::shapes::is_static(&r.ty)) => {
            let attributes = match op.attr("mhlo.attributes") {
                Some(Attr::Dict(d)) => d.clone(),
                _ => Vec::new(),
            };
            let field = |name: &str| attributes.iter().find(|(n, _)| n == name).map(|(_, v)| v);
            let k = match field("k") {
                Some(Attr::Integer { value, .. }) => u64::try_from(*value).ok(),
                _ => None,
            }
            .ok_or_else(|| unrefinable("its mhlo.attributes give no k".to_string()))?;
            if let Some(largest) = field("largest") {
                if !matches!(largest, Attr::Bool(true)) {
                    return Err(unrefinable(format!("only largest = true has a chlo.top_k form, not {largest:?}")));
                }
            }
            let mut dims = first_dims()?;
            let last = dims.last_mut().ok_or_else(|| unrefinable("top_k of a scalar".to_string()))?;
            if k > *last {
                return Err(unrefinable(format!("k = {k} is more than the last dimension, {last}")));
            }
            *last = k;
            op.name = "chlo.top_k".to_string();
            op.operands.truncate(1);
            op.attributes = vec![("k".into(), Attr::Integer { value: k as i64, ty: Type::Scalar(ElementType::S64) })];
            Ok((CustomCall::Keep, Some(vec![dims.clone(), dims])))
        }
        _ => {
            let indices = shape_operand_indices(op);
            if let Some(indices) = indices {
                let mut out = Vec::with_capacity(indices.len());
                for &i in &indices {
                    out.push(dims_of(i, "result shape")?);
                }
                drop_indices(&mut op.operands, &indices);
                // The layouts list the shape operands too.
                if let Some((_, Attr::Array(layouts))) = op.attributes.iter_mut().find(|(n, _)| n == "operand_layouts")
                {
                    drop_indices(layouts, &indices);
                }
                remove_shape_operand_indices(op);
                return Ok((CustomCall::Keep, Some(out)));
            }
            if name == "Sharding" || name == "xla.sdy.FuncResultSharding" {
                let d = first_dims()?;
                return Ok((CustomCall::Keep, Some(vec![d])));
            }
            Ok((CustomCall::Keep, None))
        }
    }
}

/// `indices_of_shape_operands`, where JAX puts it: a top-level attribute, or inside the
/// `mhlo.backend_config` dictionary.
fn shape_operand_indices(op: &Op) -> Option<Vec<usize>> {
    let a = op.attr("indices_of_shape_operands").or_else(|| match op.attr("mhlo.backend_config") {
        Some(Attr::Dict(d)) => d.iter().find(|(k, _)| k == "indices_of_shape_operands").map(|(_, v)| v),
        _ => None,
    })?;
    let v = match a {
        Attr::I64Array(v) => v.clone(),
        other => super::fold::from_dense(other)?.vals,
    };
    v.into_iter().map(|i| usize::try_from(i).ok()).collect()
}

fn drop_indices<T>(list: &mut Vec<T>, indices: &[usize]) {
    let mut k = 0;
    list.retain(|_| {
        k += 1;
        !indices.contains(&(k - 1))
    });
}

fn remove_shape_operand_indices(op: &mut Op) {
    take_attr(op, "indices_of_shape_operands");
    if let Some((_, Attr::Dict(d))) = op.attributes.iter_mut().find(|(k, _)| k == "mhlo.backend_config") {
        d.retain(|(k, _)| k != "indices_of_shape_operands");
    }
}

/// Python's `str.format` of positional fields, as JAX's shape assertion messages use it:
/// `{0}` is the first value, `{{` and `}}` are braces; a value that is not known prints as `?`.
pub(crate) fn format_message(template: &str, values: &[Option<i64>]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                out.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                out.push('}');
            }
            '{' => {
                let mut field = String::new();
                for c in chars.by_ref() {
                    if c == '}' {
                        break;
                    }
                    field.push(c);
                }
                match field.parse::<usize>().ok().and_then(|i| values.get(i)) {
                    Some(Some(v)) => out.push_str(&v.to_string()),
                    Some(None) => out.push('?'),
                    None => {
                        out.push('{');
                        out.push_str(&field);
                        out.push('}');
                    }
                }
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::format_message;

    #[test]
    fn messages_are_formatted_as_python_does() {
        assert_eq!(format_message("b = {0}, t = {1} {{x}}", &[Some(3), Some(-1)]), "b = 3, t = -1 {x}");
        assert_eq!(format_message("{2} {0}", &[Some(1)]), "{2} 1");
    }
}
