//! Tutorial 03: one program on several devices: replicas with an all-reduce, then an SPMD
//! program whose input is sharded over the devices.
//!
//! Teaches: asking the CPU plugin for several devices (`ClientOptions::cpu_device_count`),
//! compiling for R replicas (`CompileOptions::num_replicas`) or P partitions
//! (`num_partitions` + `use_spmd_partitioning`), the executable's devices
//! (`addressable_devices`, replica-major), one argument list per device (`execute_sharded`),
//! and the `sharding` helpers that split host arrays per device and gather outputs back
//! (`shard_slice`, `upload_sharded`, `gather_outputs`).
//!
//! In JAX terms: part 1 is `jax.pmap(lambda x: jax.lax.psum(x, "i"), axis_name="i")`; part 2 is
//! `jax.jit` of `x @ w + b` with x sharded by rows (`NamedSharding(mesh, P("d", None))`) and
//! w, b replicated, lowered with GSPMD shardings (`mhlo.sharding`). See docs/jax-guide.md and
//! docs/multi-host.md.
//!
//! Run it with:
//!
//!     cargo run -p pjrt-examples --example 03_multi_device

use pjrt_client::sharding::{gather_outputs, shard_slice, Sharding};
use pjrt_client::{
    Buffer, Client, ClientOptions, CompileOptions, ExecuteOptions, HostArray, HostSource, Plugin, Program, Result,
    UploadOptions,
};

const DEVICES: usize = 4;

/// Every replica sums (and takes the max of) all replicas' arguments: `psum` / `pmax`.
const ALL_REDUCE: &str = r#"
module @all_reduce attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {
  func.func public @main(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<ui32>) {
    %sum = "stablehlo.all_reduce"(%x) <{replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) : (tensor<3xf32>) -> tensor<3xf32>
    %max = "stablehlo.all_reduce"(%x) <{replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %m = stablehlo.maximum %a, %b : tensor<f32>
      stablehlo.return %m : tensor<f32>
    }) : (tensor<3xf32>) -> tensor<3xf32>
    %id = stablehlo.replica_id : tensor<ui32>
    return %sum, %max, %id : tensor<3xf32>, tensor<3xf32>, tensor<ui32>
  }
}"#;

/// y = x @ w + b over 4 partitions, as JAX lowers it with GSPMD shardings: x (8×4) split by
/// rows, w and b replicated; y split by rows, and the column sums of y replicated (the
/// partitioner inserts the cross-device all-reduce).
const MATMUL_ROWS: &str = r#"
module @matmul_rows attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%x: tensor<8x4xf32> {mhlo.sharding = "{devices=[4,1]<=[4]}"}, %w: tensor<4x3xf32> {mhlo.sharding = "{replicated}"}, %b: tensor<3xf32> {mhlo.sharding = "{replicated}"}) -> (tensor<8x3xf32> {mhlo.sharding = "{devices=[4,1]<=[4]}"}, tensor<3xf32> {mhlo.sharding = "{replicated}"}) {
    %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
    %1 = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<3xf32>) -> tensor<8x3xf32>
    %2 = stablehlo.add %0, %1 : tensor<8x3xf32>
    %zero = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %3 = stablehlo.reduce(%2 init: %zero) applies stablehlo.add across dimensions = [0] : (tensor<8x3xf32>, tensor<f32>) -> tensor<3xf32>
    return %2, %3 : tensor<8x3xf32>, tensor<3xf32>
  }
}"#;

fn assert_close(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= 1e-4 * w.abs().max(1.), "{what}[{i}]: got {g}, expected {w}");
    }
}

fn main() -> Result<()> {
    let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |line| eprintln!("{line}"))?.load_path())?;
    let client = Client::new(&plugin, &ClientOptions::new().cpu_device_count(DEVICES as i64))?;
    println!("{} devices: {:?}", client.addressable_devices().len(), client.addressable_devices());
    assert_eq!(client.addressable_devices().len(), DEVICES);

    replicated_all_reduce(&client)?;
    sharded_matmul(&client)?;
    println!("ok");
    Ok(())
}

fn replicated_all_reduce(client: &Client) -> Result<()> {
    println!("\n== 1. four replicas, each with its own argument; all-reduce across them");
    let exe = client.compile(&Program::mlir_text(ALL_REDUCE)?, &CompileOptions::new().num_replicas(4))?;
    let devices = exe.addressable_devices();
    assert_eq!(devices.len(), DEVICES);

    // Device k gets [k, 10k, -k], uploaded straight to that device.
    let mut per_device: Vec<Vec<Buffer>> = Vec::new();
    for (k, device) in devices.iter().enumerate() {
        let x = [k as f32, 10. * k as f32, -(k as f32)];
        println!("replica {k} on {}: x = {x:?}", device.to_string()?);
        per_device.push(vec![client.upload_with(HostSource::slice(&x, &[3]), &UploadOptions::new().device(device))?]);
    }
    // Waits for every device; `execute_sharded_async` returns at once instead.
    let outputs_per_device = exe.execute_sharded(&per_device, &ExecuteOptions::new())?;

    for (k, outputs) in outputs_per_device.iter().enumerate() {
        let sum = outputs[0].to_vec::<f32>()?;
        let max = outputs[1].to_vec::<f32>()?;
        let id = outputs[2].to_vec::<u32>()?[0];
        println!("replica {id}: psum = {sum:?}, pmax = {max:?}");
        assert_eq!(outputs[0].device()?, devices[k], "outputs stay on their device");
        assert_eq!(id, k as u32);
        assert_eq!(sum, [6., 60., -6.]); // 0 + 1 + 2 + 3
        assert_eq!(max, [3., 30., 0.]);
    }
    Ok(())
}

fn sharded_matmul(client: &Client) -> Result<()> {
    println!("\n== 2. one SPMD program over four partitions; x sharded by rows");
    let program = Program::mlir_text(MATMUL_ROWS)?;
    let options = CompileOptions::new().num_partitions(4).use_spmd_partitioning(true);
    // A module written by JAX with Shardy (`sdy` dialect) needs `.use_shardy_partitioner(true)`.
    assert!(!program.module_counts().uses_shardy);
    let exe = client.compile(&program, &options)?;
    assert_eq!((exe.num_replicas(), exe.num_partitions()), (1, 4));

    let x: Vec<f32> = (0..32).map(|i| (i % 7) as f32 * 0.5 - 1.).collect(); // 8×4
    let w: Vec<f32> = (0..12).map(|i| (i as f32 - 5.) * 0.25).collect(); // 4×3
    let b = vec![0.5f32, -1., 2.];
    // What the program computes, on the host.
    let y: Vec<f32> =
        (0..24).map(|i| (0..4).map(|k| x[(i / 3) * 4 + k] * w[k * 3 + i % 3]).sum::<f32>() + b[i % 3]).collect();
    let sums: Vec<f32> = (0..3).map(|c| (0..8).map(|r| y[r * 3 + c]).sum()).collect();

    // a) By hand with typed slices: device k gets rows 2k and 2k+1 of x, and all of w and b.
    let x_rows = shard_slice(&x, &[8, 4], 0, DEVICES)?;
    let mut per_device: Vec<Vec<Buffer>> = Vec::new();
    for (device, rows) in exe.addressable_devices().iter().zip(&x_rows) {
        per_device.push(vec![
            client.upload_with(HostSource::slice(rows, &[2, 4]), &UploadOptions::new().device(device))?,
            client.upload_with(HostSource::slice(&w, &[4, 3]), &UploadOptions::new().device(device))?,
            client.upload_with(HostSource::slice(&b, &[3]), &UploadOptions::new().device(device))?,
        ]);
    }
    let outputs_per_device = exe.execute_sharded(&per_device, &ExecuteOptions::new())?;
    for (k, outputs) in outputs_per_device.iter().enumerate() {
        assert_eq!(outputs[0].dimensions()?, [2, 3], "device {k} holds its two rows of y");
        assert_close(&format!("y rows on device {k}"), &outputs[0].to_vec::<f32>()?, &y[k * 6..(k + 1) * 6]);
        assert_close(&format!("column sums on device {k}"), &outputs[1].to_vec::<f32>()?, &sums);
    }
    let gathered = gather_outputs(&outputs_per_device, &[Sharding::Split(0), Sharding::Replicated])?;
    println!("gathered y: dims {:?}; column sums {:?}", gathered[0].dims(), gathered[1].to_vec::<f32>()?);
    assert_eq!(gathered[0].dims(), [8, 3]);
    assert_close("gathered y", &gathered[0].to_vec::<f32>()?, &y);

    // b) With host arrays (`HostArray`; `pjrt_formats` makes them from .npy files): split and
    //    uploaded by their shardings, run, gathered back.
    let inputs = [
        HostArray::from_elements(vec![8, 4], &x)?,
        HostArray::from_elements(vec![4, 3], &w)?,
        HostArray::from_elements(vec![3], &b)?,
    ];
    let arguments = exe.upload_sharded(&inputs, &[Sharding::Split(0), Sharding::Replicated, Sharding::Replicated])?;
    let outputs = exe.execute_sharded(&arguments, &ExecuteOptions::new())?;
    let outputs = gather_outputs(&outputs, &[Sharding::Split(0), Sharding::Replicated])?;
    assert_close("host-array y", &outputs[0].to_vec::<f32>()?, &y);
    assert_close("host-array column sums", &outputs[1].to_vec::<f32>()?, &sums);
    println!("host arrays: y and its column sums match the host computation");
    Ok(())
}
