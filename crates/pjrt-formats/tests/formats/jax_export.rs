//! Models serialized by `jax.export` (tests/data/jax_export/jax-<version>, made by
//! tools/gen_jax_export_testdata.py with every JAX minor release from 0.4.30, serialization
//! version 2 and MLIR bytecode version 0, to 0.12.0.1) are read, checked
//! against what JAX recorded in the manifest, and run on both CPU plugins: outputs equal JAX's
//! (integers and bools bit-exact, floats within the recorded tolerance), also where the plugin
//! reads an older StableHLO than JAX wrote (JAX 0.12's 1.18.0 on the 0.106 plugin, which reads
//! up to 1.16.1): the client's compile writes such a program for the plugin's version first.

use std::path::{Path, PathBuf};

use pjrt_client::sharding::Sharding;
use pjrt_client::{Client, ElementType};
use pjrt_formats::jax_export::{Dim, JaxExport, JaxSharding};
use pjrt_formats::npy::{Dtype, NpyArray};
use serde_json::Value as Json;

use crate::support;

/// The data sets, one per JAX version that made them, oldest first.
const JAX_VERSIONS: [&str; 9] = ["0.4.30", "0.4.38", "0.5.3", "0.6.2", "0.7.2", "0.8.3", "0.9.2", "0.10.2", "0.12.0.1"];

/// What each JAX version's artifacts say (the data's own header and bytecode producer):
/// (JAX, serialization version, JAX version written in the header, StableHLO version).
const HEADERS: [(&str, u16, Option<&str>, &str); 9] = [
    ("0.4.30", 2, None, "0.9.0"),
    ("0.4.38", 2, None, "1.8.2"),
    ("0.5.3", 2, None, "1.9.1"),
    ("0.6.2", 2, None, "1.10.6"),
    ("0.7.2", 2, None, "1.12.1"),
    ("0.8.3", 3, None, "1.13.1"),
    ("0.9.2", 3, None, "1.13.7"),
    ("0.10.2", 3, None, "1.15.0"),
    ("0.12.0.1", 12, Some("0.12.0.1"), "1.18.0"),
];

/// The 14 models every data set holds (the symbolic one aside).
const CASES: [&str; 14] = [
    "mlp_f32",
    "unused_arg",
    "pytree_outputs",
    "int_bool",
    "bf16",
    "multi_platform",
    "sharded_4dev",
    "cnn",
    "scan_rnn",
    "while_loop",
    "sort_top_k",
    "rfft",
    "rng",
    "bf16_matmul",
];

fn data_dir(jax: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../tests/data/jax_export/jax-{jax}"))
}

fn manifest(jax: &str) -> Json {
    serde_json::from_str(&std::fs::read_to_string(data_dir(jax).join("manifest.json")).unwrap()).unwrap()
}

fn cases(jax: &str) -> Vec<Json> {
    let m = manifest(jax);
    assert_eq!(m["jax_version"], jax, "the data set was made with the JAX it is named after");
    let cases = m["cases"].as_array().unwrap().clone();
    let names: Vec<&str> = cases.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, CASES, "jax {jax}");
    cases
}

fn read_npy(jax: &str, file: &Json) -> NpyArray {
    NpyArray::read(&data_dir(jax).join(file["file"].as_str().unwrap())).unwrap()
}

/// Where JAX's StableHLO is newer than the plugin reads, the (plugin, JAX) pair and the versions
/// the client's refusal names: the 0.106 plugin reads StableHLO up to 1.16.1, JAX 0.12 writes
/// 1.18.0. The model then runs written for 1.16.1 (by [`pjrt_client::Client::compile`]).
fn newer_than_plugin(plugin: &str, jax: &str) -> Option<(&'static str, &'static str)> {
    (plugin == "cpu-0.106" && jax == "0.12.0.1").then_some(("1.18.0", "1.16.1"))
}

fn values(a: &NpyArray, bf16: bool) -> Vec<f64> {
    match a.dtype {
        Dtype::F32 => a.data.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64).collect(),
        Dtype::F64 => a.data.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect(),
        Dtype::U16 if bf16 => {
            a.data.chunks_exact(2).map(|c| pjrt_client::half::bf16::from_le_bytes([c[0], c[1]]).to_f64()).collect()
        }
        // Real and imaginary parts, each within the tolerance.
        Dtype::C64 => a.data.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64).collect(),
        other => panic!("no float comparison for {other}"),
    }
}

fn compare(case: &Json, o: usize, expected: &NpyArray, actual: &NpyArray) -> Result<(), String> {
    let spec = &case["outputs"][o];
    if expected.dims != actual.dims {
        return Err(format!("output {o}: shape {:?}, JAX gave {:?}", actual.dims, expected.dims));
    }
    let bf16 = spec["encoding"] == "bf16_bits_u2";
    let float = bf16 || matches!(expected.dtype, Dtype::F32 | Dtype::F64 | Dtype::C64);
    if case["exact"].as_bool().unwrap() || !float {
        if expected.dtype != actual.dtype || expected.data != actual.data {
            return Err(format!("output {o}: not bit-exact ({} vs JAX's {})", actual.dtype, expected.dtype));
        }
        return Ok(());
    }
    let (rtol, atol) = (case["rtol"].as_f64().unwrap(), case["atol"].as_f64().unwrap());
    for (i, (e, a)) in values(expected, bf16).iter().zip(values(actual, bf16)).enumerate() {
        if (a - e).abs() > atol + rtol * e.abs() {
            return Err(format!("output {o} element {i}: got {a}, JAX gave {e} (rtol {rtol}, atol {atol})"));
        }
    }
    Ok(())
}

fn run_case(client: &Client, plugin: &str, jax: &str, case: &Json) -> Result<(), String> {
    let model = JaxExport::read(data_dir(jax).join(case["model"].as_str().unwrap())).map_err(|e| e.to_string())?;
    let inputs: Vec<NpyArray> = case["inputs"].as_array().unwrap().iter().map(|f| read_npy(jax, f)).collect();
    if let (Some((program, current)), false) = (newer_than_plugin(plugin, jax), model.is_polymorphic()) {
        // Newer than the plugin reads: the client writes it for the plugin's version itself.
        let original = model.program().map_err(|e| e.to_string())?;
        let versions = (original.stablehlo_target(), client.plugin().stablehlo_current_version());
        if versions.0.map(|v| v.to_string()).as_deref() != Some(program)
            || versions.1.map(|v| v.to_string()).as_deref() != Some(current)
        {
            return Err(format!("expected StableHLO {program} on a plugin reading {current}, got {versions:?}"));
        }
        let target = client.plugin().portable_target().ok_or("the plugin has no portable target")?;
        let sent = original.portable_artifact(target).map_err(|e| e.to_string())?;
        let want = format!("StableHLO_v{current}");
        if sent.bytecode_producer() != Some(want.as_str()) {
            return Err(format!("written as {:?}, not {want}", sent.bytecode_producer()));
        }
    }
    // `run` compiles the model's own program (a newer one written for the plugin by the compile).
    let outputs = model.run(client, &inputs).map_err(|e| e.to_string())?;
    let expected: Vec<NpyArray> = case["outputs"].as_array().unwrap().iter().map(|f| read_npy(jax, f)).collect();
    if outputs.len() != expected.len() {
        return Err(format!("{} outputs, JAX gave {}", outputs.len(), expected.len()));
    }
    for (o, (e, a)) in expected.iter().zip(&outputs).enumerate() {
        compare(case, o, e, a)?;
    }
    Ok(())
}

fn run_all(plugin: &str) {
    // 4 devices for the sharded model; the others run on the first.
    let client = support::client(plugin, 4);
    let api = client.plugin().api_version();
    let mut failures = Vec::new();
    let mut count = 0;
    for jax in JAX_VERSIONS {
        for case in &cases(jax) {
            count += 1;
            if let Err(e) = run_case(&client, plugin, jax, case) {
                failures.push(format!("jax {jax} {}: {e}", case["name"].as_str().unwrap()));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{plugin} (PJRT API {}.{}): {} of {count} jax.export models failed. A failure to deserialize the \
         module means the plugin's StableHLO is older than the version JAX serialized (see the \
         bytecode's StableHLO_v* producer string):\n{}",
        api.major,
        api.minor,
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn jax_exported_models_on_cpu_0_115() {
    run_all("cpu");
}

#[test]
fn jax_exported_models_on_cpu_0_106() {
    run_all("cpu-0.106");
}

#[test]
fn metadata_matches_what_jax_recorded() {
    for jax in JAX_VERSIONS {
        for case in cases(jax) {
            let name = &format!("jax {jax} {}", case["name"].as_str().unwrap());
            let model = JaxExport::read(data_dir(jax).join(case["model"].as_str().unwrap())).unwrap();
            assert_eq!(model.function_name(), case["function_name"].as_str().unwrap(), "{name}");
            let platforms: Vec<&str> =
                case["platforms"].as_array().unwrap().iter().map(|p| p.as_str().unwrap()).collect();
            assert_eq!(model.platforms(), platforms.as_slice(), "{name}");
            let kept: Vec<usize> =
                case["module_kept_var_idx"].as_array().unwrap().iter().map(|i| i.as_u64().unwrap() as usize).collect();
            assert_eq!(model.module_kept_var_idx(), kept.as_slice(), "{name}");
            assert_eq!(model.calling_convention_version() as u64, case["calling_convention_version"].as_u64().unwrap());
            assert_eq!(model.nr_devices() as u64, case["nr_devices"].as_u64().unwrap(), "{name}");
            // JAX up to 0.10 writes 2 or 3 in the header and no writer version; JAX 0.12 writes 12 and its own.
            let &(_, version, writer, want_stablehlo) = HEADERS.iter().find(|h| h.0 == jax).unwrap();
            assert_eq!(model.serialization_version() as u64, case["serialization_version"].as_u64().unwrap());
            assert_eq!((model.serialization_version(), model.jax_version()), (version, writer), "{name}");
            assert_eq!(model.jax_version(), case["written_by_jax"].as_str(), "{name}");
            let stablehlo = model.stablehlo_version().map(|v| v.to_string());
            assert_eq!(stablehlo.as_deref(), case["stablehlo_version"].as_str(), "{name}");
            assert_eq!(stablehlo.as_deref(), Some(want_stablehlo), "{name}");
            let summary = model.to_string();
            assert!(summary.contains(&format!("serialization version {version}")), "{name}: {summary}");
            assert_eq!(summary.contains(&format!("written by JAX {jax}")), writer.is_some(), "{name}: {summary}");
            assert!(model.ordered_effects().is_empty() && model.unordered_effects().is_empty());
            assert_eq!(model.uses_global_constants(), platforms.len() > 1, "{name}: only the platform index is global");
            assert!(model.mlir_module().starts_with(b"ML\xefR"));
            // Avals: shapes and dtypes as recorded (bf16 under its JAX name).
            for (what, avals, specs) in
                [("in", model.in_avals(), &case["inputs"]), ("out", model.out_avals(), &case["outputs"])]
            {
                let specs = specs.as_array().unwrap();
                assert_eq!(avals.len(), specs.len(), "{name} {what}");
                for (aval, spec) in avals.iter().zip(specs) {
                    let dims: Vec<Dim> =
                        spec["shape"].as_array().unwrap().iter().map(|d| Dim::Fixed(d.as_i64().unwrap())).collect();
                    assert_eq!(aval.dims, dims, "{name} {what}");
                    assert_eq!(aval.dtype_name, spec["dtype"].as_str().unwrap(), "{name} {what}");
                    assert!(aval.element_type.is_some());
                }
            }
            // Pytrees: leaf paths are JAX's keystr paths.
            let in_paths: Vec<String> =
                case["in_paths"].as_array().unwrap().iter().map(|p| p.as_str().unwrap().to_string()).collect();
            let out_paths: Vec<String> =
                case["out_paths"].as_array().unwrap().iter().map(|p| p.as_str().unwrap().to_string()).collect();
            assert_eq!(model.in_tree().leaf_paths(), in_paths, "{name}");
            assert_eq!(model.out_tree().leaf_paths(), out_paths, "{name}");
            // One device: shardings are unspecified or replicated.
            if model.nr_devices() == 1 {
                for s in model.in_shardings().iter().chain(model.out_shardings()) {
                    assert!(matches!(s, JaxSharding::Unspecified) || s.is_replicated() == Some(true), "{name}: {s:?}");
                }
            }
        }
    }
}

/// Where the `serialization_version` field of an artifact's root table lies (slot 0).
fn serialization_version_offset(bytes: &[u8]) -> usize {
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    let table = u32_at(0);
    let vtable = table - i32::from_le_bytes(bytes[table..table + 4].try_into().unwrap()) as usize;
    let field = u16::from_le_bytes(bytes[vtable + 4..vtable + 6].try_into().unwrap()) as usize;
    assert_ne!(field, 0, "JAX writes the version");
    table + field
}

#[test]
fn a_newer_serialization_version_is_refused_naming_it_and_its_writer() {
    let bytes = std::fs::read(data_dir("0.12.0.1").join("mlp_f32/model.jaxexport")).unwrap();
    let at = serialization_version_offset(&bytes);
    assert_eq!(&bytes[at..at + 2], 12u16.to_le_bytes(), "JAX 0.12 writes 12");
    let mut newer = bytes.clone();
    newer[at..at + 2].copy_from_slice(&13u16.to_le_bytes());
    let e = JaxExport::from_bytes(&newer).unwrap_err();
    assert!(
        matches!(
            &e,
            pjrt_formats::Error::JaxExport(pjrt_formats::jax_export::JaxExportError::Version {
                version: 13,
                newest: 12,
                written_by: Some(w),
            }) if w == "0.12.0.1"
        ),
        "{e:?}"
    );
    let e = e.to_string();
    assert!(
        e.contains("serialization version 13, written by JAX 0.12.0.1, is not one this reader knows (1..=12)"),
        "{e}"
    );
    // The same edit on a JAX 0.10 artifact (3 in the header, no writer version).
    let bytes = std::fs::read(data_dir("0.10.2").join("mlp_f32/model.jaxexport")).unwrap();
    let at = serialization_version_offset(&bytes);
    assert_eq!(&bytes[at..at + 2], 3u16.to_le_bytes(), "JAX 0.10 writes 3");
    let mut newer = bytes.clone();
    newer[at..at + 2].copy_from_slice(&13u16.to_le_bytes());
    let e = JaxExport::from_bytes(&newer).unwrap_err().to_string();
    assert!(e.contains("serialization version 13 is not one this reader knows"), "{e}");
}

#[test]
fn sharded_model_layout() {
    for jax in JAX_VERSIONS {
        let model = JaxExport::read(data_dir(jax).join("sharded_4dev/model.jaxexport")).unwrap();
        assert_eq!(model.nr_devices(), 4);
        match &model.in_shardings()[0] {
            JaxSharding::Named(rows) => {
                assert!(!JAX_VERSIONS[..6].contains(&jax), "jax {jax}: named shardings from 0.9 on");
                assert_eq!(
                    (rows.mesh.axis_names.as_slice(), rows.mesh.axis_sizes.as_slice()),
                    (&["x".to_string()][..], &[4][..])
                );
                assert_eq!(rows.partitions, vec![vec!["x".to_string()], vec![]]);
            }
            // JAX before 0.9 writes HLO shardings: the rows are tiles [4, 1] of devices 0..4 in order.
            JaxSharding::HloProto(_) => assert!(JAX_VERSIONS[..6].contains(&jax), "jax {jax}"),
            other => panic!("jax {jax}: {other:?}"),
        }
        assert_eq!(model.in_shardings()[0].is_replicated(), Some(false));
        assert_eq!(model.in_shardings()[1].is_replicated(), Some(true));
        assert_eq!(
            model.device_shardings().unwrap(),
            (vec![Sharding::Split(0), Sharding::Replicated], vec![Sharding::Split(0), Sharding::Replicated])
        );
        // A client with fewer devices than the model needs is refused before compiling.
        let client = support::client("cpu", 2);
        let inputs: Vec<NpyArray> =
            (0..2).map(|i| NpyArray::read(&data_dir(jax).join(format!("sharded_4dev/in{i}.npy"))).unwrap()).collect();
        let e = model.run(&client, &inputs).unwrap_err().to_string();
        assert!(e.contains("devices"), "{e}");
    }
}

#[test]
fn inputs_are_mapped_to_the_module_arguments() {
    for jax in JAX_VERSIONS {
        let dir = data_dir(jax);
        // The unused middle input is dropped.
        let model = JaxExport::read(dir.join("unused_arg/model.jaxexport")).unwrap();
        let inputs: Vec<NpyArray> =
            (0..3).map(|i| NpyArray::read(&dir.join(format!("unused_arg/in{i}.npy"))).unwrap()).collect();
        let args = model.arrange_inputs("cpu", &inputs).unwrap();
        let expected: Vec<_> = [&inputs[0], &inputs[2]].map(|a| a.to_host_array(None).unwrap()).into();
        assert_eq!(args, expected);
        // Two platforms: the platform index comes first.
        let model = JaxExport::read(dir.join("multi_platform/model.jaxexport")).unwrap();
        let inputs: Vec<NpyArray> =
            (0..2).map(|i| NpyArray::read(&dir.join(format!("multi_platform/in{i}.npy"))).unwrap()).collect();
        for (platform, index) in [("cpu", 0i32), ("cuda", 1)] {
            let args = model.arrange_inputs(platform, &inputs).unwrap();
            assert_eq!(args.len(), 3);
            assert_eq!(args[0].dims(), [0i64; 0]);
            assert_eq!(args[0].to_vec::<i32>().unwrap(), vec![index]);
        }
        assert_eq!(model.platform_index("gpu").unwrap(), Some(1));
        let err = model.arrange_inputs("tpu", &inputs).unwrap_err().to_string();
        assert!(err.contains("exported for cpu, cuda") && err.contains("tpu"), "{err}");
    }
}

#[test]
fn wrong_inputs_are_refused_with_the_expected_aval() {
    for jax in JAX_VERSIONS {
        let dir = data_dir(jax);
        let model = JaxExport::read(dir.join("unused_arg/model.jaxexport")).unwrap();
        let x = NpyArray::read(&dir.join("unused_arg/in0.npy")).unwrap();
        let unused = NpyArray::read(&dir.join("unused_arg/in1.npy")).unwrap();
        let err = model.arrange_inputs("cpu", &[x.clone(), x.clone()]).unwrap_err().to_string();
        assert!(err.contains("takes 3 inputs") && err.contains("unused ones too"), "{err}");
        let err = model.arrange_inputs("cpu", &[x.clone(), x.clone(), x.clone()]).unwrap_err().to_string();
        assert!(err.contains("input 1 is f32[3,4], but the model expects float32[5]"), "{err}");
        let ints = NpyArray::from_elements(vec![3, 4], &[0i32; 12]).unwrap();
        let err = model.arrange_inputs("cpu", &[x.clone(), unused, ints]).unwrap_err().to_string();
        assert!(err.contains("input 2 is s32[3,4], but the model expects float32[3,4]"), "{err}");
        assert!(model.check_input(0, ElementType::F32, &[3, 4]).is_ok());
        assert!(model.check_input(7, ElementType::F32, &[3, 4]).is_err());
    }
}

/// The data sets' `symbolic_batch` (`jnp.sum(x * 2.0, axis=0)` over `x: (b, 4)`) runs at
/// every batch size on both plugins, one executable per size, and JAX's shape assertion
/// refuses an empty batch. The refined module is compiled as text, which the 0.106 plugin
/// reads even from JAX 0.12 (the ops it uses are old ones).
#[test]
fn shape_polymorphic_exports_run_at_every_batch_size() {
    for plugin in support::PLUGINS {
        let client = support::client(plugin, 1);
        for jax in JAX_VERSIONS {
            let m = manifest(jax);
            let model = JaxExport::read(data_dir(jax).join(m["symbolic"]["model"].as_str().unwrap())).unwrap();
            assert_eq!(model.in_avals()[0].dims, vec![Dim::Symbolic("b".into()), Dim::Fixed(4)]);
            assert!(model.is_polymorphic());
            model.check_runnable("cpu").unwrap();
            let runner = pjrt_formats::jax_export::Runner::new(model, &client);
            for b in [1i64, 3, 7, 3] {
                let x: Vec<f32> = (0..b * 4).map(|i| i as f32 - 5.0).collect();
                let out = runner.run(&[NpyArray::from_elements(vec![b, 4], &x).unwrap()]).unwrap();
                let want: Vec<f32> = (0..4).map(|j| (0..b).map(|i| x[(i * 4 + j) as usize] * 2.0).sum()).collect();
                assert_eq!(out[0].dims, [4], "{plugin}, JAX {jax}, b = {b}");
                assert_eq!(out[0].to_vec::<f32>().unwrap(), want, "{plugin}, JAX {jax}, b = {b}");
            }
            assert_eq!(runner.cached(), 3, "one executable per batch size");
            let empty = NpyArray::from_elements(vec![0, 4], &[] as &[f32]).unwrap();
            let err = runner.run(&[empty]).unwrap_err();
            assert!(matches!(err, pjrt_formats::Error::ShapeAssertion { .. }), "{err}");
            assert!(err.to_string().contains("Expected value >= 1 for dimension variable 'b'"), "{err}");
            let wrong = NpyArray::from_elements(vec![2, 5], &[0f32; 10]).unwrap();
            let err = runner.run(&[wrong]).unwrap_err().to_string();
            assert!(err.contains("Shape mismatch for args[0].shape[1] (expected same constant): expected (b, 4) and called with (2, 5)"), "{err}");
        }
    }
}

#[test]
fn content_detection() {
    for jax in JAX_VERSIONS {
        let dir = data_dir(jax);
        for case in cases(jax) {
            let bytes = std::fs::read(dir.join(case["model"].as_str().unwrap())).unwrap();
            assert!(JaxExport::looks_like(&bytes));
        }
        let model = JaxExport::read(dir.join("mlp_f32/model.jaxexport")).unwrap();
        assert!(!JaxExport::looks_like(model.mlir_module()), "MLIR bytecode is not an export");
        assert!(!JaxExport::looks_like(b"module {}"));
        assert!(!JaxExport::looks_like(&[]));
    }
}

#[test]
fn declared_parameters_match_what_the_plugin_compiled() {
    for jax in JAX_VERSIONS {
        // The declared signature is the fallback for plugins whose optimized program this crate
        // cannot read; the CPU plugin's HLO tells the truth to compare it with.
        let client = support::client("cpu", 1);
        let mut declared = 0;
        for case in cases(jax) {
            let name = case["name"].as_str().unwrap();
            let model = JaxExport::read(data_dir(jax).join(case["model"].as_str().unwrap())).unwrap();
            let program = model.program().unwrap();
            // jax.export serializes a portable artifact: its StableHLO version is checked against
            // the plugin's before compiling.
            let version = program.stablehlo_target().unwrap();
            assert_eq!(Some(version.to_string().as_str()), case["stablehlo_version"].as_str(), "{name}");
            let Some(parameters) = program.declared_parameters() else {
                assert!(model.nr_devices() > 1, "{name}: a single-device export declares its parameters");
                continue;
            };
            let exe = model.compile(&client).unwrap();
            let compiled: Vec<(ElementType, Vec<i64>)> = exe
                .parameter_shapes()
                .unwrap()
                .iter()
                .map(|shape| (shape.element_type.unwrap(), shape.dims.clone()))
                .collect();
            assert_eq!(parameters, compiled.as_slice(), "{name}");
            declared += 1;
        }
        assert!(declared >= 5, "only {declared} exports declared their parameters");
    }
}
