//! How a table function is made: panics caught ([`guarded`]), args checked like a real plugin
//! checks them ([`checked_args`]), handles borrowed ([`handle`]), and [`slot_fn!`], which defines
//! a table function from these and the fault directives. Also [`lock`] and [`sys_bytes`].

use std::ffi::c_char;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::null_mut;
use std::sync::{Mutex, MutexGuard};

use pjrt_client_sys::{Args, PJRT_Error, PJRT_Error_Code};

use crate::errors::{invalid, new_error};

/// Locks a mutex, ignoring poisoning (a panic inside the fake is already turned into an error).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

pub(crate) const OK: *mut PJRT_Error = null_mut();

/// What the body of a table function returns: `Err` carries the `PJRT_Error` to return.
pub(crate) type SlotResult = Result<(), *mut PJRT_Error>;

/// Runs a table function's body, turning a panic into an INTERNAL error.
pub(crate) fn guarded(function: &str, body: impl FnOnce() -> *mut PJRT_Error) -> *mut PJRT_Error {
    catch_unwind(AssertUnwindSafe(body))
        .unwrap_or_else(|_| new_error(PJRT_Error_Code::INTERNAL, format!("fake: {function} panicked")))
}

/// Borrows an args struct after the checks a real plugin makes.
///
/// # Safety
/// `args` must be NULL or point to a live `T` (at least its `struct_size` field readable) that
/// is not otherwise accessed during `'a`.
pub(crate) unsafe fn checked_args<'a, T: Args>(args: *mut T, name: &str) -> Result<&'a mut T, *mut PJRT_Error> {
    if args.is_null() {
        return Err(invalid(format!("fake: {name} is NULL")));
    }
    // SAFETY: every args struct starts with `struct_size: usize`; the caller guarantees it is
    // readable.
    let size = unsafe { args.cast::<usize>().read() };
    if size < T::STRUCT_SIZE {
        return Err(invalid(format!("Unexpected {name} size: expected {}, got {size}", T::STRUCT_SIZE)));
    }
    // SAFETY: non-NULL, large enough, and exclusively ours for the call (caller's guarantee).
    Ok(unsafe { &mut *args })
}

/// Defines the table function for `$slot`: `unsafe extern "C" fn(*mut Args) -> *mut PJRT_Error`.
/// The body sees the checked args as `$args` and the fault directed at this call as `$fault`
/// (a `fail` never reaches it), and evaluates to a [`SlotResult`]. Its paths start at the crate
/// root, so a module that defines table functions imports only the macro.
macro_rules! slot_fn {
    ($slot:ident => fn $fn_name:ident($args:ident: $ty:ident, $fault:ident) $body:block) => {
        pub(crate) unsafe extern "C" fn $fn_name(
            raw: *mut ::pjrt_client_sys::$ty,
        ) -> *mut ::pjrt_client_sys::PJRT_Error {
            $crate::calls::guarded(stringify!($slot), || {
                // SAFETY: the client passes a valid args struct that it does not touch during
                // the call (the PJRT calling convention).
                let $args = match unsafe { $crate::calls::checked_args(raw, stringify!($ty)) } {
                    Ok(args) => args,
                    Err(error) => return error,
                };
                #[allow(unused_variables)]
                let $fault = $crate::faults::fault_for(stringify!($slot));
                if let Some(fault @ ($crate::faults::Fault::Fail | $crate::faults::Fault::Unimplemented)) = $fault {
                    return $crate::faults::injected_failure(stringify!($slot), fault);
                }
                // A closure, so that the body can use `?` and `return`.
                #[allow(clippy::redundant_closure_call)]
                let result: $crate::calls::SlotResult = (|| $body)();
                match result {
                    Ok(()) => $crate::calls::OK,
                    Err(error) => error,
                }
            })
        }
    };
}
pub(crate) use slot_fn;

/// Borrows a handle this plugin created.
///
/// # Safety
/// `ptr` must be NULL or a pointer this plugin returned as a `T` and has not destroyed.
pub(crate) unsafe fn handle<'a, T, P>(ptr: *mut P, what: &str) -> Result<&'a T, *mut PJRT_Error> {
    if ptr.is_null() {
        return Err(invalid(format!("fake: {what} is NULL")));
    }
    // SAFETY: guaranteed by the caller.
    Ok(unsafe { &*ptr.cast::<T>() })
}

/// The bytes of a (pointer, length) pair the client passed; empty for NULL.
///
/// # Safety
/// `ptr` must be NULL or point to `len` readable bytes.
pub(crate) unsafe fn sys_bytes<'a>(ptr: *const c_char, len: usize) -> &'a [u8] {
    if ptr.is_null() || len == 0 {
        &[]
    } else {
        // SAFETY: the caller's guarantee.
        unsafe { std::slice::from_raw_parts(ptr.cast(), len) }
    }
}
