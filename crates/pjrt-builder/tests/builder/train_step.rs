//! A training step written in Rust with the builder (forward, a hand-written backward, the SGD
//! update) against JAX's `examples/mlp/train_step.mlir` (`jax.value_and_grad` of the same MLP's
//! MSE loss) on `examples/mlp/*.npy`, on both CPU plugins: the loss and every gradient agree
//! within 1e-5 relative (1e-7 absolute for entries near zero), and the SGD update is
//! `p - lr * grad` of those gradients.

use pjrt_builder::{Function, Value};
use pjrt_client::{ElementType, HostArray, Program};
use pjrt_formats::npy::NpyArray;

use crate::harness::{assert_close_f32, run_on_both};

const LEARNING_RATE: f32 = 0.1;

fn repo_file(relative: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(relative)
}

fn npy(name: &str) -> HostArray {
    let array = NpyArray::read(&repo_file(&format!("examples/mlp/{name}.npy"))).expect("an examples/mlp array");
    HostArray::new(ElementType::F32, array.dims, array.data).expect("f32 data")
}

/// `b` (rank 1) broadcast along the rows of a `[rows, b.len]` matrix.
fn rows<'f>(b: &Value<'f>, rows: i64) -> Result<Value<'f>, pjrt_builder::BuildError> {
    b.broadcast_in_dim(&[rows, b.dims()[0]], &[1])
}

fn splat<'f>(f: &'f Function, v: f32, like: &Value<'f>) -> Result<Value<'f>, pjrt_builder::BuildError> {
    f.splat(v, like.dims())
}

/// The step: h = tanh(x w1 + b1), p = logistic(h w2 + b2), loss = mean((p - y)^2); the
/// gradients by the chain rule; the parameters after one SGD step. Outputs: loss, d b1, d b2,
/// d w1, d w2 (as the JAX program), then the new b1, b2, w1, w2.
fn train_step(f: &Function) -> Result<Program, pjrt_builder::BuildError> {
    let b1 = f.parameter(ElementType::F32, &[8])?;
    let b2 = f.parameter(ElementType::F32, &[3])?;
    let w1 = f.parameter(ElementType::F32, &[4, 8])?;
    let w2 = f.parameter(ElementType::F32, &[8, 3])?;
    let x = f.parameter(ElementType::F32, &[5, 4])?;
    let y = f.parameter(ElementType::F32, &[5, 3])?;
    let n = x.dims()[0];
    // Forward.
    let h = x.matmul(&w1)?.add(&rows(&b1, n)?)?.tanh()?;
    let p = h.matmul(&w2)?.add(&rows(&b2, n)?)?.logistic()?;
    let err = p.subtract(&y)?;
    let loss = err.multiply(&err)?.mean(&[0, 1])?;
    // Backward: d loss / d p = 2 (p - y) / count; logistic' = p (1 - p); tanh' = 1 - h^2.
    let count = (err.dims()[0] * err.dims()[1]) as f32;
    let d_p = err.multiply(&splat(f, 2.0 / count, &err)?)?;
    let d_z2 = d_p.multiply(&p.multiply(&splat(f, 1.0, &p)?.subtract(&p)?)?)?;
    let d_b2 = d_z2.reduce_sum(&[0])?;
    let d_w2 = h.transpose(&[1, 0])?.matmul(&d_z2)?;
    let d_h = d_z2.matmul(&w2.transpose(&[1, 0])?)?;
    let d_z1 = d_h.multiply(&splat(f, 1.0, &h)?.subtract(&h.multiply(&h)?)?)?;
    let d_b1 = d_z1.reduce_sum(&[0])?;
    let d_w1 = x.transpose(&[1, 0])?.matmul(&d_z1)?;
    // SGD.
    fn sgd<'f>(f: &'f Function, param: &Value<'f>, grad: &Value<'f>) -> Result<Value<'f>, pjrt_builder::BuildError> {
        param.subtract(&grad.multiply(&f.splat(LEARNING_RATE, grad.dims())?)?)
    }
    let (nb1, nb2, nw1, nw2) = (sgd(f, &b1, &d_b1)?, sgd(f, &b2, &d_b2)?, sgd(f, &w1, &d_w1)?, sgd(f, &w2, &d_w2)?);
    f.finish(&[&loss, &d_b1, &d_b2, &d_w1, &d_w2, &nb1, &nb2, &nw1, &nw2])
}

#[test]
fn a_training_step_built_in_rust_matches_jax_lowered_mlir() {
    let inputs: Vec<HostArray> = ["b1", "b2", "w1", "w2", "x", "y"].iter().map(|n| npy(n)).collect();
    let f = Function::new("train_step");
    let ours = train_step(&f).unwrap();
    let text = std::fs::read_to_string(repo_file("examples/mlp/train_step.mlir")).unwrap();
    let jax = Program::mlir_text(text).unwrap();
    let theirs: Vec<_> = run_on_both(&Function::new("unused"), &jax, &inputs);
    let names = ["loss", "d b1", "d b2", "d w1", "d w2"];
    for ((plugin, got), (_, want)) in run_on_both(&f, &ours, &inputs).into_iter().zip(theirs) {
        for (i, name) in names.iter().enumerate() {
            assert_close_f32(plugin, name, &got[i], &want[i], 1e-5, 1e-7);
        }
        // The update: parameter - learning rate * JAX's gradient.
        for (k, name) in ["b1", "b2", "w1", "w2"].iter().enumerate() {
            let param = inputs[k].to_vec::<f32>().unwrap();
            let grad = want[k + 1].to_vec::<f32>().unwrap();
            let expected: Vec<f32> = param.iter().zip(&grad).map(|(p, g)| p - LEARNING_RATE * g).collect();
            let expected = HostArray::from_elements(inputs[k].dims().to_vec(), &expected).unwrap();
            assert_close_f32(plugin, &format!("new {name}"), &got[5 + k], &expected, 1e-6, 1e-7);
        }
        assert!(got[0].to_vec::<f32>().unwrap()[0] > 0.0, "{plugin}: a positive loss");
    }
}
