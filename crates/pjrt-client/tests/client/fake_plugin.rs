//! Tests against `fake-plugin`: a PJRT plugin whose table, version and behaviour each test picks.
//!
//! See `fake_support` for how the fake is built, copied per scenario and observed. The fault
//! matrix (every slot failing, returning NULL or impossible counts, events late or never) is in
//! `fault_injection.rs`.
//!
//! Several scenarios would crash the process if the client called what it must not (garbage
//! slots): a passing test is the proof that it did not.

use std::path::PathBuf;
use std::sync::{mpsc, Once};

use pjrt_client::{
    ApiVersion, Client, ClientOptions, ElementType, Error, ErrorCode, ExecuteOptions, HostSource, LoadError, Plugin,
    UploadOptions,
};

use crate::fake_support::{compile, fake_library, scenario_dir, Fake};

/// Silences the expected panics of the callback tests (they happen on the fake's threads, where
/// the test harness does not capture output); every other panic is reported as usual.
const EXPECTED_PANIC: &str = "boom (an expected panic in a fake_plugin test callback)";

fn quiet_expected_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let message =
                payload.downcast_ref::<&str>().copied().or(payload.downcast_ref::<String>().map(String::as_str));
            if message != Some(EXPECTED_PANIC) {
                previous(info);
            }
        }));
    });
}

fn load_error(result: pjrt_client::Result<Plugin>) -> LoadError {
    match result {
        Err(Error::Load { source, .. }) => source,
        other => panic!("expected a load error, got {other:?}"),
    }
}

fn working_client(fake: &Fake) -> Client {
    let plugin = fake.plugin();
    let client = Client::new(&plugin, &ClientOptions::new()).unwrap();
    assert_eq!(client.platform_name(), "fake");
    assert_eq!(client.platform_version(), "fake 0.1");
    assert_eq!(client.addressable_devices().len(), 2);
    client
}

#[test]
fn version_0_56_is_refused() {
    let fake = Fake::new("minor_56");
    match load_error(fake.load()) {
        LoadError::IncompatibleVersion { major: 0, minor: 56, .. } => {}
        other => panic!("expected IncompatibleVersion for 0.56, got {other:?}"),
    }
    assert_eq!(fake.counter("initialize_calls"), 0, "a refused plugin must not be initialised");

    let fake = Fake::new("major_1");
    match load_error(fake.load()) {
        LoadError::IncompatibleVersion { major: 1, minor: 115, .. } => {}
        other => panic!("expected IncompatibleVersion for 1.115, got {other:?}"),
    }
    assert_eq!(fake.counter("initialize_calls"), 0);
}

#[test]
fn short_table_gates_slots() {
    // 10 slots (0..=9, up to PJRT_Event_OnReady); PJRT_Client_Create and everything after it is
    // non-NULL garbage. Calling it would crash the test process.
    let fake = Fake::new("short_table");
    let plugin = fake.plugin();
    assert_eq!(plugin.api_version(), ApiVersion { major: 0, minor: 115 });
    assert_eq!(plugin.slot_count(), 10);
    assert!(plugin.has_function("PJRT_Event_OnReady"));
    assert!(!plugin.has_function("PJRT_Client_Create"));
    assert!(!plugin.has_function("PJRT_Client_Destroy"));
    assert!(!plugin.has_function("PJRT_TopologyDescription_GetMemorySpaceKindIds"));
    match Client::new(&plugin, &ClientOptions::new()) {
        Err(Error::Unsupported {
            function: "PJRT_Client_Create",
            since_minor: 0,
            plugin_major: 0,
            plugin_minor: 115,
        }) => {}
        other => panic!("expected Unsupported PJRT_Client_Create, got {other:?}"),
    }
    assert_eq!(fake.counter("client_create_calls"), 0);
    assert_eq!(fake.counter("unimplemented_calls"), 0);

    // Shaped like the real 0.106 CPU plugin: 136 slots and garbage where slots 136, 137 would be.
    let fake = Fake::new("working_0_106");
    let plugin = fake.plugin();
    assert_eq!(plugin.slot_count(), 136);
    assert!(plugin.has_function("PJRT_Device_ClearMemoryStats"));
    assert!(!plugin.has_function("PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace"));
    assert!(!plugin.has_function("PJRT_TopologyDescription_GetMemorySpaceKindIds"));
}

#[test]
fn null_slot_is_unsupported() {
    let fake = Fake::new("null_client_create");
    let plugin = fake.plugin();
    assert_eq!(plugin.slot_count(), 138);
    assert!(!plugin.has_function("PJRT_Client_Create"));
    assert!(plugin.has_function("PJRT_Client_Destroy"));
    match Client::new(&plugin, &ClientOptions::new()) {
        Err(Error::Unsupported { function: "PJRT_Client_Create", plugin_minor: 115, .. }) => {}
        other => panic!("expected Unsupported PJRT_Client_Create, got {other:?}"),
    }
    assert_eq!(fake.counter("client_create_calls"), 0);
}

#[test]
fn minor_gates_slots() {
    // A full 138-slot table that claims 0.40: slots newer than 0.40 are absent although present
    // and non-NULL in the table, and before 0.57 only slots 0..100 have known positions.
    let fake = Fake::new("minor_40");
    let plugin = fake.plugin();
    assert_eq!(plugin.api_version(), ApiVersion { major: 0, minor: 40 });
    assert_eq!(plugin.slot_count(), 100);
    assert!(plugin.has_function("PJRT_Executable_OutputElementTypes"), "since 0.29");
    assert!(plugin.has_function("PJRT_Executable_GetCompiledMemoryStats"), "since 0.40");
    assert!(!plugin.has_function("PJRT_Memory_Kind_Id"), "since 0.48");
    assert!(!plugin.has_function("PJRT_Buffer_CopyRawToHost"), "slot 100, since 0.57");
    assert!(!plugin.has_function("PJRT_Event_Create"), "since 0.89");
    assert!(!plugin.has_function("PJRT_No_Such_Function"));
}

#[test]
fn plugin_errors_keep_code_and_message_and_are_freed() {
    let fake = Fake::new("client_create_error");
    let plugin = fake.plugin();
    let error = Client::new(&plugin, &ClientOptions::new()).unwrap_err();
    match &error {
        Error::Pjrt { function: "PJRT_Client_Create", code: ErrorCode::InvalidArgument, message, .. } => {
            assert_eq!(message, "fake: bad option");
        }
        other => panic!("expected a PJRT_Client_Create error, got {other:?}"),
    }
    assert_eq!(error.code(), Some(ErrorCode::InvalidArgument));
    assert!(error.to_string().contains("fake: bad option"), "{error}");
    assert_eq!(fake.counter("client_create_calls"), 1);
    assert_eq!(fake.counter("errors_created"), 1);
    assert_eq!(fake.counter("errors_destroyed"), 1);
    fake.assert_nothing_leaked();
}

#[test]
fn initialize_failure_is_a_load_error() {
    let fake = Fake::new("initialize_error");
    match load_error(fake.load()) {
        LoadError::Initialize(inner) => match *inner {
            Error::Pjrt { function: "PJRT_Plugin_Initialize", code: ErrorCode::Internal, ref message, .. } => {
                assert!(message.contains("fake: initialize failed"), "{message}");
            }
            other => panic!("expected a PJRT_Plugin_Initialize error, got {other:?}"),
        },
        other => panic!("expected LoadError::Initialize, got {other:?}"),
    }
    assert_eq!(fake.counter("initialize_calls"), 1);
    assert_eq!(fake.counter("errors_created"), 1);
    assert_eq!(fake.counter("errors_destroyed"), 1);
}

/// A shared library that is surely not a PJRT plugin: libm, already loaded in this process.
fn libm_path() -> PathBuf {
    let candidates = [
        "/lib/x86_64-linux-gnu/libm.so.6",
        "/usr/lib/x86_64-linux-gnu/libm.so.6",
        "/lib/aarch64-linux-gnu/libm.so.6",
        "/usr/lib/aarch64-linux-gnu/libm.so.6",
        "/lib64/libm.so.6",
        "/usr/lib64/libm.so.6",
        "/usr/lib/libm.so.6",
        "/lib/libm.so.6",
    ];
    if let Some(found) = candidates.iter().map(PathBuf::from).find(|p| p.is_file()) {
        return found;
    }
    // Else whatever libm (or libc) this process mapped.
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    maps.lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .find(|path| path.contains("/libm.so") || path.contains("/libc.so"))
        .map(PathBuf::from)
        .expect("no libm or libc found to use as a shared library without GetPjrtApi")
}

#[test]
fn not_a_plugin() {
    fake_library();
    let dir = scenario_dir();
    std::fs::create_dir_all(&dir).unwrap();

    let missing = dir.join("no-such-plugin.so");
    assert!(matches!(load_error(Plugin::load(&missing)), LoadError::NotFound));

    let text = dir.join("not-a-library.so");
    std::fs::write(&text, "this is a text file, not a shared library\n").unwrap();
    let error = load_error(Plugin::load(&text));
    let _ = std::fs::remove_file(&text);
    assert!(matches!(error, LoadError::Open(_)), "{error:?}");

    let libm = libm_path();
    let error = load_error(Plugin::load(&libm));
    assert!(matches!(error, LoadError::MissingGetPjrtApi), "{}: {error:?}", libm.display());

    let fake = Fake::new("null_api");
    assert!(matches!(load_error(fake.load()), LoadError::NullApi));

    let fake = Fake::new("tiny_table");
    match load_error(fake.load()) {
        LoadError::TableTooSmall { struct_size: 16, min } => assert_eq!(min, 40 + 3 * 8),
        other => panic!("expected TableTooSmall, got {other:?}"),
    }
    assert_eq!(fake.counter("initialize_calls"), 0);
}

#[test]
fn panicking_on_ready_callback_is_caught() {
    quiet_expected_panics();
    let fake = Fake::new("working");
    let client = working_client(&fake);
    let buffer = client.upload(&[1f32, 2., 3., 4.], &[4]).unwrap();
    assert_eq!(buffer.element_type().unwrap(), ElementType::F32);
    assert_eq!(buffer.dimensions().unwrap(), [4]);
    let event = buffer.ready_event().unwrap();

    let (sender, receiver) = mpsc::channel();
    let on_ready = event
        .on_ready(move |status| {
            let _ = sender.send((std::thread::current().id(), status.is_ok()));
            panic!("{}", EXPECTED_PANIC);
        })
        .unwrap();
    match on_ready.wait() {
        Err(Error::CallbackPanicked(message)) => assert!(message.contains("boom"), "{message}"),
        other => panic!("expected CallbackPanicked, got {other:?}"),
    }
    assert!(on_ready.is_done());
    let (callback_thread, status_ok) = receiver.recv().unwrap();
    assert!(status_ok, "the event completed without an error");
    assert_ne!(callback_thread, std::thread::current().id(), "the fake runs callbacks on its own thread");
    // The callback returned into the plugin normally (an unwind there would have aborted).
    fake.wait_for_counter("callbacks_returned", 1);

    // Still alive and usable: a second callback runs normally.
    let second = event.on_ready(|status| assert!(status.is_ok())).unwrap();
    second.wait().unwrap();
    fake.wait_for_counter("callbacks_returned", 2);
    event.wait().unwrap();
    assert!(event.is_ready().unwrap());

    drop(event);
    drop(buffer);
    drop(client);
    assert_eq!(fake.counter("on_ready_calls"), 2);
    assert_eq!(fake.counter("clients_destroyed"), 1);
    fake.assert_nothing_leaked();
}

#[test]
fn on_ready_callback_receives_the_event_error() {
    quiet_expected_panics();
    let fake = Fake::new("event_error");
    let client = working_client(&fake);
    let buffer = client.upload(&[1f32, 2., 3., 4.], &[4]).unwrap();
    let event = buffer.ready_event().unwrap();

    let (sender, receiver) = mpsc::channel();
    let on_ready = event
        .on_ready(move |status| {
            let _ = sender.send(status);
        })
        .unwrap();
    on_ready.wait().unwrap();
    match receiver.recv().unwrap() {
        Err(Error::Pjrt { function: "PJRT_Event", code: ErrorCode::Internal, message, .. }) => {
            assert_eq!(message, "fake: transfer failed");
        }
        other => panic!("expected the event's error in the callback, got {other:?}"),
    }

    // A callback that panics on the error: the panic is caught and the error still freed.
    let on_ready = event
        .on_ready(|status| {
            assert!(status.is_err());
            panic!("{}", EXPECTED_PANIC);
        })
        .unwrap();
    assert!(matches!(on_ready.wait(), Err(Error::CallbackPanicked(_))));
    fake.wait_for_counter("callbacks_returned", 2);

    match event.wait() {
        Err(Error::Pjrt { function: "PJRT_Event_Await", code: ErrorCode::Internal, message, .. }) => {
            assert_eq!(message, "fake: transfer failed");
        }
        other => panic!("expected the event's error from wait, got {other:?}"),
    }
    assert!(matches!(event.error(), Err(Error::Pjrt { function: "PJRT_Event_Error", .. })));

    drop(event);
    drop(buffer);
    drop(client);
    assert_eq!(fake.counter("errors_created"), 4);
    fake.assert_nothing_leaked();
}

#[test]
fn newer_element_type_is_refused_before_the_call() {
    let fake = Fake::new("working_0_106");
    let client = working_client(&fake);
    assert_eq!(client.plugin().api_version().minor, 106);
    let dense = UploadOptions::new();

    // F6E2M3FN is 0.114: the real 0.106 plugin segfaults on it.
    match client.upload_with(HostSource::bytes(&[0u8; 4], ElementType::F6E2M3FN, &[4]), &dense) {
        Err(Error::Unsupported { since_minor: 114, plugin_minor: 106, .. }) => {}
        other => panic!("expected Unsupported for f6e2m3fn on 0.106, got {other:?}"),
    }
    // INVALID aborts every real plugin.
    match client.upload_with(HostSource::bytes(&[0u8; 4], ElementType::INVALID, &[4]), &dense) {
        Err(Error::InvalidArgument(_)) => {}
        other => panic!("expected InvalidArgument for INVALID, got {other:?}"),
    }
    // 8 bytes for an f32[4] (16 bytes): the plugin would read past the slice.
    match client.upload_with(HostSource::bytes(&[0u8; 8], ElementType::F32, &[4]), &dense) {
        Err(Error::InvalidArgument(_)) => {}
        other => panic!("expected InvalidArgument for a short slice, got {other:?}"),
    }
    assert_eq!(fake.counter("buffer_from_host_calls"), 0);

    // Control: a valid upload does reach the plugin.
    let buffer = client.upload_with(HostSource::bytes(&[0u8; 16], ElementType::F32, &[4]), &dense).unwrap();
    assert_eq!(fake.counter("buffer_from_host_calls"), 1);
    drop(buffer);
    drop(client);
    fake.assert_nothing_leaked();
}

#[test]
fn wrong_client_option_type_is_refused_before_the_call() {
    let fake = Fake::new("working");
    let plugin = fake.plugin();
    match Client::new(&plugin, &ClientOptions::new().set("cpu_device_count", "4")) {
        Err(Error::InvalidArgument(message)) => assert!(message.contains("cpu_device_count"), "{message}"),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    assert_eq!(fake.counter("client_create_calls"), 0);

    // Control: the right type reaches the plugin.
    let client = Client::new(&plugin, &ClientOptions::new().cpu_device_count(4)).unwrap();
    assert_eq!(fake.counter("client_create_calls"), 1);
    assert_eq!(fake.counter("client_create_options"), 1);
    drop(client);
    fake.assert_nothing_leaked();
}

#[test]
fn error_payloads_reach_the_error_and_a_failing_for_each_payload_loses_only_them() {
    let fake = Fake::new("working");
    let plugin = fake.plugin();
    let client = Client::new(&plugin, &ClientOptions::new()).unwrap();
    fake.set_faults("fail PJRT_Client_LookupDevice\npayload type.googleapis.com/fake.Detail it's[1]");
    let error = client.lookup_device(0).unwrap_err();
    assert_eq!(error.payloads(), [("type.googleapis.com/fake.Detail".to_owned(), b"it's[1]".to_vec())]);
    match &error {
        Error::Pjrt { function: "PJRT_Client_LookupDevice", code: ErrorCode::Internal, message, .. } => {
            // The payloads are a field; the message is the plugin's own.
            assert_eq!(message, "fake: injected failure in PJRT_Client_LookupDevice");
            assert!(error.to_string().ends_with(
                "fake: injected failure in PJRT_Client_LookupDevice [type.googleapis.com/fake.Detail='it\\x27s\\x5b1\\x5d']"
            ));
        }
        other => panic!("{other:?}"),
    }

    // When reading the payloads fails, the error keeps its code and message and the second error
    // is freed too.
    fake.set_faults(
        "fail PJRT_Client_LookupDevice\nfail PJRT_Error_ForEachPayload\npayload type.googleapis.com/fake.Detail x",
    );
    let error = client.lookup_device(0).unwrap_err();
    assert!(error.payloads().is_empty());
    assert!(matches!(&error, Error::Pjrt { code: ErrorCode::Internal, message, .. }
        if message == "fake: injected failure in PJRT_Client_LookupDevice"));
    drop(client);
    assert_eq!(fake.counter("errors_created"), 3);
    assert_eq!(fake.counter("errors_destroyed"), 3);
    fake.assert_nothing_leaked();
}

#[test]
fn dma_mappings_are_released_by_unmap_and_by_drop() {
    let fake = Fake::new("working");
    let plugin = fake.plugin();
    let client = Client::new(&plugin, &ClientOptions::new()).unwrap();
    let mapping = client.dma_map(pjrt_client::AlignedHostBuffer::zeroed(64).unwrap()).unwrap();
    assert_eq!(mapping.memory().len(), 64);
    assert_eq!((fake.counter("dma_maps"), fake.counter("dma_unmaps")), (1, 0));
    let memory = mapping.unmap().unwrap();
    assert_eq!((fake.counter("dma_maps"), fake.counter("dma_unmaps")), (1, 1));
    let mapping = client.dma_map(memory).unwrap();
    drop(mapping);
    assert_eq!((fake.counter("dma_maps"), fake.counter("dma_unmaps")), (2, 2));
    let info = pjrt_client::ProcessInfo::new(0, 9, pjrt_client::ProcessState::Connected);
    client.update_global_process_info(&[info]).unwrap();
    assert_eq!(fake.counter("process_info_updates"), 1);
    drop(client);
    fake.assert_nothing_leaked();
}

/// A plugin that reports its optimized program as MLIR text: the parameters are read from its
/// `@main` signature, so arguments are still checked before the plugin sees them.
#[test]
fn an_optimized_mlir_text_program_keeps_the_argument_checks() {
    let fake = Fake::new("optimized_mlir_text");
    let plugin = fake.plugin();
    let client = Client::new(&plugin, &ClientOptions::new()).unwrap();
    // Compiled from bytecode, so the source signature cannot help: the optimized MLIR does.
    let bytecode = pjrt_client::Program::mlir_bytecode(b"ML\xefR\x0dMLIR23.0.0git\0".to_vec()).unwrap();
    let exe = client.compile(&bytecode, &pjrt_client::CompileOptions::new()).unwrap();
    assert_eq!(exe.optimized_program().unwrap().format, "mlir");
    assert_eq!(exe.argument_checks_off_because(), None);
    let shapes = exe.parameter_shapes().unwrap();
    assert_eq!(shapes.len(), 2);
    assert_eq!((shapes[0].element_type, &shapes[0].dims[..]), (Some(ElementType::F32), &[4][..]));
    let wrong = client.upload(&[1f32, 2.], &[2]).unwrap();
    let err = exe.execute(&[&wrong, &wrong], &ExecuteOptions::new()).unwrap_err().to_string();
    assert!(err.contains("parameter 0 is f32[4]"), "{err}");
}

/// Optimized MLIR bytecode is not read here: the signature of the program compiled is used
/// instead, MLIR text's or (with the `stablehlo` feature) a portable artifact's; compiled from
/// bytecode that does not read as either, the checks are off and say why.
#[test]
fn an_optimized_mlir_bytecode_program_falls_back_to_the_source_or_says_why_checks_are_off() {
    let fake = Fake::new("optimized_mlir_bytecode");
    let plugin = fake.plugin();
    let client = Client::new(&plugin, &ClientOptions::new()).unwrap();
    let exe = compile(&client, 1).unwrap();
    assert_eq!(exe.argument_checks_off_because(), None);
    assert_eq!(exe.parameter_shapes().unwrap().len(), 2);
    let wrong = client.upload(&[1f32, 2.], &[2]).unwrap();
    assert!(exe
        .execute(&[&wrong, &wrong], &ExecuteOptions::new())
        .unwrap_err()
        .to_string()
        .contains("parameter 0 is f32[4]"));

    // A portable artifact's @main is read from its bytecode: tanh(a) * b + 1 of two f32[2, 3].
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/formats/tanh_mul.portable-1.0.0.mlirbc");
    let artifact = pjrt_client::Program::from_file(path).unwrap();
    let exe = client.compile(&artifact, &pjrt_client::CompileOptions::new()).unwrap();
    assert_eq!(exe.argument_checks_off_because(), None);
    let shapes = exe.parameter_shapes().unwrap();
    let f32_2x3 = (Some(ElementType::F32), vec![2, 3]);
    assert_eq!(shapes.iter().map(|s| (s.element_type, s.dims.clone())).collect::<Vec<_>>(), [f32_2x3.clone(), f32_2x3]);
    assert!(exe
        .execute(&[&wrong, &wrong], &ExecuteOptions::new())
        .unwrap_err()
        .to_string()
        .contains("parameter 0 is f32[2"));

    let bytecode = pjrt_client::Program::mlir_bytecode(b"ML\xefR\x0dMLIR23.0.0git\0".to_vec()).unwrap();
    let exe = client.compile(&bytecode, &pjrt_client::CompileOptions::new()).unwrap();
    assert_eq!(exe.parameter_shapes(), None);
    let why = exe.argument_checks_off_because().unwrap();
    assert!(why.contains("MLIR bytecode") && why.contains("does not read"), "{why}");

    // Declared parameters (as pjrt_formats declares a jax.export model's avals) keep the checks on.
    let declared =
        bytecode.with_parameters([(pjrt_client::ElementType::F32, vec![4]), (pjrt_client::ElementType::F32, vec![4])]);
    let exe = client.compile(&declared, &pjrt_client::CompileOptions::new()).unwrap();
    assert_eq!(exe.argument_checks_off_because(), None);
    assert!(exe
        .execute(&[&wrong, &wrong], &ExecuteOptions::new())
        .unwrap_err()
        .to_string()
        .contains("parameter 0 is f32[4]"));
}

/// `/proc/self/fd/N` (what pjrt_plugins hands out for a plugin it checked through that
/// descriptor) loads the open file, not whatever its name points to by then; the plugin is
/// named by the file's path.
#[test]
fn a_descriptor_path_loads_the_open_file_even_after_a_swap() {
    use std::os::fd::AsRawFd;
    let dir = scenario_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("descriptor.so");
    std::fs::copy(fake_library(), &path).unwrap();
    let checked = std::fs::File::open(&path).unwrap();
    let load_path = PathBuf::from(format!("/proc/self/fd/{}", checked.as_raw_fd()));
    // Swapped after the check: the name now holds something else.
    let swap = dir.join("descriptor.so.swap");
    std::fs::write(&swap, b"not a library").unwrap();
    std::fs::rename(&swap, &path).unwrap();
    assert!(matches!(Plugin::load(&path), Err(Error::Load { .. })), "the name now holds no library");
    let plugin = Plugin::load(&load_path).unwrap();
    assert!(plugin.path().starts_with(&dir), "named by its file: {}", plugin.path().display());
    assert!(plugin.path().to_string_lossy().contains("descriptor.so"), "{}", plugin.path().display());
    // The fake's default scenario (its sidecar is looked up beside the name it was loaded as).
    assert_eq!(plugin.attribute("fake_scenario"), Some(&pjrt_client::Value::String("working".into())));
    drop(checked);
}
