//! An open file ([`SafeTensors`]) and the tensors borrowed from it ([`TensorView`]).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pjrt_client::{ElementType, NativeType, SharedBytes};

use crate::file_bytes::FileBytes;
use crate::npy::{Dtype, NpyArray};

use super::header::{check_entries, parse_header, Entry};
use super::packing::{byte_size, checked_count, unpack_sub_byte};
use super::{dtype_name, SafetensorsError};

/// One tensor's dtype, shape and bytes, borrowed (from an open file, or from the caller for the
/// writer). The byte length always matches dtype and shape.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct TensorView<'a> {
    pub(super) dtype: ElementType,
    pub(super) dims: &'a [i64],
    pub(super) bytes: &'a [u8],
}

impl<'a> TensorView<'a> {
    /// A view of `bytes` (dense, row-major, little-endian) as a tensor of dimensions `dims`
    /// (as PJRT and [`HostArray::dims`](pjrt_client::HostArray::dims) take them); checks that no
    /// dimension is negative and that the length matches. `F4` bytes are packed, two elements
    /// per byte (see [`pack_sub_byte`](super::pack_sub_byte)).
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
pub(super) enum Storage {
    /// Read from a file, or its mapping ([`SafeTensors::open_mapped`]).
    File(FileBytes),
    /// Given by the caller ([`SafeTensors::from_bytes`]).
    Owned(Vec<u8>),
}

impl Storage {
    pub(super) fn bytes(&self) -> &[u8] {
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

/// An open safetensors file, checked: its bytes read into memory of its own
/// ([`SafeTensors::open`]) or, behind `unsafe`, memory-mapped ([`SafeTensors::open_mapped`]).
///
/// Buffers uploaded from it in place keep those bytes (see [`SafeTensors::shared_bytes`]), so
/// they may outlive it; on a CPU plugin they are the buffers' memory.
pub struct SafeTensors {
    /// Shared with the buffers uploaded from it in place (see [`SafeTensors::shared_bytes`]).
    pub(super) storage: Arc<Storage>,
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
