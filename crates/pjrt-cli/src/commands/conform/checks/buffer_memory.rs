//! `buffer.*` of a buffer's memory, beyond the round trips of `buffer.rs`: placement and
//! dimension queries, layouts, pointers and external references, raw copies, views of host
//! memory, uninitialized and error buffers, aliases, bitcasts, donation, copies to another client
//! or memory kind.

use std::sync::Arc;

use pjrt_client::{
    AlignedHostBuffer, Client, ClientOptions, DownloadOptions, ElementType, Error, ErrorCode, Placement,
};

use super::{f32s, WAIT};
use crate::commands::conform::report::{expect, Problem, Report};

pub(crate) fn buffer_memory_checks(r: &mut Report, client: &Client) {
    let make = || client.upload(&[1f32, 2., 3., 4.], &[4]);
    r.check("buffer.is_on_cpu", || Ok(make()?.is_on_cpu()?.to_string()));
    r.check("buffer.dynamic_and_unpadded_dimensions", || {
        let b = make()?;
        expect(b.unpadded_dimensions()? == [4], "unpadded dimensions")?;
        Ok(format!("{} dynamic", b.dynamic_dimension_indices()?.len()))
    });
    r.check("buffer.memory_layout", || Ok(make()?.memory_layout()?.to_string()));
    r.check("buffer.legacy_memory_layout", || Ok(make()?.legacy_memory_layout()?.to_string()));
    r.check("buffer.unsafe_pointer", || {
        expect(!make()?.unsafe_pointer()?.is_null(), "NULL")?;
        Ok(String::new())
    });
    r.check("buffer.external_reference", || {
        let b = make()?;
        let reference = b.external_reference()?;
        expect(!reference.device_pointer()?.is_null(), "NULL device pointer")?;
        Ok(String::new())
    });
    r.check("buffer.raw_copy_to_host", || {
        let bytes = make()?.to_bytes(DownloadOptions::new().raw(4, 8))?;
        let expected: Vec<u8> = [2f32, 3.].iter().flat_map(|v| v.to_ne_bytes()).collect();
        expect(bytes == expected, "bytes 4..12 differ")?;
        Ok(String::new())
    });
    r.check("buffer.raw_copy_to_host_future", || {
        let b = make()?;
        let request = b.raw_copy_request(0, 4)?;
        let bytes = request.fulfill(vec![0; 4])?.wait_timeout(WAIT)?;
        expect(bytes == 1f32.to_ne_bytes(), "bytes 0..4 differ")?;
        Ok(String::new())
    });
    r.check("buffer.view_of_host_memory", || {
        if client.view_alignment().is_none() {
            return Err(Problem::Unsupported("views of host memory are only offered for CPU clients".into()));
        }
        let host = Arc::new(AlignedHostBuffer::from_slice(&[5f32, 6., 7.])?);
        let view = client.view_of_aligned(host, ElementType::F32, &[3], Placement::Default)?;
        expect(f32s(&view)? == [5., 6., 7.], "values")?;
        Ok(String::new())
    });
    r.check("buffer.uninitialized", || {
        let b = client.create_uninitialized_buffer(ElementType::S32, &[2, 3], Placement::Default)?;
        expect(b.dimensions()? == [2, 3], "dimensions")?;
        Ok(String::new())
    });
    r.check("buffer.error_buffer", || {
        let b =
            client.create_error_buffer(ErrorCode::Internal, "conform", ElementType::F32, &[4], Placement::Default)?;
        match b.ready_event()?.wait_timeout(WAIT) {
            Err(Error::Pjrt { code: ErrorCode::Internal, message, .. }) if message.contains("conform") => Ok(message),
            other => Err(Problem::Fail(format!("the ready event gave {other:?}"))),
        }
    });
    r.check("buffer.alias", || {
        let (alias, fulfiller) = client.create_alias_buffer(ElementType::F32, &[4], Placement::Default)?;
        fulfiller.fulfill(&make()?)?;
        expect(f32s(&alias)? == [1., 2., 3., 4.], "the alias does not read the real buffer")?;
        Ok(String::new())
    });
    r.check("buffer.bitcast", || {
        let square = make()?.bitcast(ElementType::F32, &[2, 2])?;
        expect(square.dimensions()? == [2, 2] && f32s(&square)? == [1., 2., 3., 4.], "values or shape")?;
        Ok(String::new())
    });
    r.check("buffer.donate_with_control_dependency", || {
        let (donated, dependency) = make()?.donate_with_control_dependency()?;
        dependency.ready();
        expect(f32s(&donated)? == [1., 2., 3., 4.], "values")?;
        Ok(String::new())
    });
    r.check("buffer.copy_to_client", || {
        let other = Client::new(client.plugin(), &ClientOptions::new())?;
        let copy = make()?.copy_to_client(&other, Placement::Default)?;
        expect(f32s(&copy)? == [1., 2., 3., 4.], "values")?;
        Ok(String::new())
    });
    r.check("buffer.copy_to_memory_by_kind", || {
        let device = client.addressable_devices()[0];
        let memory =
            device.memory_by_kind("pinned_host")?.ok_or(Problem::Unsupported("no pinned_host memory".into()))?;
        let b = make()?.copy_to_memory(&memory)?;
        expect(b.memory()?.kind()? == "pinned_host", "landed in another memory")?;
        Ok(String::new())
    });
}
