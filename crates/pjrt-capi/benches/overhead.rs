//! What the C API adds to a run: the exported MLP (tests/data/jax_export/jax-0.10.2/mlp_f32,
//! 5 inputs, one f32[4, 3] output) run the same way through three paths, in one process:
//!
//! - `capi`: `pjrt_model_run` (the C function, called from Rust), the output into a buffer of
//!   ours: what a C program's call does, without the C program;
//! - `rust, same steps`: the library doing what `pjrt_model_run` does, with nothing around it:
//!   the same executable's inputs uploaded from borrowed bytes, execute, the output copied
//!   into a buffer of ours (`Client::upload_with`, `LoadedExecutable::execute`,
//!   `Buffer::copy_to_bytes`);
//! - `rust, Runner::run`: the idiomatic Rust call, `.npy` arrays in and out
//!   (`pjrt_formats::jax_export::Runner`).
//!
//! The first two alternate call by call (the order swapped every pair), each call timed alone;
//! printed: each path's median time per call, and the median of the paired differences
//! `capi - rust, same steps` (with its quartiles), which the host's slow phases shift far less
//! than either path. Both clients get the same options: the CPU plugin's `asynchronous=false`
//! unless `PJRT_BENCH_CLIENT_OPTIONS` says otherwise (`""`: the plugin's defaults).
//!
//! With `PJRT_BENCH_COUNT=N` it makes N + 20 calls of each path (`PJRT_BENCH_ONLY=capi`,
//! `same` or `runner`: of that one) and times nothing: for callgrind, each path is a function
//! of its own (`capi_call`, `same_steps_call`, `runner_call`) whose instructions
//! tools/bench_capi.sh --callgrind splits into the library calls both paths make and the rest,
//! the path's own.
//!
//! The C program's own figure comes from `run_models --bench N` (examples/c: N calls after
//! 1,000 to warm up, each timed alone; the median): the same `pjrt_model_run` called from C.
//! tools/bench_capi.sh runs both. Not a test: no speed is asserted.
//!
//! `cargo bench -p pjrt-capi --bench overhead [-- RUNS]` (RUNS calls per path, default 20000)

use std::ffi::CString;
use std::ptr::{null, null_mut};
use std::time::Instant;

use pjrt::*;
use pjrt_client::{Buffer, Client, ClientOptions, ExecuteOptions, HostSource, LoadedExecutable, Plugin, UploadOptions};
use pjrt_formats::jax_export::{InputShape, JaxExport, Runner};
use pjrt_formats::npy::NpyArray;

const MLP: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/jax_export/jax-0.10.2/mlp_f32");

fn tensor(array: &NpyArray) -> pjrt_tensor {
    let mut t = pjrt_tensor {
        data: array.data.as_ptr() as *mut _,
        nbytes: array.data.len(),
        dtype: pjrt_formats::npy::element_type_of(array.dtype).to_i32(),
        ndim: array.dims.len() as i32,
        ..pjrt_tensor::EMPTY
    };
    t.dims[..array.dims.len()].copy_from_slice(&array.dims);
    t
}

fn check(status: *mut pjrt_status) {
    assert!(status.is_null(), "status {}", pjrt_status_code(status));
}

/// One run through the C API, the output into `output`.
#[inline(never)]
fn capi_call(model: *const pjrt_model, tensors: &[pjrt_tensor], output: &mut [f32; 12]) {
    let mut out = pjrt_tensor { data: output.as_mut_ptr().cast(), nbytes: 48, ..pjrt_tensor::EMPTY };
    // SAFETY: the inputs are over live arrays; the output over `output`'s 48 bytes.
    check(unsafe { pjrt_model_run(model, tensors.as_ptr(), tensors.len(), &mut out, 1) });
}

/// One run of the same steps through the library, the output into `output`.
#[inline(never)]
fn same_steps_call(
    client: &Client,
    exe: &LoadedExecutable,
    arrays: &[NpyArray],
    shapes: &[InputShape],
    output: &mut [u8; 48],
) {
    let devices = exe.addressable_devices();
    let upload = UploadOptions::new().device(&devices[0]);
    let buffers: Vec<Buffer> = arrays
        .iter()
        .zip(shapes)
        .map(|(a, (element_type, dims))| {
            client.upload_with(HostSource::bytes(&a.data, *element_type, dims), &upload).unwrap()
        })
        .collect();
    let arguments: Vec<&Buffer> = buffers.iter().collect();
    let outputs = exe.execute(&arguments, &ExecuteOptions::new()).unwrap();
    outputs[0].copy_to_bytes(output).unwrap();
}

/// One `Runner::run`.
#[inline(never)]
fn runner_call(runner: &Runner, arrays: &[NpyArray]) {
    let outputs = runner.run(arrays).unwrap();
    assert_eq!(outputs[0].data.len(), 48);
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn timed(f: impl FnOnce()) -> f64 {
    let started = Instant::now();
    f();
    started.elapsed().as_nanos() as f64
}

fn main() {
    let runs: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(20_000);
    let arrays: Vec<NpyArray> = (0..5).map(|i| NpyArray::read(format!("{MLP}/in{i}.npy").as_ref()).unwrap()).collect();
    let want = NpyArray::read(format!("{MLP}/out0.npy").as_ref()).unwrap().to_vec::<f32>().unwrap();
    // Both clients with the same options: by default the CPU plugin's `asynchronous=false`, so
    // that the runs are short and steady (no hand-off to the plugin's threads), which leaves
    // the paths' own costs to compare; PJRT_BENCH_CLIENT_OPTIONS="" for the plugin's defaults.
    let specs = std::env::var("PJRT_BENCH_CLIENT_OPTIONS").unwrap_or_else(|_| "asynchronous=false".to_owned());
    let specs_c = CString::new(specs.clone()).unwrap();

    // The C API.
    let mut runtime = null_mut();
    let options = pjrt_options {
        struct_size: std::mem::size_of::<pjrt_options>(),
        plugin: c"cpu".as_ptr(),
        compile_cache: null(),
        cpu_devices: 0,
        device: 0,
        install_plugin: 0,
        client_options: specs_c.as_ptr(),
    };
    // SAFETY: valid options and out-pointer.
    check(unsafe { pjrt_runtime_new(&options, &mut runtime) });
    let path = CString::new(format!("{MLP}/model.jaxexport")).unwrap();
    let mut model = null_mut();
    // SAFETY: valid strings and out-pointer.
    check(unsafe { pjrt_model_load(runtime, path.as_ptr(), null(), &mut model) });
    let tensors: Vec<pjrt_tensor> = arrays.iter().map(tensor).collect();
    let mut c_output = [0f32; 12];

    // The library: the same steps, and Runner::run.
    let known = pjrt_plugins::known_plugin("cpu").unwrap();
    let plugin = Plugin::load(pjrt_plugins::verified_cached(known).unwrap().load_path()).unwrap();
    let mut client_options = ClientOptions::new();
    for spec in specs.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        client_options = client_options.set_text(spec).unwrap();
    }
    let client = Client::new(&plugin, &client_options).unwrap();
    let export = JaxExport::read(format!("{MLP}/model.jaxexport")).unwrap();
    let runner = Runner::new(export.clone(), &client);
    let shapes = export.input_shapes(&arrays);
    let exe = runner.executable(&shapes).unwrap();
    let mut rust_output = [0u8; 48];

    if let Some(count) = std::env::var("PJRT_BENCH_COUNT").ok().and_then(|n| n.parse::<usize>().ok()) {
        // PJRT_BENCH_ONLY=capi|same|runner: that path alone (callgrind collects one per run).
        let only = std::env::var("PJRT_BENCH_ONLY").unwrap_or_default();
        let wanted = |path: &str| only.is_empty() || only == path;
        for _ in 0..count + 20 {
            if wanted("capi") {
                capi_call(model, &tensors, &mut c_output);
            }
            if wanted("same") {
                same_steps_call(&client, &exe, &arrays, &shapes, &mut rust_output);
            }
            if wanted("runner") {
                runner_call(&runner, &arrays);
            }
        }
        println!("ran {} calls of {}", count + 20, if only.is_empty() { "each path" } else { &only });
    } else {
        // Warm up, and check the answers.
        for _ in 0..1000 {
            capi_call(model, &tensors, &mut c_output);
            same_steps_call(&client, &exe, &arrays, &shapes, &mut rust_output);
            runner_call(&runner, &arrays);
        }
        let from_rust: Vec<f32> = rust_output.chunks(4).map(|b| f32::from_ne_bytes(b.try_into().unwrap())).collect();
        for (got, want) in c_output.iter().chain(&from_rust).zip(want.iter().cycle()) {
            assert!((got - want).abs() <= 1e-5 + 1e-5 * want.abs(), "{got} against JAX's {want}");
        }
        let (mut a, mut b, mut diff) = (Vec::with_capacity(runs), Vec::with_capacity(runs), Vec::with_capacity(runs));
        for k in 0..runs {
            let (ta, tb) = if k % 2 == 0 {
                let ta = timed(|| capi_call(model, &tensors, &mut c_output));
                (ta, timed(|| same_steps_call(&client, &exe, &arrays, &shapes, &mut rust_output)))
            } else {
                let tb = timed(|| same_steps_call(&client, &exe, &arrays, &shapes, &mut rust_output));
                (timed(|| capi_call(model, &tensors, &mut c_output)), tb)
            };
            a.push(ta);
            b.push(tb);
            diff.push(ta - tb);
        }
        let c: Vec<f64> = (0..runs).map(|_| timed(|| runner_call(&runner, &arrays))).collect();
        diff.sort_by(f64::total_cmp);
        let (d1, d, d3) = (diff[runs / 4], diff[runs / 2], diff[runs * 3 / 4]);
        let (a, b, c) = (median(a), median(b), median(c));
        println!("mlp run, client options {specs:?}, {runs} calls per path, median ns per call:");
        println!("  capi (pjrt_model_run from Rust):        {a:9.0}");
        println!("  rust, same steps (upload/execute/copy): {b:9.0}");
        println!("  rust, Runner::run (.npy in and out):    {c:9.0}");
        println!("  capi - same steps, paired calls:        {d:+9.0} (quartiles {d1:+.0} .. {d3:+.0})");
    }

    check(pjrt_model_free(model));
    check(pjrt_runtime_free(runtime));
}
