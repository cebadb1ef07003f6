//! pjrt-client's integration tests: one test binary (`client`), one module per concern. Every
//! test binary links the whole library, so the tests share one instead of one each.
//!
//! Tests are named `module::test`: `cargo test -p pjrt-client --test client soundness::` runs one
//! module. A new test file goes in this folder as one more `mod` here, not in `tests/` (where it
//! would become a binary of its own), unless it needs a process of its own, as the binaries
//! beside this folder do:
//! - `allocations.rs`, `hostile_plugin.rs` and `kv_store.rs` install a global allocator of their
//!   own (counting, watching or balancing every allocation of their process);
//! - `soak.rs` measures the resident set size of its process.
//!
//! `support` (the real CPU plugins) and `fake_support` (the fake plugin) are shared with those
//! binaries and with pjrt-formats' tests.

#[path = "../fake_support/mod.rs"]
mod fake_support;
#[path = "../support/mod.rs"]
mod support;

mod aot;
mod async_api;
mod buffer_parity;
mod builtin_providers;
mod callback_threads;
mod compile_options_plugin;
mod cpu_behaviour;
mod device_extras;
mod dlpack;
mod executable_parity;
mod execute_everywhere;
mod extensions;
mod fake_plugin;
mod fallbacks;
mod ffi_handlers;
mod gpu_targets;
mod fault_injection;
mod gpu_options;
mod house;
mod host_callbacks;
mod host_copy;
mod hostile_input;
mod layers;
mod layouts;
mod multi_device;
#[cfg(feature = "ndarray")]
mod ndarray_arrays;
mod parity_doc;
mod parity_slots;
mod plugin_table;
mod smoke;
mod soundness;
mod stress;
mod zero_copy;
