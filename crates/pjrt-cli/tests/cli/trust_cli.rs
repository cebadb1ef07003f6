//! Output a user can trust and read: `pjrt run` writes all of its outputs or none, previews tiny
//! and huge values in exponent notation, names the program's file in compile errors, and its
//! compile cache misses when `XLA_FLAGS` changes. On both CPU plugins.

use std::path::{Path, PathBuf};

use crate::common::{assert_fails, pjrt, pjrt_env, stderr, temp_dir, PLUGINS};

/// Two outputs: an f32 pair and an f64 pair with a subnormal and a huge value.
const TWO_OUTPUTS: &str = r#"func.func @main() -> (tensor<2xf32>, tensor<2xf64>) {
  %a = stablehlo.constant dense<[1.5, 2.0]> : tensor<2xf32>
  %b = stablehlo.constant dense<[4.0e-323, 1.0e300]> : tensor<2xf64>
  return %a, %b : tensor<2xf32>, tensor<2xf64>
}"#;

fn write_program(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn trust_previews_use_exponents_for_tiny_and_huge_values() {
    for plugin in PLUGINS {
        let dir = temp_dir(&format!("trust-preview-{plugin}"));
        let program = write_program(&dir, "two.mlir", TWO_OUTPUTS);
        let out_dir = dir.join("out");
        let out = pjrt(&["run", s(&program), "--plugin", plugin, "--output-dir", s(&out_dir)]);
        assert!(out.status.success(), "{plugin}: {}", stderr(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("= [4e-323, 1e300]"), "{plugin}: {text}");
        assert!(text.contains("= [1.5, 2]"), "{plugin}: {text}");
        assert!(text.lines().all(|l| l.len() < 200), "{plugin}: a short line per output: {text}");
    }
}

#[test]
fn trust_outputs_are_written_all_or_nothing() {
    for plugin in PLUGINS {
        let dir = temp_dir(&format!("trust-all-or-nothing-{plugin}"));
        let program = write_program(&dir, "two.mlir", TWO_OUTPUTS);
        let out_dir = dir.join("out");
        // The second output's file cannot be written (a folder has its name): refused before
        // running, and the first output's file is not written either.
        std::fs::create_dir_all(out_dir.join("out1.npy")).unwrap();
        let out = pjrt(&["run", s(&program), "--plugin", plugin, "--output-dir", s(&out_dir)]);
        assert_fails(&out, "out1.npy");
        assert!(!out_dir.join("out0.npy").exists(), "{plugin}: no output is written when one cannot be");
        let left: Vec<_> = std::fs::read_dir(&out_dir).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(left, ["out1.npy"], "{plugin}: no temporary file is left");
        // Once it can be, both are written.
        std::fs::remove_dir(out_dir.join("out1.npy")).unwrap();
        let out = pjrt(&["run", s(&program), "--plugin", plugin, "--output-dir", s(&out_dir)]);
        assert!(out.status.success(), "{plugin}: {}", stderr(&out));
        assert!(out_dir.join("out0.npy").is_file() && out_dir.join("out1.npy").is_file());
    }
}

#[test]
fn trust_compile_errors_name_the_program_file() {
    let dir = temp_dir("trust-compile-error");
    let program = write_program(
        &dir,
        "bogus.mlir",
        "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n  %0 = stablehlo.bogus %a : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n",
    );
    let x = dir.join("x.npy");
    pjrt_formats::npy::NpyArray::from_elements(vec![4], &[1f32; 4]).unwrap().write(&x).unwrap();
    for plugin in PLUGINS {
        let out = pjrt(&["run", s(&program), "--plugin", plugin, "--input", s(&x)]);
        assert_fails(&out, &format!("{}:2:", program.display()));
        assert!(!stderr(&out).contains("-:2:"), "{plugin}: {}", stderr(&out));
    }
}

#[test]
fn trust_a_changed_xla_flags_is_a_cache_miss() {
    for plugin in PLUGINS {
        let dir = temp_dir(&format!("trust-xla-flags-{plugin}"));
        let program = write_program(&dir, "two.mlir", TWO_OUTPUTS);
        let cache = dir.join("cache");
        let run = |flags: Option<&str>| {
            let mut env = vec![("PJRT_CACHE_DIR", s(&cache))];
            env.extend(flags.map(|f| ("XLA_FLAGS", f)));
            let out = pjrt_env(&["run", s(&program), "--plugin", plugin, "--output-dir", s(&dir), "--json"], &env);
            assert!(out.status.success(), "{plugin}: {}", stderr(&out));
            let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            report["cache"].as_str().unwrap().to_string()
        };
        let (flags, other) = ("--xla_cpu_enable_fast_math=false", "--xla_cpu_enable_fast_math=true");
        assert_eq!(run(Some(flags)), "miss", "{plugin}");
        assert_eq!(run(Some(flags)), "hit", "{plugin}");
        assert_eq!(run(Some(other)), "miss", "{plugin}: other XLA_FLAGS");
        assert_eq!(run(None), "miss", "{plugin}: no XLA_FLAGS");
        assert_eq!(run(Some(flags)), "hit", "{plugin}: the first entry is still there");
    }
}

#[test]
fn trust_the_old_plugins_warning_on_a_cache_hit_is_explained() {
    let dir = temp_dir("trust-old-warning");
    let program = write_program(&dir, "two.mlir", TWO_OUTPUTS);
    let cache = dir.join("cache");
    for plugin in PLUGINS {
        let run = || {
            let args = ["run", s(&program), "--plugin", plugin, "--output-dir", s(&dir)];
            let out = pjrt_env(&args, &[("PJRT_CACHE_DIR", s(&cache))]);
            assert!(out.status.success(), "{plugin}: {}", stderr(&out));
            stderr(&out)
        };
        let (miss, hit) = (run(), run());
        assert!(!miss.contains("benign"), "{plugin}: {miss}");
        // The 0.106 plugin warns on every cached executable it loads; the note says why that is benign.
        let warns = hit.contains("Target machine feature +prefer-no-gather");
        assert_eq!(warns, *plugin == "cpu-0.106", "{plugin}: {hit}");
        assert_eq!(hit.contains("are benign here"), warns, "{plugin}: {hit}");
    }
}
