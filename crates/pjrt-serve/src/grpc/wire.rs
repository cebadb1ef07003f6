//! `ModelInferRequest` read from its encoded bytes by hand, bounded before anything is decoded:
//! the envelope (names, shapes, parameters' names) is read into small bounded fields and each
//! input's contents stay slices of the message until the input has been checked against the
//! model. Raw contents, and typed ones that already are the tensor's little-endian bytes
//! (packed FP32 and FP64, say), then stay slices of the message as the tensor's data, up to the
//! upload to the device (not copied: the message's bytes stay taken of the budget meanwhile);
//! other typed contents are decoded straight into the tensor's little-endian bytes, taken of
//! the budget first, no more than its shape's. (prost would decode the whole message first:
//! `int64_contents` of zeros, one byte each encoded, become eight in a `Vec<i64>`, then eight
//! more as bytes; `raw_input_contents` would be copied into a `Vec<u8>` each.)

use bytes::Bytes;

use crate::datatype::Datatype;
use crate::error::ServeError;
use crate::protocol::{
    shared_memory_ref, shared_size, Check, HeldInput, HeldRequest, InputHeader, RequestedOutput, SharedMemoryRef,
    MAX_RANK, MAX_TENSORS, SHM_BYTE_SIZE, SHM_OFFSET, SHM_REGION,
};

fn bad(message: impl Into<String>) -> ServeError {
    ServeError::BadRequest(message.into())
}

/// A field's value as encoded.
enum Value {
    Varint(u64),
    Fixed64([u8; 8]),
    Fixed32([u8; 4]),
    /// Length-delimited: where it is in the buffer.
    Bytes(std::ops::Range<usize>),
}

/// The fields of an encoded message, in order.
struct Fields<'a> {
    buf: &'a [u8],
    at: usize,
    what: &'static str,
}

impl<'a> Fields<'a> {
    fn new(buf: &'a [u8], what: &'static str) -> Fields<'a> {
        Fields { buf, at: 0, what }
    }

    fn varint(&mut self) -> Result<u64, ServeError> {
        let mut value = 0u64;
        for i in 0..10 {
            let Some(&byte) = self.buf.get(self.at) else {
                return Err(bad(format!("{} is cut short (a varint)", self.what)));
            };
            self.at += 1;
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte < 0x80 {
                return Ok(value);
            }
        }
        Err(bad(format!("{} has a varint longer than 10 bytes", self.what)))
    }

    fn take(&mut self, n: usize) -> Result<std::ops::Range<usize>, ServeError> {
        let end = self.at.checked_add(n).filter(|&end| end <= self.buf.len());
        let Some(end) = end else { return Err(bad(format!("{} is cut short", self.what))) };
        let range = self.at..end;
        self.at = end;
        Ok(range)
    }
}

impl Iterator for Fields<'_> {
    type Item = Result<(u64, Value), ServeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.at >= self.buf.len() {
            return None;
        }
        let field = (|| {
            let key = self.varint()?;
            let number = key >> 3;
            if number == 0 {
                return Err(bad(format!("{} has a field numbered 0", self.what)));
            }
            let value = match key & 7 {
                0 => Value::Varint(self.varint()?),
                1 => {
                    let range = self.take(8)?;
                    Value::Fixed64(self.buf[range].try_into().expect("8 bytes"))
                }
                2 => {
                    let len = usize::try_from(self.varint()?).unwrap_or(usize::MAX);
                    Value::Bytes(self.take(len)?)
                }
                5 => {
                    let range = self.take(4)?;
                    Value::Fixed32(self.buf[range].try_into().expect("4 bytes"))
                }
                wire => {
                    return Err(bad(format!("{} has wire type {wire}, which proto3 messages do not use", self.what)))
                }
            };
            Ok((number, value))
        })();
        if field.is_err() {
            // (No more fields after an error.)
            self.at = self.buf.len();
        }
        Some(field)
    }
}

fn text(buf: &[u8], value: Value, field: &str) -> Result<String, ServeError> {
    match value {
        Value::Bytes(range) => String::from_utf8(buf[range].to_vec()).map_err(|_| bad(format!("{field} is not UTF-8"))),
        _ => Err(bad(format!("{field} must be a string"))),
    }
}

/// A parameter's value (`InferParameter`'s `oneof`).
#[derive(Debug, Clone, PartialEq)]
enum Parameter {
    Bool(bool),
    Int(i64),
    Uint(u64),
    Double(f64),
    Text(String),
    /// No value set.
    Unset,
}

/// The request parameter Triton's C++ client sets on every gRPC request.
const EMPTY_FINAL_RESPONSE: &str = "triton_enable_empty_final_response";

/// The most parameters a request, an input or an output may carry (as over HTTP).
const MAX_PARAMETERS: usize = 64;

/// A parameter map entry (`map<string, InferParameter>`): its name and value, appended to
/// `into` (at most [`MAX_PARAMETERS`]).
fn read_parameter(buf: &[u8], value: Value, what: &str, into: &mut Vec<(String, Parameter)>) -> Result<(), ServeError> {
    let Value::Bytes(range) = value else { return Err(bad(format!("{what}: parameters must be a map"))) };
    if into.len() == MAX_PARAMETERS {
        return Err(bad(format!("{what}: more than {MAX_PARAMETERS} parameters")));
    }
    let entry = &buf[range];
    let (mut key, mut parameter) = (String::new(), Parameter::Unset);
    for field in Fields::new(entry, "a parameter") {
        match field? {
            (1, value) => key = text(entry, value, "a parameter's name")?,
            (2, Value::Bytes(range)) => {
                let message = &entry[range];
                for field in Fields::new(message, "a parameter's value") {
                    parameter = match field? {
                        (1, Value::Varint(v)) => Parameter::Bool(v != 0),
                        (2, Value::Varint(v)) => Parameter::Int(v as i64),
                        (3, value) => Parameter::Text(text(message, value, "a parameter's string_param")?),
                        (4, Value::Fixed64(b)) => Parameter::Double(f64::from_le_bytes(b)),
                        (5, Value::Varint(v)) => Parameter::Uint(v),
                        (n, _) => {
                            return Err(bad(format!(
                            "{what}: parameter {key:?} has a value of field {n}, which InferParameter does not have"
                        )))
                        }
                    };
                }
            }
            (2, _) => return Err(bad(format!("{what}: a parameter's value must be an InferParameter"))),
            _ => {}
        }
    }
    into.push((key, parameter));
    Ok(())
}

/// Refuses the parameters of `parameters` but those `known` (by name), as HTTP does.
fn refuse_unknown(parameters: &[(String, Parameter)], known: &[&str], what: &str) -> Result<(), ServeError> {
    match parameters.iter().find(|(key, _)| !known.contains(&key.as_str())) {
        None => Ok(()),
        Some((key, _)) if known.is_empty() => Err(bad(format!("{what}: parameter {key:?} is not supported here"))),
        Some((key, _)) => {
            Err(bad(format!("{what}: parameter {key:?} is not supported here (known: {})", known.join(", "))))
        }
    }
}

/// A parameter `name` that must be a boolean, if given.
fn bool_parameter(parameters: &[(String, Parameter)], name: &str, what: &str) -> Result<Option<bool>, ServeError> {
    match parameters.iter().find(|(key, _)| key == name) {
        None => Ok(None),
        Some((_, Parameter::Bool(b))) => Ok(Some(*b)),
        Some((_, other)) => Err(bad(format!("{what}: parameter {name:?} must be a bool_param, not {other:?}"))),
    }
}

/// `binary_data_output` (the request's) or `binary_data` (an output's): over gRPC every output
/// is answered in `raw_output_contents` (as Triton does), so `true` is what happens anyway and
/// `false` is refused rather than ignored.
fn check_binary_output(parameters: &[(String, Parameter)], name: &str, what: &str) -> Result<(), ServeError> {
    if bool_parameter(parameters, name, what)? == Some(false) {
        return Err(bad(format!(
            "{what}: {name} false asks for outputs in typed contents, but over gRPC they are always in \
             raw_output_contents (as Triton answers): leave it out or set it true"
        )));
    }
    Ok(())
}

/// A tensor's place in shared memory, when its parameters give one: `shared_memory_region` a
/// `string_param`, `shared_memory_byte_size` and `shared_memory_offset` `int64_param`s (or
/// `uint64_param`s), 0 or more.
fn shared_memory(parameters: &[(String, Parameter)], what: &str) -> Result<Option<SharedMemoryRef>, ServeError> {
    let find = |name: &str| parameters.iter().find(|(key, _)| key == name).map(|(_, value)| value);
    let region = match find(SHM_REGION) {
        None => None,
        Some(Parameter::Text(region)) => Some(region.clone()),
        Some(other) => {
            return Err(bad(format!("{what}: parameter {SHM_REGION:?} must be a string_param, not {other:?}")))
        }
    };
    let size = |name: &str| match find(name) {
        None => Ok(None),
        Some(Parameter::Int(n)) if *n >= 0 => Ok(usize::try_from(*n).ok()),
        Some(Parameter::Uint(n)) => Ok(usize::try_from(*n).ok()),
        Some(other) => {
            Err(bad(format!("{what}: parameter {name:?} must be a byte count (int64_param), not {other:?}")))
        }
    };
    Ok(shared_memory_ref(region, size(SHM_OFFSET)?, size(SHM_BYTE_SIZE)?, what)?)
}

/// One input of a request as read: its contents not decoded yet.
pub(crate) struct InputCall {
    name: String,
    datatype: String,
    shape: Vec<i64>,
    parameters: Vec<(String, Parameter)>,
    contents: Option<Bytes>,
}

/// A `ModelInferRequest` as read.
pub(crate) struct InferCall {
    pub model_name: String,
    pub model_version: String,
    id: String,
    parameters: Vec<(String, Parameter)>,
    inputs: Vec<InputCall>,
    outputs: Vec<(String, Vec<(String, Parameter)>)>,
    raw: Vec<Bytes>,
}

/// Reads the envelope of an encoded `ModelInferRequest`: every list bounded as it is read,
/// contents left as slices of `message`.
pub(crate) fn read_infer_call(message: &Bytes) -> Result<InferCall, ServeError> {
    let buf = &message[..];
    let mut call = InferCall {
        model_name: String::new(),
        model_version: String::new(),
        id: String::new(),
        parameters: Vec::new(),
        inputs: Vec::new(),
        outputs: Vec::new(),
        raw: Vec::new(),
    };
    let too_many = |what: &str| bad(format!("the request has more than {MAX_TENSORS} {what}"));
    for field in Fields::new(buf, "the request") {
        let (number, value) = field?;
        match number {
            1 => call.model_name = text(buf, value, "model_name")?,
            2 => call.model_version = text(buf, value, "model_version")?,
            3 => call.id = text(buf, value, "id")?,
            4 => read_parameter(buf, value, "the request", &mut call.parameters)?,
            5 => {
                if call.inputs.len() == MAX_TENSORS {
                    return Err(too_many("inputs"));
                }
                let Value::Bytes(range) = value else { return Err(bad("inputs must be messages")) };
                call.inputs.push(read_input(&message.slice(range))?);
            }
            6 => {
                if call.outputs.len() == MAX_TENSORS {
                    return Err(too_many("outputs"));
                }
                let Value::Bytes(range) = value else { return Err(bad("outputs must be messages")) };
                let output = &buf[range];
                let (mut name, mut parameters) = (String::new(), Vec::new());
                for field in Fields::new(output, "an output") {
                    match field? {
                        (1, value) => name = text(output, value, "an output's name")?,
                        (2, value) => read_parameter(output, value, "an output", &mut parameters)?,
                        _ => {}
                    }
                }
                call.outputs.push((name, parameters));
            }
            7 => {
                if call.raw.len() == MAX_TENSORS {
                    return Err(too_many("raw_input_contents"));
                }
                let Value::Bytes(range) = value else { return Err(bad("raw_input_contents must be bytes")) };
                call.raw.push(message.slice(range));
            }
            _ => {}
        }
    }
    Ok(call)
}

fn read_input(message: &Bytes) -> Result<InputCall, ServeError> {
    let buf = &message[..];
    let mut input = InputCall {
        name: String::new(),
        datatype: String::new(),
        shape: Vec::new(),
        parameters: Vec::new(),
        contents: None,
    };
    let push_dim = |shape: &mut Vec<i64>, d: u64| {
        if shape.len() == MAX_RANK {
            return Err(bad(format!("an input's shape has more than {MAX_RANK} dimensions")));
        }
        shape.push(d as i64);
        Ok(())
    };
    for field in Fields::new(buf, "an input") {
        let (number, value) = field?;
        match (number, value) {
            (1, value) => input.name = text(buf, value, "an input's name")?,
            (2, value) => input.datatype = text(buf, value, "an input's datatype")?,
            (3, Value::Varint(d)) => push_dim(&mut input.shape, d)?,
            (3, Value::Bytes(range)) => {
                let mut dims = Fields::new(&buf[range], "an input's shape");
                while dims.at < dims.buf.len() {
                    let d = dims.varint()?;
                    push_dim(&mut input.shape, d)?;
                }
            }
            (3, _) => return Err(bad("an input's shape must be integers")),
            (4, value) => read_parameter(buf, value, "an input", &mut input.parameters)?,
            (5, Value::Bytes(range)) => input.contents = Some(message.slice(range)),
            (5, _) => return Err(bad("an input's contents must be a message")),
            _ => {}
        }
    }
    Ok(input)
}

/// The typed field of `InferTensorContents` each datatype's elements are in.
fn contents_field(datatype: Datatype) -> Option<u64> {
    Some(match datatype {
        Datatype::Bool => 1,
        Datatype::I8 | Datatype::I16 | Datatype::I32 => 2,
        Datatype::I64 => 3,
        Datatype::U8 | Datatype::U16 | Datatype::U32 => 4,
        Datatype::U64 => 5,
        Datatype::F32 => 6,
        Datatype::F64 => 7,
        Datatype::F16 | Datatype::Bf16 => return None,
    })
}

const CONTENTS_FIELDS: [&str; 8] = [
    "bool_contents",
    "int_contents",
    "int64_contents",
    "uint_contents",
    "uint64_contents",
    "fp32_contents",
    "fp64_contents",
    "bytes_contents",
];

/// Typed contents decoded into `count` elements' little-endian bytes (`bytes` of them), packed
/// or not; refused as soon as there is one element too many.
fn typed_contents(
    what: &str,
    datatype: Datatype,
    contents: &[u8],
    count: usize,
    bytes: usize,
) -> Result<Vec<u8>, ServeError> {
    let Some(wanted) = contents_field(datatype) else {
        return Err(bad(format!("{what}: {datatype} has no typed contents: send raw_input_contents")));
    };
    let mut out = Vec::with_capacity(bytes);
    let mut n = 0usize;
    let mut push = |element: Element| -> Result<(), ServeError> {
        n += 1;
        if n > count {
            return Err(bad(format!("{what}: its contents have more than the {count} elements of its shape")));
        }
        let range = |v: i64| bad(format!("{what} ({datatype}): {v} is out of range"));
        match (datatype, element) {
            (Datatype::Bool, Element::Varint(v)) => out.push(u8::from(v != 0)),
            // int32 and uint32 take the low 32 bits of the varint, as protobuf does.
            (Datatype::I8, Element::Varint(v)) => {
                let v = i64::from(v as i32);
                out.extend(i8::try_from(v).map_err(|_| range(v))?.to_le_bytes())
            }
            (Datatype::I16, Element::Varint(v)) => {
                let v = i64::from(v as i32);
                out.extend(i16::try_from(v).map_err(|_| range(v))?.to_le_bytes())
            }
            (Datatype::I32, Element::Varint(v)) => out.extend((v as i32).to_le_bytes()),
            (Datatype::I64, Element::Varint(v)) => out.extend((v as i64).to_le_bytes()),
            (Datatype::U8, Element::Varint(v)) => {
                let v = i64::from(v as u32);
                out.extend(u8::try_from(v).map_err(|_| range(v))?.to_le_bytes())
            }
            (Datatype::U16, Element::Varint(v)) => {
                let v = i64::from(v as u32);
                out.extend(u16::try_from(v).map_err(|_| range(v))?.to_le_bytes())
            }
            (Datatype::U32, Element::Varint(v)) => out.extend((v as u32).to_le_bytes()),
            (Datatype::U64, Element::Varint(v)) => out.extend(v.to_le_bytes()),
            (Datatype::F32, Element::Fixed32(b)) => out.extend(b),
            (Datatype::F64, Element::Fixed64(b)) => out.extend(b),
            _ => return Err(bad(format!("{what}: {} has the wrong wire type", CONTENTS_FIELDS[wanted as usize - 1]))),
        }
        Ok(())
    };
    for field in Fields::new(contents, "an input's contents") {
        let (number, value) = field?;
        if number != wanted {
            let empty = matches!(&value, Value::Bytes(r) if r.is_empty());
            match CONTENTS_FIELDS.get(number as usize - 1) {
                Some(name) if !empty => {
                    return Err(bad(format!(
                        "{what}: its contents are in {name}, but {datatype}'s are in {}",
                        CONTENTS_FIELDS[wanted as usize - 1]
                    )))
                }
                _ => continue,
            }
        }
        match value {
            Value::Varint(v) => push(Element::Varint(v))?,
            Value::Fixed32(b) => push(Element::Fixed32(b))?,
            Value::Fixed64(b) => push(Element::Fixed64(b))?,
            // Packed: the elements one after another.
            Value::Bytes(range) => {
                let packed = &contents[range];
                match datatype {
                    Datatype::F32 | Datatype::F64 => {
                        let size = datatype.size();
                        if packed.len() % size != 0 {
                            return Err(bad(format!(
                                "{what}: packed contents of {} bytes are not whole elements",
                                packed.len()
                            )));
                        }
                        for chunk in packed.chunks_exact(size) {
                            push(if size == 4 {
                                Element::Fixed32(chunk.try_into().expect("4 bytes"))
                            } else {
                                Element::Fixed64(chunk.try_into().expect("8 bytes"))
                            })?;
                        }
                    }
                    _ => {
                        let mut varints = Fields::new(packed, "an input's packed contents");
                        while varints.at < varints.buf.len() {
                            let v = varints.varint()?;
                            push(Element::Varint(v))?;
                        }
                    }
                }
            }
        }
    }
    if out.len() != bytes {
        return Err(bad(format!(
            "{what}: {} elements of contents, but its shape has {count}",
            out.len() / datatype.size()
        )));
    }
    Ok(out)
}

#[derive(Clone, Copy)]
enum Element {
    Varint(u64),
    Fixed32([u8; 4]),
    Fixed64([u8; 8]),
}

/// Typed contents that already are the tensor's little-endian bytes, as a slice of the message
/// (not copied): the packed elements of FP32 (`fixed32`) and FP64 (`fixed64`), and of BOOL,
/// INT8 and UINT8 where each packed varint is one byte of its value (0 or 1 for BOOL, below 128
/// for the integers), in one field of exactly the tensor's `bytes`. Anything else (elements not
/// packed, split over several fields, another field given, a malformed field) is `None`, for
/// [`typed_contents`] to decode or refuse.
fn in_place(datatype: Datatype, contents: &Bytes, bytes: usize) -> Option<Bytes> {
    let wanted = contents_field(datatype)?;
    let mut found = None;
    for field in Fields::new(contents, "an input's contents") {
        match field.ok()? {
            (_, Value::Bytes(range)) if range.is_empty() => {}
            (number, Value::Bytes(range)) if number == wanted && found.is_none() => found = Some(range),
            _ => return None,
        }
    }
    let range = found.filter(|r| r.len() == bytes && bytes > 0)?;
    let packed = &contents[range.clone()];
    let exact = match datatype {
        Datatype::F32 | Datatype::F64 => true,
        Datatype::Bool => packed.iter().all(|&b| b <= 1),
        Datatype::I8 | Datatype::U8 => packed.iter().all(|&b| b < 0x80),
        _ => false,
    };
    exact.then(|| contents.slice(range))
}

/// A read request as the server runs it (the same checks as the HTTP one's) and its id, each
/// input given to `check` (declared name, datatype, shape, bytes, and whether its data stays in
/// the message) before its contents are decoded. Raw contents, and typed ones that already are
/// the tensor's bytes ([`in_place`]), become slices of the message, not copies; other typed
/// contents are decoded into the tensor's bytes, no more than its shape's.
pub(crate) fn infer_request(call: InferCall, check: &mut Check<'_>) -> Result<(String, HeldRequest), ServeError> {
    refuse_unknown(&call.parameters, &["binary_data_output", EMPTY_FINAL_RESPONSE], "the request")?;
    check_binary_output(&call.parameters, "binary_data_output", "the request")?;
    // Triton's C++ client (perf_analyzer's) sets it on every request, true or false: it asks
    // decoupled models' streams for an empty last response, and a unary call has none either way.
    bool_parameter(&call.parameters, EMPTY_FINAL_RESPONSE, "the request")?;
    let shared = call
        .inputs
        .iter()
        .map(|input| shared_memory(&input.parameters, &format!("input {:?}", input.name)))
        .collect::<Result<Vec<_>, _>>()?;
    // (Inputs in shared memory have no raw contents: tritonclient sends none for them.)
    let not_shared = shared.iter().filter(|s| s.is_none()).count();
    let raw = !call.raw.is_empty();
    if raw && call.raw.len() != not_shared {
        return Err(bad(format!(
            "raw_input_contents has {} entries for {not_shared} inputs not in shared memory: give one per input, in \
             order",
            call.raw.len(),
        )));
    }
    let mut raw_contents = call.raw.into_iter();
    let mut inputs = Vec::with_capacity(call.inputs.len());
    for (input, shared) in call.inputs.into_iter().zip(shared) {
        let what = format!("input {:?}", input.name);
        // KServe's SDK sets `binary_data_size` on every input it sends raw: checked against
        // the raw contents, as the HTTP binary extension does.
        refuse_unknown(&input.parameters, &["binary_data_size", SHM_REGION, SHM_OFFSET, SHM_BYTE_SIZE], &what)?;
        if let Some(shared) = shared {
            let datatype: Datatype = input.datatype.parse().map_err(|e| bad(format!("{what}: {e}")))?;
            let (count, bytes) = crate::protocol::byte_len(&input.name, datatype, &input.shape)?;
            if input.contents.is_some() || input.parameters.iter().any(|(key, _)| key == "binary_data_size") {
                return Err(bad(format!("{what}: unexpected 'contents' or binary_data_size when using shared memory")));
            }
            if shared.byte_size != bytes {
                return Err(shared_size(&what, shared.byte_size, count, datatype, &input.shape, bytes).into());
            }
            let header = InputHeader {
                name: &input.name,
                datatype,
                shape: &input.shape,
                bytes,
                in_body: false,
                shared_memory: Some(&shared),
            };
            let data = crate::protocol::read_shared_input(&header, check)?;
            inputs.push(HeldInput { name: input.name, datatype, shape: input.shape, data });
            continue;
        }
        let binary_data_size = match input.parameters.iter().find(|(key, _)| key == "binary_data_size") {
            None => None,
            Some((_, Parameter::Int(n))) if *n >= 0 => Some(*n as u64),
            Some((_, Parameter::Uint(n))) => Some(*n),
            Some((_, other)) => {
                return Err(bad(format!("{what}: binary_data_size must be a byte count, not {other:?}")))
            }
        };
        let datatype: Datatype = input.datatype.parse().map_err(|e| bad(format!("{what}: {e}")))?;
        let (count, bytes) = crate::protocol::byte_len(&input.name, datatype, &input.shape)?;
        let raw = raw_contents.next();
        match (binary_data_size, &raw) {
            (Some(_), None) => {
                return Err(bad(format!(
                    "{what}: binary_data_size describes raw_input_contents, but the input has typed contents"
                )))
            }
            (Some(size), Some(data)) if size != data.len() as u64 => {
                return Err(bad(format!(
                    "{what}: binary_data_size is {size} bytes, but its raw_input_contents are {}",
                    data.len()
                )))
            }
            _ => {}
        }
        match (&raw, &input.contents) {
            (Some(_), Some(_)) => return Err(bad(format!("{what}: has contents and raw_input_contents"))),
            (None, None) => return Err(bad(format!("{what}: has no contents"))),
            (Some(data), None) if data.len() != bytes => {
                return Err(bad(format!(
                    "{what}: {} bytes of data, but {count} {datatype} elements of shape {:?} are {bytes}",
                    data.len(),
                    input.shape
                )))
            }
            (None, Some(_)) if contents_field(datatype).is_none() => {
                return Err(bad(format!("{what}: {datatype} has no typed contents: send raw_input_contents")))
            }
            _ => {}
        }
        // The message's own bytes where they are the tensor's: kept, not copied.
        let kept = match (raw, &input.contents) {
            (Some(data), _) => Some(data),
            (None, Some(contents)) => in_place(datatype, contents, bytes),
            (None, None) => None,
        };
        let header = InputHeader {
            name: &input.name,
            datatype,
            shape: &input.shape,
            bytes,
            in_body: kept.is_some(),
            shared_memory: None,
        };
        check(&header)?;
        let data = match (kept, input.contents) {
            (Some(data), _) => data,
            (None, Some(contents)) => typed_contents(&what, datatype, &contents, count, bytes)?.into(),
            (None, None) => unreachable!("refused above"),
        };
        crate::protocol::check_bools(&input.name, datatype, &data)?;
        inputs.push(HeldInput { name: input.name, datatype, shape: input.shape, data });
    }
    let mut outputs = Vec::with_capacity(call.outputs.len());
    for (name, parameters) in call.outputs {
        let what = format!("output {name:?}");
        refuse_unknown(&parameters, &["binary_data", SHM_REGION, SHM_OFFSET, SHM_BYTE_SIZE], &what)?;
        let shared_memory = shared_memory(&parameters, &what)?;
        if shared_memory.is_none() {
            check_binary_output(&parameters, "binary_data", &what)?;
        }
        outputs.push(RequestedOutput { name, binary: shared_memory.is_none(), shared_memory });
    }
    Ok((call.id, HeldRequest { inputs, outputs, binary_data_output: true }))
}
