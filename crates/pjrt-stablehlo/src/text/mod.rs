//! A parser of MLIR text into the [`crate::ir`]: the generic op form (what [`crate::print()`]
//! writes), the custom forms of the ops JAX prints (`stablehlo`, `chlo`, `func`, `sdy`),
//! attributes, types, locations and `#alias` tables.
//!
//! It reads characters, not a token stream: MLIR's grammar lexes differently in places
//! (`tensor<2x?xf32>` is one dimension list, `%0#1` a result of a group), so each rule reads
//! what it needs from the cursor. Nesting (regions, attributes, types) is bounded by
//! [`crate::Limits::max_region_depth`], so hostile text gives an error, not a stack overflow.

mod attrs;
mod custom;
mod float;
mod ops;
mod types;

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::ir::{Attr, Location, Module, Region, Type};
use crate::Limits;

/// Parses MLIR text (a `module`, or ops that become the body of one).
pub(crate) fn parse(text: &str, limits: &Limits) -> Result<Module> {
    let mut p = Parser::new(text, limits);
    let ops = p.top_level()?;
    Ok(Module { bytecode_version: 0, producer: String::new(), ops })
}

/// Parses one attribute value (`1 : i32`, `"text"`, `#sdy.sharding<@mesh, [{"x"}]>`): the
/// whole text, nothing after it.
pub(crate) fn parse_attribute(text: &str, limits: &Limits) -> Result<Attr> {
    let mut p = Parser::new(text, limits);
    let a = p.attr()?;
    if p.peek().is_some() {
        return Err(p.expected("the end of the attribute"));
    }
    Ok(a)
}

/// What the op forms share (the ops and custom-form parsers sit above this module).
/// The ops whose regions cannot see the values around them (values are numbered from 0
/// again inside, as bytecode numbers them).
pub(crate) fn is_isolated(name: &str) -> bool {
    matches!(name, "builtin.module" | "func.func")
}

/// A block argument as the text declares it.
pub(crate) struct ArgDecl {
    pub(crate) name: String,
    pub(crate) at: usize,
    pub(crate) ty: Type,
    /// Its location, where the text gives one.
    pub(crate) loc: Option<Arc<Location>>,
}

/// An op's parts as its form gives them (the caller names the results).
pub(crate) struct Parts {
    pub(crate) name: String,
    pub(crate) operands: Vec<(u32, Type)>,
    pub(crate) results: Vec<Type>,
    pub(crate) attributes: Vec<(String, Attr)>,
    pub(crate) regions: Vec<Region>,
}

impl Parts {
    pub(crate) fn new(name: impl Into<String>) -> Parts {
        Parts { name: name.into(), operands: vec![], results: vec![], attributes: vec![], regions: vec![] }
    }

    pub(crate) fn attr(&mut self, name: &str, a: Attr) {
        self.attributes.push((name.to_string(), a));
    }
}

/// A named group of values (`%0:2` defines two under the name `0`).
type Group = Vec<crate::ir::Value>;

/// The values one region can see: its own, and (unless the op above it is isolated) those of
/// the regions around it.
struct Frame {
    names: HashMap<String, Group>,
    isolated: bool,
}

pub(crate) struct Parser<'t> {
    src: &'t str,
    pos: usize,
    /// Attribute and type nesting, and its limit.
    depth: usize,
    max_depth: usize,
    /// Region nesting, and its limit.
    region_depth: usize,
    max_region_depth: usize,
    /// Value scopes, innermost last.
    frames: Vec<Frame>,
    /// The next value number of each isolated scope, innermost last.
    counters: Vec<u32>,
    /// `#name = attr` and `!name = type` definitions seen so far.
    attr_aliases: HashMap<String, Attr>,
    type_aliases: HashMap<String, Type>,
    /// `#loc` aliases: defined anywhere at top level (JAX writes them after the module), so
    /// ops point at them by name until the end.
    loc_aliases: HashMap<String, Arc<Location>>,
}

/// Bytes that may follow the first of a bare identifier.
fn is_id_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'.')
}

/// Bytes of a suffix identifier (`%arg0`, `%0`, `^bb1`, `#loc3`).
fn is_suffix_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'.' | b'-')
}

impl<'t> Parser<'t> {
    fn new(src: &'t str, limits: &Limits) -> Parser<'t> {
        Parser {
            src,
            pos: 0,
            depth: 0,
            max_depth: limits.max_attr_depth,
            region_depth: 0,
            max_region_depth: limits.max_region_depth,
            frames: vec![Frame { names: HashMap::new(), isolated: true }],
            counters: vec![0],
            attr_aliases: HashMap::new(),
            type_aliases: HashMap::new(),
            loc_aliases: HashMap::new(),
        }
    }

    // ---- errors -------------------------------------------------------------------------

    /// An error at byte `at`, with its line and column.
    pub(crate) fn error_at(&self, at: usize, what: impl Into<String>) -> Error {
        let at = at.min(self.src.len());
        let before = &self.src.as_bytes()[..at];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let column = String::from_utf8_lossy(&before[line_start..]).chars().count() + 1;
        Error::Syntax { line, column, offset: at, what: what.into() }
    }

    /// "expected X, found Y" at the cursor.
    pub(crate) fn expected(&mut self, what: &str) -> Error {
        self.ws();
        let found = self.found();
        self.error_at(self.pos, format!("expected {what}, found {found}"))
    }

    /// A short quote of the text at the cursor.
    fn found(&self) -> String {
        let rest = &self.src[self.pos..];
        match rest.chars().next() {
            None => "the end of the text".to_string(),
            Some(_) => {
                let word: String = rest.chars().take_while(|c| !c.is_whitespace()).take(24).collect();
                let word = if word.is_empty() { rest.chars().take(1).collect() } else { word };
                format!("`{word}`")
            }
        }
    }

    /// Enters one level of attribute or type nesting.
    pub(crate) fn enter(&mut self) -> Result<()> {
        self.depth += 1;
        if self.depth > self.max_depth {
            return Err(self.error_at(
                self.pos,
                format!(
                    "attributes or types nested deeper than max_attr_depth {} (pjrt_stablehlo::Limits)",
                    self.max_depth
                ),
            ));
        }
        Ok(())
    }

    pub(crate) fn leave(&mut self) {
        self.depth -= 1;
    }

    /// Enters a region.
    pub(crate) fn enter_region(&mut self) -> Result<()> {
        self.region_depth += 1;
        if self.region_depth > self.max_region_depth {
            return Err(self.error_at(
                self.pos,
                format!(
                    "regions nested deeper than max_region_depth {} (pjrt_stablehlo::Limits)",
                    self.max_region_depth
                ),
            ));
        }
        Ok(())
    }

    pub(crate) fn leave_region(&mut self) {
        self.region_depth -= 1;
    }

    // ---- characters -----------------------------------------------------------------------

    fn bytes(&self) -> &'t [u8] {
        self.src.as_bytes()
    }

    /// Skips white space and `//` comments.
    pub(crate) fn ws(&mut self) {
        let b = self.bytes();
        loop {
            while self.pos < b.len() && b[self.pos].is_ascii_whitespace() {
                self.pos += 1;
            }
            if b[self.pos..].starts_with(b"//") {
                while self.pos < b.len() && b[self.pos] != b'\n' {
                    self.pos += 1;
                }
            } else {
                return;
            }
        }
    }

    /// The next byte after white space.
    pub(crate) fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.bytes().get(self.pos).copied()
    }

    /// Whether the text at the cursor (after white space) starts with `s`.
    pub(crate) fn at(&mut self, s: &str) -> bool {
        self.ws();
        self.src[self.pos..].starts_with(s)
    }

    /// Consumes `s` (punctuation) if it is next.
    pub(crate) fn eat(&mut self, s: &str) -> bool {
        if self.at(s) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    /// Consumes `s` or fails saying so.
    pub(crate) fn expect(&mut self, s: &str) -> Result<()> {
        if self.eat(s) {
            Ok(())
        } else {
            Err(self.expected(&format!("`{s}`")))
        }
    }

    /// Consumes keyword `k` if the next bare identifier is exactly `k`.
    pub(crate) fn eat_keyword(&mut self, k: &str) -> bool {
        self.ws();
        let b = self.bytes();
        let end = self.pos + k.len();
        if self.src[self.pos..].starts_with(k) && !b.get(end).is_some_and(|&c| is_id_char(c)) {
            self.pos = end;
            true
        } else {
            false
        }
    }

    pub(crate) fn expect_keyword(&mut self, k: &str) -> Result<()> {
        if self.eat_keyword(k) {
            Ok(())
        } else {
            Err(self.expected(&format!("`{k}`")))
        }
    }

    /// A bare identifier (`stablehlo.add`, `f32`, `dims`), if one is next.
    pub(crate) fn bare_id(&mut self) -> Option<&'t str> {
        self.ws();
        let b = self.bytes();
        let start = self.pos;
        if !b.get(start).is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_') {
            return None;
        }
        let mut end = start + 1;
        while end < b.len() && is_id_char(b[end]) {
            end += 1;
        }
        self.pos = end;
        Some(&self.src[start..end])
    }

    pub(crate) fn expect_bare_id(&mut self, what: &str) -> Result<&'t str> {
        match self.bare_id() {
            Some(s) => Ok(s),
            None => Err(self.expected(what)),
        }
    }

    /// The identifier after a sigil (`%`, `^`, `#`, `!`, `@` handled apart): digits, or an
    /// identifier with `-` allowed.
    fn suffix_id(&mut self) -> Option<&'t str> {
        let b = self.bytes();
        let start = self.pos;
        let mut end = start;
        while end < b.len() && is_suffix_char(b[end]) {
            end += 1;
        }
        if end == start {
            return None;
        }
        self.pos = end;
        Some(&self.src[start..end])
    }

    /// After a sigil (`#`, `!`) at the cursor: the name that follows it, possibly empty.
    pub(crate) fn sigil_name(&mut self) -> &'t str {
        self.pos += 1;
        self.suffix_id().unwrap_or("")
    }

    /// `%name` (without `#N`), if next.
    pub(crate) fn value_name(&mut self) -> Result<Option<&'t str>> {
        self.ws();
        if self.bytes().get(self.pos) != Some(&b'%') {
            return Ok(None);
        }
        self.pos += 1;
        match self.suffix_id() {
            Some(s) => Ok(Some(s)),
            None => Err(self.expected("a value name after `%`")),
        }
    }

    /// `@name` or `@"name"`, if next.
    pub(crate) fn symbol(&mut self) -> Result<Option<String>> {
        self.ws();
        if self.bytes().get(self.pos) != Some(&b'@') {
            return Ok(None);
        }
        self.pos += 1;
        if self.bytes().get(self.pos) == Some(&b'"') {
            let s = self.string()?;
            return Ok(Some(String::from_utf8_lossy(&s).into_owned()));
        }
        match self.suffix_id() {
            Some(s) => Ok(Some(s.to_string())),
            None => Err(self.expected("a symbol name after `@`")),
        }
    }

    pub(crate) fn expect_symbol(&mut self) -> Result<String> {
        match self.symbol()? {
            Some(s) => Ok(s),
            None => Err(self.expected("a symbol (`@name`)")),
        }
    }

    /// A string literal: its bytes (escapes `\"`, `\\`, `\n`, `\t` and `\XX` in hex).
    pub(crate) fn string(&mut self) -> Result<Vec<u8>> {
        self.ws();
        let start = self.pos;
        if self.bytes().get(self.pos) != Some(&b'"') {
            return Err(self.expected("a string"));
        }
        self.pos += 1;
        let b = self.bytes();
        let mut out = Vec::new();
        loop {
            let Some(&c) = b.get(self.pos) else {
                return Err(self.error_at(start, "a string that does not end (no closing `\"`)"));
            };
            self.pos += 1;
            match c {
                b'"' => return Ok(out),
                b'\n' => return Err(self.error_at(start, "a string that does not end on its line")),
                b'\\' => {
                    let esc = b.get(self.pos).copied();
                    match esc {
                        Some(b'"') | Some(b'\\') => {
                            out.push(esc.unwrap_or(b'\\'));
                            self.pos += 1;
                        }
                        Some(b'n') => {
                            out.push(b'\n');
                            self.pos += 1;
                        }
                        Some(b't') => {
                            out.push(b'\t');
                            self.pos += 1;
                        }
                        _ => {
                            let hex = |x: Option<&u8>| x.and_then(|c| (*c as char).to_digit(16));
                            match (hex(b.get(self.pos)), hex(b.get(self.pos + 1))) {
                                (Some(h), Some(l)) => {
                                    out.push((h * 16 + l) as u8);
                                    self.pos += 2;
                                }
                                _ => return Err(self.error_at(self.pos - 1, "an unknown escape in a string")),
                            }
                        }
                    }
                }
                c => out.push(c),
            }
        }
    }

    /// An integer literal (decimal or `0x` hex, with an optional `-`): its sign and magnitude.
    pub(crate) fn integer(&mut self) -> Result<Option<(bool, u128)>> {
        self.ws();
        let b = self.bytes();
        let start = self.pos;
        let mut i = start;
        let negative = b.get(i) == Some(&b'-');
        if negative {
            i += 1;
        }
        if !b.get(i).is_some_and(|c| c.is_ascii_digit()) {
            return Ok(None);
        }
        let (radix, digits_at) = if b[i..].starts_with(b"0x") && b.get(i + 2).is_some_and(|c| c.is_ascii_hexdigit()) {
            (16, i + 2)
        } else {
            (10, i)
        };
        let mut end = digits_at;
        while end < b.len() && (b[end] as char).is_digit(radix) {
            end += 1;
        }
        // A float, not an integer.
        if radix == 10 && matches!(b.get(end), Some(b'.') | Some(b'e') | Some(b'E')) {
            return Ok(None);
        }
        let v = u128::from_str_radix(&self.src[digits_at..end], radix)
            .map_err(|_| self.error_at(start, "an integer too large (more than 128 bits)"))?;
        self.pos = end;
        Ok(Some((negative, v)))
    }

    /// A non-negative integer that fits `u64`.
    pub(crate) fn expect_u64(&mut self, what: &str) -> Result<u64> {
        let at = self.pos;
        match self.integer()? {
            Some((false, v)) => u64::try_from(v).map_err(|_| self.error_at(at, format!("{what} is too large"))),
            _ => Err(self.expected(what)),
        }
    }

    /// A signed integer that fits `i64`.
    pub(crate) fn expect_i64(&mut self, what: &str) -> Result<i64> {
        self.ws();
        let at = self.pos;
        match self.integer()? {
            Some((neg, v)) => signed(neg, v).ok_or_else(|| self.error_at(at, format!("{what} does not fit 64 bits"))),
            None => Err(self.expected(what)),
        }
    }

    /// The text of a float literal (`1.5`, `-2.0e+03`, `inf`, `nan`), if one is next (an
    /// integer literal counts: `dense<1> : tensor<f32>`).
    pub(crate) fn float_text(&mut self) -> Option<&'t str> {
        self.ws();
        let b = self.bytes();
        let start = self.pos;
        let mut i = start;
        if matches!(b.get(i), Some(b'-') | Some(b'+')) {
            i += 1;
        }
        for word in ["inf", "nan"] {
            if b[i..].starts_with(word.as_bytes()) && !b.get(i + 3).is_some_and(|&c| is_id_char(c)) {
                self.pos = i + 3;
                return Some(&self.src[start..self.pos]);
            }
        }
        let digits = |i: &mut usize| {
            let s = *i;
            while b.get(*i).is_some_and(|c| c.is_ascii_digit()) {
                *i += 1;
            }
            *i > s
        };
        if !digits(&mut i) {
            return None;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
        if matches!(b.get(i), Some(b'e') | Some(b'E')) {
            let mut j = i + 1;
            if matches!(b.get(j), Some(b'-') | Some(b'+')) {
                j += 1;
            }
            if digits(&mut j) {
                i = j;
            }
        }
        self.pos = i;
        Some(&self.src[start..i])
    }

    /// Skips a balanced `<...>` (quotes and nested brackets respected) and returns its text,
    /// brackets included: the body of an attribute this crate keeps as text.
    pub(crate) fn balanced_angles(&mut self) -> Result<&'t str> {
        self.balanced(b'<')
    }

    /// [`Self::balanced_angles`] for a `<`, `[`, `{` or `(` group.
    pub(crate) fn balanced(&mut self, open: u8) -> Result<&'t str> {
        self.ws();
        let start = self.pos;
        if self.bytes().get(start) != Some(&open) {
            return Err(self.expected(&format!("`{}`", open as char)));
        }
        let b = self.bytes();
        let mut stack: Vec<u8> = Vec::new();
        let mut i = start;
        while i < b.len() {
            let c = b[i];
            match c {
                b'"' => {
                    self.pos = i;
                    self.string()?;
                    i = self.pos;
                    continue;
                }
                b'<' | b'(' | b'[' | b'{' => {
                    stack.push(c);
                    if stack.len() > self.max_depth {
                        return Err(self.error_at(i, format!("brackets nested deeper than {}", self.max_depth)));
                    }
                }
                // `->` of a function type inside the brackets.
                b'>' if i > 0 && b[i - 1] == b'-' => {}
                b'>' | b')' | b']' | b'}' => {
                    let open_of = match c {
                        b'>' => b'<',
                        b')' => b'(',
                        b']' => b'[',
                        _ => b'{',
                    };
                    if stack.pop() != Some(open_of) {
                        return Err(self.error_at(i, format!("an unbalanced `{}`", c as char)));
                    }
                    if stack.is_empty() {
                        self.pos = i + 1;
                        return Ok(&self.src[start..self.pos]);
                    }
                }
                _ => {}
            }
            i += 1;
        }
        Err(self.error_at(start, "a `<` that is never closed"))
    }

    // ---- the file ---------------------------------------------------------------------------

    /// Alias definitions and ops, then the `#loc` aliases put in place.
    fn top_level(&mut self) -> Result<Vec<crate::ir::Op>> {
        let mut ops = Vec::new();
        loop {
            self.ws();
            if self.pos >= self.src.len() {
                break;
            }
            if self.at("{-#") {
                return Err(self.expected("an op (file metadata `{-# ... #-}`, such as dialect resources, is not supported; print the module without elided or external constants)"));
            }
            if self.alias_definition()? {
                continue;
            }
            ops.push(self.op()?);
        }
        // Bare top-level ops (not in a `module`) are the body of an implicit one.
        if !(ops.is_empty() || ops.len() == 1 && ops[0].name == "builtin.module") {
            let body = crate::ir::Block { args: vec![], ops, arg_locations: Vec::new() };
            ops = vec![crate::ir::Op {
                name: "builtin.module".into(),
                operands: vec![],
                results: vec![],
                attributes: vec![],
                regions: vec![crate::ir::Region { blocks: vec![body] }],
                successors: vec![],
                location: Arc::new(Location::Unknown),
            }];
        }
        let aliases = std::mem::take(&mut self.loc_aliases);
        let mut resolved = HashMap::new();
        for op in &mut ops {
            resolve_op(op, &aliases, &mut resolved, self)?;
        }
        Ok(ops)
    }

    /// `#name = attr` (or `= loc(...)`) and `!name = type`.
    fn alias_definition(&mut self) -> Result<bool> {
        self.ws();
        let start = self.pos;
        let sigil = self.bytes().get(self.pos).copied();
        if !matches!(sigil, Some(b'#') | Some(b'!')) {
            return Ok(false);
        }
        let name = self.sigil_name();
        if name.is_empty() {
            self.pos = start;
            return Ok(false);
        }
        if !self.eat("=") {
            self.pos = start;
            return Ok(false);
        }
        if sigil == Some(b'!') {
            let t = self.ty()?;
            self.type_aliases.insert(name.to_string(), t);
        } else if self.at("loc(") {
            let l = self.location()?;
            self.loc_aliases.insert(name.to_string(), l);
        } else {
            let a = self.attr()?;
            self.attr_aliases.insert(name.to_string(), a);
        }
        Ok(true)
    }
}

/// `(negative, magnitude)` as an `i64`, if it fits.
pub(crate) fn signed(negative: bool, v: u128) -> Option<i64> {
    if negative {
        if v <= 1u128 << 63 {
            Some((v as i128).wrapping_neg() as i64)
        } else {
            None
        }
    } else {
        i64::try_from(v).ok()
    }
}

/// Replaces `#loc` references in an op's location (and its regions') with what they name.
fn resolve_op(
    op: &mut crate::ir::Op,
    aliases: &HashMap<String, Arc<Location>>,
    resolved: &mut HashMap<String, Arc<Location>>,
    p: &Parser,
) -> Result<()> {
    let mut stack = vec![op];
    while let Some(op) = stack.pop() {
        op.location = resolve_loc(&op.location, aliases, resolved, p, 0)?;
        for r in &mut op.regions {
            for b in &mut r.blocks {
                for l in &mut b.arg_locations {
                    *l = resolve_loc(l, aliases, resolved, p, 0)?;
                }
                stack.extend(b.ops.iter_mut());
            }
        }
    }
    Ok(())
}

/// A location alias reference is kept as `Opaque("#name")` until the aliases are known.
fn resolve_loc(
    l: &Arc<Location>,
    aliases: &HashMap<String, Arc<Location>>,
    resolved: &mut HashMap<String, Arc<Location>>,
    p: &Parser,
    depth: usize,
) -> Result<Arc<Location>> {
    if depth > p.max_depth {
        return Err(p.error_at(p.src.len(), "location aliases nested too deep (or referring to themselves)"));
    }
    let recurse = |x: &Arc<Location>, resolved: &mut HashMap<String, Arc<Location>>| {
        resolve_loc(x, aliases, resolved, p, depth + 1)
    };
    Ok(match &**l {
        Location::Opaque(s) if s.starts_with('#') => {
            let name = &s[1..];
            if let Some(r) = resolved.get(name) {
                return Ok(r.clone());
            }
            let Some(target) = aliases.get(name) else {
                return Err(p.error_at(p.src.len(), format!("location alias #{name} is used but never defined")));
            };
            let r = recurse(target, resolved)?;
            resolved.insert(name.to_string(), r.clone());
            r
        }
        Location::Name { name, child } => {
            Arc::new(Location::Name { name: name.clone(), child: recurse(child, resolved)? })
        }
        Location::CallSite { callee, caller } => {
            Arc::new(Location::CallSite { callee: recurse(callee, resolved)?, caller: recurse(caller, resolved)? })
        }
        Location::Fused { locations, metadata } => Arc::new(Location::Fused {
            locations: locations.iter().map(|x| recurse(x, resolved)).collect::<Result<_>>()?,
            metadata: metadata.clone(),
        }),
        _ => l.clone(),
    })
}
