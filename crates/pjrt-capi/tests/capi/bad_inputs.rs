//! Bad input from C, each a status with a code and a message, never a crash: NULL pointers,
//! options without their size, plugins and files that are not there, damaged model files,
//! tensors of the wrong count, dtype, rank, shape or size, bools that are not 0 or 1.

use std::ffi::CString;
use std::ptr::{null, null_mut};

use pjrt::*;
use pjrt_formats::npy::NpyArray;

use crate::support::*;

/// `status` is an invalid-argument error whose message contains `text`.
#[track_caller]
fn invalid(status: *mut pjrt_status, text: &str) {
    let (code, message) = error(status);
    assert_eq!(code, PJRT_CODE_INVALID_ARGUMENT, "{message}");
    assert!(message.contains(text), "{text:?} not in {message:?}");
}

#[test]
fn null_pointers_are_refused() {
    // SAFETY (all below): NULL is what is tested; nothing else is passed.
    invalid(unsafe { pjrt_runtime_new(null(), null_mut()) }, "runtime (where the new runtime goes) is NULL");
    let runtime = runtime();
    let mut model = null_mut();
    invalid(unsafe { pjrt_model_load(runtime, null(), null(), &mut model) }, "path is NULL");
    invalid(unsafe { pjrt_model_load(null(), c"x".as_ptr(), null(), &mut model) }, "runtime is NULL");
    let path = CString::new(data(&format!("{MLP}/model.jaxexport")).to_str().unwrap()).unwrap();
    invalid(unsafe { pjrt_model_load(runtime, path.as_ptr(), null(), null_mut()) }, "model (where");
    invalid(unsafe { pjrt_model_load(runtime, c"".as_ptr(), null(), &mut model) }, "path is an empty string");
    let model = load(runtime, &format!("{MLP}/model.jaxexport"), None);
    invalid(unsafe { pjrt_model_signature(model, null_mut()) }, "signature is NULL");
    invalid(unsafe { pjrt_model_run(model, null(), 5, null_mut(), 1) }, "inputs is NULL");
    let arrays = arrays(MLP, "in");
    let tensors: Vec<pjrt_tensor> = arrays.iter().map(tensor).collect();
    invalid(unsafe { pjrt_model_run(model, tensors.as_ptr(), 5, null_mut(), 1) }, "outputs is NULL");
    invalid(unsafe { pjrt_model_run(null(), tensors.as_ptr(), 5, null_mut(), 1) }, "model is NULL");
    // Freeing NULL is nothing, as free(NULL) is.
    ok(pjrt_model_free(null_mut()));
    ok(pjrt_runtime_free(null_mut()));
    ok(unsafe { pjrt_tensor_free(null_mut()) });
    pjrt_status_free(null_mut());
    assert_eq!(pjrt_status_code(null()), PJRT_CODE_OK);
    ok(pjrt_model_free(model));
    ok(pjrt_runtime_free(runtime));
}

#[test]
fn options_must_say_their_size() {
    let mut options = pjrt_options {
        struct_size: 0,
        plugin: null(),
        compile_cache: null(),
        cpu_devices: 0,
        device: 0,
        install_plugin: 0,
        client_options: std::ptr::null(),
    };
    let mut runtime = null_mut();
    // SAFETY (all below): valid options and out-pointer.
    invalid(unsafe { pjrt_runtime_new(&options, &mut runtime) }, "struct_size is 0: set it to sizeof(pjrt_options)");
    options.struct_size = std::mem::size_of::<pjrt_options>();
    options.plugin = c"no-such-plugin".as_ptr();
    let (code, message) = error(unsafe { pjrt_runtime_new(&options, &mut runtime) });
    assert_eq!(code, PJRT_CODE_NOT_FOUND, "{message}");
    assert!(message.contains("no-such-plugin"), "{message}");
    options.plugin = c"/nonexistent/libnothing.so".as_ptr();
    let (code, message) = error(unsafe { pjrt_runtime_new(&options, &mut runtime) });
    assert_ne!(code, PJRT_CODE_OK);
    assert!(message.contains("/nonexistent/libnothing.so"), "{message}");
    options.plugin = c"cpu".as_ptr();
    options.client_options = c"asynchronous".as_ptr();
    invalid(unsafe { pjrt_runtime_new(&options, &mut runtime) }, "a client option is NAME=VALUE, got `asynchronous`");
    options.client_options = c"asynchronous=false, no_such_option=1".as_ptr();
    let (code, message) = error(unsafe { pjrt_runtime_new(&options, &mut runtime) });
    assert!(message.contains("no_such_option"), "the 0.115 plugin refuses names it does not know: {code}: {message}");
    options.client_options = null();
    options.cpu_devices = -1;
    invalid(unsafe { pjrt_runtime_new(&options, &mut runtime) }, "cpu_devices is -1");
    options.cpu_devices = 0;
    options.install_plugin = 1;
    let status = unsafe { pjrt_runtime_new(&options, &mut runtime) };
    if cfg!(feature = "install") {
        ok(status); // installed already: found
        ok(pjrt_runtime_free(runtime));
    } else {
        let (code, message) = error(status);
        assert_eq!(code, PJRT_CODE_UNIMPLEMENTED, "{message}");
        assert!(message.contains("`install` feature"), "{message}");
        assert!(runtime.is_null());
    }
}

#[test]
fn missing_and_damaged_model_files() {
    let runtime = runtime();
    let (code, message) = try_load(runtime, "no/such/model.jaxexport", None).unwrap_err();
    assert_eq!(code, PJRT_CODE_NOT_FOUND, "{message}");
    assert!(message.contains("no/such/model.jaxexport"), "{message}");
    let dir = std::env::temp_dir().join(format!("pjrt-capi-damaged-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bytes = std::fs::read(data(&format!("{MLP}/model.jaxexport"))).unwrap();
    // Cut short, and bytes flipped in the middle.
    let mut flipped = bytes.clone();
    for b in &mut flipped[bytes.len() / 3..bytes.len() / 3 + 64] {
        *b ^= 0x5a;
    }
    for (name, content) in [
        ("cut.jaxexport", &bytes[..bytes.len() / 2]),
        ("flipped.jaxexport", &flipped[..]),
        ("empty.jaxexport", &[][..]),
        ("garbage.mlir", &b"func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> { bogus }"[..]),
        ("garbage.mlirbc", &b"ML\xefR\x00\x01\x02"[..]),
        ("truncated.pjrt", &b"PJRTAOT"[..]),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, content).unwrap();
        match try_load(runtime, path.to_str().unwrap(), None) {
            Ok(model) => {
                // Some damage leaves a model that still reads (the flipped bytes may fall in
                // a constant): it must then run or fail cleanly.
                let arrays = arrays(MLP, "in");
                let tensors: Vec<pjrt_tensor> = arrays.iter().map(tensor).collect();
                let _ = run_f32(model, &tensors, 1);
                ok(pjrt_model_free(model));
            }
            Err((code, message)) => {
                assert_ne!(code, PJRT_CODE_INTERNAL, "{name}: {message}");
                assert!(message.contains(name), "{name}: the file is named: {message}");
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    ok(pjrt_runtime_free(runtime));
}

#[test]
fn tensors_that_do_not_fit_are_refused_before_anything_is_read() {
    let runtime = runtime();
    let model = load(runtime, &format!("{MLP}/model.jaxexport"), None);
    let arrays = arrays(MLP, "in");
    let good: Vec<pjrt_tensor> = arrays.iter().map(tensor).collect();
    let run = |inputs: &[pjrt_tensor], n_outputs: usize| run_f32(model, inputs, n_outputs).map(|_| ());
    let check = |inputs: Vec<pjrt_tensor>, text: &str| {
        let (code, message) = run(&inputs, 1).unwrap_err();
        assert_eq!(code, PJRT_CODE_INVALID_ARGUMENT, "{message}");
        assert!(message.contains(text), "{text:?} not in {message:?}");
    };
    let with = |k: usize, edit: &dyn Fn(&mut pjrt_tensor)| {
        let mut inputs = good.clone();
        edit(&mut inputs[k]);
        inputs
    };
    check(good[..4].to_vec(), "n_inputs is 4, but the model takes 5");
    assert!(run(&good, 2).unwrap_err().1.contains("n_outputs is 2, but the model gives 1"));
    check(with(4, &|t| t.dtype = PJRT_DTYPE_F64), "inputs[4]");
    check(with(4, &|t| t.dtype = 99), "inputs[4]: dtype 99 is not an element type");
    check(with(4, &|t| t.ndim = 3), "inputs[4]");
    check(with(4, &|t| t.ndim = 9), "ndim 9 is not in 0..=8");
    check(with(4, &|t| t.ndim = -1), "ndim -1");
    check(with(4, &|t| t.dims[1] = -8), "negative");
    check(with(4, &|t| t.nbytes -= 4), "inputs[4]: nbytes is 124 but f32[4, 8] takes 128 bytes");
    check(with(4, &|t| t.nbytes += 4), "nbytes is 132");
    check(with(4, &|t| t.data = null_mut()), "inputs[4]: data is NULL");
    check(
        with(4, &|t| {
            t.dims[0] = 1 << 40;
            t.dims[1] = 1 << 40;
        }),
        "more bytes than memory holds",
    );
    // Right size for another shape: the model's shape is checked too.
    check(
        with(4, &|t| {
            t.dims[0] = 8;
            t.dims[1] = 4;
        }),
        "inputs[4]",
    );
    ok(pjrt_model_free(model));
    ok(pjrt_runtime_free(runtime));
}

#[test]
fn bools_must_be_0_or_1_and_integer_outputs_come_back_exact() {
    let runtime = runtime();
    let dir = "jax_export/jax-0.10.2/int_bool";
    let model = load(runtime, &format!("{dir}/model.jaxexport"), None);
    let arrays = arrays(dir, "in");
    let mut tensors: Vec<pjrt_tensor> = arrays.iter().map(tensor).collect();
    assert_eq!(tensors[2].dtype, PJRT_DTYPE_BOOL);
    let want = crate::support::arrays(dir, "out");
    let mut outputs = [pjrt_tensor::EMPTY; 3];
    // SAFETY: inputs over live arrays; outputs with NULL data.
    ok(unsafe { pjrt_model_run(model, tensors.as_ptr(), 3, outputs.as_mut_ptr(), 3) });
    for (output, want) in outputs.iter_mut().zip(&want) {
        // SAFETY: `nbytes` bytes the library allocated.
        let got = unsafe { std::slice::from_raw_parts(output.data as *const u8, output.nbytes) };
        assert_eq!(got, want.data.as_slice());
        assert_eq!(output.dtype, pjrt_formats::npy::element_type_of(want.dtype).to_i32());
        // SAFETY: an output the library allocated.
        ok(unsafe { pjrt_tensor_free(output) });
        // A second free is an error, not a double free.
        // SAFETY: as above; its data is NULL now, which is ignored.
        ok(unsafe { pjrt_tensor_free(output) });
    }
    let mut bools = arrays[2].data.clone();
    bools[3] = 2;
    tensors[2].data = bools.as_mut_ptr().cast();
    // SAFETY: as above.
    let (code, message) = error(unsafe { pjrt_model_run(model, tensors.as_ptr(), 3, outputs.as_mut_ptr(), 3) });
    assert_eq!(code, PJRT_CODE_INVALID_ARGUMENT);
    assert!(message.contains("inputs[2]: bool element 3 is 2, not 0 or 1"), "{message}");
    let _ = NpyArray::read;
    ok(pjrt_model_free(model));
    ok(pjrt_runtime_free(runtime));
}
