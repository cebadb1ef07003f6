//! `.npz` archives: what `np.savez` (members stored) and `np.savez_compressed` (members deflated)
//! write, and most JAX/Flax checkpoints use: a zip of `NAME.npy` files.
//!
//! [`Npz::open`] reads the archive once, into page-aligned memory of its own (`unsafe`
//! [`Npz::open_mapped`] maps it instead): a stored member is read in place there as a
//! [`MappedNpy`] (no further copy; its zip CRC is not checked, as reading it would touch every
//! byte), a deflated one is inflated into an [`NpyArray`] (the zip CRC is checked). [`write()`] writes the `np.savez`
//! layout, deflated or not, through a temporary file renamed into place.
//!
//! ```
//! use pjrt_formats::npy::NpyArray;
//! use pjrt_formats::npz::{self, Npz, NpzArray};
//! let path = std::env::temp_dir().join(format!("npz-doc-{}.npz", std::process::id()));
//! let w = NpyArray::from_elements(vec![2, 2], &[1f32, 2., 3., 4.])?;
//! let b = NpyArray::from_elements(vec![2], &[0.5f32, -1.])?;
//! npz::write(&path, &[("w", &w), ("b", &b)], false)?;
//! let file = Npz::open(&path)?;
//! assert_eq!(file.names().collect::<Vec<_>>(), ["w", "b"]);
//! let Some(NpzArray::Mapped(mapped)) = file.get("w") else { panic!("stored members are mapped") };
//! assert_eq!(mapped.to_array(), w);
//! # std::fs::remove_file(&path).ok();
//! # Ok::<(), pjrt_formats::Error>(())
//! ```

use std::io::{Cursor, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipArchive, ZipWriter};

use crate::atomic_file::StagedFile;
use crate::file_bytes::FileBytes;
use crate::npy::{MappedNpy, NpyArray};
use crate::Error;

/// The suffix `np.savez` gives each member.
const MEMBER_SUFFIX: &str = ".npy";

fn invalid(message: String) -> Error {
    Error::Client(pjrt_client::Error::InvalidArgument(message))
}

fn io(path: &Path, source: std::io::Error) -> Error {
    Error::Client(pjrt_client::Error::Io { path: path.to_path_buf(), source })
}

/// One array of an archive.
#[derive(Debug)]
#[non_exhaustive]
pub enum NpzArray {
    /// A stored member, read in place from the archive's bytes (read into memory, or mapped).
    Mapped(MappedNpy),
    /// A deflated member, inflated into memory.
    Loaded(NpyArray),
}

impl NpzArray {
    /// A copy in memory, C order and little-endian.
    ///
    /// ```
    /// # let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/npz/mixed.npz");
    /// let file = pjrt_formats::npz::Npz::open(&path)?;
    /// assert_eq!(file.get("i32").unwrap().to_array().to_vec::<i32>()?, [0, 1, 2, 3, 4, 5]);
    /// # Ok::<(), pjrt_formats::Error>(())
    /// ```
    pub fn to_array(&self) -> NpyArray {
        match self {
            NpzArray::Mapped(mapped) => mapped.to_array(),
            NpzArray::Loaded(array) => array.clone(),
        }
    }

    /// The dimensions.
    ///
    /// ```
    /// # let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/npz/mixed_stored.npz");
    /// let file = pjrt_formats::npz::Npz::open(&path)?;
    /// assert_eq!(file.get("fortran").unwrap().dims(), [2, 3]);
    /// # Ok::<(), pjrt_formats::Error>(())
    /// ```
    pub fn dims(&self) -> &[i64] {
        match self {
            NpzArray::Mapped(mapped) => mapped.dims(),
            NpzArray::Loaded(array) => &array.dims,
        }
    }
}

/// An opened `.npz` archive: its arrays by name (the member name without `.npy`), in archive
/// order. Buffers uploaded in place from its stored members keep the archive's bytes.
#[derive(Debug)]
pub struct Npz {
    path: PathBuf,
    arrays: Vec<(String, NpzArray)>,
}

impl Npz {
    /// Opens and checks every member: each must be a `NAME.npy` file, stored or deflated (other
    /// compression methods, encryption and directories are refused), with a valid `.npy`
    /// header and data size; names must be unique.
    ///
    /// ```
    /// # let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/npz/mlp_weights_compressed.npz");
    /// // Written by np.savez_compressed: deflated members, inflated here.
    /// let file = pjrt_formats::npz::Npz::open(&path)?;
    /// assert_eq!(file.names().collect::<Vec<_>>(), ["b1", "b2", "w1", "w2"]);
    /// assert!(matches!(file.get("w1"), Some(pjrt_formats::npz::NpzArray::Loaded(_))));
    /// # Ok::<(), pjrt_formats::Error>(())
    /// ```
    ///
    /// The archive is read once, into page-aligned memory of its own: what happens to the file
    /// afterwards changes nothing here nor in the buffers uploaded from it.
    pub fn open(path: &Path) -> Result<Npz, Error> {
        Npz::from_bytes(FileBytes::read(path).map_err(|e| io(path, e))?, path)
    }

    /// [`Npz::open`], the archive memory-mapped instead of read: stored members are read from
    /// the page cache itself, and nothing is read before it is used (deflated members are
    /// inflated when the archive is opened, as by [`Npz::open`]).
    ///
    /// ```
    /// # let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/npz/mixed_stored.npz");
    /// // SAFETY: the repository's test data, which nothing modifies while the test runs.
    /// let file = unsafe { pjrt_formats::npz::Npz::open_mapped(&path)? };
    /// let Some(pjrt_formats::npz::NpzArray::Mapped(member)) = file.get("fortran") else { panic!("a stored member") };
    /// assert!(member.is_mapped());
    /// # Ok::<(), pjrt_formats::Error>(())
    /// ```
    ///
    /// # Safety
    /// The file must not be modified or truncated, by this process or any other, while the
    /// returned value, a stored member or [`SharedBytes`](pjrt_client::SharedBytes) of one, or a
    /// buffer uploaded from one lives: the mapping reads the file as it is at each access, so a
    /// rewrite silently changes those values and a truncation ends the process with SIGBUS at
    /// the next read (as for [`memmap2::Mmap::map`]). Replacing the file by renaming another
    /// over it is fine.
    pub unsafe fn open_mapped(path: &Path) -> Result<Npz, Error> {
        // SAFETY: the caller's promise (this function's contract) is `FileBytes::map`'s.
        Npz::from_bytes(unsafe { FileBytes::map(path) }.map_err(|e| io(path, e))?, path)
    }

    fn from_bytes(bytes: FileBytes, path: &Path) -> Result<Npz, Error> {
        let map = Arc::new(bytes);
        let bad = |what: String| invalid(format!("{}: {what}", path.display()));
        let mut archive = ZipArchive::new(Cursor::new(map.bytes()))
            .map_err(|e| bad(format!("not a readable .npz (zip) archive: {e}")))?;
        let mut arrays: Vec<(String, NpzArray)> = Vec::with_capacity(archive.len());
        for index in 0..archive.len() {
            let member = archive.by_index_raw(index).map_err(|e| bad(format!("member {index}: {e}")))?;
            let member_name = member.name().to_string();
            let Some(name) = member_name.strip_suffix(MEMBER_SUFFIX).filter(|_| !member.is_dir()) else {
                return Err(bad(format!("member '{member_name}' is not a NAME.npy file, as np.savez writes")));
            };
            if member.encrypted() {
                return Err(bad(format!("member '{member_name}' is encrypted")));
            }
            if arrays.iter().any(|(n, _)| n == name) {
                return Err(bad(format!("two members are named '{member_name}'")));
            }
            let label = PathBuf::from(format!("{}:{name}", path.display()));
            let array = match member.compression() {
                CompressionMethod::Stored => {
                    let start = usize::try_from(member.data_start()).map_err(|_| bad("offset overflow".into()))?;
                    let size = usize::try_from(member.compressed_size()).map_err(|_| bad("size overflow".into()))?;
                    let end = start.checked_add(size).ok_or_else(|| bad("size overflow".into()))?;
                    NpzArray::Mapped(MappedNpy::from_archive_member(map.clone(), start..end, &label)?)
                }
                CompressionMethod::Deflated => {
                    drop(member);
                    let mut member = archive.by_index(index).map_err(|e| bad(format!("member {index}: {e}")))?;
                    // The declared size is a hint only: never trusted for the allocation.
                    let mut bytes = Vec::with_capacity(usize::try_from(member.size()).unwrap_or(0).min(1 << 30));
                    member.read_to_end(&mut bytes).map_err(|e| bad(format!("member '{member_name}': {e}")))?;
                    NpzArray::Loaded(
                        NpyArray::from_bytes(&bytes)
                            .map_err(|e| crate::npy::NpyError::InFile { path: label, source: Box::new(e) })?,
                    )
                }
                other => {
                    return Err(bad(format!(
                        "member '{member_name}' is compressed with {other:?}; only stored and deflated members \
                         (np.savez, np.savez_compressed) are read"
                    )))
                }
            };
            arrays.push((name.to_string(), array));
        }
        Ok(Npz { path: path.to_path_buf(), arrays })
    }

    /// The archive's path.
    ///
    /// ```
    /// # let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/npz/mixed.npz");
    /// assert_eq!(pjrt_formats::npz::Npz::open(&path)?.path(), path);
    /// # Ok::<(), pjrt_formats::Error>(())
    /// ```
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The array names, in archive order.
    ///
    /// ```
    /// # let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/npz/mlp_weights.npz");
    /// assert_eq!(pjrt_formats::npz::Npz::open(&path)?.names().count(), 4);
    /// # Ok::<(), pjrt_formats::Error>(())
    /// ```
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.arrays.iter().map(|(n, _)| n.as_str())
    }

    /// The array called `name`.
    ///
    /// ```
    /// # let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/npz/mlp_weights.npz");
    /// let file = pjrt_formats::npz::Npz::open(&path)?;
    /// assert_eq!(file.get("b1").unwrap().dims(), [8]);
    /// assert!(file.get("nope").is_none());
    /// # Ok::<(), pjrt_formats::Error>(())
    /// ```
    pub fn get(&self, name: &str) -> Option<&NpzArray> {
        self.arrays.iter().find(|(n, _)| n == name).map(|(_, a)| a)
    }

    /// How many arrays the archive holds.
    ///
    /// ```
    /// # let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/npz/mlp_weights.npz");
    /// assert_eq!(pjrt_formats::npz::Npz::open(&path)?.len(), 4);
    /// # Ok::<(), pjrt_formats::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.arrays.len()
    }

    /// Whether the archive holds no arrays.
    ///
    /// ```
    /// # let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/npz/mlp_weights.npz");
    /// assert!(!pjrt_formats::npz::Npz::open(&path)?.is_empty());
    /// # Ok::<(), pjrt_formats::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.arrays.is_empty()
    }
}

/// Writes `arrays` as an `.npz` archive in `np.savez`'s layout (a member `NAME.npy` per array,
/// zip64 so members may exceed 4 GiB), deflated when `compress` (as `np.savez_compressed`).
/// Written to a temporary file beside `path` and renamed into place, so readers never see half
/// an archive. Names must be unique, non-empty and free of `/`.
///
/// ```
/// use pjrt_formats::npy::NpyArray;
/// let path = std::env::temp_dir().join(format!("npz-write-doc-{}.npz", std::process::id()));
/// let x = NpyArray::from_elements(vec![3], &[1i32, 2, 3])?;
/// pjrt_formats::npz::write(&path, &[("x", &x)], true)?;
/// let back = pjrt_formats::npz::Npz::open(&path)?;
/// assert_eq!(back.get("x").unwrap().to_array(), x);
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), pjrt_formats::Error>(())
/// ```
pub fn write(path: &Path, arrays: &[(&str, &NpyArray)], compress: bool) -> Result<(), Error> {
    for (i, (name, array)) in arrays.iter().enumerate() {
        if name.is_empty() || name.contains('/') {
            return Err(invalid(format!("array name '{name}' cannot be an .npz member (empty or with '/')")));
        }
        if arrays[..i].iter().any(|(n, _)| n == name) {
            return Err(invalid(format!("two arrays are named '{name}'")));
        }
        array.validate()?;
    }
    let mut staged = StagedFile::create(path).map_err(|e| io(path, e))?;
    {
        let mut zip = ZipWriter::new(staged.writer());
        let method = if compress { CompressionMethod::Deflated } else { CompressionMethod::Stored };
        let options = SimpleFileOptions::default().compression_method(method).large_file(true);
        let zip_error = |e: zip::result::ZipError| invalid(format!("writing {}: {e}", path.display()));
        for (name, array) in arrays {
            zip.start_file(format!("{name}{MEMBER_SUFFIX}"), options).map_err(zip_error)?;
            array.write_to(&mut zip).map_err(|e| io(path, e))?;
        }
        zip.finish().map_err(zip_error)?;
    }
    // Flushed, synced and renamed over `path`; dropped on an error above, it removes itself.
    staged.commit().map_err(|e| io(path, e))
}
