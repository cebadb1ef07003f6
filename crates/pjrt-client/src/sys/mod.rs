//! The raw ABI: our own `#[repr(C)]` declarations of the PJRT C API, with no logic.
//!
//! Nothing here is checked: use the safe types of this crate unless you need an escape hatch.
//! Written from the published description of the API (0.106–0.115); no header or generated
//! binding is included.

mod api;
mod ext;
mod types;

pub use api::*;
pub use ext::*;
pub use types::*;
