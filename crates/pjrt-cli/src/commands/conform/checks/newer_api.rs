//! The client, event, error, device and topology functions of later C API versions, across
//! groups: DMA maps (0.67), global process info (0.73), user events (0.89), error payloads (0.99),
//! memories by kind, device description details, canonical shapes (0.109), a topology's default
//! layouts.

use pjrt_client::{
    AlignedHostBuffer, Client, ElementType, Error, ErrorCode, ProcessInfo, ProcessState, Topology, UserEvent,
};

use super::WAIT;
use crate::commands::conform::report::{expect, Outcome, Problem, Report};

pub(crate) fn newer_api_checks(r: &mut Report, client: &Client) {
    r.check("client.dma_map", || {
        let mapping = client.dma_map(AlignedHostBuffer::zeroed(4096)?)?;
        mapping.unmap()?;
        Ok(String::new())
    });
    r.check("client.update_global_process_info", || {
        client.update_global_process_info(&[ProcessInfo::new(client.process_index(), 1, ProcessState::Connected)])?;
        Ok(String::new())
    });
    r.check("event.user_event_ok", || {
        let event = UserEvent::new(client.plugin())?;
        expect(!event.event().is_ready()?, "ready before it was set")?;
        event.set_ok()?;
        event.event().wait_timeout(WAIT)?;
        Ok(String::new())
    });
    r.check("event.user_event_error", || {
        let event = UserEvent::new(client.plugin())?;
        let (tx, rx) = std::sync::mpsc::channel();
        let handle = event.event().on_ready(move |s| {
            let _ = tx.send(s.err().and_then(|e| e.code()));
        })?;
        event.set_error(ErrorCode::Aborted, "conform")?;
        expect(handle.wait_timeout(WAIT)?, "the callback did not run")?;
        expect(rx.recv().ok().flatten() == Some(ErrorCode::Aborted), "waiters did not see ABORTED")?;
        Ok(String::new())
    });
    r.check("error.payloads", || {
        let error = client.lookup_device(i32::MAX).err().ok_or(Problem::Fail("an unknown id was found".into()))?;
        Ok(format!("{} payloads", error.payloads().len()))
    });
    r.check("device.memory_by_kind", || {
        let device = client.addressable_devices()[0];
        let kind = device.default_memory()?.kind()?;
        expect(device.memory_by_kind(&kind)?.is_some(), "the default memory's kind was not found")?;
        Ok(kind)
    });
    let topology = client.topology();
    let with = |f: &dyn Fn(&Topology) -> Outcome| match &topology {
        Ok(t) => f(t),
        Err(e) => Err(Problem::from(Error::InvalidArgument(e.to_string()))),
    };
    r.check("topology.device_description_details", || {
        with(&|t| {
            let descriptions = t.device_descriptions()?;
            let first = descriptions.first().ok_or(Problem::Fail("no device descriptions".into()))?;
            Ok(format!("{} x {}", descriptions.len(), first.kind()?))
        })
    });
    r.check("topology.canonical_shape", || {
        with(&|t| {
            let kind = *t.memory_space_kind_ids()?.first().ok_or(Problem::Fail("no memory kinds".into()))?;
            let shape = t.canonical_shape(kind, ElementType::F32, &[2, 3])?;
            expect(shape.dims == [2, 3], format!("dims {:?}", shape.dims))?;
            Ok(format!("{:?}", shape.minor_to_major))
        })
    });
    r.check("extension.layouts.topology_default_layout", || {
        let ext = client.plugin().layouts_extension().ok_or(Problem::Unsupported("no Layouts extension".into()))?;
        with(&|t| Ok(ext.topology_default_layout(t, ElementType::F32, &[2, 3])?.to_string()))
    });
}
