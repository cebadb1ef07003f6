//! Reading and writing `.safetensors` files, and uploading them to a device in one call.
//!
//! The format: an 8-byte little-endian `u64` N, then N bytes of JSON header, then the data.
//! The header maps each tensor name to `{"dtype": "F32", "shape": [2, 3], "data_offsets":
//! [begin, end]}` (offsets relative to the start of the data) and may hold one
//! `"__metadata__"` object of string values. The data must be covered exactly: no gaps, no
//! overlaps, nothing after the last tensor.
//!
//! [`SafeTensors::open`] reads the file once, into page-aligned memory of its own: a
//! [`TensorView`] borrows its bytes from there, and [`crate::ClientExt::upload_safetensors`] hands
//! those bytes straight to the plugin, which reads aligned tensors in place (no second copy).
//! What another process does to the file afterwards changes nothing. [`SafeTensors::open_mapped`]
//! (`unsafe`) memory-maps the file instead, so that nothing is read before it is used; its caller
//! promises that the file is neither modified nor truncated meanwhile. Every check is done
//! once, when the file is opened, and treats the file as hostile: a malformed header gives a
//! [`SafetensorsError`], never a panic, and nothing is allocated in proportion to what the
//! header claims, only to its real length.
//!
//! `F4` (float4_e2m1fn) tensors are stored packed, two elements per byte, while PJRT takes one
//! element per byte: [`TensorView::host_bytes`] and [`crate::ClientExt::upload_tensor_view`] unpack them,
//! [`pack_sub_byte`] packs host values for the writer.
//!
//! ```no_run
//! use pjrt_formats::safetensors::{self, SafeTensors, TensorView};
//! use pjrt_client::ElementType;
//!
//! # fn main() -> pjrt_formats::Result<()> {
//! let w: Vec<u8> = [1f32, 2., 3., 4.].iter().flat_map(|v| v.to_le_bytes()).collect();
//! let view = TensorView::new(ElementType::F32, &[2, 2], &w)?;
//! safetensors::write("weights.safetensors", &[("w", view)], &[("format", "pt")])?;
//!
//! let file = SafeTensors::open("weights.safetensors")?;
//! assert_eq!(file.names().collect::<Vec<_>>(), ["w"]);
//! assert_eq!(file.tensor("w")?.to_vec::<f32>()?, [1., 2., 3., 4.]);
//! # Ok(()) }
//! ```

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use pjrt_client::{ElementType, NativeType, SharedBytes};

use crate::file_bytes::FileBytes;
use crate::npy::{Dtype, NpyArray};

/// The largest header accepted (the limit the reference implementation uses too).
pub const MAX_HEADER_BYTES: u64 = 100_000_000;
/// The highest rank accepted for a tensor.
pub const MAX_RANK: usize = 64;
/// The header key that holds the free-form string metadata.
const METADATA_KEY: &str = "__metadata__";

/// Each safetensors dtype name and the element type it holds.
const DTYPES: &[(&str, ElementType)] = &[
    ("BOOL", ElementType::PRED),
    ("U8", ElementType::U8),
    ("I8", ElementType::S8),
    ("U16", ElementType::U16),
    ("I16", ElementType::S16),
    ("U32", ElementType::U32),
    ("I32", ElementType::S32),
    ("U64", ElementType::U64),
    ("I64", ElementType::S64),
    ("F16", ElementType::F16),
    ("BF16", ElementType::BF16),
    ("F32", ElementType::F32),
    ("F64", ElementType::F64),
    ("C64", ElementType::C64),
    ("F8_E4M3", ElementType::F8E4M3FN),
    ("F8_E5M2", ElementType::F8E5M2),
    ("F8_E4M3FNUZ", ElementType::F8E4M3FNUZ),
    ("F8_E5M2FNUZ", ElementType::F8E5M2FNUZ),
    ("F8_E8M0", ElementType::F8E8M0FNU),
    // Packed two per byte (see `pack_sub_byte`). The format also names F6_E2M3 and F6_E3M2,
    // but no writer defines how four 6-bit values fill three bytes, so they stay unsupported
    // rather than risk reading values in the wrong bit order.
    ("F4", ElementType::F4E2M1FN),
];

/// The element type a safetensors dtype name (`"F32"`, `"BF16"`, `"F8_E4M3"`, ...) holds.
/// `F8_E4M3` is the finite-only variant (`f8e4m3fn`), as in PyTorch and ml_dtypes; `F4` is
/// `f4e2m1fn`, stored two per byte.
///
/// ```
/// use pjrt_formats::safetensors::element_type_of;
/// use pjrt_client::ElementType;
/// assert_eq!(element_type_of("F4"), Some(ElementType::F4E2M1FN));
/// assert_eq!(element_type_of("F6_E2M3"), None); // no agreed bit order for 6-bit values
/// ```
pub fn element_type_of(dtype: &str) -> Option<ElementType> {
    DTYPES.iter().find(|(name, _)| *name == dtype).map(|(_, t)| *t)
}

/// The safetensors dtype name of an element type, if the format has one (it has none for
/// `c128`, the sub-byte integers, the 6-bit floats and the newer 8-bit floats).
pub fn dtype_name(element_type: ElementType) -> Option<&'static str> {
    DTYPES.iter().find(|(_, t)| *t == element_type).map(|(name, _)| *name)
}

fn supported_dtypes() -> String {
    DTYPES.iter().map(|(name, _)| *name).collect::<Vec<_>>().join(", ")
}

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
    /// A dimension given to [`TensorView::new`] is negative.
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

    fn bad(message: impl Into<String>) -> Self {
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

/// Byte size of a tensor in the file (sub-byte types packed), `None` on overflow; whether its
/// elements fill whole bytes (the format refuses those that do not).
fn byte_size(element_type: ElementType, dims: &[i64]) -> Option<(usize, bool)> {
    let count = checked_count(dims)?;
    let bits = count.checked_mul(element_type.bits()?)?;
    let bytes = element_type.packed_bytes(count).filter(|b| *b <= isize::MAX as usize)?;
    Some((bytes, bits % 8 == 0))
}

/// The number of elements of these dimensions, `None` if one is negative or the product overflows.
fn checked_count(dims: &[i64]) -> Option<usize> {
    dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(usize::try_from(d).ok()?))
}

/// The bit stream order of packed sub-byte values: element `i` takes bits `[i*b, (i+1)*b)`,
/// counted from the least significant bit of byte 0. For F4 that is element 0 in the low
/// nibble of byte 0, element 1 in its high nibble: the layout of PyTorch's
/// `float4_e2m1fn_x2` ("val1 : val0" in bits 7654 : 3210, torch/headeronly/util/
/// Float4_e2m1fn_x2.h), whose storage bytes safetensors writes as its `F4` data
/// (bindings/python/src/lib.rs of huggingface/safetensors: two F4 values per byte).
fn bit_position(index: usize, bits: usize) -> (usize, usize) {
    let bit = index * bits;
    (bit / 8, bit % 8)
}

/// Packs values of a sub-byte type held one per byte (the host form PJRT and ml_dtypes use:
/// the value in the low bits, signed ones possibly sign-extended) into the packed form
/// safetensors stores, element 0 in the low bits of byte 0 (see the module docs). The last
/// byte is padded with zero bits when the values do not fill it. Whole-byte types come back
/// as they are. A byte that holds no value of the type is an error: nothing is truncated.
///
/// ```
/// use pjrt_formats::safetensors::{pack_sub_byte, unpack_sub_byte};
/// use pjrt_client::ElementType;
/// // float4_e2m1fn codes 1.0 (2), 6.0 (7), -0.5 (9): low nibble first, the last one padded.
/// let packed = pack_sub_byte(ElementType::F4E2M1FN, &[2, 7, 9])?;
/// assert_eq!(packed, [0x72, 0x09]);
/// assert_eq!(unpack_sub_byte(ElementType::F4E2M1FN, &packed, 3)?, [2, 7, 9]);
/// assert!(pack_sub_byte(ElementType::F4E2M1FN, &[16]).is_err());
/// # Ok::<(), pjrt_formats::safetensors::SafetensorsError>(())
/// ```
pub fn pack_sub_byte(element_type: ElementType, host: &[u8]) -> Result<Vec<u8>, SafetensorsError> {
    let Some(bits) = element_type.bits().filter(|_| element_type.is_sub_byte()) else { return Ok(host.to_vec()) };
    element_type.check_host_values(host).map_err(|e| SafetensorsError::Conversion(e.to_string()))?;
    let size = element_type
        .packed_bytes(host.len())
        .ok_or_else(|| SafetensorsError::Conversion(format!("{} {element_type} values are too many", host.len())))?;
    let mask = (1u16 << bits) - 1;
    let mut out = vec![0u8; size];
    for (i, &value) in host.iter().enumerate() {
        let (byte, shift) = bit_position(i, bits);
        // A value may straddle two bytes (6-bit types): its high bits go to the next one.
        let wide = (u16::from(value) & mask) << shift;
        out[byte] |= wide as u8;
        if wide > 0xff {
            out[byte + 1] |= (wide >> 8) as u8;
        }
    }
    Ok(out)
}

/// Unpacks `count` elements of a sub-byte type from the packed form safetensors stores into
/// one element per byte, the value in the low bits (what PJRT uploads take; the inverse of
/// [`pack_sub_byte`]). `packed` must be exactly `ceil(count * bits / 8)` bytes. Whole-byte
/// types come back as they are.
pub fn unpack_sub_byte(element_type: ElementType, packed: &[u8], count: usize) -> Result<Vec<u8>, SafetensorsError> {
    let Some(bits) = element_type.bits().filter(|_| element_type.is_sub_byte()) else { return Ok(packed.to_vec()) };
    let size = element_type.packed_bytes(count);
    if size != Some(packed.len()) {
        return Err(SafetensorsError::Conversion(format!(
            "{count} packed {element_type} elements take {} bytes, not {}",
            size.map_or_else(|| "too many".to_string(), |s| s.to_string()),
            packed.len()
        )));
    }
    let mask = (1u16 << bits) - 1;
    Ok((0..count)
        .map(|i| {
            let (byte, shift) = bit_position(i, bits);
            let low = u16::from(packed[byte]);
            let high = packed.get(byte + 1).map_or(0, |b| u16::from(*b) << 8);
            (((low | high) >> shift) & mask) as u8
        })
        .collect())
}

/// One tensor's dtype, shape and bytes, borrowed (from an open file, or from the caller for the
/// writer). The byte length always matches dtype and shape.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct TensorView<'a> {
    dtype: ElementType,
    dims: &'a [i64],
    bytes: &'a [u8],
}

impl<'a> TensorView<'a> {
    /// A view of `bytes` (dense, row-major, little-endian) as a tensor of dimensions `dims`
    /// (as PJRT and [`HostArray::dims`](pjrt_client::HostArray::dims) take them); checks that no
    /// dimension is negative and that the length matches. `F4` bytes are packed, two elements
    /// per byte (see [`pack_sub_byte`]).
    ///
    /// ```
    /// use pjrt_client::ElementType;
    /// use pjrt_formats::safetensors::{SafetensorsError, TensorView};
    /// let bytes = [0u8; 6];
    /// let view = TensorView::new(ElementType::U8, &[2, 3], &bytes)?;
    /// assert_eq!(view.dims(), [2, 3]);
    /// let negative = TensorView::new(ElementType::U8, &[-2, -3], &bytes);
    /// assert!(matches!(negative, Err(SafetensorsError::NegativeDimension { axis: 0, .. })));
    /// # Ok::<(), SafetensorsError>(())
    /// ```
    pub fn new(dtype: ElementType, dims: &'a [i64], bytes: &'a [u8]) -> Result<Self, SafetensorsError> {
        let unnamed = || String::from("(unnamed)");
        if dtype_name(dtype).is_none() {
            return Err(SafetensorsError::UnsupportedElementType { tensor: unnamed(), element_type: dtype });
        }
        if let Some(axis) = dims.iter().position(|&d| d < 0) {
            return Err(SafetensorsError::NegativeDimension { tensor: unnamed(), axis, dims: dims.to_vec() });
        }
        let (expected, whole_bytes) = byte_size(dtype, dims)
            .ok_or_else(|| SafetensorsError::ShapeOverflow { tensor: unnamed(), dims: dims.to_vec() })?;
        if !whole_bytes {
            let elements = checked_count(dims).unwrap_or(0) as u64;
            return Err(SafetensorsError::Misaligned { tensor: unnamed(), element_type: dtype, elements });
        }
        if expected != bytes.len() {
            return Err(SafetensorsError::SizeMismatch {
                tensor: unnamed(),
                expected: expected as u64,
                actual: bytes.len() as u64,
            });
        }
        Ok(TensorView { dtype, dims, bytes })
    }

    /// A view of a `.npy` array; ml_dtypes' bfloat16 (`V2`) becomes [`ElementType::BF16`].
    pub fn from_npy(array: &'a NpyArray) -> Result<Self, SafetensorsError> {
        TensorView::new(crate::npy::element_type_of(array.dtype), &array.dims, &array.data)
    }

    /// The element type.
    pub fn dtype(&self) -> ElementType {
        self.dtype
    }

    /// The dimensions (empty for a scalar), as PJRT takes them.
    pub fn dims(&self) -> &'a [i64] {
        self.dims
    }

    /// The raw data as the file holds it: row-major, little-endian, tightly packed (`F4` two
    /// elements per byte).
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The data as PJRT uploads take it: the file's bytes, except that `F4` is unpacked to one
    /// element per byte (a copy, [`unpack_sub_byte`]).
    ///
    /// ```
    /// use pjrt_formats::safetensors::TensorView;
    /// use pjrt_client::ElementType;
    /// let packed = [0x72, 0x9f];
    /// let view = TensorView::new(ElementType::F4E2M1FN, &[4], &packed)?;
    /// assert_eq!(&*view.host_bytes()?, [2, 7, 15, 9]);
    /// # Ok::<(), pjrt_formats::safetensors::SafetensorsError>(())
    /// ```
    pub fn host_bytes(&self) -> Result<std::borrow::Cow<'a, [u8]>, SafetensorsError> {
        if self.dtype.is_sub_byte() {
            return Ok(std::borrow::Cow::Owned(unpack_sub_byte(self.dtype, self.bytes, self.element_count())?));
        }
        Ok(std::borrow::Cow::Borrowed(self.bytes))
    }

    /// The number of elements.
    pub fn element_count(&self) -> usize {
        // Checked at construction: non-negative, and the product fits.
        checked_count(self.dims).unwrap_or(0)
    }

    /// The elements as Rust values (copied: file data need not be aligned for `T`).
    pub fn to_vec<T: NativeType>(&self) -> Result<Vec<T>, SafetensorsError> {
        if T::ELEMENT_TYPE != self.dtype {
            return Err(SafetensorsError::Conversion(format!(
                "requested {} elements but the tensor holds {}",
                T::ELEMENT_TYPE,
                self.dtype
            )));
        }
        // A bool may only be 0 or 1; any other byte would be an invalid `bool`.
        if self.dtype == ElementType::PRED && self.bytes.iter().any(|&b| b > 1) {
            return Err(SafetensorsError::Conversion("a BOOL tensor holds bytes other than 0 and 1".into()));
        }
        let count = self.element_count();
        let mut out: Vec<T> = Vec::with_capacity(count);
        // SAFETY: `bytes` holds exactly `count` elements of `T`'s layout (checked at
        // construction; `T: NativeType` matches the dtype, has no padding and, for bool, the
        // bytes were just checked); the copy is bytewise, so alignment does not matter, and the
        // length is set only after the elements are written.
        unsafe {
            std::ptr::copy_nonoverlapping(self.bytes.as_ptr(), out.as_mut_ptr() as *mut u8, self.bytes.len());
            out.set_len(count);
        }
        Ok(out)
    }

    /// A `.npy` array holding a copy of the data; bf16 becomes ml_dtypes' `V2`, `F4` a `uint8`
    /// array of its bit codes, one per element (as [`crate::npy::dtype_of`] widens it).
    /// The 8-bit float types have no `.npy` dtype here.
    pub fn to_npy(&self) -> Result<NpyArray, SafetensorsError> {
        let dtype = match self.dtype {
            ElementType::BF16 => Dtype::V2,
            other => crate::npy::dtype_of(other).ok_or_else(|| {
                SafetensorsError::Conversion(format!("{other} tensors cannot be converted to .npy arrays"))
            })?,
        };
        NpyArray::new(dtype, self.dims.to_vec(), self.host_bytes()?.into_owned())
            .map_err(|e| SafetensorsError::Conversion(e.to_string()))
    }
}

impl fmt::Debug for TensorView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TensorView")
            .field("dtype", &self.dtype)
            .field("dims", &self.dims)
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

/// Where the file's bytes live.
enum Storage {
    /// Read from a file, or its mapping ([`SafeTensors::open_mapped`]).
    File(FileBytes),
    /// Given by the caller ([`SafeTensors::from_bytes`]).
    Owned(Vec<u8>),
}

impl Storage {
    fn bytes(&self) -> &[u8] {
        match self {
            Storage::File(file) => file.bytes(),
            Storage::Owned(bytes) => bytes,
        }
    }
}

// SAFETY: file bytes keep `FileBytes`' promise (the same memory, unchanged, for as long as they
// live: memory of their own, or a mapping whose `unsafe` constructor's caller promised it), and
// a vector's heap data moves or changes only through `&mut`, which the shared `Arc<Storage>`
// never gives.
unsafe impl pjrt_client::SharedHostBytes for Storage {
    fn host_bytes(&self) -> &[u8] {
        self.bytes()
    }
}

/// A checked tensor entry: byte range is absolute within the storage (read by the uploads of
/// `safetensors_uploads.rs` too).
pub(crate) struct Entry {
    pub(crate) name: String,
    pub(crate) dtype: ElementType,
    pub(crate) dims: Vec<i64>,
    pub(crate) start: usize,
    pub(crate) end: usize,
}

/// An open safetensors file, checked: its bytes read into memory of its own
/// ([`SafeTensors::open`]) or, behind `unsafe`, memory-mapped ([`SafeTensors::open_mapped`]).
///
/// Buffers uploaded from it in place keep those bytes (see [`SafeTensors::shared_bytes`]), so
/// they may outlive it; on a CPU plugin they are the buffers' memory.
pub struct SafeTensors {
    /// Shared with the buffers uploaded from it in place (see [`SafeTensors::shared_bytes`]).
    storage: Arc<Storage>,
    path: Option<PathBuf>,
    /// In data-offset order.
    pub(crate) entries: Vec<Entry>,
    metadata: BTreeMap<String, String>,
    data_len: u64,
}

impl fmt::Debug for SafeTensors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SafeTensors")
            .field("path", &self.path)
            .field("tensors", &self.entries.len())
            .field("data_bytes", &self.data_len)
            .finish()
    }
}

impl SafeTensors {
    /// Reads and checks a file. Errors name the file.
    ///
    /// The whole file is read once, into page-aligned memory of its own (about as fast as the
    /// disk or page cache gives it; no other copy follows for aligned tensors, which uploads
    /// read in place). What happens to the file afterwards changes nothing here nor in the
    /// buffers uploaded from it.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, SafetensorsError> {
        Self::open_with(path.as_ref(), FileBytes::read)
    }

    /// Memory-maps and checks a file: nothing is read before it is used, and buffers uploaded
    /// in place read the page cache itself. Errors name the file.
    ///
    /// ```
    /// use pjrt_client::{ElementType, Placement};
    /// use pjrt_formats::safetensors::{write, SafeTensors, TensorView};
    /// use pjrt_formats::ClientExt;
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// let path = std::env::temp_dir().join(format!("st-mapped-doc-{}.safetensors", std::process::id()));
    /// let x: Vec<u8> = [1f32, 2., 3., 4.].iter().flat_map(|v| v.to_le_bytes()).collect();
    /// write(&path, &[("x", TensorView::new(ElementType::F32, &[4], &x)?)], &[])?;
    /// // SAFETY: this file is ours; nothing modifies or truncates it before it is removed, after
    /// // the buffer (which reads it in place) is dropped.
    /// let file = unsafe { SafeTensors::open_mapped(&path)? };
    /// assert!(file.is_mapped());
    /// let buffer = client.upload_tensor(&file, "x", None, Placement::Default)?;
    /// assert_eq!(buffer.to_vec::<f32>()?, [1., 2., 3., 4.]);
    /// drop((buffer, file));
    /// std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Safety
    /// The file must not be modified or truncated, by this process or any other, while the
    /// returned value, a [`TensorView`] or [`SharedBytes`] from it, or a buffer uploaded from it
    /// lives (a buffer uploaded in place keeps the mapping until it is dropped): the mapping
    /// reads the file as it is at each access, so a rewrite silently changes those values and a
    /// truncation ends the process with SIGBUS at the next read (as for
    /// [`memmap2::Mmap::map`]). Replacing the file by renaming another over it is fine.
    pub unsafe fn open_mapped(path: impl AsRef<Path>) -> Result<Self, SafetensorsError> {
        // SAFETY: the caller's promise (this function's contract) is `FileBytes::map`'s.
        Self::open_with(path.as_ref(), |path| unsafe { FileBytes::map(path) })
    }

    fn open_with(
        path: &Path,
        bytes: impl FnOnce(&Path) -> std::io::Result<FileBytes>,
    ) -> Result<Self, SafetensorsError> {
        let storage = bytes(path).map_err(|source| SafetensorsError::Io { path: path.to_path_buf(), source })?;
        Self::from_storage(Storage::File(storage), Some(path.to_path_buf()))
            .map_err(|e| SafetensorsError::InFile { path: path.to_path_buf(), source: Box::new(e) })
    }

    /// Checks a whole file held in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Self, SafetensorsError> {
        Self::from_storage(Storage::Owned(bytes), None)
    }

    fn from_storage(storage: Storage, path: Option<PathBuf>) -> Result<Self, SafetensorsError> {
        let bytes = storage.bytes();
        let (header_end, raw) = parse_header(bytes)?;
        let data_len = (bytes.len() - header_end) as u64;
        let entries = check_entries(raw.tensors, header_end, data_len)?;
        let metadata = raw.metadata.into_iter().collect();
        Ok(SafeTensors { storage: Arc::new(storage), path, entries, metadata, data_len })
    }

    /// The file this was opened from (`None` for [`SafeTensors::from_bytes`]).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The tensor names, in file (data offset) order.
    pub fn names(&self) -> impl DoubleEndedIterator<Item = &str> + ExactSizeIterator + '_ {
        self.entries.iter().map(|e| e.name.as_str())
    }

    /// Every tensor with its name, in file order.
    pub fn tensors(&self) -> impl DoubleEndedIterator<Item = (&str, TensorView<'_>)> + ExactSizeIterator + '_ {
        self.entries.iter().map(|e| (e.name.as_str(), self.view(e)))
    }

    /// The number of tensors.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the file holds no tensors.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The tensor called `name`, if there is one.
    pub fn get(&self, name: &str) -> Option<TensorView<'_>> {
        self.entries.iter().find(|e| e.name == name).map(|e| self.view(e))
    }

    /// The tensor called `name`; the error lists the names there are.
    pub fn tensor(&self, name: &str) -> Result<TensorView<'_>, SafetensorsError> {
        self.get(name).ok_or_else(|| SafetensorsError::NotFound {
            name: name.to_string(),
            available: self.names().map(String::from).collect(),
        })
    }

    /// The `__metadata__` strings (empty if the file has none).
    pub fn metadata(&self) -> &BTreeMap<String, String> {
        &self.metadata
    }

    /// The size of the data section: the sum of all tensors' bytes.
    pub fn data_bytes(&self) -> u64 {
        self.data_len
    }

    /// Whether the data is read from the file's memory mapping ([`SafeTensors::open_mapped`])
    /// rather than held in memory of its own.
    pub fn is_mapped(&self) -> bool {
        matches!(&*self.storage, Storage::File(file) if file.is_mapped())
    }

    /// Tensor `name`'s bytes as [`SharedBytes`]: they hold the file's bytes (the memory they
    /// were read into, or for [`SafeTensors::open_mapped`] the mapping), so an upload from them
    /// ([`pjrt_client::HostSource::shared`], in place where aligned) may outlive this
    /// value.
    ///
    /// ```
    /// use pjrt_client::{ElementType, HostSource, UploadOptions};
    /// use pjrt_formats::safetensors::{write, SafeTensors, TensorView};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// let path = std::env::temp_dir().join(format!("st-shared-doc-{}.safetensors", std::process::id()));
    /// let x: Vec<u8> = [1f32, 2., 3., 4.].iter().flat_map(|v| v.to_le_bytes()).collect();
    /// write(&path, &[("x", TensorView::new(ElementType::F32, &[4], &x)?)], &[])?;
    /// let file = SafeTensors::open(&path)?;
    /// let bytes = file.shared_bytes("x")?;
    /// assert!(bytes.is_aligned()); // our writer aligns: the plugin reads the bytes in place
    /// let buffer = client.upload_with(HostSource::shared(bytes.clone(), ElementType::F32, &[4]), &UploadOptions::new())?;
    /// drop((file, bytes));
    /// # std::fs::remove_file(&path)?;
    /// assert_eq!(buffer.to_vec::<f32>()?, [1., 2., 3., 4.]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shared_bytes(&self, name: &str) -> Result<SharedBytes, SafetensorsError> {
        let entry = self.entries.iter().find(|e| e.name == name).ok_or_else(|| SafetensorsError::NotFound {
            name: name.to_string(),
            available: self.names().map(String::from).collect(),
        })?;
        self.shared_entry(entry)
    }

    pub(crate) fn shared_entry(&self, e: &Entry) -> Result<SharedBytes, SafetensorsError> {
        // The range was checked against the storage when the file was opened: no error here.
        SharedBytes::slice(self.storage.clone(), e.start..e.end)
            .map_err(|err| SafetensorsError::bad(format!("tensor '{}': {err}", e.name)))
    }

    pub(crate) fn view<'a>(&'a self, e: &'a Entry) -> TensorView<'a> {
        // The range was checked against the storage when the file was opened.
        TensorView { dtype: e.dtype, dims: &e.dims, bytes: &self.storage.bytes()[e.start..e.end] }
    }
}

/// One tensor entry as written in the header, before any check.
struct RawEntry {
    dtype: String,
    shape: Vec<u64>,
    offsets: (u64, u64),
}

/// The header as written: tensors in header order, names unique.
struct RawHeader {
    tensors: Vec<(String, RawEntry)>,
    metadata: Vec<(String, String)>,
}

/// Reads the length field and parses the JSON header; returns where the data starts.
fn parse_header(bytes: &[u8]) -> Result<(usize, RawHeader), SafetensorsError> {
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
fn check_entries(
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

/// Where a writer's data section starts: a multiple of this many bytes from the file's start
/// (so a page-aligned mapping gives the first tensor the 64-byte alignment zero-copy uploads
/// want; the reference writer pads to 8).
pub const DATA_ALIGNMENT: usize = 64;

/// The order a writer stores `tensors` in: widest element type first (stable, so tensors of
/// one width keep the order given), packed sub-byte types last. The format requires the data
/// to be contiguous (readers, ours and the reference one, refuse gaps), so alignment comes
/// from the order: every tensor then starts at a multiple of its own element size, the first
/// at [`DATA_ALIGNMENT`]. This is the reference writer's rule too.
fn storage_order<'t, 'a>(tensors: &'t [(&'t str, TensorView<'a>)]) -> Vec<&'t (&'t str, TensorView<'a>)> {
    let mut ordered: Vec<_> = tensors.iter().collect();
    // Bits per element; unknown widths sort last, where they cannot misalign anything else.
    ordered.sort_by_key(|(_, view)| std::cmp::Reverse(view.dtype.bits().unwrap_or(0)));
    ordered
}

/// The header bytes (length field, JSON, space padding so that the data starts at a multiple
/// of [`DATA_ALIGNMENT`]) for these tensors, laid out in [`storage_order`].
fn header_bytes(tensors: &[&(&str, TensorView<'_>)], metadata: &[(&str, &str)]) -> Result<Vec<u8>, SafetensorsError> {
    let quote = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| String::from("\"\""));
    let mut json = String::from("{");
    if !metadata.is_empty() {
        let mut keys = HashSet::new();
        let fields: Vec<String> = metadata
            .iter()
            .map(|(k, v)| {
                if !keys.insert(*k) {
                    return Err(SafetensorsError::bad(format!("metadata key '{k}' given twice")));
                }
                Ok(format!("{}:{}", quote(k), quote(v)))
            })
            .collect::<Result<_, _>>()?;
        json.push_str(&format!("{}:{{{}}}", quote(METADATA_KEY), fields.join(",")));
    }
    let mut names = HashSet::new();
    let mut offset = 0u64;
    for (name, view) in tensors.iter().copied() {
        if *name == METADATA_KEY {
            return Err(SafetensorsError::bad(format!("a tensor cannot be named {METADATA_KEY}")));
        }
        if !names.insert(*name) {
            return Err(SafetensorsError::DuplicateName(name.to_string()));
        }
        let dtype = dtype_name(view.dtype).ok_or_else(|| SafetensorsError::UnsupportedElementType {
            tensor: name.to_string(),
            element_type: view.dtype,
        })?;
        let end = offset + view.bytes.len() as u64;
        if json.len() > 1 {
            json.push(',');
        }
        json.push_str(&format!(
            "{}:{{\"dtype\":\"{dtype}\",\"shape\":{:?},\"data_offsets\":[{offset},{end}]}}",
            quote(name),
            view.dims
        ));
        offset = end;
    }
    json.push('}');
    // The 8-byte length field comes first: pad so that it and the JSON fill whole blocks.
    while (8 + json.len()) % DATA_ALIGNMENT != 0 {
        json.push(' ');
    }
    let mut out = Vec::with_capacity(8 + json.len());
    out.extend_from_slice(&(json.len() as u64).to_le_bytes());
    out.extend_from_slice(json.as_bytes());
    Ok(out)
}

/// A whole safetensors file in memory, laid out as [`write()`] lays it out.
///
/// ```
/// use pjrt_client::ElementType;
/// use pjrt_formats::safetensors::{to_bytes, SafeTensors, TensorView, DATA_ALIGNMENT};
///
/// # fn main() -> Result<(), pjrt_formats::safetensors::SafetensorsError> {
/// let odd = [1u8, 2, 3];
/// let wide = 1.5f64.to_le_bytes();
/// let bytes = to_bytes(&[("odd", TensorView::new(ElementType::U8, &[3], &odd)?),
///                        ("wide", TensorView::new(ElementType::F64, &[1], &wide)?)], &[])?;
/// let file = SafeTensors::from_bytes(bytes)?;
/// // The f64 is stored first, so it is 8-byte aligned even after an odd-length u8 tensor.
/// assert_eq!(file.names().collect::<Vec<_>>(), ["wide", "odd"]);
/// let empty = to_bytes(&[], &[])?;
/// let header_len = u64::from_le_bytes(empty[..8].try_into().unwrap()) as usize;
/// assert_eq!((8 + header_len) % DATA_ALIGNMENT, 0);
/// # Ok(()) }
/// ```
pub fn to_bytes(tensors: &[(&str, TensorView<'_>)], metadata: &[(&str, &str)]) -> Result<Vec<u8>, SafetensorsError> {
    let ordered = storage_order(tensors);
    let mut out = header_bytes(&ordered, metadata)?;
    for (_, view) in ordered {
        out.extend_from_slice(view.bytes);
    }
    Ok(out)
}

/// Writes a safetensors file, atomically: to a temporary file in the same folder, renamed over
/// `path` once complete ([`crate::atomic_file`]), so a reader or a crash never sees half a file.
///
/// Alignment: the data section starts at a multiple of [`DATA_ALIGNMENT`] bytes and the
/// tensors are stored widest element type first (tensors of one width in the order given;
/// that is the order [`SafeTensors::names`] gives back), so each starts at a multiple of its
/// element size. The format allows no gaps between tensors, so this is the most it can give.
/// `metadata` is stored as `__metadata__` (omitted when empty). Names must be unique.
///
/// ```
/// use pjrt_client::ElementType;
/// use pjrt_formats::safetensors::{write, SafeTensors, TensorView};
///
/// # fn main() -> Result<(), pjrt_formats::safetensors::SafetensorsError> {
/// let path = std::env::temp_dir().join(format!("st-write-doc-{}.safetensors", std::process::id()));
/// let x = [0u8, 0, 128, 63]; // 1.0f32
/// write(&path, &[("x", TensorView::new(ElementType::F32, &[1], &x)?)], &[("producer", "doc")])?;
/// assert_eq!(SafeTensors::open(&path)?.tensor("x")?.to_vec::<f32>()?, [1.0]);
/// # std::fs::remove_file(&path).unwrap();
/// # Ok(()) }
/// ```
pub fn write(
    path: impl AsRef<Path>,
    tensors: &[(&str, TensorView<'_>)],
    metadata: &[(&str, &str)],
) -> Result<(), SafetensorsError> {
    let path = path.as_ref();
    stage(path, tensors, metadata)?.commit().map_err(|source| SafetensorsError::Io { path: path.to_path_buf(), source })
}

/// Stages a safetensors file for an all-or-nothing write of several files: laid out as
/// [`write()`] lays it out, in a temporary file beside `path` that becomes `path` only on
/// [`StagedFile::commit`](crate::atomic_file::StagedFile::commit) (dropped uncommitted, it is
/// removed).
///
/// ```
/// use pjrt_client::ElementType;
/// use pjrt_formats::safetensors::{stage, SafeTensors, TensorView};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let path = std::env::temp_dir().join(format!("st-stage-doc-{}.safetensors", std::process::id()));
/// let staged = stage(&path, &[("x", TensorView::new(ElementType::U8, &[2], &[1, 2])?)], &[])?;
/// assert!(!path.exists());
/// staged.commit()?;
/// assert_eq!(SafeTensors::open(&path)?.tensor("x")?.bytes(), [1, 2]);
/// # std::fs::remove_file(&path)?;
/// # Ok(()) }
/// ```
pub fn stage(
    path: impl AsRef<Path>,
    tensors: &[(&str, TensorView<'_>)],
    metadata: &[(&str, &str)],
) -> Result<crate::atomic_file::StagedFile, SafetensorsError> {
    let path = path.as_ref();
    let ordered = storage_order(tensors);
    let header = header_bytes(&ordered, metadata)?;
    let io_err = |source| SafetensorsError::Io { path: path.to_path_buf(), source };
    let mut staged = crate::atomic_file::StagedFile::create(path).map_err(io_err)?;
    let writer = staged.writer();
    writer.write_all(&header).map_err(io_err)?;
    for (_, view) in ordered {
        writer.write_all(view.bytes).map_err(io_err)?;
    }
    staged.close().map_err(io_err)?;
    Ok(staged)
}

/// Where [`crate::ClientExt::upload_safetensors`] stands, reported after each tensor.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct Progress<'a> {
    /// The tensor just uploaded.
    pub tensor: &'a str,
    /// How many tensors are uploaded (this one included).
    pub tensors_done: usize,
    /// How many tensors there are.
    pub tensors_total: usize,
    /// Data bytes uploaded so far.
    pub bytes_done: u64,
    /// Data bytes in all.
    pub bytes_total: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(header: &str, data: &[u8]) -> Vec<u8> {
        let mut out = (header.len() as u64).to_le_bytes().to_vec();
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(data);
        out
    }

    #[test]
    fn every_tensor_starts_aligned_to_its_element_size() {
        let odd = [7u8; 3];
        let f4 = [0x21u8];
        let (h, f, d, c) = ([0u8; 2], [0u8; 4 * 3], [0u8; 8], [0u8; 16]);
        let tensors = [
            ("odd", TensorView::new(ElementType::U8, &[3], &odd).unwrap()),
            ("f4", TensorView::new(ElementType::F4E2M1FN, &[2], &f4).unwrap()),
            ("half", TensorView::new(ElementType::F16, &[1], &h).unwrap()),
            ("f32", TensorView::new(ElementType::F32, &[3], &f).unwrap()),
            ("f64", TensorView::new(ElementType::F64, &[1], &d).unwrap()),
            ("s64", TensorView::new(ElementType::S64, &[2], &c).unwrap()),
        ];
        let bytes = to_bytes(&tensors, &[]).unwrap();
        let data_start = 8 + u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        assert_eq!(data_start % DATA_ALIGNMENT, 0);
        let st = SafeTensors::from_bytes(bytes.clone()).unwrap();
        assert_eq!(st.names().collect::<Vec<_>>(), ["f64", "s64", "f32", "half", "odd", "f4"]);
        for (name, view) in st.tensors() {
            let offset = view.bytes().as_ptr() as usize - st.storage.bytes().as_ptr() as usize - data_start;
            let size = view.dtype().bits().unwrap().div_ceil(8);
            assert_eq!(offset % size, 0, "{name} at {offset}");
        }
        // The bytes are the ones given, each under its own name.
        assert_eq!(st.tensor("odd").unwrap().bytes(), odd);
        assert_eq!(st.tensor("f4").unwrap().bytes(), f4);
    }

    #[test]
    fn round_trip_in_memory() {
        let a: Vec<u8> = [1f32, 2., 3., 4., 5., 6.].iter().flat_map(|v| v.to_le_bytes()).collect();
        let b = [1u8, 0, 1];
        let tensors = [
            ("a", TensorView::new(ElementType::F32, &[2, 3], &a).unwrap()),
            ("b\"odd name", TensorView::new(ElementType::PRED, &[3], &b).unwrap()),
            ("empty", TensorView::new(ElementType::S64, &[0, 4], &[]).unwrap()),
        ];
        let bytes = to_bytes(&tensors, &[("format", "np")]).unwrap();
        assert_eq!((8 + u64::from_le_bytes(bytes[..8].try_into().unwrap())) % 64, 0);
        let st = SafeTensors::from_bytes(bytes).unwrap();
        // Widest first: the (empty) s64, the f32, then the bool.
        assert_eq!(st.names().collect::<Vec<_>>(), ["empty", "a", "b\"odd name"]);
        assert_eq!(st.tensor("a").unwrap().to_vec::<f32>().unwrap(), [1., 2., 3., 4., 5., 6.]);
        assert_eq!(st.tensor("b\"odd name").unwrap().to_vec::<bool>().unwrap(), [true, false, true]);
        assert_eq!(st.tensor("empty").unwrap().dims(), [0, 4]);
        assert_eq!(st.metadata().get("format").map(String::as_str), Some("np"));
        assert_eq!(st.data_bytes(), 27);
        match st.tensor("c") {
            Err(e @ SafetensorsError::NotFound { .. }) => {
                assert!(e.to_string().contains("'empty', 'a', 'b\"odd name'"), "{e}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn writer_rejects_bad_input() {
        let v = TensorView::new(ElementType::U8, &[1], &[7]).unwrap();
        assert!(matches!(to_bytes(&[("x", v), ("x", v)], &[]), Err(SafetensorsError::DuplicateName(_))));
        assert!(to_bytes(&[("__metadata__", v)], &[]).is_err());
        assert!(to_bytes(&[("x", v)], &[("k", "1"), ("k", "2")]).is_err());
        assert!(matches!(
            TensorView::new(ElementType::C128, &[1], &[0; 16]),
            Err(SafetensorsError::UnsupportedElementType { .. })
        ));
        assert!(matches!(TensorView::new(ElementType::F32, &[2], &[0; 7]), Err(SafetensorsError::SizeMismatch { .. })));
        assert!(matches!(
            TensorView::new(ElementType::F32, &[i64::MAX, 2], &[]),
            Err(SafetensorsError::ShapeOverflow { .. })
        ));
        match TensorView::new(ElementType::U8, &[3, -1, -2], &[]) {
            Err(e @ SafetensorsError::NegativeDimension { axis: 1, .. }) => {
                assert!(e.to_string().contains("shape [3, -1, -2], whose dimension at axis 1 is negative"), "{e}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn dimensions_above_i64_max_are_refused() {
        // i64::MAX itself is a dimension (too large for memory here); one more is not.
        let h = r#"{"w":{"dtype":"U8","shape":[9223372036854775807, 2],"data_offsets":[0,0]}}"#;
        assert!(matches!(SafeTensors::from_bytes(file(h, &[])), Err(SafetensorsError::ShapeOverflow { .. })));
        for big in ["9223372036854775808", "18446744073709551615"] {
            let h = format!(r#"{{"w":{{"dtype":"U8","shape":[0, {big}],"data_offsets":[0,0]}}}}"#);
            match SafeTensors::from_bytes(file(&h, &[])) {
                Err(e @ SafetensorsError::DimensionTooLarge { axis: 1, .. }) => {
                    assert!(e.to_string().contains(&format!("tensor 'w' has shape dimension {big} at axis 1")), "{e}")
                }
                other => panic!("{big}: {other:?}"),
            }
        }
    }

    #[test]
    fn duplicate_names_are_found() {
        let h = r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}"#;
        match SafeTensors::from_bytes(file(h, &[1, 2])) {
            Err(SafetensorsError::DuplicateName(name)) => assert_eq!(name, "a"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn dtype_names_round_trip() {
        for (name, t) in DTYPES {
            assert_eq!(element_type_of(name), Some(*t));
            assert_eq!(dtype_name(*t), Some(*name));
        }
        assert_eq!(element_type_of("F4"), Some(ElementType::F4E2M1FN));
        assert_eq!(dtype_name(ElementType::F4E2M1FN), Some("F4"));
        for unsupported in ["F6_E2M3", "F6_E3M2", "I4", "U4"] {
            assert_eq!(element_type_of(unsupported), None, "{unsupported}");
        }
        assert_eq!(dtype_name(ElementType::S4), None);
    }

    #[test]
    fn sub_byte_packing_round_trips() {
        use ElementType as T;
        // F4: low nibble first; an odd count pads the high nibble of the last byte with zero.
        assert_eq!(pack_sub_byte(T::F4E2M1FN, &[0x1, 0x2, 0x3, 0x4, 0xf]).unwrap(), [0x21, 0x43, 0x0f]);
        assert_eq!(unpack_sub_byte(T::F4E2M1FN, &[0x21, 0x43, 0x0f], 5).unwrap(), [1, 2, 3, 4, 15]);
        assert_eq!(unpack_sub_byte(T::F4E2M1FN, &[0x21, 0x43, 0x0f], 6).unwrap(), [1, 2, 3, 4, 15, 0]);
        // Signed values may come sign-extended; they are packed as their low bits.
        assert_eq!(pack_sub_byte(T::S4, &[0xff, 0x08, 0x07]).unwrap(), [0x8f, 0x07]);
        // 2- and 1-bit types: least significant bits first.
        assert_eq!(pack_sub_byte(T::U2, &[1, 2, 3, 0, 3]).unwrap(), [0b00_11_10_01, 0b11]);
        assert_eq!(pack_sub_byte(T::U1, &[1, 0, 1, 1, 0, 0, 0, 1, 1]).unwrap(), [0b1000_1101, 1]);
        // 6-bit values straddle bytes.
        let f6 = [0x3f, 0x01, 0x20, 0x15, 0x2a];
        let packed = pack_sub_byte(T::F6E2M3FN, &f6).unwrap();
        assert_eq!(packed.len(), 4);
        assert_eq!(packed[0], 0x3f | (0x01 << 6));
        assert_eq!(unpack_sub_byte(T::F6E2M3FN, &packed, 5).unwrap(), f6);
        // Every odd and even count of every sub-byte type round trips.
        let mut seed = 7u32;
        for t in ElementType::ALL.iter().copied().filter(|t| t.is_sub_byte()) {
            let bits = t.bits().unwrap();
            for count in 0..20usize {
                let values: Vec<u8> = (0..count)
                    .map(|_| {
                        seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                        ((seed >> 16) as u8) & ((1u16 << bits) - 1) as u8
                    })
                    .collect();
                let packed = pack_sub_byte(t, &values).unwrap();
                assert_eq!(packed.len(), (count * bits).div_ceil(8), "{t} x{count}");
                assert_eq!(unpack_sub_byte(t, &packed, count).unwrap(), values, "{t} x{count}");
            }
        }
        // Values that are not of the type, and sizes that do not match, are errors.
        assert!(pack_sub_byte(T::U4, &[16]).is_err());
        assert!(pack_sub_byte(T::S2, &[0xfd]).is_err());
        assert!(unpack_sub_byte(T::F4E2M1FN, &[0, 0], 5).is_err());
        assert!(unpack_sub_byte(T::F4E2M1FN, &[0], 3).is_err());
        // Whole-byte types pass through.
        assert_eq!(pack_sub_byte(T::U8, &[200, 1]).unwrap(), [200, 1]);
        assert_eq!(unpack_sub_byte(T::S8, &[200, 1], 2).unwrap(), [200, 1]);
    }

    #[test]
    fn f4_tensors_round_trip_packed() {
        let codes = [2u8, 7, 9, 15, 0, 1]; // 1.0, 6.0, -0.5, -6.0, 0, 0.5
        let packed = pack_sub_byte(ElementType::F4E2M1FN, &codes).unwrap();
        assert_eq!(packed, [0x72, 0xf9, 0x10]);
        let view = TensorView::new(ElementType::F4E2M1FN, &[2, 3], &packed).unwrap();
        let bytes = to_bytes(&[("w", view)], &[]).unwrap();
        let header_len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        let header = std::str::from_utf8(&bytes[8..8 + header_len]).unwrap();
        assert!(header.contains(r#""w":{"dtype":"F4","shape":[2, 3],"data_offsets":[0,3]}"#), "{header}");
        assert_eq!(&bytes[8 + header_len..], packed);
        let file = SafeTensors::from_bytes(bytes).unwrap();
        let back = file.tensor("w").unwrap();
        assert_eq!((back.dtype(), back.dims(), back.bytes()), (ElementType::F4E2M1FN, &[2i64, 3][..], &packed[..]));
        assert_eq!(&*back.host_bytes().unwrap(), codes);
        let array = back.to_npy().unwrap();
        assert_eq!((array.dtype, array.dims.clone(), array.data.clone()), (Dtype::U8, vec![2, 3], codes.to_vec()));
        // Other tensors keep borrowing the file's bytes.
        let u8s = [1u8, 2];
        let plain = TensorView::new(ElementType::U8, &[2], &u8s).unwrap();
        assert!(matches!(plain.host_bytes().unwrap(), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn f4_tensors_must_fill_whole_bytes() {
        // An odd element count leaves half a byte: the format (and its reference reader)
        // refuses that, in files and in the writer.
        let h = r#"{"w":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}}"#;
        match SafeTensors::from_bytes(file(h, &[0x21, 0x03])) {
            Err(e @ SafetensorsError::Misaligned { .. }) => {
                assert!(e.to_string().contains("3 f4e2m1fn elements"), "{e}")
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            TensorView::new(ElementType::F4E2M1FN, &[3], &[0x21, 0x03]),
            Err(SafetensorsError::Misaligned { .. })
        ));
        // A size that is not the packed size is a mismatch.
        let h = r#"{"w":{"dtype":"F4","shape":[4],"data_offsets":[0,4]}}"#;
        assert!(matches!(SafeTensors::from_bytes(file(h, &[0; 4])), Err(SafetensorsError::SizeMismatch { .. })));
        assert!(matches!(
            TensorView::new(ElementType::F4E2M1FN, &[4], &[0; 4]),
            Err(SafetensorsError::SizeMismatch { .. })
        ));
    }
}
