//! `pjrt run` on models serialized by `jax.export` (`.jaxexport`): the model is recognised by
//! its content (or its extension), its StableHLO module is what gets compiled, and the user's
//! inputs (every input of the exported function, in order) become the module's arguments.
//! Models exported for several devices run on that many devices, laid out by their shardings.
//! A shape-polymorphic model is refined for the shapes of the inputs at hand
//! ([`JaxExport::program_for`]) once they are known, and that program is compiled.

use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::out::outln;
use pjrt_client::{ExecuteOptions, HostArray, Program};
use pjrt_formats::jax_export::{InputShape, JaxExport, ModuleArgument};
use pjrt_formats::npy::NpyArray;
use serde_json::{json, Value};

use super::inputs::{gather_inputs, in_input};
use super::outputs::{check_writable, commit_all, output_dtypes, output_files, preview};
use crate::cli::{OutputFormat, RunArgs};
use crate::compiling::ProgramSource;
use crate::plugins::{cpu_aware_client, resolve_plugin};
use crate::ui::{self, invalid};

/// What `pjrt run --json` reports about a `jax.export` model: its versions (serialization, the
/// JAX that wrote it when the file says, the module's StableHLO), what it takes, whether it is
/// shape-polymorphic and, if so, the input shapes it was refined for (`refined_for`, as
/// `f32[3,4]`; null for a static model).
pub fn model_summary(model: &JaxExport, refined_for: Option<&[InputShape]>) -> Value {
    json!({
        "format": "jax.export", "function": model.function_name(),
        "serialization_version": model.serialization_version(), "jax_version": model.jax_version(),
        "stablehlo_version": model.stablehlo_version().map(|v| v.to_string()),
        "platforms": model.platforms(), "nr_devices": model.nr_devices(),
        "inputs": model.in_avals().len(), "outputs": model.out_avals().len(), "summary": model.to_string(),
        "polymorphic": model.is_polymorphic(),
        "in_avals": model.in_avals().iter().map(|a| a.to_string()).collect::<Vec<_>>(),
        "refined_for": refined_for.map(|shapes| shapes.iter().map(shape_text).collect::<Vec<_>>()),
    })
}

/// An input shape as `--input-shape` takes it: `f32[3,4]`.
pub fn shape_text((element_type, dims): &InputShape) -> String {
    let dims: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
    format!("{element_type}[{}]", dims.join(","))
}

/// The program to compile for inputs of `shapes` (every input, in the order of the model's
/// avals): for a shape-polymorphic model, the module refined for them (a failed shape
/// assertion is JAX's message); `None` for a static model, whose program is the one already
/// read (the inputs were checked against its avals).
pub fn refined_program(model: &JaxExport, shapes: &[InputShape]) -> Result<Option<Program>, Error> {
    if !model.is_polymorphic() {
        return Ok(None);
    }
    Ok(model.program_for(shapes).map(Some)?)
}

/// Says on stderr which JAX wrote a model whose StableHLO the plugin does not read (the error
/// itself names the versions), and what to do about it.
pub fn explain_version_error(error: &Error, model: Option<&JaxExport>) {
    let (Some(model), Some(pjrt_client::Error::ProgramVersion { program, .. })) = (model, error.client()) else {
        return;
    };
    let writer = model.jax_version().map_or_else(|| "a JAX before 0.12".to_owned(), |v| format!("JAX {v}"));
    ui::log_line(&format!(
        "note: the model was exported by {writer}, which wrote StableHLO {program}: run it on a plugin that reads \
         that version (one as new as that JAX's jaxlib), or export it with an older JAX"
    ));
}

/// Opens what `pjrt run` and `pjrt bench run` are given: an AOT artifact, or a program read by
/// [`read_program`] (with its `jax.export` model, if it is one).
pub fn open_program(path: &Path) -> Result<(ProgramSource, Option<JaxExport>), Error> {
    if pjrt_formats::artifact::is_artifact_file(path) {
        return Ok((ProgramSource::open(path)?, None));
    }
    let (program, model) = read_program(path)?;
    Ok((ProgramSource::Program(program), model))
}

/// Reads the program to run: a `jax.export` model (with the model, for [`module_arguments`]) or
/// any format [`Program::from_file`] reads. A shape-polymorphic model's program is its module
/// as exported: compile [`refined_program`] instead once the input shapes are known.
pub fn read_program(path: &Path) -> Result<(Program, Option<JaxExport>), Error> {
    let bytes = std::fs::read(path).map_err(|e| pjrt_client::Error::Io { path: path.to_path_buf(), source: e })?;
    let by_name = path.extension().is_some_and(|e| e == "jaxexport");
    if !(by_name || JaxExport::looks_like(&bytes)) {
        return Ok((Program::from_file(path)?, None));
    }
    let model = JaxExport::from_bytes(&bytes).map_err(|e| e.context(path.display()))?;
    Ok((model.program()?, Some(model)))
}

/// The `jax.export` model's arguments for `platform`: each input is checked against the
/// model's avals (errors name the file), unused inputs are dropped and the platform index goes
/// first when the model has several platforms. Also returns a name for each argument (its file, or `<platform index>`)
/// for error messages.
pub fn module_arguments(
    model: &JaxExport,
    platform: &str,
    inputs: Vec<NpyArray>,
    labels: &[String],
    shard_inputs: Option<usize>,
) -> Result<(Vec<HostArray>, Vec<String>), Error> {
    if shard_inputs.is_some() {
        return Err(invalid(
            "--shard-inputs does not apply to a jax.export model: it runs on the one device it was exported for",
        ));
    }
    model.check_runnable(platform)?;
    // A wrong count is reported by `arrange_inputs`, with every expected aval.
    let checked = if inputs.len() == model.in_avals().len() { inputs.len() } else { 0 };
    for (i, (array, label)) in inputs.iter().zip(labels).enumerate().take(checked) {
        model.check_npy_input(i, array).map_err(|e| in_input(e, label))?;
    }
    let arguments = model.arrange_inputs(platform, &inputs)?;
    let names = model
        .module_arguments()
        .into_iter()
        .map(|argument| match argument {
            ModuleArgument::Input(i) => labels[i].clone(),
            ModuleArgument::PlatformIndex => "<platform index>".to_owned(),
            _ => "<token>".to_owned(),
        })
        .collect();
    Ok((arguments, names))
}

/// Runs a `jax.export` model exported for several devices (`pjrt run` hands such models
/// here instead of taking its usual path): the client gets as many devices as
/// the model's `nr_devices`, inputs are split and outputs gathered by the model's shardings
/// ([`JaxExport::device_shardings`]), and the gathered outputs are written as out0.npy, ...
pub fn run_multi_device_model(args: &RunArgs, model: &JaxExport) -> Result<(), Error> {
    let devices = model.nr_devices() as i64;
    if args.replicas.is_some_and(|r| r != 1) {
        return Err(invalid(format!(
            "--replicas does not apply to a jax.export model: it runs on the {devices} devices it was exported for"
        )));
    }
    let (inputs, labels) =
        gather_inputs(Some(&model.arguments()), args.params.as_deref(), &args.input)?.into_host_arrays()?;
    let plugin = resolve_plugin(&args.plugin)?;
    let client = cpu_aware_client(&plugin, devices)?; // devices > 1 here
    super::register_ffi_libraries(&args.ffi_library, &client)?;
    let platform = client.platform_name().to_string();
    let shapes = model.input_shapes(&inputs);
    let (arguments, _) = module_arguments(model, &platform, inputs, &labels, args.shard_inputs)?;
    // Refined for the inputs when shape-polymorphic; the shardings are the export's either way.
    let refined = refined_program(model, &shapes)?;
    let program = match refined {
        Some(program) => program,
        None => model.program()?,
    };
    let options = args.xla.apply_xla_options(if args.xla.no_jax_defaults {
        model.compile_options("") // no platform: no JAX defaults
    } else {
        model.compile_options(&platform)
    })?;
    let exe = client.compile(&program, &options).map_err(|e| {
        let e = Error::from(e);
        explain_version_error(&e, Some(model));
        e
    })?;
    // Outputs are written as .npy: refuse any that cannot be before running.
    let stored = output_dtypes(OutputFormat::Npy, exe.output_shapes())?;
    let out_dir = args.output_dir.clone().unwrap_or_else(|| PathBuf::from("."));
    check_writable(&output_files(OutputFormat::Npy, &out_dir, stored.len()))?;
    let (input_shardings, output_shardings) = model.device_shardings()?;
    let buffers = exe.upload_sharded(&arguments, &input_shardings)?;
    let outputs = exe.execute_sharded(&buffers, &ExecuteOptions::new())?;
    let outputs = pjrt_client::sharding::gather_outputs(&outputs, &output_shardings)?;
    let mut report = Vec::new();
    // All outputs are staged, then committed together: all files appear, or none.
    let mut staged = Vec::new();
    for (i, (array, aval)) in outputs.iter().zip(model.out_avals()).enumerate() {
        let array = &NpyArray::from_host_array(array)?;
        let file = out_dir.join(format!("out{i}.npy"));
        staged.push(array.stage(&file)?);
        let dtype = aval.element_type.map_or("unknown", |t| t.name());
        let preview = preview(array, dtype == "bf16");
        if !args.json {
            let shape: Vec<String> = array.dims.iter().map(|d| d.to_string()).collect();
            outln!("out{i}: {dtype}[{}] = {preview}  -> {}", shape.join(","), file.display())?;
        }
        report.push(json!({ "index": i, "file": file, "dtype": dtype, "element_type": dtype,
                            "npy_dtype": array.dtype.descr(), "stored_as": stored.get(i).copied().unwrap_or(array.dtype.name()),
                            "shape": array.dims, "preview": preview }));
    }
    commit_all(staged)?;
    if args.json {
        let report = json!({ "program": args.program, "plugin": plugin.path(), "platform": platform,
                             "devices": devices, "outputs": report,
                             "model": model_summary(model, model.is_polymorphic().then_some(&shapes[..])) });
        outln!("{report}")?;
    }
    Ok(())
}
