//! The IR section: ops, regions, blocks and value numbering, with VHLO ops mapped to
//! StableHLO as they are read.

use crate::bytecode::{
    Container, Cursor, Limits, SECTION_IR, V_ELIDE_UNKNOWN_BLOCK_ARG_LOC, V_LAZY_LOADING, V_NATIVE_PROPERTIES,
    V_USE_LIST_ORDERING,
};
use crate::decode::Decoder;
use crate::error::{Error, Result};
use std::sync::Arc;

use crate::ir::{Attr, Block, Location, Module, Op, Region, Value};
use crate::vhlo;

use crate::bytecode::{
    HAS_ATTRS, HAS_INLINE_REGIONS, HAS_OPERANDS, HAS_PROPERTIES, HAS_RESULTS, HAS_SUCCESSORS, HAS_USE_LIST_ORDERS,
};

/// Value numbering within one isolated-from-above scope: how many values are reserved by the
/// regions being read.
struct Scope {
    len: u64,
}

/// Where a region's values go: its first and one-past-last number, and the next to define.
struct RegionValues {
    next: u64,
    end: u64,
    defines: bool,
}

pub(crate) struct Reader<'a> {
    d: Decoder<'a>,
    max_depth: usize,
    /// The function whose entry block's argument locations are recorded apart (what
    /// [`argument_locations`] asks for; every block keeps its own too).
    args_of: Option<&'a str>,
    /// Set while the regions of that function are about to be read.
    recording: bool,
    /// Its entry block's argument locations, once read.
    arg_locations: Option<Vec<Arc<Location>>>,
}

/// Reads a whole artifact.
pub(crate) fn read(file: &[u8], limits: &Limits) -> Result<Module> {
    read_keeping_arguments(file, limits, None).map(|(module, _)| module)
}

/// Reads a whole artifact, and the locations of the arguments of function `function`'s entry
/// block (`None` when the module has no such function with a body).
pub(crate) fn argument_locations(file: &[u8], limits: &Limits, function: &str) -> Result<Option<Vec<Arc<Location>>>> {
    read_keeping_arguments(file, limits, Some(function)).map(|(_, locations)| locations)
}

fn read_keeping_arguments<'a>(
    file: &'a [u8],
    limits: &Limits,
    args_of: Option<&'a str>,
) -> Result<(Module, Option<Vec<Arc<Location>>>)> {
    let c = Container::parse(file, limits)?;
    let producer = c.producer.clone();
    read_container(c, limits, args_of).map_err(|e| e.for_producer(&producer))
}

fn read_container<'a>(
    c: Container<'a>,
    limits: &Limits,
    args_of: Option<&'a str>,
) -> Result<(Module, Option<Vec<Arc<Location>>>)> {
    let has = |d: &str| c.dialects.contains(&d);
    if !has("vhlo") && (has("stablehlo") || has("chlo")) {
        return Err(Error::unsupported(
            0,
            "StableHLO-dialect bytecode (what MLIR's write_bytecode writes), not a portable artifact: \
             its encoding is tied to the StableHLO build that wrote it; serialize the module with \
             stablehlo.serialize_portable_artifact (jax.export does)",
        ));
    }
    let version = c.version;
    let producer = c.producer.clone();
    let mut ir = c.ir;
    let mut r = Reader {
        d: Decoder::new(c, limits),
        max_depth: limits.max_region_depth,
        args_of,
        recording: false,
        arg_locations: None,
    };
    // The IR section is one block without arguments; its ops define no values.
    let (num_ops, has_args) = ir.varint_flag()?;
    if has_args {
        return Err(ir.err("the top-level block has arguments"));
    }
    if num_ops > ir.remaining() as u64 {
        return Err(ir.err(format!("{num_ops} top-level ops in {} bytes", ir.remaining())));
    }
    let mut scope = Scope { len: 0 };
    let mut vals = RegionValues { next: 0, end: 0, defines: false };
    let mut ops = Vec::with_capacity(num_ops as usize);
    for _ in 0..num_ops {
        ops.push(r.op(&mut ir, &mut scope, &mut vals, 0, None)?);
    }
    if !ir.is_empty() {
        return Err(ir.err("trailing bytes after the top-level ops"));
    }
    Ok((Module { bytecode_version: version, producer, ops }, r.arg_locations))
}

impl<'a> Reader<'a> {
    fn version(&self) -> u64 {
        self.d.c.version
    }

    fn define(&self, c: &Cursor<'a>, vals: &mut RegionValues, ty: crate::ir::Type) -> Result<Value> {
        if !vals.defines {
            return Ok(Value { id: 0, ty });
        }
        if vals.next >= vals.end {
            return Err(c.err("more values defined than the region declared"));
        }
        let id = vals.next as u32;
        vals.next += 1;
        Ok(Value { id, ty })
    }

    fn use_list(c: &mut Cursor<'a>, range: u64) -> Result<()> {
        let n = if range > 1 { c.count(1)? as u64 } else { 1 };
        for _ in 0..n {
            if range > 1 {
                c.varint()?;
            }
            let (k, _pairs) = c.varint_flag()?;
            if k > c.remaining() as u64 {
                return Err(c.err("a use-list order longer than the bytes left"));
            }
            for _ in 0..k {
                c.varint()?;
            }
        }
        Ok(())
    }

    /// One op and (recursively, to `max_region_depth`) its regions.
    fn op(
        &mut self,
        c: &mut Cursor<'a>,
        scope: &mut Scope,
        vals: &mut RegionValues,
        depth: usize,
        parent: Option<&str>,
    ) -> Result<Op> {
        let op_at = c.offset();
        let name_i = c.varint()?;
        let (dialect_i, opname, registered) = {
            let n = self
                .d
                .c
                .op_names
                .get(name_i as usize)
                .ok_or_else(|| Error::malformed(op_at, format!("op name index {name_i} out of range")))?;
            (n.dialect, n.name, n.registered)
        };
        let dialect = self.d.c.dialects[dialect_i];
        let mask = c.byte()?;
        let location = self.d.loc_ref(c)?;
        let mut discardable = Vec::new();
        if mask & HAS_ATTRS != 0 {
            let at = c.offset();
            match self.d.attr_ref(c)? {
                Attr::Dict(d) => discardable = d,
                _ => return Err(Error::malformed(at, "an op's attributes are not a dictionary")),
            }
        }
        let mut props: Vec<(String, Attr)> = Vec::new();
        if mask & HAS_PROPERTIES != 0 {
            let at = c.offset();
            match registered {
                None => return Err(Error::malformed(at, "properties on an op name without the registered flag")),
                Some(false) => match self.d.attr_ref(c)? {
                    Attr::Dict(d) => props = d,
                    _ => return Err(Error::malformed(at, "an unregistered op's properties are not a dictionary")),
                },
                Some(true) => {
                    let i = c.varint()?;
                    let mut p = *self
                        .d
                        .c
                        .properties
                        .get(i as usize)
                        .ok_or_else(|| Error::malformed(at, format!("properties index {i} out of range")))?;
                    props = self
                        .properties(&mut p, dialect, opname, at)
                        .map_err(|e| within_op(e, "the properties of ", dialect, opname))?;
                    if !p.is_empty() {
                        return Err(p.err(format!("trailing bytes in the properties of {dialect}.{opname}")));
                    }
                }
            }
        }
        let mut result_types = Vec::new();
        if mask & HAS_RESULTS != 0 {
            let n = c.count(1)?;
            result_types.reserve(n);
            for _ in 0..n {
                result_types.push(self.d.type_ref(c)?);
            }
        }
        let mut operands = Vec::new();
        if mask & HAS_OPERANDS != 0 {
            let n = c.count(1)?;
            operands.reserve(n);
            for _ in 0..n {
                let at = c.offset();
                let v = c.varint()?;
                if v >= scope.len {
                    return Err(Error::malformed(
                        at,
                        format!("operand value {v} out of range ({} values in scope)", scope.len),
                    ));
                }
                operands.push(v as u32);
            }
        }
        let mut successors = Vec::new();
        if mask & HAS_SUCCESSORS != 0 {
            let n = c.count(1)?;
            for _ in 0..n {
                successors.push(c.varint()?.min(u64::from(u32::MAX)) as u32);
            }
        }
        if self.version() >= V_USE_LIST_ORDERING && mask & HAS_USE_LIST_ORDERS != 0 {
            Self::use_list(c, result_types.len() as u64)?;
        }
        let mut num_regions = 0;
        let mut isolated = false;
        if mask & HAS_INLINE_REGIONS != 0 {
            let (n, iso) = c.varint_flag()?;
            if n > c.remaining() as u64 {
                return Err(c.err(format!("{n} regions in {} bytes", c.remaining())));
            }
            num_regions = n as usize;
            isolated = iso;
        }
        let mut results = Vec::with_capacity(result_types.len());
        for ty in result_types {
            results.push(self.define(c, vals, ty)?);
        }
        if dialect == "vhlo" && self.version() < V_NATIVE_PROPERTIES {
            // Before bytecode version 5 (StableHLO < 0.15.0) an op has no properties: its
            // inherent attributes are in its attribute dictionary, by name.
            (props, discardable) = vhlo::split_inherent(opname, discardable, op_at)?;
        }
        let (name, attributes) = match dialect {
            "vhlo" => vhlo::legalize(opname, props, discardable, parent, op_at)
                .map_err(|e| within_op(e, "", "vhlo", opname))?,
            _ => {
                let mut a = props;
                a.extend(discardable);
                (format!("{dialect}.{opname}"), a)
            }
        };
        let mut regions = Vec::with_capacity(num_regions);
        if num_regions > 0 && self.arg_locations.is_none() && name == "func.func" {
            let sym_name = attributes.iter().find(|(n, _)| n == "sym_name").map(|(_, a)| a);
            self.recording = matches!((sym_name, self.args_of), (Some(Attr::String(s)), Some(f)) if s == f.as_bytes());
        }
        if num_regions > 0 {
            if depth + 1 > self.max_depth {
                return Err(Error::limit(
                    op_at,
                    format!("regions nested deeper than max_region_depth {}", self.max_depth),
                ));
            }
            if isolated {
                let mut inner_scope = Scope { len: 0 };
                if self.version() >= V_LAZY_LOADING {
                    let at = c.offset();
                    let (id, mut section) = c.section()?;
                    if id != SECTION_IR {
                        return Err(Error::malformed(at, "an isolated region is not an IR section"));
                    }
                    for _ in 0..num_regions {
                        regions.push(self.region(&mut section, &mut inner_scope, depth + 1, &name)?);
                    }
                    if !section.is_empty() {
                        return Err(section.err("trailing bytes in a region section"));
                    }
                } else {
                    for _ in 0..num_regions {
                        regions.push(self.region(c, &mut inner_scope, depth + 1, &name)?);
                    }
                }
            } else {
                for _ in 0..num_regions {
                    regions.push(self.region(c, scope, depth + 1, &name)?);
                }
            }
        }
        self.recording = false;
        Ok(Op { name, operands, results, attributes, regions, successors, location })
    }

    fn properties(
        &mut self,
        p: &mut Cursor<'a>,
        dialect: &str,
        opname: &str,
        at: usize,
    ) -> Result<Vec<(String, Attr)>> {
        match dialect {
            "vhlo" => {
                let names = vhlo::property_names(opname)
                    .ok_or_else(|| Error::unsupported(at, format!("VHLO op {opname} (not one this reader knows)")))?;
                let mut out = Vec::with_capacity(names.len());
                for n in names {
                    out.push((n.to_string(), self.d.attr_ref(p)?));
                }
                Ok(out)
            }
            "builtin" if opname == "module" => {
                let mut out = Vec::new();
                for n in ["sym_name", "sym_visibility"] {
                    let (i, present) = p.varint_flag()?;
                    if present {
                        let a = match self.d.val(p.offset(), i)? {
                            crate::decode::Val::Attr(a) => a,
                            crate::decode::Val::Loc(_) => return Err(p.err("a location as a module property")),
                        };
                        out.push((n.to_string(), a));
                    }
                }
                Ok(out)
            }
            _ => {
                // Other dialects' ops (Shardy's in sharded exports): ODS writes the inherent
                // attributes sorted by name, optional ones with a presence flag.
                let names = other_properties(dialect, opname)
                    .ok_or_else(|| Error::unsupported(at, format!("properties of {dialect}.{opname}")))?;
                let mut out = Vec::with_capacity(names.len());
                for &(n, optional) in names {
                    let pat = p.offset();
                    let (i, present) = if optional { p.varint_flag()? } else { (p.varint()?, true) };
                    if present {
                        match self.d.val(pat, i)? {
                            crate::decode::Val::Attr(a) => out.push((n.to_string(), a)),
                            crate::decode::Val::Loc(_) => {
                                return Err(Error::malformed(pat, "a location as a property"))
                            }
                        }
                    }
                }
                Ok(out)
            }
        }
    }

    #[allow(clippy::too_many_lines)]
    fn region(&mut self, c: &mut Cursor<'a>, scope: &mut Scope, depth: usize, parent: &str) -> Result<Region> {
        let num_blocks = c.count(1)?;
        if num_blocks == 0 {
            return Ok(Region::default());
        }
        let at = c.offset();
        let num_values = c.varint()?;
        if num_values > c.remaining() as u64 {
            return Err(Error::malformed(at, format!("{num_values} values in a region of {} bytes", c.remaining())));
        }
        let start = scope.len;
        scope.len += num_values;
        if scope.len > u64::from(u32::MAX) {
            return Err(Error::limit(at, "more than 2^32 values in one scope"));
        }
        let mut vals = RegionValues { next: start, end: scope.len, defines: num_values > 0 };
        let mut blocks = Vec::with_capacity(num_blocks);
        // The entry block of the function asked for: its arguments' locations are kept.
        let mut record = std::mem::take(&mut self.recording).then(Vec::new);
        for _ in 0..num_blocks {
            let (num_ops, has_args) = c.varint_flag()?;
            if num_ops > c.remaining() as u64 {
                return Err(c.err(format!("{num_ops} ops in {} bytes", c.remaining())));
            }
            let mut block = Block::default();
            if has_args {
                let n = c.count(1)?;
                let mut locations = Vec::with_capacity(n);
                for _ in 0..n {
                    let (ty, location) = if self.version() >= V_ELIDE_UNKNOWN_BLOCK_ARG_LOC {
                        let at = c.offset();
                        let (t, has_loc) = c.varint_flag()?;
                        let ty = self.d.ty(at, t)?;
                        let location = if has_loc { self.d.loc_ref(c)? } else { Arc::new(Location::Unknown) };
                        (ty, location)
                    } else {
                        let ty = self.d.type_ref(c)?;
                        (ty, self.d.loc_ref(c)?)
                    };
                    if let Some(record) = record.as_mut() {
                        record.push(location.clone());
                    }
                    locations.push(location);
                    if vals.next >= vals.end {
                        return Err(c.err("more block arguments than the region's values"));
                    }
                    block.args.push(Value { id: vals.next as u32, ty });
                    vals.next += 1;
                }
                if self.version() >= V_USE_LIST_ORDERING && c.byte()? != 0 {
                    Self::use_list(c, n as u64)?;
                }
                block.arg_locations = Block::arg_locations_of(locations);
            }
            if let Some(record) = record.take() {
                self.arg_locations = Some(record);
            }
            block.ops.reserve(num_ops as usize);
            for _ in 0..num_ops {
                let op = self.op(c, scope, &mut vals, depth, Some(parent))?;
                block.ops.push(op);
            }
            blocks.push(block);
        }
        scope.len = start;
        Ok(Region { blocks })
    }
}

/// The inherent attributes (name, optional) of ops outside VHLO that portable artifacts carry.
fn other_properties(dialect: &str, op: &str) -> Option<&'static [(&'static str, bool)]> {
    Some(match (dialect, op) {
        ("sdy", "mesh") => &[("mesh", false), ("sym_name", false)],
        ("sdy", "sharding_constraint" | "reshard") => &[("sharding", false)],
        ("sdy", "manual_computation") => &[("in_shardings", false), ("manual_axes", false), ("out_shardings", false)],
        ("sdy", "sharding_group") => &[("group_id", false)],
        ("sdy", "constant") => &[("value", false)],
        ("sdy", "return") => &[],
        ("func", "func") => &[
            ("arg_attrs", true),
            ("function_type", false),
            ("no_inline", true),
            ("res_attrs", true),
            ("sym_name", false),
            ("sym_visibility", true),
        ],
        ("func", "call") => &[("arg_attrs", true), ("callee", false), ("no_inline", true), ("res_attrs", true)],
        _ => return None,
    })
}

/// `e` with the op it happened in added (out of line: `Reader::op` recurses, and its frame
/// bounds the nesting the stack holds).
#[cold]
#[inline(never)]
fn within_op(e: Error, what: &str, dialect: &str, op: &str) -> Error {
    e.within(&format!("{what}{dialect}.{op}"))
}
