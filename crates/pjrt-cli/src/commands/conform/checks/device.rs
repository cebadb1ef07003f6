//! `device.*`: each device's ids, kind, descriptions, attributes, memories and memory stats.

use pjrt_client::{Client, ErrorCode};

use crate::commands::conform::report::{expect, Report};

pub(crate) fn device_checks(r: &mut Report, client: &Client) {
    let device = client.addressable_devices()[0];
    r.check("device.id", || Ok(device.id()?.to_string()));
    r.check("device.process_index", || Ok(device.process_index()?.to_string()));
    r.check("device.kind", || Ok(device.kind()?));
    r.check("device.debug_string", || Ok(device.debug_string()?));
    r.check("device.to_string", || Ok(device.to_string()?));
    r.check("device.attributes", || Ok(format!("{}", device.attributes()?.len())));
    r.check("device.is_addressable", || {
        expect(device.is_addressable()?, "an addressable device says it is not")?;
        Ok(String::new())
    });
    r.check("device.local_hardware_id", || Ok(device.local_hardware_id()?.to_string()));
    r.check("device.memories", || Ok(format!("{}", device.memories()?.len())));
    r.check("device.default_memory", || Ok(device.default_memory()?.kind()?));
    r.check("device.memory_stats", || Ok(format!("{} bytes in use", device.memory_stats()?.bytes_in_use)));
    r.check("device.clear_memory_stats", || {
        device.clear_memory_stats()?;
        Ok(String::new())
    });
    r.check("device.runtime_attributes", || Ok(format!("{}", device.runtime_attributes()?.len())));
    r.check("device.poison_execution", || {
        Ok(format!("poisoned: {}", device.poison_execution(12345, ErrorCode::Cancelled, "conform")?))
    });
    r.check("device.async_tracking_event", || {
        Ok(if device.async_tracking_event("conform")?.is_some() { "event".into() } else { "no event".into() })
    });
    r.check("memory.id_kind_strings", || {
        let m = device.default_memory()?;
        Ok(format!("{} {} {} {}", m.id()?, m.kind()?, m.to_string()?, m.debug_string()?))
    });
    r.check("memory.kind_id", || Ok(device.default_memory()?.kind_id()?.to_string()));
    r.check("memory.devices", || {
        let m = device.default_memory()?;
        expect(m.devices()?.contains(&device), "the default memory does not list its device")?;
        Ok(String::new())
    });
}
