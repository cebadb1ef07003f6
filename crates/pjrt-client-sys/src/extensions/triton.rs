//! The Triton extension (type 7; header extension version 2): compile a Triton kernel.

#![allow(non_camel_case_types, non_snake_case, missing_docs)]

use std::ffi::{c_char, c_int};

use super::ExtFn;

pjrt_struct!(
    /// Note: no `extension_start`. `out_asm` and `out_path` are owned by the caller afterwards.
    PJRT_Triton_Compile_Args {
        struct_size: usize, module: *const c_char, module_size: usize, arch_name: *const c_char,
        arch_name_size: usize, num_warps: c_int, num_ctas: c_int, num_stages: c_int,
        out_asm: *const c_char, out_asm_size: usize, out_smem_bytes: i64, out_path: *const c_char,
        out_path_size: usize,
    }
);

ext_struct!(
    /// `PJRT_Triton_Extension`: compile a Triton kernel.
    PJRT_Triton_Extension = Triton {
        compile: ExtFn<PJRT_Triton_Compile_Args> = since 65,
    }
);
