//! Loading a model: the file recognised (an AOT artifact by its magic, a `jax.export` model by
//! its extension or content, else a StableHLO program), checked for what this API runs (one
//! device), its weights bound by name and uploaded once, a model of static shapes compiled.

use std::path::Path;
use std::sync::{Arc, Mutex};

use pjrt_client::{Buffer, CompileOptions, Device, DeviceAssignment, ElementType, HostArray, Placement, Program};
use pjrt_formats::artifact::{self, Artifact};
use pjrt_formats::binding::{self, Argument};
use pjrt_formats::jax_export::{Dim, InputShape, JaxExport, ModuleArgument, Runner};
use pjrt_formats::mlir_text::{self, TextProgram};
use pjrt_formats::safetensors::SafeTensors;
use pjrt_formats::ClientExt as _;

use super::{spec, Executables, Feed, Model, Specs, TextExecutables};
use crate::failure::{Failure, Outcome};
use crate::runtime::Runtime;
use crate::types::*;

/// Loads the model at `path` onto `runtime`, with the weights of the safetensors file `weights`.
pub(super) fn load(runtime: Arc<Runtime>, path: &Path, weights: Option<&Path>) -> Outcome<Model> {
    // The I/O error names the file itself; every other failure is said to be about it.
    let bytes =
        std::fs::read(path).map_err(|e| Failure::from(pjrt_client::Error::Io { path: path.into(), source: e }))?;
    read(runtime, path, bytes, weights).map_err(|e| e.context(path.display()))
}

fn read(runtime: Arc<Runtime>, path: &Path, bytes: Vec<u8>, weights: Option<&Path>) -> Outcome<Model> {
    let weights = match weights {
        Some(file) => Some(
            SafeTensors::open(file).map_err(|e| Failure::from(pjrt_formats::Error::from(e)).context("weights_path"))?,
        ),
        None => None,
    };
    if artifact::is_artifact(&bytes) {
        let artifact = Artifact::from_bytes(&bytes)?;
        drop(bytes);
        load_artifact(runtime, &artifact, weights.as_ref())
    } else if path.extension().is_some_and(|e| e == "jaxexport") || JaxExport::looks_like(&bytes) {
        let model = JaxExport::from_bytes(&bytes)?;
        drop(bytes);
        load_export(runtime, model, weights.as_ref())
    } else {
        drop(bytes);
        load_program(runtime, Program::from_file(path)?, weights.as_ref())
    }
}

/// The runtime's device.
fn device(runtime: &Runtime) -> Outcome<Device<'_>> {
    runtime
        .client
        .addressable_devices()
        .into_iter()
        .nth(runtime.device)
        .ok_or_else(|| Failure::new(PJRT_CODE_INTERNAL, "the runtime's device is gone"))
}

/// `options` placing a one-device program on the runtime's device (left as they are for the
/// first device, so that the compile cache's keys are `pjrt run`'s).
fn on_device(runtime: &Runtime, options: CompileOptions) -> Outcome<CompileOptions> {
    if runtime.device == 0 {
        return Ok(options);
    }
    let assignment = DeviceAssignment::new(vec![vec![i64::from(runtime.device_id)]])?;
    Ok(options.device_assignment(&assignment))
}

fn one_device_only(what: &str) -> Failure {
    Failure::new(
        PJRT_CODE_UNIMPLEMENTED,
        format!("{what}; this C API runs one-device programs (run it with `pjrt run`)"),
    )
}

/// The weights: which of `arguments` each tensor of `file` feeds (bound by name), uploaded to
/// `device` for the arguments `needed` says the program takes. For each argument, the index of
/// its buffer in `resident` and its shape, or `None` where the caller gives it.
fn upload_weights(
    runtime: &Runtime,
    device: &Device<'_>,
    file: Option<&SafeTensors>,
    arguments: &[Argument],
    needed: impl Fn(usize) -> bool,
    resident: &mut Vec<Buffer>,
) -> Outcome<Vec<Option<(usize, InputShape)>>> {
    let mut weight_of = vec![None; arguments.len()];
    let Some(file) = file else { return Ok(weight_of) };
    let tensors = binding::safetensors_tensors(file);
    let bound = binding::bind(arguments, &tensors)
        .map_err(|e| Failure::from(pjrt_formats::Error::from(e)).context("weights_path"))?;
    for (i, tensor) in bound.tensors().iter().enumerate() {
        let Some(t) = *tensor else { continue };
        let tensor = &tensors[t];
        let element_type = arguments[i].element_type.unwrap_or(tensor.element_type);
        let shape = (element_type, tensor.dims.to_vec());
        if !needed(i) {
            // An input the program does not use: given by the file, not uploaded.
            weight_of[i] = Some((usize::MAX, shape));
            continue;
        }
        let buffer = runtime
            .client
            .upload_tensor(file, tensor.name, Some(element_type), Placement::Device(device))
            .map_err(|e| Failure::from(e).context(format_args!("weight {:?}", tensor.name)))?;
        weight_of[i] = Some((resident.len(), shape));
        resident.push(buffer);
    }
    Ok(weight_of)
}

/// The caller's inputs (those no weight feeds) and each input's weight shape.
fn split_inputs(weight_of: &[Option<(usize, InputShape)>]) -> (Vec<usize>, Vec<Option<InputShape>>) {
    let caller = (0..weight_of.len()).filter(|&i| weight_of[i].is_none()).collect();
    let shapes = weight_of.iter().map(|w| w.as_ref().map(|(_, shape)| shape.clone())).collect();
    (caller, shapes)
}

/// The feed of input `i`: its weight, or its place among the caller's inputs.
fn feed_of(i: usize, weight_of: &[Option<(usize, InputShape)>], caller_inputs: &[usize]) -> Outcome<Feed> {
    match weight_of.get(i) {
        Some(Some((k, _))) => Ok(Feed::Resident(*k)),
        Some(None) => caller_inputs
            .iter()
            .position(|&c| c == i)
            .map(Feed::Caller)
            .ok_or_else(|| Failure::new(PJRT_CODE_INTERNAL, format!("input {i} has no feed"))),
        None => Err(Failure::new(PJRT_CODE_INTERNAL, format!("the program takes input {i}, which the model lacks"))),
    }
}

fn load_export(runtime: Arc<Runtime>, model: JaxExport, weights: Option<&SafeTensors>) -> Outcome<Model> {
    let platform = runtime.client.platform_name().to_owned();
    model.check_runnable(&platform)?;
    if model.nr_devices() > 1 {
        return Err(one_device_only(&format!("the model was exported for {} devices", model.nr_devices())));
    }
    let device = device(&runtime)?;
    let module_arguments = model.module_arguments();
    let used = |i: usize| module_arguments.contains(&ModuleArgument::Input(i));
    let mut resident = Vec::new();
    let weight_of = upload_weights(&runtime, &device, weights, &model.arguments(), used, &mut resident)?;
    let (caller_inputs, weight_shapes) = split_inputs(&weight_of);
    let mut arguments = Vec::with_capacity(module_arguments.len());
    for argument in &module_arguments {
        arguments.push(match *argument {
            ModuleArgument::PlatformIndex => {
                let index = model.platform_index(&platform)?.unwrap_or(0);
                let scalar = HostArray::from_elements(Vec::new(), &[index])?;
                resident.push(runtime.client.upload_with(&scalar, &pjrt_client::UploadOptions::new().device(&device))?);
                Feed::Resident(resident.len() - 1)
            }
            ModuleArgument::Input(i) => feed_of(i, &weight_of, &caller_inputs)?,
            // check_runnable refuses models with ordered effects, the only ones with tokens.
            other => return Err(Failure::new(PJRT_CODE_INTERNAL, format!("the module takes {other:?}"))),
        });
    }
    let dims = |d: &[Dim]| d.iter().map(|d| if let Dim::Fixed(n) = d { Some(*n) } else { None }).collect::<Vec<_>>();
    let element_type = |aval: &pjrt_formats::jax_export::Aval| {
        // check_runnable refuses avals without an element type.
        aval.element_type.ok_or_else(|| Failure::new(PJRT_CODE_INTERNAL, format!("{aval} has no element type")))
    };
    let mut inputs = Vec::with_capacity(caller_inputs.len());
    for &i in &caller_inputs {
        let aval = &model.in_avals()[i];
        inputs.push(spec(element_type(aval)?, &dims(&aval.dims), &format!("input {i} ({aval})"))?);
    }
    let mut outputs = Vec::with_capacity(model.out_avals().len());
    for (i, aval) in model.out_avals().iter().enumerate() {
        outputs.push(spec(element_type(aval)?, &dims(&aval.dims), &format!("output {i} ({aval})"))?);
    }
    let polymorphic = model.is_polymorphic();
    let static_shapes: Option<Vec<InputShape>> =
        model.in_avals().iter().map(|a| Some((a.element_type?, a.fixed_dims()?))).collect();
    let options = on_device(&runtime, model.compile_options(&platform))?;
    let model = Arc::new(model);
    let mut runner = Runner::new(model.clone(), &runtime.client).with_compile_options(options);
    if let Some(cache) = &runtime.compile_cache {
        runner = runner.with_compile_cache(cache.clone());
    }
    let executables = match static_shapes {
        Some(shapes) if !polymorphic => Executables::Static(runner.executable(&shapes)?),
        _ => Executables::Export(runner),
    };
    Ok(Model {
        runtime,
        executables,
        export: Some(model),
        arguments,
        resident,
        caller_inputs,
        weight_shapes,
        inputs: Specs(inputs),
        outputs: Specs(outputs),
    })
}

/// A program's arguments from its executable's parameters (no names: weights bind to them by
/// dtype and shape).
fn executable_arguments(shapes: &[pjrt_client::ArrayShape]) -> Vec<Argument> {
    shapes
        .iter()
        .map(|p| {
            let mut argument = Argument::unnamed();
            argument.element_type = p.element_type;
            argument.dims = Some(p.dims.iter().map(|&d| Some(d)).collect());
            argument
        })
        .collect()
}

/// The signature's tensor of argument or result `what`: an error when its type is unknown.
fn typed_spec(element_type: Option<ElementType>, dims: &[Option<i64>], what: &str) -> Outcome<pjrt_tensor> {
    let element_type = element_type.ok_or_else(|| {
        Failure::new(PJRT_CODE_UNIMPLEMENTED, format!("{what} is not a tensor of an element type PJRT has"))
    })?;
    spec(element_type, dims, what)
}

fn load_program(runtime: Arc<Runtime>, program: Program, weights: Option<&SafeTensors>) -> Outcome<Model> {
    let counts = program.module_counts();
    let devices = counts.num_replicas.unwrap_or(1).saturating_mul(counts.num_partitions.unwrap_or(1));
    if devices > 1 {
        return Err(one_device_only(&format!(
            "the program runs on {devices} devices (mhlo.num_replicas × num_partitions)"
        )));
    }
    let platform = runtime.client.platform_name().to_owned();
    let mut options = on_device(&runtime, CompileOptions::new().jax_defaults(&platform))?;
    if counts.uses_shardy {
        options = options.use_shardy_partitioner(true);
    }
    let text = match program.text().filter(|t| mlir_text::may_be_dynamic(t)) {
        Some(text) => Some(TextProgram::parse(text, "the program")?).filter(TextProgram::is_dynamic),
        None => None,
    };
    let owner = Arc::clone(&runtime);
    let device = device(&owner)?;
    let named = binding::program_arguments(&program);
    let (executables, arguments, outputs) = match text {
        Some(text) => {
            let arguments = named.unwrap_or_default();
            let mut outputs = Vec::new();
            for (i, (element_type, dims)) in text.result_types().into_iter().enumerate() {
                outputs.push(typed_spec(element_type, &dims, &format!("result {i} of @main"))?);
            }
            let executables = TextExecutables { program: text, options, compiled: Mutex::new(Vec::new()) };
            (Executables::Text(executables), arguments, outputs)
        }
        None => {
            let exe = match &runtime.compile_cache {
                Some(cache) => cache.compile(&runtime.client, &program, &options)?.executable,
                None => runtime.client.compile(&program, &options)?,
            };
            let parameters = exe.parameter_shapes().ok_or_else(|| {
                Failure::new(PJRT_CODE_UNIMPLEMENTED, "the plugin does not say the compiled program's parameters")
            })?;
            let arguments =
                named.filter(|a| a.len() == parameters.len()).unwrap_or_else(|| executable_arguments(parameters));
            let mut outputs = Vec::new();
            for (i, shape) in exe.output_shapes().iter().enumerate() {
                let dims: Vec<Option<i64>> = shape.dims.iter().map(|&d| Some(d)).collect();
                outputs.push(typed_spec(shape.element_type, &dims, &format!("output {i} ({shape})"))?);
            }
            (Executables::Static(Arc::new(exe)), arguments, outputs)
        }
    };
    finish_program(runtime, &device, executables, arguments, outputs, weights)
}

/// A program's model: every parameter an argument, fed by a weight or by the caller.
fn finish_program(
    runtime: Arc<Runtime>,
    device: &Device<'_>,
    executables: Executables,
    arguments: Vec<Argument>,
    outputs: Vec<pjrt_tensor>,
    weights: Option<&SafeTensors>,
) -> Outcome<Model> {
    let mut resident = Vec::new();
    let weight_of = upload_weights(&runtime, device, weights, &arguments, |_| true, &mut resident)?;
    let (caller_inputs, weight_shapes) = split_inputs(&weight_of);
    let feeds = (0..arguments.len()).map(|i| feed_of(i, &weight_of, &caller_inputs)).collect::<Outcome<Vec<_>>>()?;
    let mut inputs = Vec::with_capacity(caller_inputs.len());
    for &i in &caller_inputs {
        let argument = &arguments[i];
        let dims = argument.dims.clone().ok_or_else(|| {
            Failure::new(PJRT_CODE_UNIMPLEMENTED, format!("parameter {i} of the program has no known shape"))
        })?;
        inputs.push(typed_spec(argument.element_type, &dims, &format!("parameter {i} of the program"))?);
    }
    Ok(Model {
        runtime,
        executables,
        export: None,
        arguments: feeds,
        resident,
        caller_inputs,
        weight_shapes,
        inputs: Specs(inputs),
        outputs: Specs(outputs),
    })
}

fn load_artifact(runtime: Arc<Runtime>, artifact: &Artifact, weights: Option<&SafeTensors>) -> Outcome<Model> {
    let header = &artifact.header;
    let devices = header.num_replicas.saturating_mul(header.num_partitions);
    if devices > 1 {
        return Err(one_device_only(&format!("the artifact was compiled for {devices} devices")));
    }
    let exe = artifact.load(&runtime.client)?;
    let parameters = exe
        .parameter_shapes()
        .ok_or_else(|| Failure::new(PJRT_CODE_UNIMPLEMENTED, "the plugin does not say the artifact's parameters"))?;
    let arguments = executable_arguments(parameters);
    let mut outputs = Vec::new();
    for (i, shape) in exe.output_shapes().iter().enumerate() {
        let dims: Vec<Option<i64>> = shape.dims.iter().map(|&d| Some(d)).collect();
        outputs.push(typed_spec(shape.element_type, &dims, &format!("output {i} ({shape})"))?);
    }
    // The artifact's own device assignment decides where it runs: its weights go there.
    let device_id = exe.addressable_devices().first().map(|d| d.id()).transpose()?.ok_or_else(|| {
        Failure::new(PJRT_CODE_FAILED_PRECONDITION, "the artifact has no addressable device on this client")
    })?;
    let exe = Arc::new(exe);
    let owner = Arc::clone(&runtime);
    let device = owner
        .client
        .addressable_devices()
        .into_iter()
        .find(|d| d.id().ok() == Some(device_id))
        .ok_or_else(|| Failure::new(PJRT_CODE_INTERNAL, "the artifact's device is not the client's"))?;
    finish_program(runtime, &device, Executables::Static(exe), arguments, outputs, weights)
}
