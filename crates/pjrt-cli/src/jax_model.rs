//! `pjrt run` on models serialized by `jax.export` (`.jaxexport`): the model is recognised by
//! its content (or its extension), its StableHLO module is what gets compiled, and the user's
//! inputs (every input of the exported function, in order) become the module's arguments.

use std::path::{Path, PathBuf};

use pjrt_client::host_array::element_type_of;
use pjrt_client::jax_export::JaxExport;
use pjrt_client::npy::{Dtype, NpyArray};
use pjrt_client::{ElementType, Error, Program};

/// Reads the program to run: a `jax.export` model (with the model, for [`module_arguments`]) or
/// any format [`Program::from_file`] reads.
pub fn read_program(path: &Path) -> Result<(Program, Option<JaxExport>), Error> {
    let bytes = std::fs::read(path).map_err(|e| Error::Io { path: path.to_path_buf(), source: e })?;
    let by_name = path.extension().is_some_and(|e| e == "jaxexport");
    if !(by_name || JaxExport::looks_like(&bytes)) {
        return Ok((Program::from_file(path)?, None));
    }
    let model = JaxExport::from_bytes(&bytes).map_err(|e| match e {
        Error::InvalidArgument(m) => Error::InvalidArgument(format!("{}: {m}", path.display())),
        other => other,
    })?;
    Ok((model.program()?, Some(model)))
}

/// The module's arguments for `platform`: for a `jax.export` model each input is checked
/// against the model's avals (errors name the file), unused inputs are dropped and the
/// platform index goes first when the model has several platforms; other programs take the
/// inputs as given. Also returns a name for each argument (its file, or `<platform index>`)
/// for error messages.
pub fn module_arguments(
    model: Option<&JaxExport>,
    platform: &str,
    inputs: Vec<NpyArray>,
    files: &[PathBuf],
    shard_inputs: Option<usize>,
) -> Result<(Vec<NpyArray>, Vec<PathBuf>), Error> {
    let Some(model) = model else { return Ok((inputs, files.to_vec())) };
    if shard_inputs.is_some() {
        return Err(Error::InvalidArgument(
            "--shard-inputs does not apply to a jax.export model: it runs on the one device it was exported for".into(),
        ));
    }
    model.check_runnable(platform)?;
    // A wrong count is reported by `arrange_inputs`, with every expected aval.
    let checked = if inputs.len() == model.in_avals().len() { inputs.len() } else { 0 };
    for (i, (array, file)) in inputs.iter().zip(files).enumerate().take(checked) {
        let bf16 = model.in_avals().get(i).is_some_and(|a| a.element_type == Some(ElementType::BF16));
        let element_type = if bf16 && matches!(array.dtype, Dtype::U16 | Dtype::V2) {
            ElementType::BF16
        } else {
            element_type_of(array.dtype)
        };
        let dims: Vec<u64> = array.shape.iter().map(|&d| d as u64).collect();
        model.check_input(i, element_type, &dims).map_err(|e| match e {
            Error::InvalidArgument(m) => Error::InvalidArgument(format!("{m} (--input {})", file.display())),
            other => other,
        })?;
    }
    let arguments = model.arrange_inputs(platform, &inputs)?;
    let mut names: Vec<PathBuf> = Vec::with_capacity(arguments.len());
    if model.platform_index(platform)?.is_some() {
        names.push(PathBuf::from("<platform index>"));
    }
    names.extend(model.module_kept_var_idx().iter().map(|&i| files[i].clone()));
    Ok((arguments, names))
}
