//! Attributes and types: the builtin dialect's encodings (MLIR's BuiltinDialectBytecode) and
//! VHLO's (StableHLO's VhloBytecode), decoded on first use and kept, mapped straight to the
//! StableHLO-level [`Attr`] and [`Type`] (VHLO's versioned names are gone after this).

use std::sync::Arc;

use crate::bytecode::{Container, Cursor, Entry, Limits};
use crate::error::{Error, Result};
use crate::ir::{
    float_width, int_width, Attr, DenseData, DenseError, Dim, ElementType, EnumAttr, Location, QuantizedType,
    TensorType, Type,
};

/// A decoded attribute entry: an attribute or a location (both live in MLIR's attribute table).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Val {
    Attr(Attr),
    Loc(Arc<Location>),
}

/// Decodes and caches the attribute and type tables.
pub(crate) struct Decoder<'a> {
    pub c: Container<'a>,
    /// Decoded entries and their weight: the nodes a copy of each allocates.
    attrs: Vec<Option<(Val, u64)>>,
    types: Vec<Option<(Type, u64)>>,
    /// Nodes copied out of the tables so far, against `max_nodes`: entries may share
    /// entries, so a small file can describe an exponentially large tree.
    nodes: u64,
    max_nodes: u64,
    depth: usize,
    max_depth: usize,
    builtin: Option<usize>,
    vhlo: Option<usize>,
    sdy: Option<usize>,
}

const ATTR_DIALECT_ERR: &str = "an attribute of a dialect without a known bytecode encoding";

impl<'a> Decoder<'a> {
    pub(crate) fn new(c: Container<'a>, limits: &Limits) -> Decoder<'a> {
        let builtin = c.dialects.iter().position(|d| *d == "builtin");
        let vhlo = c.dialects.iter().position(|d| *d == "vhlo");
        let sdy = c.dialects.iter().position(|d| *d == "sdy");
        Decoder {
            attrs: vec![None; c.attrs.len()],
            types: vec![None; c.types.len()],
            c,
            depth: 0,
            max_depth: limits.max_attr_depth,
            nodes: 0,
            max_nodes: limits.max_attr_nodes as u64,
            builtin,
            vhlo,
            sdy,
        }
    }

    fn enter(&mut self, at: usize) -> Result<()> {
        self.depth += 1;
        if self.depth > self.max_depth {
            return Err(Error::limit(
                at,
                format!("attributes/types nested deeper than max_attr_depth {}", self.max_depth),
            ));
        }
        Ok(())
    }

    /// The attribute-table entry at index `i`.
    fn charge(&mut self, at: usize, weight: u64) -> Result<()> {
        self.nodes = self.nodes.saturating_add(weight);
        if self.nodes > self.max_nodes {
            return Err(Error::limit(
                at,
                format!("attributes and types expand to more than max_attr_nodes {} nodes", self.max_nodes),
            ));
        }
        Ok(())
    }

    pub(crate) fn val(&mut self, at: usize, i: u64) -> Result<Val> {
        let idx = i as usize;
        match self.attrs.get(idx) {
            None => return Err(Error::malformed(at, format!("attribute index {i} out of range"))),
            Some(Some((v, w))) => {
                let (v, w) = (v.clone(), *w);
                self.charge(at, w)?;
                return Ok(v);
            }
            Some(None) => {}
        }
        let entry = self.c.attrs[idx];
        self.enter(entry.data.offset())?;
        let before = self.nodes;
        let r = self.decode_attr(entry);
        self.depth -= 1;
        let v = r?;
        // The value's weight: its own node and the copies of its parts (charged as they
        // were read). A location is shared (Arc), not copied.
        let w = if matches!(v, Val::Loc(_)) { 1 } else { self.nodes - before + 1 };
        self.attrs[idx] = Some((v.clone(), w));
        self.charge(at, 1)?;
        Ok(v)
    }

    pub(crate) fn ty(&mut self, at: usize, i: u64) -> Result<Type> {
        let idx = i as usize;
        match self.types.get(idx) {
            None => return Err(Error::malformed(at, format!("type index {i} out of range"))),
            Some(Some((t, w))) => {
                let (t, w) = (t.clone(), *w);
                self.charge(at, w)?;
                return Ok(t);
            }
            Some(None) => {}
        }
        let entry = self.c.types[idx];
        self.enter(entry.data.offset())?;
        let before = self.nodes;
        let r = self.decode_type(entry);
        self.depth -= 1;
        let t = r?;
        let w = self.nodes - before + 1;
        self.types[idx] = Some((t.clone(), w));
        self.charge(at, 1)?;
        Ok(t)
    }

    pub(crate) fn attr_ref(&mut self, c: &mut Cursor<'a>) -> Result<Attr> {
        let at = c.offset();
        let i = c.varint()?;
        match self.val(at, i)? {
            Val::Attr(a) => Ok(a),
            Val::Loc(_) => Err(Error::malformed(at, "a location where an attribute belongs")),
        }
    }

    pub(crate) fn loc_ref(&mut self, c: &mut Cursor<'a>) -> Result<Arc<Location>> {
        let at = c.offset();
        let i = c.varint()?;
        match self.val(at, i)? {
            Val::Loc(l) => Ok(l),
            Val::Attr(Attr::Opaque(text)) => Ok(Arc::new(Location::Opaque(text))),
            Val::Attr(_) => Err(Error::malformed(at, "an attribute where a location belongs")),
        }
    }

    pub(crate) fn type_ref(&mut self, c: &mut Cursor<'a>) -> Result<Type> {
        let at = c.offset();
        let i = c.varint()?;
        self.ty(at, i)
    }

    fn string_attr_ref(&mut self, c: &mut Cursor<'a>) -> Result<Vec<u8>> {
        let at = c.offset();
        match self.attr_ref(c)? {
            Attr::String(s) => Ok(s),
            _ => Err(Error::malformed(at, "expected a string attribute")),
        }
    }

    fn attr_list(&mut self, c: &mut Cursor<'a>) -> Result<Vec<Attr>> {
        let n = c.count(1)?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(self.attr_ref(c)?);
        }
        Ok(v)
    }

    fn type_list(&mut self, c: &mut Cursor<'a>) -> Result<Vec<Type>> {
        let n = c.count(1)?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(self.type_ref(c)?);
        }
        Ok(v)
    }

    fn svarints(c: &mut Cursor<'a>) -> Result<Vec<i64>> {
        let n = c.count(1)?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(c.svarint()?);
        }
        Ok(v)
    }

    fn dims(c: &mut Cursor<'a>) -> Result<Vec<Dim>> {
        let at = c.offset();
        let raw = Self::svarints(c)?;
        raw.into_iter()
            .map(|d| match d {
                i64::MIN => Ok(Dim::Dynamic),
                d if d >= 0 => Ok(Dim::Fixed(d as u64)),
                d => Err(Error::malformed(at, format!("dimension {d}"))),
            })
            .collect()
    }

    fn decode_attr(&mut self, e: Entry<'a>) -> Result<Val> {
        let mut c = e.data;
        let v = if !e.custom {
            let at = c.offset();
            let text = c.cstr()?;
            Val::Attr(Attr::Opaque(
                std::str::from_utf8(text).map_err(|_| Error::malformed(at, "attribute text is not UTF-8"))?.to_string(),
            ))
        } else if Some(e.dialect) == self.vhlo {
            Val::Attr(self.vhlo_attr(&mut c)?)
        } else if Some(e.dialect) == self.builtin {
            self.builtin_attr(&mut c)?
        } else if Some(e.dialect) == self.sdy {
            Val::Attr(self.sdy_attr(&mut c)?)
        } else {
            return Err(Error::unsupported(
                c.offset(),
                format!("{ATTR_DIALECT_ERR} ({})", self.c.dialects.get(e.dialect).copied().unwrap_or("?")),
            ));
        };
        if !c.is_empty() {
            return Err(c.err("trailing bytes after an attribute"));
        }
        Ok(v)
    }

    fn decode_type(&mut self, e: Entry<'a>) -> Result<Type> {
        let mut c = e.data;
        let t = if !e.custom {
            let at = c.offset();
            let text = c.cstr()?;
            Type::Opaque(
                std::str::from_utf8(text).map_err(|_| Error::malformed(at, "type text is not UTF-8"))?.to_string(),
            )
        } else if Some(e.dialect) == self.vhlo {
            self.vhlo_type(&mut c)?
        } else if Some(e.dialect) == self.builtin {
            self.builtin_type(&mut c)?
        } else {
            return Err(Error::unsupported(
                c.offset(),
                format!("a type of dialect {} without a known bytecode encoding", self.c.dialects[e.dialect]),
            ));
        };
        if !c.is_empty() {
            return Err(c.err("trailing bytes after a type"));
        }
        Ok(t)
    }

    /// An APInt of `width` bits: one byte up to 8 bits, a signed varint up to 64; wider
    /// values (not in StableHLO) are refused.
    fn apint(c: &mut Cursor<'a>, width: u32) -> Result<u64> {
        if width <= 8 {
            Ok(u64::from(c.byte()?))
        } else if width <= 64 {
            Ok(c.svarint()? as u64)
        } else {
            Err(Error::unsupported(c.offset(), format!("a {width}-bit integer")))
        }
    }

    fn int_value(c: &mut Cursor<'a>, ty: &Type) -> Result<Attr> {
        let at = c.offset();
        let (width, signed) =
            int_width(ty).ok_or_else(|| Error::malformed(at, "an integer attribute of a non-integer type"))?;
        let raw = Self::apint(c, width)?;
        if width == 1 {
            return Ok(Attr::Bool(raw & 1 == 1));
        }
        Ok(Attr::Integer { value: crate::ir::int_of_width(raw, width, signed), ty: ty.clone() })
    }

    fn float_value(c: &mut Cursor<'a>, ty: &Type) -> Result<Attr> {
        let at = c.offset();
        let width = float_width(ty).ok_or_else(|| Error::malformed(at, "a float attribute of a non-float type"))?;
        let raw = Self::apint(c, width)?;
        let bits = if width >= 64 { raw } else { raw & ((1u64 << width) - 1) };
        Ok(Attr::Float { bits, ty: ty.clone() })
    }

    fn blob(c: &mut Cursor<'a>) -> Result<&'a [u8]> {
        let n = c.varint()?;
        c.bytes(n)
    }

    fn builtin_attr(&mut self, c: &mut Cursor<'a>) -> Result<Val> {
        let at = c.offset();
        let code = c.varint()?;
        Ok(match code {
            0 => Val::Attr(Attr::Array(self.attr_list(c)?)),
            1 => {
                let n = c.count(2)?;
                let mut v = Vec::with_capacity(n);
                for _ in 0..n {
                    let name = self.string_attr_ref(c)?;
                    let value = self.attr_ref(c)?;
                    v.push((String::from_utf8_lossy(&name).into_owned(), value));
                }
                Val::Attr(Attr::Dict(v))
            }
            2 => Val::Attr(Attr::String(self.c.string(c)?.to_vec())),
            3 => {
                let s = self.c.string(c)?.to_vec();
                let _ty = self.type_ref(c)?;
                Val::Attr(Attr::String(s))
            }
            4 => Val::Attr(Attr::SymbolRef(String::from_utf8_lossy(&self.string_attr_ref(c)?).into_owned())),
            5 => {
                let root = String::from_utf8_lossy(&self.string_attr_ref(c)?).into_owned();
                let nested = self.attr_list(c)?;
                let mut text = format!("@{}", crate::mlir_text::quote_symbol(&root));
                for n in nested {
                    match n {
                        Attr::SymbolRef(s) => text.push_str(&format!("::@{}", crate::mlir_text::quote_symbol(&s))),
                        _ => return Err(Error::malformed(at, "a nested symbol reference that is not flat")),
                    }
                }
                Val::Attr(Attr::Opaque(text))
            }
            6 => Val::Attr(Attr::Type(self.type_ref(c)?)),
            7 => Val::Attr(Attr::Unit),
            8 => {
                let ty = self.type_ref(c)?;
                Val::Attr(Self::int_value(c, &ty)?)
            }
            9 => {
                let ty = self.type_ref(c)?;
                Val::Attr(Self::float_value(c, &ty)?)
            }
            10 => {
                let callee = self.loc_ref(c)?;
                let caller = self.loc_ref(c)?;
                Val::Loc(Arc::new(Location::CallSite { callee, caller }))
            }
            11 => {
                let file = String::from_utf8_lossy(&self.string_attr_ref(c)?).into_owned();
                let line = c.varint()?;
                let column = c.varint()?;
                Val::Loc(Arc::new(Location::FileLineCol { file, line, column }))
            }
            12 | 13 => {
                let n = c.count(1)?;
                let mut locations = Vec::with_capacity(n);
                for _ in 0..n {
                    locations.push(self.loc_ref(c)?);
                }
                let metadata = if code == 13 { Some(Box::new(self.attr_ref(c)?)) } else { None };
                Val::Loc(Arc::new(Location::Fused { locations, metadata }))
            }
            14 => {
                let name = String::from_utf8_lossy(&self.string_attr_ref(c)?).into_owned();
                let child = self.loc_ref(c)?;
                Val::Loc(Arc::new(Location::Name { name, child }))
            }
            15 => Val::Loc(Arc::new(Location::Unknown)),
            17 => {
                let elem = self.type_ref(c)?;
                let n = c.varint()?;
                let data = Self::blob(c)?;
                match elem {
                    Type::Scalar(ElementType::S64) if data.len() as u64 == n.saturating_mul(8) => {
                        Val::Attr(Attr::I64Array(
                            data.chunks_exact(8).map(|b| i64::from_le_bytes(b.try_into().unwrap_or([0; 8]))).collect(),
                        ))
                    }
                    Type::Scalar(ElementType::PRED) if data.len() as u64 == n => {
                        Val::Attr(Attr::BoolArray(data.iter().map(|&b| b != 0).collect()))
                    }
                    _ => return Err(Error::unsupported(at, "a dense array that is not of i64 or i1")),
                }
            }
            18 => {
                let ty = self.type_ref(c)?;
                let data = Self::blob(c)?;
                Val::Attr(dense(at, ty, data)?)
            }
            22 => {
                // FileLineColRange: the file, then 1 to 4 numbers (line; column; end column or
                // end line and end column).
                let file = String::from_utf8_lossy(&self.string_attr_ref(c)?).into_owned();
                let n = c.count(1)?;
                if n > 4 {
                    return Err(Error::malformed(at, format!("a file range location of {n} numbers")));
                }
                let mut v = [0u64; 4];
                for x in v.iter_mut().take(n) {
                    *x = c.varint()?;
                }
                // MLIR's forms: none; a line; a line and column (FileLineCol's); a line,
                // column and end column; a line, column, end line and end column.
                let (start_line, start_column, end_line, end_column) = match n {
                    2 => return Ok(Val::Loc(Arc::new(Location::FileLineCol { file, line: v[0], column: v[1] }))),
                    4 => (v[0], v[1], v[2], v[3]),
                    _ => (v[0], v[1], v[0], v[2]),
                };
                Val::Loc(Arc::new(Location::FileLineColRange { file, start_line, start_column, end_line, end_column }))
            }
            _ => return Err(Error::unsupported(at, format!("builtin attribute code {code}"))),
        })
    }

    fn builtin_type(&mut self, c: &mut Cursor<'a>) -> Result<Type> {
        let at = c.offset();
        let code = c.varint()?;
        Ok(match code {
            0 => {
                let v = c.varint()?;
                let (width, signedness) = (v >> 2, v & 3);
                int_type(width, signedness == 2)
                    .ok_or_else(|| Error::unsupported(at, format!("integer type of {width} bits")))?
            }
            1 => Type::Index,
            2 => {
                let inputs = self.type_list(c)?;
                let outputs = self.type_list(c)?;
                Type::Function { inputs, outputs }
            }
            3 => Type::Scalar(ElementType::BF16),
            4 => Type::Scalar(ElementType::F16),
            5 => Type::Scalar(ElementType::F32),
            6 => Type::Scalar(ElementType::F64),
            9 => {
                let e = self.type_ref(c)?;
                complex(at, e)?
            }
            12 => Type::None,
            13 | 14 => {
                let encoding = if code == 14 { Some(Box::new(self.attr_ref(c)?)) } else { None };
                let dims = Self::dims(c)?;
                let element = Box::new(self.type_ref(c)?);
                Type::Tensor(TensorType { dims, element, encoding })
            }
            15 => Type::Tuple(self.type_list(c)?),
            18 => Type::UnrankedTensor(Box::new(self.type_ref(c)?)),
            _ => return Err(Error::unsupported(at, format!("builtin type code {code}"))),
        })
    }

    fn vhlo_enum(c: &mut Cursor<'a>, kind: &'static str, names: &[&'static str], first: u64) -> Result<Attr> {
        let at = c.offset();
        let v = c.varint()?;
        let value = v
            .checked_sub(first)
            .and_then(|i| names.get(i as usize))
            .ok_or_else(|| Error::malformed(at, format!("{kind} value {v}")))?;
        Ok(Attr::Enum(EnumAttr { kind, value }))
    }

    fn vhlo_attr(&mut self, c: &mut Cursor<'a>) -> Result<Attr> {
        let at = c.offset();
        let code = c.varint()?;
        if let Some(e) = crate::vhlo::enum_by_code(code) {
            return Self::vhlo_enum(c, e.kind, e.values, e.first);
        }
        Ok(match code {
            1 => Attr::Array(self.attr_list(c)?),
            2 => match c.varint()? {
                0 => Attr::Bool(false),
                1 => Attr::Bool(true),
                v => return Err(Error::malformed(at, format!("boolean value {v}"))),
            },
            5 => {
                // StableHLO spells custom_call's api_version as an i32.
                let v = c.varint()?;
                if v > 4 {
                    return Err(Error::malformed(at, format!("custom call api_version {v}")));
                }
                Attr::Integer { value: v as i64, ty: Type::Scalar(ElementType::S32) }
            }
            6 => {
                let n = c.count(2)?;
                let mut v = Vec::with_capacity(n);
                for _ in 0..n {
                    let kat = c.offset();
                    let name = match self.attr_ref(c)? {
                        Attr::String(s) => String::from_utf8_lossy(&s).into_owned(),
                        _ => return Err(Error::malformed(kat, "a dictionary key that is not a string")),
                    };
                    v.push((name, self.attr_ref(c)?));
                }
                Attr::Dict(v)
            }
            8 => {
                let ty = self.type_ref(c)?;
                Self::float_value(c, &ty)?
            }
            9 => {
                let ty = self.type_ref(c)?;
                Self::int_value(c, &ty)?
            }
            10 => {
                let output = Self::svarints(c)?;
                let operand = c.svarint()?;
                let operand_tuple = Self::svarints(c)?;
                Attr::Struct {
                    mnemonic: "output_operand_alias",
                    fields: vec![
                        ("output_tuple_indices", Attr::I64Array(output)),
                        ("operand_index", Attr::Integer { value: operand, ty: Type::Scalar(ElementType::S64) }),
                        ("operand_tuple_indices", Attr::I64Array(operand_tuple)),
                    ],
                }
            }
            14 => Attr::String(self.c.string(c)?.to_vec()),
            15 => {
                let ty = self.type_ref(c)?;
                let data = Self::blob(c)?;
                dense(at, ty, data)?
            }
            17 => Attr::Type(self.type_ref(c)?),
            18 => {
                let b = Self::svarints(c)?;
                Attr::Bounds(b.into_iter().map(|x| if x == i64::MIN { None } else { Some(x) }).collect())
            }
            20 => {
                let f64t = Type::Scalar(ElementType::F64);
                let atol = Self::float_value(c, &f64t)?;
                let rtol = Self::float_value(c, &f64t)?;
                let ulps = c.svarint()?;
                let mode = self.attr_ref(c)?;
                Attr::Struct {
                    mnemonic: "result_accuracy",
                    fields: vec![
                        ("atol", atol),
                        ("rtol", rtol),
                        ("ulps", Attr::Integer { value: ulps, ty: Type::Scalar(ElementType::S64) }),
                        ("mode", mode),
                    ],
                }
            }
            21 => {
                let pre = c.svarint()?;
                let size = c.svarint()?;
                Attr::Struct {
                    mnemonic: "sub_axis_info",
                    fields: vec![
                        ("pre_size", Attr::Integer { value: pre, ty: Type::Scalar(ElementType::S64) }),
                        ("size", Attr::Integer { value: size, ty: Type::Scalar(ElementType::S64) }),
                    ],
                }
            }
            22 => {
                let name = self.attr_ref(c)?;
                // The optional sub-axis info: a varint saying whether it is there (not MLIR's
                // optional-attribute flag in the reference's low bit, as the mesh's device ids
                // are written), then the reference.
                let mut fields = vec![("name", name)];
                match c.varint()? {
                    0 => {}
                    1 => fields.push(("sub_axis_info", self.attr_ref(c)?)),
                    n => return Err(Error::malformed(at, format!("an axis reference's sub-axis flag is {n}"))),
                }
                Attr::Struct { mnemonic: "axis_ref", fields }
            }
            23 => {
                // A mesh given by name is a symbol reference in StableHLO.
                let mesh = match self.attr_ref(c)? {
                    Attr::String(s) => Attr::SymbolRef(String::from_utf8_lossy(&s).into_owned()),
                    other => other,
                };
                let axes = self.attr_ref(c)?;
                Attr::Struct { mnemonic: "replica_group_mesh_axes", fields: vec![("mesh", mesh), ("axes", axes)] }
            }
            24 => {
                let name = self.attr_ref(c)?;
                let size = c.svarint()?;
                Attr::Struct {
                    mnemonic: "mesh_axis",
                    fields: vec![
                        ("name", name),
                        ("size", Attr::Integer { value: size, ty: Type::Scalar(ElementType::S64) }),
                    ],
                }
            }
            25 => {
                let axes = self.attr_ref(c)?;
                let (i, present) = c.varint_flag()?;
                let mut fields = vec![("axes", axes)];
                if present {
                    match self.val(at, i)? {
                        Val::Attr(a) => fields.push(("device_ids", a)),
                        Val::Loc(_) => return Err(Error::malformed(at, "a location as device ids")),
                    }
                }
                Attr::Struct { mnemonic: "mesh", fields }
            }
            _ => return Err(Error::unsupported(at, format!("VHLO attribute code {code}"))),
        })
    }

    /// The body (what follows `#sdy.mnemonic`) of a Shardy attribute reference.
    fn sdy_body(&mut self, c: &mut Cursor<'a>, want: &str) -> Result<String> {
        let at = c.offset();
        match self.attr_ref(c)? {
            Attr::Sdy { mnemonic, body } if mnemonic == want => Ok(body),
            _ => Err(Error::malformed(at, format!("expected a Shardy {want} attribute"))),
        }
    }

    fn sdy_list(&mut self, c: &mut Cursor<'a>, want: &str) -> Result<Vec<String>> {
        let n = c.count(1)?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(self.sdy_body(c, want)?);
        }
        Ok(v)
    }

    fn quoted(&mut self, c: &mut Cursor<'a>) -> Result<String> {
        let s = self.c.string(c)?;
        let mut out = String::new();
        crate::mlir_text::string_into(&mut out, s);
        Ok(out)
    }

    /// Shardy's attributes (shardy/dialect/sdy/ir/bytecode.td), kept as their MLIR text.
    fn sdy_attr(&mut self, c: &mut Cursor<'a>) -> Result<Attr> {
        let at = c.offset();
        let code = c.varint()?;
        let (mnemonic, body) = match code {
            0 => {
                let n = c.count(1)?;
                let mut names = Vec::with_capacity(n);
                for _ in 0..n {
                    let mut q = String::new();
                    crate::mlir_text::string_into(&mut q, &self.string_attr_ref(c)?);
                    names.push(q);
                }
                ("manual_axes", format!("{{{}}}", names.join(", ")))
            }
            1 => {
                let name = self.quoted(c)?;
                let size = c.svarint()?;
                ("mesh_axis", format!("{name}={size}"))
            }
            2 => {
                let axes = self.sdy_list(c, "mesh_axis")?;
                let ids = Self::svarints(c)?;
                let mut body = format!("<[{}]", axes.join(", "));
                if !ids.is_empty() {
                    let ids: Vec<String> = ids.iter().map(|i| i.to_string()).collect();
                    body.push_str(&format!(", device_ids=[{}]", ids.join(", ")));
                }
                body.push('>');
                ("mesh", body)
            }
            3 => {
                let pre = c.svarint()?;
                let size = c.svarint()?;
                ("sub_axis_info", format!("({pre}){size}"))
            }
            4 => {
                let name = self.quoted(c)?;
                let (i, present) = c.varint_flag()?;
                let mut body = name;
                if present {
                    match self.val(at, i)? {
                        Val::Attr(Attr::Sdy { mnemonic: "sub_axis_info", body: sub }) => {
                            body.push(':');
                            body.push_str(&sub);
                        }
                        _ => return Err(Error::malformed(at, "an axis's sub-axis info is not one")),
                    }
                }
                ("axis_ref", body)
            }
            5 => {
                let axes = self.sdy_list(c, "axis_ref")?;
                let closed = c.byte()? != 0;
                let (p, has_priority) = c.varint_flag()?;
                let mut body = format!("{{{}", axes.join(", "));
                if !closed {
                    body.push_str(if axes.is_empty() { "?" } else { ", ?" });
                }
                body.push('}');
                if has_priority {
                    body.push_str(&format!("p{p}"));
                }
                ("dimension_sharding", body)
            }
            6 | 15 | 17 => {
                let mat = c.offset();
                let mesh = match self.attr_ref(c)? {
                    Attr::SymbolRef(s) => format!("@{}", crate::mlir_text::quote_symbol(&s)),
                    Attr::Sdy { mnemonic: "mesh", body } => format!("mesh{body}"),
                    _ => return Err(Error::malformed(mat, "a sharding's mesh is neither a mesh nor a symbol")),
                };
                let dims = self.sdy_list(c, "dimension_sharding")?;
                let replicated = self.sdy_list(c, "axis_ref")?;
                let unreduced = if code == 6 { Vec::new() } else { self.sdy_list(c, "axis_ref")? };
                let op = if code == 17 {
                    match c.svarint()? {
                        0 => "",
                        1 => "max",
                        2 => "min",
                        v => return Err(Error::malformed(at, format!("Shardy reduction {v}"))),
                    }
                } else {
                    ""
                };
                let mut body = format!("<{mesh}, [{}]", dims.join(", "));
                if !replicated.is_empty() {
                    body.push_str(&format!(", replicated={{{}}}", replicated.join(", ")));
                }
                if !unreduced.is_empty() {
                    body.push_str(&format!(", unreduced={op}{{{}}}", unreduced.join(", ")));
                }
                body.push('>');
                ("sharding", body)
            }
            7 | 16 => {
                let v = self.sdy_list(c, "sharding")?;
                ("sharding_per_value", format!("<[{}]>", v.join(", ")))
            }
            8 => {
                let factors = Self::svarints(c)?;
                let mut body = String::new();
                for f in factors {
                    body.push_str(&sdy_factor(at, f)?);
                }
                ("dim_mapping", body)
            }
            9 => {
                let dims = self.sdy_list(c, "dim_mapping")?;
                ("tensor_mapping", format!("[{}]", dims.join(", ")))
            }
            10 => {
                let sizes = Self::svarints(c)?;
                let operands = self.sdy_list(c, "tensor_mapping")?;
                let results = self.sdy_list(c, "tensor_mapping")?;
                let mut body = format!("<({})->({})", operands.join(", "), results.join(", "));
                if !sizes.is_empty() {
                    let sizes: Result<Vec<String>> = sizes
                        .iter()
                        .enumerate()
                        .map(|(i, n)| Ok(format!("{}={n}", sdy_factor(at, i as i64)?)))
                        .collect();
                    body.push_str(&format!(" {{{}}}", sizes?.join(", ")));
                }
                for kind in ["reduction", "need_replication", "permutation", "blocked_propagation"] {
                    let factors = Self::svarints(c)?;
                    if !factors.is_empty() {
                        let f: Result<Vec<String>> = factors.iter().map(|&f| sdy_factor(at, f)).collect();
                        body.push_str(&format!(" {kind}={{{}}}", f?.join(", ")));
                    }
                }
                if c.byte()? != 0 {
                    body.push_str(", custom");
                }
                body.push('>');
                ("op_sharding_rule", body)
            }
            11 => {
                let v = self.sdy_list(c, "axis_ref")?;
                ("axis_ref_list", format!("{{{}}}", v.join(", ")))
            }
            _ => return Err(Error::unsupported(at, format!("Shardy attribute code {code}"))),
        };
        Ok(Attr::Sdy { mnemonic, body })
    }

    fn vhlo_type(&mut self, c: &mut Cursor<'a>) -> Result<Type> {
        let at = c.offset();
        let code = c.varint()?;
        if let Some(scalar) = crate::vhlo::scalar_by_code(code) {
            return Ok(Type::Scalar(scalar.element));
        }
        Ok(match code {
            1 => {
                let e = self.type_ref(c)?;
                complex(at, e)?
            }
            8 => {
                let inputs = self.type_list(c)?;
                let outputs = self.type_list(c)?;
                Type::Function { inputs, outputs }
            }
            9 => Type::Index,
            20 | 21 => {
                let encoding = if code == 21 { Some(Box::new(self.attr_ref(c)?)) } else { None };
                let dims = Self::dims(c)?;
                let element = Box::new(self.type_ref(c)?);
                Type::Tensor(TensorType { dims, element, encoding })
            }
            22 => Type::Token,
            23 => Type::Tuple(self.type_list(c)?),
            24 | 30 => {
                let flags = c.varint()?;
                let storage = Box::new(self.type_ref(c)?);
                let expressed = Box::new(self.type_ref(c)?);
                let f64t = Type::Scalar(ElementType::F64);
                let scale_bits = |c: &mut Cursor<'a>| -> Result<u64> {
                    match Self::float_value(c, &f64t)? {
                        Attr::Float { bits, .. } => Ok(bits),
                        _ => Err(Error::malformed(at, "a quantization scale")),
                    }
                };
                if code == 24 {
                    let scale = scale_bits(c)?;
                    let zero = c.svarint()?;
                    let storage_min = c.svarint()?;
                    let storage_max = c.svarint()?;
                    Type::Quantized(Box::new(QuantizedType {
                        flags,
                        storage,
                        expressed,
                        axis: None,
                        scales: vec![scale],
                        zero_points: vec![zero],
                        storage_min,
                        storage_max,
                    }))
                } else {
                    let axis = c.varint()?;
                    let storage_min = c.svarint()?;
                    let storage_max = c.svarint()?;
                    let n = c.count(1)?;
                    let mut scales = Vec::with_capacity(n);
                    for _ in 0..n {
                        scales.push(scale_bits(c)?);
                    }
                    let zero_points = Self::svarints(c)?;
                    Type::Quantized(Box::new(QuantizedType {
                        flags,
                        storage,
                        expressed,
                        axis: Some(axis),
                        scales,
                        zero_points,
                        storage_min,
                        storage_max,
                    }))
                }
            }
            25 => Type::UnrankedTensor(Box::new(self.type_ref(c)?)),
            26 => Type::Opaque("!shape.witness".to_string()),
            33 => Type::None,
            34 => Type::Tf32,
            41 => {
                let dims = Self::dims(c)?;
                let element = Box::new(self.type_ref(c)?);
                Type::Buffer { dims, element }
            }
            42 => Type::Future(self.type_list(c)?),
            _ => return Err(Error::unsupported(at, format!("VHLO type code {code}"))),
        })
    }
}

/// Shardy's name for factor `f`: `i`..`z`, then `z_1`, `z_2`, ...
fn sdy_factor(at: usize, f: i64) -> Result<String> {
    const START_AT_Z: i64 = (b'z' - b'i') as i64;
    match f {
        0..=START_AT_Z => Ok(((b'i' + f as u8) as char).to_string()),
        f if f > START_AT_Z => Ok(format!("z_{}", f - START_AT_Z)),
        _ => Err(Error::malformed(at, format!("Shardy factor index {f}"))),
    }
}

fn complex(at: usize, e: Type) -> Result<Type> {
    match e {
        Type::Scalar(ElementType::F32) => Ok(Type::Scalar(ElementType::C64)),
        Type::Scalar(ElementType::F64) => Ok(Type::Scalar(ElementType::C128)),
        _ => Err(Error::unsupported(at, "a complex type that is not of f32 or f64")),
    }
}

/// A builtin integer type of `width` bits (signless, or unsigned).
fn int_type(width: u64, unsigned: bool) -> Option<Type> {
    let e = match (width, unsigned) {
        (1, false) => ElementType::PRED,
        (2, false) => ElementType::S2,
        (4, false) => ElementType::S4,
        (8, false) => ElementType::S8,
        (16, false) => ElementType::S16,
        (32, false) => ElementType::S32,
        (64, false) => ElementType::S64,
        (2, true) => ElementType::U2,
        (4, true) => ElementType::U4,
        (8, true) => ElementType::U8,
        (16, true) => ElementType::U16,
        (32, true) => ElementType::U32,
        (64, true) => ElementType::U64,
        _ => return None,
    };
    Some(Type::Scalar(e))
}

/// A dense elements attribute of MLIR bytecode (the builtin dialect's, or VHLO's tensor):
/// the buffer holds every element, or one (a splat). `i1` follows MLIR's bytecode: bits packed
/// 8 to a byte, a splat one byte 0x00 or 0xFF ([`i1_from_bytecode`]).
pub(crate) fn dense(at: usize, ty: Type, data: &[u8]) -> Result<Attr> {
    let err = |e: DenseError| match e {
        DenseError::Element(_) => Error::unsupported(at, e.to_string()),
        e => Error::malformed(at, e.to_string()),
    };
    if let Type::Tensor(t) = &ty {
        if t.dims.len() > 64 {
            return Err(Error::unsupported(at, format!("a dense elements attribute of rank {}", t.dims.len())));
        }
        if *t.element == Type::Scalar(ElementType::PRED) {
            let (count, _, _) = crate::ir::dense_shape(&ty).map_err(err)?;
            return match i1_from_bytecode(count, data).map_err(|what| Error::malformed(at, what))? {
                I1::Splat(b) => Attr::dense_splat(ty, &[b]),
                I1::Elements(v) => Attr::dense_elements(ty, v),
            }
            .map_err(err);
        }
    }
    // One element's bytes are a splat (of a tensor without elements too: none), as MLIR
    // reads them; otherwise every element's.
    let (_, _, per) = crate::ir::dense_shape(&ty).map_err(err)?;
    if data.len() == per {
        return Attr::dense_splat(ty, data).map_err(err);
    }
    DenseData::new(&ty, data).map_err(err)?;
    Attr::dense_elements(ty, data.to_vec()).map_err(err)
}

/// `i1` data, one byte (0 or 1) per element.
#[derive(Debug, PartialEq)]
enum I1 {
    /// One value for every element.
    Splat(u8),
    /// Every element's.
    Elements(Vec<u8>),
}

/// `count` `i1` elements as MLIR bytecode holds them (the builtin dialect's dense elements and
/// VHLO's tensor alike): MLIR writes a splat as one byte, 0x00 or 0xFF, and other data packed 8
/// to a byte, first element in the lowest bit (`DenseElementsAttr::isValidRawBuffer`). MLIR's
/// reader also takes a byte per element (some writers of 2026 wrote that), and a splat 0x01.
/// A byte that these forms read differently is refused: one element stored as a byte other
/// than 0x00, 0x01 or 0xFF (bit 0 for the packed form, any bit for a byte per element).
fn i1_from_bytecode(count: u64, data: &[u8]) -> std::result::Result<I1, String> {
    let packed_len = count.div_ceil(8);
    match data {
        [] if count == 0 => Ok(I1::Elements(Vec::new())),
        [b @ (0x00 | 0xFF)] => Ok(I1::Splat(b & 1)),
        [0x01] if count == 1 || count > 8 => Ok(I1::Splat(1)),
        [b] if count == 1 => Err(format!(
            "the byte {b:#04x} for one i1: read as packed bits it is {}, as a byte {}; MLIR writes 0x00, 0x01 or 0xFF",
            b & 1 == 1,
            *b != 0
        )),
        _ if data.len() as u64 == packed_len && packed_len != count => {
            Ok(I1::Elements((0..count as usize).map(|i| (data[i / 8] >> (i % 8)) & 1).collect()))
        }
        _ if data.len() as u64 == count => {
            if let Some(b) = data.iter().find(|&&b| b > 1) {
                return Err(format!("i1 data of a byte per element holds the byte {b:#04x}, not 0 or 1"));
            }
            Ok(I1::Elements(data.to_vec()))
        }
        _ => Err(format!(
            "{} bytes of i1 data for {count} elements: expected {packed_len} (8 to a byte) or one (a splat)",
            data.len()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(dims: &[u64], e: ElementType) -> Type {
        Type::Tensor(TensorType {
            dims: dims.iter().map(|&d| Dim::Fixed(d)).collect(),
            element: Box::new(Type::Scalar(e)),
            encoding: None,
        })
    }

    /// The elements of `i1` data read from bytecode, 0 or 1 each.
    fn bools(count: u64, blob: &[u8]) -> std::result::Result<Vec<u8>, String> {
        let attr = dense(0, tensor(&[count], ElementType::PRED), blob).map_err(|e| e.to_string())?;
        let Attr::Dense { ty, data } = &attr else { unreachable!() };
        let d = DenseData::new(ty, data).unwrap();
        Ok((0..count).map(|i| d.element(i).unwrap()[0]).collect())
    }

    #[test]
    fn i1_splats_are_0x00_and_0xff_for_every_count() {
        for n in 0..=17 {
            assert_eq!(bools(n, &[0xFF]), Ok(vec![1; n as usize]), "{n}");
            assert_eq!(bools(n, &[0x00]), Ok(vec![0; n as usize]), "{n}");
        }
    }

    #[test]
    fn i1_data_of_2_to_8_elements_in_one_byte_is_packed_bits() {
        for n in 2..=8u64 {
            for b in [0x01u8, 0x02, 0x05, 0x80, 0x7F] {
                let want: Vec<u8> = (0..n).map(|i| (b >> i) & 1).collect();
                assert_eq!(bools(n, &[b]), Ok(want), "{n} {b:#04x}");
            }
        }
    }

    #[test]
    fn i1_data_of_9_and_more_elements_is_packed_or_a_byte_each() {
        for n in 9..=17u64 {
            let packed: Vec<u8> = (0..n.div_ceil(8)).map(|i| 0xA5 ^ i as u8).collect();
            let want: Vec<u8> = (0..n as usize).map(|i| (packed[i / 8] >> (i % 8)) & 1).collect();
            assert_eq!(bools(n, &packed), Ok(want.clone()), "{n}");
            assert_eq!(bools(n, &want), Ok(want.clone()), "{n}: a byte per element");
            // A splat as some writers of 2026 wrote it.
            assert_eq!(bools(n, &[0x01]), Ok(vec![1; n as usize]), "{n}");
            let mut bad = want.clone();
            bad[3] = 2;
            assert!(bools(n, &bad).unwrap_err().contains("not 0 or 1"), "{n}");
            assert!(bools(n, &[0x05]).is_err(), "{n}");
            assert!(bools(n, &packed[..1]).is_err() || n.div_ceil(8) == 1, "{n}");
        }
    }

    #[test]
    fn one_i1_is_a_byte_both_readings_agree_on() {
        assert_eq!(bools(1, &[0x01]), Ok(vec![1]));
        assert_eq!(bools(1, &[0x00]), Ok(vec![0]));
        assert_eq!(bools(1, &[0xFF]), Ok(vec![1]));
        for b in [0x02u8, 0x03, 0x80, 0xFE] {
            let e = bools(1, &[b]).unwrap_err();
            assert!(e.contains("MLIR writes 0x00, 0x01 or 0xFF"), "{b:#04x}: {e}");
        }
    }

    #[test]
    fn no_i1_elements_take_no_bytes_or_a_splat() {
        assert_eq!(bools(0, &[]), Ok(vec![]));
        assert_eq!(bools(0, &[0xFF]), Ok(vec![]));
        assert!(bools(0, &[0x01]).is_err());
        assert!(bools(0, &[0, 0]).is_err());
        assert!(bools(4, &[]).is_err());
        assert!(bools(4, &[0, 0]).is_err(), "neither packed (1 byte) nor a byte each (4)");
    }

    #[test]
    fn other_types_hold_every_element_or_one() {
        let ty = |n| tensor(&[n], ElementType::S16);
        for n in 0..=17u64 {
            let every: Vec<u8> = (0..2 * n).map(|i| i as u8).collect();
            let a = dense(0, ty(n), &every).unwrap();
            let Attr::Dense { data, .. } = &a else { unreachable!() };
            assert_eq!(&data[..], &every[..], "{n}");
            let splat = dense(0, ty(n), &[7, 1]).unwrap();
            let Attr::Dense { data, .. } = &splat else { unreachable!() };
            assert_eq!(&data[..], if n == 0 { &[][..] } else { &[7, 1][..] }, "{n}");
            assert!(dense(0, ty(n), &[7]).is_err(), "{n}: half an element");
            if n > 2 {
                assert!(dense(0, ty(n), &every[..every.len() - 2]).is_err(), "{n}: one element short");
            }
        }
        // Sub-byte types take a byte each (not two to a byte); complex numbers both parts.
        assert!(dense(0, tensor(&[4], ElementType::S4), &[1, 2]).is_err());
        assert!(dense(0, tensor(&[4], ElementType::S4), &[1, 2, 3, 4]).is_ok());
        assert!(dense(0, tensor(&[2], ElementType::F4E2M1FN), &[1]).is_ok(), "a splat");
        assert!(dense(0, tensor(&[3], ElementType::C64), &[0; 8]).is_ok(), "a splat");
        assert!(dense(0, tensor(&[3], ElementType::C64), &[0; 12]).is_err(), "one and a half elements");
        assert!(dense(0, tensor(&[3], ElementType::C64), &[0; 4]).is_err(), "half an element");
        assert!(dense(0, tensor(&[2], ElementType::BF16), &[0; 4]).is_ok());
        assert!(dense(0, tensor(&[2], ElementType::BF16), &[0; 8]).is_err(), "f32-wide data");
    }
}
