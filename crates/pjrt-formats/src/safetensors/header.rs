//! The header: its length field and JSON read, every entry checked against the data section.

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use pjrt_client::ElementType;

use super::packing::{byte_size, checked_count};
use super::{element_type_of, SafetensorsError, MAX_HEADER_BYTES, MAX_RANK, METADATA_KEY};

/// A checked tensor entry: byte range is absolute within the storage (read by the uploads of
/// `safetensors_uploads.rs` too).
pub(crate) struct Entry {
    pub(crate) name: String,
    pub(crate) dtype: ElementType,
    pub(crate) dims: Vec<i64>,
    pub(crate) start: usize,
    pub(crate) end: usize,
}

/// One tensor entry as written in the header, before any check.
pub(super) struct RawEntry {
    dtype: String,
    shape: Vec<u64>,
    offsets: (u64, u64),
}

/// The header as written: tensors in header order, names unique.
pub(super) struct RawHeader {
    pub(super) tensors: Vec<(String, RawEntry)>,
    pub(super) metadata: Vec<(String, String)>,
}

/// Reads the length field and parses the JSON header; returns where the data starts.
pub(super) fn parse_header(bytes: &[u8]) -> Result<(usize, RawHeader), SafetensorsError> {
    let len_field: [u8; 8] = match bytes.get(..8) {
        Some(field) => field.try_into().unwrap_or([0; 8]),
        None => return Err(SafetensorsError::TooShort { len: bytes.len() as u64 }),
    };
    let header_len = u64::from_le_bytes(len_field);
    let available = (bytes.len() - 8) as u64;
    if header_len > MAX_HEADER_BYTES || header_len > available {
        return Err(SafetensorsError::HeaderLength { header_len, available });
    }
    let header_end = 8 + header_len as usize;
    let text = &bytes[8..header_end];
    if text.first() != Some(&b'{') {
        return Err(SafetensorsError::bad("the header must be a JSON object starting with '{'"));
    }
    let raw: RawHeader = serde_json::from_slice(text).map_err(|e| match e.classify() {
        // Our own checks (duplicates, fields) come back as "data" errors with our message.
        serde_json::error::Category::Data => {
            let message = e.to_string();
            match message.strip_prefix(DUPLICATE_PREFIX) {
                Some(rest) => SafetensorsError::DuplicateName(
                    rest.rsplit_once(DUPLICATE_SUFFIX).map_or(rest, |(name, _)| name).to_string(),
                ),
                None => SafetensorsError::bad(message),
            }
        }
        _ => SafetensorsError::bad(format!("not valid JSON: {e}")),
    })?;
    Ok((header_end, raw))
}

/// How the header visitor reports a duplicated tensor name (turned into [`DuplicateName`]).
///
/// [`DuplicateName`]: SafetensorsError::DuplicateName
const DUPLICATE_PREFIX: &str = "duplicate tensor name <<";
const DUPLICATE_SUFFIX: &str = ">>";

/// Checks every entry against the data section; returns them sorted by offset.
pub(super) fn check_entries(
    raw: Vec<(String, RawEntry)>,
    header_end: usize,
    data_len: u64,
) -> Result<Vec<Entry>, SafetensorsError> {
    let mut entries = Vec::with_capacity(raw.len());
    for (name, entry) in raw {
        let dtype = element_type_of(&entry.dtype)
            .ok_or_else(|| SafetensorsError::UnknownDtype { tensor: name.clone(), dtype: entry.dtype.clone() })?;
        // Counts in the file, converted once here to the signed dimensions PJRT takes.
        let dims = entry
            .shape
            .iter()
            .enumerate()
            .map(|(axis, &value)| {
                i64::try_from(value).map_err(|_| SafetensorsError::DimensionTooLarge {
                    tensor: name.clone(),
                    axis,
                    value,
                })
            })
            .collect::<Result<Vec<i64>, _>>()?;
        let (expected, whole_bytes) = byte_size(dtype, &dims)
            .ok_or_else(|| SafetensorsError::ShapeOverflow { tensor: name.clone(), dims: dims.clone() })?;
        if !whole_bytes {
            let elements = checked_count(&dims).unwrap_or(0) as u64;
            return Err(SafetensorsError::Misaligned { tensor: name, element_type: dtype, elements });
        }
        let expected = expected as u64;
        let (begin, end) = entry.offsets;
        if begin > end || end > data_len {
            return Err(SafetensorsError::OutOfRange { tensor: name, begin, end, data_len });
        }
        if end - begin != expected {
            return Err(SafetensorsError::SizeMismatch { tensor: name, expected, actual: end - begin });
        }
        // In range of the data section, which is in memory, so these fit in usize.
        let start = header_end + begin as usize;
        entries.push(Entry { name, dtype, dims, start, end: header_end + end as usize });
    }
    entries.sort_by_key(|e| (e.start, e.end));
    let mut covered = header_end;
    for (i, e) in entries.iter().enumerate() {
        if e.start < covered {
            let other = entries[..i].iter().rev().find(|o| o.end > e.start).map_or("?", |o| o.name.as_str());
            return Err(SafetensorsError::Overlap { tensor: e.name.clone(), other: other.to_string() });
        }
        if e.start > covered {
            return Err(SafetensorsError::Gap {
                begin: (covered - header_end) as u64,
                end: (e.start - header_end) as u64,
            });
        }
        covered = e.end;
    }
    let covered = (covered - header_end) as u64;
    if covered != data_len {
        return Err(SafetensorsError::Gap { begin: covered, end: data_len });
    }
    Ok(entries)
}

impl<'de> Deserialize<'de> for RawHeader {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct HeaderVisitor;
        impl<'de> Visitor<'de> for HeaderVisitor {
            type Value = RawHeader;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object mapping tensor names to entries")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawHeader, A::Error> {
                let mut tensors = Vec::new();
                let mut names = HashSet::new();
                let mut metadata = None;
                while let Some(key) = map.next_key::<String>()? {
                    if key == METADATA_KEY {
                        if metadata.is_some() {
                            return Err(de::Error::custom("the header has two __metadata__ entries"));
                        }
                        metadata = Some(map.next_value::<Metadata>()?.0);
                        continue;
                    }
                    if !names.insert(key.clone()) {
                        return Err(de::Error::custom(format!("{DUPLICATE_PREFIX}{key}{DUPLICATE_SUFFIX}")));
                    }
                    let entry = map.next_value_seed(EntrySeed(&key))?;
                    tensors.push((key, entry));
                }
                Ok(RawHeader { tensors, metadata: metadata.unwrap_or_default() })
            }
        }
        deserializer.deserialize_map(HeaderVisitor)
    }
}

/// The `__metadata__` object: string keys (unique) to string values.
struct Metadata(Vec<(String, String)>);

impl<'de> Deserialize<'de> for Metadata {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MetadataVisitor;
        impl<'de> Visitor<'de> for MetadataVisitor {
            type Value = Metadata;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("__metadata__ to be an object of string values")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Metadata, A::Error> {
                let mut out: Vec<(String, String)> = Vec::new();
                let mut keys = HashSet::new();
                while let Some(key) = map.next_key::<String>()? {
                    let value: String = map
                        .next_value()
                        .map_err(|_| de::Error::custom(format!("__metadata__ value of '{key}' must be a string")))?;
                    if !keys.insert(key.clone()) {
                        return Err(de::Error::custom(format!("__metadata__ has the key '{key}' twice")));
                    }
                    out.push((key, value));
                }
                Ok(Metadata(out))
            }
        }
        deserializer.deserialize_map(MetadataVisitor)
    }
}

/// Deserializes one tensor entry, naming the tensor in errors.
struct EntrySeed<'n>(&'n str);

impl<'de> de::DeserializeSeed<'de> for EntrySeed<'_> {
    type Value = RawEntry;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<RawEntry, D::Error> {
        struct EntryVisitor<'n>(&'n str);
        impl<'de> Visitor<'de> for EntryVisitor<'_> {
            type Value = RawEntry;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "tensor '{}' to be an object with dtype, shape and data_offsets", self.0)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawEntry, A::Error> {
                let name = self.0;
                let (mut dtype, mut shape, mut offsets) = (None, None, None);
                while let Some(key) = map.next_key::<String>()? {
                    let twice = || de::Error::custom(format!("tensor '{name}' has the field '{key}' twice"));
                    match key.as_str() {
                        "dtype" => {
                            if dtype.is_some() {
                                return Err(twice());
                            }
                            dtype =
                                Some(map.next_value::<String>().map_err(|_| {
                                    de::Error::custom(format!("tensor '{name}': dtype must be a string"))
                                })?);
                        }
                        "shape" => {
                            if shape.is_some() {
                                return Err(twice());
                            }
                            shape = Some(map.next_value_seed(U64List { name, field: "shape", max: MAX_RANK })?);
                        }
                        "data_offsets" => {
                            if offsets.is_some() {
                                return Err(twice());
                            }
                            let pair = map.next_value_seed(U64List { name, field: "data_offsets", max: 2 })?;
                            match pair[..] {
                                [begin, end] => offsets = Some((begin, end)),
                                _ => {
                                    return Err(de::Error::custom(format!(
                                        "tensor '{name}': data_offsets must be [begin, end]"
                                    )))
                                }
                            }
                        }
                        other => {
                            return Err(de::Error::custom(format!(
                                "tensor '{name}' has an unknown field '{other}' (expected dtype, shape, data_offsets)"
                            )))
                        }
                    }
                }
                let missing = |field| de::Error::custom(format!("tensor '{name}' has no '{field}' field"));
                Ok(RawEntry {
                    dtype: dtype.ok_or_else(|| missing("dtype"))?,
                    shape: shape.ok_or_else(|| missing("shape"))?,
                    offsets: offsets.ok_or_else(|| missing("data_offsets"))?,
                })
            }
        }
        deserializer.deserialize_map(EntryVisitor(self.0))
    }
}

/// A JSON array of non-negative integers, at most `max` long (so no allocation grows with it).
struct U64List<'n> {
    name: &'n str,
    field: &'static str,
    max: usize,
}

impl<'de> de::DeserializeSeed<'de> for U64List<'_> {
    type Value = Vec<u64>;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Vec<u64>, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for U64List<'_> {
    type Value = Vec<u64>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "tensor '{}': {} to be an array of non-negative integers", self.name, self.field)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u64>, A::Error> {
        let mut out = Vec::new();
        loop {
            let item = seq.next_element::<u64>().map_err(|_| {
                de::Error::custom(format!(
                    "tensor '{}': {} must hold non-negative integers below 2^64",
                    self.name, self.field
                ))
            })?;
            let Some(item) = item else { break };
            if out.len() == self.max {
                return Err(de::Error::custom(format!(
                    "tensor '{}': {} has more than {} entries",
                    self.name, self.field, self.max
                )));
            }
            out.push(item);
        }
        Ok(out)
    }
}
