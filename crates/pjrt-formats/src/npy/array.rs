//! [`NpyArray`]: a whole array in memory, read from and written as `.npy` bytes.

use std::io::Write;
use std::path::Path;

use super::dtype::{checked_byte_len, counts, Dtype, Endian, NpyElement};
use super::header::{parse_file_header, FileHeader, ARRAY_ALIGN, GROWTH_AXIS_MAX_DIGITS, MAGIC};
use super::{shape_text, NpyError};

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

impl FileHeader {
    /// Turns the raw data section (already checked to have the right length)
    /// into an array in C order and little-endian.
    pub(super) fn into_array(self, mut data: Vec<u8>) -> NpyArray {
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
pub(super) fn fortran_to_c(data: &[u8], shape: &[usize], elem: usize) -> Vec<u8> {
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
