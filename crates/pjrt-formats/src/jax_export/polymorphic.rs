//! Shape-polymorphic exports (`jax.export.symbolic_shape("b, t")`): the module refined for the
//! shapes of the inputs at hand ([`pjrt_stablehlo::refine`]), as JAX does before it compiles.

use std::sync::{Arc, OnceLock};

use pjrt_client::{ElementType, Program};
use pjrt_stablehlo::ir::{Module, Type};
use pjrt_stablehlo::RefineError;

use super::{Dim, JaxExport, JaxExportError, ModuleArgument};
use crate::{Error, Result};

/// The shape of one input: its element type and dimensions.
pub type InputShape = (ElementType, Vec<i64>);

impl From<RefineError> for Error {
    fn from(e: RefineError) -> Error {
        match e {
            RefineError::ShapeAssertion { message } => Error::ShapeAssertion { message },
            other => Error::Refine(other),
        }
    }
}

/// The module read once for refinement, shared by the export's clones (`Debug` does not
/// print it: it can be large).
#[derive(Clone, Default)]
pub(crate) struct ModuleCache(Arc<OnceLock<Arc<Module>>>);

impl std::fmt::Debug for ModuleCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() { "ModuleCache(read)" } else { "ModuleCache(not read)" })
    }
}

impl JaxExport {
    /// True if some input or output has a symbolic dimension: the model is refined for each new
    /// set of input shapes ([`JaxExport::program_for`]).
    ///
    /// ```
    /// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/jax_export/jax-0.10.2/symbolic_batch/model.jaxexport");
    /// let model = pjrt_formats::jax_export::JaxExport::read(path).unwrap();
    /// assert!(model.is_polymorphic());
    /// ```
    pub fn is_polymorphic(&self) -> bool {
        self.in_avals.iter().chain(&self.out_avals).any(|a| a.is_symbolic())
    }

    /// Checks input shapes (one per input, in the order of [`JaxExport::in_avals`]) against the
    /// avals as JAX does before it refines: the count, each dtype and rank, and every
    /// dimension the aval fixes. Symbolic dimensions are checked by the module's own shape
    /// assertions when it is refined.
    pub fn check_shapes(&self, inputs: &[InputShape]) -> Result<()> {
        self.check_input_count(inputs.len())?;
        for (i, (element_type, dims)) in inputs.iter().enumerate() {
            self.check_shape(i, *element_type, dims)?;
        }
        Ok(())
    }

    /// One input's shape against its aval, with JAX's messages
    /// ([`JaxExportError::DtypeMismatch`], [`JaxExportError::RankMismatch`],
    /// [`JaxExportError::ShapeMismatch`]).
    pub(crate) fn check_shape(&self, index: usize, element_type: ElementType, dims: &[i64]) -> Result<()> {
        let aval = self.in_aval(index)?;
        if aval.element_type != Some(element_type) {
            // NumPy's names, as JAX's message has them (bf16 has none there: PJRT's then).
            let given = crate::npy::dtype_of(element_type)
                .filter(|_| element_type != ElementType::BF16)
                .map_or_else(|| element_type.to_string(), |d| d.name().to_string());
            return Err(JaxExportError::DtypeMismatch { index, expected: aval.dtype_name, given }.into());
        }
        let mismatch = |dim: Option<usize>| -> Error {
            let expected: Vec<String> = aval.dims.iter().map(|d| d.to_string()).collect();
            let given = dims.to_vec();
            match dim {
                None => JaxExportError::RankMismatch { index, expected, given },
                Some(dim) => JaxExportError::ShapeMismatch { index, dim, expected, given },
            }
            .into()
        };
        if dims.len() != aval.dims.len() {
            return Err(mismatch(None));
        }
        for (k, (want, &got)) in aval.dims.iter().zip(dims).enumerate() {
            if got < 0 || matches!(want, Dim::Fixed(n) if *n != got) {
                return Err(mismatch(Some(k)));
            }
        }
        Ok(())
    }

    /// The module as read by [`pjrt_stablehlo`] (once; kept for later refinements).
    pub(crate) fn module_ir(&self) -> Result<Arc<Module>> {
        if let Some(m) = self.module_ir.0.get() {
            return Ok(m.clone());
        }
        let module = pjrt_stablehlo::read_bytecode(&self.mlir_module).map_err(JaxExportError::ModuleUnreadable)?;
        Ok(self.module_ir.0.get_or_init(|| Arc::new(module)).clone())
    }

    /// The program to compile for inputs of these shapes (one per input, in the order of
    /// [`JaxExport::in_avals`]). For a model without symbolic dimensions that is
    /// [`JaxExport::program`] (after the shapes are checked); for a shape-polymorphic one, the
    /// module refined for them: static shapes everywhere, JAX's shape assertions checked
    /// ([`Error::ShapeAssertion`] with JAX's message when one fails), as MLIR bytecode
    /// ([`refined_program`]).
    ///
    /// ```
    /// use pjrt_client::ElementType;
    /// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/jax_export/jax-0.10.2/symbolic_batch/model.jaxexport");
    /// let model = pjrt_formats::jax_export::JaxExport::read(path).unwrap();
    /// assert!(model.program_for(&[(ElementType::F32, vec![3, 4])]).is_ok());
    /// let error = model.program_for(&[(ElementType::F32, vec![0, 4])]).unwrap_err();
    /// assert!(matches!(error, pjrt_formats::Error::ShapeAssertion { .. }), "{error}");
    /// ```
    pub fn program_for(&self, inputs: &[InputShape]) -> Result<Program> {
        self.check_shapes(inputs)?;
        if !self.is_polymorphic() {
            return self.program();
        }
        let arguments = self.module_arguments();
        let mut args = Vec::with_capacity(arguments.len());
        let mut parameters = Vec::with_capacity(arguments.len());
        for argument in arguments {
            let (element_type, dims) = match argument {
                ModuleArgument::PlatformIndex => (ElementType::S32, Vec::new()),
                ModuleArgument::Token(_) => return Err(self.ordered_effects_error()),
                // Checked by `check_shapes`: one shape per input.
                ModuleArgument::Input(i) => inputs[i].clone(),
            };
            let sizes: Vec<u64> = dims.iter().map(|&d| d as u64).collect(); // checked >= 0 above
            args.push(Type::tensor(element_type, &sizes));
            parameters.push((element_type, dims));
        }
        let mut refined = pjrt_stablehlo::refine(&*self.module_ir()?, &args)?;
        if super::may_call_legacy_lapack(&self.mlir_module) {
            super::upgrade_legacy_lapack(&mut refined).map_err(JaxExportError::from)?;
        }
        let program = refined_program(&refined)?;
        // One device sees the module's parameters as they are; several see their shards.
        Ok(if self.nr_devices == 1 { program.with_parameters(parameters) } else { program })
    }
}

/// A refined module as the program to compile: MLIR bytecode, a portable artifact for the
/// version the module's producer names (the form StableHLO keeps readable across versions,
/// written again by the compile for an older plugin: [`Program::from_module`]); the printed
/// text where the module has something without a portable form (some Shardy attributes).
///
/// ```
/// let text = "func.func public @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n  return %x : tensor<2xf32>\n}";
/// let program = pjrt_formats::jax_export::refined_program(&pjrt_stablehlo::parse_text(text).unwrap())?;
/// assert_eq!(program.stablehlo_target(), Some(pjrt_stablehlo::CURRENT_VERSION));
/// # Ok::<(), pjrt_formats::Error>(())
/// ```
pub fn refined_program(module: &Module) -> Result<Program> {
    match Program::from_module(module) {
        Err(pjrt_client::Error::Portable(_)) => Ok(Program::mlir_text(pjrt_stablehlo::print(module))?),
        other => Ok(other?),
    }
}
