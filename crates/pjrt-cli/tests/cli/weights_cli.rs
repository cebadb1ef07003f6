//! Weights at memory speed: `pjrt run MODEL.jaxexport --params FILE.safetensors` uploads the
//! tensors from the file's bytes (not through host arrays) and still matches JAX, and
//! `pjrt bench h2d --params FILE` reports every upload variant against memcpy.

use std::path::{Path, PathBuf};

use pjrt_formats::npy::{Dtype, NpyArray};
use pjrt_formats::safetensors::{self, SafeTensors, TensorView};
use serde_json::Value as Json;

use crate::common::{assert_fails, pjrt, root, stderr, temp_dir, PLUGINS};

fn manifest() -> Json {
    let path = root().join("tests/data/jax_export/jax-0.10.2/manifest.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn floats(a: &NpyArray, bf16: bool) -> Vec<f64> {
    match a.dtype {
        Dtype::F32 => a.data.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64).collect(),
        Dtype::U16 if bf16 => {
            a.data.chunks_exact(2).map(|c| pjrt_client::half::bf16::from_le_bytes([c[0], c[1]]).to_f64()).collect()
        }
        other => panic!("no float comparison for {other}"),
    }
}

/// Every input of a jax.export case that the model names, in one safetensors file under its
/// name (in reverse order: the names decide), the others (`unused_arg`'s unused input, which
/// the module drops and so does not name) as --input arrays.
#[test]
fn jax_export_models_take_every_input_from_params() {
    let manifest = manifest();
    for name in ["mlp_f32", "unused_arg", "multi_platform", "bf16"] {
        let case = manifest["cases"].as_array().unwrap().iter().find(|c| c["name"] == name).unwrap();
        let dir = temp_dir(&format!("weights-{name}"));
        let data = root().join("tests/data/jax_export/jax-0.10.2");
        let files: Vec<PathBuf> =
            case["inputs"].as_array().unwrap().iter().map(|i| data.join(i["file"].as_str().unwrap())).collect();
        let arrays: Vec<NpyArray> = files.iter().map(|f| NpyArray::read(f).unwrap()).collect();
        let model = data.join(case["model"].as_str().unwrap());
        let arguments = pjrt_formats::jax_export::JaxExport::read(&model).unwrap().arguments();
        let mut views: Vec<(&str, TensorView<'_>)> = Vec::new();
        let mut unnamed: Vec<&str> = Vec::new();
        for ((argument, array), file) in arguments.iter().zip(&arrays).zip(&files) {
            match &argument.name {
                Some(n) => views.push((n.as_str(), TensorView::from_npy(array).unwrap())),
                None => unnamed.push(file.to_str().unwrap()),
            }
        }
        views.reverse();
        assert_eq!(unnamed.len(), usize::from(name == "unused_arg"), "{name}");
        let params = dir.join("params.safetensors");
        safetensors::write(&params, &views, &[]).unwrap();
        let want =
            NpyArray::read(&root().join("tests/data/jax_export/jax-0.10.2").join(name).join("out0.npy")).unwrap();
        let bf16 = name == "bf16";
        let (rtol, atol) = (case["rtol"].as_f64().unwrap(), case["atol"].as_f64().unwrap());
        for plugin in PLUGINS {
            let out_dir = dir.join(format!("out-{plugin}"));
            let mut args = vec![
                "run",
                model.to_str().unwrap(),
                "--plugin",
                plugin,
                "--params",
                params.to_str().unwrap(),
                "--output-dir",
                out_dir.to_str().unwrap(),
            ];
            if !unnamed.is_empty() {
                args.push("--input");
                args.extend(&unnamed);
            }
            let out = pjrt(&args);
            assert!(out.status.success(), "{name} {plugin}: {}", stderr(&out));
            let got = NpyArray::read(&out_dir.join("out0.npy")).unwrap();
            assert_eq!(got.dims, want.dims, "{name} {plugin}");
            for (g, w) in floats(&got, bf16).iter().zip(floats(&want, bf16)) {
                assert!((g - w).abs() <= atol + rtol * w.abs(), "{name} {plugin}: {g} vs {w}");
            }
        }
    }
}

#[test]
fn bench_h2d_params_reports_every_variant_against_memcpy() {
    let dir = temp_dir("weights-bench");
    let w: Vec<u8> = (0..4096u32).flat_map(|v| (v as f32).to_le_bytes()).collect();
    let odd: Vec<u8> = (0..7u32).flat_map(|v| (v as f32).to_le_bytes()).collect();
    let file = dir.join("w.safetensors");
    safetensors::write(
        &file,
        &[
            ("w", TensorView::new(pjrt_client::ElementType::F32, &[64, 64], &w).unwrap()),
            ("odd", TensorView::new(pjrt_client::ElementType::F32, &[7], &odd).unwrap()),
            ("after", TensorView::new(pjrt_client::ElementType::F32, &[64, 64], &w).unwrap()),
        ],
        &[],
    )
    .unwrap();
    for plugin in PLUGINS {
        let out =
            pjrt(&["bench", "h2d", "--params", file.to_str().unwrap(), "--iters", "2", "--plugin", plugin, "--json"]);
        assert!(out.status.success(), "{plugin}: {}", stderr(&out));
        let report: Json = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["benchmark"], "h2d-params", "{report}");
        assert_eq!((report["tensors"].as_u64(), report["iters"].as_u64()), (Some(3), Some(2)), "{report}");
        assert_eq!(report["bytes"].as_u64(), Some((2 * w.len() + odd.len()) as u64), "{report}");
        // "w" starts the data section (64-aligned), "odd" follows it (aligned), "after" does not.
        assert_eq!(report["aligned_tensors"].as_u64(), Some(2), "{report}");
        assert_eq!(report["aligned_bytes"].as_u64(), Some((w.len() + odd.len()) as u64), "{report}");
        for variant in ["memcpy", "copy", "overlapped_copy", "upload_safetensors", "open_and_upload"] {
            for key in ["min_ms", "median_ms", "gbps", "best_gbps"] {
                assert!(report[variant][key].as_f64().is_some_and(|v| v > 0.0), "{plugin} {variant}.{key}: {report}");
            }
        }
        for variant in ["copy", "overlapped_copy", "upload_safetensors", "open_and_upload"] {
            assert!(report[variant]["over_memcpy"].as_f64().is_some_and(|v| v > 0.0), "{variant}: {report}");
        }
    }
    let text = pjrt(&["bench", "h2d", "--params", file.to_str().unwrap(), "--iters", "1"]);
    assert!(text.status.success(), "{}", stderr(&text));
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("upload_safetensors") && text.contains("open_and_upload") && text.contains("x memcpy"),
        "{text}"
    );
}

/// tests/data/weights/CASE, made by tools/gen_weights_testdata.py (JAX 0.10.2; weights saved by
/// Python's safetensors, which sorts tensors by dtype, then name).
fn weights_data(case: &str) -> PathBuf {
    root().join("tests/data/weights").join(case)
}

/// `pjrt run MODEL --params WEIGHTS --input x.npy` into `out_dir`: the output, and stderr.
fn run_with_weights(plugin: &str, case: &str, weights: &Path, out_dir: &Path) -> (NpyArray, String) {
    let dir = weights_data(case);
    let out = pjrt(&[
        "run",
        dir.join("model.jaxexport").to_str().unwrap(),
        "--plugin",
        plugin,
        "--params",
        weights.to_str().unwrap(),
        "--input",
        dir.join("x.npy").to_str().unwrap(),
        "--output-dir",
        out_dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{case} {plugin} {}: {}", weights.display(), stderr(&out));
    (NpyArray::read(&out_dir.join("out0.npy")).unwrap(), stderr(&out))
}

fn assert_jax_output(got: &NpyArray, case: &str, what: &str) {
    let want = NpyArray::read(&weights_data(case).join("out0.npy")).unwrap();
    assert_eq!(got.dims, want.dims, "{what}");
    for (g, w) in floats(got, false).iter().zip(floats(&want, false)) {
        assert!((g - w).abs() <= 1e-5 + 1e-5 * w.abs(), "{what}: {g} vs {w}");
    }
}

/// The case: a dict of mixed dtypes (`{a: f32[3], b: i32[], c: f32[3], ...}`) saved by
/// Python under dotted, slashed (with the root) and bracketed keys, each also in two more
/// orders (reversed; same-shape weights swapped): JAX's output every time, on both plugins,
/// bound by name (no note). Haiku's params and state (int32 counters) from one file too.
#[test]
fn pjrt_run_binds_python_weights_by_name_in_every_spelling_and_order() {
    let dir = temp_dir("weights-by-name");
    let mut files: Vec<(&str, PathBuf)> = Vec::new();
    for spelling in ["dotted", "slashed", "bracketed"] {
        let python = weights_data("mixed").join(format!("params_{spelling}.safetensors"));
        let file = SafeTensors::open(&python).unwrap();
        let mut reversed: Vec<(&str, TensorView<'_>)> = file.tensors().collect();
        reversed.reverse();
        let reversed_path = dir.join(format!("{spelling}-reversed.safetensors"));
        safetensors::write(&reversed_path, &reversed, &[]).unwrap();
        // The two kernels (f32[3,3]) trade places in the file.
        let mut swapped: Vec<(&str, TensorView<'_>)> = file.tensors().collect();
        let k0 = swapped.iter().position(|(n, _)| n.contains("block_0") && n.contains("kernel")).unwrap();
        let k1 = swapped.iter().position(|(n, _)| n.contains("block_1") && n.contains("kernel")).unwrap();
        swapped.swap(k0, k1);
        let swapped_path = dir.join(format!("{spelling}-swapped.safetensors"));
        safetensors::write(&swapped_path, &swapped, &[]).unwrap();
        files.extend([("mixed", python), ("mixed", reversed_path), ("mixed", swapped_path)]);
    }
    files.push(("haiku_cnn", weights_data("haiku_cnn").join("weights.safetensors")));
    for plugin in PLUGINS {
        for (i, (case, weights)) in files.iter().enumerate() {
            let (got, stderr) = run_with_weights(plugin, case, weights, &dir.join(format!("out-{plugin}-{i}")));
            assert_jax_output(&got, case, &format!("{plugin} {}", weights.display()));
            assert!(!stderr.contains("note:"), "bound by name, without a note: {stderr}");
        }
    }
}

/// `pjrt bench run --params` binds the same way (a file-order binding fails on the dtypes).
#[test]
fn pjrt_bench_run_binds_python_weights_by_name() {
    for (case, weights) in [("mixed", "params_dotted.safetensors"), ("haiku_cnn", "weights.safetensors")] {
        let dir = weights_data(case);
        let out = pjrt(&[
            "bench",
            "run",
            dir.join("model.jaxexport").to_str().unwrap(),
            "--params",
            dir.join(weights).to_str().unwrap(),
            "--input",
            dir.join("x.npy").to_str().unwrap(),
            "--iters",
            "3",
            "--plugin",
            "cpu",
            "--json",
        ]);
        assert!(out.status.success(), "{case}: {}", stderr(&out));
        let report: Json = serde_json::from_slice(&out.stdout).unwrap();
        assert!(report.is_object(), "{case}: {report}");
    }
}

/// A missing tensor, an extra one, and a file whose names match nothing while two same-shape
/// tensors could trade places: refused, naming them. Names that match nothing where dtypes and
/// shapes leave one assignment: bound, with a note saying so.
#[test]
fn pjrt_run_refuses_missing_extra_and_ambiguous_weights_by_name() {
    let dir = temp_dir("weights-refused");
    let python = SafeTensors::open(weights_data("mixed").join("params_dotted.safetensors")).unwrap();
    let run = |weights: &Path| {
        let data = weights_data("mixed");
        pjrt(&[
            "run",
            data.join("model.jaxexport").to_str().unwrap(),
            "--params",
            weights.to_str().unwrap(),
            "--input",
            data.join("x.npy").to_str().unwrap(),
            "--output-dir",
            dir.to_str().unwrap(),
        ])
    };
    let missing = dir.join("missing.safetensors");
    let kept: Vec<(&str, TensorView<'_>)> = python.tensors().filter(|(n, _)| *n != "b").collect();
    safetensors::write(&missing, &kept, &[]).unwrap();
    let out = run(&missing);
    assert_fails(&out, "the file has no tensor for argument 1 (params['b'], s32[])");
    let extra = dir.join("extra.safetensors");
    let b = python.tensor("b").unwrap();
    let mut more: Vec<(&str, TensorView<'_>)> = python.tensors().collect();
    more.push(("step", b));
    safetensors::write(&extra, &more, &[]).unwrap();
    assert_fails(&run(&extra), "tensors 'step' match no argument name of the model");
    let names: Vec<String> = (0..python.names().len()).map(|i| format!("w{i}")).collect();
    let anonymous_path = dir.join("anonymous.safetensors");
    let anonymous: Vec<(&str, TensorView<'_>)> =
        python.tensors().zip(&names).map(|((_, view), name)| (name.as_str(), view)).collect();
    safetensors::write(&anonymous_path, &anonymous, &[]).unwrap();
    let out = run(&anonymous_path);
    assert_fails(&out, "have the same dtype and shape");
    assert!(stderr(&out).contains("params['a']"), "{}", stderr(&out));
    // The MLP's weights under names it does not use: four shapes, one assignment.
    let mlp = root().join("tests/data/jax_export/jax-0.10.2/mlp_f32");
    let arrays: Vec<NpyArray> = (0..4).map(|i| NpyArray::read(&mlp.join(format!("in{i}.npy"))).unwrap()).collect();
    let views: Vec<(&str, TensorView<'_>)> = ["t3", "t2", "t1", "t0"]
        .into_iter()
        .zip(arrays.iter().rev())
        .map(|(n, a)| (n, TensorView::from_npy(a).unwrap()))
        .collect();
    let unnamed = dir.join("unnamed.safetensors");
    safetensors::write(&unnamed, &views, &[]).unwrap();
    let out_dir = dir.join("unnamed-out");
    let out = pjrt(&[
        "run",
        mlp.join("model.jaxexport").to_str().unwrap(),
        "--params",
        unnamed.to_str().unwrap(),
        "--input",
        mlp.join("in4.npy").to_str().unwrap(),
        "--output-dir",
        out_dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("by dtype and shape") && stderr(&out).contains("not in file order"),
        "{}",
        stderr(&out)
    );
    let want = NpyArray::read(&mlp.join("out0.npy")).unwrap();
    for (g, w) in floats(&NpyArray::read(&out_dir.join("out0.npy")).unwrap(), false).iter().zip(floats(&want, false)) {
        assert!((g - w).abs() <= 1e-5 + 1e-5 * w.abs(), "{g} vs {w}");
    }
}

/// An artifact of `pjrt compile` names no parameters: its weights bind by dtype and shape once
/// it is loaded (the MLP step's four weights have four shapes).
#[test]
fn an_artifact_binds_its_weights_once_loaded() {
    let dir = temp_dir("weights-artifact");
    let artifact = dir.join("step.pjrt");
    let out = pjrt(&["compile", "examples/mlp/train_step.mlir", "-o", artifact.to_str().unwrap(), "--plugin", "cpu"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let names = ["w2", "b1", "w1", "b2"];
    let arrays: Vec<NpyArray> =
        names.iter().map(|n| NpyArray::read(&root().join(format!("examples/mlp/{n}.npy"))).unwrap()).collect();
    let views: Vec<(&str, TensorView<'_>)> =
        names.iter().zip(&arrays).map(|(n, a)| (*n, TensorView::from_npy(a).unwrap())).collect();
    let weights = dir.join("weights.safetensors");
    safetensors::write(&weights, &views, &[]).unwrap();
    let (from_npy, from_params) = (dir.join("npy"), dir.join("params"));
    let npy: Vec<String> = ["b1", "b2", "w1", "w2", "x", "y"].iter().map(|n| format!("examples/mlp/{n}.npy")).collect();
    let mut args = vec![
        "run",
        artifact.to_str().unwrap(),
        "--plugin",
        "cpu",
        "--output-dir",
        from_npy.to_str().unwrap(),
        "--input",
    ];
    args.extend(npy.iter().map(String::as_str));
    let out = pjrt(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = pjrt(&[
        "run",
        artifact.to_str().unwrap(),
        "--plugin",
        "cpu",
        "--params",
        weights.to_str().unwrap(),
        "--input",
        "examples/mlp/x.npy",
        "examples/mlp/y.npy",
        "--output-dir",
        from_params.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("by dtype and shape"), "{}", stderr(&out));
    for i in 0..5 {
        let a = NpyArray::read(&from_npy.join(format!("out{i}.npy"))).unwrap();
        let b = NpyArray::read(&from_params.join(format!("out{i}.npy"))).unwrap();
        assert_eq!(a, b, "out{i}");
    }
}
