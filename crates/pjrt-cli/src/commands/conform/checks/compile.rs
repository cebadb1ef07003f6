//! `compile.*`: the add program compiled from MLIR text, bytecode, a portable artifact and an HLO
//! proto; a malformed program refused; device assignments and XLA options.

use pjrt_client::{Client, CompileOptions, DeviceAssignment, Program};

use super::{ADD, BYTECODE, HLO, PORTABLE};
use crate::commands::conform::report::{expect, Problem, Report};

pub(crate) fn compile_checks(r: &mut Report, client: &Client) {
    let compile = |program: Program| client.compile(&program, &CompileOptions::new());
    r.check("compile.mlir_text", || Ok(compile(Program::mlir_text(ADD)?)?.name().to_owned()));
    r.check("compile.mlir_bytecode", || Ok(compile(Program::mlir_bytecode(BYTECODE.to_vec())?)?.name().to_owned()));
    r.check("compile.stablehlo_portable_artifact", || {
        Ok(compile(Program::mlir_bytecode(PORTABLE.to_vec())?)?.name().to_owned())
    });
    r.check("compile.hlo_module_proto", || Ok(compile(Program::hlo_module_proto(HLO.to_vec())?)?.name().to_owned()));
    r.check("compile.malformed_program_is_an_error", || {
        expect(compile(Program::mlir_text("func.func @main(")?).is_err(), "malformed MLIR compiled")?;
        Ok(String::new())
    });
    r.check("compile.device_assignment", || {
        let last = *client.addressable_devices().last().ok_or(Problem::Fail("no devices".into()))?;
        let id = last.id()? as i64;
        let exe = client.compile(
            &Program::mlir_text(ADD)?,
            &CompileOptions::new().device_assignment(&DeviceAssignment::new(vec![vec![id]])?),
        )?;
        expect(exe.addressable_devices()[0] == last, "placed on another device")?;
        Ok(format!("device {id}"))
    });
    r.check("compile.xla_option", || {
        client.compile(&Program::mlir_text(ADD)?, &CompileOptions::new().jax_defaults(client.platform_name()))?;
        Ok(String::new())
    });
}
