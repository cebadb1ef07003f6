//! Custom calls written in Rust: typed XLA FFI handlers.
//!
//! A JAX program calls native code through a typed custom call (`stablehlo.custom_call` with
//! `api_version = 4`; `jax.ffi.ffi_call` in Python): XLA finds the handler by target name and
//! platform, and calls it with a *call frame* holding the operands, the result buffers and the
//! attributes. This module lets a Rust function be such a handler:
//!
//! 1. declare what it takes, a [`Signature`]: operand and result buffers (element type and rank,
//!    or any rank) and named attributes (scalars `i8`..`i64`, `u8`..`u64`, `f32`, `f64`, `bool`;
//!    arrays of numbers; strings). Python floats arrive as `f64`, Python ints as `i64`, enums as
//!    their integer;
//! 2. make a [`Handler`] from it and a closure that reads them through [`Call`];
//! 3. [`register`] it for a target name on a client's plugin, before compiling the programs that
//!    call it.
//!
//! ```
//! use pjrt_client::ffi::{self, Call, FfiError, Handler, Rank, Signature};
//! use pjrt_client::{Client, ClientOptions, CompileOptions, ExecuteOptions, Plugin, Program};
//! # fn main() -> pjrt_client::Result<()> {
//! let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
//! let client = Client::new(&plugin, &ClientOptions::new())?;
//!
//! // y = x * scale + offset, on f32 vectors.
//! let signature = Signature::new().arg::<f32>(Rank::Exact(1)).ret::<f32>(Rank::Exact(1))
//!     .attr::<f32>("scale").attr::<f64>("offset");
//! let handler = Handler::new("doc_affine", signature, |call: &Call| {
//!     let x = call.arg::<f32>(0)?;
//!     let scale: f32 = call.attr("scale")?;
//!     let offset = call.attr::<f64>("offset")? as f32;
//!     let mut y = call.ret::<f32>(0)?;
//!     if y.dims() != x.dims() {
//!         return Err(FfiError::invalid_argument("x and y differ in shape"));
//!     }
//!     y.copy_from_iter(x.as_slice().iter().map(|v| v * scale + offset));
//!     Ok(())
//! });
//! ffi::register(&client, "doc_affine", &handler)?;
//!
//! let program = Program::mlir_text(r#"
//! func.func public @main(%x: tensor<3xf32>) -> tensor<3xf32> {
//!   %y = stablehlo.custom_call @doc_affine(%x) {api_version = 4 : i32,
//!       backend_config = {scale = 2.0 : f32, offset = 0.5 : f64}} : (tensor<3xf32>) -> tensor<3xf32>
//!   return %y : tensor<3xf32>
//! }"#)?;
//! let exe = client.compile(&program, &CompileOptions::new())?;
//! let x = client.upload(&[1.0f32, 2.0, 3.0], &[3])?;
//! let y = exe.execute(&[&x], &ExecuteOptions::new())?[0].to_vec::<f32>()?;
//! assert_eq!(y, [2.5, 4.5, 6.5]);
//! # Ok(()) }
//! ```
//!
//! # What a handler checks
//! Before the closure runs, the call frame is decoded against the signature (see
//! [`FrameError`]): every struct is read by its own `struct_size` and no further (a shorter,
//! older struct is refused; of a longer, newer one only the known prefix is read), counts are
//! bounded, pointers are checked for NULL and alignment, every type tag, element type, rank and
//! attribute name and type is compared with the declaration (missing and extra attributes are
//! refused), and results must not overlap each other or an operand, except a result declared
//! with [`Signature::ret_aliasing`], which may be exactly its operand's memory (what
//! `output_operand_aliases` makes XLA pass) and is then written in place ([`Call::ret_in_place`]). A mismatch, an error the
//! closure returns, and a panic of the closure (caught at the C boundary) all come back to XLA
//! as an XLA FFI error naming what went wrong; the execution then fails with that message.
//!
//! What cannot be checked is the size of the memory behind a pointer: a non-NULL buffer is
//! taken to hold what its dimensions say, as the XLA FFI ABI promises. Errors are made with the
//! frame's own `XLA_FFI_Api`; a frame without a usable one (none, or of another major version;
//! XLA always passes its own) cannot get its error back: the function does not run, no result is
//! written, and the handler returns no error object.
//!
//! # Versions
//! The handler answers XLA's metadata query (made when it is registered) with
//! min(this crate's XLA FFI version, [`crate::sys::xla_ffi::XLA_FFI_API_MINOR`] = 0.4, the version of
//! the API in the query's frame): XLA refuses a handler that claims a newer minor than its own.
//! The 0.106 CPU plugin speaks XLA FFI 0.3 (an `XLA_FFI_Api` of 192 bytes), the 0.115 one 0.4
//! (200 bytes); their call frames are 168 bytes.
//!
//! # Limits
//! - Only the **execute** stage is reachable through PJRT (its FFI extension registers one
//!   function, the execute handler): no instantiate, prepare or initialize stage, and no
//!   per-instance state. A frame for another stage is refused.
//! - Operands and results are buffers (tokens and dictionaries are not supported); buffers of
//!   `pred` are read as [`Pred`] bytes, never as `bool`.
//! - Handlers are not command-buffer compatible (the trait is not claimed).
//! - The plugin's handler registry is global to the loaded plugin and permanent: a registration
//!   cannot be undone, and a target name, once registered, stays with its handler until the
//!   process exits. At most [`MAX_HANDLERS`] handlers can be registered in a process.
//!
//! # Registration
//! [`register`] registers once per loaded plugin (not per client): a second call with the same
//! handler for the same target is a no-op, with a different handler it is refused
//! ([`RegistrationErrorKind::Conflict`]). The plugin's own answer to `register_handler` proves
//! nothing (it answers OK when nothing was registered: when the handler does not answer the
//! metadata query, claims a newer FFI minor than the plugin's, or when a different handler
//! already holds the name), so each registration is proven by compiling a one-op program that
//! calls the target: before registering (it must fail: otherwise someone else, e.g. a raw
//! [`crate::extensions::FfiExtension::register_handler`], holds the name:
//! [`RegistrationErrorKind::TakenElsewhere`]) and after (it must compile:
//! [`RegistrationErrorKind::NotProven`] otherwise).
//!
//! # Built-in handlers
//! Handlers a program needs without knowing it (JAX's LAPACK kernels, which jaxlib registers in
//! its own process) come from a [`BuiltinProvider`]: [`crate::Client::compile`] and
//! [`crate::Client::deserialize_and_load`] let every provider of the client's options
//! ([`crate::ClientOptions::builtin_provider`]) and of the process ([`add_provider`]) register what
//! the program calls ([`register_builtin`]) before the plugin sees it. This crate has no provider
//! of its own: the crate pjrt-lapack's `client` feature has the one for JAX's LAPACK kernels, and
//! a program that calls one with no provider installed is refused with the line that installs it
//! ([`crate::Error::MissingBuiltinProvider`]).

mod call;
mod decode;
#[doc(hidden)]
pub mod frames;
mod handler;
#[doc(hidden)]
pub mod library;
mod register;
mod signature;
#[cfg(test)]
mod tests;
mod trampoline;
mod types;

pub use crate::client::builtins::{add_provider, providers, BuiltinProvider};
pub use crate::error::RegistrationErrorKind;
pub use call::{BufferMut, BufferRef, Call, FfiError};
pub use decode::{FrameError, MAX_COUNT, MAX_RANK, MAX_STRING};
pub use handler::Handler;
pub use library::{FfiLibrary, FfiLibraryEntry, FfiLibraryTable};
pub use register::{probe_program, register, register_builtin, register_for_platform, xla_platform};
pub use signature::{Rank, Signature};
pub use trampoline::MAX_HANDLERS;
pub use types::{AttrScalar, DataType, FfiElement, Pred};
