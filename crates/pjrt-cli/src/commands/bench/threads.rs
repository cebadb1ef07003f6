//! `pjrt bench threads`: throughput of one client and one portable executable shared by several
//! threads, each keeping several executions in flight (launched with `execute_async` on a chosen device, the
//! oldest awaited once the window is full).

use std::collections::VecDeque;
use std::time::Instant;

use pjrt_client::{
    Buffer, Client, ClientOptions, CompileOptions, Error, ExecuteOptions, HostSource, Plugin, Program, UploadOptions,
};
use serde_json::{json, Value as Json};

const MATMUL: &str = r#"
func.func @main(%a: tensor<128x128xf32>, %b: tensor<128x128xf32>) -> tensor<128x128xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<128x128xf32>, tensor<128x128xf32>) -> tensor<128x128xf32>
  return %0 : tensor<128x128xf32>
}"#;

/// One row per (threads, in flight) pair: executions per second and the mean time per execution
/// per thread.
pub(super) fn threads_bench(
    plugin: &Plugin,
    threads: &[usize],
    in_flight: &[usize],
    iters: usize,
) -> Result<Json, Error> {
    if threads.is_empty() || threads.iter().any(|t| !(1..=256).contains(t)) {
        return Err(Error::InvalidArgument(format!("--threads must list numbers between 1 and 256, got {threads:?}")));
    }
    if in_flight.is_empty() || in_flight.iter().any(|n| !(1..=1024).contains(n)) {
        return Err(Error::InvalidArgument(format!(
            "--in-flight must list numbers between 1 and 1024, got {in_flight:?}"
        )));
    }
    if iters == 0 {
        return Err(Error::InvalidArgument("--iters must be at least 1".into()));
    }
    let max_threads = threads.iter().copied().max().unwrap_or(1);
    let mut options = ClientOptions::new();
    if plugin.path().to_string_lossy().contains("cpu") {
        options = options.cpu_device_count(max_threads as i64);
    }
    let client = Client::new(plugin, &options)?;
    let exe = client.compile(&Program::mlir_text(MATMUL)?, &CompileOptions::new().compile_portable_executable(true))?;
    let devices = client.addressable_devices();
    let ones = vec![1f32; 128 * 128];
    let inputs: Vec<Buffer> = devices
        .iter()
        .map(|d| client.upload_with(HostSource::slice(&ones, &[128, 128]), &UploadOptions::new().device(d)))
        .collect::<Result<_, _>>()?;
    let mut rows = Vec::new();
    for &thread_count in threads {
        for &window in in_flight {
            let started = Instant::now();
            std::thread::scope(|scope| -> Result<(), Error> {
                let handles: Vec<_> = (0..thread_count)
                    .map(|t| {
                        let (exe, devices, inputs) = (&exe, &devices, &inputs);
                        scope.spawn(move || -> Result<(), Error> {
                            let k = t % devices.len();
                            let mut pending = VecDeque::with_capacity(window);
                            for _ in 0..iters {
                                if pending.len() == window {
                                    if let Some(oldest) = pending.pop_front() {
                                        let oldest: pjrt_client::PendingExecution = oldest;
                                        drop(oldest.wait()?);
                                    }
                                }
                                pending.push_back(exe.execute_async(
                                    &[&inputs[k], &inputs[k]],
                                    &ExecuteOptions::new().device(&devices[k]),
                                )?);
                            }
                            for execution in pending {
                                drop(execution.wait()?);
                            }
                            Ok(())
                        })
                    })
                    .collect();
                for handle in handles {
                    handle.join().map_err(|_| Error::InvalidArgument("a benchmark thread panicked".into()))??;
                }
                Ok(())
            })?;
            let seconds = started.elapsed().as_secs_f64();
            let executions = (thread_count * iters) as f64;
            rows.push(json!({
                "threads": thread_count, "in_flight": window,
                "executions_per_s": executions / seconds,
                "us_per_execution_per_thread": seconds * 1e6 / iters as f64,
            }));
        }
    }
    Ok(json!({
        "devices": devices.len(),
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "iters": iters,
        "rows": rows,
    }))
}
