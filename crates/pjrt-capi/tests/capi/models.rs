//! Each kind of model run from the C functions and checked against JAX's outputs (the
//! tolerances are the test data's manifests'): the exported MLP, the shape-polymorphic
//! transformer at two shapes (as a `.jaxexport` and as MLIR text with `?` dimensions), weights
//! bound by name, static `.mlir`/`.mlirbc` programs, an AOT artifact, outputs into the
//! caller's buffers, the device and compile-cache options, and the Fortran example's
//! double-precision export with a symbolic number of atoms at two sizes.

use std::ffi::CString;
use std::ptr::null_mut;

use pjrt::*;

use crate::support::*;

#[test]
fn the_exported_mlp_gives_jax_outputs() {
    let runtime = runtime();
    let model = load(runtime, &format!("{MLP}/model.jaxexport"), None);
    let (inputs, outputs) = signature(model);
    let shapes: Vec<&[i64]> = inputs.iter().map(|t| &t.dims[..t.ndim as usize]).collect();
    assert_eq!(shapes, [&[16][..], &[3], &[8, 16], &[16, 3], &[4, 8]]);
    assert_eq!((outputs.len(), outputs[0].dtype, &outputs[0].dims[..2]), (1, PJRT_DTYPE_F32, &[4, 3][..]));
    assert!(inputs.iter().chain(&outputs).all(|t| t.data.is_null() && t.nbytes == 0));
    let arrays = arrays(MLP, "in");
    let tensors: Vec<pjrt_tensor> = arrays.iter().map(tensor).collect();
    let want = arrays_f32(MLP, "out");
    for _ in 0..3 {
        let got = run_f32(model, &tensors, 1).unwrap();
        assert_eq!(got[0].0, [4, 3]);
        assert_close(&got[0].1, &want[0], 1e-5, 1e-5);
    }
    ok(pjrt_model_free(model));
    ok(pjrt_runtime_free(runtime));
}

/// The outputs of JAX in `dir`, as f32.
fn arrays_f32(dir: &str, prefix: &str) -> Vec<Vec<f32>> {
    arrays(dir, prefix).iter().map(|a| a.to_vec::<f32>().unwrap()).collect()
}

#[test]
fn the_polymorphic_transformer_runs_at_two_shapes() {
    let runtime = runtime();
    for file in ["model.jaxexport", "program.mlir"] {
        let model = load(runtime, &format!("{TRANSFORMER}/{file}"), None);
        let (inputs, outputs) = signature(model);
        assert_eq!(inputs.len(), 13, "{file}");
        assert_eq!(&inputs[0].dims[..3], [-1, -1, 8], "{file}: b and t are symbolic");
        assert_eq!(&outputs[0].dims[..3], [-1, -1, 16], "{file}");
        for (case, dims) in [("ok0", [1, 1, 16]), ("ok1", [2, 7, 16]), ("ok0", [1, 1, 16])] {
            let dir = format!("{TRANSFORMER}/{case}");
            let arrays = arrays(&dir, "in");
            let tensors: Vec<pjrt_tensor> = arrays.iter().map(tensor).collect();
            let got = run_f32(model, &tensors, 1).unwrap();
            assert_eq!(got[0].0, dims, "{file} {case}");
            // The manifest's tolerance for the transformer.
            assert_close(&got[0].1, &arrays_f32(&dir, "out")[0], 1e-4, 1e-4);
        }
        ok(pjrt_model_free(model));
    }
    ok(pjrt_runtime_free(runtime));
}

#[test]
fn a_shape_the_model_refuses_is_jaxs_message() {
    let runtime = runtime();
    let model = load(runtime, &format!("{TRANSFORMER}/model.jaxexport"), None);
    // t = 17 > 16: the export's shape assertion fails while refining.
    let arrays = arrays(&format!("{TRANSFORMER}/bad0"), "in");
    let tensors: Vec<pjrt_tensor> = arrays.iter().map(tensor).collect();
    let (code, message) = run_f32(model, &tensors, 1).unwrap_err();
    assert_eq!(code, PJRT_CODE_INVALID_ARGUMENT, "{message}");
    assert!(message.contains("17"), "{message}");
    ok(pjrt_model_free(model));
    ok(pjrt_runtime_free(runtime));
}

#[test]
fn weights_are_bound_by_name_and_only_the_rest_are_inputs() {
    let runtime = runtime();
    for weights in ["params_dotted", "params_slashed", "params_bracketed"] {
        let model =
            load(runtime, "weights/mixed/model.jaxexport", Some(&format!("weights/mixed/{weights}.safetensors")));
        let (inputs, _) = signature(model);
        assert_eq!(inputs.len(), 1, "only x: the 8 weights come from the file");
        assert_eq!((inputs[0].dtype, &inputs[0].dims[..2]), (PJRT_DTYPE_F32, &[2, 3][..]));
        let x = pjrt_formats::npy::NpyArray::read(&data("weights/mixed/x.npy")).unwrap();
        let want = pjrt_formats::npy::NpyArray::read(&data("weights/mixed/out0.npy")).unwrap().to_vec::<f32>().unwrap();
        let got = run_f32(model, &[tensor(&x)], 1).unwrap();
        assert_close(&got[0].1, &want, 1e-5, 1e-5);
        ok(pjrt_model_free(model));
    }
    // A file whose tensors do not fit the model is refused at load, by name.
    let (code, message) =
        try_load(runtime, &format!("{MLP}/model.jaxexport"), Some("weights/mixed/params_dotted.safetensors"))
            .unwrap_err();
    assert_eq!(code, PJRT_CODE_INVALID_ARGUMENT);
    assert!(message.contains("weights_path"), "{message}");
    ok(pjrt_runtime_free(runtime));
}

#[test]
fn static_programs_as_text_and_bytecode() {
    let runtime = runtime();
    let a = pjrt_formats::npy::NpyArray::read(&data("formats/a.npy")).unwrap();
    let b = pjrt_formats::npy::NpyArray::read(&data("formats/b.npy")).unwrap();
    let want = pjrt_formats::npy::NpyArray::read(&data("formats/expected.npy")).unwrap().to_vec::<f32>().unwrap();
    for file in ["formats/tanh_mul.mlir", "formats/tanh_mul.mlirbc", "formats/tanh_mul.portable-1.0.0.mlirbc"] {
        let model = load(runtime, file, None);
        let (inputs, outputs) = signature(model);
        assert_eq!((inputs.len(), outputs.len()), (2, 1), "{file}");
        assert_eq!(&inputs[0].dims[..2], [2, 3], "{file}");
        let got = run_f32(model, &[tensor(&a), tensor(&b)], 1).unwrap();
        assert_close(&got[0].1, &want, 1e-6, 1e-6);
        ok(pjrt_model_free(model));
    }
    ok(pjrt_runtime_free(runtime));
}

#[test]
fn an_aot_artifact_runs() {
    let dir = std::env::temp_dir().join(format!("pjrt-capi-artifact-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("tanh_mul.pjrt");
    {
        // Compiled and serialized by the library, as `pjrt compile` does.
        let known = pjrt_plugins::known_plugin("cpu").unwrap();
        let plugin = pjrt_client::Plugin::load(pjrt_plugins::verified_cached(known).unwrap().load_path()).unwrap();
        let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new()).unwrap();
        let program = pjrt_client::Program::from_file(data("formats/tanh_mul.mlir")).unwrap();
        let options = pjrt_client::CompileOptions::new().jax_defaults(client.platform_name());
        let exe = client.compile(&program, &options).unwrap();
        pjrt_formats::artifact::Artifact::from_loaded(&client, &exe, &program, &options).unwrap().write(&path).unwrap();
    }
    let runtime = runtime();
    let model = load(runtime, path.to_str().unwrap(), None);
    let a = pjrt_formats::npy::NpyArray::read(&data("formats/a.npy")).unwrap();
    let b = pjrt_formats::npy::NpyArray::read(&data("formats/b.npy")).unwrap();
    let want = pjrt_formats::npy::NpyArray::read(&data("formats/expected.npy")).unwrap().to_vec::<f32>().unwrap();
    let got = run_f32(model, &[tensor(&a), tensor(&b)], 1).unwrap();
    assert_close(&got[0].1, &want, 1e-6, 1e-6);
    ok(pjrt_model_free(model));
    ok(pjrt_runtime_free(runtime));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn outputs_go_into_the_callers_buffers() {
    let runtime = runtime();
    let model = load(runtime, &format!("{MLP}/model.jaxexport"), None);
    let arrays = arrays(MLP, "in");
    let tensors: Vec<pjrt_tensor> = arrays.iter().map(tensor).collect();
    let want = arrays_f32(MLP, "out");
    // Room for more than the output: nbytes comes back as what was written.
    let mut buffer = vec![f32::NAN; 20];
    let mut outputs = [pjrt_tensor { data: buffer.as_mut_ptr().cast(), nbytes: 80, ..pjrt_tensor::EMPTY }];
    // SAFETY: inputs over live arrays, an output over `buffer`'s 80 bytes.
    ok(unsafe { pjrt_model_run(model, tensors.as_ptr(), tensors.len(), outputs.as_mut_ptr(), 1) });
    assert_eq!((outputs[0].nbytes, outputs[0].ndim, &outputs[0].dims[..2]), (48, 2, &[4, 3][..]));
    assert_eq!(outputs[0].data, buffer.as_mut_ptr().cast());
    assert_close(&buffer[..12], &want[0], 1e-5, 1e-5);
    assert!(buffer[12].is_nan(), "nothing past the output is written");
    // The caller's memory is not the library's to free.
    // SAFETY: a valid tensor.
    let (code, message) = error(unsafe { pjrt_tensor_free(&mut outputs[0]) });
    assert_eq!(code, PJRT_CODE_INVALID_ARGUMENT);
    assert!(message.contains("not allocated by this library"), "{message}");
    assert_eq!(outputs[0].data, buffer.as_mut_ptr().cast(), "left alone");
    // At an odd address: outputs are written as bytes.
    let mut bytes = [0u8; 49];
    let mut outputs = [pjrt_tensor { data: bytes[1..].as_mut_ptr().cast(), nbytes: 48, ..pjrt_tensor::EMPTY }];
    // SAFETY: as above, 48 bytes.
    ok(unsafe { pjrt_model_run(model, tensors.as_ptr(), tensors.len(), outputs.as_mut_ptr(), 1) });
    let first = f32::from_ne_bytes(bytes[1..5].try_into().unwrap());
    assert_close(&[first], &want[0][..1], 1e-5, 1e-5);
    ok(pjrt_model_free(model));
    ok(pjrt_runtime_free(runtime));
}

#[test]
fn a_buffer_too_small_says_what_the_output_needs() {
    let runtime = runtime();
    let model = load(runtime, &format!("{MLP}/model.jaxexport"), None);
    let arrays = arrays(MLP, "in");
    let tensors: Vec<pjrt_tensor> = arrays.iter().map(tensor).collect();
    let mut buffer = [0f32; 4];
    let mut outputs = [pjrt_tensor { data: buffer.as_mut_ptr().cast(), nbytes: 16, ..pjrt_tensor::EMPTY }];
    // SAFETY: inputs over live arrays, an output over `buffer`'s 16 bytes.
    let (code, message) =
        error(unsafe { pjrt_model_run(model, tensors.as_ptr(), tensors.len(), outputs.as_mut_ptr(), 1) });
    assert_eq!(code, PJRT_CODE_OUT_OF_RANGE);
    assert!(message.contains("outputs[0]") && message.contains("16 bytes") && message.contains("48"), "{message}");
    assert_eq!(
        (outputs[0].nbytes, outputs[0].dtype, outputs[0].ndim, &outputs[0].dims[..2]),
        (48, PJRT_DTYPE_F32, 2, &[4, 3][..])
    );
    assert_eq!(buffer, [0.0; 4], "nothing written");
    ok(pjrt_model_free(model));
    ok(pjrt_runtime_free(runtime));
}

#[test]
fn the_device_and_compile_cache_options() {
    // The second of two CPU devices.
    let runtime = runtime_with(2, 1);
    let model = load(runtime, &format!("{MLP}/model.jaxexport"), None);
    let arrays = arrays(MLP, "in");
    let tensors: Vec<pjrt_tensor> = arrays.iter().map(tensor).collect();
    assert_close(&run_f32(model, &tensors, 1).unwrap()[0].1, &arrays_f32(MLP, "out")[0], 1e-5, 1e-5);
    ok(pjrt_model_free(model));
    ok(pjrt_runtime_free(runtime));
    // A device the client does not have.
    let name = CString::new("cpu").unwrap();
    let mut options = pjrt_options {
        struct_size: std::mem::size_of::<pjrt_options>(),
        plugin: name.as_ptr(),
        compile_cache: std::ptr::null(),
        cpu_devices: 2,
        device: 2,
        install_plugin: 0,
        client_options: std::ptr::null(),
    };
    let mut runtime = null_mut();
    // SAFETY: valid options and out-pointer.
    let (code, message) = error(unsafe { pjrt_runtime_new(&options, &mut runtime) });
    assert!(code == PJRT_CODE_INVALID_ARGUMENT && message.contains("device is 2"), "{message}");
    assert!(runtime.is_null());
    // Client options: the CPU plugin running small programs on the calling thread.
    options.device = 0;
    options.client_options = c"asynchronous=false".as_ptr();
    let mut runtime = null_mut();
    // SAFETY: as above.
    ok(unsafe { pjrt_runtime_new(&options, &mut runtime) });
    let model = load(runtime, &format!("{MLP}/model.jaxexport"), None);
    assert_close(&run_f32(model, &tensors, 1).unwrap()[0].1, &arrays_f32(MLP, "out")[0], 1e-5, 1e-5);
    ok(pjrt_model_free(model));
    ok(pjrt_runtime_free(runtime));
    options.client_options = std::ptr::null();
    // The compile cache: a second runtime loads what the first compiled.
    let dir = std::env::temp_dir().join(format!("pjrt-capi-cache-{}", std::process::id()));
    let dir_c = CString::new(dir.to_str().unwrap()).unwrap();
    options.compile_cache = dir_c.as_ptr();
    options.device = 0;
    for _ in 0..2 {
        let mut runtime = null_mut();
        // SAFETY: as above.
        ok(unsafe { pjrt_runtime_new(&options, &mut runtime) });
        let model = load(runtime, &format!("{MLP}/model.jaxexport"), None);
        ok(pjrt_model_free(model));
        ok(pjrt_runtime_free(runtime));
    }
    let cache = pjrt_formats::compile_cache::CompileCache::open(&dir).unwrap();
    assert_eq!(cache.info().unwrap().entries, 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// One system of the Fortran example's data (tools/gen_fortran_testdata.py): n, the positions
/// (n rows of 3), JAX's energy, JAX's gradient (n rows of 3).
fn lennard_jones_system(n: usize) -> (Vec<f64>, f64, Vec<f64>) {
    let text = std::fs::read_to_string(data(&format!("fortran/jax-0.10.2/lennard_jones/n{n}.txt"))).unwrap();
    let numbers: Vec<f64> = text.split_whitespace().map(|w| w.parse().unwrap()).collect();
    assert_eq!((numbers[0], numbers.len()), (n as f64, 2 + 6 * n));
    (numbers[1..1 + 3 * n].to_vec(), numbers[1 + 3 * n], numbers[2 + 3 * n..].to_vec())
}

#[test]
fn a_symbolic_f64_export_runs_at_two_sizes() {
    // The Fortran example's model: positions f64[n, 3] -> (energy f64[], gradient f64[n, 3]).
    let runtime = runtime();
    let model = load(runtime, "fortran/jax-0.10.2/lennard_jones/model.jaxexport", None);
    let (inputs, outputs) = signature(model);
    assert_eq!((inputs[0].dtype, inputs[0].ndim, &inputs[0].dims[..2]), (PJRT_DTYPE_F64, 2, &[-1, 3][..]));
    assert_eq!((outputs[0].ndim, outputs[1].ndim, &outputs[1].dims[..2]), (0, 2, &[-1, 3][..]));
    for n in [4, 13] {
        let (mut positions, want_energy, want_gradient) = lennard_jones_system(n);
        let mut dims = [0; PJRT_MAX_NDIM];
        dims[..2].copy_from_slice(&[n as i64, 3]);
        let input =
            pjrt_tensor { data: positions.as_mut_ptr().cast(), nbytes: 24 * n, dtype: PJRT_DTYPE_F64, ndim: 2, dims };
        let (mut energy, mut gradient) = (0f64, vec![0f64; 3 * n]);
        let mut outs = [
            pjrt_tensor { data: (&mut energy as *mut f64).cast(), nbytes: 8, ..pjrt_tensor::EMPTY },
            pjrt_tensor { data: gradient.as_mut_ptr().cast(), nbytes: 24 * n, ..pjrt_tensor::EMPTY },
        ];
        // SAFETY: the input over `positions`, the outputs over `energy` and `gradient`.
        ok(unsafe { pjrt_model_run(model, &input, 1, outs.as_mut_ptr(), 2) });
        assert_eq!((outs[1].dtype, &outs[1].dims[..2]), (PJRT_DTYPE_F64, &[n as i64, 3][..]));
        let close = |got: f64, want: f64| (got - want).abs() <= 1e-12 + 1e-10 * want.abs();
        assert!(close(energy, want_energy), "n = {n}: energy {energy}, JAX's {want_energy}");
        for (i, (&got, &want)) in gradient.iter().zip(&want_gradient).enumerate() {
            assert!(close(got, want), "n = {n}: gradient[{i}] {got}, JAX's {want}");
        }
    }
    ok(pjrt_model_free(model));
    ok(pjrt_runtime_free(runtime));
}
