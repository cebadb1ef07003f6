//! MLIR's bytecode container, written: varints, the string table, dialect and op-name tables,
//! the attribute/type table with its offsets, properties, and the sections around them (the
//! layout `crate::bytecode` reads).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A hash map with a fast, non-keyed hash: the writer's tables hash its own encodings (nothing
/// an attacker chooses the collisions of beyond the module being written), thousands per module.
pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

/// FxHash's multiply-rotate over 8-byte words (rustc's hasher).
#[derive(Default, Clone, Copy)]
pub(crate) struct FastHasher(u64);

impl FastHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().unwrap_or_default()));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// PrefixVarInt: the count of trailing zeros of the first byte says how many bytes follow.
pub(crate) fn varint(out: &mut Vec<u8>, value: u64) {
    let bytes_needed = (1..=8u32).find(|n| value < 1u64 << (7 * n));
    match bytes_needed {
        Some(n) => {
            let encoded = (value << n) | (1u64 << (n - 1));
            out.extend_from_slice(&encoded.to_le_bytes()[..n as usize]);
        }
        None => {
            out.push(0);
            out.extend_from_slice(&value.to_le_bytes());
        }
    }
}

/// Zigzag-encoded signed varint.
pub(crate) fn svarint(out: &mut Vec<u8>, value: i64) {
    varint(out, ((value << 1) ^ (value >> 63)) as u64);
}

/// A varint with a flag in its low bit.
pub(crate) fn varint_flag(out: &mut Vec<u8>, value: u64, flag: bool) {
    varint(out, (value << 1) | u64::from(flag));
}

use crate::bytecode::{
    SECTION_ATTR_TYPE, SECTION_ATTR_TYPE_OFFSET, SECTION_DIALECT, SECTION_IR, SECTION_PROPERTIES, SECTION_RESOURCE,
    SECTION_RESOURCE_OFFSET, SECTION_STRING,
};

/// A section: its id, its length, its bytes (unaligned: nothing written needs alignment).
pub(crate) fn section(out: &mut Vec<u8>, id: u8, data: &[u8]) {
    out.push(id);
    varint(out, data.len() as u64);
    out.extend_from_slice(data);
}

/// The dialects an artifact names, by index in the dialect table.
pub(crate) const BUILTIN: usize = 0;
pub(crate) const VHLO: usize = 1;
/// Shardy's, named only when one of its attributes is written.
pub(crate) const SDY: usize = 2;
const DIALECTS: [&str; 3] = ["builtin", "vhlo", "sdy"];

/// MLIR's grouping of a table (already in reference-count order) by dialect within each run
/// of indexes one varint width encodes (128 one-byte indexes, then 16256 two-byte ones, ...),
/// each run a stable sort that puts first the dialect the previous run ended with.
pub(crate) fn group_by_dialect_per_byte<T>(items: &mut [T], dialect: impl Fn(&T) -> usize) {
    let (mut first, mut start, mut width) = (0, 0usize, 0u32);
    while start < items.len() && width < 8 {
        width += 1;
        let end = if width == 8 { items.len() } else { items.len().min(1usize << (7 * width)) };
        let run = &mut items[start..end];
        run.sort_by_key(|x| {
            let d = dialect(x);
            (d != first, d)
        });
        if let Some(last) = run.last() {
            first = dialect(last);
        }
        start = end;
    }
}

/// A reference an encoding holds to a table entry or a string, numbered as first added; the
/// file's numbers (MLIR's order, known once everything is encoded) replace them when the file
/// is written.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub(crate) enum Ref {
    /// An attribute, as a varint.
    Attr(u64),
    /// An attribute, as a varint with a flag in its low bit (MLIR's optional attribute).
    AttrFlag(u64, bool),
    /// A type, as a varint.
    Type(u64),
    /// A type, as a varint with a flag (a block argument's type, saying whether a location
    /// follows).
    TypeFlag(u64, bool),
    /// A string of the string section, as a varint.
    Str(u64),
    /// A nested section of the given id (an isolated op's regions in the IR).
    Section(u8, Box<Buf>),
}

/// Encoded bytes with the references in them kept apart (each at its byte offset), so that
/// the references can be numbered in the order MLIR numbers them after everything is
/// encoded. Dereferences to its bytes for what holds no reference.
#[derive(Clone, PartialEq, Eq, Hash, Default, Debug)]
pub(crate) struct Buf {
    bytes: Vec<u8>,
    refs: Vec<(usize, Ref)>,
}

impl std::ops::Deref for Buf {
    type Target = Vec<u8>;
    fn deref(&self) -> &Vec<u8> {
        &self.bytes
    }
}

impl std::ops::DerefMut for Buf {
    fn deref_mut(&mut self) -> &mut Vec<u8> {
        &mut self.bytes
    }
}

impl Buf {
    /// A reference to an attribute.
    pub(crate) fn attr(&mut self, i: u64) {
        self.push_ref(Ref::Attr(i));
    }

    /// A reference to an attribute with a flag.
    pub(crate) fn attr_flag(&mut self, i: u64, flag: bool) {
        self.push_ref(Ref::AttrFlag(i, flag));
    }

    /// A reference to a type.
    pub(crate) fn ty(&mut self, i: u64) {
        self.push_ref(Ref::Type(i));
    }

    /// A reference to a type with a flag.
    pub(crate) fn ty_flag(&mut self, i: u64, flag: bool) {
        self.push_ref(Ref::TypeFlag(i, flag));
    }

    /// A reference to a string.
    pub(crate) fn str(&mut self, i: u64) {
        self.push_ref(Ref::Str(i));
    }

    /// A nested section.
    pub(crate) fn section(&mut self, id: u8, inner: Buf) {
        self.push_ref(Ref::Section(id, Box::new(inner)));
    }

    /// `other`, appended.
    pub(crate) fn append(&mut self, other: Buf) {
        let at = self.bytes.len();
        self.bytes.extend_from_slice(&other.bytes);
        self.refs.extend(other.refs.into_iter().map(|(o, r)| (o + at, r)));
    }

    fn push_ref(&mut self, r: Ref) {
        self.refs.push((self.bytes.len(), r));
    }

    /// The references, in the order they are written.
    pub(crate) fn refs(&self) -> impl Iterator<Item = &Ref> {
        self.refs.iter().map(|(_, r)| r)
    }

    /// The bytes, each reference written with `number`'s number for it.
    pub(crate) fn write(&self, out: &mut Vec<u8>, number: &mut impl FnMut(&Ref) -> u64) {
        let mut at = 0;
        for (offset, r) in &self.refs {
            out.extend_from_slice(&self.bytes[at..*offset]);
            at = *offset;
            match r {
                Ref::Attr(_) | Ref::Type(_) | Ref::Str(_) => varint(out, number(r)),
                Ref::AttrFlag(_, flag) | Ref::TypeFlag(_, flag) => varint_flag(out, number(r), *flag),
                Ref::Section(id, inner) => {
                    let mut data = Vec::new();
                    inner.write(&mut data, number);
                    section(out, *id, &data);
                }
            }
        }
        out.extend_from_slice(&self.bytes[at..]);
    }
}

/// The file's order of each table (see `numbering`): the entries (as first added) in the
/// order they are written, and each entry's number in it.
pub(crate) struct Order {
    pub attrs: Vec<usize>,
    pub attr_number: Vec<u64>,
    pub types: Vec<usize>,
    pub type_number: Vec<u64>,
}

/// One attribute or type entry: its dialect, whether in the dialect's encoding (else MLIR
/// text), and its bytes.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct Entry {
    pub dialect: usize,
    pub custom: bool,
    pub bytes: Buf,
}

/// A deduplicated table of entries, numbered in the order they were first added (the file's
/// order is MLIR's, see `numbering`).
#[derive(Default)]
pub(crate) struct Table {
    pub(crate) entries: Vec<Entry>,
    index: FastMap<Entry, u64>,
}

impl Table {
    pub(crate) fn add(&mut self, entry: Entry) -> u64 {
        if let Some(&i) = self.index.get(&entry) {
            return i;
        }
        let i = self.entries.len() as u64;
        self.entries.push(entry.clone());
        self.index.insert(entry, i);
        i
    }
}

/// Everything the sections are made of, filled while the IR is encoded.
#[derive(Default)]
pub(crate) struct Tables {
    strings: Vec<Vec<u8>>,
    string_index: FastMap<Vec<u8>, u64>,
    /// Op names, grouped by dialect, in index order.
    op_names: Vec<(usize, String)>,
    pub attrs: Table,
    pub types: Table,
    properties: Vec<Buf>,
    /// Whether a Shardy attribute was written (the sdy dialect is named only then).
    pub uses_sdy: bool,
    property_index: FastMap<Buf, u64>,
}

impl Tables {
    pub(crate) fn string(&mut self, s: &[u8]) -> u64 {
        if let Some(&i) = self.string_index.get(s) {
            return i;
        }
        let i = self.strings.len() as u64;
        self.strings.push(s.to_vec());
        self.string_index.insert(s.to_vec(), i);
        i
    }

    /// Sets the op-name table from every op's name in the order MLIR's writer numbers ops
    /// (`names`, repeated as often as used): as MLIR orders it, the most used first (ties in
    /// the order first used), then grouped by dialect (a stable sort: builtin first). Names
    /// the string table with the dialects and these names first, in MLIR's order. Returns each
    /// name's index.
    pub(crate) fn set_op_names(&mut self, names: Vec<(usize, String)>) -> FastMap<(usize, String), u64> {
        let mut counted: Vec<((usize, String), usize)> = Vec::new();
        let mut at: FastMap<(usize, String), usize> = FastMap::default();
        for n in names {
            match at.get(&n) {
                Some(&i) => counted[i].1 += 1,
                None => {
                    at.insert(n.clone(), counted.len());
                    counted.push((n, 1));
                }
            }
        }
        counted.sort_by_key(|c| std::cmp::Reverse(c.1));
        group_by_dialect_per_byte(&mut counted, |((d, _), _)| *d);
        let names: Vec<(usize, String)> = counted.into_iter().map(|(n, _)| n).collect();
        self.uses_sdy |= names.iter().any(|(d, _)| *d == SDY);
        let dialects_used = if self.uses_sdy { &DIALECTS[..] } else { &DIALECTS[..2] };
        for d in dialects_used {
            self.string(d.as_bytes());
        }
        for (_, n) in &names {
            self.string(n.as_bytes());
        }
        let index = names.iter().enumerate().map(|(i, n)| (n.clone(), i as u64)).collect();
        self.op_names = names;
        index
    }

    pub(crate) fn properties(&mut self, bytes: Buf) -> u64 {
        if let Some(&i) = self.property_index.get(&bytes) {
            return i;
        }
        let i = self.properties.len() as u64;
        self.properties.push(bytes.clone());
        self.property_index.insert(bytes, i);
        i
    }

    /// The whole file: header, then the sections, with `ir` as the IR section, the tables in
    /// `order` (MLIR's, see `numbering`).
    pub(crate) fn finish(mut self, version: u64, producer: &str, ir: &Buf, order: &Order) -> Vec<u8> {
        let dialects_used = if self.uses_sdy { &DIALECTS[..] } else { &DIALECTS[..2] };
        for d in dialects_used {
            self.string(d.as_bytes());
        }
        // Strings are numbered as MLIR's writer first writes them: the dialects' names, the
        // op names, then the attributes and types in the file's order, then the rest.
        let mut string_number: Vec<Option<u64>> = vec![None; self.strings.len()];
        let mut strings_in_order: Vec<usize> = Vec::new();
        let mut string = |i: u64| -> u64 {
            let i = i as usize;
            if let Some(n) = string_number.get(i).copied().flatten() {
                return n;
            }
            let n = strings_in_order.len() as u64;
            if let Some(slot) = string_number.get_mut(i) {
                *slot = Some(n);
            }
            strings_in_order.push(i);
            n
        };
        let mut out = b"ML\xefR".to_vec();
        varint(&mut out, version);
        out.extend_from_slice(producer.as_bytes());
        out.push(0);

        let mut dialects = Vec::new();
        varint(&mut dialects, dialects_used.len() as u64);
        for d in dialects_used {
            let name = string(self.string_index.get(d.as_bytes()).copied().unwrap_or(0));
            if version >= crate::bytecode::V_DIALECT_VERSIONING {
                // VHLO carries its version in the producer string, not as a dialect version.
                varint_flag(&mut dialects, name, false);
            } else {
                varint(&mut dialects, name);
            }
        }
        if version >= crate::bytecode::V_ELIDE_UNKNOWN_BLOCK_ARG_LOC {
            varint(&mut dialects, self.op_names.len() as u64);
        }
        let mut k = 0;
        while k < self.op_names.len() {
            let dialect = self.op_names[k].0;
            let group = self.op_names[k..].iter().take_while(|(d, _)| *d == dialect).count();
            varint(&mut dialects, dialect as u64);
            varint(&mut dialects, group as u64);
            for (_, name) in &self.op_names[k..k + group] {
                let i = string(self.string_index.get(name.as_bytes()).copied().unwrap_or(0));
                if version >= crate::bytecode::V_NATIVE_PROPERTIES {
                    varint_flag(&mut dialects, i, true);
                } else {
                    varint(&mut dialects, i);
                }
            }
            k += group;
        }

        let mut number = |r: &Ref| -> u64 {
            match r {
                Ref::Attr(i) | Ref::AttrFlag(i, _) => order.attr_number.get(*i as usize).copied().unwrap_or(0),
                Ref::Type(i) | Ref::TypeFlag(i, _) => order.type_number.get(*i as usize).copied().unwrap_or(0),
                Ref::Str(i) => string(*i),
                Ref::Section(..) => 0,
            }
        };
        let mut data = Vec::new();
        let mut offsets = Vec::new();
        varint(&mut offsets, self.attrs.entries.len() as u64);
        varint(&mut offsets, self.types.entries.len() as u64);
        for (table, in_order) in [(&self.attrs, &order.attrs), (&self.types, &order.types)] {
            let entries: Vec<&Entry> = in_order.iter().map(|&i| &table.entries[i]).collect();
            let mut k = 0;
            while k < entries.len() {
                let dialect = entries[k].dialect;
                let group = entries[k..].iter().take_while(|e| e.dialect == dialect).count();
                varint(&mut offsets, dialect as u64);
                varint(&mut offsets, group as u64);
                for e in &entries[k..k + group] {
                    let before = data.len();
                    e.bytes.write(&mut data, &mut number);
                    varint_flag(&mut offsets, (data.len() - before) as u64, e.custom);
                }
                k += group;
            }
        }
        let mut ir_bytes = Vec::new();
        ir.write(&mut ir_bytes, &mut number);
        let mut props = Vec::new();
        varint(&mut props, self.properties.len() as u64);
        for p in &self.properties {
            let mut bytes = Vec::new();
            p.write(&mut bytes, &mut number);
            varint(&mut props, bytes.len() as u64);
            props.extend_from_slice(&bytes);
        }
        for i in 0..self.strings.len() {
            string(i as u64);
        }

        let mut strings = Vec::new();
        varint(&mut strings, self.strings.len() as u64);
        for &i in strings_in_order.iter().rev() {
            varint(&mut strings, self.strings[i].len() as u64 + 1);
        }
        for &i in &strings_in_order {
            strings.extend_from_slice(&self.strings[i]);
            strings.push(0);
        }

        // MLIR's writer's order: dialects, attribute/type offsets then their data, the IR, the
        // resources (none: an offset section counting no external resource groups, then an
        // empty resource section), the strings (known only once everything is written), then
        // the properties (from bytecode 5 on, even when there are none).
        section(&mut out, SECTION_DIALECT, &dialects);
        section(&mut out, SECTION_ATTR_TYPE_OFFSET, &offsets);
        section(&mut out, SECTION_ATTR_TYPE, &data);
        section(&mut out, SECTION_IR, &ir_bytes);
        let mut resource_offsets = Vec::new();
        varint(&mut resource_offsets, 0);
        section(&mut out, SECTION_RESOURCE_OFFSET, &resource_offsets);
        section(&mut out, SECTION_RESOURCE, &[]);
        section(&mut out, SECTION_STRING, &strings);
        if version >= crate::bytecode::V_NATIVE_PROPERTIES {
            section(&mut out, SECTION_PROPERTIES, &props);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bytecode::Cursor;

    #[test]
    fn varints_read_back() {
        for v in [0u64, 1, 127, 128, 1 << 20, (1 << 56) - 1, 1 << 56, u64::MAX] {
            let mut out = Vec::new();
            varint(&mut out, v);
            assert_eq!(Cursor::new(&out, 0).varint().unwrap(), v);
        }
        for v in [0i64, -1, 1, i64::MIN, i64::MAX] {
            let mut out = Vec::new();
            svarint(&mut out, v);
            assert_eq!(Cursor::new(&out, 0).svarint().unwrap(), v);
        }
    }
}
