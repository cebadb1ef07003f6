//! Loading serialized executables with options ([`LoadOptions`], API 0.111).

use std::ffi::c_char;
use std::ptr::NonNull;

use crate::call::pjrt_call;
use crate::call::trace::span;
use crate::client::Client;
use crate::compile_options::CompileOptions;
use crate::error::{Error, Result};
use crate::executable::LoadedExecutable;
use crate::sys::{self, Args};

/// Options for loading a serialized executable (`PJRT_LoadOptions`, API 0.111).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadOptions {
    computation_origin: Option<Vec<i32>>,
}

impl LoadOptions {
    /// No options set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Where the computation sits in a larger device mesh (plugin-specific; for multi-slice
    /// setups).
    pub fn computation_origin(mut self, origin: &[i32]) -> Self {
        self.computation_origin = Some(origin.to_vec());
        self
    }
}

/// The minor version that added `PJRT_LoadOptions`.
pub(crate) const LOAD_OPTIONS_MINOR: i32 = 111;
/// The minor version that added the compile-option overrides of `DeserializeAndLoad`.
pub(crate) const OVERRIDES_MINOR: i32 = 71;

impl Client {
    /// [`Client::deserialize_and_load_with`] without registering built-in handlers first.
    pub(crate) fn load_serialized_with(
        &self,
        serialized: &[u8],
        overrides: Option<&CompileOptions>,
        load_options: Option<&LoadOptions>,
    ) -> Result<LoadedExecutable> {
        let _span = span!(INFO, "load_executable", bytes = serialized.len());
        if serialized.is_empty() {
            return Err(Error::invalid("the serialized executable is empty"));
        }
        let api = self.api();
        let overrides_bytes = match overrides {
            Some(_) if api.version().minor < OVERRIDES_MINOR => {
                return Err(api.unsupported_feature(
                    "PJRT_Executable_DeserializeAndLoad_Args.overridden_serialized_compile_options",
                    OVERRIDES_MINOR,
                ));
            }
            Some(options) => Some(options.to_bytes()?),
            None => None,
        };
        let mut raw_load = sys::PJRT_LoadOptions::new();
        if load_options.is_some() && api.version().minor < LOAD_OPTIONS_MINOR {
            return Err(api.unsupported_feature("PJRT_LoadOptions", LOAD_OPTIONS_MINOR));
        }
        if let Some(origin) = load_options.and_then(|o| o.computation_origin.as_ref()) {
            raw_load.computation_origin = origin.as_ptr();
            raw_load.computation_origin_size = origin.len();
        }
        let mut args = sys::PJRT_Executable_DeserializeAndLoad_Args::new();
        args.client = self.raw();
        args.serialized_executable = serialized.as_ptr() as *const c_char;
        args.serialized_executable_size = serialized.len();
        if let Some(bytes) = &overrides_bytes {
            args.overridden_serialized_compile_options = bytes.as_ptr() as *const c_char;
            args.overridden_serialized_compile_options_size = bytes.len();
        }
        if load_options.is_some() {
            args.load_options = &mut raw_load as *mut sys::PJRT_LoadOptions as *mut std::ffi::c_void;
        }
        pjrt_call!(api, PJRT_Executable_DeserializeAndLoad, &mut args)?;
        let raw = NonNull::new(args.loaded_executable)
            .ok_or_else(|| Error::invalid("PJRT_Executable_DeserializeAndLoad returned no executable"))?;
        LoadedExecutable::new(self, raw, overrides.is_some_and(CompileOptions::is_portable))
    }
}
