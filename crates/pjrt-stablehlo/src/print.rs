//! MLIR text in the generic op form (`%1 = "stablehlo.add"(%0, %0) : (...) -> ...`), with
//! StableHLO's attribute spellings: what both CPU plugins parse. Locations are left out.

use std::fmt::Write;

use crate::ir::int_width;
use crate::ir::{Attr, Block, Dim, ElementType, Module, Op, Region, TensorType, Type};
use crate::mlir_text::{is_bare, quote_symbol, string_into};

/// The MLIR spelling of a scalar type PJRT has (`f32`, `i1`, `ui8`, `complex<f32>`).
///
/// ```
/// use pjrt_stablehlo::ir::ElementType;
/// assert_eq!(pjrt_stablehlo::mlir_element_name(ElementType::U8), Some("ui8"));
/// assert_eq!(pjrt_stablehlo::mlir_element_name(ElementType::TOKEN), None);
/// ```
pub fn mlir_element_name(e: ElementType) -> Option<&'static str> {
    e.mlir_name()
}

/// Prints a module as MLIR text.
///
/// ```
/// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/formats/tanh_mul.portable-1.0.0.mlirbc");
/// let module = pjrt_stablehlo::read_bytecode(&std::fs::read(path).unwrap()).unwrap();
/// let text = pjrt_stablehlo::print(&module);
/// assert!(text.starts_with("\"builtin.module\""));
/// assert!(text.contains("\"stablehlo.tanh\""));
/// ```
pub fn print(module: &Module) -> String {
    let mut p = Printer { out: String::with_capacity(1 << 16), types: Vec::new(), undo: Vec::new(), next_name: 0 };
    for op in &module.ops {
        p.op(op, 0);
    }
    p.out
}

struct Printer<'m> {
    out: String,
    /// The type and printed name of each value number visible where we are. Printed names
    /// are unique in the whole module: the generic form does not let a nested region shadow
    /// a name, and values in isolated regions are numbered from 0 again in bytecode.
    types: Vec<Option<(&'m Type, u32)>>,
    /// What each definition in a region overwrote in `types`, to put back when the region's
    /// values go out of scope (cheaper than a copy of `types` per op with regions).
    undo: Vec<(u32, Option<(&'m Type, u32)>)>,
    next_name: u32,
}

/// An f64 as an MLIR float literal (digits, a `.`, an exponent).
fn f64_literal(out: &mut String, v: f64) {
    if v.is_finite() {
        let s = format!("{v:e}");
        match s.find('e') {
            Some(i) if !s[..i].contains('.') => {
                out.push_str(&s[..i]);
                out.push_str(".0");
                out.push_str(&s[i..]);
            }
            _ => out.push_str(&s),
        }
    } else {
        let _ = write!(out, "0x{:016X}", v.to_bits());
    }
}

fn dims_into(out: &mut String, dims: &[Dim]) {
    for d in dims {
        match d {
            Dim::Fixed(n) => {
                let _ = write!(out, "{n}x");
            }
            Dim::Dynamic => out.push_str("?x"),
        }
    }
}

pub(crate) fn type_into(out: &mut String, t: &Type) {
    match t {
        Type::Scalar(e) => match mlir_element_name(*e) {
            Some(n) => out.push_str(n),
            None => {
                let _ = write!(out, "!unknown.{}", e.name());
            }
        },
        Type::Index => out.push_str("index"),
        Type::Tf32 => out.push_str("tf32"),
        Type::None => out.push_str("none"),
        Type::Tensor(t) => tensor_into(out, t),
        Type::UnrankedTensor(e) => {
            out.push_str("tensor<*x");
            type_into(out, e);
            out.push('>');
        }
        Type::UnrankedBuffer(e) => {
            out.push_str("memref<*x");
            type_into(out, e);
            out.push('>');
        }
        Type::Buffer { dims, element } => {
            out.push_str("memref<");
            dims_into(out, dims);
            type_into(out, element);
            out.push('>');
        }
        Type::Tuple(ts) => {
            out.push_str("tuple<");
            list_into(out, ts, type_into);
            out.push('>');
        }
        Type::Token => out.push_str("!stablehlo.token"),
        Type::Future(ts) => {
            out.push_str("!stablehlo.future<");
            list_into(out, ts, type_into);
            out.push('>');
        }
        Type::Quantized(q) => {
            out.push_str("!quant.uniform<");
            let signed = q.flags & 1 == 1;
            match int_width(&q.storage) {
                // Unsigned storage in a signless integer: MLIR's `u8`.
                Some((w, true)) if !signed => {
                    let _ = write!(out, "u{w}");
                }
                _ => type_into(out, &q.storage),
            }
            if let Some((w, _)) = int_width(&q.storage) {
                let (lo, hi) = if signed { (-(1i64 << (w - 1)), (1i64 << (w - 1)) - 1) } else { (0, (1i64 << w) - 1) };
                if (q.storage_min, q.storage_max) != (lo, hi) {
                    let _ = write!(out, "<{}:{}>", q.storage_min, q.storage_max);
                }
            }
            out.push(':');
            type_into(out, &q.expressed);
            if let Some(axis) = q.axis {
                let _ = write!(out, ":{axis}, {{");
                for (i, (s, z)) in q.scales.iter().zip(&q.zero_points).enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    f64_literal(out, f64::from_bits(*s));
                    let _ = write!(out, ":{z}");
                }
                out.push_str("}>");
            } else {
                out.push_str(", ");
                f64_literal(out, f64::from_bits(q.scales.first().copied().unwrap_or(0)));
                let _ = write!(out, ":{}>", q.zero_points.first().copied().unwrap_or(0));
            }
        }
        Type::Function { inputs, outputs } => {
            out.push('(');
            list_into(out, inputs, type_into);
            out.push_str(") -> ");
            results_into(out, outputs);
        }
        Type::Opaque(s) => out.push_str(s),
    }
}

fn results_into(out: &mut String, outputs: &[Type]) {
    if outputs.len() == 1 && !matches!(outputs[0], Type::Function { .. }) {
        type_into(out, &outputs[0]);
    } else {
        out.push('(');
        list_into(out, outputs, type_into);
        out.push(')');
    }
}

fn tensor_into(out: &mut String, t: &TensorType) {
    out.push_str("tensor<");
    dims_into(out, &t.dims);
    type_into(out, &t.element);
    if let Some(e) = &t.encoding {
        out.push_str(", ");
        attr_into(out, e);
    }
    out.push('>');
}

fn list_into<T>(out: &mut String, items: &[T], f: impl Fn(&mut String, &T)) {
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        f(out, x);
    }
}

fn ints_into(out: &mut String, v: &[i64]) {
    out.push('[');
    list_into(out, v, |o, x| {
        let _ = write!(o, "{x}");
    });
    out.push(']');
}

fn int_field(a: &Attr) -> Option<i64> {
    match a {
        Attr::Integer { value, .. } => Some(*value),
        _ => None,
    }
}

fn int_list(a: &Attr) -> &[i64] {
    match a {
        Attr::I64Array(v) => v,
        _ => &[],
    }
}

/// `#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>`.
fn conv_into(out: &mut String, fields: &[(&'static str, Attr)]) {
    let f = |n: &str| fields.iter().find(|(k, _)| *k == n).map(|(_, v)| v);
    out.push_str("#stablehlo.conv<");
    for (part, &(a, b, sp, an, bn)) in crate::names::CONV_PARTS.iter().enumerate() {
        out.push_str(["", "x", "->"][part]);
        let (Some(a), Some(b)) = (f(a).and_then(int_field), f(b).and_then(int_field)) else { continue };
        let spatial = f(sp).map(int_list).unwrap_or(&[]);
        let mut names = vec![String::new(); spatial.len() + 2];
        let mut put = |i: i64, s: String| {
            if let Some(slot) = usize::try_from(i).ok().and_then(|i| names.get_mut(i)) {
                *slot = s;
            }
        };
        put(a, an.to_string());
        put(b, bn.to_string());
        for (i, &d) in spatial.iter().enumerate() {
            put(d, i.to_string());
        }
        out.push('[');
        out.push_str(&names.join(", "));
        out.push(']');
    }
    out.push('>');
}

fn struct_into(out: &mut String, mnemonic: &str, fields: &[(&'static str, Attr)]) {
    if mnemonic == "conv" {
        return conv_into(out, fields);
    }
    let _ = write!(out, "#stablehlo.{mnemonic}<");
    let omit_empty = matches!(mnemonic, "dot" | "gather" | "scatter");
    let mut first = true;
    for (name, value) in fields {
        if omit_empty && matches!(value, Attr::I64Array(v) if v.is_empty()) {
            continue;
        }
        if !first {
            out.push_str(", ");
        }
        first = false;
        let _ = write!(out, "{name} = ");
        match value {
            Attr::I64Array(v) => ints_into(out, v),
            Attr::Integer { value, .. } => {
                let _ = write!(out, "{value}");
            }
            Attr::Float { bits, ty } => {
                let v = match ty {
                    Type::Scalar(ElementType::F32) => f64::from(f32::from_bits(*bits as u32)),
                    _ => f64::from_bits(*bits),
                };
                f64_literal(out, v);
            }
            Attr::Type(t) => type_into(out, t),
            // A parameter of attribute type is printed stripped: `(1)2`.
            Attr::Struct { mnemonic: "sub_axis_info", fields } => {
                let get = |n: &str| fields.iter().find(|(k, _)| *k == n).and_then(|(_, v)| int_field(v)).unwrap_or(0);
                let _ = write!(out, "({}){}", get("pre_size"), get("size"));
            }
            Attr::Enum(e) if mnemonic == "result_accuracy" => {
                let _ = write!(out, "#stablehlo.{}<{}>", e.kind, e.value);
            }
            other => attr_into(out, other),
        }
    }
    out.push('>');
}

/// Elements of a dense tensor, nested by shape, for element types printed as literals (`i1`).
fn bool_literal_into(out: &mut String, dims: &[u64], data: &[u8], offset: &mut usize) {
    match dims.split_first() {
        None => {
            out.push_str(if data.get(*offset).copied().unwrap_or(0) != 0 { "true" } else { "false" });
            *offset += 1;
        }
        Some((&n, rest)) => {
            out.push('[');
            for i in 0..n {
                if i > 0 {
                    out.push_str(", ");
                }
                bool_literal_into(out, rest, data, offset);
            }
            out.push(']');
        }
    }
}

fn dense_into(out: &mut String, ty: &Type, data: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.push_str("dense<");
    let (dims, elem): (Vec<u64>, Option<&Type>) = match ty {
        Type::Tensor(t) => {
            (t.dims.iter().map(|d| if let Dim::Fixed(n) = d { *n } else { 0 }).collect(), Some(&*t.element))
        }
        _ => (Vec::new(), None),
    };
    let is_i1 = matches!(elem, Some(Type::Scalar(ElementType::PRED)));
    // `i1` as `true`/`false` (MLIR's hex form of `i1` data has changed meaning across
    // versions); other types as MLIR's hex form of the data, which reads back as a splat
    // exactly when it holds one element.
    match crate::ir::DenseData::new(ty, data) {
        Ok(d) if d.count() == 0 => {}
        Ok(d) if is_i1 && d.is_splat() => out.push_str(if data[0] != 0 { "true" } else { "false" }),
        Ok(_) if is_i1 && dims.len() <= 64 => {
            let mut offset = 0;
            bool_literal_into(out, &dims, data, &mut offset);
        }
        _ => {
            out.push_str("\"0x");
            out.reserve(data.len() * 2 + 2);
            for &b in data {
                out.push(HEX[(b >> 4) as usize] as char);
                out.push(HEX[(b & 15) as usize] as char);
            }
            out.push('"');
        }
    }
    out.push_str("> : ");
    type_into(out, ty);
}

pub(crate) fn attr_into(out: &mut String, a: &Attr) {
    match a {
        Attr::Unit => out.push_str("unit"),
        Attr::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Attr::Integer { value, ty } => {
            match int_width(ty) {
                Some((_, false)) => {
                    let _ = write!(out, "{}", *value as u64);
                }
                _ => {
                    let _ = write!(out, "{value}");
                }
            }
            out.push_str(" : ");
            type_into(out, ty);
        }
        Attr::Float { bits, ty } => {
            let digits = crate::ir::float_width(ty).map_or(16, |w| (w as usize).div_ceil(4));
            let _ = write!(out, "0x{:0digits$X} : ", bits);
            type_into(out, ty);
        }
        Attr::String(s) => string_into(out, s),
        Attr::Array(v) => {
            out.push('[');
            list_into(out, v, attr_into);
            out.push(']');
        }
        Attr::Dict(d) => dict_into(out, d),
        Attr::Type(t) => type_into(out, t),
        Attr::SymbolRef(s) => {
            out.push('@');
            out.push_str(&quote_symbol(s));
        }
        Attr::Dense { ty, data } => dense_into(out, ty, data),
        Attr::I64Array(v) => {
            out.push_str("array<i64");
            if !v.is_empty() {
                out.push_str(": ");
                list_into(out, v, |o, x| {
                    let _ = write!(o, "{x}");
                });
            }
            out.push('>');
        }
        Attr::BoolArray(v) => {
            out.push_str("array<i1");
            if !v.is_empty() {
                out.push_str(": ");
                list_into(out, v, |o, x| o.push_str(if *x { "true" } else { "false" }));
            }
            out.push('>');
        }
        Attr::Enum(e) => {
            let _ = write!(out, "#stablehlo<{} {}>", e.kind, e.value);
        }
        Attr::Bounds(b) => {
            out.push_str("#stablehlo.bounds<");
            list_into(out, b, |o, x| match x {
                Some(v) => {
                    let _ = write!(o, "{v}");
                }
                None => o.push('?'),
            });
            out.push('>');
        }
        Attr::Struct { mnemonic, fields } => struct_into(out, mnemonic, fields),
        Attr::Sdy { mnemonic, body } => {
            if body.starts_with('<') {
                let _ = write!(out, "#sdy.{mnemonic}{body}");
            } else {
                let _ = write!(out, "#sdy<{mnemonic}{body}>");
            }
        }
        Attr::Opaque(s) => out.push_str(s),
    }
}

/// `[^bb1, ^bb2]` of an op's successor blocks; nothing when it has none.
pub(crate) fn successors_into(out: &mut String, successors: &[u32]) {
    if successors.is_empty() {
        return;
    }
    out.push('[');
    for (i, s) in successors.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "^bb{s}");
    }
    out.push(']');
}

pub(crate) fn dict_into(out: &mut String, d: &[(String, Attr)]) {
    out.push('{');
    list_into(out, d, |o, (k, v)| {
        if is_bare(k) {
            o.push_str(k);
        } else {
            string_into(o, k.as_bytes());
        }
        if !matches!(v, Attr::Unit) {
            o.push_str(" = ");
            attr_into(o, v);
        }
    });
    out.push('}');
}

impl<'m> Printer<'m> {
    fn indent(&mut self, depth: usize) {
        for _ in 0..depth {
            self.out.push_str("  ");
        }
    }

    fn value(&mut self, id: u32) {
        match self.types.get(id as usize).copied().flatten() {
            Some((_, name)) => {
                let _ = write!(self.out, "%{name}");
            }
            None => {
                let _ = write!(self.out, "%undefined{id}");
            }
        }
    }

    fn set_type(&mut self, id: u32, t: &'m Type) {
        let i = id as usize;
        if self.types.len() <= i {
            self.types.resize(i + 1, None);
        }
        let old = self.types[i].replace((t, self.next_name));
        self.undo.push((id, old));
        self.next_name += 1;
    }

    fn op(&mut self, op: &'m Op, depth: usize) {
        self.indent(depth);
        if !op.results.is_empty() {
            for (i, r) in op.results.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.value(r.id);
            }
            self.out.push_str(" = ");
        }
        string_into(&mut self.out, op.name.as_bytes());
        self.out.push('(');
        for (i, &v) in op.operands.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.value(v);
        }
        self.out.push(')');
        successors_into(&mut self.out, &op.successors);
        if !op.regions.is_empty() {
            self.out.push_str(" (");
            // Values the regions define go out of scope after them (and an isolated region
            // numbers its own from 0): put the outer numbering back afterwards.
            let mark = self.undo.len();
            for (i, r) in op.regions.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.region(r, depth);
            }
            while self.undo.len() > mark {
                let (id, old) = self.undo.pop().expect("an undo entry");
                self.types[id as usize] = old;
            }
            self.out.push(')');
        }
        if !op.attributes.is_empty() {
            self.out.push(' ');
            dict_into(&mut self.out, &op.attributes);
        }
        self.out.push_str(" : (");
        for (i, &v) in op.operands.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            match self.types.get(v as usize).copied().flatten() {
                Some((t, _)) => type_into(&mut self.out, t),
                None => self.out.push_str("none"),
            }
        }
        self.out.push_str(") -> ");
        if op.results.len() == 1 && !matches!(op.results[0].ty, Type::Function { .. }) {
            type_into(&mut self.out, &op.results[0].ty);
        } else {
            self.out.push('(');
            for (i, r) in op.results.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                type_into(&mut self.out, &r.ty);
            }
            self.out.push(')');
        }
        self.out.push('\n');
    }

    fn region(&mut self, r: &'m Region, depth: usize) {
        // Every value the region's blocks define, before any is used (a block may use a value
        // a later block defines, in a graph region).
        for b in &r.blocks {
            for a in &b.args {
                self.set_type(a.id, &a.ty);
            }
            for op in &b.ops {
                for v in &op.results {
                    self.set_type(v.id, &v.ty);
                }
            }
        }
        self.out.push_str("{\n");
        for (i, b) in r.blocks.iter().enumerate() {
            self.block(b, i, depth + 1);
        }
        self.indent(depth);
        self.out.push('}');
    }

    fn block(&mut self, b: &'m Block, index: usize, depth: usize) {
        if index > 0 || !b.args.is_empty() {
            self.indent(depth.saturating_sub(1));
            let _ = write!(self.out, "^bb{index}");
            if !b.args.is_empty() {
                self.out.push('(');
                for (i, a) in b.args.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    self.value(a.id);
                    self.out.push_str(": ");
                    type_into(&mut self.out, &a.ty);
                }
                self.out.push(')');
            }
            self.out.push_str(":\n");
        }
        for op in &b.ops {
            self.op(op, depth);
        }
    }
}

/// A type's MLIR text (`tensor<2x?xf32>`), as [`crate::print()`] writes it.
///
/// ```
/// use pjrt_stablehlo::ir::{ElementType, Type};
/// use pjrt_stablehlo::type_text;
/// assert_eq!(type_text(&Type::Tuple(vec![Type::Scalar(ElementType::PRED), Type::Index])), "tuple<i1, index>");
/// ```
pub fn type_text(t: &Type) -> String {
    let mut s = String::new();
    type_into(&mut s, t);
    s
}

/// An attribute's MLIR text (`array<i64: 1, 2>`, `#stablehlo<precision HIGH>`), as
/// [`crate::print()`] writes it.
///
/// ```
/// use pjrt_stablehlo::attr_text;
/// use pjrt_stablehlo::ir::Attr;
/// assert_eq!(attr_text(&Attr::String(b"a\"b".to_vec())), "\"a\\22b\"");
/// ```
pub fn attr_text(a: &Attr) -> String {
    let mut s = String::new();
    attr_into(&mut s, a);
    s
}
