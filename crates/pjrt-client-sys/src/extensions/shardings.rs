//! The Shardings extension (type 19): serialized shardings of an executable's parameters and
//! outputs.

#![allow(non_camel_case_types, non_snake_case, missing_docs)]

use std::ffi::c_char;

use super::ExtFn;
use crate::args::*;
use crate::executable::*;

pjrt_struct!(PJRT_Shardings_PJRT_Executable_ParameterShardings_Args {
    struct_size: usize, extension_start: Ext, executable: *mut PJRT_Executable, num_parameters: usize,
    shardings: *const *const c_char, sharding_sizes: *const usize,
});
pjrt_struct!(PJRT_Shardings_PJRT_Executable_OutputShardings_Args {
    struct_size: usize, extension_start: Ext, executable: *mut PJRT_Executable, num_outputs: usize,
    shardings: *const *const c_char, sharding_sizes: *const usize,
});

ext_struct!(
    /// `PJRT_Shardings_Extension`: serialized `xla.OpSharding`s of an executable's parameters and
    /// outputs.
    PJRT_Shardings_Extension = Shardings {
        PJRT_Shardings_PJRT_Executable_ParameterShardings: ExtFn<PJRT_Shardings_PJRT_Executable_ParameterShardings_Args> = since 91,
        PJRT_Shardings_PJRT_Executable_OutputShardings: ExtFn<PJRT_Shardings_PJRT_Executable_OutputShardings_Args> = since 91,
    }
);
