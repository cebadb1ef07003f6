//! [`MappedNpy`]: a `.npy` file held as stored (read once, or memory-mapped), for arrays too
//! large to convert.

use std::fmt;
use std::path::{Path, PathBuf};

use super::array::NpyArray;
use super::dtype::{Dtype, Endian};
use super::header::{parse_file_header, FileHeader};
use super::NpyError;
use crate::file_bytes::FileBytes;

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
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
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
