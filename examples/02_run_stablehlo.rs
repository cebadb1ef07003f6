//! Tutorial 02: compile a StableHLO program that JAX produced, run it on `.npy` inputs, check
//! the results against JAX's, and use it in a small training loop.
//!
//! Teaches: `Program::from_file`, `CompileOptions::jax_defaults` (JAX's XLA settings, so the
//! numbers match JAX), the executable's parameter and output shapes, uploading `.npy` arrays
//! (`ClientExt::upload_npy`), `execute`, reading outputs back (`BufferExt::to_npy`, `to_vec`), and
//! keeping parameters on the device between steps.
//!
//! The program is `examples/mlp/train_step.mlir`: `jax.value_and_grad` of the MSE loss of a
//! 2-layer MLP, lowered by JAX 0.10 (`jax.jit(f).lower(...).as_text()`). Parameters, in order:
//! b1 (8,), b2 (3,), w1 (4,8), w2 (8,3), x (5,4), y (5,3); outputs: the loss, then the gradients
//! for b1, b2, w1, w2. JAX's own outputs for the same inputs are in
//! `tests/data/jax/mlp_value_and_grad/out*.npy`.
//!
//! Run it with:
//!
//!     cargo run -p pjrt-examples --example 02_run_stablehlo
//!
//! The same program from the command line: `pjrt run examples/mlp/train_step.mlir --input ...`.

use std::path::PathBuf;

use pjrt_client::{Buffer, Client, ClientOptions, CompileOptions, ExecuteOptions, Placement, Plugin, Program};
use pjrt_formats::npy::NpyArray;
use pjrt_formats::{BufferExt as _, ClientExt as _};

fn repo_path(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join(relative)
}

/// Elementwise closeness, as numpy.allclose with JAX's test tolerances for this program.
fn assert_close(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= 1e-6 + 1e-5 * w.abs(), "{what}[{i}]: got {g}, JAX computed {w}");
    }
}

fn main() -> pjrt_formats::Result<()> {
    let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |line| eprintln!("{line}"))?.load_path())?;
    let client = Client::new(&plugin, &ClientOptions::new())?;

    // 1. Compile. `jax_defaults` applies the XLA options in which JAX's compilation differs
    //    from the plugin's defaults (on CPU: NaN-propagating min/max).
    let program = Program::from_file(repo_path("examples/mlp/train_step.mlir"))?;
    let counts = program.module_counts();
    println!(
        "program: {:?}, mhlo.num_replicas = {:?}, mhlo.num_partitions = {:?}",
        program.format(),
        counts.num_replicas,
        counts.num_partitions
    );
    let exe = client.compile(&program, &CompileOptions::new().jax_defaults(client.platform_name()))?;
    if let Some(parameters) = exe.parameter_shapes() {
        let shapes: Vec<String> = parameters.iter().map(|p| p.to_string()).collect();
        println!("parameters: {}", shapes.join(", "));
    }
    let outputs: Vec<String> = exe.output_shapes().iter().map(|o| o.to_string()).collect();
    println!("outputs:    {}", outputs.join(", "));
    assert_eq!(exe.num_outputs(), 5);

    // 2. Upload the inputs, in parameter order.
    let names = ["b1", "b2", "w1", "w2", "x", "y"];
    let mut inputs: Vec<Buffer> = Vec::new();
    for name in names {
        let array = NpyArray::read(&repo_path(&format!("examples/mlp/{name}.npy")))?;
        println!("input {name}: {} {:?}", array.dtype, array.dims);
        inputs.push(client.upload_npy(&array, None, Placement::Default)?);
    }

    // 3. Run once and compare every output with what JAX computed.
    let args: Vec<&Buffer> = inputs.iter().collect();
    let results = exe.execute(&args, &ExecuteOptions::new())?;
    let result_names = ["loss", "d b1", "d b2", "d w1", "d w2"];
    for (i, (output, name)) in results.iter().zip(result_names).enumerate() {
        let got = output.to_npy()?;
        let want = NpyArray::read(&repo_path(&format!("tests/data/jax/mlp_value_and_grad/out{i}.npy")))?;
        assert_eq!(got.dims, want.dims, "{name}: shape");
        assert_close(name, &got.to_vec::<f32>()?, &want.to_vec::<f32>()?);
        println!("{name:>5}: shape {:?} matches JAX", got.dims);
    }
    let first_loss = results[0].to_vec::<f32>()?[0];
    println!("loss = {first_loss}");

    // 4. A few steps of gradient descent. Parameters are updated on the host here for clarity;
    //    x and y stay on the device, uploaded once.
    let learning_rate = 0.5f32;
    let mut params: Vec<Vec<f32>> =
        inputs[..4].iter().map(|b| b.to_vec::<f32>()).collect::<pjrt_client::Result<_>>()?;
    let dims: Vec<Vec<i64>> =
        inputs[..4].iter().map(|b| b.dimensions().map(<[i64]>::to_vec)).collect::<pjrt_client::Result<_>>()?;
    let mut loss = first_loss;
    for step in 1..=20 {
        let uploaded: Vec<Buffer> =
            params.iter().zip(&dims).map(|(p, d)| client.upload(p, d)).collect::<pjrt_client::Result<_>>()?;
        let mut args: Vec<&Buffer> = uploaded.iter().collect();
        args.extend([&inputs[4], &inputs[5]]);
        let results = exe.execute(&args, &ExecuteOptions::new())?;
        loss = results[0].to_vec::<f32>()?[0];
        for (param, grad) in params.iter_mut().zip(&results[1..]) {
            for (p, g) in param.iter_mut().zip(grad.to_vec::<f32>()?) {
                *p -= learning_rate * g;
            }
        }
        if step % 5 == 0 {
            println!("step {step:>2}: loss {loss:.6}");
        }
    }
    assert!(loss.is_finite() && loss < first_loss, "training lowers the loss: {first_loss} -> {loss}");
    println!("ok: loss {first_loss:.6} -> {loss:.6}");
    Ok(())
}
