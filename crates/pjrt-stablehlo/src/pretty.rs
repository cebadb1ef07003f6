//! MLIR text in the custom ("pretty") op forms, as MLIR and JAX print a module: `module @m
//! attributes {...} {`, `func.func public @main(%arg0: tensor<2xf32>) -> ...`, `%0 =
//! stablehlo.add %arg0, %arg0 : tensor<2xf32>`, `stablehlo.reduce(... init: ...) applies
//! stablehlo.add across dimensions = [0]`, `stablehlo.while(%iterArg0 = %0) ... cond {} do {}`.
//!
//! Each custom form is printed only when [`crate::parse_text`] reads it back to the same op
//! (what `text/custom.rs` reads, attribute for attribute); any other op, or an op whose
//! attributes a form cannot state exactly, is printed in the generic form (its regions' ops
//! still in their custom forms). The attributes a form does not state go into the `{...}` the
//! form has for them. Locations are left out.

use std::fmt::Write;

use crate::ir::{Attr, Dim, ElementType, EnumAttr, Module, Op, Region, TensorType, Type, Value};
use crate::mlir_text::{quote_symbol, string_into};
use crate::print::{attr_into, dict_into, successors_into, type_into};

/// Prints a module as MLIR text in the custom op forms MLIR and JAX print (`%0 =
/// stablehlo.add %arg0, %arg0 : tensor<2xf32>`), the generic form for ops without one;
/// [`crate::parse_text`] reads it back to the same module (locations aside).
///
/// ```
/// let text = r#"
/// func.func public @main(%x: tensor<2xf32>) -> tensor<f32> {
///   %zero = stablehlo.constant dense<0.0> : tensor<f32>
///   %0 = "stablehlo.add"(%x, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
///   %1 = stablehlo.reduce(%0 init: %zero) applies stablehlo.add across dimensions = [0] : (tensor<2xf32>, tensor<f32>) -> tensor<f32>
///   return %1 : tensor<f32>
/// }"#;
/// let module = pjrt_stablehlo::parse_text(text).unwrap();
/// let pretty = pjrt_stablehlo::print_pretty(&module);
/// assert!(pretty.contains("func.func public @main(%arg0: tensor<2xf32>) -> tensor<f32> {"), "{pretty}");
/// assert!(pretty.contains("%1 = stablehlo.add %arg0, %arg0 : tensor<2xf32>"), "{pretty}");
/// assert!(pretty.contains("applies stablehlo.add across dimensions = [0]"), "{pretty}");
/// assert_eq!(pjrt_stablehlo::parse_text(&pretty).unwrap(), module);
/// ```
pub fn print_pretty(module: &Module) -> String {
    let mut p =
        Pretty { out: String::with_capacity(1 << 16), vals: Vec::new(), undo: Vec::new(), next: Counters::default() };
    for op in &module.ops {
        p.op(op, 0, false, true);
    }
    p.out
}

/// The next number of each kind of name (`%3`, `%arg3`, `%iterArg3`).
#[derive(Clone, Copy, Default)]
struct Counters {
    result: u32,
    arg: u32,
    iter: u32,
}

/// A value's printed name.
#[derive(Clone, Copy)]
enum Name {
    /// `%N`: the single result of an op.
    Result(u32),
    /// `%N#i`: result `i` of an op with several.
    ResultOf(u32, u32),
    /// `%argN`: a block argument.
    Arg(u32),
    /// `%iterArgN`: a `while` loop's argument.
    Iter(u32),
}

type Slot<'m> = Option<(Name, &'m Type)>;

/// The type the generic form states for an operand that is not defined (as `print` does).
static NONE: Type = Type::None;

struct Pretty<'m> {
    out: String,
    /// The name and type of each value number visible where we are.
    vals: Vec<Slot<'m>>,
    /// What each `set` overwrote, to put back when a region's values go out of scope.
    undo: Vec<(u32, Slot<'m>)>,
    next: Counters,
}

/// How a keyword of a custom form states its attribute.
#[derive(Clone, Copy)]
enum Kw {
    /// `[1, 2]`: an `array<i64: ...>`.
    Ints,
    /// `3`: an `i64` integer.
    I64,
    /// `FFT`: a value of the named enum.
    Enum(&'static str),
}

/// The keywords of a custom form: (attribute, keyword, how it is stated).
type Keywords = &'static [(&'static str, &'static str, Kw)];

/// The custom form of a StableHLO op made of operands, `keyword = value` pairs and types:
/// whether the types are one type when all are the same (`custom<SameOperandsAndResultType>`)
/// rather than always functional, and the keywords (attribute, keyword, how).
fn keyword_spec(base: &str) -> Option<(bool, Keywords)> {
    const NONE: Keywords = &[];
    Some(match base {
        "abs"
        | "cbrt"
        | "ceil"
        | "convert"
        | "count_leading_zeros"
        | "cosine"
        | "exponential"
        | "exponential_minus_one"
        | "floor"
        | "imag"
        | "is_finite"
        | "log"
        | "log_plus_one"
        | "logistic"
        | "not"
        | "negate"
        | "popcnt"
        | "real"
        | "round_nearest_afz"
        | "round_nearest_even"
        | "rsqrt"
        | "sign"
        | "sine"
        | "sqrt"
        | "tan"
        | "tanh"
        | "add"
        | "atan2"
        | "divide"
        | "maximum"
        | "minimum"
        | "multiply"
        | "power"
        | "remainder"
        | "shift_left"
        | "shift_right_arithmetic"
        | "shift_right_logical"
        | "subtract"
        | "and"
        | "or"
        | "xor"
        | "clamp"
        | "after_all"
        | "replica_id"
        | "partition_id" => (true, NONE),
        "iota" => (true, &[("iota_dimension", "dim", Kw::I64)]),
        "reverse" => (true, &[("dimensions", "dims", Kw::Ints)]),
        "reshape"
        | "dynamic_reshape"
        | "bitcast_convert"
        | "dynamic_update_slice"
        | "real_dynamic_slice"
        | "dynamic_pad"
        | "uniform_quantize"
        | "uniform_dequantize" => (false, NONE),
        "broadcast_in_dim" | "dynamic_broadcast_in_dim" => (false, &[("broadcast_dimensions", "dims", Kw::Ints)]),
        "transpose" => (false, &[("permutation", "dims", Kw::Ints)]),
        "dynamic_iota" => (false, &[("iota_dimension", "dim", Kw::I64)]),
        "dynamic_slice" => (false, &[("slice_sizes", "sizes", Kw::Ints)]),
        "concatenate" | "get_dimension_size" => (false, &[("dimension", "dim", Kw::I64)]),
        "pad" => (
            false,
            &[
                ("edge_padding_low", "low", Kw::Ints),
                ("edge_padding_high", "high", Kw::Ints),
                ("interior_padding", "interior", Kw::Ints),
            ],
        ),
        "fft" => (false, &[("fft_type", "type", Kw::Enum("fft_type")), ("fft_length", "length", Kw::Ints)]),
        "rng_bit_generator" => (false, &[("rng_algorithm", "algorithm", Kw::Enum("rng_algorithm"))]),
        "rng" => (false, &[("rng_distribution", "distribution", Kw::Enum("rng_distribution"))]),
        _ => return None,
    })
}

/// `[1, 2]`.
fn ints_into(out: &mut String, v: &[i64]) {
    out.push('[');
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{x}");
    }
    out.push(']');
}

fn ints(a: Option<&Attr>) -> Option<&[i64]> {
    match a {
        Some(Attr::I64Array(v)) => Some(v),
        _ => None,
    }
}

/// An integer attribute of type `ty`.
fn int_of(a: Option<&Attr>, ty: ElementType) -> Option<i64> {
    match a {
        Some(Attr::Integer { value, ty: Type::Scalar(t) }) if *t == ty => Some(*value),
        _ => None,
    }
}

/// An enum attribute of enum `kind` whose value the parser reads back as the same.
fn enum_of<'a>(a: Option<&'a Attr>, kind: &str) -> Option<&'a EnumAttr> {
    match a {
        Some(Attr::Enum(e)) if e.kind == kind && crate::names::enum_value(kind, e.value) == Some(*e) => Some(e),
        _ => None,
    }
}

/// A UTF-8 string attribute.
fn utf8(a: Option<&Attr>) -> Option<&str> {
    match a {
        Some(Attr::String(s)) => std::str::from_utf8(s).ok(),
        _ => None,
    }
}

/// The end of the bracket group `text` opens with (quotes respected), if `text` is one
/// group: what the parser's `balanced` reads back as the same text.
fn is_one_group(text: &str, open: u8) -> bool {
    let b = text.as_bytes();
    if b.first() != Some(&open) {
        return false;
    }
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'>' if i > 0 && b[i - 1] == b'-' => {}
            b'<' | b'(' | b'[' | b'{' => depth += 1,
            b'>' | b')' | b']' | b'}' => {
                depth = match depth.checked_sub(1) {
                    Some(d) => d,
                    None => return false,
                };
                if depth == 0 {
                    return i + 1 == b.len();
                }
            }
            b'\n' => return false,
            _ => {}
        }
        i += 1;
    }
    false
}

/// An sdy attribute of `mnemonic` whose body is one bracket group opened by `open`.
fn sdy_body<'a>(a: Option<&'a Attr>, mnemonic: &str, open: u8) -> Option<&'a str> {
    match a {
        Some(Attr::Sdy { mnemonic: m, body }) if *m == mnemonic && is_one_group(body, open) => Some(body),
        _ => None,
    }
}

/// The rank-0 tensor of a tensor type's element type (what `applies` gives the body's values).
fn scalar_of(t: &Type) -> Type {
    match t {
        Type::Tensor(t) => Type::Tensor(TensorType { dims: vec![], element: t.element.clone(), encoding: None }),
        other => other.clone(),
    }
}

/// Whether a `#stablehlo.conv` is the nine fields the `[b, 0, 1, f]x[...]->[...]` layout reads
/// back: each part's batch, feature and spatial dimensions a permutation of its rank.
fn is_conv_layout(a: Option<&Attr>) -> bool {
    let Some(Attr::Struct { mnemonic: "conv", fields }) = a else { return false };
    let names = crate::names::CONV_PARTS.iter().flat_map(|&(a, b, c, _, _)| [a, b, c]);
    if fields.len() != 9 || fields.iter().zip(names).any(|((n, _), want)| *n != want) {
        return false;
    }
    fields.chunks(3).all(|part| {
        let (Some(x), Some(y), Some(spatial)) = (
            int_of(Some(&part[0].1), ElementType::S64),
            int_of(Some(&part[1].1), ElementType::S64),
            ints(Some(&part[2].1)),
        ) else {
            return false;
        };
        let rank = spatial.len() + 2;
        let mut seen = vec![false; rank];
        [x, y].iter().chain(spatial).all(|&d| match usize::try_from(d).ok().and_then(|d| seen.get_mut(d)) {
            Some(s) if !*s => {
                *s = true;
                true
            }
            _ => false,
        })
    })
}

/// A convolution's `padding` as `[[low, high], ...]` rows, when it is a full `tensor<Nx2xi64>`.
fn padding_rows(a: Option<&Attr>) -> Option<Vec<[i64; 2]>> {
    let Some(Attr::Dense { ty: Type::Tensor(t), data }) = a else { return None };
    let (&[Dim::Fixed(n), Dim::Fixed(2)], Type::Scalar(ElementType::S64), None) =
        (&t.dims[..], &*t.element, &t.encoding)
    else {
        return None;
    };
    if n == 0 || n > 1 << 16 {
        return None;
    }
    // Every element, or a splat (zero padding is one).
    let d = crate::ir::DenseData::new(&Type::Tensor(t.clone()), data).ok()?;
    let at = |i: u64| d.element(i).and_then(|c| c.try_into().ok()).map(i64::from_le_bytes);
    (0..n).map(|r| Some([at(2 * r)?, at(2 * r + 1)?])).collect()
}

/// Whether a `#stablehlo.dot_algorithm` reads back from its `<...>` as the same fields.
fn is_dot_algorithm(a: &Attr) -> bool {
    let Attr::Struct { mnemonic: "dot_algorithm", fields } = a else { return false };
    let mut order = crate::names::DOT_ALGORITHM_FIELDS.iter();
    fields.iter().all(|(n, v)| {
        order.any(|f| f == n)
            && match (*n, v) {
                (n, Attr::Type(_)) if n.ends_with("_type") => true,
                ("allow_imprecise_accumulation", Attr::Bool(_)) => true,
                (n, v) => {
                    !n.ends_with("_type")
                        && n != "allow_imprecise_accumulation"
                        && int_of(Some(v), ElementType::S64).is_some()
                }
            }
    })
}

fn is_function(t: &Type) -> bool {
    matches!(t, Type::Function { .. })
}

impl<'m> Pretty<'m> {
    fn indent(&mut self, depth: usize) {
        for _ in 0..depth {
            self.out.push_str("  ");
        }
    }

    // ---- names ----------------------------------------------------------------------------

    fn set(&mut self, v: &'m Value, name: Name) {
        let i = v.id as usize;
        if self.vals.len() <= i {
            self.vals.resize(i + 1, None);
        }
        let old = self.vals[i].replace((name, &v.ty));
        self.undo.push((v.id, old));
    }

    fn declare_args(&mut self, args: &'m [Value]) {
        for a in args {
            let n = self.next.arg;
            self.next.arg += 1;
            self.set(a, Name::Arg(n));
        }
    }

    fn declare_results(&mut self, op: &'m Op) {
        if op.results.is_empty() {
            return;
        }
        let n = self.next.result;
        self.next.result += 1;
        if let [r] = &op.results[..] {
            self.set(r, Name::Result(n));
        } else {
            for (i, r) in op.results.iter().enumerate() {
                self.set(r, Name::ResultOf(n, i as u32));
            }
        }
    }

    /// Runs `f` in a scope of its own: the values it declares go out of scope afterwards, and
    /// its numbers are used again by the next region (an isolated one starts from 0).
    fn scoped(&mut self, isolated: bool, f: impl FnOnce(&mut Self)) {
        let mark = self.undo.len();
        let next = self.next;
        if isolated {
            self.next = Counters::default();
        }
        f(self);
        while self.undo.len() > mark {
            let (id, old) = self.undo.pop().expect("an undo entry");
            self.vals[id as usize] = old;
        }
        self.next = next;
    }

    fn name(&self, id: u32) -> Option<Name> {
        self.vals.get(id as usize).copied().flatten().map(|(n, _)| n)
    }

    fn value(&mut self, id: u32) {
        let _ = match self.name(id) {
            Some(Name::Result(n)) => write!(self.out, "%{n}"),
            Some(Name::ResultOf(n, i)) => write!(self.out, "%{n}#{i}"),
            Some(Name::Arg(n)) => write!(self.out, "%arg{n}"),
            Some(Name::Iter(n)) => write!(self.out, "%iterArg{n}"),
            None => write!(self.out, "%undefined{id}"),
        };
    }

    fn values(&mut self, ids: &[u32]) {
        for (i, &v) in ids.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.value(v);
        }
    }

    /// `%a: T, %b: U` of block arguments already declared.
    fn arg_decls(&mut self, args: &[Value]) {
        for (i, a) in args.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.value(a.id);
            self.out.push_str(": ");
            type_into(&mut self.out, &a.ty);
        }
    }

    fn operand_types(&self, op: &Op) -> Option<Vec<&'m Type>> {
        op.operands.iter().map(|&v| self.vals.get(v as usize).copied().flatten().map(|(_, t)| t)).collect()
    }

    // ---- pieces ---------------------------------------------------------------------------

    fn types(&mut self, ts: &[&Type]) {
        for (i, t) in ts.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            type_into(&mut self.out, t);
        }
    }

    /// `(A, B) -> R`, `(A) -> (R, S)`, `() -> ()`.
    fn functional(&mut self, inputs: &[&Type], op: &Op) {
        self.out.push('(');
        self.types(inputs);
        self.out.push_str(") -> ");
        if let [r] = &op.results[..] {
            if !is_function(&r.ty) {
                type_into(&mut self.out, &r.ty);
                return;
            }
        }
        self.out.push('(');
        let results: Vec<&Type> = op.results.iter().map(|r| &r.ty).collect();
        self.types(&results);
        self.out.push(')');
    }

    /// ` : T` when every operand and result is of type `T`, else ` : (A, B) -> R`.
    fn same_or_functional(&mut self, inputs: &[&Type], op: &Op) {
        self.out.push_str(" : ");
        let mut all = inputs.iter().copied().chain(op.results.iter().map(|r| &r.ty));
        if let Some(first) = all.next() {
            if !is_function(first) && all.all(|t| t == first) {
                type_into(&mut self.out, first);
                return;
            }
        }
        self.functional(inputs, op);
    }

    /// ` {...}` of the attributes not in `used`, if any.
    fn rest(&mut self, op: &Op, used: &[&str], keyword: &str) {
        let rest: Vec<(String, Attr)> =
            op.attributes.iter().filter(|(n, _)| !used.contains(&n.as_str())).cloned().collect();
        if !rest.is_empty() {
            self.out.push(' ');
            self.out.push_str(keyword);
            dict_into(&mut self.out, &rest);
        }
    }

    // ---- ops ------------------------------------------------------------------------------

    /// One op on its own line(s). `in_func`: directly in a function's body (where MLIR prints
    /// `func.call` and `func.return` as `call` and `return`); `last`: the last op of its block.
    fn op(&mut self, op: &'m Op, depth: usize, in_func: bool, last: bool) {
        self.indent(depth);
        if let Some(first) = op.results.first() {
            let _ = match self.name(first.id) {
                Some(Name::ResultOf(n, _)) => write!(self.out, "%{n}:{} = ", op.results.len()),
                _ => {
                    self.value(first.id);
                    write!(self.out, " = ")
                }
            };
        }
        let mark = self.out.len();
        if !self.pretty(op, depth, in_func, last) {
            self.out.truncate(mark);
            self.generic(op, depth);
        }
        self.out.push('\n');
    }

    /// `"name"(operands) ({regions}) {attributes} : (types) -> results`.
    fn generic(&mut self, op: &'m Op, depth: usize) {
        string_into(&mut self.out, op.name.as_bytes());
        self.out.push('(');
        self.values(&op.operands);
        self.out.push(')');
        successors_into(&mut self.out, &op.successors);
        let inputs = op
            .operands
            .iter()
            .map(|&v| self.vals.get(v as usize).copied().flatten().map_or(&NONE, |(_, t)| t))
            .collect::<Vec<&'m Type>>();
        if !op.regions.is_empty() {
            self.out.push_str(" (");
            let isolated = crate::text::is_isolated(&op.name);
            for (i, r) in op.regions.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.scoped(isolated, |p| p.region(r, depth, false, false));
            }
            self.out.push(')');
        }
        if !op.attributes.is_empty() {
            self.out.push(' ');
            dict_into(&mut self.out, &op.attributes);
        }
        self.out.push_str(" : ");
        self.functional(&inputs, op);
    }

    /// `{ ops }`, in the current scope. `entry`: the entry block's arguments are already
    /// declared by the op's form (and no `^bb0` label is printed); `in_func`: a function body.
    fn region(&mut self, r: &'m Region, depth: usize, entry: bool, in_func: bool) {
        for (i, b) in r.blocks.iter().enumerate() {
            if !(i == 0 && entry) {
                self.declare_args(&b.args);
            }
            for op in &b.ops {
                self.declare_results(op);
            }
        }
        self.out.push_str("{\n");
        for (i, b) in r.blocks.iter().enumerate() {
            if i > 0 || (!entry && (!b.args.is_empty() || b.ops.is_empty())) {
                self.indent(depth);
                let _ = write!(self.out, "^bb{i}");
                if !b.args.is_empty() {
                    self.out.push('(');
                    self.arg_decls(&b.args);
                    self.out.push(')');
                }
                self.out.push_str(":\n");
            }
            for (k, op) in b.ops.iter().enumerate() {
                self.op(op, depth + 1, in_func, k + 1 == b.ops.len());
            }
        }
        self.indent(depth);
        self.out.push('}');
    }

    /// The op in its custom form, if it has one that reads back exactly; `false` (having
    /// printed nothing that counts and declared nothing) if not.
    fn pretty(&mut self, op: &'m Op, depth: usize, in_func: bool, last: bool) -> bool {
        if !op.successors.is_empty() {
            return false;
        }
        let names = &op.attributes;
        if names.iter().enumerate().any(|(i, (n, _))| names[..i].iter().any(|(m, _)| m == n)) {
            return false;
        }
        let Some(inputs) = self.operand_types(op) else { return false };
        if inputs.iter().any(|t| is_function(t)) || op.results.iter().any(|r| is_function(&r.ty)) {
            return false;
        }
        let name = op.name.as_str();
        match name {
            "builtin.module" => return self.module_form(op, depth),
            "func.func" => return self.func_form(op, depth),
            _ => {}
        }
        if name == "stablehlo.while" {
            return self.while_form(op, &inputs, depth);
        }
        if name == "stablehlo.reduce" {
            return self.reduce_form(op, &inputs, depth);
        }
        if name == "sdy.manual_computation" {
            return self.manual_computation_form(op, &inputs, depth);
        }
        if !op.regions.is_empty() {
            return false;
        }
        let attr = |n: &str| op.attr(n);
        match name {
            "func.return" | "stablehlo.return" | "sdy.return" => {
                if !op.results.is_empty() || (op.operands.is_empty() && op.attributes.is_empty() && !last) {
                    return false;
                }
                self.out.push_str(if name == "func.return" && in_func { "return" } else { name });
                if !op.operands.is_empty() {
                    self.out.push(' ');
                    self.values(&op.operands);
                }
                self.rest(op, &[], "");
                if !op.operands.is_empty() {
                    self.out.push_str(" : ");
                    self.types(&inputs);
                }
                true
            }
            "func.call" => {
                let Some(Attr::SymbolRef(callee)) = attr("callee") else { return false };
                self.out.push_str(if in_func { "call @" } else { "func.call @" });
                self.out.push_str(&quote_symbol(callee));
                self.out.push('(');
                self.values(&op.operands);
                self.out.push(')');
                self.rest(op, &["callee"], "");
                self.out.push_str(" : ");
                self.functional(&inputs, op);
                true
            }
            "sdy.mesh" => {
                let (Some(body), Some(sym)) = (sdy_body(attr("mesh"), "mesh", b'<'), utf8(attr("sym_name"))) else {
                    return false;
                };
                if !op.operands.is_empty() || !op.results.is_empty() {
                    return false;
                }
                let _ = write!(self.out, "sdy.mesh @{} = {body}", quote_symbol(sym));
                self.rest(op, &["mesh", "sym_name"], "");
                true
            }
            "sdy.sharding_constraint" | "sdy.reshard" => {
                let Some(body) = sdy_body(attr("sharding"), "sharding", b'<') else { return false };
                if op.operands.len() != 1 || op.results.len() != 1 {
                    return false;
                }
                self.out.push_str(name);
                self.out.push(' ');
                self.values(&op.operands);
                self.out.push(' ');
                self.out.push_str(body);
                self.rest(op, &["sharding"], "");
                self.same_or_functional(&inputs, op);
                true
            }
            _ => match name.strip_prefix("stablehlo.") {
                Some(base) => self.stablehlo_form(op, base, &inputs),
                None => false,
            },
        }
    }

    /// The StableHLO ops without regions.
    fn stablehlo_form(&mut self, op: &'m Op, base: &str, inputs: &[&'m Type]) -> bool {
        let attr = |n: &str| op.attr(n);
        let name = op.name.as_str();
        match base {
            "constant" => {
                let Some(value @ Attr::Dense { ty, .. }) = attr("value") else { return false };
                if !op.operands.is_empty() || op.results.len() != 1 || op.results[0].ty != *ty {
                    return false;
                }
                self.out.push_str(name);
                self.rest(op, &["value"], "");
                self.out.push(' ');
                attr_into(&mut self.out, value);
                true
            }
            "compare" => {
                let Some(dir) = enum_of(attr("comparison_direction"), "comparison_direction") else { return false };
                let ty = match attr("compare_type") {
                    None => None,
                    Some(a) => match enum_of(Some(a), "comparison_type") {
                        Some(t) => Some(t),
                        None => return false,
                    },
                };
                if op.operands.len() != 2 || op.results.len() != 1 {
                    return false;
                }
                let _ = write!(self.out, "{name} {}, ", dir.value);
                self.values(&op.operands);
                if let Some(t) = ty {
                    let _ = write!(self.out, ", {}", t.value);
                }
                self.rest(op, &["comparison_direction", "compare_type"], "");
                self.out.push_str(" : ");
                self.functional(inputs, op);
                true
            }
            "slice" => {
                let (Some(start), Some(limit), Some(strides)) =
                    (ints(attr("start_indices")), ints(attr("limit_indices")), ints(attr("strides")))
                else {
                    return false;
                };
                if op.operands.len() != 1
                    || op.results.len() != 1
                    || start.len() != limit.len()
                    || start.len() != strides.len()
                {
                    return false;
                }
                self.out.push_str(name);
                self.out.push(' ');
                self.values(&op.operands);
                self.out.push_str(" [");
                for (i, ((a, b), s)) in start.iter().zip(limit).zip(strides).enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    let _ = write!(self.out, "{a}:{b}");
                    if *s != 1 {
                        let _ = write!(self.out, ":{s}");
                    }
                }
                self.out.push(']');
                self.rest(op, &["start_indices", "limit_indices", "strides"], "");
                self.out.push_str(" : ");
                self.functional(inputs, op);
                true
            }
            "get_tuple_element" => {
                let Some(index) = int_of(attr("index"), ElementType::S32) else { return false };
                if op.operands.len() != 1 || op.results.len() != 1 {
                    return false;
                }
                self.out.push_str(name);
                self.out.push(' ');
                self.values(&op.operands);
                let _ = write!(self.out, "[{index}]");
                self.rest(op, &["index"], "");
                self.out.push_str(" : ");
                self.functional(inputs, op);
                true
            }
            "custom_call" => {
                let Some(target) = utf8(attr("call_target_name")) else { return false };
                let _ = write!(self.out, "{name} @{}(", quote_symbol(target));
                self.values(&op.operands);
                self.out.push(')');
                self.rest(op, &["call_target_name"], "");
                self.out.push_str(" : ");
                self.functional(inputs, op);
                true
            }
            "composite" => {
                let Some(Attr::String(composite)) = attr("name") else { return false };
                self.out.push_str(name);
                self.out.push(' ');
                string_into(&mut self.out, composite);
                if !op.operands.is_empty() {
                    self.out.push(' ');
                    self.values(&op.operands);
                }
                self.rest(op, &["name"], "");
                self.out.push_str(" : ");
                self.functional(inputs, op);
                true
            }
            "select" | "complex" | "tuple" | "optimization_barrier" => {
                let results: Vec<&Type> = op.results.iter().map(|r| &r.ty).collect();
                let ok = match base {
                    "select" => op.operands.len() == 3 && results.len() == 1,
                    "complex" => op.operands.len() == 2 && results.len() == 1,
                    "tuple" => results.len() == 1,
                    _ => !op.operands.is_empty() && results[..] == inputs[..],
                };
                if !ok {
                    return false;
                }
                self.out.push_str(name);
                if !op.operands.is_empty() {
                    self.out.push(' ');
                    self.values(&op.operands);
                }
                self.rest(op, &[], "");
                self.out.push_str(" : ");
                match base {
                    // `P, T`: the predicate's type and the values'.
                    "select" if inputs[1] == inputs[2] && inputs[2] == results[0] => self.types(&inputs[..2]),
                    // The result's type alone (the parser takes the operands' from them).
                    "complex" if inputs[0] == inputs[1] => self.types(&results),
                    "tuple" => self.types(&results),
                    "optimization_barrier" => self.types(inputs),
                    _ => self.functional(inputs, op),
                }
                true
            }
            "reduce_precision" => {
                let (Some(e), Some(m)) =
                    (int_of(attr("exponent_bits"), ElementType::S32), int_of(attr("mantissa_bits"), ElementType::S32))
                else {
                    return false;
                };
                if e < 0 || m < 0 || op.operands.len() != 1 {
                    return false;
                }
                self.out.push_str(name);
                self.out.push(' ');
                self.values(&op.operands);
                let _ = write!(self.out, ", format = e{e}m{m}");
                self.rest(op, &["exponent_bits", "mantissa_bits"], "");
                self.same_or_functional(inputs, op);
                true
            }
            "dot_general" => self.dot_general_form(op, inputs),
            "convolution" => self.convolution_form(op, inputs),
            _ => {
                let Some((same, kws)) = keyword_spec(base) else { return false };
                let mut items = Vec::new();
                for &(a, kw, how) in kws {
                    let Some(v) = attr(a) else { continue };
                    let mut s = format!("{kw} = ");
                    match how {
                        Kw::Ints => match ints(Some(v)) {
                            Some(v) => ints_into(&mut s, v),
                            None => return false,
                        },
                        Kw::I64 => match int_of(Some(v), ElementType::S64) {
                            Some(v) => {
                                let _ = write!(s, "{v}");
                            }
                            None => return false,
                        },
                        Kw::Enum(kind) => match enum_of(Some(v), kind) {
                            Some(e) => s.push_str(e.value),
                            None => return false,
                        },
                    }
                    items.push(s);
                }
                self.out.push_str(name);
                if !op.operands.is_empty() || !items.is_empty() {
                    self.out.push(' ');
                }
                self.values(&op.operands);
                for (i, s) in items.iter().enumerate() {
                    if i > 0 || !op.operands.is_empty() {
                        self.out.push_str(", ");
                    }
                    self.out.push_str(s);
                }
                let used: Vec<&str> = kws.iter().map(|(a, _, _)| *a).collect();
                self.rest(op, &used, "");
                if same {
                    self.same_or_functional(inputs, op);
                } else {
                    self.out.push_str(" : ");
                    self.functional(inputs, op);
                }
                true
            }
        }
    }

    /// `%a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT,
    /// DEFAULT], algorithm = <...> : (A, B) -> R`.
    fn dot_general_form(&mut self, op: &Op, inputs: &[&Type]) -> bool {
        const FIELDS: [&str; 4] = [
            "lhs_batching_dimensions",
            "rhs_batching_dimensions",
            "lhs_contracting_dimensions",
            "rhs_contracting_dimensions",
        ];
        let Some(Attr::Struct { mnemonic: "dot", fields }) = op.attr("dot_dimension_numbers") else { return false };
        if fields.len() != 4 || fields.iter().zip(FIELDS).any(|((n, _), want)| *n != want) {
            return false;
        }
        let Some(dims) = fields.iter().map(|(_, v)| ints(Some(v))).collect::<Option<Vec<_>>>() else { return false };
        let precision = match op.attr("precision_config") {
            None => None,
            Some(Attr::Array(v)) => match v.iter().map(|a| enum_of(Some(a), "precision")).collect::<Option<Vec<_>>>() {
                Some(v) => Some(v),
                None => return false,
            },
            Some(_) => return false,
        };
        let algorithm = match op.attr("algorithm") {
            None => None,
            Some(a) if is_dot_algorithm(a) => {
                let text = crate::print::attr_text(a);
                match text.strip_prefix("#stablehlo.dot_algorithm") {
                    Some(body) => Some(body.to_string()),
                    None => return false,
                }
            }
            Some(_) => return false,
        };
        if op.operands.len() != 2 {
            return false;
        }
        self.out.push_str("stablehlo.dot_general ");
        self.values(&op.operands);
        if !dims[0].is_empty() || !dims[1].is_empty() {
            self.out.push_str(", batching_dims = ");
            ints_into(&mut self.out, dims[0]);
            self.out.push_str(" x ");
            ints_into(&mut self.out, dims[1]);
        }
        self.out.push_str(", contracting_dims = ");
        ints_into(&mut self.out, dims[2]);
        self.out.push_str(" x ");
        ints_into(&mut self.out, dims[3]);
        if let Some(p) = precision {
            self.out.push_str(", precision = [");
            for (i, e) in p.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.out.push_str(e.value);
            }
            self.out.push(']');
        }
        if let Some(body) = algorithm {
            self.out.push_str(", algorithm = ");
            self.out.push_str(&body);
        }
        self.rest(op, &["dot_dimension_numbers", "precision_config", "algorithm"], "");
        self.out.push_str(" : ");
        self.functional(inputs, op);
        true
    }

    /// `(%a, %b) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1],
    /// pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]}
    /// {attrs} : (A, B) -> R`.
    fn convolution_form(&mut self, op: &Op, inputs: &[&Type]) -> bool {
        let numbers = op.attr("dimension_numbers");
        if !is_conv_layout(numbers) || op.operands.len() != 2 {
            return false;
        }
        let mut window = Vec::new();
        let mut used = vec!["dimension_numbers"];
        for (a, kw) in [
            ("window_strides", "stride"),
            ("padding", "pad"),
            ("lhs_dilation", "lhs_dilate"),
            ("rhs_dilation", "rhs_dilate"),
        ] {
            let Some(v) = op.attr(a) else { continue };
            let mut s = format!("{kw} = ");
            if a == "padding" {
                // A splat, or no rows: the form cannot state it; `{padding = ...}` can.
                let Some(rows) = padding_rows(Some(v)) else { continue };
                s.push('[');
                for (i, [lo, hi]) in rows.iter().enumerate() {
                    if i > 0 {
                        s.push_str(", ");
                    }
                    let _ = write!(s, "[{lo}, {hi}]");
                }
                s.push(']');
            } else {
                let Some(v) = ints(Some(v)) else { continue };
                ints_into(&mut s, v);
            }
            window.push(s);
            used.push(a);
        }
        if let Some(Attr::BoolArray(v)) = op.attr("window_reversal") {
            if !v.is_empty() {
                let words: Vec<&str> = v.iter().map(|b| if *b { "true" } else { "false" }).collect();
                window.push(format!("reverse = [{}]", words.join(", ")));
                used.push("window_reversal");
            }
        }
        let text = numbers.map(crate::print::attr_text).unwrap_or_default();
        let Some(layout) = text.strip_prefix("#stablehlo.conv<").and_then(|t| t.strip_suffix('>')) else {
            return false;
        };
        self.out.push_str("stablehlo.convolution(");
        self.values(&op.operands);
        self.out.push_str(") dim_numbers = ");
        self.out.push_str(layout);
        if !window.is_empty() {
            self.out.push_str(", window = {");
            self.out.push_str(&window.join(", "));
            self.out.push('}');
        }
        self.rest(op, &used, "");
        self.out.push_str(" : ");
        self.functional(inputs, op);
        true
    }

    /// `module @name attributes {...} { ops }`.
    fn module_form(&mut self, op: &'m Op, depth: usize) -> bool {
        let [region] = &op.regions[..] else { return false };
        let [block] = &region.blocks[..] else { return false };
        if !block.args.is_empty() || !op.operands.is_empty() || !op.results.is_empty() {
            return false;
        }
        let sym = match op.attr("sym_name") {
            None => None,
            Some(a) => match utf8(Some(a)) {
                Some(s) => Some(s),
                None => return false,
            },
        };
        self.out.push_str("module");
        if let Some(s) = sym {
            self.out.push_str(" @");
            self.out.push_str(&quote_symbol(s));
        }
        self.rest(op, &["sym_name"], "attributes ");
        self.out.push(' ');
        self.scoped(true, |p| p.region(region, depth, true, false));
        true
    }

    /// `func.func public @f(%arg0: T {attrs}, ...) -> (R {attrs}, ...) attributes {...} { body }`.
    fn func_form(&mut self, op: &'m Op, depth: usize) -> bool {
        let [region] = &op.regions[..] else { return false };
        let Some(Attr::Type(Type::Function { inputs, outputs })) = op.attr("function_type") else { return false };
        let Some(name) = utf8(op.attr("sym_name")) else { return false };
        let visibility = match op.attr("sym_visibility") {
            None => None,
            Some(a) => match utf8(Some(a)) {
                Some(v @ ("public" | "private" | "nested")) => Some(v),
                _ => return false,
            },
        };
        // Argument and result attributes: stated with each argument and result when they are
        // one dictionary each, not all empty (the form reads none for empty ones); otherwise
        // left to `attributes {...}`.
        let dicts = |a: Option<&'m Attr>, n: usize| -> Option<Vec<&'m [(String, Attr)]>> {
            let Some(Attr::Array(v)) = a else { return None };
            let d: Vec<&[(String, Attr)]> =
                v.iter().map(|a| if let Attr::Dict(d) = a { Some(&d[..]) } else { None }).collect::<Option<_>>()?;
            (d.len() == n && d.iter().any(|d| !d.is_empty())).then_some(d)
        };
        let (arg_attrs, res_attrs) =
            (dicts(op.attr("arg_attrs"), inputs.len()), dicts(op.attr("res_attrs"), outputs.len()));
        let mut used = vec!["function_type", "sym_name", "sym_visibility"];
        if arg_attrs.is_some() {
            used.push("arg_attrs");
        }
        if res_attrs.is_some() {
            used.push("res_attrs");
        }
        if inputs.iter().chain(outputs).any(is_function) || !op.operands.is_empty() || !op.results.is_empty() {
            return false;
        }
        let body = match &region.blocks[..] {
            [] => None,
            [b] if b.args.len() == inputs.len() && b.args.iter().zip(inputs).all(|(a, t)| a.ty == *t) => Some(b),
            _ => return false,
        };
        self.out.push_str("func.func ");
        if let Some(v) = visibility {
            self.out.push_str(v);
            self.out.push(' ');
        }
        self.out.push('@');
        self.out.push_str(&quote_symbol(name));
        self.scoped(true, |p| {
            p.out.push('(');
            match body {
                Some(b) => p.declare_args(&b.args),
                None => p.next.arg += inputs.len() as u32,
            }
            for (i, t) in inputs.iter().enumerate() {
                if i > 0 {
                    p.out.push_str(", ");
                }
                let _ = write!(p.out, "%arg{i}: ");
                type_into(&mut p.out, t);
                if let Some(d) = arg_attrs.as_ref().map(|d| d[i]).filter(|d| !d.is_empty()) {
                    p.out.push(' ');
                    dict_into(&mut p.out, d);
                }
            }
            p.out.push(')');
            if !outputs.is_empty() {
                p.out.push_str(" -> ");
                let parens = outputs.len() != 1 || res_attrs.is_some();
                if parens {
                    p.out.push('(');
                }
                for (i, t) in outputs.iter().enumerate() {
                    if i > 0 {
                        p.out.push_str(", ");
                    }
                    type_into(&mut p.out, t);
                    if let Some(d) = res_attrs.as_ref().map(|d| d[i]).filter(|d| !d.is_empty()) {
                        p.out.push(' ');
                        dict_into(&mut p.out, d);
                    }
                }
                if parens {
                    p.out.push(')');
                }
            }
            p.rest(op, &used, "attributes ");
            if body.is_some() {
                p.out.push(' ');
                p.region(region, depth, true, true);
            }
        });
        true
    }

    /// `stablehlo.while(%iterArg0 = %a, ...) : A, ... attributes {...}\n cond { ... } do { ... }`.
    fn while_form(&mut self, op: &'m Op, inputs: &[&'m Type], depth: usize) -> bool {
        let [cond, body] = &op.regions[..] else { return false };
        let results: Vec<&Type> = op.results.iter().map(|r| &r.ty).collect();
        if results[..] != inputs[..] {
            return false;
        }
        let fits = |r: &Region| match &r.blocks[..] {
            [b] => b.args.len() == inputs.len() && b.args.iter().zip(inputs).all(|(a, t)| a.ty == **t),
            _ => false,
        };
        if !fits(cond) || !fits(body) {
            return false;
        }
        let first = self.next.iter;
        self.out.push_str("stablehlo.while(");
        for (i, &v) in op.operands.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            let _ = write!(self.out, "%iterArg{} = ", first + i as u32);
            self.value(v);
        }
        self.out.push(')');
        if !inputs.is_empty() {
            self.out.push_str(" : ");
            self.types(inputs);
        }
        self.rest(op, &[], "attributes ");
        for (kw, r) in [("cond", cond), ("do", body)] {
            if kw == "cond" {
                self.out.push('\n');
                self.indent(depth);
            } else {
                self.out.push(' ');
            }
            self.out.push_str(kw);
            self.out.push(' ');
            self.scoped(false, |p| {
                for (i, a) in r.blocks[0].args.iter().enumerate() {
                    p.set(a, Name::Iter(first + i as u32));
                }
                p.next.iter = first + inputs.len() as u32;
                p.region(r, depth, true, false);
            });
        }
        true
    }

    /// `stablehlo.reduce(%x init: %c) applies stablehlo.add across dimensions = [0] : (A, B) -> R`,
    /// or with `reducer(%a: T, %b: T) { body }` after the types.
    fn reduce_form(&mut self, op: &'m Op, inputs: &[&'m Type], depth: usize) -> bool {
        let [region] = &op.regions[..] else { return false };
        let [block] = &region.blocks[..] else { return false };
        let Some(dims) = ints(op.attr("dimensions")) else { return false };
        let n = op.operands.len() / 2;
        if n == 0 || op.operands.len() % 2 != 0 || block.args.len() != 2 * n {
            return false;
        }
        let applies = if n == 1 { applied_op(block, &scalar_of(inputs[1])) } else { None };
        self.out.push_str("stablehlo.reduce");
        for i in 0..n {
            self.out.push_str(if i == 0 { "(" } else { ", (" });
            self.value(op.operands[i]);
            self.out.push_str(" init: ");
            self.value(op.operands[n + i]);
            self.out.push(')');
        }
        if let Some(name) = applies {
            self.out.push_str(" applies ");
            self.out.push_str(name);
        }
        self.out.push_str(" across dimensions = ");
        ints_into(&mut self.out, dims);
        self.rest(op, &["dimensions"], "");
        self.out.push_str(" : ");
        self.functional(inputs, op);
        if applies.is_none() {
            self.out.push('\n');
            self.indent(depth + 1);
            self.out.push_str("reducer");
            self.scoped(false, |p| {
                p.declare_args(&block.args);
                for i in 0..n {
                    p.out.push('(');
                    p.arg_decls(std::slice::from_ref(&block.args[i]));
                    p.out.push_str(", ");
                    p.arg_decls(std::slice::from_ref(&block.args[n + i]));
                    p.out.push_str(") ");
                }
                p.region(region, depth, true, false);
            });
        }
        true
    }

    /// `sdy.manual_computation(%a) in_shardings=[...] out_shardings=[...] manual_axes={...}
    /// (%arg1: T) { ... } {attrs} : (A) -> R`.
    fn manual_computation_form(&mut self, op: &'m Op, inputs: &[&'m Type], depth: usize) -> bool {
        let [region] = &op.regions[..] else { return false };
        let [block] = &region.blocks[..] else { return false };
        let per_value = |n: &str| {
            sdy_body(op.attr(n), "sharding_per_value", b'<')
                .and_then(|b| b.strip_prefix('<')?.strip_suffix('>'))
                .filter(|b| is_one_group(b, b'['))
        };
        let (Some(ins), Some(outs), Some(axes)) = (
            per_value("in_shardings"),
            per_value("out_shardings"),
            sdy_body(op.attr("manual_axes"), "manual_axes", b'{'),
        ) else {
            return false;
        };
        self.out.push_str("sdy.manual_computation(");
        self.values(&op.operands);
        let _ = write!(self.out, ") in_shardings={ins} out_shardings={outs} manual_axes={axes} (");
        self.scoped(false, |p| {
            p.declare_args(&block.args);
            p.arg_decls(&block.args);
            p.out.push_str(") ");
            p.region(region, depth, true, false);
        });
        self.rest(op, &["in_shardings", "out_shardings", "manual_axes"], "");
        self.out.push_str(" : ");
        self.functional(inputs, op);
        true
    }
}

/// The op a reduction body applies, when the body is what `applies OP` stands for:
/// `^bb0(%a: T, %b: T): %r = OP %a, %b : T; stablehlo.return %r` with `T` the init's scalar.
fn applied_op<'m>(block: &'m crate::ir::Block, ty: &Type) -> Option<&'m str> {
    let ([a, b], [apply, ret]) = (&block.args[..], &block.ops[..]) else { return None };
    let [r] = &apply.results[..] else { return None };
    let plain = |op: &Op| op.attributes.is_empty() && op.regions.is_empty() && op.successors.is_empty();
    let ok = a.ty == *ty
        && b.ty == *ty
        && r.ty == *ty
        && plain(apply)
        && apply.operands == [a.id, b.id]
        && apply.name.starts_with("stablehlo.")
        && crate::mlir_text::is_bare(&apply.name)
        && plain(ret)
        && ret.name == "stablehlo.return"
        && ret.operands == [r.id]
        && ret.results.is_empty();
    ok.then_some(apply.name.as_str())
}
