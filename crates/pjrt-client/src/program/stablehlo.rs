//! Programs through the pure-Rust StableHLO IR (`pjrt-stablehlo`, feature `stablehlo`): a
//! portable artifact newer than a plugin reads is written again for the plugin's version when
//! it is compiled (as XLA's own client does), any program can be written as a portable artifact
//! for a chosen version ([`Program::portable_artifact`]), a module of the IR becomes a program of
//! MLIR bytecode ([`Program::from_module`]: what a refined shape-polymorphic module is sent as),
//! and MLIR bytecode's `@main` signature and module attributes are read, which the text readers
//! of `program` cannot.

use std::borrow::Cow;

use pjrt_stablehlo::ir::{Attr, Dim, Module, Op, Type};
use pjrt_stablehlo::{CURRENT_VERSION, MINIMUM_VERSION};
use pjrt_types::StableHloVersion;

use super::{MlirParameter, ModuleCounts, Program, ProgramFormat};
use crate::error::{Error, Result};

impl Program {
    /// The program written as a StableHLO portable artifact for `target` (what `pjrt compile
    /// --emit-portable` writes): a portable artifact of another version read and written again,
    /// MLIR text parsed and written. The declared parameters ([`Program::with_parameters`]) are
    /// kept. An op, attribute or type `target` lacks is [`Error::Portable`] naming it and the
    /// version it needs. `chlo` ops (which VHLO lacks) are written as their StableHLO
    /// decompositions, as XLA's serializer writes them (`pjrt_stablehlo`'s crate doc lists them).
    ///
    /// [`crate::Client::compile`] does this itself for a portable artifact newer than the
    /// plugin reads (for the plugin's `stablehlo_current_version`).
    ///
    /// ```
    /// use pjrt_client::{Program, StableHloVersion};
    ///
    /// let text = "func.func public @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n  \
    ///             %0 = stablehlo.tan %x : tensor<2xf32>\n  return %0 : tensor<2xf32>\n}";
    /// let program = Program::mlir_text(text)?;
    /// let artifact = program.portable_artifact(StableHloVersion::new(1, 16, 1))?;
    /// assert_eq!(artifact.stablehlo_target(), Some(StableHloVersion::new(1, 16, 1)));
    /// // `tan` is StableHLO 1.4.0's: it has no form for 1.3.0.
    /// let error = program.portable_artifact(StableHloVersion::new(1, 3, 0)).unwrap_err();
    /// assert!(matches!(error, pjrt_client::Error::Portable(_)) && error.to_string().contains("tan"), "{error}");
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn portable_artifact(&self, target: StableHloVersion) -> Result<Program> {
        let written = Program::mlir_bytecode(pjrt_stablehlo::write_bytecode(&self.module()?, target)?)?;
        Ok(match self.declared_parameters() {
            Some(parameters) => written.with_parameters(parameters.iter().cloned()),
            None => written,
        })
    }

    /// A module of the IR as a program of MLIR bytecode: a StableHLO portable artifact for the
    /// version its producer names (`StableHLO_v1.18.0`: a module read from an artifact, or
    /// refined from one), for [`pjrt_stablehlo::CURRENT_VERSION`] when it names none (a module
    /// parsed from text). A portable artifact is the form StableHLO keeps readable across
    /// versions (its text is not), a compile writes it again for a plugin that reads only older
    /// ones, and the CPU plugin compiles it as fast as the text [`pjrt_stablehlo::print`] gives
    /// (docs/performance.md).
    ///
    /// ```
    /// let text = "func.func public @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n  return %x : tensor<2xf32>\n}";
    /// let module = pjrt_stablehlo::parse_text(text).unwrap();
    /// let program = pjrt_client::Program::from_module(&module)?;
    /// assert_eq!(program.stablehlo_target(), Some(pjrt_stablehlo::CURRENT_VERSION));
    /// assert!(program.text().is_none());
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn from_module(module: &Module) -> Result<Program> {
        let target = StableHloVersion::of_producer(&module.producer)
            .map_or(CURRENT_VERSION, |v| v.clamp(MINIMUM_VERSION, CURRENT_VERSION));
        Program::mlir_bytecode(pjrt_stablehlo::write_bytecode(module, target)?)
    }

    /// The program read into the IR: MLIR text parsed, bytecode read.
    fn module(&self) -> Result<Module> {
        if self.format() != ProgramFormat::Mlir {
            return Err(Error::invalid(
                "an HLO program has no StableHLO form to write as a portable artifact: give a StableHLO program",
            ));
        }
        Ok(match self.text() {
            Some(text) => pjrt_stablehlo::parse_text(text)?,
            None => pjrt_stablehlo::read_bytecode(self.code())?,
        })
    }
}

/// `program` as a plugin that reads StableHLO up to `current` reads it: unchanged (borrowed)
/// unless it is a portable artifact of a newer version, which is written again for `current`
/// (or the writer's default target, [`pjrt_stablehlo::CURRENT_VERSION`], when the plugin reads
/// newer ones still). Text, plain bytecode and HLO are never changed; neither is anything for a
/// plugin that does not say what it reads, or says a version older than any the writer writes
/// (the version check then refuses it, naming both versions).
pub(crate) fn for_plugin(program: &Program, current: Option<StableHloVersion>) -> Result<Cow<'_, Program>> {
    match (program.stablehlo_target(), current.and_then(write_target)) {
        (Some(target), Some(write)) if target > write => Ok(Cow::Owned(program.portable_artifact(write)?)),
        _ => Ok(Cow::Borrowed(program)),
    }
}

/// The version to write a portable artifact for, for a plugin that reads up to `current`:
/// `current`, or the writer's default target ([`CURRENT_VERSION`]) for a plugin newer than that;
/// `None` for a plugin older than any version the writer writes.
pub(crate) fn write_target(current: StableHloVersion) -> Option<StableHloVersion> {
    (current >= MINIMUM_VERSION).then(|| current.min(CURRENT_VERSION))
}

/// The parameters of `@main` in MLIR bytecode, as `mlir_main_parameters` reads them from text:
/// every one a static tensor.
pub(crate) fn bytecode_main_parameters(code: &[u8]) -> std::result::Result<Vec<MlirParameter>, String> {
    let module = pjrt_stablehlo::read_bytecode(code).map_err(|e| format!("the MLIR bytecode does not read: {e}"))?;
    let main = module.walk().find(|op| is_main(op)).ok_or("the MLIR bytecode has no `func.func @main`")?;
    let Some(Attr::Type(Type::Function { inputs, .. })) = main.attr("function_type") else {
        return Err("@main has no function type".to_string());
    };
    inputs
        .iter()
        .map(|ty| match ty {
            Type::Tensor(t) if t.encoding.is_none() => {
                let dims: Option<Vec<i64>> = t
                    .dims
                    .iter()
                    .map(|d| match d {
                        Dim::Fixed(n) => i64::try_from(*n).ok(),
                        Dim::Dynamic => None,
                    })
                    .collect();
                let dims =
                    dims.ok_or_else(|| format!("parameter type `{}` is not static", pjrt_stablehlo::type_text(ty)))?;
                Ok((t.element_type().filter(|e| e.is_array_type()), dims))
            }
            other => Err(format!("parameter type `{}` is not a static tensor", pjrt_stablehlo::type_text(other))),
        })
        .collect()
}

/// What MLIR bytecode's module attributes say (`mhlo.num_replicas`, `mhlo.num_partitions`,
/// Shardy), as [`Program::module_counts`] reads them from text; nothing for bytecode that does
/// not read.
pub(crate) fn bytecode_module_counts(code: &[u8]) -> ModuleCounts {
    let Ok(module) = pjrt_stablehlo::read_bytecode(code) else { return ModuleCounts::default() };
    let top = module.ops.iter().find(|op| op.name == "builtin.module");
    let count = |name: &str| match top.and_then(|op| op.attr(name)) {
        Some(Attr::Integer { value, .. }) => usize::try_from(*value).ok(),
        _ => None,
    };
    let uses_shardy =
        module.walk().any(|op| op.name.starts_with("sdy.") || op.attributes.iter().any(|(_, a)| has_sdy(a)));
    ModuleCounts { num_replicas: count("mhlo.num_replicas"), num_partitions: count("mhlo.num_partitions"), uses_shardy }
}

/// Refuses a module with a `dense<...>` literal of a type XLA cannot import, naming the op
/// (see [`super::LITERAL_TYPES_XLA_CANNOT_IMPORT`]).
pub(crate) fn refuse_literals_xla_cannot_import(module: &Module) -> Result<()> {
    for op in module.walk() {
        if let Some(element_type) = op.attributes.iter().find_map(|(_, attr)| literal_xla_cannot_import(attr)) {
            return Err(Error::LiteralXlaCannotImport { element_type, op: op.name.clone() });
        }
    }
    Ok(())
}

fn literal_xla_cannot_import(attr: &Attr) -> Option<pjrt_types::ElementType> {
    match attr {
        Attr::Dense { ty: Type::Tensor(t), .. } => {
            t.element_type().filter(|e| super::LITERAL_TYPES_XLA_CANNOT_IMPORT.iter().any(|(_, t)| t == e))
        }
        Attr::Array(items) => items.iter().find_map(literal_xla_cannot_import),
        Attr::Dict(entries) => entries.iter().find_map(|(_, a)| literal_xla_cannot_import(a)),
        _ => None,
    }
}

fn is_main(op: &Op) -> bool {
    op.name == "func.func" && matches!(op.attr("sym_name"), Some(Attr::String(s)) if s == b"main")
}

fn has_sdy(attr: &Attr) -> bool {
    match attr {
        Attr::Sdy { .. } => true,
        Attr::Array(items) => items.iter().any(has_sdy),
        Attr::Dict(entries) => entries.iter().any(|(_, a)| has_sdy(a)),
        _ => false,
    }
}

impl From<pjrt_stablehlo::WriteError> for Error {
    #[cold]
    fn from(e: pjrt_stablehlo::WriteError) -> Self {
        Error::Portable(e)
    }
}

impl From<pjrt_stablehlo::Error> for Error {
    #[cold]
    fn from(e: pjrt_stablehlo::Error) -> Self {
        Error::StableHlo(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PORTABLE_1_0_0: &[u8] = include_bytes!("../../../../tests/data/formats/tanh_mul.portable-1.0.0.mlirbc");

    #[test]
    fn newer_artifacts_are_written_for_the_plugin_and_others_are_sent_as_they_are() {
        let v = StableHloVersion::new;
        let program = Program::mlir_bytecode(PORTABLE_1_0_0.to_vec()).unwrap().with_parameters([]);
        // Older than the plugin, or a plugin that does not say: as it is.
        for current in [Some(v(1, 0, 0)), Some(v(1, 20, 0)), None] {
            assert!(matches!(for_plugin(&program, current).unwrap(), Cow::Borrowed(_)), "{current:?}");
        }
        // Newer: written for the plugin's version, the declared parameters kept.
        let sent = for_plugin(&program, Some(v(0, 9, 5))).unwrap();
        assert_eq!(sent.stablehlo_target(), Some(v(0, 9, 5)));
        assert_eq!(sent.declared_parameters(), Some(&[][..]));
        // A plugin older than any version the writer writes: left to the version check.
        assert!(matches!(for_plugin(&program, Some(v(0, 8, 0))).unwrap(), Cow::Borrowed(_)));
        // Text and HLO carry no version.
        let text = Program::mlir_text("func.func @main() { return }").unwrap();
        assert!(matches!(for_plugin(&text, Some(v(0, 9, 0))).unwrap(), Cow::Borrowed(_)));
    }

    #[test]
    fn bytecode_signatures_and_counts_read_as_text_ones() {
        // The same parameters as the text reader finds in the module printed in custom form.
        let params = bytecode_main_parameters(PORTABLE_1_0_0).unwrap();
        let text = pjrt_stablehlo::print_pretty(&pjrt_stablehlo::read_bytecode(PORTABLE_1_0_0).unwrap());
        assert_eq!(params.len(), 2);
        assert_eq!(params, super::super::mlir_main_parameters(&text).unwrap());
        let with_counts = "module @m attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 3 : i32} {\n  \
                           func.func public @main(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {\n    return %x : tensor<?x2xf32>\n  }\n}";
        let bytes = Program::mlir_text(with_counts).unwrap().portable_artifact(CURRENT_VERSION).unwrap();
        let counts = bytecode_module_counts(bytes.code());
        assert_eq!((counts.num_replicas, counts.num_partitions, counts.uses_shardy), (Some(3), Some(2), false));
        assert!(bytecode_main_parameters(bytes.code()).unwrap_err().contains("tensor<?x2xf32>"));
        assert_eq!(bytecode_module_counts(b"ML\xefR"), ModuleCounts::default());
    }
}
