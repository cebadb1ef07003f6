//! Loading a model: reading it, checking it can run here, uploading its weights, compiling a
//! static one (and a batched one's buckets).

use std::time::Instant;

use pjrt_client::{Client, DeviceAssignment, UploadOptions};
use pjrt_formats::binding;
use pjrt_formats::compile_cache::CompileCache;
use pjrt_formats::jax_export::{Dim, JaxExport, Runner};
use pjrt_formats::safetensors::SafeTensors;

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
        let model = JaxExport::read(&config.program).map_err(|e| load_error(&config, e))?;
        model.check_runnable(client.platform_name()).map_err(|e| load_error(&config, e))?;
        if model.nr_devices() > 1 {
            return Err(load_error(
                &config,
                format!("the model was exported for {} devices: pjrt serve runs one-device models", model.nr_devices()),
            ));
        }
        let devices = client.addressable_devices();
        let replicas = replicas.max(1);
        if devices.len() < replicas {
            return Err(load_error(
                &config,
                format!("{replicas} replicas need {replicas} devices, the client has {}", devices.len()),
            ));
        }
        let (mut weight_hosts, mut weight_shapes) = (Vec::new(), Vec::new());
        let mut weight_of = vec![None; model.in_avals().len()];
        if let Some(path) = &config.params {
            let file = SafeTensors::open(path).map_err(|e| load_error(&config, e))?;
            // Bound by name (Python's safetensors writer sorts by dtype, then name: the file's
            // order is not the model's); by dtype and shape only when that is unambiguous.
            let tensors = binding::safetensors_tensors(&file);
            let bound = model
                .bind_params(&tensors)
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
                    .check_npy_input(i, &array)
                    .map_err(|e| load_error(&config, context(format!("weight {name:?}"), e)))?;
                let host = array.to_host_array(model.in_avals()[i].element_type).map_err(|e| load_error(&config, e))?;
                weight_of[i] = Some(weight_hosts.len());
                weight_shapes.push((host.element_type(), host.dims().to_vec()));
                weight_hosts.push(host);
            }
        }
        let request_inputs: Vec<usize> = (0..weight_of.len()).filter(|&i| weight_of[i].is_none()).collect();
        let spec = |i: usize, aval: &pjrt_formats::jax_export::Aval, names: &[String], prefix: &str| {
            let datatype = aval.element_type.and_then(Datatype::of).ok_or_else(|| {
                load_error(
                    &config,
                    format!("{prefix} {i} is {aval}, a type the inference protocol has no datatype for"),
                )
            })?;
            let name = names.get(i).cloned().unwrap_or_else(|| format!("{prefix}{i}"));
            Ok::<_, ServeError>(TensorSpec { name, datatype, shape: dims_of(&aval.dims) })
        };
        let inputs = request_inputs
            .iter()
            .enumerate()
            .map(|(i, &input)| spec(i, &model.in_avals()[input], &config.input_names, "input"))
            .collect::<Result<Vec<_>, _>>()?;
        let outputs = model
            .out_avals()
            .iter()
            .enumerate()
            .map(|(i, aval)| spec(i, aval, &config.output_names, "output"))
            .collect::<Result<Vec<_>, _>>()?;
        let polymorphic = model.is_polymorphic();
        let batched = match &config.batching {
            Some(batching) => check_batchable(&model, &request_inputs, batching).map_err(|m| load_error(&config, m))?,
            None => Vec::new(),
        };
        let request_dims: Vec<&[Dim]> = request_inputs.iter().map(|&i| &model.in_avals()[i].dims[..]).collect();
        let signatures =
            crate::shapes::Signatures::new(&config.shapes, &request_dims).map_err(|m| load_error(&config, m))?;
        let model = std::sync::Arc::new(model);
        let mut built = Vec::with_capacity(replicas);
        for device in &devices[..replicas] {
            let mut runner = Runner::new(model.clone(), client);
            let mut requested = Runner::new(model.clone(), client).with_capacity(config.shapes.max_request_shapes);
            if replicas > 1 {
                // Each replica's executables are compiled for its own device.
                let id = device.id().map_err(|e| load_error(&config, e))?;
                let assignment =
                    DeviceAssignment::new(vec![vec![i64::from(id)]]).map_err(|e| load_error(&config, e))?;
                let options = model.compile_options(client.platform_name()).device_assignment(&assignment);
                runner = runner.with_compile_options(options.clone());
                requested = requested.with_compile_options(options);
            }
            if let Some(cache) = &cache {
                runner = runner.with_compile_cache(cache.clone());
            }
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
        Ok(ServedModel { load_ms: started.elapsed().as_secs_f64() * 1e3, ..served })
    }
}

/// Whether requests to `model` (which give its inputs `request_inputs`; the weights file gives
/// the others) can be batched: every output leads with the symbolic first dimension of an
/// input. Which request inputs lead with it (they are concatenated; the others must agree
/// across a batch).
fn check_batchable(
    model: &JaxExport,
    request_inputs: &[usize],
    batching: &BatchingConfig,
) -> Result<Vec<bool>, String> {
    let first = |dims: &[Dim]| match dims.first() {
        Some(Dim::Symbolic(s)) => Some(s.clone()),
        _ => None,
    };
    let inputs: Vec<&pjrt_formats::jax_export::Aval> = request_inputs.iter().map(|&i| &model.in_avals()[i]).collect();
    let Some(symbol) = inputs.iter().find_map(|a| first(&a.dims)) else {
        return Err(
            "batching needs an input whose first dimension is symbolic (exported with polymorphic_shapes \"b, ...\")"
                .into(),
        );
    };
    for (i, aval) in model.out_avals().iter().enumerate() {
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
