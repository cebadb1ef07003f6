//! A model served with a weights file (`params=`) written by Python's `safetensors` (sorted by
//! dtype, then name: not the model's order): the weights are bound to the model's inputs by
//! name, in any spelling of the keys, and the request gives the rest. tests/data/weights, made
//! by tools/gen_weights_testdata.py: `mixed` (nested f32, i32 and bf16 weights, pairs of the
//! same dtype and shape) and `haiku_cnn` (Haiku's params and batch-norm state with int32
//! counters, two pytree arguments before the input).

use pjrt_serve::{ModelConfig, Server, ServerOptions};
use serde_json::{json, Value};

use crate::harness::{client, data, npy, Running};

fn infer(server: &Running, model: &str, x: &pjrt_formats::npy::NpyArray) -> Vec<f32> {
    let request = json!({ "inputs": [{ "name": "input0", "datatype": "FP32", "shape": x.dims, "data": x.to_vec::<f32>().unwrap() }] });
    let (status, answer) = server.post_json(&format!("/v2/models/{model}/infer"), &request);
    assert_eq!(status, 200, "{model}: {answer}");
    answer["outputs"][0]["data"].as_array().unwrap().iter().map(|v: &Value| v.as_f64().unwrap() as f32).collect()
}

#[test]
fn weights_from_python_bind_by_name_and_the_request_gives_the_rest() {
    let server = Server::new(client(), ServerOptions::default());
    let mut cases = Vec::new();
    for spelling in ["dotted", "slashed", "bracketed"] {
        let name = format!("mixed_{spelling}");
        let config = ModelConfig::new(&name, data("weights/mixed/model.jaxexport"))
            .with_params(data(&format!("weights/mixed/params_{spelling}.safetensors")));
        server.load(config).unwrap();
        cases.push((name, "mixed"));
    }
    let config = ModelConfig::new("haiku_cnn", data("weights/haiku_cnn/model.jaxexport"))
        .with_params(data("weights/haiku_cnn/weights.safetensors"));
    server.load(config).unwrap();
    cases.push(("haiku_cnn".to_owned(), "haiku_cnn"));
    let server = Running::start(server);
    for (model, case) in &cases {
        // Only x is left for the request.
        let (status, meta) = server.get_json(&format!("/v2/models/{model}"));
        assert_eq!(status, 200, "{meta}");
        assert_eq!(meta["inputs"].as_array().unwrap().len(), 1, "{model}: {meta}");
        let x = npy(&format!("weights/{case}/x.npy"));
        assert_eq!(meta["inputs"][0]["shape"], json!(x.dims), "{model}: {meta}");
        let got = infer(&server, model, &x);
        let want = npy(&format!("weights/{case}/out0.npy")).to_vec::<f32>().unwrap();
        assert_eq!(got.len(), want.len(), "{model}");
        for (a, b) in got.iter().zip(&want) {
            assert!((a - b).abs() <= 1e-5 + 1e-5 * b.abs(), "{model}: {got:?} vs JAX's {want:?}");
        }
    }
}

#[test]
fn a_weights_file_missing_a_tensor_is_refused_naming_it() {
    let dir = crate::harness::temp_dir("weights-missing");
    let python = pjrt_formats::safetensors::SafeTensors::open(data("weights/mixed/params_dotted.safetensors")).unwrap();
    let kept: Vec<_> = python.tensors().filter(|(name, _)| *name != "block_1.kernel").collect();
    let path = dir.join("missing.safetensors");
    pjrt_formats::safetensors::write(&path, &kept, &[]).unwrap();
    let server = Server::new(client(), ServerOptions::default());
    let err = server
        .load(ModelConfig::new("mixed", data("weights/mixed/model.jaxexport")).with_params(&path))
        .unwrap_err()
        .to_string();
    assert!(err.contains("params['block_1']['kernel']") && err.contains("'block_1.kernel'"), "{err}");
}
