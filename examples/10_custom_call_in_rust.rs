//! 10: a custom call written in Rust, called from a `jax.export` model.
//!
//! JAX calls native kernels through typed custom calls: in Python,
//!
//! ```python
//! y = jax.ffi.ffi_call("pjrt_tutorial_scale_shift", jax.ShapeDtypeStruct(x.shape, x.dtype))(
//!     x, scale=np.float32(2.0), shift=0.5, repeat=3, mode="affine")
//! exported = jax.export.export(jax.jit(model), disabled_checks=[
//!     jax.export.DisabledSafetyCheck.custom_call("pjrt_tutorial_scale_shift")])(x)
//! ```
//!
//! (`jax.export` refuses custom calls it does not know unless their check is disabled). The
//! model, `tools/gen_ffi_export_testdata.py`, is `scale_shift(tanh(x))` followed by two ordinary
//! operations. This example implements `scale_shift` in Rust with `pjrt_client::ffi`: it declares
//! the operand, the result and the four attributes with their types (a numpy `float32` arrives as
//! `f32`, a Python float as `f64`, a Python int as `i64`, a string as a string), registers the
//! handler on each CPU plugin (0.115 and 0.106), runs the export there, and compares with the
//! outputs numpy computed. It then shows what a mismatch looks like: a handler declaring `shift`
//! as `f32` fails the execution with a message naming the attribute.
//!
//! Run it with `cargo run -p pjrt-examples --example 10_custom_call_in_rust` (it installs the
//! two CPU plugins into the plugin cache when they are missing).

use std::path::{Path, PathBuf};

use pjrt_client::ffi::{self, Call, FfiError, Handler, Rank, Signature};
use pjrt_client::{Client, ClientOptions, ExecuteOptions, Plugin};

use pjrt_formats::jax_export::JaxExport;
use pjrt_formats::npy::NpyArray;

/// The custom-call target the model calls.
const TARGET: &str = "pjrt_tutorial_scale_shift";

/// `y = x * scale + shift`, `repeat` times, on an f32 array of any rank.
fn scale_shift(call: &Call) -> Result<(), FfiError> {
    let x = call.arg::<f32>(0)?;
    let mut y = call.ret::<f32>(0)?;
    let scale: f32 = call.attr("scale")?;
    let shift = call.attr::<f64>("shift")? as f32;
    let repeat: i64 = call.attr("repeat")?;
    let mode = call.attr_str("mode")?;
    if mode != "affine" {
        return Err(FfiError::invalid_argument(format!("unknown mode {mode:?}")));
    }
    if y.dims() != x.dims() {
        return Err(FfiError::invalid_argument("the result's shape differs from the operand's"));
    }
    y.copy_from_iter(x.as_slice().iter().map(|&v| (0..repeat).fold(v, |v, _| v * scale + shift)));
    Ok(())
}

fn signature(shift_is_f64: bool) -> Signature {
    let signature = Signature::new().arg::<f32>(Rank::Any).ret::<f32>(Rank::Any).attr::<f32>("scale");
    let signature = if shift_is_f64 { signature.attr::<f64>("shift") } else { signature.attr::<f32>("shift") };
    signature.attr::<i64>("repeat").attr_str("mode")
}

fn plugin(name: &str) -> Result<Plugin, pjrt_client::Error> {
    let known = pjrt_plugins::known_plugin(name).expect("a known plugin");
    if pjrt_plugins::verified_cached(known).is_err() {
        pjrt_plugins::install(known, |line| eprintln!("{line}"))?;
    }
    // Exactly the bytes that were checked against the plugin's pin.
    Plugin::load(pjrt_plugins::verified_cached(known)?.load_path())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/ffi/jax-0.10.2/scale_shift");
    let model = JaxExport::read(dir.join("model.jaxexport"))?;
    let input = NpyArray::read(&dir.join("in0.npy"))?;
    let expected: Vec<Vec<f32>> =
        (0..2).map(|i| NpyArray::read(&dir.join(format!("out{i}.npy")))?.to_vec()).collect::<Result<_, _>>()?;
    println!("{model}");

    // One handler value; registered once per plugin (clients of a plugin share its registry).
    let handler = Handler::new("scale_shift", signature(true), scale_shift);
    for name in ["cpu", "cpu-0.106"] {
        let plugin = plugin(name)?;
        let client = Client::new(&plugin, &ClientOptions::new())?;
        ffi::register(&client, TARGET, &handler)?;
        let outputs = model.run(&client, std::slice::from_ref(&input))?;
        for (i, (output, want)) in outputs.iter().zip(&expected).enumerate() {
            let got: Vec<f32> = output.to_vec()?;
            let worst = got.iter().zip(want).map(|(g, w)| (g - w).abs()).fold(0.0f32, f32::max);
            println!(
                "{name} (PJRT {}): output {i} {:?}, largest difference {worst:e}",
                plugin.api_version(),
                output.dims
            );
            if worst > 1e-5 {
                return Err(format!("output {i} differs from numpy's by {worst} on {name}").into());
            }
        }
        // A second, different handler for the same target is refused on this plugin.
        let other = Handler::new("scale_shift_v2", signature(true), scale_shift);
        let refused = ffi::register(&client, TARGET, &other).expect_err("a second handler is refused");
        println!("  {refused}");
    }

    // A handler whose declaration does not match the call: the execution fails, naming it.
    let plugin = plugin("cpu")?;
    let client = Client::new(&plugin, &ClientOptions::new())?;
    let strict = Handler::new("scale_shift_f32_shift", signature(false), scale_shift);
    let strict_target = "pjrt_tutorial_scale_shift_strict";
    ffi::register(&client, strict_target, &strict)?;
    let program = pjrt_client::Program::mlir_text(format!(
        "func.func public @main(%x: tensor<3xf32>) -> tensor<3xf32> {{
  %y = stablehlo.custom_call @{strict_target}(%x) {{api_version = 4 : i32,
      backend_config = {{scale = 2.0 : f32, shift = 0.5 : f64, repeat = 1 : i64, mode = \"affine\"}}}}
      : (tensor<3xf32>) -> tensor<3xf32>
  return %y : tensor<3xf32>
}}"
    ))?;
    let exe = client.compile(&program, &pjrt_client::CompileOptions::new())?;
    let x = client.upload(&[1f32, 2., 3.], &[3])?;
    match exe.execute(&[&x], &ExecuteOptions::new()) {
        Ok(_) => return Err("the mismatched handler ran".into()),
        Err(e) => println!("as expected, a handler declaring `shift` as f32 fails:\n  {e}"),
    }
    Ok(())
}
