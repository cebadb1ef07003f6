//! A model being served: a `jax.export` model on one device of a client, its weights uploaded
//! once, its executables kept per input signature: those compiled at load through the compile
//! cache when there is one, those a shape-polymorphic model compiles for requests' new shapes
//! apart and in memory only (bounded: [`crate::config::ShapeLimits`]).

use std::path::PathBuf;
use std::time::Instant;

use pjrt_client::{Buffer, Client, DeviceAssignment, ExecuteOptions, HostArray, UploadOptions};
use pjrt_formats::binding;
use pjrt_formats::compile_cache::CompileCache;
use pjrt_formats::jax_export::{Dim, JaxExport, Runner};
use pjrt_formats::safetensors::SafeTensors;

use crate::config::{BatchingConfig, ModelConfig};
use crate::datatype::Datatype;
use crate::error::ServeError;
use crate::protocol::{InputTensor, OutputTensor, RequestedOutput};

/// One tensor of a model's signature, as the protocol's metadata gives it: `-1` for a
/// symbolic dimension.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorSpec {
    /// Its name (`input0`, ... unless the model's config names it).
    pub name: String,
    /// Its datatype.
    pub datatype: Datatype,
    /// Its shape, `-1` where the dimension is symbolic.
    pub shape: Vec<i64>,
}

/// The model on one device: its executables and its weights there.
struct Replica {
    /// The executables compiled at load (through the compile cache).
    runner: Runner,
    /// Those compiled for requests' shapes (kept in memory only).
    requested: Runner,
    /// The weights, uploaded to the device once (in the order of `ServedModel::weight_of`'s
    /// indices).
    weight_buffers: Vec<Buffer>,
}

/// A loaded model.
pub struct ServedModel {
    config: ModelConfig,
    /// One per device it serves on (the client's first `replicas` addressable devices).
    replicas: Vec<Replica>,
    client: Client,
    /// For each input of the model, the weight that feeds it (an index into the weights), or
    /// `None` where a request gives it: bound by name ([`pjrt_formats::binding`]).
    weight_of: Vec<Option<usize>>,
    /// The model inputs a request gives, in order (those no weight feeds).
    request_inputs: Vec<usize>,
    /// The weights' shapes, for the executable lookup.
    weight_shapes: Vec<(pjrt_client::ElementType, Vec<i64>)>,
    inputs: Vec<TensorSpec>,
    outputs: Vec<TensorSpec>,
    /// For a batched model: which request inputs lead with the batch dimension.
    batched: Vec<bool>,
    /// The signatures compiled, and what requests may have compiled.
    signatures: crate::shapes::Signatures,
    /// How long loading took (read, weights upload, first compile of a static model).
    load_ms: f64,
}

fn dims_of(dims: &[Dim]) -> Vec<i64> {
    dims.iter().map(|d| if let Dim::Fixed(n) = d { *n } else { -1 }).collect()
}

fn load_error(config: &ModelConfig, message: impl std::fmt::Display) -> ServeError {
    ServeError::Load { model: config.name.clone(), message: message.to_string() }
}

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
                .map_err(|e| load_error(&config, format_args!("params {}: {e}", path.display())))?;
            if let Some(note) = bound.note() {
                tracing::warn!("model {:?}: params {}: {note}", config.name, path.display());
            }
            for (i, tensor) in bound.tensors().iter().enumerate() {
                let Some(t) = *tensor else { continue };
                let name = tensors[t].name;
                let array = file
                    .tensor(name)
                    .and_then(|view| view.to_npy())
                    .map_err(|e| load_error(&config, format_args!("weight {name:?}: {e}")))?;
                model
                    .check_npy_input(i, &array)
                    .map_err(|e| load_error(&config, format_args!("weight {name:?}: {e}")))?;
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
                            .map_err(|e| load_error(&served.config, format_args!("batch of {bucket}: {e}")))?;
                    }
                    served.signatures.pin(shapes);
                }
            }
        }
        Ok(ServedModel { load_ms: started.elapsed().as_secs_f64() * 1e3, ..served })
    }

    /// The model's name.
    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// The model's version.
    pub fn version(&self) -> &str {
        &self.config.version
    }

    /// The inputs a request gives (the weights file's are not among them).
    pub fn inputs(&self) -> &[TensorSpec] {
        &self.inputs
    }

    /// The outputs.
    pub fn outputs(&self) -> &[TensorSpec] {
        &self.outputs
    }

    /// How its requests are batched, if they are.
    pub fn batching(&self) -> Option<&BatchingConfig> {
        self.config.batching.as_ref()
    }

    /// For a batched model: a request's rows (its batched inputs' common first dimension) and
    /// its batch key (the rest of each batched input's shape, the whole of each other input:
    /// requests batch together only where their keys agree).
    pub(crate) fn batch_rows(&self, inputs: &[HostArray]) -> Result<(usize, Vec<BatchKeyPart>), ServeError> {
        let max = self.config.batching.as_ref().map_or(0, |b| b.max_batch_size);
        let bad = |m: String| ServeError::BadRequest(format!("model {:?}: {m}", self.config.name));
        let rows: Vec<i64> = inputs
            .iter()
            .zip(&self.batched)
            .filter(|(_, &b)| b)
            .map(|(a, _)| a.dims().first().copied().unwrap_or(0))
            .collect();
        if rows.windows(2).any(|w| w[0] != w[1]) {
            return Err(bad(format!("its batched inputs share their first dimension, but the request gives {rows:?}")));
        }
        let rows = rows.first().copied().unwrap_or(0) as usize;
        if rows == 0 || rows > max {
            return Err(bad(format!("a request gives 1 to {max} rows (max_batch_size), not {rows}")));
        }
        let key = inputs
            .iter()
            .zip(&self.batched)
            .map(|(a, &batched)| {
                if batched {
                    BatchKeyPart::Rows(a.dims()[1..].to_vec())
                } else {
                    BatchKeyPart::Whole(a.dims().to_vec(), a.data().to_vec())
                }
            })
            .collect();
        Ok((rows, key))
    }

    /// How many executables are compiled (one per input signature seen).
    pub fn executables(&self) -> usize {
        self.replicas.iter().map(|r| r.runner.cached() + r.requested.cached()).sum()
    }

    /// Every input's shape for these request inputs (in the model's order): the signature an
    /// executable is compiled for.
    pub(crate) fn signature(&self, inputs: &[HostArray]) -> crate::shapes::Signature {
        self.shapes(inputs)
    }

    /// What it has compiled, and may compile for requests.
    pub(crate) fn signatures(&self) -> &crate::shapes::Signatures {
        &self.signatures
    }

    /// Compiles `signature` on every replica for requests (kept in memory, not in the compile
    /// cache). Blocks: call it off the async runtime, outside the device's execution slots.
    pub(crate) fn compile_for_requests(&self, signature: &crate::shapes::Signature) -> Result<(), ServeError> {
        for replica in &self.replicas {
            replica.requested.executable(signature).map_err(|e| {
                ServeError::BadRequest(format!("the input shapes do not fit model {:?}: {e}", self.config.name))
            })?;
        }
        self.signatures.add(signature.clone());
        Ok(())
    }

    /// How long loading took, in milliseconds: reading, the weights' upload and, for a model
    /// of static shapes, its compile (or its load from the compile cache).
    pub fn load_ms(&self) -> f64 {
        self.load_ms
    }

    /// Where the program was read from.
    pub fn program_path(&self) -> &PathBuf {
        &self.config.program
    }

    /// Every input's shape, in the model's order: the weights' and `inputs`' (the model's own
    /// for a static one when `inputs` is empty).
    fn shapes(&self, inputs: &[HostArray]) -> Vec<(pjrt_client::ElementType, Vec<i64>)> {
        let request = if inputs.is_empty() {
            self.inputs.iter().map(|spec| (spec.datatype.element_type(), spec.shape.clone())).collect()
        } else {
            inputs.iter().map(|a| (a.element_type(), a.dims().to_vec())).collect()
        };
        self.merged_shapes(request)
    }

    /// The weights' shapes and a request's (`request`, in the order of [`ServedModel::inputs`])
    /// in the model's order.
    fn merged_shapes(
        &self,
        request: Vec<(pjrt_client::ElementType, Vec<i64>)>,
    ) -> Vec<(pjrt_client::ElementType, Vec<i64>)> {
        let mut request = request.into_iter();
        self.weight_of
            .iter()
            .filter_map(|weight| match weight {
                Some(w) => self.weight_shapes.get(*w).cloned(),
                None => request.next(),
            })
            .collect()
    }

    /// Matches a request's inputs to the model's, by name, checking each one's datatype and
    /// shape: the arrays in the model's order.
    pub fn arrange(&self, mut given: Vec<InputTensor>) -> Result<Vec<HostArray>, ServeError> {
        let bad = |m: String| ServeError::BadRequest(format!("model {:?}: {m}", self.config.name));
        if let Some(extra) = given.iter().find(|t| !self.inputs.iter().any(|s| s.name == t.name)) {
            let names: Vec<&str> = self.inputs.iter().map(|s| s.name.as_str()).collect();
            return Err(bad(format!("it has no input {:?} (its inputs: {})", extra.name, names.join(", "))));
        }
        let mut arrays = Vec::with_capacity(self.inputs.len());
        for (i, spec) in self.inputs.iter().enumerate() {
            let matching = given.iter().filter(|t| t.name == spec.name).count();
            if matching != 1 {
                return Err(bad(format!(
                    "input {:?} ({} {:?}) is given {matching} times, not once",
                    spec.name, spec.datatype, spec.shape
                )));
            }
            let at = given.iter().position(|t| t.name == spec.name).expect("counted above");
            let tensor = given.swap_remove(at);
            if tensor.datatype != spec.datatype {
                return Err(bad(format!(
                    "input {:?} is {}, but the model takes {}",
                    spec.name, tensor.datatype, spec.datatype
                )));
            }
            let fits = tensor.shape.len() == spec.shape.len()
                && tensor.shape.iter().zip(&spec.shape).all(|(&d, &want)| want < 0 || d == want);
            if !fits {
                return Err(bad(format!(
                    "input {:?} has shape {:?}, but the model takes {:?} (-1: any size)",
                    spec.name, tensor.shape, spec.shape
                )));
            }
            let model = self.replicas[0].runner.model();
            model
                .check_input(self.request_inputs[i], spec.datatype.element_type(), &tensor.shape)
                .map_err(|e| bad(format!("input {:?}: {e}", spec.name)))?;
            let array = HostArray::new(spec.datatype.element_type(), tensor.shape, tensor.data)
                .map_err(|e| bad(format!("input {:?}: {e}", spec.name)))?;
            arrays.push(array);
        }
        Ok(arrays)
    }

    /// Runs the model on `inputs` (in the model's order, from [`ServedModel::arrange`]) and
    /// returns the outputs `wanted` (every one when empty; `binary` as each asks, else
    /// `binary_default`). Blocks: call it off the async runtime.
    pub fn infer(
        &self,
        inputs: Vec<HostArray>,
        wanted: &[RequestedOutput],
        binary_default: bool,
        replica: usize,
    ) -> Result<Vec<OutputTensor>, ServeError> {
        self.check_wanted(wanted)?;
        Ok(select_outputs(self.run(inputs, replica)?, wanted, binary_default))
    }

    /// Checks that every output asked for exists.
    pub fn check_wanted(&self, wanted: &[RequestedOutput]) -> Result<(), ServeError> {
        for w in wanted {
            if !self.outputs.iter().any(|o| o.name == w.name) {
                let names: Vec<&str> = self.outputs.iter().map(|o| o.name.as_str()).collect();
                return Err(ServeError::BadRequest(format!(
                    "model {:?} has no output {:?} (its outputs: {})",
                    self.config.name,
                    w.name,
                    names.join(", ")
                )));
            }
        }
        Ok(())
    }

    /// How many devices it is served on.
    pub fn replicas(&self) -> usize {
        self.replicas.len()
    }

    /// Runs the model on `inputs` (in the model's order) on replica `replica` (taken modulo the
    /// replicas): every output, in order.
    pub(crate) fn run(&self, inputs: Vec<HostArray>, replica: usize) -> Result<Vec<OutputTensor>, ServeError> {
        let replica = &self.replicas[replica % self.replicas.len()];
        let model = replica.runner.model();
        let shapes = self.shapes(&inputs);
        let runner = if self.signatures.is_pinned(&shapes) { &replica.runner } else { &replica.requested };
        let exe = runner.executable(&shapes).map_err(|e| {
            if model.is_polymorphic() {
                ServeError::BadRequest(format!("the input shapes do not fit model {:?}: {e}", self.config.name))
            } else {
                ServeError::Internal(e.to_string())
            }
        })?;
        let device = exe
            .addressable_devices()
            .into_iter()
            .next()
            .ok_or_else(|| ServeError::Internal("the compiled model has no addressable device".into()))?;
        let upload = |array: &HostArray| {
            self.client
                .upload_with(array, &UploadOptions::new().device(&device))
                .map_err(|e| ServeError::Internal(e.to_string()))
        };
        // The module's arguments: the platform index (multi-platform exports), then the kept
        // inputs: weights as uploaded at load, the request's uploaded now.
        let mut uploaded = Vec::with_capacity(inputs.len() + 1);
        let platform_index =
            model.platform_index(self.client.platform_name()).map_err(|e| ServeError::Internal(e.to_string()))?;
        if let Some(index) = platform_index {
            let scalar =
                HostArray::from_elements(Vec::new(), &[index]).map_err(|e| ServeError::Internal(e.to_string()))?;
            uploaded.push((usize::MAX, upload(&scalar)?));
        }
        // The request's inputs, by model input index.
        let position = |i: usize| self.request_inputs.iter().position(|&r| r == i);
        for &i in model.module_kept_var_idx() {
            if let Some(k) = position(i) {
                uploaded.push((i, upload(&inputs[k])?));
            }
        }
        let mut arguments: Vec<&Buffer> = Vec::with_capacity(uploaded.len() + replica.weight_buffers.len());
        if platform_index.is_some() {
            arguments.push(&uploaded[0].1);
        }
        for &i in model.module_kept_var_idx() {
            match self.weight_of.get(i).copied().flatten() {
                Some(w) => arguments.push(&replica.weight_buffers[w]),
                None => {
                    let (_, buffer) = uploaded
                        .iter()
                        .find(|(j, _)| *j == i)
                        .ok_or_else(|| ServeError::Internal(format!("model input {i} has no value")))?;
                    arguments.push(buffer);
                }
            }
        }
        let results =
            exe.execute(&arguments, &ExecuteOptions::new()).map_err(|e| ServeError::Internal(e.to_string()))?;
        if results.len() != self.outputs.len() {
            return Err(ServeError::Internal(format!(
                "the module returned {} outputs but the export lists {}",
                results.len(),
                self.outputs.len()
            )));
        }
        let mut outputs = Vec::with_capacity(self.outputs.len());
        for (spec, buffer) in self.outputs.iter().zip(results.iter()) {
            let host = buffer.to_host_array().map_err(|e| ServeError::Internal(e.to_string()))?;
            let (element_type, shape, data) = host.into_parts();
            if element_type != spec.datatype.element_type() {
                return Err(ServeError::Internal(format!(
                    "output {:?} came back as {element_type}, but the export says {}",
                    spec.name, spec.datatype
                )));
            }
            outputs.push(OutputTensor { name: spec.name.clone(), datatype: spec.datatype, shape, data, binary: false });
        }
        Ok(outputs)
    }
}

/// One input's part of a batch key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum BatchKeyPart {
    /// A batched input: its shape after the rows.
    Rows(Vec<i64>),
    /// An input every request of a batch gives alike: its shape and bytes.
    Whole(Vec<i64>, Vec<u8>),
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

/// The outputs `wanted` of `all` (every one when `wanted` is empty), each binary as it asks,
/// else as `binary_default`.
pub(crate) fn select_outputs(
    all: Vec<OutputTensor>,
    wanted: &[RequestedOutput],
    binary_default: bool,
) -> Vec<OutputTensor> {
    all.into_iter()
        .filter_map(|mut o| {
            o.binary =
                if wanted.is_empty() { binary_default } else { wanted.iter().find(|w| w.name == o.name)?.binary };
            Some(o)
        })
        .collect()
}

impl std::fmt::Debug for ServedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServedModel")
            .field("name", &self.config.name)
            .field("version", &self.config.version)
            .field("inputs", &self.inputs)
            .field("outputs", &self.outputs)
            .finish_non_exhaustive()
    }
}
