//! MLIR's bytecode container (mlir.llvm.org, "MLIR Bytecode Format"): header, sections,
//! string table, dialects and op names, attribute/type offsets, properties, IR.
//!
//! Every read is bounds-checked and every count is checked against the bytes left before
//! anything is allocated for it, so hostile input gives an [`Error`] with the byte offset,
//! never a panic, a huge allocation or a loop that does not end. Nesting (regions, attributes)
//! is limited by [`Limits`].

use crate::error::{Error, Result};

/// The newest bytecode version this reader knows (MLIR's `kVersion` is 6 since 2023; StableHLO
/// writes older ones for old targets). Newer files are [`crate::Error::Unsupported`].
///
/// ```
/// assert_eq!(pjrt_stablehlo::MAX_VERSION, 6);
/// ```
pub const MAX_VERSION: u64 = 6;

/// Version 1 added dialect versions; 2 lazy-loadable isolated regions (as sections); 3 use-list
/// orders; 4 elided unknown block-argument locations; 5 native properties.
pub(crate) const V_DIALECT_VERSIONING: u64 = 1;
pub(crate) const V_LAZY_LOADING: u64 = 2;
pub(crate) const V_USE_LIST_ORDERING: u64 = 3;
pub(crate) const V_ELIDE_UNKNOWN_BLOCK_ARG_LOC: u64 = 4;
pub(crate) const V_NATIVE_PROPERTIES: u64 = 5;

// The section ids, for this reader and the writer (`crate::write`).
pub(crate) const SECTION_STRING: u8 = 0;
pub(crate) const SECTION_DIALECT: u8 = 1;
pub(crate) const SECTION_ATTR_TYPE: u8 = 2;
pub(crate) const SECTION_ATTR_TYPE_OFFSET: u8 = 3;
pub(crate) const SECTION_IR: u8 = 4;
pub(crate) const SECTION_RESOURCE: u8 = 5;
pub(crate) const SECTION_RESOURCE_OFFSET: u8 = 6;
const SECTION_DIALECT_VERSIONS: u8 = 7;
pub(crate) const SECTION_PROPERTIES: u8 = 8;
const NUM_SECTIONS: usize = 9;

// An operation's encoding mask: which parts follow its name (for `crate::read` and the writer).
pub(crate) const HAS_ATTRS: u8 = 0x01;
pub(crate) const HAS_RESULTS: u8 = 0x02;
pub(crate) const HAS_OPERANDS: u8 = 0x04;
pub(crate) const HAS_SUCCESSORS: u8 = 0x08;
pub(crate) const HAS_INLINE_REGIONS: u8 = 0x10;
pub(crate) const HAS_USE_LIST_ORDERS: u8 = 0x20;
pub(crate) const HAS_PROPERTIES: u8 = 0x40;

/// Limits on what the reader accepts, against hostile or damaged files.
///
/// ```
/// let limits = pjrt_stablehlo::Limits { max_region_depth: 16, ..Default::default() };
/// assert!(pjrt_stablehlo::read_bytecode_with(b"ML\xefR", &limits).is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Regions nested in regions (a function's body is depth 2 in a module); default 64.
    pub max_region_depth: usize,
    /// Attributes and types nested in attributes and types (locations included); default 64.
    pub max_attr_depth: usize,
    /// Bytes of input; default 4 GiB.
    pub max_bytes: usize,
    /// Attribute and type nodes the IR may hold in all (entries can share entries, so a few
    /// bytes can describe an exponentially large tree); default 2^23.
    pub max_attr_nodes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { max_region_depth: 64, max_attr_depth: 64, max_bytes: 4 << 30, max_attr_nodes: 1 << 23 }
    }
}

/// A bounds-checked reader over part of the file; `base` is where `data` starts in the file,
/// so errors report file offsets.
#[derive(Clone, Copy)]
pub(crate) struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
    base: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(data: &'a [u8], base: usize) -> Cursor<'a> {
        Cursor { data, pos: 0, base }
    }

    /// The file offset of the next byte.
    pub(crate) fn offset(&self) -> usize {
        self.base + self.pos
    }

    pub(crate) fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pos == self.data.len()
    }

    pub(crate) fn err(&self, what: impl Into<String>) -> Error {
        Error::malformed(self.offset(), what)
    }

    pub(crate) fn byte(&mut self) -> Result<u8> {
        let b = *self.data.get(self.pos).ok_or_else(|| self.err("unexpected end of data reading a byte"))?;
        self.pos += 1;
        Ok(b)
    }

    pub(crate) fn bytes(&mut self, n: u64) -> Result<&'a [u8]> {
        if n > self.remaining() as u64 {
            return Err(self.err(format!("{n} bytes wanted, {} left", self.remaining())));
        }
        let s = &self.data[self.pos..self.pos + n as usize];
        self.pos += n as usize;
        Ok(s)
    }

    /// A sub-cursor over the next `n` bytes.
    pub(crate) fn sub(&mut self, n: u64) -> Result<Cursor<'a>> {
        let base = self.offset();
        Ok(Cursor::new(self.bytes(n)?, base))
    }

    /// PrefixVarInt: the first byte's trailing zeros count the extra bytes.
    pub(crate) fn varint(&mut self) -> Result<u64> {
        let first = self.byte()?;
        if first & 1 == 1 {
            return Ok(u64::from(first >> 1));
        }
        if first == 0 {
            let b = self.bytes(8)?;
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            return Ok(u64::from_le_bytes(a));
        }
        let extra = first.trailing_zeros() as usize;
        let rest = self.bytes(extra as u64)?;
        let mut a = [0u8; 8];
        a[0] = first;
        a[1..=extra].copy_from_slice(rest);
        Ok(u64::from_le_bytes(a) >> (extra + 1))
    }

    pub(crate) fn svarint(&mut self) -> Result<i64> {
        let v = self.varint()?;
        Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
    }

    pub(crate) fn varint_flag(&mut self) -> Result<(u64, bool)> {
        let v = self.varint()?;
        Ok((v >> 1, v & 1 == 1))
    }

    /// A count of items each taking at least `min_bytes`: refused when the bytes left cannot
    /// hold that many, so a hostile count never sizes an allocation.
    pub(crate) fn count(&mut self, min_bytes: usize) -> Result<usize> {
        let at = self.offset();
        let n = self.varint()?;
        if n.saturating_mul(min_bytes as u64) > self.remaining() as u64 {
            return Err(Error::malformed(at, format!("count {n} exceeds the {} bytes left", self.remaining())));
        }
        Ok(n as usize)
    }

    pub(crate) fn cstr(&mut self) -> Result<&'a [u8]> {
        let rest = &self.data[self.pos..];
        let nul = rest.iter().position(|&b| b == 0).ok_or_else(|| self.err("string without a terminating NUL"))?;
        self.pos += nul + 1;
        Ok(&rest[..nul])
    }

    /// A section header and its data: `id | aligned << 7`, length, alignment and padding.
    pub(crate) fn section(&mut self) -> Result<(u8, Cursor<'a>)> {
        let at = self.offset();
        let id_and_align = self.byte()?;
        let len = self.varint()?;
        let id = id_and_align & 0x7f;
        if id as usize >= NUM_SECTIONS {
            return Err(Error::malformed(at, format!("unknown section id {id}")));
        }
        if id_and_align & 0x80 != 0 {
            let align = self.varint()?;
            if !align.is_power_of_two() || align > 1 << 32 {
                return Err(Error::malformed(at, format!("section alignment {align} is not a power of two")));
            }
            // Alignment is relative to the file start (the writer aligns file offsets).
            while (self.offset() as u64) % align != 0 {
                let pad_at = self.offset();
                if self.byte()? != 0xCB {
                    return Err(Error::malformed(pad_at, "padding byte is not 0xCB"));
                }
            }
        }
        Ok((id, self.sub(len)?))
    }
}

/// One attribute or type entry: its dialect, whether it uses the dialect's encoding (else its
/// MLIR text), and its bytes.
#[derive(Clone, Copy)]
pub(crate) struct Entry<'a> {
    pub dialect: usize,
    pub custom: bool,
    pub data: Cursor<'a>,
}

/// An op name: dialect index, name within the dialect, and (version >= 5) whether it was a
/// registered op when written.
pub(crate) struct OpName<'a> {
    pub dialect: usize,
    pub name: &'a str,
    pub registered: Option<bool>,
}

/// The parsed container: tables and the IR section, not yet decoded.
pub(crate) struct Container<'a> {
    pub version: u64,
    pub producer: String,
    pub strings: Vec<&'a [u8]>,
    pub dialects: Vec<&'a str>,
    pub op_names: Vec<OpName<'a>>,
    pub attrs: Vec<Entry<'a>>,
    pub types: Vec<Entry<'a>>,
    pub properties: Vec<Cursor<'a>>,
    pub ir: Cursor<'a>,
}

fn utf8<'b>(at: usize, bytes: &'b [u8], what: &str) -> Result<&'b str> {
    std::str::from_utf8(bytes).map_err(|_| Error::malformed(at, format!("{what} is not UTF-8")))
}

impl<'a> Container<'a> {
    pub(crate) fn parse(file: &'a [u8], limits: &Limits) -> Result<Container<'a>> {
        if file.len() > limits.max_bytes {
            return Err(Error::limit(0, format!("{} bytes, more than max_bytes {}", file.len(), limits.max_bytes)));
        }
        let mut c = Cursor::new(file, 0);
        if file.len() < 4 || &file[..4] != b"ML\xefR" {
            return Err(Error::malformed(0, "no MLIR bytecode magic (ML\\xefR)"));
        }
        c.bytes(4)?;
        let at = c.offset();
        let version = c.varint()?;
        if version > MAX_VERSION {
            return Err(Error::unsupported(
                at,
                format!("bytecode version {version}, this reader knows up to {MAX_VERSION}"),
            ));
        }
        let at = c.offset();
        let producer = utf8(at, c.cstr()?, "producer")?.to_string();
        let mut sections: [Option<Cursor<'a>>; NUM_SECTIONS] = [None; NUM_SECTIONS];
        while !c.is_empty() {
            let at = c.offset();
            let (id, data) = c.section()?;
            if sections[id as usize].is_some() {
                return Err(Error::malformed(at, format!("section {id} appears twice")));
            }
            sections[id as usize] = Some(data);
        }
        let need = |id: u8| {
            sections[id as usize].ok_or_else(|| Error::malformed(file.len(), format!("section {id} is missing")))
        };
        let strings = parse_strings(need(SECTION_STRING)?)?;
        let (dialects, op_names) = parse_dialects(need(SECTION_DIALECT)?, version, &strings)?;
        let (attrs, types) =
            parse_attr_type_offsets(need(SECTION_ATTR_TYPE)?, need(SECTION_ATTR_TYPE_OFFSET)?, dialects.len())?;
        // Properties (version 5 on) may be absent when no op has any.
        let properties = match sections[SECTION_PROPERTIES as usize] {
            Some(p) => parse_properties(p)?,
            None => Vec::new(),
        };
        // Resources (dense_resource blobs) are not used by portable artifacts; both sections
        // must come together.
        if sections[SECTION_RESOURCE as usize].is_some() != sections[SECTION_RESOURCE_OFFSET as usize].is_some() {
            return Err(Error::malformed(file.len(), "a resource section without its offset section"));
        }
        let _ = SECTION_DIALECT_VERSIONS;
        Ok(Container {
            version,
            producer,
            strings,
            dialects,
            op_names,
            attrs,
            types,
            properties,
            ir: need(SECTION_IR)?,
        })
    }

    pub(crate) fn string(&self, c: &mut Cursor<'a>) -> Result<&'a [u8]> {
        let at = c.offset();
        let i = c.varint()?;
        self.string_at(at, i)
    }

    pub(crate) fn string_at(&self, at: usize, i: u64) -> Result<&'a [u8]> {
        self.strings
            .get(i as usize)
            .copied()
            .ok_or_else(|| Error::malformed(at, format!("string index {i} out of range")))
    }
}

fn parse_strings(mut c: Cursor<'_>) -> Result<Vec<&[u8]>> {
    let n = c.count(1)?;
    let data = c.data;
    let mut lens = Vec::with_capacity(n);
    for _ in 0..n {
        lens.push(c.varint()?);
    }
    // Lengths are listed last string first; the strings end the section, each NUL-terminated.
    let mut end = data.len();
    let mut strings = vec![&data[0..0]; n];
    for (k, len) in lens.iter().enumerate() {
        let len = *len;
        if len == 0 || len as usize > end || end - (len as usize) < c.pos {
            return Err(Error::malformed(c.base + end, format!("string length {len} does not fit the string section")));
        }
        let start = end - len as usize;
        strings[n - 1 - k] = &data[start..end - 1];
        end = start;
    }
    if end != c.pos {
        return Err(Error::malformed(c.base + c.pos, "bytes between the string lengths and the strings"));
    }
    Ok(strings)
}

type Dialects<'a> = (Vec<&'a str>, Vec<OpName<'a>>);

fn parse_dialects<'a>(mut c: Cursor<'a>, version: u64, strings: &[&'a [u8]]) -> Result<Dialects<'a>> {
    let get = |at: usize, i: u64| -> Result<&'a str> {
        let s =
            strings.get(i as usize).ok_or_else(|| Error::malformed(at, format!("string index {i} out of range")))?;
        utf8(at, s, "a dialect or op name")
    };
    let n = c.count(1)?;
    let mut dialects = Vec::with_capacity(n);
    for _ in 0..n {
        let at = c.offset();
        if version < V_DIALECT_VERSIONING {
            let i = c.varint()?;
            dialects.push(get(at, i)?);
            continue;
        }
        let (i, versioned) = c.varint_flag()?;
        dialects.push(get(at, i)?);
        if versioned {
            let at = c.offset();
            let (id, _version) = c.section()?;
            if id != SECTION_DIALECT_VERSIONS {
                return Err(Error::malformed(at, "a dialect's version is not a dialect-version section"));
            }
        }
    }
    let mut op_names = Vec::new();
    if version >= V_ELIDE_UNKNOWN_BLOCK_ARG_LOC {
        let _total = c.count(1)?;
    }
    while !c.is_empty() {
        let at = c.offset();
        let d = c.varint()?;
        if d as usize >= dialects.len() {
            return Err(Error::malformed(at, format!("dialect index {d} out of range")));
        }
        let k = c.count(1)?;
        for _ in 0..k {
            let at = c.offset();
            let (i, registered) = if version < V_NATIVE_PROPERTIES {
                (c.varint()?, None)
            } else {
                let (i, r) = c.varint_flag()?;
                (i, Some(r))
            };
            op_names.push(OpName { dialect: d as usize, name: get(at, i)?, registered });
        }
    }
    Ok((dialects, op_names))
}

type AttrsTypes<'a> = (Vec<Entry<'a>>, Vec<Entry<'a>>);

fn parse_attr_type_offsets<'a>(data: Cursor<'a>, mut c: Cursor<'a>, num_dialects: usize) -> Result<AttrsTypes<'a>> {
    let n_attrs = c.count(1)?;
    let n_types = c.count(0)?;
    if n_attrs.saturating_add(n_types) > c.remaining() {
        return Err(c.err("more attributes and types than offset bytes"));
    }
    let mut offset = 0u64;
    let mut read = |n: usize, c: &mut Cursor<'a>| -> Result<Vec<Entry<'a>>> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let at = c.offset();
            let d = c.varint()?;
            if d as usize >= num_dialects {
                return Err(Error::malformed(at, format!("dialect index {d} out of range")));
            }
            let k = c.count(1)?;
            if k > n - out.len() {
                return Err(Error::malformed(at, "more entries in a dialect group than declared"));
            }
            for _ in 0..k {
                let at = c.offset();
                let (size, custom) = c.varint_flag()?;
                if offset.saturating_add(size) > data.data.len() as u64 {
                    return Err(Error::malformed(at, "attribute/type entry past the end of its section"));
                }
                let start = offset as usize;
                let end = start + size as usize;
                out.push(Entry {
                    dialect: d as usize,
                    custom,
                    data: Cursor::new(&data.data[start..end], data.base + start),
                });
                offset += size;
            }
        }
        Ok(out)
    };
    let attrs = read(n_attrs, &mut c)?;
    let types = read(n_types, &mut c)?;
    if !c.is_empty() {
        return Err(c.err("trailing bytes in the attribute/type offset section"));
    }
    Ok((attrs, types))
}

fn parse_properties(mut c: Cursor<'_>) -> Result<Vec<Cursor<'_>>> {
    if c.is_empty() {
        return Ok(Vec::new());
    }
    let n = c.count(1)?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let size = c.varint()?;
        out.push(c.sub(size)?);
    }
    if !c.is_empty() {
        return Err(c.err("trailing bytes in the properties section"));
    }
    Ok(out)
}
