//! A request's inputs matched to the model's, the outputs it asks for, and its batch key.

use bytes::Bytes;
use pjrt_client::{ElementType, HostArray, HostSource};

use super::ServedModel;
use crate::error::ServeError;
use crate::protocol::{HeldInput, InputTensor, OutputTensor, RequestedOutput};

/// A request's input matched to the model's (its element type, dimensions and byte count
/// checked): a [`HostArray`] whose bytes are shared, not owned, so that an input that arrived
/// as its tensor's bytes reaches the upload without a copy ([`HostSource::bytes`] reads them
/// in place).
#[derive(Clone, Debug)]
pub(crate) struct RequestArray {
    element_type: ElementType,
    dims: Vec<i64>,
    data: Bytes,
}

impl RequestArray {
    /// `data` as an array of `element_type` and `dims`: the checks of [`HostArray::new`].
    pub fn new(element_type: ElementType, dims: Vec<i64>, data: Bytes) -> Result<RequestArray, String> {
        let count = dims.iter().try_fold(1usize, |n, &d| n.checked_mul(usize::try_from(d).ok()?));
        let expected = count
            .and_then(|c| element_type.host_bytes(c))
            .ok_or_else(|| format!("an array of {element_type} and dimensions {dims:?} has no host size"))?;
        if data.len() != expected {
            return Err(format!(
                "an array of {element_type} and dimensions {dims:?} takes {expected} bytes, not {}",
                data.len()
            ));
        }
        element_type.check_host_values(&data).map_err(|e| e.to_string())?;
        Ok(RequestArray { element_type, dims, data })
    }

    pub fn element_type(&self) -> ElementType {
        self.element_type
    }

    pub fn dims(&self) -> &[i64] {
        &self.dims
    }

    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// The upload's source: the bytes borrowed, read during the upload.
    pub fn source(&self) -> HostSource<'_> {
        HostSource::bytes(&self.data, self.element_type, &self.dims)
    }
}

impl From<HostArray> for RequestArray {
    fn from(array: HostArray) -> RequestArray {
        let (element_type, dims, data) = array.into_parts();
        RequestArray { element_type, dims, data: data.into() }
    }
}

impl From<RequestArray> for HostArray {
    fn from(array: RequestArray) -> HostArray {
        // (Checked as a RequestArray; `Vec::from` takes the bytes back without a copy where
        // they are a `Vec`'s alone.)
        HostArray::new(array.element_type, array.dims, Vec::from(array.data)).expect("checked as a RequestArray")
    }
}

impl ServedModel {
    /// For a batched model: a request's rows (its batched inputs' common first dimension) and
    /// its batch key (the rest of each batched input's shape, the whole of each other input:
    /// requests batch together only where their keys agree).
    pub(crate) fn batch_rows(&self, inputs: &[RequestArray]) -> Result<(usize, Vec<BatchKeyPart>), ServeError> {
        let max = self.config.batching.as_ref().map_or(0, |b| b.max_batch_size);
        let bad = |m: String| ServeError::BadRequest(format!("model {:?}: {m}", self.config.name));
        let rows: Vec<i64> = inputs
            .iter()
            .zip(&self.batched)
            .filter(|(_, &b)| b)
            .map(|(a, _)| a.dims().first().copied().unwrap_or(0))
            .collect();
        if rows.windows(2).any(|w| w[0] != w[1]) {
            return Err(bad(format!("its batched inputs share their first dimension, but the request gives {rows:?}")));
        }
        let rows = rows.first().copied().unwrap_or(0) as usize;
        if rows == 0 || rows > max {
            return Err(bad(format!("a request gives 1 to {max} rows (max_batch_size), not {rows}")));
        }
        let key = inputs
            .iter()
            .zip(&self.batched)
            .map(|(a, &batched)| {
                if batched {
                    BatchKeyPart::Rows(a.dims()[1..].to_vec())
                } else {
                    BatchKeyPart::Whole(a.dims().to_vec(), hash_bytes(a.data()))
                }
            })
            .collect();
        Ok((rows, key))
    }

    /// Matches a request's inputs to the model's, by name, checking each one's datatype and
    /// shape: the arrays in the model's order.
    pub fn arrange(&self, given: Vec<InputTensor>) -> Result<Vec<HostArray>, ServeError> {
        let arrays = self.arrange_held(given.into_iter().map(HeldInput::from).collect())?;
        Ok(arrays.into_iter().map(HostArray::from).collect())
    }

    /// [`ServedModel::arrange`] for inputs as the server holds them: their bytes not copied.
    pub(crate) fn arrange_held(&self, mut given: Vec<HeldInput>) -> Result<Vec<RequestArray>, ServeError> {
        let bad = |m: String| ServeError::BadRequest(format!("model {:?}: {m}", self.config.name));
        if let Some(extra) = given.iter().find(|t| !self.inputs.iter().any(|s| s.name == t.name)) {
            let names: Vec<&str> = self.inputs.iter().map(|s| s.name.as_str()).collect();
            return Err(bad(format!("it has no input {:?} (its inputs: {})", extra.name, names.join(", "))));
        }
        let mut arrays = Vec::with_capacity(self.inputs.len());
        for (i, spec) in self.inputs.iter().enumerate() {
            let matching = given.iter().filter(|t| t.name == spec.name).count();
            if matching != 1 {
                return Err(bad(format!(
                    "input {:?} ({} {:?}) is given {matching} times, not once",
                    spec.name, spec.datatype, spec.shape
                )));
            }
            let at = given.iter().position(|t| t.name == spec.name).expect("counted above");
            let tensor = given.swap_remove(at);
            if tensor.datatype != spec.datatype {
                return Err(bad(format!(
                    "input {:?} is {}, but the model takes {}",
                    spec.name, tensor.datatype, spec.datatype
                )));
            }
            let fits = tensor.shape.len() == spec.shape.len()
                && tensor.shape.iter().zip(&spec.shape).all(|(&d, &want)| want < 0 || d == want);
            if !fits {
                return Err(bad(format!(
                    "input {:?} has shape {:?}, but the model takes {:?} (-1: any size)",
                    spec.name, tensor.shape, spec.shape
                )));
            }
            self.program
                .check_input(self.request_inputs[i], spec.datatype.element_type(), &tensor.shape)
                .map_err(|e| bad(format!("input {:?}: {e}", spec.name)))?;
            let array = RequestArray::new(spec.datatype.element_type(), tensor.shape, tensor.data)
                .map_err(|e| bad(format!("input {:?}: {e}", spec.name)))?;
            arrays.push(array);
        }
        Ok(arrays)
    }

    /// Checks that every output asked for exists.
    pub fn check_wanted(&self, wanted: &[RequestedOutput]) -> Result<(), ServeError> {
        for w in wanted {
            if !self.outputs.iter().any(|o| o.name == w.name) {
                let names: Vec<&str> = self.outputs.iter().map(|o| o.name.as_str()).collect();
                return Err(ServeError::BadRequest(format!(
                    "model {:?} has no output {:?} (its outputs: {})",
                    self.config.name,
                    w.name,
                    names.join(", ")
                )));
            }
        }
        Ok(())
    }
}

/// One input's part of a batch key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum BatchKeyPart {
    /// A batched input: its shape after the rows.
    Rows(Vec<i64>),
    /// An input every request of a batch gives alike: its shape and a hash of its bytes (the
    /// bytes themselves are compared only when the keys agree: [`same_batch`]).
    Whole(Vec<i64>, u64),
}

/// A hash of an input's bytes, for its batch key (not copying them).
fn hash_bytes(data: &[u8]) -> u64 {
    use std::hash::Hasher as _;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    hasher.write(data);
    hasher.finish()
}

/// Whether two requests (their keys and inputs, in the model's order) may run in one batch:
/// their keys agree, and so do the bytes of each input every request of a batch gives alike
/// (hashes that agree by chance do not batch different inputs together).
pub(crate) fn same_batch(
    key: &[BatchKeyPart],
    inputs: &[RequestArray],
    other_key: &[BatchKeyPart],
    other: &[RequestArray],
) -> bool {
    key == other_key
        && key.iter().zip(inputs.iter().zip(other)).all(|(part, (a, b))| match part {
            BatchKeyPart::Rows(_) => true,
            BatchKeyPart::Whole(..) => a.data() == b.data(),
        })
}

/// The outputs `wanted` of `all` (every one when `wanted` is empty), each binary as it asks,
/// else as `binary_default`.
pub(crate) fn select_outputs(
    all: Vec<OutputTensor>,
    wanted: &[RequestedOutput],
    binary_default: bool,
) -> Vec<OutputTensor> {
    all.into_iter()
        .filter_map(|mut o| {
            o.binary =
                if wanted.is_empty() { binary_default } else { wanted.iter().find(|w| w.name == o.name)?.binary };
            Some(o)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_batch_together_only_where_their_whole_inputs_agree_byte_for_byte() {
        let array = |x: u8| RequestArray::new(ElementType::U8, vec![2], vec![x, 1].into()).unwrap();
        let key = |x: u8| vec![BatchKeyPart::Rows(vec![3]), BatchKeyPart::Whole(vec![2], hash_bytes(&[x, 1]))];
        let (a, b) = (vec![array(0), array(7)], vec![array(9), array(7)]);
        assert!(same_batch(&key(7), &a, &key(7), &b), "the batched input (rows) may differ");
        assert!(!same_batch(&key(7), &a, &key(8), &[array(0), array(8)]));
        // Keys that agree by chance (here: made to) do not batch different bytes together.
        assert!(!same_batch(&key(7), &a, &key(7), &[array(0), array(8)]));
    }
}
