//! Tutorial 05: asynchronous execution: launch work, keep going, wait only when a result is
//! needed.
//!
//! Teaches: `execute_async` (returns at once; a `PendingExecution` is a future, or `.wait()`),
//! several executions in flight together, downloads that overlap with computation
//! (`to_bytes_async` gives a `HostTransfer` future), chaining executions on outputs that are not
//! computed yet (`PendingExecution::take_outputs` hands out the output buffers at once), and
//! events: `Buffer::ready_event`, `Event::on_ready` callbacks, bounded waits (`wait_timeout`).
//!
//! Every future here is woken by the plugin (through `PJRT_Event_OnReady`), so any executor
//! works; this tutorial uses `futures::executor::block_on`. This is JAX's asynchronous dispatch:
//! `f(x)` returns before the device is done, `.block_until_ready()` waits.
//!
//! Run it with:
//!
//!     cargo run -p pjrt-examples --example 05_async_execution

use std::time::Duration;

use futures::executor::block_on;
use futures::future::join_all;
use pjrt_client::{
    Buffer, Client, ClientOptions, CompileOptions, DownloadOptions, ExecuteOptions, Plugin, Program, Result,
};

const N: usize = 1 << 18;

/// y = x * scale + 1 on f32[N]; `scale` is a scalar argument.
fn scale_add_program() -> String {
    format!(
        r#"
func.func @main(%x: tensor<{N}xf32>, %scale: tensor<f32>) -> tensor<{N}xf32> {{
  %s = stablehlo.broadcast_in_dim %scale, dims = [] : (tensor<f32>) -> tensor<{N}xf32>
  %one = stablehlo.constant dense<1.0> : tensor<{N}xf32>
  %m = stablehlo.multiply %x, %s : tensor<{N}xf32>
  %y = stablehlo.add %m, %one : tensor<{N}xf32>
  return %y : tensor<{N}xf32>
}}"#
    )
}

fn main() -> Result<()> {
    let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |line| eprintln!("{line}"))?.load_path())?;
    let client = Client::new(&plugin, &ClientOptions::new())?;
    let exe = client.compile(&Program::mlir_text(scale_add_program())?, &CompileOptions::new())?;
    let x_host: Vec<f32> = (0..N).map(|i| (i % 1000) as f32).collect();
    let x = client.upload(&x_host, &[N as i64])?;

    // 1. Events: a buffer's ready event completes when its data is on the device.
    println!("== 1. events");
    let ready = x.ready_event()?;
    ready.wait_timeout(Duration::from_secs(60))?; // bounded: an error instead of hanging
    assert!(ready.is_ready()?);
    let (tx, rx) = std::sync::mpsc::channel();
    let callback = x.ready_event()?.on_ready(move |status| tx.send(status.is_ok()).unwrap())?;
    assert!(rx.recv().unwrap(), "the callback ran with a success status");
    callback.wait()?;
    println!("upload complete; on_ready callback ran");

    // 2. Several executions in flight at once, awaited together.
    println!("== 2. {} executions launched before waiting for any", 8);
    let scales: Vec<Buffer> = (1..=8).map(|s| client.upload(&[s as f32], &[])).collect::<Result<_>>()?;
    let pending: Vec<_> =
        scales.iter().map(|s| exe.execute_async(&[&x, s], &ExecuteOptions::new())).collect::<Result<_>>()?;
    println!("launched; the host is free to do other work now");
    let results: Vec<Vec<Buffer>> = block_on(join_all(pending)).into_iter().collect::<Result<_>>()?;
    for (s, outputs) in (1..=8).zip(&results) {
        let y = outputs[0].to_vec::<f32>()?;
        assert_eq!(y[7], 7. * s as f32 + 1.);
        assert_eq!(y[N - 1], x_host[N - 1] * s as f32 + 1.);
    }
    println!("all 8 results checked");

    // 3. Downloads overlapping with computation: start the copy of one result, launch the next
    //    execution, then collect both.
    println!("== 3. download one result while computing the next");
    let two = client.upload(&[2f32], &[])?;
    let first = exe.execute_async(&[&x, &two], &ExecuteOptions::new())?.wait()?;
    let download = first[0].to_bytes_async(DownloadOptions::new())?; // a HostTransfer: a future of the bytes
    let second = exe.execute_async(&[&first[0], &two], &ExecuteOptions::new())?; // uses first's output on the device
    let (bytes, second) = block_on(async { (download.await, second.await) });
    let first_host: Vec<f32> = bytes?.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    let second_host = second?[0].to_vec::<f32>()?;
    for i in [0, 1, 999, N - 1] {
        assert_eq!(first_host[i], x_host[i] * 2. + 1.);
        assert_eq!(second_host[i], (x_host[i] * 2. + 1.) * 2. + 1.);
    }
    println!("first result downloaded while the second ran; both checked");

    // 4. Chaining without waiting: `take_outputs` gives a pending execution's output buffers at
    //    once (not yet computed); passing them to the next launch makes the plugin order the work.
    println!("== 4. a chain of 5 executions, launched without waiting between them");
    let mut current = x.copy_to_device(&exe.addressable_devices()[0])?;
    let mut in_flight = Vec::new();
    for _ in 0..5 {
        let mut execution = exe.execute_async(&[&current, &two], &ExecuteOptions::new())?;
        current = execution.take_outputs().remove(0);
        in_flight.push(execution);
    }
    // Awaiting a pending execution waits for its device (its outputs were taken: it gives none).
    block_on(async {
        for execution in in_flight {
            execution.await?;
        }
        Ok::<_, pjrt_client::Error>(())
    })?;
    let chained = current.to_vec::<f32>()?;
    let expected = |v: f32| (0..5).fold(v, |acc, _| acc * 2. + 1.);
    assert_eq!(chained[3], expected(x_host[3]));
    assert_eq!(chained[N - 1], expected(x_host[N - 1]));
    println!("x -> 2x+1, five times: {} -> {}", x_host[3], chained[3]);
    println!("ok");
    Ok(())
}
