//! `pjrt run model.jaxexport --input ...` on the models in tests/data/jax_export/jax-<version>
//! (made by tools/gen_jax_export_testdata.py with JAX 0.4.30, 0.10.2 and 0.12.0.1): outputs equal JAX's
//! on both CPU plugins, JAX 0.12's on the 0.106 plugin too (its StableHLO, up to 1.16.1, is
//! older than the 1.18.0 JAX 0.12 writes: `pjrt` writes the module for 1.16.1 before
//! compiling); what cannot run is refused with a clear message. Shape-polymorphic models (tests/data/jax_export/symbolic, made by
//! tools/gen_symbolic_testdata.py) run refined for their inputs' shapes, equal to JAX, refuse
//! shapes with JAX's message, and compile for `--input-shape`.

use pjrt_formats::npy::{Dtype, NpyArray};
use serde_json::Value as Json;

use crate::common::{assert_fails, pjrt, root, stderr, temp_dir, PLUGINS};

/// The JAX versions whose exports are run through `pjrt run`: the oldest (0.4.30: serialization
/// version 2, bytecode 0, HLO shardings), 0.10.2 and the newest (every release between runs in
/// pjrt-formats' jax_export tests).
const JAX_VERSIONS: [&str; 3] = ["0.4.30", "0.10.2", "0.12.0.1"];

fn manifest_of(jax: &str) -> Json {
    let path = root().join(format!("tests/data/jax_export/jax-{jax}/manifest.json"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn manifest() -> Json {
    manifest_of("0.10.2")
}

fn data_of(jax: &str, file: &str) -> String {
    format!("tests/data/jax_export/jax-{jax}/{file}")
}

fn data(file: &str) -> String {
    data_of("0.10.2", file)
}

fn floats(a: &NpyArray, bf16: bool) -> Vec<f64> {
    match a.dtype {
        Dtype::F32 => a.data.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64).collect(),
        Dtype::U16 if bf16 => {
            a.data.chunks_exact(2).map(|c| pjrt_client::half::bf16::from_le_bytes([c[0], c[1]]).to_f64()).collect()
        }
        // Real and imaginary parts.
        Dtype::C64 => a.data.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64).collect(),
        other => panic!("no float comparison for {other}"),
    }
}

/// Runs every case of JAX `jax`'s data with `pjrt run` and compares each outNN.npy with JAX's;
/// where the plugin reads an older StableHLO than JAX wrote, checks the refusal names both.
fn run_cases(plugin: &str, jax: &str) {
    let manifest = manifest_of(jax);
    let cases = manifest["cases"].as_array().unwrap();
    assert!(cases.len() >= 14, "jax {jax}: {} cases", cases.len());
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let out_dir = temp_dir(&format!("jaxexport-{plugin}-{jax}-{name}"));
        let model = data_of(jax, case["model"].as_str().unwrap());
        let mut args = vec!["run".to_string(), model, "--plugin".into(), plugin.into()];
        for input in case["inputs"].as_array().unwrap() {
            args.extend(["--input".to_string(), data_of(jax, input["file"].as_str().unwrap())]);
        }
        args.extend(["--output-dir".to_string(), out_dir.display().to_string(), "--json".to_string()]);
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = pjrt(&argv);
        assert!(out.status.success(), "{plugin} jax {jax} {name}: {}", stderr(&out));
        // The report names the model and the JAX that wrote it (when the file says).
        let report: Json = serde_json::from_slice(&out.stdout).unwrap();
        let summary = &report["model"];
        assert_eq!(summary["format"], "jax.export", "{name}: {report}");
        assert_eq!(summary["jax_version"], case["written_by_jax"], "{name}: {report}");
        assert_eq!(summary["serialization_version"], case["serialization_version"], "{name}: {report}");
        assert_eq!(summary["stablehlo_version"], case["stablehlo_version"], "{name}: {report}");
        let outputs = case["outputs"].as_array().unwrap();
        for (o, spec) in outputs.iter().enumerate() {
            let expected = NpyArray::read(&root().join(data_of(jax, spec["file"].as_str().unwrap()))).unwrap();
            let actual = NpyArray::read(&out_dir.join(format!("out{o}.npy"))).unwrap();
            assert_eq!(actual.dims, expected.dims, "{plugin} {name} output {o}");
            let bf16 = spec["encoding"] == "bf16_bits_u2";
            if case["exact"].as_bool().unwrap() || !(bf16 || matches!(expected.dtype, Dtype::F32 | Dtype::C64)) {
                assert_eq!(
                    (actual.dtype, &actual.data),
                    (expected.dtype, &expected.data),
                    "{plugin} {name} output {o}"
                );
                continue;
            }
            let (rtol, atol) = (case["rtol"].as_f64().unwrap(), case["atol"].as_f64().unwrap());
            for (e, a) in floats(&expected, bf16).iter().zip(floats(&actual, bf16)) {
                assert!((a - e).abs() <= atol + rtol * e.abs(), "{plugin} {name} output {o}: {a} vs JAX's {e}");
            }
        }
        assert!(!out_dir.join(format!("out{}.npy", outputs.len())).exists(), "{plugin} {name}: extra outputs");
    }
}

#[test]
fn jaxexport_models_match_jax_on_both_plugins() {
    for plugin in PLUGINS {
        for jax in JAX_VERSIONS {
            run_cases(plugin, jax);
        }
    }
}

#[test]
fn a_newer_serialization_version_is_refused_naming_the_writer() {
    let dir = temp_dir("jaxexport-newer");
    let mut bytes = std::fs::read(root().join(data_of("0.12.0.1", "unused_arg/model.jaxexport"))).unwrap();
    // The root table's first field (serialization_version) through its vtable.
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize;
    let table = u32_at(&bytes, 0);
    let vtable = table - i32::from_le_bytes(bytes[table..table + 4].try_into().unwrap()) as usize;
    let at = table + u16::from_le_bytes(bytes[vtable + 4..vtable + 6].try_into().unwrap()) as usize;
    assert_eq!(&bytes[at..at + 2], 12u16.to_le_bytes());
    bytes[at..at + 2].copy_from_slice(&13u16.to_le_bytes());
    let newer = dir.join("newer.jaxexport");
    std::fs::write(&newer, &bytes).unwrap();
    let (a, b, c) = (data("unused_arg/in0.npy"), data("unused_arg/in1.npy"), data("unused_arg/in2.npy"));
    let out = pjrt(&["run", newer.to_str().unwrap(), "-i", &a, &b, &c]);
    assert_fails(&out, "jax.export serialization version 13, written by JAX 0.12.0.1, is not one this reader knows");
}

#[test]
fn jaxexport_is_detected_by_content_not_only_by_name() {
    let dir = temp_dir("jaxexport-renamed");
    let renamed = dir.join("model.bin");
    std::fs::copy(root().join(data("unused_arg/model.jaxexport")), &renamed).unwrap();
    let (a, b, c) = (data("unused_arg/in0.npy"), data("unused_arg/in1.npy"), data("unused_arg/in2.npy"));
    let out_dir = dir.join("out");
    let out = pjrt(&["run", renamed.to_str().unwrap(), "-i", &a, &b, &c, "-o", out_dir.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Json = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["outputs"].as_array().unwrap().len(), 1);
    // JAX 0.10 records no writer version: null, not a guess.
    assert_eq!(
        (&report["model"]["serialization_version"], &report["model"]["jax_version"]),
        (&Json::from(3), &Json::Null)
    );
    assert_eq!(
        NpyArray::read(&out_dir.join("out0.npy")).unwrap(),
        NpyArray::read(&root().join(data("unused_arg/out0.npy"))).unwrap()
    );
}

/// `x: f32[b, 4]` with x[i, j] = i * 4 + j, written to `dir`.
fn batch_input(dir: &std::path::Path, batch: i64) -> String {
    let x: Vec<f32> = (0..batch * 4).map(|v| v as f32).collect();
    let path = dir.join(format!("x{batch}.npy"));
    NpyArray::from_elements(vec![batch, 4], &x).unwrap().write(&path).unwrap();
    path.display().to_string()
}

#[test]
fn a_symbolic_model_runs_at_two_batch_sizes_each_compiled_once() {
    // symbolic_batch: sum(x * 2, axis=0) for x: float32[b, 4].
    let model = data(manifest()["symbolic"]["model"].as_str().unwrap());
    let dir = temp_dir("jaxexport-symbolic-batch");
    let cache = dir.join("cache");
    for plugin in PLUGINS {
        // One compile cache for the runs: each batch size is its own refined program, so its
        // own entry; a batch size seen before is loaded.
        for (batch, outcome) in [(3, "miss"), (5, "miss"), (3, "hit")] {
            let x = batch_input(&dir, batch);
            let out_dir = dir.join(format!("out-{plugin}-{batch}"));
            let out = crate::common::pjrt_env(
                &["run", &model, "-p", plugin, "-i", &x, "-o", out_dir.to_str().unwrap(), "--json"],
                &[("PJRT_CACHE_DIR", cache.to_str().unwrap())],
            );
            assert!(out.status.success(), "{plugin} b={batch}: {}", stderr(&out));
            let report: Json = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(report["model"]["polymorphic"], true, "{report}");
            assert_eq!(report["model"]["refined_for"], serde_json::json!([format!("f32[{batch},4]")]), "{report}");
            assert_eq!(report["model"]["in_avals"], serde_json::json!(["float32[b,4]"]), "{report}");
            assert_eq!(report["cache"], outcome, "{plugin} b={batch}: {report}");
            let got = NpyArray::read(&out_dir.join("out0.npy")).unwrap();
            let want: Vec<f32> = (0..4).map(|j| (0..batch).map(|i| 2.0 * (i * 4 + j) as f32).sum()).collect();
            assert_eq!((got.dims.clone(), got.to_vec::<f32>().unwrap()), (vec![4], want), "{plugin} b={batch}");
        }
    }
}

fn symbolic_manifest() -> Json {
    let path = root().join("tests/data/jax_export/symbolic/jax-0.10.2/manifest.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn symbolic_case(name: &str) -> Json {
    symbolic_manifest()["cases"].as_array().unwrap().iter().find(|c| c["name"] == name).unwrap().clone()
}

fn symbolic_data(file: &str) -> String {
    format!("tests/data/jax_export/symbolic/jax-0.10.2/{file}")
}

/// `pjrt run` arguments for the model of `case` on the inputs in0.npy, in1.npy, ... of `set`.
fn symbolic_run_args(case: &Json, set: &str) -> Vec<String> {
    let mut args = vec!["run".to_string(), symbolic_data(case["model"].as_str().unwrap())];
    for i in 0.. {
        let file = symbolic_data(&format!("{set}/in{i}.npy"));
        if !root().join(&file).exists() {
            break;
        }
        args.extend(["--input".to_string(), file]);
    }
    args
}

/// Elements as f64, for comparison (NaN matches NaN).
fn elements(a: &NpyArray) -> Vec<f64> {
    match a.dtype {
        Dtype::F32 => a.to_vec::<f32>().unwrap().into_iter().map(f64::from).collect(),
        Dtype::I32 => a.to_vec::<i32>().unwrap().into_iter().map(f64::from).collect(),
        Dtype::U32 => a.to_vec::<u32>().unwrap().into_iter().map(f64::from).collect(),
        other => panic!("no comparison for {other}"),
    }
}

/// Compares the out*.npy in `out_dir` with JAX's outputs of `set`, within the case's tolerances.
fn assert_matches_jax(case: &Json, set: &str, out_dir: &std::path::Path, what: &str) {
    let (rtol, atol) = (case["rtol"].as_f64().unwrap(), case["atol"].as_f64().unwrap());
    let outputs = case["out_avals"].as_array().unwrap().len();
    for o in 0..outputs {
        let jax = NpyArray::read(&root().join(symbolic_data(&format!("{set}/out{o}.npy")))).unwrap();
        let ours = NpyArray::read(&out_dir.join(format!("out{o}.npy"))).unwrap();
        assert_eq!((ours.dtype, &ours.dims), (jax.dtype, &jax.dims), "{what} output {o}");
        for (k, (x, y)) in elements(&ours).into_iter().zip(elements(&jax)).enumerate() {
            let same = (x.is_nan() && y.is_nan()) || (x - y).abs() <= atol + rtol * y.abs();
            assert!(same, "{what} output {o} element {k}: {x}, JAX's {y}");
        }
    }
    assert!(!out_dir.join(format!("out{outputs}.npy")).exists(), "{what}: extra outputs");
}

#[test]
fn symbolic_models_match_jax_through_pjrt_run() {
    // An MLP over a batch, shape arithmetic (2*k, b//2) and a gather with NaN fill: every ok
    // shape set of each, on both plugins.
    for plugin in PLUGINS {
        for name in ["mlp_batch", "double_batch", "gather_take"] {
            let case = symbolic_case(name);
            for set in case["ok"].as_array().unwrap() {
                let set = set["dir"].as_str().unwrap();
                let out_dir = temp_dir(&format!("jaxexport-sym-{plugin}-{}", set.replace('/', "-")));
                let mut args = symbolic_run_args(&case, set);
                args.extend(["-p", plugin, "-o", out_dir.to_str().unwrap(), "--json"].map(String::from));
                let out = pjrt(&args.iter().map(String::as_str).collect::<Vec<_>>());
                assert!(out.status.success(), "{plugin} {set}: {}", stderr(&out));
                let report: Json = serde_json::from_slice(&out.stdout).unwrap();
                let dims: Vec<Vec<i64>> = serde_json::from_value(
                    case["ok"].as_array().unwrap().iter().find(|s| s["dir"] == set).unwrap()["inputs"].clone(),
                )
                .unwrap();
                let shapes: Vec<String> = dims
                    .iter()
                    .zip(case["input_dtypes"].as_array().unwrap())
                    .map(|(d, t)| {
                        let t = if t == "int32" { "s32" } else { "f32" };
                        format!("{t}[{}]", d.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(","))
                    })
                    .collect();
                assert_eq!(report["model"]["refined_for"], serde_json::json!(shapes), "{set}: {report}");
                assert_matches_jax(&case, set, &out_dir, &format!("{plugin} {set}"));
            }
        }
    }
}

#[test]
fn a_symbolic_model_takes_safetensors_inputs() {
    // mlp_batch at b = 5 with every input a tensor of one safetensors file (`--input
    // FILE:NAME`): the shapes come from the file's header, the tensors upload from its bytes.
    use pjrt_formats::safetensors::{self, TensorView};
    let case = symbolic_case("mlp_batch");
    let set = "mlp_batch/ok2";
    let dir = temp_dir("jaxexport-sym-safetensors");
    let names = ["x", "w1", "b1", "w2", "b2"];
    let arrays: Vec<NpyArray> = (0..names.len())
        .map(|i| NpyArray::read(&root().join(symbolic_data(&format!("{set}/in{i}.npy")))).unwrap())
        .collect();
    let views: Vec<(&str, TensorView<'_>)> =
        names.iter().zip(&arrays).map(|(n, a)| (*n, TensorView::from_npy(a).unwrap())).collect();
    let file = dir.join("mlp.safetensors");
    safetensors::write(&file, &views, &[]).unwrap();
    let out_dir = dir.join("out");
    let mut args = vec!["run".to_string(), symbolic_data("mlp_batch/model.jaxexport")];
    for n in names {
        args.extend(["--input".to_string(), format!("{}:{n}", file.display())]);
    }
    args.extend(["-o".to_string(), out_dir.display().to_string(), "--json".to_string()]);
    let out = pjrt(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Json = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["model"]["refined_for"][0], "f32[5,8]", "{report}");
    assert_matches_jax(&case, set, &out_dir, "safetensors inputs");
}

#[test]
fn shapes_a_symbolic_model_refuses_print_jax_error() {
    for name in ["mlp_batch", "shared_dim", "double_batch", "pad_slice", "sharded_batch"] {
        let case = symbolic_case(name);
        let bad = &case["bad"][0];
        let out_dir = temp_dir(&format!("jaxexport-sym-bad-{name}"));
        let mut args = symbolic_run_args(&case, bad["dir"].as_str().unwrap());
        args.extend(["-o".to_string(), out_dir.display().to_string()]);
        let out = pjrt(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_fails(&out, bad["error"].as_str().unwrap());
        assert!(!out_dir.join("out0.npy").exists(), "{name}: no outputs");
    }
}

#[test]
fn a_sharded_symbolic_model_runs_on_two_devices() {
    // x: (2*k, 8) split by rows over 2 devices, w replicated: its shardings hold after
    // refinement, at every even batch.
    let case = symbolic_case("sharded_batch");
    assert_eq!(case["nr_devices"], 2);
    for plugin in PLUGINS {
        for set in case["ok"].as_array().unwrap() {
            let set = set["dir"].as_str().unwrap();
            let out_dir = temp_dir(&format!("jaxexport-sharded-{plugin}-{}", set.replace('/', "-")));
            let mut args = symbolic_run_args(&case, set);
            args.extend(["-p", plugin, "-o", out_dir.to_str().unwrap(), "--json"].map(String::from));
            let out = pjrt(&args.iter().map(String::as_str).collect::<Vec<_>>());
            assert!(out.status.success(), "{plugin} {set}: {}", stderr(&out));
            let report: Json = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!((&report["devices"], &report["model"]["polymorphic"]), (&Json::from(2), &Json::from(true)));
            assert_eq!(report["model"]["refined_for"][1], "f32[8,4]", "{report}");
            assert_matches_jax(&case, set, &out_dir, &format!("{plugin} {set}"));
        }
    }
}

#[test]
fn compile_input_shape_makes_an_artifact_of_the_refined_model() {
    let case = symbolic_case("mlp_batch");
    let model = symbolic_data("mlp_batch/model.jaxexport");
    let dir = temp_dir("jaxexport-sym-compile");
    let artifact = dir.join("mlp3.pjrt");
    let artifact = artifact.to_str().unwrap();
    // The dims alone, with the dtype, and a bare one-dimensional shape.
    let out = pjrt(&[
        "compile",
        &model,
        "-o",
        artifact,
        "--input-shape",
        "3,8",
        "--input-shape",
        "f32[8,16]",
        "--input-shape",
        "16",
        "--input-shape",
        "float32[16,3]",
        "--input-shape",
        "[3]",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Json = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["model"]["polymorphic"], true, "{report}");
    assert_eq!(
        report["model"]["refined_for"],
        serde_json::json!(["f32[3,8]", "f32[8,16]", "f32[16]", "f32[16,3]", "f32[3]"]),
        "{report}"
    );
    // ok1 has b = 3: the artifact runs it, equal to JAX.
    let mut args = symbolic_run_args(&case, "mlp_batch/ok1");
    args[1] = artifact.to_string();
    let out_dir = dir.join("out");
    args.extend(["-o".to_string(), out_dir.display().to_string()]);
    let out = pjrt(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(out.status.success(), "{}", stderr(&out));
    assert_matches_jax(&case, "mlp_batch/ok1", &out_dir, "artifact");
    // Another batch is not what it was compiled for.
    let mut args = symbolic_run_args(&case, "mlp_batch/ok0");
    args[1] = artifact.to_string();
    let out = pjrt(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(!out.status.success(), "b = 1 ran on the b = 3 artifact");
    // A scalar is `[]` or an empty value (while_loop takes s32[4] and an s32 scalar).
    let scalar_model = data("while_loop/model.jaxexport");
    for scalar in ["[]", "", "s32[]"] {
        let out = pjrt(&["compile", &scalar_model, "-o", artifact, "--input-shape", "4", "--input-shape", scalar]);
        assert!(out.status.success(), "{scalar:?}: {}", stderr(&out));
    }
    let out = pjrt(&["compile", &scalar_model, "-o", artifact, "--input-shape", "[]", "--input-shape", ""]);
    assert_fails(&out, "Rank mismatch for args[0]: expected 1 and called with 0");
}

#[test]
fn compile_of_a_symbolic_model_needs_its_input_shapes() {
    let model = symbolic_data("shared_dim/model.jaxexport");
    let dir = temp_dir("jaxexport-sym-compile-missing");
    let artifact = dir.join("a.pjrt");
    let artifact = artifact.to_str().unwrap();
    let out = pjrt(&["compile", &model, "-o", artifact]);
    assert_fails(&out, "is shape-polymorphic (inputs float32[b,4], float32[b,3]): give the shapes to compile it for with --input-shape");
    let out = pjrt(&["compile", &model, "-o", artifact, "--input-shape", "3,4"]);
    assert_fails(&out, "the model takes 2 inputs (float32[b,4], float32[b,3]) but 1 --input-shape were given");
    let out = pjrt(&["compile", &model, "-o", artifact, "--input-shape", "s32[3,4]", "--input-shape", "3,3"]);
    assert_fails(&out, "--input-shape \"s32[3,4]\" (input 0, float32[b,4]): the input is float32 (f32), not s32");
    let out = pjrt(&["compile", &model, "-o", artifact, "--input-shape", "3,4", "--input-shape", "3,x"]);
    assert_fails(&out, "`x` is not a dimension");
    // The shapes must agree as JAX's assertions say.
    let bad = &symbolic_case("shared_dim")["bad"][0];
    let out = pjrt(&["compile", &model, "-o", artifact, "--input-shape", "3,4", "--input-shape", "2,3"]);
    assert_fails(&out, bad["error"].as_str().unwrap());
    assert!(!std::path::Path::new(artifact).exists(), "no artifact");
    // A static model: optional, checked.
    let fixed = data("unused_arg/model.jaxexport");
    let compile_fixed = |last: &str| {
        pjrt(&["compile", &fixed, "-o", artifact, "--input-shape", "3,4", "--input-shape", "5", "--input-shape", last])
    };
    assert_fails(&compile_fixed("3,5"), "Shape mismatch for args[2].shape[1]");
    let out = compile_fixed("3,4");
    assert!(out.status.success(), "{}", stderr(&out));
    // Not a jax.export model: refused.
    let out = pjrt(&["compile", "examples/mlp/train_step.mlir", "-o", artifact, "--input-shape", "4"]);
    assert_fails(&out, "--input-shape applies to jax.export models only");
}

#[test]
fn bench_run_times_a_symbolic_model_as_refined() {
    let case = symbolic_case("mlp_batch");
    let mut args = symbolic_run_args(&case, "mlp_batch/ok2");
    args.splice(0..1, ["bench".to_string(), "run".to_string()]);
    args.extend(["--iters", "5", "--json"].map(String::from));
    let out = pjrt(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Json = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["polymorphic"], true, "{report}");
    assert_eq!(report["refined_for"][0], "f32[5,8]", "{report}");
    // A refused shape is JAX's message here too.
    let mut args = symbolic_run_args(&case, "mlp_batch/bad0");
    args.splice(0..1, ["bench".to_string(), "run".to_string()]);
    let out = pjrt(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_fails(&out, case["bad"][0]["error"].as_str().unwrap());
}

#[test]
fn wrong_inputs_name_the_file_and_the_expected_aval() {
    let model = data("unused_arg/model.jaxexport");
    let (a, c) = (data("unused_arg/in0.npy"), data("unused_arg/in2.npy"));
    // The unused input must still be given.
    let out = pjrt(&["run", &model, "-i", &a, &c]);
    assert_fails(&out, "the model takes 3 inputs (float32[3,4], float32[5], float32[3,4]) but 2 were given");
    let out = pjrt(&["run", &model, "-i", &a, &a, &c]);
    assert_fails(
        &out,
        "input 1 is f32[3,4], but the model expects float32[5] (--input tests/data/jax_export/jax-0.10.2/unused_arg/in0.npy)",
    );
    let out = pjrt(&["run", &model, "-i", &a, &a, &c, "--shard-inputs", "0"]);
    assert_fails(&out, "--shard-inputs does not apply to a jax.export model");
}

#[test]
fn a_corrupt_jaxexport_is_an_error_not_a_crash() {
    let dir = temp_dir("jaxexport-corrupt");
    let bytes = std::fs::read(root().join(data("mlp_f32/model.jaxexport"))).unwrap();
    let cut = dir.join("cut.jaxexport");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let out = pjrt(&["run", cut.to_str().unwrap()]);
    assert_fails(&out, "not a readable jax.export artifact");
}
