//! One small jax.export per op family JAX emits (tests/data/stablehlo_ops, made by
//! tools/gen_stablehlo_ops_testdata.py), sharded ones with Shardy included: read, printed,
//! compiled from the text and run with deterministic inputs made from the avals; the outputs
//! equal the bytecode's bit for bit, on both CPU plugins. JAX's MLIR text of the same module
//! (`<name>.mlir`), parsed and printed by this crate, gives the same outputs too.

use pjrt_client::{Client, ElementType, HostArray, Program};
use pjrt_formats::jax_export::JaxExport;

use crate::round_trip::run;
use crate::{files, support};

/// Every model of the data set, sorted.
pub(crate) fn models() -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for dir in std::fs::read_dir(files::repo().join("tests/data/stablehlo_ops")).unwrap() {
        for f in std::fs::read_dir(dir.unwrap().path()).unwrap() {
            let path = f.unwrap().path();
            if path.extension().is_some_and(|e| e == "jaxexport") {
                out.push(path);
            }
        }
    }
    out.sort();
    assert!(out.len() >= 21, "{} models", out.len());
    out
}

/// Deterministic values of `t`, small enough for indices and shifts, and mixed in sign.
fn input(t: ElementType, dims: Vec<i64>, seed: usize) -> HostArray {
    let count: usize = dims.iter().map(|d| *d as usize).product();
    let mut data = Vec::new();
    for k in 0..count {
        let i = (k * 7 + seed * 13 + 3) % 11;
        let f = (i as f64 - 4.0) * 0.37;
        match t {
            ElementType::F32 => data.extend_from_slice(&(f as f32).to_le_bytes()),
            ElementType::F64 => data.extend_from_slice(&f.to_le_bytes()),
            ElementType::F16 => data.extend_from_slice(&pjrt_client::half::f16::from_f64(f).to_le_bytes()),
            ElementType::BF16 => data.extend_from_slice(&pjrt_client::half::bf16::from_f64(f).to_le_bytes()),
            ElementType::PRED => data.push(u8::from(i % 3 == 0)),
            ElementType::S8 | ElementType::U8 => data.push(i as u8),
            ElementType::S16 | ElementType::U16 => data.extend_from_slice(&(i as u16).to_le_bytes()),
            ElementType::S32 => data.extend_from_slice(&(i as i32 - 3).to_le_bytes()),
            ElementType::U32 => data.extend_from_slice(&(i as u32).wrapping_mul(2_654_435_761).to_le_bytes()),
            ElementType::S64 | ElementType::U64 => data.extend_from_slice(&(i as u64).to_le_bytes()),
            other => panic!("no test input for {other}"),
        }
    }
    HostArray::new(t, dims, data).unwrap()
}

/// The deterministic arguments of a model (its kept parameters).
pub(crate) fn inputs(model: &JaxExport) -> Result<Vec<HostArray>, String> {
    let mut args = Vec::new();
    for (seed, &i) in model.module_kept_var_idx().iter().enumerate() {
        let aval = &model.in_avals()[i];
        let dims = aval.fixed_dims().ok_or("symbolic input")?;
        args.push(input(aval.element_type.ok_or("no element type")?, dims, seed));
    }
    Ok(args)
}

fn round_trip(client: &Client, path: &std::path::Path) -> Result<(), String> {
    let model = JaxExport::read(path).map_err(|e| e.to_string())?;
    let module = pjrt_stablehlo::read_bytecode(model.mlir_module()).map_err(|e| e.to_string())?;
    let text = pjrt_stablehlo::print(&module);
    let args = inputs(&model)?;
    let program = Program::mlir_text(text.clone()).map_err(|e| e.to_string())?;
    let from_text = client.compile(&program, &model.compile_options(client.platform_name()));
    let from_bytecode = match model.compile(client) {
        Ok(exe) => exe,
        // The plugin cannot compile the model itself (jaxlib's LAPACK custom calls are
        // registered by jaxlib, not by the plugin): the text fails the same way.
        Err(e) => {
            let text_error = from_text.err().map(|t| t.to_string()).unwrap_or_default();
            // (pjrt-client adds a hint about the entry function to a text program's error.)
            return if !text_error.is_empty() && text_error.starts_with(&e.to_string()) {
                Ok(())
            } else {
                Err(format!("bytecode: {e}; the text: {text_error:?}"))
            };
        }
    };
    let from_text = from_text.map_err(|e| format!("the printed text does not compile: {e}\n{text}"))?;
    let expected = run(client, &model, &from_bytecode, &args)?;
    let actual = run(client, &model, &from_text, &args)?;
    if expected != actual {
        return Err(format!("outputs differ between the bytecode and the printed text\n{text}"));
    }
    // JAX's own text of the module, parsed and printed by this crate, runs the same.
    let jax_text = std::fs::read_to_string(path.with_extension("mlir")).map_err(|e| e.to_string())?;
    let parsed = pjrt_stablehlo::parse_text(&jax_text).map_err(|e| format!("JAX's text does not parse: {e}"))?;
    let reprinted = pjrt_stablehlo::print(&parsed);
    let program = Program::mlir_text(reprinted.clone()).map_err(|e| e.to_string())?;
    let from_jax_text = client
        .compile(&program, &model.compile_options(client.platform_name()))
        .map_err(|e| format!("JAX's text, parsed and printed, does not compile: {e}\n{reprinted}"))?;
    if run(client, &model, &from_jax_text, &args)? != expected {
        return Err(format!("outputs differ between the bytecode and JAX's text parsed and printed\n{reprinted}"));
    }
    Ok(())
}

fn run_all(plugin: &str) {
    // The linalg programs call JAX's LAPACK kernels: their handlers come from pjrt-lapack.
    pjrt_lapack::register(|| pjrt_plugins::install_verified(&pjrt_plugins::OPENBLAS, |_| ()));
    let client = support::client(plugin, 4);
    let mut failures = Vec::new();
    let mut compared = 0;
    let models = models();
    for path in &models {
        match round_trip(&client, path) {
            Ok(()) => compared += 1,
            Err(e) => failures.push(format!("{}: {e}", path.display())),
        }
    }
    assert!(failures.is_empty(), "{plugin}: {} of {} failed:\n{}", failures.len(), models.len(), failures.join("\n\n"));
    assert!(compared >= 21, "{plugin}: only {compared} compared");
}

#[test]
fn op_families_round_trip_on_cpu_0_115() {
    run_all("cpu");
}

#[test]
fn op_families_round_trip_on_cpu_0_106() {
    run_all("cpu-0.106");
}
