//! Triton's system shared memory extension over HTTP and gRPC: regions of `/dev/shm` objects
//! registered, inputs read from them and outputs written to them (byte for byte JAX's), the
//! status and unregister calls, and the errors: a region too small for an output, a place
//! outside its region, a region truncated after its registration (an error, not a crash), a
//! key that is a path, a name registered twice, and the switch and token registering needs.

use pjrt_formats::npy::NpyArray;
use pjrt_serve::grpc::messages::{
    InferInputTensor, InferParameter, InferRequestedOutputTensor, ModelInferRequest, ModelInferResponse,
    ParameterChoice, SystemSharedMemoryRegisterRequest, SystemSharedMemoryStatusRequest,
    SystemSharedMemoryStatusResponse, SystemSharedMemoryUnregisterRequest,
};
use pjrt_serve::{ModelConfig, Server, ServerOptions};
use prost::Message as _;
use serde_json::{json, Value};

use crate::harness::{client, data, npy, Running};

/// A shared memory object of this test process under `/dev/shm`, removed when dropped.
struct Object {
    key: String,
    path: std::path::PathBuf,
}

impl Object {
    fn new(what: &str, bytes: &[u8]) -> Object {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!("pjrt-serve-test-{}-{what}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let path = std::path::Path::new("/dev/shm").join(&name);
        std::fs::write(&path, bytes).unwrap();
        Object { key: format!("/{name}"), path }
    }

    fn bytes(&self) -> Vec<u8> {
        std::fs::read(&self.path).unwrap()
    }

    fn truncate(&self, len: u64) {
        std::fs::OpenOptions::new().write(true).open(&self.path).unwrap().set_len(len).unwrap();
    }
}

impl Drop for Object {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

const MODEL: &str = "jax_export/jax-0.10.2/int_bool";

fn serve(options: ServerOptions) -> Running {
    let server = Server::new(client(), options);
    server.load(ModelConfig::new("int_bool", data(&format!("{MODEL}/model.jaxexport")))).unwrap();
    Running::start(server)
}

fn datatype(a: &NpyArray) -> &'static str {
    match a.dtype {
        pjrt_formats::npy::Dtype::I32 => "INT32",
        pjrt_formats::npy::Dtype::Bool => "BOOL",
        other => panic!("{other:?}: not in this model"),
    }
}

/// The model's inputs and outputs (JAX's), and each one's offset when laid end to end.
fn tensors() -> (Vec<NpyArray>, Vec<usize>, Vec<NpyArray>, Vec<usize>) {
    let inputs: Vec<NpyArray> = (0..3).map(|i| npy(&format!("{MODEL}/in{i}.npy"))).collect();
    let outputs: Vec<NpyArray> = (0..3).map(|i| npy(&format!("{MODEL}/out{i}.npy"))).collect();
    let offsets = |list: &[NpyArray]| {
        list.iter()
            .scan(0, |at, a| {
                let here = *at;
                *at += a.data.len();
                Some(here)
            })
            .collect::<Vec<_>>()
    };
    let (input_offsets, output_offsets) = (offsets(&inputs), offsets(&outputs));
    (inputs, input_offsets, outputs, output_offsets)
}

fn total(list: &[NpyArray]) -> usize {
    list.iter().map(|a| a.data.len()).sum()
}

fn shm_json(region: &str, offset: usize, byte_size: usize) -> Value {
    json!({ "shared_memory_region": region, "shared_memory_offset": offset, "shared_memory_byte_size": byte_size })
}

/// An HTTP request with every input in region `inputs` and every output in region `outputs`
/// (`room`: the bytes each output is given).
fn http_request(inputs: &[NpyArray], at: &[usize], outputs: &[NpyArray], out_at: &[usize], room: usize) -> Value {
    let inputs: Vec<Value> = inputs
        .iter()
        .zip(at)
        .enumerate()
        .map(|(i, (a, &at))| {
            json!({ "name": format!("input{i}"), "datatype": datatype(a), "shape": a.dims,
                    "parameters": shm_json("in", at, a.data.len()) })
        })
        .collect();
    let outputs: Vec<Value> = (0..outputs.len())
        .map(|k| {
            let mut parameters = shm_json("out", out_at[k], room.min(outputs[k].data.len()));
            parameters["binary_data"] = false.into();
            json!({ "name": format!("output{k}"), "parameters": parameters })
        })
        .collect();
    json!({ "inputs": inputs, "outputs": outputs })
}

fn register_http(server: &Running, name: &str, key: &str, byte_size: usize) -> (u16, Value) {
    let body = json!({ "key": key, "offset": 0, "byte_size": byte_size });
    server.post_json(&format!("/v2/systemsharedmemory/region/{name}/register"), &body)
}

fn error(answer: &(u16, Value)) -> String {
    answer.1["error"].as_str().unwrap_or_default().to_string()
}

#[test]
fn http_inputs_and_outputs_go_through_shared_memory() {
    let server = serve(ServerOptions::default().with_shared_memory(true));
    let (inputs, at, outputs, out_at) = tensors();
    let input_bytes: Vec<u8> = inputs.iter().flat_map(|a| a.data.clone()).collect();
    let input_object = Object::new("in", &input_bytes);
    let output_object = Object::new("out", &vec![0xee; total(&outputs)]);
    assert_eq!(register_http(&server, "in", &input_object.key, input_bytes.len()).0, 200);
    assert_eq!(register_http(&server, "out", &output_object.key, total(&outputs)).0, 200);
    let (status, list) = server.get_json("/v2/systemsharedmemory/status");
    assert_eq!(status, 200);
    let names: Vec<&str> = list.as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["in", "out"]);
    let (_, one) = server.get_json("/v2/systemsharedmemory/region/in/status");
    assert_eq!(one, json!([{ "name": "in", "key": input_object.key, "offset": 0, "byte_size": input_bytes.len() }]));

    let request = http_request(&inputs, &at, &outputs, &out_at, usize::MAX);
    let (status, answer) = server.post_json("/v2/models/int_bool/infer", &request);
    assert_eq!(status, 200, "{answer}");
    for (k, output) in answer["outputs"].as_array().unwrap().iter().enumerate() {
        assert!(output.get("data").is_none(), "output {k} in shared memory has no data: {output}");
        assert_eq!(output["parameters"], shm_json("out", out_at[k], outputs[k].data.len()));
    }
    let written = output_object.bytes();
    for (k, want) in outputs.iter().enumerate() {
        assert_eq!(written[out_at[k]..out_at[k] + want.data.len()], want.data, "output {k}: JAX's bytes");
    }

    // An output region too small for the output: Triton's words, and nothing answered as data.
    let small = http_request(&inputs, &at, &outputs, &out_at, 1);
    let e = server.post_json("/v2/models/int_bool/infer", &small);
    assert_eq!(e.0, 400, "{}", e.1);
    assert!(error(&e).contains("should be at least"), "{}", e.1);
    // An input placed past its region's end.
    let mut past = request.clone();
    past["inputs"][0]["parameters"]["shared_memory_offset"] = (input_bytes.len() - 1).into();
    let e = server.post_json("/v2/models/int_bool/infer", &past);
    assert!(error(&e).contains("Invalid offset + byte size for shared memory region: 'in'"), "{}", e.1);
    // A byte size that is not the input's.
    let mut size = request.clone();
    size["inputs"][0]["parameters"]["shared_memory_byte_size"] = 1.into();
    let e = server.post_json("/v2/models/int_bool/infer", &size);
    assert!(error(&e).contains("shared_memory_byte_size is 1 bytes"), "{}", e.1);
    // A region name twice, a key that is a path, a key of no object.
    let e = register_http(&server, "in", &input_object.key, 4);
    assert_eq!(e.0, 409);
    assert!(error(&e).contains("shared memory region 'in' already in manager"), "{}", e.1);
    for key in ["/../etc/passwd", "/a/b", "/", "/pjrt-serve-test-no-such-object"] {
        let e = register_http(&server, "bad", key, 4);
        assert_eq!(e.0, 400, "{key}: {}", e.1);
        assert!(error(&e).starts_with("Unable to open shared memory region"), "{key}: {}", e.1);
    }
    // A region larger than its object.
    let e = register_http(&server, "big", &input_object.key, input_bytes.len() + 1);
    assert!(error(&e).contains(&format!("is {} bytes", input_bytes.len())), "{}", e.1);

    // The input object truncated after registering: an error, and the server still serves.
    input_object.truncate(2);
    let e = server.post_json("/v2/models/int_bool/infer", &request);
    assert_eq!(e.0, 400, "{}", e.1);
    assert!(error(&e).contains("truncated since it was registered"), "{}", e.1);
    std::fs::write(&input_object.path, &input_bytes).unwrap();
    assert_eq!(server.post_json("/v2/models/int_bool/infer", &request).0, 200);
    // The output object truncated.
    output_object.truncate(0);
    let e = server.post_json("/v2/models/int_bool/infer", &request);
    assert!(error(&e).contains("truncated since it was registered"), "{}", e.1);

    // Unregistered: one, then all.
    assert_eq!(server.post_json("/v2/systemsharedmemory/region/out/unregister", &json!({})).0, 200);
    let e = server.post_json("/v2/models/int_bool/infer", &request);
    assert!(error(&e).contains("Unable to find shared memory region: 'out'"), "{}", e.1);
    assert_eq!(server.get_json("/v2/systemsharedmemory/region/out/status").0, 404);
    assert_eq!(server.post_json("/v2/systemsharedmemory/unregister", &json!({})).0, 200);
    assert_eq!(server.get_json("/v2/systemsharedmemory/status").1, json!([]));
    let (_, metadata) = server.get_json("/v2");
    assert!(metadata["extensions"].as_array().unwrap().contains(&json!("system_shared_memory")));
}

/// Shared memory beside binary tensor data and JSON in one HTTP request: input 0 from a region,
/// input 1 binary, input 2 JSON; output 0 to a region, output 1 binary, output 2 JSON.
#[test]
fn http_shared_memory_beside_binary_and_json_tensors() {
    let server = serve(ServerOptions::default().with_shared_memory(true));
    let (inputs, _, outputs, _) = tensors();
    let input_object = Object::new("mixed-in", &inputs[0].data);
    let output_object = Object::new("mixed-out", &vec![0; outputs[0].data.len() + 8]);
    assert_eq!(register_http(&server, "in", &input_object.key, inputs[0].data.len()).0, 200);
    assert_eq!(register_http(&server, "out", &output_object.key, outputs[0].data.len() + 8).0, 200);
    let json_data: Value = match datatype(&inputs[2]) {
        "BOOL" => inputs[2].data.iter().map(|&b| b != 0).collect::<Vec<bool>>().into(),
        _ => inputs[2].to_vec::<i32>().unwrap().into(),
    };
    let header = json!({
        "inputs": [
            { "name": "input0", "datatype": datatype(&inputs[0]), "shape": inputs[0].dims,
              "parameters": shm_json("in", 0, inputs[0].data.len()) },
            { "name": "input1", "datatype": datatype(&inputs[1]), "shape": inputs[1].dims,
              "parameters": { "binary_data_size": inputs[1].data.len() } },
            { "name": "input2", "datatype": datatype(&inputs[2]), "shape": inputs[2].dims, "data": json_data },
        ],
        "outputs": [
            { "name": "output0", "parameters": shm_json("out", 8, outputs[0].data.len()) },
            { "name": "output1", "parameters": { "binary_data": true } },
            { "name": "output2", "parameters": { "binary_data": false } },
        ],
    });
    let (status, answer, binary) = server.post_binary("/v2/models/int_bool/infer", &header, &inputs[1].data);
    assert_eq!(status, 200, "{answer}");
    let answered = answer["outputs"].as_array().unwrap();
    assert_eq!(answered[0]["parameters"], shm_json("out", 8, outputs[0].data.len()));
    assert_eq!(answered[1]["parameters"]["binary_data_size"], outputs[1].data.len());
    assert_eq!(binary, outputs[1].data, "only output 1's bytes follow the JSON");
    assert!(answered[2]["data"].is_array(), "{}", answered[2]);
    assert_eq!(output_object.bytes()[8..], outputs[0].data);
    assert_eq!(output_object.bytes()[..8], [0; 8], "nothing written before the output's offset");
}

fn string(s: &str) -> InferParameter {
    InferParameter { parameter_choice: Some(ParameterChoice::StringParam(s.into())) }
}

fn int(n: usize) -> InferParameter {
    InferParameter { parameter_choice: Some(ParameterChoice::Int64Param(n as i64)) }
}

fn shm_params(region: &str, offset: usize, byte_size: usize) -> std::collections::HashMap<String, InferParameter> {
    [
        ("shared_memory_region".to_string(), string(region)),
        ("shared_memory_offset".to_string(), int(offset)),
        ("shared_memory_byte_size".to_string(), int(byte_size)),
    ]
    .into()
}

#[test]
fn grpc_inputs_and_outputs_go_through_shared_memory_beside_raw_ones() {
    let server = serve(ServerOptions::default().with_shared_memory(true));
    let (inputs, at, outputs, out_at) = tensors();
    let input_bytes: Vec<u8> = inputs.iter().flat_map(|a| a.data.clone()).collect();
    let input_object = Object::new("grpc-in", &input_bytes);
    let output_object = Object::new("grpc-out", &vec![0; total(&outputs)]);
    for (name, object, size) in [("in", &input_object, input_bytes.len()), ("out", &output_object, total(&outputs))] {
        let register = SystemSharedMemoryRegisterRequest {
            name: name.into(),
            key: object.key.clone(),
            offset: 0,
            byte_size: size as u64,
        };
        let answer = server.grpc("SystemSharedMemoryRegister", &register, &[]);
        assert_eq!(answer.code, 0, "{answer:?}");
    }
    let again =
        SystemSharedMemoryRegisterRequest { name: "in".into(), key: input_object.key.clone(), offset: 0, byte_size: 4 };
    assert_eq!(server.grpc("SystemSharedMemoryRegister", &again, &[]).code, 6, "ALREADY_EXISTS");
    let nameless = SystemSharedMemoryRegisterRequest { name: String::new(), ..again };
    assert_eq!(server.grpc("SystemSharedMemoryRegister", &nameless, &[]).code, 3, "a name is needed");
    let status = server.grpc("SystemSharedMemoryStatus", &SystemSharedMemoryStatusRequest::default(), &[]);
    let status = SystemSharedMemoryStatusResponse::decode(&status.body[..]).unwrap();
    assert_eq!(status.regions.len(), 2);
    assert_eq!(status.regions["in"].key, input_object.key);
    assert_eq!(status.regions["out"].byte_size, total(&outputs) as u64);

    // Inputs 0 and 2 in shared memory, input 1 raw (raw_input_contents holds only its bytes);
    // outputs 0 and 2 in shared memory, output 1 raw.
    let request = ModelInferRequest {
        model_name: "int_bool".into(),
        inputs: inputs
            .iter()
            .enumerate()
            .map(|(i, a)| InferInputTensor {
                name: format!("input{i}"),
                datatype: datatype(a).into(),
                shape: a.dims.clone(),
                parameters: if i == 1 { Default::default() } else { shm_params("in", at[i], a.data.len()) },
                contents: None,
            })
            .collect(),
        outputs: (0..3)
            .map(|k| InferRequestedOutputTensor {
                name: format!("output{k}"),
                parameters: if k == 1 {
                    Default::default()
                } else {
                    shm_params("out", out_at[k], outputs[k].data.len())
                },
            })
            .collect(),
        raw_input_contents: vec![inputs[1].data.clone()],
        ..Default::default()
    };
    let answer = server.grpc("ModelInfer", &request, &[]);
    assert_eq!(answer.code, 0, "{answer:?}");
    let response = ModelInferResponse::decode(&answer.body[..]).unwrap();
    assert_eq!(response.raw_output_contents.len(), 3, "one raw entry per output, as Triton's");
    assert!(response.raw_output_contents[0].is_empty() && response.raw_output_contents[2].is_empty());
    assert_eq!(response.raw_output_contents[1], outputs[1].data);
    assert_eq!(response.outputs[0].parameters["shared_memory_region"], string("out"));
    assert_eq!(response.outputs[2].parameters["shared_memory_byte_size"], int(outputs[2].data.len()));
    let written = output_object.bytes();
    for k in [0, 2] {
        assert_eq!(written[out_at[k]..out_at[k] + outputs[k].data.len()], outputs[k].data, "output {k}");
    }

    // Too small for output 0; the input object truncated; a region unregistered.
    let mut small = request.clone();
    small.outputs[0].parameters = shm_params("out", 0, 1);
    let e = server.grpc("ModelInfer", &small, &[]);
    assert_eq!(e.code, 3, "INVALID_ARGUMENT: {e:?}");
    assert!(e.message.contains("should be at least"), "{e:?}");
    input_object.truncate(1);
    let e = server.grpc("ModelInfer", &request, &[]);
    assert_eq!(e.code, 3, "{e:?}");
    assert!(e.message.contains("truncated since it was registered"), "{e:?}");
    let unregister = SystemSharedMemoryUnregisterRequest { name: "in".into() };
    assert_eq!(server.grpc("SystemSharedMemoryUnregister", &unregister, &[]).code, 0);
    let e = server.grpc("ModelInfer", &request, &[]);
    assert!(e.message.contains("Unable to find shared memory region: 'in'"), "{e:?}");
    let one = SystemSharedMemoryStatusRequest { name: "in".into() };
    assert_eq!(server.grpc("SystemSharedMemoryStatus", &one, &[]).code, 5, "NOT_FOUND");
    let all = SystemSharedMemoryUnregisterRequest::default();
    assert_eq!(server.grpc("SystemSharedMemoryUnregister", &all, &[]).code, 0);
    let status = server.grpc("SystemSharedMemoryStatus", &SystemSharedMemoryStatusRequest::default(), &[]);
    assert!(SystemSharedMemoryStatusResponse::decode(&status.body[..]).unwrap().regions.is_empty());
}

#[test]
fn registering_needs_the_switch_and_the_token() {
    let object = Object::new("auth", &[0; 16]);
    let register =
        SystemSharedMemoryRegisterRequest { name: "r".into(), key: object.key.clone(), offset: 0, byte_size: 16 };
    // Off by default: 403, PERMISSION_DENIED; the status call answers (no regions).
    let off = serve(ServerOptions::default());
    let e = register_http(&off, "r", &object.key, 16);
    assert_eq!(e.0, 403, "{}", e.1);
    assert!(error(&e).contains("--shared-memory"), "{}", e.1);
    assert_eq!(off.grpc("SystemSharedMemoryRegister", &register, &[]).code, 7);
    assert_eq!(off.post_json("/v2/systemsharedmemory/unregister", &json!({})).0, 403);
    assert_eq!(off.get_json("/v2/systemsharedmemory/status"), (200, json!([])));
    // On, with a token: nothing without it.
    let guarded = serve(ServerOptions::default().with_shared_memory(true).with_token("s3cret"));
    assert_eq!(register_http(&guarded, "r", &object.key, 16).0, 401);
    assert_eq!(guarded.grpc("SystemSharedMemoryRegister", &register, &[]).code, 16, "UNAUTHENTICATED");
    let bearer = [("authorization", "Bearer s3cret")];
    assert_eq!(guarded.grpc("SystemSharedMemoryRegister", &register, &bearer).code, 0);
    let body = json!({ "key": object.key, "offset": 0, "byte_size": 16 }).to_string();
    let (status, _) = guarded.post_raw("/v2/systemsharedmemory/region/r2/register", &bearer, body.as_bytes());
    assert_eq!(status, 200);
}
