//! A model being served: a `jax.export` model on one device of a client, its weights uploaded
//! once, its executables kept per input signature: those compiled at load through the compile
//! cache when there is one, those a shape-polymorphic model compiles for requests' new shapes
//! apart and in memory only (bounded: [`crate::config::ShapeLimits`]).

use std::path::PathBuf;

use pjrt_client::{Buffer, Client};
use pjrt_formats::jax_export::Dim;

use crate::config::{BatchingConfig, ModelConfig};
use crate::datatype::Datatype;
use crate::error::ServeError;

mod load;
mod program;
mod request;
mod run;
mod warmup;

pub(crate) use request::{same_batch, select_outputs, BatchKeyPart, RequestArray};

/// One tensor of a model's signature, as the protocol's metadata gives it: `-1` for a
/// symbolic dimension.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorSpec {
    /// Its name (`input0`, ... unless the model's config names it).
    pub name: String,
    /// Its datatype.
    pub datatype: Datatype,
    /// Its shape, `-1` where the dimension is symbolic.
    pub shape: Vec<i64>,
}

/// The model on one device: its executables and its weights there.
struct Replica {
    /// The executables compiled at load (through the compile cache).
    runner: program::Executables,
    /// Those compiled for requests' shapes (kept in memory only).
    requested: program::Executables,
    /// The weights, uploaded to the device once (in the order of `ServedModel::weight_of`'s
    /// indices).
    weight_buffers: Vec<Buffer>,
}

/// A loaded model.
pub struct ServedModel {
    config: ModelConfig,
    /// What it was read from: a `jax.export` model, an MLIR program, an AOT artifact.
    program: std::sync::Arc<program::ModelProgram>,
    /// One per device it serves on (the client's first `replicas` addressable devices).
    replicas: Vec<Replica>,
    client: Client,
    /// For each input of the model, the weight that feeds it (an index into the weights), or
    /// `None` where a request gives it: bound by name ([`pjrt_formats::binding`]).
    weight_of: Vec<Option<usize>>,
    /// The model inputs a request gives, in order (those no weight feeds).
    request_inputs: Vec<usize>,
    /// The weights' shapes, for the executable lookup.
    weight_shapes: Vec<(pjrt_client::ElementType, Vec<i64>)>,
    inputs: Vec<TensorSpec>,
    outputs: Vec<TensorSpec>,
    /// For a batched model: which request inputs lead with the batch dimension.
    batched: Vec<bool>,
    /// The signatures compiled, and what requests may have compiled.
    signatures: crate::shapes::Signatures,
    /// How long loading took (read, weights upload, first compile of a static model, warm-up).
    load_ms: f64,
    /// Its warm-up at load (`None`: off).
    warmed: Option<warmup::Warmed>,
}

fn dims_of(dims: &[Dim]) -> Vec<i64> {
    dims.iter().map(|d| if let Dim::Fixed(n) = d { *n } else { -1 }).collect()
}

fn load_error(config: &ModelConfig, source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> ServeError {
    ServeError::load(config.name.clone(), source)
}

impl ServedModel {
    /// The model's name.
    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// The model's version.
    pub fn version(&self) -> &str {
        &self.config.version
    }

    /// The inputs a request gives (the weights file's are not among them).
    pub fn inputs(&self) -> &[TensorSpec] {
        &self.inputs
    }

    /// The outputs.
    pub fn outputs(&self) -> &[TensorSpec] {
        &self.outputs
    }

    /// How its requests are batched, if they are.
    pub fn batching(&self) -> Option<&BatchingConfig> {
        self.config.batching.as_ref()
    }

    /// For a batched model: which request inputs lead with the batch dimension (empty for a
    /// model that is not batched).
    pub(crate) fn batched_inputs(&self) -> &[bool] {
        &self.batched
    }

    /// How many executables are compiled (one per input signature seen).
    pub fn executables(&self) -> usize {
        self.replicas.iter().map(|r| r.runner.cached() + r.requested.cached()).sum()
    }

    /// What it has compiled, and may compile for requests.
    pub(crate) fn signatures(&self) -> &crate::shapes::Signatures {
        &self.signatures
    }

    /// How long loading took, in milliseconds: reading, the weights' upload and, for a model
    /// of static shapes, its compile (or its load from the compile cache).
    pub fn load_ms(&self) -> f64 {
        self.load_ms
    }

    /// Where the program was read from.
    pub fn program_path(&self) -> &PathBuf {
        &self.config.program
    }

    /// How many devices it is served on.
    pub fn replicas(&self) -> usize {
        self.replicas.len()
    }
}

impl std::fmt::Debug for ServedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServedModel")
            .field("name", &self.config.name)
            .field("version", &self.config.version)
            .field("inputs", &self.inputs)
            .field("outputs", &self.outputs)
            .finish_non_exhaustive()
    }
}
