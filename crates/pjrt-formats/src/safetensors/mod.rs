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
mod error;
mod header;
mod packing;
mod views;
mod write;

pub use error::SafetensorsError;
pub(crate) use header::Entry;
pub use packing::{pack_sub_byte, unpack_sub_byte};
pub use views::{SafeTensors, TensorView};
pub use write::{stage, to_bytes, write, Progress, DATA_ALIGNMENT};

use pjrt_client::ElementType;

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

#[cfg(test)]
mod tests;
