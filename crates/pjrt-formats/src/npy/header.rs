//! The file header: magic, version, header length and the header dict, parsed and checked
//! against the file size ([`parse_file_header`]).

use super::dtype::{checked_byte_len, Dtype, Endian};
use super::literal::{describe, Parser, Value};
use super::NpyError;

/// The 6 bytes every `.npy` file starts with.
pub(super) const MAGIC: &[u8; 6] = b"\x93NUMPY";
/// Data starts at a multiple of this many bytes in files NumPy writes.
pub(super) const ARRAY_ALIGN: usize = 64;
/// NumPy leaves room in the header for the first axis to grow to this many digits.
pub(super) const GROWTH_AXIS_MAX_DIGITS: usize = 21;

/// What the header of a file says, after validation against the file size.
pub(super) struct FileHeader {
    pub(super) dtype: Dtype,
    pub(super) endian: Endian,
    pub(super) fortran_order: bool,
    pub(super) dims: Vec<i64>,
    pub(super) data_offset: usize,
}

/// Parses and validates magic, version, header and data length.
pub(super) fn parse_file_header(bytes: &[u8]) -> Result<FileHeader, NpyError> {
    if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
        return Err(NpyError::BadMagic);
    }
    let (major, minor) = match bytes.get(6..8) {
        Some(&[major, minor]) => (major, minor),
        _ => {
            return Err(NpyError::BadHeader(format!(
                "file is truncated: {} bytes, too short for the version bytes",
                bytes.len()
            )))
        }
    };
    let len_size = match (major, minor) {
        (1, 0) => 2,
        (2, 0) | (3, 0) => 4,
        _ => return Err(NpyError::UnsupportedVersion { major, minor }),
    };
    let len_end = 8 + len_size;
    let len_bytes = bytes.get(8..len_end).ok_or_else(|| {
        NpyError::BadHeader(format!("file is truncated: {} bytes, too short for the header length field", bytes.len()))
    })?;
    let header_len = len_bytes.iter().rev().fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
    let available = bytes.len() - len_end;
    let header = usize::try_from(header_len)
        .ok()
        .and_then(|n| bytes.get(len_end..len_end.checked_add(n)?))
        .ok_or_else(|| {
            NpyError::BadHeader(format!(
                "file is truncated: header length field says {header_len} bytes \
                 but only {available} bytes follow it"
            ))
        })?;
    let data_offset = len_end + header.len();

    let text: String = if major == 3 {
        std::str::from_utf8(header)
            .map_err(|e| NpyError::BadHeader(format!("version 3.0 header is not valid UTF-8: {e}")))?
            .to_string()
    } else {
        // Versions 1.0 and 2.0 headers are latin-1.
        header.iter().map(|&b| char::from(b)).collect()
    };
    let fields = parse_header_dict(&text)?;
    let expected = checked_byte_len(fields.dtype, &fields.dims)?;
    let actual = bytes.len() - data_offset;
    if expected != actual {
        return Err(NpyError::SizeMismatch { expected, actual });
    }
    Ok(FileHeader {
        dtype: fields.dtype,
        endian: fields.endian,
        fortran_order: fields.fortran_order,
        dims: fields.dims,
        data_offset,
    })
}

/// The three values of a header dict, checked for type.
struct HeaderFields {
    dtype: Dtype,
    endian: Endian,
    fortran_order: bool,
    dims: Vec<i64>,
}

/// Parses the header text: a Python dict literal with exactly the keys
/// `descr`, `fortran_order` and `shape`, then only whitespace.
fn parse_header_dict(text: &str) -> Result<HeaderFields, NpyError> {
    let mut p = Parser { s: text.as_bytes(), pos: 0 };
    p.skip_ws();
    p.expect(b'{', "the header must be a dict starting with '{'")?;
    let mut descr: Option<(Value, &str)> = None;
    let mut fortran: Option<Value> = None;
    let mut shape: Option<Value> = None;
    loop {
        p.skip_ws();
        if p.eat(b'}') {
            break;
        }
        let key_pos = p.pos;
        let key = match p.value(0)? {
            Value::Str(k) => k,
            other => return Err(p.error_at(key_pos, &format!("dict keys must be strings, found {}", describe(&other)))),
        };
        p.skip_ws();
        p.expect(b':', "expected ':' after a dict key")?;
        p.skip_ws();
        let start = p.pos;
        let value = p.value(0)?;
        let raw = text.get(start..p.pos).unwrap_or("");
        let slot_taken = match key.as_str() {
            "descr" => descr.replace((value, raw)).is_some(),
            "fortran_order" => fortran.replace(value).is_some(),
            "shape" => shape.replace(value).is_some(),
            _ => {
                return Err(NpyError::BadHeader(format!(
                    "unexpected key {key:?}; a .npy header has exactly the keys \
                     'descr', 'fortran_order' and 'shape'"
                )))
            }
        };
        if slot_taken {
            return Err(NpyError::BadHeader(format!("duplicate key {key:?}")));
        }
        p.skip_ws();
        if p.eat(b',') {
            continue;
        }
        p.skip_ws();
        p.expect(b'}', "expected ',' or '}' after a dict value")?;
        break;
    }
    p.skip_ws();
    if p.pos != p.s.len() {
        return Err(p.error_at(p.pos, "unexpected text after the closing '}'"));
    }

    let missing = |k: &str| {
        NpyError::BadHeader(format!(
            "missing key '{k}'; a .npy header has exactly the keys \
             'descr', 'fortran_order' and 'shape'"
        ))
    };
    let (descr, descr_raw) = descr.ok_or_else(|| missing("descr"))?;
    let fortran = fortran.ok_or_else(|| missing("fortran_order"))?;
    let shape = shape.ok_or_else(|| missing("shape"))?;

    let (dtype, endian) = match descr {
        Value::Str(s) => Dtype::from_descr(&s)?,
        _ => return Err(NpyError::UnsupportedDtype { descr: descr_raw.to_string() }),
    };
    let fortran_order = match fortran {
        Value::Bool(b) => b,
        other => {
            return Err(NpyError::BadHeader(format!(
                "'fortran_order' must be True or False, found {}",
                describe(&other)
            )))
        }
    };
    let items = match shape {
        Value::Tuple(items) => items,
        other => {
            return Err(NpyError::BadHeader(format!("'shape' must be a tuple of integers, found {}", describe(&other))))
        }
    };
    // Counts in the file, converted once here to the signed dimensions PJRT takes.
    let mut dims = Vec::with_capacity(items.len());
    for (axis, d) in items.iter().enumerate() {
        let dim = match d {
            Value::Int { negative: false, magnitude: Some(m) } => i64::try_from(*m).ok(),
            Value::Int { negative: false, magnitude: None } => None,
            Value::Int { negative: true, magnitude } => {
                if *magnitude == Some(0) {
                    Some(0)
                } else {
                    return Err(NpyError::BadHeader(format!("'shape' has a negative dimension at axis {axis}")));
                }
            }
            other => {
                return Err(NpyError::BadHeader(format!(
                    "'shape' must be a tuple of integers, but axis {axis} is {}",
                    describe(other)
                )))
            }
        };
        match dim {
            Some(dim) => dims.push(dim),
            None => {
                return Err(NpyError::BadHeader(format!(
                    "'shape' dimension at axis {axis} is above {}, the largest dimension PJRT takes",
                    i64::MAX
                )))
            }
        }
    }
    Ok(HeaderFields { dtype, endian, fortran_order, dims })
}
