//! [`SafetensorsError`]: what can be wrong with a file, or with tensors given to the writer.

use std::path::PathBuf;

use pjrt_client::ElementType;

use super::{supported_dtypes, MAX_HEADER_BYTES};

/// Everything that can be wrong with a safetensors file, or with tensors given to the writer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SafetensorsError {
    /// Reading or writing the file failed.
    #[error("I/O error on safetensors file '{}': {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The contents of the file at `path` are invalid; `source` says how.
    #[error("invalid safetensors file '{}': {source}", path.display())]
    InFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        source: Box<SafetensorsError>,
    },
    /// The file is shorter than the 8-byte header length it must start with.
    #[error("the file is {len} bytes long, too short for the 8-byte header length a safetensors file starts with")]
    TooShort {
        /// The file's length in bytes.
        len: u64,
    },
    /// The header length field points past the end of the file, or beyond [`MAX_HEADER_BYTES`].
    #[error("{}", header_length_message(*header_len, *available))]
    HeaderLength {
        /// What the length field says.
        header_len: u64,
        /// The bytes that follow the length field.
        available: u64,
    },
    /// The header is not the JSON object the format describes.
    #[error("malformed safetensors header: {0}")]
    BadHeader(String),
    /// Two tensors have the same name.
    #[error("the tensor name '{0}' appears twice")]
    DuplicateName(String),
    /// A tensor's dtype is not one this crate knows.
    #[error("tensor '{tensor}' has dtype {dtype:?}, which is not supported (supported: {})", supported_dtypes())]
    UnknownDtype {
        /// The tensor.
        tensor: String,
        /// Its dtype as written.
        dtype: String,
    },
    /// The byte size of a tensor's shape does not fit in memory.
    #[error("tensor '{tensor}' has shape {dims:?}, too large to fit in memory")]
    ShapeOverflow {
        /// The tensor.
        tensor: String,
        /// Its dimensions.
        dims: Vec<i64>,
    },
    /// A dimension in a file's header is above `i64::MAX`, the largest dimension PJRT takes.
    #[error(
        "tensor '{tensor}' has shape dimension {value} at axis {axis}, above {}, the largest dimension PJRT takes",
        i64::MAX
    )]
    DimensionTooLarge {
        /// The tensor.
        tensor: String,
        /// The axis of its `shape` entry.
        axis: usize,
        /// The count the header gives.
        value: u64,
    },
    /// A dimension given to [`TensorView::new`](super::TensorView::new) is negative.
    #[error(
        "tensor '{tensor}' has shape {dims:?}, whose dimension at axis {axis} is negative: dimensions are \
         element counts, 0 or more"
    )]
    NegativeDimension {
        /// The tensor.
        tensor: String,
        /// The axis of the first negative dimension.
        axis: usize,
        /// Its dimensions.
        dims: Vec<i64>,
    },
    /// A tensor's data offsets span another number of bytes than its dtype and shape need.
    #[error("tensor '{tensor}' has {actual} data bytes but its dtype and shape need {expected}")]
    SizeMismatch {
        /// The tensor.
        tensor: String,
        /// The bytes dtype and shape need.
        expected: u64,
        /// The bytes the offsets (or the data given to the writer) span.
        actual: u64,
    },
    /// A tensor's data offsets are reversed or reach past the end of the file.
    #[error("tensor '{tensor}' has data offsets [{begin}, {end}], outside the {data_len}-byte data section")]
    OutOfRange {
        /// The tensor.
        tensor: String,
        /// Its first data offset.
        begin: u64,
        /// Its end data offset.
        end: u64,
        /// The size of the data section.
        data_len: u64,
    },
    /// Two tensors share bytes.
    #[error("the data of tensors '{other}' and '{tensor}' overlap")]
    Overlap {
        /// One tensor.
        tensor: String,
        /// The tensor whose bytes it overlaps.
        other: String,
    },
    /// Part of the data section belongs to no tensor (a gap, or bytes after the last one).
    #[error("data bytes [{begin}, {end}) belong to no tensor (the data must be covered exactly)")]
    Gap {
        /// First uncovered byte (relative to the data start).
        begin: u64,
        /// End of the uncovered range.
        end: u64,
    },
    /// No tensor has this name.
    #[error("no tensor named '{name}'{}", what_the_file_holds(available))]
    NotFound {
        /// The name asked for.
        name: String,
        /// The names in the file, in file order.
        available: Vec<String>,
    },
    /// The writer was given a tensor whose element type the format cannot store.
    #[error("tensor '{tensor}' is {element_type}, which safetensors cannot store (supported: {})", supported_dtypes())]
    UnsupportedElementType {
        /// The tensor.
        tensor: String,
        /// Its element type.
        element_type: ElementType,
    },
    /// A tensor's dtype has no `.npy` or Rust equivalent for the conversion asked for.
    #[error("{0}")]
    Conversion(String),
    /// A tensor of a packed sub-byte dtype (`F4`) whose elements do not fill whole bytes: the
    /// format refuses such tensors (the reference implementation's `MisalignedSlice`).
    #[error(
        "tensor '{tensor}' holds {elements} {element_type} elements, which do not fill whole bytes: safetensors \
         packs {element_type} {} per byte and stores only whole bytes",
        8 / element_type.bits().unwrap_or(8).max(1)
    )]
    Misaligned {
        /// The tensor.
        tensor: String,
        /// Its element type.
        element_type: ElementType,
        /// Its element count.
        elements: u64,
    },
}

impl SafetensorsError {
    /// The error with any [`SafetensorsError::InFile`] wrappers removed.
    pub fn without_path(&self) -> &SafetensorsError {
        let mut e = self;
        while let SafetensorsError::InFile { source, .. } = e {
            e = source;
        }
        e
    }

    pub(super) fn bad(message: impl Into<String>) -> Self {
        SafetensorsError::BadHeader(message.into())
    }
}

/// Lists names for an error message, at most 50 of them.
fn list_names(names: &[String]) -> String {
    const SHOWN: usize = 50;
    let mut text = names.iter().take(SHOWN).map(|n| format!("'{n}'")).collect::<Vec<_>>().join(", ");
    if names.len() > SHOWN {
        text.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    text
}

/// [`SafetensorsError::HeaderLength`]'s message: over the limit, or past the end of the file.
fn header_length_message(header_len: u64, available: u64) -> String {
    if header_len > MAX_HEADER_BYTES {
        format!("the header length field says {header_len} bytes, over the limit of {MAX_HEADER_BYTES}")
    } else {
        format!(
            "the header length field says {header_len} bytes but only {available} bytes follow it (truncated file?)"
        )
    }
}

/// The end of [`SafetensorsError::NotFound`]'s message: the names there are.
fn what_the_file_holds(available: &[String]) -> String {
    if available.is_empty() {
        ": the file holds no tensors".to_owned()
    } else {
        format!("; the file holds {}", list_names(available))
    }
}
