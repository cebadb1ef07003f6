//! Compile options, the whole message: every setter round-trips through the plugin (issue 13, items 5 to 7).

use pjrt_client::{
    Client, CompileOptions, DebugOption, ElementType, Error, ExecuteOptions, LoadedExecutable, MemoryLayout, Program,
    ShapeWithLayout,
};

use super::{f32s, ADD, PORTABLE};
use crate::commands::conform::report::{expect, Problem, Report};

const NEGATE_2X3: &str = r#"func.func @main(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = stablehlo.negate %a : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}"#;

fn shape_2x3(minor_to_major: &[i64]) -> ShapeWithLayout {
    let layout = MemoryLayout::Tiled { minor_to_major: minor_to_major.to_vec(), tiles: vec![] };
    ShapeWithLayout::new(ElementType::F32, &[2, 3], Some(layout))
}

/// Compiles the 2×3 negation with `options` and returns what the plugin reports back.
fn compiled(client: &Client, options: &CompileOptions) -> Result<(LoadedExecutable, CompileOptions), Problem> {
    let exe = client.compile(&Program::mlir_text(NEGATE_2X3)?, options)?;
    let back = exe.compile_options()?;
    Ok((exe, back))
}

/// The portable artifact with its producer claiming `StableHLO_v{version}`.
fn artifact_for(version: &str) -> Result<Program, Problem> {
    let producer = b"StableHLO_v1.0.0\0";
    let at = PORTABLE
        .windows(producer.len())
        .position(|w| w == producer)
        .ok_or_else(|| Problem::Fail("the test artifact has no StableHLO_v1.0.0 producer".into()))?;
    let producer_now = format!("StableHLO_v{version}\0");
    let crafted = [&PORTABLE[..at], producer_now.as_bytes(), &PORTABLE[at + producer.len()..]];
    Ok(Program::mlir_bytecode(crafted.concat())?)
}

/// Adds this group's checks to `r`.
pub(crate) fn checks(r: &mut Report, client: &Client) {
    r.check("compile_options.argument_layouts", || {
        let (_, back) = compiled(client, &CompileOptions::new().argument_layouts(&[shape_2x3(&[0, 1])]))?;
        let layouts = back.argument_layout_shapes()?;
        expect(layouts == [shape_2x3(&[0, 1])], format!("the plugin reports {layouts:?}"))?;
        Ok(layouts[0].to_string())
    });
    r.check("compile_options.result_layout", || {
        let (_, back) = compiled(client, &CompileOptions::new().result_layout(&[shape_2x3(&[1, 0])]))?;
        let layout = back.result_layout_shapes()?.unwrap_or_default();
        expect(layout.len() == 1 && layout[0].dims == [2, 3], format!("the plugin reports {layout:?}"))?;
        Ok(layout[0].to_string())
    });
    r.check("compile_options.debug_option_fast_min_max", || {
        let program = Program::mlir_text(
            "func.func @main(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {\n\
               %0 = stablehlo.maximum %a, %b : tensor<2xf32>\n  return %0 : tensor<2xf32>\n}",
        )?;
        let options = CompileOptions::new().debug_option(DebugOption::CpuEnableFastMinMax(false));
        let exe = client.compile(&program, &options)?;
        let a = client.upload(&[f32::NAN, 1.], &[2])?;
        let b = client.upload(&[1f32, 2.], &[2])?;
        let max = f32s(&exe.execute(&[&a, &b], &ExecuteOptions::new())?[0])?;
        expect(max[0].is_nan() && max[1] == 2., format!("max(NaN, 1), max(1, 2) = {max:?}"))?;
        Ok("max propagates NaN".into())
    });
    r.check("compile_options.device_ordinal", || {
        let (_, back) = compiled(client, &CompileOptions::new().device_ordinal(1))?;
        let ordinal = back.build_options().map(|b| b.device_ordinal);
        expect(ordinal == Some(1), format!("the plugin reports {ordinal:?}"))?;
        Ok("1".into())
    });
    r.check("compile_options.profile_version", || {
        let (_, back) = compiled(client, &CompileOptions::new().profile_version(5))?;
        expect(back.proto().profile_version == 5, format!("the plugin reports {}", back.proto().profile_version))?;
        Ok("5".into())
    });
    r.check("compile_options.alias_passthrough_params", || {
        let (_, back) = compiled(client, &CompileOptions::new().alias_passthrough_params(true))?;
        expect(back.build_options().is_some_and(|b| b.alias_passthrough_params), "the plugin reports it off")?;
        Ok(String::new())
    });
    r.check("compile_options.parameter_is_tupled_arguments", || {
        let (_, back) = compiled(client, &CompileOptions::new().parameter_is_tupled_arguments(true))?;
        expect(back.proto().parameter_is_tupled_arguments, "the plugin reports it off")?;
        Ok(String::new())
    });
    r.check("compile_options.auto_spmd_partitioning", || {
        let (exe, back) = compiled(client, &CompileOptions::new().auto_spmd_partitioning(&[1], &[0]))?;
        let build = back.build_options().ok_or_else(|| Problem::Fail("no build options reported".into()))?;
        let mesh = (&build.auto_spmd_partitioning_mesh_shape[..], &build.auto_spmd_partitioning_mesh_ids[..]);
        expect(build.use_auto_spmd_partitioning && mesh == (&[1][..], &[0][..]), format!("reported {mesh:?}"))?;
        let a = client.upload(&[1f32, 2., 3., 4., 5., 6.], &[2, 3])?;
        let out = f32s(&exe.execute(&[&a], &ExecuteOptions::new())?[0])?;
        expect(out == [-1., -2., -3., -4., -5., -6.], format!("ran to {out:?}"))?;
        Ok("mesh [1], ids [0]".into())
    });
    r.check("compile_options.argument_layout_checked_before_launch", || {
        let (exe, _) = compiled(client, &CompileOptions::new().argument_layouts(&[shape_2x3(&[0, 1])]))?;
        let a = client.upload(&[1f32, 2., 3., 4., 5., 6.], &[2, 3])?;
        match exe.execute(&[&a], &ExecuteOptions::new()) {
            Err(Error::InvalidArgument(m)) => Ok(m),
            other => Err(Problem::Fail(format!("a row-major argument was not refused: {other:?}"))),
        }
    });
    r.check("stablehlo.portable_artifact_version_accepted", || {
        let program = Program::mlir_bytecode(PORTABLE.to_vec())?;
        let target = program.stablehlo_target();
        expect(target.is_some_and(|t| t == (1, 0, 0)), format!("read the target as {target:?}"))?;
        let exe = client.compile(&program, &CompileOptions::new())?;
        let zeros = client.upload(&[0f32; 6], &[2, 3])?;
        let out = f32s(&exe.execute(&[&zeros, &zeros], &ExecuteOptions::new())?[0])?;
        expect(out == [1f32; 6], format!("tanh(0) * 0 + 1 gave {out:?}"))?;
        Ok("StableHLO 1.0.0".into())
    });
    r.check("stablehlo.too_new_written_for_the_plugin", || {
        let plugin = client.plugin();
        let current = plugin
            .stablehlo_current_version()
            .ok_or_else(|| Problem::Unsupported("the plugin has no stablehlo_current_version attribute".into()))?;
        // The client writes a newer artifact for the plugin's version (as XLA's own client does).
        let newer = format!("{}.{}.0", current.major, current.minor + 1);
        let exe = client.compile(&artifact_for(&newer)?, &CompileOptions::new())?;
        let zeros = client.upload(&[0f32; 6], &[2, 3])?;
        let out = f32s(&exe.execute(&[&zeros, &zeros], &ExecuteOptions::new())?[0])?;
        expect(out == [1f32; 6], format!("StableHLO {newer} written for {current}: tanh(0) * 0 + 1 gave {out:?}"))?;
        Ok(format!("StableHLO {newer} written for {current}"))
    });
    r.check("stablehlo.too_old_refused_before_compiling", || {
        let minimum = client
            .plugin()
            .stablehlo_minimum_version()
            .ok_or_else(|| Problem::Unsupported("the plugin has no stablehlo_minimum_version attribute".into()))?;
        let older = match (minimum.major, minimum.minor, minimum.patch) {
            (major, minor, patch) if patch > 0 => format!("{major}.{minor}.{}", patch - 1),
            (major, minor, _) if minor > 0 => format!("{major}.{}.99", minor - 1),
            (0, 0, 0) => {
                return Err(Problem::Unsupported("the plugin reads every StableHLO version from 0.0.0".into()))
            }
            (major, _, _) => format!("{}.99.99", major - 1),
        };
        match client.compile(&artifact_for(&older)?, &CompileOptions::new()) {
            Err(e @ Error::ProgramVersion { .. }) => Ok(e.to_string()),
            other => Err(Problem::Fail(format!("StableHLO {older} (plugin reads from {minimum}) gave {other:?}"))),
        }
    });
    r.check("compile_options.debug_option_dump_to", || {
        let dir = std::env::temp_dir().join(format!("pjrt-conform-dump-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let options = CompileOptions::new().debug_option(DebugOption::DumpTo(dir.to_string_lossy().into_owned()));
        let compiled = client.compile(&Program::mlir_text(NEGATE_2X3)?, &options).map(drop);
        let dumped = std::fs::read_dir(&dir).map(|entries| entries.count()).unwrap_or(0);
        let _ = std::fs::remove_dir_all(&dir);
        compiled?;
        expect(dumped > 0, format!("nothing was written into {}", dir.display()))?;
        Ok(format!("{dumped} files dumped"))
    });
    r.check("executable.parameter_shapes_present", || {
        let exe = client.compile(&Program::mlir_text(ADD)?, &CompileOptions::new())?;
        if let Some(why) = exe.argument_checks_off_because() {
            return Err(Problem::Fail(why.to_owned()));
        }
        let shapes = exe.parameter_shapes().unwrap_or_default();
        expect(shapes.len() == 2 && shapes.iter().all(|s| s.dims == [4]), format!("{shapes:?}"))?;
        Ok(format!("{} parameters", shapes.len()))
    });
}
