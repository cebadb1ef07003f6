//! Running a model: the caller's tensors checked against the signature, the executable for
//! their shapes, the inputs uploaded from where they are (the plugin copies them during the
//! call), the outputs copied straight into the caller's buffers or into memory allocated here.

use std::sync::Arc;

use pjrt_client::{Buffer, ElementType, ExecuteOptions, HostSource, LoadedExecutable, UploadOptions};
use pjrt_formats::jax_export::{InputShape, Runner};

use super::{Executables, Feed, Model, TextExecutables};
use crate::check;
use crate::failure::{Failure, Outcome};
use crate::tensor;
use crate::types::*;

/// An input as checked: its element type, dimensions and bytes.
type InputView<'t> = (ElementType, &'t [i64], &'t [u8]);

impl Model {
    /// Runs the model on `inputs` (as many as it takes) into `outputs` (as many as it gives).
    ///
    /// # Safety
    ///
    /// Each input's `data` holds `nbytes` readable bytes (or is NULL), each output's `data` is
    /// NULL or `nbytes` writable bytes, all valid and not written by others during the call.
    pub(super) unsafe fn run(&self, inputs: &[pjrt_tensor], outputs: &mut [pjrt_tensor]) -> Outcome {
        let mut views: Vec<InputView<'_>> = Vec::with_capacity(inputs.len());
        for (k, tensor) in inputs.iter().enumerate() {
            // SAFETY: the caller's promise for each input's bytes.
            let (element_type, dims, data) = unsafe { check::input(tensor, &format_args!("inputs[{k}]")) }?;
            self.check_input(k, element_type, dims)?;
            views.push((element_type, dims, data));
        }
        let exe = self.executable(&views)?;
        let devices = exe.addressable_devices();
        let device = devices
            .first()
            .ok_or_else(|| Failure::new(PJRT_CODE_INTERNAL, "the compiled model has no addressable device"))?;
        let options = UploadOptions::new().device(device);
        let client = &self.runtime.client;
        let mut uploaded = Vec::with_capacity(views.len());
        for (k, (element_type, dims, data)) in views.iter().enumerate() {
            // Read during the call: the caller's memory is not kept.
            let buffer = client
                .upload_with(HostSource::bytes(data, *element_type, dims), &options)
                .map_err(|e| Failure::from(e).context(format_args!("inputs[{k}]")))?;
            uploaded.push(buffer);
        }
        let arguments: Vec<&Buffer> = self
            .arguments
            .iter()
            .map(|feed| match *feed {
                Feed::Caller(k) => &uploaded[k],
                Feed::Resident(k) => &self.resident[k],
            })
            .collect();
        let results = exe.execute(&arguments, &ExecuteOptions::new())?;
        drop(arguments);
        drop(uploaded);
        if results.len() != outputs.len() {
            return Err(Failure::new(
                PJRT_CODE_INTERNAL,
                format!("the program returned {} outputs, the model says {}", results.len(), outputs.len()),
            ));
        }
        let mut allocated = Vec::new();
        for (k, (buffer, output)) in results.iter().zip(outputs.iter_mut()).enumerate() {
            // SAFETY: the caller's promise for each output's memory.
            if let Err(e) = unsafe { write_output(buffer, output, k, &mut allocated) } {
                // Nothing half-done is handed back: this call's allocations are freed again.
                for (index, data) in allocated {
                    let _ = tensor::release(data);
                    let output: &mut pjrt_tensor = &mut outputs[index];
                    output.data = std::ptr::null_mut();
                    output.nbytes = 0;
                }
                return Err(e.context(format_args!("outputs[{k}]")));
            }
        }
        Ok(())
    }

    /// Checks the caller's input `k` against the signature: dtype, rank and every static
    /// dimension; a `jax.export` model's own checks where it is shape-polymorphic (JAX's checks
    /// of the symbolic dimensions), or to say what does not fit (JAX's messages).
    fn check_input(&self, k: usize, element_type: ElementType, dims: &[i64]) -> Outcome {
        let what = || format!("inputs[{k}]");
        let spec = &self.inputs.0[k];
        let want = &spec.dims[..spec.ndim as usize];
        let fits = spec.dtype == element_type.to_i32()
            && want.len() == dims.len()
            && want.iter().zip(dims).all(|(&w, &d)| w < 0 || w == d);
        let polymorphic = matches!(self.executables, Executables::Export(_));
        if let Some(export) = self.export.as_ref().filter(|_| !fits || polymorphic) {
            export
                .check_input(self.caller_inputs[k], element_type, dims)
                .map_err(|e| Failure::from(e).context(what()))?;
        }
        if !fits {
            let shown: Vec<String> = want.iter().map(|&d| if d < 0 { "?".to_owned() } else { d.to_string() }).collect();
            return Err(Failure::invalid(format!(
                "{}: {element_type}{dims:?} given, the model takes {}[{}]",
                what(),
                ElementType::from_i32(spec.dtype),
                shown.join(", ")
            )));
        }
        Ok(())
    }

    /// The executable for inputs of these shapes.
    fn executable(&self, views: &[InputView<'_>]) -> Outcome<Arc<LoadedExecutable>> {
        let shapes = || -> Vec<InputShape> {
            let mut caller = views.iter().map(|(element_type, dims, _)| (*element_type, dims.to_vec()));
            self.weight_shapes.iter().filter_map(|weight| weight.clone().or_else(|| caller.next())).collect()
        };
        match &self.executables {
            Executables::Static(exe) => Ok(exe.clone()),
            Executables::Export(runner) => Ok(Runner::executable(runner, &shapes())?),
            Executables::Text(text) => text.executable(&self.runtime, shapes()),
        }
    }
}

impl TextExecutables {
    /// The executable for these shapes (every parameter's): kept, or the program refined and
    /// compiled for them now.
    fn executable(&self, runtime: &crate::runtime::Runtime, shapes: Vec<InputShape>) -> Outcome<Arc<LoadedExecutable>> {
        let mut compiled = self.compiled.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = compiled.iter().position(|(s, _)| *s == shapes) {
            let entry = compiled.remove(i);
            let exe = entry.1.clone();
            compiled.push(entry);
            return Ok(exe);
        }
        // Compiled under the lock: two threads with the same new shapes compile once.
        let program = self.program.program_for(&shapes, &[])?;
        let exe = Arc::new(match &runtime.compile_cache {
            Some(cache) => cache.compile(&runtime.client, &program, &self.options)?.executable,
            None => runtime.client.compile(&program, &self.options)?,
        });
        if compiled.len() >= Runner::DEFAULT_CAPACITY {
            compiled.remove(0);
        }
        compiled.push((shapes, exe.clone()));
        Ok(exe)
    }
}

/// Writes one output: its type and shape into `output`, its bytes into the caller's buffer or
/// into memory allocated here (recorded in `allocated` with `index`, the output's).
///
/// # Safety
///
/// `output.data` is NULL or `output.nbytes` writable bytes no one else uses during the call.
unsafe fn write_output(
    buffer: &Buffer,
    output: &mut pjrt_tensor,
    index: usize,
    allocated: &mut Vec<(usize, *mut u8)>,
) -> Outcome {
    let element_type = buffer.element_type()?;
    let dims = buffer.dimensions()?;
    if dims.len() > PJRT_MAX_NDIM {
        return Err(Failure::new(
            PJRT_CODE_UNIMPLEMENTED,
            format!("{element_type}{dims:?} has more than PJRT_MAX_NDIM ({PJRT_MAX_NDIM}) dimensions"),
        ));
    }
    let bytes = check::byte_size(element_type, dims, &"the output")?;
    output.dtype = element_type.to_i32();
    output.ndim = dims.len() as i32;
    output.dims = [0; PJRT_MAX_NDIM];
    output.dims[..dims.len()].copy_from_slice(dims);
    if output.data.is_null() {
        let data = tensor::allocate(bytes)?;
        allocated.push((index, data));
        // SAFETY: `allocate` gave at least `bytes` bytes at `data`, ours alone.
        let destination = unsafe { std::slice::from_raw_parts_mut(data, bytes) };
        output.data = data.cast();
        output.nbytes = bytes;
        return Ok(buffer.copy_to_bytes(destination)?);
    }
    if output.nbytes < bytes {
        let given = output.nbytes;
        output.nbytes = bytes;
        return Err(Failure::new(
            PJRT_CODE_OUT_OF_RANGE,
            format!("the buffer has {given} bytes, but {element_type}{dims:?} needs {bytes} (written to nbytes)"),
        ));
    }
    // SAFETY: not NULL; the caller promises `nbytes` (at least `bytes`, checked above) writable
    // bytes at `data` that nobody else uses during the call. Any alignment: written as bytes.
    let destination = unsafe { std::slice::from_raw_parts_mut(output.data.cast::<u8>(), bytes) };
    buffer.copy_to_bytes(destination)?;
    output.nbytes = bytes;
    Ok(())
}
