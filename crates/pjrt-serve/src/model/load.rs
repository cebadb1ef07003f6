//! Loading a model: reading it, checking it can run here, uploading its weights, compiling a
//! static one (and a batched one's buckets).

use std::time::Instant;

use pjrt_client::{Client, DeviceAssignment, UploadOptions};
use pjrt_formats::binding;
use pjrt_formats::compile_cache::CompileCache;
use pjrt_formats::jax_export::{Dim, Runner};
use pjrt_formats::safetensors::SafeTensors;

use super::program::{self, ModelProgram, Param};
use super::warmup;
use super::{dims_of, load_error, Replica, ServedModel, TensorSpec};
use crate::config::{BatchingConfig, ModelConfig};
use crate::datatype::Datatype;
use crate::error::{context, ServeError};

impl ServedModel {
    /// Loads the model `config` names onto `client`'s first `replicas` addressable devices:
    /// reads it, checks that it can run there, uploads its weights to each and, for a model of
    /// static shapes (or the buckets of a batched one), compiles it for each.
    pub fn load(
        client: &Client,
        config: ModelConfig,
        cache: Option<CompileCache>,
        replicas: usize,
    ) -> Result<ServedModel, ServeError> {
        let started = Instant::now();
        let replicas = replicas.max(1);
        let model = ModelProgram::read(&config.program, client, replicas).map_err(|e| load_error(&config, e))?;
        let devices = client.addressable_devices();
        if devices.len() < replicas {
            return Err(load_error(
                &config,
                format!("{replicas} replicas need {replicas} devices, the client has {}", devices.len()),
            ));
        }
        let (in_params, out_params) = (model.inputs(), model.outputs());
        let (mut weight_hosts, mut weight_shapes) = (Vec::new(), Vec::new());
        let mut weight_of = vec![None; in_params.len()];
        if let Some(path) = &config.params {
            let file = SafeTensors::open(path).map_err(|e| load_error(&config, e))?;
            // Bound by name (Python's safetensors writer sorts by dtype, then name: the file's
            // order is not the model's); by dtype and shape only when that is unambiguous.
            let tensors = binding::safetensors_tensors(&file);
            let bound = model
                .bind(&tensors)
                .map_err(|e| load_error(&config, context(format!("params {}", path.display()), e)))?;
            if let Some(note) = bound.note() {
                tracing::warn!("model {:?}: params {}: {note}", config.name, path.display());
            }
            for (i, tensor) in bound.tensors().iter().enumerate() {
                let Some(t) = *tensor else { continue };
                let name = tensors[t].name;
                let array = file
                    .tensor(name)
                    .and_then(|view| view.to_npy())
                    .map_err(|e| load_error(&config, context(format!("weight {name:?}"), e)))?;
                model
                    .check_weight(i, &array)
                    .map_err(|e| load_error(&config, context(format!("weight {name:?}"), e)))?;
                let host = array.to_host_array(in_params[i].element_type).map_err(|e| load_error(&config, e))?;
                weight_of[i] = Some(weight_hosts.len());
                weight_shapes.push((host.element_type(), host.dims().to_vec()));
                weight_hosts.push(host);
            }
        }
        let request_inputs: Vec<usize> = (0..weight_of.len()).filter(|&i| weight_of[i].is_none()).collect();
        // A request calls an input by its config's name, else the program's (an MLIR
        // program's arguments, when each has its own), else `input0`, ...
        let program_names: Vec<Option<String>> = {
            let names = model.input_names();
            let names: Vec<Option<String>> = request_inputs.iter().map(|&i| names.get(i).cloned().flatten()).collect();
            let unique = names.iter().flatten().collect::<std::collections::HashSet<_>>().len() == names.len();
            if unique {
                names
            } else {
                vec![None; request_inputs.len()]
            }
        };
        let spec = |i: usize, param: &Param, names: &[String], fallback: Option<&String>, prefix: &str| {
            let datatype = param.element_type.and_then(Datatype::of).ok_or_else(|| {
                load_error(
                    &config,
                    format!("{prefix} {i} is {param}, a type the inference protocol has no datatype for"),
                )
            })?;
            let name = names.get(i).or(fallback).cloned().unwrap_or_else(|| format!("{prefix}{i}"));
            Ok::<_, ServeError>(TensorSpec { name, datatype, shape: dims_of(&param.dims) })
        };
        let inputs = request_inputs
            .iter()
            .enumerate()
            .map(|(i, &input)| spec(i, &in_params[input], &config.input_names, program_names[i].as_ref(), "input"))
            .collect::<Result<Vec<_>, _>>()?;
        let outputs = out_params
            .iter()
            .enumerate()
            .map(|(i, param)| spec(i, param, &config.output_names, None, "output"))
            .collect::<Result<Vec<_>, _>>()?;
        let polymorphic = model.is_polymorphic();
        let batched = match &config.batching {
            Some(batching) => check_batchable(&model, &in_params, &out_params, &request_inputs, batching)
                .map_err(|m| load_error(&config, m))?,
            None => Vec::new(),
        };
        // An MLIR program's `?` dimensions are named `INPUT.AXIS` (for `symbolic_dims`).
        let request_dims: Vec<Vec<Dim>> = request_inputs
            .iter()
            .zip(&inputs)
            .map(|(&i, spec)| {
                let dims = in_params[i].dims.iter().enumerate();
                dims.map(|(axis, d)| match d {
                    Dim::Symbolic(s) if s == program::UNNAMED => Dim::Symbolic(format!("{}.{axis}", spec.name)),
                    other => other.clone(),
                })
                .collect()
            })
            .collect();
        let request_dims: Vec<&[Dim]> = request_dims.iter().map(Vec::as_slice).collect();
        let signatures =
            crate::shapes::Signatures::new(&config.shapes, &request_dims).map_err(|m| load_error(&config, m))?;
        // With warm-up, the buckets `symbolic_dims` size lists make are compiled at load too
        // (a batched model's are its batch sizes).
        let size_buckets = match (&config.batching, config.warmup.enabled) {
            (None, true) => warmup::size_buckets(&request_dims, &config.shapes),
            _ => Vec::new(),
        };
        let model = std::sync::Arc::new(model);
        let mut built = Vec::with_capacity(replicas);
        for device in &devices[..replicas] {
            let mut options = None;
            if replicas > 1 {
                // Each replica's executables are compiled for its own device.
                let id = device.id().map_err(|e| load_error(&config, e))?;
                let assignment =
                    DeviceAssignment::new(vec![vec![i64::from(id)]]).map_err(|e| load_error(&config, e))?;
                options = Some(model.compile_options(client.platform_name()).device_assignment(&assignment));
            }
            let runner = model.executables(client, options.clone(), cache.clone(), None, true);
            let requested = model.executables(client, options, None, Some(config.shapes.max_request_shapes), false);
            let mut weight_buffers = Vec::with_capacity(weight_hosts.len());
            for host in &weight_hosts {
                let buffer = client
                    .upload_with(host, &UploadOptions::new().device(device))
                    .map_err(|e| load_error(&config, e))?;
                weight_buffers.push(buffer);
            }
            built.push(Replica { runner, requested, weight_buffers });
        }
        drop(weight_hosts);
        let mut served = ServedModel {
            config,
            program: model,
            replicas: built,
            client: client.clone(),
            weight_of,
            request_inputs,
            weight_shapes,
            inputs,
            outputs,
            batched,
            signatures,
            load_ms: 0.0,
            warmed: None,
        };
        if !polymorphic {
            let shapes = served.shapes(&[]);
            for replica in &served.replicas {
                replica.runner.executable(&shapes).map_err(|e| load_error(&served.config, e))?;
            }
            served.signatures.pin(shapes);
        }
        // A batched model whose other dimensions are fixed has one executable per bucket:
        // compiled now (or loaded from the compile cache), not on the first request of each size.
        if let Some(batching) = &served.config.batching {
            let fixed = |(spec, &batched): (&TensorSpec, &bool)| {
                let rest = if batched { &spec.shape[1..] } else { &spec.shape[..] };
                rest.iter().all(|&d| d >= 0)
            };
            if served.inputs.iter().zip(&served.batched).all(fixed) {
                for bucket in batching.buckets() {
                    let mut request = Vec::with_capacity(served.inputs.len());
                    for (spec, &batched) in served.inputs.iter().zip(&served.batched) {
                        let mut dims = spec.shape.clone();
                        if batched {
                            dims[0] = bucket as i64;
                        }
                        request.push((spec.datatype.element_type(), dims));
                    }
                    let shapes = served.merged_shapes(request);
                    for replica in &served.replicas {
                        replica
                            .runner
                            .executable(&shapes)
                            .map_err(|e| load_error(&served.config, context(format!("batch of {bucket}"), e)))?;
                    }
                    served.signatures.pin(shapes);
                }
            }
        }
        for bucket in size_buckets {
            let request = served.inputs.iter().zip(bucket).map(|(spec, dims)| (spec.datatype.element_type(), dims));
            let shapes = served.merged_shapes(request.collect());
            for replica in &served.replicas {
                replica
                    .runner
                    .executable(&shapes)
                    .map_err(|e| load_error(&served.config, context(format!("symbolic_dims sizes {shapes:?}"), e)))?;
            }
            served.signatures.pin(shapes);
        }
        if served.config.warmup.enabled {
            let samples = served.read_samples()?;
            // Samples for every request input: their shapes are one more signature.
            if samples.iter().all(Option::is_some) && !samples.is_empty() {
                let request = samples.iter().flatten().map(|a| (a.element_type(), a.dims().to_vec()));
                let shapes = served.merged_shapes(request.collect());
                for (k, sample) in samples.iter().flatten().enumerate() {
                    served
                        .signatures
                        .check_dims(k, &served.inputs[k].name, sample.dims())
                        .map_err(|m| load_error(&served.config, format!("warmup sample: {m}")))?;
                }
                for replica in &served.replicas {
                    replica
                        .runner
                        .executable(&shapes)
                        .map_err(|e| load_error(&served.config, context("the warmup samples' shapes", e)))?;
                }
                served.signatures.pin(shapes);
            }
            let warmed = served.warm_up(&samples)?;
            tracing::info!(
                "model {:?}: warmed up in {:.1} ms ({} executions: each signature compiled at load, on each device)",
                served.config.name,
                warmed.elapsed.as_secs_f64() * 1e3,
                warmed.executions
            );
            served.warmed = Some(warmed);
        }
        Ok(ServedModel { load_ms: started.elapsed().as_secs_f64() * 1e3, ..served })
    }
}

/// Whether requests to `model` (which give its inputs `request_inputs`; the weights file gives
/// the others) can be batched: every output leads with the symbolic first dimension of an
/// input. Which request inputs lead with it (they are concatenated; the others must agree
/// across a batch).
fn check_batchable(
    model: &ModelProgram,
    in_params: &[Param],
    out_params: &[Param],
    request_inputs: &[usize],
    batching: &BatchingConfig,
) -> Result<Vec<bool>, String> {
    if !model.is_export() {
        return Err("batching needs a jax.export model exported with a symbolic batch dimension (polymorphic_shapes \
                    \"b, ...\"): an MLIR program's `?` dimensions do not say which output dimension is which input's"
            .into());
    }
    let first = |dims: &[Dim]| match dims.first() {
        Some(Dim::Symbolic(s)) => Some(s.clone()),
        _ => None,
    };
    let inputs: Vec<&Param> = request_inputs.iter().map(|&i| &in_params[i]).collect();
    let Some(symbol) = inputs.iter().find_map(|a| first(&a.dims)) else {
        return Err(
            "batching needs an input whose first dimension is symbolic (exported with polymorphic_shapes \"b, ...\")"
                .into(),
        );
    };
    for (i, aval) in out_params.iter().enumerate() {
        if first(&aval.dims).as_ref() != Some(&symbol) {
            return Err(format!("batching needs every output to lead with dimension {symbol:?}; output {i} is {aval}"));
        }
    }
    if batching.buckets().len() > Runner::DEFAULT_CAPACITY / 2 {
        return Err(format!(
            "{} batch sizes are too many to keep compiled: give fewer preferred_batch_sizes",
            batching.buckets().len()
        ));
    }
    // Inputs that lead with the batch dimension are concatenated; the others must be the same
    // in every request of a batch.
    Ok(inputs.iter().map(|a| first(&a.dims).as_ref() == Some(&symbol)).collect())
}
