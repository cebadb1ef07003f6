//! The Open Inference Protocol's inference request and response bodies over HTTP: JSON, and
//! Triton's binary tensor data extension (a JSON header of `Inference-Header-Content-Length`
//! bytes, then each tensor's raw little-endian bytes in order).
//!
//! Decoding trusts nothing: every count is checked against the bytes there are before
//! anything is allocated for it, so a hostile body is a [`ProtocolError`] naming what is wrong,
//! never a panic or an allocation larger than the body.

use serde_json::{Map, Value};

use crate::datatype::Datatype;

/// What is wrong with a request body; the message names the field or tensor.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ProtocolError(pub String);

fn err<T>(message: impl Into<String>) -> Result<T, ProtocolError> {
    Err(ProtocolError(message.into()))
}

/// One input tensor of a request: its bytes little-endian, `shape`'s element count times the
/// datatype's size long (checked).
#[derive(Clone, Debug, PartialEq)]
pub struct InputTensor {
    /// The input's name.
    pub name: String,
    /// Its datatype.
    pub datatype: Datatype,
    /// Its shape.
    pub shape: Vec<i64>,
    /// Its elements, little-endian, in row-major order.
    pub data: Vec<u8>,
}

/// An output a request asks for, and whether it wants it as binary data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestedOutput {
    /// The output's name.
    pub name: String,
    /// `parameters.binary_data` (else the request's `binary_data_output`).
    pub binary: bool,
}

/// An inference request.
#[derive(Clone, Debug, PartialEq)]
pub struct InferRequest {
    /// The request's `id`, echoed in the response.
    pub id: Option<String>,
    /// The inputs, in the order sent.
    pub inputs: Vec<InputTensor>,
    /// The outputs asked for; empty: every output.
    pub outputs: Vec<RequestedOutput>,
    /// `parameters.binary_data_output`: outputs not listed in `outputs` come as binary data.
    pub binary_data_output: bool,
}

/// An input's element count and byte length, checked (no negative dimension, no overflow).
pub(crate) fn byte_len(name: &str, datatype: Datatype, shape: &[i64]) -> Result<(usize, usize), ProtocolError> {
    let count = element_count(name, shape)?;
    let bytes =
        count.checked_mul(datatype.size()).ok_or_else(|| ProtocolError(format!("input {name:?}: too large")))?;
    Ok((count, bytes))
}

/// A BOOL input's bytes are 0 or 1: a plugin is never handed another PRED byte.
pub(crate) fn check_bools(name: &str, datatype: Datatype, data: &[u8]) -> Result<(), ProtocolError> {
    match data.iter().find(|&&b| b > 1) {
        Some(b) if datatype == Datatype::Bool => err(format!("input {name:?}: a BOOL element is byte {b}, not 0 or 1")),
        _ => Ok(()),
    }
}

/// Element count of `shape`, checked: no negative dimension, no overflow.
pub(crate) fn element_count(name: &str, shape: &[i64]) -> Result<usize, ProtocolError> {
    let mut count: usize = 1;
    for &d in shape {
        let Ok(d) = usize::try_from(d) else {
            return err(format!("input {name:?}: shape {shape:?} has a negative dimension"));
        };
        count = match count.checked_mul(d) {
            Some(c) => c,
            None => return err(format!("input {name:?}: shape {shape:?} has too many elements")),
        };
    }
    Ok(count)
}

fn string_field<'a>(object: &'a Map<String, Value>, field: &str, what: &str) -> Result<&'a str, ProtocolError> {
    match object.get(field) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => err(format!("{what}: \"{field}\" must be a string")),
        None => err(format!("{what}: \"{field}\" is missing")),
    }
}

fn bool_parameter(object: &Map<String, Value>, name: &str, what: &str) -> Result<Option<bool>, ProtocolError> {
    match object.get("parameters") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(p)) => match p.get(name) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => err(format!("{what}: parameter \"{name}\" must be true or false")),
        },
        Some(_) => err(format!("{what}: \"parameters\" must be an object")),
    }
}

fn size_parameter(object: &Map<String, Value>, name: &str, what: &str) -> Result<Option<usize>, ProtocolError> {
    match object.get("parameters") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(p)) => match p.get(name) {
            None => Ok(None),
            Some(v) => match v.as_u64().and_then(|n| usize::try_from(n).ok()) {
                Some(n) => Ok(Some(n)),
                None => err(format!("{what}: parameter \"{name}\" must be a byte count (0 or more)")),
            },
        },
        Some(_) => err(format!("{what}: \"parameters\" must be an object")),
    }
}

/// Parameters this server does not implement are refused, not ignored: a client that asks for
/// `classification` or shared memory would otherwise get something other than it asked for.
fn refuse_unknown_parameters(object: &Map<String, Value>, known: &[&str], what: &str) -> Result<(), ProtocolError> {
    if let Some(Value::Object(p)) = object.get("parameters") {
        if let Some(name) = p.keys().find(|k| !known.contains(&k.as_str())) {
            return err(format!("{what}: parameter \"{name}\" is not supported here (known: {})", known.join(", ")));
        }
    }
    Ok(())
}

/// Appends the JSON `data` of an input (flat, or nested in row-major order) as bytes.
fn json_elements(
    name: &str,
    datatype: Datatype,
    data: &Value,
    out: &mut Vec<u8>,
    limit: usize,
) -> Result<(), ProtocolError> {
    // An explicit stack: nesting as deep as the body allows cannot overflow ours.
    let mut stack = vec![data];
    while let Some(v) = stack.pop() {
        if out.len() > limit {
            return err(format!("input {name:?}: \"data\" has more elements than its shape"));
        }
        match v {
            Value::Array(items) => stack.extend(items.iter().rev()),
            scalar => push_element(name, datatype, scalar, out)?,
        }
    }
    Ok(())
}

fn push_element(name: &str, datatype: Datatype, v: &Value, out: &mut Vec<u8>) -> Result<(), ProtocolError> {
    let bad = |what: &str| err(format!("input {name:?} ({datatype}): element {v} is not {what}"));
    macro_rules! int {
        ($t:ty) => {{
            let x = match v {
                Value::Number(n) => n
                    .as_i64()
                    .and_then(|x| <$t>::try_from(x).ok())
                    .or_else(|| n.as_u64().and_then(|x| <$t>::try_from(x).ok())),
                _ => None,
            };
            match x {
                Some(x) => out.extend_from_slice(&x.to_le_bytes()),
                None => return bad(concat!("an integer in the range of ", stringify!($t))),
            }
        }};
    }
    match datatype {
        Datatype::Bool => match v {
            Value::Bool(b) => out.push(u8::from(*b)),
            _ => return bad("true or false"),
        },
        Datatype::U8 => int!(u8),
        Datatype::U16 => int!(u16),
        Datatype::U32 => int!(u32),
        Datatype::U64 => int!(u64),
        Datatype::I8 => int!(i8),
        Datatype::I16 => int!(i16),
        Datatype::I32 => int!(i32),
        Datatype::I64 => int!(i64),
        Datatype::F16 | Datatype::F32 | Datatype::F64 | Datatype::Bf16 => {
            let Some(x) = v.as_f64() else { return bad("a number") };
            match datatype {
                Datatype::F16 => out.extend_from_slice(&half::f16::from_f64(x).to_le_bytes()),
                Datatype::Bf16 => out.extend_from_slice(&half::bf16::from_f64(x).to_le_bytes()),
                Datatype::F32 => out.extend_from_slice(&(x as f32).to_le_bytes()),
                _ => out.extend_from_slice(&x.to_le_bytes()),
            }
        }
    }
    Ok(())
}

/// Decodes an inference request: `body` whole, of which the first `json_length` bytes are the
/// JSON header when the request used the binary tensor data extension
/// (`Inference-Header-Content-Length`), the rest the inputs' bytes.
///
/// ```
/// use pjrt_serve::protocol::decode_infer_request;
/// let body = br#"{"inputs": [{"name": "x", "datatype": "FP32", "shape": [2], "data": [1, 2.5]}]}"#;
/// let request = decode_infer_request(body, None).unwrap();
/// assert_eq!(request.inputs[0].data, [1f32.to_le_bytes(), 2.5f32.to_le_bytes()].concat());
///
/// // The same with the binary extension: 8 bytes after the JSON header.
/// let header = br#"{"inputs": [{"name": "x", "datatype": "FP32", "shape": [2], "parameters": {"binary_data_size": 8}}]}"#;
/// let mut body = header.to_vec();
/// body.extend([1f32.to_le_bytes(), 2.5f32.to_le_bytes()].concat());
/// assert_eq!(decode_infer_request(&body, Some(header.len())).unwrap(), request);
///
/// let short = br#"{"inputs": [{"name": "x", "datatype": "FP32", "shape": [3], "data": [1, 2]}]}"#;
/// let e = decode_infer_request(short, None).unwrap_err();
/// assert!(e.to_string().contains("\"x\""), "{e}");
/// ```
pub fn decode_infer_request(body: &[u8], json_length: Option<usize>) -> Result<InferRequest, ProtocolError> {
    let (header, mut binary) = match json_length {
        Some(n) if n > body.len() => {
            return err(format!("Inference-Header-Content-Length is {n}, but the body has only {} bytes", body.len()))
        }
        Some(n) => body.split_at(n),
        None => (body, &[][..]),
    };
    let json: Value =
        serde_json::from_slice(header).map_err(|e| ProtocolError(format!("the request is not JSON: {e}")))?;
    let Value::Object(request) = json else { return err("the request must be a JSON object") };
    refuse_unknown_parameters(&request, &["binary_data_output"], "the request")?;
    let id = match request.get("id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return err("\"id\" must be a string"),
    };
    let binary_data_output = bool_parameter(&request, "binary_data_output", "the request")?.unwrap_or(false);
    let Some(Value::Array(inputs_json)) = request.get("inputs") else {
        return err("\"inputs\" must be a list of tensors");
    };
    let mut inputs = Vec::with_capacity(inputs_json.len().min(64));
    for (i, input) in inputs_json.iter().enumerate() {
        let Value::Object(input) = input else { return err(format!("input {i} must be an object")) };
        let name = string_field(input, "name", &format!("input {i}"))?.to_string();
        let what = format!("input {name:?}");
        refuse_unknown_parameters(input, &["binary_data_size"], &what)?;
        let datatype: Datatype =
            string_field(input, "datatype", &what)?.parse().map_err(|e| ProtocolError(format!("{what}: {e}")))?;
        let shape = match input.get("shape") {
            Some(Value::Array(dims)) => {
                let mut shape = Vec::with_capacity(dims.len().min(64));
                for d in dims {
                    match d.as_i64() {
                        Some(d) => shape.push(d),
                        None => return err(format!("{what}: \"shape\" must be a list of integers")),
                    }
                }
                shape
            }
            _ => return err(format!("{what}: \"shape\" must be a list of integers")),
        };
        let (count, bytes) = byte_len(&name, datatype, &shape)?;
        let data = match (size_parameter(input, "binary_data_size", &what)?, input.get("data")) {
            (Some(_), Some(_)) => return err(format!("{what}: has both \"data\" and binary_data_size")),
            (Some(size), None) => {
                if size != bytes {
                    return err(format!(
                        "{what}: binary_data_size is {size} bytes, but {count} {datatype} elements of shape {shape:?} are {bytes}"
                    ));
                }
                if size > binary.len() {
                    return err(format!(
                        "{what}: binary_data_size is {size} bytes, but only {} are left",
                        binary.len()
                    ));
                }
                let (mine, rest) = binary.split_at(size);
                binary = rest;
                mine.to_vec()
            }
            (None, Some(data)) => {
                // Never more than the shape's bytes, however the JSON is nested.
                let mut out = Vec::with_capacity(bytes.min(header.len().saturating_mul(8)));
                json_elements(&name, datatype, data, &mut out, bytes)?;
                if out.len() != bytes {
                    return err(format!(
                        "{what}: \"data\" has {} elements, but shape {shape:?} has {count}",
                        out.len() / datatype.size()
                    ));
                }
                out
            }
            (None, None) => return err(format!("{what}: has neither \"data\" nor binary_data_size")),
        };
        check_bools(&name, datatype, &data)?;
        inputs.push(InputTensor { name, datatype, shape, data });
    }
    if !binary.is_empty() {
        return err(format!("{} bytes of binary data follow the inputs that no input claims", binary.len()));
    }
    let outputs = match request.get("outputs") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(list)) => {
            let mut outputs = Vec::with_capacity(list.len().min(64));
            for (i, output) in list.iter().enumerate() {
                let Value::Object(output) = output else { return err(format!("output {i} must be an object")) };
                let name = string_field(output, "name", &format!("output {i}"))?.to_string();
                let what = format!("output {name:?}");
                refuse_unknown_parameters(output, &["binary_data"], &what)?;
                let binary = bool_parameter(output, "binary_data", &what)?.unwrap_or(binary_data_output);
                outputs.push(RequestedOutput { name, binary });
            }
            outputs
        }
        Some(_) => return err("\"outputs\" must be a list"),
    };
    Ok(InferRequest { id, inputs, outputs, binary_data_output })
}

/// One output tensor of a response.
#[derive(Clone, Debug, PartialEq)]
pub struct OutputTensor {
    /// The output's name.
    pub name: String,
    /// Its datatype.
    pub datatype: Datatype,
    /// Its shape.
    pub shape: Vec<i64>,
    /// Its elements, little-endian, row-major (the shape's count times the datatype's size).
    pub data: Vec<u8>,
    /// Sent as binary data after the JSON header, else as JSON numbers.
    pub binary: bool,
}

/// Writes the elements of `data` as a JSON list. Floats are written in their shortest exact
/// form; NaN and infinities as `NaN`, `Infinity`, `-Infinity` (what Python's `json` and
/// Triton write and read), as JSON has no numbers for them.
fn write_elements(out: &mut String, datatype: Datatype, data: &[u8]) {
    use std::fmt::Write as _;
    fn float(out: &mut String, x: f64, text: impl std::fmt::Debug) {
        if x.is_nan() {
            out.push_str("NaN");
        } else if x.is_infinite() {
            out.push_str(if x > 0.0 { "Infinity" } else { "-Infinity" });
        } else {
            let _ = write!(out, "{text:?}");
        }
    }
    out.push('[');
    for (i, e) in data.chunks_exact(datatype.size()).enumerate() {
        if i > 0 {
            out.push(',');
        }
        let b = |n: usize| -> [u8; 8] {
            let mut a = [0u8; 8];
            a[..n].copy_from_slice(&e[..n]);
            a
        };
        let _ = match datatype {
            Datatype::Bool => write!(out, "{}", e[0] != 0),
            Datatype::U8 => write!(out, "{}", e[0]),
            Datatype::I8 => write!(out, "{}", e[0] as i8),
            Datatype::U16 => write!(out, "{}", u16::from_le_bytes([e[0], e[1]])),
            Datatype::I16 => write!(out, "{}", i16::from_le_bytes([e[0], e[1]])),
            Datatype::U32 => write!(out, "{}", u32::from_le_bytes([e[0], e[1], e[2], e[3]])),
            Datatype::I32 => write!(out, "{}", i32::from_le_bytes([e[0], e[1], e[2], e[3]])),
            Datatype::U64 => write!(out, "{}", u64::from_le_bytes(b(8))),
            Datatype::I64 => write!(out, "{}", i64::from_le_bytes(b(8))),
            Datatype::F16 => {
                let x = half::f16::from_le_bytes([e[0], e[1]]);
                float(out, x.to_f64(), x.to_f32());
                Ok(())
            }
            Datatype::Bf16 => {
                let x = half::bf16::from_le_bytes([e[0], e[1]]);
                float(out, x.to_f64(), x.to_f32());
                Ok(())
            }
            Datatype::F32 => {
                let x = f32::from_le_bytes([e[0], e[1], e[2], e[3]]);
                float(out, f64::from(x), x);
                Ok(())
            }
            Datatype::F64 => {
                let x = f64::from_le_bytes(b(8));
                float(out, x, x);
                Ok(())
            }
        };
    }
    out.push(']');
}

/// A response body: the JSON (and, when any output is binary, the header's length, for the
/// `Inference-Header-Content-Length` header, then the binary outputs' bytes after it).
///
/// ```
/// use pjrt_serve::protocol::{encode_infer_response, OutputTensor};
/// use pjrt_serve::Datatype;
/// let y = OutputTensor { name: "y".into(), datatype: Datatype::F32, shape: vec![2], data: [1.5f32.to_le_bytes(), f32::NAN.to_le_bytes()].concat(), binary: false };
/// let (body, header_length) = encode_infer_response("mlp", "1", None, &[y]);
/// assert_eq!(header_length, None);
/// assert_eq!(std::str::from_utf8(&body).unwrap(), r#"{"model_name":"mlp","model_version":"1","outputs":[{"name":"y","datatype":"FP32","shape":[2],"data":[1.5,NaN]}]}"#);
/// ```
pub fn encode_infer_response(
    model: &str,
    version: &str,
    id: Option<&str>,
    outputs: &[OutputTensor],
) -> (Vec<u8>, Option<usize>) {
    let quote = |s: &str| Value::String(s.to_string()).to_string();
    let mut json = format!("{{\"model_name\":{},\"model_version\":{}", quote(model), quote(version));
    if let Some(id) = id {
        json.push_str(&format!(",\"id\":{}", quote(id)));
    }
    json.push_str(",\"outputs\":[");
    for (i, o) in outputs.iter().enumerate() {
        if i > 0 {
            json.push(',');
        }
        let shape: Vec<String> = o.shape.iter().map(i64::to_string).collect();
        json.push_str(&format!(
            "{{\"name\":{},\"datatype\":\"{}\",\"shape\":[{}]",
            quote(&o.name),
            o.datatype,
            shape.join(",")
        ));
        if o.binary {
            json.push_str(&format!(",\"parameters\":{{\"binary_data_size\":{}}}}}", o.data.len()));
        } else {
            json.push_str(",\"data\":");
            write_elements(&mut json, o.datatype, &o.data);
            json.push('}');
        }
    }
    json.push_str("]}");
    if !outputs.iter().any(|o| o.binary) {
        return (json.into_bytes(), None);
    }
    let header_length = json.len();
    let mut body = json.into_bytes();
    for o in outputs.iter().filter(|o| o.binary) {
        body.extend_from_slice(&o.data);
    }
    (body, Some(header_length))
}

/// An error body: `{"error": message}`.
///
/// ```
/// assert_eq!(pjrt_serve::protocol::error_body("no \"m\""), br#"{"error":"no \"m\""}"#);
/// ```
pub fn error_body(message: &str) -> Vec<u8> {
    serde_json::json!({ "error": message }).to_string().into_bytes()
}
