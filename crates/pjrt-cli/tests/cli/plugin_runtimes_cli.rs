//! The plugins whose runtime is not in their wheel, installed from the index (pinned, checked) and
//! described by `pjrt info` as exactly what they lack on this machine: JAX's ROCm plugins (ROCm's
//! runtime, not on the package index), Intel's XPU plugin (its oneAPI runtime wheels on the library
//! path, Level Zero's loader from Debian's `libze1`, libpython in the process; then API 0.54 and no
//! device), and the newest CUDA plugins (API 0.116, StableHLO up to 1.22.0, no device).

use std::process::{Command, Output};

use serde_json::Value as Json;

use crate::common::{pjrt_env, stderr};

/// `pjrt plugin install NAME` (a check once it is in the cache).
fn install(name: &str) {
    let out = Command::new(env!("CARGO_BIN_EXE_pjrt")).args(["plugin", "install", name]).output().unwrap();
    assert!(out.status.success(), "`pjrt plugin install {name}` failed: {}", String::from_utf8_lossy(&out.stderr));
}

fn info(name: &str, env: &[(&str, &str)]) -> Output {
    pjrt_env(&["info", "--plugin", name], env)
}

#[test]
fn the_rocm_plugins_install_and_name_the_first_rocm_library_missing() {
    for name in ["rocm7", "rocm10"] {
        install(name);
        let out = info(name, &[]);
        assert!(!out.status.success(), "{name} loaded without ROCm's runtime?");
        let text = stderr(&out);
        assert!(text.contains("librocprofiler-sdk.so.1: cannot open shared object file"), "{text}");
        assert!(
            text.contains("hint: librocprofiler-sdk.so.1 is the first library of ROCm's runtime")
                && text.contains("not on the package index"),
            "{text}"
        );
        let release = name.trim_start_matches("rocm");
        assert!(text.contains(&format!("install ROCm {release} ")), "{text}");
    }
}

#[test]
fn the_intel_plugin_says_what_it_lacks_then_loads_with_no_device() {
    install("intel");
    // Without its runtime on the library path: the first oneAPI library, and the path to use.
    let out = info("intel", &[]);
    assert!(!out.status.success());
    let text = stderr(&out);
    assert!(text.contains("libccl.so.1 is missing"), "{text}");
    let library_path = text
        .split("LD_LIBRARY_PATH=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no LD_LIBRARY_PATH in {text}"))
        .to_owned();
    assert!(library_path.contains("intel_sycl_rt-2025.2.1.data/data/lib"), "{library_path}");
    // With it but without libpython: the Python C API symbol it needs.
    let out = info("intel", &[("LD_LIBRARY_PATH", &library_path)]);
    assert!(!out.status.success());
    let text = stderr(&out);
    assert!(
        text.contains("the Intel plugin calls Python's C API (Py") && text.contains("LD_PRELOAD=libpython"),
        "{text}"
    );
    // With both (and Debian's libze1, which CI installs): API 0.54, no device.
    let env = [("LD_LIBRARY_PATH", library_path.as_str()), ("LD_PRELOAD", "libpython3.11.so.1.0")];
    let out = pjrt_env(&["info", "--plugin", "intel", "--json"], &env);
    assert!(out.status.success(), "{}", stderr(&out));
    let info: Json = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(info["api_version"], "0.54", "{info}");
    assert_eq!(info["functions"], 96, "{info}");
    assert!(info["no_device"].as_str().unwrap().contains("No visible GPU devices"), "{info}");
    assert!(info["attributes"].get("stablehlo_current_version").is_none(), "it publishes no StableHLO version");
}

#[test]
fn the_newest_cuda_plugins_install_beside_the_pinned_ones() {
    for name in ["cuda12-0.12.0.1", "cuda13-0.12.0.1"] {
        install(name);
        let out = pjrt_env(&["info", "--plugin", name, "--json"], &[]);
        assert!(out.status.success(), "{}", stderr(&out));
        let info: Json = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(info["api_version"], "0.116", "{info}");
        assert_eq!(info["attributes"]["stablehlo_current_version"], serde_json::json!([1, 22, 0]), "{info}");
        assert!(info["no_device"].as_str().unwrap().contains("FAILED_PRECONDITION"), "{info}");
        assert!(info["plugin"].as_str().unwrap().contains("-0.12.0.1/"), "{info}");
    }
}
