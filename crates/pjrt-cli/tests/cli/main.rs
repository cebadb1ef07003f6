//! pjrt-cli's integration tests: the `pjrt` command end to end, on both CPU plugins. One test
//! binary (`cli`), one module per area; every test binary links the whole workspace's libraries,
//! so the tests share one instead of one each.
//!
//! Tests are named `module::test`: `cargo test -p pjrt-cli --test cli ui_cli::` runs one module.
//! A new test file goes in this folder as one more `mod` here, not in `tests/` (where it would
//! become a binary of its own).

mod common;
#[path = "../../../pjrt-client/tests/fake_support/mod.rs"]
mod fake_support;
#[path = "../../../pjrt-client/tests/support/spmd.rs"]
mod spmd;

mod cache_cli;
mod cache_trust_cli;
mod capi_cli;
mod cli;
mod etcd_cli;
mod ffi_cli;
mod fixtures_cli;
mod gpu_target_cli;
mod inspect_cli;
mod jax_export_cli;
mod lapack_cli;
mod mlir_text_cli;
mod multi_device_cli;
mod npz_cli;
mod plugin_runtimes_cli;
mod plugin_tables_cli;
mod portable_cli;
mod python_sites_cli;
mod safetensors_cli;
mod serve_cli;
mod serve_limits_cli;
mod sub_byte_cli;
mod tpu_cli;
mod trace_cli;
mod trust_cli;
mod ui_cli;
mod weights_cli;
