//! Read, print, compile from text, run: the same results as the bytecode compiled directly.

use pjrt_client::{Client, ExecuteOptions, HostArray, LoadedExecutable, Program, UploadOptions};
use pjrt_formats::jax_export::JaxExport;
use pjrt_formats::npy::NpyArray;

use crate::{files, support};

/// Every portable artifact reads and prints; the text names StableHLO ops, not VHLO ones.
#[test]
fn every_portable_artifact_reads_and_prints() {
    let mut count = 0;
    for path in files::all() {
        let bc = files::bytecode(&path);
        if !files::is_portable(&bc) {
            continue;
        }
        let module = pjrt_stablehlo::read_bytecode(&bc).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(module.producer.starts_with("StableHLO_v"), "{}: producer {}", path.display(), module.producer);
        let text = pjrt_stablehlo::print(&module);
        assert!(text.starts_with("\"builtin.module\"()"), "{}", path.display());
        assert!(text.contains("\"func.func\"()"), "{}", path.display());
        assert!(!text.contains("vhlo."), "{}: VHLO names left in the text", path.display());
        assert!(module.walk().any(|op| op.name.starts_with("stablehlo.")), "{}", path.display());
        count += 1;
    }
    assert!(count >= 32, "only {count} portable artifacts");
}

/// One case's inputs, from the data set's manifest.
fn inputs(dir: &std::path::Path, case: &serde_json::Value) -> Vec<NpyArray> {
    case["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| NpyArray::read(&dir.join(f["file"].as_str().unwrap())).unwrap())
        .collect()
}

/// Runs `exe` on `args` (on as many devices as the export needs) and gives the outputs' bytes.
pub fn run(
    client: &Client,
    model: &JaxExport,
    exe: &LoadedExecutable,
    args: &[HostArray],
) -> Result<Vec<Vec<u8>>, String> {
    if model.nr_devices() > 1 {
        let (ins, outs) = model.device_shardings().map_err(|e| e.to_string())?;
        let buffers = exe.upload_sharded(args, &ins).map_err(|e| e.to_string())?;
        let outputs = exe.execute_sharded(&buffers, &ExecuteOptions::new()).map_err(|e| e.to_string())?;
        let outputs = pjrt_client::sharding::gather_outputs(&outputs, &outs).map_err(|e| e.to_string())?;
        return Ok(outputs.iter().map(|o| o.data().to_vec()).collect());
    }
    let device = exe.addressable_devices().into_iter().next().ok_or("no device")?;
    let mut buffers = Vec::new();
    for a in args {
        buffers.push(client.upload_with(a, &UploadOptions::new().device(&device)).map_err(|e| e.to_string())?);
    }
    let refs: Vec<&pjrt_client::Buffer> = buffers.iter().collect();
    let outputs = exe.execute(&refs, &ExecuteOptions::new()).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for o in outputs.iter() {
        out.push(o.to_host_array().map_err(|e| e.to_string())?.data().to_vec());
    }
    Ok(out)
}

fn round_trip(client: &Client, dir: &std::path::Path, case: &serde_json::Value) -> Result<(), String> {
    let path = dir.join(case["model"].as_str().unwrap());
    let model = JaxExport::read(&path).map_err(|e| e.to_string())?;
    let module = pjrt_stablehlo::read_bytecode(model.mlir_module()).map_err(|e| e.to_string())?;
    let text = pjrt_stablehlo::print(&module);
    let platform = client.platform_name().to_string();
    let args = model.arrange_inputs(&platform, &inputs(dir, case)).map_err(|e| e.to_string())?;
    // (JAX 0.12's bytecode is newer than the 0.106 plugin reads: `compile` downgrades it.)
    let from_bytecode = model.compile(client).map_err(|e| format!("bytecode: {e}"))?;
    let program = Program::mlir_text(text.clone()).map_err(|e| e.to_string())?;
    let from_text = client
        .compile(&program, &model.compile_options(&platform))
        .map_err(|e| format!("the printed text does not compile: {e}\n{text}"))?;
    let expected = run(client, &model, &from_bytecode, &args)?;
    let actual = run(client, &model, &from_text, &args)?;
    if expected != actual {
        return Err("outputs differ between the bytecode and the printed text".to_string());
    }
    Ok(())
}

fn run_all(plugin: &str) {
    let client = support::client(plugin, 4);
    let mut failures = Vec::new();
    let mut same = 0;
    for jax in ["0.10.2", "0.12.0.1"] {
        let dir = files::repo().join(format!("tests/data/jax_export/jax-{jax}"));
        let manifest: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
        for case in manifest["cases"].as_array().unwrap() {
            match round_trip(&client, &dir, case) {
                Ok(()) => same += 1,
                Err(e) => failures.push(format!("jax {jax} {}: {e}", case["name"].as_str().unwrap())),
            }
        }
    }
    assert!(failures.is_empty(), "{plugin}: {} failed:\n{}", failures.len(), failures.join("\n\n"));
    assert_eq!(same, 28, "{plugin}");
}

#[test]
fn jax_exports_round_trip_on_cpu_0_115() {
    run_all("cpu");
}

#[test]
fn jax_exports_round_trip_on_cpu_0_106() {
    run_all("cpu-0.106");
}

/// The plain portable artifact (tanh(x) * y + 1) from text equals it from bytecode.
#[test]
fn portable_mlirbc_round_trips_on_both_plugins() {
    let path = files::repo().join("tests/data/formats/tanh_mul.portable-1.0.0.mlirbc");
    let bc = std::fs::read(&path).unwrap();
    let text = pjrt_stablehlo::print(&pjrt_stablehlo::read_bytecode(&bc).unwrap());
    let x: Vec<f32> = vec![0.5, -1.0, 2.0, 0.0, 1.5, -0.25];
    let y: Vec<f32> = vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    for plugin in ["cpu", "cpu-0.106"] {
        let client = support::client(plugin, 1);
        let mut results = Vec::new();
        for program in [Program::mlir_bytecode(bc.clone()).unwrap(), Program::mlir_text(text.clone()).unwrap()] {
            let exe = client.compile(&program, &Default::default()).unwrap();
            let a = client.upload(&x, &[2, 3]).unwrap();
            let b = client.upload(&y, &[2, 3]).unwrap();
            let out = exe.execute(&[&a, &b], &ExecuteOptions::new()).unwrap();
            results.push(out[0].to_vec::<f32>().unwrap());
        }
        assert_eq!(results[0], results[1], "{plugin}");
        assert!((results[0][0] - (0.5f32.tanh() + 1.0)).abs() < 1e-6, "{plugin}: {:?}", results[0]);
    }
}

/// StableHLO-dialect bytecode (not VHLO) is refused with a typed error that says what to write
/// instead.
#[test]
fn stablehlo_dialect_bytecode_is_refused_with_advice() {
    let bc = std::fs::read(files::repo().join("tests/data/formats/tanh_mul.mlirbc")).unwrap();
    let e = pjrt_stablehlo::read_bytecode(&bc).unwrap_err();
    assert!(matches!(e, pjrt_stablehlo::Error::Unsupported { offset: 0, .. }), "{e}");
    assert!(e.to_string().contains("serialize_portable_artifact"), "{e}");
}
