//! Compile options, the whole message, on the real CPU plugins: every setter is accepted, and
//! what the plugin reports back (`PJRT_Executable_GetCompileOptions`) or does shows it was used.

use pjrt_client::{
    CompileOptions, DebugOption, ElementType, Error, ExecuteOptions, MemoryLayout, Program, ShapeWithLayout,
    StableHloVersion,
};

use crate::support::{client, PLUGINS};

const NEGATE_2X3: &str = r#"
func.func @main(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = stablehlo.negate %a : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}"#;

fn shape(minor_to_major: &[i64]) -> ShapeWithLayout {
    let layout = MemoryLayout::Tiled { minor_to_major: minor_to_major.to_vec(), tiles: vec![] };
    ShapeWithLayout::new(ElementType::F32, &[2, 3], Some(layout))
}

#[test]
fn every_setter_is_accepted_and_reported_back() {
    for name in PLUGINS {
        let client = client(name, 2);
        let program = Program::mlir_text(NEGATE_2X3).unwrap();
        let options = CompileOptions::new()
            .argument_layouts(&[shape(&[1, 0])])
            .result_layout(&[shape(&[1, 0])])
            .device_ordinal(1)
            .profile_version(5)
            .alias_passthrough_params(true)
            .auto_spmd_partitioning(&[1], &[0])
            .debug_option(DebugOption::CpuEnableFastMinMax(false));
        let exe = client.compile(&program, &options).unwrap_or_else(|e| panic!("{name}: {e}"));
        let back = exe.compile_options().unwrap();
        assert_eq!(back.argument_layout_shapes().unwrap(), [shape(&[1, 0])], "{name}");
        assert_eq!(back.result_layout_shapes().unwrap(), Some(vec![shape(&[1, 0])]), "{name}");
        let build = back.build_options().unwrap();
        assert_eq!(build.device_ordinal, 1, "{name}");
        assert!(build.alias_passthrough_params && build.use_auto_spmd_partitioning, "{name}");
        assert_eq!(
            (&build.auto_spmd_partitioning_mesh_shape[..], &build.auto_spmd_partitioning_mesh_ids[..]),
            (&[1][..], &[0][..])
        );
        assert_eq!(back.proto().profile_version, 5, "{name}");
        assert!(back.xla_options().contains_key("xla_cpu_enable_fast_min_max"), "{name}");
        // And it runs.
        let a = client.upload(&[1f32, 2., 3., 4., 5., 6.], &[2, 3]).unwrap();
        assert_eq!(
            exe.execute(&[&a], &ExecuteOptions::new()).unwrap()[0].to_vec::<f32>().unwrap(),
            [-1., -2., -3., -4., -5., -6.]
        );
    }
}

#[test]
fn an_argument_layout_is_compiled_for_and_checked_before_running() {
    for name in PLUGINS {
        let client = client(name, 1);
        let program = Program::mlir_text(NEGATE_2X3).unwrap();
        let exe = client.compile(&program, &CompileOptions::new().argument_layouts(&[shape(&[0, 1])])).unwrap();
        assert_eq!(exe.compile_options().unwrap().argument_layout_shapes().unwrap(), [shape(&[0, 1])]);
        // The plugin would read the row-major buffer as column-major (measured: [-1,-3,-5,-2,-4,-6]).
        let a = client.upload(&[1f32, 2., 3., 4., 5., 6.], &[2, 3]).unwrap();
        match exe.execute(&[&a], &ExecuteOptions::new()) {
            Err(Error::InvalidArgument(m)) => assert!(m.contains("{0,1}") && m.contains("{1,0}"), "{name}: {m}"),
            other => panic!("{name}: a buffer in another layout ran: {other:?}"),
        }
    }
}

#[test]
fn tupled_arguments_make_the_plugin_expect_one_tuple() {
    for name in PLUGINS {
        let client = client(name, 1);
        let program = Program::mlir_text(NEGATE_2X3).unwrap();
        let options = CompileOptions::new().parameter_is_tupled_arguments(true).argument_layouts(&[shape(&[1, 0])]);
        // Tupled, the arguments are one tuple: the plugin checks the layout given for the one
        // array parameter against a tuple and says it wanted `(f32[2,3])`.
        match client.compile(&program, &options) {
            Err(e @ Error::Pjrt { .. }) => assert!(e.to_string().contains("want (f32[2,3])"), "{name}: {e}"),
            other => panic!("{name}: {other:?}"),
        }
        // And without it, the same program compiles.
        client.compile(&program, &options.parameter_is_tupled_arguments(false)).unwrap();
    }
}

#[test]
fn a_debug_option_takes_effect_fast_min_max_off_propagates_nan() {
    for name in PLUGINS {
        let client = client(name, 1);
        let program = Program::mlir_text(
            r#"func.func @main(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
                 %0 = stablehlo.maximum %a, %b : tensor<2xf32>
                 return %0 : tensor<2xf32>
               }"#,
        )
        .unwrap();
        let a = client.upload(&[f32::NAN, 1.], &[2]).unwrap();
        let b = client.upload(&[1f32, 2.], &[2]).unwrap();
        let max = |on: bool| {
            let options = CompileOptions::new().debug_option(DebugOption::CpuEnableFastMinMax(on));
            let exe = client.compile(&program, &options).unwrap();
            exe.execute(&[&a, &b], &ExecuteOptions::new()).unwrap()[0].to_vec::<f32>().unwrap()
        };
        assert!(max(false)[0].is_nan(), "{name}");
        assert_eq!(max(false)[1], 2., "{name}");
    }
}

#[test]
fn a_debug_option_takes_effect_xla_dump_to_writes_the_modules() {
    for name in PLUGINS {
        let dir = std::env::temp_dir().join(format!("pjrt-dump-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let client = client(name, 1);
        let program = Program::mlir_text(NEGATE_2X3).unwrap();
        let options = CompileOptions::new()
            .debug_option(DebugOption::DumpTo(dir.to_string_lossy().into_owned()))
            .debug_option(DebugOption::DumpHloAsText(true));
        client.compile(&program, &options).unwrap_or_else(|e| panic!("{name}: {e}"));
        let files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{name}: nothing dumped into {}: {e}", dir.display()))
            .map(|f| f.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(files.iter().any(|f| f.ends_with(".txt") && f.contains("after_optimizations")), "{name}: {files:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn a_debug_options_message_from_scratch_is_refused_before_the_plugin() {
    // Measured: a DebugOptions message of one field makes both plugins fail ("Too many extra
    // compilation parts"); such options never reach them.
    let client = client("cpu", 1);
    let program = Program::mlir_text(NEGATE_2X3).unwrap();
    let options = CompileOptions::new().debug_option(DebugOption::RawVarint { number: 109, value: 0 });
    assert!(matches!(client.compile(&program, &options), Err(Error::InvalidArgument(_))));
}

const PORTABLE_1_0_0: &[u8] = include_bytes!("../../../../tests/data/formats/tanh_mul.portable-1.0.0.mlirbc");

/// The portable artifact with its producer replaced by `StableHLO_v{version}`.
fn artifact_for(version: &str) -> Program {
    let producer = b"StableHLO_v1.0.0\0";
    let at = PORTABLE_1_0_0.windows(producer.len()).position(|w| w == producer).unwrap();
    let crafted =
        [&PORTABLE_1_0_0[..at], format!("StableHLO_v{version}\0").as_bytes(), &PORTABLE_1_0_0[at + producer.len()..]]
            .concat();
    Program::mlir_bytecode(crafted).unwrap()
}

#[test]
fn newer_stablehlo_is_written_for_the_plugin_and_older_is_refused_before_compiling() {
    for name in PLUGINS {
        let client = client(name, 1);
        let plugin = client.plugin();
        let (minimum, current) =
            (plugin.stablehlo_minimum_version().unwrap(), plugin.stablehlo_current_version().unwrap());
        // The real artifact (1.0.0) is in range and runs: tanh(a) * b + 1.
        let program = Program::mlir_bytecode(PORTABLE_1_0_0.to_vec()).unwrap();
        assert_eq!(program.stablehlo_target(), Some(StableHloVersion::new(1, 0, 0)));
        let exe = client.compile(&program, &CompileOptions::new()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let zeros = client.upload(&[0f32; 6], &[2, 3]).unwrap();
        assert_eq!(
            exe.execute(&[&zeros, &zeros], &ExecuteOptions::new()).unwrap()[0].to_vec::<f32>().unwrap(),
            [1f32; 6]
        );
        // The same with the header claiming the plugin's own current version: accepted.
        let same = current.to_string();
        client.compile(&artifact_for(&same), &CompileOptions::new()).unwrap_or_else(|e| panic!("{name}: {e}"));
        // Newer than current: written for the plugin's own version, compiled and run (as XLA's
        // client does); against a topology (ahead of time) it reaches the plugin too (the 0.106
        // CPU plugin has no topology compiler: its own error, not a version refusal).
        let newer = format!("{}.{}.0", current.major, current.minor + 1);
        let exe =
            client.compile(&artifact_for(&newer), &CompileOptions::new()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            exe.execute(&[&zeros, &zeros], &ExecuteOptions::new()).unwrap()[0].to_vec::<f32>().unwrap(),
            [1f32; 6]
        );
        let topology = client.topology().unwrap();
        let aot = topology.compile(&artifact_for(&newer), &CompileOptions::new(), None);
        assert!(matches!(aot, Ok(_) | Err(Error::Pjrt { .. })), "{name}: {aot:?}");
        // Older than minimum: refused, naming the versions and what to do.
        // Both plugins read nothing older than 0.9-ish: one patch (or minor) below is too old.
        assert!(minimum > StableHloVersion::new(0, 0, 0), "{name}: minimum {minimum}");
        let older = match minimum {
            StableHloVersion { major, minor, patch } if patch > 0 => format!("{major}.{minor}.{}", patch - 1),
            StableHloVersion { major, minor, .. } if minor > 0 => format!("{major}.{}.99", minor - 1),
            StableHloVersion { major, .. } => format!("{}.99.99", major - 1),
        };
        match client.compile(&artifact_for(&older), &CompileOptions::new()) {
            Err(Error::ProgramVersion { program, advice, .. }) => {
                assert_eq!(program.to_string(), older);
                assert!(advice.contains("newer target"));
            }
            other => panic!("{name}: {older} (minimum {minimum}) was not refused: {other:?}"),
        }
    }
}
