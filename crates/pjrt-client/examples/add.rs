//! Compile a StableHLO program and run it on the first device of the plugin that
//! `pjrt_plugins::resolve` finds (install one with `cargo run -p pjrt-cli -- plugin install cpu`).
//!
//!     cargo run -p pjrt-client --example add

use pjrt_client::{Client, ClientOptions, CompileOptions, ExecuteOptions, HostSource, Plugin, Program, UploadOptions};

const PROGRAM: &str = r#"
func.func @main(%a: tensor<2x2xf32>, %b: tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<f32>) {
  %sum = stablehlo.add %a, %b : tensor<2x2xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %total = stablehlo.reduce(%sum init: %zero) applies stablehlo.add across dimensions = [0, 1]
      : (tensor<2x2xf32>, tensor<f32>) -> tensor<f32>
  return %sum, %total : tensor<2x2xf32>, tensor<f32>
}
"#;

fn main() -> pjrt_client::Result<()> {
    let found = pjrt_plugins::resolve(std::env::args().nth(1).as_deref())?;
    let plugin = Plugin::load(found.load_path())?;
    println!("plugin {} (PJRT API {})", plugin.path().display(), plugin.api_version());
    let client = Client::new(&plugin, &ClientOptions::new())?;
    let device = client.addressable_devices()[0];
    println!("running on {}", device.to_string()?);

    let exe = client.compile(&Program::mlir_text(PROGRAM)?, &CompileOptions::new())?;
    let a =
        client.upload_with(HostSource::slice(&[1f32, 2., 3., 4.], &[2, 2]), &UploadOptions::new().device(&device))?;
    let b = client
        .upload_with(HostSource::slice(&[10f32, 20., 30., 40.], &[2, 2]), &UploadOptions::new().device(&device))?;
    let outputs = exe.execute(&[&a, &b], &ExecuteOptions::new())?;
    println!("sum   = {:?}", outputs[0].to_vec::<f32>()?);
    println!("total = {:?}", outputs[1].to_vec::<f32>()?);
    Ok(())
}
