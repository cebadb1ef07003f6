//! pjrt-formats' integration tests: one test binary (`formats`), one module per format or
//! feature. Every test binary links pjrt-client and pjrt-formats, so the tests share one instead
//! of one each.
//!
//! Tests are named `module::test`: `cargo test -p pjrt-formats --test formats safetensors::` runs
//! one module. A new test file goes in this folder as one more `mod` here, not in `tests/` (where
//! it would become a binary of its own).
//!
//! `support` (the real CPU plugins) and `fake_support` (the fake plugin) are pjrt-client's.

#[path = "../../../pjrt-client/tests/fake_support/mod.rs"]
mod fake_support;
#[path = "../../../pjrt-client/tests/support/mod.rs"]
mod support;

mod binding;
mod compile_cache;
mod compile_options_pb;
mod jax_export;
mod jax_programs;
mod legacy_lapack;
#[cfg(feature = "lapack")]
mod lapack;
mod mapped_files;
mod npy_mapped;
mod npz;
mod portable;
mod program_formats;
mod safetensors;
mod symbolic;
