//! The numbered tutorials of `pjrt-client`, as this package's examples; run one with
//! `cargo run -p pjrt-examples --example NAME`:
//!
//! | example | what it teaches |
//! |---|---|
//! | `01_inspect_plugin` | find and load a plugin; its version, attributes, devices and memories |
//! | `02_run_stablehlo` | compile and run a JAX-lowered training step on `.npy` inputs |
//! | `03_multi_device` | replicas with an all-reduce, an SPMD program with a sharded input |
//! | `04_aot_compile_and_load` | compile ahead of time, serialize, load later; the compile cache |
//! | `05_async_execution` | futures, overlapping transfers, chained executions, events |
//! | `06_safetensors_weights` | model weights from safetensors |
//! | `07_jax_exported_model` | run a model exported with `jax.export` |
//! | `08_dlpack` | zero-copy exchange with `ndarray` through DLPack |
//! | `09_build_a_program` | build a training step in Rust with [`pjrt_builder`] (no Python) and train on the device |
//! | `10_custom_call_in_rust` | implement a custom call (`jax.ffi.ffi_call`) in Rust and run a `jax.export` model that calls it, on both CPU plugins |
//! | `11_shape_polymorphic` | run a shape-polymorphic `jax.export` model at many input shapes: one executable per signature, JAX's error when a constraint fails, refining a module by hand |
//!
//! They use [`pjrt_client`], for files [`pjrt_formats`], for programs built in Rust
//! [`pjrt_builder`], and for refining StableHLO [`pjrt_stablehlo`].

#![deny(missing_docs)]
