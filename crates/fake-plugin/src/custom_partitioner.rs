//! The CustomPartitioner extension (scenario `custom_partitioner`): one node in the chain whose
//! functions count what they register. A registered partitioner's `dtor` is called at once, as a
//! plugin does when it drops a partitioner it no longer needs, so a test can see the handover.

use std::ptr::null_mut;
use std::sync::OnceLock;

use pjrt_client_sys::{self as sys, Extension, PJRT_Error_Code};

use crate::calls::{checked_args, guarded, sys_bytes, OK};
use crate::counters::{bump, COUNTERS};
use crate::errors::new_error;

unsafe extern "C" fn register_custom_partitioner(
    raw: *mut sys::PJRT_Register_Custom_Partitioner_Args,
) -> *mut sys::PJRT_Error {
    guarded("register_custom_partitioner", || {
        // SAFETY: the client passes a valid args struct (the PJRT calling convention).
        let args = match unsafe { checked_args(raw, "PJRT_Register_Custom_Partitioner_Args") } {
            Ok(args) => args,
            Err(error) => return error,
        };
        // SAFETY: the name is readable for `name_size` bytes during the call.
        if unsafe { sys_bytes(args.name, args.name_size) }.is_empty() || args.callbacks.is_null() {
            return new_error(PJRT_Error_Code::INVALID_ARGUMENT, "fake: a partitioner needs a name and callbacks");
        }
        bump(&COUNTERS.custom_partitioners_registered);
        // SAFETY: the callbacks are the caller's, handed over to us: we may call `dtor` once.
        unsafe {
            if let Some(dtor) = (*args.callbacks).dtor {
                dtor(args.callbacks);
            }
        }
        OK
    })
}

unsafe extern "C" fn register_batch_partitionable(
    raw: *mut sys::PJRT_Register_Batch_Partitionable_Args,
) -> *mut sys::PJRT_Error {
    guarded("register_batch_partitionable", || {
        // SAFETY: the client passes a valid args struct (the PJRT calling convention).
        let args = match unsafe { checked_args(raw, "PJRT_Register_Batch_Partitionable_Args") } {
            Ok(args) => args,
            Err(error) => return error,
        };
        // SAFETY: the name is readable for `name_size` bytes during the call.
        if unsafe { sys_bytes(args.name, args.name_size) }.is_empty() {
            return new_error(PJRT_Error_Code::INVALID_ARGUMENT, "fake: a batch partitionable call needs a name");
        }
        bump(&COUNTERS.batch_partitionable_registered);
        OK
    })
}

/// The chain of the `custom_partitioner` scenario: one CustomPartitioner node.
pub(crate) fn custom_partitioner_chain() -> *mut sys::PJRT_Extension_Base {
    static NODE: OnceLock<usize> = OnceLock::new();
    *NODE.get_or_init(|| {
        let node = Box::leak(Box::new(sys::PJRT_Custom_Partitioner_Extension {
            base: sys::PJRT_Extension_Base {
                struct_size: sys::PJRT_Custom_Partitioner_Extension::STRUCT_SIZE,
                type_: sys::PJRT_Extension_Type::Custom_Partitioner,
                next: null_mut(),
            },
            register_custom_partitioner: Some(register_custom_partitioner),
            register_batch_partitionable: Some(register_batch_partitionable),
        }));
        node as *mut sys::PJRT_Custom_Partitioner_Extension as usize
    }) as *mut sys::PJRT_Extension_Base
}
