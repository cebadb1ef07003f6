//! Replicas: one queue feeding two devices. Concurrent requests to the CNN run on both (the
//! metrics count executions per device) with the same answers as JaxExport::run; each device
//! has its own executable, compiled at load.

use pjrt_client::{Client, ClientOptions, Plugin};
use pjrt_formats::jax_export::JaxExport;
use pjrt_formats::npy::NpyArray;
use pjrt_serve::{ModelConfig, Server, ServerOptions};
use serde_json::{json, Value};

use crate::harness::{data, npy, Running};

fn two_device_client() -> Client {
    let found = pjrt_plugins::resolve_or_install(None, |line| eprintln!("{line}")).unwrap();
    let plugin = Plugin::load(found.load_path()).unwrap();
    Client::new(&plugin, &ClientOptions::new().cpu_device_count(2)).unwrap()
}

#[test]
fn two_replicas_share_one_queue_and_answer_alike() {
    let client = two_device_client();
    let mut options = ServerOptions::default().with_replicas(2);
    options.concurrent_executions = 2;
    let server = Server::new(client.clone(), options);
    server.load(ModelConfig::new("cnn", data("jax_export/jax-0.10.2/cnn/model.jaxexport"))).unwrap();
    assert_eq!(server.models()[0].replicas(), 2);
    assert_eq!(server.models()[0].executables(), 2);
    let server = Running::start(server);

    let inputs: Vec<NpyArray> = (0..4).map(|i| npy(&format!("jax_export/jax-0.10.2/cnn/in{i}.npy"))).collect();
    let model = JaxExport::read(data("jax_export/jax-0.10.2/cnn/model.jaxexport")).unwrap();
    let expected = model.run(&client, &inputs).unwrap()[0].to_vec::<f32>().unwrap();
    let tensors: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, a)| json!({ "name": format!("input{i}"), "datatype": "FP32", "shape": a.dims, "data": a.to_vec::<f32>().unwrap() }))
        .collect();
    let request = json!({ "inputs": tensors });
    std::thread::scope(|scope| {
        for _ in 0..8 {
            scope.spawn(|| {
                for _ in 0..4 {
                    let (status, answer) = server.post_json("/v2/models/cnn/infer", &request);
                    assert_eq!(status, 200, "{answer}");
                    let got: Vec<f32> = answer["outputs"][0]["data"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|v| v.as_f64().unwrap() as f32)
                        .collect();
                    for (a, b) in got.iter().zip(&expected) {
                        assert!((a - b).abs() <= 1e-6 + 1e-6 * b.abs(), "{got:?} vs {expected:?}");
                    }
                }
            });
        }
    });
    let metrics = server.get_text("/metrics");
    let count = |device: usize| -> u64 {
        let key = format!("pjrt_serve_executions_total{{model=\"cnn\",device=\"{device}\"}} ");
        metrics.lines().find_map(|l| l.strip_prefix(&key)).map_or(0, |n| n.parse().unwrap())
    };
    assert_eq!(count(0) + count(1), 32, "{metrics}");
    assert!(count(0) > 0 && count(1) > 0, "one device did all the work: {metrics}");
}

#[test]
fn more_replicas_than_devices_is_a_load_error() {
    let server = Server::new(crate::harness::client(), ServerOptions::default().with_replicas(64));
    let e = server.load(ModelConfig::new("cnn", data("jax_export/jax-0.10.2/cnn/model.jaxexport"))).unwrap_err();
    assert!(e.to_string().contains("64 replicas need 64 devices"), "{e}");
}
