//! Attributes (builtin, `#stablehlo`, `#sdy`, other dialects' as text), dense literals and
//! locations.

use std::sync::Arc;

use super::float::float_bits;
use super::{signed, Parser};
use crate::error::Result;
use crate::ir::{int_width, Attr, Dim, ElementType, Location, Type};

/// Shardy attributes the IR names (others are kept as [`Attr::Opaque`] text).
const SDY_MNEMONICS: &[&str] = &[
    "manual_axes",
    "mesh_axis",
    "mesh",
    "axis_ref",
    "axis_ref_list",
    "sub_axis_info",
    "dimension_sharding",
    "sharding",
    "sharding_per_value",
    "dim_mapping",
    "tensor_mapping",
    "op_sharding_rule",
];

/// A dense literal before its type is known (the type comes after it).
enum Lit {
    Bool(bool),
    Int(bool, u128),
    /// `0x...`: an integer, or a float's bits.
    Hex(u128),
    Float(String),
    Complex(Box<Lit>, Box<Lit>),
    List(Vec<Lit>),
}

/// Which struct attribute fields are integers (the rest are `[..]` lists), per mnemonic, in
/// the IR's order.
fn struct_fields(mnemonic: &str) -> Option<(&'static str, &'static [&'static str])> {
    Some(match mnemonic {
        "dot" => (
            "dot",
            &[
                "lhs_batching_dimensions",
                "rhs_batching_dimensions",
                "lhs_contracting_dimensions",
                "rhs_contracting_dimensions",
            ],
        ),
        "gather" => (
            "gather",
            &[
                "offset_dims",
                "collapsed_slice_dims",
                "operand_batching_dims",
                "start_indices_batching_dims",
                "start_index_map",
                "index_vector_dim",
            ],
        ),
        "scatter" => (
            "scatter",
            &[
                "update_window_dims",
                "inserted_window_dims",
                "input_batching_dims",
                "scatter_indices_batching_dims",
                "scatter_dims_to_operand_dims",
                "index_vector_dim",
            ],
        ),
        "channel_handle" => ("channel_handle", &["handle", "type"]),
        "output_operand_alias" => {
            ("output_operand_alias", &["output_tuple_indices", "operand_index", "operand_tuple_indices"])
        }
        "dot_algorithm" => ("dot_algorithm", crate::names::DOT_ALGORITHM_FIELDS),
        "result_accuracy" => ("result_accuracy", &["atol", "rtol", "ulps", "mode"]),
        _ => return None,
    })
}

/// Whether a struct field of `dot`, `gather`, `scatter` or `output_operand_alias` is a list.
fn is_list_field(n: &str) -> bool {
    n.ends_with("_dims") || n.ends_with("_dimensions") || n.ends_with("_indices") || n == "start_index_map"
}

pub(crate) fn i64_attr(v: i64) -> Attr {
    Attr::Integer { value: v, ty: Type::Scalar(ElementType::S64) }
}

impl Parser<'_> {
    /// An attribute value.
    pub(crate) fn attr(&mut self) -> Result<Attr> {
        self.enter()?;
        let a = self.attr_inner();
        self.leave();
        a
    }

    fn attr_inner(&mut self) -> Result<Attr> {
        let start = self.pos;
        match self.peek() {
            Some(b'[') => {
                self.pos += 1;
                let mut v = Vec::new();
                if !self.eat("]") {
                    loop {
                        v.push(self.attr()?);
                        if !self.eat(",") {
                            break;
                        }
                    }
                    self.expect("]")?;
                }
                Ok(Attr::Array(v))
            }
            Some(b'{') => Ok(Attr::Dict(self.dict()?)),
            Some(b'"') => Ok(Attr::String(self.string()?)),
            Some(b'@') => {
                let s = self.expect_symbol()?;
                if self.at("::") {
                    // A nested reference: kept as text.
                    while self.eat("::") {
                        self.expect_symbol()?;
                    }
                    return Ok(Attr::Opaque(self.src[start..self.pos].trim().to_string()));
                }
                Ok(Attr::SymbolRef(s))
            }
            Some(b'#') => self.hash_attr(),
            Some(b'(') | Some(b'!') => Ok(Attr::Type(self.ty()?)),
            Some(c) if c == b'-' || c.is_ascii_digit() => self.number_attr(),
            _ => {
                let save = self.pos;
                let Some(word) = self.bare_id() else {
                    return Err(self.expected("an attribute"));
                };
                match word {
                    "unit" => Ok(Attr::Unit),
                    "true" => Ok(Attr::Bool(true)),
                    "false" => Ok(Attr::Bool(false)),
                    "dense" => self.dense(start),
                    "array" => self.array_attr(start),
                    "inf" | "nan" => {
                        self.pos = save;
                        self.number_attr()
                    }
                    "affine_map" | "affine_set" | "dense_resource" | "sparse" | "opaque" | "strided" | "distinct" => {
                        if word == "dense_resource" {
                            return Err(self.error_at(
                                start,
                                "dense_resource constants are not supported: print the module with its constants inline",
                            ));
                        }
                        if self.at("[") {
                            self.pos += 1;
                            self.expect_u64("a distinct id")?;
                            self.expect("]")?;
                        }
                        self.balanced_angles()?;
                        Ok(Attr::Opaque(self.src[start..self.pos].trim().to_string()))
                    }
                    _ => {
                        self.pos = save;
                        Ok(Attr::Type(self.ty()?))
                    }
                }
            }
        }
    }

    /// `{name = value, flag}` (names bare or quoted).
    pub(crate) fn dict(&mut self) -> Result<Vec<(String, Attr)>> {
        self.expect("{")?;
        let mut v = Vec::new();
        if self.eat("}") {
            return Ok(v);
        }
        loop {
            let name = if self.peek() == Some(b'"') {
                String::from_utf8_lossy(&self.string()?).into_owned()
            } else {
                self.expect_bare_id("an attribute name")?.to_string()
            };
            let value = if self.eat("=") { self.attr()? } else { Attr::Unit };
            v.push((name, value));
            if !self.eat(",") {
                break;
            }
        }
        self.expect("}")?;
        Ok(v)
    }

    /// `5`, `-1 : i32`, `1.5 : f32`, `0x3F800000 : f32`, `true : i1`.
    fn number_attr(&mut self) -> Result<Attr> {
        let start = self.pos;
        if let Some((neg, v)) = self.integer()? {
            let ty = if self.eat(":") { self.ty()? } else { Type::Scalar(ElementType::S64) };
            return self.int_attr(start, neg, v, ty);
        }
        let text = self.float_text().ok_or_else(|| self.expected("a number"))?;
        let ty = if self.eat(":") { self.ty()? } else { Type::Scalar(ElementType::F64) };
        let bits = float_bits(text, &ty).map_err(|e| self.error_at(start, e))?;
        Ok(Attr::Float { bits, ty })
    }

    /// An integer literal of type `ty` (a hex literal of a float type is its bits).
    fn int_attr(&self, at: usize, neg: bool, v: u128, ty: Type) -> Result<Attr> {
        if let Some(w) = crate::ir::float_width(&ty) {
            if neg || (w < 64 && v >> w != 0) || v > u128::from(u64::MAX) {
                return Err(self.error_at(at, format!("a float bit pattern wider than {w} bits")));
            }
            return Ok(Attr::Float { bits: v as u64, ty });
        }
        let bits = self.int_bits(at, neg, v, &ty)?;
        let (w, sign) = int_width(&ty).unwrap_or((64, true));
        if w == 1 {
            return Ok(Attr::Bool(bits & 1 == 1));
        }
        let value = if w >= 64 || !sign {
            bits as i64
        } else {
            let shift = 64 - w;
            ((bits << shift) as i64) >> shift
        };
        Ok(Attr::Integer { value, ty })
    }

    /// The two's complement bits of an integer literal of type `ty`, if it fits.
    fn int_bits(&self, at: usize, neg: bool, v: u128, ty: &Type) -> Result<u64> {
        let Some((w, sign)) = int_width(ty) else {
            return Err(self.error_at(at, "an integer literal of a type that is not an integer"));
        };
        let fits = if neg {
            sign && v <= 1u128 << (w - 1)
        } else {
            // Signless types take their unsigned range too (`255 : i8` is -1).
            v < 1u128 << w
        };
        if !fits {
            return Err(self.error_at(at, format!("{}{v} does not fit {w} bits", if neg { "-" } else { "" })));
        }
        let x = if neg { (v as u64).wrapping_neg() } else { v as u64 };
        Ok(if w >= 64 { x } else { x & ((1u64 << w) - 1) })
    }

    /// After `array`: `<i64: 1, 2>`, `<i1: true>`, `<i64>`.
    fn array_attr(&mut self, start: usize) -> Result<Attr> {
        self.expect("<")?;
        let ty_at = self.pos;
        let ty = self.ty()?;
        let mut items = Vec::new();
        if self.eat(":") {
            loop {
                let at = self.pos;
                items.push((at, self.dense_scalar()?));
                if !self.eat(",") {
                    break;
                }
            }
        }
        self.expect(">")?;
        match ty {
            Type::Scalar(ElementType::S64) => {
                let v = items
                    .into_iter()
                    .map(|(at, l)| match l {
                        Lit::Int(neg, v) => signed(neg, v).ok_or_else(|| self.error_at(at, "does not fit i64")),
                        _ => Err(self.error_at(at, "expected an integer")),
                    })
                    .collect::<Result<_>>()?;
                Ok(Attr::I64Array(v))
            }
            Type::Scalar(ElementType::PRED) => {
                let v = items
                    .into_iter()
                    .map(|(at, l)| match l {
                        Lit::Bool(b) => Ok(b),
                        Lit::Int(false, v) if v <= 1 => Ok(v == 1),
                        _ => Err(self.error_at(at, "expected `true` or `false`")),
                    })
                    .collect::<Result<_>>()?;
                Ok(Attr::BoolArray(v))
            }
            Type::Scalar(_) => Ok(Attr::Opaque(self.src[start..self.pos].trim().to_string())),
            _ => Err(self.error_at(ty_at, "an array attribute of a type that is not a scalar")),
        }
    }

    /// One element of a dense literal.
    fn dense_scalar(&mut self) -> Result<Lit> {
        if self.eat_keyword("true") {
            return Ok(Lit::Bool(true));
        }
        if self.eat_keyword("false") {
            return Ok(Lit::Bool(false));
        }
        let hex = self.at("0x");
        if let Some((neg, v)) = self.integer()? {
            return Ok(if hex { Lit::Hex(v) } else { Lit::Int(neg, v) });
        }
        if let Some(t) = self.float_text() {
            return Ok(Lit::Float(t.to_string()));
        }
        Err(self.expected("a number, `true` or `false`"))
    }

    /// A dense literal: a scalar, `(re, im)`, or `[...]` nested.
    fn dense_lit(&mut self) -> Result<Lit> {
        self.enter()?;
        let r = if self.eat("[") {
            let mut v = Vec::new();
            if !self.eat("]") {
                loop {
                    v.push(self.dense_lit()?);
                    if !self.eat(",") {
                        break;
                    }
                }
                self.expect("]")?;
            }
            Ok(Lit::List(v))
        } else if self.eat("(") {
            let re = self.dense_scalar()?;
            self.expect(",")?;
            let im = self.dense_scalar()?;
            self.expect(")")?;
            Ok(Lit::Complex(Box::new(re), Box::new(im)))
        } else {
            self.dense_scalar()
        };
        self.leave();
        r
    }

    /// After `dense`: `<literal> : type`.
    fn dense(&mut self, start: usize) -> Result<Attr> {
        self.expect("<")?;
        let lit_at = self.pos;
        let (hex, lit) = if self.peek() == Some(b'"') {
            let s = self.string()?;
            (Some(s), None)
        } else if self.string_list_ahead() {
            // `dense<["a", "b"]>`: strings, which only a type of another dialect holds.
            self.string_list()?;
            return self.dense_strings(start, lit_at);
        } else if self.at(">") {
            (None, Some(Lit::List(Vec::new())))
        } else {
            (None, Some(self.dense_lit()?))
        };
        self.expect(">")?;
        self.expect(":")?;
        let ty_at = self.pos;
        let ty = self.ty()?;
        let Type::Tensor(t) = &ty else {
            return Err(self.error_at(ty_at, "a dense attribute whose type is not a ranked tensor"));
        };
        let mut dims = Vec::with_capacity(t.dims.len());
        for d in &t.dims {
            match d {
                Dim::Fixed(n) => dims.push(*n),
                Dim::Dynamic => return Err(self.error_at(ty_at, "a dense attribute of a dynamic shape")),
            }
        }
        let elem = (*t.element).clone();
        if hex.is_some() && crate::ir::dense_element_bytes(&elem).is_none() {
            // A string of a type that is not a number (`tensor<!tf_type.string>`): MLIR's
            // dense string elements, kept as the text (no StableHLO op takes them).
            return Ok(Attr::Opaque(self.src[start..self.pos].trim().to_string()));
        }
        let count = dims.iter().try_fold(1u64, |n, &d| n.checked_mul(d));
        let made = match (hex, lit) {
            (Some(s), _) => {
                let s = String::from_utf8_lossy(&s).into_owned();
                let digits = s.strip_prefix("0x").ok_or_else(|| {
                    self.error_at(lit_at, "a string in dense<...> that is not hex data (`\"0x...\"`)")
                })?;
                if digits.len() % 2 != 0 {
                    return Err(self.error_at(lit_at, "hex data with an odd number of digits"));
                }
                let mut out = Vec::with_capacity(digits.len() / 2);
                for pair in digits.as_bytes().chunks(2) {
                    let h = std::str::from_utf8(pair).ok().and_then(|p| u8::from_str_radix(p, 16).ok());
                    out.push(h.ok_or_else(|| self.error_at(lit_at, "hex data with a digit that is not hex"))?);
                }
                self.hex_dense(lit_at, ty.clone(), &elem, count, out)?
            }
            (None, Some(lit)) => {
                let mut out = Vec::new();
                match &lit {
                    Lit::List(v) if v.is_empty() && dims.contains(&0) => Attr::dense_elements(ty.clone(), out),
                    Lit::List(_) => {
                        self.flatten(lit_at, &lit, &dims, &elem, &mut out)?;
                        Attr::dense_elements(ty.clone(), out)
                    }
                    scalar => {
                        self.element_bytes(lit_at, scalar, &elem, &mut out)?;
                        Attr::dense_splat(ty.clone(), &out)
                    }
                }
            }
            (None, None) => Attr::dense_elements(ty.clone(), Vec::new()),
        };
        made.map_err(|e| self.error_at(start, e.to_string()))
    }

    /// Whether a list of strings starts here (`["a"`, `[["a"`).
    fn string_list_ahead(&mut self) -> bool {
        self.ws();
        let b = self.src.as_bytes();
        let mut i = self.pos;
        let mut opened = false;
        while let Some(&c) = b.get(i) {
            match c {
                b'[' => opened = true,
                b'"' => return opened,
                c if c.is_ascii_whitespace() => {}
                _ => return false,
            }
            i += 1;
        }
        false
    }

    /// `["a", ["b"]]`: nested lists of strings, skipped (their text is kept by the caller).
    fn string_list(&mut self) -> Result<()> {
        self.enter()?;
        self.expect("[")?;
        if !self.eat("]") {
            loop {
                if self.peek() == Some(b'[') {
                    self.string_list()?;
                } else {
                    self.string()?;
                }
                if !self.eat(",") {
                    break;
                }
            }
            self.expect("]")?;
        }
        self.leave();
        Ok(())
    }

    /// After a list of strings in `dense<...>`: `> : type`, where the type's elements are not
    /// numbers (strings of another dialect's type); the attribute kept as its text.
    fn dense_strings(&mut self, start: usize, lit_at: usize) -> Result<Attr> {
        self.expect(">")?;
        self.expect(":")?;
        let ty_at = self.pos;
        let ty = self.ty()?;
        match &ty {
            Type::Tensor(t) if crate::ir::dense_element_bytes(&t.element).is_none() => {
                Ok(Attr::Opaque(self.src[start..self.pos].trim().to_string()))
            }
            Type::Tensor(_) => Err(self.error_at(lit_at, "strings in dense<...> of a tensor of numbers")),
            _ => Err(self.error_at(ty_at, "a dense attribute whose type is not a ranked tensor")),
        }
    }

    /// `dense<"0x...">`: MLIR's raw buffer, one element's bytes (a splat) or every element's.
    /// MLIR (as both CPU plugins have it) stores an `i1` as a byte and reads any byte but 0 as
    /// true; older MLIR packed `i1` hex data 8 to a byte, which is refused rather than guessed
    /// (a byte for 2 to 8 elements would read as a splat here and as bits there).
    fn hex_dense(
        &self,
        at: usize,
        ty: Type,
        elem: &Type,
        count: Option<u64>,
        bytes: Vec<u8>,
    ) -> Result<std::result::Result<Attr, crate::ir::DenseError>> {
        let Some(per) = crate::ir::dense_element_bytes(elem) else {
            return Ok(Attr::dense_elements(ty, bytes));
        };
        let splat = bytes.len() == per;
        if *elem == Type::Scalar(ElementType::PRED) {
            let bools: Vec<u8> = bytes.iter().map(|&b| u8::from(b != 0)).collect();
            if !splat && count != Some(bools.len() as u64) {
                return Err(self.error_at(
                    at,
                    format!(
                        "{} bytes of hex data for {} i1 elements: MLIR reads i1 hex data as a byte per element, \
                         or one byte for all (older MLIR's bits packed 8 to a byte are not read: write the values as \
                         `[true, false, ...]`)",
                        bytes.len(),
                        count.map_or_else(|| "too many".to_string(), |c| c.to_string())
                    ),
                ));
            }
            return Ok(if splat { Attr::dense_splat(ty, &bools) } else { Attr::dense_elements(ty, bools) });
        }
        if splat {
            return Ok(Attr::dense_splat(ty, &bytes));
        }
        Ok(match crate::ir::DenseData::new(&ty, &bytes) {
            Ok(_) => Attr::dense_elements(ty, bytes),
            Err(e) => Err(e),
        })
    }

    /// A nested list literal of shape `dims`, element by element into `out`.
    fn flatten(&self, at: usize, lit: &Lit, dims: &[u64], elem: &Type, out: &mut Vec<u8>) -> Result<()> {
        match (lit, dims.split_first()) {
            (Lit::List(v), Some((&n, rest))) => {
                if v.len() as u64 != n {
                    return Err(
                        self.error_at(at, format!("a dense literal with {} elements where the type has {n}", v.len()))
                    );
                }
                for x in v {
                    self.flatten(at, x, rest, elem, out)?;
                }
                Ok(())
            }
            (Lit::List(_), None) => Err(self.error_at(at, "a dense literal nested deeper than its type's rank")),
            (_, Some(_)) => Err(self.error_at(at, "a dense literal less nested than its type's rank")),
            (scalar, None) => self.element_bytes(at, scalar, elem, out),
        }
    }

    /// One element's little-endian bytes (a byte per `i1` and per sub-byte integer).
    fn element_bytes(&self, at: usize, lit: &Lit, elem: &Type, out: &mut Vec<u8>) -> Result<()> {
        let float = |text: &str, ty: &Type, out: &mut Vec<u8>| -> Result<()> {
            let bits = float_bits(text, ty).map_err(|e| self.error_at(at, e))?;
            let n = crate::ir::dense_element_bytes(ty).unwrap_or(8);
            out.extend_from_slice(&bits.to_le_bytes()[..n]);
            Ok(())
        };
        match (lit, elem) {
            (Lit::Bool(b), Type::Scalar(ElementType::PRED)) => out.push(u8::from(*b)),
            (Lit::Int(neg, v), Type::Scalar(ElementType::PRED)) if !neg && *v <= 1 => out.push(*v as u8),
            (Lit::Complex(re, im), Type::Scalar(c @ (ElementType::C64 | ElementType::C128))) => {
                let part = Type::Scalar(if *c == ElementType::C64 { ElementType::F32 } else { ElementType::F64 });
                for x in [re, im] {
                    self.element_bytes(at, x, &part, out)?;
                }
            }
            (Lit::Int(neg, v), t) if int_width(t).is_some() => {
                let bits = self.int_bits(at, *neg, *v, t)?;
                let n = crate::ir::dense_element_bytes(t).unwrap_or(8);
                out.extend_from_slice(&bits.to_le_bytes()[..n]);
            }
            (Lit::Hex(v), t) if crate::ir::float_width(t).is_some() => {
                let n = crate::ir::dense_element_bytes(t).unwrap_or(8);
                if n < 16 && *v >> (8 * n) != 0 {
                    return Err(self.error_at(at, format!("a bit pattern wider than {}", crate::type_text(t))));
                }
                out.extend_from_slice(&(*v as u64).to_le_bytes()[..n]);
            }
            (Lit::Hex(v), t) if int_width(t).is_some() => {
                let bits = self.int_bits(at, false, *v, t)?;
                let n = crate::ir::dense_element_bytes(t).unwrap_or(8);
                out.extend_from_slice(&bits.to_le_bytes()[..n]);
            }
            (Lit::Int(neg, v), t) if crate::ir::float_width(t).is_some() => {
                // A decimal integer is a value (`dense<1> : tensor<f32>`).
                let s = if *neg { format!("-{v}") } else { v.to_string() };
                float(&s, t, out)?;
            }
            (Lit::Float(s), t) if crate::ir::float_width(t).is_some() => float(s, t, out)?,
            _ => return Err(self.error_at(at, format!("a dense literal that does not fit {}", crate::type_text(elem)))),
        }
        Ok(())
    }

    /// `#stablehlo<...>`, `#stablehlo.X<...>`, `#sdy.X<...>`, `#alias`, another dialect's.
    fn hash_attr(&mut self) -> Result<Attr> {
        let start = self.pos;
        let name = self.sigil_name();
        if name.is_empty() {
            return Err(self.error_at(start, "expected an attribute name after `#`"));
        }
        let b = self.src.as_bytes();
        let has_body = b.get(self.pos) == Some(&b'<');
        let (dialect, mnemonic) = name.split_once('.').unwrap_or((name, ""));
        if !has_body {
            if name.contains('.') {
                return Ok(Attr::Opaque(self.src[start..self.pos].to_string()));
            }
            return self
                .attr_aliases
                .get(name)
                .cloned()
                .ok_or_else(|| self.error_at(start, format!("attribute alias #{name} is not defined")));
        }
        match (dialect, mnemonic) {
            ("stablehlo", "") => {
                let body_at = self.pos;
                self.pos += 1;
                let kind = self.expect_bare_id("an enum name")?;
                let value = self.expect_bare_id("an enum value")?;
                self.expect(">")?;
                match crate::names::enum_value(kind, value) {
                    Some(e) => Ok(Attr::Enum(e)),
                    None => Err(self.error_at(body_at, format!("unknown StableHLO enum value `{kind} {value}`"))),
                }
            }
            ("stablehlo", m) => self.stablehlo_attr(start, m),
            ("sdy", "") => {
                // `#sdy<manual_axes{"x"}>`: the mnemonic, then its body, inside the brackets.
                let whole = self.balanced_angles()?;
                let inner = &whole[1..whole.len() - 1];
                let m_len = inner.bytes().take_while(|&c| super::is_id_char(c)).count();
                let (m, body) = inner.split_at(m_len);
                Ok(match SDY_MNEMONICS.iter().find(|k| **k == m) {
                    Some(k) => Attr::Sdy { mnemonic: k, body: body.to_string() },
                    None => Attr::Opaque(self.src[start..self.pos].to_string()),
                })
            }
            ("sdy", m) => {
                let body = self.balanced_angles()?.to_string();
                Ok(match SDY_MNEMONICS.iter().find(|k| **k == m) {
                    Some(k) => Attr::Sdy { mnemonic: k, body },
                    None => Attr::Opaque(self.src[start..self.pos].to_string()),
                })
            }
            _ => {
                self.balanced_angles()?;
                Ok(Attr::Opaque(self.src[start..self.pos].to_string()))
            }
        }
    }

    /// After `#stablehlo.mnemonic`: `<...>`.
    fn stablehlo_attr(&mut self, start: usize, m: &str) -> Result<Attr> {
        if let Some((kind, _)) = crate::names::ENUMS.iter().find(|(k, _)| *k == m) {
            self.expect("<")?;
            let at = self.pos;
            let value = self.expect_bare_id("an enum value")?;
            self.expect(">")?;
            return crate::names::enum_value(kind, value)
                .map(Attr::Enum)
                .ok_or_else(|| self.error_at(at, format!("unknown {kind} value `{value}`")));
        }
        match m {
            "bounds" => {
                self.expect("<")?;
                let b = self.bounds_list(">")?;
                Ok(Attr::Bounds(b))
            }
            "type_extensions" => {
                self.expect("<")?;
                self.expect_keyword("bounds")?;
                self.expect("=")?;
                self.expect("[")?;
                let b = self.bounds_list("]")?;
                self.expect(">")?;
                Ok(Attr::Bounds(b))
            }
            "conv" => self.conv_attr(),
            _ => match struct_fields(m) {
                Some((mnemonic, names)) => self.struct_attr(mnemonic, names),
                None => {
                    self.balanced_angles()?;
                    Ok(Attr::Opaque(self.src[start..self.pos].to_string()))
                }
            },
        }
    }

    /// `?, 8` up to `close`.
    fn bounds_list(&mut self, close: &str) -> Result<Vec<Option<i64>>> {
        let mut v = Vec::new();
        if self.eat(close) {
            return Ok(v);
        }
        loop {
            if self.eat("?") {
                v.push(None);
            } else {
                v.push(Some(self.expect_i64("a bound")?));
            }
            if !self.eat(",") {
                break;
            }
        }
        self.expect(close)?;
        Ok(v)
    }

    /// `[1, 2]`.
    pub(crate) fn int_list(&mut self) -> Result<Vec<i64>> {
        self.expect("[")?;
        let mut v = Vec::new();
        if self.eat("]") {
            return Ok(v);
        }
        loop {
            v.push(self.expect_i64("an integer")?);
            if !self.eat(",") {
                break;
            }
        }
        self.expect("]")?;
        Ok(v)
    }

    /// A struct attribute's `<...>` without its `#stablehlo.mnemonic` (as op forms print it).
    pub(crate) fn struct_body(&mut self, mnemonic: &str) -> Result<Attr> {
        let (m, names) = struct_fields(mnemonic).ok_or_else(|| self.expected("a known StableHLO attribute"))?;
        self.struct_attr(m, names)
    }

    /// `<name = value, ...>` with the fields put in the IR's order: a missing list is empty,
    /// a missing integer 0 (the gather/scatter batching pairs only when either is given).
    fn struct_attr(&mut self, mnemonic: &'static str, names: &'static [&'static str]) -> Result<Attr> {
        self.expect("<")?;
        let mut given: Vec<(&'static str, Attr)> = Vec::new();
        if !self.eat(">") {
            loop {
                let at = self.pos;
                let field = self.expect_bare_id("a field name")?;
                let Some(&name) = names.iter().find(|n| **n == field) else {
                    return Err(self.error_at(at, format!("#stablehlo.{mnemonic} has no field `{field}`")));
                };
                self.expect("=")?;
                let value = match (mnemonic, name) {
                    (_, n) if is_list_field(n) => Attr::I64Array(self.int_list()?),
                    ("dot_algorithm", "allow_imprecise_accumulation") => self.attr()?,
                    ("dot_algorithm", n) if n.ends_with("_type") => Attr::Type(self.ty()?),
                    ("result_accuracy", "atol" | "rtol") => {
                        let at = self.pos;
                        let t = self.float_text().ok_or_else(|| self.expected("a number"))?;
                        let ty = Type::Scalar(ElementType::F64);
                        Attr::Float { bits: float_bits(t, &ty).map_err(|e| self.error_at(at, e))?, ty }
                    }
                    ("result_accuracy", "mode") => self.attr()?,
                    _ => i64_attr(self.expect_i64("an integer")?),
                };
                given.push((name, value));
                if !self.eat(",") {
                    break;
                }
            }
            self.expect(">")?;
        }
        let batching = |n: &str| n.contains("batching_dims");
        let any_batching = given.iter().any(|(n, _)| batching(n));
        let mut fields = Vec::with_capacity(names.len());
        for &n in names {
            if let Some(i) = given.iter().position(|(g, _)| *g == n) {
                fields.push(given.swap_remove(i));
            } else if batching(n) && !any_batching {
            } else if is_list_field(n) {
                fields.push((n, Attr::I64Array(Vec::new())));
            } else if mnemonic == "result_accuracy" || mnemonic == "dot_algorithm" {
                // These have no defaults in the IR: a field the text left out stays out.
            } else {
                fields.push((n, i64_attr(0)));
            }
        }
        Ok(Attr::Struct { mnemonic, fields })
    }

    /// `<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>` or `<raw field = value, ...>`.
    fn conv_attr(&mut self) -> Result<Attr> {
        self.expect("<")?;
        if self.eat_keyword("raw") {
            let mut fields = Vec::new();
            let names: Vec<&'static str> =
                crate::names::CONV_PARTS.iter().flat_map(|(a, b, c, _, _)| [*a, *b, *c]).collect();
            loop {
                let at = self.pos;
                let field = self.expect_bare_id("a field name")?;
                let Some(&name) = names.iter().find(|n| **n == field) else {
                    return Err(self.error_at(at, format!("#stablehlo.conv has no field `{field}`")));
                };
                self.expect("=")?;
                let v = if name.ends_with("_dimensions") {
                    Attr::I64Array(self.int_list()?)
                } else {
                    i64_attr(self.expect_i64("an integer")?)
                };
                fields.push((name, v));
                if !self.eat(",") {
                    break;
                }
            }
            self.expect(">")?;
            let mut ordered = Vec::new();
            for n in names {
                if let Some(i) = fields.iter().position(|(f, _)| *f == n) {
                    ordered.push(fields.swap_remove(i));
                }
            }
            return Ok(Attr::Struct { mnemonic: "conv", fields: ordered });
        }
        let fields = self.conv_layout()?;
        self.expect(">")?;
        Ok(Attr::Struct { mnemonic: "conv", fields })
    }

    /// The three bracketed layouts of a convolution, as the nine fields.
    pub(crate) fn conv_layout(&mut self) -> Result<Vec<(&'static str, Attr)>> {
        let mut fields = Vec::new();
        for (i, (a, bname, spatial, la, lb)) in crate::names::CONV_PARTS.iter().enumerate() {
            if i == 1 {
                self.expect("x")?;
            } else if i == 2 {
                self.expect("->")?;
            }
            self.expect("[")?;
            let mut dims: Vec<(usize, i64)> = Vec::new();
            let (mut ia, mut ib) = (None, None);
            let mut k = 0i64;
            loop {
                let at = self.pos;
                if let Some((false, v)) = self.integer()? {
                    dims.push((v as usize, k));
                } else {
                    let c = self.expect_bare_id("a layout letter or a spatial dimension")?;
                    match c {
                        c if c.len() == 1 && c.starts_with(*la) => ia = Some(k),
                        c if c.len() == 1 && c.starts_with(*lb) => ib = Some(k),
                        _ => {
                            return Err(self.error_at(
                                at,
                                format!("`{c}` in a convolution layout (expected `{la}`, `{lb}` or a number)"),
                            ))
                        }
                    }
                }
                k += 1;
                if !self.eat(",") {
                    break;
                }
            }
            self.expect("]")?;
            let (Some(ia), Some(ib)) = (ia, ib) else {
                return Err(self.expected(&format!("a layout naming `{la}` and `{lb}`")));
            };
            dims.sort();
            fields.push((*a, i64_attr(ia)));
            fields.push((*bname, i64_attr(ib)));
            fields.push((*spatial, Attr::I64Array(dims.into_iter().map(|(_, pos)| pos).collect())));
        }
        Ok(fields)
    }

    // ---- locations ------------------------------------------------------------------------

    /// `loc(...)`.
    pub(crate) fn location(&mut self) -> Result<Arc<Location>> {
        self.expect_keyword("loc")?;
        self.expect("(")?;
        let l = self.loc_body()?;
        self.expect(")")?;
        Ok(l)
    }

    /// An optional trailing `loc(...)`.
    pub(crate) fn opt_location(&mut self) -> Result<Option<Arc<Location>>> {
        if self.at("loc(") || (self.at("loc") && { self.src[self.pos + 3..].trim_start().starts_with('(') }) {
            Ok(Some(self.location()?))
        } else {
            Ok(None)
        }
    }

    fn loc_body(&mut self) -> Result<Arc<Location>> {
        self.enter()?;
        let r = self.loc_body_inner();
        self.leave();
        r
    }

    fn loc_body_inner(&mut self) -> Result<Arc<Location>> {
        match self.peek() {
            Some(b'#') => {
                let name = self.sigil_name();
                Ok(Arc::new(Location::Opaque(format!("#{name}"))))
            }
            Some(b'"') => {
                let s = String::from_utf8_lossy(&self.string()?).into_owned();
                if self.eat(":") {
                    let line = self.expect_u64("a line number")?;
                    self.expect(":")?;
                    let column = self.expect_u64("a column number")?;
                    if self.eat_keyword("to") {
                        // A range: `to 3:4`, or `to :42` on the same line.
                        let end_line = if self.eat(":") {
                            line
                        } else {
                            let l = self.expect_u64("a line number")?;
                            self.expect(":")?;
                            l
                        };
                        let end_column = self.expect_u64("a column number")?;
                        if (end_line, end_column) != (line, column) {
                            return Ok(Arc::new(Location::FileLineColRange {
                                file: s,
                                start_line: line,
                                start_column: column,
                                end_line,
                                end_column,
                            }));
                        }
                    }
                    return Ok(Arc::new(Location::FileLineCol { file: s, line, column }));
                }
                let child = if self.eat("(") {
                    let c = self.loc_body()?;
                    self.expect(")")?;
                    c
                } else {
                    Arc::new(Location::Unknown)
                };
                Ok(Arc::new(Location::Name { name: s, child }))
            }
            _ => {
                let at = self.pos;
                match self.bare_id() {
                    Some("unknown") => Ok(Arc::new(Location::Unknown)),
                    Some("callsite") => {
                        self.expect("(")?;
                        let callee = self.loc_body()?;
                        self.expect_keyword("at")?;
                        let caller = self.loc_body()?;
                        self.expect(")")?;
                        Ok(Arc::new(Location::CallSite { callee, caller }))
                    }
                    Some("fused") => {
                        let metadata = if self.at("<") {
                            self.pos += 1;
                            let m = self.attr()?;
                            self.expect(">")?;
                            Some(Box::new(m))
                        } else {
                            None
                        };
                        self.expect("[")?;
                        let mut locations = Vec::new();
                        if !self.eat("]") {
                            loop {
                                locations.push(self.loc_body()?);
                                if !self.eat(",") {
                                    break;
                                }
                            }
                            self.expect("]")?;
                        }
                        Ok(Arc::new(Location::Fused { locations, metadata }))
                    }
                    _ => {
                        self.pos = at;
                        Err(self.expected("a location (`unknown`, `\"file\":line:col`, `\"name\"(...)`, `callsite(...)`, `fused[...]` or `#alias`)"))
                    }
                }
            }
        }
    }
}
