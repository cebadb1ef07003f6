//! A shape-polymorphic jax.export model at new input shapes, its refined module sent to the CPU
//! plugin two ways, interleaved: written as MLIR bytecode (a portable artifact: what
//! `jax_export::Runner` sends) and printed as MLIR text (what it sent before). For each shape,
//! `refine + write + compile` and `refine + print + compile`, the two in alternating order, and
//! the medians over the shapes (the side by side of docs/performance.md; criterion's version is
//! `cargo bench -p pjrt-formats --bench runner -- "new signature"`).
//!
//! ```text
//! cargo run --release -p pjrt-formats --example bytecode_or_text -- MODEL SHAPES
//! ```
//!
//! MODEL a `.jaxexport` with one symbolic input; SHAPES that input's shapes, `1x16,2x32,...`
//! (each new). With no arguments (as CI runs every example) the symbolic data
//! set's one-block transformer at two shapes.

use std::time::Instant;

use pjrt_client::{Client, ClientOptions, Plugin, Program};
use pjrt_formats::jax_export::JaxExport;
use pjrt_stablehlo::ir::Type;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let default_model = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/jax_export/symbolic/jax-0.10.2/transformer/model.jaxexport"
    );
    let model = JaxExport::read(args.first().map_or(default_model, String::as_str))?;
    let shapes: Vec<Vec<i64>> = match args.get(1) {
        Some(spec) => spec
            .split(',')
            .map(|s| s.split('x').map(str::parse).collect::<Result<Vec<i64>, _>>())
            .collect::<Result<_, _>>()?,
        None => vec![vec![2, 5, 8], vec![3, 9, 8]],
    };
    let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    let client = Client::new(&plugin, &ClientOptions::new())?;
    eprintln!("plugin {} ({})", plugin.path().display(), client.platform_version());
    let module = pjrt_stablehlo::read_bytecode(model.mlir_module())?;
    let options = model.compile_options(client.platform_name());
    let (mut bytecode_ms, mut text_ms) = (Vec::new(), Vec::new());
    println!("{:>10} {:>12} {:>12} {:>9}", "shape", "bytecode ms", "text ms", "b/t");
    for (k, dims) in shapes.iter().enumerate() {
        let inputs: Vec<(pjrt_client::ElementType, Vec<i64>)> = model
            .in_avals()
            .iter()
            .map(|a| {
                let et = a.element_type.ok_or("an input without a PJRT type")?;
                Ok((et, a.fixed_dims().unwrap_or_else(|| dims.clone())))
            })
            .collect::<Result<_, &str>>()?;
        let args: Vec<Type> = model
            .module_kept_var_idx()
            .iter()
            .map(|&i| Type::tensor(inputs[i].0, &inputs[i].1.iter().map(|&d| d as u64).collect::<Vec<_>>()))
            .collect();
        let kept: Vec<_> = model.module_kept_var_idx().iter().map(|&i| inputs[i].clone()).collect();
        let run = |bytecode: bool| -> Result<f64, Box<dyn std::error::Error>> {
            let t = Instant::now();
            let refined = pjrt_stablehlo::refine(&module, &args)?;
            let program = if bytecode {
                Program::from_module(&refined)?
            } else {
                Program::mlir_text(pjrt_stablehlo::print(&refined))?
            };
            client.compile(&program.with_parameters(kept.clone()), &options)?;
            Ok(t.elapsed().as_secs_f64() * 1e3)
        };
        // Alternate which goes first, so neither always runs on a warmer machine.
        let (b, t) = if k % 2 == 0 {
            let b = run(true)?;
            (b, run(false)?)
        } else {
            let t = run(false)?;
            (run(true)?, t)
        };
        let shape = dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("x");
        println!("{shape:>10} {b:>12.1} {t:>12.1} {:>9.3}", b / t);
        bytecode_ms.push(b);
        text_ms.push(t);
    }
    let ratios: Vec<f64> = bytecode_ms.iter().zip(&text_ms).map(|(b, t)| b / t).collect();
    println!(
        "{:>10} {:>12.1} {:>12.1} {:>9.3}   (medians; the ratio's is of the per-shape ratios)",
        "median",
        median(bytecode_ms),
        median(text_ms),
        median(ratios)
    );
    Ok(())
}
