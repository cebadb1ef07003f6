//! [`Executable`]: a compiled program not loaded on devices (compiled against a topology, or
//! the program behind a [`LoadedExecutable`]), and serialization.

use std::ffi::c_char;
use std::fmt;
use std::ptr::NonNull;

use crate::call::release::release_if_in_callback;
use crate::call::trace::span;
use crate::call::{checked_slice, pjrt_call, string_from_raw};
use crate::client::Client;
use crate::compile_options::CompileOptions;
use crate::error::{Error, Result};

use crate::executable::{read_output_shapes, ArrayShape, LoadedExecutable};
use crate::plugin::Plugin;
use crate::sys::{self, Args};

/// A compiled program that is not loaded on devices (from [`crate::Topology::compile`]).
pub struct Executable {
    pub(crate) plugin: Plugin,
    pub(crate) raw: NonNull<sys::PJRT_Executable>,
}

// SAFETY: an unloaded executable is immutable; PJRT's accessors are thread-safe; destroyed once.
unsafe impl Send for Executable {}
// SAFETY: as above.
unsafe impl Sync for Executable {}

impl Executable {
    /// The module name.
    pub fn name(&self) -> Result<String> {
        let mut args = sys::PJRT_Executable_Name_Args::new();
        args.executable = self.raw.as_ptr();
        pjrt_call!(self.plugin.api(), PJRT_Executable_Name, &mut args)?;
        // SAFETY: owned by the executable; copied at once.
        Ok(unsafe { string_from_raw(args.executable_name, args.executable_name_size) })
    }

    /// Number of outputs.
    pub fn num_outputs(&self) -> Result<usize> {
        let mut args = sys::PJRT_Executable_NumOutputs_Args::new();
        args.executable = self.raw.as_ptr();
        pjrt_call!(self.plugin.api(), PJRT_Executable_NumOutputs, &mut args)?;
        Ok(args.num_outputs)
    }

    /// Serializes the executable; load it with [`Client::deserialize_and_load`].
    pub fn serialize(&self) -> Result<Vec<u8>> {
        serialize_executable(&self.plugin, self.raw.as_ptr())
    }

    /// Number of replicas it was compiled for.
    pub fn num_replicas(&self) -> Result<usize> {
        let mut args = sys::PJRT_Executable_NumReplicas_Args::new();
        args.executable = self.raw.as_ptr();
        pjrt_call!(self.plugin.api(), PJRT_Executable_NumReplicas, &mut args)?;
        Ok(args.num_replicas)
    }

    /// Number of partitions it was compiled for.
    pub fn num_partitions(&self) -> Result<usize> {
        let mut args = sys::PJRT_Executable_NumPartitions_Args::new();
        args.executable = self.raw.as_ptr();
        pjrt_call!(self.plugin.api(), PJRT_Executable_NumPartitions, &mut args)?;
        Ok(args.num_partitions)
    }

    /// Element type and dimensions of each output (`PJRT_Executable_OutputElementTypes` and
    /// `PJRT_Executable_OutputDimensions`).
    pub fn output_shapes(&self) -> Result<Vec<ArrayShape>> {
        read_output_shapes(self.plugin.api(), self.raw.as_ptr(), None)
    }

    /// A fingerprint of the compiled program as text (non-UTF-8 bytes replaced; see
    /// [`Executable::fingerprint_bytes`]).
    pub fn fingerprint(&self) -> Result<String> {
        Ok(String::from_utf8_lossy(&self.fingerprint_bytes()?).into_owned())
    }

    /// A fingerprint of the compiled program (`PJRT_Executable_Fingerprint`): a decimal number
    /// as text from the CPU plugins, binary bytes from the TPU plugin.
    pub fn fingerprint_bytes(&self) -> Result<Vec<u8>> {
        let mut args = sys::PJRT_Executable_Fingerprint_Args::new();
        args.executable = self.raw.as_ptr();
        pjrt_call!(self.plugin.api(), PJRT_Executable_Fingerprint, &mut args)?;
        // SAFETY: owned by the executable; copied at once.
        let bytes = unsafe {
            checked_slice(
                args.executable_fingerprint as *const u8,
                args.executable_fingerprint_size,
                "PJRT_Executable_Fingerprint",
                "the fingerprint",
            )
        }?;
        Ok(bytes.to_vec())
    }

    /// The raw handle, for use with [`crate::sys`]. Do not destroy it.
    pub fn as_raw(&self) -> *mut sys::PJRT_Executable {
        self.raw.as_ptr()
    }

    // Used by the metadata queries shared with `LoadedExecutable` (executable.rs).
    pub(crate) fn metadata_api(&self) -> &crate::call::Api {
        self.plugin.api()
    }

    pub(crate) fn metadata_raw(&self) -> *mut sys::PJRT_Executable {
        self.raw.as_ptr()
    }
}

impl Drop for Executable {
    fn drop(&mut self) {
        release_if_in_callback!(Executable { plugin: self.plugin.clone(), raw: self.raw });
        let mut args = sys::PJRT_Executable_Destroy_Args::new();
        args.executable = self.raw.as_ptr();
        let _ = pjrt_call!(self.plugin.api(), PJRT_Executable_Destroy, &mut args);
    }
}

impl fmt::Debug for Executable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Executable").field("name", &self.name().ok()).finish()
    }
}

impl Client {
    /// Loads an executable compiled ahead of time (by [`crate::Topology::compile`]) onto this client's
    /// devices (`PJRT_Client_Load`). The executable must come from this client's plugin
    /// ([`Error::ForeignObject`] otherwise; serialize it and load the bytes on a client of the
    /// plugin build that made them).
    pub fn load(&self, executable: &Executable, options: &CompileOptions) -> Result<LoadedExecutable> {
        self.plugin().check_same(&executable.plugin, "the executable")?;
        let options_bytes = options.to_bytes()?;
        let mut args = sys::PJRT_Client_Load_Args::new();
        args.client = self.raw();
        args.executable = executable.raw.as_ptr();
        args.compile_options = options_bytes.as_ptr() as *const c_char;
        args.compile_options_size = options_bytes.len();
        pjrt_call!(self.api(), PJRT_Client_Load, &mut args)?;
        let raw = NonNull::new(args.loaded_executable)
            .ok_or_else(|| Error::invalid("PJRT_Client_Load returned no executable"))?;
        LoadedExecutable::new(self, raw, options.is_portable())
    }

    /// [`Client::deserialize_and_load`] without its providers of built-in handlers.
    pub(crate) fn load_serialized(&self, serialized: &[u8]) -> Result<LoadedExecutable> {
        let _span = span!(INFO, "load_executable", bytes = serialized.len());
        if serialized.is_empty() {
            return Err(Error::invalid("the serialized executable is empty"));
        }
        let mut args = sys::PJRT_Executable_DeserializeAndLoad_Args::new();
        args.client = self.raw();
        args.serialized_executable = serialized.as_ptr() as *const c_char;
        args.serialized_executable_size = serialized.len();
        pjrt_call!(self.api(), PJRT_Executable_DeserializeAndLoad, &mut args)?;
        let raw = NonNull::new(args.loaded_executable)
            .ok_or_else(|| Error::invalid("PJRT_Executable_DeserializeAndLoad returned no executable"))?;
        LoadedExecutable::new(self, raw, false)
    }
}

impl LoadedExecutable {
    /// Serializes the compiled program (`PJRT_Executable_Serialize`); load it again with
    /// [`Client::deserialize_and_load`] on a client of the same plugin build.
    ///
    /// ```
    /// # use pjrt_client::{CompileOptions, ExecuteOptions, Program};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// # let program = Program::mlir_text(r#"
    /// #   func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
    /// #     %0 = stablehlo.add %a, %b : tensor<4xf32>
    /// #     return %0 : tensor<4xf32>
    /// #   }"#)?;
    /// let exe = client.compile(&program, &CompileOptions::new())?;
    /// let bytes = exe.serialize()?;
    /// let again = client.deserialize_and_load(&bytes)?;
    /// let x = client.upload(&[1f32, 2., 3., 4.], &[4])?;
    /// assert_eq!(again.execute(&[&x, &x], &ExecuteOptions::new())?[0].to_vec::<f32>()?, [2., 4., 6., 8.]);
    /// // Bytes that are not an executable are an error, not a crash.
    /// assert!(client.deserialize_and_load(b"not an executable").is_err());
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn serialize(&self) -> Result<Vec<u8>> {
        serialize_executable(self.client().plugin(), self.raw_executable())
    }
}

fn serialize_executable(plugin: &Plugin, raw: *mut sys::PJRT_Executable) -> Result<Vec<u8>> {
    let mut args = sys::PJRT_Executable_Serialize_Args::new();
    args.executable = raw;
    const SLOT: &str = "PJRT_Executable_Serialize";
    pjrt_call!(plugin.api(), PJRT_Executable_Serialize, &mut args)?;
    // SAFETY: the bytes live until the deleter is called, right after the copy.
    let bytes =
        unsafe { checked_slice(args.serialized_bytes as *const u8, args.serialized_bytes_size, SLOT, "the bytes") }
            .map(<[u8]>::to_vec);
    // Freed whether or not the bytes could be read.
    if let Some(deleter) = args.serialized_executable_deleter {
        // SAFETY: called once, on the object the plugin handed out.
        unsafe { deleter(args.serialized_executable) };
    }
    bytes
}
