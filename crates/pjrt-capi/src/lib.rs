//! # pjrt-capi: a C API for running models
//!
//! One shared library (`libpjrt.so`, soname `libpjrt.so.1`; `libpjrt.a` to link statically) and
//! one header (`include/pjrt.h`, generated from this crate by cbindgen) that run `jax.export`
//! models (shape-polymorphic ones refined for each call's shapes), StableHLO programs (`.mlir`,
//! `.mlirbc`) and AOT artifacts on any PJRT plugin, from C, C++, Fortran or anything that calls
//! C. Weights come from a safetensors file, bound to the model's inputs by name and uploaded to
//! the device once.
//!
//! | function | what it does |
//! |---|---|
//! | [`pjrt_abi_version`] | the library's ABI version, to compare with the header's `PJRT_ABI_VERSION_MAJOR` |
//! | [`pjrt_runtime_new`], [`pjrt_runtime_free`] | a plugin (by path or name), a client, its device, the compile cache |
//! | [`pjrt_model_load`], [`pjrt_model_free`] | a model file and its weights, on a runtime |
//! | [`pjrt_model_signature`] | what the model takes and gives (-1 for a symbolic dimension) |
//! | [`pjrt_model_run`] | run it on host tensors; outputs into your buffers or allocated here |
//! | [`pjrt_tensor_free`] | free an output the library allocated |
//! | [`pjrt_status_code`], [`pjrt_status_message`], [`pjrt_status_free`] | what went wrong |
//!
//! ```c
//! #include <pjrt.h>
//! pjrt_options options = {sizeof(pjrt_options)};   // zeros: the defaults
//! options.plugin = "cpu";
//! pjrt_runtime* runtime;
//! pjrt_status* status = pjrt_runtime_new(&options, &runtime);
//! if (status) { fprintf(stderr, "%s\n", pjrt_status_message(status)); pjrt_status_free(status); return 1; }
//! ```
//!
//! ## Errors
//!
//! Every call that can fail returns a `pjrt_status*`: NULL on success, else a status with a
//! code ([`pjrt_status_code`], absl's codes: `PJRT_CODE_INVALID_ARGUMENT` for what the caller
//! passed, `PJRT_CODE_OUT_OF_RANGE` for an output buffer that is too small, ...) and a message
//! ([`pjrt_status_message`]) saying what failed; free it with [`pjrt_status_free`]. Nothing
//! aborts, throws or unwinds into the caller: each exported function runs its body through one
//! trampoline that catches panics (a panic becomes a `PJRT_CODE_INTERNAL` status naming the
//! function). Every pointer and size from C is checked before use: NULL, the rank against
//! [`PJRT_MAX_NDIM`], dimensions that are negative or whose byte size overflows, `nbytes`
//! against dtype × dims, output capacity.
//!
//! ## Handles
//!
//! A `pjrt_runtime*`, `pjrt_model*` or `pjrt_status*` is not an address: it is an id into a
//! registry of its kind (slot, generation and kind packed into the pointer-sized value), never
//! dereferenced. So a handle freed already, a handle of another kind or a made-up pointer is an
//! error status (a second free of a status is ignored), not undefined behaviour; a boxed struct
//! with a magic field cleared on free would have to read freed memory to find out. A lookup is
//! a read lock and an atomic increment. (Generations are 32-bit: a stale handle could alias a
//! live one after 2^32 frees of the same slot.)
//!
//! ## Ownership and lifetimes
//!
//! - A model holds what it needs of its runtime: [`pjrt_runtime_free`] may come before the
//!   models' [`pjrt_model_free`].
//! - Inputs are only read, during [`pjrt_model_run`]: the caller's memory is not kept.
//! - An output whose `data` is NULL is allocated by the library (64-byte aligned) and freed by
//!   [`pjrt_tensor_free`]; one whose `data` is set is written there (`nbytes` is its capacity).
//! - [`pjrt_model_signature`]'s arrays and [`pjrt_status_message`]'s text belong to the model and
//!   the status: valid until those are freed.
//!
//! ## Threads
//!
//! Every function is thread-safe. One model may run in many threads at once (the plugin runs
//! the calls concurrently); a handle freed in one thread while another uses it lets the running
//! call finish, and later calls get an error. Only a `pjrt_tensor` you pass is yours to keep
//! from other threads during a call.
//!
//! ## From Rust
//!
//! The functions are Rust functions too (this crate's `rlib`, as `pjrt::pjrt_model_run` and so
//! on); its tests and this example call them as C would:
//!
//! ```
//! use pjrt::*;
//! use std::ptr::null_mut;
//!
//! let mut runtime = null_mut();
//! assert!(unsafe { pjrt_runtime_new(std::ptr::null(), &mut runtime) }.is_null()); // the default plugin
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/jax_export/jax-0.10.2/symbolic_batch/model.jaxexport\0");
//! let mut model = null_mut();
//! assert!(unsafe { pjrt_model_load(runtime, path.as_ptr().cast(), std::ptr::null(), &mut model) }.is_null());
//!
//! // sum(x * 2, axis=0) of x: f32[b, 4]; b is symbolic.
//! let mut signature = pjrt_signature { n_inputs: 0, inputs: std::ptr::null(), n_outputs: 0, outputs: std::ptr::null() };
//! assert!(unsafe { pjrt_model_signature(model, &mut signature) }.is_null());
//! let input = unsafe { &*signature.inputs };
//! assert_eq!((input.dtype, input.ndim, &input.dims[..2]), (PJRT_DTYPE_F32, 2, &[-1, 4][..]));
//!
//! let mut x = [1f32; 12];
//! let mut dims = [0i64; PJRT_MAX_NDIM];
//! dims[..2].copy_from_slice(&[3, 4]);
//! let inputs = [pjrt_tensor { data: x.as_mut_ptr().cast(), nbytes: 48, dtype: PJRT_DTYPE_F32, ndim: 2, dims }];
//! let mut outputs = [pjrt_tensor::EMPTY]; // data NULL: the library allocates it
//! assert!(unsafe { pjrt_model_run(model, inputs.as_ptr(), 1, outputs.as_mut_ptr(), 1) }.is_null());
//! let out = unsafe { std::slice::from_raw_parts(outputs[0].data as *const f32, 4) };
//! assert_eq!(out, [6.0; 4]);
//! assert!(unsafe { pjrt_tensor_free(&mut outputs[0]) }.is_null());
//!
//! // A wrong shape is a status with a message, not a crash.
//! let mut bad = inputs;
//! bad[0].dims[1] = 5;
//! bad[0].nbytes = 60;
//! let status = unsafe { pjrt_model_run(model, bad.as_ptr(), 1, outputs.as_mut_ptr(), 1) };
//! assert_eq!(pjrt_status_code(status), PJRT_CODE_INVALID_ARGUMENT);
//! let message = unsafe { std::ffi::CStr::from_ptr(pjrt_status_message(status)) };
//! assert!(message.to_str()?.starts_with("inputs[0]"), "{message:?}");
//! pjrt_status_free(status);
//!
//! assert!(pjrt_model_free(model).is_null());
//! assert!(pjrt_runtime_free(runtime).is_null());
//! // Freed handles are refused, not followed.
//! let status = pjrt_model_free(model);
//! assert_eq!(pjrt_status_code(status), PJRT_CODE_INVALID_ARGUMENT);
//! pjrt_status_free(status);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Install, pkg-config, CMake, Fortran
//!
//! `pjrt capi install PREFIX` (the `pjrt` command of pjrt-cli; the same from Rust:
//! [`install::install`]) lays the library out for other builds: `PREFIX/include/pjrt.h`,
//! `PREFIX/lib/libpjrt.so.1` (and the link `libpjrt.so`), `PREFIX/lib/libpjrt.a`, a pkg-config
//! file (`pkg-config --cflags --libs pjrt`), a CMake package (`find_package(pjrt CONFIG)`, the
//! target `pjrt::pjrt`; `PJRT_STATIC=ON` for the static library) and the Fortran module's
//! source, `PREFIX/share/pjrt/fortran/pjrt.f90` ([`install::FORTRAN_MODULE`]).
//!
//! The Fortran module (Fortran 2018, `iso_c_binding`) binds every function and constant of the
//! header and takes Fortran arrays: `pjrt_tensor_of(a)` describes an array `a(d1, ..., dk)` as
//! the row-major tensor `[dk, ..., d1]`, which is the same memory, so nothing is copied (a
//! Fortran `positions(3, n)` is the `f64[n, 3]` a JAX function takes); `pjrt_transposed(a)`
//! copies with the dimensions reversed, for a model that wants them in Fortran's order.
//!
//! ```sh
//! cargo build --release -p pjrt-capi -p pjrt-cli
//! target/release/pjrt capi install /opt/pjrt
//! cc app.c $(PKG_CONFIG_PATH=/opt/pjrt/lib/pkgconfig pkg-config --cflags --libs pjrt) -Wl,-rpath,/opt/pjrt/lib
//! gfortran /opt/pjrt/share/pjrt/fortran/pjrt.f90 app.f90 -L/opt/pjrt/lib -lpjrt -Wl,-rpath,/opt/pjrt/lib
//! ```
//!
//! Build, link and run from C, C++ and Fortran, and the same task beside ONNX Runtime's C API:
//! `docs/c-api.md`, `examples/c/`, `examples/cpp/` and `examples/fortran/` of the repository.

#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod types;
mod registry;
mod failure;
mod check;
mod status;
mod boundary;
mod tensor;
mod runtime;
mod model;
pub mod install;

pub use boundary::{pjrt_status_code, pjrt_status_free, pjrt_status_message};
pub use model::{pjrt_model_free, pjrt_model_load, pjrt_model_run, pjrt_model_signature};
pub use runtime::{pjrt_runtime_free, pjrt_runtime_new};
pub use tensor::pjrt_tensor_free;
pub use types::*;

/// The ABI's major version: a library of another major version is not compatible with this
/// header (the shared library's soname carries it: `libpjrt.so.1`).
pub const PJRT_ABI_VERSION_MAJOR: u32 = 1;
/// The ABI's minor version: a later minor version only adds (functions, trailing
/// `pjrt_options` fields read when `struct_size` says they are there).
pub const PJRT_ABI_VERSION_MINOR: u32 = 0;

/// The library's ABI version, `(major << 16) | minor`: compare its major version with the
/// header's `PJRT_ABI_VERSION_MAJOR` before anything else.
///
/// Thread-safe.
#[no_mangle]
pub extern "C" fn pjrt_abi_version() -> u32 {
    (PJRT_ABI_VERSION_MAJOR << 16) | PJRT_ABI_VERSION_MINOR
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_abi_version_packs_major_and_minor() {
        assert_eq!(super::pjrt_abi_version() >> 16, super::PJRT_ABI_VERSION_MAJOR);
        assert_eq!(super::pjrt_abi_version() & 0xffff, super::PJRT_ABI_VERSION_MINOR);
    }

    #[test]
    fn the_soname_carries_the_abi_major_version() {
        assert_eq!(env!("PJRT_CAPI_SONAME_MAJOR"), super::PJRT_ABI_VERSION_MAJOR.to_string());
    }
}
