//! 04: compile ahead of time, save the executable, load it back without compiling.
//!
//! A compiled executable can be written to an artifact file (`pjrt_formats::artifact`), whose
//! header names the plugin build that made it, and loaded later, in another process, without
//! compiling again. The compile cache (`pjrt_formats::compile_cache`) does the same
//! automatically, keyed by the program, the options, the plugin and the devices.
//!
//! Run with `cargo run -p pjrt-examples --example 04_aot_compile_and_load`.

use pjrt_client::{Client, ClientOptions, CompileOptions, ExecuteOptions, Plugin, Program};
use pjrt_formats::artifact::Artifact;
use pjrt_formats::compile_cache::{CacheOutcome, CompileCache};

const PROGRAM: &str = r#"
module @axpy {
  func.func public @main(%a: tensor<f32>, %x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
    %ab = stablehlo.broadcast_in_dim %a, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %ax = stablehlo.multiply %ab, %x : tensor<4xf32>
    %0 = stablehlo.add %ax, %y : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}"#;

fn main() -> pjrt_formats::Result<()> {
    let plugin = Plugin::load(pjrt_plugins::resolve(None)?.load_path())?;
    let client = Client::new(&plugin, &ClientOptions::new())?;
    let program = Program::mlir_text(PROGRAM)?;
    let options = CompileOptions::new();
    let dir = std::env::temp_dir().join(format!("pjrt-example-04-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| pjrt_client::Error::Io { path: dir.clone(), source: e })?;

    // 1. Compile once and write an artifact (what `pjrt compile` does).
    let executable = client.compile(&program, &options)?;
    let path = dir.join("axpy.pjrt");
    Artifact::from_loaded(&client, &executable, &program, &options)?.write(&path)?;
    println!("wrote {}", path.display());

    // 2. Later (any process, same plugin build): read it, check it fits, load without compiling.
    let artifact = Artifact::read(&path)?;
    println!("compiled for the {}", artifact.header.plugin);
    let loaded = artifact.load(&client)?; // refuses another plugin's artifact with a clear message
    let a = client.upload(&[2f32], &[])?;
    let x = client.upload(&[1f32, 2., 3., 4.], &[4])?;
    let y = client.upload(&[10f32, 20., 30., 40.], &[4])?;
    let out = loaded.execute(&[&a, &x, &y], &ExecuteOptions::new())?[0].to_vec::<f32>()?;
    assert_eq!(out, [12., 24., 36., 48.]);
    println!("artifact result: {out:?}");

    // 3. The compile cache: the first compile is a miss (compiled, stored), the second a hit.
    let cache = CompileCache::open(dir.join("cache"))?;
    let first = cache.compile(&client, &program, &options)?;
    let second = cache.compile(&client, &program, &options)?;
    assert_eq!((first.outcome, second.outcome), (CacheOutcome::Miss, CacheOutcome::Hit));
    println!("cache: compiled in {:?}, then loaded in {:?}", first.compile, second.load);
    let out = second.executable.execute(&[&a, &x, &y], &ExecuteOptions::new())?[0].to_vec::<f32>()?;
    assert_eq!(out, [12., 24., 36., 48.]);

    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
