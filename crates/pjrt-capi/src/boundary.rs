//! The boundary: every exported function runs its body through [`guard`] (or [`guard_value`]
//! for the few that return a value, not a status), which catches a panic so that none crosses
//! into C, and turns the body's [`Failure`] into a `pjrt_status`; and the functions C reads and
//! frees those statuses with.

use std::ffi::c_char;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::failure::{Failure, Outcome};
use crate::status;
use crate::types::*;

/// Runs the body of the exported function `function`: NULL when it succeeds, else a status with
/// its failure; a panic is caught and becomes a `PJRT_CODE_INTERNAL` status naming the function.
pub(crate) fn guard(function: &'static str, body: impl FnOnce() -> Outcome) -> *mut pjrt_status {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => std::ptr::null_mut(),
        Ok(Err(failure)) => status::new_status(failure),
        Err(panic) => status::new_status(panicked(function, panic)),
    }
}

/// [`guard`] for a function that returns a value: `fallback` if the body panics.
pub(crate) fn guard_value<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
}

#[cold]
fn panicked(function: &str, panic: Box<dyn std::any::Any + Send>) -> Failure {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_owned());
    Failure::new(PJRT_CODE_INTERNAL, format!("{function}: a bug in libpjrt: it panicked: {message}"))
}

/// The status's code: `PJRT_CODE_OK` for NULL (success), `PJRT_CODE_INVALID_ARGUMENT` for a
/// status freed already.
///
/// Thread-safe.
/// `status` is never dereferenced: any value is checked.
#[no_mangle]
pub extern "C" fn pjrt_status_code(status: *const pjrt_status) -> pjrt_code {
    guard_value(PJRT_CODE_INTERNAL, || status::code(status as usize))
}

/// The status's message, UTF-8 and NUL-terminated, valid until `pjrt_status_free(status)`:
/// what failed and, where it can, what to do about it. "OK" for NULL.
///
/// Thread-safe.
/// `status` is never dereferenced: any value is checked.
#[no_mangle]
pub extern "C" fn pjrt_status_message(status: *const pjrt_status) -> *const c_char {
    guard_value(status::UNREADABLE, || status::message(status as usize))
}

/// Frees a status. NULL, and a status freed already, are ignored.
///
/// Thread-safe (a message read from the status in another thread is freed with it).
/// `status` is never dereferenced: any value is checked.
#[no_mangle]
pub extern "C" fn pjrt_status_free(status: *mut pjrt_status) {
    guard_value((), || status::free(status as usize))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_an_internal_status_naming_the_function() {
        let status = guard("pjrt_example", || panic!("the reason"));
        assert_eq!(pjrt_status_code(status), PJRT_CODE_INTERNAL);
        // SAFETY: the message of a live status is a NUL-terminated string.
        let message = unsafe { std::ffi::CStr::from_ptr(pjrt_status_message(status)) }.to_str().unwrap().to_owned();
        assert_eq!(message, "pjrt_example: a bug in libpjrt: it panicked: the reason");
        pjrt_status_free(status);
        assert!(guard("pjrt_example", || Ok(())).is_null());
        assert_eq!(guard_value(7, || panic!("no")), 7);
    }

    #[test]
    fn a_nul_inside_a_message_does_not_cut_it_short() {
        let status = guard("f", || Err(Failure::invalid("a\0b")));
        // SAFETY: as above.
        let message = unsafe { std::ffi::CStr::from_ptr(pjrt_status_message(status)) }.to_str().unwrap().to_owned();
        assert_eq!(message, "a\u{2400}b");
        pjrt_status_free(status);
    }
}
