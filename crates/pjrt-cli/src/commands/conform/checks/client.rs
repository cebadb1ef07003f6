//! `client.*`: the client's platform and process, its devices and their lookup, its memories, the
//! default device assignment.

use pjrt_client::Client;

use crate::commands::conform::report::{expect, Report};

pub(crate) fn client_checks(r: &mut Report, client: &Client) {
    r.check("client.platform_name", || Ok(client.platform_name().to_owned()));
    r.check("client.platform_version", || Ok(client.platform_version().to_owned()));
    r.check("client.process_index", || Ok(client.process_index().to_string()));
    r.check("client.devices", || {
        let n = client.devices().len();
        expect(n > 0, "no devices")?;
        Ok(format!("{n}"))
    });
    r.check("client.addressable_devices", || {
        let n = client.addressable_devices().len();
        expect(n > 0, "no addressable devices")?;
        Ok(format!("{n}"))
    });
    r.check("client.lookup_device", || {
        let first = client.devices()[0].id()?;
        expect(client.lookup_device(first)?.id()? == first, "lookup returned another device")?;
        Ok(format!("id {first}"))
    });
    r.check("client.lookup_device_unknown_id_is_an_error", || {
        expect(client.lookup_device(i32::MAX).is_err(), "an unknown id was found")?;
        Ok(String::new())
    });
    r.check("client.lookup_addressable_device", || {
        let d = client.addressable_devices()[0];
        let hw = d.local_hardware_id()?;
        expect(client.lookup_addressable_device(hw)? == d, "lookup returned another device")?;
        Ok(format!("local hardware id {hw}"))
    });
    r.check("client.addressable_memories", || Ok(format!("{}", client.addressable_memories()?.len())));
    r.check("client.default_device_assignment", || {
        let a = client.default_device_assignment(1, 1)?;
        Ok(format!("{a:?}"))
    });
}
