//! Inference request bodies decoded: the JSON read by a typed streaming deserializer, each
//! input's `data` straight into its bytes, binary tensor data split after the JSON header.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::{
    byte_len, check_bools, err, Check, InferRequest, InputHeader, InputTensor, ProtocolError, RequestedOutput,
    SharedMemoryRef, MAX_RANK, MAX_TENSORS,
};
use crate::datatype::Datatype;
use crate::error::ServeError;

const MAX_PARAMETERS: usize = 64;

/// A parameter's value: a boolean, number or string (as the protocol's parameters are).
#[derive(Debug, Clone, PartialEq)]
enum Parameter {
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(String),
}

impl<'de> Deserialize<'de> for Parameter {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Parameter, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Parameter;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a parameter: a boolean, number or string")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Parameter, E> {
                Ok(Parameter::Bool(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Parameter, E> {
                Ok(Parameter::Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Parameter, E> {
                Ok(Parameter::UInt(v))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Parameter, E> {
                Ok(Parameter::Float(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Parameter, E> {
                Ok(Parameter::Str(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

/// What a bounded list holds: its most items, and its name for messages.
trait Limit {
    const MAX: usize;
    const WHAT: &'static str;
}

struct InputList;
impl Limit for InputList {
    const MAX: usize = MAX_TENSORS;
    const WHAT: &'static str = "\"inputs\": a list of at most 1024 tensors";
}
struct OutputList;
impl Limit for OutputList {
    const MAX: usize = MAX_TENSORS;
    const WHAT: &'static str = "\"outputs\": a list of at most 1024 outputs";
}
struct ShapeList;
impl Limit for ShapeList {
    const MAX: usize = MAX_RANK;
    const WHAT: &'static str = "\"shape\": a list of at most 64 integers";
}

/// A list of at most `L::MAX` items: more is an error as soon as the one too many is read.
struct Bounded<T, L>(Vec<T>, std::marker::PhantomData<L>);

impl<'de, T: Deserialize<'de>, L: Limit> Deserialize<'de> for Bounded<T, L> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T, L>(std::marker::PhantomData<(T, L)>);
        impl<'de, T: Deserialize<'de>, L: Limit> Visitor<'de> for V<T, L> {
            type Value = Bounded<T, L>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(L::WHAT)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    if items.len() == L::MAX {
                        return Err(de::Error::custom(format!("more than {} items: {}", L::MAX, L::WHAT)));
                    }
                    items.push(item);
                }
                Ok(Bounded(items, std::marker::PhantomData))
            }
        }
        d.deserialize_seq(V(std::marker::PhantomData))
    }
}

/// A `parameters` object: at most [`MAX_PARAMETERS`] of them, each a boolean, number or string.
#[derive(Debug, Default)]
struct Parameters(Vec<(String, Parameter)>);

impl<'de> Deserialize<'de> for Parameters {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Parameters, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Parameters;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("\"parameters\": an object")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Parameters, E> {
                Ok(Parameters::default())
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Parameters, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = map.next_entry::<String, Parameter>()? {
                    if items.len() == MAX_PARAMETERS {
                        return Err(de::Error::custom(format!("more than {MAX_PARAMETERS} parameters")));
                    }
                    items.push(item);
                }
                Ok(Parameters(items))
            }
        }
        d.deserialize_any(V)
    }
}

impl Parameters {
    fn get(&self, name: &str) -> Option<&Parameter> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }

    /// Parameters this server does not implement are refused, not ignored: a client that asks
    /// for `classification` or CUDA shared memory would otherwise get something other than it
    /// asked for.
    fn refuse_unknown(&self, known: &[&str], what: &str) -> Result<(), ProtocolError> {
        match self.0.iter().find(|(k, _)| !known.contains(&k.as_str())) {
            Some((name, _)) => {
                err(format!("{what}: parameter \"{name}\" is not supported here (known: {})", known.join(", ")))
            }
            None => Ok(()),
        }
    }

    fn bool(&self, name: &str, what: &str) -> Result<Option<bool>, ProtocolError> {
        match self.get(name) {
            None => Ok(None),
            Some(Parameter::Bool(b)) => Ok(Some(*b)),
            Some(_) => err(format!("{what}: parameter \"{name}\" must be true or false")),
        }
    }

    fn size(&self, name: &str, what: &str) -> Result<Option<usize>, ProtocolError> {
        let n = match self.get(name) {
            None => return Ok(None),
            Some(Parameter::Int(n)) => u64::try_from(*n).ok(),
            Some(Parameter::UInt(n)) => Some(*n),
            Some(_) => None,
        };
        match n.and_then(|n| usize::try_from(n).ok()) {
            Some(n) => Ok(Some(n)),
            None => err(format!("{what}: parameter \"{name}\" must be a byte count (0 or more)")),
        }
    }

    /// The tensor's place in shared memory, when its parameters give one (Triton's
    /// `shared_memory_region`, `shared_memory_byte_size`, optional `shared_memory_offset`).
    fn shared_memory(&self, what: &str) -> Result<Option<SharedMemoryRef>, ProtocolError> {
        let region = match self.get(SHM_REGION) {
            None => None,
            Some(Parameter::Str(region)) => Some(region.clone()),
            Some(_) => return err(format!("{what}: parameter \"{SHM_REGION}\" must be a string")),
        };
        let offset = self.size(SHM_OFFSET, what)?;
        let byte_size = self.size(SHM_BYTE_SIZE, what)?;
        shared_memory_ref(region, offset, byte_size, what)
    }
}

/// The shared-memory extension's parameters.
pub(crate) const SHM_REGION: &str = "shared_memory_region";
pub(crate) const SHM_OFFSET: &str = "shared_memory_offset";
pub(crate) const SHM_BYTE_SIZE: &str = "shared_memory_byte_size";

/// A tensor's place in shared memory from its three parameters, as either front end reads
/// them: the region and its byte size both, or neither (Triton's rule and words).
pub(crate) fn shared_memory_ref(
    region: Option<String>,
    offset: Option<usize>,
    byte_size: Option<usize>,
    what: &str,
) -> Result<Option<SharedMemoryRef>, ProtocolError> {
    match (region, byte_size) {
        (Some(region), Some(byte_size)) => Ok(Some(SharedMemoryRef { region, offset: offset.unwrap_or(0), byte_size })),
        (Some(_), None) => {
            err(format!("{what}: '{SHM_BYTE_SIZE}' must be specified along with '{SHM_REGION}' parameter"))
        }
        (None, Some(_)) => {
            err(format!("{what}: '{SHM_BYTE_SIZE}' can not be specified without '{SHM_REGION}' parameter"))
        }
        (None, None) if offset.is_some() => {
            err(format!("{what}: '{SHM_OFFSET}' can not be specified without '{SHM_REGION}' parameter"))
        }
        (None, None) => Ok(None),
    }
}

/// The error of an input in shared memory whose byte size is not its shape's.
pub(crate) fn shared_size(
    what: &str,
    given: usize,
    count: usize,
    datatype: Datatype,
    shape: &[i64],
    bytes: usize,
) -> ProtocolError {
    ProtocolError(format!(
        "{what}: {SHM_BYTE_SIZE} is {given} bytes, but {count} {datatype} elements of shape {shape:?} are {bytes}"
    ))
}

/// The JSON of an inference request, as read: each input's `data` is left as its text in the
/// body (borrowed), decoded only once the input's shape and datatype are checked.
#[derive(Deserialize)]
struct RequestJson<'a> {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    parameters: Option<Parameters>,
    #[serde(default, borrow)]
    inputs: Option<Bounded<InputJson<'a>, InputList>>,
    #[serde(default)]
    outputs: Option<Bounded<OutputJson, OutputList>>,
}

#[derive(Deserialize)]
struct InputJson<'a> {
    name: String,
    datatype: String,
    shape: Bounded<i64, ShapeList>,
    #[serde(default)]
    parameters: Option<Parameters>,
    #[serde(default, borrow)]
    data: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct OutputJson {
    name: String,
    #[serde(default)]
    parameters: Option<Parameters>,
}

/// Decodes the JSON `data` of an input (flat, or nested in row-major order) straight into
/// its little-endian bytes: no more than `limit` of them, whatever the text holds.
struct Elements<'o> {
    datatype: Datatype,
    out: &'o mut Vec<u8>,
    limit: usize,
}

impl Elements<'_> {
    fn push<E: de::Error>(self, v: Scalar<'_>) -> Result<(), E> {
        let datatype = self.datatype;
        if self.out.len() + datatype.size() > self.limit {
            return Err(E::custom("\"data\" has more elements than its shape"));
        }
        let bad = |what: &str| Err(E::custom(format!("element {v} is not {what}")));
        macro_rules! int {
            ($t:ty) => {{
                let x = match v {
                    Scalar::Int(x) => <$t>::try_from(x).ok(),
                    Scalar::UInt(x) => <$t>::try_from(x).ok(),
                    _ => None,
                };
                match x {
                    Some(x) => self.out.extend_from_slice(&x.to_le_bytes()),
                    None => return bad(concat!("an integer in the range of ", stringify!($t))),
                }
            }};
        }
        match datatype {
            Datatype::Bool => match v {
                Scalar::Bool(b) => self.out.push(u8::from(b)),
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
                let x = match v {
                    Scalar::Int(x) => x as f64,
                    Scalar::UInt(x) => x as f64,
                    Scalar::Float(x) => x,
                    _ => return bad("a number"),
                };
                match datatype {
                    Datatype::F16 => self.out.extend_from_slice(&half::f16::from_f64(x).to_le_bytes()),
                    Datatype::Bf16 => self.out.extend_from_slice(&half::bf16::from_f64(x).to_le_bytes()),
                    Datatype::F32 => self.out.extend_from_slice(&(x as f32).to_le_bytes()),
                    _ => self.out.extend_from_slice(&x.to_le_bytes()),
                }
            }
        }
        Ok(())
    }
}

/// A JSON scalar of `data`.
#[derive(Clone, Copy)]
enum Scalar<'s> {
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Other(&'s str),
}

impl fmt::Display for Scalar<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Bool(b) => write!(f, "{b}"),
            Scalar::Int(x) => write!(f, "{x}"),
            Scalar::UInt(x) => write!(f, "{x}"),
            Scalar::Float(x) => write!(f, "{x}"),
            Scalar::Other(s) => f.write_str(s),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Elements<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Elements<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} elements", self.datatype)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Elements { datatype, out, limit } = self;
        while seq.next_element_seed(Elements { datatype, out: &mut *out, limit })?.is_some() {}
        Ok(())
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.push(Scalar::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.push(Scalar::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.push(Scalar::UInt(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        self.push(Scalar::Float(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.push(Scalar::Other(&format!("{v:?}")))
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.push(Scalar::Other("null"))
    }
    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        self.push(Scalar::Other("{...}"))
    }
}

/// Counts the scalars of a JSON `data` (for the message of one that has too few), allocating
/// nothing.
struct Count<'c>(&'c mut usize);

impl<'de> DeserializeSeed<'de> for Count<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Count<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("elements")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Count(&mut *self.0))?.is_some() {}
        Ok(())
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        *self.0 += 1;
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        *self.0 += 1;
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        *self.0 += 1;
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        *self.0 += 1;
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        *self.0 += 1;
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        *self.0 += 1;
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_entry::<de::IgnoredAny, de::IgnoredAny>()?.is_some() {}
        *self.0 += 1;
        Ok(())
    }
}

/// `data`'s elements as bytes: `bytes` of them, decoded from the text as it is read.
fn json_data(
    raw: &RawValue,
    what: &str,
    datatype: Datatype,
    shape: &[i64],
    count: usize,
    bytes: usize,
) -> Result<Vec<u8>, ProtocolError> {
    let text = raw.get();
    let fewer = |n: usize| err(format!("{what}: \"data\" has {n} elements, but shape {shape:?} has {count}"));
    // Each element takes a byte and a comma at least: a shape the text cannot fill is
    // refused (counting, allocating nothing) before anything is allocated for it.
    if count > text.len() / 2 + 1 {
        let mut n = 0;
        let mut reader = serde_json::Deserializer::from_str(text);
        Count(&mut n).deserialize(&mut reader).map_err(|e| ProtocolError(format!("{what}: {e}")))?;
        return fewer(n);
    }
    let mut out = Vec::with_capacity(bytes);
    let mut reader = serde_json::Deserializer::from_str(text);
    Elements { datatype, out: &mut out, limit: bytes }
        .deserialize(&mut reader)
        .and_then(|()| reader.end())
        .map_err(|e| ProtocolError(format!("{what} ({datatype}): {e}")))?;
    if out.len() != bytes {
        return fewer(out.len() / datatype.size());
    }
    Ok(out)
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
    decode_checked(body, json_length, &mut |input| match input.shared_memory {
        None => Ok(None),
        Some(_) => Err(ServeError::BadRequest(format!(
            "input {:?} is in shared memory: only a server reads it from there",
            input.name
        ))),
    })
    .map_err(|e| ProtocolError(e.to_string()))
}

/// [`decode_infer_request`], with each input's declared name, datatype, shape and byte count
/// given to `check` before its data is decoded (the model's checks, the budget's bytes).
pub(crate) fn decode_checked(
    body: &[u8],
    json_length: Option<usize>,
    check: &mut Check<'_>,
) -> Result<InferRequest, ServeError> {
    let (header, binary) = match json_length {
        Some(n) if n > body.len() => return Err(short_header(n, body.len())),
        Some(n) => body.split_at(n),
        None => (body, &[][..]),
    };
    let header = decode_header(header, Some(binary.len()), check)?;
    let mut request = header.request;
    let mut rest = binary;
    for (i, bytes) in header.binary {
        let (mine, after) = rest.split_at(bytes);
        rest = after;
        let input = &mut request.inputs[i];
        input.data = mine.to_vec();
        check_bools(&input.name, input.datatype, &input.data)?;
    }
    Ok(request)
}

/// The error of a body shorter than its JSON header's declared length.
pub(crate) fn short_header(json_length: usize, body: usize) -> ServeError {
    ServeError::Protocol(ProtocolError(format!(
        "Inference-Header-Content-Length is {json_length}, but the body has only {body} bytes"
    )))
}

/// A request decoded from its JSON header: its inputs whose bytes follow the header (binary
/// tensor data) are still empty, listed in `binary` in the order their bytes come.
pub(crate) struct Header {
    pub request: InferRequest,
    /// Each binary input's index in `request.inputs` and byte count.
    pub binary: Vec<(usize, usize)>,
}

/// Decodes a request's JSON header (the whole body without the binary extension), each input's
/// declared name, datatype, shape and byte count given to `check` before its data is decoded.
/// `binary_len`: how many bytes of binary data follow the header, when known (else they are
/// checked as they are read into the inputs).
pub(crate) fn decode_header(
    header: &[u8],
    binary_len: Option<usize>,
    check: &mut Check<'_>,
) -> Result<Header, ServeError> {
    let bad = ServeError::Protocol;
    let request: RequestJson<'_> = serde_json::from_slice(header).map_err(|e| {
        ServeError::BadRequest(match e.classify() {
            serde_json::error::Category::Data => format!("the request: {e}"),
            _ => format!("the request is not JSON: {e}"),
        })
    })?;
    let parameters = request.parameters.unwrap_or_default();
    parameters.refuse_unknown(&["binary_data_output"], "the request")?;
    let binary_data_output = parameters.bool("binary_data_output", "the request")?.unwrap_or(false);
    let Some(Bounded(inputs_json, _)) = request.inputs else {
        return Err(bad(ProtocolError("\"inputs\" must be a list of tensors".into())));
    };
    let mut inputs = Vec::with_capacity(inputs_json.len());
    let (mut left, mut binary) = (binary_len, Vec::new());
    for input in inputs_json {
        let InputJson { name, datatype, shape: Bounded(shape, _), parameters, data } = input;
        let what = format!("input {name:?}");
        let parameters = parameters.unwrap_or_default();
        parameters.refuse_unknown(&["binary_data_size", SHM_REGION, SHM_OFFSET, SHM_BYTE_SIZE], &what)?;
        let datatype: Datatype = datatype.parse().map_err(|e| bad(ProtocolError(format!("{what}: {e}"))))?;
        let (count, bytes) = byte_len(&name, datatype, &shape)?;
        let binary_size = parameters.size("binary_data_size", &what)?;
        let shared_memory = parameters.shared_memory(&what)?;
        if let Some(shared) = &shared_memory {
            if data.is_some() || binary_size.is_some() {
                return Err(bad(ProtocolError(format!(
                    "{what}: unexpected \"data\" or binary_data_size when using shared memory"
                ))));
            }
            if shared.byte_size != bytes {
                return Err(bad(shared_size(&what, shared.byte_size, count, datatype, &shape, bytes)));
            }
            let header = InputHeader {
                name: &name,
                datatype,
                shape: &shape,
                bytes,
                in_body: false,
                shared_memory: Some(shared),
            };
            let data = crate::protocol::read_shared_input(&header, check)?;
            inputs.push(InputTensor { name, datatype, shape, data: Vec::from(data) });
            continue;
        }
        match (binary_size, data) {
            (Some(_), Some(_)) => return Err(bad(ProtocolError(format!("{what}: has both \"data\" and binary_data_size")))),
            (None, None) => return Err(bad(ProtocolError(format!("{what}: has neither \"data\" nor binary_data_size")))),
            (Some(size), None) if size != bytes => {
                return Err(bad(ProtocolError(format!(
                    "{what}: binary_data_size is {size} bytes, but {count} {datatype} elements of shape {shape:?} are {bytes}"
                ))))
            }
            (Some(size), None) if left.is_some_and(|left| size > left) => {
                return Err(bad(ProtocolError(format!(
                    "{what}: binary_data_size is {size} bytes, but only {} are left",
                    left.unwrap_or(0)
                ))))
            }
            _ => {}
        }
        check(&InputHeader { name: &name, datatype, shape: &shape, bytes, in_body: false, shared_memory: None })?;
        let data = match data {
            Some(raw) => {
                let data = json_data(raw, &what, datatype, &shape, count, bytes)?;
                check_bools(&name, datatype, &data)?;
                data
            }
            None => {
                // (Read after the header: into this tensor's own bytes.)
                binary.push((inputs.len(), bytes));
                left = left.map(|left| left - bytes);
                Vec::new()
            }
        };
        inputs.push(InputTensor { name, datatype, shape, data });
    }
    if let Some(extra) = left.filter(|&left| left > 0) {
        return Err(unclaimed(extra));
    }
    let mut outputs = Vec::new();
    for OutputJson { name, parameters } in request.outputs.map(|b| b.0).unwrap_or_default() {
        let what = format!("output {name:?}");
        let parameters = parameters.unwrap_or_default();
        parameters.refuse_unknown(&["binary_data", SHM_REGION, SHM_OFFSET, SHM_BYTE_SIZE], &what)?;
        let shared_memory = parameters.shared_memory(&what)?;
        // (tritonclient sets binary_data false on an output it asks for in shared memory.)
        let binary = shared_memory.is_none() && parameters.bool("binary_data", &what)?.unwrap_or(binary_data_output);
        outputs.push(RequestedOutput { name, binary, shared_memory });
    }
    Ok(Header { request: InferRequest { id: request.id, inputs, outputs, binary_data_output }, binary })
}

/// The error of binary data past the inputs' bytes.
pub(crate) fn unclaimed(extra: usize) -> ServeError {
    ServeError::Protocol(ProtocolError(format!("{extra} bytes of binary data follow the inputs that no input claims")))
}

/// The error of binary data that ends before input `name`'s `size` bytes: `left` were.
pub(crate) fn short_binary(name: &str, size: usize, left: usize) -> ServeError {
    ServeError::Protocol(ProtocolError(format!(
        "input {name:?}: binary_data_size is {size} bytes, but only {left} are left"
    )))
}
