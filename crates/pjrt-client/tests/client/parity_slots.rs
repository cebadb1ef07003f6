//! The last slots that had no safe API: DMA mapping, global process info, user events, error
//! payloads and canonical shapes, on both CPU plugins. Where a plugin does not implement a call,
//! its exact answer is asserted.

use std::sync::{mpsc, Arc};
use std::thread;

use pjrt_client::{AlignedHostBuffer, ElementType, Error, ErrorCode, ProcessInfo, ProcessState, UserEvent};

use crate::support;

#[test]
fn dma_map_is_unimplemented_on_both_cpu_plugins() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let memory = AlignedHostBuffer::zeroed(4096).unwrap();
        let expected = if *name == "cpu" { "DmaMap is not supported." } else { "DmaMap not supported on platform cpu" };
        match client.dma_map(memory) {
            Err(Error::Pjrt { function: "PJRT_Client_DmaMap", code: ErrorCode::Unimplemented, message, .. }) => {
                assert_eq!(message, expected, "{name}");
            }
            other => panic!("{name}: expected UNIMPLEMENTED from DmaMap, got {other:?}"),
        }
        let empty = AlignedHostBuffer::zeroed(0).unwrap();
        assert!(matches!(client.dma_map(empty), Err(Error::InvalidArgument(_))), "{name}: empty memory refused first");
    }
}

#[test]
fn update_global_process_info_is_accepted_and_ignored() {
    for name in support::PLUGINS {
        let client = support::client(name, 2);
        let mut failed = ProcessInfo::new(1, 7, ProcessState::Error);
        failed.error = Some((ErrorCode::Unavailable, "task 1 lost its heartbeat".into()));
        let infos = [ProcessInfo::new(0, 42, ProcessState::Connected), failed];
        client.update_global_process_info(&infos).unwrap();
        client.update_global_process_info(&[]).unwrap();
        // The client still works.
        let buffer = client.upload(&[1f32, 2.], &[2]).unwrap();
        assert_eq!(buffer.to_vec::<f32>().unwrap(), [1., 2.]);
    }
}

#[test]
fn user_events_complete_when_set() {
    for name in support::PLUGINS {
        let plugin = support::plugin(name);
        let event = UserEvent::new(&plugin).unwrap();
        assert!(!event.event().is_ready().unwrap(), "{name}: a new user event is pending");
        assert!(!event.is_set());
        event.set_ok().unwrap();
        assert!(event.event().is_ready().unwrap());
        event.event().wait().unwrap();
        assert!(matches!(event.set_ok(), Err(Error::InvalidArgument(_))), "{name}: set twice is refused here");

        // An error reaches waiters with its code and message.
        let failing = UserEvent::new(&plugin).unwrap();
        assert!(matches!(failing.set_error(ErrorCode::Other(0), "x"), Err(Error::InvalidArgument(_))));
        failing.set_error(ErrorCode::Internal, "boom").unwrap();
        match failing.event().wait() {
            Err(Error::Pjrt { function: "PJRT_Event_Await", code: ErrorCode::Internal, message, .. }) => {
                assert_eq!(message, "boom", "{name}");
            }
            other => panic!("{name}: expected INTERNAL boom, got {other:?}"),
        }
    }
}

#[test]
fn user_event_wakes_a_callback_registered_before_it_is_set() {
    for name in support::PLUGINS {
        let plugin = support::plugin(name);
        let event = Arc::new(UserEvent::new(&plugin).unwrap());
        let (tx, rx) = mpsc::channel();
        let done = event
            .event()
            .on_ready(move |status| {
                tx.send(status.map_err(|e| e.code())).unwrap();
            })
            .unwrap();
        assert!(!done.is_done(), "{name}: nothing ran before the event was set");
        let setter = {
            let event = event.clone();
            thread::spawn(move || event.set_error(ErrorCode::Aborted, "stop").unwrap())
        };
        setter.join().unwrap();
        done.wait().unwrap();
        assert_eq!(rx.recv().unwrap(), Err(Some(ErrorCode::Aborted)), "{name}");
    }
}

#[test]
fn a_user_event_dropped_unset_is_cancelled_for_its_callbacks() {
    for name in support::PLUGINS {
        let plugin = support::plugin(name);
        let event = UserEvent::new(&plugin).unwrap();
        let (tx, rx) = mpsc::channel();
        let done = event.event().on_ready(move |status| tx.send(status.map_err(|e| e.code())).unwrap()).unwrap();
        drop(event);
        done.wait().unwrap();
        assert_eq!(rx.recv().unwrap(), Err(Some(ErrorCode::Cancelled)), "{name}");
    }
}

#[test]
fn plugin_errors_carry_no_payloads_on_cpu() {
    // ForEachPayload is called for every plugin error; the CPU plugins attach none, so the message
    // is the plugin's text unchanged.
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let error = client.lookup_device(99).unwrap_err();
        match &error {
            Error::Pjrt { code: ErrorCode::InvalidArgument, message, .. } => {
                assert_eq!(message, "No matching device found for device_id 99", "{name}");
            }
            other => panic!("{name}: {other:?}"),
        }
        assert!(error.payloads().is_empty());
    }
}

#[test]
fn canonical_shapes_on_0_115_and_unsupported_on_0_106() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let topology = client.topology().unwrap();
        if *name == "cpu" {
            let kinds = topology.memory_space_kind_ids().unwrap();
            assert_eq!(kinds, [42097224, 1756073601, -272058569]);
            for &kind in &kinds {
                let shape = topology.canonical_shape(kind, ElementType::F32, &[2, 3]).unwrap();
                assert_eq!(shape.primitive_type, 11, "F32");
                assert_eq!(shape.dims, [2, 3]);
                assert_eq!(shape.minor_to_major.as_deref(), Some(&[1, 0][..]));
            }
            assert!(matches!(topology.canonical_shape(12345, ElementType::F32, &[2]), Err(Error::InvalidArgument(_))));
            assert!(matches!(
                topology.canonical_shape(kinds[0], ElementType::F32, &[-1]),
                Err(Error::InvalidArgument(_))
            ));
        } else {
            for result in [topology.canonical_shape(42097224, ElementType::F32, &[2, 3]).map(|_| ())] {
                match result {
                    Err(Error::Unsupported { function, since_minor, plugin_minor, .. }) => {
                        assert_eq!(
                            (function, since_minor, plugin_minor),
                            ("PJRT_TopologyDescription_GetMemorySpaceKindIds", 110, 106)
                        );
                    }
                    other => panic!("{name}: expected Unsupported, got {other:?}"),
                }
            }
        }
    }
}

#[test]
fn topology_device_descriptions_match_the_client_devices() {
    for name in support::PLUGINS {
        let client = support::client(name, 2);
        let topology = client.topology().unwrap();
        let descriptions = topology.device_descriptions().unwrap();
        assert_eq!(descriptions.len(), 2, "{name}");
        for (description, device) in descriptions.iter().zip(client.devices()) {
            assert_eq!(description.id().unwrap(), device.id().unwrap());
            assert_eq!(description.process_index().unwrap(), 0);
            assert_eq!(description.kind().unwrap(), "cpu");
            assert_eq!(description.to_string().unwrap(), device.to_string().unwrap());
            assert_eq!(description.debug_string().unwrap(), device.debug_string().unwrap());
            assert!(description.attributes().unwrap().is_empty());
        }
        let memories = client.plugin().memory_descriptions_extension().unwrap();
        assert!(memories.description_memory_descriptions(&descriptions[0]).unwrap().is_empty(), "{name}: none on CPU");
        let layouts = client.plugin().layouts_extension().unwrap();
        assert_eq!(layouts.topology_default_layout(&topology, ElementType::F32, &[2, 3]).unwrap(), "{1,0}");
        assert!(matches!(
            layouts.topology_default_layout(&topology, ElementType::F32, &[-2]),
            Err(Error::InvalidArgument(_))
        ));
    }
}

#[test]
fn devices_find_their_memories_by_kind() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let device = client.devices()[0];
        for kind in ["device", "pinned_host", "unpinned_host"] {
            let memory = device.memory_by_kind(kind).unwrap().unwrap_or_else(|| panic!("{name}: no {kind}"));
            assert_eq!(memory.kind().unwrap(), kind);
        }
        assert!(device.memory_by_kind("hbm").unwrap().is_none());
    }
}

#[test]
fn unloaded_executables_answer_the_metadata_queries() {
    // Only the 0.115 plugin compiles against a topology (0.106: NOT_FOUND, see tests/aot.rs).
    let client = support::client("cpu", 1);
    let topology = client.topology().unwrap();
    let program = pjrt_client::Program::mlir_text(support::ADD_F32).unwrap();
    let options = pjrt_client::CompileOptions::new();
    let executable = topology.compile(&program, &options, None).unwrap();
    let loaded = client.compile(&program, &options).unwrap();
    assert_eq!((executable.num_replicas().unwrap(), executable.num_partitions().unwrap()), (1, 1));
    let shapes = executable.output_shapes().unwrap();
    assert_eq!(shapes, loaded.output_shapes());
    assert_eq!(shapes[0].to_string(), "f32[4]");
    assert_eq!(executable.generated_code_size().unwrap(), 0);
    assert_eq!(executable.output_memory_kinds().unwrap(), ["device"]);
    assert_eq!(executable.parameter_memory_kinds().unwrap(), ["device", "device"]);
    assert_eq!(executable.cost_analysis().unwrap_err().code(), Some(ErrorCode::Unimplemented));
    let stats = executable.compiled_memory_stats().unwrap();
    assert_eq!(stats, loaded.compiled_memory_stats().unwrap());
    let optimized = executable.optimized_program().unwrap();
    assert!(!optimized.code.is_empty());
    let compiled_with = executable.compile_options().unwrap();
    assert_eq!(compiled_with.to_bytes().unwrap(), loaded.compile_options().unwrap().to_bytes().unwrap());
    let fingerprint = executable.fingerprint().unwrap();
    assert!(!fingerprint.is_empty());
    assert_eq!(fingerprint, loaded.fingerprint().unwrap(), "same program, same fingerprint");
    assert_eq!(executable.fingerprint_bytes().unwrap(), fingerprint.as_bytes(), "the CPU plugin's is text");
    assert_eq!(loaded.fingerprint_bytes().unwrap(), fingerprint.as_bytes());
}
