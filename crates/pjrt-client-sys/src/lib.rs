//! # pjrt-client-sys
//!
//! The raw ABI of the [PJRT C API](https://openxla.org/xla/pjrt): our own `#[repr(C)]`
//! declarations of its handles, enums, args structs, extension structs and the `PJRT_Api`
//! function table, with no logic and no dependencies.
//!
//! They were written by hand from the published description of the API (0.106–0.115), with
//! the C header read as a specification; no header or generated binding is included. Nothing
//! here is checked: the `pjrt-client` crate wraps these declarations in safe types (and
//! re-exports this crate as `pjrt_client::sys`).
//!
//! The crate is usable on its own, from either side of the table: a client that loads a plugin
//! and calls through its [`PJRT_Api`], or a PJRT plugin written in Rust that fills one in and
//! returns it from `GetPjrtApi` (the workspace's test plugin, `fake-plugin`, is one).
//!
//! ## Conventions
//! - **Handles** (`PJRT_Client`, `PJRT_Buffer`, ...) are opaque, zero-sized `#[repr(C)]` types,
//!   only ever used behind pointers.
//! - **C enums** are `i32` newtypes with associated constants (e.g. [`PJRT_Error_Code`]), never
//!   Rust enums: a value from a newer plugin that this crate does not know is data, not
//!   undefined behaviour.
//! - **Args structs** implement [`Args`]. Their `struct_size` is [`Args::STRUCT_SIZE`]: the offset
//!   of the last field plus that field's size, as the header's `*_STRUCT_SIZE` macros compute
//!   it, and never `size_of` (which would count tail padding). [`Args::new`] builds a zero-filled
//!   value with `struct_size` already set.
//! - **The table**: [`PJRT_Api`] declares all [`SLOT_COUNT`] slots in order; [`SLOTS`] records
//!   each slot's name and the minor version that introduced it. A plugin's table may be shorter:
//!   read a slot only when it lies inside the plugin's `struct_size`.
//! - **Extensions** start with a [`PJRT_Extension_Base`]; [`Extension`] describes the members of
//!   each declared extension struct and any known older form.
//!
//! ## Files
//! Declarations are grouped by the object they act on; everything is re-exported at the crate
//! root, so a path never names a file.
//! - `macros.rs`: the macros every declaration goes through (handles, C enums, args structs);
//! - `args.rs`: the [`Args`] trait (`struct_size`, zero-filled construction), the
//!   `extension_start` type [`Ext`] and the [`PJRT_Extension_Base`] it points to;
//! - `error.rs`: `PJRT_Error`, [`PJRT_Error_Code`], reading and destroying errors, payloads;
//! - `named_value.rs`: [`PJRT_NamedValue`], for attributes, create options and payloads;
//! - `api.rs`: the [`PJRT_Api`] table and its [`SLOTS`], its version, the plugin's own calls;
//! - `client.rs`: `PJRT_Client`: creation (with the key-value store callbacks), platform and
//!   device queries, DMA mapping, global process info;
//! - `device.rs`: devices, memories and device descriptions;
//! - `buffer.rs`: `PJRT_Buffer`, element types, memory layouts, every call that makes, queries or
//!   copies a buffer, and the asynchronous host-to-device transfer manager;
//! - `executable.rs`: programs, compilation, loading, executables and their metadata, execute
//!   options and args, host send/receive callbacks;
//! - `event.rs`: `PJRT_Event`;
//! - `topology.rs`: `PJRT_TopologyDescription` and the shapes its memory spaces store;
//! - `extensions/`: the extension machinery ([`Extension`]) and one file per extension;
//! - `xla_ffi.rs`: the XLA FFI call frame a handler receives ([`xla_ffi`]).
//!
//! ```
//! use pjrt_client_sys::{Args, PJRT_Error_Code, PJRT_Error_GetCode_Args};
//!
//! // struct_size, extension_start, error, code: the last field is an i32 at offset 24, so the
//! // header's size is 28 although the Rust struct is padded to 32.
//! assert_eq!(PJRT_Error_GetCode_Args::STRUCT_SIZE, 28);
//! assert_eq!(std::mem::size_of::<PJRT_Error_GetCode_Args>(), 32);
//!
//! let args = PJRT_Error_GetCode_Args::new();
//! assert_eq!(args.struct_size, 28);
//! assert!(args.error.is_null());
//! assert_eq!(args.code, PJRT_Error_Code::OK);
//! assert_eq!(PJRT_Error_Code::INTERNAL, PJRT_Error_Code(13));
//! // A code from a newer plugin that this crate has no name for is still a plain value.
//! let newer = PJRT_Error_Code(99);
//! assert_eq!(format!("{newer:?}"), "PJRT_Error_Code(99)");
//! ```

#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

// First: the declaring macros, which every module below uses.
#[macro_use]
mod macros;

mod api;
mod args;
mod buffer;
mod client;
mod device;
mod error;
mod event;
mod executable;
mod extensions;
mod named_value;
mod topology;

pub mod xla_ffi;

pub use api::*;
pub use args::*;
pub use buffer::*;
pub use client::*;
pub use device::*;
pub use error::*;
pub use event::*;
pub use executable::*;
pub use extensions::*;
pub use named_value::*;
pub use topology::*;
