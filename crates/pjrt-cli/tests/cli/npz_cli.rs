//! `pjrt run` with `.npz` archives written by numpy (`tools/gen_npz_testdata.py`): weights via
//! `--params` (stored and deflated members), single arrays via `--input FILE.npz:NAME`; the
//! outputs are those of the same run on the `.npy` files. On both CPU plugins.

use std::path::Path;

use pjrt_formats::npy::NpyArray;

use crate::common::*;

/// Runs the MLP step with `args` after the program and plugin; returns its five outputs.
fn run_mlp(plugin: &str, out_dir: &Path, args: &[&str]) -> Vec<NpyArray> {
    let mut all =
        vec!["run", "examples/mlp/train_step.mlir", "--plugin", plugin, "--output-dir", out_dir.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = pjrt(&all);
    assert!(out.status.success(), "{plugin} {args:?}: {}", stderr(&out));
    (0..5).map(|i| NpyArray::read(&out_dir.join(format!("out{i}.npy"))).unwrap()).collect()
}

#[test]
fn npz_params_and_inputs_give_the_npy_outputs() {
    let dir = temp_dir("npz-params");
    let npy: Vec<String> = ["b1", "b2", "w1", "w2", "x", "y"].iter().map(|n| format!("examples/mlp/{n}.npy")).collect();
    for plugin in PLUGINS {
        let mut args = vec!["--input"];
        args.extend(npy.iter().map(String::as_str));
        let want = run_mlp(plugin, &dir.join(format!("npy-{plugin}")), &args);
        for archive in ["mlp_weights.npz", "mlp_weights_compressed.npz"] {
            let path = format!("tests/data/npz/{archive}");
            let got = run_mlp(
                plugin,
                &dir.join(format!("{archive}-{plugin}")),
                &["--params", &path, "--input", "examples/mlp/x.npy", "examples/mlp/y.npy"],
            );
            assert_eq!(got, want, "{plugin} --params {archive}");
            // The same arrays named one by one.
            let named: Vec<String> = ["b1", "b2", "w1", "w2"].iter().map(|n| format!("{path}:{n}")).collect();
            let mut args = vec!["--input"];
            args.extend(named.iter().map(String::as_str));
            args.extend(["examples/mlp/x.npy", "examples/mlp/y.npy"]);
            let got = run_mlp(plugin, &dir.join(format!("{archive}-named-{plugin}")), &args);
            assert_eq!(got, want, "{plugin} --input {archive}:NAME");
        }
    }
}

#[test]
fn npz_refusals_name_the_archive() {
    let dir = temp_dir("npz-refusals");
    let out = pjrt(&[
        "run",
        "examples/mlp/train_step.mlir",
        "--output-dir",
        dir.to_str().unwrap(),
        "--input",
        "tests/data/npz/mlp_weights.npz:nope",
    ]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("has no array 'nope'"), "{}", stderr(&out));
    let out = pjrt(&["run", "examples/mlp/train_step.mlir", "--input", "tests/data/npz/mlp_weights.npz"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("name the tensor"), "{}", stderr(&out));
}
