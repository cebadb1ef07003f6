//! `buffer.*` (and `event.on_ready`): a round trip of every element type, metadata, placement,
//! ready events, deletion, copies to another device or memory, strided and zero-copy uploads,
//! async and in-place downloads, rank-0 and empty buffers.

use std::sync::Arc;
use std::time::Duration;

use pjrt_client::{AlignedHostBuffer, Client, DownloadOptions, ElementType, HostSource, UploadOptions};

use super::f32s;
use crate::commands::conform::report::{expect, Outcome, Problem, Report};

fn upload_round_trip(client: &Client, t: ElementType) -> Outcome {
    let bytes = t.host_bytes(8).ok_or(Problem::Fail(format!("{t} has no size")))?;
    let data: Vec<u8> =
        (0..bytes).map(|i| if t == ElementType::PRED { (i % 2) as u8 } else { (i % 5) as u8 }).collect();
    let b = client.upload_with(HostSource::bytes(&data, t, &[2, 4]), &UploadOptions::new())?;
    expect(b.element_type()? == t, "wrong element type")?;
    expect(b.to_bytes(DownloadOptions::new())? == data, "data changed in a round trip")?;
    Ok(String::new())
}
pub(crate) fn buffer_checks(r: &mut Report, client: &Client) {
    for t in [
        ElementType::PRED,
        ElementType::S8,
        ElementType::S16,
        ElementType::S32,
        ElementType::S64,
        ElementType::U8,
        ElementType::U16,
        ElementType::U32,
        ElementType::U64,
        ElementType::F16,
        ElementType::BF16,
        ElementType::F32,
        ElementType::F64,
        ElementType::C64,
        ElementType::C128,
        ElementType::F8E5M2,
        ElementType::F8E4M3FN,
    ] {
        r.check(&format!("buffer.upload_{}", t.name()), || upload_round_trip(client, t));
    }
    let devices = client.addressable_devices();
    let make = || client.upload(&[1f32, 2., 3., 4.], &[4]);
    r.check("buffer.metadata", || {
        let b = make()?;
        expect(b.dimensions()? == [4], "dimensions")?;
        Ok(format!("{} bytes on device", b.on_device_size()?))
    });
    r.check("buffer.device_and_memory", || {
        let b = make()?;
        Ok(format!("{} / {}", b.device()?.to_string()?, b.memory()?.kind()?))
    });
    r.check("buffer.ready_event", || {
        make()?.ready_event()?.wait_timeout(Duration::from_secs(60))?;
        Ok(String::new())
    });
    r.check("buffer.delete", || {
        let b = make()?;
        b.delete()?;
        expect(b.is_deleted()?, "not deleted after delete")?;
        Ok(String::new())
    });
    r.check("buffer.copy_to_device", || {
        let target = devices.get(1).copied().ok_or(Problem::Unsupported("only one device".into()))?;
        let b = make()?.copy_to_device(&target)?;
        expect(f32s(&b)? == [1., 2., 3., 4.], "values changed")?;
        Ok(String::new())
    });
    for kind in ["pinned_host", "unpinned_host"] {
        r.check(&format!("buffer.copy_to_memory_{kind}"), || {
            let memories = devices[0].memories()?;
            let memory = memories
                .iter()
                .find(|m| m.kind().ok().as_deref() == Some(kind))
                .ok_or(Problem::Unsupported(format!("no {kind} memory")))?;
            let b = make()?.copy_to_memory(memory)?;
            expect(f32s(&b)? == [1., 2., 3., 4.], "values changed")?;
            Ok(String::new())
        });
    }
    r.check("buffer.strided_upload", || {
        let bytes: Vec<u8> = [1f32, 3., 2., 4.].iter().flat_map(|v| v.to_le_bytes()).collect();
        let layout = UploadOptions::new().byte_strides(vec![4, 8]);
        let b = client.upload_with(HostSource::bytes(&bytes, ElementType::F32, &[2, 2]), &layout)?;
        expect(f32s(&b)? == [1., 2., 3., 4.], "strides not applied")?;
        Ok(String::new())
    });
    r.check("buffer.zero_copy_upload", || {
        let host = Arc::new(AlignedHostBuffer::from_slice(&[5f32, 6.])?);
        let b = client.upload_with(HostSource::aligned(&host, ElementType::F32, &[2]), &UploadOptions::new())?;
        expect(f32s(&b)? == [5., 6.], "values")?;
        Ok(String::new())
    });
    r.check("buffer.to_bytes_async", || {
        let bytes = make()?
            .to_bytes_async(DownloadOptions::new().destination(vec![0; 16]))?
            .wait_timeout(Duration::from_secs(60))?;
        expect(bytes.len() == 16, "size")?;
        Ok(String::new())
    });
    r.check("buffer.copy_to_slice", || {
        let mut out = [0f32; 4];
        make()?.copy_to_slice(&mut out)?;
        expect(out == [1., 2., 3., 4.], "values")?;
        Ok(String::new())
    });
    r.check("buffer.rank0_and_zero_size", || {
        let s = client.upload(&[7i32], &[])?;
        let z = client.upload::<f32>(&[], &[0, 3])?;
        expect(s.to_vec::<i32>()? == [7] && z.to_vec::<f32>()?.is_empty(), "values")?;
        Ok(String::new())
    });
    r.check("event.on_ready", || {
        let (tx, rx) = std::sync::mpsc::channel();
        let handle = make()?.ready_event()?.on_ready(move |s| {
            let _ = tx.send(s.is_ok());
        })?;
        expect(handle.wait_timeout(Duration::from_secs(60))?, "the callback did not run")?;
        expect(rx.recv().unwrap_or(false), "the event failed")?;
        Ok(String::new())
    });
}
