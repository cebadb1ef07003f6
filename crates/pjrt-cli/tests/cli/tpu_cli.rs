//! The TPU plugin (`libtpu` 0.0.52, `pjrt plugin install tpu`; CI installs it) on this machine
//! without a TPU, with `TPU_SKIP_MDS_QUERY=1`: `pjrt info` prints its facts and "no device: ..."
//! (exit 0), `pjrt conform` fails nothing and checks its deviceless topology, and `pjrt compile`
//! compiles the JAX export test data's static programs for two TPU topologies ahead of time.

use std::process::{Command, Output};
use std::sync::OnceLock;

use pjrt_formats::artifact::Artifact;
use serde_json::Value as Json;

use crate::common::{pjrt_configured, stderr, temp_dir};

/// `pjrt ARGS` with libtpu installed (once per process), told not to ask the cloud metadata
/// server (which it would do for minutes off Google Cloud), and allowed to load in several
/// processes at once (otherwise the second fails on `/tmp/libtpu_lockfile`, the TPU's lock, while
/// the first runs: the tests run in parallel, and there is no TPU to share here).
fn pjrt_tpu(args: &[&str]) -> Output {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let out = Command::new(env!("CARGO_BIN_EXE_pjrt")).args(["plugin", "install", "tpu"]).output().unwrap();
        assert!(out.status.success(), "`pjrt plugin install tpu` failed: {}", String::from_utf8_lossy(&out.stderr));
    });
    pjrt_configured(args, |command| {
        command.env("TPU_SKIP_MDS_QUERY", "1").env("ALLOW_MULTIPLE_LIBTPU_LOAD", "1");
    })
}

#[test]
fn pjrt_info_describes_libtpu_without_a_tpu() {
    let out = pjrt_tpu(&["info", "--plugin", "tpu", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let info: Json = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(info["api_version"], "0.117", "{info}");
    let no_device = info["no_device"].as_str().unwrap();
    assert!(no_device.contains("NOT_FOUND") && no_device.contains("No jellyfish device found"), "{no_device}");
    assert_eq!(info["devices"].as_array().unwrap().len(), 0);
    assert!(info["extensions"].as_array().unwrap().iter().any(|e| e == "TpuTopology"), "{info}");
    assert_eq!(info["attributes"]["stablehlo_current_version"], serde_json::json!([1, 24, 0]));

    let out = pjrt_tpu(&["info", "--plugin", "tpu"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("API version:  0.117"), "{text}");
    assert!(text.contains("platform:     no device: PJRT_Client_Create failed (NOT_FOUND)"), "{text}");
    assert!(text.contains("StableHLO:    0.9.0 .. 1.24.0"), "{text}");
}

#[test]
fn pjrt_conform_checks_libtpu_deviceless_topology_and_fails_nothing() {
    let out = pjrt_tpu(&["conform", "tpu", "--json"]);
    let report = crate::common::ConformReport::passing(&out);
    let status = |name: &str| report.status(name);
    let (client, why) = status("client.create");
    assert_eq!(client, "unsupported");
    assert!(why.starts_with("no device: ") && why.contains("No jellyfish device found"), "{why}");
    for name in [
        "plugin.extensions",
        "tpu_topology.create",
        "tpu_topology.device_descriptions",
        "tpu_topology.queries",
        "tpu_topology.subslice",
        "tpu_topology.topology_serialize",
        "tpu_topology.compile_and_serialize",
    ] {
        assert_eq!(status(name).0, "pass", "{name}: {report}");
    }
    assert_eq!(status("tpu_topology.create").1, "v5e:2x2: TFRT TPU v5 lite");
}

#[test]
fn jax_exports_compile_ahead_of_time_for_two_tpu_topologies() {
    let dir = temp_dir("tpu-aot");
    for (topology, devices, version) in [("v5e:2x2", 4, "TFRT TPU v5 lite"), ("v4:2x2x2", 16, "TFRT TPU v4")] {
        for model in ["mlp_f32", "cnn"] {
            let program = format!("tests/data/jax_export/jax-0.12.0.1/{model}/model.jaxexport");
            let artifact = dir.join(format!("{model}-{}.pjrt", topology.replace(':', "-")));
            let out = pjrt_tpu(&[
                "compile",
                &program,
                "--plugin",
                "tpu",
                "--topology",
                topology,
                "-o",
                artifact.to_str().unwrap(),
                "--json",
            ]);
            assert!(out.status.success(), "{model} for {topology}: {}", stderr(&out));
            let report: Json = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(report["platform"], "tpu", "{report}");
            assert_eq!(report["device_count"], devices, "{report}");
            assert!(report["platform_version"].as_str().unwrap().starts_with(version), "{report}");
            assert!(report["executable_bytes"].as_u64().unwrap() > 10_000, "{report}");
            let artifact = Artifact::read(&artifact).unwrap();
            assert_eq!(artifact.header.plugin.platform_name, "tpu");
        }
    }
}
