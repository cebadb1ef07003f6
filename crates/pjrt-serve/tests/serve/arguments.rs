//! The module's arguments as the export arranges them (`JaxExport::module_arguments`): a
//! platform index first for an export lowered for several platforms, and only the kept inputs
//! (an unused argument is dropped from the module but still named in the request). JAX's
//! answers from tests/data/jax_export (tools/gen_jax_export_testdata.py).

use pjrt_serve::{ModelConfig, Server, ServerOptions};
use serde_json::{json, Value};

use crate::harness::{client, data, npy, Running};

#[test]
fn a_platform_index_and_unused_inputs_are_arranged_as_the_export_says() {
    let server = Server::new(client(), ServerOptions::default());
    let cases = [("multi_platform", 2), ("unused_arg", 3)];
    for (name, _) in cases {
        server.load(ModelConfig::new(name, data(&format!("jax_export/jax-0.10.2/{name}/model.jaxexport")))).unwrap();
    }
    let server = Running::start(server);
    for (name, inputs) in cases {
        let inputs: Vec<Value> = (0..inputs)
            .map(|i| {
                let x = npy(&format!("jax_export/jax-0.10.2/{name}/in{i}.npy"));
                json!({ "name": format!("input{i}"), "datatype": "FP32", "shape": x.dims, "data": x.to_vec::<f32>().unwrap() })
            })
            .collect();
        let (status, answer) = server.post_json(&format!("/v2/models/{name}/infer"), &json!({ "inputs": inputs }));
        assert_eq!(status, 200, "{name}: {answer}");
        let got: Vec<f32> =
            answer["outputs"][0]["data"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap() as f32).collect();
        let want = npy(&format!("jax_export/jax-0.10.2/{name}/out0.npy")).to_vec::<f32>().unwrap();
        assert_eq!(got.len(), want.len(), "{name}");
        for (a, b) in got.iter().zip(&want) {
            assert!((a - b).abs() <= 1e-5 + 1e-5 * b.abs(), "{name}: {got:?} vs JAX's {want:?}");
        }
    }
}
