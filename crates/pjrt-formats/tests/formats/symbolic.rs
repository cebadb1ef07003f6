//! Shape-polymorphic `jax.export` models (tests/data/jax_export/symbolic/jax-0.10.2, written by
//! tools/gen_symbolic_testdata.py with JAX's answers): each runs through a [`Runner`] on both
//! CPU plugins at every concrete shape set the manifest lists, equal to JAX's outputs; shapes
//! that break the model's constraints give JAX's own error text. A model exported for several
//! devices (sharded_batch: 2) runs on a client with that many. Refined modules, from the models
//! and from their MLIR text, are sent as MLIR bytecode.

use std::path::{Path, PathBuf};

use pjrt_formats::jax_export::{JaxExport, Runner};
use pjrt_formats::npy::{Dtype, NpyArray};
use serde_json::Value as Json;

use crate::support;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/jax_export/symbolic/jax-0.10.2")
}

fn manifest() -> Json {
    serde_json::from_str(&std::fs::read_to_string(data_dir().join("manifest.json")).unwrap()).unwrap()
}

fn read_set(dir: &Path, prefix: &str) -> Vec<NpyArray> {
    (0..)
        .map(|i| dir.join(format!("{prefix}{i}.npy")))
        .take_while(|p| p.exists())
        .map(|p| NpyArray::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .collect()
}

/// Elements as f64 (integers exactly, bools as 0/1), for comparison.
fn values(a: &NpyArray) -> Vec<f64> {
    let d = &a.data;
    match a.dtype {
        Dtype::F32 => d.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64).collect(),
        Dtype::F64 => d.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect(),
        Dtype::I32 => d.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap()) as f64).collect(),
        Dtype::I64 => d.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap()) as f64).collect(),
        Dtype::U32 => d.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap()) as f64).collect(),
        Dtype::Bool | Dtype::U8 => d.iter().map(|&b| b as f64).collect(),
        other => panic!("no comparison for {other}"),
    }
}

fn compare(ours: &NpyArray, jax: &NpyArray, rtol: f64, atol: f64) -> Result<(), String> {
    if ours.dims != jax.dims || ours.dtype != jax.dtype {
        return Err(format!("{}{:?}, JAX's {}{:?}", ours.dtype, ours.dims, jax.dtype, jax.dims));
    }
    for (i, (x, y)) in values(ours).into_iter().zip(values(jax)).enumerate() {
        let same = (x.is_nan() && y.is_nan()) || x == y || (x - y).abs() <= atol + rtol * y.abs();
        if !same {
            return Err(format!("element {i}: {x}, JAX's {y}"));
        }
    }
    Ok(())
}

fn run_all(plugin: &str) {
    // One client per device count: a model exported for several devices runs on that many.
    let mut clients: Vec<(u32, pjrt_client::Client)> = Vec::new();
    let m = manifest();
    let cases = m["cases"].as_array().unwrap();
    let mut failures = Vec::new();
    let (mut ran, mut refused) = (0, 0);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let model = JaxExport::read(data_dir().join(case["model"].as_str().unwrap())).unwrap();
        assert!(model.is_polymorphic(), "{name}");
        let devices = model.nr_devices();
        if case.get("nr_devices").is_some() {
            assert_eq!(case["nr_devices"], devices, "{name}");
        }
        if !clients.iter().any(|(n, _)| *n == devices) {
            clients.push((devices, support::client(plugin, devices as i64)));
        }
        let client = &clients.iter().find(|(n, _)| *n == devices).unwrap().1;
        // A refined module is sent as MLIR bytecode, written for the version the model was
        // exported for (the compile writes it again for an older plugin).
        let first = read_set(&data_dir().join(case["ok"][0]["dir"].as_str().unwrap()), "in");
        let refined = model.program_for(&model.input_shapes(&first)).unwrap();
        assert!(refined.text().is_none(), "{name}: refined to text");
        assert_eq!(refined.stablehlo_target(), model.stablehlo_version(), "{name}");
        let runner = Runner::new(model, client);
        let (rtol, atol) = (case["rtol"].as_f64().unwrap(), case["atol"].as_f64().unwrap());
        for set in case["ok"].as_array().unwrap() {
            let dir = data_dir().join(set["dir"].as_str().unwrap());
            let (inputs, expected) = (read_set(&dir, "in"), read_set(&dir, "out"));
            match runner.run(&inputs) {
                Ok(outputs) if outputs.len() == expected.len() => {
                    for (k, (o, e)) in outputs.iter().zip(&expected).enumerate() {
                        if let Err(why) = compare(o, e, rtol, atol) {
                            failures.push(format!("{}: output {k}: {why}", set["dir"]));
                        }
                    }
                    ran += 1;
                }
                Ok(outputs) => {
                    failures.push(format!("{}: {} outputs, JAX has {}", set["dir"], outputs.len(), expected.len()))
                }
                Err(e) => failures.push(format!("{}: {e}", set["dir"])),
            }
        }
        // Each distinct signature compiled once: as many executables as shape sets.
        let distinct = case["ok"].as_array().unwrap().len();
        if runner.cached() != distinct && failures.is_empty() {
            failures.push(format!("{name}: {} executables kept for {distinct} signatures", runner.cached()));
        }
        for set in case["bad"].as_array().unwrap() {
            let dir = data_dir().join(set["dir"].as_str().unwrap());
            let wanted = set["error"].as_str().unwrap();
            match runner.run(&read_set(&dir, "in")) {
                Ok(_) => failures.push(format!("{}: ran, JAX says: {wanted}", set["dir"])),
                Err(e) if e.to_string().contains(wanted) => refused += 1,
                Err(e) => failures.push(format!("{}: {e}\n  JAX says: {wanted}", set["dir"])),
            }
        }
    }
    assert!(failures.is_empty(), "{plugin}: {} failures:\n{}", failures.len(), failures.join("\n"));
    assert!(ran >= 30 && refused >= 15, "{plugin}: ran {ran} shape sets, refused {refused}");
    assert!(clients.iter().any(|(n, _)| *n == 2), "{plugin}: no multi-device case ran");
}

/// JAX's MLIR text of each single-device model (`program.mlir`, `exported.mlir_module()`),
/// refined by [`TextProgram`] for each shape set: JAX's outputs; the shapes JAX refuses give an
/// error (JAX's own text where the module's shape assertion is what refuses them).
fn run_all_text(plugin: &str) {
    use pjrt_formats::mlir_text::TextProgram;
    use pjrt_formats::{BufferExt as _, ClientExt as _};
    let client = support::client(plugin, 1);
    let m = manifest();
    let mut failures = Vec::new();
    let (mut ran, mut refused) = (0, 0);
    for case in m["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let model = JaxExport::read(data_dir().join(case["model"].as_str().unwrap())).unwrap();
        if model.nr_devices() > 1 {
            continue;
        }
        let text = TextProgram::read(data_dir().join(name).join("program.mlir")).unwrap();
        assert!(text.is_dynamic(), "{name}");
        let options = model.compile_options(client.platform_name());
        let (rtol, atol) = (case["rtol"].as_f64().unwrap(), case["atol"].as_f64().unwrap());
        let run = |inputs: &[NpyArray]| -> Result<Vec<NpyArray>, String> {
            let kept: Vec<&NpyArray> = model.module_kept_var_idx().iter().map(|&i| &inputs[i]).collect();
            let types = text.parameter_element_types();
            let shapes: Vec<_> = kept
                .iter()
                .zip(&types)
                .map(|(a, t)| (t.unwrap_or(pjrt_formats::element_type_of(a.dtype)), a.dims.clone()))
                .collect();
            let program = text.program_for(&shapes, &[]).map_err(|e| e.to_string())?;
            // Refined text is sent as MLIR bytecode too.
            assert!(program.text().is_none(), "{name}: refined to text");
            let exe = client.compile(&program, &options).map_err(|e| e.to_string())?;
            let device = client.addressable_devices()[0];
            let buffers = kept
                .iter()
                .zip(&types)
                .map(|(a, t)| client.upload_npy(a, *t, pjrt_client::Placement::Device(&device)))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| e.to_string())?;
            let refs: Vec<&pjrt_client::Buffer> = buffers.iter().collect();
            let outputs = exe.execute(&refs, &pjrt_client::ExecuteOptions::new()).map_err(|e| e.to_string())?;
            outputs.iter().map(|o| o.to_npy().map_err(|e| e.to_string())).collect()
        };
        for set in case["ok"].as_array().unwrap() {
            let dir = data_dir().join(set["dir"].as_str().unwrap());
            let (inputs, expected) = (read_set(&dir, "in"), read_set(&dir, "out"));
            match run(&inputs) {
                Ok(outputs) if outputs.len() == expected.len() => {
                    for (k, (o, e)) in outputs.iter().zip(&expected).enumerate() {
                        if let Err(why) = compare(o, e, rtol, atol) {
                            failures.push(format!("{} (text): output {k}: {why}", set["dir"]));
                        }
                    }
                    ran += 1;
                }
                Ok(outputs) => failures.push(format!(
                    "{} (text): {} outputs, JAX has {}",
                    set["dir"],
                    outputs.len(),
                    expected.len()
                )),
                Err(e) => failures.push(format!("{} (text): {e}", set["dir"])),
            }
        }
        for set in case["bad"].as_array().unwrap() {
            let dir = data_dir().join(set["dir"].as_str().unwrap());
            let wanted = set["error"].as_str().unwrap();
            match run(&read_set(&dir, "in")) {
                Ok(_) => failures.push(format!("{} (text): ran, JAX says: {wanted}", set["dir"])),
                Err(e) if wanted.starts_with("Input shapes do not match") && !e.contains(wanted) => {
                    failures.push(format!("{} (text): {e}\n  JAX says: {wanted}", set["dir"]))
                }
                Err(_) => refused += 1,
            }
        }
    }
    assert!(failures.is_empty(), "{plugin}: {} failures:\n{}", failures.len(), failures.join("\n"));
    assert!(ran >= 25 && refused >= 12, "{plugin}: ran {ran} shape sets from text, refused {refused}");
}

#[test]
fn symbolic_programs_as_text_on_cpu_0_115() {
    run_all_text("cpu");
}

#[test]
fn symbolic_programs_as_text_on_cpu_0_106() {
    run_all_text("cpu-0.106");
}

#[test]
fn symbolic_models_on_cpu_0_115() {
    run_all("cpu");
}

#[test]
fn symbolic_models_on_cpu_0_106() {
    run_all("cpu-0.106");
}
