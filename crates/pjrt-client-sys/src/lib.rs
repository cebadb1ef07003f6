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

/// Declares opaque handle types.
macro_rules! opaque {
    ($($name:ident),+ $(,)?) => {$(
        /// An opaque handle owned by the plugin.
        #[repr(C)]
        pub struct $name {
            _data: [u8; 0],
            _marker: ::core::marker::PhantomData<(*mut u8, ::core::marker::PhantomPinned)>,
        }
    )+};
}

/// Declares a C enum as an `i32` newtype with associated constants.
macro_rules! c_enum {
    ($(#[$m:meta])* $name:ident { $($variant:ident = $value:expr),+ $(,)? }) => {
        $(#[$m])*
        #[repr(transparent)]
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
        pub struct $name(pub i32);
        #[allow(non_upper_case_globals)]
        impl $name {
            $(pub const $variant: $name = $name($value);)+
        }
    };
}

/// Declares an args struct and its `STRUCT_SIZE` (offset of the last field plus its size).
///
/// The first field must be `struct_size: usize` (the pattern demands it, which is what makes the
/// `Args` impl sound); nothing else is assumed: most structs go on with `extension_start`, some
/// extension args structs do not have one and are declared as the API describes them.
macro_rules! pjrt_struct {
    ($(#[$m:meta])* $name:ident { struct_size: usize $(, $field:ident : $ty:ty)* $(,)? }) => {
        $(#[$m])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug)]
        pub struct $name { pub struct_size: usize $(, pub $field: $ty)* }
        // SAFETY: repr(C), first field `struct_size: usize` (required by the pattern), every field
        // type is valid zeroed.
        unsafe impl $crate::Args for $name {
            const STRUCT_SIZE: usize = pjrt_struct!(@size $name; struct_size: usize $(, $field : $ty)*);
        }
    };
    (@size $name:ident; $field:ident : $ty:ty) => {
        ::core::mem::offset_of!($name, $field) + ::core::mem::size_of::<$ty>()
    };
    (@size $name:ident; $field:ident : $ty:ty, $($rest:ident : $rty:ty),+) => {
        pjrt_struct!(@size $name; $($rest : $rty),+)
    };
}

mod api;
mod buffer_types;
mod client_types;
mod exec_types;
mod extensions;
mod types;

pub mod xla_ffi;

pub use api::*;
#[allow(unused_imports)]
pub use buffer_types::*;
#[allow(unused_imports)]
pub use client_types::*;
#[allow(unused_imports)]
pub use exec_types::*;
pub use extensions::*;
pub use types::*;
