//! `pjrt run model.jaxexport --input ...` on the models in tests/data/jax_export/jax-<version>
//! (made by tools/gen_jax_export_testdata.py with JAX 0.10.2 and 0.12.0.1): outputs equal JAX's
//! on both CPU plugins, except JAX 0.12's on the 0.106 plugin, whose StableHLO (up to 1.16.1) is
//! older than the 1.18.0 JAX 0.12 writes: refused naming both; what cannot run is refused with
//! a clear message.

use pjrt_formats::npy::{Dtype, NpyArray};
use serde_json::Value as Json;

use crate::common::{assert_fails, pjrt, root, stderr, temp_dir, PLUGINS};

/// The JAX versions whose exports are tested: the oldest and the newest.
const JAX_VERSIONS: [&str; 2] = ["0.10.2", "0.12.0.1"];

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
        if plugin == "cpu-0.106" && jax == "0.12.0.1" {
            assert_fails(&out, "the program is a StableHLO 1.18.0 artifact, but this plugin reads StableHLO");
            assert!(stderr(&out).contains("to 1.16.1"), "{name}: {}", stderr(&out));
            assert!(stderr(&out).contains("exported by JAX 0.12.0.1"), "{name}: {}", stderr(&out));
            assert!(!out_dir.join("out0.npy").exists(), "{name}: no outputs");
            continue;
        }
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

#[test]
fn symbolic_shapes_are_refused() {
    let model = data(manifest()["symbolic"]["model"].as_str().unwrap());
    let x = data("unused_arg/in0.npy");
    let out = pjrt(&["run", &model, "-i", &x]);
    assert_fails(&out, "shape-polymorphic (input 0 is float32[b,4])");
    assert!(stderr(&out).contains("export it again with concrete shapes"), "{}", stderr(&out));
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
