//! `pjrt compile --target`: GPU executables from this CPU-only machine with the CUDA 12 plugin,
//! and the CUDA plugin without a GPU in `pjrt info` and `pjrt conform`.

use pjrt_formats::artifact::Artifact;
use serde_json::Value as Json;

use crate::common::*;
use crate::spmd::{matmul_rows, MATMUL_CONTRACTING_4};

const MLP: &str = "examples/mlp/train_step.mlir";

/// `pjrt compile PROGRAM --plugin cuda12 --target TARGET -o OUT --json EXTRA...`: its JSON report
/// and the artifact it wrote.
fn compile(program: &str, target: &str, out: &std::path::Path, extra: &[&str]) -> (Json, Artifact) {
    let mut args =
        vec!["compile", program, "--plugin", CUDA, "--target", target, "-o", out.to_str().unwrap(), "--json"];
    args.extend_from_slice(extra);
    let run = pjrt_cuda(&args);
    assert!(run.status.success(), "{}", stderr(&run));
    let report: Json = serde_json::from_slice(&run.stdout).unwrap();
    (report, Artifact::read(out).unwrap())
}

#[test]
fn the_mlp_compiles_for_an_h100_and_an_a100_and_the_executables_differ() {
    let dir = temp_dir("gpu-mlp");
    let (report, h100) = compile(MLP, "h100", &dir.join("mlp-h100.pjrt"), &[]);
    assert_eq!(report["platform"], "cuda");
    assert!(report["executable_bytes"].as_u64().unwrap() > 0, "{report}");
    assert_eq!(report["gpu_target"]["name"], "h100");
    assert_eq!(report["gpu_target"]["topology"], "1x1x1");
    assert_eq!(report["cache"], "miss");
    assert_eq!(h100.header.plugin.platform_name, "cuda");
    assert_eq!(h100.header.gpu_target.as_ref().unwrap().name, "h100");
    let (_, a100) = compile(MLP, "a100", &dir.join("mlp-a100.pjrt"), &[]);
    assert_ne!(h100.executable_bytes(), a100.executable_bytes(), "the target is really used");
    // Every built-in target compiles.
    for target in ["h200", "b200", "l4"] {
        let (report, _) = compile(MLP, target, &dir.join(format!("mlp-{target}.pjrt")), &[]);
        assert_eq!(report["gpu_target"]["name"], target);
    }
}

#[test]
fn partitioned_programs_compile_for_eight_gpus() {
    let dir = temp_dir("gpu-spmd");
    let rows8 = dir.join("rows8.mlir");
    std::fs::write(&rows8, matmul_rows(8)).unwrap();
    let (report, h100) = compile(rows8.to_str().unwrap(), "h100", &dir.join("rows8-h100.pjrt"), &["--devices", "8"]);
    assert_eq!((report["partitions"].as_i64(), report["device_count"].as_i64()), (Some(8), Some(8)), "{report}");
    assert_eq!(report["gpu_target"]["topology"], "1x1x8");
    let (_, a100) = compile(rows8.to_str().unwrap(), "a100", &dir.join("rows8-a100.pjrt"), &["--devices", "8"]);
    assert_ne!(h100.executable_bytes(), a100.executable_bytes());
    // Two hosts of four GPUs.
    let (report, _) = compile(rows8.to_str().unwrap(), "h100", &dir.join("rows8-2x1x4.pjrt"), &["--topology", "2x1x4"]);
    assert_eq!(report["gpu_target"]["topology"], "2x1x4");
    // The 4-partition program on an 8-GPU topology.
    let contracting = dir.join("contracting4.mlir");
    std::fs::write(&contracting, MATMUL_CONTRACTING_4).unwrap();
    let (report, _) =
        compile(contracting.to_str().unwrap(), "h100", &dir.join("contracting4.pjrt"), &["--devices", "8"]);
    assert_eq!((report["partitions"].as_i64(), report["device_count"].as_i64()), (Some(4), Some(8)));
    // Too few GPUs for the program is refused before compiling.
    let out = pjrt_cuda(&[
        "compile",
        rows8.to_str().unwrap(),
        "--plugin",
        CUDA,
        "--target",
        "h100",
        "--devices",
        "4",
        "-o",
        dir.join("x.pjrt").to_str().unwrap(),
    ]);
    assert_fails(&out, "need 8 GPUs, but the topology 1x1x4 has 4");
}

#[test]
fn any_other_gpu_from_a_description_file() {
    let dir = temp_dir("gpu-file");
    let text = pjrt_client::GpuTarget::builtin("h100").unwrap().text().replace("core_count: 132", "core_count: 114");
    let file = dir.join("h100-pcie.txtpb");
    std::fs::write(&file, text).unwrap();
    let (report, artifact) = compile(MLP, file.to_str().unwrap(), &dir.join("mlp.pjrt"), &[]);
    assert_eq!(report["gpu_target"]["name"], "h100-pcie");
    assert_eq!(artifact.header.gpu_target.unwrap().fingerprint, {
        let text = std::fs::read_to_string(&file).unwrap();
        pjrt_client::GpuTarget::from_text("h100-pcie", text).unwrap().fingerprint()
    });
    let out = pjrt_cuda(&["compile", MLP, "--plugin", CUDA, "--target", "h1000", "-o", "x.pjrt"]);
    assert_fails(&out, "neither a built-in GPU target (h100, h200, a100, b200, l4)");
}

#[test]
fn a_gpu_artifact_is_refused_by_the_cpu_plugin_and_a_cpu_plugin_cannot_compile_for_a_gpu() {
    let dir = temp_dir("gpu-refused");
    let artifact = dir.join("mlp-h100.pjrt");
    compile(MLP, "h100", &artifact, &[]);
    let out = pjrt(&["run", artifact.to_str().unwrap(), "--plugin", "cpu"]);
    assert_fails(&out, "the artifact was compiled for the GPU target `h100` (topology 1x1x1) with the cuda plugin");
    let out =
        pjrt(&["compile", MLP, "--plugin", "cpu", "--target", "h100", "-o", dir.join("x.pjrt").to_str().unwrap()]);
    assert_fails(&out, "--target compiles with a CUDA plugin");
}

#[test]
fn the_cuda_plugin_without_a_gpu_conforms_with_no_failures() {
    let out = pjrt_cuda(&["conform", CUDA, "--json"]);
    let report = crate::common::ConformReport::passing(&out);
    let status = |name: &str| report.status(name);
    let (client, why) = status("client.create");
    assert_eq!(client, "unsupported");
    assert!(why.starts_with("no device: "), "{why}");
    for name in [
        "plugin.extensions",
        "gpu_target.topology",
        "gpu_target.device_descriptions",
        "gpu_target.topology_serialize",
        "gpu_target.cuda_data_dir",
        "gpu_target.compile_and_serialize",
        "gpu_target.compile_2_partitions",
        "gpu_target.malformed_target_is_an_error",
    ] {
        assert_eq!(status(name).0, "pass", "{name}: {report}");
    }
    // `pjrt info` describes the plugin without a device.
    let out = pjrt_cuda(&["info", "--plugin", CUDA, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let info: Json = serde_json::from_slice(&out.stdout).unwrap();
    assert!(info["no_device"].as_str().unwrap().contains("FAILED_PRECONDITION"), "{info}");
    assert_eq!(info["devices"].as_array().unwrap().len(), 0);
    assert_eq!(info["gpu_targets"][0], "h100");
    assert!(info["extensions"].as_array().unwrap().len() > 5, "{info}");
}

#[test]
fn the_compile_cache_keys_gpu_artifacts_by_target() {
    let dir = temp_dir("gpu-cache");
    let cache = dir.join("cache");
    compile(MLP, "l4", &dir.join("first.pjrt"), &[]); // installs the plugin; its own fresh cache
    let run = |target: &str, out: &str| -> Json {
        let out = dir.join(out);
        let args = ["compile", MLP, "--plugin", CUDA, "--target", target, "-o", out.to_str().unwrap(), "--json"];
        let run = pjrt_env(&args, &[("PJRT_CACHE_DIR", cache.to_str().unwrap())]);
        assert!(run.status.success(), "{}", stderr(&run));
        serde_json::from_slice(&run.stdout).unwrap()
    };
    assert_eq!(run("h100", "a.pjrt")["cache"], "miss");
    assert_eq!(run("h100", "b.pjrt")["cache"], "hit");
    assert_eq!(run("a100", "c.pjrt")["cache"], "miss", "another target is another entry");
    let (a, b) = (Artifact::read(dir.join("a.pjrt")).unwrap(), Artifact::read(dir.join("b.pjrt")).unwrap());
    assert_eq!(a, b, "the hit is the same artifact");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_jax_export_model_exported_for_cuda_compiles_for_a_gpu_target() {
    // tests/data/jax_export/jax-0.10.2 has one model exported for cuda (with cpu): one device. Its module
    // takes the platform index first; it compiles for 8 H100s as 1 replica × 1 partition.
    let dir = temp_dir("gpu-jax-export");
    let (report, artifact) = compile(
        "tests/data/jax_export/jax-0.10.2/multi_platform/model.jaxexport",
        "h100",
        &dir.join("mp.pjrt"),
        &["--devices", "8"],
    );
    assert_eq!(report["platform"], "cuda");
    assert_eq!(artifact.header.device_count, 8);
    // A model exported for cpu only is refused with what to do.
    let out = pjrt_cuda(&[
        "compile",
        "tests/data/jax_export/jax-0.10.2/sharded_4dev/model.jaxexport",
        "--plugin",
        CUDA,
        "--target",
        "h100",
        "-o",
        dir.join("x.pjrt").to_str().unwrap(),
    ]);
    assert_fails(&out, "export it with platforms=(\"cuda\", ...)");
}

#[test]
fn a_cuda_export_for_8_devices_compiles_for_8_h100s() {
    // Exported by tools/gen_cuda_export_testdata.py (jax 0.10.2, on CPU) for cuda and a mesh of
    // 8 devices: its device count is its partition count, so no --devices is needed.
    let dir = temp_dir("gpu-jax-export-8");
    let model = "tests/data/jax_export_cuda/mlp_8dev/model.jaxexport";
    let (report, artifact) = compile(model, "h100", &dir.join("mlp8.pjrt"), &[]);
    assert_eq!(report["platform"], "cuda");
    assert_eq!((report["partitions"].as_i64(), report["device_count"].as_i64()), (Some(8), Some(8)), "{report}");
    assert_eq!(report["gpu_target"]["topology"], "1x1x8");
    assert!(!artifact.executable_bytes().is_empty());
    // Fewer GPUs than the export's devices is refused before compiling.
    let out = pjrt_cuda(&[
        "compile",
        model,
        "--plugin",
        CUDA,
        "--target",
        "h100",
        "--devices",
        "4",
        "-o",
        dir.join("x.pjrt").to_str().unwrap(),
    ]);
    assert_fails(&out, "need 8 GPUs");
    let _ = std::fs::remove_dir_all(&dir);
}
