//! # pjrt-types
//!
//! The vocabulary the pjrt crates share, at the bottom of the workspace with no dependencies:
//! [`ElementType`] (PJRT's element types, their XLA and MLIR names and sizes), [`NativeType`]
//! (the Rust types stored exactly as one) and StableHLO versions. `pjrt-client` re-exports
//! them (`pjrt_client::ElementType`); `pjrt-stablehlo` and `pjrt-builder` use them without
//! the client.
//!
//! ```
//! use pjrt_types::{ElementType, NativeType};
//! assert_eq!(f32::ELEMENT_TYPE, ElementType::F32);
//! assert_eq!(ElementType::from_name("bf16").and_then(|t| t.mlir_name()), Some("bf16"));
//! assert_eq!(ElementType::S4.host_bytes(3), Some(3));
//! ```
//!
//! ## Features
//! - `half`, `num-complex` (off): [`NativeType`] for `half::f16`, `half::bf16` and
//!   `num_complex::Complex<f32>`/`Complex<f64>` (`pjrt-client` turns both on).

#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

mod element_type;
mod stablehlo_version;

pub use element_type::{native_bytes, native_values, normalize_pred, ElementType, HostValueError, NativeType};
pub use stablehlo_version::{ParseVersionError, StableHloVersion};
