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
//!
//! | file | what it holds |
//! |---|---|
//! | `dtype.rs` | the dtype table: [`Dtype`], [`Endian`], [`NpyElement`], byte sizes |
//! | `header.rs` | the file header: magic, version, the header dict checked against the file size |
//! | `literal.rs` | the parser of the Python literals the header dict is written in |
//! | `array.rs` | [`NpyArray`]: a whole array in memory, read and written as NumPy does |
//! | `mapped.rs` | [`MappedNpy`]: a file held as stored, read once or memory-mapped |
//! | here | [`NpyError`], the errors of all of them |
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
//! # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
//! # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
//! let buffer = client.upload_npy(&back, None, Placement::Default)?;
//! assert_eq!(buffer.dimensions()?, [2, 2]);
//! assert_eq!(buffer.to_npy()?.to_vec::<f32>()?, [1., 2., 3., 4.]);
//! // Malformed input is an error, never a panic.
//! assert!(NpyArray::from_bytes(b"\x93NUMPY garbage").is_err());
//! # Ok::<(), pjrt_formats::Error>(())
//! ```

use std::path::PathBuf;

mod array;
mod dtype;
mod header;
mod literal;
mod mapped;
#[cfg(test)]
mod tests;

pub use array::NpyArray;
pub use dtype::{dtype_of, element_type_of, Dtype, Endian, NpyElement};
pub use mapped::MappedNpy;

/// Errors from reading, parsing or writing `.npy` data.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NpyError {
    /// Reading or writing the file at `path` failed.
    #[error("I/O error on .npy file '{}': {source}", .path.display())]
    Io {
        /// The file that could not be read or written.
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// The contents of the file at `path` are not a valid or supported `.npy`
    /// array (returned by [`NpyArray::read`]; `source` says what is wrong,
    /// see also [`NpyError::without_path`]).
    #[error("invalid .npy file '{}': {source}", .path.display())]
    InFile {
        /// The file that was read.
        path: PathBuf,
        /// What is wrong with its contents.
        source: Box<NpyError>,
    },
    /// The data does not start with the `.npy` magic string `\x93NUMPY`.
    #[error("not a .npy file: the data does not start with the magic string \\x93NUMPY")]
    BadMagic,
    /// The format version is not 1.0, 2.0 or 3.0.
    #[error("unsupported .npy format version {major}.{minor} (supported: 1.0, 2.0, 3.0)")]
    UnsupportedVersion {
        /// Major version byte found in the file.
        major: u8,
        /// Minor version byte found in the file.
        minor: u8,
    },
    /// The header is truncated, is not a valid Python dict literal, or does
    /// not have exactly the keys `descr`, `fortran_order` and `shape` with
    /// values of the right types.
    #[error("malformed .npy header: {0}")]
    BadHeader(String),
    /// The header's `descr` is a dtype this module does not handle.
    #[error("unsupported .npy dtype descr {descr:?}; supported descrs are {}", dtype::SUPPORTED_DESCRS)]
    UnsupportedDtype {
        /// The descr as written in the header (for structured dtypes, the
        /// text of the whole list).
        descr: String,
    },
    /// The number of data bytes does not match what dtype and shape require
    /// (a truncated file, trailing bytes after the data, or a data buffer of
    /// the wrong length given to [`NpyArray::new`]).
    #[error("array data is {actual} bytes but its dtype and shape require {expected} bytes{}", size_note(*.actual, *.expected))]
    SizeMismatch {
        /// Bytes required by dtype and shape.
        expected: usize,
        /// Bytes actually present.
        actual: usize,
    },
    /// The byte size of an array of these dimensions does not fit in memory
    /// (more than `isize::MAX` bytes).
    #[error("an array of shape {} and dtype {dtype} would need more than {} bytes", shape_text(.dims), isize::MAX)]
    ShapeOverflow {
        /// The element type.
        dtype: Dtype,
        /// The dimensions whose size overflows.
        dims: Vec<i64>,
    },
    /// A dimension given to [`NpyArray::new`] (or set in [`NpyArray::dims`]) is negative. A
    /// file whose header has one is a [`NpyError::BadHeader`].
    #[error("dimension {} at axis {axis} of shape {} is negative: dimensions are element counts, 0 or more", .dims.get(*.axis).copied().unwrap_or_default(), shape_text(.dims))]
    NegativeDimension {
        /// The axis of the first negative dimension.
        axis: usize,
        /// The dimensions.
        dims: Vec<i64>,
    },
    /// [`NpyArray::to_vec`] was asked for elements of another type than the
    /// array holds.
    #[error("requested elements of dtype {requested} but the array holds {actual}")]
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

/// What follows a size mismatch's message: which way the data is wrong.
fn size_note(actual: usize, expected: usize) -> &'static str {
    if actual < expected {
        " (the data is truncated)"
    } else {
        " (there are extra bytes after the array data)"
    }
}
