//! 07: run a model exported from JAX.
//!
//! In Python, `jax.export` turns a jitted function into a self-contained artifact:
//!
//! ```python
//! exported = jax.export.export(jax.jit(mlp))(params, x)
//! open("model.jaxexport", "wb").write(exported.serialize())
//! ```
//!
//! The file holds the StableHLO module plus what is needed to call it: the shapes and dtypes of
//! every input and output, the platforms it was lowered for, which inputs the module actually
//! uses, and (from JAX 0.12 on) the JAX version that wrote it. This example reads the MLP
//! exported by tools/gen_jax_export_testdata.py with JAX 0.12, shows that metadata, runs it with
//! the inputs JAX used, and compares with JAX's outputs. A plugin that reads an older StableHLO
//! than the module's refuses it before compiling (`Error::ProgramVersion`); the example then runs
//! the same MLP exported by JAX 0.10.2, whose StableHLO (1.15.0) every plugin here reads.
//!
//! Run it with `cargo run -p pjrt-examples --example 07_jax_exported_model` (the CPU plugin is
//! found by `pjrt_plugins::resolve`; `cargo run -p pjrt-cli -- plugin install cpu` installs one).

use std::path::{Path, PathBuf};

use pjrt_client::{Client, ClientOptions, Plugin};
use pjrt_formats::jax_export::JaxExport;
use pjrt_formats::npy::NpyArray;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let data: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/jax_export");
    let mut dir = data.join("jax-0.12.0.1/mlp_f32");

    // 1. Read the artifact. Nothing is compiled yet; malformed files are an error, not a crash.
    let mut model = JaxExport::read(dir.join("model.jaxexport"))?;
    println!("{model}");
    println!("function {} exported for {:?}", model.function_name(), model.platforms());
    let paths = model.in_tree().leaf_paths();
    for (aval, path) in model.in_avals().iter().zip(&paths) {
        println!("  input  {path:<14} {aval}");
    }
    for aval in model.out_avals() {
        println!("  output {aval}");
    }

    // 2. A client on whatever plugin is installed (an accelerator plugin wins over the CPU one).
    let found = pjrt_plugins::resolve(None)?;
    let plugin = Plugin::load(found.load_path())?;
    let client = Client::new(&plugin, &ClientOptions::new())?;
    println!("running on {} ({})", client.platform_name(), found.path.display());

    // 3. Inputs: every input of the function, flattened in JAX's order (the dict of params by
    //    key, then x). `run` checks them against the avals, drops unused ones and adds the
    //    platform index for multi-platform exports.
    let read_inputs = |dir: &Path, count: usize| -> Result<Vec<NpyArray>, pjrt_formats::npy::NpyError> {
        (0..count).map(|i| NpyArray::read(&dir.join(format!("in{i}.npy")))).collect()
    };
    let inputs = read_inputs(&dir, model.in_avals().len())?;
    let outputs = match model.run(&client, &inputs) {
        Ok(outputs) => outputs,
        // The plugin reads an older StableHLO than this JAX wrote: the JAX 0.10.2 export runs.
        Err(pjrt_formats::Error::Client(e @ pjrt_client::Error::ProgramVersion { .. })) => {
            println!("refused: {e}");
            dir = data.join("jax-0.10.2/mlp_f32");
            model = JaxExport::read(dir.join("model.jaxexport"))?;
            println!("running the JAX 0.10.2 export instead: {model}");
            model.run(&client, &read_inputs(&dir, model.in_avals().len())?)?
        }
        Err(e) => return Err(e.into()),
    };

    // 4. Compare with what JAX computed.
    let expected = NpyArray::read(&dir.join("out0.npy"))?;
    let got: Vec<f32> = outputs[0].to_vec()?;
    let want: Vec<f32> = expected.to_vec()?;
    let worst = got.iter().zip(&want).map(|(g, w)| (g - w).abs()).fold(0.0f32, f32::max);
    println!("output {:?}: first values {:?}", outputs[0].dims, &got[..3]);
    println!("largest difference from JAX: {worst:e}");
    if worst > 1e-4 {
        return Err(format!("the outputs differ from JAX's by {worst}").into());
    }
    println!("matches JAX");
    Ok(())
}
