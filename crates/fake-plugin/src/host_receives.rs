//! Host receives: every program receives 16 bytes on channel 1 from the host, through a
//! `PJRT_CopyToDeviceStream` handed to the client's receive callback.

use std::sync::Mutex;

use pjrt_client_sys::{self as sys, PJRT_Error};

use crate::calls::{checked_args, guarded, handle, lock, slot_fn, sys_bytes, OK};
use crate::counters::{bump, COUNTERS};
use crate::errors::invalid;
use crate::events::handed_out_event;
use crate::faults::{fault_for, injected_failure, Fault};

/// The channel every fake program receives on, when the client registers a callback for it.
const RECV_CHANNEL: i64 = 1;
const RECV_BYTES: usize = 16;
const RECV_GRANULE: usize = 4;

/// The object behind a `PJRT_CopyToDeviceStream*`: the bytes received so far.
#[derive(Default)]
struct FakeStream {
    received: Mutex<Vec<u8>>,
}

fn stream<'a>(ptr: *mut sys::PJRT_CopyToDeviceStream) -> Result<&'a FakeStream, *mut PJRT_Error> {
    // SAFETY: the client passes streams this plugin handed out and has not destroyed.
    unsafe { handle::<FakeStream, _>(ptr, "stream") }
}

/// Calls the receive callbacks for `RECV_CHANNEL` of device `i` of a launch, each with a new
/// stream it owns.
///
/// # Safety
/// `options` must be the client's valid execute options, with `num_recv_ops` callbacks per
/// device when `recv_callbacks` is set.
pub(crate) unsafe fn run_host_receives(options: &sys::PJRT_ExecuteOptions, i: usize) {
    if options.recv_callbacks.is_null() || options.num_recv_ops == 0 {
        return;
    }
    // SAFETY: the caller's guarantee: one list per device.
    let list = unsafe { *options.recv_callbacks.add(i) }.cast::<sys::PJRT_RecvCallbackInfo>();
    if list.is_null() {
        return;
    }
    for j in 0..options.num_recv_ops {
        // SAFETY: `num_recv_ops` entries per list.
        let info = unsafe { *list.add(j) };
        if let (RECV_CHANNEL, Some(callback)) = (info.channel_id, info.recv_callback) {
            bump(&COUNTERS.streams_created);
            let raw = Box::into_raw(Box::<FakeStream>::default()).cast();
            // SAFETY: the client's callback and argument; it takes the stream.
            unsafe { callback(raw, info.user_arg) };
        }
    }
}

slot_fn!(PJRT_CopyToDeviceStream_Destroy => fn stream_destroy(args: PJRT_CopyToDeviceStream_Destroy_Args, fault) {
    if !args.stream.is_null() {
        // SAFETY: a stream this plugin handed out; the client destroys it once.
        drop(unsafe { Box::from_raw(args.stream.cast::<FakeStream>()) });
        bump(&COUNTERS.streams_destroyed);
    }
    Ok(())
});

slot_fn!(PJRT_CopyToDeviceStream_TotalBytes => fn stream_total_bytes(args: PJRT_CopyToDeviceStream_TotalBytes_Args, fault) {
    stream(args.stream)?;
    args.total_bytes = RECV_BYTES as i64;
    Ok(())
});

slot_fn!(PJRT_CopyToDeviceStream_GranuleSize => fn stream_granule_size(
    args: PJRT_CopyToDeviceStream_GranuleSize_Args, fault
) {
    stream(args.stream)?;
    args.granule_size_in_bytes = RECV_GRANULE as i64;
    Ok(())
});

slot_fn!(PJRT_CopyToDeviceStream_CurrentBytes => fn stream_current_bytes(
    args: PJRT_CopyToDeviceStream_CurrentBytes_Args, fault
) {
    args.current_bytes = lock(&stream(args.stream)?.received).len() as i64;
    Ok(())
});

// Written out rather than with `slot_fn!`: the chunk is the plugin's from the call on, so it is
// freed whether or not the call (or an injected failure) succeeds.
pub(crate) unsafe extern "C" fn stream_add_chunk(
    raw: *mut sys::PJRT_CopyToDeviceStream_AddChunk_Args,
) -> *mut PJRT_Error {
    const SLOT: &str = "PJRT_CopyToDeviceStream_AddChunk";
    guarded(SLOT, || {
        // SAFETY: the client passes a valid args struct that it does not touch during the call.
        let args = match unsafe { checked_args(raw, "PJRT_CopyToDeviceStream_AddChunk_Args") } {
            Ok(args) => args,
            Err(error) => return error,
        };
        // SAFETY: the client passes a valid chunk (or NULL).
        let Some(chunk) = (unsafe { args.chunk.as_mut() }) else {
            return invalid("fake: no chunk");
        };
        // SAFETY: the chunk holds `size` readable bytes until its deleter runs.
        let data = unsafe { sys_bytes(chunk.data.cast(), chunk.size) }.to_vec();
        if let Some(deleter) = chunk.deleter.take() {
            // SAFETY: the client's deleter for this chunk, called once.
            unsafe { deleter(chunk.data, chunk.deleter_arg) };
        }
        if fault_for(SLOT) == Some(Fault::Fail) {
            return injected_failure(SLOT, Fault::Fail);
        }
        let stream = match stream(args.stream) {
            Ok(stream) => stream,
            Err(error) => return error,
        };
        let mut received = lock(&stream.received);
        if data.len() % RECV_GRANULE != 0 || received.len() + data.len() > RECV_BYTES {
            return invalid("fake: the chunk does not fit the stream");
        }
        received.extend(data);
        drop(received);
        args.transfer_complete = handed_out_event(None, SLOT);
        OK
    })
}
