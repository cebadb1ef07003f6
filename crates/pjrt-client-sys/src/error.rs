//! Errors: the `PJRT_Error` handle, its absl status code [`PJRT_Error_Code`], the calls that read
//! an error (message, code, payloads) and destroy it, and the error factory a plugin hands to
//! callbacks ([`PJRT_CallbackError`]).

#![allow(non_camel_case_types, non_snake_case, missing_docs)]

use std::ffi::{c_char, c_void};

use super::args::*;

opaque!(PJRT_Error);

c_enum!(
    /// `PJRT_Error_Code`: the absl status codes.
    PJRT_Error_Code {
        OK = 0, CANCELLED = 1, UNKNOWN = 2, INVALID_ARGUMENT = 3, DEADLINE_EXCEEDED = 4,
        NOT_FOUND = 5, ALREADY_EXISTS = 6, PERMISSION_DENIED = 7, RESOURCE_EXHAUSTED = 8,
        FAILED_PRECONDITION = 9, ABORTED = 10, OUT_OF_RANGE = 11, UNIMPLEMENTED = 12,
        INTERNAL = 13, UNAVAILABLE = 14, DATA_LOSS = 15, UNAUTHENTICATED = 16,
    }
);

pub type PJRT_CallbackError =
    Option<unsafe extern "C" fn(code: PJRT_Error_Code, message: *const c_char, message_size: usize) -> *mut PJRT_Error>;

pjrt_struct!(PJRT_Error_Destroy_Args { struct_size: usize, extension_start: Ext, error: *mut PJRT_Error });
pjrt_struct!(PJRT_Error_Message_Args {
    struct_size: usize, extension_start: Ext, error: *const PJRT_Error, message: *const c_char, message_size: usize,
});
pjrt_struct!(PJRT_Error_GetCode_Args {
    struct_size: usize, extension_start: Ext, error: *const PJRT_Error, code: PJRT_Error_Code,
});

// ---- error payloads (0.99) ----

/// Called once per payload of an error; the strings live only during the call.
pub type PJRT_Error_PayloadVisitor = Option<
    unsafe extern "C" fn(
        key: *const c_char,
        key_size: usize,
        value: *const c_char,
        value_size: usize,
        user_arg: *mut c_void,
    ),
>;
pjrt_struct!(PJRT_Error_ForEachPayload_Args {
    struct_size: usize, extension_start: Ext, error: *const PJRT_Error, visitor: PJRT_Error_PayloadVisitor,
    user_arg: *mut c_void,
});

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::offset_of;

    /// Sizes from the API notes' slot table (the header's `*_STRUCT_SIZE` at 0.114/0.115).
    #[test]
    fn struct_sizes_match_the_published_layout() {
        let expected: &[(usize, usize, &str)] = &[
            (PJRT_Error_Destroy_Args::STRUCT_SIZE, 24, "PJRT_Error_Destroy_Args"),
            (PJRT_Error_Message_Args::STRUCT_SIZE, 40, "PJRT_Error_Message_Args"),
            (PJRT_Error_GetCode_Args::STRUCT_SIZE, 28, "PJRT_Error_GetCode_Args"),
            (PJRT_Error_ForEachPayload_Args::STRUCT_SIZE, 40, "PJRT_Error_ForEachPayload_Args"),
        ];
        for (ours, theirs, name) in expected {
            assert_eq!(ours, theirs, "{name}");
        }
        assert_eq!(offset_of!(PJRT_Error_ForEachPayload_Args, visitor), 24);
    }
}
