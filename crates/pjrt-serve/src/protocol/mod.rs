//! The Open Inference Protocol's inference request and response bodies over HTTP: JSON, and
//! Triton's binary tensor data extension (a JSON header of `Inference-Header-Content-Length`
//! bytes, then each tensor's raw little-endian bytes in order).
//!
//! Decoding trusts nothing: the JSON is read by a typed streaming deserializer (never a tree
//! of values), its lists bounded as they are read, and each input's `data` decoded straight
//! into the tensor's bytes, no more than its shape and datatype declare; so a hostile body is a
//! [`ProtocolError`] naming what is wrong, never a panic, and allocates no more than its
//! tensors' declared bytes (the server takes those of its budget before decoding).

use crate::datatype::Datatype;

mod decode;
mod encode;

pub use decode::decode_infer_request;
pub(crate) use decode::{
    decode_checked, decode_header, shared_memory_ref, shared_size, short_binary, short_header, unclaimed, Header,
    SHM_BYTE_SIZE, SHM_OFFSET, SHM_REGION,
};
pub(crate) use encode::infer_response_parts;
pub use encode::{encode_infer_response, error_body};

pub use crate::error::ProtocolError;

/// The protocol extensions this server has, as `GET /v2` and gRPC `ServerMetadata` list them
/// (Triton's names; `perf_analyzer` reads server statistics only where `statistics` is listed).
pub(crate) const EXTENSIONS: [&str; 5] =
    ["binary_tensor_data", "model_repository", "model_configuration", "statistics", "system_shared_memory"];

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

/// An input on its way to the device, as the server holds it: its bytes shared, not owned (a
/// slice of the request's gRPC message where they arrived as the tensor's bytes, not copied
/// out of it; the decoded bytes otherwise).
#[derive(Debug)]
pub(crate) struct HeldInput {
    pub name: String,
    pub datatype: Datatype,
    pub shape: Vec<i64>,
    /// Its elements, little-endian, row-major: the shape's count times the datatype's size.
    pub data: bytes::Bytes,
}

/// An inference request as the server runs it (its id answered by the front end): the inputs
/// as [`HeldInput`]s, the outputs it asks for.
#[derive(Debug)]
pub(crate) struct HeldRequest {
    pub inputs: Vec<HeldInput>,
    pub outputs: Vec<RequestedOutput>,
    pub binary_data_output: bool,
}

impl From<InputTensor> for HeldInput {
    fn from(t: InputTensor) -> HeldInput {
        // (A `Vec` becomes `Bytes` without a copy.)
        HeldInput { name: t.name, datatype: t.datatype, shape: t.shape, data: t.data.into() }
    }
}

impl From<InferRequest> for HeldRequest {
    fn from(r: InferRequest) -> HeldRequest {
        HeldRequest {
            inputs: r.inputs.into_iter().map(HeldInput::from).collect(),
            outputs: r.outputs,
            binary_data_output: r.binary_data_output,
        }
    }
}

/// An output a request asks for, and whether it wants it as binary data or written into a
/// shared memory region.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestedOutput {
    /// The output's name.
    pub name: String,
    /// `parameters.binary_data` (else the request's `binary_data_output`).
    pub binary: bool,
    /// Where to write it, when the request asks for it in a registered system shared memory
    /// region (then the answer carries no data for it).
    pub shared_memory: Option<SharedMemoryRef>,
}

/// A tensor's place in a registered system shared memory region, as Triton's shared-memory
/// extension gives it: the parameters `shared_memory_region` (the name it was registered
/// under), `shared_memory_offset` (optional, default 0) and `shared_memory_byte_size`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedMemoryRef {
    /// The region's registered name.
    pub region: String,
    /// Where the tensor starts, in bytes from the region's start.
    pub offset: usize,
    /// How many bytes of the region the tensor has.
    pub byte_size: usize,
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

/// Most inputs, outputs and parameters a request may list, and dimensions a shape may have:
/// what a request lists is bounded before it is kept.
pub(crate) const MAX_TENSORS: usize = 1024;
pub(crate) const MAX_RANK: usize = 64;

/// An input as a request declares it, before its data is decoded: what the server checks (and
/// takes of its budget) first.
pub(crate) struct InputHeader<'a> {
    pub name: &'a str,
    pub datatype: Datatype,
    pub shape: &'a [i64],
    /// Its data's bytes, from its shape and datatype.
    pub bytes: usize,
    /// Its data stays a slice of the request's body (a gRPC message's raw contents, or typed
    /// ones that already are the tensor's bytes): those bytes were taken of the budget as the
    /// body arrived, and the body's share stays taken while the request holds them, so none
    /// are taken again for the tensor.
    pub in_body: bool,
    /// Where its data is, when it is in a registered shared memory region: the check reads it
    /// from there (its bytes taken of the budget) and returns it.
    pub shared_memory: Option<&'a SharedMemoryRef>,
}

/// The check each input a request declares passes before its data is decoded (the model's
/// checks, the budget's bytes): it returns the input's data when it read it itself (an input in
/// shared memory), else `None`.
pub(crate) type Check<'c> = dyn FnMut(&InputHeader<'_>) -> Result<Option<bytes::Bytes>, crate::error::ServeError> + 'c;

/// Reads an input's data from its shared memory region through `check` (which takes its bytes of
/// the budget), and checks what came back: exactly the declared byte count, and BOOL bytes 0 or 1.
/// Both front ends read shared memory inputs this way.
pub(crate) fn read_shared_input(
    header: &InputHeader<'_>,
    check: &mut Check<'_>,
) -> Result<bytes::Bytes, crate::error::ServeError> {
    let what = format!("input {:?}", header.name);
    let Some(data) = check(header)? else {
        return Err(crate::error::ServeError::Internal(format!("{what}: its shared memory was not read")));
    };
    if data.len() != header.bytes {
        return Err(crate::error::ServeError::Internal(format!(
            "{what}: {} bytes read of shared memory, not {}",
            data.len(),
            header.bytes
        )));
    }
    check_bools(header.name, header.datatype, &data)?;
    Ok(data)
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
