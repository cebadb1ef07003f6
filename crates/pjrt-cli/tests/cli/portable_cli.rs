//! `pjrt compile --emit-portable [--stablehlo-version X.Y.Z]`: a JAX 0.12 model's module written
//! as a StableHLO 1.16.1 portable artifact runs on the 0.106 plugin as the model itself does
//! there (which `pjrt run` writes for 1.16.1 too); an op the version lacks is refused by name;
//! `--stablehlo-version` on an ahead-of-time compile sends the plugin that version.

use crate::common::{assert_fails, pjrt, stderr, temp_dir};

const MODEL: &str = "tests/data/jax_export/jax-0.12.0.1/mlp_f32";

fn s(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

fn run_outputs(program: &str, plugin: &str, out: &std::path::Path) -> Vec<Vec<u8>> {
    let mut args = vec!["run", program, "--plugin", plugin, "--output-dir", s(out)];
    let inputs: Vec<String> = (0..5).map(|i| format!("{MODEL}/in{i}.npy")).collect();
    for input in &inputs {
        args.extend(["--input", input.as_str()]);
    }
    let result = pjrt(&args);
    assert!(result.status.success(), "{program} on {plugin}: {}", stderr(&result));
    let mut files: Vec<_> = std::fs::read_dir(out).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    assert!(!files.is_empty(), "{program}: no outputs");
    files.iter().map(|f| std::fs::read(f).unwrap()).collect()
}

#[test]
fn a_jax_0_12_module_written_for_1_16_1_runs_on_the_0_106_plugin() {
    let dir = temp_dir("emit-portable");
    let artifact = dir.join("mlp.mlirbc");
    let model = format!("{MODEL}/model.jaxexport");
    let out =
        pjrt(&["compile", &model, "--emit-portable", "--stablehlo-version", "1.16.1", "-o", s(&artifact), "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["producer"], "StableHLO_v1.16.1", "{report}");
    let inspected = pjrt(&["inspect", s(&artifact), "--json"]);
    let inspected: serde_json::Value = serde_json::from_slice(&inspected.stdout).unwrap();
    assert_eq!(inspected["module"]["producer"], "StableHLO_v1.16.1", "{inspected}");
    // The written artifact and the model (which `pjrt run` writes for 1.16.1 itself) agree bit
    // for bit on the 0.106 plugin.
    let from_artifact = run_outputs(s(&artifact), "cpu-0.106", &dir.join("from-artifact"));
    let from_model = run_outputs(&model, "cpu-0.106", &dir.join("from-model"));
    assert_eq!(from_artifact, from_model);
    // Without --stablehlo-version: the plugin's own version.
    let default = dir.join("default.mlirbc");
    let out = pjrt(&["compile", &model, "--emit-portable", "--plugin", "cpu-0.106", "-o", s(&default), "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["stablehlo_version"], "1.16.1", "{report}");
}

#[test]
fn an_op_the_version_lacks_is_refused_by_name_and_versions_are_checked() {
    let dir = temp_dir("emit-portable-refused");
    let program = dir.join("tan.mlir");
    std::fs::write(
        &program,
        "func.func public @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = stablehlo.tan %x : tensor<2xf32>\n  \
         return %0 : tensor<2xf32>\n}\n",
    )
    .unwrap();
    let out = dir.join("tan.mlirbc");
    let refused = pjrt(&["compile", s(&program), "--emit-portable", "--stablehlo-version", "1.3.0", "-o", s(&out)]);
    assert_fails(&refused, "tan");
    assert!(stderr(&refused).contains("1.4.0"), "{}", stderr(&refused));
    assert!(!out.exists());
    assert_fails(
        &pjrt(&["compile", s(&program), "--emit-portable", "--stablehlo-version", "1.x", "-o", s(&out)]),
        "1.x",
    );
    // An ahead-of-time compile sent as 1.16.1 runs.
    let aot = dir.join("tan.pjrt");
    let compiled = pjrt(&["compile", s(&program), "--stablehlo-version", "1.16.1", "-o", s(&aot)]);
    assert!(compiled.status.success(), "{}", stderr(&compiled));
}

/// Every output of `pjrt run PROGRAM` on `plugin` (no inputs), as npy file bytes.
fn outputs_of(program: &str, plugin: &str, out: &std::path::Path) -> Vec<Vec<u8>> {
    let result = pjrt(&["run", program, "--plugin", plugin, "--output-dir", s(out)]);
    assert!(result.status.success(), "{program} on {plugin}: {}", stderr(&result));
    (0..)
        .map(|k| out.join(format!("out{k}.npy")))
        .take_while(|p| p.exists())
        .map(|p| std::fs::read(p).unwrap())
        .collect()
}

/// Boolean constants, splat and not, of 1 to 9 elements, and slices and selects of them (as
/// StableHLO's own boolean tests use them): the artifact `--emit-portable` writes from the text,
/// for each plugin's StableHLO version, runs on that plugin as the plugin runs the text itself
/// (it ran `dense<true>` of 2 to 8 elements as `[true, false, ...]`); `pjrt inspect` of the
/// artifact prints the splats as splats.
#[test]
fn boolean_constants_written_from_text_run_as_the_text_on_both_plugins() {
    let program = "tests/data/stablehlo_text/dense/bool_constants.mlir";
    for plugin in crate::common::PLUGINS {
        let dir = temp_dir(&format!("emit-portable-bool-{plugin}"));
        let artifact = dir.join("bool.mlirbc");
        let out = pjrt(&["compile", program, "--emit-portable", "--plugin", plugin, "-o", s(&artifact), "--json"]);
        assert!(out.status.success(), "{plugin}: {}", stderr(&out));
        let from_text = outputs_of(program, plugin, &dir.join("text"));
        let from_artifact = outputs_of(s(&artifact), plugin, &dir.join("artifact"));
        assert_eq!(from_text.len(), 12, "{plugin}");
        assert_eq!(from_artifact, from_text, "{plugin}");
        // The outputs the program's comment states: all true but out6, out8, out9, out10.
        let values: Vec<Vec<u8>> =
            from_text.iter().map(|npy| pjrt_formats::npy::NpyArray::from_bytes(npy).unwrap().data.clone()).collect();
        for (k, v) in values.iter().enumerate() {
            let want = match k {
                6 | 8 | 9 => vec![1, 0, 0, 1],
                10 => vec![0; 5],
                _ => vec![1; v.len()],
            };
            assert_eq!(*v, want, "{plugin}: out{k}");
        }
        let inspected = pjrt(&["inspect", s(&artifact)]);
        let text = String::from_utf8_lossy(&inspected.stdout);
        assert!(text.contains("stablehlo.constant dense<true> : tensor<4xi1>"), "{plugin}: {text}");
        assert!(text.contains("stablehlo.constant dense<[true, false, false, true]> : tensor<4xi1>"), "{text}");
    }
}
