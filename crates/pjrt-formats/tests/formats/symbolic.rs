//! Shape-polymorphic `jax.export` models (tests/data/jax_export/symbolic/jax-<version>, written by
//! tools/gen_symbolic_testdata.py with JAX's answers): each runs through a [`Runner`] at every
//! concrete shape set the manifest lists, equal to JAX's outputs, JAX 0.10.2's on both CPU
//! plugins and those of every other JAX release since 0.4.30 on the 0.115 plugin; shapes
//! that break the model's constraints give JAX's own error text. A model exported for several
//! devices (sharded_batch: 2) runs on a client with that many. Refined modules, from the models
//! and from their MLIR text, are sent as MLIR bytecode.

use std::path::{Path, PathBuf};

use pjrt_formats::jax_export::{JaxExport, Runner};
use pjrt_formats::npy::{Dtype, NpyArray};
use serde_json::Value as Json;

use crate::support;

/// The JAX release whose models also run on the 0.106 plugin and whose data holds JAX's MLIR text.
const TEXT_RELEASE: &str = "0.10.2";

/// The other releases' data sets, oldest first (the same cases and inputs).
const OTHER_RELEASES: [&str; 8] = ["0.4.30", "0.4.38", "0.5.3", "0.6.2", "0.7.2", "0.8.3", "0.9.2", "0.12.0.1"];

fn data_dir_of(jax: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../tests/data/jax_export/symbolic/jax-{jax}"))
}

fn data_dir() -> PathBuf {
    data_dir_of(TEXT_RELEASE)
}

fn manifest_of(jax: &str) -> Json {
    serde_json::from_str(&std::fs::read_to_string(data_dir_of(jax).join("manifest.json")).unwrap()).unwrap()
}

fn manifest() -> Json {
    manifest_of(TEXT_RELEASE)
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

/// Runs JAX `jax`'s models; returns the failures and how many shape sets ran and were refused.
fn run_release(plugin: &str, jax: &str, clients: &mut Vec<(u32, pjrt_client::Client)>) -> (Vec<String>, usize, usize) {
    let data_dir = || data_dir_of(jax);
    let m = manifest_of(jax);
    assert_eq!(m["jax"], jax, "the data set was made with the JAX it is named after");
    assert!(m.get("not_exported").is_none(), "jax {jax}: {}", m["not_exported"]);
    let cases = m["cases"].as_array().unwrap();
    assert_eq!(cases.len(), manifest()["cases"].as_array().unwrap().len(), "jax {jax}: every case");
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
        let refined = match model.program_for(&model.input_shapes(&first)) {
            Ok(refined) => refined,
            Err(e) => {
                failures.push(format!("jax {jax} {name}: {e}"));
                continue;
            }
        };
        if refined.text().is_some() {
            failures.push(format!("jax {jax} {name}: refined to text"));
            continue;
        }
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
                            failures.push(format!("jax {jax} {}: output {k}: {why}", set["dir"]));
                        }
                    }
                    ran += 1;
                }
                Ok(outputs) => failures.push(format!(
                    "jax {jax} {}: {} outputs, JAX has {}",
                    set["dir"],
                    outputs.len(),
                    expected.len()
                )),
                Err(e) => failures.push(format!("jax {jax} {}: {e}", set["dir"])),
            }
        }
        // Each distinct signature compiled once: as many executables as shape sets.
        let distinct = case["ok"].as_array().unwrap().len();
        if runner.cached() != distinct && failures.is_empty() {
            failures.push(format!("jax {jax} {name}: {} executables kept for {distinct} signatures", runner.cached()));
        }
        for set in case["bad"].as_array().unwrap() {
            let dir = data_dir().join(set["dir"].as_str().unwrap());
            let mut wanted = set["error"].as_str().unwrap().to_string();
            if wanted.starts_with("One of pjit arguments") {
                // JAX before 0.7 calls a multi-device model in a jit with its shardings, whose
                // check refuses these shapes first; the model's own refusal is the one JAX
                // 0.10.2 recorded for the same inputs, up to the link to JAX's documentation
                // (whose address changed).
                let reference = manifest()["cases"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .flat_map(|c| c["bad"].as_array().unwrap().clone())
                    .find(|b| b["dir"] == set["dir"])
                    .unwrap();
                let full = reference["error"].as_str().unwrap();
                wanted = full.split(" Please see").next().unwrap().to_string();
            }
            let wanted = wanted.as_str();
            match runner.run(&read_set(&dir, "in")) {
                Ok(_) => failures.push(format!("jax {jax} {}: ran, JAX says: {wanted}", set["dir"])),
                Err(e) if e.to_string().contains(wanted) => refused += 1,
                Err(e) => failures.push(format!("jax {jax} {}: {e}\n  JAX says: {wanted}", set["dir"])),
            }
        }
    }
    (failures, ran, refused)
}

fn run_all(plugin: &str) {
    // One client per device count: a model exported for several devices runs on that many.
    let mut clients: Vec<(u32, pjrt_client::Client)> = Vec::new();
    let (failures, ran, refused) = run_release(plugin, TEXT_RELEASE, &mut clients);
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

/// Every case as exported by each other JAX release since 0.4.30 (serialization versions 2 to
/// 12, MLIR bytecode versions 0 and 6, calling conventions 9 and 10) runs on the 0.115 plugin
/// with that JAX's answers, and refuses what that JAX refused with its words.
#[test]
fn symbolic_models_of_every_jax_release_on_cpu_0_115() {
    let mut clients: Vec<(u32, pjrt_client::Client)> = Vec::new();
    let mut failures = Vec::new();
    let mut counts = Vec::new();
    for jax in OTHER_RELEASES {
        // Every case runs, JAX 0.4.30's linalg_batch too (its pre-FFI `lapack_sgetrf`, upgraded
        // once the module is refined) and 0.4.38's and 0.5.3's (`lapack_strsm_ffi` with alpha).
        let (f, ran, refused) = run_release("cpu", jax, &mut clients);
        counts.push(format!("jax {jax}: ran {ran}, refused {refused}, {} failed", f.len()));
        let cases = manifest_of(jax)["cases"].as_array().unwrap().clone();
        let sets = |kind: &str| cases.iter().map(|c| c[kind].as_array().unwrap().len()).sum::<usize>();
        if (ran, refused) != (sets("ok"), sets("bad")) || ran < 47 {
            failures.push(format!(
                "jax {jax}: ran {ran} shape sets and refused {refused}, of {} and {}",
                sets("ok"),
                sets("bad")
            ));
        }
        failures.extend(f);
    }
    eprintln!("{}", counts.join("\n"));
    assert!(failures.is_empty(), "{} failures:\n{}\n{}", failures.len(), failures.join("\n"), counts.join("\n"));
}
