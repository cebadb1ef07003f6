//! `pjrt run` through the compile cache, `pjrt compile` artifacts, and `pjrt cache`, on both CPU
//! plugins, each test with its own temporary PJRT_CACHE_DIR.

use std::path::Path;

use serde_json::Value as Json;

use crate::common::*;

fn mlp_inputs() -> Vec<String> {
    ["b1", "b2", "w1", "w2", "x", "y"].iter().map(|n| format!("examples/mlp/{n}.npy")).collect()
}

/// `pjrt run PROGRAM --json` on the MLP inputs with the cache in `cache`; the report.
fn run_mlp(program: &str, plugin: &str, cache: &Path, out_dir: &Path, extra: &[&str]) -> Json {
    let out = run_mlp_raw(program, plugin, cache, out_dir, extra);
    assert!(out.status.success(), "{plugin} {program}: {}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

fn run_mlp_raw(program: &str, plugin: &str, cache: &Path, out_dir: &Path, extra: &[&str]) -> std::process::Output {
    let out_str = out_dir.to_string_lossy().into_owned();
    let mut args = vec!["run", program, "--plugin", plugin, "--json", "--output-dir", &out_str];
    args.extend_from_slice(extra);
    args.push("--input");
    let inputs = mlp_inputs();
    args.extend(inputs.iter().map(|s| s.as_str()));
    pjrt_env(&args, &[("PJRT_CACHE_DIR", cache.to_str().unwrap())])
}

fn outputs(dir: &Path) -> Vec<Vec<u8>> {
    (0..5).map(|i| std::fs::read(dir.join(format!("out{i}.npy"))).unwrap()).collect()
}

fn cache_json(cache: &Path, what: &str) -> Json {
    let out = pjrt_env(&["cache", what, "--json"], &[("PJRT_CACHE_DIR", cache.to_str().unwrap())]);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

#[test]
fn second_run_hits_the_cache_with_the_same_outputs() {
    for plugin in PLUGINS {
        let cache = temp_dir(&format!("cache-{plugin}"));
        let (cold_dir, warm_dir) = (temp_dir(&format!("cold-{plugin}")), temp_dir(&format!("warm-{plugin}")));
        let cold = run_mlp("examples/mlp/train_step.mlir", plugin, &cache, &cold_dir, &[]);
        assert_eq!(cold["cache"], "miss", "{plugin}: {cold}");
        assert!(cold["timings_ms"]["compile"].as_f64().unwrap() > 0.0);
        assert_eq!(cold["timings_ms"]["load"].as_f64(), Some(0.0));
        let warm = run_mlp("examples/mlp/train_step.mlir", plugin, &cache, &warm_dir, &[]);
        assert_eq!(warm["cache"], "hit", "{plugin}: {warm}");
        assert_eq!(warm["timings_ms"]["compile"].as_f64(), Some(0.0));
        for key in ["load", "transfer", "execute", "total"] {
            assert!(warm["timings_ms"][key].as_f64().unwrap() > 0.0, "{plugin}: {key} in {warm}");
        }
        assert_eq!(outputs(&cold_dir), outputs(&warm_dir), "{plugin}");

        // --no-cache compiles and leaves the cache alone.
        let off = run_mlp("examples/mlp/train_step.mlir", plugin, &cache, &warm_dir, &["--no-cache"]);
        assert_eq!(off["cache"], "off");
        assert!(off["timings_ms"]["compile"].as_f64().unwrap() > 0.0);
        assert_eq!(outputs(&cold_dir), outputs(&warm_dir), "{plugin}");

        // Other options are another entry.
        let other = run_mlp("examples/mlp/train_step.mlir", plugin, &cache, &warm_dir, &["--no-jax-defaults"]);
        assert_eq!(other["cache"], "miss", "{plugin}");
        assert_eq!(cache_json(&cache, "info")["entries"], 2);
    }
}

#[test]
fn cache_info_and_clear() {
    let cache = temp_dir("info-clear");
    let info = cache_json(&cache, "info");
    assert_eq!((info["entries"].as_u64(), info["bytes"].as_u64()), (Some(0), Some(0)));
    // The resolved folder: the cache is used through it (a symlink swapped later does not count).
    assert_eq!(info["dir"].as_str().map(Path::new), Some(cache.canonicalize().unwrap().as_path()));
    let out_dir = temp_dir("info-clear-out");
    for plugin in PLUGINS {
        run_mlp("examples/mlp/train_step.mlir", plugin, &cache, &out_dir, &[]);
    }
    let info = cache_json(&cache, "info");
    assert_eq!(info["entries"], 2, "one entry per plugin: {info}");
    assert!(info["bytes"].as_u64().unwrap() > 1000);
    let text = pjrt_env(&["cache", "info"], &[("PJRT_CACHE_DIR", cache.to_str().unwrap())]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("entries:       2"));
    assert_eq!(cache_json(&cache, "clear")["removed"], 2);
    assert_eq!(cache_json(&cache, "info")["entries"], 0);
    let again = run_mlp("examples/mlp/train_step.mlir", "cpu", &cache, &out_dir, &[]);
    assert_eq!(again["cache"], "miss");
}

#[test]
fn compile_then_run_the_artifact_without_compiling() {
    for plugin in PLUGINS {
        let dir = temp_dir(&format!("aot-{plugin}"));
        let cache = dir.join("cache");
        let artifact = dir.join("mlp.pjrt");
        let out = pjrt_env(
            &[
                "compile",
                "examples/mlp/train_step.mlir",
                "-o",
                artifact.to_str().unwrap(),
                "--plugin",
                plugin,
                "--json",
            ],
            &[("PJRT_CACHE_DIR", cache.to_str().unwrap())],
        );
        assert!(out.status.success(), "{plugin}: {}", stderr(&out));
        let report: Json = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!((report["replicas"].as_i64(), report["target"].as_str()), (Some(1), Some("devices")));
        assert!(std::fs::read(&artifact).unwrap().starts_with(b"PJRT-AOT"));

        let (from_source, from_artifact) = (dir.join("source"), dir.join("artifact"));
        run_mlp("examples/mlp/train_step.mlir", plugin, &cache, &from_source, &["--no-cache"]);
        let run = run_mlp(artifact.to_str().unwrap(), plugin, &cache, &from_artifact, &[]);
        assert_eq!(run["timings_ms"]["compile"].as_f64(), Some(0.0), "{plugin}: {run}");
        assert!(run["timings_ms"]["load"].as_f64().unwrap() > 0.0);
        assert_eq!(run["cache"], "off");
        assert_eq!(outputs(&from_source), outputs(&from_artifact), "{plugin}");
        assert_eq!(cache_json(&cache, "info")["entries"], 0, "loading an artifact caches nothing");

        // The artifact fixes the replica count.
        let out = run_mlp_raw(artifact.to_str().unwrap(), plugin, &cache, &from_artifact, &["--replicas", "2"]);
        assert_fails(&out, "the artifact was compiled for 1 replicas × 1 partitions, not 2 × 1");
    }
}

#[test]
fn an_artifact_from_the_new_plugin_is_refused_by_the_old_one() {
    let dir = temp_dir("refused");
    let artifact = dir.join("mlp.pjrt");
    let out = pjrt(&["compile", "examples/mlp/train_step.mlir", "-o", artifact.to_str().unwrap(), "--plugin", "cpu"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run_mlp_raw(artifact.to_str().unwrap(), "cpu-0.106", &dir.join("cache"), &dir, &[]);
    assert_fails(&out, "the artifact was compiled for the cpu plugin (version cpu, xla_version 2, API 0.115");
    for needle in ["this plugin is the cpu plugin (version cpu, xla_version 2, API 0.106", "recompile", "pjrt compile"]
    {
        assert!(stderr(&out).contains(needle), "lacks {needle:?}: {}", stderr(&out));
    }
    // A damaged artifact is refused with its path, not handed to the plugin.
    let mut bytes = std::fs::read(&artifact).unwrap();
    bytes.truncate(bytes.len() - 10);
    std::fs::write(&artifact, bytes).unwrap();
    let out = run_mlp_raw(artifact.to_str().unwrap(), "cpu", &dir.join("cache"), &dir, &[]);
    assert_fails(&out, "artifact is corrupt");
}

#[test]
fn compile_against_a_topology() {
    let dir = temp_dir("topology");
    let artifact = dir.join("mlp.pjrt");
    let a = artifact.to_str().unwrap();
    let out =
        pjrt(&["compile", "examples/mlp/train_step.mlir", "-o", a, "--plugin", "cpu", "--topology", "cpu:2", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Json = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((report["target"].as_str(), report["device_count"].as_i64()), (Some("topology"), Some(2)));
    let (from_source, from_artifact) = (dir.join("source"), dir.join("artifact"));
    run_mlp("examples/mlp/train_step.mlir", "cpu", &dir.join("cache"), &from_source, &["--no-cache"]);
    let run = run_mlp(a, "cpu", &dir.join("cache"), &from_artifact, &[]);
    assert_eq!(run["timings_ms"]["compile"].as_f64(), Some(0.0));
    assert_eq!(outputs(&from_source), outputs(&from_artifact));

    let out = pjrt(&["compile", "examples/mlp/train_step.mlir", "-o", a, "--plugin", "cpu", "--topology", "tpu-v9"]);
    assert_fails(&out, "it can only describe its own platform, `cpu`");
    let out = pjrt(&["compile", "examples/mlp/train_step.mlir", "-o", a, "--plugin", "cpu-0.106", "--topology", "cpu"]);
    assert_fails(&out, "cannot compile against a topology without devices");
    assert!(stderr(&out).contains("NOT_FOUND"), "{}", stderr(&out));
}

#[test]
fn new_flags_parse() {
    use pjrt_cli::{cli::CacheCommand, parse_args, Command};
    let cli =
        parse_args(["pjrt", "compile", "p.mlir", "-o", "a.pjrt", "--topology", "cpu:2", "--replicas", "2"]).unwrap();
    let Command::Compile(args) = cli.command else { panic!("not compile") };
    assert_eq!(
        (args.topology.as_deref(), args.replicas, args.partitions, args.json),
        (Some("cpu:2"), Some(2), None, false)
    );
    assert!(parse_args(["pjrt", "compile", "p.mlir"]).is_err(), "-o is required");
    let Command::Cache(CacheCommand::Clear { json: true }) =
        parse_args(["pjrt", "cache", "clear", "--json"]).unwrap().command
    else {
        panic!("not cache clear --json")
    };
    let Command::Run(run) = parse_args(["pjrt", "run", "a.pjrt", "--no-cache"]).unwrap().command else { panic!() };
    assert!(run.no_cache);
}
