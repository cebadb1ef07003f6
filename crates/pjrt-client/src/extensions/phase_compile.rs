//! The PhaseCompile extension (`PJRT_PhaseCompile_Extension`): compile in named phases.

use std::ffi::c_char;

use crate::call::{slice_from_raw, string_from_raw};
use crate::error::{Error, Result};
use crate::extensions::{ext_fn, PhaseCompileExtension};
use crate::sys::{self, Args};

impl<'p> PhaseCompileExtension<'p> {
    /// The names of the plugin's compilation phases, in order.
    ///
    /// Needs the plugin's phase compiler: the CPU plugins give none (`phase_compile_get_compiler`
    /// is NULL), so this returns [`Error::Unsupported`] there.
    pub fn phase_names(&self) -> Result<Vec<String>> {
        type P = sys::PJRT_PhaseCompile_Extension;
        // Everything needed to free what the plugin returns is checked first.
        let (get_compiler, get_name) = ext_fn!(self, P, phase_compile_get_compiler);
        let (destroy_compiler, _) = ext_fn!(self, P, phase_compile_destroy_compiler);
        let (get_names, names_name) = ext_fn!(self, P, phase_compile_get_phase_names);
        let (destroy_buffers, _) = ext_fn!(self, P, phase_compile_c_buffers_destroy);

        let mut compiler = sys::PJRT_PhaseCompile_Get_Compiler_Args::new();
        // SAFETY: args built with `Args::new`.
        self.api.check(unsafe { get_compiler(&mut compiler) }, get_name)?;
        if compiler.phase_compiler.is_null() {
            return Err(Error::invalid(format!("{get_name} returned no compiler")));
        }
        struct CompilerGuard {
            compiler: *const sys::PJRT_PhaseCompiler,
            destroy: unsafe extern "C" fn(*mut sys::PJRT_PhaseCompile_Destroy_Compiler_Args),
        }
        impl Drop for CompilerGuard {
            fn drop(&mut self) {
                let mut args = sys::PJRT_PhaseCompile_Destroy_Compiler_Args::new();
                args.phase_compiler = self.compiler;
                // SAFETY: the compiler came from the plugin and is destroyed once, here.
                unsafe { (self.destroy)(&mut args) };
            }
        }
        let compiler = CompilerGuard { compiler: compiler.phase_compiler, destroy: destroy_compiler };

        let mut args = sys::PJRT_PhaseCompile_Get_PhaseNames_Args::new();
        args.phase_compiler = compiler.compiler;
        // SAFETY: args built with `Args::new`; the compiler is live.
        self.api.check(unsafe { get_names(&mut args) }, names_name)?;
        // SAFETY: arrays of `num_phase_names` entries allocated by the plugin for us.
        let names = unsafe {
            let ptrs = slice_from_raw(args.phase_names as *const *const c_char, args.num_phase_names);
            let sizes = slice_from_raw(args.phase_names_sizes, args.num_phase_names);
            ptrs.iter().zip(sizes).map(|(p, n)| string_from_raw(*p, *n)).collect()
        };
        if !args.phase_names.is_null() {
            let mut free = sys::PJRT_PhaseCompile_C_Buffers_Destroy_Args::new();
            free.char_buffers = args.phase_names;
            free.char_buffer_sizes = args.phase_names_sizes;
            free.num_char_buffers = args.num_phase_names;
            // SAFETY: returns the plugin's buffers to it, once.
            unsafe { destroy_buffers(&mut free) };
        }
        drop(compiler);
        Ok(names)
    }
}
