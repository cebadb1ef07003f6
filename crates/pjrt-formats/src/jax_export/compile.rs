//! The module as a program, whether this crate can run it, and its compilation.

use pjrt_client::{Client, CompileOptions, ElementType, LoadedExecutable, Program};

use super::model::shown;
use super::{
    may_call_legacy_lapack, refined_program, upgrade_legacy_lapack, InputOrOutput, InputShape, JaxExport,
    JaxExportError, MemorySpace, ModuleArgument, Unrunnable, SUPPORTED_CALLING_CONVENTIONS,
};
use crate::Result;

impl JaxExport {
    /// The StableHLO module as a [`Program`]. Use [`JaxExport::arrange_inputs`] for its
    /// arguments: they are not the function's inputs one to one ([`JaxExport::module_arguments`]).
    ///
    /// For a single-device export with concrete shapes, the program declares the module's
    /// parameters from the avals ([`Program::with_parameters`], in the order of
    /// [`JaxExport::module_arguments`]), so argument checks stay on where a plugin's optimized
    /// program does not tell its parameters (this crate cannot read MLIR bytecode's signature).
    ///
    /// A module that calls LAPACK kernels of jaxlib before their FFI form (JAX 0.4.30 and 0.4.38
    /// wrote them) is upgraded first ([`super::upgrade_legacy_lapack`]); the program is then the
    /// upgraded module ([`super::refined_program`]).
    pub fn program(&self) -> Result<Program> {
        let mut upgraded = None;
        if may_call_legacy_lapack(&self.mlir_module) {
            let mut module = (*self.module_ir()?).clone();
            if upgrade_legacy_lapack(&mut module).map_err(JaxExportError::from)? > 0 {
                upgraded = Some(refined_program(&module)?);
            }
        }
        let program = match upgraded {
            Some(program) => program,
            None => Program::mlir_bytecode(self.mlir_module.clone())?,
        };
        Ok(match self.module_parameters() {
            Some(parameters) => program.with_parameters(parameters),
            None => program,
        })
    }

    /// The module's parameters as one device sees them, where the avals tell them: one device,
    /// no ordered effects (token arguments), concrete shapes and PJRT dtypes.
    fn module_parameters(&self) -> Option<Vec<(ElementType, Vec<i64>)>> {
        if self.nr_devices != 1 {
            return None;
        }
        self.module_arguments()
            .into_iter()
            .map(|argument| match argument {
                ModuleArgument::PlatformIndex => Some((ElementType::S32, Vec::new())),
                ModuleArgument::Token(_) => None,
                ModuleArgument::Input(i) => {
                    let aval = self.in_avals.get(i)?;
                    Some((aval.element_type?, aval.fixed_dims()?))
                }
            })
            .collect()
    }

    /// Checks that this crate can run the export on `platform`: shardings it can lay out
    /// ([`JaxExport::device_shardings`]), no ordered effects, a known calling convention, dtypes
    /// PJRT has, device memory ([`JaxExportError::Unrunnable`] otherwise), and `platform` among
    /// the export's platforms ([`JaxExportError::PlatformMismatch`]).
    pub fn check_runnable(&self, platform: &str) -> Result<()> {
        if !self.ordered_effects.is_empty() {
            return Err(self.ordered_effects_error());
        }
        if !SUPPORTED_CALLING_CONVENTIONS.contains(&self.calling_convention_version) {
            return Err(Unrunnable::CallingConvention {
                version: self.calling_convention_version,
                written_by: self.jax_version.as_deref().map(shown),
                supported: SUPPORTED_CALLING_CONVENTIONS,
            }
            .into());
        }
        self.device_shardings()?;
        let inputs = self.in_avals.iter().enumerate().map(|(i, aval)| (InputOrOutput::Input(i), aval));
        let outputs = self.out_avals.iter().enumerate().map(|(i, aval)| (InputOrOutput::Output(i), aval));
        for (value, aval) in inputs.chain(outputs) {
            if aval.element_type.is_none() {
                return Err(Unrunnable::NoElementType { value, dtype: aval.dtype_name }.into());
            }
            if aval.memory_space != MemorySpace::Device {
                return Err(Unrunnable::MemorySpace { value, memory_space: format!("{:?}", aval.memory_space) }.into());
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
    /// [`JaxExport::compile_for`], or run it with a [`super::Runner`].
    pub fn compile(&self, client: &Client) -> Result<LoadedExecutable> {
        self.check_runnable(client.platform_name())?;
        if self.is_polymorphic() {
            return Err(JaxExportError::Polymorphic.into());
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
