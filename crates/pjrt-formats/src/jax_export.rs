//! Models exported from JAX with `jax.export`: the bytes of
//! `jax.export.export(jax.jit(f))(*args).serialize()`.
//!
//! The artifact is a FlatBuffer (JAX's `serialization.fbs` schema) holding the StableHLO module
//! as MLIR bytecode plus what is needed to call it: the input and output avals (shapes and
//! dtypes), shardings, the platforms it was lowered for, which inputs the module keeps
//! (`module_kept_var_idx`), effects and version numbers. [`JaxExport`] reads it with a
//! bounds-checked reader of our own (hostile bytes give an [`Error`], never a panic), says what
//! it holds, refuses what this crate cannot run, and maps the caller's inputs (all of them, in
//! the order of [`JaxExport::in_avals`]) to the module's parameters:
//!
//! ```no_run
//! # fn main() -> pjrt_formats::Result<()> {
//! use pjrt_formats::jax_export::JaxExport;
//! use pjrt_formats::npy::NpyArray;
//! use pjrt_client::{Client, ClientOptions, Plugin};
//!
//! let model = JaxExport::read("model.jaxexport")?;
//! let plugin = Plugin::load(pjrt_plugins::resolve(None)?.load_path())?;
//! let client = Client::new(&plugin, &ClientOptions::new())?;
//! let x = NpyArray::read("x.npy".as_ref())?;
//! let outputs: Vec<NpyArray> = model.run(&client, &[x])?;
//! # Ok(()) }
//! ```

mod arguments;
mod flatbuffer;

use std::fmt;
use std::path::Path;

use flatbuffer::{FlatError, Table, Vector};

use pjrt_client::sharding::Sharding;
use pjrt_client::{Client, CompileOptions, ElementType, HostArray, LoadedExecutable, Program};

use crate::error::{Error, Result};
use crate::npy::NpyArray;

mod polymorphic;
mod runner;

pub use polymorphic::{refined_program, InputShape};
pub use runner::Runner;

/// The newest `jax.export` serialization version this reader knows (JAX 0.12's, which adds the
/// `jax_version` of the writer). JAX 0.10 and 0.11 write 3 in the header whatever their schema
/// (11 for 0.10); JAX 0.12 writes the version it really is.
pub const MAX_SERIALIZATION_VERSION: u16 = 12;

/// The longest `jax_version` string kept (JAX writes `0.12.0.1`); longer ones are cut, so a
/// hostile file cannot fill error messages.
const MAX_JAX_VERSION_LEN: usize = 64;

/// The calling-convention versions whose module signature this crate builds arguments for.
pub const SUPPORTED_CALLING_CONVENTIONS: std::ops::RangeInclusive<u16> = 9..=10;

/// Pytrees nested deeper than this are refused (JAX's own trees are a few levels deep).
const MAX_TREE_DEPTH: usize = 64;

const MLIR_BYTECODE_MAGIC: &[u8] = b"ML\xefR";

// Field slots of the schema's tables (the order of their fields in `serialization.fbs`).
mod slot {
    pub mod exported {
        pub const SERIALIZATION_VERSION: usize = 0;
        pub const FUNCTION_NAME: usize = 1;
        pub const IN_TREE: usize = 2;
        pub const IN_AVALS: usize = 3;
        pub const OUT_TREE: usize = 4;
        pub const OUT_AVALS: usize = 5;
        pub const NR_DEVICES_SHORT: usize = 6;
        pub const IN_SHARDINGS: usize = 7;
        pub const OUT_SHARDINGS: usize = 8;
        pub const PLATFORMS: usize = 9;
        pub const ORDERED_EFFECTS: usize = 10;
        pub const UNORDERED_EFFECTS: usize = 11;
        pub const MLIR_MODULE: usize = 13;
        pub const CALLING_CONVENTION_VERSION: usize = 14;
        pub const MODULE_KEPT_VAR_IDX: usize = 15;
        pub const USES_GLOBAL_CONSTANTS: usize = 16;
        pub const VJP: usize = 17;
        pub const NR_DEVICES: usize = 18;
        pub const UNIQUE_AVALS: usize = 19;
        pub const UNIQUE_ABSTRACT_MESHES: usize = 20;
        pub const UNIQUE_NAMED_SHARDINGS: usize = 21;
        pub const IN_AVALS_IDXS: usize = 22;
        pub const OUT_AVALS_IDXS: usize = 23;
        pub const IN_SHARDINGS_IDXS: usize = 24;
        pub const OUT_SHARDINGS_IDXS: usize = 25;
        pub const JAX_VERSION: usize = 26;
    }
    pub mod pytree {
        pub const KIND: usize = 0;
        pub const CHILDREN: usize = 1;
        pub const CHILDREN_NAMES: usize = 2;
        pub const CUSTOM_NAME: usize = 3;
    }
    pub mod aval {
        pub const KIND: usize = 0;
        pub const SHAPE: usize = 1;
        pub const DTYPE: usize = 2;
        pub const MEMORY_SPACE: usize = 3;
    }
    pub mod sharding {
        pub const HLO_SHARDING_PROTO: usize = 1;
        pub const NAMED_SHARDING: usize = 2;
    }
    pub mod named_sharding {
        pub const MESH: usize = 0;
        pub const SPEC: usize = 1;
        pub const MEMORY_KIND: usize = 2;
        pub const ABSTRACT_MESH_IDX: usize = 3;
    }
    pub mod mesh {
        pub const AXIS_SIZES: usize = 0;
        pub const AXIS_NAMES: usize = 1;
    }
    pub mod partition_spec {
        pub const PARTITIONS: usize = 0;
        pub const REDUCED: usize = 1;
        pub const UNREDUCED: usize = 2;
    }
    pub const ONE_AXIS_AXES: usize = 0;
    pub const EFFECT_TYPE_NAME: usize = 0;
}

/// One dimension of an aval: a number, or a symbolic expression of a shape-polymorphic export.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    /// A concrete size, as PJRT takes it: 0 or more (an artifact with a count above `i64::MAX`
    /// is refused when it is read).
    Fixed(i64),
    /// A symbolic size as JAX wrote it (`"b"`, `"2*b + 1"`).
    Symbolic(String),
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Fixed(n) => write!(f, "{n}"),
            Dim::Symbolic(s) => f.write_str(s),
        }
    }
}

/// Where an aval's array lives (JAX's `MemorySpace`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MemorySpace {
    /// Device memory (also what an artifact without the field means).
    Device,
    /// Pinned host memory.
    Host,
    /// Any memory space.
    Any,
}

/// An abstract value: the shape and dtype of one input or output.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Aval {
    /// The dimensions.
    pub dims: Vec<Dim>,
    /// JAX's name of the dtype (`float32`, `bfloat16`, `float0`, `key<fry>`, ...).
    pub dtype_name: &'static str,
    /// The PJRT element type, or `None` for dtypes without one (`float0`, PRNG keys, unknown
    /// codes from a newer JAX).
    pub element_type: Option<ElementType>,
    /// The memory space.
    pub memory_space: MemorySpace,
}

impl Aval {
    /// The dimensions when none is symbolic.
    pub fn fixed_dims(&self) -> Option<Vec<i64>> {
        self.dims.iter().map(|d| if let Dim::Fixed(n) = d { Some(*n) } else { None }).collect()
    }

    /// True if some dimension is symbolic.
    pub fn is_symbolic(&self) -> bool {
        self.dims.iter().any(|d| matches!(d, Dim::Symbolic(_)))
    }
}

impl fmt::Display for Aval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dims: Vec<String> = self.dims.iter().map(|d| d.to_string()).collect();
        write!(f, "{}[{}]", self.dtype_name, dims.join(","))
    }
}

/// A JAX mesh without devices: axis names and sizes.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AbstractMesh {
    /// The size of each axis.
    pub axis_sizes: Vec<u32>,
    /// The name of each axis.
    pub axis_names: Vec<String>,
}

/// A `jax.sharding.NamedSharding`: a mesh and, for each array dimension, the mesh axes it is
/// split over.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct NamedSharding {
    /// The mesh.
    pub mesh: AbstractMesh,
    /// For each array dimension the mesh axes it is partitioned over (empty: not split).
    pub partitions: Vec<Vec<String>>,
    /// Mesh axes the value is reduced over.
    pub reduced: Vec<String>,
    /// Mesh axes the value is an unreduced partial sum over.
    pub unreduced: Vec<String>,
    /// The memory kind, when one was given.
    pub memory_kind: Option<String>,
}

/// The sharding of one input or output.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum JaxSharding {
    /// No sharding was specified (JAX lets the compiler choose; one device: replicated).
    Unspecified,
    /// A serialized `xla.OpSharding` (artifacts from before JAX's named shardings).
    HloProto(Vec<u8>),
    /// A named sharding.
    Named(NamedSharding),
}

impl JaxSharding {
    /// True if every device holds the whole array; `None` when unspecified.
    pub fn is_replicated(&self) -> Option<bool> {
        match self {
            JaxSharding::Unspecified => None,
            JaxSharding::Named(n) => Some(n.partitions.iter().all(|p| p.is_empty()) && n.unreduced.is_empty()),
            JaxSharding::HloProto(bytes) => {
                // OpSharding.type (field 1): REPLICATED = 0, the proto default.
                #[derive(Clone, PartialEq, prost::Message)]
                struct OpShardingType {
                    #[prost(int32, tag = "1")]
                    kind: i32,
                }
                <OpShardingType as prost::Message>::decode(bytes.as_slice()).ok().map(|t| t.kind == 0)
            }
        }
    }
}

/// The structure of the inputs or outputs (JAX's `PyTreeDef`); leaves are the avals, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PyTree {
    /// One array.
    Leaf,
    /// `None`.
    None,
    /// A tuple.
    Tuple(Vec<PyTree>),
    /// A list.
    List(Vec<PyTree>),
    /// A dict with string keys, in JAX's (sorted) order.
    Dict(Vec<(String, PyTree)>),
    /// A registered custom node (namedtuple, dataclass, ...) by its serialized name.
    Custom {
        /// The name it was registered under.
        name: String,
        /// Its children.
        children: Vec<PyTree>,
    },
}

impl PyTree {
    /// The number of leaves.
    pub fn leaf_count(&self) -> usize {
        match self {
            PyTree::Leaf => 1,
            PyTree::None => 0,
            PyTree::Tuple(c) | PyTree::List(c) | PyTree::Custom { children: c, .. } => {
                c.iter().map(PyTree::leaf_count).sum()
            }
            PyTree::Dict(c) => c.iter().map(|(_, t)| t.leaf_count()).sum(),
        }
    }

    /// Each leaf's path in JAX's `keystr` style (`[0]['w1']`), in leaf order.
    pub fn leaf_paths(&self) -> Vec<String> {
        let mut paths = Vec::new();
        self.collect_paths(String::new(), &mut paths);
        paths
    }

    fn collect_paths(&self, prefix: String, paths: &mut Vec<String>) {
        match self {
            PyTree::Leaf => paths.push(prefix),
            PyTree::None => {}
            PyTree::Tuple(c) | PyTree::List(c) | PyTree::Custom { children: c, .. } => {
                for (i, child) in c.iter().enumerate() {
                    child.collect_paths(format!("{prefix}[{i}]"), paths);
                }
            }
            PyTree::Dict(c) => {
                for (key, child) in c {
                    child.collect_paths(format!("{prefix}['{key}']"), paths);
                }
            }
        }
    }
}

/// A deserialized `jax.export` artifact.
#[derive(Clone, Debug)]
pub struct JaxExport {
    serialization_version: u16,
    jax_version: Option<String>,
    function_name: String,
    platforms: Vec<String>,
    in_tree: PyTree,
    out_tree: PyTree,
    in_avals: Vec<Aval>,
    out_avals: Vec<Aval>,
    in_shardings: Vec<JaxSharding>,
    out_shardings: Vec<JaxSharding>,
    nr_devices: u32,
    ordered_effects: Vec<String>,
    unordered_effects: Vec<String>,
    module_kept_var_idx: Vec<usize>,
    calling_convention_version: u16,
    uses_global_constants: bool,
    has_vjp: bool,
    mlir_module: Vec<u8>,
    module_ir: polymorphic::ModuleCache,
}

pub use crate::error::JaxExportError;

/// Work allowed while reading one artifact, in bytes materialized: shared sub-objects in a
/// hostile buffer could otherwise make a small file expand without bound.
struct Budget {
    left: usize,
}

impl Budget {
    fn charge(&mut self, bytes: usize, at: usize) -> std::result::Result<(), FlatError> {
        let cost = bytes.saturating_add(16);
        if cost > self.left {
            return Err(FlatError {
                at,
                what: "the artifact expands to far more data than its size (shared sub-objects?)".into(),
            });
        }
        self.left -= cost;
        Ok(())
    }
}

fn corrupt(field: &str, e: FlatError) -> Error {
    JaxExportError::Corrupt { field: field.to_owned(), what: e.what, at: e.at }.into()
}

/// Adds the field name to a reader error.
trait Context<T> {
    fn field(self, name: &str) -> Result<T>;
}

impl<T> Context<T> for std::result::Result<T, FlatError> {
    fn field(self, name: &str) -> Result<T> {
        self.map_err(|e| corrupt(name, e))
    }
}

fn dtype_info(code: u8) -> (&'static str, Option<ElementType>) {
    match code {
        0 => ("bool", Some(ElementType::PRED)),
        1 => ("int8", Some(ElementType::S8)),
        2 => ("int16", Some(ElementType::S16)),
        3 => ("int32", Some(ElementType::S32)),
        4 => ("int64", Some(ElementType::S64)),
        5 => ("uint8", Some(ElementType::U8)),
        6 => ("uint16", Some(ElementType::U16)),
        7 => ("uint32", Some(ElementType::U32)),
        8 => ("uint64", Some(ElementType::U64)),
        9 => ("float16", Some(ElementType::F16)),
        10 => ("float32", Some(ElementType::F32)),
        11 => ("float64", Some(ElementType::F64)),
        12 => ("complex64", Some(ElementType::C64)),
        13 => ("complex128", Some(ElementType::C128)),
        14 => ("bfloat16", Some(ElementType::BF16)),
        15 => ("int4", Some(ElementType::S4)),
        16 => ("uint4", Some(ElementType::U4)),
        17 => ("float8_e4m3b11fnuz", Some(ElementType::F8E4M3B11FNUZ)),
        18 => ("float8_e4m3fn", Some(ElementType::F8E4M3FN)),
        19 => ("float8_e4m3fnuz", Some(ElementType::F8E4M3FNUZ)),
        20 => ("float8_e5m2", Some(ElementType::F8E5M2)),
        21 => ("float8_e5m2fnuz", Some(ElementType::F8E5M2FNUZ)),
        22 => ("float0", None),
        23 => ("float8_e4m3", Some(ElementType::F8E4M3)),
        24 => ("float8_e3m4", Some(ElementType::F8E3M4)),
        25 => ("float8_e8m0fnu", Some(ElementType::F8E8M0FNU)),
        26 => ("float4_e2m1fn", Some(ElementType::F4E2M1FN)),
        27 => ("key<fry>", None),
        28 => ("key<rbg>", None),
        29 => ("key<unsafe_rbg>", None),
        _ => ("unknown dtype", None),
    }
}

fn read_aval(table: Table<'_>, budget: &mut Budget) -> std::result::Result<Aval, FlatError> {
    let kind = table.u8(slot::aval::KIND, 0)?;
    if kind != 0 {
        return Err(FlatError {
            at: table.position(),
            what: format!("aval kind {kind} is not a shaped array (1 is a token)"),
        });
    }
    let shape = table.vector(slot::aval::SHAPE, 4)?;
    let mut dims = Vec::new();
    if let Some(shape) = shape {
        budget.charge(shape.len() * 16, table.position())?;
        for text in shape.strings()? {
            budget.charge(text.len(), table.position())?;
            // A count in the file, converted once here to the signed dimension PJRT takes.
            let too_large = || FlatError {
                at: table.position(),
                what: format!("aval dimension {text} is above {}, the largest dimension PJRT takes", i64::MAX),
            };
            dims.push(match text.parse::<u64>() {
                Ok(n) => Dim::Fixed(i64::try_from(n).map_err(|_| too_large())?),
                Err(e) if *e.kind() == std::num::IntErrorKind::PosOverflow => return Err(too_large()),
                Err(_) => Dim::Symbolic(text.to_string()),
            });
        }
    }
    let code = table.u8(slot::aval::DTYPE, 0)?;
    let (dtype_name, element_type) = dtype_info(code);
    let memory_space = match table.u8(slot::aval::MEMORY_SPACE, 0)? {
        0 | 1 => MemorySpace::Device,
        2 => MemorySpace::Host,
        3 => MemorySpace::Any,
        other => {
            return Err(FlatError { at: table.position(), what: format!("unknown memory space {other}") });
        }
    };
    Ok(Aval { dims, dtype_name, element_type, memory_space })
}

fn read_strings(v: Option<Vector<'_>>, budget: &mut Budget) -> std::result::Result<Vec<String>, FlatError> {
    let Some(v) = v else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    for s in v.strings()? {
        budget.charge(s.len(), 0)?;
        out.push(s.to_string());
    }
    Ok(out)
}

fn read_mesh(table: Table<'_>, budget: &mut Budget) -> std::result::Result<AbstractMesh, FlatError> {
    let axis_sizes = table.vector(slot::mesh::AXIS_SIZES, 4)?.map(|v| v.u32s()).transpose()?.unwrap_or_default();
    budget.charge(axis_sizes.len() * 4, table.position())?;
    let axis_names = read_strings(table.vector(slot::mesh::AXIS_NAMES, 4)?, budget)?;
    Ok(AbstractMesh { axis_sizes, axis_names })
}

fn read_named_sharding(
    table: Table<'_>,
    meshes: &[AbstractMesh],
    budget: &mut Budget,
) -> std::result::Result<NamedSharding, FlatError> {
    let mesh = if meshes.is_empty() {
        match table.table(slot::named_sharding::MESH)? {
            Some(m) => read_mesh(m, budget)?,
            None => AbstractMesh { axis_sizes: Vec::new(), axis_names: Vec::new() },
        }
    } else {
        let idx = table.u32(slot::named_sharding::ABSTRACT_MESH_IDX, 0)? as usize;
        let mesh = meshes.get(idx).ok_or_else(|| FlatError {
            at: table.position(),
            what: format!("abstract mesh index {idx} is out of range ({} meshes)", meshes.len()),
        })?;
        budget.charge(mesh.axis_sizes.len() * 32, table.position())?;
        mesh.clone()
    };
    let (mut partitions, mut reduced, mut unreduced) = (Vec::new(), Vec::new(), Vec::new());
    if let Some(spec) = table.table(slot::named_sharding::SPEC)? {
        if let Some(parts) = spec.vector(slot::partition_spec::PARTITIONS, 4)? {
            for i in 0..parts.len() {
                let axes = parts.table(i)?.vector(slot::ONE_AXIS_AXES, 4)?;
                partitions.push(read_strings(axes, budget)?);
            }
        }
        reduced = read_strings(spec.vector(slot::partition_spec::REDUCED, 4)?, budget)?;
        unreduced = read_strings(spec.vector(slot::partition_spec::UNREDUCED, 4)?, budget)?;
    }
    let memory_kind = table.string(slot::named_sharding::MEMORY_KIND)?.map(str::to_string);
    Ok(NamedSharding { mesh, partitions, reduced, unreduced, memory_kind })
}

fn read_sharding(
    table: Table<'_>,
    meshes: &[AbstractMesh],
    budget: &mut Budget,
) -> std::result::Result<JaxSharding, FlatError> {
    if let Some(named) = table.table(slot::sharding::NAMED_SHARDING)? {
        return Ok(JaxSharding::Named(read_named_sharding(named, meshes, budget)?));
    }
    if let Some(proto) = table.bytes(slot::sharding::HLO_SHARDING_PROTO)? {
        budget.charge(proto.len(), table.position())?;
        return Ok(JaxSharding::HloProto(proto.to_vec()));
    }
    Ok(JaxSharding::Unspecified)
}

fn read_tree(table: Table<'_>, depth: usize, budget: &mut Budget) -> std::result::Result<PyTree, FlatError> {
    let at = table.position();
    if depth > MAX_TREE_DEPTH {
        return Err(FlatError { at, what: format!("the pytree is nested deeper than {MAX_TREE_DEPTH} levels") });
    }
    budget.charge(32, at)?;
    let mut children = Vec::new();
    if let Some(v) = table.vector(slot::pytree::CHILDREN, 4)? {
        for i in 0..v.len() {
            children.push(read_tree(v.table(i)?, depth + 1, budget)?);
        }
    }
    Ok(match table.u8(slot::pytree::KIND, 0)? {
        0 => PyTree::Leaf,
        1 => PyTree::None,
        2 => PyTree::Tuple(children),
        3 => PyTree::List(children),
        4 => {
            let names = read_strings(table.vector(slot::pytree::CHILDREN_NAMES, 4)?, budget)?;
            if names.len() != children.len() {
                return Err(FlatError {
                    at,
                    what: format!("a dict has {} keys for {} children", names.len(), children.len()),
                });
            }
            PyTree::Dict(names.into_iter().zip(children).collect())
        }
        5 => {
            let name = table.string(slot::pytree::CUSTOM_NAME)?.unwrap_or("").to_string();
            PyTree::Custom { name, children }
        }
        other => return Err(FlatError { at, what: format!("unknown pytree node kind {other}") }),
    })
}

/// Avals by index into the unique table (newer artifacts), else inline (older ones).
fn read_avals(
    root: Table<'_>,
    idxs_slot: usize,
    inline_slot: usize,
    unique: &[Aval],
    budget: &mut Budget,
) -> std::result::Result<Vec<Aval>, FlatError> {
    let idxs = root.vector(idxs_slot, 4)?.map(|v| v.u32s()).transpose()?.unwrap_or_default();
    if !idxs.is_empty() {
        return idxs
            .iter()
            .map(|&i| {
                let aval = unique.get(i as usize).ok_or_else(|| FlatError {
                    at: root.position(),
                    what: format!("aval index {i} is out of range ({} unique avals)", unique.len()),
                })?;
                budget.charge(aval.dims.len() * 24, root.position())?;
                Ok(aval.clone())
            })
            .collect();
    }
    let Some(v) = root.vector(inline_slot, 4)? else { return Ok(Vec::new()) };
    (0..v.len()).map(|i| read_aval(v.table(i)?, budget)).collect()
}

/// Shardings by index (0: unspecified, k: unique named sharding k-1), else inline tables.
fn read_shardings(
    root: Table<'_>,
    idxs_slot: usize,
    inline_slot: usize,
    unique: &[NamedSharding],
    meshes: &[AbstractMesh],
    budget: &mut Budget,
) -> std::result::Result<Vec<JaxSharding>, FlatError> {
    let idxs = root.vector(idxs_slot, 4)?.map(|v| v.u32s()).transpose()?.unwrap_or_default();
    if !idxs.is_empty() {
        return idxs
            .iter()
            .map(|&i| {
                if i == 0 {
                    return Ok(JaxSharding::Unspecified);
                }
                let named = unique.get(i as usize - 1).ok_or_else(|| FlatError {
                    at: root.position(),
                    what: format!("sharding index {i} is out of range ({} unique shardings)", unique.len()),
                })?;
                budget.charge(64 + named.partitions.len() * 32, root.position())?;
                Ok(JaxSharding::Named(named.clone()))
            })
            .collect();
    }
    let Some(v) = root.vector(inline_slot, 4)? else { return Ok(Vec::new()) };
    (0..v.len()).map(|i| read_sharding(v.table(i)?, meshes, budget)).collect()
}

/// The writer's `jax_version` (JAX 0.12 on), cut to [`MAX_JAX_VERSION_LEN`] bytes at a char
/// boundary; `None` when absent or unreadable (it only informs, so it never fails the read).
fn read_jax_version(root: Table<'_>) -> Option<&str> {
    let version = root.string(slot::exported::JAX_VERSION).ok()??;
    let mut end = version.len().min(MAX_JAX_VERSION_LEN);
    while !version.is_char_boundary(end) {
        end -= 1;
    }
    Some(&version[..end])
}

/// A version string from the file as it is shown in messages: control characters escaped.
fn shown(version: &str) -> String {
    version.chars().flat_map(char::escape_debug).collect()
}

fn read_effects(v: Option<Vector<'_>>, budget: &mut Budget) -> std::result::Result<Vec<String>, FlatError> {
    let Some(v) = v else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    for i in 0..v.len() {
        let name = v.table(i)?.string(slot::EFFECT_TYPE_NAME)?.unwrap_or("");
        budget.charge(name.len(), 0)?;
        out.push(name.to_string());
    }
    Ok(out)
}

impl JaxExport {
    /// True if `bytes` look like a `jax.export` artifact: a flatbuffer whose root table holds
    /// an MLIR bytecode module where JAX puts it. Cheap; [`JaxExport::from_bytes`] checks the rest.
    pub fn looks_like(bytes: &[u8]) -> bool {
        if bytes.starts_with(MLIR_BYTECODE_MAGIC) {
            return false;
        }
        Table::root(bytes)
            .and_then(|root| root.bytes(slot::exported::MLIR_MODULE))
            .is_ok_and(|m| m.is_some_and(|m| m.starts_with(MLIR_BYTECODE_MAGIC)))
    }

    /// Reads a `.jaxexport` file.
    pub fn read(path: impl AsRef<Path>) -> Result<JaxExport> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        JaxExport::from_bytes(&bytes).map_err(|e| match e {
            Error::JaxExport(e) => JaxExportError::InFile { path: path.to_path_buf(), source: Box::new(e) }.into(),
            other => other.context(path.display()),
        })
    }

    /// Parses the bytes of `Exported.serialize()`. Malformed input is an error, never a panic.
    pub fn from_bytes(bytes: &[u8]) -> Result<JaxExport> {
        use slot::exported as f;
        let mut budget = Budget { left: bytes.len().saturating_mul(16).saturating_add(1 << 16) };
        let budget = &mut budget;
        let root = Table::root(bytes).field("root table")?;
        let serialization_version = root.u16(f::SERIALIZATION_VERSION, 0).field("serialization_version")?;
        // Read before the version check, so that a refusal can name the JAX that wrote the file.
        let jax_version = read_jax_version(root);
        if serialization_version == 0 || serialization_version > MAX_SERIALIZATION_VERSION {
            return Err(JaxExportError::Version {
                version: serialization_version,
                newest: MAX_SERIALIZATION_VERSION,
                written_by: jax_version.map(shown),
            }
            .into());
        }
        let jax_version = jax_version.map(|v| v.to_string());
        let function_name = root.string(f::FUNCTION_NAME).field("function_name")?.unwrap_or("").to_string();
        let mlir_module = root
            .bytes(f::MLIR_MODULE)
            .field("mlir_module_serialized")?
            .ok_or_else(|| Error::from(JaxExportError::Malformed("it holds no StableHLO module".into())))?;
        if !mlir_module.starts_with(MLIR_BYTECODE_MAGIC) {
            return Err(JaxExportError::Malformed("mlir_module_serialized is not MLIR bytecode".into()).into());
        }
        let platforms = read_strings(root.vector(f::PLATFORMS, 4).field("platforms")?, budget).field("platforms")?;

        let unique_avals = match root.vector(f::UNIQUE_AVALS, 4).field("unique_avals")? {
            Some(v) => (0..v.len()).map(|i| read_aval(v.table(i)?, budget)).collect::<Result<Vec<_>, _>>(),
            None => Ok(Vec::new()),
        }
        .field("unique_avals")?;
        let meshes = match root.vector(f::UNIQUE_ABSTRACT_MESHES, 4).field("unique_abstract_meshes")? {
            Some(v) => (0..v.len()).map(|i| read_mesh(v.table(i)?, budget)).collect::<Result<Vec<_>, _>>(),
            None => Ok(Vec::new()),
        }
        .field("unique_abstract_meshes")?;
        let unique_shardings = match root.vector(f::UNIQUE_NAMED_SHARDINGS, 4).field("unique_named_shardings")? {
            Some(v) => {
                (0..v.len()).map(|i| read_named_sharding(v.table(i)?, &meshes, budget)).collect::<Result<Vec<_>, _>>()
            }
            None => Ok(Vec::new()),
        }
        .field("unique_named_shardings")?;

        let in_avals = read_avals(root, f::IN_AVALS_IDXS, f::IN_AVALS, &unique_avals, budget).field("in_avals")?;
        let out_avals = read_avals(root, f::OUT_AVALS_IDXS, f::OUT_AVALS, &unique_avals, budget).field("out_avals")?;
        let in_shardings =
            read_shardings(root, f::IN_SHARDINGS_IDXS, f::IN_SHARDINGS, &unique_shardings, &meshes, budget)
                .field("in_shardings")?;
        let out_shardings =
            read_shardings(root, f::OUT_SHARDINGS_IDXS, f::OUT_SHARDINGS, &unique_shardings, &meshes, budget)
                .field("out_shardings")?;
        for (what, shardings, avals) in [("in", &in_shardings, &in_avals), ("out", &out_shardings, &out_avals)] {
            if !shardings.is_empty() && shardings.len() != avals.len() {
                return Err(Error::from(JaxExportError::Malformed(format!(
                    "{} {what}_shardings for {} {what}_avals",
                    shardings.len(),
                    avals.len()
                ))));
            }
        }

        let in_tree = match root.table(f::IN_TREE).field("in_tree")? {
            Some(t) => read_tree(t, 0, budget).field("in_tree")?,
            None => PyTree::Tuple(Vec::new()),
        };
        let out_tree = match root.table(f::OUT_TREE).field("out_tree")? {
            Some(t) => read_tree(t, 0, budget).field("out_tree")?,
            None => PyTree::Tuple(Vec::new()),
        };
        for (what, tree, avals) in [("in", &in_tree, &in_avals), ("out", &out_tree, &out_avals)] {
            if tree.leaf_count() != avals.len() {
                return Err(Error::from(JaxExportError::Malformed(format!(
                    "{what}_tree has {} leaves but there are {} {what}_avals",
                    tree.leaf_count(),
                    avals.len()
                ))));
            }
        }

        let nr_devices = match root.u32(f::NR_DEVICES, 0).field("nr_devices")? {
            0 => root.u16(f::NR_DEVICES_SHORT, 0).field("nr_devices_short")? as i16 as i64,
            n => n as i64,
        };
        if nr_devices < 1 {
            return Err(Error::from(JaxExportError::Malformed(format!("nr_devices is {nr_devices}"))));
        }
        let ordered_effects = read_effects(root.vector(f::ORDERED_EFFECTS, 4).field("ordered_effects")?, budget)
            .field("ordered_effects")?;
        let unordered_effects = read_effects(root.vector(f::UNORDERED_EFFECTS, 4).field("unordered_effects")?, budget)
            .field("unordered_effects")?;
        let module_kept_var_idx: Vec<usize> = root
            .vector(f::MODULE_KEPT_VAR_IDX, 2)
            .and_then(|v| v.map(|v| v.u16s()).transpose())
            .field("module_kept_var_idx")?
            .unwrap_or_default()
            .into_iter()
            .map(usize::from)
            .collect();
        if module_kept_var_idx.windows(2).any(|w| w[0] >= w[1])
            || module_kept_var_idx.last().is_some_and(|&i| i >= in_avals.len())
        {
            return Err(Error::from(JaxExportError::Malformed(format!(
                "module_kept_var_idx {module_kept_var_idx:?} is not an \
                 increasing list of indices below the {} inputs",
                in_avals.len()
            ))));
        }
        let calling_convention_version =
            root.u16(f::CALLING_CONVENTION_VERSION, 0).field("calling_convention_version")?;
        let uses_global_constants = root.u8(f::USES_GLOBAL_CONSTANTS, 0).field("uses_global_constants")? != 0;
        let has_vjp = root.table(f::VJP).field("vjp")?.is_some();
        budget.charge(mlir_module.len(), 0).field("mlir_module_serialized")?;

        Ok(JaxExport {
            serialization_version,
            jax_version,
            function_name,
            platforms,
            in_tree,
            out_tree,
            in_avals,
            out_avals,
            in_shardings,
            out_shardings,
            nr_devices: nr_devices as u32,
            ordered_effects,
            unordered_effects,
            module_kept_var_idx,
            calling_convention_version,
            uses_global_constants,
            has_vjp,
            mlir_module: mlir_module.to_vec(),
            module_ir: Default::default(),
        })
    }

    /// The serialization version stored in the artifact (JAX 0.10 and 0.11 store 3 for
    /// compatibility with older readers, whatever their schema version; JAX 0.12 stores 12).
    pub fn serialization_version(&self) -> u16 {
        self.serialization_version
    }

    /// The version of the JAX that serialized the artifact (`"0.12.0.1"`), which JAX writes from
    /// 0.12 on (serialization version 12); `None` for older artifacts. Cut to 64 bytes.
    ///
    /// ```
    /// use pjrt_formats::jax_export::JaxExport;
    /// let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/jax_export");
    /// let new = JaxExport::read(format!("{data}/jax-0.12.0.1/mlp_f32/model.jaxexport"))?;
    /// assert_eq!((new.serialization_version(), new.jax_version()), (12, Some("0.12.0.1")));
    /// assert_eq!(new.stablehlo_version(), Some(pjrt_client::StableHloVersion::new(1, 18, 0)));
    /// let old = JaxExport::read(format!("{data}/jax-0.10.2/mlp_f32/model.jaxexport"))?;
    /// assert_eq!((old.serialization_version(), old.jax_version()), (3, None));
    /// assert_eq!(
    ///     new.to_string(),
    ///     "jax.export of mlp (serialization version 12, written by JAX 0.12.0.1, StableHLO 1.18.0): \
    ///      platforms cpu, 1 device, 5 inputs, 1 output"
    /// );
    /// # Ok::<(), pjrt_formats::Error>(())
    /// ```
    pub fn jax_version(&self) -> Option<&str> {
        self.jax_version.as_deref()
    }

    /// The StableHLO version the module was serialized for (its bytecode producer,
    /// `StableHLO_v1.18.0`), which a plugin must read: see [`Program::stablehlo_target`].
    pub fn stablehlo_version(&self) -> Option<pjrt_client::StableHloVersion> {
        Program::mlir_bytecode(self.mlir_module.clone()).ok()?.stablehlo_target()
    }

    /// The exported function's name (`jit(f)` gives `f`).
    pub fn function_name(&self) -> &str {
        &self.function_name
    }

    /// The platforms the module was lowered for (`cpu`, `cuda`, `rocm`, `tpu`).
    pub fn platforms(&self) -> &[String] {
        &self.platforms
    }

    /// The structure of the arguments (`(args, kwargs)`); its leaves are [`JaxExport::in_avals`].
    pub fn in_tree(&self) -> &PyTree {
        &self.in_tree
    }

    /// The structure of the results; its leaves are [`JaxExport::out_avals`].
    pub fn out_tree(&self) -> &PyTree {
        &self.out_tree
    }

    /// Shapes and dtypes of every input (flattened argument pytree), unused ones included.
    pub fn in_avals(&self) -> &[Aval] {
        &self.in_avals
    }

    /// Shapes and dtypes of every output.
    pub fn out_avals(&self) -> &[Aval] {
        &self.out_avals
    }

    /// The sharding of each input (empty if the artifact records none).
    pub fn in_shardings(&self) -> &[JaxSharding] {
        &self.in_shardings
    }

    /// The sharding of each output.
    pub fn out_shardings(&self) -> &[JaxSharding] {
        &self.out_shardings
    }

    /// The number of devices the module was lowered for.
    pub fn nr_devices(&self) -> u32 {
        self.nr_devices
    }

    /// Type names of the ordered effects (these need token arguments).
    pub fn ordered_effects(&self) -> &[String] {
        &self.ordered_effects
    }

    /// Type names of the unordered effects.
    pub fn unordered_effects(&self) -> &[String] {
        &self.unordered_effects
    }

    /// The inputs (indices into [`JaxExport::in_avals`]) the module takes; the others are unused.
    pub fn module_kept_var_idx(&self) -> &[usize] {
        &self.module_kept_var_idx
    }

    /// The version of the module's calling convention.
    pub fn calling_convention_version(&self) -> u16 {
        self.calling_convention_version
    }

    /// True if the module takes global constants (platform index, dimension variables).
    pub fn uses_global_constants(&self) -> bool {
        self.uses_global_constants
    }

    /// True if the artifact also holds the function's VJP (not used by this crate).
    pub fn has_vjp(&self) -> bool {
        self.has_vjp
    }

    /// `" (written by JAX 0.12.0.1)"` when the artifact says, for messages.
    fn written_by(&self) -> String {
        self.jax_version.as_deref().map_or_else(String::new, |v| format!(" (written by JAX {})", shown(v)))
    }

    /// The StableHLO module as MLIR bytecode.
    pub fn mlir_module(&self) -> &[u8] {
        &self.mlir_module
    }

    /// The StableHLO module as a [`Program`]. Use [`JaxExport::arrange_inputs`] for its
    /// arguments: they are not the function's inputs one to one.
    ///
    /// For a single-device export with concrete shapes, the program declares the module's
    /// parameters from the avals ([`Program::with_parameters`]: the platform index first when
    /// there are several platforms, then the kept inputs), so argument checks stay on where a
    /// plugin's optimized program does not tell its parameters (this crate cannot read MLIR
    /// bytecode's signature).
    pub fn program(&self) -> Result<Program> {
        let program = Program::mlir_bytecode(self.mlir_module.clone())?;
        Ok(match self.module_parameters() {
            Some(parameters) => program.with_parameters(parameters),
            None => program,
        })
    }

    /// The module's parameters as one device sees them, where the avals tell them: one device,
    /// no ordered effects (token arguments), concrete shapes and PJRT dtypes.
    fn module_parameters(&self) -> Option<Vec<(ElementType, Vec<i64>)>> {
        if self.nr_devices != 1 || !self.ordered_effects.is_empty() {
            return None;
        }
        let mut parameters = Vec::with_capacity(self.module_kept_var_idx.len() + 1);
        if self.platforms.len() > 1 {
            parameters.push((ElementType::S32, Vec::new()));
        }
        for &i in &self.module_kept_var_idx {
            let aval = self.in_avals.get(i)?;
            parameters.push((aval.element_type?, aval.fixed_dims()?));
        }
        Some(parameters)
    }

    /// The index of `platform` (a client's [`Client::platform_name`]) among the export's
    /// platforms, which the module takes as its first argument when there are several; `None`
    /// when there is one platform (no such argument). An error if the export was not lowered
    /// for `platform`.
    pub fn platform_index(&self, platform: &str) -> Result<Option<i32>> {
        let wanted = platform.to_ascii_lowercase();
        let found = self.platforms.iter().position(|p| {
            let p = p.to_ascii_lowercase();
            p == wanted || (wanted == "gpu" && (p == "cuda" || p == "rocm"))
        });
        match found {
            Some(_) if self.platforms.len() == 1 => Ok(None),
            Some(i) => Ok(Some(i as i32)),
            None => Err(Error::invalid(format!(
                "the model was exported for {} but the client's platform is {platform}; export it again with \
                 jax.export.export(..., platforms=[..., \"{wanted}\"])",
                if self.platforms.is_empty() { "no platform".to_string() } else { self.platforms.join(", ") }
            ))),
        }
    }

    /// Checks that this crate can run the export on `platform`: shardings it can lay out
    /// ([`JaxExport::device_shardings`]), no ordered effects, a known calling
    /// convention, dtypes PJRT has, device memory, and `platform` among the export's platforms.
    pub fn check_runnable(&self, platform: &str) -> Result<()> {
        if !self.ordered_effects.is_empty() {
            return Err(Error::invalid(format!(
                "the model has ordered effects ({}), which need token arguments; this runner does not pass \
                 tokens. Export a function without ordered side effects",
                self.ordered_effects.join(", ")
            )));
        }
        if !SUPPORTED_CALLING_CONVENTIONS.contains(&self.calling_convention_version) {
            return Err(Error::invalid(format!(
                "the model uses calling convention version {}{}, but this runner supports {}..={}; export it \
                 with a JAX release that writes one of those",
                self.calling_convention_version,
                self.written_by(),
                SUPPORTED_CALLING_CONVENTIONS.start(),
                SUPPORTED_CALLING_CONVENTIONS.end()
            )));
        }
        self.device_shardings()?;
        for (i, aval) in self.in_avals.iter().chain(&self.out_avals).enumerate() {
            let which = if i < self.in_avals.len() {
                format!("input {i}")
            } else {
                format!("output {}", i - self.in_avals.len())
            };
            if aval.element_type.is_none() {
                return Err(Error::invalid(format!(
                    "{which} has dtype {}, which has no PJRT element type; it cannot be passed to a plugin",
                    aval.dtype_name
                )));
            }
            if aval.memory_space != MemorySpace::Device {
                return Err(Error::invalid(format!(
                    "{which} lives in {:?} memory; only device-memory inputs and outputs are supported",
                    aval.memory_space
                )));
            }
        }
        self.platform_index(platform)?;
        Ok(())
    }

    /// How each module argument and each output is laid out over the devices, for
    /// [`LoadedExecutable::upload_sharded`]: arguments in the order [`JaxExport::arrange_inputs`]
    /// gives them (the platform index, if any, is replicated), outputs in the order of
    /// [`JaxExport::out_avals`]. One device: everything is replicated. More devices: each
    /// sharding must be replicated or split along one array dimension over every mesh axis in
    /// mesh order (what a 1-D mesh gives); others are refused.
    pub fn device_shardings(&self) -> Result<(Vec<Sharding>, Vec<Sharding>)> {
        let devices = self.nr_devices as usize;
        let convert = |what: &str, i: usize, s: Option<&JaxSharding>| -> Result<Sharding> {
            if devices == 1 {
                return Ok(Sharding::Replicated);
            }
            let named = match s {
                Some(JaxSharding::Named(n)) => n,
                Some(JaxSharding::HloProto(_)) => {
                    return Err(Error::invalid(format!(
                        "{what} {i} has an HLO sharding (an export from before JAX's named shardings); only \
                         named shardings are run on several devices. Export it again with a recent JAX"
                    )))
                }
                _ => {
                    return Err(Error::invalid(format!(
                        "{what} {i} of this {devices}-device model has no sharding (the compiler chose it); \
                         export it with in_shardings and out_shardings given to jax.jit"
                    )))
                }
            };
            // Checked: a hostile mesh may claim sizes whose product overflows.
            let mesh_size = named.mesh.axis_sizes.iter().try_fold(1u64, |acc, &n| acc.checked_mul(n as u64));
            let split: Vec<(usize, &Vec<String>)> =
                named.partitions.iter().enumerate().filter(|(_, axes)| !axes.is_empty()).collect();
            let unsupported = || {
                Error::invalid(format!(
                    "{what} {i} is sharded as {:?} over mesh {:?} = {:?}: only replicated arrays and arrays split \
                     along one dimension over the whole mesh are supported",
                    named.partitions, named.mesh.axis_names, named.mesh.axis_sizes
                ))
            };
            if !named.unreduced.is_empty() || mesh_size != Some(devices as u64) {
                return Err(unsupported());
            }
            match split.as_slice() {
                [] => Ok(Sharding::Replicated),
                [(dim, axes)] if **axes == named.mesh.axis_names => Ok(Sharding::Split(*dim)),
                _ => Err(unsupported()),
            }
        };
        let mut inputs = Vec::with_capacity(self.module_kept_var_idx.len() + 1);
        if self.platforms.len() > 1 {
            inputs.push(Sharding::Replicated);
        }
        for &i in &self.module_kept_var_idx {
            inputs.push(convert("input", i, self.in_shardings.get(i))?);
        }
        let outputs = (0..self.out_avals.len())
            .map(|i| convert("output", i, self.out_shardings.get(i)))
            .collect::<Result<Vec<_>>>()?;
        Ok((inputs, outputs))
    }

    /// True if the module carries Shardy (`sdy`) shardings, so it is compiled with Shardy.
    pub fn uses_shardy(&self) -> bool {
        self.mlir_module.windows(4).any(|w| w == b"sdy.")
    }

    /// Checks one input (index into [`JaxExport::in_avals`]) against its aval.
    pub fn check_input(&self, index: usize, element_type: ElementType, dims: &[i64]) -> Result<()> {
        let aval = self.in_avals.get(index).ok_or_else(|| {
            Error::invalid(format!("input {index} does not exist: the model takes {} inputs", self.in_avals.len()))
        })?;
        if self.is_polymorphic() {
            return self.check_shape(index, element_type, dims);
        }
        let wanted = aval.fixed_dims();
        if aval.element_type != Some(element_type) || wanted.as_deref() != Some(dims) {
            let dims: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
            return Err(Error::invalid(format!(
                "input {index} is {element_type}[{}], but the model expects {aval}",
                dims.join(",")
            )));
        }
        Ok(())
    }

    /// Checks one `.npy` input against its aval, as it uploads for it (bf16 bits, widened
    /// sub-byte values; else its own type, reported as the mismatch).
    pub fn check_npy_input(&self, index: usize, array: &NpyArray) -> Result<()> {
        let wanted = self.in_avals.get(index).and_then(|a| a.element_type);
        let element_type = crate::npy_arrays::upload_element_type(array.dtype, wanted)
            .unwrap_or_else(|_| crate::npy::element_type_of(array.dtype));
        self.check_input(index, element_type, &array.dims)
    }

    /// Maps the caller's inputs (every input, in the order of [`JaxExport::in_avals`]) to the
    /// module's arguments: checks each against its aval, drops the ones the module does not
    /// keep, and puts the platform index (an `i32` scalar) first when the export has several
    /// platforms. bf16 inputs are given as raw bits (`<u2` or `<V2` arrays), sub-byte ones as
    /// `int8`/`uint8` values or ml_dtypes' `|V1` (see [`NpyArray::to_host_array`]); each
    /// argument comes back as the [`HostArray`] of the module's parameter type.
    pub fn arrange_inputs(&self, platform: &str, inputs: &[NpyArray]) -> Result<Vec<HostArray>> {
        self.arrange_input_refs(platform, &inputs.iter().collect::<Vec<_>>())
    }

    /// [`JaxExport::arrange_inputs`] of borrowed arrays.
    pub(crate) fn arrange_input_refs(&self, platform: &str, inputs: &[&NpyArray]) -> Result<Vec<HostArray>> {
        self.check_runnable(platform)?;
        self.check_input_count(inputs.len())?;
        for (i, array) in inputs.iter().enumerate() {
            self.check_npy_input(i, array)?;
        }
        let mut arguments = Vec::with_capacity(self.module_kept_var_idx.len() + 1);
        if let Some(index) = self.platform_index(platform)? {
            arguments.push(HostArray::from_elements(Vec::new(), &[index])?);
        }
        for &i in &self.module_kept_var_idx {
            arguments.push(
                inputs[i]
                    .to_host_array(self.in_avals[i].element_type)
                    .map_err(|e| e.context(format_args!("input {i}")))?,
            );
        }
        Ok(arguments)
    }

    /// Compiles the module for `client` (after [`JaxExport::check_runnable`]), with the XLA
    /// settings that make results match JAX ([`CompileOptions::jax_defaults`]); a multi-device
    /// export is compiled with SPMD partitioning over `nr_devices` partitions (and Shardy when
    /// the module uses it), so the client needs that many devices.
    /// A shape-polymorphic model has no one executable: compile it for input shapes with
    /// [`JaxExport::compile_for`], or run it with a [`Runner`].
    pub fn compile(&self, client: &Client) -> Result<LoadedExecutable> {
        self.check_runnable(client.platform_name())?;
        if self.is_polymorphic() {
            return Err(Error::invalid(
                "the model is shape-polymorphic: compile it for the shapes of its inputs (JaxExport::compile_for, \
                 or pjrt compile --input-shape)",
            ));
        }
        let program = self.program()?;
        Ok(client.compile(&program, &self.compile_options(client.platform_name()))?)
    }

    /// Compiles the model for inputs of these shapes (every input, in the order of
    /// [`JaxExport::in_avals`]): [`JaxExport::program_for`] compiled as [`JaxExport::compile`]
    /// does. For a model without symbolic dimensions the shapes must be its own.
    pub fn compile_for(&self, client: &Client, shapes: &[InputShape]) -> Result<LoadedExecutable> {
        self.check_runnable(client.platform_name())?;
        let program = self.program_for(shapes)?;
        Ok(client.compile(&program, &self.compile_options(client.platform_name()))?)
    }

    /// The shape of each input as it is uploaded (see [`JaxExport::check_npy_input`]).
    pub fn input_shapes(&self, inputs: &[NpyArray]) -> Vec<InputShape> {
        self.input_shapes_of(inputs.iter())
    }

    /// [`JaxExport::input_shapes`] of borrowed arrays.
    pub(crate) fn input_shapes_of<'a>(&self, inputs: impl Iterator<Item = &'a NpyArray>) -> Vec<InputShape> {
        inputs
            .enumerate()
            .map(|(i, array)| {
                let wanted = self.in_avals.get(i).and_then(|a| a.element_type);
                let element_type = crate::npy_arrays::upload_element_type(array.dtype, wanted)
                    .unwrap_or_else(|_| crate::npy::element_type_of(array.dtype));
                (element_type, array.dims.clone())
            })
            .collect()
    }

    /// The error for `count` inputs given to a model of another number of inputs.
    pub(crate) fn check_input_count(&self, count: usize) -> Result<()> {
        if count != self.in_avals.len() {
            let avals: Vec<String> = self.in_avals.iter().map(|a| a.to_string()).collect();
            return Err(Error::invalid(format!(
                "the model takes {} inputs ({}) but {count} were given; give all of them in order, unused ones too",
                self.in_avals.len(),
                avals.join(", "),
            )));
        }
        Ok(())
    }

    pub(crate) fn check_output_count(&self, count: usize) -> Result<()> {
        if count != self.out_avals.len() {
            return Err(Error::invalid(format!(
                "the module returned {count} outputs but the export lists {}",
                self.out_avals.len()
            )));
        }
        Ok(())
    }

    /// The options [`JaxExport::compile`] uses on `platform` (to add XLA options to).
    pub fn compile_options(&self, platform: &str) -> CompileOptions {
        let mut options = CompileOptions::new().jax_defaults(platform);
        if self.nr_devices > 1 {
            options = options.num_partitions(self.nr_devices as usize).use_spmd_partitioning(true);
            if self.uses_shardy() {
                options = options.use_shardy_partitioner(true);
            }
        }
        options
    }

    /// Compiles and runs the model once (keep a [`Runner`] to run it again without compiling
    /// again); on the client's first device, or on as many devices as it
    /// was exported for, with inputs split and outputs gathered by [`JaxExport::device_shardings`]):
    /// `inputs` are every input in
    /// the order of [`JaxExport::in_avals`]; the outputs come back in the order of
    /// [`JaxExport::out_avals`] (bf16 as `<u2` bits, sub-byte types widened to `int8`/`uint8`).
    pub fn run(&self, client: &Client, inputs: &[NpyArray]) -> Result<Vec<NpyArray>> {
        Runner::new(self.clone(), client).run(inputs)
    }
}

/// One line about the artifact: function, versions (serialization, the JAX that wrote it, the
/// module's StableHLO), platforms, devices and the number of inputs and outputs. See
/// [`JaxExport::jax_version`] for an example.
impl fmt::Display for JaxExport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
        write!(
            f,
            "jax.export of {} (serialization version {}",
            shown(&self.function_name),
            self.serialization_version
        )?;
        match &self.jax_version {
            Some(v) => write!(f, ", written by JAX {}", shown(v))?,
            None => f.write_str(", JAX version not recorded (before 0.12)")?,
        }
        if let Some(version) = self.stablehlo_version() {
            write!(f, ", StableHLO {version}")?;
        }
        write!(
            f,
            "): platforms {}, {}, {}, {}",
            self.platforms.iter().map(|p| shown(p)).collect::<Vec<_>>().join(", "),
            plural(self.nr_devices as usize, "device"),
            plural(self.in_avals.len(), "input"),
            plural(self.out_avals.len(), "output")
        )
    }
}

#[cfg(test)]
mod tests;
