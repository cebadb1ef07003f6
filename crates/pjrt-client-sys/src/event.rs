//! Events: the `PJRT_Event` handle a plugin hands out for work in flight (ready buffers, finished
//! transfers and executions), the calls that wait on, poll and destroy it, and the events a client
//! creates and sets itself (0.89).

#![allow(non_camel_case_types, non_snake_case, missing_docs)]

use std::ffi::{c_char, c_void};

use super::args::*;
use super::error::*;

opaque!(PJRT_Event);

pub type PJRT_Event_OnReadyCallback = Option<unsafe extern "C" fn(error: *mut PJRT_Error, user_arg: *mut c_void)>;

pjrt_struct!(PJRT_Event_Destroy_Args { struct_size: usize, extension_start: Ext, event: *mut PJRT_Event });
pjrt_struct!(PJRT_Event_IsReady_Args { struct_size: usize, extension_start: Ext, event: *mut PJRT_Event, is_ready: bool });
pjrt_struct!(PJRT_Event_Error_Args { struct_size: usize, extension_start: Ext, event: *mut PJRT_Event });
pjrt_struct!(PJRT_Event_Await_Args { struct_size: usize, extension_start: Ext, event: *mut PJRT_Event });
pjrt_struct!(PJRT_Event_OnReady_Args {
    struct_size: usize, extension_start: Ext, event: *mut PJRT_Event,
    callback: PJRT_Event_OnReadyCallback, user_arg: *mut c_void,
});
pjrt_struct!(PJRT_Event_Create_Args { struct_size: usize, extension_start: Ext, event: *mut PJRT_Event });
pjrt_struct!(PJRT_Event_Set_Args {
    struct_size: usize, extension_start: Ext, event: *mut PJRT_Event, error_code: PJRT_Error_Code,
    error_message: *const c_char, error_message_size: usize,
});

#[cfg(test)]
mod tests {
    use super::*;

    /// Sizes from the API notes' slot table (the header's `*_STRUCT_SIZE` at 0.114/0.115).
    #[test]
    fn struct_sizes_match_the_published_layout() {
        let expected: &[(usize, usize, &str)] = &[
            (PJRT_Event_Destroy_Args::STRUCT_SIZE, 24, "PJRT_Event_Destroy_Args"),
            (PJRT_Event_IsReady_Args::STRUCT_SIZE, 25, "PJRT_Event_IsReady_Args"),
            (PJRT_Event_Error_Args::STRUCT_SIZE, 24, "PJRT_Event_Error_Args"),
            (PJRT_Event_Await_Args::STRUCT_SIZE, 24, "PJRT_Event_Await_Args"),
            (PJRT_Event_OnReady_Args::STRUCT_SIZE, 40, "PJRT_Event_OnReady_Args"),
            (PJRT_Event_Create_Args::STRUCT_SIZE, 24, "PJRT_Event_Create_Args"),
            (PJRT_Event_Set_Args::STRUCT_SIZE, 48, "PJRT_Event_Set_Args"),
        ];
        for (ours, theirs, name) in expected {
            assert_eq!(ours, theirs, "{name}");
        }
    }
}
