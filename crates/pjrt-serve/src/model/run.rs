//! Running a model: the executable for a request's shapes (compiled for requests when new),
//! its arguments uploaded, the outputs downloaded.

use std::time::Instant;

use pjrt_client::{Buffer, ExecuteOptions, HostArray, HostSource, UploadOptions};
use pjrt_formats::jax_export::ModuleArgument;

use super::{select_outputs, RequestArray, ServedModel};
use crate::error::ServeError;
use crate::protocol::{OutputTensor, RequestedOutput};
use crate::statistics::Phases;

impl ServedModel {
    /// Every input's shape for these request inputs (in the model's order): the signature an
    /// executable is compiled for.
    pub(crate) fn signature(&self, inputs: &[RequestArray]) -> crate::shapes::Signature {
        self.shapes(inputs)
    }

    /// Compiles `signature` on every replica for requests (kept in memory, not in the compile
    /// cache). Blocks: call it off the async runtime, outside the device's execution slots.
    pub(crate) fn compile_for_requests(&self, signature: &crate::shapes::Signature) -> Result<(), ServeError> {
        for replica in &self.replicas {
            replica
                .requested
                .executable(signature)
                .map_err(|e| ServeError::Unfit { model: self.config.name.clone(), source: std::sync::Arc::from(e) })?;
        }
        self.signatures.add(signature.clone());
        Ok(())
    }

    /// Every input's shape, in the model's order: the weights' and `inputs`' (the model's own
    /// for a static one when `inputs` is empty).
    pub(super) fn shapes(&self, inputs: &[RequestArray]) -> Vec<(pjrt_client::ElementType, Vec<i64>)> {
        let request = if inputs.is_empty() {
            self.inputs.iter().map(|spec| (spec.datatype.element_type(), spec.shape.clone())).collect()
        } else {
            inputs.iter().map(|a| (a.element_type(), a.dims().to_vec())).collect()
        };
        self.merged_shapes(request)
    }

    /// The weights' shapes and a request's (`request`, in the order of [`ServedModel::inputs`])
    /// in the model's order.
    pub(super) fn merged_shapes(
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
        let inputs = inputs.into_iter().map(RequestArray::from).collect();
        self.infer_held(inputs, wanted, binary_default, replica, &mut Phases::default())
    }

    /// [`ServedModel::infer`] for inputs as the server holds them (from
    /// [`ServedModel::arrange_held`]): their bytes uploaded from where they are. `phases` is
    /// given the run's (for the statistics).
    pub(crate) fn infer_held(
        &self,
        inputs: Vec<RequestArray>,
        wanted: &[RequestedOutput],
        binary_default: bool,
        replica: usize,
        phases: &mut Phases,
    ) -> Result<Vec<OutputTensor>, ServeError> {
        self.check_wanted(wanted)?;
        Ok(select_outputs(self.run(inputs, replica, phases)?, wanted, binary_default))
    }

    /// Runs the model on `inputs` (in the model's order) on replica `replica` (taken modulo the
    /// replicas): every output, in order. `phases` is given how long its inputs took to reach
    /// the device (the executable found, the uploads), its execution and its outputs' download.
    pub(crate) fn run(
        &self,
        inputs: Vec<RequestArray>,
        replica: usize,
        phases: &mut Phases,
    ) -> Result<Vec<OutputTensor>, ServeError> {
        let started = Instant::now();
        let replica = &self.replicas[replica % self.replicas.len()];
        let shapes = self.shapes(&inputs);
        let runner = if self.signatures.is_pinned(&shapes) { &replica.runner } else { &replica.requested };
        let exe = runner.executable(&shapes).map_err(|e| {
            if self.program.is_polymorphic() {
                ServeError::Unfit { model: self.config.name.clone(), source: std::sync::Arc::from(e) }
            } else {
                ServeError::run(e)
            }
        })?;
        let device = exe
            .addressable_devices()
            .into_iter()
            .next()
            .ok_or_else(|| ServeError::Internal("the compiled model has no addressable device".into()))?;
        let upload = |source: HostSource<'_>| {
            self.client.upload_with(source, &UploadOptions::new().device(&device)).map_err(ServeError::run)
        };
        // The module's arguments in the export's one order (JaxExport::module_arguments): the
        // platform index, then the kept inputs: weights as uploaded at load, the request's
        // uploaded now. Tokens never reach here: a model with ordered effects is refused at load.
        let module_arguments = self.program.module_arguments();
        let position = |i: usize| self.request_inputs.iter().position(|&r| r == i);
        let weight = |i: usize| self.weight_of.get(i).copied().flatten();
        let mut uploaded: Vec<Option<Buffer>> = Vec::with_capacity(module_arguments.len());
        for argument in &module_arguments {
            uploaded.push(match *argument {
                ModuleArgument::PlatformIndex => {
                    let index = self
                        .program
                        .platform_index(self.client.platform_name())
                        .map_err(ServeError::run)?
                        .ok_or_else(|| ServeError::Internal("the export has no platform index".into()))?;
                    let scalar = HostArray::from_elements(Vec::new(), &[index]).map_err(ServeError::run)?;
                    Some(upload((&scalar).into())?)
                }
                ModuleArgument::Input(i) if weight(i).is_none() => {
                    let k = position(i).ok_or_else(|| ServeError::Internal(format!("model input {i} has no value")))?;
                    // Read where the request holds them (a slice of its message, say): the
                    // plugin's copy to the device is the only one.
                    Some(upload(inputs[k].source())?)
                }
                ModuleArgument::Input(_) => None,
                _ => {
                    return Err(ServeError::Internal(format!("the module takes {argument:?}, which cannot be served")))
                }
            });
        }
        // Uploaded: the request's bytes (a slice of its message, say) are let go now, not after
        // the run.
        drop(inputs);
        let arguments = module_arguments
            .iter()
            .zip(&uploaded)
            .map(|(argument, buffer)| match (buffer, *argument) {
                (Some(buffer), _) => Ok(buffer),
                (None, ModuleArgument::Input(i)) => weight(i)
                    .map(|w| &replica.weight_buffers[w])
                    .ok_or_else(|| ServeError::Internal(format!("model input {i} has no value"))),
                (None, _) => Err(ServeError::Internal(format!("the module's argument {argument:?} has no value"))),
            })
            .collect::<Result<Vec<&Buffer>, ServeError>>()?;
        let uploaded = Instant::now();
        let results = exe.execute(&arguments, &ExecuteOptions::new()).map_err(ServeError::run)?;
        let executed = Instant::now();
        if results.len() != self.outputs.len() {
            return Err(ServeError::Internal(format!(
                "the module returned {} outputs but its signature lists {}",
                results.len(),
                self.outputs.len()
            )));
        }
        let mut outputs = Vec::with_capacity(self.outputs.len());
        for (spec, buffer) in self.outputs.iter().zip(results.iter()) {
            let host = buffer.to_host_array().map_err(ServeError::run)?;
            let (element_type, shape, data) = host.into_parts();
            if element_type != spec.datatype.element_type() {
                return Err(ServeError::Internal(format!(
                    "output {:?} came back as {element_type}, but its signature says {}",
                    spec.name, spec.datatype
                )));
            }
            outputs.push(OutputTensor { name: spec.name.clone(), datatype: spec.datatype, shape, data, binary: false });
        }
        *phases = Phases { input: uploaded - started, infer: executed - uploaded, output: executed.elapsed() };
        Ok(outputs)
    }
}
