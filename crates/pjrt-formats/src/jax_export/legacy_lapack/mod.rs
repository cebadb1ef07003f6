//! The upgrade of jaxlib's pre-FFI LAPACK custom calls: [`upgrade_legacy_lapack`].

use std::collections::{HashMap, HashSet};

use pjrt_stablehlo::ir::{Attr, DenseData, Dim, ElementType, Module, Op, TensorType, Type, Value};

use crate::error::LegacyLapackError;

mod calls;
mod layouts;

use calls::CallSite;
use layouts::{plan_legacy, plan_trsm_alpha};

/// JAX's LAPACK custom calls of before their FFI form, upgraded on load: exports of JAX 0.4.30
/// (and, for some routines, 0.4.38) call `lapack_sgetrf`, `lapack_dpotrf`, `blas_strsm`, ... (jaxlib's `lapack.py` of
/// then: descriptor scalars such as the batch size, `m`, `n` and workspace sizes as operands,
/// workspaces as extra results), which no jaxlib and no plugin serves any longer. Each such call
/// is rewritten in the module, before it is compiled, into the `lapack_*_ffi` call that JAX
/// writes today for the same routine (the one pjrt-lapack serves): the matrix operands only,
/// the options as the FFI call's attributes, the same results without the workspaces. JAX
/// 0.4.38-0.5.x's `lapack_?trsm_ffi` with a third operand (the scalar `alpha`, always 1 in JAX's
/// lowering) becomes the two-operand call of today here (pjrt-lapack's handler also takes it
/// as it is, so [`JaxExport`](super::JaxExport) leaves it to the handler).
///
/// Every descriptor operand must be a constant this module can evaluate (a `stablehlo.constant`,
/// the size of a static dimension, or products, sums and conversions of them, as jaxlib wrote
/// them; in a private function only `func.call`s reach, also a parameter to which every call
/// passes the same such constant) and must agree with the shapes of the matrices. So a
/// shape-polymorphic export is upgraded once refined for its inputs' shapes (as
/// [`JaxExport::program_for`](super::JaxExport::program_for) does): its batch size then comes
/// from `@main`'s static input dimensions through the inner functions' dimension arguments.
/// Every result that the FFI call does not have must be unused (a
/// workspace), or be an `info` that only an illegal argument sets (`?geqrf`, `?orgqr`), which is
/// then a constant 0. Anything else is refused ([`LegacyLapackError`]), naming the call and
/// what differs: the upgrade never guesses.
///
/// ```
/// use pjrt_formats::jax_export::upgrade_legacy_lapack;
/// // JAX 0.4.30's jnp.linalg.cholesky of one 2x2 matrix (the custom call and its operands).
/// let mut module = pjrt_stablehlo::parse_text(r#"
/// func.func public @main(%a: tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<i32>) {
///   %lower = stablehlo.constant dense<1> : tensor<i32>
///   %batch = stablehlo.constant dense<1> : tensor<i32>
///   %n = stablehlo.constant dense<2> : tensor<i32>
///   %l:2 = stablehlo.custom_call @lapack_spotrf(%lower, %batch, %n, %a) {api_version = 2 : i32,
///       operand_layouts = [dense<> : tensor<0xindex>, dense<> : tensor<0xindex>, dense<> : tensor<0xindex>, dense<[0, 1]> : tensor<2xindex>],
///       output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 3, operand_tuple_indices = []>],
///       result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>]}
///       : (tensor<i32>, tensor<i32>, tensor<i32>, tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<i32>)
///   return %l#0, %l#1 : tensor<2x2xf32>, tensor<i32>
/// }"#).unwrap();
/// assert_eq!(upgrade_legacy_lapack(&mut module)?, 1);
/// let text = pjrt_stablehlo::print(&module);
/// assert!(text.contains("lapack_spotrf_ffi") && text.contains("uplo = 76 : ui8"), "{text}");
/// # Ok::<(), pjrt_formats::jax_export::LegacyLapackError>(())
/// ```
///
/// Returns how many calls it rewrote. On an error the module may be partly rewritten: drop it.
pub fn upgrade_legacy_lapack(module: &mut Module) -> Result<usize, LegacyLapackError> {
    calls::upgrade_in_call_order(module)
}

/// Whether a module's bytes (MLIR bytecode or text) may name a pre-FFI LAPACK target that
/// [`upgrade_legacy_lapack`] rewrites: a cheap test before the module is read.
///
/// ```
/// assert!(pjrt_formats::jax_export::may_call_legacy_lapack(b"@lapack_sgetrf("));
/// assert!(!pjrt_formats::jax_export::may_call_legacy_lapack(b"@lapack_sgetrf_ffi("));
/// assert!(pjrt_formats::jax_export::may_call_legacy_lapack(b"\x0bblas_ztrsmA")); // then a length byte
/// ```
pub fn may_call_legacy_lapack(bytes: &[u8]) -> bool {
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut i = 0;
    while i < bytes.len() {
        let rest = &bytes[i..];
        let prefix = if rest.starts_with(b"lapack_") {
            7
        } else if rest.starts_with(b"blas_") {
            5
        } else {
            i += 1;
            continue;
        };
        let len = rest.iter().take_while(|&&b| is_ident(b)).count();
        let name = std::str::from_utf8(&rest[..len]).unwrap_or("");
        // A name in bytecode may run into the next string's length byte (a letter, say): a
        // legacy name followed by anything but `_` counts.
        let named = (prefix + 5..=len.min(prefix + 6))
            .any(|end| legacy_routine(&name[..end]).is_some() && name.as_bytes().get(end) != Some(&b'_'));
        if (i == 0 || !is_ident(bytes[i - 1])) && named {
            return true;
        }
        i += len.max(prefix);
    }
    false
}

/// For a pre-FFI target (`lapack_sgetrf`, `blas_ztrsm`): its type letter and routine.
fn legacy_routine(name: &str) -> Option<(char, &str)> {
    let rest = name.strip_prefix("lapack_").or_else(|| name.strip_prefix("blas_"))?;
    let mut chars = rest.chars();
    let letter = chars.next().filter(|c| "sdcz".contains(*c))?;
    let routine = chars.as_str();
    let blas = name.starts_with("blas_");
    let known = if blas {
        routine == "trsm"
    } else {
        let complex = matches!(letter, 'c' | 'z');
        match routine {
            "getrf" | "geqrf" | "potrf" | "gesdd" | "geev" | "gees" | "gehrd" => true,
            "orgqr" | "syevd" | "sytrd" => !complex,
            "ungqr" | "heevd" | "hetrd" => complex,
            _ => false,
        }
    };
    known.then_some((letter, routine))
}

/// What is visible at an op: the scalar constants (value id to value) and the types of the
/// values defined before it (in its block and the blocks around it); the values used by any op
/// of the function (a result counted as used when a value of the same number is used anywhere:
/// cautious where nested regions number their values anew).
#[derive(Clone)]
struct Scope {
    scalars: HashMap<u32, Scalar>,
    types: HashMap<u32, Type>,
    used: HashSet<u32>,
}

/// A scalar constant: an integer, or a float / complex number (real and imaginary parts).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Scalar {
    Int(i64),
    Float(f64, f64),
}

/// Upgrades the calls in one function whose parameters are known to be `arguments` (where
/// `Some`: the value every call of the function passes), recording the calls it makes in
/// `calls`.
fn upgrade_function(
    func: &mut Op,
    arguments: &[Option<Scalar>],
    calls: &mut Vec<CallSite>,
) -> Result<usize, LegacyLapackError> {
    let mut used = HashSet::new();
    collect_used(func, &mut used);
    let scope = Scope { scalars: HashMap::new(), types: HashMap::new(), used };
    let mut count = 0;
    for (r, region) in func.regions.iter_mut().enumerate() {
        for (b, block) in region.blocks.iter_mut().enumerate() {
            let mut inner = scope.clone();
            let entry = r == 0 && b == 0;
            enter(block, &mut inner, if entry { arguments } else { &[] });
            count += upgrade_block(&mut block.ops, &mut inner, calls)?;
        }
    }
    Ok(count)
}

/// Records a block's arguments in `scope`: their types, and the values in `known` (by
/// position) where given; any constant an outer value of the same number had is forgotten.
fn enter(block: &pjrt_stablehlo::ir::Block, scope: &mut Scope, known: &[Option<Scalar>]) {
    for (k, a) in block.args.iter().enumerate() {
        scope.types.insert(a.id, a.ty.clone());
        match known.get(k).copied().flatten() {
            Some(v) => scope.scalars.insert(a.id, v),
            None => scope.scalars.remove(&a.id),
        };
    }
}

/// Every value number used by an op under `op`.
fn collect_used(op: &Op, used: &mut HashSet<u32>) {
    used.extend(op.operands.iter().copied());
    for region in &op.regions {
        for block in &region.blocks {
            for inner in &block.ops {
                collect_used(inner, used);
            }
        }
    }
}

/// Records what `op` defines in `scope`.
fn define(op: &Op, scope: &mut Scope) {
    for r in &op.results {
        scope.types.insert(r.id, r.ty.clone());
        scope.scalars.remove(&r.id);
    }
    if op.results.len() == 1 {
        if let Some(v) = evaluate(op, scope) {
            scope.scalars.insert(op.results[0].id, v);
        }
    }
}

/// The value of a scalar op whose operands are known constants (or, for
/// `get_dimension_size`, whose operand has a static shape).
fn evaluate(op: &Op, scope: &Scope) -> Option<Scalar> {
    let ty = &op.results[0].ty;
    if !matches!(ty, Type::Tensor(t) if t.dims.is_empty()) {
        return None;
    }
    let arg = |i: usize| op.operands.get(i).and_then(|id| scope.scalars.get(id)).copied();
    match op.name.as_str() {
        // A refined module still asks the size of a dimension that is static now.
        "stablehlo.get_dimension_size" if element(ty) == Some(ElementType::S32) => {
            let Attr::Integer { value, .. } = op.attr("dimension")? else { return None };
            let dims = dims_of(scope.types.get(op.operands.first()?)?)?;
            let size = *dims.get(usize::try_from(*value).ok()?)?;
            i32::try_from(size).ok().map(|s| Scalar::Int(s.into()))
        }
        "stablehlo.constant" => match op.attr("value")? {
            Attr::Dense { ty, data } => scalar_of(ty, data),
            _ => None,
        },
        "stablehlo.multiply" => match (arg(0)?, arg(1)?) {
            (Scalar::Int(a), Scalar::Int(b)) => a.checked_mul(b).map(Scalar::Int),
            _ => None,
        },
        "stablehlo.add" => match (arg(0)?, arg(1)?) {
            (Scalar::Int(a), Scalar::Int(b)) => a.checked_add(b).map(Scalar::Int),
            _ => None,
        },
        "stablehlo.convert" => match (arg(0)?, element(ty)?) {
            (Scalar::Int(a), ElementType::S32) => i32::try_from(a).ok().map(|a| Scalar::Int(a.into())),
            (Scalar::Int(a), ElementType::S64) => Some(Scalar::Int(a)),
            _ => None,
        },
        _ => None,
    }
}

/// The element type of a tensor type.
fn element(ty: &Type) -> Option<ElementType> {
    match ty {
        Type::Tensor(t) => match *t.element {
            Type::Scalar(e) => Some(e),
            _ => None,
        },
        _ => None,
    }
}

/// The one element of a scalar dense attribute.
fn scalar_of(ty: &Type, data: &[u8]) -> Option<Scalar> {
    let bytes = DenseData::new(ty, data).ok()?.element(0)?;
    // Each width is checked by the conversion: a dense element of another size is no scalar.
    let f32_at = |b: &[u8]| Some(f64::from(f32::from_le_bytes(b.try_into().ok()?)));
    let f64_at = |b: &[u8]| Some(f64::from_le_bytes(b.try_into().ok()?));
    Some(match element(ty)? {
        ElementType::S32 => Scalar::Int(i32::from_le_bytes(bytes.try_into().ok()?).into()),
        ElementType::S64 => Scalar::Int(i64::from_le_bytes(bytes.try_into().ok()?)),
        ElementType::U8 => Scalar::Int(u8::from_le_bytes(bytes.try_into().ok()?).into()),
        ElementType::F32 => Scalar::Float(f32_at(bytes)?, 0.0),
        ElementType::F64 => Scalar::Float(f64_at(bytes)?, 0.0),
        ElementType::C64 if bytes.len() == 8 => Scalar::Float(f32_at(&bytes[..4])?, f32_at(&bytes[4..])?),
        ElementType::C128 if bytes.len() == 16 => Scalar::Float(f64_at(&bytes[..8])?, f64_at(&bytes[8..])?),
        _ => return None,
    })
}

fn upgrade_block(ops: &mut Vec<Op>, scope: &mut Scope, calls: &mut Vec<CallSite>) -> Result<usize, LegacyLapackError> {
    let mut count = 0;
    let mut i = 0;
    while i < ops.len() {
        for region in &mut ops[i].regions {
            for block in &mut region.blocks {
                let mut inner = scope.clone();
                enter(block, &mut inner, &[]);
                count += upgrade_block(&mut block.ops, &mut inner, calls)?;
            }
        }
        if ops[i].name == "func.call" {
            calls.push(CallSite::of(&ops[i], &scope.scalars));
        }
        let replacement = if ops[i].name == "stablehlo.custom_call" { upgrade_call(&ops[i], scope)? } else { None };
        let n = match replacement {
            Some(new_ops) => {
                count += 1;
                let n = new_ops.len();
                ops.splice(i..=i, new_ops);
                n
            }
            None => 1,
        };
        for op in &ops[i..i + n] {
            define(op, scope);
        }
        i += n;
    }
    Ok(count)
}

/// What the FFI call is made of, for one legacy call.
struct Plan {
    /// The FFI target.
    target: String,
    /// The old operand indices the FFI call takes, in order.
    operands: Vec<usize>,
    /// The old result indices the FFI call returns, in order.
    results: Vec<usize>,
    /// Old results the FFI call does not return that become a constant 0 (an `info` only an
    /// illegal argument sets); every other old result not in `results` must be unused.
    zero_results: Vec<usize>,
    /// `mhlo.backend_config`.
    config: Vec<(String, Attr)>,
}

fn u8_attr(c: u8) -> Attr {
    Attr::Integer { value: c.into(), ty: Type::Scalar(ElementType::U8) }
}

fn i32_attr(v: i64) -> Attr {
    Attr::Integer { value: v, ty: Type::Scalar(ElementType::S32) }
}

/// The fixed dimensions of a tensor type.
fn dims_of(ty: &Type) -> Option<Vec<u64>> {
    match ty {
        Type::Tensor(TensorType { dims, .. }) => {
            dims.iter().map(|d| if let Dim::Fixed(n) = d { Some(*n) } else { None }).collect()
        }
        _ => None,
    }
}

/// Reads one legacy call's operands and checks them.
struct Call<'a> {
    op: &'a Op,
    scope: &'a Scope,
    target: &'a str,
    operand_types: Vec<Type>,
}

impl Call<'_> {
    fn refuse(&self, reason: impl Into<String>) -> LegacyLapackError {
        LegacyLapackError::Refused { target: self.target.to_owned(), reason: reason.into() }
    }

    /// Operand `i` as an integer constant.
    fn int(&self, i: usize, what: &str) -> Result<i64, LegacyLapackError> {
        match self.op.operands.get(i).and_then(|id| self.scope.scalars.get(id)) {
            Some(Scalar::Int(v)) => Ok(*v),
            _ => Err(self.refuse(format!("operand {i} ({what}) is not an integer constant"))),
        }
    }

    /// Operand `i` as a 0/1 flag.
    fn flag(&self, i: usize, what: &str) -> Result<bool, LegacyLapackError> {
        match self.int(i, what)? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(self.refuse(format!("operand {i} ({what}) is {v}, not 0 or 1"))),
        }
    }

    /// Operand `i` as one of the characters `allowed` (a `u8` constant).
    fn letter(&self, i: usize, what: &str, allowed: &str) -> Result<u8, LegacyLapackError> {
        let v = self.int(i, what)?;
        match u8::try_from(v).ok().filter(|c| allowed.as_bytes().contains(c)) {
            Some(c) => Ok(c),
            None => Err(self.refuse(format!("operand {i} ({what}) is {v}, not one of {allowed:?}"))),
        }
    }

    /// The fixed dimensions of operand `i`.
    fn dims(&self, i: usize) -> Result<Vec<u64>, LegacyLapackError> {
        self.operand_types
            .get(i)
            .and_then(dims_of)
            .ok_or_else(|| self.refuse(format!("operand {i} is not a tensor of static shape")))
    }

    /// The matrix operand `i`: its batch dimensions' product and its last two dimensions.
    fn matrix(&self, i: usize) -> Result<(u64, u64, u64), LegacyLapackError> {
        let d = self.dims(i)?;
        match d.as_slice() {
            [batch @ .., m, n] => Ok((batch.iter().product(), *m, *n)),
            _ => Err(self.refuse(format!("operand {i} has dimensions {d:?}, not a batch of matrices"))),
        }
    }

    /// Checks that operand `i` (`what`) equals `want`.
    fn expect(&self, i: usize, what: &str, want: u64) -> Result<(), LegacyLapackError> {
        let v = self.int(i, what)?;
        if u64::try_from(v).ok() != Some(want) {
            return Err(self.refuse(format!("operand {i} ({what}) is {v}, but the matrices make it {want}")));
        }
        Ok(())
    }
}

/// The FFI call (and any constant 0 it needs) that replaces `op`, if `op` is a legacy call.
fn upgrade_call(op: &Op, scope: &Scope) -> Result<Option<Vec<Op>>, LegacyLapackError> {
    let Some(Attr::String(name)) = op.attr("call_target_name") else { return Ok(None) };
    let Ok(target) = std::str::from_utf8(name) else { return Ok(None) };
    let operand_types = op.operands.iter().map(|id| scope.types.get(id).cloned().unwrap_or(Type::None)).collect();
    let call = Call { op, scope, target, operand_types };
    let plan = if let Some((letter, routine)) = legacy_routine(target) {
        plan_legacy(&call, letter, routine)?
    } else if target.starts_with("lapack_") && target.ends_with("trsm_ffi") && op.operands.len() == 3 {
        plan_trsm_alpha(&call)?
    } else {
        return Ok(None);
    };
    build(&call, plan, scope).map(Some)
}

/// Attributes of a legacy call that the FFI call replaces (the others are kept as they are).
const REPLACED: &[&str] = &[
    "call_target_name",
    "api_version",
    "backend_config",
    "has_side_effect",
    "operand_layouts",
    "result_layouts",
    "output_operand_aliases",
    "mhlo.backend_config",
];

/// The ops that replace `call.op` by `plan`.
fn build(call: &Call<'_>, plan: Plan, scope: &Scope) -> Result<Vec<Op>, LegacyLapackError> {
    let op = call.op;
    // Results the FFI call does not return: unused, or a constant 0.
    let mut zeros = Vec::new();
    for (i, r) in op.results.iter().enumerate() {
        if plan.results.contains(&i) || !scope.used.contains(&r.id) {
            continue;
        }
        if !plan.zero_results.contains(&i) {
            return Err(
                call.refuse(format!("its result {i} (a workspace) is used, which today's call does not return"))
            );
        }
        let Some(dims) = dims_of(&r.ty).filter(|_| element(&r.ty) == Some(ElementType::S32)) else {
            return Err(call.refuse(format!("its result {i} (info) is not a static s32 tensor")));
        };
        let value = Attr::dense_splat(r.ty.clone(), &0i32.to_le_bytes())
            .map_err(|e| call.refuse(format!("its result {i} (info): {e} ({dims:?})")))?;
        zeros.push(Op {
            name: "stablehlo.constant".into(),
            operands: vec![],
            results: vec![r.clone()],
            attributes: vec![("value".into(), value)],
            regions: vec![],
            successors: vec![],
            location: op.location.clone(),
        });
    }
    if let Some(Attr::Bool(true)) = op.attr("has_side_effect") {
        return Err(call.refuse("it has side effects (has_side_effect = true), which jaxlib's calls never had"));
    }
    match op.attr("backend_config") {
        None => {}
        Some(Attr::String(s)) if s.is_empty() => {}
        Some(Attr::Dict(d)) if d.is_empty() => {}
        Some(other) => {
            return Err(call
                .refuse(format!("it has a backend_config ({}) jaxlib never wrote", pjrt_stablehlo::attr_text(other))))
        }
    }
    let layouts = |name: &str, count: usize| -> Result<Vec<Attr>, LegacyLapackError> {
        match op.attr(name) {
            Some(Attr::Array(v)) if v.len() == count => Ok(v.clone()),
            _ => Err(call.refuse(format!("its {name} are not one per value"))),
        }
    };
    let operand_layouts = layouts("operand_layouts", op.operands.len())?;
    let result_layouts = layouts("result_layouts", op.results.len())?;
    // Aliases: an old (result, operand) pair kept when both are kept.
    let mut aliases = Vec::new();
    if let Some(Attr::Array(old)) = op.attr("output_operand_aliases") {
        for alias in old {
            let Attr::Struct { mnemonic: "output_operand_alias", fields } = alias else {
                return Err(call.refuse("an output_operand_alias is malformed"));
            };
            let field = |n: &str| fields.iter().find(|(f, _)| *f == n).map(|(_, a)| a);
            let (Some(Attr::I64Array(out)), Some(Attr::Integer { value: operand, .. }), Some(Attr::I64Array(in_tuple))) =
                (field("output_tuple_indices"), field("operand_index"), field("operand_tuple_indices"))
            else {
                return Err(call.refuse("an output_operand_alias is malformed"));
            };
            let old_result = match out.as_slice() {
                [r] => *r as usize,
                [] if op.results.len() == 1 => 0,
                _ => return Err(call.refuse("an output_operand_alias names a nested result")),
            };
            let new_result = plan.results.iter().position(|&r| r == old_result);
            let new_operand = plan.operands.iter().position(|&o| o as i64 == *operand);
            if let (Some(r), Some(o)) = (new_result, new_operand) {
                let tuple = if plan.results.len() == 1 { vec![] } else { vec![r as i64] };
                aliases.push(Attr::Struct {
                    mnemonic: "output_operand_alias",
                    fields: vec![
                        ("output_tuple_indices", Attr::I64Array(tuple)),
                        ("operand_index", Attr::Integer { value: o as i64, ty: Type::Scalar(ElementType::S64) }),
                        ("operand_tuple_indices", Attr::I64Array(in_tuple.clone())),
                    ],
                });
            }
        }
    }
    let mut attributes = vec![
        ("call_target_name".to_owned(), Attr::String(plan.target.clone().into_bytes())),
        ("api_version".to_owned(), i32_attr(4)),
        (
            "operand_layouts".to_owned(),
            Attr::Array(plan.operands.iter().map(|&i| operand_layouts[i].clone()).collect()),
        ),
        ("output_operand_aliases".to_owned(), Attr::Array(aliases)),
        ("result_layouts".to_owned(), Attr::Array(plan.results.iter().map(|&i| result_layouts[i].clone()).collect())),
        // A typed FFI call (api_version 4) takes its attributes from `backend_config`, StableHLO's
        // place for them. (JAX writes the same dictionary as `mhlo.backend_config` with the default
        // api_version; with api_version 4, XLA reads `backend_config`, empty when left out.)
        ("backend_config".to_owned(), Attr::Dict(plan.config)),
    ];
    attributes.extend(op.attributes.iter().filter(|(n, _)| !REPLACED.contains(&n.as_str())).cloned());
    let results: Vec<Value> = plan.results.iter().map(|&i| op.results[i].clone()).collect();
    let operands = plan.operands.iter().map(|&i| op.operands[i]).collect();
    let mut ops = vec![Op {
        name: op.name.clone(),
        operands,
        results,
        attributes,
        regions: vec![],
        successors: vec![],
        location: op.location.clone(),
    }];
    ops.extend(zeros);
    Ok(ops)
}
