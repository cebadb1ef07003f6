//! The messages' field numbers and the wire reader on good, wrong and hostile requests.

use std::collections::HashMap;

use super::messages::*;
use super::wire;
use crate::error::ServeError;
use crate::protocol::HeldRequest;
use prost::Message as _;

/// A request through the wire reader, as the server reads it.
fn infer_request(m: ModelInferRequest) -> Result<HeldRequest, ServeError> {
    let bytes = bytes::Bytes::from(m.encode_to_vec());
    Ok(wire::infer_request(wire::read_infer_call(&bytes)?, &mut |_| Ok(None))?.1)
}

fn input(name: &str, datatype: &str, shape: Vec<i64>, contents: Option<InferTensorContents>) -> InferInputTensor {
    InferInputTensor { name: name.into(), datatype: datatype.into(), shape, parameters: HashMap::new(), contents }
}

#[test]
fn field_numbers_are_the_services() {
    // Hand-encoded: field 1, 2 and 3 as length-delimited strings (tags 0x0a, 0x12, 0x1a).
    let m = ServerMetadataResponse { name: "a".into(), version: "b".into(), extensions: vec!["c".into()] };
    assert_eq!(m.encode_to_vec(), [0x0a, 1, b'a', 0x12, 1, b'b', 0x1a, 1, b'c']);
    // raw_input_contents is field 7 of ModelInferRequest, raw_output_contents field 6 of the response.
    let request = ModelInferRequest { raw_input_contents: vec![vec![9]], ..Default::default() };
    assert_eq!(request.encode_to_vec(), [0x3a, 1, 9]);
    let response = ModelInferResponse { raw_output_contents: vec![vec![9]], ..Default::default() };
    assert_eq!(response.encode_to_vec(), [0x32, 1, 9]);
}

#[test]
fn typed_and_raw_contents_become_little_endian_bytes() {
    let typed = ModelInferRequest {
        inputs: vec![
            input(
                "x",
                "FP32",
                vec![2],
                Some(InferTensorContents { fp32_contents: vec![1.5, -2.0], ..Default::default() }),
            ),
            input("i", "INT16", vec![1], Some(InferTensorContents { int_contents: vec![-7], ..Default::default() })),
            input(
                "b",
                "BOOL",
                vec![2],
                Some(InferTensorContents { bool_contents: vec![true, false], ..Default::default() }),
            ),
        ],
        ..Default::default()
    };
    let r = infer_request(typed).unwrap();
    assert_eq!(r.inputs[0].data, [1.5f32.to_le_bytes(), (-2.0f32).to_le_bytes()].concat());
    assert_eq!(r.inputs[1].data[..], (-7i16).to_le_bytes());
    assert_eq!(r.inputs[2].data[..], [1, 0]);
    let raw = ModelInferRequest {
        inputs: vec![input("h", "FP16", vec![1], None)],
        raw_input_contents: vec![vec![0, 0x3c]],
        ..Default::default()
    };
    assert_eq!(infer_request(raw).unwrap().inputs[0].data[..], [0, 0x3c]);
}

#[test]
fn wrong_requests_are_refused_naming_what_is_wrong() {
    let cases: Vec<(ModelInferRequest, &str)> = vec![
        (
            ModelInferRequest {
                inputs: vec![input("x", "FP32", vec![3], None)],
                raw_input_contents: vec![vec![0; 8]],
                ..Default::default()
            },
            "8 bytes of data, but 3 FP32 elements",
        ),
        (
            ModelInferRequest {
                inputs: vec![input("x", "FP32", vec![1], None), input("y", "FP32", vec![1], None)],
                raw_input_contents: vec![vec![0; 4]],
                ..Default::default()
            },
            "raw_input_contents has 1 entries for 2 inputs",
        ),
        (
            ModelInferRequest {
                inputs: vec![input("x", "BOOL", vec![1], None)],
                raw_input_contents: vec![vec![2]],
                ..Default::default()
            },
            "byte 2",
        ),
        (
            ModelInferRequest {
                inputs: vec![input(
                    "x",
                    "INT8",
                    vec![1],
                    Some(InferTensorContents { int_contents: vec![300], ..Default::default() }),
                )],
                ..Default::default()
            },
            "300 is out of range",
        ),
        (
            ModelInferRequest {
                inputs: vec![input("x", "BF16", vec![1], Some(InferTensorContents::default()))],
                ..Default::default()
            },
            "raw_input_contents",
        ),
        (ModelInferRequest { inputs: vec![input("x", "BYTES", vec![1], None)], ..Default::default() }, "BYTES"),
        (ModelInferRequest { inputs: vec![input("x", "FP32", vec![-1], None)], ..Default::default() }, "negative"),
        (ModelInferRequest { inputs: vec![input("x", "FP32", vec![1], None)], ..Default::default() }, "no contents"),
        (
            ModelInferRequest {
                parameters: HashMap::from([(
                    "priority".to_string(),
                    InferParameter { parameter_choice: Some(ParameterChoice::Int64Param(1)) },
                )]),
                ..Default::default()
            },
            "\"priority\" is not supported",
        ),
    ];
    for (request, says) in cases {
        let e = infer_request(request).unwrap_err();
        assert!(e.to_string().contains(says), "{e} does not say {says:?}");
        assert_eq!(tonic::Status::from(e).code(), tonic::Code::InvalidArgument);
    }
}

/// Random bytes decoded as a request, and requests with random sizes, give errors, never a
/// panic or an allocation beyond the message.
#[test]
fn hostile_messages_are_errors() {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let valid = ModelInferRequest {
        model_name: "m".into(),
        inputs: vec![input("x", "FP32", vec![2, 2], None)],
        raw_input_contents: vec![vec![0; 16]],
        ..Default::default()
    }
    .encode_to_vec();
    for _ in 0..5000 {
        let mut bytes = valid.clone();
        for _ in 0..1 + next() % 4 {
            let at = next() as usize % bytes.len();
            bytes[at] = next() as u8;
        }
        let bytes = bytes::Bytes::from(bytes);
        if let Ok(call) = wire::read_infer_call(&bytes) {
            let _ = wire::infer_request(call, &mut |_| Ok(None));
        }
    }
    let huge = ModelInferRequest {
        inputs: vec![input("x", "FP64", vec![i64::MAX, i64::MAX], None)],
        raw_input_contents: vec![vec![]],
        ..Default::default()
    };
    assert!(infer_request(huge).unwrap_err().to_string().contains("too many elements"));
}

/// Typed contents, packed (as prost writes them) or one element per field, are decoded
/// into the declared shape's bytes and never past them; contents in another type's field
/// are refused by name.
#[test]
fn typed_contents_are_decoded_no_further_than_the_shape() {
    let int64 = |n: usize| InferTensorContents { int64_contents: vec![0; n], ..Default::default() };
    let request = |shape: i64, contents| ModelInferRequest {
        inputs: vec![input("x", "INT64", vec![shape], Some(contents))],
        ..Default::default()
    };
    assert_eq!(infer_request(request(3, int64(3))).unwrap().inputs[0].data[..], [0; 24]);
    let e = infer_request(request(3, int64(1 << 20))).unwrap_err().to_string();
    assert!(e.contains("more than the 3 elements"), "{e}");
    let e = infer_request(request(3, int64(2))).unwrap_err().to_string();
    assert!(e.contains("2 elements of contents, but its shape has 3"), "{e}");
    let mut checked = Vec::new();
    let fp32 = ModelInferRequest { inputs: vec![input("x", "FP32", vec![2], Some(int64(2)))], ..Default::default() };
    let bytes = bytes::Bytes::from(fp32.encode_to_vec());
    let call = wire::read_infer_call(&bytes).unwrap();
    let e = wire::infer_request(call, &mut |h| {
        checked.push((h.name.to_string(), h.bytes));
        Ok(None)
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("int64_contents, but FP32's are in fp32_contents"), "{e}");
    assert_eq!(checked, [("x".to_string(), 8)]);
    // Unpacked: field 3 (varint) twice, inside contents (field 5) of input field 5.
    let contents = [0x18, 0x07, 0x18, 0x7f];
    let mut tensor = vec![0x0a, 1, b'x', 0x12, 5];
    tensor.extend(b"INT64");
    tensor.extend([0x1a, 1, 2, 0x2a, contents.len() as u8]);
    tensor.extend(contents);
    let mut message = vec![0x2a, tensor.len() as u8];
    message.extend(tensor);
    let bytes = bytes::Bytes::from(message);
    let (_, request) = wire::infer_request(wire::read_infer_call(&bytes).unwrap(), &mut |_| Ok(None)).unwrap();
    assert_eq!(request.inputs[0].data, [7i64.to_le_bytes(), 127i64.to_le_bytes()].concat());
}

/// Raw contents, and typed ones that already are the tensor's little-endian bytes (packed FP32
/// and FP64; packed BOOL, INT8, UINT8 of one-byte varints), stay slices of the message: not one
/// byte copied, and the check is told so (their bytes are the body's, not taken again). Typed
/// contents that need converting are decoded into bytes of their own.
#[test]
fn contents_that_are_the_tensors_bytes_stay_in_the_message() {
    let typed = |name: &str, datatype: &str, n: i64, contents| input(name, datatype, vec![n], Some(contents));
    let request = ModelInferRequest {
        inputs: vec![
            typed("f", "FP32", 3, InferTensorContents { fp32_contents: vec![1.5, -2.0, 3.25], ..Default::default() }),
            typed("d", "FP64", 1, InferTensorContents { fp64_contents: vec![0.125], ..Default::default() }),
            typed("b", "BOOL", 2, InferTensorContents { bool_contents: vec![true, false], ..Default::default() }),
            typed("u", "UINT8", 2, InferTensorContents { uint_contents: vec![7, 127], ..Default::default() }),
            // Decoded: varints that are not the tensor's bytes.
            typed("big", "UINT8", 1, InferTensorContents { uint_contents: vec![200], ..Default::default() }),
            typed("l", "INT64", 2, InferTensorContents { int64_contents: vec![-1, 5], ..Default::default() }),
            typed("i", "INT32", 1, InferTensorContents { int_contents: vec![9], ..Default::default() }),
        ],
        ..Default::default()
    };
    let message = bytes::Bytes::from(request.encode_to_vec());
    let within = |data: &[u8]| message.as_ptr_range().contains(&data.as_ptr()) && !data.is_empty();
    let mut told = Vec::new();
    let (_, held) = wire::infer_request(wire::read_infer_call(&message).unwrap(), &mut |h| {
        told.push((h.name.to_string(), h.in_body));
        Ok(None)
    })
    .unwrap();
    let kept: Vec<(&str, bool)> = held.inputs.iter().map(|t| (t.name.as_str(), within(&t.data))).collect();
    let expected = [("f", true), ("d", true), ("b", true), ("u", true), ("big", false), ("l", false), ("i", false)];
    assert_eq!(kept, expected);
    assert_eq!(told, expected.map(|(n, k)| (n.to_string(), k)));
    let data: Vec<&[u8]> = held.inputs.iter().map(|t| &t.data[..]).collect();
    assert_eq!(data[0], [1.5f32.to_le_bytes(), (-2.0f32).to_le_bytes(), 3.25f32.to_le_bytes()].concat());
    assert_eq!(data[1], 0.125f64.to_le_bytes());
    assert_eq!(data[2..5], [&[1u8, 0][..], &[7, 127], &[200]]);
    assert_eq!(data[5], [(-1i64).to_le_bytes(), 5i64.to_le_bytes()].concat());
    assert_eq!(data[6], 9i32.to_le_bytes());

    let raw = ModelInferRequest {
        inputs: vec![input("x", "FP32", vec![2], None), input("y", "INT64", vec![1], None)],
        raw_input_contents: vec![[1f32.to_le_bytes(), 2f32.to_le_bytes()].concat(), 7i64.to_le_bytes().to_vec()],
        ..Default::default()
    };
    let message = bytes::Bytes::from(raw.encode_to_vec());
    let (_, held) = wire::infer_request(wire::read_infer_call(&message).unwrap(), &mut |h| {
        assert!(h.in_body, "{} is the body's", h.name);
        Ok(None)
    })
    .unwrap();
    for t in &held.inputs {
        assert!(message.as_ptr_range().contains(&t.data.as_ptr()), "{} was copied", t.name);
    }
    assert_eq!(held.inputs[1].data, 7i64.to_le_bytes()[..]);
}

/// An error becomes one gRPC status: the code from its HTTP status, its message, the error kept
/// as the status's source.
#[test]
fn errors_become_statuses_keeping_their_source() {
    use std::error::Error as _;
    let cases = [
        (ServeError::BadRequest("x".into()), tonic::Code::InvalidArgument),
        (ServeError::Unauthorized, tonic::Code::Unauthenticated),
        (ServeError::Forbidden("x".into()), tonic::Code::PermissionDenied),
        (ServeError::NotFound("x".into()), tonic::Code::NotFound),
        (ServeError::TimedOut("x".into()), tonic::Code::DeadlineExceeded),
        (ServeError::TooLarge("x".into()), tonic::Code::ResourceExhausted),
        (ServeError::Unavailable("x".into()), tonic::Code::Unavailable),
        (ServeError::load("m", "no such file"), tonic::Code::Internal),
    ];
    for (e, code) in cases {
        let message = e.to_string();
        let status = tonic::Status::from(e);
        assert_eq!((status.code(), status.message()), (code, message.as_str()));
        let source = status.source().and_then(|s| s.downcast_ref::<ServeError>());
        assert_eq!(source.map(ToString::to_string), Some(message));
    }
    let status = tonic::Status::from(ServeError::load("m", "no such file"));
    let kept = status.source().and_then(|s| s.downcast_ref::<ServeError>()).unwrap();
    assert_eq!(kept.source().map(ToString::to_string).as_deref(), Some("no such file"));
}

/// The parameters KServe's SDK (`kserve.InferenceGRPCClient`) sets: `binary_data_size` on each
/// input it sends raw (checked against the raw contents), `binary_data` on requested outputs
/// and `binary_data_output` on the request (true is what gRPC answers anyway; false refused);
/// and the one Triton's C++ client (perf_analyzer) sets on every request.
#[test]
fn client_parameters_are_checked() {
    let named =
        |name: &str, choice| HashMap::from([(name.to_string(), InferParameter { parameter_choice: Some(choice) })]);
    let raw_input = |size: ParameterChoice| InferInputTensor {
        parameters: named("binary_data_size", size),
        ..input("x", "FP32", vec![2], None)
    };
    let request = |input: InferInputTensor, output: Option<bool>, whole: Option<bool>| ModelInferRequest {
        inputs: vec![input],
        raw_input_contents: vec![[1.5f32.to_le_bytes(), 2.5f32.to_le_bytes()].concat()],
        outputs: output
            .map(|b| InferRequestedOutputTensor {
                name: "y".into(),
                parameters: named("binary_data", ParameterChoice::BoolParam(b)),
            })
            .into_iter()
            .collect(),
        parameters: whole.map(|b| named("binary_data_output", ParameterChoice::BoolParam(b))).unwrap_or_default(),
        ..Default::default()
    };
    // As the SDK sends a numpy array: int64 8, the raw contents' size; also as uint64.
    let r = infer_request(request(raw_input(ParameterChoice::Int64Param(8)), Some(true), Some(true))).unwrap();
    assert_eq!(r.inputs[0].data.len(), 8);
    assert_eq!(r.outputs[0].name, "y");
    infer_request(request(raw_input(ParameterChoice::Uint64Param(8)), None, None)).unwrap();
    // perf_analyzer's (Triton's C++ client's) request parameter, false or true.
    for b in [false, true] {
        let mut r = request(raw_input(ParameterChoice::Uint64Param(8)), None, None);
        r.parameters = named("triton_enable_empty_final_response", ParameterChoice::BoolParam(b));
        infer_request(r).unwrap();
    }
    let cases = [
        (
            request(raw_input(ParameterChoice::Int64Param(4)), None, None),
            "binary_data_size is 4 bytes, but its raw_input_contents are 8",
        ),
        (request(raw_input(ParameterChoice::Int64Param(-8)), None, None), "must be a byte count"),
        (request(raw_input(ParameterChoice::StringParam("8".into())), None, None), "must be a byte count"),
        (request(raw_input(ParameterChoice::Int64Param(8)), Some(false), None), "binary_data false"),
        (request(raw_input(ParameterChoice::Int64Param(8)), None, Some(false)), "binary_data_output false"),
        (
            ModelInferRequest {
                inputs: vec![InferInputTensor {
                    contents: Some(InferTensorContents { fp32_contents: vec![1.0, 2.0], ..Default::default() }),
                    ..raw_input(ParameterChoice::Int64Param(8))
                }],
                ..Default::default()
            },
            "but the input has typed contents",
        ),
        (
            request(
                InferInputTensor {
                    parameters: named("shared_memory_region", ParameterChoice::StringParam("r".into())),
                    ..input("x", "FP32", vec![2], None)
                },
                None,
                None,
            ),
            "'shared_memory_byte_size' must be specified along with 'shared_memory_region'",
        ),
        (
            request(
                InferInputTensor {
                    parameters: named("cuda_shared_memory_handle", ParameterChoice::StringParam("h".into())),
                    ..input("x", "FP32", vec![2], None)
                },
                None,
                None,
            ),
            "\"cuda_shared_memory_handle\" is not supported here (known: binary_data_size, shared_memory_region",
        ),
    ];
    for (request, says) in cases {
        let e = infer_request(request).unwrap_err();
        assert!(e.to_string().contains(says), "{e} does not say {says:?}");
    }
}
