//! Models: a `.jaxexport`, `.mlir`/`.mlirbc` or AOT artifact loaded on a runtime, its weights
//! uploaded to the device once ([`load`]), and run on host tensors ([`run`]);
//! `pjrt_model_load`, `pjrt_model_signature`, `pjrt_model_run` and `pjrt_model_free`.

mod load;
mod run;

use std::sync::{Arc, Mutex};

use pjrt_client::{Buffer, CompileOptions, LoadedExecutable};
use pjrt_formats::jax_export::{InputShape, JaxExport, Runner};
use pjrt_formats::mlir_text::TextProgram;

use crate::boundary::guard;
use crate::check;
use crate::failure::{Failure, Outcome};
use crate::registry::Registry;
use crate::runtime::Runtime;
use crate::types::*;

/// A loaded model.
pub(crate) struct Model {
    runtime: Arc<Runtime>,
    executables: Executables,
    /// A `jax.export` model, whose own checks give JAX's messages for inputs that do not fit.
    export: Option<Arc<JaxExport>>,
    /// The executable's arguments, in order, and where each comes from.
    arguments: Vec<Feed>,
    /// What was uploaded at load: the weights, the platform index of a multi-platform export.
    resident: Vec<Buffer>,
    /// For each of the caller's inputs, which of the model's inputs it is (an index into
    /// `in_avals` of an export, into the parameters of a program).
    caller_inputs: Vec<usize>,
    /// Each of the model's inputs' shapes where a weight gives it (`None` for the caller's):
    /// with the caller's, the signature a program is refined and compiled for.
    weight_shapes: Vec<Option<InputShape>>,
    /// What `pjrt_model_signature` shows: the caller's inputs and the outputs.
    inputs: Specs,
    outputs: Specs,
}

/// Where an argument of the executable comes from.
#[derive(Clone, Copy, Debug)]
enum Feed {
    /// The caller's input `k` (of `pjrt_model_run`).
    Caller(usize),
    /// `Model::resident[k]`.
    Resident(usize),
}

/// The executables of a model.
enum Executables {
    /// One executable, compiled (or loaded) at load: a model of static shapes, an artifact.
    Static(Arc<LoadedExecutable>),
    /// A shape-polymorphic `jax.export` model, refined and compiled for each new input
    /// signature (a runner keeps them).
    Export(Runner),
    /// An MLIR text program with `?` dimensions, refined and compiled for each new input
    /// signature.
    Text(TextExecutables),
}

/// The executables of an MLIR text program with `?` dimensions, per input signature (the
/// latest used last; at most [`Runner::DEFAULT_CAPACITY`]).
struct TextExecutables {
    program: TextProgram,
    options: CompileOptions,
    compiled: Mutex<Vec<(Vec<InputShape>, Arc<LoadedExecutable>)>>,
}

/// Tensors of a signature: `data` is always NULL, and nothing writes them after the load.
struct Specs(Vec<pjrt_tensor>);

// SAFETY: the only pointer in a `pjrt_tensor` is `data`, which is NULL in every `Specs` (made
// by `spec` only) and never written after the model is loaded: there is nothing to share.
unsafe impl Send for Specs {}
// SAFETY: as for Send: read-only plain data.
unsafe impl Sync for Specs {}

/// A signature's tensor: `dims` with -1 for a symbolic dimension; an error above the rank limit.
fn spec(element_type: pjrt_client::ElementType, dims: &[Option<i64>], what: &str) -> Outcome<pjrt_tensor> {
    if dims.len() > PJRT_MAX_NDIM {
        return Err(Failure::new(
            PJRT_CODE_UNIMPLEMENTED,
            format!("{what} has {} dimensions; this C API takes at most PJRT_MAX_NDIM ({PJRT_MAX_NDIM})", dims.len()),
        ));
    }
    let mut tensor = pjrt_tensor { dtype: element_type.to_i32(), ndim: dims.len() as i32, ..pjrt_tensor::EMPTY };
    for (slot, d) in tensor.dims.iter_mut().zip(dims) {
        *slot = d.unwrap_or(-1);
    }
    Ok(tensor)
}

pub(crate) static MODELS: Registry<Model> = Registry::new(2, "pjrt_model");

/// The model `handle` names.
fn model(handle: *const pjrt_model) -> Outcome<Arc<Model>> {
    MODELS.get(handle as usize).map_err(|e| Failure::handle(e, "model", MODELS.name()))
}

/// Loads a model onto a runtime: a `jax.export` model (`.jaxexport`), a StableHLO program
/// (`.mlir` text, whose `?` dimensions are refined for each call's inputs, or `.mlirbc`
/// bytecode) or an AOT artifact of `pjrt compile`, recognised by content. A model of static
/// shapes is compiled here (through the runtime's compile cache); a shape-polymorphic one for
/// each new set of input shapes, when first run with them.
///
/// `weights_path` (NULL: none) is a safetensors file whose tensors feed the model's inputs
/// of the same names (as JAX names them: `params['w']`, or with the keys joined, `params.w`,
/// `w`, ...), uploaded to the device once, here: `pjrt_model_run` then takes only the other
/// inputs. On success `*model` is the new model; on failure it is NULL.
///
/// Thread-safe. The model holds what it needs of the runtime: it keeps working after
/// `pjrt_runtime_free`.
///
/// # Safety
///
/// `path` and `weights_path` are NULL or NUL-terminated; `model` is NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn pjrt_model_load(
    runtime: *const pjrt_runtime,
    path: *const std::ffi::c_char,
    weights_path: *const std::ffi::c_char,
    model: *mut *mut pjrt_model,
) -> *mut pjrt_status {
    guard("pjrt_model_load", || {
        check::out(model, "model (where the new model goes)")?;
        // SAFETY: not NULL and aligned (checked above); the caller promises it is writable.
        unsafe { model.write(std::ptr::null_mut()) };
        let runtime = crate::runtime::runtime(runtime, "runtime")?;
        // SAFETY: the caller promises NUL-terminated strings or NULL.
        let path = unsafe { check::path(path, "path") }?;
        // SAFETY: as above.
        let weights = unsafe { check::optional_path(weights_path, "weights_path") }?;
        let loaded = load::load(runtime, path, weights)?;
        let handle = MODELS
            .insert(loaded)
            .ok_or_else(|| Failure::new(PJRT_CODE_RESOURCE_EXHAUSTED, "too many models are alive"))?;
        // SAFETY: as above.
        unsafe { model.write(handle as *mut pjrt_model) };
        Ok(())
    })
}

/// What the model takes and gives (see `pjrt_signature`): `*signature` is filled with arrays
/// that belong to the model, valid until `pjrt_model_free`.
///
/// Thread-safe.
///
/// # Safety
///
/// `signature` is NULL (an error) or writable.
#[no_mangle]
pub unsafe extern "C" fn pjrt_model_signature(
    model: *const pjrt_model,
    signature: *mut pjrt_signature,
) -> *mut pjrt_status {
    guard("pjrt_model_signature", || {
        let model = self::model(model)?;
        check::out(signature, "signature")?;
        // The arrays live as long as the model, which the registry holds until pjrt_model_free.
        let filled = pjrt_signature {
            n_inputs: model.inputs.0.len(),
            inputs: model.inputs.0.as_ptr(),
            n_outputs: model.outputs.0.len(),
            outputs: model.outputs.0.as_ptr(),
        };
        // SAFETY: not NULL and aligned (checked above); the caller promises it is writable.
        unsafe { signature.write(filled) };
        Ok(())
    })
}

/// Runs the model on `n_inputs` host tensors (in the order of the signature's inputs) and
/// writes its `n_outputs` outputs (see `pjrt_tensor`: allocated by the library where `data`
/// is NULL, else into your buffer). Inputs are checked first: count, dtype, rank, dimensions
/// (a symbolic one takes any size the model accepts) and `nbytes`; a shape-polymorphic model
/// is compiled for a new set of shapes on its first run with them. An output buffer that is too
/// small gives `PJRT_CODE_OUT_OF_RANGE` with that output's `dtype`, `ndim`, `dims` and the
/// `nbytes` it needs written. On any failure, outputs the library allocated in this call are
/// freed again (their `data` back to NULL).
///
/// Thread-safe: one model may run in many threads at once (each call with its own tensors);
/// the plugin runs the calls concurrently.
///
/// # Safety
///
/// `inputs` points to `n_inputs` tensors whose `data` hold `nbytes` readable bytes each;
/// `outputs` points to `n_outputs` initialised tensors whose `data` are NULL or `nbytes`
/// writable bytes. No other thread writes these during the call.
#[no_mangle]
pub unsafe extern "C" fn pjrt_model_run(
    model: *const pjrt_model,
    inputs: *const pjrt_tensor,
    n_inputs: usize,
    outputs: *mut pjrt_tensor,
    n_outputs: usize,
) -> *mut pjrt_status {
    guard("pjrt_model_run", || {
        let model = self::model(model)?;
        if n_inputs != model.inputs.0.len() {
            return Err(Failure::invalid(format!(
                "n_inputs is {n_inputs}, but the model takes {} inputs",
                model.inputs.0.len()
            )));
        }
        if n_outputs != model.outputs.0.len() {
            return Err(Failure::invalid(format!(
                "n_outputs is {n_outputs}, but the model gives {} outputs",
                model.outputs.0.len()
            )));
        }
        // SAFETY: the caller's promise; the count is the model's (checked above).
        let inputs = unsafe { check::tensors(inputs, n_inputs, "inputs") }?;
        // SAFETY: as above.
        let outputs = unsafe { check::tensors_mut(outputs, n_outputs, "outputs") }?;
        // SAFETY: the caller promises each input's `nbytes` readable bytes, each output's
        // `nbytes` writable ones (or NULL).
        unsafe { model.run(inputs, outputs) }
    })
}

/// Frees a model's handle: the model goes (its executables and its weights on the device) once
/// no call is running it. NULL is ignored; a model freed already is an error.
///
/// Thread-safe, also while other threads run the model: their calls finish, later ones get an
/// error.
///
/// `model` is never dereferenced: any value is checked.
#[no_mangle]
pub extern "C" fn pjrt_model_free(model: *mut pjrt_model) -> *mut pjrt_status {
    guard("pjrt_model_free", || {
        if model.is_null() {
            return Ok(());
        }
        MODELS.remove(model as usize).map(drop).map_err(|e| Failure::handle(e, "model", MODELS.name()))
    })
}
