//! chlo.top_k as ChloLegalizeToStablehlo.cpp writes it: an iota of the indices along the
//! last dimension, a sort of values and indices by value (greater first; floats in total
//! order), and the first k of each sliced off.

use super::build::{is_float, with_dims, with_element, Builder, V};
use crate::ir::{Attr, Block, ElementType, Op, Region, Type, Value};

fn i64_attr(v: i64) -> Attr {
    Attr::Integer { value: v, ty: Type::Scalar(ElementType::S64) }
}

pub(super) fn top_k(b: &mut Builder, op: &Op, x: &V) -> Result<Vec<V>, String> {
    let k = match op.attr("k") {
        Some(Attr::Integer { value, .. }) if *value >= 0 => *value as u64,
        _ => return Err("no k (a non-negative integer attribute)".to_string()),
    };
    let stable = !matches!(op.attr("is_stable"), Some(Attr::Bool(false)));
    let e = x.element().ok_or("an operand that is not a tensor")?;
    let dims = x.dims().ok_or("an operand of dynamic shape")?;
    let Some(&last) = dims.last() else { return Err("a rank-0 operand (top_k takes rank 1 or more)".to_string()) };
    let rank = dims.len() as i64;
    let iota_ty = with_element(&x.ty, ElementType::S32);
    let iota =
        b.op("stablehlo.iota", &[], vec![iota_ty.clone()], vec![("iota_dimension", i64_attr(rank - 1))]).remove(0);

    // The comparator: lhs value GT rhs value (TOTALORDER for floats, as createSortOp).
    let scalar = |e: ElementType| Builder::scalar_type(e);
    let args: Vec<V> = [scalar(e), scalar(e), scalar(ElementType::S32), scalar(ElementType::S32)]
        .into_iter()
        .map(|t| b.argument(t))
        .collect();
    let mut body = Builder::new(b.next_id(), std::sync::Arc::new(crate::ir::Location::Unknown));
    let gt = if is_float(e) {
        body.compare("GT", "TOTALORDER", &args[0], &args[1])
    } else {
        body.cmp("GT", &args[0], &args[1])
    };
    body.op("stablehlo.return", &[&gt], Vec::new(), Vec::new());
    // Continue numbering after the body's values.
    let next = body.next_id();
    let region = Region {
        blocks: vec![Block {
            args: args.iter().map(|a| Value { id: a.id, ty: a.ty.clone() }).collect(),
            ops: body.ops,
            arg_locations: Vec::new(),
        }],
    };
    b.skip_to(next);
    let sorted = b.op_with_regions(
        "stablehlo.sort",
        &[x, &iota],
        vec![x.ty.clone(), iota_ty.clone()],
        vec![("dimension", i64_attr(rank - 1)), ("is_stable", Attr::Bool(stable))],
        vec![region],
    );
    let kept = k.min(last);
    let mut limit: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
    if let Some(l) = limit.last_mut() {
        *l = kept as i64;
    }
    let mut out_dims = dims.clone();
    if let Some(l) = out_dims.last_mut() {
        *l = kept;
    }
    let slice = |b: &mut Builder, v: &V| {
        b.op(
            "stablehlo.slice",
            &[v],
            vec![with_dims(&v.ty, &out_dims)],
            vec![
                ("start_indices", Attr::I64Array(vec![0; dims.len()])),
                ("limit_indices", Attr::I64Array(limit.clone())),
                ("strides", Attr::I64Array(vec![1; dims.len()])),
            ],
        )
        .remove(0)
    };
    let values = slice(b, &sorted[0]);
    let indices = slice(b, &sorted[1]);
    Ok(vec![values, indices])
}
