//! The module's arguments: how a `jax.export` module's `main` takes the model's inputs
//! ([`JaxExport::module_arguments`], the one place that says it), and the caller's inputs
//! checked against the avals and arranged that way.

use pjrt_client::{ElementType, HostArray};

use super::{InputShape, JaxExport, JaxExportError, Unrunnable};
use crate::npy::NpyArray;
use crate::{Error, Result};

/// One argument of a `jax.export` module's `main`, in the order [`JaxExport::module_arguments`]
/// gives them: the platform index (when the export has several platforms), a token per ordered
/// effect, then the inputs the module keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ModuleArgument {
    /// The index of the client's platform among [`JaxExport::platforms`], an `i32` scalar:
    /// [`JaxExport::platform_index`] gives its value (it is `Some` exactly when the module takes
    /// this argument). Placed on every device (replicated).
    PlatformIndex,
    /// The token of ordered effect `k` ([`JaxExport::ordered_effects`]). This crate runs no
    /// model that takes one ([`Unrunnable::OrderedEffects`]).
    Token(usize),
    /// Input `i`: an index into [`JaxExport::in_avals`], one of [`JaxExport::module_kept_var_idx`].
    Input(usize),
}

impl JaxExport {
    /// The arguments of the module's `main`, in order: the platform index first when the export
    /// has several platforms, then one token per ordered effect, then the kept inputs
    /// ([`JaxExport::module_kept_var_idx`]; the other inputs are not passed). Whoever calls the
    /// module builds its arguments from this list: [`JaxExport::arrange_inputs`],
    /// [`JaxExport::device_shardings`], [`JaxExport::program`] and [`JaxExport::program_for`]
    /// do, and so should a server that uploads each argument itself.
    ///
    /// ```
    /// use pjrt_formats::jax_export::{JaxExport, ModuleArgument};
    /// let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/jax_export/jax-0.10.2");
    /// // f(x, unused, y): the module keeps inputs 0 and 2.
    /// let model = JaxExport::read(format!("{data}/unused_arg/model.jaxexport"))?;
    /// assert_eq!(model.module_arguments(), [ModuleArgument::Input(0), ModuleArgument::Input(2)]);
    /// // Exported for cpu and cuda: the platform index comes first.
    /// let model = JaxExport::read(format!("{data}/multi_platform/model.jaxexport"))?;
    /// assert_eq!(model.module_arguments()[0], ModuleArgument::PlatformIndex);
    /// assert_eq!(model.platform_index("cpu")?, Some(0));
    /// # Ok::<(), pjrt_formats::Error>(())
    /// ```
    pub fn module_arguments(&self) -> Vec<ModuleArgument> {
        let platform_index = (self.platforms.len() > 1).then_some(ModuleArgument::PlatformIndex);
        let tokens = (0..self.ordered_effects.len()).map(ModuleArgument::Token);
        let inputs = self.module_kept_var_idx.iter().map(|&i| ModuleArgument::Input(i));
        platform_index.into_iter().chain(tokens).chain(inputs).collect()
    }

    /// The index of `platform` (a client's [`pjrt_client::Client::platform_name`]) among the
    /// export's platforms, which the module takes as its first argument when there are several
    /// ([`ModuleArgument::PlatformIndex`]); `None` when there is one platform (no such argument).
    /// [`JaxExportError::PlatformMismatch`] if the export was not lowered for `platform`.
    pub fn platform_index(&self, platform: &str) -> Result<Option<i32>> {
        let index = self.platform_position(platform)?;
        Ok((self.platforms.len() > 1).then_some(index))
    }

    /// The index of `platform` among the export's platforms (`gpu` finds `cuda` or `rocm`).
    fn platform_position(&self, platform: &str) -> Result<i32> {
        let wanted = platform.to_ascii_lowercase();
        let found = self.platforms.iter().position(|p| {
            let p = p.to_ascii_lowercase();
            p == wanted || (wanted == "gpu" && (p == "cuda" || p == "rocm"))
        });
        // An artifact lists a few platforms: the index fits an i32.
        found.map(|i| i as i32).ok_or_else(|| {
            JaxExportError::PlatformMismatch { platform: platform.to_owned(), platforms: self.platforms.clone() }.into()
        })
    }

    /// The error for a module that takes token arguments ([`ModuleArgument::Token`]).
    pub(super) fn ordered_effects_error(&self) -> Error {
        Unrunnable::OrderedEffects { effects: self.ordered_effects.clone() }.into()
    }

    /// Checks one input (index into [`JaxExport::in_avals`]) against its aval:
    /// [`JaxExportError::InputMismatch`] if it differs (for a shape-polymorphic model, JAX's
    /// checks: [`JaxExportError::DtypeMismatch`], [`JaxExportError::RankMismatch`],
    /// [`JaxExportError::ShapeMismatch`]).
    pub fn check_input(&self, index: usize, element_type: ElementType, dims: &[i64]) -> Result<()> {
        let aval = self.in_aval(index)?;
        if self.is_polymorphic() {
            return self.check_shape(index, element_type, dims);
        }
        if aval.element_type != Some(element_type) || aval.fixed_dims().as_deref() != Some(dims) {
            return Err(JaxExportError::InputMismatch {
                index,
                element_type,
                dims: dims.to_vec(),
                expected: aval.to_string(),
            }
            .into());
        }
        Ok(())
    }

    /// Input `index`'s aval, or [`JaxExportError::NoSuchInput`].
    pub(super) fn in_aval(&self, index: usize) -> Result<&super::Aval> {
        self.in_avals.get(index).ok_or_else(|| JaxExportError::NoSuchInput { index, count: self.in_avals.len() }.into())
    }

    /// Checks one `.npy` input against its aval, as it uploads for it (bf16 bits, widened
    /// sub-byte values; else its own type, reported as the mismatch).
    pub fn check_npy_input(&self, index: usize, array: &NpyArray) -> Result<()> {
        self.check_input(index, self.upload_type(index, array), &array.dims)
    }

    /// The element type `array` uploads as for input `index`: the aval's where the array's
    /// dtype can give it, else its own.
    fn upload_type(&self, index: usize, array: &NpyArray) -> ElementType {
        let wanted = self.in_avals.get(index).and_then(|a| a.element_type);
        crate::npy_arrays::upload_element_type(array.dtype, wanted)
            .unwrap_or_else(|_| crate::npy::element_type_of(array.dtype))
    }

    /// Maps the caller's inputs (every input, in the order of [`JaxExport::in_avals`]) to the
    /// module's arguments ([`JaxExport::module_arguments`]): checks each against its aval, drops
    /// the ones the module does not keep, and puts the platform index (an `i32` scalar) first
    /// when the export has several platforms. bf16 inputs are given as raw bits (`<u2` or `<V2`
    /// arrays), sub-byte ones as `int8`/`uint8` values or ml_dtypes' `|V1` (see
    /// [`NpyArray::to_host_array`]); each argument comes back as the [`HostArray`] of the
    /// module's parameter type.
    pub fn arrange_inputs(&self, platform: &str, inputs: &[NpyArray]) -> Result<Vec<HostArray>> {
        self.arrange_input_refs(platform, &inputs.iter().collect::<Vec<_>>())
    }

    /// [`JaxExport::arrange_inputs`] of borrowed arrays.
    pub(crate) fn arrange_input_refs(&self, platform: &str, inputs: &[&NpyArray]) -> Result<Vec<HostArray>> {
        self.check_runnable(platform)?;
        self.check_input_count(inputs.len())?;
        for (i, array) in inputs.iter().enumerate() {
            self.check_npy_input(i, array)?;
        }
        let platform_index = self.platform_position(platform)?;
        self.module_arguments()
            .into_iter()
            .map(|argument| match argument {
                ModuleArgument::PlatformIndex => Ok(HostArray::from_elements(Vec::new(), &[platform_index])?),
                ModuleArgument::Token(_) => Err(self.ordered_effects_error()),
                ModuleArgument::Input(i) => inputs[i]
                    .to_host_array(self.in_avals[i].element_type)
                    .map_err(|e| e.context(format_args!("input {i}"))),
            })
            .collect()
    }

    /// The shape of each input as it is uploaded (see [`JaxExport::check_npy_input`]).
    pub fn input_shapes(&self, inputs: &[NpyArray]) -> Vec<InputShape> {
        self.input_shapes_of(inputs.iter())
    }

    /// [`JaxExport::input_shapes`] of borrowed arrays.
    pub(crate) fn input_shapes_of<'a>(&self, inputs: impl Iterator<Item = &'a NpyArray>) -> Vec<InputShape> {
        inputs.enumerate().map(|(i, array)| (self.upload_type(i, array), array.dims.clone())).collect()
    }

    /// [`JaxExportError::InputCount`] for `count` inputs given to a model of another number of
    /// inputs.
    pub(crate) fn check_input_count(&self, count: usize) -> Result<()> {
        if count != self.in_avals.len() {
            return Err(JaxExportError::InputCount {
                given: count,
                expected: self.in_avals.iter().map(|a| a.to_string()).collect(),
            }
            .into());
        }
        Ok(())
    }

    /// [`JaxExportError::OutputCount`] for `count` outputs returned by a module whose export
    /// lists another number.
    pub(crate) fn check_output_count(&self, count: usize) -> Result<()> {
        if count != self.out_avals.len() {
            return Err(JaxExportError::OutputCount { returned: count, listed: self.out_avals.len() }.into());
        }
        Ok(())
    }
}
