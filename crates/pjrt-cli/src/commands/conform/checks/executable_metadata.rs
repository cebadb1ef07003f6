//! `executable.*` beyond name and counts: code size, cost analysis, memory kinds and stats, the
//! optimized program, options and device assignment, on a loaded and an unloaded executable.

use pjrt_client::{Client, CompileOptions, ExecuteContext, ExecuteOptions, Program};

use super::{f32s, ADD};
use crate::commands::conform::report::{expect, Problem, Report};

/// The newest executable queries (`PJRT_Executable_*` beyond name and counts), on a loaded and on
/// an unloaded (`PJRT_Compile`) executable.
pub(crate) fn executable_metadata_checks(r: &mut Report, client: &Client) {
    let Ok(exe) = Program::mlir_text(ADD).and_then(|p| client.compile(&p, &CompileOptions::new())) else {
        r.check("executable.metadata_compile", || Err(Problem::Fail("cannot compile the add program".into())));
        return;
    };
    r.check("executable.generated_code_size", || Ok(format!("{} bytes", exe.generated_code_size()?)));
    r.check("executable.cost_analysis", || Ok(format!("{} properties", exe.cost_analysis()?.len())));
    r.check("executable.output_memory_kinds", || {
        let kinds = exe.output_memory_kinds()?;
        expect(kinds.len() == 1, format!("{} kinds for 1 output", kinds.len()))?;
        Ok(kinds.join(","))
    });
    r.check("executable.parameter_memory_kinds", || {
        let kinds = exe.parameter_memory_kinds()?;
        expect(kinds.len() == 2, format!("{} kinds for 2 parameters", kinds.len()))?;
        Ok(kinds.join(","))
    });
    r.check("executable.compiled_memory_stats", || {
        let stats = exe.compiled_memory_stats()?;
        Ok(format!(
            "args {} out {} temp {}",
            stats.argument_size_in_bytes, stats.output_size_in_bytes, stats.temp_size_in_bytes
        ))
    });
    r.check("executable.optimized_program", || {
        let program = exe.optimized_program()?;
        expect(!program.code.is_empty(), "an empty program")?;
        Ok(format!("{} bytes of {}", program.code.len(), program.format))
    });
    r.check("executable.compile_options", || {
        let options = exe.compile_options()?;
        Ok(format!("{} bytes", options.to_bytes()?.len()))
    });
    r.check("executable.device_assignment", || Ok(format!("{:?}", exe.device_assignment()?)));
    r.check("executable.addressable_device_logical_ids", || Ok(format!("{:?}", exe.addressable_device_logical_ids()?)));
    r.check("execute.with_context_and_options", || {
        let context = ExecuteContext::new(client.plugin())?;
        let options = ExecuteOptions::new().launch_id(7).non_donatable_inputs([0, 1]).context(&context);
        let a = client.upload(&[1f32, 2., 3., 4.], &[4])?;
        expect(f32s(&exe.execute(&[&a, &a], &options)?[0])? == [2., 4., 6., 8.], "wrong sum")?;
        Ok(String::new())
    });
    r.check("aot.unloaded_executable_metadata", || {
        let topology = client.topology()?;
        let unloaded = topology.compile(&Program::mlir_text(ADD)?, &CompileOptions::new(), None)?;
        expect(unloaded.output_shapes()? == exe.output_shapes(), "output shapes differ from the loaded program")?;
        expect(unloaded.num_replicas()? == 1 && unloaded.num_partitions()? == 1, "counts")?;
        Ok(format!("fingerprint {}", unloaded.fingerprint()?))
    });
}
