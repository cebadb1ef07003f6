//! Loading serialized executables ([`Client::deserialize_and_load`]: the providers of built-in
//! handlers prepare them first, `client/builtins.rs`), with options ([`LoadOptions`], API 0.111).

use std::ffi::c_char;
use std::ptr::NonNull;

use crate::call::pjrt_call;
use crate::call::trace::span;
use crate::client::builtins;
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
    /// Loads an executable serialized by [`LoadedExecutable::serialize`] or
    /// [`crate::Executable::serialize`] (`PJRT_Executable_DeserializeAndLoad`). The bytes must
    /// come from the same plugin build; a foreign or corrupt blob is the plugin's error. The
    /// built-in handlers it calls are registered first, as for [`Client::compile`].
    ///
    /// ```
    /// use pjrt_client::{CompileOptions, Program};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// let program = Program::mlir_text("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> { return %a : tensor<2xf32> }")?;
    /// let bytes = client.compile(&program, &CompileOptions::new())?.serialize()?;
    /// let again = client.deserialize_and_load(&bytes)?;
    /// assert_eq!(again.num_outputs(), 1);
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn deserialize_and_load(&self, serialized: &[u8]) -> Result<LoadedExecutable> {
        builtins::prepare(self, serialized)?;
        self.load_serialized(serialized).map_err(|e| builtins::explain_failure(self, serialized, e))
    }

    /// Like [`Client::deserialize_and_load`], optionally replacing the compile options stored in
    /// the serialized executable with `overrides`, and with `load_options`.
    ///
    /// Each is refused with [`crate::Error::Unsupported`] on a plugin too old to read it
    /// (overrides: 0.71; load options: 0.111; an older plugin would silently ignore them).
    ///
    /// ```
    /// use pjrt_client::{CompileOptions, Program};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// let program = Program::mlir_text("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> { return %a : tensor<2xf32> }")?;
    /// let bytes = client.compile(&program, &CompileOptions::new())?.serialize()?;
    /// let again = client.deserialize_and_load_with(&bytes, Some(&CompileOptions::new()), None)?;
    /// assert_eq!(again.num_outputs(), 1);
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn deserialize_and_load_with(
        &self,
        serialized: &[u8],
        overrides: Option<&CompileOptions>,
        load_options: Option<&LoadOptions>,
    ) -> Result<LoadedExecutable> {
        builtins::prepare(self, serialized)?;
        self.load_serialized_with(serialized, overrides, load_options)
            .map_err(|e| builtins::explain_failure(self, serialized, e))
    }

    /// [`Client::deserialize_and_load_with`] without its providers of built-in handlers.
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
