//! [`JaxExportError`]: what is wrong with a `jax.export` artifact (`crate::jax_export` reads it).

use std::path::PathBuf;

/// What is wrong with a `jax.export` artifact (the bytes of `Exported.serialize()`):
/// [`crate::jax_export::JaxExport::from_bytes`] and [`crate::jax_export::JaxExport::read`] return it
/// as [`crate::Error::JaxExport`].
///
/// ```
/// use pjrt_formats::jax_export::{JaxExport, JaxExportError};
///
/// let e = JaxExport::from_bytes(&[0xff; 64]).unwrap_err();
/// assert!(matches!(e, pjrt_formats::Error::JaxExport(JaxExportError::Corrupt { .. })), "{e}");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JaxExportError {
    /// The file at `path` is not a readable artifact; `source` says why.
    #[error("{}: {source}", path.display())]
    InFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        source: Box<JaxExportError>,
    },
    /// A field cannot be read: its bytes run past the end, an offset or index points outside,
    /// a value is out of range, or the artifact expands beyond a bound.
    #[error("not a readable jax.export artifact: {field}: {what} (at byte {at})")]
    Corrupt {
        /// The field of the `Exported` table, e.g. `in_avals`.
        field: String,
        /// What is wrong.
        what: String,
        /// The byte position involved.
        at: usize,
    },
    /// A serialization version this reader does not know (0, or newer than JAX 0.12's).
    #[error(
        "jax.export serialization version {version}{} is not one this reader knows (1..={newest}); {}",
        written_by.as_deref().map(|v| format!(", written by JAX {v},")).unwrap_or_default(),
        version_advice(*version)
    )]
    Version {
        /// The version the artifact says.
        version: u16,
        /// The newest version this reader knows.
        newest: u16,
        /// The JAX that wrote it, when the artifact says (JAX 0.12 on), cut to 64 bytes.
        written_by: Option<String>,
    },
    /// The fields are readable but disagree, or one the artifact needs is missing.
    #[error("not a readable jax.export artifact: {0}")]
    Malformed(String),
}

/// What to do about an unknown serialization version.
fn version_advice(version: u16) -> &'static str {
    if version == 0 {
        "no JAX release writes 0: the file is not a jax.export artifact, or is damaged"
    } else {
        "it is newer than this crate: export the model with JAX 0.12 or older (jax.export of JAX 0.10 to 0.12 is \
         read), or use a newer pjrt-formats"
    }
}
