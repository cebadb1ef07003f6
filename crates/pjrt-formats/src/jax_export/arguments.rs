//! The caller's inputs checked against the avals and arranged as the module's arguments.

use pjrt_client::{ElementType, HostArray};

use super::{InputShape, JaxExport};
use crate::error::{Error, Result};
use crate::npy::NpyArray;

impl JaxExport {
    /// The index of `platform` (a client's [`Client::platform_name`]) among the export's
    /// platforms, which the module takes as its first argument when there are several; `None`
    /// when there is one platform (no such argument). An error if the export was not lowered
    /// for `platform`.
    pub fn platform_index(&self, platform: &str) -> Result<Option<i32>> {
        let wanted = platform.to_ascii_lowercase();
        let found = self.platforms.iter().position(|p| {
            let p = p.to_ascii_lowercase();
            p == wanted || (wanted == "gpu" && (p == "cuda" || p == "rocm"))
        });
        match found {
            Some(_) if self.platforms.len() == 1 => Ok(None),
            Some(i) => Ok(Some(i as i32)),
            None => Err(Error::invalid(format!(
                "the model was exported for {} but the client's platform is {platform}; export it again with \
                 jax.export.export(..., platforms=[..., \"{wanted}\"])",
                if self.platforms.is_empty() { "no platform".to_string() } else { self.platforms.join(", ") }
            ))),
        }
    }
    /// Checks one input (index into [`JaxExport::in_avals`]) against its aval.
    pub fn check_input(&self, index: usize, element_type: ElementType, dims: &[i64]) -> Result<()> {
        let aval = self.in_avals.get(index).ok_or_else(|| {
            Error::invalid(format!("input {index} does not exist: the model takes {} inputs", self.in_avals.len()))
        })?;
        if self.is_polymorphic() {
            return self.check_shape(index, element_type, dims);
        }
        let wanted = aval.fixed_dims();
        if aval.element_type != Some(element_type) || wanted.as_deref() != Some(dims) {
            let dims: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
            return Err(Error::invalid(format!(
                "input {index} is {element_type}[{}], but the model expects {aval}",
                dims.join(",")
            )));
        }
        Ok(())
    }

    /// Checks one `.npy` input against its aval, as it uploads for it (bf16 bits, widened
    /// sub-byte values; else its own type, reported as the mismatch).
    pub fn check_npy_input(&self, index: usize, array: &NpyArray) -> Result<()> {
        let wanted = self.in_avals.get(index).and_then(|a| a.element_type);
        let element_type = crate::npy_arrays::upload_element_type(array.dtype, wanted)
            .unwrap_or_else(|_| crate::npy::element_type_of(array.dtype));
        self.check_input(index, element_type, &array.dims)
    }

    /// Maps the caller's inputs (every input, in the order of [`JaxExport::in_avals`]) to the
    /// module's arguments: checks each against its aval, drops the ones the module does not
    /// keep, and puts the platform index (an `i32` scalar) first when the export has several
    /// platforms. bf16 inputs are given as raw bits (`<u2` or `<V2` arrays), sub-byte ones as
    /// `int8`/`uint8` values or ml_dtypes' `|V1` (see [`NpyArray::to_host_array`]); each
    /// argument comes back as the [`HostArray`] of the module's parameter type.
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
        let mut arguments = Vec::with_capacity(self.module_kept_var_idx.len() + 1);
        if let Some(index) = self.platform_index(platform)? {
            arguments.push(HostArray::from_elements(Vec::new(), &[index])?);
        }
        for &i in &self.module_kept_var_idx {
            arguments.push(
                inputs[i]
                    .to_host_array(self.in_avals[i].element_type)
                    .map_err(|e| e.context(format_args!("input {i}")))?,
            );
        }
        Ok(arguments)
    }
    /// The shape of each input as it is uploaded (see [`JaxExport::check_npy_input`]).
    pub fn input_shapes(&self, inputs: &[NpyArray]) -> Vec<InputShape> {
        self.input_shapes_of(inputs.iter())
    }

    /// [`JaxExport::input_shapes`] of borrowed arrays.
    pub(crate) fn input_shapes_of<'a>(&self, inputs: impl Iterator<Item = &'a NpyArray>) -> Vec<InputShape> {
        inputs
            .enumerate()
            .map(|(i, array)| {
                let wanted = self.in_avals.get(i).and_then(|a| a.element_type);
                let element_type = crate::npy_arrays::upload_element_type(array.dtype, wanted)
                    .unwrap_or_else(|_| crate::npy::element_type_of(array.dtype));
                (element_type, array.dims.clone())
            })
            .collect()
    }

    /// The error for `count` inputs given to a model of another number of inputs.
    pub(crate) fn check_input_count(&self, count: usize) -> Result<()> {
        if count != self.in_avals.len() {
            let avals: Vec<String> = self.in_avals.iter().map(|a| a.to_string()).collect();
            return Err(Error::invalid(format!(
                "the model takes {} inputs ({}) but {count} were given; give all of them in order, unused ones too",
                self.in_avals.len(),
                avals.join(", "),
            )));
        }
        Ok(())
    }

    pub(crate) fn check_output_count(&self, count: usize) -> Result<()> {
        if count != self.out_avals.len() {
            return Err(Error::invalid(format!(
                "the module returned {count} outputs but the export lists {}",
                self.out_avals.len()
            )));
        }
        Ok(())
    }
}
