//! The Callback extension (type 14): runtime callbacks (TPU slice failures, pre-fatal errors).

#![allow(non_camel_case_types, non_snake_case, missing_docs)]

use std::ffi::{c_char, c_void};

use super::ExtFn;
use crate::client::*;
use crate::error::*;

c_enum!(
    /// `PJRT_Callback_Type`.
    PJRT_Callback_Type { Unknown = 0, Tpu_SliceBuilder = 1, Prefatal = 2 }
);

c_enum!(
    /// `PJRT_Callback_Tpu_SliceFailureType` (int32).
    PJRT_Callback_Tpu_SliceFailureType {
        SLICE_FAILURE_UNKNOWN = 0, SLICE_FAILURE_INIT_ERROR = 1, SLICE_FAILURE_WORKER_UNAVAILABLE = 2,
        SLICE_FAILURE_FLAPPING_TASK_ERROR = 3, SLICE_FAILURE_SW_INJECT_ERROR = 4,
        SLICE_FAILURE_CHIP_DRIVER_ERROR = 5,
    }
);

pjrt_struct!(PJRT_Callback_Tpu_SliceBuilderArgs {
    struct_size: usize,
    failure_type: PJRT_Callback_Tpu_SliceFailureType
});
pjrt_struct!(PJRT_Callback_PrefatalArgs {
    struct_size: usize, error_code: PJRT_Error_Code, error_message: *const c_char, error_message_size: usize,
});

/// `PJRT_Callback_Function`: `args` is the type-specific args struct.
pub type PJRT_Callback_Function = Option<unsafe extern "C" fn(args: *mut c_void, user_arg: *mut c_void)>;

pjrt_struct!(
    /// Note: no `extension_start`.
    PJRT_Callback_RegisterCallback_Args {
        struct_size: usize, client: *mut PJRT_Client, type_: PJRT_Callback_Type,
        callback: PJRT_Callback_Function, user_arg: *mut c_void,
    }
);
pjrt_struct!(
    /// Note: no `extension_start`.
    PJRT_Callback_InvokeCallback_Args {
        struct_size: usize, client: *mut PJRT_Client, type_: PJRT_Callback_Type, args: *mut c_void,
    }
);

ext_struct!(
    /// `PJRT_Callback_Extension`: register and invoke runtime callbacks (TPU slice failures,
    /// pre-fatal errors).
    PJRT_Callback_Extension = Callback {
        register_callback: ExtFn<PJRT_Callback_RegisterCallback_Args> = since 81,
        invoke_callback: ExtFn<PJRT_Callback_InvokeCallback_Args> = since 81,
    }
);
