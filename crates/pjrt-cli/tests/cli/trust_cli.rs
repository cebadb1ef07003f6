//! Output a user can trust and read: `pjrt run` writes all of its outputs or none, previews tiny
//! and huge values in exponent notation, names the program's file in compile errors, and its
//! compile cache misses when `XLA_FLAGS` changes, and the CPU plugin's tuning-feature lines on a
//! cache hit are explained when they appear. On both CPU plugins (and the fake standing in for
//! the 0.106 one, for the host-dependent lines).

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

/// What the XLA CPU plugin logs (to fd 2) for each tuning feature of a loaded executable that the
/// host's feature list lacks; whether it appears depends on the host CPU.
const TUNING_LINE: &str = "Target machine feature +prefer-no-";
/// The note `pjrt run` prints after those lines.
const TUNING_NOTE: &str = "lines are benign here";

/// This host's CPU as `/proc/cpuinfo` describes it (for messages: the tests never predict the
/// plugin's lines from it, they read them from the plugin's output).
fn host_cpu() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        cpuinfo
            .lines()
            .find(|l| l.split(':').next().is_some_and(|k| k.trim() == name))
            .and_then(|l| l.split_once(':'))
            .map_or("?", |(_, v)| v.trim())
    };
    let avx512 = field("flags").split_whitespace().any(|f| f == "avx512f");
    format!("{} ({}, AVX-512: {})", field("model name"), field("vendor_id"), if avx512 { "yes" } else { "no" })
}

/// Checks a cache hit's stderr: the note appears iff the plugin's tuning lines did, once, after
/// them. Returns whether they did.
fn note_iff_tuning_lines(what: &str, hit: &str) -> bool {
    let printed = hit.contains(TUNING_LINE);
    let notes = hit.matches(TUNING_NOTE).count();
    assert_eq!(notes, usize::from(printed), "{what} on {}: one note iff the lines appear:\n{hit}", host_cpu());
    if printed {
        assert!(hit.rfind(TUNING_LINE) < hit.find(TUNING_NOTE), "{what}: the note comes after the lines:\n{hit}");
    }
    printed
}

/// The real plugins: whether they log the lines on a cache hit depends on the host CPU (the
/// 0.106 plugin does on hosts whose CPU model carries the `prefer-no-gather` tuning, not on an
/// AMD EPYC Zen 3); `pjrt run`'s note follows what they printed in this run, on any host.
#[test]
fn trust_the_cpu_plugins_tuning_lines_are_explained_when_they_appear() {
    let dir = temp_dir("trust-tuning-lines");
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
        assert!(!miss.contains(TUNING_NOTE), "{plugin}: a miss loads nothing serialized: {miss}");
        let printed = note_iff_tuning_lines(plugin, &hit);
        eprintln!("{plugin} on {}: tuning lines on a cache hit: {printed}", host_cpu());
    }
}

/// A program the fake's executables fit: two f32[4] in, their sum out.
const ADD: &str = "func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {\n\
     %0 = stablehlo.add %a, %b : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n";

/// Both cases on any host, with the fake standing in for the 0.106 CPU plugin: loading a cached
/// executable logs the two lines (`cpu_0_106_tuning_lines`, as on a host whose CPU has those
/// tuning features), and then the note follows them; or it is quiet (`cpu_0_106`, as on an AMD
/// EPYC Zen 3), and then there is no note, whatever the plugin's version.
#[test]
fn trust_the_note_follows_the_tuning_lines_on_any_host() {
    use crate::fake_support::Fake;
    use pjrt_formats::npy::NpyArray;
    for scenario in ["cpu_0_106_tuning_lines", "cpu_0_106"] {
        let fake = Fake::new(scenario);
        let dir = temp_dir(&format!("trust-note-{scenario}"));
        let program = write_program(&dir, "add.mlir", ADD);
        let (a, b) = (dir.join("a.npy"), dir.join("b.npy"));
        NpyArray::from_elements(vec![4], &[1f32, 2., 3., 4.]).unwrap().write(&a).unwrap();
        NpyArray::from_elements(vec![4], &[10f32, 20., 30., 40.]).unwrap().write(&b).unwrap();
        let cache = dir.join("cache");
        let run = || {
            let args =
                ["run", s(&program), "--plugin", s(&fake.path), "--input", s(&a), s(&b), "--output-dir", s(&dir)];
            let out = pjrt_env(&args, &[("PJRT_CACHE_DIR", s(&cache))]);
            assert!(out.status.success(), "{scenario}: {}", stderr(&out));
            let sum = NpyArray::read(&dir.join("out0.npy")).unwrap().to_vec::<f32>().unwrap();
            assert_eq!(sum, [11., 22., 33., 44.], "{scenario}");
            stderr(&out)
        };
        let (miss, hit) = (run(), run());
        assert!(!miss.contains(TUNING_LINE) && !miss.contains(TUNING_NOTE), "{scenario}: {miss}");
        let logs = scenario == "cpu_0_106_tuning_lines";
        assert_eq!(note_iff_tuning_lines(scenario, &hit), logs, "{scenario}: {hit}");
        if logs {
            // The plugin's lines reach the terminal whole and unchanged, both of them.
            for feature in ["+prefer-no-gather", "+prefer-no-scatter"] {
                let line = format!(
                    "Loading XLA:CPU AOT result. Target machine feature {feature} is not  supported on the host \
                     machine. Machine type used for XLA:CPU compilation doesn't match the machine type for \
                     execution. Compile machine features: [+prefer-no-gather,+prefer-no-scatter]. This could \
                     lead to execution errors such as SIGILL.\n"
                );
                assert!(hit.contains(&line), "{scenario}: {line:?} in {hit}");
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
