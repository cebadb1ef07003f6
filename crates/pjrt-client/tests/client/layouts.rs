//! Layouts everywhere: device layouts of uploads, host layouts of downloads, views with a layout
//! and a stream, byte strides on zero-copy and owned uploads. Each behaviour is checked on both
//! CPU plugins; the stream of a view also on the fake plugin, which echoes it.

use std::sync::{mpsc, Arc};

use pjrt_client::{
    AlignedHostBuffer, Client, DownloadOptions, ElementType, Error, ErrorCode, HostBufferSemantics, HostData,
    HostSource, MemoryLayout, Placement, ShapeSpec, UploadOptions, ViewOptions,
};

use crate::fake_support::Fake;
use crate::support::{client, PLUGINS};

/// A [2,3] f32 array, row-major: 1 2 3 / 4 5 6.
const ROW_MAJOR: [f32; 6] = [1., 2., 3., 4., 5., 6.];
/// The same array column-major (the first dimension varies fastest).
const COLUMN_MAJOR: [f32; 6] = [1., 4., 2., 5., 3., 6.];

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn f32_values(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// Asserts an error of ours (refused before any call), not the plugin's.
fn assert_refused_here(result: pjrt_client::Result<impl std::fmt::Debug>, what: &str, needle: &str) {
    match result {
        Err(Error::InvalidArgument(message)) => {
            assert!(message.contains(needle), "{what}: {message:?} does not say {needle:?}")
        }
        other => panic!("{what}: expected a refusal before the call, got {other:?}"),
    }
}

/// Asserts the plugin's own error with `code`.
fn assert_plugin_refused(result: pjrt_client::Result<impl std::fmt::Debug>, what: &str, code: ErrorCode) {
    match result {
        Err(e @ Error::Pjrt { .. }) => assert_eq!(e.code(), Some(code), "{what}: {e}"),
        other => panic!("{what}: expected the plugin's {code} error, got {other:?}"),
    }
}

fn column_major_upload(client: &Client) -> pjrt_client::Result<pjrt_client::Buffer> {
    let layout = UploadOptions::new().device_layout(MemoryLayout::column_major(2));
    client.upload_with(HostSource::bytes(&f32_bytes(&ROW_MAJOR), ElementType::F32, &[2, 3]), &layout)
}

/// Whether uploads to this client may take a device layout other than the default. The 0.106
/// CPU plugin stores such uploads row-major while reporting the layout asked for (measured:
/// every read then transposes), so they are refused there.
fn takes_device_layouts(client: &Client) -> bool {
    client.plugin().api_version().minor >= 115
}

/// Asserts the refusal of a device layout on a plugin that would store the data wrongly.
fn assert_layout_unsupported(result: pjrt_client::Result<impl std::fmt::Debug>, what: &str) {
    match result {
        Err(Error::Unsupported { since_minor: 115, function, .. }) => {
            assert!(function.contains("device layout"), "{what}: {function}")
        }
        other => panic!("{what}: expected the device layout to be refused as unsupported, got {other:?}"),
    }
}

#[test]
fn column_major_device_layout_keeps_the_values() {
    for name in PLUGINS {
        let client = client(name, 1);
        // The plugin's default is row-major; the upload asks for the other order.
        assert_eq!(client.default_memory_layout(ElementType::F32, &[2, 3]).unwrap(), MemoryLayout::dense(2), "{name}");
        if !takes_device_layouts(&client) {
            assert_layout_unsupported(column_major_upload(&client), name);
            // The default layout, asked for explicitly, is no risk: it is taken.
            let dense = UploadOptions::new().device_layout(MemoryLayout::dense(2));
            let y = client.upload_with(HostSource::bytes(&f32_bytes(&ROW_MAJOR), ElementType::F32, &[2, 3]), &dense);
            assert_eq!(y.unwrap().to_vec::<f32>().unwrap(), ROW_MAJOR, "{name}");
            continue;
        }
        let x = column_major_upload(&client).unwrap();
        assert_eq!(x.memory_layout().unwrap(), MemoryLayout::column_major(2), "{name}");
        assert_eq!(x.legacy_memory_layout().unwrap(), MemoryLayout::column_major(2), "{name}");
        // The device bytes are column-major; every host copy is row-major unless asked otherwise.
        assert_eq!(f32_values(&x.to_bytes(DownloadOptions::new().raw(0, 24)).unwrap()), COLUMN_MAJOR, "{name}");
        assert_eq!(x.to_vec::<f32>().unwrap(), ROW_MAJOR, "{name}");
        let mut into = [0f32; 6];
        x.copy_to_slice(&mut into).unwrap();
        assert_eq!(into, ROW_MAJOR, "{name}");
        assert_eq!(f32_values(&x.to_bytes_async(DownloadOptions::new()).unwrap().wait().unwrap()), ROW_MAJOR, "{name}");
        // Asking for the default layout explicitly gives a default buffer.
        let dense = UploadOptions::new().device_layout(MemoryLayout::dense(2));
        let y =
            client.upload_with(HostSource::bytes(&f32_bytes(&ROW_MAJOR), ElementType::F32, &[2, 3]), &dense).unwrap();
        assert_eq!(y.memory_layout().unwrap(), MemoryLayout::dense(2), "{name}");
        assert_eq!(f32_values(&y.to_bytes(DownloadOptions::new().raw(0, 24)).unwrap()), ROW_MAJOR, "{name}");
    }
}

#[test]
fn device_layout_with_strided_host_data() {
    for name in PLUGINS {
        let client = client(name, 1);
        // Host data column-major by strides, kept column-major on the device: a plain copy.
        let layout = UploadOptions::new().byte_strides(vec![4, 8]).device_layout(MemoryLayout::column_major(2));
        let x = client.upload_with(HostSource::bytes(&f32_bytes(&COLUMN_MAJOR), ElementType::F32, &[2, 3]), &layout);
        if !takes_device_layouts(&client) {
            assert_layout_unsupported(x, name);
            continue;
        }
        let x = x.unwrap();
        assert_eq!(x.memory_layout().unwrap(), MemoryLayout::column_major(2), "{name}");
        assert_eq!(x.to_vec::<f32>().unwrap(), ROW_MAJOR, "{name}");
        // A rank-3 permutation, in a chosen memory.
        let device = &client.addressable_devices()[0];
        let memory = device.default_memory().unwrap();
        let order = MemoryLayout::Tiled { minor_to_major: vec![1, 2, 0], tiles: vec![] };
        let values: Vec<i32> = (0..24).collect();
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let options = UploadOptions::new().device_layout(order.clone()).memory(&memory);
        let z = client.upload_with(HostSource::bytes(&bytes, ElementType::S32, &[2, 3, 4]), &options).unwrap();
        assert_eq!(z.memory_layout().unwrap(), order, "{name}");
        assert_eq!(z.to_vec::<i32>().unwrap(), values, "{name}");
    }
}

#[test]
fn invalid_device_layouts_are_refused_before_the_call() {
    for name in PLUGINS {
        let client = client(name, 1);
        let bytes = f32_bytes(&ROW_MAJOR);
        let upload = |layout: MemoryLayout| {
            let layout = UploadOptions::new().device_layout(layout);
            client.upload_with(HostSource::bytes(&bytes, ElementType::F32, &[2, 3]), &layout)
        };
        let tiled = |minor_to_major: Vec<i64>, tiles: Vec<Vec<i64>>| MemoryLayout::Tiled { minor_to_major, tiles };
        assert_refused_here(upload(tiled(vec![0, 0], vec![])), "repeated dimension", "permutation");
        assert_refused_here(upload(tiled(vec![0], vec![])), "too few dimensions", "permutation");
        assert_refused_here(upload(tiled(vec![2, 1, 0], vec![])), "too many dimensions", "permutation");
        assert_refused_here(upload(tiled(vec![1, 0], vec![vec![0, 4]])), "empty tile", "tile");
        assert_refused_here(upload(tiled(vec![1, 0], vec![vec![1, 2, 4]])), "tile of higher rank", "tile");
        assert_refused_here(
            upload(MemoryLayout::Strides { byte_strides: vec![12] }),
            "one stride for two dimensions",
            "one stride per dimension",
        );
        // Tiles are well-formed; XLA's CPU client keeps no tiled buffers (0.115: its own error;
        // 0.106, which would store the data untiled, never sees them).
        let tiled_layout = tiled(vec![1, 0], vec![vec![2, 2]]);
        if takes_device_layouts(&client) {
            assert_plugin_refused(
                upload(tiled_layout),
                &format!("{name}: tiled device layout"),
                ErrorCode::Unimplemented,
            );
        } else {
            assert_layout_unsupported(upload(tiled_layout), name);
        }
        // Strides are well-formed but not a device layout XLA takes: its own error.
        assert_plugin_refused(
            upload(MemoryLayout::Strides { byte_strides: vec![12, 4] }),
            &format!("{name}: strided device layout"),
            ErrorCode::InvalidArgument,
        );
    }
}

#[test]
fn host_download_in_another_layout() {
    for name in PLUGINS {
        let client = client(name, 1);
        let x = client.upload(&ROW_MAJOR, &[2, 3]).unwrap();
        assert_eq!(x.host_size_in(&MemoryLayout::column_major(2)).unwrap(), 24, "{name}");
        assert_eq!(
            f32_values(&x.to_bytes(DownloadOptions::new().layout(MemoryLayout::column_major(2))).unwrap()),
            COLUMN_MAJOR,
            "{name}"
        );
        assert_eq!(
            f32_values(&x.to_bytes(DownloadOptions::new().layout(MemoryLayout::dense(2))).unwrap()),
            ROW_MAJOR,
            "{name}"
        );
        let transfer = x
            .to_bytes_async(DownloadOptions::new().destination(vec![0; 24]).layout(MemoryLayout::column_major(2)))
            .unwrap();
        assert_eq!(f32_values(&transfer.wait().unwrap()), COLUMN_MAJOR, "{name}");
        // A column-major buffer (a view: both plugins take those) downloaded column-major.
        let host = Arc::new(AlignedHostBuffer::from_slice(&COLUMN_MAJOR).unwrap());
        let options = ViewOptions::new().with_layout(MemoryLayout::column_major(2));
        let y = client.view_of_aligned_with(host, ElementType::F32, &[2, 3], Placement::Default, &options).unwrap();
        assert_eq!(
            f32_values(&y.to_bytes(DownloadOptions::new().layout(MemoryLayout::column_major(2))).unwrap()),
            COLUMN_MAJOR,
            "{name}"
        );
        assert_eq!(
            f32_values(&y.to_bytes(DownloadOptions::new().layout(MemoryLayout::dense(2))).unwrap()),
            ROW_MAJOR,
            "{name}"
        );
        // Sub-byte types stay one element per byte in any order.
        let s4 = client
            .upload_with(HostSource::bytes(&[1, 2, 3, 4, 5, 6], ElementType::S4, &[2, 3]), &UploadOptions::new())
            .unwrap();
        assert_eq!(
            s4.to_bytes(DownloadOptions::new().layout(MemoryLayout::column_major(2))).unwrap(),
            [1, 4, 2, 5, 3, 6],
            "{name}"
        );
    }
}

#[test]
fn host_layout_refusals() {
    for name in PLUGINS {
        let client = client(name, 1);
        let x = client.upload(&ROW_MAJOR, &[2, 3]).unwrap();
        // Ours: checked against the shape, or a size we cannot bound.
        assert_refused_here(
            x.to_bytes(DownloadOptions::new().layout(MemoryLayout::column_major(3))),
            "wrong rank",
            "permutation",
        );
        let tiled = MemoryLayout::Tiled { minor_to_major: vec![1, 0], tiles: vec![vec![2, 2]] };
        assert_refused_here(x.to_bytes(DownloadOptions::new().layout(tiled.clone())), "tiled host layout", "tiles pad");
        // A destination of the wrong size is resized to the layout's 24 bytes (no longer
        // refused), its allocation reused where it is large enough.
        let short = x
            .to_bytes_async(DownloadOptions::new().destination(vec![0; 23]).layout(MemoryLayout::column_major(2)))
            .unwrap()
            .wait()
            .unwrap();
        assert_eq!(f32_values(&short), COLUMN_MAJOR, "{name}: short destination");
        let roomy = Vec::with_capacity(64);
        let reused = x
            .to_bytes_async(DownloadOptions::new().destination(roomy).layout(MemoryLayout::column_major(2)))
            .unwrap()
            .wait()
            .unwrap();
        assert_eq!((reused.len(), reused.capacity()), (24, 64), "{name}: roomy destination");
        assert_eq!(f32_values(&reused), COLUMN_MAJOR, "{name}");
        // The plugin's: XLA copies to the host in tiled layouts only.
        assert_plugin_refused(
            x.to_bytes(DownloadOptions::new().layout(MemoryLayout::Strides { byte_strides: vec![4, 8] }.clone())),
            &format!("{name}: strided host layout"),
            ErrorCode::InvalidArgument,
        );
    }
}

#[test]
fn views_with_a_layout() {
    for name in PLUGINS {
        let client = client(name, 1);
        let host = Arc::new(AlignedHostBuffer::from_slice(&COLUMN_MAJOR).unwrap());
        let options = ViewOptions::new().with_layout(MemoryLayout::column_major(2));
        let view =
            client.view_of_aligned_with(host.clone(), ElementType::F32, &[2, 3], Placement::Default, &options).unwrap();
        assert_eq!(view.memory_layout().unwrap(), MemoryLayout::column_major(2), "{name}");
        assert_eq!(view.to_vec::<f32>().unwrap(), ROW_MAJOR, "{name}");
        // The view reads `host` in place: its device bytes are the host bytes.
        assert_eq!(view.to_bytes(DownloadOptions::new().raw(0, 24)).unwrap(), host.as_bytes(), "{name}");
        drop(view);

        // The unsafe device-pointer form, with an explicit row-major layout.
        let memory = Arc::new(AlignedHostBuffer::from_slice(&ROW_MAJOR).unwrap());
        let ptr = memory.as_bytes().as_ptr() as *mut std::ffi::c_void;
        let (deleted, on_delete) = mpsc::channel();
        let keep = memory.clone();
        let options = ViewOptions::new().with_layout(MemoryLayout::dense(2));
        // SAFETY: `keep` holds the 24 aligned bytes until the plugin calls `on_delete`; nothing
        // writes them meanwhile.
        let view = unsafe {
            client.view_of_device_pointer_with(
                ptr,
                ElementType::F32,
                &[2, 3],
                Placement::Default,
                &options,
                Some(Box::new(move || {
                    drop(keep);
                    let _ = deleted.send(());
                })),
            )
        }
        .unwrap();
        assert_eq!(view.to_vec::<f32>().unwrap(), ROW_MAJOR, "{name}");
        drop(view);
        on_delete.recv_timeout(std::time::Duration::from_secs(30)).expect("on_delete ran");
    }
}

#[test]
fn view_layout_refusals() {
    for name in PLUGINS {
        let client = client(name, 1);
        let host = Arc::new(AlignedHostBuffer::from_slice(&COLUMN_MAJOR).unwrap());
        let view = |options: ViewOptions| {
            client.view_of_aligned_with(host.clone(), ElementType::F32, &[2, 3], Placement::Default, &options)
        };
        assert_refused_here(
            view(ViewOptions::new().with_layout(MemoryLayout::column_major(1))),
            "wrong rank",
            "permutation",
        );
        let tiled = MemoryLayout::Tiled { minor_to_major: vec![1, 0], tiles: vec![vec![2, 2]] };
        assert_refused_here(view(ViewOptions::new().with_layout(tiled)), "tiled view", "tiles pad");
        // Strides spanning more than the memory: refused before the plugin could read past it.
        let wide = MemoryLayout::Strides { byte_strides: vec![4, 16] };
        assert_refused_here(view(ViewOptions::new().with_layout(wide)), "strides past the memory", "needs 40");
        // Strides covering exactly the memory are the plugin's to refuse (XLA: tiled only).
        let strides = MemoryLayout::Strides { byte_strides: vec![4, 8] };
        assert_plugin_refused(
            view(ViewOptions::new().with_layout(strides)),
            &format!("{name}: strided view"),
            ErrorCode::InvalidArgument,
        );
        // The CPU client has no streams.
        assert_plugin_refused(
            view(ViewOptions::new().with_stream(7)),
            &format!("{name}: stream"),
            ErrorCode::Unimplemented,
        );
    }
}

#[test]
fn view_stream_and_layouts_reach_the_fake_plugin() {
    let fake = Fake::new("working");
    let plugin = fake.plugin();
    let client = Client::new(&plugin, &pjrt_client::ClientOptions::new()).unwrap();
    let memory = Arc::new(AlignedHostBuffer::from_slice(&ROW_MAJOR).unwrap());
    let ptr = memory.as_bytes().as_ptr() as *mut std::ffi::c_void;
    let options = ViewOptions::new().with_stream(0x5eed);
    let keep = memory.clone();
    // SAFETY: `keep` holds the 24 bytes until `on_delete` (never called: the fake refuses).
    let refused = unsafe {
        client.view_of_device_pointer_with(
            ptr,
            ElementType::F32,
            &[2, 3],
            Placement::Default,
            &options,
            Some(Box::new(move || drop(keep))),
        )
    };
    match refused {
        Err(e @ Error::Pjrt { .. }) => {
            assert_eq!(e.code(), Some(ErrorCode::Unimplemented));
            assert!(e.to_string().contains(&format!("stream {}", 0x5eed)), "{e}");
        }
        other => panic!("expected the fake to echo the stream, got {other:?}"),
    }
    // Without a stream (and with the fake's own row-major layout) the view works.
    // SAFETY: `memory` outlives the view, which is dropped below; nothing writes it.
    let view = unsafe {
        client.view_of_device_pointer_with(
            ptr,
            ElementType::F32,
            &[2, 3],
            Placement::Default,
            &ViewOptions::new(),
            None,
        )
    }
    .unwrap();
    assert_eq!(view.to_vec::<f32>().unwrap(), ROW_MAJOR);
    drop(view);
    drop(memory);
    // The fake keeps buffers row-major only: it takes that layout when asked for, refuses others.
    let dense = UploadOptions::new().device_layout(MemoryLayout::dense(2));
    let x = client.upload_with(HostSource::bytes(&f32_bytes(&ROW_MAJOR), ElementType::F32, &[2, 3]), &dense);
    assert_eq!(x.unwrap().to_vec::<f32>().unwrap(), ROW_MAJOR);
    assert_plugin_refused(column_major_upload(&client), "fake: column-major", ErrorCode::Unimplemented);
}

#[test]
fn strided_zero_copy_upload() {
    for name in PLUGINS {
        let client = client(name, 1);
        // The [2,3] array column-major in aligned memory, read by strides.
        let host = Arc::new(AlignedHostBuffer::from_slice(&COLUMN_MAJOR).unwrap());
        let layout = UploadOptions::new().byte_strides(vec![4, 8]);
        let x = client.upload_with(HostSource::aligned(&host, ElementType::F32, &[2, 3]), &layout).unwrap();
        assert_eq!(x.to_vec::<f32>().unwrap(), ROW_MAJOR, "{name}");
        // With a device layout too: both column-major.
        let both = layout.clone().device_layout(MemoryLayout::column_major(2));
        let y = client.upload_with(HostSource::aligned(&host, ElementType::F32, &[2, 3]), &both);
        let y = if takes_device_layouts(&client) {
            let y = y.unwrap();
            assert_eq!(y.memory_layout().unwrap(), MemoryLayout::column_major(2), "{name}");
            assert_eq!(y.to_vec::<f32>().unwrap(), ROW_MAJOR, "{name}");
            Some(y)
        } else {
            assert_layout_unsupported(y, name);
            None
        };
        // Strides reading past the allocation, and semantics this upload does not take.
        let past = UploadOptions::new().byte_strides(vec![4, 12]);
        assert_refused_here(
            client.upload_with(HostSource::aligned(&host, ElementType::F32, &[2, 3]), &past),
            "strides past the memory",
            "reads up to byte 32",
        );
        let semantics = UploadOptions::new().semantics(HostBufferSemantics::CopyUntilTransferCompletes);
        assert_refused_here(
            client.upload_with(HostSource::aligned(&host, ElementType::F32, &[2, 3]), &semantics),
            "semantics",
            "fixes its own",
        );
        drop((x, y));
        // Every buffer let go of the memory: the Arc is ours alone again.
        crate::support::wait_for("the plugin releases the host memory", || Arc::strong_count(&host) == 1);
    }
}

#[test]
fn strided_owned_async_upload() {
    for name in PLUGINS {
        let client = client(name, 1);
        // Row 0 and row 2 of a [3,3] array: a [2,3] array whose rows are 24 bytes apart.
        let rows: Vec<f32> = vec![1., 2., 3., -1., -1., -1., 4., 5., 6.];
        let layout = UploadOptions::new().byte_strides(vec![24, 4]);
        let (returned, back) = mpsc::channel();
        let source = HostSource::owned(f32_bytes(&rows), ElementType::F32, &[2, 3]).on_done(move |status, data| {
            let _ = returned.send((status.is_ok(), data));
        });
        let x = client.upload_with(source, &layout).unwrap();
        assert_eq!(x.to_vec::<f32>().unwrap(), ROW_MAJOR, "{name}");
        let (ok, data) = back.recv_timeout(std::time::Duration::from_secs(30)).unwrap();
        assert!(ok, "{name}");
        match data {
            HostData::Bytes(bytes) => assert_eq!(bytes, f32_bytes(&rows), "{name}: the data comes back unchanged"),
            other => panic!("{name}: expected the vector back, got {other:?}"),
        }
        // Column-major on the device, from aligned memory the upload owns.
        let aligned = Arc::new(AlignedHostBuffer::from_slice(&ROW_MAJOR).unwrap());
        let layout = UploadOptions::new().device_layout(MemoryLayout::column_major(2));
        let y = client.upload_with(HostSource::owned(aligned, ElementType::F32, &[2, 3]), &layout);
        if takes_device_layouts(&client) {
            let y = y.unwrap();
            assert_eq!(y.memory_layout().unwrap(), MemoryLayout::column_major(2), "{name}");
            assert_eq!(f32_values(&y.to_bytes(DownloadOptions::new().raw(0, 24)).unwrap()), COLUMN_MAJOR, "{name}");
        } else {
            assert_layout_unsupported(y, name);
        }
        // Strides past the data are refused before the plugin could read there.
        let past = UploadOptions::new().byte_strides(vec![32, 4]);
        assert_refused_here(
            client.upload_with(HostSource::owned(f32_bytes(&rows), ElementType::F32, &[2, 3]), &past),
            "strides past the data",
            "reads up to byte 44",
        );
    }
}

#[test]
fn transfer_manager_device_layouts() {
    for name in PLUGINS {
        let client = client(name, 1);
        let column_major = ShapeSpec::new(ElementType::F32, &[2, 3]).with_device_layout(MemoryLayout::column_major(2));
        // A shape with a layout beside one without: each gets its own (the plugin matches them by index).
        let shapes = [column_major.clone(), ShapeSpec::new(ElementType::F32, &[2, 3])];
        let manager = client.create_buffers_for_async_host_to_device(&shapes, Placement::Default).unwrap();
        // A literal is row-major host data whatever the device layout.
        manager.transfer_literal(0, &f32_bytes(&ROW_MAJOR)).unwrap();
        manager.transfer_literal(1, &f32_bytes(&ROW_MAJOR)).unwrap();
        let (x, y) = (manager.retrieve_buffer(0).unwrap(), manager.retrieve_buffer(1).unwrap());
        assert_eq!(x.memory_layout().unwrap(), MemoryLayout::column_major(2), "{name}");
        assert_eq!(f32_values(&x.to_bytes(DownloadOptions::new().raw(0, 24)).unwrap()), COLUMN_MAJOR, "{name}");
        assert_eq!(x.to_vec::<f32>().unwrap(), ROW_MAJOR, "{name}");
        assert_eq!(y.memory_layout().unwrap(), MemoryLayout::dense(2), "{name}");
        assert_eq!(y.to_vec::<f32>().unwrap(), ROW_MAJOR, "{name}");
        // Raw data is device bytes: column-major here.
        let manager = client.create_buffers_for_async_host_to_device(&[column_major], Placement::Default).unwrap();
        assert_eq!(manager.buffer_size(0).unwrap(), 24, "{name}");
        manager.transfer_data(0, &f32_bytes(&COLUMN_MAJOR), 0, true).unwrap();
        assert_eq!(manager.retrieve_buffer(0).unwrap().to_vec::<f32>().unwrap(), ROW_MAJOR, "{name}");
        // Checked before the call, naming the shape.
        let bad = ShapeSpec::new(ElementType::F32, &[2, 3]).with_device_layout(MemoryLayout::column_major(3));
        assert_refused_here(
            client.create_buffers_for_async_host_to_device(
                &[ShapeSpec::new(ElementType::F32, &[1]), bad],
                Placement::Default,
            ),
            "a layout of the wrong rank",
            "shape 1: ",
        );
        // Strides are the plugin's to refuse.
        let strided = ShapeSpec::new(ElementType::F32, &[2, 3])
            .with_device_layout(MemoryLayout::Strides { byte_strides: vec![12, 4] });
        assert_plugin_refused(
            client.create_buffers_for_async_host_to_device(&[strided], Placement::Default),
            &format!("{name}: strided device layout"),
            ErrorCode::InvalidArgument,
        );
    }
}
