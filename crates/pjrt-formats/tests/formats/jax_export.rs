//! Models serialized by `jax.export` (tests/data/jax_export, made by
//! tools/gen_jax_export_testdata.py) are read, checked against what JAX recorded in the manifest,
//! and run on both CPU plugins: outputs equal JAX's (integers and bools bit-exact, floats within
//! the recorded tolerance).

use std::path::{Path, PathBuf};

use pjrt_client::sharding::Sharding;
use pjrt_client::{Client, ElementType};
use pjrt_formats::jax_export::{Dim, JaxExport, JaxSharding};
use pjrt_formats::npy::{Dtype, NpyArray};
use serde_json::Value as Json;

use crate::support;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/jax_export")
}

fn manifest() -> Json {
    serde_json::from_str(&std::fs::read_to_string(data_dir().join("manifest.json")).unwrap()).unwrap()
}

fn cases() -> Vec<Json> {
    let cases = manifest()["cases"].as_array().unwrap().clone();
    assert!(cases.len() >= 6, "expected the jax.export cases, found {}", cases.len());
    cases
}

fn read_npy(file: &Json) -> NpyArray {
    NpyArray::read(&data_dir().join(file["file"].as_str().unwrap())).unwrap()
}

fn values(a: &NpyArray, bf16: bool) -> Vec<f64> {
    match a.dtype {
        Dtype::F32 => a.data.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64).collect(),
        Dtype::F64 => a.data.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect(),
        Dtype::U16 if bf16 => {
            a.data.chunks_exact(2).map(|c| pjrt_client::half::bf16::from_le_bytes([c[0], c[1]]).to_f64()).collect()
        }
        other => panic!("no float comparison for {other}"),
    }
}

fn compare(case: &Json, o: usize, expected: &NpyArray, actual: &NpyArray) -> Result<(), String> {
    let spec = &case["outputs"][o];
    if expected.shape != actual.shape {
        return Err(format!("output {o}: shape {:?}, JAX gave {:?}", actual.shape, expected.shape));
    }
    let bf16 = spec["encoding"] == "bf16_bits_u2";
    let float = bf16 || matches!(expected.dtype, Dtype::F32 | Dtype::F64);
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

fn run_case(client: &Client, case: &Json) -> Result<(), String> {
    let model = JaxExport::read(data_dir().join(case["model"].as_str().unwrap())).map_err(|e| e.to_string())?;
    let inputs: Vec<NpyArray> = case["inputs"].as_array().unwrap().iter().map(read_npy).collect();
    let outputs = model.run(client, &inputs).map_err(|e| e.to_string())?;
    let expected: Vec<NpyArray> = case["outputs"].as_array().unwrap().iter().map(read_npy).collect();
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
    let cases = cases();
    for case in &cases {
        if let Err(e) = run_case(&client, case) {
            failures.push(format!("{}: {e}", case["name"].as_str().unwrap()));
        }
    }
    assert!(
        failures.is_empty(),
        "{plugin} (PJRT API {}.{}): {} of {} jax.export models failed. A failure to deserialize the \
         module means the plugin's StableHLO is older than the version JAX serialized (see the \
         bytecode's StableHLO_v* producer string):\n{}",
        api.major,
        api.minor,
        failures.len(),
        cases.len(),
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
    for case in cases() {
        let name = case["name"].as_str().unwrap();
        let model = JaxExport::read(data_dir().join(case["model"].as_str().unwrap())).unwrap();
        assert_eq!(model.function_name(), case["function_name"].as_str().unwrap(), "{name}");
        let platforms: Vec<&str> = case["platforms"].as_array().unwrap().iter().map(|p| p.as_str().unwrap()).collect();
        assert_eq!(model.platforms(), platforms.as_slice(), "{name}");
        let kept: Vec<usize> =
            case["module_kept_var_idx"].as_array().unwrap().iter().map(|i| i.as_u64().unwrap() as usize).collect();
        assert_eq!(model.module_kept_var_idx(), kept.as_slice(), "{name}");
        assert_eq!(model.calling_convention_version() as u64, case["calling_convention_version"].as_u64().unwrap());
        assert_eq!(model.nr_devices() as u64, case["nr_devices"].as_u64().unwrap(), "{name}");
        assert_eq!(model.serialization_version(), 3, "jax 0.10 writes 3 in the header");
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
                    spec["shape"].as_array().unwrap().iter().map(|d| Dim::Fixed(d.as_u64().unwrap())).collect();
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

#[test]
fn sharded_model_layout() {
    let model = JaxExport::read(data_dir().join("sharded_4dev/model.jaxexport")).unwrap();
    assert_eq!(model.nr_devices(), 4);
    let JaxSharding::Named(rows) = &model.in_shardings()[0] else { panic!("{:?}", model.in_shardings()) };
    assert_eq!((rows.mesh.axis_names.as_slice(), rows.mesh.axis_sizes.as_slice()), (&["x".to_string()][..], &[4][..]));
    assert_eq!(rows.partitions, vec![vec!["x".to_string()], vec![]]);
    assert_eq!(model.in_shardings()[1].is_replicated(), Some(true));
    assert_eq!(
        model.device_shardings().unwrap(),
        (vec![Sharding::Split(0), Sharding::Replicated], vec![Sharding::Split(0), Sharding::Replicated])
    );
    // A client with fewer devices than the model needs is refused before compiling.
    let client = support::client("cpu", 2);
    let inputs: Vec<NpyArray> =
        (0..2).map(|i| NpyArray::read(&data_dir().join(format!("sharded_4dev/in{i}.npy"))).unwrap()).collect();
    let e = model.run(&client, &inputs).unwrap_err().to_string();
    assert!(e.contains("devices"), "{e}");
}

#[test]
fn inputs_are_mapped_to_the_module_arguments() {
    let dir = data_dir();
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
        assert_eq!(args[0].shape(), [0usize; 0]);
        assert_eq!(args[0].to_vec::<i32>().unwrap(), vec![index]);
    }
    assert_eq!(model.platform_index("gpu").unwrap(), Some(1));
    let err = model.arrange_inputs("tpu", &inputs).unwrap_err().to_string();
    assert!(err.contains("exported for cpu, cuda") && err.contains("tpu"), "{err}");
}

#[test]
fn wrong_inputs_are_refused_with_the_expected_aval() {
    let dir = data_dir();
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

#[test]
fn shape_polymorphic_exports_are_refused() {
    let m = manifest();
    let model = JaxExport::read(data_dir().join(m["symbolic"]["model"].as_str().unwrap())).unwrap();
    assert_eq!(model.in_avals()[0].dims, vec![Dim::Symbolic("b".into()), Dim::Fixed(4)]);
    let err = model.check_runnable("cpu").unwrap_err();
    assert!(err.invalid_argument().is_some());
    let err = err.to_string();
    assert!(err.contains("shape-polymorphic") && err.contains("float32[b,4]"), "{err}");
}

#[test]
fn content_detection() {
    let dir = data_dir();
    for case in cases() {
        let bytes = std::fs::read(dir.join(case["model"].as_str().unwrap())).unwrap();
        assert!(JaxExport::looks_like(&bytes));
    }
    let model = JaxExport::read(dir.join("mlp_f32/model.jaxexport")).unwrap();
    assert!(!JaxExport::looks_like(model.mlir_module()), "MLIR bytecode is not an export");
    assert!(!JaxExport::looks_like(b"module {}"));
    assert!(!JaxExport::looks_like(&[]));
}

#[test]
fn declared_parameters_match_what_the_plugin_compiled() {
    // The declared signature is the fallback for plugins whose optimized program this crate
    // cannot read; the CPU plugin's HLO tells the truth to compare it with.
    let client = support::client("cpu", 1);
    let mut declared = 0;
    for case in cases() {
        let name = case["name"].as_str().unwrap();
        let model = JaxExport::read(data_dir().join(case["model"].as_str().unwrap())).unwrap();
        let program = model.program().unwrap();
        // jax.export serializes a portable artifact: its StableHLO version is checked against
        // the plugin's before compiling.
        assert_eq!(program.stablehlo_target(), Some((1, 15, 0)), "{name}");
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
