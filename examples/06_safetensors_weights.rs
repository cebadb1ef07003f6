//! # 6. Weights from a safetensors file
//!
//! Model weights usually come as one `.safetensors` file: a JSON header naming each tensor, then
//! the raw data. This example writes a small one, loads every tensor onto the device in one call
//! (the file read once into memory, which the plugin then uses in place, with a progress report
//! per tensor), and runs a tiny dense layer with those weights.
//!
//! ```text
//! cargo run -p pjrt-examples --example 06_safetensors_weights
//! ```

use pjrt_client::{Client, ClientOptions, CompileOptions, ElementType, ExecuteOptions, Placement, Plugin, Program};
use pjrt_formats::safetensors::{self, SafeTensors, TensorView};
use pjrt_formats::ClientExt as _;

/// `relu(x · w + b)` for one input row of 3 values and 2 outputs.
const DENSE: &str = r#"
func.func @main(%w: tensor<3x2xf32>, %b: tensor<2xf32>, %x: tensor<1x3xf32>) -> tensor<1x2xf32> {
  %xw = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<1x3xf32>, tensor<3x2xf32>) -> tensor<1x2xf32>
  %bb = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<2xf32>) -> tensor<1x2xf32>
  %y = stablehlo.add %xw, %bb : tensor<1x2xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<1x2xf32>
  %r = stablehlo.maximum %y, %zero : tensor<1x2xf32>
  return %r : tensor<1x2xf32>
}"#;

fn le_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn main() -> pjrt_formats::Result<()> {
    // 1. Write the weights. A `TensorView` is dtype + shape + little-endian bytes; the writer
    //    stores tensors in the order given, plus free-form string metadata.
    let w = le_bytes(&[1., -1., 2., 0.5, -3., 1.]);
    let b = le_bytes(&[0.5, -1.]);
    let path = std::env::temp_dir().join(format!("pjrt-example-weights-{}.safetensors", std::process::id()));
    safetensors::write(
        &path,
        &[
            ("dense.w", TensorView::new(ElementType::F32, &[3, 2], &w)?),
            ("dense.b", TensorView::new(ElementType::F32, &[2], &b)?),
        ],
        &[("format", "pjrt-client example")],
    )?;

    // 2. Open it: the file is read once into memory of its own and every header field checked
    //    once, here. (`unsafe { SafeTensors::open_mapped(&path) }` maps it instead, for a file
    //    you can promise nobody rewrites or truncates while it and its buffers live.)
    let file = SafeTensors::open(&path)?;
    println!("{} tensors, {} data bytes, metadata {:?}", file.len(), file.data_bytes(), file.metadata());

    // 3. Upload every tensor in one call; the plugin reads straight from those bytes (aligned
    //    tensors in place: nothing is copied again).
    let plugin = Plugin::load(pjrt_plugins::resolve(None)?.load_path())?;
    let client = Client::new(&plugin, &ClientOptions::new())?;
    let weights = client.upload_safetensors(&file, Placement::Default, |p| {
        println!(
            "  uploaded {:<8} {}/{} tensors, {}/{} bytes",
            p.tensor, p.tensors_done, p.tensors_total, p.bytes_done, p.bytes_total
        );
    })?;
    let weight = |name: &str| weights.iter().find(|(n, _)| n == name).map(|(_, buffer)| buffer);
    let (Some(w), Some(b)) = (weight("dense.w"), weight("dense.b")) else {
        return Err(pjrt_client::Error::InvalidArgument("the file lacks dense.w or dense.b".into()).into());
    };

    // 4. Run the layer on one input row with the uploaded weights.
    let exe = client.compile(&Program::mlir_text(DENSE)?, &CompileOptions::new())?;
    let x = client.upload(&[1f32, 2., 3.], &[1, 3])?;
    let out = exe.execute(&[w, b, &x], &ExecuteOptions::new())?;
    let y = out[0].to_vec::<f32>()?;
    println!("relu(x·w + b) = {y:?}");
    // x·w = [1 + 4 - 9, -1 + 1 + 3] = [-4, 3]; + b = [-3.5, 2]; relu = [0, 2].
    assert_eq!(y, [0., 2.]);

    std::fs::remove_file(&path).map_err(|e| pjrt_client::Error::Io { path: path.clone(), source: e })?;
    Ok(())
}
