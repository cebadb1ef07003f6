//! Events, executions and transfers as futures, under `futures::executor` and `tokio`.

use pjrt_client::{CompileOptions, DownloadOptions, ExecuteOptions, HostSource, Program, UploadOptions};

use crate::support;

const SCALE: &str = r#"
func.func @main(%a: tensor<256xf32>, %b: tensor<f32>) -> tensor<256xf32> {
  %0 = stablehlo.broadcast_in_dim %b, dims = [] : (tensor<f32>) -> tensor<256xf32>
  %1 = stablehlo.multiply %a, %0 : tensor<256xf32>
  return %1 : tensor<256xf32>
}"#;

fn inputs() -> Vec<f32> {
    (0..256).map(|i| i as f32).collect()
}

#[test]
fn many_in_flight_with_futures_executor() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let exe = client.compile(&Program::mlir_text(SCALE).unwrap(), &CompileOptions::new()).unwrap();
        let a = client.upload(&inputs(), &[256]).unwrap();
        let scales: Vec<_> = (0..32).map(|k| client.upload(&[k as f32], &[]).unwrap()).collect();
        // Submit all, then await all.
        let pending: Vec<_> =
            scales.iter().map(|s| exe.execute_async(&[&a, s], &ExecuteOptions::new()).unwrap()).collect();
        let results = futures::executor::block_on(futures::future::try_join_all(pending)).unwrap();
        let transfers: Vec<_> =
            results.iter().map(|outs| outs[0].to_bytes_async(DownloadOptions::new()).unwrap()).collect();
        let bytes = futures::executor::block_on(futures::future::try_join_all(transfers)).unwrap();
        for (k, b) in bytes.iter().enumerate() {
            let got: Vec<f32> = b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
            let want: Vec<f32> = inputs().iter().map(|x| x * k as f32).collect();
            assert_eq!(got, want, "{name}: execution {k}");
        }
        // An event awaited directly.
        futures::executor::block_on(a.ready_event().unwrap()).unwrap();
    }
}

#[test]
fn under_tokio() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_time().build().unwrap();
    runtime.block_on(async {
        let client = support::client("cpu", 2);
        let exe = client.compile(&Program::mlir_text(SCALE).unwrap(), &CompileOptions::new()).unwrap();
        let a = client.upload(&inputs(), &[256]).unwrap();
        let two = client.upload(&[2f32], &[]).unwrap();
        let outputs = exe.execute_async(&[&a, &two], &ExecuteOptions::new()).unwrap().await.unwrap();
        let bytes = outputs[0].to_bytes_async(DownloadOptions::new()).unwrap().await.unwrap();
        assert_eq!(f32::from_le_bytes(bytes[4..8].try_into().unwrap()), 2.0);
        // Many tasks sharing one executable.
        let exe = std::sync::Arc::new(exe);
        let a = std::sync::Arc::new(a);
        let mut tasks = Vec::new();
        for k in 0..16 {
            let (exe, a, client) = (exe.clone(), a.clone(), client.clone());
            tasks.push(tokio::spawn(async move {
                let s = client.upload(&[k as f32], &[]).unwrap();
                let out = exe.execute_async(&[&a, &s], &ExecuteOptions::new()).unwrap().await.unwrap();
                out[0].to_vec::<f32>().unwrap()[255]
            }));
        }
        for (k, task) in tasks.into_iter().enumerate() {
            assert_eq!(task.await.unwrap(), 255.0 * k as f32);
        }
        // A multi-device execution awaited in place.
        let program = Program::mlir_text(SCALE).unwrap();
        let replicated = client.compile(&program, &CompileOptions::new().num_replicas(2)).unwrap();
        let devices = replicated.addressable_devices();
        let lists: Vec<Vec<_>> = devices
            .iter()
            .map(|d| {
                vec![
                    client.upload_with(HostSource::slice(&inputs(), &[256]), &UploadOptions::new().device(d)).unwrap(),
                    client.upload_with(HostSource::slice(&[3f32], &[]), &UploadOptions::new().device(d)).unwrap(),
                ]
            })
            .collect();
        let refs: Vec<Vec<_>> = lists.iter().map(|l| l.iter().collect()).collect();
        let execution = replicated.execute_sharded_async(&refs, &ExecuteOptions::new()).unwrap();
        let outputs = execution.await.unwrap();
        for outs in &outputs {
            assert_eq!(outs[0].to_vec::<f32>().unwrap()[10], 30.0);
        }
    });
}
