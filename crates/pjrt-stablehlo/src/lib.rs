//! A pure-Rust reader of StableHLO programs: portable artifacts (what `jax.export` serializes
//! as `mlir_module_serialized`, what `stablehlo.serialize_portable_artifact` writes: MLIR
//! bytecode of the VHLO dialect, [`read_bytecode`]) and MLIR text (what JAX prints, generic or
//! custom forms, [`parse_text`]), read into an [`ir::Module`] of StableHLO ops and printed as
//! MLIR text both CPU plugins compile, and written as a portable artifact for any StableHLO
//! version from [`MINIMUM_VERSION`] to [`NEWEST_READ_VERSION`] ([`write_bytecode`]); a
//! shape-polymorphic module is made static for concrete argument types by [`refine`] (as JAX
//! does before it compiles). It depends on `pjrt-types` only (for [`ir::ElementType`] and
//! [`StableHloVersion`]), not on `pjrt-client`, which uses it: its `stablehlo` feature writes a
//! newer artifact for the plugin's version when it compiles, and `pjrt-builder` builds this IR.
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
//! # CHLO
//!
//! VHLO has no CHLO, so [`write_bytecode`] writes each `chlo` op as the StableHLO ops of
//! StableHLO's own `chlo-legalize-to-stablehlo` decomposition (what XLA's serializer, the one
//! `jax.export` uses, does first). The ops JAX emits on CPU, found by lowering every
//! `jax.lax`, `jax.numpy` and `jax.scipy.special` function on each dtype
//! (`tools/list_chlo_ops.py`; the same 19 ops for JAX 0.10.2 and 0.12.0.1,
//! `tests/data/chlo/`), and what is written for them:
//!
//! | op | element types JAX uses | written as StableHLO |
//! |----|------------------------|----------------------|
//! | `acos`, `acosh`, `asin`, `asinh`, `atan`, `atanh` | f16, bf16, f32, f64, complex | all |
//! | `cosh`, `sinh`, `square` | f16, bf16, f32, f64, complex | all |
//! | `erf`, `erfc`, `erf_inv`, `lgamma`, `digamma` | f16, bf16, f32, f64 | all |
//! | `next_after` | f16, bf16, f32, f64 | all |
//! | `mulhi` | i8, i32, i64, ui8, ui32 | all (8 to 64 bits) |
//! | `top_k` | f16, bf16, f32, f64, i1, i8, i32, i64, ui8, ui32 | all |
//! | `polygamma`, `zeta` | f16, bf16, f32, f64 | all |
//!
//! Two departures from StableHLO's patterns, where the plugins answer otherwise: f32 erf is
//! x · (α/β) rather than (x · α)/β (XLA runs erf as an op of its own, which keeps erf of a
//! tiny x from flushing to 0), and digamma(±0) is -inf, as the 0.115 plugin says (StableHLO's
//! pattern, and the 0.106 plugin, say NaN). `is_inf`, `is_pos_inf`, `is_neg_inf` and `tan`
//! are written too. An op not written, or a
//! `chlo` op on a dynamic shape (refine first), is [`WriteError::Chlo`] naming it. Each
//! written op gives each CPU plugin's own answers for the op (tests/stablehlo/chlo.rs).
//!
//! ```
//! let text = "func.func public @main(%x: tensor<3xf32>) -> tensor<3xf32> {\n  \
//!             %0 = chlo.erf_inv %x : tensor<3xf32> -> tensor<3xf32>\n  return %0 : tensor<3xf32>\n}";
//! let module = pjrt_stablehlo::parse_text(text).unwrap();
//! let bytes = pjrt_stablehlo::write_bytecode(&module, pjrt_stablehlo::StableHloVersion::new(1, 16, 1)).unwrap();
//! let written = pjrt_stablehlo::read_bytecode(&bytes).unwrap();
//! assert!(written.walk().all(|op| !op.name.starts_with("chlo.")));
//! assert!(written.walk().any(|op| op.name == "stablehlo.log_plus_one"));
//! ```
//!
//! Hostile bytes or text give an [`Error`] with the byte offset (and the line and column in
//! text), never a panic; sizes and nesting are bounded by [`Limits`].
//!
//! # Versions read
//!
//! Portable artifacts of every StableHLO version from [`MINIMUM_VERSION`] (0.9.0) to
//! [`NEWEST_READ_VERSION`] (1.22.0) are read, and upgraded to current StableHLO forms as
//! StableHLO's own `vhlo-to-version` and `vhlo-legalize-to-stablehlo` do (integer lists
//! become `array<i64: ...>`, callees symbol references, attributes equal to their defaults are
//! dropped, `dynamic_conv_v1`'s `padding` attribute goes). Before 0.15.0 (MLIR bytecode
//! version 4 and older) an op has no properties: its inherent attributes are read from its
//! attribute dictionary by name. Locations of every kind (names, call sites, files and file
//! ranges, fused with and without metadata, unknown), of ops and of block arguments
//! ([`ir::Block::arg_locations`]), are read and kept.
//! An error names the VHLO op and the artifact's version, and says whether that version is
//! one this reader reads (the file is then damaged) or newer/older than it.
//!
//! The tests read what StableHLO's serializer writes (`tests/data/vhlo`, made by
//! `tools/gen_vhlo_testdata.py` with jaxlib 0.10.2 and 0.12.0.1): this repository's op-family
//! programs, JAX's with their locations and hand-written ones (collectives with channels,
//! send/recv, the dynamic ops, mesh-axes replica groups, every location kind), at every minor
//! version 0.9.0 .. 1.22.0, each into the module jaxlib's deserializer reads it as; the op
//! families run on the CPU plugin with the answers of JAX's text.
//!
//! Written ([`write_bytecode`]): every version [`MINIMUM_VERSION`] .. [`NEWEST_READ_VERSION`]
//! (1.22.0; programs are written for [`CURRENT_VERSION`], 1.20.0, by default: what the 0.115
//! CPU plugin reads); jaxlib's deserializer reads what this writer writes for each test program
//! at each of those versions into the module it reads StableHLO's own artifact as, and each is
//! byte for byte StableHLO's artifact: the writer numbers its tables and orders its sections as
//! MLIR's bytecode writer does, and records the use-list orders StableHLO's serializer leaves.
//!
//! Reader and writer share one VHLO table (`crates/pjrt-stablehlo/src/vhlo/table.rs`): each
//! op version's StableHLO versions and inherent attributes, each attribute's default (the
//! writer writes it for an attribute a module leaves out, the reader drops an attribute that
//! holds it), the scalar types' and enums' codes, and the attributes and types newer than
//! 0.9.0 with the version each needs. Checklist:
//!
//! - a new VHLO op version: add a row to `OPS` (its name, the StableHLO versions it exists
//!   in, its attributes sorted by name: the property order) and end its predecessor's row at
//!   the version before; a row of `DEFAULTS` for each attribute StableHLO may leave out; how
//!   `crates/pjrt-stablehlo/src/vhlo/legalize.rs` reads the op as StableHLO (attributes put
//!   together, an older version upgraded) and how `crates/pjrt-stablehlo/src/write/convert.rs`
//!   writes it back;
//! - a new scalar type or enum: a row of `SCALARS` (its code, its first version) or `ENUMS`;
//!   another new attribute or type: a row of `ATTRIBUTES_AND_TYPES` and its encoding in
//!   `crates/pjrt-stablehlo/src/decode.rs` and `crates/pjrt-stablehlo/src/write/encode.rs`;
//! - a new StableHLO version: [`NEWEST_READ_VERSION`] and its bytecode version in
//!   `crates/pjrt-stablehlo/src/vhlo/versions.rs`;
//! - then a program using it in `tools/gen_vhlo_testdata.py`, and the data regenerated with
//!   both jaxlibs (which also checks that jaxlib reads what the writer writes).

mod bytecode;
mod chlo;
mod decode;
mod error;
mod mlir_text;
mod names;
pub mod ir;
mod pretty;
mod print;
mod read;
mod refine;
mod text;
mod vhlo;
mod write;

pub use bytecode::{Limits, MAX_VERSION};
pub use error::{Error, Result};
pub use pjrt_types::StableHloVersion;
pub use pretty::print_pretty;
pub use print::{attr_text, mlir_element_name, print, type_text};
pub use refine::{bind_dimensions, dimension_parameters, is_polymorphic, refine, RefineError};
pub use vhlo::versions::{CURRENT_VERSION, MINIMUM_VERSION, NEWEST_READ_VERSION};
pub use write::{write_bytecode, WriteError};

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

/// The locations of function `function`'s arguments (its entry block's) in MLIR bytecode read
/// as [`read_bytecode`] reads it: where JAX writes its argument names (`jax.export` lowers
/// with `loc("params['w']")` on each argument), one per argument, unknown ones included (the
/// module keeps them too, in the entry block's [`ir::Block::arg_locations`]). `None` when the
/// module has no function of that name with a body.
///
/// ```
/// use pjrt_stablehlo::ir::Location;
/// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/formats/tanh_mul.portable-1.0.0.mlirbc");
/// let locations = pjrt_stablehlo::argument_locations(&std::fs::read(path).unwrap(), "main").unwrap().unwrap();
/// assert_eq!(locations.len(), 2);
/// assert!(pjrt_stablehlo::argument_locations(&std::fs::read(path).unwrap(), "absent").unwrap().is_none());
/// ```
pub fn argument_locations(bytes: &[u8], function: &str) -> Result<Option<Vec<std::sync::Arc<ir::Location>>>> {
    read::argument_locations(bytes, &Limits::default(), function)
}

/// Parses MLIR text (what `jax.jit(f).lower(...).as_text()`, `exported.mlir_module()`,
/// `stablehlo-opt` or [`print()`] write: the generic op form and the custom forms of the
/// `builtin`, `func`, `stablehlo`, `chlo` and `sdy` ops JAX prints) with the default
/// [`Limits`]. Locations and `#loc` aliases are kept on the ops; an error gives the line and
/// column in the text and what was expected there.
///
/// ```
/// let text = r#"
/// func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
///   %0 = stablehlo.add %x, %x : tensor<2xf32>
///   return %0 : tensor<2xf32>
/// }"#;
/// let module = pjrt_stablehlo::parse_text(text).unwrap();
/// assert!(pjrt_stablehlo::print(&module).contains("\"stablehlo.add\"(%0, %0)"));
///
/// let err = pjrt_stablehlo::parse_text("func.func @f() {\n  %0 = stablehlo.add %y, %y : tensor<f32>\n}").unwrap_err();
/// assert!(err.to_string().contains("line 2, column 22"), "{err}");
/// ```
pub fn parse_text(text: &str) -> Result<ir::Module> {
    parse_text_with(text, &Limits::default())
}

/// [`parse_text`] with explicit limits (regions nest at most `max_region_depth` deep, attributes and types `max_attr_depth`).
///
/// ```
/// let limits = pjrt_stablehlo::Limits { max_attr_depth: 4, ..Default::default() };
/// let deep = format!("func.func @f() attributes {{a = {}{}}}", "[".repeat(10), "]".repeat(10));
/// assert!(pjrt_stablehlo::parse_text_with(&deep, &limits).is_err());
/// ```
pub fn parse_text_with(text: &str, limits: &Limits) -> Result<ir::Module> {
    text::parse(text, limits)
}

/// Parses one attribute's MLIR text (`1 : i32`, `"{replicated}"`, `array<i64: 1, 2>`,
/// `#sdy.sharding<@mesh, [{"x"}, {}]>`), as [`parse_text`] reads it in an attribute
/// dictionary: the whole text must be the attribute, nothing before or after it.
///
/// ```
/// use pjrt_stablehlo::ir::{Attr, ElementType, Type};
/// let a = pjrt_stablehlo::parse_attribute("1 : i32").unwrap();
/// assert_eq!(a, Attr::Integer { value: 1, ty: Type::Scalar(ElementType::S32) });
/// assert!(pjrt_stablehlo::parse_attribute("1 : i32}, %evil: tensor<2xf32> {x = 1").is_err());
/// assert!(pjrt_stablehlo::parse_attribute("\"a\", b = 1").is_err());
/// ```
pub fn parse_attribute(text: &str) -> Result<ir::Attr> {
    text::parse_attribute(text, &Limits::default())
}

/// What the fuzz targets check on any input (`fuzz/fuzz_targets/stablehlo.rs` with libFuzzer,
/// `examples/fuzz_mutations.rs` on the stable toolchain in CI): the bytes either give an error
/// whose offset is inside the input, or read to a module that prints (generic and pretty); a module with a `@main`
/// is also refined for `@main`'s parameter types with each `?` made 2, which gives a module
/// that prints or an error; a module the writer takes is written, read back and written again
/// to the same bytes. Panics otherwise.
#[doc(hidden)]
pub fn fuzz_check(data: &[u8]) {
    match read_bytecode(data) {
        Ok(module) => {
            let text = print(&module);
            assert!(module.ops.is_empty() || !text.is_empty(), "a module with ops printed as nothing");
            let pretty = print_pretty(&module);
            assert!(module.ops.is_empty() || !pretty.is_empty(), "a module with ops printed pretty as nothing");
            let _ = is_polymorphic(&module);
            check_written(&module);
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

/// A module that read cleanly, written for its producer's version (when the writer takes
/// it), reads back, and writing that gives the same bytes. (Not equality with the module
/// read: a damaged file can number a region's values in a way no writer would, which
/// writing normalizes.)
fn check_written(module: &ir::Module) {
    let Some(target) = StableHloVersion::of_producer(&module.producer) else { return };
    let Ok(bytes) = write_bytecode(module, target) else { return };
    let again = read_bytecode(&bytes).unwrap_or_else(|e| panic!("what the writer wrote does not read: {e}"));
    let rewritten = write_bytecode(&again, target).unwrap_or_else(|e| panic!("a written module does not write: {e}"));
    assert!(rewritten == bytes, "a written module, read and written again, gives other bytes");
}

/// What the text fuzz target (`fuzz/fuzz_targets/stablehlo_text.rs`, and `examples/fuzz_mutations.rs`
/// on the stable toolchain) checks on any input: bytes that are not UTF-8 are not text (the
/// caller's error); text either gives an error whose offset is inside it, or parses to a
/// module whose print parses again to the same module (locations aside), whose pretty print
/// parses to that module too (the order of each op's attributes aside: a custom form puts
/// those it states first), and which is refined as [`fuzz_check`] refines. Panics otherwise.
#[doc(hidden)]
pub fn fuzz_check_text(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match parse_text(text) {
        Ok(module) => {
            let printed = print(&module);
            let again = parse_text(&printed)
                .unwrap_or_else(|e| panic!("the print of a parsed module does not parse: {e}\n{printed}"));
            assert_eq!(print(&again), printed, "the print of a parsed module prints differently once parsed");
            let pretty = print_pretty(&module);
            let pretty_again = parse_text(&pretty)
                .unwrap_or_else(|e| panic!("the pretty print of a parsed module does not parse: {e}\n{pretty}"));
            assert!(
                sorted_attributes(pretty_again) == sorted_attributes(again),
                "the pretty print of a parsed module parses to another module than its print\n{pretty}"
            );
            let _ = is_polymorphic(&module);
            if let Some(args) = refine::main_parameters(&module, 2) {
                if let Ok(refined) = refine(&module, &args) {
                    let _ = print(&refined);
                }
            }
        }
        Err(e) => assert!(e.offset() <= data.len(), "error offset {} past {} bytes", e.offset(), data.len()),
    }
}

/// The module with each op's attributes sorted by name (MLIR's attribute dictionaries have no
/// order) and its locations made unknown.
fn sorted_attributes(mut m: ir::Module) -> ir::Module {
    fn sort(ops: &mut [ir::Op]) {
        for op in ops {
            op.attributes.sort_by(|a, b| a.0.cmp(&b.0));
            op.location = std::sync::Arc::new(ir::Location::Unknown);
            for r in &mut op.regions {
                for b in &mut r.blocks {
                    sort(&mut b.ops);
                }
            }
        }
    }
    sort(&mut m.ops);
    m
}
