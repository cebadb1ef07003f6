//! CHLO written as StableHLO: VHLO has no CHLO, so before a module is written as a portable
//! artifact ([`crate::write_bytecode`]) each `chlo` op is replaced by the StableHLO ops of
//! StableHLO's own `chlo-legalize-to-stablehlo` decomposition (ChloLegalizeToStablehlo.cpp
//! and ChloDecompositionPatterns*.td in openxla/stablehlo, written here in Rust), as XLA's
//! serializer, the one `jax.export` uses, does. `f16` and `bf16` are computed in `f32`
//! where the decomposition upcasts (cosh, sinh, erf, erfc, erf_inv, lgamma, digamma,
//! polygamma, zeta).
//!
//! The ops JAX 0.10.2 and 0.12.0.1 emit on CPU for every jax.lax, jax.numpy and
//! jax.scipy.special function (`tools/list_chlo_ops.py`, `tests/data/chlo/`) are listed in the
//! crate doc; every one is written here.

mod build;
mod complex;
mod elementary;
mod erf;
mod gamma;
mod top_k;

use std::collections::HashMap;

use crate::ir::{Block, Module, Op, Region, Type};
use build::{Builder, V};

/// Why a `chlo` op cannot be written as StableHLO (the writer makes it `WriteError::Chlo`:
/// this module stays below the writer).
#[derive(Debug)]
pub(crate) struct ChloError {
    /// The op (`chlo.erf_inv`).
    pub op: String,
    /// Why.
    pub reason: String,
}

/// Whether any op of the module is a `chlo` op.
pub(crate) fn has_chlo(module: &Module) -> bool {
    module.walk().any(|op| op.name.starts_with("chlo."))
}

/// The module with every `chlo` op replaced by its StableHLO decomposition.
pub(crate) fn lower(module: &Module) -> Result<Module, ChloError> {
    let mut out = module.clone();
    let mut next = max_id(&module.ops).map_or(0, |m| m + 1);
    let mut types = HashMap::new();
    for op in &mut out.ops {
        lower_op(op, &mut types, &mut next)?;
    }
    Ok(out)
}

fn max_id(ops: &[Op]) -> Option<u32> {
    let mut max = None;
    for op in ops {
        for v in op.results.iter().map(|v| v.id).chain(op.operands.iter().copied()) {
            max = max.max(Some(v));
        }
        for r in &op.regions {
            for b in &r.blocks {
                for a in &b.args {
                    max = max.max(Some(a.id));
                }
                max = max.max(max_id(&b.ops));
            }
        }
    }
    max
}

/// Lowers the chlo ops in `op`'s regions (with a scope of its own when it is isolated).
fn lower_op(op: &mut Op, types: &mut HashMap<u32, Type>, next: &mut u32) -> Result<(), ChloError> {
    let mut own = HashMap::new();
    let scope = if crate::text::is_isolated(&op.name) { &mut own } else { types };
    for region in &mut op.regions {
        lower_region(region, scope, next)?;
    }
    Ok(())
}

fn lower_region(region: &mut Region, types: &mut HashMap<u32, Type>, next: &mut u32) -> Result<(), ChloError> {
    for block in &mut region.blocks {
        lower_block(block, types, next)?;
    }
    Ok(())
}

fn lower_block(block: &mut Block, types: &mut HashMap<u32, Type>, next: &mut u32) -> Result<(), ChloError> {
    for a in &block.args {
        types.insert(a.id, a.ty.clone());
    }
    let mut ops = Vec::with_capacity(block.ops.len());
    for mut op in std::mem::take(&mut block.ops) {
        lower_op(&mut op, types, next)?;
        for r in &op.results {
            types.insert(r.id, r.ty.clone());
        }
        if !op.name.starts_with("chlo.") {
            ops.push(op);
            continue;
        }
        let fail = |reason: String| ChloError { op: op.name.clone(), reason };
        let operands: Vec<V> = op
            .operands
            .iter()
            .map(|id| types.get(id).map(|ty| V { id: *id, ty: ty.clone() }))
            .collect::<Option<_>>()
            .ok_or_else(|| fail("an operand whose type is unknown".to_string()))?;
        for v in operands
            .iter()
            .chain(op.results.iter().map(|r| V { id: r.id, ty: r.ty.clone() }).collect::<Vec<_>>().iter())
        {
            if v.dims().is_none() || v.element().is_none() {
                return Err(fail(format!(
                    "its decomposition is written for tensors of static shape, not {} (refine the module first)",
                    crate::type_text(&v.ty)
                )));
            }
        }
        let mut b = Builder::new(*next, op.location.clone());
        let results = decompose(&mut b, &op, &operands).map_err(fail)?;
        if let Some(e) = b.error.take() {
            return Err(fail(e));
        }
        *next = b.next_id();
        if results.len() != op.results.len() {
            return Err(fail(format!("{} results made for {}", results.len(), op.results.len())));
        }
        let mut made = b.ops;
        for (value, original) in results.iter().zip(&op.results) {
            if value.ty != original.ty {
                return Err(fail(format!(
                    "the decomposition gives {} for a result of type {}",
                    crate::type_text(&value.ty),
                    crate::type_text(&original.ty)
                )));
            }
            if !rename(&mut made, value.id, original.id) {
                return Err(fail("a result that is not made by its decomposition".to_string()));
            }
        }
        ops.extend(made);
    }
    block.ops = ops;
    Ok(())
}

/// Renames value `from` to `to` in `ops` (results and uses); whether an op defined it.
fn rename(ops: &mut [Op], from: u32, to: u32) -> bool {
    let mut defined = false;
    for op in ops {
        for r in &mut op.results {
            if r.id == from {
                r.id = to;
                defined = true;
            }
        }
        for o in &mut op.operands {
            if *o == from {
                *o = to;
            }
        }
        for region in &mut op.regions {
            for block in &mut region.blocks {
                defined |= rename(&mut block.ops, from, to);
            }
        }
    }
    defined
}

/// The StableHLO values standing for `op`'s results.
fn decompose(b: &mut Builder, op: &Op, x: &[V]) -> Result<Vec<V>, String> {
    let name = op.name.strip_prefix("chlo.").unwrap_or(&op.name);
    let unary = |n: usize| if x.len() == n { Ok(()) } else { Err(format!("{} operands, not {n}", x.len())) };
    Ok(match name {
        "atan" | "atanh" | "asin" | "acos" | "asinh" | "acosh"
            if x.first().and_then(V::element).is_some_and(build::is_complex) =>
        {
            unary(1)?;
            vec![complex::unary(b, name, &x[0])?]
        }
        "square" | "cosh" | "sinh" | "atan" | "atanh" | "asin" | "acos" | "asinh" | "acosh" | "is_inf"
        | "is_pos_inf" | "is_neg_inf" | "tan" => {
            unary(1)?;
            vec![elementary::unary(b, name, &x[0])?]
        }
        "next_after" | "mulhi" => {
            unary(2)?;
            vec![elementary::binary(b, name, &x[0], &x[1])?]
        }
        "zeta" | "polygamma" => {
            unary(2)?;
            vec![gamma::binary(b, name, &x[0], &x[1])?]
        }
        "erf" | "erfc" | "erf_inv" => {
            unary(1)?;
            vec![erf::unary(b, name, &x[0])?]
        }
        "lgamma" | "digamma" => {
            unary(1)?;
            vec![gamma::unary(b, name, &x[0])?]
        }
        "top_k" => {
            unary(1)?;
            top_k::top_k(b, op, &x[0])?
        }
        _ => return Err("not an op the writer lowers (see pjrt_stablehlo's crate doc for the list)".to_string()),
    })
}
