//! The module as a program, whether this crate can run it, and its compilation.

use pjrt_client::{Client, CompileOptions, ElementType, LoadedExecutable, Program};

use super::{InputShape, JaxExport, MemorySpace, SUPPORTED_CALLING_CONVENTIONS};
use crate::error::{Error, Result};

impl JaxExport {
    /// The StableHLO module as a [`Program`]. Use [`JaxExport::arrange_inputs`] for its
    /// arguments: they are not the function's inputs one to one.
    ///
    /// For a single-device export with concrete shapes, the program declares the module's
    /// parameters from the avals ([`Program::with_parameters`]: the platform index first when
    /// there are several platforms, then the kept inputs), so argument checks stay on where a
    /// plugin's optimized program does not tell its parameters (this crate cannot read MLIR
    /// bytecode's signature).
    pub fn program(&self) -> Result<Program> {
        let program = Program::mlir_bytecode(self.mlir_module.clone())?;
        Ok(match self.module_parameters() {
            Some(parameters) => program.with_parameters(parameters),
            None => program,
        })
    }

    /// The module's parameters as one device sees them, where the avals tell them: one device,
    /// no ordered effects (token arguments), concrete shapes and PJRT dtypes.
    fn module_parameters(&self) -> Option<Vec<(ElementType, Vec<i64>)>> {
        if self.nr_devices != 1 || !self.ordered_effects.is_empty() {
            return None;
        }
        let mut parameters = Vec::with_capacity(self.module_kept_var_idx.len() + 1);
        if self.platforms.len() > 1 {
            parameters.push((ElementType::S32, Vec::new()));
        }
        for &i in &self.module_kept_var_idx {
            let aval = self.in_avals.get(i)?;
            parameters.push((aval.element_type?, aval.fixed_dims()?));
        }
        Some(parameters)
    }
    /// Checks that this crate can run the export on `platform`: shardings it can lay out
    /// ([`JaxExport::device_shardings`]), no ordered effects, a known calling
    /// convention, dtypes PJRT has, device memory, and `platform` among the export's platforms.
    pub fn check_runnable(&self, platform: &str) -> Result<()> {
        if !self.ordered_effects.is_empty() {
            return Err(Error::invalid(format!(
                "the model has ordered effects ({}), which need token arguments; this runner does not pass \
                 tokens. Export a function without ordered side effects",
                self.ordered_effects.join(", ")
            )));
        }
        if !SUPPORTED_CALLING_CONVENTIONS.contains(&self.calling_convention_version) {
            return Err(Error::invalid(format!(
                "the model uses calling convention version {}{}, but this runner supports {}..={}; export it \
                 with a JAX release that writes one of those",
                self.calling_convention_version,
                self.written_by(),
                SUPPORTED_CALLING_CONVENTIONS.start(),
                SUPPORTED_CALLING_CONVENTIONS.end()
            )));
        }
        self.device_shardings()?;
        for (i, aval) in self.in_avals.iter().chain(&self.out_avals).enumerate() {
            let which = if i < self.in_avals.len() {
                format!("input {i}")
            } else {
                format!("output {}", i - self.in_avals.len())
            };
            if aval.element_type.is_none() {
                return Err(Error::invalid(format!(
                    "{which} has dtype {}, which has no PJRT element type; it cannot be passed to a plugin",
                    aval.dtype_name
                )));
            }
            if aval.memory_space != MemorySpace::Device {
                return Err(Error::invalid(format!(
                    "{which} lives in {:?} memory; only device-memory inputs and outputs are supported",
                    aval.memory_space
                )));
            }
        }
        self.platform_index(platform)?;
        Ok(())
    }
    /// Compiles the module for `client` (after [`JaxExport::check_runnable`]), with the XLA
    /// settings that make results match JAX ([`CompileOptions::jax_defaults`]); a multi-device
    /// export is compiled with SPMD partitioning over `nr_devices` partitions (and Shardy when
    /// the module uses it), so the client needs that many devices.
    /// A shape-polymorphic model has no one executable: compile it for input shapes with
    /// [`JaxExport::compile_for`], or run it with a [`Runner`].
    pub fn compile(&self, client: &Client) -> Result<LoadedExecutable> {
        self.check_runnable(client.platform_name())?;
        if self.is_polymorphic() {
            return Err(Error::invalid(
                "the model is shape-polymorphic: compile it for the shapes of its inputs (JaxExport::compile_for, \
                 or pjrt compile --input-shape)",
            ));
        }
        let program = self.program()?;
        Ok(client.compile(&program, &self.compile_options(client.platform_name()))?)
    }

    /// Compiles the model for inputs of these shapes (every input, in the order of
    /// [`JaxExport::in_avals`]): [`JaxExport::program_for`] compiled as [`JaxExport::compile`]
    /// does. For a model without symbolic dimensions the shapes must be its own.
    pub fn compile_for(&self, client: &Client, shapes: &[InputShape]) -> Result<LoadedExecutable> {
        self.check_runnable(client.platform_name())?;
        let program = self.program_for(shapes)?;
        Ok(client.compile(&program, &self.compile_options(client.platform_name()))?)
    }
    /// The options [`JaxExport::compile`] uses on `platform` (to add XLA options to).
    pub fn compile_options(&self, platform: &str) -> CompileOptions {
        let mut options = CompileOptions::new().jax_defaults(platform);
        if self.nr_devices > 1 {
            options = options.num_partitions(self.nr_devices as usize).use_spmd_partitioning(true);
            if self.uses_shardy() {
                options = options.use_shardy_partitioner(true);
            }
        }
        options
    }
}
