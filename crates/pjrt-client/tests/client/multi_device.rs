//! Many devices in one process, on both CPU plugins: collectives over 4 (and 8) replicas and an
//! SPMD-partitioned matmul over 4 (and 8) partitions, all written by hand in StableHLO and
//! checked against values computed by hand or on one device.

use pjrt_client::sharding::{gather_outputs, shard_slice, Sharding};
use pjrt_client::{Buffer, Client, CompileOptions, ExecuteOptions, HostArray, HostSource, Program, UploadOptions};

use crate::support;
use crate::support::spmd::{matmul_rows, MATMUL_CONTRACTING_4};

fn all_reduce(n: usize) -> String {
    let groups: Vec<String> = (0..n).map(|i| i.to_string()).collect();
    format!(
        r#"
module @all_reduce attributes {{mhlo.num_partitions = 1 : i32, mhlo.num_replicas = {n} : i32}} {{
  func.func public @main(%arg0: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {{
    %0 = "stablehlo.all_reduce"(%arg0) <{{replica_groups = dense<[[{g}]]> : tensor<1x{n}xi64>}}> ({{
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }}) : (tensor<3xf32>) -> tensor<3xf32>
    %1 = "stablehlo.all_reduce"(%arg0) <{{replica_groups = dense<[[{g}]]> : tensor<1x{n}xi64>}}> ({{
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %m = stablehlo.maximum %a, %b : tensor<f32>
      stablehlo.return %m : tensor<f32>
    }}) : (tensor<3xf32>) -> tensor<3xf32>
    return %0, %1 : tensor<3xf32>, tensor<3xf32>
  }}
}}"#,
        g = groups.join(", ")
    )
}

const ALL_GATHER_4: &str = r#"
module @all_gather attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {
  func.func public @main(%arg0: tensor<2xi32>) -> tensor<8xi32> {
    %0 = "stablehlo.all_gather"(%arg0) <{all_gather_dim = 0 : i64, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}> : (tensor<2xi32>) -> tensor<8xi32>
    return %0 : tensor<8xi32>
  }
}"#;

/// replica_id, and a psum of (replica_id + 1) * x: with x = 1, 1 + 2 + 3 + 4 = 10.
const REPLICA_ID_4: &str = r#"
module @replica_id attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {
  func.func public @main(%arg0: tensor<f32>) -> (tensor<ui32>, tensor<f32>) {
    %id = stablehlo.replica_id : tensor<ui32>
    %one = stablehlo.constant dense<1> : tensor<ui32>
    %k = stablehlo.add %id, %one : tensor<ui32>
    %kf = stablehlo.convert %k : (tensor<ui32>) -> tensor<f32>
    %x = stablehlo.multiply %arg0, %kf : tensor<f32>
    %s = "stablehlo.all_reduce"(%x) <{replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %t = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %t : tensor<f32>
    }) : (tensor<f32>) -> tensor<f32>
    return %id, %s : tensor<ui32>, tensor<f32>
  }
}"#;

/// The same matmul on one device, for reference.
fn matmul_one_device(rows: usize, k: usize) -> String {
    format!(
        r#"
module @matmul_one {{
  func.func public @main(%x: tensor<{rows}x{k}xf32>, %w: tensor<{k}x3xf32>) -> tensor<{rows}x3xf32> {{
    %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<{rows}x{k}xf32>, tensor<{k}x3xf32>) -> tensor<{rows}x3xf32>
    return %0 : tensor<{rows}x3xf32>
  }}
}}"#
    )
}

fn compile(client: &Client, text: &str, replicas: usize, partitions: usize) -> pjrt_client::LoadedExecutable {
    let program = Program::mlir_text(text).unwrap();
    let mut options = CompileOptions::new().num_replicas(replicas).num_partitions(partitions);
    if partitions > 1 {
        options = options.use_spmd_partitioning(true);
    }
    let exe = client.compile(&program, &options).unwrap_or_else(|e| panic!("compile: {e}\n{text}"));
    assert_eq!(exe.addressable_devices().len(), replicas * partitions);
    exe
}

/// Per-device argument lists from typed host data (one Vec per device and argument).
fn upload<T: pjrt_client::NativeType>(
    exe: &pjrt_client::LoadedExecutable,
    per_device: &[Vec<(Vec<T>, Vec<i64>)>],
) -> Vec<Vec<Buffer>> {
    exe.addressable_devices()
        .iter()
        .zip(per_device)
        .map(|(device, args)| {
            args.iter()
                .map(|(data, dims)| {
                    exe.client()
                        .upload_with(HostSource::slice(data, dims), &UploadOptions::new().device(device))
                        .unwrap()
                })
                .collect()
        })
        .collect()
}

fn run(exe: &pjrt_client::LoadedExecutable, buffers: &[Vec<Buffer>]) -> Vec<Vec<Buffer>> {
    let refs: Vec<Vec<&Buffer>> = buffers.iter().map(|r| r.iter().collect()).collect();
    let outputs = exe.execute_sharded(&refs, &ExecuteOptions::new()).unwrap();
    assert_eq!(outputs.len(), buffers.len());
    outputs
}

fn check_all_reduce(client: &Client, n: usize) {
    let exe = compile(client, &all_reduce(n), n, 1);
    // Device k holds [k, 10k, -k].
    let args: Vec<Vec<(Vec<f32>, Vec<i64>)>> =
        (0..n).map(|k| vec![(vec![k as f32, 10. * k as f32, -(k as f32)], vec![3])]).collect();
    let execution = run(&exe, &upload(&exe, &args));
    let s = (0..n).sum::<usize>() as f32;
    let m = (n - 1) as f32;
    for (k, outs) in execution.iter().enumerate() {
        assert_eq!(outs[0].to_vec::<f32>().unwrap(), [s, 10. * s, -s], "sum on device {k} of {n}");
        assert_eq!(outs[1].to_vec::<f32>().unwrap(), [m, 10. * m, 0.], "max on device {k} of {n}");
    }
}

fn check_all_gather(client: &Client) {
    let exe = compile(client, ALL_GATHER_4, 4, 1);
    let args: Vec<Vec<(Vec<i32>, Vec<i64>)>> = (0..4).map(|k| vec![(vec![2 * k, 2 * k + 1], vec![2])]).collect();
    let execution = run(&exe, &upload(&exe, &args));
    for (k, outs) in execution.iter().enumerate() {
        assert_eq!(outs[0].to_vec::<i32>().unwrap(), (0..8).collect::<Vec<i32>>(), "device {k}");
    }
}

fn check_replica_id(client: &Client) {
    let exe = compile(client, REPLICA_ID_4, 4, 1);
    let args: Vec<Vec<(Vec<f32>, Vec<i64>)>> = (0..4).map(|_| vec![(vec![1f32], vec![])]).collect();
    let execution = run(&exe, &upload(&exe, &args));
    for (k, outs) in execution.iter().enumerate() {
        assert_eq!(outs[0].to_vec::<u32>().unwrap(), [k as u32], "replica_id on device {k}");
        assert_eq!(outs[1].to_vec::<f32>().unwrap(), [10.], "psum on device {k}");
    }
}

fn reference_matmul(client: &Client, x: &[f32], w: &[f32], rows: usize, k: usize) -> Vec<f32> {
    let exe = compile(client, &matmul_one_device(rows, k), 1, 1);
    let device = &exe.addressable_devices()[0];
    let xb = client
        .upload_with(HostSource::slice(x, &[rows as i64, k as i64]), &UploadOptions::new().device(device))
        .unwrap();
    let wb = client.upload_with(HostSource::slice(w, &[k as i64, 3]), &UploadOptions::new().device(device)).unwrap();
    let y = exe.execute(&[&xb, &wb], &ExecuteOptions::new()).unwrap()[0].to_vec::<f32>().unwrap();
    // And by hand.
    for r in 0..rows {
        for c in 0..3 {
            let hand: f32 = (0..k).map(|i| x[r * k + i] * w[i * 3 + c]).sum();
            assert!((hand - y[r * 3 + c]).abs() <= 1e-4 * hand.abs().max(1.), "one-device matmul [{r},{c}]");
        }
    }
    y
}

fn close(a: &[f32], b: &[f32], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!((x - y).abs() <= 1e-4 * y.abs().max(1.), "{what}: element {i}: {x} vs {y}");
    }
}

fn check_matmul_rows(client: &Client, n: usize) {
    let rows = 2 * n;
    let exe = compile(client, &matmul_rows(n), 1, n);
    assert_eq!(exe.num_partitions(), n);
    let x: Vec<f32> = (0..rows * 4).map(|i| (i % 7) as f32 * 0.5 - 1.).collect();
    let w: Vec<f32> = (0..12).map(|i| (i as f32 - 5.) * 0.25).collect();
    let b = vec![0.5f32, -1., 2.];
    let expected_xw = reference_matmul(client, &x, &w, rows, 4);
    let expected_y: Vec<f32> = expected_xw.iter().enumerate().map(|(i, v)| v + b[i % 3]).collect();
    let expected_sums: Vec<f32> = (0..3).map(|c| (0..rows).map(|r| expected_y[r * 3 + c]).sum()).collect();

    // With the typed-slice helpers: each device gets its rows of x, and all of w and b.
    let x_shards = shard_slice(&x, &[rows as i64, 4], 0, n).unwrap();
    let args: Vec<Vec<(Vec<f32>, Vec<i64>)>> =
        x_shards.into_iter().map(|xs| vec![(xs, vec![2, 4]), (w.clone(), vec![4, 3]), (b.clone(), vec![3])]).collect();
    let execution = run(&exe, &upload(&exe, &args));
    for (k, outs) in execution.iter().enumerate() {
        assert_eq!(outs[0].dimensions().unwrap(), [2, 3], "device {k} holds its 2 rows");
        close(&outs[0].to_vec::<f32>().unwrap(), &expected_y[k * 6..(k + 1) * 6], &format!("rows of device {k}"));
        close(&outs[1].to_vec::<f32>().unwrap(), &expected_sums, &format!("column sums on device {k}"));
    }
    let gathered = gather_outputs(&execution, &[Sharding::Split(0), Sharding::Replicated]).unwrap();
    assert_eq!(gathered[0].dims(), [rows as i64, 3]);
    close(&gathered[0].to_vec::<f32>().unwrap(), &expected_y, "gathered y");

    // With the host-array helpers: split and upload, execute, gather.
    let xa = HostArray::from_elements(vec![rows as i64, 4], &x).unwrap();
    let wa = HostArray::from_elements(vec![4, 3], &w).unwrap();
    let ba = HostArray::from_elements(vec![3], &b).unwrap();
    let args =
        exe.upload_sharded(&[xa, wa, ba], &[Sharding::Split(0), Sharding::Replicated, Sharding::Replicated]).unwrap();
    let outputs = exe.execute_sharded(&args, &ExecuteOptions::new()).unwrap();
    let outs = gather_outputs(&outputs, &[Sharding::Split(0), Sharding::Replicated]).unwrap();
    close(&outs[0].to_vec::<f32>().unwrap(), &expected_y, "upload_sharded y");
    close(&outs[1].to_vec::<f32>().unwrap(), &expected_sums, "upload_sharded sums");
}

fn check_matmul_contracting(client: &Client) {
    let exe = compile(client, MATMUL_CONTRACTING_4, 1, 4);
    let x: Vec<f32> = (0..32).map(|i| ((i * 5) % 11) as f32 - 5.).collect();
    let w: Vec<f32> = (0..48).map(|i| ((i * 3) % 7) as f32 * 0.5).collect();
    let expected = reference_matmul(client, &x, &w, 2, 16);
    let xa = HostArray::from_elements(vec![2, 16], &x).unwrap();
    let wa = HostArray::from_elements(vec![16, 3], &w).unwrap();
    let args = exe.upload_sharded(&[xa, wa], &[Sharding::Split(1), Sharding::Split(0)]).unwrap();
    let execution = exe.execute_sharded(&args, &ExecuteOptions::new()).unwrap();
    for (k, outs) in execution.iter().enumerate() {
        close(&outs[0].to_vec::<f32>().unwrap(), &expected, &format!("all-reduced product on device {k}"));
    }
}

#[test]
fn all_reduce_over_4_replicas() {
    for plugin in support::PLUGINS {
        check_all_reduce(&support::client(plugin, 4), 4);
    }
}

#[test]
fn all_gather_over_4_replicas() {
    for plugin in support::PLUGINS {
        check_all_gather(&support::client(plugin, 4));
    }
}

#[test]
fn replica_id_and_psum_over_4_replicas() {
    for plugin in support::PLUGINS {
        check_replica_id(&support::client(plugin, 4));
    }
}

#[test]
fn spmd_matmul_over_4_partitions() {
    for plugin in support::PLUGINS {
        let client = support::client(plugin, 4);
        check_matmul_rows(&client, 4);
        check_matmul_contracting(&client);
    }
}

#[test]
fn eight_devices() {
    for plugin in support::PLUGINS {
        let client = support::client(plugin, 8);
        assert_eq!(client.addressable_devices().len(), 8, "{plugin}");
        check_all_reduce(&client, 8);
        check_matmul_rows(&client, 8);
    }
}

#[test]
fn wrong_argument_list_count_is_an_error() {
    let client = support::client("cpu", 4);
    let exe = compile(&client, &all_reduce(4), 4, 1);
    let a = HostArray::from_elements(vec![3], &[1f32, 2., 3.]).unwrap();
    let buffers = exe.upload_sharded(&[a], &[Sharding::Replicated]).unwrap();
    let refs: Vec<Vec<&Buffer>> = buffers.iter().take(3).map(|r| r.iter().collect()).collect();
    assert!(exe.execute_sharded_async(&refs, &ExecuteOptions::new()).is_err());
    let b = HostArray::from_elements(vec![3], &[1f32, 2., 3.]).unwrap();
    assert!(exe.upload_sharded(&[b], &[Sharding::Split(0)]).is_err(), "3 does not split over 4 devices");
}
