//! Reading and writing NumPy `.npy` files (format versions 1.0, 2.0 and 3.0).
//!
//! The format is described in
//! `numpy/lib/format.py`: a 6-byte magic string `\x93NUMPY`, a major and
//! minor version byte, a little-endian header length (`u16` for version 1.0,
//! `u32` for 2.0 and 3.0), a header that is the text of a Python dict literal
//! such as `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`, and
//! then the raw array data.
//!
//! [`NpyArray`] always holds its data in C order, little-endian and tightly
//! packed: Fortran-ordered and big-endian files are converted while reading.
//! Files are written exactly as NumPy writes them (same header text and
//! padding, data aligned to 64 bytes), so `np.load` reads them back and the
//! bytes are identical to those `np.save` produces for the same array.
//!
//! Every function here treats its input as untrusted: malformed, truncated or
//! hostile files produce an [`NpyError`], never a panic, and nothing is
//! allocated for the data before the input is known to contain it.
//!
//! To and from devices: [`crate::ClientExt::upload_npy`] and [`crate::BufferExt::to_npy`];
//! to and from the client's own host arrays: [`NpyArray::to_host_array`] and
//! [`NpyArray::from_host_array`].
//!
//! ```
//! use pjrt_formats::npy::{Dtype, NpyArray};
//! use pjrt_formats::{BufferExt as _, ClientExt as _};
//! use pjrt_client::Placement;
//!
//! let x = NpyArray::from_elements(vec![2, 2], &[1f32, 2., 3., 4.])?;
//! let path = std::env::temp_dir().join(format!("pjrt-doc-{}.npy", std::process::id()));
//! x.write(&path)?; // what `np.save` writes; `np.load` reads it
//! let back = NpyArray::read(&path)?;
//! std::fs::remove_file(&path).ok();
//! assert_eq!((back.dtype, &back.dims[..]), (Dtype::F32, &[2i64, 2][..]));
//! assert_eq!(back, x);
//!
//! # let plugin = pjrt_client::Plugin::load(pjrt_client::locate::resolve_or_install(None, |_| ())?.path)?;
//! # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
//! let buffer = client.upload_npy(&back, None, Placement::Default)?;
//! assert_eq!(buffer.dimensions()?, [2, 2]);
//! assert_eq!(buffer.to_npy()?.to_vec::<f32>()?, [1., 2., 3., 4.]);
//! // Malformed input is an error, never a panic.
//! assert!(NpyArray::from_bytes(b"\x93NUMPY garbage").is_err());
//! # Ok::<(), pjrt_formats::Error>(())
//! ```

use std::error::Error;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::file_bytes::FileBytes;

/// The 6 bytes every `.npy` file starts with.
const MAGIC: &[u8; 6] = b"\x93NUMPY";
/// Data starts at a multiple of this many bytes in files NumPy writes.
const ARRAY_ALIGN: usize = 64;
/// NumPy leaves room in the header for the first axis to grow to this many digits.
const GROWTH_AXIS_MAX_DIGITS: usize = 21;
/// Deepest nesting of tuples/lists accepted in a header (guards the recursion).
const MAX_NESTING: usize = 32;

/// The descrs accepted by [`Dtype::from_descr`], for error messages.
const SUPPORTED_DESCRS: &str = "|b1 (or ?), |i1, <i2, <i4, <i8, |u1, <u2, <u4, <u8, \
     <f2, <f4, <f8, <c8, <c16, |V2 (bfloat16 as saved by ml_dtypes) and |V1 (ml_dtypes' int4, \
     uint4, float4_e2m1fn, ...), \
     each also with a '>' (big-endian) or '=' (native) byte-order prefix";

/// Element kinds that a .npy header can describe and that PJRT can hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Dtype {
    /// Boolean, one byte per element (`|b1`), 0 or 1.
    Bool,
    /// Signed 8-bit integer (`|i1`).
    I8,
    /// Signed 16-bit integer (`<i2`).
    I16,
    /// Signed 32-bit integer (`<i4`).
    I32,
    /// Signed 64-bit integer (`<i8`).
    I64,
    /// Unsigned 8-bit integer (`|u1`).
    U8,
    /// Unsigned 16-bit integer (`<u2`).
    U16,
    /// Unsigned 32-bit integer (`<u4`).
    U32,
    /// Unsigned 64-bit integer (`<u8`).
    U64,
    /// IEEE 754 half-precision float (`<f2`).
    F16,
    /// IEEE 754 single-precision float (`<f4`).
    F32,
    /// IEEE 754 double-precision float (`<f8`).
    F64,
    /// Complex number made of two `f32` (real, then imaginary) (`<c8`).
    C64,
    /// Complex number made of two `f64` (real, then imaginary) (`<c16`).
    C128,
    /// 2-byte opaque void (`<V2`/`|V2`): how ml_dtypes' bfloat16 arrays are saved.
    V2,
    /// 1-byte opaque void (`|V1`): how ml_dtypes saves its 1-byte types (`int4`, `uint4`,
    /// `float4_e2m1fn`, the float8 types, ...), which numpy cannot name. Read as raw bytes:
    /// [`crate::ClientExt::upload_npy`] takes it for a sub-byte parameter (one element per
    /// byte, as ml_dtypes stores them) and otherwise as `u8`.
    V1,
}

impl Dtype {
    /// Every dtype, in declaration order.
    pub const ALL: [Dtype; 16] = [
        Dtype::Bool,
        Dtype::I8,
        Dtype::I16,
        Dtype::I32,
        Dtype::I64,
        Dtype::U8,
        Dtype::U16,
        Dtype::U32,
        Dtype::U64,
        Dtype::F16,
        Dtype::F32,
        Dtype::F64,
        Dtype::C64,
        Dtype::C128,
        Dtype::V2,
        Dtype::V1,
    ];

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Dtype::Bool | Dtype::I8 | Dtype::U8 | Dtype::V1 => 1,
            Dtype::I16 | Dtype::U16 | Dtype::F16 | Dtype::V2 => 2,
            Dtype::I32 | Dtype::U32 | Dtype::F32 => 4,
            Dtype::I64 | Dtype::U64 | Dtype::F64 | Dtype::C64 => 8,
            Dtype::C128 => 16,
        }
    }

    /// The canonical little-endian descr NumPy writes for this dtype, e.g. `"<f4"`.
    pub fn descr(self) -> &'static str {
        match self {
            Dtype::Bool => "|b1",
            Dtype::I8 => "|i1",
            Dtype::I16 => "<i2",
            Dtype::I32 => "<i4",
            Dtype::I64 => "<i8",
            Dtype::U8 => "|u1",
            Dtype::U16 => "<u2",
            Dtype::U32 => "<u4",
            Dtype::U64 => "<u8",
            Dtype::F16 => "<f2",
            Dtype::F32 => "<f4",
            Dtype::F64 => "<f8",
            Dtype::C64 => "<c8",
            Dtype::C128 => "<c16",
            Dtype::V2 => "|V2",
            Dtype::V1 => "|V1",
        }
    }

    /// NumPy's name for this dtype, e.g. `"float32"` (`"V2"`, `"V1"` for the opaque voids).
    pub fn name(self) -> &'static str {
        match self {
            Dtype::Bool => "bool",
            Dtype::I8 => "int8",
            Dtype::I16 => "int16",
            Dtype::I32 => "int32",
            Dtype::I64 => "int64",
            Dtype::U8 => "uint8",
            Dtype::U16 => "uint16",
            Dtype::U32 => "uint32",
            Dtype::U64 => "uint64",
            Dtype::F16 => "float16",
            Dtype::F32 => "float32",
            Dtype::F64 => "float64",
            Dtype::C64 => "complex64",
            Dtype::C128 => "complex128",
            Dtype::V2 => "V2",
            Dtype::V1 => "V1",
        }
    }

    /// Size in bytes of the unit that byte order applies to: the element
    /// itself, or each half of a complex number. 1 means "no byte order".
    fn swap_unit(self) -> usize {
        match self {
            Dtype::C64 => 4,
            Dtype::C128 => 8,
            Dtype::V2 | Dtype::V1 => 1,
            other => other.size(),
        }
    }

    /// Parses a `.npy` header `descr` string such as `"<f4"`, `">i8"`, `"|b1"`.
    ///
    /// Accepts the byte-order prefixes `<` (little-endian), `>` (big-endian),
    /// `=` (native) and `|` (not applicable, as NumPy writes for 1-byte
    /// types), or no prefix (native). `"?"` is bool; `"<V2"`/`"|V2"` is the
    /// opaque 2-byte void that ml_dtypes' bfloat16 arrays are saved as, `"|V1"`
    /// the 1-byte one of its int4, uint4, float4 and float8 arrays. The
    /// returned [`Endian`] is [`Endian::NotApplicable`] for 1-byte types and
    /// `V2`, and for `=`/`|`/no prefix it is the byte order of this machine.
    ///
    /// Anything else (strings like `<U10`, objects `O`, structured dtypes,
    /// datetimes `<M8[ns]`, `<f16` long doubles, ...) is
    /// [`NpyError::UnsupportedDtype`].
    pub fn from_descr(descr: &str) -> Result<(Dtype, Endian), NpyError> {
        let unsupported = || NpyError::UnsupportedDtype { descr: descr.to_string() };
        let (prefix, rest) = match descr.as_bytes().first() {
            Some(&c @ (b'<' | b'>' | b'=' | b'|')) => (Some(c), descr.get(1..).unwrap_or("")),
            _ => (None, descr),
        };
        let dtype = match rest {
            "?" | "b1" => Dtype::Bool,
            "i1" => Dtype::I8,
            "i2" => Dtype::I16,
            "i4" => Dtype::I32,
            "i8" => Dtype::I64,
            "u1" => Dtype::U8,
            "u2" => Dtype::U16,
            "u4" => Dtype::U32,
            "u8" => Dtype::U64,
            "f2" => Dtype::F16,
            "f4" => Dtype::F32,
            "f8" => Dtype::F64,
            "c8" => Dtype::C64,
            "c16" => Dtype::C128,
            "V2" => Dtype::V2,
            "V1" => Dtype::V1,
            _ => return Err(unsupported()),
        };
        let endian = if dtype.swap_unit() == 1 {
            Endian::NotApplicable
        } else {
            match prefix {
                Some(b'<') => Endian::Little,
                Some(b'>') => Endian::Big,
                _ => Endian::NATIVE,
            }
        };
        Ok((dtype, endian))
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Byte order of the data in a `.npy` file, as given by its descr prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Endian {
    /// Least significant byte first (`<`).
    Little,
    /// Most significant byte first (`>`).
    Big,
    /// Byte order does not matter: 1-byte types and opaque voids (`|`).
    NotApplicable,
}

impl Endian {
    /// The byte order of the machine this code runs on.
    pub const NATIVE: Endian = if cfg!(target_endian = "big") { Endian::Big } else { Endian::Little };
}

/// Errors from reading, parsing or writing `.npy` data.
#[derive(Debug)]
#[non_exhaustive]
pub enum NpyError {
    /// Reading or writing the file at `path` failed.
    Io {
        /// The file that could not be read or written.
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// The contents of the file at `path` are not a valid or supported `.npy`
    /// array (returned by [`NpyArray::read`]; `source` says what is wrong,
    /// see also [`NpyError::without_path`]).
    InFile {
        /// The file that was read.
        path: PathBuf,
        /// What is wrong with its contents.
        source: Box<NpyError>,
    },
    /// The data does not start with the `.npy` magic string `\x93NUMPY`.
    BadMagic,
    /// The format version is not 1.0, 2.0 or 3.0.
    UnsupportedVersion {
        /// Major version byte found in the file.
        major: u8,
        /// Minor version byte found in the file.
        minor: u8,
    },
    /// The header is truncated, is not a valid Python dict literal, or does
    /// not have exactly the keys `descr`, `fortran_order` and `shape` with
    /// values of the right types.
    BadHeader(String),
    /// The header's `descr` is a dtype this module does not handle.
    UnsupportedDtype {
        /// The descr as written in the header (for structured dtypes, the
        /// text of the whole list).
        descr: String,
    },
    /// The number of data bytes does not match what dtype and shape require
    /// (a truncated file, trailing bytes after the data, or a data buffer of
    /// the wrong length given to [`NpyArray::new`]).
    SizeMismatch {
        /// Bytes required by dtype and shape.
        expected: usize,
        /// Bytes actually present.
        actual: usize,
    },
    /// The byte size of an array of these dimensions does not fit in memory
    /// (more than `isize::MAX` bytes).
    ShapeOverflow {
        /// The element type.
        dtype: Dtype,
        /// The dimensions whose size overflows.
        dims: Vec<i64>,
    },
    /// A dimension given to [`NpyArray::new`] (or set in [`NpyArray::dims`]) is negative. A
    /// file whose header has one is a [`NpyError::BadHeader`].
    NegativeDimension {
        /// The axis of the first negative dimension.
        axis: usize,
        /// The dimensions.
        dims: Vec<i64>,
    },
    /// [`NpyArray::to_vec`] was asked for elements of another type than the
    /// array holds.
    DtypeMismatch {
        /// The dtype that the requested Rust type corresponds to.
        requested: Dtype,
        /// The dtype of the array.
        actual: Dtype,
    },
}

impl NpyError {
    /// The error with any [`NpyError::InFile`] wrappers removed: what was
    /// wrong with the contents, regardless of which file they came from.
    pub fn without_path(&self) -> &NpyError {
        let mut e = self;
        while let NpyError::InFile { source, .. } = e {
            e = source;
        }
        e
    }
}

fn shape_text(dims: &[i64]) -> String {
    let dims: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
    match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    }
}

impl fmt::Display for NpyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NpyError::Io { path, source } => {
                write!(f, "I/O error on .npy file '{}': {source}", path.display())
            }
            NpyError::InFile { path, source } => {
                write!(f, "invalid .npy file '{}': {source}", path.display())
            }
            NpyError::BadMagic => {
                f.write_str("not a .npy file: the data does not start with the magic string \\x93NUMPY")
            }
            NpyError::UnsupportedVersion { major, minor } => {
                write!(f, "unsupported .npy format version {major}.{minor} (supported: 1.0, 2.0, 3.0)")
            }
            NpyError::BadHeader(msg) => write!(f, "malformed .npy header: {msg}"),
            NpyError::UnsupportedDtype { descr } => {
                write!(f, "unsupported .npy dtype descr {descr:?}; supported descrs are {SUPPORTED_DESCRS}")
            }
            NpyError::SizeMismatch { expected, actual } => {
                write!(f, "array data is {actual} bytes but its dtype and shape require {expected} bytes")?;
                if actual < expected {
                    f.write_str(" (the data is truncated)")
                } else {
                    f.write_str(" (there are extra bytes after the array data)")
                }
            }
            NpyError::ShapeOverflow { dtype, dims } => write!(
                f,
                "an array of shape {} and dtype {dtype} would need more than {} bytes",
                shape_text(dims),
                isize::MAX
            ),
            NpyError::NegativeDimension { axis, dims } => write!(
                f,
                "dimension {} at axis {axis} of shape {} is negative: dimensions are element counts, 0 or more",
                dims.get(*axis).copied().unwrap_or_default(),
                shape_text(dims)
            ),
            NpyError::DtypeMismatch { requested, actual } => {
                write!(f, "requested elements of dtype {requested} but the array holds {actual}")
            }
        }
    }
}

impl Error for NpyError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            NpyError::Io { source, .. } => Some(source),
            NpyError::InFile { source, .. } => Some(&**source),
            _ => None,
        }
    }
}

/// Byte size of an array: an error if a dimension is negative, or if the size (or the size of
/// the same shape with every zero dimension replaced by one) exceeds `isize::MAX` bytes.
fn checked_byte_len(dtype: Dtype, dims: &[i64]) -> Result<usize, NpyError> {
    if let Some(axis) = dims.iter().position(|&d| d < 0) {
        return Err(NpyError::NegativeDimension { axis, dims: dims.to_vec() });
    }
    let overflow = || NpyError::ShapeOverflow { dtype, dims: dims.to_vec() };
    let mut bound = dtype.size();
    let mut count: usize = 1;
    for &d in dims {
        let d = usize::try_from(d).map_err(|_| overflow())?;
        bound = bound.checked_mul(d.max(1)).ok_or_else(overflow)?;
        count = count.checked_mul(d).ok_or_else(overflow)?;
    }
    if bound > isize::MAX as usize {
        return Err(overflow());
    }
    count.checked_mul(dtype.size()).ok_or_else(overflow)
}

/// The dimensions as element counts, for dimensions already checked by [`checked_byte_len`]
/// (a negative one, which that refuses, would count as 0).
fn counts(dims: &[i64]) -> Vec<usize> {
    dims.iter().map(|&d| usize::try_from(d).unwrap_or(0)).collect()
}

/// A whole array in memory: data is always C-order, little-endian, tightly packed.
#[derive(Clone, Debug, PartialEq)]
pub struct NpyArray {
    /// The element type.
    pub dtype: Dtype,
    /// The dimensions (element counts, 0 or more, as PJRT and
    /// [`HostArray::dims`](pjrt_client::HostArray::dims) take them); empty for a scalar (rank 0).
    pub dims: Vec<i64>,
    /// The elements in C (row-major) order, little-endian, `dtype.size()`
    /// bytes each, no padding.
    pub data: Vec<u8>,
}

impl NpyArray {
    /// Makes an array, checking that no dimension is negative and that `data.len()` is the
    /// product of `dims` times `dtype.size()` (with overflow-checked arithmetic).
    ///
    /// ```
    /// use pjrt_formats::npy::{Dtype, NpyArray, NpyError};
    /// let a = NpyArray::new(Dtype::U8, vec![2, 3], vec![0; 6])?;
    /// assert_eq!(a.dims, [2, 3]);
    /// assert!(matches!(NpyArray::new(Dtype::U8, vec![-1], vec![]), Err(NpyError::NegativeDimension { axis: 0, .. })));
    /// # Ok::<(), NpyError>(())
    /// ```
    pub fn new(dtype: Dtype, dims: Vec<i64>, data: Vec<u8>) -> Result<Self, NpyError> {
        let array = NpyArray { dtype, dims, data };
        array.validate()?;
        Ok(array)
    }

    /// Makes an array from typed elements (converted to little-endian bytes).
    pub fn from_elements<T: NpyElement>(dims: Vec<i64>, elements: &[T]) -> Result<Self, NpyError> {
        let mut data = Vec::with_capacity(elements.len().saturating_mul(T::DTYPE.size()));
        for e in elements {
            e.append_le(&mut data);
        }
        NpyArray::new(T::DTYPE, dims, data)
    }

    /// The elements as Rust values; fails if `T` does not match the dtype.
    pub fn to_vec<T: NpyElement>(&self) -> Result<Vec<T>, NpyError> {
        if T::DTYPE != self.dtype {
            return Err(NpyError::DtypeMismatch { requested: T::DTYPE, actual: self.dtype });
        }
        Ok(self.data.chunks_exact(T::DTYPE.size()).map(T::from_le).collect())
    }

    /// Checks that the (public) fields are consistent: no dimension is negative, the byte
    /// length of `data` matches `dtype` and `dims`, and the size does not overflow.
    pub fn validate(&self) -> Result<(), NpyError> {
        let expected = checked_byte_len(self.dtype, &self.dims)?;
        if expected != self.data.len() {
            return Err(NpyError::SizeMismatch { expected, actual: self.data.len() });
        }
        Ok(())
    }

    /// Number of elements: the product of the dimensions (1 for a scalar). Saturates
    /// at `usize::MAX` if the fields were set to an impossible shape; a negative dimension
    /// (which [`NpyArray::validate`] refuses) counts as 0.
    pub fn element_count(&self) -> usize {
        self.dims.iter().fold(1usize, |acc, &d| acc.saturating_mul(usize::try_from(d).unwrap_or(0)))
    }

    /// The header NumPy would write for this array: magic, version, header
    /// length, dict, padding and newline, ending at a multiple of 64 bytes.
    pub fn header_bytes(&self) -> Vec<u8> {
        let dims = &self.dims;
        let mut dict =
            format!("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", self.dtype.descr(), shape_text(dims));
        // NumPy leaves room for the first axis to grow (C order).
        if let Some(first) = dims.first() {
            let digits = first.to_string().len();
            let pad = GROWTH_AXIS_MAX_DIGITS.saturating_sub(digits);
            dict.push_str(&" ".repeat(pad));
        }
        // The dict plus the final '\n', then pad so the data is aligned.
        let hlen = dict.len() + 1;
        let pad_for = |prefix: usize| ARRAY_ALIGN - (prefix + hlen) % ARRAY_ALIGN;
        let pad_v1 = pad_for(MAGIC.len() + 2 + 2);
        let mut out = Vec::with_capacity(MAGIC.len() + 6 + hlen + pad_v1);
        out.extend_from_slice(MAGIC);
        let padlen = match u16::try_from(hlen + pad_v1) {
            Ok(len) => {
                out.extend_from_slice(&[1, 0]);
                out.extend_from_slice(&len.to_le_bytes());
                pad_v1
            }
            Err(_) => {
                let pad_v2 = pad_for(MAGIC.len() + 2 + 4);
                // A header over 4 GiB cannot happen: it grows with the rank,
                // and the rank is bounded by the size of `shape` in memory.
                let len = u32::try_from(hlen + pad_v2).unwrap_or(u32::MAX);
                out.extend_from_slice(&[2, 0]);
                out.extend_from_slice(&len.to_le_bytes());
                pad_v2
            }
        };
        out.extend_from_slice(dict.as_bytes());
        out.resize(out.len() + padlen, b' ');
        out.push(b'\n');
        out
    }

    /// A complete `.npy` file holding this array, byte-identical to what
    /// `np.save` writes: version 1.0 (2.0 only if the header needs more than
    /// 65535 bytes), the header padded with spaces and a final newline so
    /// that the data starts at a multiple of 64 bytes, then `data`.
    ///
    /// This does not check the fields; see [`NpyArray::validate`].
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = self.header_bytes();
        out.extend_from_slice(&self.data);
        out
    }

    /// Writes the `.npy` bytes of this array (see [`NpyArray::to_bytes`]) to
    /// `writer`, without first copying the data.
    pub fn write_to<W: Write>(&self, mut writer: W) -> std::io::Result<()> {
        writer.write_all(&self.header_bytes())?;
        writer.write_all(&self.data)?;
        writer.flush()
    }

    /// Parses a complete `.npy` file held in memory.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, NpyError> {
        let header = parse_file_header(bytes)?;
        let data = bytes.get(header.data_offset..).unwrap_or(&[]).to_vec();
        Ok(header.into_array(data))
    }

    /// Reads a `.npy` file. Errors name the file: [`NpyError::Io`] if it
    /// cannot be read, [`NpyError::InFile`] if its contents are invalid.
    pub fn read(path: &Path) -> Result<Self, NpyError> {
        let mut bytes = std::fs::read(path).map_err(|source| NpyError::Io { path: path.to_path_buf(), source })?;
        let header = parse_file_header(&bytes)
            .map_err(|e| NpyError::InFile { path: path.to_path_buf(), source: Box::new(e) })?;
        // Reuse the buffer: drop the header in place instead of copying the data.
        bytes.drain(..header.data_offset);
        Ok(header.into_array(bytes))
    }

    /// Writes this array to a `.npy` file, atomically: to a temporary file in the same folder,
    /// renamed over `path` once complete ([`crate::atomic_file`]). Checks the fields first
    /// (see [`NpyArray::validate`]), so a file is never written with data that does not match
    /// its header, and a failed write leaves any previous file whole.
    pub fn write(&self, path: &Path) -> Result<(), NpyError> {
        self.validate()?;
        crate::atomic_file::write_with(path, |writer| self.write_to(writer))
            .map_err(|source| NpyError::Io { path: path.to_path_buf(), source })
    }

    /// Stages this array for an all-or-nothing write of several files: the data is written to
    /// a temporary file beside `path`, which becomes `path` only on
    /// [`StagedFile::commit`](crate::atomic_file::StagedFile::commit) (dropped uncommitted, it
    /// is removed). Checks the fields first, as [`NpyArray::write`] does.
    ///
    /// ```
    /// use pjrt_formats::npy::NpyArray;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = std::env::temp_dir().join(format!("npy-stage-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let a = NpyArray::from_elements(vec![2], &[1f32, 2.])?;
    /// let staged = vec![a.stage(&dir.join("a.npy"))?, a.stage(&dir.join("b.npy"))?];
    /// assert!(!dir.join("a.npy").exists(), "nothing appears before every file is staged");
    /// for file in staged {
    ///     file.commit()?;
    /// }
    /// assert_eq!(NpyArray::read(&dir.join("b.npy"))?, a);
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok(()) }
    /// ```
    pub fn stage(&self, path: &Path) -> Result<crate::atomic_file::StagedFile, NpyError> {
        self.validate()?;
        let io_err = |source| NpyError::Io { path: path.to_path_buf(), source };
        let mut staged = crate::atomic_file::StagedFile::create(path).map_err(io_err)?;
        self.write_to(staged.writer()).map_err(io_err)?;
        staged.close().map_err(io_err)?;
        Ok(staged)
    }
}

/// Where the bytes of a [`MappedNpy`] live.
enum MappedBytes {
    /// A whole `.npy` file.
    File(FileBytes),
    /// A member stored (uncompressed) in an `.npz` archive: its byte range.
    Member(std::sync::Arc<FileBytes>, std::ops::Range<usize>),
}

impl MappedBytes {
    fn all(&self) -> &[u8] {
        match self {
            MappedBytes::File(file) => file.bytes(),
            MappedBytes::Member(file, range) => file.bytes().get(range.clone()).unwrap_or(&[]),
        }
    }

    fn is_mapped(&self) -> bool {
        match self {
            MappedBytes::File(file) => file.is_mapped(),
            MappedBytes::Member(file, _) => file.is_mapped(),
        }
    }
}

// SAFETY: `all` gives the same bytes every time: file bytes keep `FileBytes`' promise (the same
// memory, unchanged, while they live: memory of their own, or a mapping whose `unsafe`
// constructor's caller promised it) and a member's range is fixed.
unsafe impl pjrt_client::SharedHostBytes for MappedBytes {
    fn host_bytes(&self) -> &[u8] {
        self.all()
    }
}

/// A `.npy` file held as stored, for arrays too large to convert: read once into page-aligned
/// memory of its own ([`MappedNpy::open`]) or, behind `unsafe`, memory-mapped
/// ([`MappedNpy::open_mapped`]). The header is parsed and checked against the file size when it
/// is opened; the data is then exposed as stored (see [`MappedNpy::is_c_order_little_endian`]),
/// and [`crate::ClientExt::upload_mapped_npy`] uploads it without another host copy (in place
/// where aligned, Fortran order through byte strides; only big-endian files are converted
/// first). Buffers uploaded in place keep its bytes (see [`MappedNpy::shared_bytes`]).
pub struct MappedNpy {
    /// Shared with the buffers uploaded from it in place ([`MappedNpy::shared_bytes`]).
    bytes: std::sync::Arc<MappedBytes>,
    path: PathBuf,
    dtype: Dtype,
    endian: Endian,
    fortran_order: bool,
    dims: Vec<i64>,
    data_offset: usize,
}

impl MappedNpy {
    /// Reads and checks a `.npy` file: read once into page-aligned memory of its own, so that
    /// what happens to the file afterwards changes nothing here nor in the buffers uploaded from
    /// it. Errors name the file, as [`NpyArray::read`]'s do.
    pub fn open(path: &Path) -> Result<Self, NpyError> {
        let bytes = FileBytes::read(path).map_err(|source| NpyError::Io { path: path.to_path_buf(), source })?;
        MappedNpy::from_bytes(MappedBytes::File(bytes), path)
    }

    /// Memory-maps and checks a `.npy` file: nothing is read before it is used, and buffers
    /// uploaded in place read the page cache itself. Errors name the file.
    ///
    /// ```
    /// use pjrt_formats::npy::{MappedNpy, NpyArray};
    /// use pjrt_formats::ClientExt;
    /// use pjrt_client::Placement;
    /// # let plugin = pjrt_client::Plugin::load(pjrt_client::locate::resolve_or_install(None, |_| ())?.path)?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// let path = std::env::temp_dir().join(format!("npy-mapped-doc-{}.npy", std::process::id()));
    /// NpyArray::from_elements(vec![3], &[1f32, 2., 3.])?.write(&path)?;
    /// // SAFETY: this file is ours; nothing modifies or truncates it before it is removed, after
    /// // the buffer (which reads it in place) is dropped.
    /// let file = unsafe { MappedNpy::open_mapped(&path)? };
    /// assert!(file.is_mapped());
    /// let buffer = client.upload_mapped_npy(&file, None, Placement::Default)?;
    /// assert_eq!(buffer.to_vec::<f32>()?, [1., 2., 3.]);
    /// drop((buffer, file));
    /// std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Safety
    /// The file must not be modified or truncated, by this process or any other, while the
    /// returned value, [`SharedBytes`](pjrt_client::SharedBytes) from it, or a buffer uploaded
    /// from it lives (a buffer uploaded in place keeps the mapping until it is dropped): the
    /// mapping reads the file as it is at each access, so a rewrite silently changes those
    /// values and a truncation ends the process with SIGBUS at the next read (as for
    /// [`memmap2::Mmap::map`]). Replacing the file by renaming another over it is fine.
    pub unsafe fn open_mapped(path: &Path) -> Result<Self, NpyError> {
        // SAFETY: the caller's promise (this function's contract) is `FileBytes::map`'s.
        let bytes =
            unsafe { FileBytes::map(path) }.map_err(|source| NpyError::Io { path: path.to_path_buf(), source })?;
        MappedNpy::from_bytes(MappedBytes::File(bytes), path)
    }

    /// A `.npy` member stored uncompressed at `range` of an `.npz` archive's bytes (`path`
    /// names it in errors, e.g. `W.npz:w1`): read in place, as [`MappedNpy::open`] reads a file.
    pub(crate) fn from_archive_member(
        archive: std::sync::Arc<FileBytes>,
        range: std::ops::Range<usize>,
        path: &Path,
    ) -> Result<Self, NpyError> {
        let len = archive.bytes().len();
        if range.end > len || range.start > range.end {
            return Err(NpyError::InFile {
                path: path.to_path_buf(),
                source: Box::new(NpyError::SizeMismatch { expected: range.end, actual: len }),
            });
        }
        MappedNpy::from_bytes(MappedBytes::Member(archive, range), path)
    }

    fn from_bytes(bytes: MappedBytes, path: &Path) -> Result<Self, NpyError> {
        let header = parse_file_header(bytes.all())
            .map_err(|e| NpyError::InFile { path: path.to_path_buf(), source: Box::new(e) })?;
        Ok(MappedNpy {
            bytes: std::sync::Arc::new(bytes),
            path: path.to_path_buf(),
            dtype: header.dtype,
            endian: header.endian,
            fortran_order: header.fortran_order,
            dims: header.dims,
            data_offset: header.data_offset,
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The element type.
    pub fn dtype(&self) -> Dtype {
        self.dtype
    }

    /// The dimensions (empty for a scalar), as [`NpyArray::dims`].
    pub fn dims(&self) -> &[i64] {
        &self.dims
    }

    /// The byte order of the data as stored.
    pub fn endian(&self) -> Endian {
        self.endian
    }

    /// Whether the data is stored in Fortran (column-major) order.
    pub fn fortran_order(&self) -> bool {
        self.fortran_order
    }

    /// Whether [`MappedNpy::bytes`] already is what an [`NpyArray`] holds: C order (or rank
    /// below 2) and little-endian (or byte order not applicable).
    pub fn is_c_order_little_endian(&self) -> bool {
        let c_order = !self.fortran_order || self.dims.len() < 2;
        let little = self.endian != Endian::Big || self.dtype.swap_unit() == 1;
        c_order && little
    }

    /// The data section exactly as stored in the file (its length was checked on open).
    pub fn bytes(&self) -> &[u8] {
        self.bytes.all().get(self.data_offset..).unwrap_or(&[])
    }

    /// Whether the data is read from the file's memory mapping ([`MappedNpy::open_mapped`], or
    /// a member of [`crate::npz::Npz::open_mapped`]) rather than held in memory of its own.
    ///
    /// ```
    /// use pjrt_formats::npy::{MappedNpy, NpyArray};
    /// let path = std::env::temp_dir().join(format!("npy-is-mapped-doc-{}.npy", std::process::id()));
    /// NpyArray::from_elements(vec![1], &[1f32])?.write(&path)?;
    /// assert!(!MappedNpy::open(&path)?.is_mapped()); // read into memory of its own
    /// std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_mapped(&self) -> bool {
        self.bytes.is_mapped()
    }

    /// The data section as [`pjrt_client::SharedBytes`]: it holds the file's bytes (the memory
    /// they were read into, or the mapping), so an upload from it
    /// ([`pjrt_client::HostSource::shared`], in place where the data is 64-byte
    /// aligned, as `.npy` headers pad it to be in a file of its own) may outlive this value.
    /// [`crate::ClientExt::upload_mapped_npy`] uses it.
    pub fn shared_bytes(&self) -> pjrt_client::SharedBytes {
        let end = self.bytes.all().len().max(self.data_offset);
        // `data_offset..end` lies within the bytes (checked on open): `slice` cannot fail; were
        // it to, the whole mapping would be the wrong answer, so fall back to nothing at all.
        pjrt_client::SharedBytes::slice(self.bytes.clone(), self.data_offset..end)
            .unwrap_or_else(|_| pjrt_client::SharedBytes::new(std::sync::Arc::new(Vec::new())))
    }

    /// A copy in memory, converted to C order and little-endian.
    pub fn to_array(&self) -> NpyArray {
        let header = FileHeader {
            dtype: self.dtype,
            endian: self.endian,
            fortran_order: self.fortran_order,
            dims: self.dims.clone(),
            data_offset: self.data_offset,
        };
        header.into_array(self.bytes().to_vec())
    }
}

impl fmt::Debug for MappedNpy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MappedNpy")
            .field("path", &self.path)
            .field("dtype", &self.dtype)
            .field("dims", &self.dims)
            .field("endian", &self.endian)
            .field("fortran_order", &self.fortran_order)
            .finish()
    }
}

/// Rust element types that map one-to-one onto a [`Dtype`].
pub trait NpyElement: Copy + private::Sealed {
    /// The dtype whose elements are this type.
    const DTYPE: Dtype;
    /// Appends the little-endian bytes of `self`.
    fn append_le(&self, out: &mut Vec<u8>);
    /// Decodes one element from exactly `DTYPE.size()` little-endian bytes
    /// (a shorter slice yields a value built from zero-filled bytes).
    fn from_le(bytes: &[u8]) -> Self;
}

mod private {
    pub trait Sealed {}
}

macro_rules! npy_element_num {
    ($($t:ty => $d:ident),* $(,)?) => {$(
        impl private::Sealed for $t {}
        impl NpyElement for $t {
            const DTYPE: Dtype = Dtype::$d;
            fn append_le(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn from_le(bytes: &[u8]) -> Self {
                let mut buf = [0u8; std::mem::size_of::<$t>()];
                let n = buf.len().min(bytes.len());
                buf[..n].copy_from_slice(&bytes[..n]);
                <$t>::from_le_bytes(buf)
            }
        }
    )*};
}

npy_element_num!(
    i8 => I8, i16 => I16, i32 => I32, i64 => I64,
    u8 => U8, u16 => U16, u32 => U32, u64 => U64,
    f32 => F32, f64 => F64,
);

macro_rules! npy_element_bits {
    ($($t:ty => $d:ident),* $(,)?) => {$(
        impl private::Sealed for $t {}
        impl NpyElement for $t {
            const DTYPE: Dtype = Dtype::$d;
            fn append_le(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn from_le(bytes: &[u8]) -> Self {
                <$t>::from_bits(<u16 as NpyElement>::from_le(bytes))
            }
        }
    )*};
}

// bfloat16 is stored as ml_dtypes (and so JAX) saves it: the opaque 2-byte void `V2`.
npy_element_bits!(pjrt_client::half::f16 => F16, pjrt_client::half::bf16 => V2);

macro_rules! npy_element_complex {
    ($($t:ty => $d:ident),* $(,)?) => {$(
        impl private::Sealed for pjrt_client::num_complex::Complex<$t> {}
        impl NpyElement for pjrt_client::num_complex::Complex<$t> {
            const DTYPE: Dtype = Dtype::$d;
            fn append_le(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.re.to_le_bytes());
                out.extend_from_slice(&self.im.to_le_bytes());
            }
            fn from_le(bytes: &[u8]) -> Self {
                let half = std::mem::size_of::<$t>();
                let re = <$t as NpyElement>::from_le(bytes.get(..half).unwrap_or(&[]));
                let im = <$t as NpyElement>::from_le(bytes.get(half..).unwrap_or(&[]));
                pjrt_client::num_complex::Complex::new(re, im)
            }
        }
    )*};
}

npy_element_complex!(f32 => C64, f64 => C128);

impl private::Sealed for bool {}
impl NpyElement for bool {
    const DTYPE: Dtype = Dtype::Bool;
    fn append_le(&self, out: &mut Vec<u8>) {
        out.push(u8::from(*self));
    }
    fn from_le(bytes: &[u8]) -> Self {
        bytes.first().is_some_and(|&b| b != 0)
    }
}

/// What the header of a file says, after validation against the file size.
struct FileHeader {
    dtype: Dtype,
    endian: Endian,
    fortran_order: bool,
    dims: Vec<i64>,
    data_offset: usize,
}

impl FileHeader {
    /// Turns the raw data section (already checked to have the right length)
    /// into an array in C order and little-endian.
    fn into_array(self, mut data: Vec<u8>) -> NpyArray {
        if self.endian == Endian::Big {
            let unit = self.dtype.swap_unit();
            if unit > 1 {
                for chunk in data.chunks_exact_mut(unit) {
                    chunk.reverse();
                }
            }
        }
        if self.fortran_order && self.dims.len() >= 2 {
            // The dimensions were checked against the data by `parse_file_header`.
            data = fortran_to_c(&data, &counts(&self.dims), self.dtype.size());
        }
        NpyArray { dtype: self.dtype, dims: self.dims, data }
    }
}

/// Reorders elements of `elem` bytes from Fortran (column-major) to C
/// (row-major) order. `data.len()` must be the product of `shape` times `elem`.
fn fortran_to_c(data: &[u8], shape: &[usize], elem: usize) -> Vec<u8> {
    let count = shape.iter().fold(1usize, |acc, &d| acc.saturating_mul(d));
    if count == 0 || count.checked_mul(elem) != Some(data.len()) {
        return data.to_vec();
    }
    // Fortran strides, in elements: axis 0 is contiguous.
    let mut strides = Vec::with_capacity(shape.len());
    let mut s = 1usize;
    for &d in shape {
        strides.push(s);
        s = s.saturating_mul(d);
    }
    let mut out = Vec::with_capacity(data.len());
    let mut index = vec![0usize; shape.len()];
    let mut src = 0usize;
    for _ in 0..count {
        let start = src * elem;
        if let Some(chunk) = data.get(start..start + elem) {
            out.extend_from_slice(chunk);
        }
        // Advance the C-order odometer (last axis fastest), tracking `src`.
        for k in (0..shape.len()).rev() {
            index[k] += 1;
            src += strides[k];
            if index[k] < shape[k] {
                break;
            }
            src -= strides[k] * shape[k];
            index[k] = 0;
        }
    }
    out
}

/// Parses and validates magic, version, header and data length.
fn parse_file_header(bytes: &[u8]) -> Result<FileHeader, NpyError> {
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

/// A Python literal, as far as `.npy` headers use them.
#[derive(Debug)]
enum Value {
    Str(String),
    Bool(bool),
    None,
    /// An integer: `negative` and its magnitude (`None` if above `u64::MAX`).
    Int {
        negative: bool,
        magnitude: Option<u64>,
    },
    Tuple(Vec<Value>),
    /// A list (its items are checked for syntax only).
    List,
}

fn describe(v: &Value) -> &'static str {
    match v {
        Value::Str(_) => "a string",
        Value::Bool(_) => "a bool",
        Value::None => "None",
        Value::Int { .. } => "an integer",
        Value::Tuple(_) => "a tuple",
        Value::List => "a list",
    }
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

/// A recursive-descent parser for the subset of Python literals found in
/// `.npy` headers: strings, integers, True/False/None, tuples and lists.
struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r' | b'\x0c') = self.peek() {
            self.pos += 1;
        }
    }

    fn error_at(&self, pos: usize, msg: &str) -> NpyError {
        let start = pos.min(self.s.len());
        let end = (start + 20).min(self.s.len());
        let near = String::from_utf8_lossy(&self.s[start..end]);
        if start >= self.s.len() {
            NpyError::BadHeader(format!("{msg} (at the end of the header)"))
        } else {
            NpyError::BadHeader(format!("{msg} (at byte {start}, near {near:?})"))
        }
    }

    fn expect(&mut self, c: u8, msg: &str) -> Result<(), NpyError> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(self.error_at(self.pos, msg))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, NpyError> {
        if depth > MAX_NESTING {
            return Err(self.error_at(self.pos, "values are nested too deeply"));
        }
        match self.peek() {
            Some(b'\'' | b'"') => self.string(),
            Some(b'u' | b'U') if matches!(self.s.get(self.pos + 1), Some(b'\'' | b'"')) => {
                self.pos += 1;
                self.string()
            }
            Some(b'(') => {
                self.pos += 1;
                let (items, trailing_comma) = self.sequence(b')', depth)?;
                if items.len() == 1 && !trailing_comma {
                    // `(x)` is just a parenthesised `x`, as in Python.
                    Ok(items.into_iter().next().unwrap_or(Value::None))
                } else {
                    Ok(Value::Tuple(items))
                }
            }
            Some(b'[') => {
                self.pos += 1;
                self.sequence(b']', depth)?;
                Ok(Value::List)
            }
            Some(b'0'..=b'9' | b'-' | b'+') => self.integer(),
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                let start = self.pos;
                while let Some(c) = self.peek() {
                    if c.is_ascii_alphanumeric() || c == b'_' {
                        self.pos += 1;
                    } else {
                        break;
                    }
                }
                match &self.s[start..self.pos] {
                    b"True" => Ok(Value::Bool(true)),
                    b"False" => Ok(Value::Bool(false)),
                    b"None" => Ok(Value::None),
                    _ => Err(self.error_at(start, "unexpected name; only True, False and None are allowed")),
                }
            }
            _ => Err(self.error_at(self.pos, "expected a value")),
        }
    }

    /// Parses comma-separated values up to `close` (the opening bracket has
    /// been consumed). Returns the items and whether a trailing comma was seen.
    fn sequence(&mut self, close: u8, depth: usize) -> Result<(Vec<Value>, bool), NpyError> {
        let mut items = Vec::new();
        let mut trailing_comma = false;
        loop {
            self.skip_ws();
            if self.eat(close) {
                return Ok((items, trailing_comma));
            }
            items.push(self.value(depth + 1)?);
            self.skip_ws();
            if self.eat(b',') {
                trailing_comma = true;
                continue;
            }
            trailing_comma = false;
            self.skip_ws();
            let msg = if close == b')' { "expected ',' or ')' in a tuple" } else { "expected ',' or ']' in a list" };
            self.expect(close, msg)?;
            return Ok((items, trailing_comma));
        }
    }

    fn string(&mut self) -> Result<Value, NpyError> {
        let start = self.pos;
        let quote = match self.peek() {
            Some(q @ (b'\'' | b'"')) => q,
            _ => return Err(self.error_at(self.pos, "expected a string")),
        };
        self.pos += 1;
        let mut out = Vec::new();
        loop {
            match self.peek() {
                None | Some(b'\n') => return Err(self.error_at(start, "unterminated string")),
                Some(c) if c == quote => {
                    self.pos += 1;
                    break;
                }
                Some(b'\\') => {
                    match self.s.get(self.pos + 1) {
                        Some(&c @ (b'\\' | b'\'' | b'"')) => out.push(c),
                        _ => return Err(self.error_at(self.pos, "unsupported escape sequence in a string")),
                    }
                    self.pos += 2;
                }
                Some(c) => {
                    out.push(c);
                    self.pos += 1;
                }
            }
        }
        // `out` is a run of whole UTF-8 characters from a `str` (quotes and
        // escapes are ASCII), so this is lossless.
        Ok(Value::Str(String::from_utf8_lossy(&out).into_owned()))
    }

    fn integer(&mut self) -> Result<Value, NpyError> {
        let start = self.pos;
        let mut negative = false;
        while let Some(c @ (b'-' | b'+')) = self.peek() {
            if c == b'-' {
                negative = !negative;
            }
            self.pos += 1;
            self.skip_ws();
        }
        let digits_start = self.pos;
        let mut magnitude: Option<u64> = Some(0);
        while let Some(c) = self.peek() {
            if c.is_ascii_digit() {
                magnitude = magnitude.and_then(|m| m.checked_mul(10)).and_then(|m| m.checked_add(u64::from(c - b'0')));
                self.pos += 1;
            } else if c == b'_' && self.pos > digits_start {
                self.pos += 1;
            } else {
                break;
            }
        }
        if self.pos == digits_start {
            return Err(self.error_at(start, "expected an integer"));
        }
        // Python 2 wrote long integers with an `L` suffix; NumPy still reads them.
        if let Some(b'L' | b'l') = self.peek() {
            self.pos += 1;
        }
        if let Some(c) = self.peek() {
            if c.is_ascii_alphanumeric() || c == b'.' || c == b'_' {
                return Err(self.error_at(start, "expected an integer"));
            }
        }
        Ok(Value::Int { negative, magnitude })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `np.save` of `np.arange(6, dtype=np.float32).reshape(2, 3)` (NumPy 2.4).
    const NP_F32_2X3: &[u8] = b"\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }                                                          \x0a\x00\x00\x00\x00\x00\x00\x80?\x00\x00\x00@\x00\x00@@\x00\x00\x80@\x00\x00\xa0@";
    /// `np.save` of `np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3))`.
    const NP_I32_FORTRAN_2X3: &[u8] = b"\x93NUMPY\x01\x00v\x00{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }                                                           \x0a\x00\x00\x00\x00\x03\x00\x00\x00\x01\x00\x00\x00\x04\x00\x00\x00\x02\x00\x00\x00\x05\x00\x00\x00";
    /// `np.save` of `np.array([1+2j, -3.5-0.25j], dtype='>c8')`.
    const NP_C64_BIG: &[u8] = b"\x93NUMPY\x01\x00v\x00{'descr': '>c8', 'fortran_order': False, 'shape': (2,), }                                                            \x0a?\x80\x00\x00@\x00\x00\x00\xc0`\x00\x00\xbe\x80\x00\x00";
    /// `np.save` of `np.array([1, -2, 3], dtype='>i2')`.
    const NP_I16_BIG: &[u8] = b"\x93NUMPY\x01\x00v\x00{'descr': '>i2', 'fortran_order': False, 'shape': (3,), }                                                            \x0a\x00\x01\xff\xfe\x00\x03";

    /// Builds a version 1.0 file around an arbitrary header text.
    fn file_v1(header: &str, data: &[u8]) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(data);
        out
    }

    fn file_v2(major: u8, header: &str, data: &[u8]) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&[major, 0]);
        out.extend_from_slice(&(header.len() as u32).to_le_bytes());
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(data);
        out
    }

    fn header_err(bytes: &[u8]) -> String {
        match NpyArray::from_bytes(bytes) {
            Err(NpyError::BadHeader(msg)) => msg,
            other => panic!("expected BadHeader, got {other:?}"),
        }
    }

    /// Deterministic pseudo-random bytes.
    fn bytes(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect()
    }

    #[test]
    fn writes_exactly_what_numpy_writes() {
        let values: Vec<f32> = (0..6).map(|i| i as f32).collect();
        let a = NpyArray::from_elements(vec![2, 3], &values).unwrap();
        assert_eq!(a.to_bytes(), NP_F32_2X3);
        assert_eq!(a.header_bytes().len(), 128, "the data starts at 128");
        assert_eq!(NpyArray::from_bytes(NP_F32_2X3).unwrap(), a);
    }

    #[test]
    fn header_layout() {
        for (shape, dict) in [
            (vec![], "{'descr': '<f8', 'fortran_order': False, 'shape': (), }"),
            (vec![5], "{'descr': '<f8', 'fortran_order': False, 'shape': (5,), }"),
            (vec![0, 3, 7], "{'descr': '<f8', 'fortran_order': False, 'shape': (0, 3, 7), }"),
        ] {
            let n = shape.iter().product::<i64>() as usize;
            let a = NpyArray::new(Dtype::F64, shape.clone(), vec![0; n * 8]).unwrap();
            let h = a.header_bytes();
            assert_eq!(&h[..8], b"\x93NUMPY\x01\x00");
            let hlen = u16::from_le_bytes([h[8], h[9]]) as usize;
            assert_eq!(h.len(), 10 + hlen);
            assert_eq!(h.len() % 64, 0);
            assert_eq!(*h.last().unwrap(), b'\n');
            let text = std::str::from_utf8(&h[10..]).unwrap();
            assert!(text.starts_with(dict), "{text:?}");
            assert!(text[dict.len()..text.len() - 1].bytes().all(|b| b == b' '));
            // Spare room for the first axis to grow, as NumPy leaves it.
            let spare = if shape.is_empty() { 0 } else { 20 };
            assert!(text.len() - 1 - dict.len() >= spare);
        }
    }

    #[test]
    fn round_trip_every_dtype_and_rank() {
        let shapes: [&[i64]; 8] = [&[], &[1], &[5], &[0], &[2, 3], &[0, 3], &[2, 3, 4], &[3, 0, 2]];
        for (i, dtype) in Dtype::ALL.into_iter().enumerate() {
            for (j, shape) in shapes.iter().enumerate() {
                let n = shape.iter().product::<i64>() as usize;
                let data = bytes(n * dtype.size(), (i * 100 + j) as u64);
                let a = NpyArray::new(dtype, shape.to_vec(), data).unwrap();
                let file = a.to_bytes();
                assert_eq!(file.len() - a.data.len(), a.header_bytes().len());
                assert_eq!(a.header_bytes().len() % 64, 0);
                let b = NpyArray::from_bytes(&file).unwrap();
                assert_eq!(a, b, "{dtype:?} {shape:?}");
                assert_eq!(b.element_count(), n);
            }
        }
    }

    #[test]
    fn file_round_trip_and_path_in_errors() {
        let dir = std::env::temp_dir().join(format!("npy-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.npy");
        let a = NpyArray::from_elements(vec![2, 2], &[1i64, -2, 3, i64::MIN]).unwrap();
        a.write(&path).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), a.to_bytes());
        assert_eq!(NpyArray::read(&path).unwrap(), a);

        let missing = dir.join("missing.npy");
        let err = NpyArray::read(&missing).unwrap_err();
        assert!(matches!(err, NpyError::Io { .. }));
        assert!(err.to_string().contains("missing.npy"), "{err}");
        assert!(err.source().is_some());

        let bad = dir.join("bad.npy");
        std::fs::write(&bad, b"hello world").unwrap();
        let err = NpyArray::read(&bad).unwrap_err();
        assert!(err.to_string().contains("bad.npy"), "{err}");
        assert!(matches!(err.without_path(), NpyError::BadMagic));

        let inconsistent = NpyArray { dtype: Dtype::F32, dims: vec![3], data: vec![0; 11] };
        assert!(matches!(
            inconsistent.write(&dir.join("c.npy")),
            Err(NpyError::SizeMismatch { expected: 12, actual: 11 })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn reads_fortran_order() {
        let a = NpyArray::from_bytes(NP_I32_FORTRAN_2X3).unwrap();
        assert_eq!(a.dims, vec![2, 3]);
        assert_eq!(a.to_vec::<i32>().unwrap(), vec![0, 1, 2, 3, 4, 5]);

        // np.asfortranarray(np.arange(24, dtype=np.uint8).reshape(2, 3, 4)) data section.
        let f: &[u8] = b"\x00\x0c\x04\x10\x08\x14\x01\r\x05\x11\t\x15\x02\x0e\x06\x12\n\x16\x03\x0f\x07\x13\x0b\x17";
        let file = file_v1("{'descr': '|u1', 'fortran_order': True, 'shape': (2, 3, 4), }\n", f);
        let a = NpyArray::from_bytes(&file).unwrap();
        assert_eq!(a.data, (0..24).collect::<Vec<u8>>());

        // Rank 1 and zero-size Fortran arrays are unchanged.
        let file = file_v1("{'descr': '<u2', 'fortran_order': True, 'shape': (2,)}", b"\x01\x00\x02\x00");
        assert_eq!(NpyArray::from_bytes(&file).unwrap().to_vec::<u16>().unwrap(), vec![1, 2]);
        let file = file_v1("{'descr': '<u2', 'fortran_order': True, 'shape': (0, 4)}", b"");
        assert_eq!(NpyArray::from_bytes(&file).unwrap().dims, vec![0, 4]);
    }

    #[test]
    fn fortran_transpose_general() {
        // Element (i, j, k, l) of a 2x3x4x5 array stored in Fortran order.
        let shape = [2i64, 3, 4, 5];
        let mut f = vec![0u32; 120];
        for i in 0..2 {
            for j in 0..3 {
                for k in 0..4 {
                    for l in 0..5 {
                        let c = ((i * 3 + j) * 4 + k) * 5 + l;
                        let fo = i + 2 * (j + 3 * (k + 4 * l));
                        f[fo] = c as u32;
                    }
                }
            }
        }
        let data: Vec<u8> = f.iter().flat_map(|v| v.to_le_bytes()).collect();
        let out = fortran_to_c(&data, &counts(&shape), 4);
        let a = NpyArray::new(Dtype::U32, shape.to_vec(), out).unwrap();
        assert_eq!(a.to_vec::<u32>().unwrap(), (0..120).collect::<Vec<u32>>());
    }

    #[test]
    fn reads_big_endian() {
        let a = NpyArray::from_bytes(NP_I16_BIG).unwrap();
        assert_eq!(a.dtype, Dtype::I16);
        assert_eq!(a.to_vec::<i16>().unwrap(), vec![1, -2, 3]);

        let a = NpyArray::from_bytes(NP_C64_BIG).unwrap();
        assert_eq!(a.dtype, Dtype::C64);
        let parts: Vec<f32> = a.data.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
        assert_eq!(parts, vec![1.0, 2.0, -3.5, -0.25]);

        // Big-endian and Fortran order together; written back little-endian C order.
        let mut data = Vec::new();
        for v in [0.5f64, 3.0, 1.0, 4.0, 2.0, 5.0] {
            data.extend_from_slice(&v.to_be_bytes());
        }
        let file = file_v1("{'descr': '>f8', 'fortran_order': True, 'shape': (2, 3), }", &data);
        let a = NpyArray::from_bytes(&file).unwrap();
        assert_eq!(a.to_vec::<f64>().unwrap(), vec![0.5, 1.0, 2.0, 3.0, 4.0, 5.0]);
        assert!(String::from_utf8_lossy(&a.to_bytes()).contains("'<f8'"));

        // One-byte types and V2 are never swapped.
        let file = file_v1("{'descr': '>V2', 'fortran_order': False, 'shape': (1,), }", b"\x01\x02");
        assert_eq!(NpyArray::from_bytes(&file).unwrap().data, vec![1, 2]);
    }

    #[test]
    fn descr_parsing() {
        use Endian::*;
        for dtype in Dtype::ALL {
            let (d, e) = Dtype::from_descr(dtype.descr()).unwrap();
            assert_eq!(d, dtype);
            let expected = if dtype.size() == 1 || dtype == Dtype::V2 { NotApplicable } else { Little };
            assert_eq!(e, expected, "{dtype:?}");
        }
        let cases = [
            ("?", Dtype::Bool, NotApplicable),
            ("<b1", Dtype::Bool, NotApplicable),
            ("<i1", Dtype::I8, NotApplicable),
            ("<u1", Dtype::U8, NotApplicable),
            (">f4", Dtype::F32, Big),
            (">c16", Dtype::C128, Big),
            ("=i8", Dtype::I64, Endian::NATIVE),
            ("f2", Dtype::F16, Endian::NATIVE),
            ("<V2", Dtype::V2, NotApplicable),
            ("|V2", Dtype::V2, NotApplicable),
            ("|V1", Dtype::V1, NotApplicable),
            ("<V1", Dtype::V1, NotApplicable),
        ];
        for (s, d, e) in cases {
            assert_eq!(Dtype::from_descr(s).unwrap(), (d, e), "{s}");
        }
        for s in ["<U10", "O", "|O", "<M8[ns]", "<f16", "|S5", "", "<", "<i3", "<V4", "f4 "] {
            match Dtype::from_descr(s) {
                Err(NpyError::UnsupportedDtype { descr }) => assert_eq!(descr, s),
                other => panic!("{s:?}: {other:?}"),
            }
        }
        let msg = Dtype::from_descr("<U10").unwrap_err().to_string();
        assert!(msg.contains("<U10") && msg.contains("<f4") && msg.contains("V2"), "{msg}");
    }

    #[test]
    fn lenient_header_syntax() {
        let data = [7u8, 0, 0, 0, 9, 0, 0, 0];
        for header in [
            "{'shape': (2,), 'fortran_order': False, 'descr': '<i4'}",
            "{\"descr\": \"<i4\", \"fortran_order\": False, \"shape\": (2,)}\n",
            "  {  'descr' : '<i4' ,\n 'fortran_order':False,'shape':( 2 , ) , }   \t\n",
            "{'descr': u'<i4', 'fortran_order': False, 'shape': (2L,), }",
        ] {
            let a = NpyArray::from_bytes(&file_v1(header, &data)).unwrap();
            assert_eq!(a.to_vec::<i32>().unwrap(), vec![7, 9], "{header}");
        }
        // Versions 2.0 and 3.0 (u32 header length; 3.0 is UTF-8).
        for major in [2, 3] {
            let h = "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }\n";
            let a = NpyArray::from_bytes(&file_v2(major, h, &data)).unwrap();
            assert_eq!(a.to_vec::<i32>().unwrap(), vec![7, 9]);
        }
        // A rank 0 scalar.
        let a = NpyArray::from_bytes(&file_v1(
            "{'descr': '<f8', 'fortran_order': False, 'shape': ()}",
            &7.5f64.to_le_bytes(),
        ))
        .unwrap();
        assert_eq!(a.dims, Vec::<i64>::new());
        assert_eq!(a.to_vec::<f64>().unwrap(), vec![7.5]);
    }

    #[test]
    fn version_2_written_for_huge_headers() {
        // A rank high enough that the header exceeds 65535 bytes.
        let shape = vec![1i64; 30_000];
        let a = NpyArray::new(Dtype::U8, shape, vec![42]).unwrap();
        let file = a.to_bytes();
        assert_eq!(&file[6..8], &[2, 0]);
        let hlen = u32::from_le_bytes(file[8..12].try_into().unwrap()) as usize;
        assert_eq!((12 + hlen) % 64, 0);
        assert_eq!(NpyArray::from_bytes(&file).unwrap(), a);
    }

    #[test]
    fn malformed_inputs() {
        let good = NP_F32_2X3;
        // Bad magic and truncation anywhere.
        assert!(matches!(NpyArray::from_bytes(b""), Err(NpyError::BadMagic)));
        assert!(matches!(NpyArray::from_bytes(b"\x93NUMP"), Err(NpyError::BadMagic)));
        assert!(matches!(NpyArray::from_bytes(b"PK\x03\x04 this is a zip"), Err(NpyError::BadMagic)));
        for len in 0..good.len() {
            assert!(NpyArray::from_bytes(&good[..len]).is_err(), "prefix of {len} bytes");
        }
        match NpyArray::from_bytes(&good[..good.len() - 1]) {
            Err(e @ NpyError::SizeMismatch { expected: 24, actual: 23 }) => {
                assert!(e.to_string().contains("truncated"), "{e}")
            }
            other => panic!("{other:?}"),
        }
        // Trailing bytes.
        let mut long = good.to_vec();
        long.push(0);
        match NpyArray::from_bytes(&long) {
            Err(e @ NpyError::SizeMismatch { expected: 24, actual: 25 }) => {
                assert!(e.to_string().contains("extra"), "{e}")
            }
            other => panic!("{other:?}"),
        }
        // Versions.
        let mut v = good.to_vec();
        v[6] = 4;
        assert!(matches!(NpyArray::from_bytes(&v), Err(NpyError::UnsupportedVersion { major: 4, minor: 0 })));
        v[6] = 1;
        v[7] = 1;
        assert!(matches!(NpyArray::from_bytes(&v), Err(NpyError::UnsupportedVersion { major: 1, minor: 1 })));
        // Header length past the end of the input.
        let mut v = good.to_vec();
        v[8] = 0xff;
        v[9] = 0xff;
        assert!(header_err(&v).contains("truncated"));
        let mut v = file_v2(2, "{}", b"");
        v[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(header_err(&v).contains("truncated"));
        // Version 3.0 header that is not UTF-8.
        let mut v = file_v2(3, "{'descr': '<i4', 'fortran_order': False, 'shape': (), }", &[0; 4]);
        v[14] = 0xff;
        assert!(header_err(&v).contains("UTF-8"));

        let f = |h: &str| file_v1(h, &[0u8; 8]);
        // Huge shapes: error without allocating.
        match NpyArray::from_bytes(&f("{'descr': '<f4', 'fortran_order': False, 'shape': (1152921504606846976,), }")) {
            Err(NpyError::SizeMismatch { expected, actual: 8 }) => assert_eq!(expected, 1 << 62),
            other => panic!("{other:?}"),
        }
        for h in [
            "{'descr': '<f8', 'fortran_order': False, 'shape': (1152921504606846976, 16), }",
            "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 0), }",
            "{'descr': '<u2', 'fortran_order': False, 'shape': (9223372036854775807,), }",
        ] {
            let err = NpyArray::from_bytes(&f(h)).unwrap_err();
            assert!(matches!(err, NpyError::ShapeOverflow { .. }), "{h}: {err:?}");
            assert!(err.to_string().contains("would need more than"), "{err}");
        }
        // Counts above i64::MAX (the largest PJRT dimension), in u64 or beyond it: a header error.
        for big in ["9223372036854775808", "18446744073709551615", "99999999999999999999999"] {
            let h = format!("{{'descr': '<u1', 'fortran_order': False, 'shape': (2, {big}), }}");
            let err = header_err(&f(&h));
            assert!(err.contains("axis 1 is above 9223372036854775807"), "{err}");
        }
        // Negative dimension.
        assert!(header_err(&f("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }")).contains("negative"));
        // Unknown descr, structured dtype.
        match NpyArray::from_bytes(&f("{'descr': '<U2', 'fortran_order': False, 'shape': (1,), }")) {
            Err(NpyError::UnsupportedDtype { descr }) => assert_eq!(descr, "<U2"),
            other => panic!("{other:?}"),
        }
        match NpyArray::from_bytes(&f(
            "{'descr': [('a', '<f4'), ('b', '<i4', (2,))], 'fortran_order': False, 'shape': (1,), }",
        )) {
            Err(NpyError::UnsupportedDtype { descr }) => {
                assert_eq!(descr, "[('a', '<f4'), ('b', '<i4', (2,))]")
            }
            other => panic!("{other:?}"),
        }
        // Missing, extra and duplicate keys; wrong value types; bad syntax.
        let bad_headers = [
            ("{'descr': '<f4', 'fortran_order': False}", "missing key 'shape'"),
            ("{'descr': '<f4', 'shape': (2,)}", "missing key 'fortran_order'"),
            ("{'fortran_order': False, 'shape': (2,)}", "missing key 'descr'"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", "unexpected key"),
            ("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", "duplicate"),
            ("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", "fortran_order"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': 2}", "tuple"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (2)}", "tuple"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': [2]}", "tuple"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': ('2',)}", "integers"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (2.0,)}", "integer"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", "expected"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x", "after"),
            ("{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}", "expected"),
            ("{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}", "expected"),
            ("{'descr: '<f4', 'fortran_order': False, 'shape': (2,)}", ""),
            ("{'descr': '<f4', 'fortran_order': false, 'shape': (2,)}", "True, False"),
            ("{1: '<f4'}", "keys must be strings"),
            ("['descr', '<f4']", "dict"),
            ("", "dict"),
            ("{'descr': '\\x3c', 'fortran_order': False, 'shape': (2,)}", "escape"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (2,,)}", "expected a value"),
        ];
        for (h, needle) in bad_headers {
            let msg = header_err(&f(h));
            assert!(msg.contains(needle), "{h}: {msg}");
        }
        // Deep nesting does not overflow the stack.
        let deep = format!(
            "{{'descr': {}1{}, 'fortran_order': False, 'shape': (2,)}}",
            "(".repeat(10_000),
            ")".repeat(10_000)
        );
        assert!(header_err(&f(&deep)).contains("nested"));
    }

    #[test]
    fn never_panics_on_mutations() {
        // Flip, truncate and splice bytes of valid files; only errors may come out.
        let seeds: Vec<Vec<u8>> = vec![
            NP_F32_2X3.to_vec(),
            NP_I32_FORTRAN_2X3.to_vec(),
            NP_C64_BIG.to_vec(),
            file_v2(3, "{'descr': '>c16', 'fortran_order': True, 'shape': (1, 2), }", &[1; 32]),
        ];
        let noise = bytes(1 << 16, 7);
        let mut k = 0usize;
        for seed in &seeds {
            for i in 0..2000 {
                let mut v = seed.clone();
                let pos = noise[k % noise.len()] as usize * 7 % v.len();
                k += 1;
                match i % 4 {
                    0 => v[pos] = noise[k % noise.len()],
                    1 => v.truncate(pos),
                    2 => v.insert(pos, b"(),'0123456789-{}[]:"[pos % 20]),
                    _ => {
                        v[pos] ^= 1 << (i % 8);
                    }
                }
                k += 1;
                if let Ok(a) = NpyArray::from_bytes(&v) {
                    a.validate().unwrap();
                }
            }
        }
    }

    #[test]
    fn element_helpers() {
        let a = NpyArray::from_elements(vec![3], &[true, false, true]).unwrap();
        assert_eq!(a.dtype, Dtype::Bool);
        assert_eq!(a.data, vec![1, 0, 1]);
        assert_eq!(a.to_vec::<bool>().unwrap(), vec![true, false, true]);
        assert!(matches!(a.to_vec::<u8>(), Err(NpyError::DtypeMismatch { requested: Dtype::U8, actual: Dtype::Bool })));
        assert!(matches!(
            NpyArray::from_elements(vec![2, 2], &[1u16, 2, 3]),
            Err(NpyError::SizeMismatch { expected: 8, actual: 6 })
        ));
        assert!(matches!(NpyArray::new(Dtype::F64, vec![i64::MAX, 2], vec![]), Err(NpyError::ShapeOverflow { .. })));
        let huge = NpyArray { dtype: Dtype::U8, dims: vec![i64::MAX, 3], data: vec![] };
        assert_eq!(huge.element_count(), usize::MAX);
        // Negative dimensions: refused by new and validate (and so by write), named by axis.
        let err = NpyArray::new(Dtype::U8, vec![2, -3], vec![]).unwrap_err();
        assert!(matches!(&err, NpyError::NegativeDimension { axis: 1, dims } if dims == &[2, -3]), "{err:?}");
        assert!(err.to_string().contains("dimension -3 at axis 1 of shape (2, -3) is negative"), "{err}");
        let negative = NpyArray { dtype: Dtype::U8, dims: vec![-1], data: vec![] };
        assert!(matches!(negative.validate(), Err(NpyError::NegativeDimension { axis: 0, .. })));
        assert_eq!(negative.element_count(), 0);
        assert_eq!(Dtype::C64.to_string(), "complex64");
    }
}
