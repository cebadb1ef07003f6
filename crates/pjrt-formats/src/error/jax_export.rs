//! [`JaxExportError`]: what is wrong with a `jax.export` artifact (`crate::jax_export` reads it),
//! or with how a model is used: a platform it was not exported for, inputs that do not fit it, a
//! model this crate cannot run ([`Unrunnable`]). The fields name the model's values as text
//! (avals as `float32[3,4]`): this module stands below `jax_export`, which returns its errors.

use std::fmt;
use std::path::PathBuf;

use pjrt_client::ElementType;

use std::ops::RangeInclusive;

/// What is wrong with a `jax.export` artifact (the bytes of `Exported.serialize()`), as
/// [`crate::jax_export::JaxExport::from_bytes`] and [`crate::jax_export::JaxExport::read`] find
/// it, or with how the model is used: its platform, its inputs, what this crate can run. Returned
/// as [`crate::Error::JaxExport`].
///
/// ```
/// use pjrt_formats::jax_export::{JaxExport, JaxExportError};
/// use pjrt_formats::npy::NpyArray;
///
/// let e = JaxExport::from_bytes(&[0xff; 64]).unwrap_err();
/// assert!(matches!(e, pjrt_formats::Error::JaxExport(JaxExportError::Corrupt { .. })), "{e}");
///
/// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/jax_export/jax-0.10.2/mlp_f32/model.jaxexport");
/// let model = JaxExport::read(path)?;
/// let e = model.arrange_inputs("tpu", &[]).unwrap_err();
/// assert!(matches!(e, pjrt_formats::Error::JaxExport(JaxExportError::PlatformMismatch { .. })), "{e}");
/// let x = NpyArray::from_elements(vec![3], &[1i32, 2, 3])?;
/// let e = model.check_npy_input(4, &x).unwrap_err();
/// assert!(matches!(e, pjrt_formats::Error::JaxExport(JaxExportError::InputMismatch { index: 4, .. })), "{e}");
/// # Ok::<(), pjrt_formats::Error>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JaxExportError {
    /// The file at `path` is not a readable artifact; `source` says why.
    #[error("{}: {source}", path.display())]
    InFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        source: Box<JaxExportError>,
    },
    /// A field cannot be read: its bytes run past the end, an offset or index points outside,
    /// a value is out of range, or the artifact expands beyond a bound.
    #[error("not a readable jax.export artifact: {field}: {what} (at byte {at})")]
    Corrupt {
        /// The field of the `Exported` table, e.g. `in_avals`.
        field: String,
        /// What is wrong.
        what: String,
        /// The byte position involved.
        at: usize,
    },
    /// A serialization version this reader does not know (0, or newer than JAX 0.12's).
    #[error(
        "jax.export serialization version {version}{} is not one this reader knows (1..={newest}); {}",
        written_by.as_deref().map(|v| format!(", written by JAX {v},")).unwrap_or_default(),
        version_advice(*version)
    )]
    Version {
        /// The version the artifact says.
        version: u16,
        /// The newest version this reader knows.
        newest: u16,
        /// The JAX that wrote it, when the artifact says (JAX 0.12 on), cut to 64 bytes.
        written_by: Option<String>,
    },
    /// The fields are readable but disagree, or one the artifact needs is missing.
    #[error("not a readable jax.export artifact: {0}")]
    Malformed(String),
    /// The client's platform is not one the model was lowered for.
    #[error(
        "the model was exported for {} but the client's platform is {platform}; export it again with \
         jax.export.export(..., platforms=[..., \"{}\"])",
        if platforms.is_empty() { "no platform".to_string() } else { platforms.join(", ") },
        platform.to_ascii_lowercase()
    )]
    PlatformMismatch {
        /// The client's platform ([`pjrt_client::Client::platform_name`]).
        platform: String,
        /// The platforms the model was lowered for ([`crate::jax_export::JaxExport::platforms`]).
        platforms: Vec<String>,
    },
    /// The model holds something this crate cannot run (see [`Unrunnable`]).
    #[error(transparent)]
    Unrunnable(#[from] Unrunnable),
    /// Another number of inputs than the model takes (every input counts, unused ones too).
    #[error(
        "the model takes {} inputs ({}) but {given} were given; give all of them in order, unused ones too",
        expected.len(),
        expected.join(", ")
    )]
    InputCount {
        /// How many inputs were given.
        given: usize,
        /// The inputs the model takes, each its aval as text (`float32[3,4]`: the
        /// [`crate::jax_export::Aval`]s of [`crate::jax_export::JaxExport::in_avals`] shown).
        expected: Vec<String>,
    },
    /// Another number of inputs than a model with weights ([`crate::jax_export::Runner::with_params`])
    /// takes besides them.
    #[error(
        "the model takes {} inputs besides its weights ({}) but {given} were given",
        expected.len(),
        expected.iter().map(|(i, aval)| format!("{i}: {aval}")).collect::<Vec<_>>().join(", ")
    )]
    InputCountBesidesWeights {
        /// How many inputs were given.
        given: usize,
        /// The inputs no weight feeds: each one's index among the model's inputs, and its aval
        /// as text.
        expected: Vec<(usize, String)>,
    },
    /// An input index past the model's inputs.
    #[error("input {index} does not exist: the model takes {count} inputs")]
    NoSuchInput {
        /// The index asked for.
        index: usize,
        /// How many inputs the model takes.
        count: usize,
    },
    /// An input whose element type or dimensions are not its aval's (a model without symbolic
    /// dimensions).
    #[error("input {index} is {element_type}[{}], but the model expects {expected}", joined(dims))]
    InputMismatch {
        /// The input's index among the model's inputs.
        index: usize,
        /// The input's element type (as it uploads).
        element_type: ElementType,
        /// The input's dimensions.
        dims: Vec<i64>,
        /// The aval it must match, as text (`float32[5]`).
        expected: String,
    },
    /// A shape-polymorphic model's input of another dtype than its aval's (JAX's message).
    #[error("Dtype mismatch for args[{index}]: expected {expected} and called with {given}")]
    DtypeMismatch {
        /// The input's index among the model's inputs.
        index: usize,
        /// JAX's name of the aval's dtype (`float32`).
        expected: &'static str,
        /// The input's dtype: NumPy's name where it has one (`int32`), else PJRT's (`bf16`).
        given: String,
    },
    /// A shape-polymorphic model's input of another rank than its aval's (JAX's message).
    #[error(
        "Rank mismatch for args[{index}]: expected {} and called with {} (shapes {} and {})",
        expected.len(),
        given.len(),
        Spec(expected),
        Spec(given)
    )]
    RankMismatch {
        /// The input's index among the model's inputs.
        index: usize,
        /// The aval's dimensions as JAX writes them: a size (`4`) or a symbolic expression
        /// (`b`, `2*b + 1`).
        expected: Vec<String>,
        /// The input's dimensions.
        given: Vec<i64>,
    },
    /// A shape-polymorphic model's input with another size than its aval where the aval fixes
    /// one (or a negative size) (JAX's message).
    #[error(
        "Shape mismatch for args[{index}].shape[{dim}] (expected same constant): expected {} and called with {}",
        Spec(expected),
        Spec(given)
    )]
    ShapeMismatch {
        /// The input's index among the model's inputs.
        index: usize,
        /// The dimension that differs.
        dim: usize,
        /// The aval's dimensions as JAX writes them: a size (`4`) or a symbolic expression
        /// (`b`, `2*b + 1`).
        expected: Vec<String>,
        /// The input's dimensions.
        given: Vec<i64>,
    },
    /// A shape-polymorphic model compiled without input shapes: it has no one executable.
    #[error(
        "the model is shape-polymorphic: compile it for the shapes of its inputs (JaxExport::compile_for, or pjrt \
         compile --input-shape)"
    )]
    Polymorphic,
    /// The model's StableHLO module cannot be read for shape refinement.
    #[error("the model's StableHLO module cannot be read for shape refinement: {0}")]
    ModuleUnreadable(#[source] pjrt_stablehlo::Error),
    /// The module calls a LAPACK kernel of jaxlib before its FFI form (JAX 0.4.30 and 0.4.38 wrote
    /// them) that cannot be upgraded to today's `lapack_*_ffi` call
    /// ([`crate::jax_export::upgrade_legacy_lapack`]): a descriptor that disagrees with the
    /// shapes or that the module does not give as a constant, an option the FFI call lacks, a
    /// used workspace. (A shape-polymorphic export's calls are upgraded once the module is
    /// refined for the inputs' shapes, so its descriptors are known then.)
    #[error(transparent)]
    LegacyLapack(#[from] LegacyLapackError),
    /// The executable returned another number of outputs than the export lists.
    #[error("the module returned {returned} outputs but the export lists {listed}")]
    OutputCount {
        /// The outputs the executable returned.
        returned: usize,
        /// The outputs the export lists ([`crate::jax_export::JaxExport::out_avals`]).
        listed: usize,
    },
    /// A weights file's tensor that does not fit the input it is bound to.
    #[error("tensor '{tensor}': {source}")]
    InTensor {
        /// The tensor's name in the file.
        tensor: String,
        /// Why it does not fit.
        source: Box<JaxExportError>,
    },
}

/// Why this crate cannot run a model that it reads ([`JaxExportError::Unrunnable`];
/// [`crate::jax_export::JaxExport::check_runnable`] checks them all).
///
/// ```
/// use pjrt_formats::jax_export::{InputOrOutput, Unrunnable};
/// let e = Unrunnable::NoElementType { value: InputOrOutput::Output(1), dtype: "float0" };
/// assert_eq!(e.to_string(), "output 1 has dtype float0, which has no PJRT element type; it cannot be passed to a plugin");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Unrunnable {
    /// Ordered effects, whose token arguments this crate does not pass.
    #[error(
        "the model has ordered effects ({}), which need token arguments; this runner does not pass tokens. \
         Export a function without ordered side effects",
        effects.join(", ")
    )]
    OrderedEffects {
        /// The effects' type names.
        effects: Vec<String>,
    },
    /// A calling convention whose module signature this crate does not build arguments for.
    #[error(
        "the model uses calling convention version {version}{}, but this runner supports {}..={}; export it with a \
         JAX release that writes one of those",
        written_by.as_deref().map(|v| format!(" (written by JAX {v})")).unwrap_or_default(),
        supported.start(),
        supported.end()
    )]
    CallingConvention {
        /// The model's calling convention version.
        version: u16,
        /// The JAX that wrote the model, when the artifact says (control characters escaped).
        written_by: Option<String>,
        /// The versions this crate supports
        /// ([`crate::jax_export::SUPPORTED_CALLING_CONVENTIONS`]).
        supported: RangeInclusive<u16>,
    },
    /// An input or output whose dtype PJRT has no element type for (`float0`, PRNG keys).
    #[error("{value} has dtype {dtype}, which has no PJRT element type; it cannot be passed to a plugin")]
    NoElementType {
        /// Which input or output.
        value: InputOrOutput,
        /// JAX's name of the dtype.
        dtype: &'static str,
    },
    /// An input or output outside device memory.
    #[error("{value} lives in {memory_space} memory; only device-memory inputs and outputs are supported")]
    MemorySpace {
        /// Which input or output.
        value: InputOrOutput,
        /// Where it lives: JAX's name of the memory space (`Host`, `Any`).
        memory_space: String,
    },
    /// A multi-device model's input or output with an HLO sharding (from before JAX's named
    /// shardings) other than replicated or split along one dimension over every device in order.
    #[error(
        "{value} has an HLO sharding (an export from before JAX's named shardings) that is not replicated nor \
         split along one dimension over all {devices} devices in device order ({what}); only those are run on \
         several devices. Export it again with a recent JAX"
    )]
    HloSharding {
        /// Which input or output.
        value: InputOrOutput,
        /// The model's device count.
        devices: u32,
        /// What the sharding is.
        what: String,
    },
    /// A multi-device model's input or output without a sharding (the compiler chose it).
    #[error(
        "{value} of this {devices}-device model has no sharding (the compiler chose it); export it with \
         in_shardings and out_shardings given to jax.jit"
    )]
    NoSharding {
        /// Which input or output.
        value: InputOrOutput,
        /// The devices the model was exported for.
        devices: u32,
    },
    /// A named sharding that is neither replicated nor split along one dimension over the whole
    /// mesh.
    #[error(
        "{value} is sharded as {partitions:?} over mesh {axis_names:?} = {axis_sizes:?}: only replicated arrays and \
         arrays split along one dimension over the whole mesh are supported"
    )]
    Sharding {
        /// Which input or output.
        value: InputOrOutput,
        /// For each array dimension, the mesh axes it is split over.
        partitions: Vec<Vec<String>>,
        /// The mesh's axis names.
        axis_names: Vec<String>,
        /// The mesh's axis sizes.
        axis_sizes: Vec<u32>,
    },
}

/// One input or output of a model, by index (into [`crate::jax_export::JaxExport::in_avals`] or
/// [`crate::jax_export::JaxExport::out_avals`]); shown as `input 2`, `output 0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InputOrOutput {
    /// Input `i`.
    Input(usize),
    /// Output `i`.
    Output(usize),
}

impl fmt::Display for InputOrOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputOrOutput::Input(i) => write!(f, "input {i}"),
            InputOrOutput::Output(i) => write!(f, "output {i}"),
        }
    }
}

/// Dimensions joined for a message: `3,4`.
fn joined(dims: &[i64]) -> String {
    dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(",")
}

/// JAX's `(b, 8)` for dimensions (`(3,)` for one).
struct Spec<'a, D>(&'a [D]);

impl<D: fmt::Display> fmt::Display for Spec<'_, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|d| d.to_string()).collect();
        if parts.len() == 1 {
            write!(f, "({},)", parts[0])
        } else {
            write!(f, "({})", parts.join(", "))
        }
    }
}

/// What to do about an unknown serialization version.
fn version_advice(version: u16) -> &'static str {
    if version == 0 {
        "no JAX release writes 0: the file is not a jax.export artifact, or is damaged"
    } else {
        "it is newer than this crate: export the model with JAX 0.12 or older (jax.export of JAX 0.10 to 0.12 is \
         read), or use a newer pjrt-formats"
    }
}

/// Why a pre-FFI LAPACK custom call cannot be upgraded to its FFI form.
///
/// ```
/// use pjrt_formats::jax_export::LegacyLapackError;
/// let e = LegacyLapackError::Refused { target: "lapack_sgees".into(), reason: "sort = 'S'".into() };
/// assert!(e.to_string().contains("lapack_sgees"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LegacyLapackError {
    /// The call is not one jaxlib wrote, or it asks for what the FFI call cannot do.
    #[error(
        "the custom call {target} (a LAPACK kernel of jaxlib before its FFI form, as JAX 0.4.30 and 0.4.38 wrote them) \
         cannot be upgraded to its FFI form: {reason}; export the model again with JAX 0.5 or newer"
    )]
    Refused {
        /// The custom-call target.
        target: String,
        /// What differs from jaxlib's layout of the call.
        reason: String,
    },
}
