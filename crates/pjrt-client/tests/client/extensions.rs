//! The extension chain and the extensions the CPU plugins expose, on both plugins.

use pjrt_client::extensions::{ExtensionInfo, ExtensionKind};
use pjrt_client::{sys, CompileOptions, ElementType, Error, ErrorCode, ExecuteContext, ExecuteOptions, Program};

use crate::support;

fn chain(infos: &[ExtensionInfo]) -> Vec<(ExtensionKind, usize)> {
    infos.iter().map(|i| (i.kind, i.struct_size)).collect()
}

#[test]
fn the_chain_matches_what_each_plugin_exposes() {
    use ExtensionKind::*;
    let p115 = support::plugin("cpu");
    assert_eq!(p115.api_version().minor, 115);
    assert_eq!(
        chain(&p115.extensions()),
        [(XlaTransform, 56), (Shardings, 40), (PhaseCompile, 64), (Ffi, 48), (MemoryDescriptions, 40), (Layouts, 80)]
    );
    let p106 = support::plugin("cpu-0.106");
    assert_eq!(p106.api_version().minor, 106);
    assert_eq!(
        chain(&p106.extensions()),
        [(Shardings, 40), (PhaseCompile, 64), (Ffi, 48), (MemoryDescriptions, 40), (Layouts, 80)]
    );
    // No node of either plugin is a known older form.
    for plugin in [&p115, &p106] {
        assert!(plugin.extensions().iter().all(|i| !i.older_form), "{:?}", plugin.extensions());
        assert!(!plugin.layouts_extension().unwrap().is_older_form());
        assert!(!plugin.ffi_extension().unwrap().is_older_form());
    }
}

#[test]
fn typed_views_are_reachable_and_gated_by_their_own_size() {
    for name in support::PLUGINS {
        let plugin = support::plugin(name);
        let layouts = plugin.layouts_extension().expect("Layouts");
        assert_eq!(layouts.struct_size(), 80);
        assert_eq!(layouts.members().len(), 7, "{name}: {layouts:?}");
        let memory = plugin.memory_descriptions_extension().expect("MemoryDescriptions");
        assert_eq!(memory.members(), ["PJRT_DeviceDescription_MemoryDescriptions", "PJRT_MemoryDescription_Kind"]);
        let shardings = plugin.shardings_extension().expect("Shardings");
        assert_eq!(shardings.members().len(), 2);
        let ffi = plugin.ffi_extension().expect("FFI");
        assert_eq!(ffi.members(), ["type_register", "user_data_add", "register_handler"]);
        let phase = plugin.phase_compile_extension().expect("PhaseCompile");
        // get_compiler and destroy_compiler are NULL on the CPU plugins.
        assert_eq!(
            phase.members(),
            ["phase_compile_run_phases", "phase_compile_get_phase_names", "phase_compile_c_buffers_destroy"]
        );
        assert!(!phase.has("phase_compile_get_compiler"));
        // The GPU-side extensions are not in the CPU plugins' chains.
        assert!(plugin.stream_extension().is_none());
        assert!(plugin.gpu_custom_call_extension().is_none());
        assert!(plugin.profiler_extension().is_none());
        assert!(plugin.triton_extension().is_none());
        assert!(plugin.callback_extension().is_none());
        assert!(plugin.raw_buffer_extension().is_none());
        // Generic access is the same view.
        let generic = plugin.extension::<sys::PJRT_Layouts_Extension>().unwrap();
        assert_eq!(generic.as_raw(), layouts.as_raw());
    }
    // XlaTransform: 56 bytes in the 0.115 plugin, longer than the 0.114 layout declared (40);
    // the two declared members are provided, the rest is never read.
    let p115 = support::plugin("cpu");
    let xla = p115.xla_transform_extension().expect("XlaTransform on 0.115");
    assert_eq!(xla.struct_size(), 56);
    assert_eq!(xla.members(), ["register_xla_transform", "clear_xla_transform"]);
    assert!(support::plugin("cpu-0.106").xla_transform_extension().is_none());
}

#[test]
fn layouts_of_client_defaults_buffers_and_executables() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let plugin = client.plugin();
        let layouts = plugin.layouts_extension().unwrap();
        let default = layouts.client_default_layout(&client, ElementType::F32, &[2, 3]).unwrap();
        assert_eq!(default, "{1,0}", "{name}");
        assert_eq!(default.as_str(), Some("{1,0}"));
        assert_eq!(layouts.client_default_layout(&client, ElementType::S8, &[4]).unwrap(), "{0}");

        let buffer = client.upload(&[1f32, 2., 3., 4.], &[4]).unwrap();
        assert_eq!(layouts.buffer_layout(&buffer).unwrap(), "{0}", "{name}");

        let program = Program::mlir_text(support::ADD_F32).unwrap();
        let exe = client.compile(&program, &CompileOptions::new()).unwrap();
        let outputs = layouts.executable_output_layouts(&exe).unwrap();
        assert_eq!(outputs.len(), 1);
        assert_eq!(outputs[0], "{0}");
        let parameters = layouts.executable_parameter_layouts(&exe).unwrap();
        assert_eq!(parameters.len(), 2);
        assert!(parameters.iter().all(|l| l == "{0}"), "{parameters:?}");
        // Repeated calls neither leak nor double-free (the executable owns its layouts).
        for _ in 0..3 {
            layouts.executable_output_layouts(&exe).unwrap();
            layouts.buffer_layout(&buffer).unwrap();
        }
    }
}

#[test]
fn layout_arguments_are_checked_before_the_plugin_sees_them() {
    let client = support::client("cpu-0.106", 1);
    let layouts = client.plugin().layouts_extension().unwrap();
    let e = layouts.client_default_layout(&client, ElementType::TOKEN, &[2]).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    let e = layouts.client_default_layout(&client, ElementType::F32, &[-1]).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    // F6E2M3FN exists only from 0.114.
    let e = layouts.client_default_layout(&client, ElementType::F6E2M3FN, &[2]).unwrap_err();
    assert!(matches!(e, Error::Unsupported { since_minor: 114, .. }), "{e}");

    // Objects of the other plugin are refused, never passed to this plugin's code.
    let other = support::client("cpu", 1);
    let e = layouts.client_default_layout(&other, ElementType::F32, &[2]).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    let buffer = other.upload(&[1f32], &[1]).unwrap();
    assert!(matches!(layouts.buffer_layout(&buffer), Err(Error::InvalidArgument(_))));
}

#[test]
fn memory_descriptions_are_empty_on_cpu() {
    for name in support::PLUGINS {
        let client = support::client(name, 2);
        let ext = client.plugin().memory_descriptions_extension().unwrap();
        for device in client.devices() {
            assert!(ext.device_memory_descriptions(&device).unwrap().is_empty(), "{name}");
        }
    }
}

#[test]
fn shardings_of_a_single_device_program() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let ext = client.plugin().shardings_extension().unwrap();
        let exe = client.compile(&Program::mlir_text(support::ADD_F32).unwrap(), &CompileOptions::new()).unwrap();
        let parameters = ext.parameter_shardings(&exe).unwrap();
        let outputs = ext.output_shardings(&exe).unwrap();
        assert_eq!((parameters.count, outputs.count), (0, 0), "{name}");
        assert_eq!(parameters.serialized, None, "{name}");
        assert_eq!(outputs.serialized, None, "{name}");
    }
}

#[test]
fn ffi_type_registration() {
    for name in support::PLUGINS {
        let plugin = support::plugin(name);
        let ffi = plugin.ffi_extension().unwrap();
        let id = ffi.register_type(&format!("pjrt_client_tests::ExtensionsType_{}", name.replace('-', "_"))).unwrap();
        assert!(id > 0, "{name}: {id}");
        // A NULL handler is refused by the plugin with an error (not a crash).
        // SAFETY: NULL is never called; the plugin rejects it.
        let e = unsafe { ffi.register_handler("pjrt_client_null_handler", "Host", std::ptr::null_mut(), false) }
            .unwrap_err();
        assert_eq!(e.code(), Some(ErrorCode::InvalidArgument), "{name}: {e}");
    }
}

#[test]
fn ffi_user_data_is_accepted_in_the_form_valid_for_versions_2_and_3() {
    static DATA: u64 = 42;
    for name in support::PLUGINS {
        let plugin = support::plugin(name);
        let ffi = plugin.ffi_extension().unwrap();
        let id = ffi.register_type(&format!("pjrt_client_tests::UserData_{}", name.replace('-', "_"))).unwrap();
        let context = ExecuteContext::new(&plugin).unwrap();
        // The 48-byte (version-2) args with a NULL deleter; these version-3 plugins read 40.
        // SAFETY: DATA is a static of the registered (opaque) type; no handler reads it.
        unsafe { ffi.add_user_data(&context, id, std::ptr::addr_of!(DATA) as *mut _) }
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        // A context of another plugin is refused before the plugin sees it.
        let other = support::plugin(if *name == "cpu" { "cpu-0.106" } else { "cpu" });
        let other_context = ExecuteContext::new(&other).unwrap();
        // SAFETY: refused before anything is called.
        let e = unsafe { ffi.add_user_data(&other_context, id, std::ptr::null_mut()) }.unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{name}: {e}");
    }
}

#[test]
fn phase_compile_needs_a_compiler_the_cpu_plugins_do_not_give() {
    for name in support::PLUGINS {
        let plugin = support::plugin(name);
        let phase = plugin.phase_compile_extension().unwrap();
        let e = phase.phase_names().unwrap_err();
        assert!(
            matches!(e, Error::Unsupported { function: "PJRT_PhaseCompile_Extension.phase_compile_get_compiler", .. }),
            "{name}: {e}"
        );
    }
}

#[test]
fn shardings_and_layouts_of_a_two_partition_program() {
    // y = tanh(2x+1) @ w + b over 2 partitions: x (8,4) split by rows, w and b replicated;
    // outputs y (8,3) and row sums (8,) split by rows, column sums (3,) replicated.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/jax");
    for name in support::PLUGINS {
        for case in ["sharded_matmul_gspmd", "sharded_matmul_shardy"] {
            let client = support::client(name, 2);
            let program = Program::from_file(dir.join(case).join("program.mlir")).unwrap();
            let mut options = CompileOptions::new().num_partitions(2).use_spmd_partitioning(true);
            if program.module_counts().uses_shardy {
                options = options.use_shardy_partitioner(true);
            }
            let exe = client.compile(&program, &options).unwrap();
            let ext = client.plugin().shardings_extension().unwrap();
            let parameters = ext.parameter_shardings(&exe).unwrap();
            let outputs = ext.output_shardings(&exe).unwrap();
            assert_eq!((parameters.count, outputs.count), (3, 3), "{name} {case}");
            let (p, o) = (parameters.serialized.unwrap(), outputs.serialized.unwrap());
            // A split array is an OpSharding of type OTHER (field 1 = 3, bytes 08 03) with a
            // tile assignment; a replicated one serializes to nothing (every field default).
            let split = |s: &Vec<u8>| s.starts_with(&[8, 3]);
            assert!(split(&p[0]) && p[1].is_empty() && p[2].is_empty(), "{name} {case}: {p:?}");
            assert!(split(&o[0]) && split(&o[1]) && o[2].is_empty(), "{name} {case}: {o:?}");

            let layouts = client.plugin().layouts_extension().unwrap();
            let parameter_layouts = layouts.executable_parameter_layouts(&exe).unwrap();
            assert_eq!(parameter_layouts, ["{1,0}", "{1,0}", "{0}"], "{name} {case}");
            let output_layouts = layouts.executable_output_layouts(&exe).unwrap();
            assert_eq!(output_layouts, ["{1,0}", "{0}", "{0}"], "{name} {case}");
        }
    }
}

#[test]
fn a_profiler_session_collects_what_the_plugin_recorded() {
    use pjrt_client::extensions::profiler::ProfilerSession;
    let unix_ns = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as i128;
    // The CPU plugins have no profiler: refused, typed.
    for name in support::PLUGINS {
        let refused = ProfilerSession::start(&support::plugin(name));
        assert!(matches!(refused, Err(Error::Unsupported { .. })), "{name}");
    }
    let fake = crate::fake_support::Fake::new("profiler");
    let plugin = fake.plugin();
    let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new()).unwrap();
    let exe = crate::fake_support::compile(&client, 1).unwrap();
    let a = client.upload(&[1f32, 2., 3., 4.], &[4]).unwrap();
    drop(exe.execute(&[&a, &a], &ExecuteOptions::new()).unwrap()); // before the session: not recorded
    let session = ProfilerSession::start(&plugin).unwrap();
    let before = unix_ns();
    drop(exe.execute(&[&a, &a], &ExecuteOptions::new()).unwrap());
    let after = unix_ns();
    let space = session.collect().unwrap();
    let events = space.events();
    assert_eq!(events.len(), 1, "{events:?}");
    let event = &events[0];
    assert_eq!(
        (event.plane.as_str(), event.line.as_str(), event.name.as_str()),
        ("/device:FAKE:0", "fake stream", "fake_execute")
    );
    assert_eq!(event.duration_ns, 1000);
    assert_eq!(event.stats, [("execution".to_string(), "0".to_string())]);
    assert!(
        before <= event.start_unix_ns && event.start_unix_ns <= after,
        "{before} <= {} <= {after}",
        event.start_unix_ns
    );
    drop((exe, a, client));
    fake.assert_nothing_leaked();
}
