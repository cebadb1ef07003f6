//! The PhaseCompile extension (type 9; experimental): run individual compilation phases.

#![allow(non_camel_case_types, non_snake_case, missing_docs)]

use std::ffi::c_char;

use super::{ExtFn, ExtVoidFn};
use crate::args::*;
use crate::topology::*;

opaque!(PJRT_PhaseCompiler);

pjrt_struct!(PJRT_PhaseCompile_Get_Compiler_Args {
    struct_size: usize, extension_start: Ext, phase_compiler: *const PJRT_PhaseCompiler,
});
pjrt_struct!(PJRT_PhaseCompile_Destroy_Compiler_Args {
    struct_size: usize, extension_start: Ext, phase_compiler: *const PJRT_PhaseCompiler,
});
pjrt_struct!(PJRT_PhaseCompile_Run_Phase_Args {
    struct_size: usize, extension_start: Ext, phase_compiler: *const PJRT_PhaseCompiler,
    input_programs: *mut *const c_char, input_programs_sizes: *const usize, num_input_programs: usize,
    phases_to_run: *mut *const c_char, phases_to_run_sizes: *const usize, num_phases_to_run: usize,
    compile_options: *const c_char, compile_options_size: usize, topology: *mut PJRT_TopologyDescription,
    output_programs: *mut *const c_char, output_programs_sizes: *const usize, num_output_programs: usize,
});
pjrt_struct!(PJRT_PhaseCompile_Get_PhaseNames_Args {
    struct_size: usize, extension_start: Ext, phase_compiler: *const PJRT_PhaseCompiler,
    phase_names: *mut *const c_char, phase_names_sizes: *const usize, num_phase_names: usize,
});
pjrt_struct!(PJRT_PhaseCompile_C_Buffers_Destroy_Args {
    struct_size: usize, extension_start: Ext, char_buffers: *mut *const c_char,
    char_buffer_sizes: *const usize, num_char_buffers: usize,
});

ext_struct!(
    /// `PJRT_PhaseCompile_Extension`: run individual compilation phases.
    PJRT_PhaseCompile_Extension = PhaseCompile {
        phase_compile_get_compiler: ExtFn<PJRT_PhaseCompile_Get_Compiler_Args> = since 81,
        phase_compile_destroy_compiler: ExtVoidFn<PJRT_PhaseCompile_Destroy_Compiler_Args> = since 81,
        phase_compile_run_phases: ExtFn<PJRT_PhaseCompile_Run_Phase_Args> = since 81,
        phase_compile_get_phase_names: ExtFn<PJRT_PhaseCompile_Get_PhaseNames_Args> = since 81,
        phase_compile_c_buffers_destroy: ExtVoidFn<PJRT_PhaseCompile_C_Buffers_Destroy_Args> = since 81,
    }
);
