//! The XlaTransform extension (type 24; the 0.114 layout: 2 members, 40 bytes): register HLO
//! transforms with the compiler pipeline.

#![allow(non_camel_case_types, non_snake_case, missing_docs)]

use std::ffi::{c_char, c_void};

use super::ExtFn;
use crate::error::*;

/// `PJRT_XlaTransform_string`: a (pointer, length) byte string.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PJRT_XlaTransform_string {
    pub data: *const c_char,
    pub size: usize,
}

/// `PJRT_XlaTransform_version_and_error`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PJRT_XlaTransform_version_and_error {
    pub api_version: i64,
    pub data: *mut c_void,
    pub cleanup_fn: Option<unsafe extern "C" fn(data: *mut c_void)>,
    pub has_error: bool,
    pub code: PJRT_Error_Code,
    pub error_msg: PJRT_XlaTransform_string,
}

pjrt_struct!(
    /// Note: no `extension_start`; passed by the plugin to the caller's callback.
    PJRT_XlaTransform_Args {
        struct_size: usize, header: PJRT_XlaTransform_version_and_error,
        hlo_module: PJRT_XlaTransform_string, transformed_hlo_module: PJRT_XlaTransform_string, changed: bool,
    }
);

/// `PJRT_XlaTransform_Callbacks`: provided by the caller; every callback is optional.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PJRT_XlaTransform_Callbacks {
    pub version: i64,
    pub dtor: Option<unsafe extern "C" fn(data: *mut PJRT_XlaTransform_Callbacks)>,
    pub transform_hlo_module:
        Option<unsafe extern "C" fn(data: *mut PJRT_XlaTransform_Callbacks, args: *mut PJRT_XlaTransform_Args)>,
}

c_enum!(
    /// `PJRT_XlaTransform_PipelineStage`.
    PJRT_XlaTransform_PipelineStage { kPreScheduler = 0, kPostScheduler = 1 }
);

pjrt_struct!(
    /// Note: no `extension_start`.
    PJRT_Register_Xla_Transform_Args {
        struct_size: usize, name: *const c_char, name_size: usize, stage: PJRT_XlaTransform_PipelineStage,
        callbacks: *mut PJRT_XlaTransform_Callbacks,
    }
);
pjrt_struct!(
    /// Note: no `extension_start`.
    PJRT_Clear_Xla_Transform_Args {
        struct_size: usize, stage: PJRT_XlaTransform_PipelineStage, name: *const c_char, name_size: usize,
        callbacks: *mut PJRT_XlaTransform_Callbacks, cleared: bool,
    }
);

ext_struct!(
    /// `PJRT_Xla_Transform_Extension` as of the 0.114 header (newer plugins append members).
    PJRT_Xla_Transform_Extension = XlaTransform {
        register_xla_transform: ExtFn<PJRT_Register_Xla_Transform_Args> = since 114,
        clear_xla_transform: ExtFn<PJRT_Clear_Xla_Transform_Args> = since 114,
    }
);
