//! The VHLO bytecode writer: an [`ir::Module`] → a StableHLO portable artifact for a target
//! StableHLO version (what `stablehlo.serialize_portable_artifact` writes), the inverse of
//! [`crate::read_bytecode`].

mod builtin;
mod container;
mod convert;
mod encode;
mod error;
mod numbering;
mod sdy;
mod use_lists;

use crate::bytecode::{V_ELIDE_UNKNOWN_BLOCK_ARG_LOC, V_LAZY_LOADING, V_NATIVE_PROPERTIES, V_USE_LIST_ORDERING};
use crate::ir::{self, Attr, Op, Region};
use container::{varint, varint_flag, Buf, FastMap, Ref, BUILTIN, SDY, VHLO};
use encode::Encoder;
pub use error::WriteError;
use pjrt_types::StableHloVersion;

use crate::bytecode::{
    HAS_ATTRS, HAS_INLINE_REGIONS, HAS_OPERANDS, HAS_PROPERTIES, HAS_RESULTS, HAS_SUCCESSORS, HAS_USE_LIST_ORDERS,
    SECTION_IR,
};

/// Regions nested deeper than this are refused (the reader's default limit is 64).
const MAX_REGION_DEPTH: usize = 256;

type R<T> = Result<T, WriteError>;

/// The builtin cast VHLO keeps around values of Shardy's ops (it has no properties).
const CAST: &str = "builtin.unrealized_conversion_cast";

/// Writes a module as a StableHLO portable artifact for StableHLO `target` (what
/// `stablehlo.serialize_portable_artifact` writes): VHLO ops of the versions that exist at
/// `target`, in the MLIR bytecode version `target` is read in, with `target.producer()` as the
/// producer. Reading the result gives the module back (its producer and bytecode version
/// those of `target`), but for its `chlo` ops, which VHLO lacks: each is written as its
/// StableHLO decomposition (see the crate doc's CHLO section), or refused
/// ([`WriteError::Chlo`]).
///
/// ```
/// use pjrt_stablehlo::{read_bytecode, write_bytecode, StableHloVersion};
/// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/formats/tanh_mul.portable-1.0.0.mlirbc");
/// let module = read_bytecode(&std::fs::read(path).unwrap()).unwrap();
/// let bytes = write_bytecode(&module, StableHloVersion::of_producer(&module.producer).unwrap()).unwrap();
/// assert_eq!(read_bytecode(&bytes).unwrap(), module);
/// ```
pub fn write_bytecode(module: &ir::Module, target: StableHloVersion) -> Result<Vec<u8>, WriteError> {
    if target < crate::MINIMUM_VERSION || target > crate::NEWEST_READ_VERSION {
        return Err(WriteError::Target { target });
    }
    let version = crate::vhlo::versions::bytecode_version(target).ok_or(WriteError::Target { target })?;
    // VHLO has no CHLO: its ops are written as their StableHLO decompositions.
    let lowered;
    let module = if crate::chlo::has_chlo(module) {
        lowered = crate::chlo::lower(module).map_err(|e| WriteError::Chlo { op: e.op, reason: e.reason })?;
        &lowered
    } else {
        module
    };
    let mut w = Writer {
        enc: Encoder::new(target),
        op_index: FastMap::default(),
        version,
        values: FastMap::default(),
        undo: Vec::new(),
        scope_len: 0,
        op_refs: FastMap::default(),
        arg_refs: FastMap::default(),
        use_lists: use_lists::UseLists::default(),
    };
    if version >= V_USE_LIST_ORDERING {
        // The ops StableHLO's serializer rebuilds for the target: those whose VHLO op version
        // there is older than the newest's.
        w.use_lists = use_lists::use_lists(module, |op| match convert::to_vhlo(op, target) {
            Ok(v) => convert::to_vhlo(op, crate::CURRENT_VERSION).is_ok_and(|c| c.name != v.name),
            Err(_) => false,
        });
    }
    // Op names first: the table is grouped by dialect, so every index is known up front.
    let mut names = Vec::new();
    for op in numbering_order(module) {
        names.push(w.op_name(op)?);
    }
    w.op_index = w.enc.tables.set_op_names(names);
    let mut ir = Buf::default();
    varint_flag(&mut ir, module.ops.len() as u64, false);
    for op in &module.ops {
        w.op(&mut ir, op, 0)?;
    }
    let top = w.numbering_refs(module);
    let order = numbering::order(&w.enc.tables.attrs, &w.enc.tables.types, &top);
    Ok(w.enc.tables.finish(version, &target.producer(), &ir, &order))
}

struct Writer {
    enc: Encoder,
    op_index: FastMap<(usize, String), u64>,
    version: u64,
    /// The number of each visible value (by its IR id), in the current isolated scope.
    /// With each, whether its type is a builtin one (Shardy's ops' values) rather than VHLO's.
    values: FastMap<u32, (u64, bool)>,
    /// What `values` held before each definition, to restore when a region ends.
    undo: Vec<(u32, Option<(u64, bool)>)>,
    /// Values numbered so far in the current scope (the regions being written).
    scope_len: u64,
    /// Each op's references to attributes and types (by its address in the module being
    /// written), in the order MLIR's writer numbers them: result types, attribute
    /// dictionary, properties, location.
    op_refs: FastMap<usize, Vec<Ref>>,
    /// The same for each block's arguments: each one's location, then its type.
    arg_refs: FastMap<usize, Vec<Ref>>,
    /// The use-list orders to record (bytecode 3 on).
    use_lists: use_lists::UseLists,
}

impl Writer {
    /// The dialect and bytecode name of an op (VHLO's versioned name for StableHLO ops).
    fn op_name(&self, op: &Op) -> R<(usize, String)> {
        if op.name == "builtin.module" {
            return Ok((BUILTIN, "module".to_string()));
        }
        if op.name == CAST {
            return Ok((BUILTIN, "unrealized_conversion_cast".to_string()));
        }
        if let Some(name) = op.name.strip_prefix("sdy.") {
            if sdy_properties(name).is_some() {
                return Ok((SDY, name.to_string()));
            }
        }
        Ok((VHLO, convert::to_vhlo(op, self.enc.target)?.name.to_string()))
    }

    fn define(&mut self, id: u32, builtin: bool) {
        let number = self.scope_len;
        self.scope_len += 1;
        let before = self.values.insert(id, (number, builtin));
        self.undo.push((id, before));
    }

    /// The IR's references to attributes and types in the order MLIR's writer numbers the IR
    /// (see [`numbering_order`]; each block's arguments before its ops).
    fn numbering_refs(&self, module: &ir::Module) -> Vec<Ref> {
        let mut out = Vec::new();
        let add = |out: &mut Vec<Ref>, op: &Op| {
            if let Some(r) = self.op_refs.get(&(op as *const Op as usize)) {
                out.extend(r.iter().cloned());
            }
        };
        for root in &module.ops {
            add(&mut out, root);
            let mut work: Vec<&Region> = root.regions.iter().collect();
            while let Some(region) = work.pop() {
                for block in &region.blocks {
                    if let Some(r) = self.arg_refs.get(&(block as *const ir::Block as usize)) {
                        out.extend(r.iter().cloned());
                    }
                    for op in &block.ops {
                        add(&mut out, op);
                    }
                }
                for op in region.blocks.iter().flat_map(|b| &b.ops) {
                    work.extend(op.regions.iter());
                }
            }
        }
        out
    }

    fn op(&mut self, out: &mut Buf, op: &Op, depth: usize) -> R<()> {
        let (dialect, name, properties, discardable) = if op.name == "builtin.module" {
            let mut props = Vec::new();
            let mut rest = Vec::new();
            for (n, a) in &op.attributes {
                match n.as_str() {
                    "sym_name" | "sym_visibility" => props.push((n.clone(), a.clone())),
                    _ => rest.push((n.clone(), a.clone())),
                }
            }
            (BUILTIN, "module".to_string(), props, rest)
        } else if op.name == CAST {
            (BUILTIN, "unrealized_conversion_cast".to_string(), Vec::new(), op.attributes.clone())
        } else if let Some(names) = op.name.strip_prefix("sdy.").and_then(sdy_properties) {
            let (props, rest): (Vec<_>, Vec<_>) =
                op.attributes.iter().cloned().partition(|(n, _)| names.contains(&n.as_str()));
            (SDY, op.name["sdy.".len()..].to_string(), props, rest)
        } else {
            let v = convert::to_vhlo(op, self.enc.target)?;
            let props = v.properties.into_iter().map(|(n, a)| (n.to_string(), a)).collect();
            (VHLO, v.name.to_string(), props, v.discardable)
        };
        let name_index = *self
            .op_index
            .get(&(dialect, name.clone()))
            .ok_or_else(|| WriteError::Unrepresentable { what: format!("the op {}", op.name) })?;
        let loc = self.enc.op_loc(&op.location)?;

        // Inherent attributes: native properties (bytecode 5 on), else in the dictionary.
        let mut dict = discardable;
        let mut props_index = None;
        let mut props_refs = Vec::new();
        // The module op has properties storage: MLIR writes its properties even when both
        // (sym_name, sym_visibility) are absent.
        if !properties.is_empty() || (dialect == BUILTIN && name == "module" && self.version >= V_NATIVE_PROPERTIES) {
            if self.version >= V_NATIVE_PROPERTIES {
                let mut p = Buf::default();
                if dialect == BUILTIN {
                    for n in ["sym_name", "sym_visibility"] {
                        match properties.iter().find(|(k, _)| k == n) {
                            Some((_, a)) => {
                                let i = self.enc.builtin_attr(a)?;
                                p.attr_flag(i, true);
                            }
                            None => varint(&mut p, 0),
                        }
                    }
                } else if dialect == SDY {
                    // ODS's encoding: the inherent attributes sorted by name, each required.
                    let names = op.name.strip_prefix("sdy.").and_then(sdy_properties).unwrap_or(&[]);
                    for n in names {
                        let (_, a) = properties.iter().find(|(k, _)| k == n).ok_or_else(|| {
                            WriteError::Unrepresentable { what: format!("{} without its {n} attribute", op.name) }
                        })?;
                        let i = if *n == "sym_name" { self.enc.builtin_attr(a)? } else { self.enc.vhlo_attr(a)? };
                        p.attr(i);
                    }
                } else {
                    for (n, a) in &properties {
                        let i = if n == "api_version" { self.enc.api_version(a)? } else { self.enc.vhlo_attr(a)? };
                        p.attr(i);
                    }
                }
                props_refs = p.refs().cloned().collect();
                props_index = Some(self.enc.tables.properties(p));
            } else {
                let mut inherent = properties;
                inherent.extend(dict);
                dict = inherent;
                // One dictionary, sorted by name as MLIR keeps it (JAX 0.4.30's bytecode 0).
                dict.sort_by(|a, b| a.0.cmp(&b.0));
            }
        }
        let dict_index = if dict.is_empty() {
            None
        } else if op.name == "builtin.module" {
            Some(self.enc.module_attributes(&dict)?)
        } else {
            Some(self.enc.op_attributes(&dict, op.name == "stablehlo.custom_call")?)
        };
        let mut result_types = Vec::with_capacity(op.results.len());
        for r in &op.results {
            let builtin = self.values.get(&r.id).is_some_and(|v| v.1);
            result_types.push(if builtin { self.enc.builtin_type(&r.ty)? } else { self.enc.vhlo_type(&r.ty)? });
        }
        let mut operands = Vec::with_capacity(op.operands.len());
        for id in &op.operands {
            let n = self.values.get(id).ok_or_else(|| WriteError::Unrepresentable {
                what: format!("operand %{id} of {}, not defined where it is used", op.name),
            })?;
            operands.push(n.0);
        }

        let mut mask = 0u8;
        for (flag, set) in [
            (HAS_ATTRS, dict_index.is_some()),
            (HAS_RESULTS, !result_types.is_empty()),
            (HAS_OPERANDS, !operands.is_empty()),
            (HAS_SUCCESSORS, !op.successors.is_empty()),
            (HAS_INLINE_REGIONS, !op.regions.is_empty()),
            (HAS_PROPERTIES, props_index.is_some()),
        ] {
            if set {
                mask |= flag;
            }
        }
        let mut refs: Vec<Ref> = result_types.iter().map(|&t| Ref::Type(t)).collect();
        refs.extend(dict_index.map(Ref::Attr));
        refs.extend(props_refs);
        refs.push(Ref::Attr(loc));
        self.op_refs.insert(op as *const Op as usize, refs);
        varint(out, name_index);
        let mask_at = out.len();
        out.push(mask);
        out.attr(loc);
        if let Some(d) = dict_index {
            out.attr(d);
        }
        if let Some(p) = props_index {
            varint(out, p);
        }
        if !result_types.is_empty() {
            varint(out, result_types.len() as u64);
            for &t in &result_types {
                out.ty(t);
            }
        }
        if !operands.is_empty() {
            varint(out, operands.len() as u64);
            for &x in &operands {
                varint(out, x);
            }
        }
        if !op.successors.is_empty() {
            varint(out, op.successors.len() as u64);
            for &s in &op.successors {
                varint(out, u64::from(s));
            }
        }
        if self.version >= V_USE_LIST_ORDERING && self.use_lists.write_op(out, op) {
            out[mask_at] |= HAS_USE_LIST_ORDERS;
        }
        if op.regions.is_empty() {
            return Ok(());
        }
        if depth + 1 > MAX_REGION_DEPTH {
            return Err(WriteError::Unrepresentable { what: format!("regions nested deeper than {MAX_REGION_DEPTH}") });
        }
        // MLIR's writer numbers the values of an op's regions afresh (and loads them lazily)
        // when they use no value from outside the op; the reader numbers them as written.
        let isolated = op.name == "builtin.module" || !uses_values_from_above(op);
        varint_flag(out, op.regions.len() as u64, isolated);
        if !isolated {
            for r in &op.regions {
                self.region(out, r, depth + 1, dialect == SDY)?;
            }
            return Ok(());
        }
        let values = std::mem::take(&mut self.values);
        let undo = std::mem::take(&mut self.undo);
        let scope_len = std::mem::replace(&mut self.scope_len, 0);
        let mut inner = Buf::default();
        let mut result = Ok(());
        for r in &op.regions {
            result = self.region(&mut inner, r, depth + 1, dialect == SDY);
            if result.is_err() {
                break;
            }
        }
        self.values = values;
        self.undo = undo;
        self.scope_len = scope_len;
        result?;
        if self.version >= V_LAZY_LOADING {
            out.section(SECTION_IR, inner);
        } else {
            out.append(inner);
        }
        Ok(())
    }

    /// `in_sdy`: the region is a Shardy op's, whose block arguments have builtin types.
    fn region(&mut self, out: &mut Buf, region: &Region, depth: usize, in_sdy: bool) -> R<()> {
        varint(out, region.blocks.len() as u64);
        if region.blocks.is_empty() {
            return Ok(());
        }
        // Every value of the region is numbered before any op is written: an operand may
        // name a value defined later (another block).
        let start = self.scope_len;
        let mark = self.undo.len();
        for block in &region.blocks {
            for a in &block.args {
                self.define(a.id, in_sdy);
            }
            for op in &block.ops {
                // Shardy's ops have builtin types; VHLO casts its values to them and back.
                let builtin = if op.name == CAST {
                    !op.operands.first().and_then(|o| self.values.get(o)).is_some_and(|v| v.1)
                } else {
                    op.name.starts_with("sdy.")
                };
                for r in &op.results {
                    self.define(r.id, builtin);
                }
            }
        }
        varint(out, self.scope_len - start);
        let mut result = Ok(());
        for block in &region.blocks {
            result = self.block(out, block, depth);
            if result.is_err() {
                break;
            }
        }
        while self.undo.len() > mark {
            if let Some((id, before)) = self.undo.pop() {
                match before {
                    Some(n) => self.values.insert(id, n),
                    None => self.values.remove(&id),
                };
            }
        }
        self.scope_len = start;
        result
    }

    fn block(&mut self, out: &mut Buf, block: &ir::Block, depth: usize) -> R<()> {
        varint_flag(out, block.ops.len() as u64, !block.args.is_empty());
        if !block.args.is_empty() {
            varint(out, block.args.len() as u64);
            let mut refs = Vec::with_capacity(2 * block.args.len());
            for (i, a) in block.args.iter().enumerate() {
                let builtin = self.values.get(&a.id).is_some_and(|v| v.1);
                let t = if builtin { self.enc.builtin_type(&a.ty)? } else { self.enc.vhlo_type(&a.ty)? };
                // MLIR's writer numbers an argument's location even where it leaves it out
                // (an unknown one, from bytecode 4 on).
                let location = block.arg_location(i);
                let loc = match block.arg_locations.get(i) {
                    Some(l) => self.enc.op_loc(l)?,
                    None => self.enc.loc(location)?,
                };
                refs.push(Ref::Attr(loc));
                refs.push(Ref::Type(t));
                if self.version >= V_ELIDE_UNKNOWN_BLOCK_ARG_LOC {
                    let known = *location != ir::Location::Unknown;
                    out.ty_flag(t, known);
                    if known {
                        out.attr(loc);
                    }
                } else {
                    out.ty(t);
                    out.attr(loc);
                }
            }
            self.arg_refs.insert(block as *const ir::Block as usize, refs);
            if self.version >= V_USE_LIST_ORDERING {
                let at = out.len();
                out.push(0);
                if self.use_lists.write_block(out, block) {
                    out[at] = HAS_USE_LIST_ORDERS;
                }
            }
        }
        for op in &block.ops {
            self.op(out, op, depth)?;
        }
        Ok(())
    }
}

/// Every op in the order MLIR's bytecode writer first numbers it (which orders its tables): a
/// root op, then the regions of a worklist taken from its back, each region's ops in order
/// before the regions of those ops are pushed (so the last op's regions come first).
fn numbering_order(module: &ir::Module) -> Vec<&Op> {
    let mut out = Vec::new();
    for root in &module.ops {
        out.push(root);
        let mut work: Vec<&Region> = root.regions.iter().collect();
        while let Some(region) = work.pop() {
            for op in region.blocks.iter().flat_map(|b| &b.ops) {
                out.push(op);
            }
            for op in region.blocks.iter().flat_map(|b| &b.ops) {
                work.extend(op.regions.iter());
            }
        }
    }
    out
}

/// The inherent attributes of the Shardy ops this writer writes, sorted by name.
fn sdy_properties(op: &str) -> Option<&'static [&'static str]> {
    Some(match op {
        "mesh" => &["mesh", "sym_name"],
        "sharding_constraint" | "reshard" => &["sharding"],
        "manual_computation" => &["in_shardings", "manual_axes", "out_shardings"],
        "return" => &[],
        _ => return None,
    })
}

/// A dictionary's entries in the order MLIR's builtin dictionary holds them: by name.
fn sorted_by_name(attrs: &[(String, Attr)]) -> Vec<&(String, Attr)> {
    let mut sorted: Vec<&(String, Attr)> = attrs.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    sorted
}

/// Whether an op in `op`'s regions uses a value not defined in them.
fn uses_values_from_above(op: &Op) -> bool {
    let mut defined = std::collections::HashSet::new();
    let mut stack: Vec<&Op> = Vec::new();
    fn push_regions<'o>(op: &'o Op, stack: &mut Vec<&'o Op>, defined: &mut std::collections::HashSet<u32>) {
        for r in &op.regions {
            for b in &r.blocks {
                defined.extend(b.args.iter().map(|a| a.id));
                for inner in &b.ops {
                    defined.extend(inner.results.iter().map(|v| v.id));
                    stack.push(inner);
                }
            }
        }
    }
    push_regions(op, &mut stack, &mut defined);
    let mut used = Vec::new();
    while let Some(inner) = stack.pop() {
        used.extend(inner.operands.iter().copied());
        push_regions(inner, &mut stack, &mut defined);
    }
    used.iter().any(|id| !defined.contains(id))
}

impl Encoder {
    /// An op's discardable attributes: a builtin dictionary (as MLIR requires) of VHLO values.
    /// (`custom_call`: the op is one, whose `api_version` is VHLO's enum, as in its properties.)
    fn op_attributes(&mut self, attrs: &[(String, Attr)], custom_call: bool) -> R<u64> {
        let mut refs = Vec::with_capacity(attrs.len());
        for (n, a) in sorted_by_name(attrs) {
            let key = self.builtin_string(n.as_bytes());
            let value = if custom_call && n == "api_version" { self.api_version(a)? } else { self.vhlo_attr(a)? };
            refs.push((key, value));
        }
        let mut b = Buf::default();
        varint(&mut b, 1);
        varint(&mut b, refs.len() as u64);
        for (k, v) in refs {
            b.attr(k);
            b.attr(v);
        }
        Ok(self.tables.attrs.add(container::Entry { dialect: BUILTIN, custom: true, bytes: b }))
    }

    /// The module's attributes: a builtin dictionary of builtin values (see `builtin.rs`).
    fn module_attributes(&mut self, attrs: &[(String, Attr)]) -> R<u64> {
        self.module_attr(&Attr::Dict(sorted_by_name(attrs).into_iter().cloned().collect()))
    }

    /// custom_call's `api_version`: VHLO's enum of its own.
    fn api_version(&mut self, a: &Attr) -> R<u64> {
        match a {
            Attr::Integer { value, .. } if (0..=4).contains(value) => {
                let mut b = Buf::default();
                varint(&mut b, 5);
                varint(&mut b, *value as u64);
                Ok(self.tables.attrs.add(container::Entry { dialect: VHLO, custom: true, bytes: b }))
            }
            _ => Err(WriteError::Unrepresentable { what: "a custom_call api_version other than 0 to 4".to_string() }),
        }
    }
}
