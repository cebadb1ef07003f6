//! The FFI extension (type 5; header extension version 3): XLA FFI types, user data and handlers.
//!
//! Forms, none with a version field:
//! * version 1 (0.53): `{base, user_data_add}`, 32 bytes: the function at offset 24 is
//!   `user_data_add`. Declared here as the older form: never used.
//! * version 2 (0.54): `{base, type_id_register, user_data_add}`, 40 bytes; from 0.73 also
//!   `register_handler` (48 bytes). `type_id_register` takes `PJRT_FFI_TypeID_Register_Args` (40
//!   bytes); user data carries a deleter (`PJRT_FFI_UserData_V2`, add args 48 bytes).
//! * version 3 (0.80): `{base, type_register, user_data_add, register_handler}`, 48 bytes;
//!   `type_register` takes `PJRT_FFI_Type_Register_Args` (48 bytes, `type_info` read
//!   unconditionally). For a few days the struct was 56 bytes, with a second type-register
//!   function at offset 48 and, at offset 24, one taking either the version-2 or the version-3
//!   args (the 48-byte args serve both). Early version-3 plugins still take
//!   `PJRT_FFI_UserData_V2`; later ones the 16-byte `PJRT_FFI_UserData`.
//!
//! `PJRT_FFI_Register_Handler_Args` is the same in versions 2 and 3.

#![allow(non_camel_case_types, non_snake_case, missing_docs)]

use std::ffi::{c_char, c_void};

use super::ExtFn;
use crate::args::*;
use crate::executable::*;

/// `PJRT_FFI_Type_Info`: how the plugin treats objects of a registered type (no struct_size).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct PJRT_FFI_Type_Info {
    pub deleter: Option<unsafe extern "C" fn(object: *mut c_void)>,
    /// Reserved by the API.
    pub serialize: Option<unsafe extern "C" fn()>,
    /// Reserved by the API.
    pub deserialize: Option<unsafe extern "C" fn()>,
}

/// `PJRT_FFI_UserData` (no struct_size), the later version-3 form (16 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PJRT_FFI_UserData {
    pub type_id: i64,
    pub data: *mut c_void,
}

/// `PJRT_FFI_UserData` of versions 1, 2 and early 3 (24 bytes): a later plugin reads the first
/// 16 bytes, so this form with a NULL `deleter` is valid for both.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PJRT_FFI_UserData_V2 {
    pub type_id: i64,
    pub data: *mut c_void,
    /// Called by the plugin when the execute context is destroyed; may be NULL.
    pub deleter: Option<unsafe extern "C" fn(data: *mut c_void)>,
}

c_enum!(
    /// `PJRT_FFI_Handler_TraitsBits` (a bit set).
    PJRT_FFI_Handler_TraitsBits { NONE = 0, COMMAND_BUFFER_COMPATIBLE = 1 }
);

pjrt_struct!(
    /// Version 3. Its first 40 bytes are [`PJRT_FFI_TypeID_Register_Args`] (version 2).
    PJRT_FFI_Type_Register_Args {
        struct_size: usize, extension_start: Ext, type_name: *const c_char, type_name_size: usize,
        type_id: i64, type_info: *mut PJRT_FFI_Type_Info,
    }
);
pjrt_struct!(
    /// Version 2 (`type_id_register`); `type_id` is in-out from 0.67, out only before.
    PJRT_FFI_TypeID_Register_Args {
        struct_size: usize, extension_start: Ext, type_name: *const c_char, type_name_size: usize,
        type_id: i64,
    }
);
pjrt_struct!(
    /// The later version-3 form (40 bytes).
    PJRT_FFI_UserData_Add_Args {
        struct_size: usize, extension_start: Ext, context: *mut PJRT_ExecuteContext, user_data: PJRT_FFI_UserData,
    }
);
pjrt_struct!(
    /// Versions 1, 2 and early 3 (48 bytes): accepted by later plugins too, which read the
    /// first 40 bytes (the user data's `type_id` and `data`).
    PJRT_FFI_UserData_Add_Args_V2 {
        struct_size: usize, extension_start: Ext, context: *mut PJRT_ExecuteContext,
        user_data: PJRT_FFI_UserData_V2,
    }
);
pjrt_struct!(
    /// Note: no `extension_start`.
    PJRT_FFI_Register_Handler_Args {
        struct_size: usize, target_name: *const c_char, target_name_size: usize, handler: *mut c_void,
        platform_name: *const c_char, platform_name_size: usize, traits: PJRT_FFI_Handler_TraitsBits,
    }
);

ext_struct!(
    /// `PJRT_FFI_Extension`: XLA FFI types, user data and handlers (version 3; see the forms
    /// above). `type_register` is `type_id_register` in version 2, and `user_data_add` may take
    /// [`PJRT_FFI_UserData_Add_Args_V2`]: send args valid for both forms.
    ///
    /// Since-minors: the extension came at 0.53 in version 1, whose only member sits where
    /// `type_register` is declared; the declared layout exists from 0.54 (`type_id_register`,
    /// first header listing it) and `register_handler` from 0.73 (first header listing it).
    PJRT_FFI_Extension = FFI {
        type_register: ExtFn<PJRT_FFI_Type_Register_Args> = since 54,
        user_data_add: ExtFn<PJRT_FFI_UserData_Add_Args> = since 54,
        register_handler: ExtFn<PJRT_FFI_Register_Handler_Args> = since 73,
    }
);
