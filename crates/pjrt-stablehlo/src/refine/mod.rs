//! Shape refinement: [`refine`] and what it needs (constant folding, shape rules, the
//! dynamic ops' static forms).

mod dims;
mod dynamic;
mod fold;
mod shapes;

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use crate::ir::{Attr, Block, Dim, Module, Op, Region, TensorType, Type};
pub use dims::{bind_dimensions, dimension_parameters};
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
    /// use pjrt_stablehlo::ir::{ElementType, Type};
    /// use pjrt_stablehlo::type_text;
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
/// module with static shapes everywhere, or why not.
///
/// A shape-polymorphic module (what `jax.export` writes for symbolic
/// dimensions, `tensor<?x4xf32>`) made static for concrete argument types, as JAX does before
/// it compiles (`RefinePolymorphicShapes`), since plugins do not.
///
/// An exported `@main` computes its dimension variables itself (`get_dimension_size`, integer
/// arithmetic, a private `@divmod`) and checks them (`custom_call @shape_assertion`), so no
/// symbolic solver is needed: `@main` gets the argument types, every function is refined for
/// each call site's operand types and known constants (a copy per distinct call), the
/// dimension computations are constant-folded, each `shape_assertion` is evaluated (JAX's
/// message filled in when it fails) and dropped, and the `dynamic_*` ops whose shape operands
/// fold become their static forms. Whatever stays dynamic is an error naming the op.
///
/// ```
/// use pjrt_stablehlo::ir::{ElementType, Type};
/// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/jax_export/jax-0.10.2/symbolic_batch/model.jaxexport");
/// let export = pjrt_formats::jax_export::JaxExport::read(path).unwrap();
/// let module = pjrt_stablehlo::read_bytecode(export.mlir_module()).unwrap();
/// let refined = pjrt_stablehlo::refine(&module, &[Type::tensor(ElementType::F32, &[3, 4])]).unwrap();
/// let text = pjrt_stablehlo::print(&refined);
/// assert!(text.contains("tensor<3x4xf32>") && !text.contains('?'));
/// ```
pub fn refine(module: &Module, args: &[Type]) -> Result<Module, RefineError> {
    let mut out = module.clone();
    let Some(top) = out.ops.iter_mut().find(|op| op.name == "builtin.module") else {
        return Err(RefineError::NoMain);
    };
    let Some(body) = top.regions.first_mut().and_then(|r| r.blocks.first_mut()) else {
        return Err(RefineError::NoMain);
    };
    let originals = std::mem::take(&mut body.ops);
    let work = MIN_WORK.max(originals.iter().map(weight).fold(0usize, usize::saturating_add).saturating_mul(8));
    let mut refiner = Refiner {
        functions: HashMap::new(),
        done: HashMap::new(),
        count: HashMap::new(),
        names: HashSet::new(),
        made: Vec::new(),
        firsts: HashMap::new(),
        depth: 0,
        nesting: 0,
        work,
        work_limit: work,
    };
    for op in &originals {
        if op.name == "func.func" {
            if let Some(name) = symbol_name(op) {
                refiner.functions.insert(name.to_string(), op);
                refiner.names.insert(name.to_string());
            }
        }
    }
    if !refiner.functions.contains_key("main") {
        body.ops = originals.clone();
        return Err(RefineError::NoMain);
    }
    let infos: Vec<Rc<Info>> = args.iter().map(|t| Rc::new(Info { ty: t.clone(), konst: None })).collect();
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

/// `@main`'s parameter types with each `?` made `size`, for fuzzing: `None` when the module has
/// no `@main`.
pub(crate) fn main_parameters(module: &Module, size: u64) -> Option<Vec<Type>> {
    let top = module.ops.iter().find(|op| op.name == "builtin.module")?;
    let body = top.regions.first()?.blocks.first()?;
    let main = body.ops.iter().find(|op| op.name == "func.func" && symbol_name(op) == Some("main"))?;
    let params = &main.regions.first()?.blocks.first()?.args;
    let fixed = |d: &Dim| if *d == Dim::Dynamic { Dim::Fixed(size) } else { *d };
    Some(
        params
            .iter()
            .map(|p| match &p.ty {
                Type::Tensor(t) => Type::Tensor(TensorType {
                    dims: t.dims.iter().map(fixed).collect(),
                    element: t.element.clone(),
                    encoding: t.encoding.clone().filter(|e| !matches!(**e, Attr::Bounds(_))),
                }),
                other => other.clone(),
            })
            .collect(),
    )
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
/// shapes, its elements (with the dimensions of `ty`). Shared: an op may use one value many
/// times, and copies of a 4096-element constant per use would let a small module allocate
/// what it likes.
#[derive(Debug, Clone, PartialEq)]
struct Info {
    ty: Type,
    konst: Option<Rc<Const>>,
}

/// A limit on nested calls, against hostile modules (StableHLO has no recursion).
const MAX_CALL_DEPTH: usize = 64;

/// A limit on calls and regions nested in all: the refiner recurses once for each, and the
/// reader's bound on region nesting holds in each function only (a custom call's body may
/// also be a function whose body holds the same call).
const MAX_NESTING: usize = 128;

/// The ops and operands the refiner may copy (a function for each specialization, a custom
/// call's body for each use), at least: 8 times the module's own, so that no small hostile
/// module makes it copy exponentially many (a function calling the next one at two shapes,
/// 64 deep).
const MIN_WORK: usize = 1 << 22;

/// A specialization's key: the function's name and, for each argument, its type's text and
/// the constant known for it.
type SpecKey = (String, Vec<(String, Option<Rc<Const>>)>);

struct Refiner<'m> {
    /// The module's functions as read, by name.
    functions: HashMap<String, &'m Op>,
    /// Specializations made: the new name and the result infos, by function and arguments.
    done: HashMap<SpecKey, (String, Vec<Rc<Info>>)>,
    /// How many specializations each function has.
    count: HashMap<String, usize>,
    /// Every function name in use (the module's and those of the specializations made).
    names: HashSet<String>,
    /// The refined functions, with the name of the function each was made from, in order.
    made: Vec<(String, Op)>,
    /// For each function, where its first specializations are in `made`.
    firsts: HashMap<String, Vec<usize>>,
    /// Calls nested.
    depth: usize,
    /// Calls and regions nested.
    nesting: usize,
    /// What is left of the work allowed (see [`MIN_WORK`]), and what was allowed.
    work: usize,
    work_limit: usize,
}

/// One function being refined: what is known of each value in scope.
struct FnCx {
    name: String,
    env: HashMap<u32, Rc<Info>>,
}

/// How many of a function's specializations a new one is compared with, to share their body.
const SAME_BODY_CHECKS: usize = 8;

/// A function's attributes but its name.
fn other_attributes(f: &Op) -> Vec<&(String, Attr)> {
    f.attributes.iter().filter(|(n, _)| n != "sym_name").collect()
}

/// The ops and operands of `op`, its regions' included: what copying it costs.
fn weight(op: &Op) -> usize {
    let mut n = 0usize;
    let mut stack = vec![op];
    while let Some(o) = stack.pop() {
        n = n.saturating_add(1 + o.operands.len());
        stack.extend(o.regions.iter().flat_map(|r| &r.blocks).flat_map(|b| &b.ops));
    }
    n
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
    /// Takes `units` from the work left; an error naming `op` when it is spent.
    fn charge(&mut self, units: usize, op: impl FnOnce() -> String) -> Result<(), RefineError> {
        self.work = self.work.checked_sub(units).ok_or_else(|| RefineError::Unrefinable {
            op: op(),
            what: format!(
                "refining the module would copy more than {} ops and operands (functions called at too many \
                 distinct shapes)",
                self.work_limit
            ),
        })?;
        Ok(())
    }

    /// The function `name` refined for `args`: its new name and what it returns.
    fn specialize(
        &mut self,
        name: &str,
        args: &[Rc<Info>],
        is_main: bool,
    ) -> Result<(String, Vec<Rc<Info>>), RefineError> {
        let key: SpecKey =
            (name.to_string(), args.iter().map(|a| (crate::print::type_text(&a.ty), a.konst.clone())).collect());
        if let Some((new_name, results)) = self.done.get(&key) {
            return Ok((new_name.clone(), results.clone()));
        }
        let original = *self.functions.get(name).ok_or_else(|| RefineError::Unrefinable {
            op: "func.call".to_string(),
            what: format!("it calls @{name}, which the module does not define"),
        })?;
        if self.depth >= MAX_CALL_DEPTH || self.nesting >= MAX_NESTING {
            return Err(RefineError::Unrefinable {
                op: format!("func.call @{name}"),
                what: format!(
                    "calls nest deeper than {MAX_CALL_DEPTH}, or calls and regions deeper than {MAX_NESTING}"
                ),
            });
        }
        self.charge(weight(original), || format!("func.call @{name}"))?;
        self.depth += 1;
        self.nesting += 1;
        let result = self.refine_function(original, name, args, is_main);
        self.depth -= 1;
        self.nesting -= 1;
        let (mut func, results) = result?;
        // Calls that differ only in constants the body does not depend on (a static module's
        // calls, most of all) share one function: the first few of this function's
        // specializations are compared (a few, so that a hostile module's many cost little).
        let firsts = self.firsts.get(name).map(Vec::as_slice).unwrap_or_default();
        let same = firsts.iter().map(|&i| &self.made[i].1).find_map(|f| {
            (f.regions == func.regions && f.results == func.results && other_attributes(f) == other_attributes(&func))
                .then(|| symbol_name(f).map(str::to_string))
                .flatten()
        });
        if let Some(existing) = same {
            self.done.insert(key, (existing.clone(), results.clone()));
            return Ok((existing, results));
        }
        let count = self.count.entry(name.to_string()).or_default();
        let k = *count;
        *count += 1;
        let new_name = if k == 0 { name.to_string() } else { self.fresh_name(name, k) };
        if new_name != name {
            if let Some(slot) = func.attributes.iter_mut().find(|(n, _)| n == "sym_name") {
                slot.1 = Attr::String(new_name.clone().into_bytes());
            }
        }
        self.done.insert(key, (new_name.clone(), results.clone()));
        let firsts = self.firsts.entry(name.to_string()).or_default();
        if firsts.len() < SAME_BODY_CHECKS {
            firsts.push(self.made.len());
        }
        self.made.push((name.to_string(), func));
        Ok((new_name, results))
    }

    /// `name_refined_k` for the first `k` from `k` up that no function has, taken.
    fn fresh_name(&mut self, name: &str, mut k: usize) -> String {
        loop {
            let candidate = format!("{name}_refined_{k}");
            if self.names.insert(candidate.clone()) {
                return candidate;
            }
            k += 1;
        }
    }

    fn refine_function(
        &mut self,
        original: &Op,
        name: &str,
        args: &[Rc<Info>],
        is_main: bool,
    ) -> Result<(Op, Vec<Rc<Info>>), RefineError> {
        let mut func = original.clone();
        let unrefinable = |what: String| RefineError::Unrefinable { op: format!("@{name}"), what };
        let region = func.regions.first_mut().ok_or_else(|| unrefinable("the function has no body".to_string()))?;
        let block = region.blocks.first_mut().ok_or_else(|| unrefinable("the function has no body".to_string()))?;
        if block.args.len() != args.len() {
            if !is_main {
                return Err(unrefinable(format!(
                    "it has {} parameters but the call passes {} operands",
                    block.args.len(),
                    args.len()
                )));
            }
            return Err(RefineError::Argument {
                index: args.len(),
                expected: format!("{} parameters", block.args.len()),
                given: format!("{} arguments", args.len()),
            });
        }
        let mut cx = FnCx { name: name.to_string(), env: HashMap::new() };
        for (i, (param, given)) in block.args.iter().zip(args).enumerate() {
            if !fits(&param.ty, &given.ty) {
                let (expected, given) = (crate::print::type_text(&param.ty), crate::print::type_text(&given.ty));
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
        entry: Option<&[Rc<Info>]>,
    ) -> Result<Vec<Vec<Rc<Info>>>, RefineError> {
        if self.nesting >= MAX_NESTING {
            return Err(RefineError::Unrefinable {
                op: format!("a region in @{}", cx.name),
                what: format!("calls and regions nest deeper than {MAX_NESTING}"),
            });
        }
        // An isolated region sees nothing around it, and may reuse the ids of what is.
        let outer = if is_isolated(region) { Some(std::mem::take(&mut cx.env)) } else { None };
        self.nesting += 1;
        let result = self.refine_blocks(region, cx, entry);
        self.nesting -= 1;
        if let Some(outer) = outer {
            cx.env = outer;
        }
        result
    }

    fn refine_blocks(
        &mut self,
        region: &mut Region,
        cx: &mut FnCx,
        entry: Option<&[Rc<Info>]>,
    ) -> Result<Vec<Vec<Rc<Info>>>, RefineError> {
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
                        cx.env.insert(a.id, Rc::new(Info { ty: a.ty.clone(), konst: None }));
                    }
                }
            }
            returned.push(self.refine_block(block, cx)?);
        }
        Ok(returned)
    }

    fn refine_block(&mut self, block: &mut Block, cx: &mut FnCx) -> Result<Vec<Rc<Info>>, RefineError> {
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

    fn operands(&self, op: &Op, cx: &FnCx) -> Result<Vec<Rc<Info>>, RefineError> {
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

    /// Refines one op in place; false if it is to be dropped. (Each kind of op has a function
    /// of its own, kept out of line: the refiner recurses through here once per region and
    /// call, and one large frame for all of them would overflow small stacks in debug builds
    /// well before [`MAX_NESTING`].)
    fn refine_op(&mut self, op: &mut Op, cx: &mut FnCx) -> Result<bool, RefineError> {
        let ins = self.operands(op, cx)?;
        let (dims, result_infos) = match op.name.as_str() {
            "func.call" | "stablehlo.composite" => (None, Some(self.refine_call(op, cx, &ins)?)),
            "stablehlo.while" => (None, Some(self.refine_while(op, cx, &ins)?)),
            "stablehlo.case" | "stablehlo.if" => (None, self.refine_branches(op, cx)?),
            "stablehlo.custom_call" => match self.refine_custom_call(op, cx, &ins)? {
                Custom::Drop => return Ok(false),
                Custom::Rewritten => return self.refine_op(op, cx),
                Custom::Dims(dims) => (dims, None),
            },
            _ => (None, None),
        };
        if result_infos.is_none() {
            self.refine_inner_regions(op, cx)?;
        }
        finish(op, cx, &ins, dims, result_infos)?;
        Ok(true)
    }

    #[inline(never)]
    fn refine_call(&mut self, op: &mut Op, cx: &FnCx, ins: &[Rc<Info>]) -> Result<Vec<Rc<Info>>, RefineError> {
        let attr = if op.name == "func.call" { "callee" } else { "decomposition" };
        let Some(Attr::SymbolRef(callee)) = op.attr(attr).cloned() else {
            return Err(RefineError::Unrefinable { op: describe(op, &cx.name), what: format!("it has no {attr}") });
        };
        let (new_name, results) = self.specialize(&callee, ins, false)?;
        if let Some(slot) = op.attributes.iter_mut().find(|(n, _)| n == attr) {
            slot.1 = Attr::SymbolRef(new_name);
        }
        Ok(results)
    }

    #[inline(never)]
    fn refine_while(&mut self, op: &mut Op, cx: &mut FnCx, ins: &[Rc<Info>]) -> Result<Vec<Rc<Info>>, RefineError> {
        let err =
            |op: &Op, cx: &FnCx, what: &str| RefineError::Unrefinable { op: describe(op, &cx.name), what: what.into() };
        let loop_infos: Vec<Rc<Info>> = ins.iter().map(|i| Rc::new(Info { ty: i.ty.clone(), konst: None })).collect();
        if op.regions.iter().any(|r| r.blocks.first().is_none_or(|b| b.args.len() != loop_infos.len())) {
            return Err(err(op, cx, "a region's arguments do not match the loop's operands"));
        }
        let mut regions = std::mem::take(&mut op.regions);
        for (k, region) in regions.iter_mut().enumerate() {
            let returned = self.refine_region(region, cx, Some(&loop_infos))?;
            if k == 1 {
                let body: Vec<&Type> = returned.first().map(|r| r.iter().map(|i| &i.ty).collect()).unwrap_or_default();
                if body.len() != loop_infos.len() || body.iter().zip(&loop_infos).any(|(a, b)| **a != b.ty) {
                    op.regions = regions;
                    return Err(err(op, cx, "the loop body changes the shape of what it carries"));
                }
            }
        }
        op.regions = regions;
        Ok(loop_infos)
    }

    #[inline(never)]
    fn refine_branches(&mut self, op: &mut Op, cx: &mut FnCx) -> Result<Option<Vec<Rc<Info>>>, RefineError> {
        let mut regions = std::mem::take(&mut op.regions);
        let mut first: Option<Vec<Rc<Info>>> = None;
        for region in &mut regions {
            let returned = self.refine_region(region, cx, None)?.into_iter().next().unwrap_or_default();
            let types: Vec<Rc<Info>> =
                returned.into_iter().map(|i| Rc::new(Info { ty: i.ty.clone(), konst: None })).collect();
            match &first {
                None => first = Some(types),
                Some(f) if *f != types => {
                    op.regions = regions;
                    return Err(RefineError::Unrefinable {
                        op: describe(op, &cx.name),
                        what: "its branches return different shapes".into(),
                    });
                }
                Some(_) => {}
            }
        }
        op.regions = regions;
        Ok(first)
    }

    #[inline(never)]
    fn refine_custom_call(&mut self, op: &mut Op, cx: &FnCx, ins: &[Rc<Info>]) -> Result<Custom, RefineError> {
        let consts: Vec<Option<&Const>> = ins.iter().map(|i| i.konst.as_deref()).collect();
        let types: Vec<&Type> = ins.iter().map(|i| &i.ty).collect();
        let describe_op = describe(op, &cx.name);
        let functions = &self.functions;
        let (work, work_limit) = (&mut self.work, self.work_limit);
        // The function's body numbers its values from 0, as an isolated region does.
        let mut body = |name: &str| -> Result<Region, String> {
            let f = functions.get(name).ok_or_else(|| format!("its body @{name} is not in the module"))?;
            // A copy for each use: charged as a specialization is.
            *work = work
                .checked_sub(weight(f))
                .ok_or_else(|| format!("refining the module would copy more than {work_limit} ops and operands"))?;
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
        Ok(match action {
            dynamic::CustomCall::Drop => Custom::Drop,
            // Rewritten into another op: refine that.
            _ if op.name != "stablehlo.custom_call" && given.is_none() => Custom::Rewritten,
            _ => Custom::Dims(given),
        })
    }

    /// Regions of other ops (reductions, sort comparators, ...) hold static scalars: refined for
    /// what they use from outside.
    #[inline(never)]
    fn refine_inner_regions(&mut self, op: &mut Op, cx: &mut FnCx) -> Result<(), RefineError> {
        let mut regions = std::mem::take(&mut op.regions);
        let result = regions.iter_mut().try_for_each(|region| self.refine_region(region, cx, None).map(drop));
        op.regions = regions;
        result
    }
}

/// What a custom call's refinement leaves to do.
enum Custom {
    /// Drop it (a `shape_assertion` that holds).
    Drop,
    /// It became another op: refine that.
    Rewritten,
    /// Its result dimensions, where it gives them.
    Dims(Option<Vec<Vec<u64>>>),
}

/// The rest of an op's refinement: its result types (from its operands' shapes, or
/// `result_infos`, what a call or loop gives) checked and set, constants folded, a dynamic op
/// made static, its results recorded in `cx`.
#[inline(never)]
fn finish(
    op: &mut Op,
    cx: &mut FnCx,
    ins: &[Rc<Info>],
    mut dims: Option<Vec<Vec<u64>>>,
    result_infos: Option<Vec<Rc<Info>>>,
) -> Result<(), RefineError> {
    let fname = cx.name.clone();
    let err = |op: &Op, what: String| RefineError::Unrefinable { op: describe(op, &fname), what };
    if result_infos.is_none() && dims.is_none() && op.name != "stablehlo.custom_call" {
        let types: Vec<&Type> = ins.iter().map(|i| &i.ty).collect();
        let consts: Vec<Option<&Const>> = ins.iter().map(|i| i.konst.as_deref()).collect();
        dims = shapes::infer(op, &types, &consts).map_err(|what| err(op, what))?;
    }
    let types: Vec<Type> = match (&result_infos, &dims) {
        (Some(infos), _) => infos.iter().map(|i| i.ty.clone()).collect(),
        (None, Some(dims)) => {
            if dims.len() != op.results.len() {
                return Err(err(op, format!("{} results were expected, the op has {}", dims.len(), op.results.len())));
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
            return Err(err(op, format!("its result {} stays dynamic", crate::print::type_text(t))));
        }
        if shapes::is_static(&r.ty) && r.ty != *t && !matches!(r.ty, Type::Tuple(_)) {
            return Err(err(
                op,
                format!(
                    "it declares the result {} but its operands give {}",
                    crate::print::type_text(&r.ty),
                    crate::print::type_text(t)
                ),
            ));
        }
    }
    let consts: Vec<Option<&Const>> = ins.iter().map(|i| i.konst.as_deref()).collect();
    let folded = if op.results.len() == 1 && result_infos.is_none() {
        let operands: Vec<(Option<&Const>, &Type)> = ins.iter().map(|i| (i.konst.as_deref(), &i.ty)).collect();
        fold::fold(op, &operands, &types[0]).map(Rc::new)
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
        cx.env.insert(r.id, Rc::new(Info { ty: r.ty.clone(), konst }));
    }
    Ok(())
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
        FileLineColRange { file, start_line, .. } => Some(format!("{file}:{start_line}")),
        _ => None,
    }
}
