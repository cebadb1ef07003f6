//! Custom calls written in Rust (`pjrt_client::ffi`) on both CPU plugins: every attribute and
//! buffer kind round-trips, errors and panics come back as execution errors, mismatches are
//! named, registration is once per plugin and refused for a different handler.

use pjrt_client::ffi::{self, Call, FfiError, Handler, Pred, Rank, RegistrationErrorKind, Signature};
use pjrt_client::num_complex::Complex;
use pjrt_client::{half, Buffer, Client, CompileOptions, Error, ExecuteOptions, LoadedExecutable, NativeType, Program};

use crate::support;

// Few, small helpers around the execute/download API.
fn run(exe: &LoadedExecutable, args: &[&Buffer]) -> pjrt_client::Result<Vec<Buffer>> {
    Ok(exe.execute(args, &ExecuteOptions::new())?.into_vec())
}

fn download<T: NativeType + Clone + Default>(buffer: &Buffer) -> Vec<T> {
    buffer.to_vec::<T>().unwrap()
}

fn compile(client: &Client, mlir: &str) -> LoadedExecutable {
    client.compile(&Program::mlir_text(mlir).unwrap(), &CompileOptions::new()).unwrap()
}

/// A target name unique to this test and plugin (the plugins' registries are permanent and
/// shared by every test of this process).
fn target(test: &str, plugin: &str) -> String {
    let clean = |s: &str| s.replace(|c: char| !c.is_ascii_alphanumeric(), "_");
    format!("pjrt_test_{}_{}", clean(test), clean(plugin))
}

#[test]
fn every_attribute_kind_round_trips() {
    let signature = Signature::new()
        .ret::<f64>(Rank::Exact(1))
        .ret::<i64>(Rank::Exact(1))
        .attr::<i8>("a_i8")
        .attr::<i16>("a_i16")
        .attr::<i32>("a_i32")
        .attr::<i64>("a_i64")
        .attr::<u8>("a_u8")
        .attr::<u16>("a_u16")
        .attr::<u32>("a_u32")
        .attr::<u64>("a_u64")
        .attr::<f32>("a_f32")
        .attr::<f64>("a_f64")
        .attr::<bool>("flag")
        .attr::<bool>("off")
        .attr_array::<i64>("axes")
        .attr_array::<f32>("weights")
        .attr_array::<i32>("empty")
        .attr_str("mode");
    let handler = Handler::new("attrs", signature, |call: &Call| {
        let scalars = [
            call.attr::<i8>("a_i8")? as f64,
            call.attr::<i16>("a_i16")? as f64,
            call.attr::<i32>("a_i32")? as f64,
            call.attr::<i64>("a_i64")? as f64,
            call.attr::<u8>("a_u8")? as f64,
            call.attr::<u16>("a_u16")? as f64,
            call.attr::<u32>("a_u32")? as f64,
            call.attr::<u64>("a_u64")? as f64,
            call.attr::<f32>("a_f32")? as f64,
            call.attr::<f64>("a_f64")?,
            call.attr::<bool>("flag")? as u8 as f64,
            call.attr::<bool>("off")? as u8 as f64,
        ];
        call.ret::<f64>(0)?.copy_from_slice(&scalars)?;
        let axes = call.attr_array::<i64>("axes")?;
        let weights = call.attr_array::<f32>("weights")?;
        let mode = call.attr_str("mode")?;
        let mut out = call.ret::<i64>(1)?;
        let mut values: Vec<i64> = axes.to_vec();
        values.extend(weights.iter().map(|w| (w * 10.0) as i64));
        values.push(call.attr_array::<i32>("empty")?.len() as i64);
        values.push(mode.len() as i64);
        values.push(i64::from(mode == "fast"));
        out.copy_from_slice(&values)?;
        Ok(())
    });
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let t = target("attrs", name);
        ffi::register(&client, &t, &handler).unwrap();
        let mlir = format!(
            r#"func.func public @main() -> (tensor<12xf64>, tensor<8xi64>) {{
  %0:2 = stablehlo.custom_call @{t}() {{api_version = 4 : i32, backend_config = {{
      a_i8 = -8 : i8, a_i16 = -16 : i16, a_i32 = -32 : i32, a_i64 = -64 : i64,
      a_u8 = 8 : ui8, a_u16 = 16 : ui16, a_u32 = 32 : ui32, a_u64 = 64 : ui64,
      a_f32 = 1.5 : f32, a_f64 = 2.25 : f64, flag = true, off = false,
      axes = array<i64: 3, 1, 2>, weights = array<f32: 0.5, 1.5>, empty = array<i32>, mode = "fast"}}}}
      : () -> (tensor<12xf64>, tensor<8xi64>)
  return %0#0, %0#1 : tensor<12xf64>, tensor<8xi64>
}}"#
        );
        let exe = compile(&client, &mlir);
        let out = run(&exe, &[]).unwrap();
        assert_eq!(download::<f64>(&out[0]), [-8., -16., -32., -64., 8., 16., 32., 64., 1.5, 2.25, 1., 0.], "{name}");
        assert_eq!(download::<i64>(&out[1]), [3, 1, 2, 5, 15, 0, 4, 1], "{name}");
    }
}

/// A handler that copies operand 0 to result 0 (any rank), checking the dims agree.
fn identity<T: ffi::FfiElement>(name: &str) -> Handler {
    let signature = Signature::new().arg::<T>(Rank::Any).ret::<T>(Rank::Any);
    Handler::new(name, signature, |call: &Call| {
        let x = call.arg::<T>(0)?;
        let mut y = call.ret::<T>(0)?;
        if x.dims() != y.dims() {
            return Err(FfiError::invalid_argument(format!("dims {:?} vs {:?}", x.dims(), y.dims())));
        }
        y.copy_from_slice(x.as_slice())?;
        Ok(())
    })
}

fn round_trip<T: ffi::FfiElement + NativeType + Clone + Default + PartialEq + std::fmt::Debug>(
    client: &Client,
    plugin: &str,
    mlir_type: &str,
    data: &[T],
    dims: &[i64],
) {
    let t = target(&format!("id_{mlir_type}_{dims:?}"), plugin);
    ffi::register(client, &t, &identity::<T>(&t)).unwrap();
    let shape = if dims.is_empty() {
        format!("tensor<{mlir_type}>")
    } else {
        format!("tensor<{}x{mlir_type}>", dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("x"))
    };
    let mlir = format!(
        "func.func public @main(%x: {shape}) -> {shape} {{\n  %y = stablehlo.custom_call @{t}(%x) {{api_version = 4 : i32}} : ({shape}) -> {shape}\n  return %y : {shape}\n}}"
    );
    let exe = compile(client, &mlir);
    let x = client.upload(data, dims).unwrap();
    let out = run(&exe, &[&x]).unwrap();
    assert_eq!(download::<T>(&out[0]), data, "{plugin} {shape}");
}

#[test]
fn every_buffer_kind_round_trips() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        round_trip::<f32>(&client, name, "f32", &[1.5, -2.0, 3.25, 4.0, 5.0, 6.0], &[2, 3]);
        round_trip::<f64>(&client, name, "f64", &[1e300, -2.5], &[2]);
        round_trip::<f64>(&client, name, "f64", &[7.0], &[]);
        round_trip::<i8>(&client, name, "i8", &[-128, 127], &[2]);
        round_trip::<i16>(&client, name, "i16", &[-300, 300], &[2]);
        round_trip::<i32>(&client, name, "i32", &[i32::MIN, 0, i32::MAX], &[3]);
        round_trip::<i64>(&client, name, "i64", &[i64::MIN, i64::MAX], &[1, 2]);
        round_trip::<u8>(&client, name, "ui8", &[0, 255], &[2]);
        round_trip::<u16>(&client, name, "ui16", &[65535], &[1]);
        round_trip::<u32>(&client, name, "ui32", &[u32::MAX], &[1]);
        round_trip::<u64>(&client, name, "ui64", &[u64::MAX, 1], &[2]);
        round_trip::<half::f16>(&client, name, "f16", &[half::f16::from_f32(0.5)], &[1]);
        round_trip::<half::bf16>(&client, name, "bf16", &[half::bf16::from_f32(-3.0)], &[1]);
        round_trip::<Complex<f32>>(&client, name, "complex<f32>", &[Complex::new(1.0, -2.0)], &[1]);
        round_trip::<Complex<f64>>(&client, name, "complex<f64>", &[Complex::new(0.25, 4.0)], &[1]);
        round_trip::<f32>(&client, name, "f32", &[], &[0, 3]);
        round_trip::<f32>(&client, name, "f32", &[1.0; 16], &[2, 2, 2, 2]);

        // pred: read as bytes, written as bytes.
        let t = target("pred", name);
        let not = Handler::new(
            "not",
            Signature::new().arg::<Pred>(Rank::Exact(1)).ret::<Pred>(Rank::Exact(1)),
            |call: &Call| {
                let x = call.arg::<Pred>(0)?;
                call.ret::<Pred>(0)?.copy_from_iter(x.as_slice().iter().map(|p| Pred::from(!p.get())));
                Ok(())
            },
        );
        ffi::register(&client, &t, &not).unwrap();
        let exe = compile(
            &client,
            &format!("func.func public @main(%x: tensor<3xi1>) -> tensor<3xi1> {{\n  %y = stablehlo.custom_call @{t}(%x) {{api_version = 4 : i32}} : (tensor<3xi1>) -> tensor<3xi1>\n  return %y : tensor<3xi1>\n}}"),
        );
        let out = run(&exe, &[&client.upload(&[true, false, true], &[3]).unwrap()]).unwrap();
        assert_eq!(download::<bool>(&out[0]), [false, true, false], "{name}");
    }
}

fn unary_f32_program(t: &str, config: &str) -> String {
    format!(
        "func.func public @main(%x: tensor<4xf32>) -> tensor<4xf32> {{\n  %y = stablehlo.custom_call @{t}(%x) {{api_version = 4 : i32{config}}} : (tensor<4xf32>) -> tensor<4xf32>\n  return %y : tensor<4xf32>\n}}"
    )
}

fn execution_error(client: &Client, t: &str, config: &str) -> String {
    let exe = compile(client, &unary_f32_program(t, config));
    let x = client.upload(&[1f32, 2., 3., 4.], &[4]).unwrap();
    match run(&exe, &[&x]) {
        Ok(_) => panic!("the call of {t} succeeded"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn errors_and_panics_come_back_as_execution_errors() {
    let sig = || Signature::new().arg::<f32>(Rank::Exact(1)).ret::<f32>(Rank::Exact(1));
    let failing = Handler::new("failing", sig(), |_: &Call| Err(FfiError::invalid_argument("n must be positive")));
    let panicking = Handler::new("panicking", sig(), |_: &Call| panic!("boom in the kernel"));
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let t = target("failing", name);
        ffi::register(&client, &t, &failing).unwrap();
        let message = execution_error(&client, &t, "");
        assert!(message.contains("handler `failing`: n must be positive"), "{name}: {message}");

        let t = target("panicking", name);
        ffi::register(&client, &t, &panicking).unwrap();
        let message = execution_error(&client, &t, "");
        assert!(message.contains("handler `panicking` panicked: boom in the kernel"), "{name}: {message}");
        // The process, the plugin and the client are fine: the same executable fails again the
        // same way, and other programs run.
        let message = execution_error(&client, &t, "");
        assert!(message.contains("panicked"), "{name}: {message}");
        let exe = compile(&client, support::ADD_F32);
        let a = client.upload(&[1f32; 4], &[4]).unwrap();
        assert_eq!(download::<f32>(&run(&exe, &[&a, &a]).unwrap()[0]), [2.; 4]);
    }
}

#[test]
fn mismatches_are_named_and_the_function_does_not_run() {
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = |sig: Signature| {
        let ran = ran.clone();
        Handler::new("strict", sig, move |_: &Call| {
            ran.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(())
        })
    };
    let base = || Signature::new().arg::<f32>(Rank::Exact(1)).ret::<f32>(Rank::Exact(1));
    let cases: Vec<(&str, Signature, &str, &str)> = vec![
        (
            "attr_type",
            base().attr::<f64>("scale"),
            ", backend_config = {scale = 2.0 : f32}",
            "attribute `scale` is a scalar of f32, but the handler declares a scalar of f64",
        ),
        ("missing", base().attr::<i64>("n"), "", "declares the attribute `n`, but the call does not pass it"),
        (
            "extra",
            base(),
            ", backend_config = {n = 3 : i64}",
            "passes the attribute `n`, which the handler does not declare",
        ),
        (
            "kind",
            base().attr_str("mode"),
            ", backend_config = {mode = 3 : i64}",
            "attribute `mode` is a scalar of s64, but the handler declares a string",
        ),
        (
            "rank",
            Signature::new().arg::<f32>(Rank::Exact(2)).ret::<f32>(Rank::Exact(1)),
            "",
            "operand 0 has rank 1, but the handler declares 2",
        ),
        (
            "dtype",
            Signature::new().arg::<i32>(Rank::Exact(1)).ret::<f32>(Rank::Exact(1)),
            "",
            "operand 0 has element type f32, but the handler declares s32",
        ),
        (
            "count",
            Signature::new().ret::<f32>(Rank::Exact(1)),
            "",
            "the handler declares 0 operands, but the call has 1",
        ),
    ];
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        for (case, sig, config, expected) in &cases {
            let t = target(&format!("mismatch_{case}"), name);
            ffi::register(&client, &t, &counted(sig.clone())).unwrap();
            let message = execution_error(&client, &t, config);
            assert!(message.contains(expected), "{name} {case}: {message}");
            assert!(message.contains("handler `strict`"), "{name} {case}: {message}");
        }
    }
    assert_eq!(ran.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[test]
fn registration_is_once_per_plugin_and_refuses_a_different_handler() {
    let sig = || Signature::new().arg::<f32>(Rank::Exact(1)).ret::<f32>(Rank::Exact(1));
    let negate = Handler::new("negate", sig(), |call: &Call| {
        let x = call.arg::<f32>(0)?;
        call.ret::<f32>(0)?.copy_from_iter(x.as_slice().iter().map(|v| -v));
        Ok(())
    });
    let other = Handler::new("other", sig(), |_: &Call| Ok(()));
    // One name on both plugins: each plugin has its own registry.
    let t = "pjrt_test_once_per_plugin";
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        ffi::register(&client, t, &negate).unwrap();
        // The same handler again (a clone too), from another client of the same plugin: nothing to do.
        ffi::register(&client, t, &negate.clone()).unwrap();
        let second = support::client(name, 2);
        ffi::register(&second, t, &negate).unwrap();
        let err = ffi::register(&second, t, &other).unwrap_err();
        assert!(
            matches!(&err, Error::FfiRegistration { kind: RegistrationErrorKind::Conflict, target, platform, .. }
                if target == t && platform == "Host"),
            "{name}: {err:?}"
        );
        assert!(err.to_string().contains("the handler `negate` is registered"), "{err}");
        // Both clients run it.
        for c in [&client, &second] {
            let exe = compile(c, &unary_f32_program(t, ""));
            let out = run(&exe, &[&c.upload(&[1f32, -2., 3., 0.], &[4]).unwrap()]).unwrap();
            assert_eq!(download::<f32>(&out[0]), [-1., 2., -3., -0.], "{name}");
        }
    }
}

use pjrt_client::sys::xla_ffi as x;

/// A raw XLA FFI handler that answers nothing, not even XLA's metadata query.
unsafe extern "C" fn raw_silent(_frame: *mut x::XLA_FFI_CallFrame) -> *mut x::XLA_FFI_Error {
    std::ptr::null_mut()
}

/// A raw XLA FFI handler that answers the metadata query with version `0.MINOR` and does
/// nothing when run. Test code trusting its (real) plugin's frames.
unsafe extern "C" fn raw_answering<const MINOR: i32>(frame: *mut x::XLA_FFI_CallFrame) -> *mut x::XLA_FFI_Error {
    // SAFETY: a frame from a real CPU plugin.
    unsafe {
        let ext = (*frame).extension_start;
        if !ext.is_null() && (*ext).type_ == x::XLA_FFI_Extension_Type::METADATA {
            let metadata = (*ext.cast::<x::XLA_FFI_Metadata_Extension>()).metadata;
            (*metadata).api_version.major_version = 0;
            (*metadata).api_version.minor_version = MINOR;
        }
    }
    std::ptr::null_mut()
}

fn register_raw(client: &Client, t: &str, handler: x::XLA_FFI_Handler) {
    let ffi_ext = client.plugin().ffi_extension().unwrap();
    // SAFETY: a valid XLA FFI handler, alive for the process.
    unsafe { ffi_ext.register_handler(t, "Host", handler as *mut std::ffi::c_void, false) }.unwrap();
}

#[test]
fn a_name_taken_outside_this_module_is_refused() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let t = target("taken", name);
        register_raw(&client, &t, raw_answering::<1>);
        let err = ffi::register(&client, &t, &identity::<f32>("late")).unwrap_err();
        assert!(
            matches!(&err, Error::FfiRegistration { kind: RegistrationErrorKind::TakenElsewhere, .. }),
            "{name}: {err:?}"
        );
    }
}

/// The facts behind proving registrations by compiling: the plugin's `register_handler` answers
/// OK when nothing was registered.
#[test]
fn the_plugins_ok_to_register_handler_proves_nothing() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let compiles = |t: &str| client.compile(&ffi::probe_program(t).unwrap(), &CompileOptions::new()).is_ok();
        // Not answering the metadata query: OK, and nothing registered.
        let t = target("silent", name);
        register_raw(&client, &t, raw_silent);
        assert!(!compiles(&t), "{name}");
        // Claiming a newer FFI minor than the plugin's (0.3 on 0.106, 0.4 on 0.115): OK, and
        // nothing registered.
        let t = target("too_new", name);
        register_raw(&client, &t, raw_answering::<99>);
        assert!(!compiles(&t), "{name}");
        // A different handler for a name already held: OK, and the first one stays.
        let t = target("held", name);
        register_raw(&client, &t, raw_answering::<1>);
        register_raw(&client, &t, raw_answering::<2>);
        assert!(compiles(&t), "{name}");
        // A handler written with this crate claims min(0.4, the plugin's version): kept on both.
        let t = target("ours", name);
        ffi::register(&client, &t, &identity::<f32>("ours")).unwrap();
        assert!(compiles(&t), "{name}");
    }
}

#[test]
fn probe_programs_refuse_odd_names() {
    assert!(ffi::probe_program("ok_name.v2").is_ok());
    for bad in ["", "has space", "quote\"", "new\nline"] {
        assert!(matches!(ffi::probe_program(bad), Err(Error::InvalidArgument(_))), "{bad:?}");
    }
}

/// Frames built by another library (the fake plugin's `fake_ffi_call`, with its own XLA FFI
/// API) reach a handler's C entry point: each mismatch comes back as an XLA FFI error made with
/// that API, naming it; the metadata query is answered with the API's older version.
#[test]
fn hostile_frames_from_the_fake_plugin_get_typed_errors() {
    type FakeCall = unsafe extern "C" fn(Option<x::XLA_FFI_Handler>, i32, *mut std::ffi::c_char, usize) -> i32;
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let r2 = ran.clone();
    let handler = Handler::new(
        "hostile",
        Signature::new().arg::<f32>(Rank::Exact(1)).ret::<f32>(Rank::Exact(1)).attr::<f64>("scale"),
        move |call: &Call| {
            r2.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let scale = call.attr::<f64>("scale")? as f32;
            let x = call.arg::<f32>(0)?;
            call.ret::<f32>(0)?.copy_from_iter(x.as_slice().iter().map(|v| v * scale));
            Ok(())
        },
    );
    let entry = handler.entry_point().unwrap();
    // SAFETY: the fake plugin's library, loaded as the other fake tests load it (never unloaded).
    let library = unsafe { libloading::Library::new(crate::fake_support::fake_library()) }.unwrap();
    // SAFETY: `fake_ffi_call` has this signature (crates/fake-plugin/src/ffi_frames.rs).
    let fake_call: FakeCall = unsafe { *library.get::<FakeCall>(b"fake_ffi_call\0").unwrap() };
    std::mem::forget(library);
    let call = |case: i32| {
        let mut out = vec![0 as std::ffi::c_char; 512];
        // SAFETY: a handler entry point and a 512-byte buffer.
        let rc = unsafe { fake_call(Some(entry), case, out.as_mut_ptr(), out.len()) };
        // SAFETY: NUL-terminated by the fake.
        (rc, unsafe { std::ffi::CStr::from_ptr(out.as_ptr()) }.to_string_lossy().into_owned())
    };
    assert_eq!(call(0), (0, String::new()), "a valid frame runs (and the fake checks the result)");
    assert_eq!(ran.load(std::sync::atomic::Ordering::SeqCst), 1);
    let cases = [
        (1, "3: handler `hostile`: operand 0 has element type f64, but the handler declares f32"),
        (2, "3: handler `hostile`: operand 0 has rank 2, but the handler declares 1"),
        (3, "3: handler `hostile`: the handler declares the attribute `scale`, but the call does not pass it"),
        (4, "3: handler `hostile`: the call passes the attribute `extra`, which the handler does not declare"),
        (5, "3: handler `hostile`: attribute `scale` is a scalar of f32, but the handler declares a scalar of f64"),
        (6, "3: handler `hostile`: the call frame is 160 bytes, shorter than the 168 this crate reads"),
        (9, "3: handler `hostile`: operand 0 has the type tag 7, not BUFFER (1)"),
        (10, "3: handler `hostile`: attribute 0's name is not UTF-8"),
    ];
    for (case, expected) in cases {
        let (rc, message) = call(case);
        assert_eq!(rc, 1, "case {case}: {message}");
        assert!(message.starts_with(expected), "case {case}: {message}");
    }
    assert_eq!(call(8), (2, "0.3".to_owned()), "the metadata query gets min(0.4, 0.3)");
    // A frame whose API is of another major version: refused, but that API cannot be used to
    // report it (its layout is unknown), so nothing comes back; the function did not run.
    assert_eq!(call(7), (0, String::new()));
    assert_eq!(ran.load(std::sync::atomic::Ordering::SeqCst), 1, "the function ran only for the valid frame");
}
