//! Attributes, types and locations → entries of the attribute/type table: VHLO's encodings
//! (StableHLO's VhloBytecode) for what ops hold, the builtin dialect's for locations and the
//! few builtin attributes (the inverse of `crate::decode`).

use std::sync::Arc;

use super::container::{self, svarint, varint, Buf, Entry, Tables, BUILTIN, SDY, VHLO};
use super::error::WriteError;
use crate::ir::{float_width, int_width, Attr, Dim, ElementType, Location, TensorType, Type};
use pjrt_types::StableHloVersion;

/// Attributes and types nested deeper than this are refused (the reader's default limit is
/// 64; this keeps the writer's recursion bounded on hand-built modules).
const MAX_NESTING: usize = 256;

/// Encodes into the tables for one target.
pub(crate) struct Encoder {
    pub tables: Tables,
    pub target: StableHloVersion,
    depth: usize,
    /// Each location's entry by its address: the module's ops share their locations (`Arc`s,
    /// alive and unchanged while the module is written), so each is encoded once.
    locations: container::FastMap<usize, u64>,
}

type R<T> = Result<T, WriteError>;

fn unrepresentable(what: impl Into<String>) -> WriteError {
    WriteError::Unrepresentable { what: what.into() }
}

fn field<'x>(fields: &'x [(&'static str, Attr)], name: &str, of: &str) -> R<&'x Attr> {
    fields
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, a)| a)
        .ok_or_else(|| unrepresentable(format!("{of} without {name}")))
}

fn int_field(fields: &[(&'static str, Attr)], name: &str, of: &str) -> R<i64> {
    match field(fields, name, of)? {
        Attr::Integer { value, .. } => Ok(*value),
        _ => Err(unrepresentable(format!("{of} whose {name} is not an integer"))),
    }
}

fn ints_field(fields: &[(&'static str, Attr)], name: &str, of: &str) -> R<Vec<i64>> {
    match field(fields, name, of)? {
        Attr::I64Array(v) => Ok(v.clone()),
        _ => Err(unrepresentable(format!("{of} whose {name} is not an i64 array"))),
    }
}

fn float_bits(a: &Attr, what: &str) -> R<u64> {
    match a {
        Attr::Float { bits, .. } => Ok(*bits),
        _ => Err(unrepresentable(format!("{what} that is not a float"))),
    }
}

/// The bits MLIR writes for an APInt of `width` bits: the value zero-extended from its width.
fn apint(out: &mut Vec<u8>, raw: u64, width: u32) -> R<()> {
    let masked = if width >= 64 { raw } else { raw & ((1u64 << width) - 1) };
    if width <= 8 {
        out.push(masked as u8);
    } else if width <= 64 {
        svarint(out, masked as i64);
    } else {
        return Err(unrepresentable(format!("a {width}-bit integer")));
    }
    Ok(())
}

impl Encoder {
    pub(crate) fn new(target: StableHloVersion) -> Encoder {
        Encoder { tables: Tables::default(), target, depth: 0, locations: Default::default() }
    }

    fn needs(&self, what: &str) -> R<()> {
        match crate::vhlo::introduced(what) {
            Some(needs) if self.target < needs => {
                Err(WriteError::NotInVersion { what: what.to_string(), needs, target: self.target })
            }
            _ => Ok(()),
        }
    }

    fn enter(&mut self) -> R<()> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            self.depth -= 1;
            return Err(unrepresentable(format!("attributes or types nested deeper than {MAX_NESTING}")));
        }
        Ok(())
    }

    fn attr_entry(&mut self, dialect: usize, bytes: Buf) -> u64 {
        self.tables.attrs.add(Entry { dialect, custom: true, bytes })
    }

    fn type_entry(&mut self, bytes: Buf) -> u64 {
        self.tables.types.add(Entry { dialect: VHLO, custom: true, bytes })
    }

    /// An attribute or type kept as MLIR text (its dialect has no encoding here).
    fn text_entry(text: &str) -> R<Entry> {
        if text.as_bytes().contains(&0) {
            return Err(unrepresentable("attribute or type text with a NUL byte"));
        }
        let mut bytes = Buf::default();
        bytes.extend_from_slice(text.as_bytes());
        bytes.push(0);
        Ok(Entry { dialect: BUILTIN, custom: false, bytes })
    }

    /// A location (builtin dialect).
    pub(crate) fn loc(&mut self, l: &Location) -> R<u64> {
        self.enter()?;
        let r = self.loc_inner(l);
        self.depth -= 1;
        r
    }

    /// An op's location ([`Encoder::loc`]), encoded once per shared location: `l` is the
    /// module's (it outlives the write, so its address names it for the whole write).
    pub(crate) fn op_loc(&mut self, l: &Arc<Location>) -> R<u64> {
        let address = Arc::as_ptr(l) as usize;
        if let Some(&entry) = self.locations.get(&address) {
            return Ok(entry);
        }
        let entry = self.loc(l)?;
        self.locations.insert(address, entry);
        Ok(entry)
    }

    fn loc_inner(&mut self, l: &Location) -> R<u64> {
        let mut b = Buf::default();
        match l {
            Location::Unknown => varint(&mut b, 15),
            Location::FileLineCol { file, line, column } => {
                let f = self.builtin_string(file.as_bytes());
                varint(&mut b, 11);
                b.attr(f);
                varint(&mut b, *line);
                varint(&mut b, *column);
            }
            Location::FileLineColRange { file, start_line, start_column, end_line, end_column } => {
                let f = self.builtin_string(file.as_bytes());
                let (sl, sc, el, ec) = (*start_line, *start_column, *end_line, *end_column);
                // MLIR's forms, the shortest that holds the range (a single line and column is
                // a FileLineCol).
                let numbers: &[u64] = if (sl, sc, el, ec) == (0, 0, 0, 0) {
                    &[]
                } else if sc == 0 && sl == el {
                    &[sl]
                } else if sc == ec && sl == el {
                    &[sl, sc]
                } else if sl == el {
                    &[sl, sc, ec]
                } else {
                    &[sl, sc, el, ec]
                };
                if numbers.len() == 2 {
                    varint(&mut b, 11);
                    b.attr(f);
                    varint(&mut b, sl);
                    varint(&mut b, sc);
                } else {
                    varint(&mut b, 22);
                    b.attr(f);
                    varint(&mut b, numbers.len() as u64);
                    numbers.iter().for_each(|&x| varint(&mut b, x));
                }
            }
            Location::Name { name, child } => {
                let n = self.builtin_string(name.as_bytes());
                let c = self.loc(child)?;
                varint(&mut b, 14);
                b.attr(n);
                b.attr(c);
            }
            Location::CallSite { callee, caller } => {
                let a = self.loc(callee)?;
                let c = self.loc(caller)?;
                varint(&mut b, 10);
                b.attr(a);
                b.attr(c);
            }
            Location::Fused { locations, metadata } => {
                let mut items = Vec::with_capacity(locations.len());
                for l in locations {
                    items.push(self.loc(l)?);
                }
                // Locations stay builtin (VHLO converts only what ops hold): so does metadata.
                let meta = match metadata {
                    Some(m) => Some(self.module_attr(m)?),
                    None => None,
                };
                varint(&mut b, if meta.is_some() { 13 } else { 12 });
                varint(&mut b, items.len() as u64);
                for i in items {
                    b.attr(i);
                }
                if let Some(m) = meta {
                    b.attr(m);
                }
            }
            Location::Opaque(text) => {
                let e = Self::text_entry(text)?;
                return Ok(self.tables.attrs.add(e));
            }
        }
        Ok(self.attr_entry(BUILTIN, b))
    }

    /// A flat symbol reference to the builtin string attribute `name`.
    pub(crate) fn builtin_symbol(&mut self, name: u64) -> u64 {
        let mut b = Buf::default();
        varint(&mut b, 4);
        b.attr(name);
        self.attr_entry(BUILTIN, b)
    }

    pub(crate) fn builtin_string(&mut self, s: &[u8]) -> u64 {
        let i = self.tables.string(s);
        let mut b = Buf::default();
        varint(&mut b, 2);
        b.str(i);
        self.attr_entry(BUILTIN, b)
    }

    /// A builtin-dialect attribute where one belongs (a module's properties); what has no
    /// builtin form here is written in VHLO's (which the reader takes as well).
    pub(crate) fn builtin_attr(&mut self, a: &Attr) -> R<u64> {
        match a {
            Attr::String(s) => Ok(self.builtin_string(s)),
            _ => self.vhlo_attr(a),
        }
    }

    /// An attribute, in VHLO's encoding where VHLO has one.
    pub(crate) fn vhlo_attr(&mut self, a: &Attr) -> R<u64> {
        self.enter()?;
        let r = self.vhlo_attr_inner(a);
        self.depth -= 1;
        r
    }

    fn list(&mut self, b: &mut Buf, items: &[Attr]) -> R<()> {
        let mut refs = Vec::with_capacity(items.len());
        for x in items {
            refs.push(self.vhlo_attr(x)?);
        }
        varint(b, refs.len() as u64);
        for r in refs {
            b.attr(r);
        }
        Ok(())
    }

    fn vhlo_attr_inner(&mut self, a: &Attr) -> R<u64> {
        let mut b = Buf::default();
        let mut dialect = VHLO;
        match a {
            Attr::Array(items) => {
                varint(&mut b, 1);
                self.list(&mut b, items)?;
            }
            Attr::Bool(v) => {
                varint(&mut b, 2);
                varint(&mut b, u64::from(*v));
            }
            Attr::Dict(entries) => {
                let mut refs = Vec::with_capacity(entries.len());
                for (k, v) in entries {
                    let key = self.vhlo_string(k.as_bytes());
                    refs.push((key, self.vhlo_attr(v)?));
                }
                varint(&mut b, 6);
                varint(&mut b, refs.len() as u64);
                for (k, v) in refs {
                    b.attr(k);
                    b.attr(v);
                }
            }
            Attr::Float { bits, ty } => {
                let width = float_width(ty).ok_or_else(|| unrepresentable("a float attribute of a non-float type"))?;
                let t = self.vhlo_type(ty)?;
                varint(&mut b, 8);
                b.ty(t);
                apint(&mut b, *bits, width)?;
            }
            Attr::Integer { value, ty } => {
                let (width, _) =
                    int_width(ty).ok_or_else(|| unrepresentable("an integer attribute of a non-integer type"))?;
                let t = self.vhlo_type(ty)?;
                varint(&mut b, 9);
                b.ty(t);
                apint(&mut b, *value as u64, width)?;
            }
            Attr::String(s) => return Ok(self.vhlo_string(s)),
            Attr::Dense { ty, data } => {
                let t = self.vhlo_type(ty)?;
                let bytes = dense_bytes(ty, data)?;
                varint(&mut b, 15);
                b.ty(t);
                varint(&mut b, bytes.len() as u64);
                b.extend_from_slice(&bytes);
            }
            Attr::Type(t) => {
                let t = self.vhlo_type(t)?;
                varint(&mut b, 17);
                b.ty(t);
            }
            Attr::Bounds(bounds) => {
                varint(&mut b, 18);
                varint(&mut b, bounds.len() as u64);
                for x in bounds {
                    svarint(&mut b, x.unwrap_or(i64::MIN));
                }
            }
            Attr::Enum(e) => {
                let encoding =
                    crate::vhlo::enum_by_kind(e.kind).ok_or_else(|| unrepresentable(format!("enum {}", e.kind)))?;
                let i = encoding
                    .values
                    .iter()
                    .position(|v| *v == e.value)
                    .ok_or_else(|| unrepresentable(format!("#stablehlo<{} {}>", e.kind, e.value)))?;
                varint(&mut b, encoding.code);
                varint(&mut b, i as u64 + encoding.first);
            }
            Attr::Struct { mnemonic, fields } => self.vhlo_struct(&mut b, mnemonic, fields)?,
            // What VHLO lacks the reader takes in the builtin dialect's encoding.
            Attr::Unit => {
                dialect = BUILTIN;
                varint(&mut b, 7);
            }
            Attr::SymbolRef(s) => {
                let name = self.builtin_string(s.as_bytes());
                return Ok(self.builtin_symbol(name));
            }
            Attr::I64Array(v) => {
                let t = self.builtin_int_type(64);
                dialect = BUILTIN;
                varint(&mut b, 17);
                b.ty(t);
                varint(&mut b, v.len() as u64);
                varint(&mut b, v.len() as u64 * 8);
                for x in v {
                    b.extend_from_slice(&x.to_le_bytes());
                }
            }
            Attr::BoolArray(v) => {
                let t = self.builtin_int_type(1);
                dialect = BUILTIN;
                varint(&mut b, 17);
                b.ty(t);
                varint(&mut b, v.len() as u64);
                varint(&mut b, v.len() as u64);
                b.extend(v.iter().map(|&x| u8::from(x)));
            }
            Attr::Opaque(text) => {
                let e = Self::text_entry(text)?;
                return Ok(self.tables.attrs.add(e));
            }
            Attr::Sdy { mnemonic, body } => return self.sdy_text(mnemonic, body),
        }
        Ok(self.attr_entry(dialect, b))
    }

    fn vhlo_string(&mut self, s: &[u8]) -> u64 {
        let i = self.tables.string(s);
        let mut b = Buf::default();
        varint(&mut b, 14);
        b.str(i);
        self.attr_entry(VHLO, b)
    }

    /// A type in the builtin dialect's encoding (what Shardy's ops hold): tensors of the
    /// common element types.
    pub(crate) fn builtin_type(&mut self, t: &Type) -> R<u64> {
        self.enter()?;
        let r = self.builtin_type_inner(t);
        self.depth -= 1;
        r
    }

    fn builtin_type_inner(&mut self, t: &Type) -> R<u64> {
        use ElementType as E;
        let mut b = Buf::default();
        match t {
            Type::Tensor(TensorType { dims, element, encoding: None }) => {
                let el = self.builtin_type(element)?;
                varint(&mut b, 13);
                Self::dims(&mut b, dims)?;
                b.ty(el);
            }
            Type::Index => varint(&mut b, 1),
            Type::Scalar(e) => match *e {
                E::BF16 => varint(&mut b, 3),
                E::F16 => varint(&mut b, 4),
                E::F32 => varint(&mut b, 5),
                E::F64 => varint(&mut b, 6),
                E::C64 | E::C128 => {
                    let part = self.builtin_type(&Type::Scalar(if *e == E::C64 { E::F32 } else { E::F64 }))?;
                    varint(&mut b, 9);
                    b.ty(part);
                }
                other => match int_width(t) {
                    // Signless (0) for signed types, unsigned (2).
                    Some((width, signed)) => {
                        varint(&mut b, 0);
                        varint(&mut b, (u64::from(width) << 2) | if signed || width == 1 { 0 } else { 2 });
                    }
                    None => return Err(unrepresentable(format!("element type {other:?} in a Shardy op's type"))),
                },
            },
            Type::Tuple(items) => {
                let mut refs = Vec::with_capacity(items.len());
                for t in items {
                    refs.push(self.builtin_type(t)?);
                }
                varint(&mut b, 15);
                varint(&mut b, refs.len() as u64);
                refs.iter().for_each(|&r| b.ty(r));
            }
            _ => return self.vhlo_type(t),
        }
        Ok(self.tables.types.add(Entry { dialect: BUILTIN, custom: true, bytes: b }))
    }

    fn builtin_int_type(&mut self, width: u64) -> u64 {
        let mut b = Buf::default();
        varint(&mut b, 0);
        varint(&mut b, width << 2);
        self.tables.types.add(Entry { dialect: BUILTIN, custom: true, bytes: b })
    }

    fn optional(&mut self, b: &mut Buf, fields: &[(&'static str, Attr)], name: &str) -> R<()> {
        match fields.iter().find(|(n, _)| *n == name) {
            Some((_, a)) => {
                let i = self.vhlo_attr(a)?;
                b.attr_flag(i, true);
            }
            None => varint(b, 0),
        }
        Ok(())
    }

    fn vhlo_struct(&mut self, b: &mut Buf, mnemonic: &str, fields: &[(&'static str, Attr)]) -> R<()> {
        let of = format!("#stablehlo.{mnemonic}");
        self.needs(&of)?;
        match mnemonic {
            "output_operand_alias" => {
                let output = ints_field(fields, "output_tuple_indices", &of)?;
                let operand = int_field(fields, "operand_index", &of)?;
                let operand_tuple = ints_field(fields, "operand_tuple_indices", &of)?;
                varint(b, 10);
                varint(b, output.len() as u64);
                output.iter().for_each(|&x| svarint(b, x));
                svarint(b, operand);
                varint(b, operand_tuple.len() as u64);
                operand_tuple.iter().for_each(|&x| svarint(b, x));
            }
            "result_accuracy" => {
                let atol = float_bits(field(fields, "atol", &of)?, "atol")?;
                let rtol = float_bits(field(fields, "rtol", &of)?, "rtol")?;
                let ulps = int_field(fields, "ulps", &of)?;
                let mode = self.vhlo_attr(field(fields, "mode", &of)?)?;
                varint(b, 20);
                svarint(b, atol as i64);
                svarint(b, rtol as i64);
                svarint(b, ulps);
                b.attr(mode);
            }
            "sub_axis_info" => {
                let pre = int_field(fields, "pre_size", &of)?;
                let size = int_field(fields, "size", &of)?;
                varint(b, 21);
                svarint(b, pre);
                svarint(b, size);
            }
            "axis_ref" => {
                let name = self.vhlo_attr(field(fields, "name", &of)?)?;
                varint(b, 22);
                b.attr(name);
                // A presence varint, then the reference (StableHLO's encoding of this one).
                match fields.iter().find(|(n, _)| *n == "sub_axis_info") {
                    Some((_, a)) => {
                        let i = self.vhlo_attr(a)?;
                        varint(b, 1);
                        b.attr(i);
                    }
                    None => varint(b, 0),
                }
            }
            "replica_group_mesh_axes" => {
                // A mesh named by symbol is a string in VHLO.
                let mesh = match field(fields, "mesh", &of)? {
                    Attr::SymbolRef(s) => self.vhlo_string(s.as_bytes()),
                    other => self.vhlo_attr(other)?,
                };
                let axes = self.vhlo_attr(field(fields, "axes", &of)?)?;
                varint(b, 23);
                b.attr(mesh);
                b.attr(axes);
            }
            "mesh_axis" => {
                let name = self.vhlo_attr(field(fields, "name", &of)?)?;
                let size = int_field(fields, "size", &of)?;
                varint(b, 24);
                b.attr(name);
                svarint(b, size);
            }
            "mesh" => {
                let axes = self.vhlo_attr(field(fields, "axes", &of)?)?;
                varint(b, 25);
                b.attr(axes);
                self.optional(b, fields, "device_ids")?;
            }
            _ => {
                return Err(unrepresentable(format!(
                    "{of} outside the op it belongs to (VHLO writes its fields as the op's attributes)"
                )))
            }
        }
        Ok(())
    }

    /// A type, in VHLO's encoding.
    pub(crate) fn vhlo_type(&mut self, t: &Type) -> R<u64> {
        self.enter()?;
        let r = self.vhlo_type_inner(t);
        self.depth -= 1;
        r
    }

    fn types(&mut self, b: &mut Buf, items: &[Type]) -> R<()> {
        let mut refs = Vec::with_capacity(items.len());
        for t in items {
            refs.push(self.vhlo_type(t)?);
        }
        varint(b, refs.len() as u64);
        for r in refs {
            b.ty(r);
        }
        Ok(())
    }

    fn dims(b: &mut Vec<u8>, dims: &[Dim]) -> R<()> {
        varint(b, dims.len() as u64);
        for d in dims {
            match d {
                Dim::Dynamic => svarint(b, i64::MIN),
                Dim::Fixed(n) => svarint(b, i64::try_from(*n).map_err(|_| unrepresentable(format!("dimension {n}")))?),
            }
        }
        Ok(())
    }

    fn vhlo_type_inner(&mut self, t: &Type) -> R<u64> {
        let mut b = Buf::default();
        let code = match t {
            Type::Scalar(e) => match crate::vhlo::scalar_by_element(*e) {
                Some(scalar) => {
                    self.needs(scalar.name)?;
                    scalar.code
                }
                None => match *e {
                    ElementType::C64 | ElementType::C128 => {
                        let part = if *e == ElementType::C64 { ElementType::F32 } else { ElementType::F64 };
                        let p = self.vhlo_type(&Type::Scalar(part))?;
                        varint(&mut b, 1);
                        b.ty(p);
                        return Ok(self.type_entry(b));
                    }
                    other => return Err(unrepresentable(format!("element type {other:?}"))),
                },
            },
            Type::Index => 9,
            Type::Tf32 => {
                self.needs("tf32")?;
                34
            }
            Type::None => {
                self.needs("none")?;
                33
            }
            Type::Token => 22,
            Type::UnrankedBuffer(_) => return Err(unrepresentable("an unranked memref (VHLO has no such type)")),
            Type::Tensor(TensorType { dims, element, encoding }) => {
                let enc = match encoding {
                    Some(e) => Some(self.vhlo_attr(e)?),
                    None => None,
                };
                let el = self.vhlo_type(element)?;
                match enc {
                    Some(e) => {
                        varint(&mut b, 21);
                        b.attr(e);
                    }
                    None => varint(&mut b, 20),
                }
                Self::dims(&mut b, dims)?;
                b.ty(el);
                return Ok(self.type_entry(b));
            }
            Type::UnrankedTensor(e) => {
                let el = self.vhlo_type(e)?;
                varint(&mut b, 25);
                b.ty(el);
                return Ok(self.type_entry(b));
            }
            Type::Buffer { dims, element } => {
                self.needs("memref")?;
                let el = self.vhlo_type(element)?;
                varint(&mut b, 41);
                Self::dims(&mut b, dims)?;
                b.ty(el);
                return Ok(self.type_entry(b));
            }
            Type::Tuple(items) => {
                varint(&mut b, 23);
                self.types(&mut b, items)?;
                return Ok(self.type_entry(b));
            }
            Type::Future(items) => {
                self.needs("!stablehlo.future")?;
                varint(&mut b, 42);
                self.types(&mut b, items)?;
                return Ok(self.type_entry(b));
            }
            Type::Function { inputs, outputs } => {
                let mut ins = Buf::default();
                self.types(&mut ins, inputs)?;
                let mut outs = Buf::default();
                self.types(&mut outs, outputs)?;
                varint(&mut b, 8);
                b.append(ins);
                b.append(outs);
                return Ok(self.type_entry(b));
            }
            Type::Quantized(q) => {
                let storage = self.vhlo_type(&q.storage)?;
                let expressed = self.vhlo_type(&q.expressed)?;
                match q.axis {
                    None => {
                        let (&[scale], &[zero]) = (q.scales.as_slice(), q.zero_points.as_slice()) else {
                            return Err(unrepresentable("a per-tensor quantized type without exactly one scale"));
                        };
                        varint(&mut b, 24);
                        varint(&mut b, q.flags);
                        b.ty(storage);
                        b.ty(expressed);
                        svarint(&mut b, scale as i64);
                        svarint(&mut b, zero);
                        svarint(&mut b, q.storage_min);
                        svarint(&mut b, q.storage_max);
                    }
                    Some(axis) => {
                        self.needs("per-axis quantization")?;
                        varint(&mut b, 30);
                        varint(&mut b, q.flags);
                        b.ty(storage);
                        b.ty(expressed);
                        varint(&mut b, axis);
                        svarint(&mut b, q.storage_min);
                        svarint(&mut b, q.storage_max);
                        varint(&mut b, q.scales.len() as u64);
                        q.scales.iter().for_each(|&s| svarint(&mut b, s as i64));
                        varint(&mut b, q.zero_points.len() as u64);
                        q.zero_points.iter().for_each(|&z| svarint(&mut b, z));
                    }
                }
                return Ok(self.type_entry(b));
            }
            Type::Opaque(text) if text == "!shape.witness" => 26,
            Type::Opaque(text) => {
                let e = Self::text_entry(text)?;
                return Ok(self.tables.types.add(e));
            }
        };
        varint(&mut b, code);
        Ok(self.type_entry(b))
    }
}

/// A dense buffer as MLIR's bytecode holds it (VHLO's tensor as the builtin dialect's dense
/// elements): `i1` packed 8 to a byte, first element in the lowest bit, and a splat (a tensor of
/// one element too) as one byte, 0x00 or 0xFF, as MLIR writes them; other element types as
/// they are (one element's bytes for a splat).
fn dense_bytes(ty: &Type, data: &Arc<[u8]>) -> R<Vec<u8>> {
    let d = crate::ir::DenseData::new(ty, data).map_err(|e| unrepresentable(e.to_string()))?;
    let Type::Tensor(t) = ty else {
        return Err(unrepresentable("a dense elements attribute whose type is not a ranked tensor"));
    };
    if !matches!(*t.element, Type::Scalar(ElementType::PRED)) {
        // MLIR keeps elements that are all the same as one (a splat), however they were given.
        let size = d.element_bytes();
        if !d.is_splat() && size > 0 && d.count() > 1 && data.chunks(size).all(|e| e == &data[..size]) {
            return Ok(data[..size].to_vec());
        }
        return Ok(data.to_vec());
    }
    // A splat of several is a byte of all ones (or zeros); one element is packed as any data
    // (bit 0), as MLIR's parser leaves it.
    if d.is_splat() && d.count() != 1 {
        return Ok(vec![if data[0] != 0 { 0xFF } else { 0 }]);
    }
    let mut packed = vec![0u8; data.len().div_ceil(8)];
    for (i, &x) in data.iter().enumerate() {
        if x != 0 {
            packed[i / 8] |= 1 << (i % 8);
        }
    }
    Ok(packed)
}

/// Shardy's factor index of a factor name (`i`..`z`, then `z_1`, `z_2`, ...) at the start of
/// `s`, and the rest of `s`.
fn sdy_factor(s: &str) -> Option<(i64, &str)> {
    let c = *s.as_bytes().first()?;
    if !(b'i'..=b'z').contains(&c) {
        return None;
    }
    let rest = &s[1..];
    if c == b'z' {
        if let Some(digits) = rest.strip_prefix('_') {
            let n = digits.bytes().take_while(u8::is_ascii_digit).count();
            let k: i64 = digits[..n].parse().ok()?;
            return Some((i64::from(b'z' - b'i').checked_add(k)?, &digits[n..]));
        }
    }
    Some((i64::from(c - b'i'), rest))
}

/// Factor names, comma separated (`i, k`).
fn sdy_factor_list(s: &str) -> Option<Vec<i64>> {
    let s = s.trim();
    if s.is_empty() {
        return Some(Vec::new());
    }
    s.split(',')
        .map(|f| match sdy_factor(f.trim()) {
            Some((i, "")) => Some(i),
            _ => None,
        })
        .collect()
}

/// Splits `(a, b)`-style text at top-level commas inside one bracket pair.
fn split_top(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in s.char_indices() {
        match c {
            '[' | '(' | '{' | '<' => depth += 1,
            ']' | ')' | '}' | '>' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    if !s[start..].trim().is_empty() {
        parts.push(s[start..].trim());
    }
    parts
}

impl Encoder {
    /// `#sdy.op_sharding_rule` (what JAX puts on custom calls), from its text.
    pub(crate) fn sdy_attr(&mut self, mnemonic: &str, body: &str) -> R<u64> {
        let bad = || unrepresentable(format!("the Shardy attribute #sdy.{mnemonic}{body} (unexpected text)"));
        if mnemonic != "op_sharding_rule" {
            return Err(unrepresentable(format!(
                "the Shardy attribute #sdy.{mnemonic} (this writer encodes only #sdy.op_sharding_rule: export without sharding annotations)"
            )));
        }
        let inner = body.strip_prefix('<').and_then(|b| b.strip_suffix('>')).ok_or_else(bad)?;
        let (inner, custom) = match inner.strip_suffix(", custom") {
            Some(i) => (i, true),
            None => (inner, false),
        };
        // `(operands)->(results)` then ` {sizes}` and ` kind={factors}` parts.
        let arrow = inner.find(")->(").ok_or_else(bad)?;
        let operands = inner[..arrow].strip_prefix('(').ok_or_else(bad)?;
        let after = &inner[arrow + 4..];
        let close = after.find(')').ok_or_else(bad)?;
        let results = &after[..close];
        let mut rest = after[close + 1..].trim_start();
        let mut sizes = Vec::new();
        if let Some(r) = rest.strip_prefix('{') {
            let end = r.find('}').ok_or_else(bad)?;
            for (k, item) in split_top(&r[..end]).iter().enumerate() {
                let (name, size) = item.split_once('=').ok_or_else(bad)?;
                match sdy_factor(name.trim()) {
                    Some((i, "")) if i == k as i64 => {}
                    _ => return Err(bad()),
                }
                sizes.push(size.trim().parse::<i64>().map_err(|_| bad())?);
            }
            rest = r[end + 1..].trim_start();
        }
        let kinds = ["reduction", "need_replication", "permutation", "blocked_propagation"];
        let mut lists: [Vec<i64>; 4] = Default::default();
        while !rest.is_empty() {
            let (kind, r) = rest.split_once("={").ok_or_else(bad)?;
            let k = kinds.iter().position(|x| *x == kind.trim()).ok_or_else(bad)?;
            let end = r.find('}').ok_or_else(bad)?;
            lists[k] = sdy_factor_list(&r[..end]).ok_or_else(bad)?;
            rest = r[end + 1..].trim_start();
        }
        let mut mappings = |text: &str| -> R<Vec<u64>> {
            let mut refs = Vec::new();
            for t in split_top(text) {
                let dims = t.strip_prefix('[').and_then(|t| t.strip_suffix(']')).ok_or_else(bad)?;
                let mut dim_refs = Vec::new();
                for d in split_top(dims) {
                    let mut factors = Vec::new();
                    let mut s = d;
                    while !s.is_empty() {
                        let (f, r) = sdy_factor(s).ok_or_else(bad)?;
                        factors.push(f);
                        s = r;
                    }
                    let mut b = Buf::default();
                    varint(&mut b, 8);
                    varint(&mut b, factors.len() as u64);
                    factors.iter().for_each(|&f| svarint(&mut b, f));
                    dim_refs.push(self.attr_entry(SDY, b));
                }
                let mut b = Buf::default();
                varint(&mut b, 9);
                varint(&mut b, dim_refs.len() as u64);
                dim_refs.iter().for_each(|&r| b.attr(r));
                refs.push(self.attr_entry(SDY, b));
            }
            Ok(refs)
        };
        let operand_refs = mappings(operands)?;
        let result_refs = mappings(results)?;
        self.tables.uses_sdy = true;
        let mut b = Buf::default();
        varint(&mut b, 10);
        varint(&mut b, sizes.len() as u64);
        sizes.iter().for_each(|&s| svarint(&mut b, s));
        for refs in [&operand_refs, &result_refs] {
            varint(&mut b, refs.len() as u64);
            refs.iter().for_each(|&r| b.attr(r));
        }
        for l in &lists {
            varint(&mut b, l.len() as u64);
            l.iter().for_each(|&f| svarint(&mut b, f));
        }
        b.push(u8::from(custom));
        Ok(self.attr_entry(SDY, b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn i1(n: u64) -> Type {
        Type::Tensor(TensorType {
            dims: vec![Dim::Fixed(n)],
            element: Box::new(Type::Scalar(ElementType::PRED)),
            encoding: None,
        })
    }

    fn bytes(ty: &Type, data: &[u8]) -> R<Vec<u8>> {
        dense_bytes(ty, &Arc::from(data))
    }

    /// What MLIR's bytecode holds: a splat of several elements as one byte 0x00 or 0xFF, other
    /// data (one element too) 8 to a byte from the lowest bit.
    #[test]
    fn i1_is_written_as_mlir_writes_it() {
        for n in 2..=17u64 {
            assert_eq!(bytes(&i1(n), &[1]), Ok(vec![0xFF]), "{n}");
            assert_eq!(bytes(&i1(n), &[0]), Ok(vec![0x00]), "{n}");
        }
        // One element is packed (StableHLO's artifacts of `dense<true> : tensor<1xi1>`).
        assert_eq!(bytes(&i1(1), &[1]), Ok(vec![0x01]));
        assert_eq!(bytes(&i1(1), &[0]), Ok(vec![0x00]));
        assert_eq!(bytes(&i1(0), &[]), Ok(vec![]));
        assert_eq!(bytes(&i1(4), &[1, 0, 0, 0]), Ok(vec![0b0001]));
        assert_eq!(bytes(&i1(8), &[0, 1, 1, 1, 1, 1, 1, 1]), Ok(vec![0xFE]));
        let nine = [1, 0, 0, 0, 0, 0, 0, 0, 1];
        assert_eq!(bytes(&i1(9), &nine), Ok(vec![0x01, 0x01]));
        // Data that is neither a splat nor every element is refused, not packed as it comes.
        assert!(bytes(&i1(4), &[1, 0]).is_err());
        assert!(bytes(&i1(2), &[2, 0]).is_err());
    }

    #[test]
    fn other_types_are_written_as_held() {
        let ty = Type::Tensor(TensorType {
            dims: vec![Dim::Fixed(3)],
            element: Box::new(Type::Scalar(ElementType::S4)),
            encoding: None,
        });
        assert_eq!(bytes(&ty, &[0x0F]), Ok(vec![0x0F]));
        assert_eq!(bytes(&ty, &[1, 2, 3]), Ok(vec![1, 2, 3]));
        assert!(bytes(&ty, &[0x21]).is_ok(), "a splat of one byte");
        assert!(bytes(&ty, &[1, 2]).is_err());
        // Elements all the same are written as one, as MLIR holds them.
        assert_eq!(bytes(&ty, &[7, 7, 7]), Ok(vec![7]));
    }
}
