//! Shape refinement: a shape-polymorphic module (what `jax.export` writes for symbolic
//! dimensions, `tensor<?x4xf32>`) made static for concrete argument types, as JAX does before
//! it compiles (`RefinePolymorphicShapes`), since plugins do not.
//!
//! An exported `@main` computes its dimension variables itself (`get_dimension_size`, integer
//! arithmetic, a private `@divmod`) and checks them (`custom_call @shape_assertion`), so no
//! symbolic solver is needed: `@main` gets the argument types, every function is refined for
//! each call site's operand types and known constants (a copy per distinct call), the
//! dimension computations are constant-folded, each `shape_assertion` is evaluated (JAX's
//! message filled in when it fails) and dropped, and the `dynamic_*` ops whose shape operands
//! fold become their static forms. Whatever stays dynamic is an error naming the op.
//!
//! ```
//! use pjrt_stablehlo::ir::{ElementType, Type};
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/jax_export/jax-0.10.2/symbolic_batch/model.jaxexport");
//! let export = pjrt_formats::jax_export::JaxExport::read(path).unwrap();
//! let module = pjrt_stablehlo::read_bytecode(export.mlir_module()).unwrap();
//! let refined = pjrt_stablehlo::refine(&module, &[Type::tensor(ElementType::F32, &[3, 4])]).unwrap();
//! let text = pjrt_stablehlo::print(&refined);
//! assert!(text.contains("tensor<3x4xf32>") && !text.contains('?'));
//! ```

mod dynamic;
mod fold;
mod shapes;

use std::collections::HashMap;

use crate::ir::{Attr, Block, Dim, Module, Op, Region, TensorType, Type};
use fold::Const;

/// Why a module could not be refined for the given argument types.
///
/// ```
/// use pjrt_stablehlo::{ir::Module, RefineError};
/// let empty = Module { bytecode_version: 6, producer: String::new(), ops: vec![] };
/// assert!(matches!(pjrt_stablehlo::refine(&empty, &[]), Err(RefineError::NoMain)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RefineError {
    /// A `shape_assertion` of the module failed for these shapes: `message` is the module's
    /// own text with the values filled in (for `jax.export`, JAX's error for such inputs).
    #[error("{message}")]
    ShapeAssertion {
        /// The message.
        message: String,
    },
    /// An argument type does not fit `@main`'s parameter (another rank, element type or
    /// static size), or the count differs.
    #[error("argument {index} of @main is {expected}, but {given} was given")]
    Argument {
        /// The parameter's index (or the count given, when the count differs).
        index: usize,
        /// The parameter's type as the module declares it.
        expected: String,
        /// What was given.
        given: String,
    },
    /// An op could not be made static: a shape that depends on data, an op this refiner has
    /// no shape rule for, or a module that contradicts itself.
    #[error("cannot refine {op} to static shapes: {what}")]
    Unrefinable {
        /// The op, with the function it is in.
        op: String,
        /// Why.
        what: String,
    },
    /// The module has no `@main` function.
    #[error("the module has no @main function to refine")]
    NoMain,
}

impl Type {
    /// A static ranked tensor type.
    ///
    /// ```
    /// use pjrt_stablehlo::ir::{type_text, ElementType, Type};
    /// assert_eq!(type_text(&Type::tensor(ElementType::F32, &[2, 3])), "tensor<2x3xf32>");
    /// ```
    pub fn tensor(element: crate::ir::ElementType, dims: &[u64]) -> Type {
        Type::Tensor(TensorType {
            dims: dims.iter().map(|&d| Dim::Fixed(d)).collect(),
            element: Box::new(Type::Scalar(element)),
            encoding: None,
        })
    }
}

/// True if some function argument, result or op result of `module` has a dynamic (`?`) or
/// unranked type: the module needs [`refine`] before a plugin can compile it.
///
/// ```
/// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/formats/tanh_mul.portable-1.0.0.mlirbc");
/// let module = pjrt_stablehlo::read_bytecode(&std::fs::read(path).unwrap()).unwrap();
/// assert!(!pjrt_stablehlo::is_polymorphic(&module));
/// ```
pub fn is_polymorphic(module: &Module) -> bool {
    module.walk().any(|op| {
        op.results.iter().any(|v| !shapes::is_static(&v.ty))
            || op.regions.iter().flat_map(|r| &r.blocks).flat_map(|b| &b.args).any(|v| !shapes::is_static(&v.ty))
    })
}

/// Refines `module` for `@main` called with `args` (one type per parameter, in order): a new
/// module with static shapes everywhere, or why not. See the [module documentation](self).
pub fn refine(module: &Module, args: &[Type]) -> Result<Module, RefineError> {
    let mut out = module.clone();
    let Some(top) = out.ops.iter_mut().find(|op| op.name == "builtin.module") else {
        return Err(RefineError::NoMain);
    };
    let Some(body) = top.regions.first_mut().and_then(|r| r.blocks.first_mut()) else {
        return Err(RefineError::NoMain);
    };
    let originals = std::mem::take(&mut body.ops);
    let mut refiner = Refiner { functions: HashMap::new(), done: HashMap::new(), made: Vec::new(), depth: 0 };
    for op in &originals {
        if op.name == "func.func" {
            if let Some(name) = symbol_name(op) {
                refiner.functions.insert(name.to_string(), op);
            }
        }
    }
    if !refiner.functions.contains_key("main") {
        body.ops = originals.clone();
        return Err(RefineError::NoMain);
    }
    let infos: Vec<Info> = args.iter().map(|t| Info { ty: t.clone(), konst: None }).collect();
    refiner.specialize("main", &infos, true)?;
    let mut made: HashMap<String, Vec<Op>> = HashMap::new();
    for (original, op) in std::mem::take(&mut refiner.made) {
        made.entry(original).or_default().push(op);
    }
    let mut ops = Vec::with_capacity(originals.len());
    for op in &originals {
        match symbol_name(op).filter(|_| op.name == "func.func") {
            Some(name) => match made.remove(name) {
                Some(refined) => ops.extend(refined),
                // Unreached private functions go: they may hold dynamic types no caller fixes.
                None if is_private(op) => {}
                None => ops.push(op.clone()),
            },
            None => ops.push(op.clone()),
        }
    }
    body.ops = ops;
    Ok(out)
}

fn symbol_name(op: &Op) -> Option<&str> {
    match op.attr("sym_name")? {
        Attr::String(s) => std::str::from_utf8(s).ok(),
        _ => None,
    }
}

fn is_private(op: &Op) -> bool {
    matches!(op.attr("sym_visibility"), Some(Attr::String(s)) if s == b"private")
}

/// What is known of a value: its (refined) type and, for small integer tensors computed from
/// shapes, its elements.
#[derive(Debug, Clone, PartialEq)]
struct Info {
    ty: Type,
    konst: Option<Const>,
}

/// A limit on nested calls, against hostile modules (StableHLO has no recursion).
const MAX_CALL_DEPTH: usize = 64;

/// A function refined for some arguments: the argument infos, its name, the result infos.
type Specialization = (Vec<Info>, String, Vec<Info>);

struct Refiner<'m> {
    /// The module's functions as read, by name.
    functions: HashMap<String, &'m Op>,
    /// Specializations made: for each function, the argument infos, the new name and the
    /// result infos.
    done: HashMap<String, Vec<Specialization>>,
    /// The refined functions, with the name of the function each was made from, in order.
    made: Vec<(String, Op)>,
    depth: usize,
}

/// One function being refined: what is known of each value in scope.
struct FnCx {
    name: String,
    env: HashMap<u32, Info>,
}

/// True if `region` numbers its values from 0: the reader gives an isolated-from-above
/// region (a function body, and VHLO's reduction and comparator bodies) a numbering of its
/// own, and a region that sees the values around it numbers after them (so above 0).
fn is_isolated(region: &Region) -> bool {
    let first = region.blocks.iter().find_map(|b| {
        b.args.first().map(|a| a.id).or_else(|| b.ops.iter().find_map(|o| o.results.first().map(|r| r.id)))
    });
    first == Some(0)
}

/// `declared` with the dimensions `dims` (its element type and the rest kept; bounds dropped).
fn with_dims(declared: &Type, dims: &[u64]) -> Type {
    match declared {
        Type::Tensor(t) => Type::Tensor(TensorType {
            dims: dims.iter().map(|&d| Dim::Fixed(d)).collect(),
            element: t.element.clone(),
            encoding: t.encoding.clone().filter(|e| !matches!(**e, Attr::Bounds(_))),
        }),
        other => other.clone(),
    }
}

/// `given` fits `declared`: the same type, with `?` dimensions of `declared` given sizes.
fn fits(declared: &Type, given: &Type) -> bool {
    match (declared, given) {
        (Type::Tensor(d), Type::Tensor(g)) => {
            d.element == g.element
                && d.dims.len() == g.dims.len()
                && d.dims.iter().zip(&g.dims).all(|(a, b)| matches!(b, Dim::Fixed(_)) && (a == b || *a == Dim::Dynamic))
        }
        (Type::UnrankedTensor(e), Type::Tensor(g)) => **e == *g.element,
        (a, b) => a == b,
    }
}

impl<'m> Refiner<'m> {
    /// The function `name` refined for `args`: its new name and what it returns.
    fn specialize(&mut self, name: &str, args: &[Info], is_main: bool) -> Result<(String, Vec<Info>), RefineError> {
        if let Some(found) = self.done.get(name).and_then(|v| v.iter().find(|(a, _, _)| a == args)) {
            return Ok((found.1.clone(), found.2.clone()));
        }
        let original = *self.functions.get(name).ok_or_else(|| RefineError::Unrefinable {
            op: "func.call".to_string(),
            what: format!("it calls @{name}, which the module does not define"),
        })?;
        if self.depth >= MAX_CALL_DEPTH {
            return Err(RefineError::Unrefinable {
                op: format!("func.call @{name}"),
                what: format!("calls nest deeper than {MAX_CALL_DEPTH}"),
            });
        }
        self.depth += 1;
        let result = self.refine_function(original, name, args, is_main);
        self.depth -= 1;
        let (mut func, results) = result?;
        let count = self.done.get(name).map_or(0, |v| v.len());
        let new_name = if count == 0 { name.to_string() } else { self.fresh_name(name, count) };
        if new_name != name {
            if let Some(slot) = func.attributes.iter_mut().find(|(n, _)| n == "sym_name") {
                slot.1 = Attr::String(new_name.clone().into_bytes());
            }
        }
        self.done.entry(name.to_string()).or_default().push((args.to_vec(), new_name.clone(), results.clone()));
        self.made.push((name.to_string(), func));
        Ok((new_name, results))
    }

    fn fresh_name(&self, name: &str, mut k: usize) -> String {
        loop {
            let candidate = format!("{name}_refined_{k}");
            if !self.functions.contains_key(&candidate) {
                return candidate;
            }
            k += 1;
        }
    }

    fn refine_function(
        &mut self,
        original: &Op,
        name: &str,
        args: &[Info],
        is_main: bool,
    ) -> Result<(Op, Vec<Info>), RefineError> {
        let mut func = original.clone();
        let unrefinable = |what: String| RefineError::Unrefinable { op: format!("@{name}"), what };
        let region = func.regions.first_mut().ok_or_else(|| unrefinable("the function has no body".to_string()))?;
        let block = region.blocks.first_mut().ok_or_else(|| unrefinable("the function has no body".to_string()))?;
        if block.args.len() != args.len() {
            return Err(RefineError::Argument {
                index: args.len(),
                expected: format!("{} parameters", block.args.len()),
                given: format!("{} arguments", args.len()),
            });
        }
        let mut cx = FnCx { name: name.to_string(), env: HashMap::new() };
        for (i, (param, given)) in block.args.iter().zip(args).enumerate() {
            if !fits(&param.ty, &given.ty) {
                let (expected, given) = (crate::ir::type_text(&param.ty), crate::ir::type_text(&given.ty));
                if is_main {
                    return Err(RefineError::Argument { index: i, expected, given });
                }
                return Err(unrefinable(format!("argument {i} is {expected} but the call passes {given}")));
            }
        }
        let returned = self.refine_region(&mut func.regions[0], &mut cx, Some(args))?;
        let results = returned.into_iter().next().unwrap_or_default();
        if let Some((_, Attr::Type(Type::Function { inputs, outputs }))) =
            func.attributes.iter_mut().find(|(n, _)| n == "function_type")
        {
            *inputs = args.iter().map(|a| a.ty.clone()).collect();
            if outputs.len() != results.len() {
                return Err(unrefinable(format!(
                    "it returns {} values but declares {} results",
                    results.len(),
                    outputs.len()
                )));
            }
            *outputs = results.iter().map(|r| r.ty.clone()).collect();
        }
        Ok((func, results))
    }

    /// Refines every block of `region`; returns the infos each block's terminator returns.
    /// The entry block's arguments are `entry` when given (a function's or a loop's), else
    /// what they declare. (Ids are unique only among the values in scope: a sibling region
    /// may have used the same ones, so every definition replaces what `env` had.)
    fn refine_region(
        &mut self,
        region: &mut Region,
        cx: &mut FnCx,
        entry: Option<&[Info]>,
    ) -> Result<Vec<Vec<Info>>, RefineError> {
        // An isolated region sees nothing around it, and may reuse the ids of what is.
        let outer = if is_isolated(region) { Some(std::mem::take(&mut cx.env)) } else { None };
        let result = self.refine_blocks(region, cx, entry);
        if let Some(outer) = outer {
            cx.env = outer;
        }
        result
    }

    fn refine_blocks(
        &mut self,
        region: &mut Region,
        cx: &mut FnCx,
        entry: Option<&[Info]>,
    ) -> Result<Vec<Vec<Info>>, RefineError> {
        let mut returned = Vec::with_capacity(region.blocks.len());
        for (k, block) in region.blocks.iter_mut().enumerate() {
            match entry.filter(|_| k == 0) {
                Some(infos) => {
                    for (a, info) in block.args.iter_mut().zip(infos) {
                        a.ty = info.ty.clone();
                        cx.env.insert(a.id, info.clone());
                    }
                }
                None => {
                    for a in &block.args {
                        cx.env.insert(a.id, Info { ty: a.ty.clone(), konst: None });
                    }
                }
            }
            returned.push(self.refine_block(block, cx)?);
        }
        Ok(returned)
    }

    fn refine_block(&mut self, block: &mut Block, cx: &mut FnCx) -> Result<Vec<Info>, RefineError> {
        let ops = std::mem::take(&mut block.ops);
        let mut kept = Vec::with_capacity(ops.len());
        let mut returned = Vec::new();
        for mut op in ops {
            if op.name == "func.return" || op.name == "stablehlo.return" {
                returned = self.operands(&op, cx)?;
                kept.push(op);
                continue;
            }
            if self.refine_op(&mut op, cx)? {
                kept.push(op);
            }
        }
        block.ops = kept;
        Ok(returned)
    }

    fn operands(&self, op: &Op, cx: &FnCx) -> Result<Vec<Info>, RefineError> {
        op.operands
            .iter()
            .map(|v| {
                cx.env.get(v).cloned().ok_or_else(|| RefineError::Unrefinable {
                    op: describe(op, &cx.name),
                    what: format!("operand %{v} is not defined before it is used"),
                })
            })
            .collect()
    }

    /// Refines one op in place; false if it is to be dropped.
    fn refine_op(&mut self, op: &mut Op, cx: &mut FnCx) -> Result<bool, RefineError> {
        let ins = self.operands(op, cx)?;
        let fname = cx.name.clone();
        let err = |op: &Op, what: String| RefineError::Unrefinable { op: describe(op, &fname), what };
        let mut dims: Option<Vec<Vec<u64>>> = None;
        let mut result_infos: Option<Vec<Info>> = None;
        match op.name.as_str() {
            "func.call" | "stablehlo.composite" => {
                let attr = if op.name == "func.call" { "callee" } else { "decomposition" };
                let Some(Attr::SymbolRef(callee)) = op.attr(attr).cloned() else {
                    return Err(err(op, format!("it has no {attr}")));
                };
                let (new_name, results) = self.specialize(&callee, &ins, false)?;
                if let Some(slot) = op.attributes.iter_mut().find(|(n, _)| n == attr) {
                    slot.1 = Attr::SymbolRef(new_name);
                }
                result_infos = Some(results);
            }
            "stablehlo.while" => {
                let loop_infos: Vec<Info> = ins.iter().map(|i| Info { ty: i.ty.clone(), konst: None }).collect();
                if op.regions.iter().any(|r| r.blocks.first().is_none_or(|b| b.args.len() != loop_infos.len())) {
                    return Err(err(op, "a region's arguments do not match the loop's operands".into()));
                }
                let mut regions = std::mem::take(&mut op.regions);
                for (k, region) in regions.iter_mut().enumerate() {
                    let returned = self.refine_region(region, cx, Some(&loop_infos))?;
                    if k == 1 {
                        let body: Vec<&Type> =
                            returned.first().map(|r| r.iter().map(|i| &i.ty).collect()).unwrap_or_default();
                        if body.len() != loop_infos.len() || body.iter().zip(&loop_infos).any(|(a, b)| **a != b.ty) {
                            op.regions = regions;
                            return Err(err(op, "the loop body changes the shape of what it carries".into()));
                        }
                    }
                }
                op.regions = regions;
                result_infos = Some(loop_infos);
            }
            "stablehlo.case" | "stablehlo.if" => {
                let mut regions = std::mem::take(&mut op.regions);
                let mut first: Option<Vec<Info>> = None;
                for region in &mut regions {
                    let returned = self.refine_region(region, cx, None)?.into_iter().next().unwrap_or_default();
                    let types: Vec<Info> = returned.into_iter().map(|i| Info { ty: i.ty, konst: None }).collect();
                    match &first {
                        None => first = Some(types),
                        Some(f) if *f != types => {
                            op.regions = regions;
                            return Err(err(op, "its branches return different shapes".into()));
                        }
                        Some(_) => {}
                    }
                }
                op.regions = regions;
                result_infos = first;
            }
            "stablehlo.custom_call" => {
                let consts: Vec<Option<Const>> = ins.iter().map(|i| i.konst.clone()).collect();
                let types: Vec<Type> = ins.iter().map(|i| i.ty.clone()).collect();
                let describe_op = describe(op, &fname);
                let functions = &self.functions;
                // The function's body numbers its values from 0, as an isolated region does.
                let mut body = |name: &str| -> Result<Region, String> {
                    let f = functions.get(name).ok_or_else(|| format!("its body @{name} is not in the module"))?;
                    let mut region = f.regions.first().cloned().ok_or("its body has no region")?;
                    for b in &mut region.blocks {
                        for o in &mut b.ops {
                            if o.name == "func.return" {
                                o.name = "stablehlo.return".to_string();
                            }
                        }
                    }
                    Ok(region)
                };
                let (action, given) = dynamic::custom_call(op, &consts, &types, &mut body).map_err(|e| match e {
                    RefineError::Unrefinable { what, .. } => RefineError::Unrefinable { op: describe_op.clone(), what },
                    other => other,
                })?;
                if matches!(action, dynamic::CustomCall::Drop) {
                    return Ok(false);
                }
                if op.name != "stablehlo.custom_call" {
                    // Rewritten into another op: refine that.
                    if given.is_none() {
                        return self.refine_op(op, cx);
                    }
                }
                dims = given;
            }
            _ => {}
        }
        if result_infos.is_none() {
            // Regions of other ops (reductions, sort comparators, ...) hold static scalars: refine
            // them for what they use from outside.
            let mut regions = std::mem::take(&mut op.regions);
            for region in &mut regions {
                self.refine_region(region, cx, None)?;
            }
            op.regions = regions;
            if dims.is_none() && op.name != "stablehlo.custom_call" {
                let types: Vec<&Type> = ins.iter().map(|i| &i.ty).collect();
                let consts: Vec<Option<&Const>> = ins.iter().map(|i| i.konst.as_ref()).collect();
                dims = shapes::infer(op, &types, &consts).map_err(|what| err(op, what))?;
            }
        }
        let types: Vec<Type> = match (&result_infos, &dims) {
            (Some(infos), _) => infos.iter().map(|i| i.ty.clone()).collect(),
            (None, Some(dims)) => {
                if dims.len() != op.results.len() {
                    return Err(err(
                        op,
                        format!("{} results were expected, the op has {}", dims.len(), op.results.len()),
                    ));
                }
                op.results.iter().zip(dims).map(|(r, d)| with_dims(&r.ty, d)).collect()
            }
            (None, None) => op.results.iter().map(|r| r.ty.clone()).collect(),
        };
        if types.len() != op.results.len() {
            return Err(err(op, format!("it gives {} results but declares {}", types.len(), op.results.len())));
        }
        for (r, t) in op.results.iter().zip(&types) {
            if !shapes::is_static(t) {
                return Err(err(op, format!("its result {} stays dynamic", crate::ir::type_text(t))));
            }
            if shapes::is_static(&r.ty) && r.ty != *t && !matches!(r.ty, Type::Tuple(_)) {
                return Err(err(
                    op,
                    format!(
                        "it declares the result {} but its operands give {}",
                        crate::ir::type_text(&r.ty),
                        crate::ir::type_text(t)
                    ),
                ));
            }
        }
        let consts: Vec<Option<Const>> = ins.iter().map(|i| i.konst.clone()).collect();
        let folded = if op.results.len() == 1 && result_infos.is_none() {
            let operands: Vec<(Option<&Const>, &Type)> = ins.iter().map(|i| (i.konst.as_ref(), &i.ty)).collect();
            fold::fold(op, &operands, &types[0])
        } else {
            None
        };
        dynamic::to_static(op, &consts);
        for (k, (r, t)) in op.results.iter_mut().zip(types).enumerate() {
            r.ty = t;
            let konst = match &result_infos {
                Some(infos) => infos[k].konst.clone(),
                None => folded.clone(),
            };
            cx.env.insert(r.id, Info { ty: r.ty.clone(), konst });
        }
        Ok(true)
    }
}

/// `stablehlo.dynamic_reshape in @f (from "jit(f)/reshape")`: the op for error messages.
fn describe(op: &Op, function: &str) -> String {
    let mut s = op.name.clone();
    if op.name == "stablehlo.custom_call" {
        if let Some(t) = dynamic::target(op) {
            s.push_str(" @");
            s.push_str(&String::from_utf8_lossy(t));
        }
    }
    s.push_str(" in @");
    s.push_str(function);
    if let Some(name) = location_name(&op.location) {
        s.push_str(&format!(" (from {name:?})"));
    }
    s
}

fn location_name(l: &crate::ir::Location) -> Option<String> {
    use crate::ir::Location::*;
    match l {
        Name { name, .. } => Some(name.clone()),
        CallSite { callee, .. } => location_name(callee),
        Fused { locations, .. } => locations.iter().find_map(|l| location_name(l)),
        FileLineCol { file, line, .. } => Some(format!("{file}:{line}")),
        _ => None,
    }
}
