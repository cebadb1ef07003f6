//! Tutorial 09: write a program in Rust instead of lowering it from Python, and train with it.
//!
//! Teaches: `pjrt_builder::Function` (parameters, ops as methods on typed values, `finish`),
//! the `nn` helpers (`matmul`, `mean`, `reduce_sum`), errors at the line that made them,
//! checking a plugin's StableHLO version, donating parameters (`ParameterOptions::aliasing_output`)
//! so the weights stay on the device and are updated in place, step after step.
//!
//! The model is the MLP of `examples/mlp/train_step.mlir` (tutorial 02, lowered by JAX): h =
//! tanh(x w1 + b1), p = logistic(h w2 + b2), loss = mean((p - y)^2). Here the whole step is
//! built in Rust: the forward pass, a hand-written backward pass (the chain rule), and the SGD
//! update. Its first loss is JAX's (`tests/data/jax/mlp_value_and_grad/out0.npy`); then it trains
//! for 300 steps on `examples/mlp/{x,y}.npy`, printing the falling loss.
//!
//! Run it with:
//!
//!     cargo run -p pjrt-examples --example 09_build_a_program

use std::path::PathBuf;

use pjrt_builder::{BuildError, Function, ParameterOptions, Value};
use pjrt_client::{
    Buffer, Client, ClientOptions, CompileOptions, ElementType, ExecuteOptions, Placement, Plugin, Program,
};
use pjrt_formats::npy::NpyArray;
use pjrt_formats::ClientExt as _;

const LEARNING_RATE: f32 = 0.5;
const STEPS: usize = 300;

fn repo_path(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join(relative)
}

/// `v` (a vector) repeated along the rows of a `[rows, len]` matrix: StableHLO has no implicit
/// broadcasting, so the bias is broadcast explicitly.
fn rows<'f>(v: &Value<'f>, rows: i64) -> Result<Value<'f>, BuildError> {
    v.broadcast_in_dim(&[rows, v.dims()[0]], &[1])
}

/// One training step: `(b1, b2, w1, w2, x, y) -> (loss, b1', b2', w1', w2')`. The four weights
/// are donated to their updated outputs (outputs 1-4), so the device reuses their memory.
fn train_step(f: &Function, x_dims: &[i64], y_dims: &[i64], hidden: i64) -> Result<Program, BuildError> {
    let (inputs, outputs) = (x_dims[1], y_dims[1]);
    let donated = |output| ParameterOptions::new().aliasing_output(output);
    let b1 = f.parameter_with(ElementType::F32, &[hidden], donated(1))?;
    let b2 = f.parameter_with(ElementType::F32, &[outputs], donated(2))?;
    let w1 = f.parameter_with(ElementType::F32, &[inputs, hidden], donated(3))?;
    let w2 = f.parameter_with(ElementType::F32, &[hidden, outputs], donated(4))?;
    let x = f.parameter(ElementType::F32, x_dims)?;
    let y = f.parameter(ElementType::F32, y_dims)?;
    let n = x_dims[0];

    // Forward.
    let h = x.matmul(&w1)?.add(&rows(&b1, n)?)?.tanh()?;
    let p = h.matmul(&w2)?.add(&rows(&b2, n)?)?.logistic()?;
    let err = p.subtract(&y)?;
    let loss = err.multiply(&err)?.mean(&[0, 1])?;

    // Backward, by the chain rule: d loss/d p = 2 (p - y) / count; logistic' = p (1 - p);
    // tanh' = 1 - h^2; a matmul's gradients are matmuls with the other operand transposed.
    let ones = |like: &Value<'_>| f.splat(1f32, like.dims());
    let d_p = err.multiply(&f.splat(2.0 / (n * outputs) as f32, err.dims())?)?;
    let d_z2 = d_p.multiply(&p.multiply(&ones(&p)?.subtract(&p)?)?)?;
    let d_w2 = h.transpose(&[1, 0])?.matmul(&d_z2)?;
    let d_z1 = d_z2.matmul(&w2.transpose(&[1, 0])?)?.multiply(&ones(&h)?.subtract(&h.multiply(&h)?)?)?;
    let d_w1 = x.transpose(&[1, 0])?.matmul(&d_z1)?;
    let (d_b1, d_b2) = (d_z1.reduce_sum(&[0])?, d_z2.reduce_sum(&[0])?);

    // SGD: parameter - learning rate * gradient.
    let lr = |grad: &Value<'_>| f.splat(LEARNING_RATE, grad.dims());
    let new_b1 = b1.subtract(&d_b1.multiply(&lr(&d_b1)?)?)?;
    let new_b2 = b2.subtract(&d_b2.multiply(&lr(&d_b2)?)?)?;
    let new_w1 = w1.subtract(&d_w1.multiply(&lr(&d_w1)?)?)?;
    let new_w2 = w2.subtract(&d_w2.multiply(&lr(&d_w2)?)?)?;
    f.finish(&[&loss, &new_b1, &new_b2, &new_w1, &new_w2])
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let load = |name: &str| NpyArray::read(&repo_path(&format!("examples/mlp/{name}.npy")));
    let (b1, b2, w1, w2, x, y) = (load("b1")?, load("b2")?, load("w1")?, load("w2")?, load("x")?, load("y")?);

    // 1. Build the program. Shapes and types are checked as each op is added.
    let f = Function::new("train_step");
    let program = train_step(&f, &x.dims, &y.dims, b1.dims[0])?;
    let text = program.text().unwrap_or_default();
    println!("built {} lines of StableHLO; the first op:", text.lines().count());
    println!("{}", text.lines().nth(2).unwrap_or_default().trim());

    // A mistake is an error at the op that made it, naming the types:
    let g = Function::new("mistake");
    let a = g.parameter(ElementType::F32, &[5, 4])?;
    let wrong = a.matmul(&g.parameter(ElementType::F32, &[8, 3])?).unwrap_err();
    println!("a mismatched matmul: {wrong}");

    // 2. Compile, after checking the plugin reads the StableHLO version the program needs.
    let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |line| eprintln!("{line}"))?.load_path())?;
    f.check_plugin(&plugin)?;
    let client = Client::new(&plugin, &ClientOptions::new())?;
    let exe = client.compile(&program, &CompileOptions::new())?;

    // 3. Upload once; each step's updated weights (outputs 1-4) are the next step's inputs,
    //    written over the donated ones: the weights never leave the device.
    let upload = |a: &NpyArray| client.upload_npy(a, None, Placement::Default);
    let mut weights: Vec<Buffer> = vec![upload(&b1)?, upload(&b2)?, upload(&w1)?, upload(&w2)?];
    let (x, y) = (upload(&x)?, upload(&y)?);
    let jax_first_loss = NpyArray::read(&repo_path("tests/data/jax/mlp_value_and_grad/out0.npy"))?.to_vec::<f32>()?[0];
    let mut losses = Vec::with_capacity(STEPS);
    for step in 0..STEPS {
        let mut args: Vec<&Buffer> = weights.iter().collect();
        args.extend([&x, &y]);
        let outputs = exe.execute(&args, &ExecuteOptions::new())?;
        let loss = outputs[0].to_vec::<f32>()?[0];
        weights = outputs.into_iter().skip(1).collect();
        if step == 0 {
            println!("step   0: loss {loss:.6} (JAX's train_step.mlir: {jax_first_loss:.6})");
            assert!((loss - jax_first_loss).abs() <= 1e-5 * jax_first_loss.abs(), "the first loss is JAX's");
        } else if step % 50 == 0 || step == STEPS - 1 {
            println!("step {step:>3}: loss {loss:.6}");
        }
        losses.push(loss);
    }
    let (first, last) = (losses[0], losses[STEPS - 1]);
    assert!(last.is_finite() && last < 0.5 * first, "training lowers the loss: {first} -> {last}");
    println!("ok: loss {first:.6} -> {last:.6} in {STEPS} steps, the weights on the device throughout");
    Ok(())
}
