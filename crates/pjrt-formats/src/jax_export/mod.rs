//! Models exported from JAX with `jax.export`: the bytes of
//! `jax.export.export(jax.jit(f))(*args).serialize()`.
//!
//! The artifact is a FlatBuffer (JAX's `serialization.fbs` schema) holding the StableHLO module
//! as MLIR bytecode plus what is needed to call it: the input and output avals (shapes and
//! dtypes), shardings, the platforms it was lowered for, which inputs the module keeps
//! (`module_kept_var_idx`), effects and version numbers. [`JaxExport`] reads it with a
//! bounds-checked reader of our own (hostile bytes give a [`JaxExportError`], never a panic),
//! says what it holds, refuses what this crate cannot run ([`Unrunnable`]), and maps the
//! caller's inputs (all of them, in the order of [`JaxExport::in_avals`]) to the module's
//! arguments, in the order [`JaxExport::module_arguments`] gives (the platform index first when
//! the export has several platforms, then the kept inputs). Using a model wrongly (another
//! platform, inputs that do not fit) is a [`JaxExportError`] too, with JAX's messages where JAX
//! has one:
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
mod compile;
mod flatbuffer;
mod kept;
mod legacy_lapack;
mod model;
mod names;
mod polymorphic;
mod runner;
mod schema;
mod shardings;

pub use crate::error::{InputOrOutput, JaxExportError, LegacyLapackError, Unrunnable};
pub use arguments::ModuleArgument;
pub use kept::KeptExecutables;
pub use legacy_lapack::{may_call_legacy_lapack, upgrade_legacy_lapack};
pub use model::{Aval, Dim, MemorySpace, PyTree};
pub use polymorphic::{refined_program, InputShape};
pub use runner::Runner;
pub use shardings::{AbstractMesh, JaxSharding, NamedSharding};

/// The newest `jax.export` serialization version this reader knows (JAX 0.12's, which adds the
/// `jax_version` of the writer). JAX 0.10 and 0.11 write 3 in the header whatever their schema
/// (11 for 0.10); JAX 0.12 writes the version it really is.
pub const MAX_SERIALIZATION_VERSION: u16 = 12;

/// The calling-convention versions whose module signature this crate builds arguments for.
pub const SUPPORTED_CALLING_CONVENTIONS: std::ops::RangeInclusive<u16> = 9..=10;

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

#[cfg(test)]
mod tests;
