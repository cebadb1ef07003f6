//! Argument checks shared by the buffer calls: element types the plugin knows, dimensions,
//! placements, dense layouts. Several PJRT functions abort the process on bad input instead of
//! returning an error, so everything is checked before it reaches the plugin.

use crate::buffer::{dense_byte_size, Buffer, Placement};
use crate::call::Api;
use crate::client::Client;
use crate::error::{Error, ErrorCode, Result};
use crate::sys;
use pjrt_types::ElementType;

/// Refuses element types the plugin does not know (unknown to this crate, newer than the
/// plugin's minor) and those that cannot hold array data (INVALID, TOKEN): several plugins abort
/// on them rather than returning an error.
pub(crate) fn check_element_type(api: &Api, element_type: ElementType) -> Result<()> {
    match element_type.since_minor() {
        None => return Err(Error::invalid(format!("unknown element type {element_type}"))),
        Some(minor) if minor > api.version().minor => {
            return Err(api.unsupported_feature(element_type.name(), minor));
        }
        Some(_) => {}
    }
    if !element_type.is_array_type() {
        return Err(Error::invalid(format!("element type {element_type} cannot hold array data")));
    }
    Ok(())
}

/// Checks element type and dimensions of an array and returns its dense byte size.
pub(crate) fn check_array(api: &Api, element_type: ElementType, dims: &[i64]) -> Result<usize> {
    check_element_type(api, element_type)?;
    dense_byte_size(element_type, dims)
}

/// Where a new buffer goes, resolved against its client.
pub(crate) enum Target {
    Device(*mut sys::PJRT_Device),
    Memory(*mut sys::PJRT_Memory),
}

pub(crate) fn resolve_target(client: &Client, placement: Placement<'_>) -> Result<Target> {
    match placement {
        Placement::Default => client
            .first_addressable_device()
            .map(Target::Device)
            .ok_or_else(|| Error::invalid("the client has no addressable device")),
        Placement::Device(device) => {
            if !device.client().same_client(client) {
                return Err(Error::invalid("the device belongs to another client"));
            }
            Ok(Target::Device(device.as_raw()))
        }
        Placement::Memory(memory) => {
            if !memory.client().same_client(client) {
                return Err(Error::invalid("the memory belongs to another client"));
            }
            Ok(Target::Memory(memory.as_raw()))
        }
    }
}

/// The memory a placement means (a device's default memory for devices).
pub(crate) fn resolve_memory(client: &Client, placement: Placement<'_>) -> Result<*mut sys::PJRT_Memory> {
    match placement {
        Placement::Memory(memory) => {
            if !memory.client().same_client(client) {
                return Err(Error::invalid("the memory belongs to another client"));
            }
            Ok(memory.as_raw())
        }
        Placement::Device(device) => {
            if !device.client().same_client(client) {
                return Err(Error::invalid("the device belongs to another client"));
            }
            Ok(device.default_memory()?.as_raw())
        }
        Placement::Default => {
            let device = client
                .addressable_devices()
                .into_iter()
                .next()
                .ok_or_else(|| Error::invalid("the client has no addressable device"))?;
            Ok(device.default_memory()?.as_raw())
        }
    }
}

/// An error code and message to hand to the plugin: OK is refused (it would not be an error).
pub(crate) fn check_error_code(code: ErrorCode) -> Result<sys::PJRT_Error_Code> {
    let raw = code.to_raw();
    if raw.0 <= 0 || raw.0 > 16 {
        return Err(Error::invalid(format!("{code} is not an error code a plugin accepts (1..=16)")));
    }
    Ok(raw)
}

pub(crate) fn not_deleted(buffer: &Buffer) -> Result<()> {
    if buffer.is_deleted()? {
        return Err(Error::invalid("the buffer was deleted (or donated)"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_are_checked() {
        assert!(check_error_code(ErrorCode::Internal).is_ok());
        assert!(check_error_code(ErrorCode::Other(0)).is_err());
        assert!(check_error_code(ErrorCode::Other(99)).is_err());
    }
}
