//! Compiling a program on a client ([`Client::compile`]: the providers of built-in handlers
//! prepare it first, `client/builtins.rs`), the StableHLO version check made before any compile,
//! and [`RawProgram`]: the one `PJRT_Program` both compiles hand the plugin (on a client here,
//! against a topology in `topology`).

use std::ffi::c_char;
use std::marker::PhantomData;
use std::ptr::NonNull;

use super::{ArrayShape, LoadedExecutable};
use crate::call::pjrt_call;
use crate::call::trace::span;
use crate::client::builtins;
use crate::client::Client;
use crate::compile_options::CompileOptions;
use crate::error::{Error, Result};
use crate::plugin::Plugin;
use crate::program::{main_parameters, Program};
use crate::sys::{self, Args};
use pjrt_types::StableHloVersion;

/// A [`Program`] as PJRT takes it (`PJRT_Program`: code, its size, the format string and the
/// struct's size), borrowing the program's code for as long as it lives: filled here only, for
/// both compiles.
pub(crate) struct RawProgram<'p> {
    raw: sys::PJRT_Program,
    code: PhantomData<&'p Program>,
}

impl<'p> RawProgram<'p> {
    pub(crate) fn new(program: &'p Program) -> Self {
        // A `'static` name: it outlives every call.
        let format = program.format().as_pjrt_str();
        let mut raw = sys::PJRT_Program::new();
        // PJRT declares `code` as `char*` but only reads it.
        raw.code = program.code().as_ptr() as *mut c_char;
        raw.code_size = program.code().len();
        raw.format = format.as_ptr() as *const c_char;
        raw.format_size = format.len();
        RawProgram { raw, code: PhantomData }
    }

    /// The struct for a compile's `program` field, valid while `self` lives.
    pub(crate) fn as_ptr(&self) -> *const sys::PJRT_Program {
        &self.raw
    }
}

impl Client {
    /// Compiles `program` for this client's devices.
    ///
    /// The options are validated first: nothing that makes a plugin abort (no replicas, no
    /// partitions, more devices than the client has, unknown device ids) reaches it. The
    /// providers of built-in handlers of the client and the process register the handlers the
    /// program calls first ([`crate::ffi::BuiltinProvider`]).
    ///
    /// ```
    /// use pjrt_client::{CompileOptions, ElementType, Program};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// let program = Program::mlir_text(r#"
    ///   func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
    ///     %0 = stablehlo.add %a, %b : tensor<4xf32>
    ///     return %0 : tensor<4xf32>
    ///   }"#)?;
    /// let exe = client.compile(&program, &CompileOptions::new())?;
    /// assert_eq!((exe.num_replicas(), exe.num_partitions(), exe.num_outputs()), (1, 1, 1));
    /// assert_eq!(exe.output_shapes()[0].element_type, Some(ElementType::F32));
    /// assert_eq!(exe.output_shapes()[0].dims, [4]);
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn compile(&self, program: &Program, options: &CompileOptions) -> Result<LoadedExecutable> {
        builtins::prepare(self, program.code())?;
        self.compile_program(program, options).map_err(|e| builtins::explain_failure(self, program.code(), e))
    }

    /// [`Client::compile`] without its providers of built-in handlers (what a handler's
    /// registration compiles its probe programs with: a provider is never consulted from inside
    /// itself).
    pub(crate) fn compile_program(&self, program: &Program, options: &CompileOptions) -> Result<LoadedExecutable> {
        let _span = span!(INFO, "compile", format = program.format().as_pjrt_str(), bytes = program.code().len());
        let options_bytes = options.to_bytes()?;
        let needed = options.num_replicas_requested() * options.num_partitions_requested();
        let available = self.devices().len();
        if !options.is_portable() && needed > available {
            return Err(Error::invalid(format!(
                "the program needs {} replicas × {} partitions = {needed} devices, but the client has {available}; \
                 create the client with more devices (for the CPU plugin: cpu_device_count)",
                options.num_replicas_requested(),
                options.num_partitions_requested()
            )));
        }
        if let Some(assignment) = options.assignment()? {
            for id in assignment.device_ids() {
                let known = i32::try_from(id).ok().and_then(|id| self.lookup_device(id).ok()).is_some();
                if !known {
                    return Err(Error::invalid(format!(
                        "the device assignment names device {id}, which the client does not have"
                    )));
                }
            }
        }
        let program = &*crate::program::for_plugin(program, self.plugin().stablehlo_current_version())?;
        check_stablehlo_version(self.plugin(), program)?;
        crate::program::refuse_what_aborts_plugins(program)?;
        let raw_program = RawProgram::new(program);
        let mut args = sys::PJRT_Client_Compile_Args::new();
        args.client = self.raw();
        args.program = raw_program.as_ptr();
        args.compile_options = options_bytes.as_ptr() as *const c_char;
        args.compile_options_size = options_bytes.len();
        pjrt_call!(self.api(), PJRT_Client_Compile, &mut args).map_err(|e| add_compile_hint(e, program))?;
        let raw = NonNull::new(args.executable)
            .ok_or_else(|| Error::invalid("PJRT_Client_Compile succeeded but returned no executable"))?;
        let mut executable = LoadedExecutable::new(self, raw, options.is_portable())?;
        executable.argument_layouts = options.argument_layout_shapes()?.into_iter().map(|s| s.layout).collect();
        executable.source_parameters = match program.declared_parameters() {
            _ if options.proto().parameter_is_tupled_arguments => {
                Err("the arguments are tupled (parameter_is_tupled_arguments)".to_owned())
            }
            Some(declared) => Ok(declared
                .iter()
                .map(|(element_type, dims)| ArrayShape { element_type: Some(*element_type), dims: dims.clone() })
                .collect()),
            None => main_parameters(program).map(|params| {
                params.into_iter().map(|(element_type, dims)| ArrayShape { element_type, dims }).collect()
            }),
        };
        Ok(executable)
    }
}

/// What to do about a portable artifact newer than the plugin reads, which a compile with the
/// `stablehlo` feature writes for the plugin's version unless the plugin reads none the writer
/// writes.
#[cfg(feature = "stablehlo")]
const NEWER_THAN_PLUGIN: &str = "use a newer plugin (this one reads no StableHLO version a portable artifact can be \
                                 written for), or serialize it for the plugin's version yourself";
#[cfg(not(feature = "stablehlo"))]
const NEWER_THAN_PLUGIN: &str = "build pjrt-client with its `stablehlo` feature (a default one: compiles then write it \
                                 for the plugin's version), serialize it for an older target \
                                 (stablehlo.serialize_portable_artifact with target_version at most the plugin's current \
                                 version), or use a newer plugin";

/// Refuses a portable artifact serialized for a StableHLO version the plugin does not read
/// (its header says which; the plugin's attributes say what it reads). Programs without a
/// version (text, plain bytecode, HLO) and plugins without the attributes pass unchecked.
pub(crate) fn check_stablehlo_version(plugin: &Plugin, program: &Program) -> Result<()> {
    let Some(target) = program.stablehlo_target() else { return Ok(()) };
    let (Some(minimum), Some(current)) = (plugin.stablehlo_minimum_version(), plugin.stablehlo_current_version())
    else {
        return Ok(());
    };
    check_version_range(target, minimum, current)
}

/// Refuses `target` outside `minimum..=current`, saying what to do.
fn check_version_range(target: StableHloVersion, minimum: StableHloVersion, current: StableHloVersion) -> Result<()> {
    let advice = if target > current {
        NEWER_THAN_PLUGIN
    } else if target < minimum {
        "serialize it again for a newer target (at least the plugin's minimum version), or use an older plugin"
    } else {
        return Ok(());
    };
    Err(Error::ProgramVersion { program: target, minimum, current, advice })
}

fn add_compile_hint(error: Error, program: &Program) -> Error {
    match error {
        Error::Pjrt { function, code, message, payloads } => {
            let mut message = message;
            if let Some(text) = program.text() {
                if !text.contains("@main") {
                    message.push_str(" (hint: the entry function must be named `main`)");
                }
            }
            if message.contains("Failed to parse") || message.contains("forward incompatibility") {
                message.push_str(
                    " (hint: check the program's syntax, and that it targets a StableHLO version between the \
                     plugin's stablehlo_minimum_version and stablehlo_current_version, see Plugin::stablehlo_version)",
                );
            }
            Error::Pjrt { function, code, message, payloads }
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_outside_the_plugins_range_are_refused_with_what_to_do() {
        let v = StableHloVersion::new;
        let (minimum, current) = (v(0, 9, 0), v(1, 16, 1));
        for inside in [minimum, v(1, 0, 0), current] {
            assert!(check_version_range(inside, minimum, current).is_ok(), "{inside}");
        }
        // Newer: refused where the compile did not write it for the plugin (without the
        // `stablehlo` feature, or for a plugin the writer writes nothing for).
        match check_version_range(v(1, 18, 0), minimum, current) {
            Err(e @ Error::ProgramVersion { program, .. }) => {
                assert_eq!(program, v(1, 18, 0));
                let text = e.to_string();
                assert!(text.contains("1.18.0") && text.contains("1.16.1") && text.contains("newer plugin"), "{text}");
            }
            other => panic!("{other:?}"),
        }
        match check_version_range(v(0, 8, 9), minimum, current) {
            Err(Error::ProgramVersion { advice, .. }) => assert!(advice.contains("newer target"), "{advice}"),
            other => panic!("{other:?}"),
        }
    }
}
