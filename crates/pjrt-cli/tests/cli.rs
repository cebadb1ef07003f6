//! The `pjrt` command end to end, on both CPU plugins. Plugins are installed into the cache on
//! first use (`pjrt plugin install`), so nothing is skipped.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use pjrt_client::npy::NpyArray;

const PLUGINS: &[&str] = &["cpu", "cpu-0.106"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn pjrt(args: &[&str]) -> Output {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        for name in PLUGINS {
            let out = Command::new(env!("CARGO_BIN_EXE_pjrt")).args(["plugin", "install", name]).output().unwrap();
            assert!(
                out.status.success(),
                "`pjrt plugin install {name}` failed (needs python3 + pip + PyPI): {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    });
    Command::new(env!("CARGO_BIN_EXE_pjrt")).args(args).current_dir(root()).output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Asserts a clean failure: exit code 1 (not a signal) and a message containing `needle`.
fn assert_fails(out: &Output, needle: &str) {
    assert_eq!(out.status.code(), Some(1), "expected exit 1, got {:?}; stderr: {}", out.status, stderr(out));
    assert!(stderr(out).contains(needle), "stderr lacks {needle:?}: {}", stderr(out));
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pjrt-cli-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn mlp_inputs() -> Vec<String> {
    ["b1", "b2", "w1", "w2", "x", "y"].iter().map(|n| format!("examples/mlp/{n}.npy")).collect()
}

#[test]
fn run_reproduces_jax_mlp_on_both_plugins() {
    for plugin in PLUGINS {
        let out_dir = temp_dir(&format!("mlp-{plugin}"));
        let mut args = vec!["run", "examples/mlp/train_step.mlir", "--plugin", plugin, "--json", "--output-dir"];
        let out_str = out_dir.to_string_lossy().into_owned();
        args.push(&out_str);
        args.push("--input");
        let inputs = mlp_inputs();
        args.extend(inputs.iter().map(|s| s.as_str()));
        let out = pjrt(&args);
        assert!(out.status.success(), "{plugin}: {}", stderr(&out));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
        assert_eq!(report["outputs"].as_array().unwrap().len(), 5);
        assert!(report["timings_ms"]["compile"].as_f64().unwrap() > 0.0);
        for i in 0..5 {
            let got = NpyArray::read(&out_dir.join(format!("out{i}.npy"))).unwrap();
            let want = NpyArray::read(&root().join(format!("tests/data/jax/mlp_value_and_grad/out{i}.npy"))).unwrap();
            assert_eq!(got.shape, want.shape);
            let (g, w) = (got.to_vec::<f32>().unwrap(), want.to_vec::<f32>().unwrap());
            for (a, b) in g.iter().zip(&w) {
                assert!((a - b).abs() <= 1e-5 + 1e-5 * b.abs(), "{plugin} out{i}: {a} vs {b}");
            }
        }
    }
}

#[test]
fn bf16_inputs_as_raw_bits_and_outputs_as_u2() {
    let out_dir = temp_dir("bf16");
    let case = "tests/data/jax/ew_bfloat16_v2";
    let out_str = out_dir.to_string_lossy().into_owned();
    let program = format!("{case}/program.mlir");
    let (in0, in1) = (format!("{case}/in0.npy"), format!("{case}/in1.npy"));
    let out = pjrt(&["run", &program, "--input", &in0, &in1, "--output-dir", &out_str]);
    assert!(out.status.success(), "{}", stderr(&out));
    let got = std::fs::read(out_dir.join("out0.npy")).unwrap();
    assert!(String::from_utf8_lossy(&got[..80]).contains("'<u2'"), "bf16 outputs are written as <u2 bits");
    assert_eq!(
        NpyArray::read(&out_dir.join("out0.npy")).unwrap(),
        NpyArray::read(&root().join(format!("{case}/out0.npy"))).unwrap()
    );
}

#[test]
fn replicas_write_one_folder_per_device() {
    let dir = temp_dir("replicas");
    let program = dir.join("double.mlir");
    std::fs::write(
        &program,
        "func.func @main(%a: tensor<3xf32>) -> tensor<3xf32> {\n  %0 = stablehlo.add %a, %a : tensor<3xf32>\n  return %0 : tensor<3xf32>\n}\n",
    )
    .unwrap();
    let input = dir.join("a.npy");
    NpyArray::from_elements(vec![3], &[1f32, 2., 3.]).unwrap().write(&input).unwrap();
    for plugin in PLUGINS {
        let out_dir = dir.join(format!("out-{plugin}"));
        let out = pjrt(&[
            "run",
            program.to_str().unwrap(),
            "--replicas",
            "2",
            "--plugin",
            plugin,
            "--input",
            input.to_str().unwrap(),
            "--output-dir",
            out_dir.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{plugin}: {}", stderr(&out));
        for k in 0..2 {
            let got = NpyArray::read(&out_dir.join(format!("device{k}/out0.npy"))).unwrap();
            assert_eq!(got.to_vec::<f32>().unwrap(), vec![2., 4., 6.]);
        }
    }
}

#[test]
fn info_json_lists_devices_and_memories() {
    for plugin in PLUGINS {
        let out = pjrt(&["info", "--plugin", plugin, "--json"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let info: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(info["platform"], "cpu");
        let devices = info["devices"].as_array().unwrap();
        assert!(!devices.is_empty());
        let kinds: Vec<&str> =
            devices[0]["memories"].as_array().unwrap().iter().map(|m| m["kind"].as_str().unwrap()).collect();
        assert!(kinds.contains(&"device"), "{kinds:?}");
        let expected = if *plugin == "cpu" { "0.115" } else { "0.106" };
        assert_eq!(info["api_version"], expected);
        assert!(info["attributes"]["stablehlo_current_version"].is_array());
    }
}

#[test]
fn plugin_list_shows_both_plugins() {
    let out = pjrt(&["plugin", "list", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let versions: Vec<&str> = rows.as_array().unwrap().iter().filter_map(|r| r["api_version"].as_str()).collect();
    assert!(versions.contains(&"0.115") && versions.contains(&"0.106"), "{versions:?}");
}

#[test]
fn bad_input_fails_cleanly() {
    let dir = temp_dir("bad");
    let text = dir.join("not-a-plugin.so");
    std::fs::write(&text, "hello").unwrap();
    let malformed = dir.join("malformed.mlir");
    std::fs::write(&malformed, "func.func @main( this is not mlir").unwrap();
    let no_main = dir.join("no_main.mlir");
    std::fs::write(&no_main, "func.func @other(%a: tensor<f32>) -> tensor<f32> {\n return %a : tensor<f32>\n}\n")
        .unwrap();
    let garbage_npy = dir.join("garbage.npy");
    std::fs::write(&garbage_npy, "\u{93}NUMPY garbage").unwrap();
    let ints = dir.join("ints.npy");
    NpyArray::from_elements(vec![8], &[1i32; 8]).unwrap().write(&ints).unwrap();
    let wrong_shape = dir.join("wrong_shape.npy");
    NpyArray::from_elements(vec![4], &[1f32; 4]).unwrap().write(&wrong_shape).unwrap();
    let mlp = "examples/mlp/train_step.mlir";
    let rest: Vec<String> = mlp_inputs()[1..].to_vec();
    let with_first = |first: &Path| {
        let mut v = vec!["run".to_owned(), mlp.to_owned(), "--input".to_owned(), first.to_string_lossy().into_owned()];
        v.extend(rest.iter().cloned());
        v
    };
    let run = |args: Vec<String>| pjrt(&args.iter().map(|s| s.as_str()).collect::<Vec<_>>());
    for plugin in PLUGINS {
        let p = |mut v: Vec<String>| {
            v.extend(["--plugin".to_owned(), plugin.to_string()]);
            v
        };
        assert_fails(&pjrt(&["run", "missing.mlir", "--plugin", plugin]), "missing.mlir");
        assert_fails(&run(p(vec!["run".into(), malformed.to_string_lossy().into()])), "PJRT_Client_Compile");
        assert_fails(&run(p(vec!["run".into(), no_main.to_string_lossy().into()])), "main");
        assert_fails(
            &run(p(vec!["run".into(), mlp.into(), "--input".into(), "examples/mlp/b1.npy".into()])),
            "takes 6 inputs",
        );
        assert_fails(&run(p(with_first(&ints))), "parameter is f32");
        assert_fails(&run(p(with_first(&wrong_shape))), "parameter 0 is f32[8]");
        assert_fails(&run(p(with_first(&garbage_npy))), "garbage.npy");
    }
    assert_fails(&pjrt(&["info", "--plugin", text.to_str().unwrap()]), "cannot open it as a shared library");
    assert_fails(&pjrt(&["info", "--plugin", "/nonexistent/plugin.so"]), "no such file");
    assert_fails(&pjrt(&["info", "--plugin", "no-such-name"]), "known names");
    assert_fails(&pjrt(&["run"]), "PROGRAM");
    assert_fails(&pjrt(&["run", mlp, "--xla-option", "novalue"]), "NAME=VALUE");
    assert_fails(&pjrt(&["run", mlp, "--replicas", "0"]), "at least 1");
}

#[test]
fn run_takes_bytecode_and_portable_artifacts() {
    for file in ["tanh_mul.mlirbc", "tanh_mul.portable-1.0.0.mlirbc", "tanh_mul.mlir"] {
        for plugin in PLUGINS {
            let out_dir = temp_dir(&format!("formats-{plugin}-{file}"));
            let program = format!("tests/data/formats/{file}");
            let out = pjrt(&[
                "run",
                &program,
                "--plugin",
                plugin,
                "--input",
                "tests/data/formats/a.npy",
                "tests/data/formats/b.npy",
                "--output-dir",
                out_dir.to_str().unwrap(),
            ]);
            assert!(out.status.success(), "{plugin} {file}: {}", stderr(&out));
            let got = NpyArray::read(&out_dir.join("out0.npy")).unwrap().to_vec::<f32>().unwrap();
            let want =
                NpyArray::read(&root().join("tests/data/formats/expected.npy")).unwrap().to_vec::<f32>().unwrap();
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() <= 1e-6 + 1e-6 * w.abs(), "{plugin} {file}: {g} vs {w}");
            }
        }
    }
}
