//! Inference response bodies written: JSON, and binary tensor data after the JSON header; error
//! bodies.

use serde_json::Value;

use super::{OutputTensor, SharedMemoryRef, SHM_BYTE_SIZE, SHM_OFFSET, SHM_REGION};
use crate::datatype::Datatype;

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
    let json = response_json(model, version, id, outputs, &[]);
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

/// [`encode_infer_response`] as the parts of a body, sent one after the other: the JSON, then
/// each binary output's bytes as they were downloaded (moved, not copied into one body); and
/// the JSON's length when any output is binary. `placed`: where each output was written in
/// shared memory, if it was (then it has no data in the answer, but those parameters).
pub(crate) fn infer_response_parts(
    model: &str,
    version: &str,
    id: Option<&str>,
    outputs: Vec<OutputTensor>,
    placed: &[Option<SharedMemoryRef>],
) -> (Vec<Vec<u8>>, Option<usize>) {
    let json = response_json(model, version, id, &outputs, placed);
    let header_length = outputs.iter().any(|o| o.binary).then_some(json.len());
    let mut parts = vec![json.into_bytes()];
    parts.extend(outputs.into_iter().filter(|o| o.binary).map(|o| o.data));
    (parts, header_length)
}

/// A response's JSON: the model, the id, each output with its data (or, a binary one, its
/// `binary_data_size`; one in shared memory, where it was written).
fn response_json(
    model: &str,
    version: &str,
    id: Option<&str>,
    outputs: &[OutputTensor],
    placed: &[Option<SharedMemoryRef>],
) -> String {
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
        if let Some(Some(place)) = placed.get(i) {
            json.push_str(&format!(
                ",\"parameters\":{{\"{SHM_REGION}\":{},\"{SHM_OFFSET}\":{},\"{SHM_BYTE_SIZE}\":{}}}}}",
                quote(&place.region),
                place.offset,
                place.byte_size
            ));
        } else if o.binary {
            json.push_str(&format!(",\"parameters\":{{\"binary_data_size\":{}}}}}", o.data.len()));
        } else {
            json.push_str(",\"data\":");
            write_elements(&mut json, o.datatype, &o.data);
            json.push('}');
        }
    }
    json.push_str("]}");
    json
}

/// An error body: `{"error": message}`.
///
/// ```
/// assert_eq!(pjrt_serve::protocol::error_body("no \"m\""), br#"{"error":"no \"m\""}"#);
/// ```
pub fn error_body(message: &str) -> Vec<u8> {
    serde_json::json!({ "error": message }).to_string().into_bytes()
}
