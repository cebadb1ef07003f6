//! `pjrt run` on many devices: `--shard-inputs AXIS` with replicas (collectives inside) and with
//! partitioned (SPMD) programs, on both CPU plugins.

use pjrt_formats::npy::NpyArray;

use crate::common::*;

/// psum over 4 replicas of each replica's shard, plus the replica's id.
const PSUM_4: &str = r#"
module @psum attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {
  func.func public @main(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<ui32>, tensor<8xf32>) {
    %0 = "stablehlo.all_reduce"(%x) <{replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) : (tensor<2xf32>) -> tensor<2xf32>
    %id = stablehlo.replica_id : tensor<ui32>
    %g = "stablehlo.all_gather"(%x) <{all_gather_dim = 0 : i64, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}> : (tensor<2xf32>) -> tensor<8xf32>
    return %0, %id, %g : tensor<2xf32>, tensor<ui32>, tensor<8xf32>
  }
}"#;

#[test]
fn shard_inputs_over_replicas_with_collectives() {
    let dir = temp_dir("psum");
    let program = dir.join("psum.mlir");
    std::fs::write(&program, PSUM_4).unwrap();
    let input = dir.join("x.npy");
    let x: Vec<f32> = (1..=8).map(|v| v as f32).collect();
    NpyArray::from_elements(vec![8], &x).unwrap().write(&input).unwrap();
    for plugin in PLUGINS {
        let out_dir = dir.join(format!("out-{plugin}"));
        let out = pjrt(&[
            "run",
            program.to_str().unwrap(),
            "--plugin",
            plugin,
            "--shard-inputs",
            "0",
            "--input",
            input.to_str().unwrap(),
            "--output-dir",
            out_dir.to_str().unwrap(),
            "--json",
        ]);
        assert!(out.status.success(), "{plugin}: {}", stderr(&out));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["replicas"], 4);
        assert_eq!(report["shard_inputs"], 0);
        // Shards [1,2], [3,4], [5,6], [7,8]: the sum is [16, 20] everywhere.
        for k in 0..4 {
            let d = out_dir.join(format!("device{k}"));
            assert_eq!(NpyArray::read(&d.join("out0.npy")).unwrap().to_vec::<f32>().unwrap(), [16., 20.], "{plugin}");
            assert_eq!(NpyArray::read(&d.join("out1.npy")).unwrap().to_vec::<u32>().unwrap(), [k as u32]);
            assert_eq!(NpyArray::read(&d.join("out2.npy")).unwrap().to_vec::<f32>().unwrap(), x);
        }
    }
}

#[test]
fn shard_inputs_that_do_not_divide_fail_cleanly() {
    let dir = temp_dir("baddiv");
    let program = dir.join("psum.mlir");
    std::fs::write(&program, PSUM_4).unwrap();
    let input = dir.join("x.npy");
    NpyArray::from_elements(vec![6], &[0f32; 6]).unwrap().write(&input).unwrap();
    let (p, i) = (program.to_str().unwrap(), input.to_str().unwrap());
    let out = pjrt(&["run", p, "--shard-inputs", "0", "--input", i, "--output-dir", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("--shard-inputs 0"), "{}", stderr(&out));
    let out = pjrt(&["run", p, "--shard-inputs", "1", "--input", i, "--output-dir", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("rank 1"), "{}", stderr(&out));
}

fn close(got: &NpyArray, want: &NpyArray, what: &str) {
    assert_eq!(got.dims, want.dims, "{what}");
    for (a, b) in got.to_vec::<f32>().unwrap().iter().zip(want.to_vec::<f32>().unwrap()) {
        assert!((a - b).abs() <= 1e-5 + 1e-5 * b.abs(), "{what}: {a} vs {b}");
    }
}

#[test]
fn partitioned_programs_run_with_shard_inputs() {
    for case in ["sharded_matmul_gspmd", "sharded_matmul_shardy"] {
        let dir = root().join("tests/data/jax").join(case);
        let program = dir.join("program.mlir");
        let inputs: Vec<String> =
            (0..3).map(|i| dir.join(format!("in{i}.npy")).to_string_lossy().into_owned()).collect();
        // Without --shard-inputs: refused, with a hint.
        let mut args = vec!["run", program.to_str().unwrap(), "--input"];
        args.extend(inputs.iter().map(String::as_str));
        let out = pjrt(&args);
        assert_eq!(out.status.code(), Some(1));
        assert!(stderr(&out).contains("--shard-inputs"), "{}", stderr(&out));
        for plugin in PLUGINS {
            let out_dir = temp_dir(&format!("{case}-{plugin}"));
            let out_str = out_dir.to_string_lossy().into_owned();
            let mut args = args.clone();
            args.extend(["--plugin", plugin, "--shard-inputs", "0", "--output-dir", &out_str]);
            let out = pjrt(&args);
            assert!(out.status.success(), "{case} on {plugin}: {}", stderr(&out));
            // out0 (8,3) and out1 (8,) are sharded on rows over 2 devices; out2 (3,) replicated.
            for (o, sharded) in [(0, true), (1, true), (2, false)] {
                let parts: Vec<NpyArray> =
                    (0..2).map(|k| NpyArray::read(&out_dir.join(format!("device{k}/out{o}.npy"))).unwrap()).collect();
                let want = NpyArray::read(&dir.join(format!("out{o}.npy"))).unwrap();
                let what = format!("{case} on {plugin}, out{o}");
                if sharded {
                    let parts: Vec<_> = parts.iter().map(|p| p.to_host_array(None).unwrap()).collect();
                    close(
                        &NpyArray::from_host_array(&pjrt_client::HostArray::concatenate(&parts, 0).unwrap()).unwrap(),
                        &want,
                        &what,
                    );
                } else {
                    close(&parts[0], &want, &what);
                    close(&parts[1], &want, &what);
                }
            }
        }
    }
}
