//! `pjrt run` with safetensors: weights via --params, single tensors via --input FILE:NAME,
//! outputs via --output-format safetensors; on both CPU plugins.

use std::path::{Path, PathBuf};

use pjrt_formats::npy::NpyArray;
use pjrt_formats::safetensors::{self, SafeTensors, TensorView};

use crate::common::*;

/// Writes the named .npy arrays of examples/mlp into one safetensors file, in the order given.
fn mlp_file(dir: &Path, file: &str, names: &[&str]) -> PathBuf {
    let arrays: Vec<NpyArray> =
        names.iter().map(|n| NpyArray::read(&root().join(format!("examples/mlp/{n}.npy"))).unwrap()).collect();
    let views: Vec<(&str, TensorView<'_>)> =
        names.iter().zip(&arrays).map(|(n, a)| (*n, TensorView::from_npy(a).unwrap())).collect();
    let path = dir.join(file);
    safetensors::write(&path, &views, &[]).unwrap();
    path
}

/// Checks outputs against JAX's values for the MLP step.
fn assert_mlp_outputs(outputs: &[NpyArray], what: &str) {
    assert_eq!(outputs.len(), 5, "{what}");
    for (i, got) in outputs.iter().enumerate() {
        let want = NpyArray::read(&root().join(format!("tests/data/jax/mlp_value_and_grad/out{i}.npy"))).unwrap();
        assert_eq!(got.dims, want.dims, "{what} out{i}");
        for (a, b) in got.to_vec::<f32>().unwrap().iter().zip(&want.to_vec::<f32>().unwrap()) {
            assert!((a - b).abs() <= 1e-5 + 1e-5 * b.abs(), "{what} out{i}: {a} vs {b}");
        }
    }
}

/// `pjrt run` of the MLP step with its weights from `weights` (--params) and x, y as .npy
/// inputs, writing to `out_dir`; fails the test if the run fails.
fn run_mlp_with_params(plugin: &str, weights: &Path, out_dir: &Path) {
    let out = pjrt(&[
        "run",
        "examples/mlp/train_step.mlir",
        "--plugin",
        plugin,
        "--params",
        weights.to_str().unwrap(),
        "--input",
        "examples/mlp/x.npy",
        "examples/mlp/y.npy",
        "--output-dir",
        out_dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{plugin}: {}", stderr(&out));
}

#[test]
fn mlp_weights_from_params_then_npy_inputs() {
    let dir = temp_dir("st-params");
    let weights = mlp_file(&dir, "weights.safetensors", &["b1", "b2", "w1", "w2"]);
    for plugin in PLUGINS {
        let out_dir = dir.join(format!("out-{plugin}"));
        run_mlp_with_params(plugin, &weights, &out_dir);
        let outputs: Vec<NpyArray> =
            (0..5).map(|i| NpyArray::read(&out_dir.join(format!("out{i}.npy"))).unwrap()).collect();
        assert_mlp_outputs(&outputs, plugin);
    }
}

#[test]
fn mlp_inputs_by_tensor_name_with_safetensors_outputs() {
    let dir = temp_dir("st-inputs");
    // Stored in another order than the parameters: --input names decide.
    let all = mlp_file(&dir, "all.safetensors", &["y", "x", "w2", "w1", "b2", "b1"]);
    let inputs: Vec<String> =
        ["b1", "b2", "w1", "w2", "x", "y"].iter().map(|n| format!("{}:{n}", all.display())).collect();
    for plugin in PLUGINS {
        let out_dir = dir.join(format!("out-{plugin}"));
        let mut args = vec![
            "run",
            "examples/mlp/train_step.mlir",
            "--plugin",
            plugin,
            "--output-format",
            "safetensors",
            "--output-dir",
            out_dir.to_str().unwrap(),
            "--input",
        ];
        args.extend(inputs.iter().map(String::as_str));
        let out = pjrt(&args);
        assert!(out.status.success(), "{plugin}: {}", stderr(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("outputs.safetensors:out4"), "{stdout}");
        assert!(!out_dir.join("out0.npy").exists());
        let file = SafeTensors::open(out_dir.join("outputs.safetensors")).unwrap();
        assert_eq!(file.names().collect::<Vec<_>>(), ["out0", "out1", "out2", "out3", "out4"]);
        let outputs: Vec<NpyArray> = file.tensors().map(|(_, v)| v.to_npy().unwrap()).collect();
        assert_mlp_outputs(&outputs, plugin);
    }
}

/// `w · x + b` whose parameters carry JAX's names, in another order than the file's tensors.
const NAMED: &str = r#"module @jit_f {
  func.func public @main(%arg0: tensor<2xf32> {jax.arg_info = "x", mhlo.sharding = "{replicated}"},
      %arg1: tensor<2x2xf32> {jax.arg_info = "params['layer']['w']", mhlo.sharding = "{replicated}"},
      %arg2: tensor<2xf32> {jax.arg_info = "params['layer']['b']", mhlo.sharding = "{replicated}"})
      -> (tensor<2xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.dot_general %arg1, %arg0, contracting_dims = [1] x [0] : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %1 = stablehlo.add %0, %arg2 : tensor<2xf32>
    return %1 : tensor<2xf32>
  }
}
"#;

#[test]
fn params_bind_by_jax_argument_names() {
    let dir = temp_dir("st-named");
    let program = dir.join("named.mlir");
    std::fs::write(&program, NAMED).unwrap();
    let b = NpyArray::from_elements(vec![2], &[10f32, 20.]).unwrap();
    let w = NpyArray::from_elements(vec![2, 2], &[1f32, 2., 3., 4.]).unwrap();
    let x = NpyArray::from_elements(vec![2], &[1f32, -1.]).unwrap();
    let x_path = dir.join("x.npy");
    x.write(&x_path).unwrap();
    // Flattened with dots, as Flax/HF checkpoints name them; b before w.
    let params = dir.join("params.safetensors");
    let views = [("layer.b", TensorView::from_npy(&b).unwrap()), ("layer.w", TensorView::from_npy(&w).unwrap())];
    safetensors::write(&params, &views, &[]).unwrap();
    for plugin in PLUGINS {
        let out_dir = dir.join(format!("out-{plugin}"));
        let out = pjrt(&[
            "run",
            program.to_str().unwrap(),
            "--plugin",
            plugin,
            "--params",
            params.to_str().unwrap(),
            "--input",
            x_path.to_str().unwrap(),
            "--output-dir",
            out_dir.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{plugin}: {}", stderr(&out));
        // w·x + b = [1 - 2, 3 - 4] + [10, 20].
        assert_eq!(NpyArray::read(&out_dir.join("out0.npy")).unwrap().to_vec::<f32>().unwrap(), [9., 19.]);
    }
    // A tensor that matches no parameter name is an error naming it and the parameters.
    let extra = dir.join("extra.safetensors");
    let views = [views[0], views[1], ("layer.c", TensorView::from_npy(&b).unwrap())];
    safetensors::write(&extra, &views, &[]).unwrap();
    let out = pjrt(&[
        "run",
        program.to_str().unwrap(),
        "--params",
        extra.to_str().unwrap(),
        "--input",
        x_path.to_str().unwrap(),
    ]);
    assert_fails(&out, "tensors 'layer.c' match no argument name");
    assert!(stderr(&out).contains("argument 0 (x, f32[2])"), "{}", stderr(&out));
    // Too many --input arrays for the parameters left.
    let out = pjrt(&[
        "run",
        program.to_str().unwrap(),
        "--params",
        params.to_str().unwrap(),
        "--input",
        x_path.to_str().unwrap(),
        x_path.to_str().unwrap(),
    ]);
    assert_fails(&out, "2 are bound by name");
}

#[test]
fn bad_tensor_names_and_files_fail_clearly() {
    let dir = temp_dir("st-bad");
    let all = mlp_file(&dir, "all.safetensors", &["b1", "b2", "w1", "w2", "x", "y"]);
    let nope = format!("{}:nope", all.display());
    let out = pjrt(&["run", "examples/mlp/train_step.mlir", "--input", &nope]);
    assert_fails(&out, "no tensor named 'nope'; the file holds 'b1', 'b2', 'w1', 'w2', 'x', 'y'");
    let out = pjrt(&["run", "examples/mlp/train_step.mlir", "--input", all.to_str().unwrap()]);
    assert_fails(&out, "name the tensor");
    let broken = dir.join("broken.safetensors");
    std::fs::write(&broken, [255u8; 16]).unwrap();
    let out = pjrt(&["run", "examples/mlp/train_step.mlir", "--params", broken.to_str().unwrap()]);
    assert_fails(&out, "header length");
    // Weights only, no --input: the count check names what is missing.
    let weights = mlp_file(&dir, "weights.safetensors", &["b1", "b2", "w1", "w2"]);
    let out = pjrt(&["run", "examples/mlp/train_step.mlir", "--params", weights.to_str().unwrap()]);
    assert_fails(&out, "takes 6 parameters; 4 are bound by dtype and shape");
}

#[test]
fn jax_exported_program_binds_python_weights_by_name() {
    // tools/gen_safetensors_testdata.py: jax.export keeps argument names as locations;
    // the weights were saved by Python's safetensors as layer1.b, layer1.w, out.w.
    let data = root().join("tests/data/safetensors");
    let program = data.join("named_mlp.mlir");
    let x = data.join("named_mlp_x.npy");
    let want = NpyArray::read(&data.join("named_mlp_out0.npy")).unwrap().to_vec::<f32>().unwrap();
    // The same weights stored in reverse order: only the names can put them right.
    let dir = temp_dir("st-jax-named");
    let python = SafeTensors::open(data.join("named_mlp_params.safetensors")).unwrap();
    let reversed_path = dir.join("reversed.safetensors");
    let reversed: Vec<(&str, TensorView<'_>)> = python.tensors().rev().collect();
    safetensors::write(&reversed_path, &reversed, &[]).unwrap();
    for params in [data.join("named_mlp_params.safetensors"), reversed_path] {
        for plugin in PLUGINS {
            let out_dir = dir.join(format!("out-{plugin}"));
            let out = pjrt(&[
                "run",
                program.to_str().unwrap(),
                "--plugin",
                plugin,
                "--params",
                params.to_str().unwrap(),
                "--input",
                x.to_str().unwrap(),
                "--output-dir",
                out_dir.to_str().unwrap(),
            ]);
            assert!(out.status.success(), "{plugin} {}: {}", params.display(), stderr(&out));
            let got = NpyArray::read(&out_dir.join("out0.npy")).unwrap().to_vec::<f32>().unwrap();
            for (a, b) in got.iter().zip(&want) {
                assert!((a - b).abs() <= 1e-5 + 1e-5 * b.abs(), "{plugin} {}: {got:?} vs {want:?}", params.display());
            }
        }
    }
}

#[test]
fn mapped_params_give_the_same_bytes_as_npy_inputs() {
    let dir = temp_dir("st-same-bytes");
    let weights = mlp_file(&dir, "weights.safetensors", &["b1", "b2", "w1", "w2"]);
    let npy: Vec<String> = ["b1", "b2", "w1", "w2", "x", "y"].iter().map(|n| format!("examples/mlp/{n}.npy")).collect();
    for plugin in PLUGINS {
        let (from_npy, from_file) = (dir.join(format!("npy-{plugin}")), dir.join(format!("st-{plugin}")));
        let mut args = vec!["run", "examples/mlp/train_step.mlir", "--plugin", plugin, "--output-dir"];
        args.push(from_npy.to_str().unwrap());
        args.push("--input");
        args.extend(npy.iter().map(String::as_str));
        let out = pjrt(&args);
        assert!(out.status.success(), "{plugin}: {}", stderr(&out));
        run_mlp_with_params(plugin, &weights, &from_file);
        for i in 0..5 {
            let name = format!("out{i}.npy");
            assert_eq!(
                std::fs::read(from_npy.join(&name)).unwrap(),
                std::fs::read(from_file.join(&name)).unwrap(),
                "{plugin} {name}"
            );
        }
    }
}

/// Widens f8E4M3FN to f32 and doubles it.
const F8_TO_F32: &str = r#"func.func @main(%x: tensor<4xf8E4M3FN>) -> tensor<4xf32> {
  %0 = stablehlo.convert %x : (tensor<4xf8E4M3FN>) -> tensor<4xf32>
  %1 = stablehlo.add %0, %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}
"#;

#[test]
fn f8_tensors_are_inputs() {
    // F8 has no .npy dtype: only the mapped path can feed it.
    let dir = temp_dir("st-f8");
    let program = dir.join("f8.mlir");
    std::fs::write(&program, F8_TO_F32).unwrap();
    // e4m3fn bits of 1, 2, -0.5, 1.5.
    let bits = [0x38u8, 0x40, 0xB0, 0x3C];
    let shape = [4i64];
    let file = dir.join("f8.safetensors");
    let view = TensorView::new(pjrt_client::ElementType::F8E4M3FN, &shape, &bits).unwrap();
    safetensors::write(&file, &[("x", view)], &[]).unwrap();
    let input = format!("{}:x", file.display());
    for plugin in PLUGINS {
        for how in [["--input", input.as_str()], ["--params", file.to_str().unwrap()]] {
            let out_dir = dir.join(format!("out-{plugin}"));
            let out = pjrt(&[
                "run",
                program.to_str().unwrap(),
                "--plugin",
                plugin,
                how[0],
                how[1],
                "--output-dir",
                out_dir.to_str().unwrap(),
            ]);
            assert!(out.status.success(), "{plugin} {how:?}: {}", stderr(&out));
            let got = NpyArray::read(&out_dir.join("out0.npy")).unwrap();
            let want: Vec<u8> = [2f32, 4., -1., 3.].iter().flat_map(|v| v.to_le_bytes()).collect();
            assert_eq!(got.data, want, "{plugin} {how:?}");
        }
    }
    // An f8 tensor for an f32 parameter names both types.
    let f32_program = dir.join("f32.mlir");
    std::fs::write(
        &f32_program,
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n  return %x : tensor<4xf32>\n}\n",
    )
    .unwrap();
    let out = pjrt(&["run", f32_program.to_str().unwrap(), "--input", &input, "--output-dir", dir.to_str().unwrap()]);
    assert_fails(&out, "but the parameter is f32");
    assert_fails(&out, "input 0 (");
}
