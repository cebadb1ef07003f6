//! The Profiler extension (type 1): data members that point at the plugin's own profiler table.

#![allow(non_camel_case_types, non_snake_case, missing_docs)]

use std::ffi::{c_char, c_int, c_void};

opaque!(PLUGIN_Profiler, PLUGIN_Profiler_Error);

ext_struct!(
    /// `PJRT_Profiler_Extension`: data members, no functions. `profiler_api` points at the
    /// plugin's profiler table, [`PLUGIN_Profiler_Api`] (XLA's `profiler_c_api.h`, version 1).
    PJRT_Profiler_Extension = Profiler {
        profiler_api: *mut PLUGIN_Profiler_Api = since 34,
        traceme_context_id: i64 = since 34,
    }
);

// The profiler table the extension points at: its own small API (`PLUGIN_PROFILER_VERSION` 1),
// sized by its own `struct_size`, with its own error type. `CollectData` hands out an XSpace
// protobuf (`tsl/profiler/protobuf/xplane.proto`).

pjrt_struct!(PLUGIN_Profiler_Error_Destroy_Args {
    struct_size: usize, priv_: *mut c_void, error: *mut PLUGIN_Profiler_Error,
});
pjrt_struct!(PLUGIN_Profiler_Error_Message_Args {
    struct_size: usize, priv_: *mut c_void, error: *const PLUGIN_Profiler_Error,
    message: *const c_char, message_size: usize,
});
pjrt_struct!(PLUGIN_Profiler_Error_GetCode_Args {
    struct_size: usize, priv_: *mut c_void, error: *const PLUGIN_Profiler_Error, code: c_int,
});
pjrt_struct!(PLUGIN_Profiler_Create_Args {
    struct_size: usize, options: *const c_char, options_size: usize, profiler: *mut PLUGIN_Profiler,
});
pjrt_struct!(PLUGIN_Profiler_Destroy_Args { struct_size: usize, profiler: *mut PLUGIN_Profiler });
pjrt_struct!(PLUGIN_Profiler_Start_Args { struct_size: usize, profiler: *mut PLUGIN_Profiler });
pjrt_struct!(PLUGIN_Profiler_Stop_Args { struct_size: usize, profiler: *mut PLUGIN_Profiler });
pjrt_struct!(PLUGIN_Profiler_CollectData_Args {
    struct_size: usize, profiler: *mut PLUGIN_Profiler, buffer: *mut u8, buffer_size_in_bytes: usize,
});

/// A profiler-table function that returns a `PLUGIN_Profiler_Error*` (NULL on success).
pub type ProfilerFn<A> = Option<unsafe extern "C" fn(args: *mut A) -> *mut PLUGIN_Profiler_Error>;

pjrt_struct!(
    /// `PLUGIN_Profiler_Api`: the plugin's profiler table. Gate every member by the table's own
    /// `struct_size`.
    PLUGIN_Profiler_Api {
        struct_size: usize,
        priv_: *mut c_void,
        error_destroy: Option<unsafe extern "C" fn(args: *mut PLUGIN_Profiler_Error_Destroy_Args)>,
        error_message: Option<unsafe extern "C" fn(args: *mut PLUGIN_Profiler_Error_Message_Args)>,
        error_get_code: ProfilerFn<PLUGIN_Profiler_Error_GetCode_Args>,
        create: ProfilerFn<PLUGIN_Profiler_Create_Args>,
        destroy: ProfilerFn<PLUGIN_Profiler_Destroy_Args>,
        start: ProfilerFn<PLUGIN_Profiler_Start_Args>,
        stop: ProfilerFn<PLUGIN_Profiler_Stop_Args>,
        collect_data: ProfilerFn<PLUGIN_Profiler_CollectData_Args>,
    }
);
