//! Reading the artifact: the tables and fields of JAX's `serialization.fbs` schema, read with
//! the bounds-checked [`super::flatbuffer`] reader into a [`JaxExport`].

use std::path::Path;

use pjrt_client::ElementType;

use super::flatbuffer::{FlatError, Table, Vector};
use super::model::shown;
use super::MAX_SERIALIZATION_VERSION;
use super::{AbstractMesh, Aval, Dim, JaxExport, JaxExportError, JaxSharding, MemorySpace, NamedSharding, PyTree};
use crate::{Error, Result};

/// The longest `jax_version` string kept (JAX writes `0.12.0.1`); longer ones are cut, so a
/// hostile file cannot fill error messages.
const MAX_JAX_VERSION_LEN: usize = 64;

/// Pytrees nested deeper than this are refused (JAX's own trees are a few levels deep).
pub(super) const MAX_TREE_DEPTH: usize = 64;

const MLIR_BYTECODE_MAGIC: &[u8] = b"ML\xefR";

// Field slots of the schema's tables (the order of their fields in `serialization.fbs`).
pub(super) mod slot {
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
}
