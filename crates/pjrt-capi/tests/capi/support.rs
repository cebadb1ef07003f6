//! What the tests share: a runtime and models made through the C functions, tensors over Rust
//! arrays, statuses read and freed, `.npy` files of the test data.

#![allow(dead_code)]

use std::ffi::{CStr, CString};
use std::path::PathBuf;
use std::ptr::{null, null_mut};

use pjrt::*;
use pjrt_formats::npy::NpyArray;

/// A path in the repository's test data.
pub fn data(path: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data")).join(path)
}

/// The MLP exported by JAX 0.10.2: mlp(params, x), params = {b1, b2, w1, w2}; x: f32[4, 8].
pub const MLP: &str = "jax_export/jax-0.10.2/mlp_f32";
/// The shape-polymorphic transformer block: x: f32[b, t, 8] and 12 weights.
pub const TRANSFORMER: &str = "jax_export/symbolic/jax-0.10.2/transformer";

/// A status's code and message, and the status freed; `None` for success (NULL).
pub fn outcome(status: *mut pjrt_status) -> Option<(pjrt_code, String)> {
    if status.is_null() {
        return None;
    }
    let code = pjrt_status_code(status);
    // SAFETY: the message of a live status is a NUL-terminated string until it is freed.
    let message = unsafe { CStr::from_ptr(pjrt_status_message(status)) }.to_string_lossy().into_owned();
    pjrt_status_free(status);
    Some((code, message))
}

/// Panics with the message if the status is an error.
#[track_caller]
pub fn ok(status: *mut pjrt_status) {
    if let Some((code, message)) = outcome(status) {
        panic!("status {code}: {message}");
    }
}

/// The error's code and message; panics on success.
#[track_caller]
pub fn error(status: *mut pjrt_status) -> (pjrt_code, String) {
    outcome(status).expect("an error status, not success")
}

/// A runtime on the default CPU plugin (`cpu`), `cpu_devices` devices (0: its default).
pub fn runtime_with(cpu_devices: i32, device: i32) -> *mut pjrt_runtime {
    let name = CString::new("cpu").unwrap();
    let options = pjrt_options {
        struct_size: std::mem::size_of::<pjrt_options>(),
        plugin: name.as_ptr(),
        compile_cache: null(),
        cpu_devices,
        device,
        install_plugin: 0,
        client_options: std::ptr::null(),
    };
    let mut runtime = null_mut();
    // SAFETY: valid options and out-pointer.
    ok(unsafe { pjrt_runtime_new(&options, &mut runtime) });
    runtime
}

/// A runtime on the default CPU plugin.
pub fn runtime() -> *mut pjrt_runtime {
    runtime_with(0, 0)
}

/// Loads `path` (under the test data) with `weights` (likewise), or returns the error.
pub fn try_load(
    runtime: *const pjrt_runtime,
    path: &str,
    weights: Option<&str>,
) -> Result<*mut pjrt_model, (pjrt_code, String)> {
    let path = CString::new(data(path).to_str().unwrap()).unwrap();
    let weights = weights.map(|w| CString::new(data(w).to_str().unwrap()).unwrap());
    let mut model = null_mut();
    // SAFETY: NUL-terminated strings and a valid out-pointer.
    let status =
        unsafe { pjrt_model_load(runtime, path.as_ptr(), weights.as_ref().map_or(null(), |w| w.as_ptr()), &mut model) };
    match outcome(status) {
        None => Ok(model),
        Some(e) => {
            assert!(model.is_null(), "a failed load leaves NULL");
            Err(e)
        }
    }
}

/// Loads a model, panicking on failure.
#[track_caller]
pub fn load(runtime: *const pjrt_runtime, path: &str, weights: Option<&str>) -> *mut pjrt_model {
    try_load(runtime, path, weights).unwrap_or_else(|(code, message)| panic!("load {path}: {code}: {message}"))
}

/// The model's signature: its inputs and outputs.
pub fn signature(model: *const pjrt_model) -> (Vec<pjrt_tensor>, Vec<pjrt_tensor>) {
    let mut signature = pjrt_signature { n_inputs: 0, inputs: null(), n_outputs: 0, outputs: null() };
    // SAFETY: a valid out-pointer.
    ok(unsafe { pjrt_model_signature(model, &mut signature) });
    // SAFETY: the arrays are the model's, valid while it lives (the copies are made here).
    unsafe {
        (
            std::slice::from_raw_parts(signature.inputs, signature.n_inputs).to_vec(),
            std::slice::from_raw_parts(signature.outputs, signature.n_outputs).to_vec(),
        )
    }
}

/// A tensor over an array's bytes (which must outlive its use).
pub fn tensor(array: &NpyArray) -> pjrt_tensor {
    let element_type = pjrt_formats::npy::element_type_of(array.dtype);
    let mut t = pjrt_tensor {
        data: array.data.as_ptr() as *mut _,
        nbytes: array.data.len(),
        dtype: element_type.to_i32(),
        ndim: array.dims.len() as i32,
        ..pjrt_tensor::EMPTY
    };
    t.dims[..array.dims.len()].copy_from_slice(&array.dims);
    t
}

/// `.npy` files `dir/in0.npy`, `in1.npy`, ... (as many as there are), and `dir/out*.npy`.
pub fn arrays(dir: &str, prefix: &str) -> Vec<NpyArray> {
    (0..)
        .map(|i| data(dir).join(format!("{prefix}{i}.npy")))
        .take_while(|p| p.is_file())
        .map(|p| NpyArray::read(&p).unwrap())
        .collect()
}

/// A failed call's code and message.
pub type Error = (pjrt_code, String);

/// Outputs as dims and f32 values.
pub type Outputs = Vec<(Vec<i64>, Vec<f32>)>;

/// Runs `model` on `inputs` into library-allocated outputs, returns them as f32 vectors with
/// their dims, and frees them.
pub fn run_f32(model: *const pjrt_model, inputs: &[pjrt_tensor], n_outputs: usize) -> Result<Outputs, Error> {
    let mut outputs = vec![pjrt_tensor::EMPTY; n_outputs];
    // SAFETY: the inputs' data are arrays alive in the caller; outputs initialised with NULL data.
    let status = unsafe { pjrt_model_run(model, inputs.as_ptr(), inputs.len(), outputs.as_mut_ptr(), n_outputs) };
    if let Some(e) = outcome(status) {
        assert!(outputs.iter().all(|o| o.data.is_null()), "a failed run hands back no allocation");
        return Err(e);
    }
    Ok(outputs
        .iter_mut()
        .map(|o| {
            assert_eq!(o.dtype, PJRT_DTYPE_F32);
            assert_eq!(o.data as usize % 64, 0, "outputs are 64-byte aligned");
            // SAFETY: the library allocated `nbytes` bytes of f32s at `data`.
            let values = unsafe { std::slice::from_raw_parts(o.data as *const f32, o.nbytes / 4) }.to_vec();
            let dims = o.dims[..o.ndim as usize].to_vec();
            // SAFETY: an output the library allocated.
            ok(unsafe { pjrt_tensor_free(o) });
            assert!(o.data.is_null());
            (dims, values)
        })
        .collect())
}

/// Checks `got` against JAX's `want` within `atol + rtol * |want|`.
#[track_caller]
pub fn assert_close(got: &[f32], want: &[f32], atol: f32, rtol: f32) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= atol + rtol * w.abs(), "element {i}: {g} against JAX's {w}");
    }
}
