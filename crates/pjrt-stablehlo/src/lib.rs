//! A pure-Rust reader of StableHLO portable artifacts (what `jax.export` serializes as
//! `mlir_module_serialized`, what `stablehlo.serialize_portable_artifact` writes): MLIR
//! bytecode of the VHLO dialect, read into an [`ir::Module`] of StableHLO ops and printed as
//! MLIR text both CPU plugins compile; a shape-polymorphic module is made static for concrete
//! argument types by [`refine`] (as JAX does before it compiles).
//!
//! ```
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/formats/tanh_mul.portable-1.0.0.mlirbc");
//! let bytes = std::fs::read(path).unwrap();
//! let module = pjrt_stablehlo::read_bytecode(&bytes).unwrap();
//! println!("{} ops, from {}", module.walk().count(), module.producer);
//! let text = pjrt_stablehlo::print(&module);
//! assert!(text.contains("stablehlo.tanh"));
//! ```
//!
//! Hostile bytes give an [`Error`] with the byte offset, never a panic; sizes and nesting are
//! bounded by [`Limits`].

mod bytecode;
mod decode;
mod error;
mod mlir_text;
pub mod ir;
mod print;
mod read;
mod refine;
mod vhlo;

pub use bytecode::{Limits, MAX_VERSION};
pub use error::{Error, Result};
pub use print::{attr_text, mlir_element_name, print, type_text};
pub use refine::{is_polymorphic, refine, RefineError};

/// Reads MLIR bytecode (a StableHLO portable artifact, or builtin/func/stablehlo bytecode)
/// with the default [`Limits`].
///
/// ```
/// assert!(pjrt_stablehlo::read_bytecode(b"").is_err());
/// ```
pub fn read_bytecode(bytes: &[u8]) -> Result<ir::Module> {
    read_bytecode_with(bytes, &Limits::default())
}

/// [`read_bytecode`] with explicit limits.
///
/// ```
/// let limits = pjrt_stablehlo::Limits::default();
/// assert!(pjrt_stablehlo::read_bytecode_with(b"ML\xefR\x0d", &limits).is_err());
/// ```
pub fn read_bytecode_with(bytes: &[u8], limits: &Limits) -> Result<ir::Module> {
    read::read(bytes, limits)
}

/// What the fuzz targets check on any input (`fuzz/fuzz_targets/stablehlo.rs` with libFuzzer,
/// `examples/fuzz_mutations.rs` on the stable toolchain in CI): the bytes either give an error
/// whose offset is inside the input, or read to a module that prints; a module with a `@main`
/// is also refined for `@main`'s parameter types with each `?` made 2, which gives a module
/// that prints or an error. Panics otherwise.
#[doc(hidden)]
pub fn fuzz_check(data: &[u8]) {
    match read_bytecode(data) {
        Ok(module) => {
            let text = print(&module);
            assert!(module.ops.is_empty() || !text.is_empty(), "a module with ops printed as nothing");
            let _ = is_polymorphic(&module);
            if let Some(args) = refine::main_parameters(&module, 2) {
                if let Ok(refined) = refine(&module, &args) {
                    let text = print(&refined);
                    assert!(refined.ops.is_empty() || !text.is_empty(), "a refined module printed as nothing");
                }
            }
        }
        Err(e) => assert!(e.offset() <= data.len(), "error offset {} past {} bytes", e.offset(), data.len()),
    }
}
