//! Weights at memory speed: `pjrt run MODEL.jaxexport --params FILE.safetensors` uploads the
//! tensors from the file's bytes (not through host arrays) and still matches JAX, and
//! `pjrt bench h2d --params FILE` reports every upload variant against memcpy.

use std::path::PathBuf;

use pjrt_formats::npy::{Dtype, NpyArray};
use pjrt_formats::safetensors::{self, TensorView};
use serde_json::Value as Json;

use crate::common::{pjrt, root, stderr, temp_dir, PLUGINS};

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
