//! Time to first result of a shape-polymorphic jax.export model at new input shapes, through
//! `jax_export::Runner` on the CPU plugin (the pjrt side of tools/bench_vs_jax.py
//! `--models symbolic`).
//!
//! ```text
//! cargo run --release -p pjrt-formats --example first_result -- \
//!     MODEL WEIGHTS_DIR REPEATS WARMUP.npy TOKENS.npy...
//! ```
//!
//! The model's inputs are WEIGHTS_DIR/in0.npy, in1.npy, ... then one tokens file. Not timed:
//! the plugin, the client, reading the files, uploading the weights (once, as JAX's side has
//! them on the device), and one call at WARMUP.npy's shape (neither side's first call pays for
//! its one-time setup). Then, for each TOKENS file (a shape not seen before), from the tokens
//! in host memory to the output in host memory: `Runner::executable` (refine + write bytecode +
//! compile), the tokens' upload, the execution and the download; and the same REPEATS times
//! more at that shape (the executable a lookup). One JSON line per file:
//! `{"shape": [b, t], "first_ms": .., "executable_ms": .., "repeat_ms": [..]}` (executable_ms:
//! the first call's `Runner::executable`); the plugin's path and version go to
//! stderr.
//!
//! With no arguments (as CI runs every example) it times the bench transformer
//! (crates/pjrt-stablehlo/benches/data/transformer_symbolic.jaxexport) with zero weights at
//! two new shapes, once each.

use std::path::Path;
use std::time::Instant;

use pjrt_client::{Buffer, Client, ClientOptions, ExecuteOptions, Plugin, UploadOptions};
use pjrt_formats::jax_export::{JaxExport, Runner};
use pjrt_formats::npy::NpyArray;
use pjrt_formats::BufferExt as _;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.is_empty() && args.len() < 4 {
        return Err("usage: first_result [MODEL WEIGHTS_DIR REPEATS WARMUP.npy TOKENS.npy...]".into());
    }
    let zero_tokens =
        |dims: Vec<i64>| NpyArray::from_elements(dims.clone(), &vec![0i32; dims.iter().product::<i64>() as usize]);
    let default_model =
        concat!(env!("CARGO_MANIFEST_DIR"), "/../pjrt-stablehlo/benches/data/transformer_symbolic.jaxexport");
    let model_path = args.first().map_or(default_model, String::as_str);
    // The CPU plugin `pjrt run` would take (PJRT_PLUGIN names another).
    let found = pjrt_plugins::resolve_or_install(None, |_| ())?;
    let plugin = Plugin::load(found.load_path())?;
    let client = Client::new(&plugin, &ClientOptions::new())?;
    eprintln!("plugin {} ({} {})", found.path.display(), client.platform_name(), client.platform_version());
    let model = JaxExport::read(model_path)?;
    let n = model.in_avals().len();
    // The weights go first and the module keeps every input: buffers map to arguments 1:1.
    if model.module_kept_var_idx() != (0..n).collect::<Vec<_>>() || model.platforms().len() != 1 {
        return Err("the model must keep every input and have one platform".into());
    }
    let repeats: usize = args.get(2).map_or(Ok(1), |r| r.parse())?;
    let device = client.addressable_devices().into_iter().next().ok_or("no device")?;
    let upload = |array: &NpyArray| -> Result<Buffer, Box<dyn std::error::Error>> {
        Ok(client.upload_with(&array.to_host_array(None)?, &UploadOptions::new().device(&device))?)
    };
    let mut weights = Vec::with_capacity(n - 1);
    for i in 0..n - 1 {
        let array = match args.get(1) {
            Some(dir) => NpyArray::read(&Path::new(dir).join(format!("in{i}.npy")))?,
            None => {
                let aval = &model.in_avals()[i];
                let dims = aval.fixed_dims().ok_or("a weight has a symbolic shape")?;
                let et = aval.element_type.ok_or("a weight has no PJRT type")?;
                let bytes = et.host_bytes(dims.iter().product::<i64>() as usize).ok_or("a weight too large")?;
                NpyArray::new(pjrt_formats::dtype_of(et).ok_or("a weight without a .npy dtype")?, dims, vec![0; bytes])?
            }
        };
        weights.push(upload(&array)?);
    }
    let runner = Runner::new(model, &client);
    // Shapes of the weights (fixed), then the tokens'.
    let fixed: Vec<_> =
        runner.model().in_avals()[..n - 1].iter().map(|a| (a.element_type.unwrap(), a.fixed_dims().unwrap())).collect();
    // The executable's share of the call (refine + write bytecode + compile, or the lookup), in ms.
    let call = |tokens: &NpyArray| -> Result<f64, Box<dyn std::error::Error>> {
        let t = Instant::now();
        let mut shapes = fixed.clone();
        shapes.push((pjrt_formats::element_type_of(tokens.dtype), tokens.dims.clone()));
        let exe = runner.executable(&shapes)?;
        let executable_ms = t.elapsed().as_secs_f64() * 1e3;
        let tokens = upload(tokens)?;
        let mut refs: Vec<&Buffer> = weights.iter().collect();
        refs.push(&tokens);
        let outputs = exe.execute(&refs, &ExecuteOptions::new())?;
        outputs[0].to_npy()?;
        Ok(executable_ms)
    };
    let (warmup, shapes) = if args.is_empty() {
        (zero_tokens(vec![1, 8])?, vec![zero_tokens(vec![1, 16])?, zero_tokens(vec![2, 16])?])
    } else {
        let shapes = args[4..].iter().map(|p| NpyArray::read(Path::new(p))).collect::<Result<Vec<_>, _>>()?;
        (NpyArray::read(Path::new(&args[3]))?, shapes)
    };
    call(&warmup)?;
    for tokens in &shapes {
        let t = Instant::now();
        let executable_ms = call(tokens)?;
        let first_ms = t.elapsed().as_secs_f64() * 1e3;
        let mut repeat_ms = Vec::with_capacity(repeats);
        for _ in 0..repeats {
            let t = Instant::now();
            call(tokens)?;
            repeat_ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
        let repeat: Vec<String> = repeat_ms.iter().map(|ms| format!("{ms:.4}")).collect();
        println!(
            r#"{{"shape": {:?}, "first_ms": {first_ms:.4}, "executable_ms": {executable_ms:.4}, "repeat_ms": [{}]}}"#,
            tokens.dims,
            repeat.join(", ")
        );
    }
    Ok(())
}
