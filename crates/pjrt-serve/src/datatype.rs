//! The Open Inference Protocol's tensor datatypes (`FP32`, `INT64`, `BOOL`, ...) and the PJRT
//! element types they stand for.

use std::fmt;

use pjrt_client::ElementType;

/// A tensor datatype of the protocol that maps to a PJRT element type. `BYTES` (strings) has
/// no PJRT element type: a model cannot take or give it, and a request that sends it is
/// refused naming it.
///
/// ```
/// use pjrt_serve::Datatype;
/// let t: Datatype = "FP32".parse().unwrap();
/// assert_eq!(t.element_type(), pjrt_client::ElementType::F32);
/// assert_eq!(t.size(), 4);
/// assert_eq!(Datatype::of(pjrt_client::ElementType::BF16), Some(Datatype::Bf16));
/// assert!("BYTES".parse::<Datatype>().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Datatype {
    /// `BOOL`: one byte per element, 0 or 1.
    Bool,
    /// `UINT8`.
    U8,
    /// `UINT16`.
    U16,
    /// `UINT32`.
    U32,
    /// `UINT64`.
    U64,
    /// `INT8`.
    I8,
    /// `INT16`.
    I16,
    /// `INT32`.
    I32,
    /// `INT64`.
    I64,
    /// `FP16`.
    F16,
    /// `FP32`.
    F32,
    /// `FP64`.
    F64,
    /// `BF16`.
    Bf16,
}

/// Each datatype: its protocol name, its element type, its size in bytes.
const TABLE: [(Datatype, &str, ElementType, usize); 13] = [
    (Datatype::Bool, "BOOL", ElementType::PRED, 1),
    (Datatype::U8, "UINT8", ElementType::U8, 1),
    (Datatype::U16, "UINT16", ElementType::U16, 2),
    (Datatype::U32, "UINT32", ElementType::U32, 4),
    (Datatype::U64, "UINT64", ElementType::U64, 8),
    (Datatype::I8, "INT8", ElementType::S8, 1),
    (Datatype::I16, "INT16", ElementType::S16, 2),
    (Datatype::I32, "INT32", ElementType::S32, 4),
    (Datatype::I64, "INT64", ElementType::S64, 8),
    (Datatype::F16, "FP16", ElementType::F16, 2),
    (Datatype::F32, "FP32", ElementType::F32, 4),
    (Datatype::F64, "FP64", ElementType::F64, 8),
    (Datatype::Bf16, "BF16", ElementType::BF16, 2),
];

impl Datatype {
    fn row(self) -> &'static (Datatype, &'static str, ElementType, usize) {
        TABLE.iter().find(|row| row.0 == self).expect("every datatype has a row")
    }

    /// The protocol's name (`FP32`).
    pub fn name(self) -> &'static str {
        self.row().1
    }

    /// The PJRT element type.
    pub fn element_type(self) -> ElementType {
        self.row().2
    }

    /// Bytes per element (in binary tensor data, little-endian).
    pub fn size(self) -> usize {
        self.row().3
    }

    /// The datatype of a PJRT element type; `None` for those the protocol has no name for
    /// (complex numbers, 8-bit and smaller floats, sub-byte integers, tokens).
    pub fn of(element_type: ElementType) -> Option<Datatype> {
        TABLE.iter().find(|row| row.2 == element_type).map(|row| row.0)
    }
}

impl fmt::Display for Datatype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Datatype {
    type Err = String;

    fn from_str(s: &str) -> Result<Datatype, String> {
        TABLE.iter().find(|row| row.1 == s).map(|row| row.0).ok_or_else(|| {
            let names: Vec<&str> = TABLE.iter().map(|row| row.1).collect();
            if s == "BYTES" {
                format!("datatype BYTES (strings) is not served: PJRT programs take {}", names.join(", "))
            } else {
                format!("unknown datatype {s:?}: one of {}", names.join(", "))
            }
        })
    }
}
