//! Ops in the generic form, regions, blocks and the SSA names they define and use.

use std::collections::HashMap;
use std::sync::Arc;

use super::{is_isolated, ArgDecl, Frame, Parser, Parts};
use crate::error::Result;
use crate::ir::{Block, Location, Op, Region, Type, Value};

/// What the text says an op defines before its `=`: each name and how many values it holds.
pub(crate) struct ResultNames {
    pub(crate) names: Vec<(String, usize, usize)>,
}

impl ResultNames {
    pub(crate) fn count(&self) -> usize {
        self.names.iter().map(|(_, n, _)| n).sum()
    }
}

impl Parser<'_> {
    /// A value use: `%name` or `%name#N`, with its number and type.
    pub(crate) fn use_value(&mut self) -> Result<(u32, Type)> {
        self.ws();
        let at = self.pos;
        let Some(name) = self.value_name()? else {
            return Err(self.expected("a value (`%name`)"));
        };
        let mut index = 0usize;
        if self.src.as_bytes().get(self.pos) == Some(&b'#') {
            self.pos += 1;
            index = self.expect_u64("a result number after `#`")? as usize;
        }
        let mut found = None;
        for f in self.frames.iter().rev() {
            if let Some(g) = f.names.get(name) {
                found = Some(g);
                break;
            }
            if f.isolated {
                break;
            }
        }
        match found {
            Some(g) => match g.get(index) {
                Some(v) => Ok((v.id, v.ty.clone())),
                None => Err(self.error_at(at, format!("%{name} has {} values, not #{index}", g.len()))),
            },
            None => Err(self.error_at(at, format!("use of undefined value %{name}"))),
        }
    }

    /// `%a, %b#1, ...` (possibly none) up to `close` (not consumed).
    pub(crate) fn use_list(&mut self, close: &str) -> Result<Vec<(u32, Type)>> {
        let mut v = Vec::new();
        if self.at(close) {
            return Ok(v);
        }
        loop {
            v.push(self.use_value()?);
            if !self.eat(",") {
                break;
            }
        }
        Ok(v)
    }

    /// A new value of type `ty`, numbered in the innermost isolated scope.
    pub(crate) fn new_value(&mut self, ty: Type) -> Value {
        let c = self.counters.last_mut().expect("a scope");
        let id = *c;
        *c = c.saturating_add(1);
        Value { id, ty }
    }

    /// Gives `name` to `values` in the innermost frame.
    pub(crate) fn define(&mut self, at: usize, name: &str, values: Vec<Value>) -> Result<()> {
        for f in self.frames.iter().rev() {
            if f.names.contains_key(name) {
                return Err(self.error_at(at, format!("redefinition of %{name}")));
            }
            if f.isolated {
                break;
            }
        }
        self.frames.last_mut().expect("a frame").names.insert(name.to_string(), values);
        Ok(())
    }

    /// `%a, %b:2 =`, if the op defines values.
    fn result_names(&mut self) -> Result<ResultNames> {
        let mut names = Vec::new();
        if self.peek() != Some(b'%') {
            return Ok(ResultNames { names });
        }
        loop {
            self.ws();
            let at = self.pos;
            let name = self.value_name()?.ok_or_else(|| self.expected("a result name"))?.to_string();
            let n = if self.src.as_bytes().get(self.pos) == Some(&b':') {
                self.pos += 1;
                let n = self.expect_u64("a result count")?;
                usize::try_from(n)
                    .ok()
                    .filter(|n| *n > 0 && *n <= 1 << 20)
                    .ok_or_else(|| self.error_at(at, "a result count out of range"))?
            } else {
                1
            };
            names.push((name, n, at));
            if !self.eat(",") {
                break;
            }
        }
        self.expect("=")?;
        Ok(ResultNames { names })
    }

    /// One op, with its results named and its location.
    pub(crate) fn op(&mut self) -> Result<Op> {
        let results = self.result_names()?;
        self.ws();
        let at = self.pos;
        let Parts { name, operands, results: result_types, attributes, regions } = if self.peek() == Some(b'"') {
            self.generic_op()?
        } else {
            let name = self.expect_bare_id("an op name")?;
            self.custom_op(name, at, results.count())?
        };
        if result_types.len() != results.count() {
            return Err(self.error_at(
                at,
                format!("{name} gives {} results, but {} are named", result_types.len(), results.count()),
            ));
        }
        let location = self.opt_location()?.unwrap_or_else(|| Arc::new(Location::Unknown));
        let values: Vec<Value> = result_types.into_iter().map(|t| self.new_value(t)).collect();
        let mut rest = &values[..];
        for (n, count, at) in &results.names {
            let (group, tail) = rest.split_at(*count);
            self.define(*at, n, group.to_vec())?;
            rest = tail;
        }
        Ok(Op {
            name,
            operands: operands.into_iter().map(|(id, _)| id).collect(),
            results: values,
            attributes,
            regions,
            successors: vec![],
            location,
        })
    }

    /// `"name"(operands) <{properties}> (regions) {attributes} : (types) -> types`.
    fn generic_op(&mut self) -> Result<Parts> {
        let name_at = self.pos;
        let name =
            String::from_utf8(self.string()?).map_err(|_| self.error_at(name_at, "an op name that is not UTF-8"))?;
        self.expect("(")?;
        let operands = self.use_list(")")?;
        self.expect(")")?;
        if self.at("[") {
            return Err(self.expected("`<{`, `(`, `{` or `:` (successor blocks are not supported)"));
        }
        let mut attributes = Vec::new();
        if self.at("<{") {
            self.pos += 1;
            attributes = self.dict()?;
            self.expect(">")?;
        }
        let mut regions = Vec::new();
        if self.at("(") {
            self.pos += 1;
            let isolated = is_isolated(&name);
            loop {
                regions.push(self.region_scoped(isolated, None)?);
                if !self.eat(",") {
                    break;
                }
            }
            self.expect(")")?;
        }
        if self.at("{") {
            attributes.extend(self.dict()?);
        }
        self.expect(":")?;
        let ty_at = self.pos;
        let (inputs, outputs) = self.function_parts()?;
        self.check_operand_types(ty_at, &operands, &inputs)?;
        Ok(Parts { name, operands, results: outputs, attributes, regions })
    }

    /// The types a form states for the operands must be the operands' own.
    pub(crate) fn check_operand_types(&self, at: usize, operands: &[(u32, Type)], types: &[Type]) -> Result<()> {
        if operands.len() != types.len() {
            return Err(self.error_at(at, format!("{} operand types for {} operands", types.len(), operands.len())));
        }
        for (i, ((_, have), said)) in operands.iter().zip(types).enumerate() {
            if have != said {
                return Err(self.error_at(
                    at,
                    format!(
                        "operand {i} is {}, but the type given is {}",
                        crate::type_text(have),
                        crate::type_text(said)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// A region in a scope of its own (isolated: numbered from 0, seeing nothing around it),
    /// with the entry block's arguments given by the op's form when it declares them.
    pub(crate) fn region_scoped(&mut self, isolated: bool, entry: Option<Vec<ArgDecl>>) -> Result<Region> {
        self.frames.push(Frame { names: HashMap::new(), isolated });
        if isolated {
            self.counters.push(0);
        }
        let r = self.region(entry);
        if isolated {
            self.counters.pop();
        }
        self.frames.pop();
        r
    }

    /// `{ ops }` or `{ ^bb0(args): ops ^bb1: ... }`.
    fn region(&mut self, entry: Option<Vec<ArgDecl>>) -> Result<Region> {
        self.enter_region()?;
        self.expect("{")?;
        let mut blocks = Vec::new();
        let mut labels: Vec<String> = Vec::new();
        if let Some(args) = entry {
            let (args, arg_locations) = self.declare_args(args)?;
            let ops = self.block_ops()?;
            blocks.push(Block { args, ops, arg_locations });
            labels.push(String::new());
        } else if !self.at("^") && !self.at("}") {
            let ops = self.block_ops()?;
            blocks.push(Block { args: vec![], ops, arg_locations: Vec::new() });
            labels.push(String::new());
        }
        while self.at("^") {
            self.pos += 1;
            let at = self.pos;
            let label = self.src[self.pos..].bytes().take_while(|&c| super::is_suffix_char(c)).count();
            if label == 0 {
                return Err(self.expected("a block name after `^`"));
            }
            let label = self.src[self.pos..self.pos + label].to_string();
            self.pos += label.len();
            if labels.contains(&label) {
                return Err(self.error_at(at, format!("block ^{label} is defined twice")));
            }
            let mut decls = Vec::new();
            if self.eat("(") && !self.eat(")") {
                loop {
                    self.ws();
                    let at = self.pos;
                    let name = self.value_name()?.ok_or_else(|| self.expected("a block argument"))?.to_string();
                    self.expect(":")?;
                    let ty = self.ty()?;
                    let loc = self.opt_location()?;
                    decls.push(ArgDecl { name, at, ty, loc });
                    if !self.eat(",") {
                        break;
                    }
                }
                self.expect(")")?;
            }
            self.expect(":")?;
            let (args, arg_locations) = self.declare_args(decls)?;
            let ops = self.block_ops()?;
            blocks.push(Block { args, ops, arg_locations });
            labels.push(label);
        }
        self.expect("}")?;
        self.leave_region();
        Ok(Region { blocks })
    }

    /// Defines a block's arguments; with their locations (as [`Block::arg_locations`] holds
    /// them).
    fn declare_args(&mut self, decls: Vec<ArgDecl>) -> Result<(Vec<Value>, Vec<Arc<Location>>)> {
        let mut args = Vec::with_capacity(decls.len());
        let mut locations = Vec::with_capacity(decls.len());
        for d in decls {
            let v = self.new_value(d.ty);
            self.define(d.at, &d.name, vec![v.clone()])?;
            args.push(v);
            locations.push(d.loc.unwrap_or_else(|| Arc::new(Location::Unknown)));
        }
        Ok((args, Block::arg_locations_of(locations)))
    }

    /// Ops up to the next block label or the region's end.
    fn block_ops(&mut self) -> Result<Vec<Op>> {
        let mut ops = Vec::new();
        while !self.at("^") && !self.at("}") {
            if self.pos >= self.src.len() {
                return Err(self.expected("`}` closing a region"));
            }
            ops.push(self.op()?);
        }
        Ok(ops)
    }
}
