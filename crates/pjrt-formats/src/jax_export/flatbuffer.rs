//! A small, bounds-checked reader for the FlatBuffers wire format (tables, vtables, scalars,
//! strings, vectors), enough to read `jax.export` artifacts.
//!
//! Every read checks its range against the buffer and returns an error instead of panicking;
//! vector lengths are checked against the bytes that remain before anything is allocated.
//! Offsets to tables, strings and vectors (`uoffset`) are unsigned and added to the position
//! that holds them, so following them always moves forward: there are no cycles. Shared
//! sub-objects are possible (a DAG), so recursive readers above this one still bound their work.

/// Why a buffer could not be read; `at` is the byte position involved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} (at byte {at})")]
pub(crate) struct FlatError {
    pub(crate) at: usize,
    pub(crate) what: String,
}

pub(crate) type FlatResult<T> = Result<T, FlatError>;

fn error<T>(at: usize, what: impl Into<String>) -> FlatResult<T> {
    Err(FlatError { at, what: what.into() })
}

/// `len` bytes at `at`, or an error naming what was being read.
fn slice<'a>(buf: &'a [u8], at: usize, len: usize, what: &str) -> FlatResult<&'a [u8]> {
    match at.checked_add(len) {
        Some(end) if end <= buf.len() => Ok(&buf[at..end]),
        _ => error(at, format!("{what} ({len} bytes) runs past the end of the {}-byte buffer", buf.len())),
    }
}

fn read_u16(buf: &[u8], at: usize) -> FlatResult<u16> {
    let b = slice(buf, at, 2, "a u16")?;
    Ok(u16::from_le_bytes([b[0], b[1]]))
}

fn read_u32(buf: &[u8], at: usize) -> FlatResult<u32> {
    let b = slice(buf, at, 4, "a u32")?;
    Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Follows the `uoffset` stored at `at`.
fn follow(buf: &[u8], at: usize) -> FlatResult<usize> {
    let offset = read_u32(buf, at)? as usize;
    match at.checked_add(offset) {
        Some(target) if target < buf.len() => Ok(target),
        _ => error(at, format!("offset {offset} points outside the {}-byte buffer", buf.len())),
    }
}

/// A table: its position and its (validated) vtable.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Table<'a> {
    buf: &'a [u8],
    pos: usize,
    vtable: usize,
    /// Bytes in the vtable, header included.
    vtable_len: usize,
    /// Bytes in the table's inline part (from `pos`).
    table_len: usize,
}

impl<'a> Table<'a> {
    /// The buffer's root table (the `uoffset` at byte 0).
    pub(crate) fn root(buf: &'a [u8]) -> FlatResult<Table<'a>> {
        if buf.len() < 8 {
            return error(0, format!("{} bytes is too short for a flatbuffer", buf.len()));
        }
        Table::at(buf, follow(buf, 0)?)
    }

    /// The table at `pos`, after checking its vtable and inline size lie inside the buffer.
    pub(crate) fn at(buf: &'a [u8], pos: usize) -> FlatResult<Table<'a>> {
        let soffset = read_u32(buf, pos)? as i32 as i64;
        let vtable = pos as i64 - soffset;
        if vtable < 0 || vtable as u64 >= buf.len() as u64 {
            return error(pos, format!("the table's vtable offset {soffset} points outside the buffer"));
        }
        let vtable = vtable as usize;
        let vtable_len = read_u16(buf, vtable)? as usize;
        let table_len = read_u16(buf, vtable + 2)? as usize;
        if vtable_len < 4 || vtable_len % 2 != 0 {
            return error(vtable, format!("vtable size {vtable_len} is not an even number of at least 4"));
        }
        slice(buf, vtable, vtable_len, "the vtable")?;
        if table_len < 4 {
            return error(vtable, format!("table size {table_len} is smaller than its own vtable offset"));
        }
        slice(buf, pos, table_len, "the table")?;
        Ok(Table { buf, pos, vtable, vtable_len, table_len })
    }

    /// Where field `slot` lies, or `None` when it is absent (default value).
    fn field(&self, slot: usize, size: usize) -> FlatResult<Option<usize>> {
        let entry = 4 + 2 * slot;
        if entry + 2 > self.vtable_len {
            return Ok(None);
        }
        let offset = read_u16(self.buf, self.vtable + entry)? as usize;
        if offset == 0 {
            return Ok(None);
        }
        if offset < 4 || offset + size > self.table_len {
            return error(
                self.pos,
                format!("field {slot} at offset {offset} lies outside its {}-byte table", self.table_len),
            );
        }
        Ok(Some(self.pos + offset))
    }

    /// A one-byte scalar field.
    pub(crate) fn u8(&self, slot: usize, default: u8) -> FlatResult<u8> {
        match self.field(slot, 1)? {
            Some(at) => Ok(slice(self.buf, at, 1, "a byte")?[0]),
            None => Ok(default),
        }
    }

    /// A two-byte scalar field.
    pub(crate) fn u16(&self, slot: usize, default: u16) -> FlatResult<u16> {
        match self.field(slot, 2)? {
            Some(at) => read_u16(self.buf, at),
            None => Ok(default),
        }
    }

    /// A four-byte scalar field.
    pub(crate) fn u32(&self, slot: usize, default: u32) -> FlatResult<u32> {
        match self.field(slot, 4)? {
            Some(at) => read_u32(self.buf, at),
            None => Ok(default),
        }
    }

    /// A sub-table field.
    pub(crate) fn table(&self, slot: usize) -> FlatResult<Option<Table<'a>>> {
        match self.field(slot, 4)? {
            Some(at) => Ok(Some(Table::at(self.buf, follow(self.buf, at)?)?)),
            None => Ok(None),
        }
    }

    /// A string field (UTF-8 is checked).
    pub(crate) fn string(&self, slot: usize) -> FlatResult<Option<&'a str>> {
        match self.field(slot, 4)? {
            Some(at) => Ok(Some(string_at(self.buf, follow(self.buf, at)?)?)),
            None => Ok(None),
        }
    }

    /// A vector field whose elements are `elem_size` bytes each (4 for tables and strings).
    pub(crate) fn vector(&self, slot: usize, elem_size: usize) -> FlatResult<Option<Vector<'a>>> {
        match self.field(slot, 4)? {
            Some(at) => Ok(Some(Vector::at(self.buf, follow(self.buf, at)?, elem_size)?)),
            None => Ok(None),
        }
    }

    /// A vector of bytes, as a slice of the buffer.
    pub(crate) fn bytes(&self, slot: usize) -> FlatResult<Option<&'a [u8]>> {
        Ok(self.vector(slot, 1)?.map(|v| &v.buf[v.start..v.start + v.len]))
    }

    /// Where field `slot`'s inline value lies (tests patch artifacts through it).
    #[cfg(test)]
    pub(crate) fn field_position(&self, slot: usize) -> Option<usize> {
        self.field(slot, 4).ok().flatten()
    }

    /// The table's position in the buffer (for error messages).
    pub(crate) fn position(&self) -> usize {
        self.pos
    }
}

fn string_at(buf: &[u8], at: usize) -> FlatResult<&str> {
    let len = read_u32(buf, at)? as usize;
    // The terminating NUL is part of the format; requiring it also catches truncation.
    let with_nul = slice(buf, at + 4, len.saturating_add(1), "a string")?;
    let (bytes, nul) = with_nul.split_at(len);
    if nul != [0] {
        return error(at, "a string lacks its terminating NUL");
    }
    std::str::from_utf8(bytes).or_else(|_| error(at, "a string is not valid UTF-8"))
}

/// A vector: `len` elements of `elem_size` bytes from `start`, all inside the buffer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Vector<'a> {
    buf: &'a [u8],
    start: usize,
    len: usize,
    elem_size: usize,
}

impl<'a> Vector<'a> {
    fn at(buf: &'a [u8], at: usize, elem_size: usize) -> FlatResult<Vector<'a>> {
        let len = read_u32(buf, at)? as usize;
        let bytes = len.checked_mul(elem_size).map_or(usize::MAX, |b| b);
        slice(buf, at + 4, bytes, &format!("a vector of {len} elements"))?;
        Ok(Vector { buf, start: at + 4, len, elem_size })
    }

    /// The number of elements.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    fn element(&self, i: usize) -> FlatResult<usize> {
        if i >= self.len {
            return error(self.start, format!("element {i} of a {}-element vector", self.len));
        }
        Ok(self.start + i * self.elem_size)
    }

    /// Element `i` of a vector of tables.
    pub(crate) fn table(&self, i: usize) -> FlatResult<Table<'a>> {
        let at = self.element(i)?;
        Table::at(self.buf, follow(self.buf, at)?)
    }

    /// Element `i` of a vector of strings.
    pub(crate) fn string(&self, i: usize) -> FlatResult<&'a str> {
        let at = self.element(i)?;
        string_at(self.buf, follow(self.buf, at)?)
    }

    /// Every element of a vector of u16 (the length was checked against the buffer).
    pub(crate) fn u16s(&self) -> FlatResult<Vec<u16>> {
        (0..self.len).map(|i| read_u16(self.buf, self.element(i)?)).collect()
    }

    /// Every element of a vector of u32.
    pub(crate) fn u32s(&self) -> FlatResult<Vec<u32>> {
        (0..self.len).map(|i| read_u32(self.buf, self.element(i)?)).collect()
    }

    /// Every element of a vector of strings.
    pub(crate) fn strings(&self) -> FlatResult<Vec<&'a str>> {
        (0..self.len).map(|i| self.string(i)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table with one u16 field (slot 0 = 7) and one string field (slot 1 = "hi").
    fn small() -> Vec<u8> {
        let mut b = vec![0u8; 0];
        b.extend_from_slice(&12u32.to_le_bytes()); // 0: root -> 12
        b.extend_from_slice(&[8, 0, 12, 0, 4, 0, 8, 0]); // 4: vtable: size 8, table 12, f0@4, f1@8
        b.extend_from_slice(&8i32.to_le_bytes()); // 12: soffset -> vtable at 4
        b.extend_from_slice(&[7, 0, 0, 0]); // 16: f0 = 7 (padded)
        b.extend_from_slice(&4u32.to_le_bytes()); // 20: f1 -> 24
        b.extend_from_slice(&2u32.to_le_bytes()); // 24: string len 2
        b.extend_from_slice(b"hi\0\0");
        b
    }

    #[test]
    fn reads_scalars_and_strings() {
        let b = small();
        let t = Table::root(&b).unwrap();
        assert_eq!(t.u16(0, 0).unwrap(), 7);
        assert_eq!(t.string(1).unwrap(), Some("hi"));
        assert_eq!(t.u32(5, 42).unwrap(), 42, "absent slots give the default");
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        let b = small();
        // The last two bytes are padding after the string's NUL.
        for len in 0..b.len() - 2 {
            let cut = &b[..len];
            let result = Table::root(cut).and_then(|t| Ok((t.u16(0, 0)?, t.string(1)?)));
            assert!(result.is_err(), "truncated to {len} bytes: {result:?}");
        }
    }

    #[test]
    fn every_single_byte_corruption_is_handled() {
        let b = small();
        for i in 0..b.len() {
            for v in [0u8, 1, 0x7f, 0x80, 0xff] {
                let mut c = b.clone();
                c[i] = v;
                // Any result is fine as long as nothing panics or reads out of bounds.
                let _ = Table::root(&c).and_then(|t| Ok((t.u16(0, 0)?, t.string(1)?, t.vector(1, 4)?)));
            }
        }
    }

    #[test]
    fn huge_vector_lengths_are_refused_before_allocating() {
        let mut b = small();
        b[24..28].copy_from_slice(&u32::MAX.to_le_bytes());
        let t = Table::root(&b).unwrap();
        assert!(t.string(1).unwrap_err().what.contains("runs past the end"));
        let v = t.vector(1, 8);
        assert!(v.is_err());
    }

    #[test]
    fn vtable_outside_the_buffer_is_refused() {
        let mut b = small();
        b[12..16].copy_from_slice(&(-1000i32).to_le_bytes());
        assert!(Table::root(&b).unwrap_err().what.contains("vtable"));
        b[12..16].copy_from_slice(&i32::MIN.to_le_bytes());
        assert!(Table::root(&b).is_err());
    }
}
