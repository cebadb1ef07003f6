//! The `pjrt` command end to end, on both CPU plugins. Plugins are installed into the cache on
//! first use (`pjrt plugin install`), so nothing is skipped.

use std::path::{Path, PathBuf};

use pjrt_formats::npy::NpyArray;

use crate::common::*;

fn mlp_inputs() -> Vec<String> {
    ["b1", "b2", "w1", "w2", "x", "y"].iter().map(|n| format!("examples/mlp/{n}.npy")).collect()
}

#[test]
fn run_reproduces_jax_mlp_on_both_plugins() {
    for plugin in PLUGINS {
        let out_dir = temp_dir(&format!("mlp-{plugin}"));
        let mut args = vec!["run", "examples/mlp/train_step.mlir", "--plugin", plugin, "--json", "--output-dir"];
        let out_str = out_dir.to_string_lossy().into_owned();
        args.push(&out_str);
        args.push("--input");
        let inputs = mlp_inputs();
        args.extend(inputs.iter().map(|s| s.as_str()));
        let out = pjrt(&args);
        assert!(out.status.success(), "{plugin}: {}", stderr(&out));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
        assert_eq!(report["outputs"].as_array().unwrap().len(), 5);
        assert!(report["timings_ms"]["compile"].as_f64().unwrap() > 0.0);
        for i in 0..5 {
            let got = NpyArray::read(&out_dir.join(format!("out{i}.npy"))).unwrap();
            let want = NpyArray::read(&root().join(format!("tests/data/jax/mlp_value_and_grad/out{i}.npy"))).unwrap();
            assert_eq!(got.dims, want.dims);
            let (g, w) = (got.to_vec::<f32>().unwrap(), want.to_vec::<f32>().unwrap());
            for (a, b) in g.iter().zip(&w) {
                assert!((a - b).abs() <= 1e-5 + 1e-5 * b.abs(), "{plugin} out{i}: {a} vs {b}");
            }
        }
    }
}

#[test]
fn bf16_inputs_as_raw_bits_and_outputs_as_u2() {
    let out_dir = temp_dir("bf16");
    let case = "tests/data/jax/ew_bfloat16_v2";
    let out_str = out_dir.to_string_lossy().into_owned();
    let program = format!("{case}/program.mlir");
    let (in0, in1) = (format!("{case}/in0.npy"), format!("{case}/in1.npy"));
    let out = pjrt(&["run", &program, "--input", &in0, &in1, "--output-dir", &out_str]);
    assert!(out.status.success(), "{}", stderr(&out));
    let got = std::fs::read(out_dir.join("out0.npy")).unwrap();
    assert!(String::from_utf8_lossy(&got[..80]).contains("'<u2'"), "bf16 outputs are written as <u2 bits");
    assert_eq!(
        NpyArray::read(&out_dir.join("out0.npy")).unwrap(),
        NpyArray::read(&root().join(format!("{case}/out0.npy"))).unwrap()
    );
}

#[test]
fn replicas_write_one_folder_per_device() {
    let dir = temp_dir("replicas");
    let program = dir.join("double.mlir");
    std::fs::write(
        &program,
        "func.func @main(%a: tensor<3xf32>) -> tensor<3xf32> {\n  %0 = stablehlo.add %a, %a : tensor<3xf32>\n  return %0 : tensor<3xf32>\n}\n",
    )
    .unwrap();
    let input = dir.join("a.npy");
    NpyArray::from_elements(vec![3], &[1f32, 2., 3.]).unwrap().write(&input).unwrap();
    for plugin in PLUGINS {
        let out_dir = dir.join(format!("out-{plugin}"));
        let out = pjrt(&[
            "run",
            program.to_str().unwrap(),
            "--replicas",
            "2",
            "--plugin",
            plugin,
            "--input",
            input.to_str().unwrap(),
            "--output-dir",
            out_dir.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{plugin}: {}", stderr(&out));
        for k in 0..2 {
            let got = NpyArray::read(&out_dir.join(format!("device{k}/out0.npy"))).unwrap();
            assert_eq!(got.to_vec::<f32>().unwrap(), vec![2., 4., 6.]);
        }
    }
}

#[test]
fn info_json_lists_devices_and_memories() {
    for plugin in PLUGINS {
        let out = pjrt(&["info", "--plugin", plugin, "--json"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let info: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(info["platform"], "cpu");
        let devices = info["devices"].as_array().unwrap();
        assert!(!devices.is_empty());
        let kinds: Vec<&str> =
            devices[0]["memories"].as_array().unwrap().iter().map(|m| m["kind"].as_str().unwrap()).collect();
        assert!(kinds.contains(&"device"), "{kinds:?}");
        let expected = if *plugin == "cpu" { "0.115" } else { "0.106" };
        assert_eq!(info["api_version"], expected);
        assert!(info["attributes"]["stablehlo_current_version"].is_array());
    }
}

#[test]
fn plugin_list_shows_both_plugins() {
    let out = pjrt(&["plugin", "list", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let versions: Vec<&str> = rows.as_array().unwrap().iter().filter_map(|r| r["api_version"].as_str()).collect();
    assert!(versions.contains(&"0.115") && versions.contains(&"0.106"), "{versions:?}");
}

#[test]
fn bad_input_fails_cleanly() {
    let dir = temp_dir("bad");
    let text = dir.join("not-a-plugin.so");
    std::fs::write(&text, "hello").unwrap();
    let malformed = dir.join("malformed.mlir");
    std::fs::write(&malformed, "func.func @main( this is not mlir").unwrap();
    let no_main = dir.join("no_main.mlir");
    std::fs::write(&no_main, "func.func @other(%a: tensor<f32>) -> tensor<f32> {\n return %a : tensor<f32>\n}\n")
        .unwrap();
    let garbage_npy = dir.join("garbage.npy");
    std::fs::write(&garbage_npy, "\u{93}NUMPY garbage").unwrap();
    let ints = dir.join("ints.npy");
    NpyArray::from_elements(vec![8], &[1i32; 8]).unwrap().write(&ints).unwrap();
    let wrong_shape = dir.join("wrong_shape.npy");
    NpyArray::from_elements(vec![4], &[1f32; 4]).unwrap().write(&wrong_shape).unwrap();
    let mlp = "examples/mlp/train_step.mlir";
    let rest: Vec<String> = mlp_inputs()[1..].to_vec();
    let with_first = |first: &Path| {
        let mut v = vec!["run".to_owned(), mlp.to_owned(), "--input".to_owned(), first.to_string_lossy().into_owned()];
        v.extend(rest.iter().cloned());
        v
    };
    let run = |args: Vec<String>| pjrt(&args.iter().map(|s| s.as_str()).collect::<Vec<_>>());
    for plugin in PLUGINS {
        let p = |mut v: Vec<String>| {
            v.extend(["--plugin".to_owned(), plugin.to_string()]);
            v
        };
        assert_fails(&pjrt(&["run", "missing.mlir", "--plugin", plugin]), "missing.mlir");
        assert_fails(&run(p(vec!["run".into(), malformed.to_string_lossy().into()])), "PJRT_Client_Compile");
        assert_fails(&run(p(vec!["run".into(), no_main.to_string_lossy().into()])), "main");
        assert_fails(
            &run(p(vec!["run".into(), mlp.into(), "--input".into(), "examples/mlp/b1.npy".into()])),
            "takes 6 inputs",
        );
        assert_fails(&run(p(with_first(&ints))), "parameter is f32");
        assert_fails(&run(p(with_first(&wrong_shape))), "parameter 0 is f32[8]");
        assert_fails(&run(p(with_first(&garbage_npy))), "garbage.npy");
    }
    assert_fails(&pjrt(&["info", "--plugin", text.to_str().unwrap()]), "cannot open it as a shared library");
    assert_fails(&pjrt(&["info", "--plugin", "/nonexistent/plugin.so"]), "no such file");
    assert_fails(&pjrt(&["info", "--plugin", "no-such-name"]), "known names");
    assert_fails(&pjrt(&["run"]), "PROGRAM");
    assert_fails(&pjrt(&["run", mlp, "--xla-option", "novalue"]), "NAME=VALUE");
    assert_fails(&pjrt(&["run", mlp, "--replicas", "0"]), "at least 1");
}

#[test]
fn run_takes_bytecode_and_portable_artifacts() {
    for file in ["tanh_mul.mlirbc", "tanh_mul.portable-1.0.0.mlirbc", "tanh_mul.mlir"] {
        for plugin in PLUGINS {
            let out_dir = temp_dir(&format!("formats-{plugin}-{file}"));
            let program = format!("tests/data/formats/{file}");
            let out = pjrt(&[
                "run",
                &program,
                "--plugin",
                plugin,
                "--input",
                "tests/data/formats/a.npy",
                "tests/data/formats/b.npy",
                "--output-dir",
                out_dir.to_str().unwrap(),
            ]);
            assert!(out.status.success(), "{plugin} {file}: {}", stderr(&out));
            let got = NpyArray::read(&out_dir.join("out0.npy")).unwrap().to_vec::<f32>().unwrap();
            let want =
                NpyArray::read(&root().join("tests/data/formats/expected.npy")).unwrap().to_vec::<f32>().unwrap();
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() <= 1e-6 + 1e-6 * w.abs(), "{plugin} {file}: {g} vs {w}");
            }
        }
    }
}

/// Every single-device program lowered by JAX in tests/data/jax, through `pjrt run`, on both
/// plugins: integers bit-exact, floats within the tolerance recorded with the case.
#[test]
fn run_reproduces_every_single_device_jax_case() {
    let data = root().join("tests/data/jax");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&data).unwrap().flatten().map(|e| e.path()).collect();
    cases.retain(|c| c.join("meta.json").is_file());
    cases.sort();
    let mut ran = 0;
    let mut failures = Vec::new();
    for case in &cases {
        let meta: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(case.join("meta.json")).unwrap()).unwrap();
        if meta["replicas"] != 1 || meta["partitions"] != 1 {
            continue;
        }
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        for plugin in PLUGINS {
            let out_dir = temp_dir(&format!("jax-{plugin}-{name}"));
            let mut args: Vec<String> = vec![
                "run".into(),
                case.join("program.mlir").to_string_lossy().into(),
                "--plugin".into(),
                plugin.to_string(),
                "--output-dir".into(),
                out_dir.to_string_lossy().into(),
            ];
            for (name, value) in meta["xla_options"].as_object().into_iter().flatten() {
                args.push("--xla-option".into());
                args.push(format!("{name}={value}"));
            }
            let inputs: Vec<String> = meta["inputs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| case.join(i["file"].as_str().unwrap()).to_string_lossy().into_owned())
                .collect();
            if !inputs.is_empty() {
                args.push("--input".into());
                args.extend(inputs);
            }
            let out = pjrt(&args.iter().map(|s| s.as_str()).collect::<Vec<_>>());
            if !out.status.success() {
                failures.push(format!("{plugin} {name}: {}", stderr(&out)));
                continue;
            }
            for (o, spec) in meta["outputs"].as_array().unwrap().iter().enumerate() {
                let want = NpyArray::read(&case.join(spec["file"].as_str().unwrap())).unwrap();
                let got = NpyArray::read(&out_dir.join(format!("out{o}.npy"))).unwrap();
                if let Err(e) = same(&want, &got, spec) {
                    failures.push(format!("{plugin} {name} out{o}: {e}"));
                }
            }
            ran += 1;
        }
    }
    assert!(ran >= 60, "ran only {ran} case runs");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

fn same(want: &NpyArray, got: &NpyArray, spec: &serde_json::Value) -> Result<(), String> {
    use pjrt_formats::npy::Dtype;
    if want.dims != got.dims || want.dtype != got.dtype {
        return Err(format!("{} {:?} vs expected {} {:?}", got.dtype, got.dims, want.dtype, want.dims));
    }
    let floats = |a: &NpyArray| -> Option<Vec<f64>> {
        let d = &a.data;
        Some(match a.dtype {
            Dtype::F16 => d.chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f64()).collect(),
            Dtype::U16 if spec["dtype"] == "bfloat16" => {
                d.chunks_exact(2).map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f64()).collect()
            }
            Dtype::F32 | Dtype::C64 => {
                d.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64).collect()
            }
            Dtype::F64 | Dtype::C128 => d.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect(),
            _ => return None,
        })
    };
    match (floats(want), floats(got)) {
        (Some(w), Some(g)) if spec["exact"] != true => {
            let rtol = spec["rtol"].as_f64().unwrap_or(1e-6);
            let atol = spec["atol"].as_f64().unwrap_or(1e-6);
            for (i, (w, g)) in w.iter().zip(&g).enumerate() {
                if !((w.is_nan() && g.is_nan()) || w == g || (g - w).abs() <= atol + rtol * w.abs()) {
                    return Err(format!("element {i}: {g} vs expected {w}"));
                }
            }
            Ok(())
        }
        _ if want.data == got.data => Ok(()),
        _ => Err("not bit-exact".into()),
    }
}

#[test]
fn bench_reports_safe_and_raw_figures() {
    for plugin in PLUGINS {
        let out = pjrt(&["bench", "dispatch", "--iters", "300", "--rounds", "3", "--plugin", plugin, "--json"]);
        assert!(out.status.success(), "{plugin}: {}", stderr(&out));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        for key in
            ["median_us", "p10_us", "p90_us", "min_us", "safe_over_raw", "safe_over_raw_min", "safe_over_raw_max"]
        {
            assert!(report[key].as_f64().is_some_and(|v| v > 0.0), "{plugin}: {key} in {report}");
        }
        assert!(report["raw"]["median_us"].as_f64().is_some());
        assert!(report["safe"]["p99_us"].as_f64().is_some());
        // The ratio is the median of the per-round ratios, inside their spread.
        let rounds = report["rounds"].as_array().unwrap();
        assert_eq!(rounds.len(), 3, "{report}");
        let mut ratios: Vec<f64> = rounds.iter().map(|r| r["ratio"].as_f64().unwrap()).collect();
        ratios.sort_by(f64::total_cmp);
        assert_eq!(report["safe_over_raw"].as_f64(), Some(ratios[1]));
        assert_eq!(report["safe_over_raw_min"].as_f64(), Some(ratios[0]));
        assert_eq!(report["safe_over_raw_max"].as_f64(), Some(ratios[2]));
    }
    for what in [
        &["h2d", "--bytes", "4096", "--iters", "5"][..],
        &["h2d", "--zero-copy", "--bytes", "4096", "--iters", "5"],
        &["d2h", "--bytes", "4096", "--iters", "5"],
    ] {
        let mut args = vec!["bench"];
        args.extend_from_slice(what);
        args.push("--json");
        let out = pjrt(&args);
        assert!(out.status.success(), "{what:?}: {}", stderr(&out));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(report["gbps"].as_f64().is_some_and(|g| g > 0.0), "{report}");
    }
    assert_fails(&pjrt(&["bench", "h2d", "--bytes", "3"]), "multiple of 4");
    // One row per (threads, in flight) pair, in the order given.
    let out = pjrt(&["bench", "threads", "--threads", "1,2", "--in-flight", "1,4,16", "--iters", "5", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = report["rows"].as_array().unwrap();
    let pairs: Vec<(u64, u64)> =
        rows.iter().map(|r| (r["threads"].as_u64().unwrap(), r["in_flight"].as_u64().unwrap())).collect();
    assert_eq!(pairs, [(1, 1), (1, 4), (1, 16), (2, 1), (2, 4), (2, 16)], "{report}");
    assert!(rows.iter().all(|r| r["executions_per_s"].as_f64().is_some_and(|v| v > 0.0)), "{report}");
    assert_fails(&pjrt(&["bench", "threads", "--threads", "0"]), "--threads");
    assert_fails(&pjrt(&["bench", "threads", "--in-flight", "0"]), "--in-flight");
}

#[test]
fn bench_run_reports_latency_throughput_and_first_result() {
    // A jax.export model (its inputs checked and arranged as `pjrt run` does) and a plain
    // program, on both plugins, with the raw C path alternated.
    let model = "tests/data/jax_export/jax-0.10.2/mlp_f32";
    let model_inputs: Vec<String> = (0..5).map(|i| format!("{model}/in{i}.npy")).collect();
    let conv = "tests/data/jax/conv2d_f32";
    for plugin in PLUGINS {
        let mut args = vec!["bench", "run", "tests/data/jax_export/jax-0.10.2/mlp_f32/model.jaxexport", "--input"];
        args.extend(model_inputs.iter().map(String::as_str));
        args.extend(["--iters", "20", "--in-flight", "3", "--raw", "--plugin", plugin, "--json"]);
        let conv_args = [
            "bench",
            "run",
            "tests/data/jax/conv2d_f32/program.mlir",
            "--input",
            "tests/data/jax/conv2d_f32/in0.npy",
            "tests/data/jax/conv2d_f32/in1.npy",
            "--iters",
            "20",
            "--raw",
            "--plugin",
            plugin,
            "--json",
        ];
        for args in [&args[..], &conv_args[..]] {
            let out = pjrt(args);
            assert!(out.status.success(), "{plugin} {args:?}: {}", stderr(&out));
            let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(report["benchmark"], "run");
            for key in ["p10_us", "median_us", "p90_us", "p99_us"] {
                for side in ["safe", "raw"] {
                    assert!(report[side][key].as_f64().is_some_and(|v| v > 0.0), "{plugin}: {side}.{key} in {report}");
                }
            }
            for key in ["first_result_ms", "sequential_calls_per_s", "in_flight_calls_per_s", "safe_over_raw"] {
                assert!(report[key].as_f64().is_some_and(|v| v > 0.0), "{plugin}: {key} in {report}");
            }
            assert_eq!(report["inputs_donated_by_program"], false);
        }
    }
    // Without --raw there is no raw side; client options reach the plugin (0.115 refuses names
    // it does not know); a wrong input count is refused before anything runs.
    let conv_run = |extra: &[&str]| {
        let (program, in0, in1) =
            (format!("{conv}/program.mlir"), format!("{conv}/in0.npy"), format!("{conv}/in1.npy"));
        let mut args = vec!["bench", "run", &program, "-i", &in0, &in1, "--iters", "3", "--plugin", "cpu", "--json"];
        args.extend_from_slice(extra);
        pjrt(&args)
    };
    let out = conv_run(&["--client-option", "asynchronous=false"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["raw"].is_null() && report["safe_over_raw"].is_null(), "{report}");
    assert_eq!(report["client_options"], serde_json::json!(["asynchronous=false"]));
    assert_fails(&conv_run(&["--client-option", "asynchronous"]), "NAME=VALUE");
    assert_fails(&conv_run(&["--client-option", "no_such_option=1"]), "no_such_option");
    assert_fails(
        &pjrt(&["bench", "run", &format!("{conv}/program.mlir"), "-i", &format!("{conv}/in0.npy")]),
        "takes 2 inputs",
    );
    assert_fails(&pjrt(&["bench", "run", &format!("{conv}/program.mlir"), "--iters", "0"]), "--iters");
}

#[test]
fn bench_run_keeps_donated_inputs() {
    // The program aliases its input to its output: the first call consumes the uploaded input,
    // so the benchmark uploads it again and marks every input non-donatable from then on. The
    // input is a deflated .npz member, inflated into host memory and copied to the device: an
    // input read in place from a file's bytes (an aligned .npy) is never donated.
    let dir = temp_dir("bench-donation");
    let program = dir.join("donate.mlir");
    std::fs::write(
        &program,
        "func.func @main(%a: tensor<8xf32> {tf.aliasing_output = 0 : i32}) -> tensor<8xf32> {\n  \
         %0 = stablehlo.add %a, %a : tensor<8xf32>\n  return %0 : tensor<8xf32>\n}\n",
    )
    .unwrap();
    let input = root().join("tests/data/npz/mlp_weights_compressed.npz:b1");
    let out = pjrt(&[
        "bench",
        "run",
        program.to_str().unwrap(),
        "-i",
        input.to_str().unwrap(),
        "--iters",
        "10",
        "--raw",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["inputs_donated_by_program"], true, "{report}");
    assert!(report["raw"]["median_us"].as_f64().is_some_and(|v| v > 0.0), "{report}");
}

#[test]
fn conform_passes_on_both_plugins_and_diffs() {
    let dir = temp_dir("conform");
    let mut reports = Vec::new();
    for plugin in PLUGINS {
        let file = dir.join(format!("{plugin}.json"));
        let out = pjrt(&["conform", plugin, "--json", file.to_str().unwrap()]);
        assert!(out.status.success(), "{plugin}: {}\n{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
        let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let checks = report["checks"].as_array().unwrap();
        assert!(checks.len() >= 160, "{plugin}: only {} checks", checks.len());
        let failed: Vec<_> = checks.iter().filter(|c| c["status"] == "fail").collect();
        assert!(failed.is_empty(), "{plugin}: {failed:?}");
        assert!(report["plugin"]["api_version"].is_string());
        reports.push(file);
    }
    let read = |file: &std::path::PathBuf| {
        serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(file).unwrap()).unwrap()
    };
    let (new, old) = (read(&reports[0]), read(&reports[1]));
    let status_in = |report: &serde_json::Value, name: &str| {
        report["checks"].as_array().unwrap().iter().find(|c| c["name"] == name).map(|c| c["status"].clone())
    };
    let status = |name: &str| status_in(&old, name);
    // What the 0.106 plugin lacks is reported unsupported, not failed.
    assert_eq!(status("topology.memory_space_kind_ids"), Some("unsupported".into()));
    assert_eq!(status("aot.compile_and_load"), Some("unsupported".into()));
    assert_eq!(status("executable.output_memory_kinds"), Some("unsupported".into()));
    assert_eq!(status("buffer.donate_with_control_dependency"), Some("unsupported".into()));
    // Neither CPU plugin maps memory for DMA or estimates costs; both pass the rest of the newer
    // checks.
    for report in [&new, &old] {
        assert_eq!(status_in(report, "client.dma_map"), Some("unsupported".into()));
        assert_eq!(status_in(report, "executable.cost_analysis"), Some("unsupported".into()));
        for name in [
            "executable.compiled_memory_stats",
            "executable.optimized_program",
            "executable.compile_options",
            "executable.device_assignment",
            "buffer.view_of_host_memory",
            "buffer.raw_copy_to_host_future",
            "buffer.alias",
            "buffer.bitcast",
            "transfer_manager.transfer_literal",
            "kv_store.client_with_in_memory_store",
            "event.user_event_ok",
            "event.user_event_error",
            "client.update_global_process_info",
        ] {
            assert_eq!(status_in(report, name), Some("pass".into()), "{name}");
        }
    }
    // Issue 13's groups (layouts, execute options, plugins from a table, the seed's fallbacks,
    // compile options, StableHLO versions) pass on both plugins, but for what each truly lacks.
    let lacking = |report: &serde_json::Value, name: &str| match name {
        "plugin.from_table.topology_by_name" => true, // no topology by name on the CPU plugins
        // 0.106 stores non-default device layouts row-major: refused before the call.
        "layouts.device_layout_column_major" | "layouts.device_layout_tiled_refused" => {
            report["plugin"]["api_version"] == "0.106"
        }
        _ => false,
    };
    for report in [&new, &old] {
        let group: Vec<&serde_json::Value> = report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| {
                let name = c["name"].as_str().unwrap();
                ["layouts.", "execute_options.", "plugin.from_table", "fallback.", "compile_options.", "stablehlo."]
                    .iter()
                    .any(|p| name.starts_with(p))
            })
            .collect();
        assert!(group.len() >= 45, "only {} checks in issue 13's groups", group.len());
        for c in group {
            let name = c["name"].as_str().unwrap();
            let want = if lacking(report, name) { "unsupported" } else { "pass" };
            assert_eq!(c["status"], want, "{name}: {}", c["detail"]);
        }
    }
    assert_eq!(status_in(&new, "topology.canonical_shape"), Some("pass".into()));
    assert_eq!(status_in(&new, "aot.unloaded_executable_metadata"), Some("pass".into()));
    let out = pjrt(&["conform", "--diff", reports[1].to_str().unwrap(), reports[0].to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("aot.compile_and_load"));
}
