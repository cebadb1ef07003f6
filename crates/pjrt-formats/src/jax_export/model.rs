//! What an artifact holds: the values it describes (dimensions, avals, pytrees), what
//! [`JaxExport`] says about itself, and its one-line description.

use std::fmt;

use pjrt_client::{ElementType, Program};

use super::{JaxExport, JaxSharding};

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
impl JaxExport {
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

    /// The StableHLO module as MLIR bytecode.
    pub fn mlir_module(&self) -> &[u8] {
        &self.mlir_module
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

/// A version string from the file as it is shown in messages: control characters escaped.
pub(super) fn shown(version: &str) -> String {
    version.chars().flat_map(char::escape_debug).collect()
}
