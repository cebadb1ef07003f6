//! Dimension parameters: `@main` arguments that carry a dimension variable's value
//! (`tensor<i32> {jax.global_constant = "b"}`, as JAX's inner functions take them), and the
//! module with those arguments bound to values.

use std::sync::Arc;

use super::{symbol_name, RefineError};
use crate::ir::{Attr, ElementType, Location, Module, Op, Type};

/// `@main`, mutably.
fn main_mut(module: &mut Module) -> Option<&mut Op> {
    let top = module.ops.iter_mut().find(|op| op.name == "builtin.module")?;
    let body = top.regions.first_mut()?.blocks.first_mut()?;
    body.ops.iter_mut().find(|op| op.name == "func.func" && symbol_name(op) == Some("main"))
}

/// `@main`.
fn main_ref(module: &Module) -> Option<&Op> {
    let top = module.ops.iter().find(|op| op.name == "builtin.module")?;
    let body = top.regions.first()?.blocks.first()?;
    body.ops.iter().find(|op| op.name == "func.func" && symbol_name(op) == Some("main"))
}

/// The `arg_attrs` dictionaries of a function, one per parameter (empty when absent).
fn arg_attrs(f: &Op, count: usize) -> Vec<Vec<(String, Attr)>> {
    let mut out = vec![Vec::new(); count];
    if let Some(Attr::Array(v)) = f.attr("arg_attrs") {
        for (slot, a) in out.iter_mut().zip(v) {
            if let Attr::Dict(d) = a {
                slot.clone_from(d);
            }
        }
    }
    out
}

/// `@main`'s dimension parameters: each one's index and the dimension variable it carries
/// (`{jax.global_constant = "b"}` on a `tensor<i32>` or `tensor<i64>` parameter).
///
/// ```
/// let text = r#"func.func public @main(%arg0: tensor<i64> {jax.global_constant = "b"}, %arg1: tensor<?x4xf32>) -> tensor<?x4xf32> {
///   return %arg1 : tensor<?x4xf32>
/// }"#;
/// let module = pjrt_stablehlo::parse_text(text).unwrap();
/// assert_eq!(pjrt_stablehlo::dimension_parameters(&module), vec![(0, "b".to_string())]);
/// ```
pub fn dimension_parameters(module: &Module) -> Vec<(usize, String)> {
    let Some(main) = main_ref(module) else { return Vec::new() };
    let Some(block) = main.regions.first().and_then(|r| r.blocks.first()) else { return Vec::new() };
    let attrs = arg_attrs(main, block.args.len());
    block
        .args
        .iter()
        .zip(attrs)
        .enumerate()
        .filter_map(|(i, (arg, attrs))| {
            let name = attrs.iter().find(|(k, _)| k == "jax.global_constant").and_then(|(_, v)| match v {
                Attr::String(s) => Some(String::from_utf8_lossy(s).into_owned()),
                _ => None,
            })?;
            is_scalar_int(&arg.ty).then_some((i, name))
        })
        .collect()
}

/// A rank-0 `i32` or `i64` tensor.
fn is_scalar_int(t: &Type) -> bool {
    matches!(t, Type::Tensor(t) if t.dims.is_empty()
        && matches!(*t.element, Type::Scalar(ElementType::S32 | ElementType::S64)))
}

/// The module with `@main`'s dimension parameters ([`dimension_parameters`]) bound to
/// `values` (by variable name): each becomes a constant at the start of `@main`, and leaves
/// its signature. Every dimension parameter needs a value.
///
/// ```
/// let text = r#"func.func public @main(%b: tensor<i64> {jax.global_constant = "b"}, %x: tensor<?xf32>) -> tensor<i64> {
///   return %b : tensor<i64>
/// }"#;
/// let module = pjrt_stablehlo::parse_text(text).unwrap();
/// let bound = pjrt_stablehlo::bind_dimensions(&module, &[("b".to_string(), 3)]).unwrap();
/// let printed = pjrt_stablehlo::print(&bound);
/// assert!(printed.contains("dense<\"0x0300000000000000\"> : tensor<i64>"), "{printed}");
/// assert!(pjrt_stablehlo::bind_dimensions(&module, &[]).is_err());
/// ```
pub fn bind_dimensions(module: &Module, values: &[(String, i64)]) -> Result<Module, RefineError> {
    let params = dimension_parameters(module);
    let mut out = module.clone();
    if params.is_empty() {
        return Ok(out);
    }
    let Some(main) = main_mut(&mut out) else { return Err(RefineError::NoMain) };
    let Some(block) = main.regions.first_mut().and_then(|r| r.blocks.first_mut()) else {
        return Err(RefineError::NoMain);
    };
    let mut constants = Vec::new();
    for &(i, ref name) in &params {
        let value = values.iter().find(|(n, _)| n == name).map(|(_, v)| *v).ok_or_else(|| RefineError::Argument {
            index: i,
            expected: format!("the value of dimension variable {name} (jax.global_constant)"),
            given: "none".into(),
        })?;
        let arg = block.args[i].clone();
        let data: Vec<u8> = match &arg.ty {
            Type::Tensor(t) if *t.element == Type::Scalar(ElementType::S32) => {
                let v = i32::try_from(value).map_err(|_| RefineError::Argument {
                    index: i,
                    expected: format!("a value of {name} that fits i32"),
                    given: value.to_string(),
                })?;
                v.to_le_bytes().to_vec()
            }
            _ => value.to_le_bytes().to_vec(),
        };
        // The constant defines the parameter's own value number: its uses stay as they are.
        constants.push(Op {
            name: "stablehlo.constant".into(),
            operands: vec![],
            results: vec![arg.clone()],
            attributes: vec![("value".into(), Attr::Dense { ty: arg.ty.clone(), data: Arc::from(data) })],
            regions: vec![],
            successors: vec![],
            location: Arc::new(Location::Unknown),
        });
    }
    let removed: Vec<usize> = params.iter().map(|(i, _)| *i).collect();
    let keep = |i: &usize| !removed.contains(i);
    block.args = block.args.iter().enumerate().filter(|(i, _)| keep(i)).map(|(_, a)| a.clone()).collect();
    constants.append(&mut block.ops);
    block.ops = constants;
    let count = main.regions[0].blocks[0].args.len() + removed.len();
    let attrs = arg_attrs(main, count);
    for (name, value) in &mut main.attributes {
        match (name.as_str(), value) {
            ("function_type", Attr::Type(Type::Function { inputs, .. })) => {
                *inputs = inputs.iter().enumerate().filter(|(i, _)| keep(i)).map(|(_, t)| t.clone()).collect();
            }
            ("arg_attrs", Attr::Array(v)) => {
                *v = attrs.iter().enumerate().filter(|(i, _)| keep(i)).map(|(_, d)| Attr::Dict(d.clone())).collect();
            }
            _ => {}
        }
    }
    Ok(out)
}
