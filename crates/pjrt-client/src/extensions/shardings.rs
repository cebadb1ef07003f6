//! The Shardings extension (`PJRT_Shardings_Extension`): the parameter and output shardings of a
//! compiled executable.

use std::ffi::c_char;

use crate::call::slice_from_raw;
use crate::error::Result;
use crate::executable::LoadedExecutable;
use crate::extensions::{ext_fn, ShardingsExtension};
use crate::sys::{self, Args};

/// The shardings of an executable's parameters or outputs.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExecutableShardings {
    /// The number of parameters (or outputs) the plugin reports.
    pub count: usize,
    /// One serialized `xla.OpSharding` per parameter (output); `None` when the plugin gives no
    /// shardings (the CPU plugins, for a single-device program).
    pub serialized: Option<Vec<Vec<u8>>>,
}

impl<'p> ShardingsExtension<'p> {
    /// The shardings of an executable's parameters.
    pub fn parameter_shardings(&self, executable: &LoadedExecutable) -> Result<ExecutableShardings> {
        self.same_plugin(executable.client().api())?;
        type S = sys::PJRT_Shardings_Extension;
        let (get, name) = ext_fn!(self, S, PJRT_Shardings_PJRT_Executable_ParameterShardings);
        let mut args = sys::PJRT_Shardings_PJRT_Executable_ParameterShardings_Args::new();
        args.executable = executable.raw_executable();
        // SAFETY: args built with `Args::new`; the executable is alive and of this plugin.
        self.api.check(unsafe { get(&mut args) }, name)?;
        // SAFETY: arrays owned by the executable, copied at once.
        Ok(unsafe { read_shardings(args.num_parameters, args.shardings, args.sharding_sizes) })
    }

    /// The shardings of an executable's outputs.
    pub fn output_shardings(&self, executable: &LoadedExecutable) -> Result<ExecutableShardings> {
        self.same_plugin(executable.client().api())?;
        type S = sys::PJRT_Shardings_Extension;
        let (get, name) = ext_fn!(self, S, PJRT_Shardings_PJRT_Executable_OutputShardings);
        let mut args = sys::PJRT_Shardings_PJRT_Executable_OutputShardings_Args::new();
        args.executable = executable.raw_executable();
        // SAFETY: as above.
        self.api.check(unsafe { get(&mut args) }, name)?;
        // SAFETY: as above.
        Ok(unsafe { read_shardings(args.num_outputs, args.shardings, args.sharding_sizes) })
    }
}

/// # Safety
/// `shardings` and `sizes` must be NULL or arrays of `count` entries, each sharding pointing to
/// its size in bytes.
pub(crate) unsafe fn read_shardings(
    count: usize,
    shardings: *const *const c_char,
    sizes: *const usize,
) -> ExecutableShardings {
    if shardings.is_null() || sizes.is_null() {
        return ExecutableShardings { count, serialized: None };
    }
    // SAFETY: guaranteed by the caller.
    let (ptrs, lens) = unsafe { (slice_from_raw(shardings, count), slice_from_raw(sizes, count)) };
    let serialized = ptrs
        .iter()
        .zip(lens)
        // SAFETY: each sharding has its size in bytes (caller's contract).
        .map(|(p, n)| unsafe { slice_from_raw(*p as *const u8, *n) }.to_vec())
        .collect();
    ExecutableShardings { count, serialized: Some(serialized) }
}
