//! Device queries beyond the basics: memory statistics, device attributes, poisoning a running
//! execution, and async tracking events.

use std::ffi::c_char;

use crate::call::named_value::{read_named_values, Value};
use crate::call::{checked_slice, pjrt_call, plugin_bool};
use crate::client::device::Device;
use crate::error::{Error, ErrorCode, Result};
use crate::sys::{self, Args};

/// A device's memory statistics. Fields the plugin does not report are `None`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryStats {
    /// Bytes currently allocated (always reported).
    pub bytes_in_use: i64,
    /// Peak of `bytes_in_use`.
    pub peak_bytes_in_use: Option<i64>,
    /// Number of allocations.
    pub num_allocs: Option<i64>,
    /// Largest single allocation.
    pub largest_alloc_size: Option<i64>,
    /// Memory the allocator may use.
    pub bytes_limit: Option<i64>,
    /// Bytes reserved by the allocator.
    pub bytes_reserved: Option<i64>,
    /// Peak of `bytes_reserved`.
    pub peak_bytes_reserved: Option<i64>,
    /// Limit on reservable bytes.
    pub bytes_reservable_limit: Option<i64>,
    /// Largest free block.
    pub largest_free_block_bytes: Option<i64>,
    /// Bytes in the allocator's pool.
    pub pool_bytes: Option<i64>,
    /// Peak of `pool_bytes`.
    pub peak_pool_bytes: Option<i64>,
    /// Peak allocated bytes (API 0.113+).
    pub peak_allocated_bytes: Option<i64>,
}

/// Owns a `PJRT_AsyncTrackingEvent`; destroys it on drop.
pub struct AsyncTrackingEvent<'c> {
    device: Device<'c>,
    raw: *mut sys::PJRT_AsyncTrackingEvent,
}

impl Drop for AsyncTrackingEvent<'_> {
    fn drop(&mut self) {
        let mut args = sys::PJRT_AsyncTrackingEvent_Destroy_Args::new();
        args.event = self.raw;
        let _ = pjrt_call!(self.device.client().api(), PJRT_AsyncTrackingEvent_Destroy, &mut args);
    }
}

/// A statistic and its `*_is_set` flag, read as a byte (see [`plugin_bool`]).
///
/// # Safety
/// `set` must point to an initialised byte.
unsafe fn opt(value: i64, set: *const bool) -> Option<i64> {
    // SAFETY: the caller's contract.
    unsafe { plugin_bool(set) }.then_some(value)
}

impl<'c> Device<'c> {
    /// Memory statistics (`PJRT_Device_MemoryStats`). CPU plugins answer UNIMPLEMENTED.
    pub fn memory_stats(&self) -> Result<MemoryStats> {
        let mut a = sys::PJRT_Device_MemoryStats_Args::new();
        a.device = self.as_raw();
        pjrt_call!(self.client().api(), PJRT_Device_MemoryStats, &mut a)?;
        // A plugin older than 0.113 does not know the last field; zero-filled it reads "not set".
        // SAFETY: every flag is a field of `a`, initialised by `new` and perhaps rewritten by
        // the plugin.
        Ok(unsafe {
            MemoryStats {
                bytes_in_use: a.bytes_in_use,
                peak_bytes_in_use: opt(a.peak_bytes_in_use, &raw const a.peak_bytes_in_use_is_set),
                num_allocs: opt(a.num_allocs, &raw const a.num_allocs_is_set),
                largest_alloc_size: opt(a.largest_alloc_size, &raw const a.largest_alloc_size_is_set),
                bytes_limit: opt(a.bytes_limit, &raw const a.bytes_limit_is_set),
                bytes_reserved: opt(a.bytes_reserved, &raw const a.bytes_reserved_is_set),
                peak_bytes_reserved: opt(a.peak_bytes_reserved, &raw const a.peak_bytes_reserved_is_set),
                bytes_reservable_limit: opt(a.bytes_reservable_limit, &raw const a.bytes_reservable_limit_is_set),
                largest_free_block_bytes: opt(a.largest_free_block_bytes, &raw const a.largest_free_block_bytes_is_set),
                pool_bytes: opt(a.pool_bytes, &raw const a.pool_bytes_is_set),
                peak_pool_bytes: opt(a.peak_pool_bytes, &raw const a.peak_pool_bytes_is_set),
                peak_allocated_bytes: opt(a.peak_allocated_bytes, &raw const a.peak_allocated_bytes_is_set),
            }
        })
    }

    /// Resets the peak statistics (`PJRT_Device_ClearMemoryStats`, 0.106+).
    pub fn clear_memory_stats(&self) -> Result<()> {
        let mut a = sys::PJRT_Device_ClearMemoryStats_Args::new();
        a.device = self.as_raw();
        pjrt_call!(self.client().api(), PJRT_Device_ClearMemoryStats, &mut a)
    }

    /// Runtime attributes of the device (`PJRT_Device_GetAttributes`, 0.92+), as opposed to the
    /// description's static [`Device::attributes`].
    pub fn runtime_attributes(&self) -> Result<Vec<(String, Value)>> {
        let mut a = sys::PJRT_Device_GetAttributes_Args::new();
        a.device = self.as_raw();
        pjrt_call!(self.client().api(), PJRT_Device_GetAttributes, &mut a)?;
        // SAFETY: the array lives until the deleter runs, right after the copy; a pair that
        // cannot be an array is refused before anything is read.
        let values = unsafe {
            checked_slice(a.attributes, a.num_attributes, "PJRT_Device_GetAttributes", "attributes")
                .map(|attributes| read_named_values(attributes.as_ptr(), attributes.len()))
        };
        if let Some(deleter) = a.attributes_deleter {
            // SAFETY: called once, on the object the plugin handed out.
            unsafe { deleter(a.device_attributes) };
        }
        values
    }

    /// Makes the execution with `launch_id` running on this device fail with `code` and
    /// `message` (`PJRT_Device_PoisonExecution`, 0.85+). Returns whether an execution was poisoned.
    pub fn poison_execution(&self, launch_id: i32, code: ErrorCode, message: &str) -> Result<bool> {
        if matches!(code, ErrorCode::Other(0)) {
            return Err(Error::invalid("poisoning needs an error code other than OK"));
        }
        let mut a = sys::PJRT_Device_PoisonExecution_Args::new();
        a.device = self.as_raw();
        a.launch_id = launch_id;
        a.error_code = code.to_raw();
        a.error_message = message.as_ptr() as *const c_char;
        a.error_message_size = message.len();
        pjrt_call!(self.client().api(), PJRT_Device_PoisonExecution, &mut a)?;
        // SAFETY: as in `opt`.
        Ok(unsafe { plugin_bool(&raw const a.poisoned) })
    }

    /// Starts an async tracking event with a description (`PJRT_Device_CreateAsyncTrackingEvent`,
    /// 0.86+), for profilers. `None` when the plugin returns no event (the CPU plugins).
    pub fn async_tracking_event(&self, description: &str) -> Result<Option<AsyncTrackingEvent<'c>>> {
        let mut a = sys::PJRT_Device_CreateAsyncTrackingEvent_Args::new();
        a.device = self.as_raw();
        a.description = description.as_ptr() as *const c_char;
        a.description_size = description.len();
        pjrt_call!(self.client().api(), PJRT_Device_CreateAsyncTrackingEvent, &mut a)?;
        Ok((!a.event.is_null()).then_some(AsyncTrackingEvent { device: *self, raw: a.event }))
    }
}
