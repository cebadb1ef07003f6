//! The writer: files laid out aligned, written whole or staged with others.

use std::collections::HashSet;
use std::io::Write;
use std::path::Path;

use super::{dtype_name, SafetensorsError, TensorView, METADATA_KEY};

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
/// that is the order [`SafeTensors::names`](super::SafeTensors::names) gives back), so each
/// starts at a multiple of its element size. The format allows no gaps between tensors, so this is the most it can give.
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
