//! Buffers beyond upload/download, on both real CPU plugins (0.115 and 0.106): copies between
//! devices, memories and clients, views, raw copies, external references, layouts, dynamic
//! dimensions, uninitialized, error and alias buffers, bitcasts, donation with a control
//! dependency, the async host-to-device transfer manager and uploads with a done callback.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use pjrt_client::{
    AlignedHostBuffer, Client, ClientOptions, CompileOptions, DownloadOptions, ElementType, Error, ErrorCode,
    ExecuteOptions, HostData, HostSource, MemoryLayout, Placement, Program, ShapeSpec, UploadOptions, Value,
    HOST_ALIGNMENT,
};

use crate::fake_support;
use crate::support;

const WAIT: Duration = Duration::from_secs(30);

fn minor(client: &Client) -> i32 {
    client.plugin().api_version().minor
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn i32_bytes(values: &[i32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn assert_invalid(result: Result<impl std::fmt::Debug, Error>, needle: &str) {
    match result {
        Err(Error::InvalidArgument(message)) => assert!(message.contains(needle), "{message:?} lacks {needle:?}"),
        other => panic!("expected an InvalidArgument containing {needle:?}, got {other:?}"),
    }
}

#[test]
fn copies_to_devices_and_every_memory_kind_preserve_values() {
    for name in support::PLUGINS {
        let client = support::client(name, 2);
        let devices = client.addressable_devices();
        let values = [1.5f32, -2., 3.25, 4e9];
        let src =
            client.upload_with(HostSource::slice(&values, &[4]), &UploadOptions::new().device(&devices[0])).unwrap();
        let copy = src.copy_to_device(&devices[1]).unwrap();
        assert_eq!(copy.device().unwrap(), devices[1], "{name}");
        assert_eq!(copy.to_vec::<f32>().unwrap(), values, "{name}");
        let mut kinds = Vec::new();
        for memory in devices[1].memories().unwrap() {
            let kind = memory.kind().unwrap();
            let copy = src.copy_to_memory(&memory).unwrap();
            assert_eq!(copy.memory().unwrap(), memory, "{name} {kind}");
            assert_eq!(copy.to_vec::<f32>().unwrap(), values, "{name} {kind}");
            kinds.push(kind);
        }
        kinds.sort();
        assert_eq!(kinds, ["device", "pinned_host", "unpinned_host"], "{name}");
    }
}

#[test]
fn copies_between_clients_go_through_the_host() {
    let new = support::client("cpu", 1);
    let old = support::client("cpu-0.106", 2);
    let values: Vec<i32> = (0..12).map(|i| i * 7 - 30).collect();
    let src = new.upload(&values, &[3, 4]).unwrap();
    let old_device = old.addressable_devices()[1];
    let there = src.copy_to_client(&old, Placement::Device(&old_device)).unwrap();
    assert!(there.client().plugin().api_version().minor == 106);
    assert_eq!(there.device().unwrap(), old_device);
    assert_eq!(there.dimensions().unwrap(), [3, 4]);
    assert_eq!(there.to_vec::<i32>().unwrap(), values);
    let back = there.copy_to_client(&new, Placement::Default).unwrap();
    assert_eq!(back.to_vec::<i32>().unwrap(), values);
    // Two clients of the same plugin.
    let other = support::client("cpu", 1);
    assert_eq!(src.copy_to_client(&other, Placement::Default).unwrap().to_vec::<i32>().unwrap(), values);
    // A placement of a third client is refused before anything is copied.
    assert_invalid(src.copy_to_client(&other, Placement::Device(&old_device)), "another client");
}

#[test]
fn views_read_the_callers_memory_and_keep_it_alive() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let host = Arc::new(AlignedHostBuffer::from_slice(&[1f32, 2., 3., 4., 5., 6.]).unwrap());
        let view = client.view_of_aligned(host.clone(), ElementType::F32, &[2, 3], Placement::Default).unwrap();
        assert_eq!(view.to_vec::<f32>().unwrap(), [1., 2., 3., 4., 5., 6.], "{name}");
        // The plugin reads the caller's memory in place.
        assert_eq!(view.unsafe_pointer().unwrap() as usize, host.as_bytes().as_ptr() as usize, "{name}");
        assert!(Arc::strong_count(&host) >= 2, "{name}: held while the view lives");
        drop(view);
        support::wait_for("the on-delete callback", || Arc::strong_count(&host) == 1);

        // Through a memory instead of a device.
        let memory = client.addressable_devices()[0].default_memory().unwrap();
        let view = client.view_of_aligned(host.clone(), ElementType::S32, &[6], Placement::Memory(&memory)).unwrap();
        assert_eq!(view.to_vec::<i32>().unwrap()[0], 1f32.to_bits() as i32, "{name}");
        drop(view);
        support::wait_for("the on-delete callback", || Arc::strong_count(&host) == 1);

        // Validation before the plugin: sizes, element types (0 would abort), dims.
        assert_invalid(client.view_of_aligned(host.clone(), ElementType::F32, &[5], Placement::Default), "needs 20");
        assert_invalid(client.view_of_aligned(host.clone(), ElementType::INVALID, &[6], Placement::Default), "invalid");
        assert_invalid(client.view_of_aligned(host.clone(), ElementType::F32, &[-6], Placement::Default), "negative");
        assert_eq!(Arc::strong_count(&host), 1, "{name}: nothing kept on failure");
    }
}

#[test]
fn views_of_host_memory_are_never_donated() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let exe = client.compile(&Program::mlir_text(support::DONATING).unwrap(), &CompileOptions::new()).unwrap();
        // An ordinary buffer is donated.
        let plain = client.upload(&[1f32, 2., 3., 4.], &[4]).unwrap();
        assert_eq!(
            exe.execute(&[&plain], &ExecuteOptions::new()).unwrap()[0].to_vec::<f32>().unwrap(),
            [2., 4., 6., 8.]
        );
        assert!(plain.is_deleted().unwrap(), "{name}: donated");
        // A view holds an external reference: the plugin copies instead of donating.
        let host = Arc::new(AlignedHostBuffer::from_slice(&[1f32, 2., 3., 4.]).unwrap());
        let view = client.view_of_aligned(host.clone(), ElementType::F32, &[4], Placement::Default).unwrap();
        assert_eq!(
            exe.execute(&[&view], &ExecuteOptions::new()).unwrap()[0].to_vec::<f32>().unwrap(),
            [2., 4., 6., 8.],
            "{name}"
        );
        assert!(!view.is_deleted().unwrap(), "{name}: not donated");
        assert_eq!(view.to_vec::<f32>().unwrap(), [1., 2., 3., 4.], "{name}");
        assert_eq!(host.as_bytes(), f32_bytes(&[1., 2., 3., 4.]), "{name}: the caller's memory is unchanged");
        drop(view);
        support::wait_for("the on-delete callback", || Arc::strong_count(&host) == 1);
    }
}

#[test]
fn raw_pointer_views_check_alignment_and_run_on_delete() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        assert_eq!(client.view_alignment(), Some(HOST_ALIGNMENT));
        let mut host = AlignedHostBuffer::zeroed(HOST_ALIGNMENT + 16).unwrap();
        host.as_mut_bytes()[..16].copy_from_slice(&i32_bytes(&[10, 20, 30, 40]));
        host.as_mut_bytes()[4..20].copy_from_slice(&i32_bytes(&[11, 21, 31, 41]));
        let base = host.as_mut_bytes().as_mut_ptr();
        // SAFETY: never reaches the plugin (misaligned: refused first).
        let misaligned = unsafe {
            client.view_of_device_pointer(base.add(4).cast(), ElementType::S32, &[4], Placement::Default, None)
        };
        assert_invalid(misaligned, "not aligned to 64 bytes");
        let deleted = Arc::new(AtomicBool::new(false));
        let flag = deleted.clone();
        let on_delete: Box<dyn FnOnce() + Send> = Box::new(move || flag.store(true, Ordering::SeqCst));
        // SAFETY: `host` outlives the view (we wait for on_delete below before dropping it).
        let view = unsafe {
            client.view_of_device_pointer(base.cast(), ElementType::S32, &[2, 2], Placement::Default, Some(on_delete))
        }
        .unwrap();
        assert_eq!(view.to_vec::<i32>().unwrap(), [10, 11, 21, 31], "{name}");
        assert!(!deleted.load(Ordering::SeqCst));
        drop(view);
        support::wait_for("the on-delete callback", || deleted.load(Ordering::SeqCst));
        drop(host);
    }
}

#[test]
fn raw_copies_honour_offset_and_size() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let values: Vec<i32> = (0..8).collect();
        let buffer = client.upload(&values, &[8]).unwrap();
        assert_eq!(buffer.on_device_size().unwrap(), 32);
        assert_eq!(buffer.to_bytes(DownloadOptions::new().raw(8, 12)).unwrap(), i32_bytes(&[2, 3, 4]), "{name}");
        assert_eq!(buffer.to_bytes(DownloadOptions::new().raw(0, 32)).unwrap(), i32_bytes(&values), "{name}");
        assert_eq!(buffer.to_bytes(DownloadOptions::new().raw(32, 0)).unwrap(), Vec::<u8>::new());
        let transfer = buffer.to_bytes_async(DownloadOptions::new().raw(28, 4).destination(vec![0; 4])).unwrap();
        assert_eq!(transfer.wait().unwrap(), i32_bytes(&[7]), "{name}");
        assert_invalid(buffer.to_bytes(DownloadOptions::new().raw(30, 4)), "outside the buffer's 32 on-device bytes");
        assert_invalid(buffer.to_bytes(DownloadOptions::new().raw(usize::MAX, 2)), "outside");

        // The future variant: the destination is handed over later.
        let request = buffer.raw_copy_request(4, 8).unwrap();
        assert_eq!(request.size(), 8);
        let transfer = request.fulfill(vec![0xAA; 8]).unwrap();
        assert_eq!(transfer.wait().unwrap(), i32_bytes(&[1, 2]), "{name}");
        // Failing it, dropping it, or a wrong destination: no copy, nothing hangs or leaks.
        buffer.raw_copy_request(0, 4).unwrap().fail(ErrorCode::Aborted, "not needed").unwrap();
        drop(buffer.raw_copy_request(0, 4).unwrap());
        assert_invalid(buffer.raw_copy_request(0, 4).unwrap().fulfill(vec![0; 3]), "needs 4");
        assert_invalid(buffer.raw_copy_request(16, 20), "outside");
        // Still usable.
        assert_eq!(buffer.to_bytes(DownloadOptions::new().raw(0, 4)).unwrap(), i32_bytes(&[0]));
        buffer.delete().unwrap();
        assert_invalid(buffer.to_bytes(DownloadOptions::new().raw(0, 4)), "deleted");
    }
}

#[test]
fn external_references_pin_the_memory() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let buffer = client.upload(&[5f32, 6., 7.], &[3]).unwrap();
        assert!(buffer.is_on_cpu().unwrap(), "{name}");
        buffer.ready_event().unwrap().wait().unwrap();
        {
            let reference = buffer.external_reference().unwrap();
            let second = buffer.external_reference().unwrap();
            let ptr = reference.device_pointer().unwrap();
            assert_eq!(ptr, second.device_pointer().unwrap());
            assert_eq!(ptr, buffer.unsafe_pointer().unwrap(), "{name}: same address either way");
            // SAFETY: the CPU plugin's device memory is host memory; the reference keeps it alive
            // and the buffer is ready.
            let seen = unsafe { std::slice::from_raw_parts(ptr as *const f32, 3) };
            assert_eq!(seen, [5., 6., 7.], "{name}");
        }
        // Both references were given back: the buffer can be deleted and destroyed normally.
        assert_eq!(buffer.to_vec::<f32>().unwrap(), [5., 6., 7.]);
        buffer.delete().unwrap();
        assert_invalid(buffer.external_reference(), "deleted");
        assert_invalid(buffer.unsafe_pointer(), "deleted");
    }
}

#[test]
fn layouts_and_dynamic_dimensions() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let vector = client.upload(&[1f32, 2., 3., 4.], &[4]).unwrap();
        let matrix = client.upload(&[0u8; 24], &[2, 3, 4]).unwrap();
        let scalar = client.upload(&[1f64], &[]).unwrap();
        assert!(client.plugin().layouts_extension().is_some(), "{name}: both CPU plugins have Layouts");
        assert_eq!(vector.memory_layout().unwrap(), MemoryLayout::dense(1), "{name}");
        assert_eq!(matrix.memory_layout().unwrap(), MemoryLayout::dense(3), "{name}");
        assert_eq!(matrix.memory_layout().unwrap().to_string(), "{2,1,0}");
        assert_eq!(scalar.memory_layout().unwrap(), MemoryLayout::dense(0), "{name}");
        // The deprecated slot agrees.
        for b in [&vector, &matrix, &scalar] {
            assert_eq!(b.legacy_memory_layout().unwrap(), b.memory_layout().unwrap(), "{name}");
        }
        assert_eq!(matrix.dynamic_dimension_indices().unwrap(), Vec::<usize>::new(), "{name}");
        assert_eq!(matrix.unpadded_dimensions().unwrap(), [2, 3, 4], "{name}");
        assert_eq!(scalar.unpadded_dimensions().unwrap(), Vec::<i64>::new(), "{name}");
    }
}

#[test]
fn uninitialized_buffers() {
    for name in support::PLUGINS {
        let client = support::client(name, 2);
        let device = client.addressable_devices()[1];
        let buffer = client.create_uninitialized_buffer(ElementType::F32, &[3, 5], Placement::Device(&device)).unwrap();
        assert_eq!(buffer.element_type().unwrap(), ElementType::F32);
        assert_eq!(buffer.dimensions().unwrap(), [3, 5]);
        assert_eq!(buffer.device().unwrap(), device, "{name}");
        assert_eq!(buffer.on_device_size().unwrap(), 60, "{name}");
        assert_eq!(buffer.to_bytes(DownloadOptions::new()).unwrap().len(), 60);
        let pinned = device.memories().unwrap().into_iter().find(|m| m.kind().unwrap() == "pinned_host").unwrap();
        let buffer = client.create_uninitialized_buffer(ElementType::S8, &[7], Placement::Memory(&pinned)).unwrap();
        assert_eq!(buffer.memory().unwrap(), pinned, "{name}");
        assert_invalid(client.create_uninitialized_buffer(ElementType::TOKEN, &[1], Placement::Default), "token");
        assert_invalid(client.create_uninitialized_buffer(ElementType::F32, &[2, -1], Placement::Default), "negative");
    }
}

#[test]
fn error_buffers_fail_with_the_message() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let buffer = client
            .create_error_buffer(ErrorCode::Internal, "boom", ElementType::F32, &[4], Placement::Default)
            .unwrap();
        assert_eq!(buffer.dimensions().unwrap(), [4]);
        let expected = if minor(&client) >= 115 { "boom" } else { "Buffer Definition Event: boom" };
        match buffer.ready_event().unwrap().wait() {
            Err(Error::Pjrt { code: ErrorCode::Internal, message, .. }) => assert_eq!(message, expected, "{name}"),
            other => panic!("{name}: {other:?}"),
        }
        match buffer.to_bytes(DownloadOptions::new()) {
            Err(Error::Pjrt { code: ErrorCode::Internal, message, .. }) => assert!(message.contains("boom"), "{name}"),
            other => panic!("{name}: {other:?}"),
        }
        let code = ErrorCode::Other(0);
        assert_invalid(client.create_error_buffer(code, "x", ElementType::F32, &[4], Placement::Default), "code");
        assert_invalid(
            client.create_error_buffer(ErrorCode::Internal, "x", ElementType::INVALID, &[4], Placement::Default),
            "invalid",
        );
    }
}

#[test]
fn alias_buffers_read_the_fulfilled_data() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let (alias, fulfiller) = client.create_alias_buffer(ElementType::F32, &[2, 2], Placement::Default).unwrap();
        assert_eq!(alias.dimensions().unwrap(), [2, 2]);
        let real = client.upload(&[9f32, 8., 7., 6.], &[2, 2]).unwrap();
        let wrong = client.upload(&[1f32, 2., 3., 4.], &[4]).unwrap();
        // Checked before the plugin: the fulfiller is consumed, and fails the alias (CANCELLED).
        let (other_alias, other) = client.create_alias_buffer(ElementType::F32, &[2, 2], Placement::Default).unwrap();
        assert_invalid(other.fulfill(&wrong), "the alias is f32[2, 2] but the buffer is f32[4]");
        match other_alias.ready_event().unwrap().wait() {
            Err(Error::Pjrt { code: ErrorCode::Cancelled, message, .. }) => {
                assert!(message.contains("dropped without being fulfilled"), "{name}: {message}")
            }
            other => panic!("{name}: {other:?}"),
        }
        fulfiller.fulfill(&real).unwrap();
        assert_eq!(alias.to_vec::<f32>().unwrap(), [9., 8., 7., 6.], "{name}");
        assert!(real.is_deleted().unwrap(), "{name}: the real buffer's memory moved into the alias");
        // Failing an alias on purpose (the plugins echo the status back; that is success).
        let (failed, fulfiller) = client.create_alias_buffer(ElementType::S32, &[3], Placement::Default).unwrap();
        fulfiller.fail(ErrorCode::DataLoss, "no data").unwrap();
        let expected = if minor(&client) >= 115 { "no data" } else { "Buffer Definition Event: no data" };
        match failed.ready_event().unwrap().wait() {
            Err(Error::Pjrt { code: ErrorCode::DataLoss, message, .. }) => assert_eq!(message, expected, "{name}"),
            other => panic!("{name}: {other:?}"),
        }
        // Another client's buffer is refused.
        let other_client = support::client(name, 1);
        let foreign = other_client.upload(&[9f32, 8., 7., 6.], &[2, 2]).unwrap();
        let (_alias, fulfiller) = client.create_alias_buffer(ElementType::F32, &[2, 2], Placement::Default).unwrap();
        assert_invalid(fulfiller.fulfill(&foreign), "another client");
    }
}

#[test]
fn bitcast_reinterprets_without_copying() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let buffer = client.upload(&[1f32, 2., 3., 4.], &[4]).unwrap();
        let square = buffer.bitcast(ElementType::F32, &[2, 2]).unwrap();
        assert_eq!(square.dimensions().unwrap(), [2, 2], "{name}");
        assert_eq!(square.to_vec::<f32>().unwrap(), [1., 2., 3., 4.], "{name}");
        // The source's memory moved to the new buffer.
        assert!(buffer.is_deleted().unwrap(), "{name}");
        assert_invalid(buffer.bitcast(ElementType::F32, &[2, 2]), "deleted");
        let ints = square.bitcast(ElementType::U32, &[4]).unwrap();
        assert_eq!(ints.to_vec::<u32>().unwrap(), [1f32.to_bits(), 2f32.to_bits(), 3f32.to_bits(), 4f32.to_bits()]);
        assert_invalid(ints.bitcast(ElementType::F32, &[5]), "cannot bitcast u32[4] (16 bytes) to f32[5] (20 bytes)");
        assert_invalid(ints.bitcast(ElementType::F64, &[4]), "cannot bitcast");
        let unknown = ElementType::from_i32(99);
        assert_invalid(ints.bitcast(unknown, &[4]), "unknown element type");
        assert_eq!(ints.to_vec::<u32>().unwrap()[3], 4f32.to_bits(), "{name}: refused bitcasts leave it alone");
    }
}

#[test]
fn donation_with_a_control_dependency() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let buffer = client.upload(&[3i32, 1, 4, 1, 5], &[5]).unwrap();
        let result = buffer.donate_with_control_dependency();
        if minor(&client) < 115 {
            match result {
                Err(Error::Pjrt { function, code, message, .. }) => {
                    assert_eq!(function, "PJRT_Buffer_DonateWithControlDependency");
                    assert_eq!(code, ErrorCode::Unimplemented);
                    assert_eq!(message, "DonateWithControlDependency is not supported.");
                }
                other => panic!("{name}: {other:?}"),
            }
            // Nothing happened to the buffer.
            assert!(!buffer.is_deleted().unwrap());
            assert_eq!(buffer.to_vec::<i32>().unwrap(), [3, 1, 4, 1, 5]);
            continue;
        }
        let (donated, dependency) = result.unwrap();
        assert!(buffer.is_deleted().unwrap(), "{name}: the original gave its memory away");
        dependency.ready();
        assert_eq!(donated.to_vec::<i32>().unwrap(), [3, 1, 4, 1, 5], "{name}");
        // A dependency that fails carries its error into the new buffer; dropping one fails it.
        let second = client.upload(&[1i32], &[1]).unwrap();
        let (donated, dependency) = second.donate_with_control_dependency().unwrap();
        dependency.fail(ErrorCode::Aborted, "upstream failed").unwrap();
        let third = client.upload(&[1i32], &[1]).unwrap();
        let (dropped, dependency) = third.donate_with_control_dependency().unwrap();
        drop(dependency);
        // The new buffer carries the dependency's error.
        for (b, code, text) in [
            (&donated, ErrorCode::Aborted, "upstream failed"),
            (&dropped, ErrorCode::Cancelled, "the control dependency was dropped"),
        ] {
            match b.ready_event().unwrap().wait_timeout(WAIT) {
                Err(Error::Pjrt { code: c, message, .. }) => assert_eq!((c, message.as_str()), (code, text), "{name}"),
                other => panic!("{name}: {other:?}"),
            }
        }
        assert_invalid(buffer.donate_with_control_dependency(), "deleted");
    }
}

#[test]
fn transfer_manager_moves_data() {
    for name in support::PLUGINS {
        let client = support::client(name, 2);
        let device = client.addressable_devices()[1];
        let shapes = [
            ShapeSpec::new(ElementType::F32, &[4]),
            ShapeSpec::new(ElementType::S32, &[2, 3]),
            ShapeSpec::new(ElementType::U8, &[5]),
        ];
        let manager = client.create_buffers_for_async_host_to_device(&shapes, Placement::Device(&device)).unwrap();
        assert_eq!(manager.buffer_count().unwrap(), 3, "{name}");
        assert_eq!(manager.buffer_size(0).unwrap(), 16, "{name}");
        assert_eq!(manager.buffer_size(1).unwrap(), 24, "{name}");
        assert_eq!(manager.device().unwrap(), device, "{name}");
        manager.add_metadata(&[("origin".to_string(), Value::String("test".into()))]).unwrap();

        // Buffer 0 in two pieces, the second one asynchronous and owning its data.
        let data = f32_bytes(&[1.5, 2.5, 3.5, 4.5]);
        manager.transfer_data(0, &data[..8], 0, false).unwrap();
        let pending = manager.transfer_data_async(0, data[8..].to_vec(), 8, true).unwrap();
        let given_back = pending.wait().unwrap();
        assert_eq!(given_back.as_bytes(), &data[8..]);
        // Buffer 1 as a literal (always with an explicit layout).
        manager.transfer_literal(1, &i32_bytes(&[1, 2, 3, 4, 5, 6])).unwrap();
        // Buffer 2 fails.
        manager.set_buffer_error(2, ErrorCode::Unavailable, "sensor offline").unwrap();

        let first = manager.retrieve_buffer(0).unwrap();
        let second = manager.retrieve_buffer(1).unwrap();
        let third = manager.retrieve_buffer(2).unwrap();
        assert_eq!(first.to_vec::<f32>().unwrap(), [1.5, 2.5, 3.5, 4.5], "{name}");
        assert_eq!(first.device().unwrap(), device);
        assert_eq!(second.dimensions().unwrap(), [2, 3]);
        assert_eq!(second.to_vec::<i32>().unwrap(), [1, 2, 3, 4, 5, 6], "{name}");
        match third.ready_event().unwrap().wait() {
            Err(Error::Pjrt { code: ErrorCode::Unavailable, message, .. }) => {
                assert!(message.contains("sensor offline"), "{name}: {message}")
            }
            other => panic!("{name}: {other:?}"),
        }

        // What the plugin may abort on is refused here.
        assert_invalid(manager.retrieve_buffer(0), "already been retrieved");
        assert_invalid(manager.transfer_data(0, &[0; 4], 0, true), "already been fully transferred");
        assert_invalid(manager.transfer_literal(1, &[0; 24]), "already been fully transferred");
        assert_invalid(manager.set_buffer_error(2, ErrorCode::Internal, "again"), "already");
        assert_invalid(manager.buffer_size(3), "out of range");
        drop(manager);
        // Retrieved buffers outlive the manager.
        assert_eq!(first.to_vec::<f32>().unwrap(), [1.5, 2.5, 3.5, 4.5]);

        let manager = client.create_buffers_for_async_host_to_device(&shapes[..1], Placement::Default).unwrap();
        assert_invalid(manager.transfer_data(0, &[0; 12], 8, false), "outside buffer 0's 16 bytes");
        assert_invalid(manager.transfer_literal(0, &[0; 12]), "16 bytes, but the host data has 12");
        assert_invalid(
            client.create_buffers_for_async_host_to_device(
                &[ShapeSpec::new(ElementType::INVALID, &[1])],
                Placement::Default,
            ),
            "shape 0",
        );
        assert_invalid(client.create_buffers_for_async_host_to_device(&[], Placement::Default), "at least one");
        // Never completed: dropping the manager and the unfinished buffer must not hang.
        let unfinished = manager.retrieve_buffer(0).unwrap();
        drop(manager);
        drop(unfinished);
    }
}

#[test]
fn done_callbacks_run_with_the_data_given_back() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let (tx, rx) = mpsc::channel();
        let values = [2f32, 4., 8., 16.];
        let sender = tx.clone();
        let source = HostSource::owned(f32_bytes(&values), ElementType::F32, &[4]).on_done(move |status, data| {
            sender.send((status.is_ok(), data.as_bytes().len())).unwrap();
        });
        let buffer = client.upload_with(source, &UploadOptions::new()).unwrap();
        assert_eq!(rx.recv_timeout(WAIT).unwrap(), (true, 16), "{name}: the callback ran");
        assert_eq!(buffer.to_vec::<f32>().unwrap(), values, "{name}");

        // Aligned host memory: shared while the plugin reads it, given back afterwards.
        let host = Arc::new(AlignedHostBuffer::from_slice(&[7i32, 8, 9]).unwrap());
        let sender = tx.clone();
        let source = HostSource::owned(host.clone(), ElementType::S32, &[3]).on_done(move |status, data| {
            let HostData::Aligned(a) = data else { panic!("not the aligned buffer") };
            sender.send((status.is_ok(), a.len())).unwrap();
        });
        let buffer = client.upload_with(source, &UploadOptions::new()).unwrap();
        assert_eq!(rx.recv_timeout(WAIT).unwrap(), (true, 12));
        assert_eq!(buffer.to_vec::<i32>().unwrap(), [7, 8, 9]);
        support::wait_for("the data given back", || Arc::strong_count(&host) == 1);

        // A panicking callback is caught at the C boundary (the process goes on, the buffer is
        // sound); upload_with hands back no handle to report the panic on.
        let sender = tx.clone();
        let source = HostSource::owned(vec![1u8, 2, 3], ElementType::U8, &[3]).on_done(move |_, _| {
            sender.send((true, 0)).unwrap();
            panic!("oops")
        });
        let buffer = client.upload_with(source, &UploadOptions::new()).unwrap();
        assert_eq!(rx.recv_timeout(WAIT).unwrap(), (true, 0), "{name}: the panicking callback ran");
        assert_eq!(buffer.to_vec::<u8>().unwrap(), [1, 2, 3]);
        // Checked first: the callback is not run and the data is simply dropped.
        let source = HostSource::owned(vec![0u8; 3], ElementType::F32, &[1]).on_done(|_, _| panic!("must not run"));
        assert_invalid(client.upload_with(source, &UploadOptions::new()), "needs 4");
    }
}

#[test]
fn buffers_of_another_client_are_refused() {
    let a = support::client("cpu", 1);
    let b = support::client("cpu", 1);
    let b_device = b.addressable_devices()[0];
    let b_memory = b_device.default_memory().unwrap();
    let host = Arc::new(AlignedHostBuffer::zeroed(16).unwrap());
    assert_invalid(
        a.view_of_aligned(host.clone(), ElementType::F32, &[4], Placement::Device(&b_device)),
        "another client",
    );
    assert_invalid(
        a.create_uninitialized_buffer(ElementType::F32, &[4], Placement::Memory(&b_memory)),
        "another client",
    );
    assert_invalid(
        a.create_error_buffer(ErrorCode::Internal, "x", ElementType::F32, &[4], Placement::Device(&b_device)),
        "another client",
    );
    assert_invalid(a.create_alias_buffer(ElementType::F32, &[4], Placement::Memory(&b_memory)), "another client");
    assert_invalid(
        a.create_buffers_for_async_host_to_device(
            &[ShapeSpec::new(ElementType::F32, &[4])],
            Placement::Device(&b_device),
        ),
        "another client",
    );
    let result =
        a.upload_with(HostSource::owned(vec![0u8; 4], ElementType::F32, &[1]), &UploadOptions::new().memory(&b_memory));
    assert_invalid(result, "another client");
    assert_eq!(Arc::strong_count(&host), 1);
}

fn assert_unsupported<T: std::fmt::Debug>(result: Result<T, Error>, function: &str, since: i32, plugin_minor: i32) {
    match result {
        Err(Error::Unsupported { function: f, since_minor, plugin_minor: p, .. }) => {
            assert_eq!((f, since_minor, p), (function, since, plugin_minor))
        }
        other => panic!("expected {function} to be unsupported, got {other:?}"),
    }
}

#[test]
fn newer_functions_are_unsupported_on_older_plugins_before_any_call() {
    // The real 0.106 plugin has every buffer slot (the newest, Bitcast, is 0.98), but not the F6
    // element types (0.114), on which it crashes: refused here first.
    let old = support::client("cpu-0.106", 1);
    let f6 = ElementType::F6E2M3FN;
    assert_unsupported(old.create_uninitialized_buffer(f6, &[4], Placement::Default), "f6e2m3fn", 114, 106);
    assert_unsupported(old.create_alias_buffer(f6, &[4], Placement::Default).map(|(b, _)| b), "f6e2m3fn", 114, 106);
    assert_unsupported(
        old.create_error_buffer(ErrorCode::Internal, "x", f6, &[4], Placement::Default),
        "f6e2m3fn",
        114,
        106,
    );
    assert_unsupported(
        old.create_buffers_for_async_host_to_device(&[ShapeSpec::new(f6, &[4])], Placement::Default),
        "f6e2m3fn",
        114,
        106,
    );
    let f32s = old.upload(&[1f32, 2., 3., 4.], &[4]).unwrap();
    assert_unsupported(f32s.bitcast(ElementType::F6E3M2FN, &[4]), "f6e3m2fn", 114, 106);

    // A plugin that claims 0.40 (the fake, with a full table): every newer slot is refused
    // without being called, and nothing is leaked.
    let fake = fake_support::Fake::new("minor_40");
    let plugin = fake.plugin();
    {
        let client = Client::new(&plugin, &ClientOptions::new()).unwrap();
        let buffer = client.upload(&[1f32, 2., 3., 4.], &[4]).unwrap();
        let f32t = ElementType::F32;
        let fc = &client;
        assert_unsupported(
            fc.create_uninitialized_buffer(f32t, &[4], Placement::Default),
            "PJRT_Client_CreateUninitializedBuffer",
            69,
            40,
        );
        assert_unsupported(
            fc.create_error_buffer(ErrorCode::Internal, "x", f32t, &[4], Placement::Default),
            "PJRT_Client_CreateErrorBuffer",
            82,
            40,
        );
        assert_unsupported(
            fc.create_alias_buffer(f32t, &[4], Placement::Default).map(|(b, _)| b),
            "PJRT_Client_CreateAliasBuffer",
            77,
            40,
        );
        assert_unsupported(
            fc.create_buffers_for_async_host_to_device(&[ShapeSpec::new(f32t, &[4])], Placement::Default),
            "PJRT_Client_CreateBuffersForAsyncHostToDevice",
            60,
            40,
        );
        assert_unsupported(buffer.bitcast(f32t, &[2, 2]), "PJRT_Buffer_Bitcast", 98, 40);
        assert_unsupported(
            buffer.donate_with_control_dependency().map(|(b, _)| b),
            "PJRT_Buffer_DonateWithControlDependency",
            88,
            40,
        );
        // Slot 100 has no known position before 0.57.
        assert_unsupported(buffer.to_bytes(DownloadOptions::new().raw(0, 4)), "PJRT_Buffer_CopyRawToHost", 57, 40);
        assert_unsupported(buffer.raw_copy_request(0, 4), "PJRT_Buffer_CopyRawToHostFuture", 84, 40);
        let host = Arc::new(AlignedHostBuffer::zeroed(16).unwrap());
        let _ = fc.view_of_aligned(host.clone(), f32t, &[4], Placement::Default);
        assert_eq!(Arc::strong_count(&host), 1, "nothing kept when the view is refused");
        assert_eq!(buffer.to_vec::<f32>().unwrap(), [1., 2., 3., 4.], "the client still works");
    }
    fake.assert_nothing_leaked();
}
