//! The `PJRT_Error_*` slots: destroying an error and reading its message, code and payloads.

use std::panic::catch_unwind;

use pjrt_client_sys as sys;

use crate::calls::{checked_args, handle, slot_fn};
use crate::counters::{bump, COUNTERS};
use crate::errors::{invalid, FakeError};
use crate::faults::{fault_for, shape_array};

pub(crate) unsafe extern "C" fn error_destroy(args: *mut sys::PJRT_Error_Destroy_Args) {
    let _ = catch_unwind(|| {
        // SAFETY: the client passes a valid args struct for the call.
        let Ok(args) = (unsafe { checked_args(args, "PJRT_Error_Destroy_Args") }) else { return };
        if !args.error.is_null() {
            // SAFETY: every error this plugin hands out is a leaked `Box<FakeError>`; the client
            // destroys each one exactly once.
            drop(unsafe { Box::from_raw(args.error.cast::<FakeError>()) });
            bump(&COUNTERS.errors_destroyed);
        }
    });
}

pub(crate) unsafe extern "C" fn error_message(args: *mut sys::PJRT_Error_Message_Args) {
    let _ = catch_unwind(|| {
        // SAFETY: the client passes a valid args struct for the call.
        let Ok(args) = (unsafe { checked_args(args, "PJRT_Error_Message_Args") }) else { return };
        let fault = fault_for("PJRT_Error_Message");
        if !args.error.is_null() {
            // SAFETY: a live error of this plugin (not yet destroyed).
            let error = unsafe { &*args.error.cast::<FakeError>() };
            args.message = error.message.as_ptr().cast();
            args.message_size = error.message.len();
            shape_array(fault, &mut args.message, &mut args.message_size);
        }
    });
}

slot_fn!(PJRT_Error_GetCode => fn error_get_code(args: PJRT_Error_GetCode_Args, fault) {
    // SAFETY: a live error of this plugin (not yet destroyed).
    let error = unsafe { handle::<FakeError, _>(args.error.cast_mut(), "error") }?;
    args.code = error.code;
    Ok(())
});

slot_fn!(PJRT_Error_ForEachPayload => fn error_for_each_payload(args: PJRT_Error_ForEachPayload_Args, fault) {
    // SAFETY: a live error of this plugin (not yet destroyed).
    let error = unsafe { handle::<FakeError, _>(args.error.cast_mut(), "error") }?;
    let Some(visitor) = args.visitor else { return Err(invalid("fake: visitor is NULL")) };
    for (key, value) in &error.payloads {
        // SAFETY: the visitor contract: key and value readable during the call.
        unsafe { visitor(key.as_ptr().cast(), key.len(), value.as_ptr().cast(), value.len(), args.user_arg) };
    }
    Ok(())
});
