//! # pjrt-formats
//!
//! File formats for [`pjrt_client`]: arrays and weights in, results out, compiled programs kept.
//!
//! | module | what it reads and writes |
//! |---|---|
//! | [`npy`] | NumPy `.npy` arrays, to and from [`pjrt_client::HostArray`] and buffers |
//! | [`safetensors`] | `.safetensors` weight files, read once and uploaded without further copies |
//! | [`npz`] | NumPy `.npz` archives of arrays |
//! | [`jax_export`] | models serialized by `jax.export`: read, checked, their arguments arranged, compiled (shape-polymorphic ones refined for their inputs) and run ([`jax_export::Runner`]) |
//! | [`binding`] | which tensors of a weights file feed which arguments of a model (by name) |
//! | [`artifact`] | ahead-of-time compiled executables, with the plugin that made them |
//! | [`compile_cache`] | a persistent compile cache of such artifacts |
//! | [`mlir_text`] | MLIR text programs with dynamic shapes, made static for the inputs at hand |
//! | [`atomic_file`] | files written whole or not at all (temporary file and rename) |
//!
//! Uploads and downloads are methods the extension traits [`ClientExt`] and [`BufferExt`] add
//! to the client's types (import them, the way `wgpu::util::DeviceExt` adds to `Device`):
//!
//! ```
//! use pjrt_formats::npy::NpyArray;
//! use pjrt_formats::{BufferExt, ClientExt};
//! use pjrt_client::{Client, ClientOptions, Placement, Plugin};
//!
//! # fn main() -> pjrt_formats::Result<()> {
//! let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |line| eprintln!("{line}"))?.load_path())?;
//! let client = Client::new(&plugin, &ClientOptions::new())?;
//! let x = NpyArray::from_elements(vec![2, 2], &[1f32, 2., 3., 4.])?;
//! let buffer = client.upload_npy(&x, None, Placement::Default)?;
//! assert_eq!(buffer.to_npy()?, x);
//! # Ok(()) }
//! ```
//!
//! Errors are this crate's [`Error`]: a client error ([`Error::Client`]) or a format's own
//! ([`Error::JaxExport`] also says how a model was used wrongly, or why it cannot run).

#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

pub mod artifact;
pub mod atomic_file;
pub mod binding;
pub mod compile_cache;
mod error;
mod file_bytes;
pub mod jax_export;
mod lapack;
pub mod mlir_text;
pub mod npy;
pub mod npz;
mod npy_arrays;
pub mod safetensors;
mod safetensors_uploads;
mod uploads;

pub use error::{Error, Result};
pub use npy::{dtype_of, element_type_of};
pub use npy_arrays::upload_element_type;
pub use uploads::{BufferExt, ClientExt};

/// The Rust snippets of `docs/jax-guide.md`, run as doc tests so the guide stays true to the API
/// (here, where both the client and the formats are at hand).
#[cfg(doctest)]
#[doc = include_str!("../../../docs/jax-guide.md")]
pub struct JaxGuide;
