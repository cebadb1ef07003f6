//! Layouts: device layouts on upload, host layouts on download, views with a layout (issue 13, item 1).

use std::sync::Arc;

use pjrt_client::{
    AlignedHostBuffer, Client, DownloadOptions, ElementType, Error, ErrorCode, HostSource, MemoryLayout, Placement,
    ShapeSpec, UploadOptions, ViewOptions,
};

use crate::commands::conform::report::{expect, Outcome, Problem, Report};

/// A [2,3] f32 array, row-major.
const ROW_MAJOR: [f32; 6] = [1., 2., 3., 4., 5., 6.];
/// The same array column-major (the first dimension varies fastest).
const COLUMN_MAJOR: [f32; 6] = [1., 4., 2., 5., 3., 6.];

fn bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn values(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// Passes when `result` is the plugin's own refusal with `code`, the answer XLA's plugins give.
fn plugin_refusal<T>(result: pjrt_client::Result<T>, code: ErrorCode, what: &str) -> Outcome {
    match result {
        Err(e @ Error::Pjrt { .. }) if e.code() == Some(code) => Ok(format!("refused: {e}")),
        // Refused here before the call, where the plugin is known to mishandle what was asked.
        Err(e @ Error::Unsupported { .. }) => Err(e.into()),
        Err(e) => Err(Problem::Fail(format!("{what}: expected the plugin's {code} refusal, got {e}"))),
        Ok(_) => Err(Problem::Fail(format!("{what}: accepted; expected the plugin's {code} refusal"))),
    }
}

/// Views of host memory need the CPU platform.
fn cpu_only(client: &Client) -> Result<(), Problem> {
    if client.platform_name() == "cpu" {
        Ok(())
    } else {
        Err(Problem::Unsupported(format!("views of host memory need the CPU platform, not {}", client.platform_name())))
    }
}

/// Adds this group's checks to `r`.
pub(crate) fn checks(r: &mut Report, client: &Client) {
    r.check("layouts.client_default_layout", || {
        let layout = client.default_memory_layout(ElementType::F32, &[2, 3])?;
        Ok(layout.to_string())
    });
    r.check("layouts.device_layout_column_major", || {
        let layout = UploadOptions::new().device_layout(MemoryLayout::column_major(2));
        let b = client.upload_with(HostSource::bytes(&bytes(&ROW_MAJOR), ElementType::F32, &[2, 3]), &layout)?;
        let reported = b.memory_layout()?;
        expect(reported == MemoryLayout::column_major(2), format!("the buffer reports layout {reported}"))?;
        expect(b.to_vec::<f32>()? == ROW_MAJOR, "the values read back row-major changed")?;
        expect(
            values(&b.to_bytes(DownloadOptions::new().raw(0, 24))?) == COLUMN_MAJOR,
            "the device bytes are not column-major",
        )?;
        Ok(format!("{reported}, values kept"))
    });
    r.check("layouts.device_layout_default_explicit", || {
        // The default layout asked for by name: taken by every plugin, values unchanged.
        let default = client.default_memory_layout(ElementType::F32, &[2, 3])?;
        let layout = UploadOptions::new().device_layout(default.clone());
        let b = client.upload_with(HostSource::bytes(&bytes(&ROW_MAJOR), ElementType::F32, &[2, 3]), &layout)?;
        expect(b.memory_layout()? == default, "the buffer does not have the default layout")?;
        expect(b.to_vec::<f32>()? == ROW_MAJOR, "values changed")?;
        Ok(default.to_string())
    });
    r.check("layouts.device_layout_tiled_refused", || {
        // XLA's CPU client keeps no tiled buffers.
        let tiled = MemoryLayout::Tiled { minor_to_major: vec![1, 0], tiles: vec![vec![2, 2]] };
        let layout = UploadOptions::new().device_layout(tiled);
        let result = client.upload_with(HostSource::bytes(&bytes(&ROW_MAJOR), ElementType::F32, &[2, 3]), &layout);
        if client.platform_name() != "cpu" {
            let b = result?;
            return Ok(format!("accepted: {}", b.memory_layout()?));
        }
        plugin_refusal(result, ErrorCode::Unimplemented, "a tiled device layout")
    });
    r.check("layouts.host_size_in", || {
        let b = client.upload(&ROW_MAJOR, &[2, 3])?;
        let size = b.host_size_in(&MemoryLayout::column_major(2))?;
        expect(size == 24, format!("{size} bytes for a column-major f32[2,3]"))?;
        Ok(format!("{size} bytes"))
    });
    r.check("layouts.device_layout_invalid_refused", || {
        // Not a permutation of the dimensions: refused before the plugin sees it.
        let bad = MemoryLayout::Tiled { minor_to_major: vec![0, 0], tiles: vec![] };
        let layout = UploadOptions::new().device_layout(bad);
        match client.upload_with(HostSource::bytes(&bytes(&ROW_MAJOR), ElementType::F32, &[2, 3]), &layout) {
            Err(Error::InvalidArgument(message)) => Ok(message),
            Err(e) => Err(Problem::Fail(format!("expected a refusal before the call, got {e}"))),
            Ok(_) => Err(Problem::Fail("an invalid layout was accepted".into())),
        }
    });
    r.check("layouts.device_layout_strides_refused", || {
        // Well-formed, but XLA's BufferFromHostBuffer takes tiled device layouts only.
        let layout = UploadOptions::new().device_layout(MemoryLayout::Strides { byte_strides: vec![12, 4] });
        let result = client.upload_with(HostSource::bytes(&bytes(&ROW_MAJOR), ElementType::F32, &[2, 3]), &layout);
        plugin_refusal(result, ErrorCode::InvalidArgument, "a strided device layout")
    });
    r.check("layouts.host_layout_download", || {
        let b = client.upload(&ROW_MAJOR, &[2, 3])?;
        let column_major = values(&b.to_bytes(DownloadOptions::new().layout(MemoryLayout::column_major(2)))?);
        expect(column_major == COLUMN_MAJOR, format!("column-major download gave {column_major:?}"))?;
        let row_major = values(&b.to_bytes(DownloadOptions::new().layout(MemoryLayout::dense(2)))?);
        expect(row_major == ROW_MAJOR, format!("row-major download gave {row_major:?}"))?;
        Ok(String::new())
    });
    r.check("layouts.host_layout_strides_refused", || {
        let b = client.upload(&ROW_MAJOR, &[2, 3])?;
        let result =
            b.to_bytes(DownloadOptions::new().layout(MemoryLayout::Strides { byte_strides: vec![4, 8] }.clone()));
        plugin_refusal(result, ErrorCode::InvalidArgument, "a strided host layout")
    });
    r.check("layouts.view_with_layout", || {
        cpu_only(client)?;
        let host = Arc::new(AlignedHostBuffer::from_slice(&COLUMN_MAJOR)?);
        let options = ViewOptions::new().with_layout(MemoryLayout::column_major(2));
        let view = client.view_of_aligned_with(host, ElementType::F32, &[2, 3], Placement::Default, &options)?;
        let reported = view.memory_layout()?;
        expect(reported == MemoryLayout::column_major(2), format!("the view reports layout {reported}"))?;
        expect(view.to_vec::<f32>()? == ROW_MAJOR, "the view's values read back wrong")?;
        Ok(reported.to_string())
    });
    r.check("layouts.view_stream_refused", || {
        // A stream value only means something to a GPU plugin (a real stream of its device); the
        // CPU client has none and must refuse any.
        cpu_only(client)?;
        let host = Arc::new(AlignedHostBuffer::from_slice(&ROW_MAJOR)?);
        let options = ViewOptions::new().with_stream(1);
        let result = client.view_of_aligned_with(host, ElementType::F32, &[2, 3], Placement::Default, &options);
        plugin_refusal(result, ErrorCode::Unimplemented, "a view on a stream")
    });
    r.check("layouts.transfer_manager_device_layout", || {
        let spec = ShapeSpec::new(ElementType::F32, &[2, 3]).with_device_layout(MemoryLayout::column_major(2));
        let manager = client.create_buffers_for_async_host_to_device(&[spec], Placement::Default)?;
        manager.transfer_literal(0, &bytes(&ROW_MAJOR))?;
        let b = manager.retrieve_buffer(0)?;
        let reported = b.memory_layout()?;
        expect(reported == MemoryLayout::column_major(2), format!("the buffer reports layout {reported}"))?;
        expect(b.to_vec::<f32>()? == ROW_MAJOR, "values changed")?;
        Ok(reported.to_string())
    });
    r.check("layouts.strided_zero_copy_upload", || {
        let host = Arc::new(AlignedHostBuffer::from_slice(&COLUMN_MAJOR)?);
        let layout = UploadOptions::new().byte_strides(vec![4, 8]);
        let b = client.upload_with(HostSource::aligned(&host, ElementType::F32, &[2, 3]), &layout)?;
        expect(b.to_vec::<f32>()? == ROW_MAJOR, "strides not applied")?;
        Ok(String::new())
    });
    r.check("layouts.strided_owned_async_upload", || {
        // Rows 0 and 2 of a [3,3] array: rows 24 bytes apart.
        let rows = [1f32, 2., 3., -1., -1., -1., 4., 5., 6.];
        let layout = UploadOptions::new().byte_strides(vec![24, 4]);
        let (done, released) = std::sync::mpsc::channel();
        let source = HostSource::owned(bytes(&rows), ElementType::F32, &[2, 3]).on_done(move |status, _| {
            let _ = done.send(status.is_ok());
        });
        let b = client.upload_with(source, &layout)?;
        expect(
            released.recv_timeout(std::time::Duration::from_secs(60)) == Ok(true),
            "the host data was not released",
        )?;
        expect(b.to_vec::<f32>()? == ROW_MAJOR, "strides not applied")?;
        Ok(String::new())
    });
}
