//! The functions of a module upgraded callers first, so that a private function's parameters
//! are known where every call passes the same constant: a shape-polymorphic export passes its
//! dimension variables (the batch size of a legacy call's descriptors) to its inner functions
//! as arguments, which stay arguments once the module is refined (JAX 0.4.30's
//! `@solve(%b, ...)` calling `lapack_sgetrf(%b * 1, ...)`).

use std::collections::HashMap;

use pjrt_stablehlo::ir::{Attr, Module, Op};

use super::{upgrade_function, Scalar};
use crate::error::LegacyLapackError;

/// One `func.call`: the callee and the constant value of each operand where known.
pub(super) struct CallSite {
    callee: Option<String>,
    operands: Vec<Option<Scalar>>,
}

impl CallSite {
    /// The call `op` with the constants `known` at it.
    pub(super) fn of(op: &Op, known: &HashMap<u32, Scalar>) -> CallSite {
        let callee = match op.attr("callee") {
            Some(Attr::SymbolRef(name)) => Some(name.clone()),
            _ => None,
        };
        CallSite { callee, operands: op.operands.iter().map(|id| known.get(id).copied()).collect() }
    }
}

/// A function's name (`sym_name`).
fn name_of(op: &Op) -> Option<String> {
    match op.attr("sym_name")? {
        Attr::String(s) => String::from_utf8(s.clone()).ok(),
        _ => None,
    }
}

/// The `func.func` ops under `op`.
fn collect_functions<'a>(op: &'a mut Op, out: &mut Vec<&'a mut Op>) {
    if op.name == "func.func" {
        out.push(op);
        return;
    }
    for inner in op.regions.iter_mut().flat_map(|r| &mut r.blocks).flat_map(|b| &mut b.ops) {
        collect_functions(inner, out);
    }
}

/// The `func.func` ops under `op`, in the order of [`collect_functions`].
fn functions_of<'a>(op: &'a Op, out: &mut Vec<&'a Op>) {
    if op.name == "func.func" {
        out.push(op);
        return;
    }
    for inner in op.regions.iter().flat_map(|r| &r.blocks).flat_map(|b| &b.ops) {
        functions_of(inner, out);
    }
}

/// Whether `attr` may name the symbol `name` (a symbol reference, or text holding `@name`).
fn names(attr: &Attr, name: &str) -> bool {
    match attr {
        Attr::SymbolRef(s) => s == name,
        Attr::Array(v) => v.iter().any(|a| names(a, name)),
        Attr::Dict(d) => d.iter().any(|(_, a)| names(a, name)),
        Attr::Struct { fields, .. } => fields.iter().any(|(_, a)| names(a, name)),
        Attr::Sdy { body, .. } | Attr::Opaque(body) => body.contains(&format!("@{name}")),
        _ => false,
    }
}

/// Whether some op of `module` refers to `name` otherwise than as the callee of a `func.call`
/// (a custom call's `called_computations`, a composite's decomposition, ...): such a use
/// passes the function arguments this upgrade does not see.
fn referred_otherwise(module: &Module, name: &str) -> bool {
    module.walk().any(|op| {
        op.attributes.iter().any(|(attr, value)| !(op.name == "func.call" && attr == "callee") && names(value, name))
    })
}

/// Upgrades every function of `module`, each after all the functions that call it: a private
/// function that only `func.call`s reach, whose name no other function has, gets for each
/// parameter the constant that every one of its calls passes (none where one call passes
/// another value or a value not known to be constant). A public function's parameters, and
/// those of functions in a cycle of calls (which StableHLO does not allow), are unknown.
pub(super) fn upgrade_in_call_order(module: &mut Module) -> Result<usize, LegacyLapackError> {
    let mut functions = Vec::new();
    for op in &module.ops {
        functions_of(op, &mut functions);
    }
    let names: Vec<Option<String>> = functions.iter().map(|f| name_of(f)).collect();
    // Whether the calls decide a function's parameters.
    let open: Vec<bool> = functions
        .iter()
        .zip(&names)
        .map(|(f, name)| {
            let private = matches!(f.attr("sym_visibility"), Some(Attr::String(s)) if s == b"private");
            let unique = |n: &String| names.iter().filter(|m| m.as_ref() == Some(n)).count() == 1;
            private && name.as_ref().is_some_and(|n| unique(n) && !referred_otherwise(module, n))
        })
        .collect();
    // For each function, the functions that call it (by index).
    let mut callers = vec![Vec::new(); functions.len()];
    for (i, f) in functions.iter().enumerate() {
        for op in f.walk() {
            let ("func.call", Some(Attr::SymbolRef(callee))) = (op.name.as_str(), op.attr("callee")) else { continue };
            for (j, name) in names.iter().enumerate() {
                if name.as_ref() == Some(callee) && !callers[j].contains(&i) {
                    callers[j].push(i);
                }
            }
        }
    }
    let mut functions = Vec::new();
    for op in &mut module.ops {
        collect_functions(op, &mut functions);
    }
    let mut done = vec![false; functions.len()];
    let mut sites: Vec<Vec<Vec<Option<Scalar>>>> = vec![Vec::new(); functions.len()];
    let mut in_cycle = false;
    let mut count = 0;
    loop {
        let next = (0..functions.len()).find(|&i| !done[i] && callers[i].iter().all(|&c| done[c]));
        let i = match next {
            Some(i) => i,
            None => match (0..functions.len()).find(|&i| !done[i]) {
                // Calls in a cycle: what is left is upgraded without known parameters.
                Some(i) => {
                    in_cycle = true;
                    i
                }
                None => break,
            },
        };
        done[i] = true;
        let arguments = if open[i] && !in_cycle { agreed(&sites[i]) } else { Vec::new() };
        let mut calls = Vec::new();
        count += upgrade_function(functions[i], &arguments, &mut calls)?;
        for call in calls {
            for (j, name) in names.iter().enumerate() {
                if name.is_some() && *name == call.callee {
                    sites[j].push(call.operands.clone());
                }
            }
        }
    }
    Ok(count)
}

/// The operand values on which every call agrees (by position): a value only where each call
/// passes that same known value; nothing when there are no calls or their counts differ.
fn agreed(calls: &[Vec<Option<Scalar>>]) -> Vec<Option<Scalar>> {
    let Some(first) = calls.first() else { return Vec::new() };
    if calls.iter().any(|c| c.len() != first.len()) {
        return Vec::new();
    }
    (0..first.len()).map(|k| first[k].filter(|v| calls.iter().all(|c| c[k] == Some(*v)))).collect()
}
