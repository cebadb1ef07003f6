//! Client, device, memory, buffer and executable behaviour on both real CPU plugins.

use pjrt_client::{
    CompileOptions, DeviceAssignment, DownloadOptions, ElementType, Error, ErrorCode, ExecuteOptions,
    HostBufferSemantics, HostSource, Program, UploadOptions,
};

use crate::support;

#[test]
fn devices_and_memories() {
    for name in support::PLUGINS {
        let client = support::client(name, 4);
        assert_eq!(client.platform_name(), "cpu");
        assert_eq!(client.process_index(), 0);
        let devices = client.devices();
        assert_eq!(devices.len(), 4, "{name}");
        assert_eq!(client.addressable_devices().len(), 4);
        for (i, device) in devices.iter().enumerate() {
            assert_eq!(device.id().unwrap(), i as i32);
            assert_eq!(device.kind().unwrap(), "cpu");
            assert_eq!(device.to_string().unwrap(), format!("CpuDevice(id={i})"));
            assert_eq!(device.local_hardware_id().unwrap(), i as i32);
            assert!(device.is_addressable().unwrap());
            assert!(device.attributes().unwrap().is_empty());
            let memories = device.memories().unwrap();
            let kinds: Vec<String> = memories.iter().map(|m| m.kind().unwrap()).collect();
            assert_eq!(kinds, ["device", "pinned_host", "unpinned_host"], "{name}");
            let default = device.default_memory().unwrap();
            assert_eq!(default.kind().unwrap(), "device");
            assert_eq!(default.devices().unwrap(), vec![*device]);
            assert_eq!(default.kind_id().unwrap(), 42097224);
        }
        assert_eq!(client.addressable_memories().unwrap().len(), 12);
        assert_eq!(client.lookup_device(2).unwrap().id().unwrap(), 2);
        assert_eq!(client.lookup_addressable_device(3).unwrap().id().unwrap(), 3);
        let missing = client.lookup_device(99).unwrap_err();
        assert_eq!(missing.code(), Some(ErrorCode::InvalidArgument), "{missing}");
        assert_eq!(client.default_device_assignment(2, 2).unwrap(), vec![vec![0, 1], vec![2, 3]]);
        assert!(client.default_device_assignment(0, 1).is_err());
    }
}

#[test]
fn plugin_attributes_are_typed() {
    let new = support::plugin("cpu");
    assert_eq!(new.api_version().to_string(), "0.115");
    assert_eq!(new.slot_count(), 138);
    assert_eq!(new.xla_version(), Some(2));
    assert_eq!(new.stablehlo_current_version().unwrap().to_string(), "1.20.0");
    let old = support::plugin("cpu-0.106");
    assert_eq!(old.slot_count(), 136);
    assert_eq!(old.stablehlo_current_version().unwrap().to_string(), "1.16.1");
    assert!(!old.has_function("PJRT_TopologyDescription_GetMemorySpaceKindIds"));
    assert!(new.has_function("PJRT_TopologyDescription_GetMemorySpaceKindIds"));
    // Loading the same file again gives the same plugin (initialised once).
    let again = pjrt_client::Plugin::load(new.path()).unwrap();
    assert_eq!(again.path(), new.path());
}

#[test]
fn every_supported_element_type_round_trips() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let minor = client.plugin().api_version().minor;
        for &t in ElementType::ALL {
            let Some(since) = t.since_minor() else { continue };
            if !t.is_array_type() || t == ElementType::INVALID {
                continue;
            }
            let dims = [2i64, 4];
            let bytes = t.host_bytes(8).unwrap();
            // Bit patterns valid for every type: small values repeated; 0 and 1 for PRED and the
            // unsigned sub-byte types, 0 and -1 for the signed ones (one element per byte).
            let signed_sub_byte = [ElementType::S4, ElementType::S2, ElementType::S1].contains(&t);
            let data: Vec<u8> = (0..bytes)
                .map(|i| match () {
                    _ if signed_sub_byte => [0, 0xff][i % 2],
                    _ if t == ElementType::PRED || t.is_sub_byte() => (i % 2) as u8,
                    _ => (i % 7) as u8,
                })
                .collect();
            let result = client.upload_with(HostSource::bytes(&data, t, &dims), &UploadOptions::new());
            if since > minor {
                assert!(
                    matches!(result, Err(Error::Unsupported { .. })),
                    "{name}: {t} must be refused before the call"
                );
                continue;
            }
            let buffer = match result {
                Ok(b) => b,
                // Sub-byte and exotic types: the plugin may refuse them, but with an error.
                Err(Error::Pjrt { .. }) => continue,
                Err(e) => panic!("{name}: {t}: {e}"),
            };
            assert_eq!(buffer.element_type().unwrap(), t);
            assert_eq!(buffer.dimensions().unwrap(), dims);
            // Sub-byte values come back as their low bits (-1 as 0x0f for S4).
            let mask = if t.is_sub_byte() { (1u16 << t.bits().unwrap()) as u8 - 1 } else { 0xff };
            let expected: Vec<u8> = data.iter().map(|b| b & mask).collect();
            assert_eq!(buffer.to_bytes(DownloadOptions::new()).unwrap(), expected, "{name}: {t}");
        }
    }
}

#[test]
fn buffers_report_and_move() {
    for name in support::PLUGINS {
        let client = support::client(name, 2);
        let devices = client.devices();
        let a = client
            .upload_with(HostSource::slice(&[1f32, 2., 3., 4.], &[2, 2]), &UploadOptions::new().device(&devices[1]))
            .unwrap();
        assert_eq!(a.device().unwrap(), devices[1]);
        assert_eq!(a.memory().unwrap().kind().unwrap(), "device");
        assert_eq!(a.on_device_size().unwrap(), 16);
        a.ready_event().unwrap().wait().unwrap();
        let b = a.copy_to_device(&devices[0]).unwrap();
        assert_eq!(b.device().unwrap(), devices[0]);
        assert_eq!(b.to_vec::<f32>().unwrap(), [1., 2., 3., 4.]);
        let pinned = devices[0].memories().unwrap().into_iter().find(|m| m.kind().unwrap() == "pinned_host").unwrap();
        let c = b.copy_to_memory(&pinned).unwrap();
        assert_eq!(c.memory().unwrap().kind().unwrap(), "pinned_host");
        assert_eq!(c.to_vec::<f32>().unwrap(), [1., 2., 3., 4.]);
        let d = client.upload_with(HostSource::slice(&[5i32, 6], &[2]), &UploadOptions::new().memory(&pinned)).unwrap();
        assert_eq!(d.to_vec::<i32>().unwrap(), [5, 6]);
        assert!(matches!(d.to_vec::<f32>(), Err(Error::InvalidArgument(_))));
        // Asynchronous copy to the host.
        let transfer = a.to_bytes_async(DownloadOptions::new().destination(vec![0u8; 16])).unwrap();
        assert_eq!(transfer.wait().unwrap().len(), 16);
        // Delete keeps the handle valid.
        assert!(!a.is_deleted().unwrap());
        a.delete().unwrap();
        assert!(a.is_deleted().unwrap());
        assert!(a.to_bytes(DownloadOptions::new()).is_err());
    }
}

#[test]
fn strided_uploads_and_bad_shapes() {
    let client = support::client("cpu", 1);
    // A column-major 2x3 f32 array read through byte strides.
    let col_major = [1f32, 4., 2., 5., 3., 6.];
    let bytes: Vec<u8> = col_major.iter().flat_map(|v| v.to_le_bytes()).collect();
    let layout = UploadOptions::new().byte_strides(vec![4, 8]);
    let b = client.upload_with(HostSource::bytes(&bytes, ElementType::F32, &[2, 3]), &layout).unwrap();
    assert_eq!(b.to_vec::<f32>().unwrap(), [1., 2., 3., 4., 5., 6.]);
    let too_far = UploadOptions::new().byte_strides(vec![4, 16]);
    assert!(matches!(
        client.upload_with(HostSource::bytes(&bytes, ElementType::F32, &[2, 3]), &too_far),
        Err(Error::InvalidArgument(_))
    ));
    let wrong_rank = UploadOptions::new().byte_strides(vec![4]);
    let async_copy = UploadOptions::new().semantics(HostBufferSemantics::CopyUntilTransferCompletes);
    let c = client.upload_with(HostSource::bytes(&bytes, ElementType::F32, &[6]), &async_copy).unwrap();
    assert_eq!(c.to_vec::<f32>().unwrap(), col_major);
    assert!(client.upload_with(HostSource::bytes(&bytes, ElementType::F32, &[2, 3]), &wrong_rank).is_err());
    let dflt = UploadOptions::new();
    assert!(client.upload_with(HostSource::bytes(&bytes, ElementType::F32, &[-1, 3]), &dflt).is_err());
    assert!(client.upload_with(HostSource::bytes(&bytes, ElementType::F32, &[i64::MAX, i64::MAX]), &dflt).is_err());
    assert!(client.upload_with(HostSource::bytes(&bytes[..20], ElementType::F32, &[2, 3]), &dflt).is_err());
    assert!(client.upload_with(HostSource::bytes(&bytes, ElementType::TOKEN, &[2, 3]), &dflt).is_err());
    assert!(client.upload_with(HostSource::bytes(&bytes, ElementType::INVALID, &[2, 3]), &dflt).is_err());
    // Rank-0 and zero-size arrays.
    let scalar = client.upload(&[7.5f64], &[]).unwrap();
    assert_eq!(scalar.to_vec::<f64>().unwrap(), [7.5]);
    let empty = client.upload::<f32>(&[], &[0, 3]).unwrap();
    assert_eq!(empty.to_vec::<f32>().unwrap(), Vec::<f32>::new());
}

#[test]
fn arguments_are_checked_against_parameters() {
    for name in support::PLUGINS {
        let client = support::client(name, 4);
        let exe = client.compile(&Program::mlir_text(support::ADD_F32).unwrap(), &CompileOptions::new()).unwrap();
        let f = client.upload(&[1f32; 4], &[4]).unwrap();
        let i = client.upload(&[1i32; 4], &[4]).unwrap();
        let square = client.upload(&[1f32; 4], &[2, 2]).unwrap();
        // The plugin would silently reinterpret these (same byte size): we refuse them.
        let e = exe.execute(&[&f, &i], &ExecuteOptions::new()).unwrap_err().to_string();
        assert!(e.contains("argument 1 is s32[4]") && e.contains("f32[4]"), "{e}");
        let e = exe.execute(&[&square, &f], &ExecuteOptions::new()).unwrap_err().to_string();
        assert!(e.contains("argument 0 is f32[2, 2]"), "{e}");
        assert!(exe.execute(&[&f], &ExecuteOptions::new()).unwrap_err().to_string().contains("takes 2 arguments"));
        assert!(exe.execute_sharded_async(&[vec![&f, &f], vec![&f, &f]], &ExecuteOptions::new()).is_err());
        let other = support::client(name, 1);
        let foreign = other.upload(&[1f32; 4], &[4]).unwrap();
        assert!(exe
            .execute(&[&f, &foreign], &ExecuteOptions::new())
            .unwrap_err()
            .to_string()
            .contains("another client"));
        let out = exe.execute(&[&f, &f], &ExecuteOptions::new()).unwrap();
        assert_eq!(out[0].to_vec::<f32>().unwrap(), [2.; 4]);
        assert_eq!(exe.num_outputs(), 1);
        assert_eq!(exe.output_shapes()[0].to_string(), "f32[4]");
        assert_eq!(exe.name(), "add_module");
        assert!(!exe.fingerprint().unwrap().is_empty());
    }
}

#[test]
fn compile_checks_options_and_programs() {
    for name in support::PLUGINS {
        let client = support::client(name, 4);
        let add = Program::mlir_text(support::ADD_F32).unwrap();
        // More devices than the client has: refused before the call.
        let e = client.compile(&add, &CompileOptions::new().num_replicas(8)).unwrap_err();
        assert!(e.to_string().contains("cpu_device_count"), "{e}");
        let bad_ids = DeviceAssignment::new(vec![vec![42]]).unwrap();
        assert!(client.compile(&add, &CompileOptions::new().device_assignment(&bad_ids)).is_err());
        // A device assignment picks the device.
        let on_two = DeviceAssignment::new(vec![vec![2]]).unwrap();
        let exe = client.compile(&add, &CompileOptions::new().device_assignment(&on_two)).unwrap();
        assert_eq!(exe.addressable_devices()[0].id().unwrap(), 2);
        // Malformed MLIR and a missing main come back as errors with hints.
        let e = client.compile(&Program::mlir_text("func.func @main(").unwrap(), &CompileOptions::new()).unwrap_err();
        assert!(matches!(e, Error::Pjrt { function: "PJRT_Client_Compile", .. }), "{e}");
        let no_main =
            Program::mlir_text("func.func @f(%a: tensor<f32>) -> tensor<f32> { return %a : tensor<f32> }").unwrap();
        let e = client.compile(&no_main, &CompileOptions::new()).unwrap_err();
        assert!(e.to_string().contains("main"), "{e}");
        // Garbage HLO proto.
        let e =
            client.compile(&Program::hlo_module_proto(vec![0xff, 0xff]).unwrap(), &CompileOptions::new()).unwrap_err();
        assert_eq!(e.code(), Some(ErrorCode::InvalidArgument), "{e}");
        // An unknown XLA option is the plugin's error, not an abort.
        let e = client.compile(&add, &CompileOptions::new().xla_option("no_such_option", true)).unwrap_err();
        assert_eq!(e.code(), Some(ErrorCode::InvalidArgument), "{e}");
    }
}

#[test]
fn portable_executables_run_on_a_chosen_device() {
    for name in support::PLUGINS {
        let client = support::client(name, 4);
        let add = Program::mlir_text(support::ADD_F32).unwrap();
        let exe = client.compile(&add, &CompileOptions::new().compile_portable_executable(true)).unwrap();
        assert!(exe.addressable_devices().is_empty());
        let device = client.devices()[3];
        let x = client
            .upload_with(HostSource::slice(&[1f32, 2., 3., 4.], &[4]), &UploadOptions::new().device(&device))
            .unwrap();
        assert!(exe.execute(&[&x, &x], &ExecuteOptions::new()).is_err(), "portable executables need a device");
        let out = exe.execute(&[&x, &x], &ExecuteOptions::new().device(&device)).unwrap();
        assert_eq!(out[0].to_vec::<f32>().unwrap(), [2., 4., 6., 8.]);
        assert_eq!(out[0].device().unwrap().id().unwrap(), 3);
    }
}

#[test]
fn client_options_are_type_checked() {
    let plugin = support::plugin("cpu-0.106");
    // A string for cpu_device_count aborts this plugin; it must never reach it.
    let options = pjrt_client::ClientOptions::new().set("cpu_device_count", "4");
    assert!(matches!(pjrt_client::Client::new(&plugin, &options), Err(Error::InvalidArgument(_))));
    let options = pjrt_client::ClientOptions::new().set("cpu_device_count", true);
    assert!(matches!(pjrt_client::Client::new(&plugin, &options), Err(Error::InvalidArgument(_))));
    // Unknown names go through: 0.115 rejects them with an error, 0.106 ignores them.
    let options = pjrt_client::ClientOptions::new().set("no_such_option", 1i64);
    let e = pjrt_client::Client::new(&support::plugin("cpu"), &options).unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::InvalidArgument));
    assert!(pjrt_client::Client::new(&plugin, &options).is_ok());
}

#[test]
fn on_ready_callbacks_run_and_panics_are_caught() {
    let client = support::client("cpu", 1);
    let a = client.upload(&[1f32], &[1]).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let handle = a.ready_event().unwrap().on_ready(move |status| tx.send(status.is_ok()).unwrap()).unwrap();
    handle.wait().unwrap();
    assert!(rx.recv().unwrap());
    let handle = a.ready_event().unwrap().on_ready(|_| panic!("boom in a callback")).unwrap();
    match handle.wait() {
        Err(Error::CallbackPanicked(m)) => assert!(m.contains("boom")),
        other => panic!("expected CallbackPanicked, got {other:?}"),
    }
}

#[test]
fn children_keep_the_client_alive() {
    let client = support::client("cpu", 1);
    let exe = client.compile(&Program::mlir_text(support::ADD_F32).unwrap(), &CompileOptions::new()).unwrap();
    let x = client.upload(&[1f32; 4], &[4]).unwrap();
    let event = x.ready_event().unwrap();
    drop(client);
    event.wait().unwrap();
    assert_eq!(exe.execute(&[&x, &x], &ExecuteOptions::new()).unwrap()[0].to_vec::<f32>().unwrap(), [2.; 4]);
}

#[test]
fn bounded_waits() {
    let client = support::client("cpu", 1);
    let a = client.upload(&[1f32], &[1]).unwrap();
    a.ready_event().unwrap().wait_timeout(std::time::Duration::from_secs(10)).unwrap();
    let handle = a.ready_event().unwrap().on_ready(|_| ()).unwrap();
    assert!(handle.wait_timeout(std::time::Duration::from_secs(10)).unwrap());
}
