//! ModelInfer over gRPC answers JAX's values whichever way the inputs come: as
//! `raw_input_contents`, as typed contents that already are the tensors' bytes (packed FP32 and
//! BOOL: kept as slices of the message up to the upload), and as typed contents the server
//! decodes (INT32 varints).

use pjrt_formats::npy::{Dtype, NpyArray};
use pjrt_serve::grpc::messages::{InferInputTensor, InferTensorContents, ModelInferRequest, ModelInferResponse};
use pjrt_serve::{ModelConfig, Server, ServerOptions};
use prost::Message as _;

use crate::harness::{client, data, npy, Running};

fn serve() -> Running {
    let server = Server::new(client(), ServerOptions::default());
    let model = |dir: &str| data(&format!("jax_export/{dir}/model.jaxexport"));
    server.load(ModelConfig::new("mlp_batch", model("symbolic/jax-0.10.2/mlp_batch"))).unwrap();
    server.load(ModelConfig::new("int_bool", model("jax-0.10.2/int_bool"))).unwrap();
    Running::start(server)
}

/// The input `input{i}` as a tensor of the request, with typed contents or (`None`) raw.
fn tensor(i: usize, a: &NpyArray, contents: Option<InferTensorContents>) -> InferInputTensor {
    let datatype = match a.dtype {
        Dtype::F32 => "FP32",
        Dtype::I32 => "INT32",
        Dtype::Bool => "BOOL",
        other => panic!("{other:?}: not in these models"),
    };
    InferInputTensor {
        name: format!("input{i}"),
        datatype: datatype.into(),
        shape: a.dims.clone(),
        parameters: Default::default(),
        contents,
    }
}

/// The same inputs twice: raw, and typed as `typed` writes each.
fn requests(
    model: &str,
    inputs: &[NpyArray],
    typed: impl Fn(&NpyArray) -> InferTensorContents,
) -> [(&'static str, ModelInferRequest); 2] {
    let raw = ModelInferRequest {
        model_name: model.into(),
        inputs: inputs.iter().enumerate().map(|(i, a)| tensor(i, a, None)).collect(),
        raw_input_contents: inputs.iter().map(|a| a.data.clone()).collect(),
        ..Default::default()
    };
    let typed = ModelInferRequest {
        model_name: model.into(),
        inputs: inputs.iter().enumerate().map(|(i, a)| tensor(i, a, Some(typed(a)))).collect(),
        ..Default::default()
    };
    [("raw", raw), ("typed", typed)]
}

fn infer(server: &Running, request: &ModelInferRequest, what: &str) -> ModelInferResponse {
    let answer = server.grpc("ModelInfer", request, &[]);
    assert_eq!(answer.code, 0, "{what}: {answer:?}");
    ModelInferResponse::decode(&answer.body[..]).unwrap()
}

#[test]
fn grpc_infer_answers_jaxs_values_with_raw_typed_and_decoded_contents() {
    let server = serve();
    // FP32 at three batch sizes of a symbolic model: raw, and packed fp32_contents.
    let dir = "jax_export/symbolic/jax-0.10.2/mlp_batch";
    for ok in ["ok0", "ok1", "ok2"] {
        let inputs: Vec<NpyArray> = (0..5).map(|i| npy(&format!("{dir}/{ok}/in{i}.npy"))).collect();
        let want = npy(&format!("{dir}/{ok}/out0.npy"));
        let fp32 =
            |a: &NpyArray| InferTensorContents { fp32_contents: a.to_vec::<f32>().unwrap(), ..Default::default() };
        for (how, request) in requests("mlp_batch", &inputs, fp32) {
            let response = infer(&server, &request, &format!("{ok} {how}"));
            assert_eq!(response.outputs[0].shape, want.dims, "{ok} {how}");
            let got =
                response.raw_output_contents[0].chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap()));
            for (a, b) in got.zip(want.to_vec::<f32>().unwrap()) {
                assert!((a - b).abs() <= 1e-5 + 1e-5 * b.abs(), "{ok} {how}: {a} vs JAX's {b}");
            }
        }
    }
    // INT32 (int_contents: varints, decoded) and BOOL (packed bool_contents: kept) to INT32 and
    // BOOL outputs, byte for byte JAX's.
    let dir = "jax_export/jax-0.10.2/int_bool";
    let inputs: Vec<NpyArray> = (0..3).map(|i| npy(&format!("{dir}/in{i}.npy"))).collect();
    let typed = |a: &NpyArray| match a.dtype {
        Dtype::Bool => InferTensorContents { bool_contents: a.to_vec::<bool>().unwrap(), ..Default::default() },
        _ => InferTensorContents { int_contents: a.to_vec::<i32>().unwrap(), ..Default::default() },
    };
    for (how, request) in requests("int_bool", &inputs, typed) {
        let response = infer(&server, &request, how);
        assert_eq!(response.outputs.len(), 3, "{how}");
        for (k, output) in response.raw_output_contents.iter().enumerate() {
            let want = npy(&format!("{dir}/out{k}.npy"));
            assert_eq!(response.outputs[k].shape, want.dims, "{how} output {k}");
            assert_eq!(output, &want.data, "{how} output {k}");
        }
    }
}
