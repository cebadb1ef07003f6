//! The XLA FFI C ABI: what a typed custom call (`stablehlo.custom_call` with `api_version = 4`)
//! is handed by XLA, and the few calls back into XLA a handler needs.
//!
//! Our own `#[repr(C)]` declarations, written from the published description of XLA's
//! `xla/ffi/api/c_api.h` (read as a specification) at the versions the CPU plugins speak: XLA FFI
//! **0.3** (the 0.106 CPU plugin: `XLA_FFI_Api` of 192 bytes) and **0.4** (the 0.115 CPU plugin:
//! 200 bytes). Nothing here is checked, and nothing here trusts the other side: the
//! `pjrt-client` crate (`pjrt_client::ffi`) reads every struct XLA hands it by its
//! `struct_size` and only as far as that size reaches.
//!
//! ## Conventions
//! - Structs that start with `struct_size` implement [`crate::Args`]: their
//!   [`STRUCT_SIZE`](crate::Args::STRUCT_SIZE) is what the header's `*_STRUCT_SIZE` computes (the
//!   offset of the header's *last counted* field plus its size), never `size_of`.
//! - C enums are `i32` newtypes ([`XLA_FFI_DataType`], [`XLA_FFI_AttrType`], ...): a value a
//!   newer XLA sends that this crate does not know is data, not undefined behaviour.
//! - A struct received from XLA may be shorter (older) or longer (newer) than declared here: read
//!   a field only when `offset + size <= struct_size`.
//!
//! ```
//! use pjrt_client_sys::xla_ffi::*;
//! use pjrt_client_sys::Args;
//! // The call frame counts its fields up to `attrs` (168 bytes on both CPU plugins); the
//! // `future` after it is not part of its STRUCT_SIZE.
//! assert_eq!(XLA_FFI_CallFrame::STRUCT_SIZE, 168);
//! assert_eq!(XLA_FFI_Buffer::STRUCT_SIZE, 48);
//! assert_eq!(XLA_FFI_Error_Create_Args::STRUCT_SIZE, 28);
//! assert_eq!(XLA_FFI_Metadata::STRUCT_SIZE, 36);
//! assert_eq!(XLA_FFI_DataType::F32, XLA_FFI_DataType(11));
//! ```

#![allow(non_camel_case_types, non_snake_case, missing_docs)]

use core::ffi::{c_char, c_void};
use core::mem::{offset_of, size_of};

opaque!(XLA_FFI_Error, XLA_FFI_ExecutionContext, XLA_FFI_InternalApi, XLA_FFI_Future);

/// `XLA_FFI_API_MAJOR`: the major version these declarations describe (an XLA of another major
/// may have rearranged anything).
pub const XLA_FFI_API_MAJOR: i32 = 0;

/// The newest minor version whose layouts these declarations were checked against (0.4, the
/// 0.115 CPU plugin). Every struct read here has had the same prefix since 0.1.
pub const XLA_FFI_API_MINOR: i32 = 4;

c_enum! {
    /// `XLA_FFI_Extension_Type`.
    XLA_FFI_Extension_Type { METADATA = 1 }
}

/// `XLA_FFI_Extension_Base`: the head of every node of an `extension_start` chain.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct XLA_FFI_Extension_Base {
    /// Size of the whole extension struct this base starts.
    pub struct_size: usize,
    /// Which extension.
    pub type_: XLA_FFI_Extension_Type,
    /// The next node, or NULL.
    pub next: *mut XLA_FFI_Extension_Base,
}

/// The `extension_start` field type.
pub type XlaExt = *mut XLA_FFI_Extension_Base;

pjrt_struct! {
    /// `XLA_FFI_Api_Version` (24 bytes).
    XLA_FFI_Api_Version { struct_size: usize, extension_start: XlaExt, major_version: i32, minor_version: i32 }
}

c_enum! {
    /// `XLA_FFI_Error_Code` (absl status codes).
    XLA_FFI_Error_Code {
        OK = 0, CANCELLED = 1, UNKNOWN = 2, INVALID_ARGUMENT = 3, DEADLINE_EXCEEDED = 4,
        NOT_FOUND = 5, ALREADY_EXISTS = 6, PERMISSION_DENIED = 7, RESOURCE_EXHAUSTED = 8,
        FAILED_PRECONDITION = 9, ABORTED = 10, OUT_OF_RANGE = 11, UNIMPLEMENTED = 12, INTERNAL = 13,
        UNAVAILABLE = 14, DATA_LOSS = 15, UNAUTHENTICATED = 16,
    }
}

pjrt_struct! {
    /// `XLA_FFI_Error_Create_Args` (28 bytes). XLA copies `message` (NUL-terminated).
    XLA_FFI_Error_Create_Args {
        struct_size: usize, extension_start: XlaExt, message: *const c_char, errc: XLA_FFI_Error_Code,
    }
}

pjrt_struct! {
    /// `XLA_FFI_Error_GetMessage_Args` (32 bytes).
    XLA_FFI_Error_GetMessage_Args {
        struct_size: usize, extension_start: XlaExt, error: *mut XLA_FFI_Error, message: *const c_char,
    }
}

pjrt_struct! {
    /// `XLA_FFI_Error_Destroy_Args` (24 bytes).
    XLA_FFI_Error_Destroy_Args { struct_size: usize, extension_start: XlaExt, error: *mut XLA_FFI_Error }
}

/// `XLA_FFI_Error_Create`.
pub type XLA_FFI_Error_Create = unsafe extern "C" fn(args: *mut XLA_FFI_Error_Create_Args) -> *mut XLA_FFI_Error;
/// `XLA_FFI_Error_GetMessage`.
pub type XLA_FFI_Error_GetMessage = unsafe extern "C" fn(args: *mut XLA_FFI_Error_GetMessage_Args);
/// `XLA_FFI_Error_Destroy`.
pub type XLA_FFI_Error_Destroy = unsafe extern "C" fn(args: *mut XLA_FFI_Error_Destroy_Args);

c_enum! {
    /// `XLA_FFI_DataType`: XLA's `PrimitiveType` numbers (not PJRT's `PJRT_Buffer_Type`).
    XLA_FFI_DataType {
        INVALID = 0, PRED = 1, S8 = 2, S16 = 3, S32 = 4, S64 = 5, U8 = 6, U16 = 7, U32 = 8, U64 = 9,
        F16 = 10, F32 = 11, F64 = 12, C64 = 15, BF16 = 16, TOKEN = 17, C128 = 18, F8E5M2 = 19,
        F8E4M3FN = 20, S4 = 21, U4 = 22, F8E4M3B11FNUZ = 23, F8E5M2FNUZ = 24, F8E4M3FNUZ = 25,
        S2 = 26, U2 = 27, F8E4M3 = 28, F8E3M4 = 29, S1 = 30, U1 = 31, F4E2M1FN = 32, F8E8M0FNU = 33,
    }
}

pjrt_struct! {
    /// `XLA_FFI_Buffer` (48 bytes): an operand or result; `dims` has `rank` entries.
    XLA_FFI_Buffer {
        struct_size: usize, extension_start: XlaExt, dtype: XLA_FFI_DataType, data: *mut c_void,
        rank: i64, dims: *mut i64,
    }
}

c_enum! {
    /// `XLA_FFI_ArgType`.
    XLA_FFI_ArgType { BUFFER = 1 }
}

c_enum! {
    /// `XLA_FFI_RetType`.
    XLA_FFI_RetType { BUFFER = 1 }
}

c_enum! {
    /// `XLA_FFI_AttrType`: what `XLA_FFI_Attrs.attrs[i]` points to: an [`XLA_FFI_Array`], an
    /// [`XLA_FFI_Attrs`] (dictionary), an [`XLA_FFI_Scalar`] or an [`XLA_FFI_ByteSpan`] (string).
    XLA_FFI_AttrType { ARRAY = 1, DICTIONARY = 2, SCALAR = 3, STRING = 4 }
}

/// `XLA_FFI_ByteSpan`: `len` bytes at `ptr`, not NUL-terminated.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct XLA_FFI_ByteSpan {
    /// The bytes.
    pub ptr: *const c_char,
    /// How many.
    pub len: usize,
}

/// `XLA_FFI_Scalar`: one value of `dtype` at `value`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct XLA_FFI_Scalar {
    /// Its type.
    pub dtype: XLA_FFI_DataType,
    /// Where it is.
    pub value: *mut c_void,
}

/// `XLA_FFI_Array`: `size` values of `dtype` at `data`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct XLA_FFI_Array {
    /// The element type.
    pub dtype: XLA_FFI_DataType,
    /// The number of elements.
    pub size: usize,
    /// Where they are.
    pub data: *mut c_void,
}

c_enum! {
    /// `XLA_FFI_ExecutionStage` (numbering from 0.1; 0.0 had no INSTANTIATE and started at
    /// PREPARE = 0). Through PJRT only EXECUTE is reached.
    XLA_FFI_ExecutionStage { INSTANTIATE = 0, PREPARE = 1, INITIALIZE = 2, EXECUTE = 3 }
}

pjrt_struct! {
    /// `XLA_FFI_Args` (40 bytes): `size` operands, `types[i]` saying what `args[i]` points to.
    XLA_FFI_Args {
        struct_size: usize, extension_start: XlaExt, size: i64, types: *mut XLA_FFI_ArgType,
        args: *mut *mut c_void,
    }
}

pjrt_struct! {
    /// `XLA_FFI_Rets` (40 bytes).
    XLA_FFI_Rets {
        struct_size: usize, extension_start: XlaExt, size: i64, types: *mut XLA_FFI_RetType,
        rets: *mut *mut c_void,
    }
}

pjrt_struct! {
    /// `XLA_FFI_Attrs` (48 bytes), sorted by name (the header says so; nothing here relies on it).
    XLA_FFI_Attrs {
        struct_size: usize, extension_start: XlaExt, size: i64, types: *mut XLA_FFI_AttrType,
        names: *mut *mut XLA_FFI_ByteSpan, attrs: *mut *mut c_void,
    }
}

/// `XLA_FFI_CallFrame`: what a handler is called with.
///
/// Its `STRUCT_SIZE` (168) ends with `attrs`, as the header counts it; `future` (an out field
/// of later versions) lies past it and is neither read nor written by this crate.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct XLA_FFI_CallFrame {
    /// Size of the frame the caller built.
    pub struct_size: usize,
    /// Extensions: a [`XLA_FFI_Metadata_Extension`] when XLA asks the handler for its metadata.
    pub extension_start: XlaExt,
    /// The XLA FFI API of the caller.
    pub api: *const XLA_FFI_Api,
    /// The execution context.
    pub ctx: *mut XLA_FFI_ExecutionContext,
    /// Which stage.
    pub stage: XLA_FFI_ExecutionStage,
    /// Operands.
    pub args: XLA_FFI_Args,
    /// Results.
    pub rets: XLA_FFI_Rets,
    /// Attributes.
    pub attrs: XLA_FFI_Attrs,
    /// `XLA_FFI_Future*` out (later versions; outside `STRUCT_SIZE`).
    pub future: *mut XLA_FFI_Future,
}

// SAFETY: repr(C), first field `struct_size: usize`, all fields valid zeroed.
unsafe impl crate::Args for XLA_FFI_CallFrame {
    const STRUCT_SIZE: usize = offset_of!(XLA_FFI_CallFrame, attrs) + size_of::<XLA_FFI_Attrs>();
}

/// `XLA_FFI_Handler`: the function XLA calls (registered through the PJRT FFI extension's
/// `register_handler` as a `void*`).
pub type XLA_FFI_Handler = unsafe extern "C" fn(call_frame: *mut XLA_FFI_CallFrame) -> *mut XLA_FFI_Error;

c_enum! {
    /// `XLA_FFI_Handler_TraitsBits` (a bit set, `uint32_t` in the structs).
    XLA_FFI_Handler_TraitsBits { NONE = 0, COMMAND_BUFFER_COMPATIBLE = 1 }
}

pjrt_struct! {
    /// `XLA_FFI_Metadata` (36 bytes): what a handler reports when asked (its FFI version, traits).
    XLA_FFI_Metadata { struct_size: usize, api_version: XLA_FFI_Api_Version, traits: u32 }
}

/// `XLA_FFI_Metadata_Extension` (32 bytes): the node XLA puts on a call frame's
/// `extension_start` to ask the handler for its [`XLA_FFI_Metadata`] instead of running it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct XLA_FFI_Metadata_Extension {
    /// `type_` is [`XLA_FFI_Extension_Type::METADATA`].
    pub extension_base: XLA_FFI_Extension_Base,
    /// Where to write the answer.
    pub metadata: *mut XLA_FFI_Metadata,
}

impl XLA_FFI_Metadata_Extension {
    /// Offset of the last field plus its size (32).
    pub const STRUCT_SIZE: usize =
        offset_of!(XLA_FFI_Metadata_Extension, metadata) + size_of::<*mut XLA_FFI_Metadata>();
}

/// `XLA_FFI_Api`: XLA's function table, as far as this crate uses it (the version and the
/// three error functions); the functions after them are declared as untyped pointers, by name,
/// and never called. 0.3 tables are 192 bytes (18 functions), 0.4 tables 200.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct XLA_FFI_Api {
    /// Size of the plugin's table: read a field only inside it.
    pub struct_size: usize,
    /// Extensions (none are read).
    pub extension_start: XlaExt,
    /// The version the plugin speaks.
    pub api_version: XLA_FFI_Api_Version,
    /// XLA-internal.
    pub internal_api: *mut XLA_FFI_InternalApi,
    /// `XLA_FFI_Error_Create` (offset 48).
    pub error_create: Option<XLA_FFI_Error_Create>,
    /// `XLA_FFI_Error_GetMessage` (offset 56).
    pub error_get_message: Option<XLA_FFI_Error_GetMessage>,
    /// `XLA_FFI_Error_Destroy` (offset 64).
    pub error_destroy: Option<XLA_FFI_Error_Destroy>,
    /// Handler_Register, Stream_Get, TypeId_Register, ExecutionContext_Get, State_Set, State_Get,
    /// DeviceMemory_Allocate, DeviceMemory_Free, ThreadPool_Schedule, ThreadPool_NumThreads,
    /// Future_Create, Future_SetAvailable, Future_SetError, RunId_Get, DeviceOrdinal_Get (0.3);
    /// not used by this crate.
    pub unused: [*const c_void; 15],
}

impl XLA_FFI_Api {
    /// Offset of `api_version` (16).
    pub const API_VERSION_OFFSET: usize = offset_of!(XLA_FFI_Api, api_version);
    /// Offset of `error_create` (48).
    pub const ERROR_CREATE_OFFSET: usize = offset_of!(XLA_FFI_Api, error_create);
    /// Offset of `error_destroy` (64).
    pub const ERROR_DESTROY_OFFSET: usize = offset_of!(XLA_FFI_Api, error_destroy);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Args;

    #[test]
    fn layouts_match_the_header() {
        assert_eq!(XLA_FFI_Api_Version::STRUCT_SIZE, 24);
        assert_eq!(XLA_FFI_Error_GetMessage_Args::STRUCT_SIZE, 32);
        assert_eq!(XLA_FFI_Error_Destroy_Args::STRUCT_SIZE, 24);
        assert_eq!(XLA_FFI_Args::STRUCT_SIZE, 40);
        assert_eq!(XLA_FFI_Rets::STRUCT_SIZE, 40);
        assert_eq!(XLA_FFI_Attrs::STRUCT_SIZE, 48);
        assert_eq!(offset_of!(XLA_FFI_CallFrame, stage), 32);
        assert_eq!(offset_of!(XLA_FFI_CallFrame, args), 40);
        assert_eq!(offset_of!(XLA_FFI_CallFrame, rets), 80);
        assert_eq!(offset_of!(XLA_FFI_CallFrame, attrs), 120);
        assert_eq!(offset_of!(XLA_FFI_Buffer, dtype), 16);
        assert_eq!(offset_of!(XLA_FFI_Buffer, data), 24);
        assert_eq!(offset_of!(XLA_FFI_Metadata, api_version), 8);
        assert_eq!(offset_of!(XLA_FFI_Metadata, traits), 32);
        assert_eq!(XLA_FFI_Metadata_Extension::STRUCT_SIZE, 32);
        assert_eq!(size_of::<XLA_FFI_Api>(), 192);
        assert_eq!(XLA_FFI_Api::API_VERSION_OFFSET, 16);
        assert_eq!(XLA_FFI_Api::ERROR_CREATE_OFFSET, 48);
        assert_eq!(XLA_FFI_Api::ERROR_DESTROY_OFFSET, 64);
        assert_eq!(size_of::<XLA_FFI_Scalar>(), 16);
        assert_eq!(size_of::<XLA_FFI_Array>(), 24);
        assert_eq!(offset_of!(XLA_FFI_Array, data), 16);
    }
}
