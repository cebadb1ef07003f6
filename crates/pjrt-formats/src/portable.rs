//! StableHLO portable artifacts for a chosen StableHLO version: what an older plugin reads.
//!
//! A portable artifact names the StableHLO version it was serialized for (JAX 0.12 writes
//! 1.18.0); a plugin reads those from its `stablehlo_minimum_version` to its
//! `stablehlo_current_version` (1.16.1 for the 0.106 CPU plugin) and the client refuses the
//! others before compiling ([`pjrt_client::Error::ProgramVersion`]). [`for_plugin`] serializes
//! such a program again for the plugin's own version, as XLA's C++ client does, with
//! [`pjrt_stablehlo::write_bytecode`]; [`portable_artifact`] writes one for any version (what
//! `pjrt compile --emit-portable` writes). An op, attribute or type the target lacks is
//! [`Error::Portable`] naming it and the version it needs.
//!
//! The compile cache ([`crate::compile_cache`]), [`crate::jax_export::JaxExport::compile`] and
//! the `pjrt` command go through [`for_plugin`], so they key and compile on what the plugin is
//! sent.

use std::borrow::Cow;

use pjrt_client::{Plugin, Program, ProgramFormat};
use pjrt_stablehlo::{StableHloVersion, CURRENT_VERSION, MINIMUM_VERSION};

use crate::error::{Error, Result};

/// `program` as `plugin` reads it: unchanged (borrowed) unless it is a portable artifact of a
/// newer StableHLO version than the plugin's `stablehlo_current_version`, which is written
/// again for that version. Text, plain MLIR bytecode and HLO are never changed; neither is
/// anything for a plugin that does not say which versions it reads.
///
/// ```
/// use pjrt_client::{Plugin, Program};
///
/// # fn main() -> pjrt_formats::Result<()> {
/// let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |line| eprintln!("{line}"))?.path)?;
/// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/formats/tanh_mul.portable-1.0.0.mlirbc");
/// let program = Program::from_file(path)?;
/// // StableHLO 1.0.0 is older than what the plugin reads up to: sent as it is.
/// assert!(matches!(pjrt_formats::portable::for_plugin(&program, &plugin)?, std::borrow::Cow::Borrowed(_)));
/// # Ok(()) }
/// ```
pub fn for_plugin<'p>(program: &'p Program, plugin: &Plugin) -> Result<Cow<'p, Program>> {
    let (Some(target), Some(current)) = (program.stablehlo_target(), plugin.stablehlo_current_version()) else {
        return Ok(Cow::Borrowed(program));
    };
    if target <= current {
        return Ok(Cow::Borrowed(program));
    }
    let target = plugin_version(plugin).ok_or_else(|| {
        Error::invalid(format!(
            "the plugin reads StableHLO up to {current}, older than any version a portable artifact can be written \
             for ({} and later): use a newer plugin",
            MINIMUM_VERSION
        ))
    })?;
    Ok(Cow::Owned(portable_artifact(program, target)?))
}

/// The StableHLO version to write for `plugin`: its `stablehlo_current_version`, or the
/// writer's newest ([`CURRENT_VERSION`]) for a plugin newer than that; `None` for a plugin that
/// does not say, or says one the writer cannot write (older than [`MINIMUM_VERSION`]).
///
/// ```
/// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.path)?;
/// let version = pjrt_formats::portable::plugin_version(&plugin).unwrap();
/// assert!(version >= pjrt_stablehlo::MINIMUM_VERSION && version <= pjrt_stablehlo::CURRENT_VERSION);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn plugin_version(plugin: &Plugin) -> Option<StableHloVersion> {
    // A plugin newer than the writer knows reads what the writer writes newest.
    plugin.stablehlo_current_version().filter(|v| *v >= MINIMUM_VERSION).map(|v| v.min(CURRENT_VERSION))
}

/// `program` written as a StableHLO portable artifact for `target`: a portable artifact of
/// another version read and written again, or MLIR text parsed and written. The declared
/// parameters ([`Program::with_parameters`]) are kept.
///
/// ```
/// use pjrt_client::Program;
/// use pjrt_stablehlo::{StableHloVersion, CURRENT_VERSION, MINIMUM_VERSION};
///
/// let text = "func.func public @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n  \
///             %0 = stablehlo.tan %x : tensor<2xf32>\n  return %0 : tensor<2xf32>\n}";
/// let program = Program::mlir_text(text)?;
/// let artifact = pjrt_formats::portable::portable_artifact(&program, StableHloVersion::new(1, 16, 1))?;
/// assert_eq!(artifact.bytecode_producer(), Some("StableHLO_v1.16.1"));
/// // `tan` is StableHLO 1.4.0's: it has no form for 1.3.0.
/// let error = pjrt_formats::portable::portable_artifact(&program, StableHloVersion::new(1, 3, 0)).unwrap_err();
/// assert!(error.to_string().contains("tan"), "{error}");
/// # Ok::<(), pjrt_formats::Error>(())
/// ```
pub fn portable_artifact(program: &Program, target: StableHloVersion) -> Result<Program> {
    if program.format() != ProgramFormat::Mlir {
        return Err(Error::invalid(
            "an HLO program cannot be written as a StableHLO portable artifact: give a StableHLO program",
        ));
    }
    let module = match program.text() {
        Some(text) => pjrt_stablehlo::parse_text(text)
            .map_err(|e| Error::invalid(format!("the program's MLIR text does not parse: {e}")))?,
        None => pjrt_stablehlo::read_bytecode(program.code()).map_err(|e| {
            Error::invalid(format!("the program's bytecode cannot be read to be written for StableHLO {target}: {e}"))
        })?,
    };
    let bytes = pjrt_stablehlo::write_bytecode(&module, target)?;
    let written = Program::mlir_bytecode(bytes)?;
    Ok(match program.declared_parameters() {
        Some(parameters) => written.with_parameters(parameters.iter().cloned()),
        None => written,
    })
}
