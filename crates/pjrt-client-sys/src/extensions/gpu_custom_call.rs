//! The Gpu_Custom_Call extension (type 0; header extension version 2): GPU custom-call targets.

#![allow(non_camel_case_types, non_snake_case, missing_docs)]

use std::ffi::{c_char, c_int, c_void};

use super::ExtFn;

pjrt_struct!(
    /// Note: no `extension_start`. `api_version` is 0 for an untyped call, 1 for a typed one.
    PJRT_Gpu_Register_Custom_Call_Args {
        struct_size: usize, function_name: *const c_char, function_name_size: usize, api_version: c_int,
        handler_instantiate: *mut c_void, handler_prepare: *mut c_void, handler_initialize: *mut c_void,
        handler_execute: *mut c_void,
    }
);

ext_struct!(
    /// `PJRT_Gpu_Custom_Call`: register GPU custom-call targets.
    PJRT_Gpu_Custom_Call = Gpu_Custom_Call {
        custom_call: ExtFn<PJRT_Gpu_Register_Custom_Call_Args> = since 31,
    }
);
