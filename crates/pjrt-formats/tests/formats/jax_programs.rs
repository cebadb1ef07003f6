//! Programs lowered by JAX (tests/data/jax, made by tools/gen_jax_testdata.py) run on both CPU
//! plugins and must reproduce JAX's outputs: bit-exact for integers, within the recorded
//! tolerance for floats.

use std::path::{Path, PathBuf};

use pjrt_client::{Client, CompileOptions, ExecuteOptions, HostArray, Program, UploadOptions};
use pjrt_formats::npy::{Dtype, NpyArray};
use serde_json::Value as Json;

use crate::support;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/jax")
}

fn cases() -> Vec<PathBuf> {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(data_dir())
        .expect("tests/data/jax exists")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("meta.json").is_file())
        .collect();
    cases.sort();
    assert!(cases.len() >= 30, "expected the JAX test cases, found {}", cases.len());
    cases
}

fn compile_options(meta: &Json, program: &Program, platform: &str) -> CompileOptions {
    let replicas = meta["replicas"].as_u64().unwrap_or(1) as usize;
    let partitions = meta["partitions"].as_u64().unwrap_or(1) as usize;
    let mut options = CompileOptions::new().jax_defaults(platform).num_replicas(replicas).num_partitions(partitions);
    if partitions > 1 {
        options = options.use_spmd_partitioning(true);
    }
    if meta["use_shardy"].as_bool().unwrap_or(false) || program.module_counts().uses_shardy {
        options = options.use_shardy_partitioner(true);
    }
    if let Some(xla) = meta["xla_options"].as_object() {
        for (name, value) in xla {
            options = match value {
                Json::Bool(b) => options.xla_option(name.clone(), *b),
                Json::Number(n) if n.is_i64() => options.xla_option(name.clone(), n.as_i64().unwrap()),
                Json::Number(n) => options.xla_option(name.clone(), n.as_f64().unwrap()),
                Json::String(s) => options.xla_option(name.clone(), s.clone()),
                other => panic!("unsupported xla option value {other}"),
            };
        }
    }
    options
}

/// Splits each global input for each device according to the recorded shardings.
fn per_device_inputs(meta: &Json, inputs: &[HostArray], devices: usize) -> Vec<Vec<HostArray>> {
    let shardings = meta["input_shardings"].as_array().cloned().unwrap_or_default();
    let mut lists = vec![Vec::new(); devices];
    for (i, input) in inputs.iter().enumerate() {
        let axis = shardings.get(i).and_then(|s| s["axis"].as_u64());
        match axis {
            Some(axis) if devices > 1 => {
                for (d, piece) in input.split(axis as usize, devices).unwrap().into_iter().enumerate() {
                    lists[d].push(piece);
                }
            }
            _ => lists.iter_mut().for_each(|l| l.push(input.clone())),
        }
    }
    lists
}

fn as_f64s(a: &NpyArray) -> Vec<f64> {
    let data = &a.data;
    match a.dtype {
        Dtype::F32 | Dtype::C64 => {
            data.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64).collect()
        }
        Dtype::F64 | Dtype::C128 => data.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect(),
        Dtype::F16 => {
            data.chunks_exact(2).map(|c| pjrt_client::half::f16::from_le_bytes([c[0], c[1]]).to_f64()).collect()
        }
        _ => unreachable!(),
    }
}

fn bf16_bits_to_f64(a: &NpyArray) -> Vec<f64> {
    a.data.chunks_exact(2).map(|c| pjrt_client::half::bf16::from_le_bytes([c[0], c[1]]).to_f64()).collect()
}

fn compare(expected: &NpyArray, actual: &NpyArray, spec: &Json, meta: &Json) -> Result<(), String> {
    if expected.dims != actual.dims {
        return Err(format!("shape {:?} != expected {:?}", actual.dims, expected.dims));
    }
    let exact = spec["exact"].as_bool().unwrap_or(false);
    let is_bf16 = spec["dtype"].as_str() == Some("bfloat16");
    if exact
        || matches!(
            expected.dtype,
            Dtype::Bool | Dtype::I8 | Dtype::I16 | Dtype::I32 | Dtype::I64 | Dtype::U8 | Dtype::U32 | Dtype::U64
        )
        || (expected.dtype == Dtype::U16 && !is_bf16)
    {
        return if expected.data == actual.data && expected.dtype == actual.dtype {
            Ok(())
        } else {
            Err(format!("not bit-exact ({} vs {})", actual.dtype, expected.dtype))
        };
    }
    let rtol = spec["rtol"].as_f64().or(meta["rtol"].as_f64()).unwrap_or(1e-6);
    let atol = spec["atol"].as_f64().or(meta["atol"].as_f64()).unwrap_or(1e-6);
    let (e, a) = if is_bf16 {
        (bf16_bits_to_f64(expected), bf16_bits_to_f64(actual))
    } else {
        (as_f64s(expected), as_f64s(actual))
    };
    for (i, (e, a)) in e.iter().zip(&a).enumerate() {
        let ok = (e.is_nan() && a.is_nan()) || e == a || (a - e).abs() <= atol + rtol * e.abs();
        if !ok {
            return Err(format!("element {i}: got {a}, expected {e} (rtol {rtol}, atol {atol})"));
        }
    }
    Ok(())
}

fn run_case(client: &Client, case: &Path) -> Result<(), String> {
    let meta: Json = serde_json::from_str(&std::fs::read_to_string(case.join("meta.json")).unwrap()).unwrap();
    let program = Program::from_file(case.join("program.mlir")).map_err(|e| e.to_string())?;
    let options = compile_options(&meta, &program, client.platform_name());
    let exe = client.compile(&program, &options).map_err(|e| format!("compile: {e}"))?;
    let inputs: Vec<NpyArray> = meta["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| NpyArray::read(&case.join(i["file"].as_str().unwrap())).unwrap())
        .collect();
    let devices = exe.addressable_devices();
    let params = exe.parameter_shapes().ok_or("the plugin reported no parameter shapes")?.to_vec();
    // Each input as its parameter's type (bf16 bits, widened sub-byte values), then split.
    let inputs = inputs
        .iter()
        .enumerate()
        .map(|(i, array)| {
            let wanted = params.get(i).and_then(|p| p.element_type);
            array.to_host_array(wanted).map_err(|e| format!("input {i}: {e}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let lists = per_device_inputs(&meta, &inputs, devices.len());
    let mut buffers = Vec::new();
    for (device, list) in devices.iter().zip(&lists) {
        let mut row = Vec::new();
        for (i, array) in list.iter().enumerate() {
            row.push(
                client
                    .upload_with(array, &UploadOptions::new().device(device))
                    .map_err(|e| format!("input {i}: {e}"))?,
            );
        }
        buffers.push(row);
    }
    let outputs = exe.execute_sharded(&buffers, &ExecuteOptions::new()).map_err(|e| format!("execute: {e}"))?;
    let out_shardings = meta["output_shardings"].as_array().cloned().unwrap_or_default();
    for (o, spec) in meta["outputs"].as_array().unwrap().iter().enumerate() {
        let expected = NpyArray::read(&case.join(spec["file"].as_str().unwrap())).unwrap();
        let per_device: Vec<HostArray> =
            outputs.iter().map(|outs| outs[o].to_host_array().map_err(|e| e.to_string())).collect::<Result<_, _>>()?;
        let actual = match out_shardings.get(o).and_then(|s| s["axis"].as_u64()) {
            Some(axis) if per_device.len() > 1 => {
                HostArray::concatenate(&per_device, axis as usize).map_err(|e| e.to_string())?
            }
            _ => per_device[0].clone(),
        };
        let actual = NpyArray::from_host_array(&actual).map_err(|e| e.to_string())?;
        compare(&expected, &actual, spec, &meta).map_err(|e| format!("output {o}: {e}"))?;
    }
    Ok(())
}

fn run_all(plugin: &str) {
    let client = support::client(plugin, 4);
    let mut failures = Vec::new();
    let cases = cases();
    for case in &cases {
        if let Err(e) = run_case(&client, case) {
            failures.push(format!("{}: {e}", case.file_name().unwrap().to_string_lossy()));
        }
    }
    assert!(
        failures.is_empty(),
        "{plugin}: {} of {} JAX cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn jax_programs_on_cpu_0_115() {
    run_all("cpu");
}

#[test]
fn jax_programs_on_cpu_0_106() {
    run_all("cpu-0.106");
}
