//! The fake's `PJRT_Error` ([`FakeError`]) and how one is made; the `PJRT_Error_*` slots that
//! read it are in `error_slots.rs`.

use pjrt_client_sys::{PJRT_Error, PJRT_Error_Code};

use crate::counters::{bump, COUNTERS};

/// The fake's `PJRT_Error`: a boxed code and message.
pub(crate) struct FakeError {
    pub(crate) code: PJRT_Error_Code,
    pub(crate) message: String,
    pub(crate) payloads: Vec<(String, Vec<u8>)>,
}

pub(crate) fn new_error(code: PJRT_Error_Code, message: impl Into<String>) -> *mut PJRT_Error {
    bump(&COUNTERS.errors_created);
    Box::into_raw(Box::new(FakeError { code, message: message.into(), payloads: Vec::new() })).cast()
}

pub(crate) fn invalid(message: impl Into<String>) -> *mut PJRT_Error {
    new_error(PJRT_Error_Code::INVALID_ARGUMENT, message)
}
