//! `pjrt inspect`: portable artifacts, jax.export models, MLIR text and AOT artifacts
//! described without a plugin; other bytecode and unknown files refused by name.

use std::path::Path;

use crate::common::{assert_fails, pjrt, temp_dir};

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn text(args: &[&str]) -> String {
    let out = pjrt(args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn json(args: &[&str]) -> serde_json::Value {
    serde_json::from_str(&text(args)).unwrap()
}

#[test]
fn a_portable_artifact_prints_as_text_with_its_signature_and_producer() {
    let out = text(&["inspect", "tests/data/formats/tanh_mul.portable-1.0.0.mlirbc"]);
    assert!(out.starts_with("producer: StableHLO_v1.0.0\n"), "{out}");
    assert!(out.contains("function @main: (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>"), "{out}");
    assert!(out.contains("custom calls: none"), "{out}");
    // Pretty by default, as JAX prints it.
    assert!(out.contains("= stablehlo.tanh %"), "{out}");
    assert!(out.contains("func.func public @main(%arg0: tensor<2x3xf32>"), "{out}");
    let j = json(&["inspect", "tests/data/formats/tanh_mul.portable-1.0.0.mlirbc", "--json"]);
    assert_eq!(j["kind"], "stablehlo");
    assert_eq!(j["module"]["functions"][0]["name"], "main");
}

#[test]
fn a_jax_export_shows_platforms_symbolic_dims_and_custom_calls() {
    let lapack = json(&["inspect", "tests/data/lapack/jax-0.10.2/svd_full_wide_f32/model.jaxexport", "--json"]);
    assert_eq!(lapack["kind"], "jax.export");
    assert_eq!(lapack["platforms"], serde_json::json!(["cpu"]));
    assert_eq!(lapack["inputs"], serde_json::json!(["float32[2,3,4]"]));
    assert_eq!(lapack["module"]["custom_call_targets"], serde_json::json!(["lapack_sgesdd_ffi"]));
    assert_eq!(lapack["module"]["producer"], "StableHLO_v1.15.0");
    // Recognised by content too, as `pjrt run` does.
    let dir = temp_dir("inspect-no-extension");
    let copy = dir.join("model");
    std::fs::copy(crate::common::root().join("tests/data/lapack/jax-0.10.2/svd_full_wide_f32/model.jaxexport"), &copy)
        .unwrap();
    assert_eq!(json(&["inspect", s(&copy), "--json"])["kind"], "jax.export");
    let symbolic = std::fs::read_dir(crate::common::root().join("tests/data/jax_export/symbolic/jax-0.10.2"))
        .unwrap()
        .map(|e| e.unwrap().path().join("model.jaxexport"))
        .find(|p| p.is_file())
        .expect("a symbolic export");
    let j = json(&["inspect", s(&symbolic), "--json"]);
    let inputs = j["inputs"].to_string();
    assert!(inputs.chars().any(|c| c.is_ascii_lowercase() && inputs.contains(&format!("[{c}"))), "{inputs}");
}

#[test]
fn an_aot_artifact_shows_what_it_was_compiled_for() {
    let dir = temp_dir("inspect-artifact");
    let artifact = dir.join("mlp.pjrt");
    let out = pjrt(&["compile", "examples/mlp/train_step.mlir", "-o", s(&artifact)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let shown = text(&["inspect", s(&artifact)]);
    assert!(shown.starts_with("pjrt artifact, compiled for the cpu plugin"), "{shown}");
    let j = json(&["inspect", s(&artifact), "--json"]);
    assert_eq!(j["kind"], "artifact");
    assert_eq!(j["num_replicas"], 1);
    assert!(j["executable_bytes"].as_u64().unwrap() > 0);
}

#[test]
fn mlir_text_shows_dimension_parameters_shardings_and_syntax_errors_by_line() {
    let dynamic = text(&["inspect", "tests/data/stablehlo_text/dynamic/dim_param.mlir"]);
    assert!(
        dynamic.starts_with("MLIR text\nfunction @main: (tensor<i64>, tensor<?xf32>) -> tensor<?xf32>\n"),
        "{dynamic}"
    );
    assert!(dynamic.contains("dimension parameters of @main: b\n"), "{dynamic}");
    let sharded = json(&["inspect", "tests/data/jax/sharded_matmul_shardy/program.mlir", "--json"]);
    assert_eq!(sharded["kind"], "mlir_text");
    assert_eq!(sharded["module"]["in_shardings"][0], "#sdy.sharding<@mesh, [{\"x\"}, {}]>");
    let generic = text(&["inspect", "tests/data/formats/tanh_mul.mlir", "--generic"]);
    assert!(generic.contains("\"stablehlo.tanh\"(%0)"), "{generic}");
    let pretty = text(&["inspect", "tests/data/formats/tanh_mul.mlir"]);
    assert!(pretty.contains("= stablehlo.tanh %") && !pretty.contains("\"stablehlo.tanh\""), "{pretty}");
    let dir = temp_dir("inspect-bad-text");
    let bad = dir.join("bad.mlir");
    std::fs::write(&bad, "func.func @main() {\n  %0 = stablehlo.add %1\n}\n").unwrap();
    assert_fails(&pjrt(&["inspect", s(&bad)]), "bad.mlir:2:22: use of undefined value %1");
}

#[test]
fn every_program_file_of_the_test_data_inspects() {
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if matches!(p.extension().and_then(|e| e.to_str()), Some("mlir" | "mlirbc" | "jaxexport" | "pjrt")) {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(&crate::common::root().join("tests/data"), &mut files);
    walk(&crate::common::root().join("examples"), &mut files);
    assert!(files.len() >= 150, "{} files", files.len());
    let mut failures = Vec::new();
    let mut exports = 0;
    for f in &files {
        let out = pjrt(&["inspect", s(f), "--json"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        // MLIR bytecode of the stablehlo dialect itself (not a portable artifact) is the one
        // kind refused, by name.
        if !out.status.success() && !stderr.contains("MLIR bytecode of the stablehlo dialect itself") {
            failures.push(format!("{}: {stderr}", f.display()));
        } else if f.extension().is_some_and(|e| e == "jaxexport") {
            // A jax.export's module is read (every JAX since 0.4.30: bytecode 0 on), not only its header.
            let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            if !j["module"]["text"].as_str().is_some_and(|t| t.contains("func.func public @main")) {
                failures.push(format!("{}: no module text", f.display()));
            }
            exports += 1;
        }
    }
    assert!(failures.is_empty(), "{} of {} failed:\n{}", failures.len(), files.len(), failures.join("\n"));
    assert!(exports >= 300, "{exports} jax.export files");
}

#[test]
fn other_bytecode_and_unknown_files_are_refused_by_name() {
    let dir = temp_dir("inspect-unknown");
    let junk = dir.join("junk.bin");
    std::fs::write(&junk, [0xff, 0x00, 0x13]).unwrap();
    assert_fails(&pjrt(&["inspect", s(&junk)]), "not a file `pjrt inspect` knows");
    assert_fails(&pjrt(&["inspect", "tests/data/formats/tanh_mul.mlirbc"]), "portable artifacts");
}

/// `pjrt inspect` of MLIR text prints a boolean splat as a splat, pretty and generic (it
/// printed `dense<true> : tensor<4xi1>` as `dense<[true, false, false, false]>`).
#[test]
fn mlir_text_prints_boolean_splats_as_splats() {
    let program = "tests/data/stablehlo_text/dense/bool_constants.mlir";
    for args in [vec!["inspect", program], vec!["inspect", program, "--generic"]] {
        let out = text(&args);
        for n in ["2", "4", "8", "2x3", "1", "9"] {
            assert!(out.contains(&format!("dense<true> : tensor<{n}xi1>")), "{args:?}: {n}\n{out}");
        }
        assert!(out.contains("dense<[true, false, false, true]> : tensor<4xi1>"), "{out}");
        assert!(out.contains("dense<false> : tensor<5xi1>"), "{out}");
        assert!(!out.contains("dense<[true, false, false, false]>"), "{out}");
    }
}
