//! Statuses: a failed call's code and message, as handles of their own registry (so a status
//! freed twice, or never made, is ignored or reported, never a double free).

use std::ffi::{c_char, CString};

use crate::boundary::{guard_value, Failure};
use crate::registry::Registry;
use crate::types::*;

/// A status: its code and its message as C reads it.
struct Status {
    code: pjrt_code,
    message: CString,
}

static STATUSES: Registry<Status> = Registry::new(3, "pjrt_status");

/// The status handed out when 2^24 statuses are alive (the caller frees none): not in the
/// registry, recognised by its value.
const EXHAUSTED: usize = usize::MAX;
const EXHAUSTED_MESSAGE: &std::ffi::CStr = c"too many pjrt_status objects are alive: free each with pjrt_status_free";

/// The message of a status that is not one: `pjrt_status_message` of a freed status.
const NOT_A_STATUS: &std::ffi::CStr = c"(not a pjrt_status: freed already, or never made by this library)";

/// A new status for `failure`.
pub(crate) fn new_status(failure: Failure) -> *mut pjrt_status {
    // A NUL inside the message would cut it short in C: shown as U+2400 instead.
    let message = CString::new(failure.message.replace('\0', "\u{2400}")).unwrap_or_default();
    let handle = STATUSES.insert(Status { code: failure.code, message }).unwrap_or(EXHAUSTED);
    handle as *mut pjrt_status
}

/// How many statuses are alive (for the tests).
#[doc(hidden)]
pub fn live_statuses() -> usize {
    STATUSES.live()
}

/// The status's code: `PJRT_CODE_OK` for NULL (success), `PJRT_CODE_INVALID_ARGUMENT` for a
/// status freed already.
///
/// Thread-safe.
/// `status` is never dereferenced: any value is checked.
#[no_mangle]
pub extern "C" fn pjrt_status_code(status: *const pjrt_status) -> pjrt_code {
    guard_value(PJRT_CODE_INTERNAL, || match status as usize {
        0 => PJRT_CODE_OK,
        EXHAUSTED => PJRT_CODE_RESOURCE_EXHAUSTED,
        handle => STATUSES.get(handle).map_or(PJRT_CODE_INVALID_ARGUMENT, |s| s.code),
    })
}

/// The status's message, UTF-8 and NUL-terminated, valid until `pjrt_status_free(status)`:
/// what failed and, where it can, what to do about it. "OK" for NULL.
///
/// Thread-safe.
/// `status` is never dereferenced: any value is checked.
#[no_mangle]
pub extern "C" fn pjrt_status_message(status: *const pjrt_status) -> *const c_char {
    guard_value(NOT_A_STATUS.as_ptr(), || match status as usize {
        0 => c"OK".as_ptr(),
        EXHAUSTED => EXHAUSTED_MESSAGE.as_ptr(),
        // The registry keeps the status, and with it the message's bytes, until it is freed.
        handle => STATUSES.get(handle).map_or(NOT_A_STATUS.as_ptr(), |s| s.message.as_ptr()),
    })
}

/// Frees a status. NULL, and a status freed already, are ignored.
///
/// Thread-safe (a message read from the status in another thread is freed with it).
/// `status` is never dereferenced: any value is checked.
#[no_mangle]
pub extern "C" fn pjrt_status_free(status: *mut pjrt_status) {
    guard_value((), || {
        if !matches!(status as usize, 0 | EXHAUSTED) {
            let _ = STATUSES.remove(status as usize);
        }
    })
}
