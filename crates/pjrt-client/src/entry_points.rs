//! The public ways a program reaches a plugin — [`Client::compile`],
//! [`Client::deserialize_and_load`] and [`Client::deserialize_and_load_with`] — which first
//! let the providers of built-in handlers register what the program calls
//! ([`crate::ffi::BuiltinProvider`]).

use crate::client::builtins;
use crate::client::Client;
use crate::compile_options::CompileOptions;
use crate::error::Result;
use crate::executable::load::LoadOptions;
use crate::executable::LoadedExecutable;
use crate::program::Program;

impl Client {
    /// Compiles `program` for this client's devices.
    ///
    /// The options are validated first: nothing that makes a plugin abort (no replicas, no
    /// partitions, more devices than the client has, unknown device ids) reaches it. The
    /// providers of built-in handlers of the client and the process register the handlers the
    /// program calls first ([`crate::ffi::BuiltinProvider`]).
    ///
    /// ```
    /// use pjrt_client::{CompileOptions, ElementType, Program};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.path)?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// let program = Program::mlir_text(r#"
    ///   func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
    ///     %0 = stablehlo.add %a, %b : tensor<4xf32>
    ///     return %0 : tensor<4xf32>
    ///   }"#)?;
    /// let exe = client.compile(&program, &CompileOptions::new())?;
    /// assert_eq!((exe.num_replicas(), exe.num_partitions(), exe.num_outputs()), (1, 1, 1));
    /// assert_eq!(exe.output_shapes()[0].element_type, Some(ElementType::F32));
    /// assert_eq!(exe.output_shapes()[0].dims, [4]);
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn compile(&self, program: &Program, options: &CompileOptions) -> Result<LoadedExecutable> {
        register_builtin_handlers(self, program.code())?;
        self.compile_program(program, options).map_err(|e| builtins::explain_failure(self, program.code(), e))
    }

    /// Loads an executable serialized by [`LoadedExecutable::serialize`] or
    /// [`crate::Executable::serialize`] (`PJRT_Executable_DeserializeAndLoad`). The bytes must
    /// come from the same plugin build; a foreign or corrupt blob is the plugin's error. The
    /// built-in handlers it calls are registered first, as for [`Client::compile`].
    ///
    /// ```
    /// use pjrt_client::{CompileOptions, Program};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.path)?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// let program = Program::mlir_text("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> { return %a : tensor<2xf32> }")?;
    /// let bytes = client.compile(&program, &CompileOptions::new())?.serialize()?;
    /// let again = client.deserialize_and_load(&bytes)?;
    /// assert_eq!(again.num_outputs(), 1);
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn deserialize_and_load(&self, serialized: &[u8]) -> Result<LoadedExecutable> {
        register_builtin_handlers(self, serialized)?;
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
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.path)?;
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
        register_builtin_handlers(self, serialized)?;
        self.load_serialized_with(serialized, overrides, load_options)
            .map_err(|e| builtins::explain_failure(self, serialized, e))
    }
}

/// Registers the built-in handlers `bytes` calls: the providers of the client and the process
/// prepare it ([`crate::ffi::BuiltinProvider`]).
fn register_builtin_handlers(client: &Client, bytes: &[u8]) -> Result<()> {
    builtins::prepare(client, bytes)
}
