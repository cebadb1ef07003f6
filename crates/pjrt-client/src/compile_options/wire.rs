//! A small protobuf wire-format editor: a message as the ordered list of its field entries, each
//! kept as the exact bytes it was read from. Editing one field therefore cannot change, reorder
//! or drop any other, including fields this crate declares nothing for (JAX's compile options
//! carry many: argument layouts, debug options, target configs, whatever XLA adds next).

use prost::encoding::{decode_key, decode_varint, encode_key, encode_varint, WireType};

use crate::error::{Error, Result};

/// One field entry, as it is on the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Field {
    number: u32,
    wire_type: WireType,
    /// The whole entry: key, then the value (for length-delimited fields: length, then payload).
    raw: Vec<u8>,
    /// Where the value (for length-delimited fields: the payload) starts in `raw`.
    value_at: usize,
}

impl Field {
    /// A varint entry (int32, int64, uint64, bool, enum: all encode as the plain `u64` value;
    /// a negative int64 as its two's complement, as protobuf does).
    pub(crate) fn varint(number: u32, value: u64) -> Self {
        let mut raw = Vec::with_capacity(11);
        encode_key(number, WireType::Varint, &mut raw);
        let value_at = raw.len();
        encode_varint(value, &mut raw);
        Self { number, wire_type: WireType::Varint, raw, value_at }
    }

    /// A length-delimited entry (a string, bytes or an embedded message).
    pub(crate) fn bytes(number: u32, payload: &[u8]) -> Self {
        let mut raw = Vec::with_capacity(payload.len() + 10);
        encode_key(number, WireType::LengthDelimited, &mut raw);
        encode_varint(payload.len() as u64, &mut raw);
        let value_at = raw.len();
        raw.extend_from_slice(payload);
        Self { number, wire_type: WireType::LengthDelimited, raw, value_at }
    }

    /// The field number.
    pub(crate) fn number(&self) -> u32 {
        self.number
    }

    /// The exact bytes of the entry.
    pub(crate) fn raw(&self) -> &[u8] {
        &self.raw
    }

    /// The payload of a length-delimited entry; `None` for other wire types.
    pub(crate) fn payload(&self) -> Option<&[u8]> {
        (self.wire_type == WireType::LengthDelimited).then(|| &self.raw[self.value_at..])
    }
}

/// A message as its field entries, in wire order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Message {
    fields: Vec<Field>,
}

impl Message {
    /// A message of these entries.
    pub(crate) fn new(fields: Vec<Field>) -> Self {
        Self { fields }
    }

    /// Splits `bytes` into entries. Truncated or overlong varints, a field number 0 or a key past
    /// 32 bits are [`Error::Decode`]; a length or fixed-size value running past the end, and
    /// groups (wire types 3 and 4, which no XLA message uses), are [`Error::InvalidArgument`].
    /// Every entry's bytes are a copy of its part of `bytes`: nothing is sized by a claimed length.
    pub(crate) fn parse(bytes: &[u8], what: &'static str) -> Result<Self> {
        let decode = |source| Error::Decode { what, source };
        let malformed = |why: &str| Error::invalid(format!("malformed {what}: {why}"));
        let mut fields = Vec::new();
        let mut rest = bytes;
        while !rest.is_empty() {
            let entry = rest;
            let (number, wire_type) = decode_key(&mut rest).map_err(decode)?;
            let mut value_at = entry.len() - rest.len();
            match wire_type {
                WireType::Varint => {
                    decode_varint(&mut rest).map_err(decode)?;
                }
                WireType::SixtyFourBit | WireType::ThirtyTwoBit => {
                    let size = if wire_type == WireType::SixtyFourBit { 8 } else { 4 };
                    rest = rest.get(size..).ok_or_else(|| malformed("a fixed-size value runs past the end"))?;
                }
                WireType::LengthDelimited => {
                    let len = decode_varint(&mut rest).map_err(decode)?;
                    value_at = entry.len() - rest.len();
                    // Checked against what is there before it is used as a size.
                    let len = usize::try_from(len).ok().filter(|&len| len <= rest.len());
                    let len = len.ok_or_else(|| malformed(&format!("field {number} runs past the end")))?;
                    rest = &rest[len..];
                }
                WireType::StartGroup | WireType::EndGroup => {
                    return Err(malformed(&format!("field {number} is a group")));
                }
            }
            let raw = entry[..entry.len() - rest.len()].to_vec();
            fields.push(Field { number, wire_type, raw, value_at });
        }
        Ok(Self { fields })
    }

    /// The serialized message: every entry's bytes, in order.
    pub(crate) fn encode(&self) -> Vec<u8> {
        self.fields.iter().flat_map(|f| f.raw().iter().copied()).collect()
    }

    /// The entries, in wire order.
    pub(crate) fn fields(&self) -> &[Field] {
        &self.fields
    }

    /// Removes every entry `remove` selects and puts `new` (if any) where the first of them was,
    /// or at the end if none was removed. All other entries keep their bytes and order.
    pub(crate) fn replace(&mut self, mut remove: impl FnMut(&Field) -> bool, new: Option<Field>) {
        let mut first_removed = None;
        let mut kept = 0;
        self.fields.retain(|f| {
            let drop = remove(f);
            if drop {
                first_removed.get_or_insert(kept);
            } else {
                kept += 1;
            }
            !drop
        });
        if let Some(new) = new {
            let at = first_removed.unwrap_or(self.fields.len());
            self.fields.insert(at, new);
        }
    }

    /// Sets field `number`: every entry of it is replaced by `new` (none: the field is cleared).
    pub(crate) fn set(&mut self, number: u32, new: Option<Field>) {
        self.replace(|f| f.number == number, new);
    }

    /// Sets the repeated field `number` to `new`: its entries are removed and `new` goes where
    /// the first of them was (or at the end). All other entries keep their bytes and order.
    pub(crate) fn set_all(&mut self, number: u32, new: Vec<Field>) {
        let at = self.fields.iter().position(|f| f.number == number).unwrap_or(self.fields.len());
        let before = self.fields[..at].len();
        self.fields.retain(|f| f.number != number);
        self.fields.splice(before..before, new);
    }

    /// The payloads of every entry of the embedded-message field `number`, concatenated: the one
    /// message protobuf reads them as (it merges repeated occurrences of a message field, which
    /// is what parsing their concatenation does). An entry that is not length-delimited is an
    /// error.
    pub(crate) fn merged(&self, number: u32, what: &'static str) -> Result<Vec<u8>> {
        let mut merged = Vec::new();
        for field in self.fields.iter().filter(|f| f.number == number) {
            let payload =
                field.payload().ok_or_else(|| Error::invalid(format!("{what} (field {number}) is not a message")))?;
            merged.extend_from_slice(payload);
        }
        Ok(merged)
    }

    /// The value of the last entry of the string or bytes field `number` (protobuf keeps the
    /// last), or empty (the default) if there is none.
    pub(crate) fn last_bytes(&self, number: u32) -> &[u8] {
        self.fields.iter().rev().find(|f| f.number == number).and_then(Field::payload).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(bytes: &[u8]) -> Result<Message> {
        Message::parse(bytes, "test message")
    }

    #[test]
    fn every_wire_type_round_trips_byte_exact() {
        // 1: varint (non-canonical 2-byte 0 kept as is), 2: bytes, 3: fixed64, 4: fixed32,
        // 5: a 10-byte negative varint, 2^25 - 1: the largest field number with a 4-byte key.
        let bytes = [
            0x08, 0x80, 0x00, 0x12, 0x02, 0xaa, 0xbb, 0x19, 1, 2, 3, 4, 5, 6, 7, 8, 0x25, 1, 2, 3, 4, 0x28, 0xff, 0xff,
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0xf8, 0xff, 0xff, 0x7f, 0x00,
        ];
        let message = parse(&bytes).unwrap();
        assert_eq!(message.encode(), bytes);
        let numbers: Vec<u32> = message.fields().iter().map(Field::number).collect();
        assert_eq!(numbers, [1, 2, 3, 4, 5, (1 << 25) - 1]);
        assert_eq!(message.fields()[1].payload(), Some(&[0xaa, 0xbb][..]));
        assert_eq!(message.fields()[0].payload(), None);
        assert_eq!(message.fields()[1].raw(), [0x12, 0x02, 0xaa, 0xbb]);
    }

    #[test]
    fn malformed_input_is_an_error_not_a_panic() {
        let cases: &[&[u8]] = &[
            &[0x08],                                                             // varint value missing
            &[0x08, 0x80],                                                       // varint value truncated
            &[0x88],                                                             // key truncated
            &[0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f], // 10-byte overflow
            &[0x12, 0x05, 0x00],                                                 // length past the end
            &[0x12, 0xff, 0xff, 0xff, 0xff, 0x0f],                               // 4 GiB claimed by 6 bytes
            &[0x12, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01], // u64::MAX claimed
            &[0x19, 0x00],                                                       // fixed64 truncated
            &[0x25, 0x00, 0x00, 0x00],                                           // fixed32 truncated
            &[0x0b, 0x0c],                                                       // group 1 (start, end)
            &[0x0c],                                                             // lone end-group
            &[0x00, 0x00],                                                       // field number 0
            &[0x0e, 0x00],                                                       // wire type 6
            &[0x80, 0x80, 0x80, 0x80, 0x10, 0x00],                               // key past 32 bits
        ];
        for case in cases {
            let result = parse(case);
            assert!(
                matches!(result, Err(Error::Decode { .. } | Error::InvalidArgument(_))),
                "{case:02x?} gave {result:?}"
            );
        }
    }

    #[test]
    fn replace_keeps_others_and_takes_the_first_removed_position() {
        let mut m = Message::new(vec![
            Field::varint(1, 1),
            Field::varint(2, 2),
            Field::varint(3, 3),
            Field::varint(2, 4),
            Field::varint(5, 5),
        ]);
        m.set(2, Some(Field::varint(2, 9)));
        assert_eq!(m.encode(), [0x08, 1, 0x10, 9, 0x18, 3, 0x28, 5]);
        m.set(7, Some(Field::varint(7, 1)));
        assert_eq!(m.encode(), [0x08, 1, 0x10, 9, 0x18, 3, 0x28, 5, 0x38, 1]);
        m.set(3, None);
        assert_eq!(m.encode(), [0x08, 1, 0x10, 9, 0x28, 5, 0x38, 1]);
    }

    #[test]
    fn set_all_puts_the_new_entries_where_the_first_old_one_was() {
        let mut m =
            Message::new(vec![Field::varint(1, 1), Field::varint(2, 2), Field::varint(3, 3), Field::varint(2, 4)]);
        m.set_all(2, vec![Field::varint(2, 7), Field::varint(2, 8), Field::varint(2, 9)]);
        assert_eq!(m.encode(), [0x08, 1, 0x10, 7, 0x10, 8, 0x10, 9, 0x18, 3]);
        m.set_all(5, vec![Field::varint(5, 1)]);
        assert_eq!(m.encode(), [0x08, 1, 0x10, 7, 0x10, 8, 0x10, 9, 0x18, 3, 0x28, 1]);
        m.set_all(2, Vec::new());
        assert_eq!(m.encode(), [0x08, 1, 0x18, 3, 0x28, 1]);
    }

    #[test]
    fn merged_concatenates_occurrences_and_last_bytes_takes_the_last() {
        let m = Message::new(vec![Field::bytes(3, &[0x20, 1]), Field::varint(4, 1), Field::bytes(3, &[0x28, 2])]);
        assert_eq!(m.merged(3, "build").unwrap(), [0x20, 1, 0x28, 2]);
        assert_eq!(m.merged(9, "absent").unwrap(), [0u8; 0]);
        assert!(m.merged(4, "a varint").is_err());
        assert_eq!(m.last_bytes(3), [0x28, 2]);
        assert_eq!(m.last_bytes(1), [0u8; 0]);
    }
}
