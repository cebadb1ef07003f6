//! pjrt-capi's integration tests: one test binary (`capi`), calling the C functions from Rust
//! as a C program would, on the real CPU plugin. Tests are named `module::test`:
//! `cargo test -p pjrt-capi --test capi threads::` runs one module.

mod support;

mod bad_inputs;
mod handles;
mod models;
mod threads;
