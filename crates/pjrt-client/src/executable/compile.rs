//! Compiling a program on a client (what `Client::compile` runs once its built-in handlers are
//! registered), the StableHLO version check made before any compile, and [`RawProgram`]: the one
//! `PJRT_Program` both compiles hand the plugin (on a client here, against a topology in
//! `topology`).

use std::ffi::c_char;
use std::marker::PhantomData;
use std::ptr::NonNull;

use super::{ArrayShape, LoadedExecutable};
use crate::call::pjrt_call;
use crate::call::trace::span;
use crate::client::Client;
use crate::compile_options::CompileOptions;
use crate::error::{Error, Result};
use crate::plugin::Plugin;
use crate::program::{mlir_main_parameters, Program, ProgramFormat};
use crate::sys::{self, Args};

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
    /// [`Client::compile`] without registering built-in handlers first (what their registration's
    /// own probe programs compile with).
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
        check_stablehlo_version(self.plugin(), program)?;
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
        executable.source_parameters = match (program.text(), options.proto().parameter_is_tupled_arguments) {
            (_, true) => Err("the arguments are tupled (parameter_is_tupled_arguments)".to_owned()),
            _ if program.declared_parameters().is_some() => Ok(program
                .declared_parameters()
                .unwrap_or_default()
                .iter()
                .map(|(element_type, dims)| ArrayShape { element_type: Some(*element_type), dims: dims.clone() })
                .collect()),
            (Some(text), false) => mlir_main_parameters(text).map(|params| {
                params.into_iter().map(|(element_type, dims)| ArrayShape { element_type, dims }).collect()
            }),
            (None, false) => Err(format!(
                "the program compiled was {} (only MLIR text has a signature this crate reads; declare the \
                 parameters with Program::with_parameters)",
                if program.format() == ProgramFormat::Hlo { "an HLO module" } else { "MLIR bytecode" }
            )),
        };
        Ok(executable)
    }
}

/// Refuses a portable artifact serialized for a StableHLO version the plugin does not read
/// (its header says which; the plugin's attributes say what it reads). Programs without a
/// version (text, plain bytecode, HLO) and plugins without the attributes pass unchecked.
pub(crate) fn check_stablehlo_version(plugin: &Plugin, program: &Program) -> Result<()> {
    let Some(target) = program.stablehlo_target() else { return Ok(()) };
    let (Some(minimum), Some(current)) = (plugin.stablehlo_minimum_version(), plugin.stablehlo_current_version())
    else {
        return Ok(());
    };
    let advice = if target > current {
        "write it for the plugin's version first (pjrt_formats::portable::for_plugin does; pjrt run and pjrt compile \
         do it themselves), serialize it for an older target (stablehlo.serialize_portable_artifact with \
         target_version at most the plugin's current version), or use a newer plugin"
    } else if target < minimum {
        "serialize it again for a newer target (at least the plugin's minimum version), or use an older plugin"
    } else {
        return Ok(());
    };
    Err(Error::ProgramVersion {
        program: target.to_string(),
        minimum: minimum.to_string(),
        current: current.to_string(),
        advice,
    })
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
