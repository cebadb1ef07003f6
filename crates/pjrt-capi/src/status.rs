//! Statuses: a failed call's code and message, as handles of their own registry (so a status
//! freed twice, or never made, is ignored or reported, never a double free). What C calls to
//! read and free them is the boundary's (`pjrt_status_code`, ...).

use std::ffi::{c_char, CString};

use crate::failure::Failure;
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

/// The code of status `handle`: `PJRT_CODE_OK` for NULL, `PJRT_CODE_INVALID_ARGUMENT` for no
/// status (freed already, or never made).
pub(crate) fn code(handle: usize) -> pjrt_code {
    match handle {
        0 => PJRT_CODE_OK,
        EXHAUSTED => PJRT_CODE_RESOURCE_EXHAUSTED,
        handle => STATUSES.get(handle).map_or(PJRT_CODE_INVALID_ARGUMENT, |s| s.code),
    }
}

/// The message of status `handle`, valid until it is freed: "OK" for NULL, a note for no status.
pub(crate) fn message(handle: usize) -> *const c_char {
    match handle {
        0 => c"OK".as_ptr(),
        EXHAUSTED => EXHAUSTED_MESSAGE.as_ptr(),
        // The registry keeps the status, and with it the message's bytes, until it is freed.
        handle => STATUSES.get(handle).map_or(NOT_A_STATUS.as_ptr(), |s| s.message.as_ptr()),
    }
}

/// What `message` gives when it cannot read a status.
pub(crate) const UNREADABLE: *const c_char = NOT_A_STATUS.as_ptr();

/// Frees status `handle`; NULL and no status are ignored.
pub(crate) fn free(handle: usize) {
    if !matches!(handle, 0 | EXHAUSTED) {
        let _ = STATUSES.remove(handle);
    }
}
