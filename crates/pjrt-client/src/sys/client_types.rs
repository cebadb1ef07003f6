//! Args structs for client_types (declared by hand from the API description).
//!
//! The key-value store callbacks of `PJRT_Client_Create`: the plugin calls them with these args
//! structs to share data between processes (for example each process's local topology).

#![allow(non_camel_case_types, non_snake_case, missing_docs)]

use std::ffi::{c_char, c_int, c_void};

#[allow(unused_imports)]
use super::types::*;

/// Frees a value returned by the get callback. The plugin copies the value first, then calls it.
pub type PJRT_KeyValueGetCallback_ValueDeleter = Option<unsafe extern "C" fn(value: *mut c_char)>;
/// Frees a value returned by the try-get callback.
pub type PJRT_KeyValueTryGetCallback_ValueDeleter = Option<unsafe extern "C" fn(value: *mut c_char)>;

// `callback_error` is a pointer to the plugin's error factory (a pointer to a function pointer),
// valid for the duration of the call; a callback that fails returns what the factory made.

// Blocking get: wait up to `timeout_in_ms` for the key.
pjrt_struct!(PJRT_KeyValueGetCallback_Args {
    struct_size: usize, extension_start: Ext, key: *const c_char, key_size: usize,
    timeout_in_ms: c_int, callback_error: *mut PJRT_CallbackError, user_arg: *mut c_void,
    value: *mut c_char, value_size: usize, value_deleter_callback: PJRT_KeyValueGetCallback_ValueDeleter,
});

// Non-blocking get: NOT_FOUND at once when the key is absent.
pjrt_struct!(PJRT_KeyValueTryGetCallback_Args {
    struct_size: usize, extension_start: Ext, key: *const c_char, key_size: usize,
    callback_error: *mut PJRT_CallbackError, user_arg: *mut c_void,
    value: *mut c_char, value_size: usize, value_deleter_callback: PJRT_KeyValueTryGetCallback_ValueDeleter,
});

// Put: `value` only lives for the duration of the call.
pjrt_struct!(PJRT_KeyValuePutCallback_Args {
    struct_size: usize, extension_start: Ext, key: *const c_char, key_size: usize,
    value: *const c_char, value_size: usize, callback_error: *mut PJRT_CallbackError, user_arg: *mut c_void,
});

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::offset_of;

    #[test]
    fn kv_args_layout() {
        assert_eq!(offset_of!(PJRT_KeyValueGetCallback_Args, key), 16);
        assert_eq!(offset_of!(PJRT_KeyValueGetCallback_Args, key_size), 24);
        assert_eq!(offset_of!(PJRT_KeyValueGetCallback_Args, timeout_in_ms), 32);
        assert_eq!(offset_of!(PJRT_KeyValueGetCallback_Args, callback_error), 40);
        assert_eq!(offset_of!(PJRT_KeyValueGetCallback_Args, user_arg), 48);
        assert_eq!(offset_of!(PJRT_KeyValueGetCallback_Args, value), 56);
        assert_eq!(offset_of!(PJRT_KeyValueGetCallback_Args, value_size), 64);
        assert_eq!(PJRT_KeyValueGetCallback_Args::STRUCT_SIZE, 80);

        assert_eq!(offset_of!(PJRT_KeyValueTryGetCallback_Args, callback_error), 32);
        assert_eq!(offset_of!(PJRT_KeyValueTryGetCallback_Args, user_arg), 40);
        assert_eq!(offset_of!(PJRT_KeyValueTryGetCallback_Args, value), 48);
        assert_eq!(offset_of!(PJRT_KeyValueTryGetCallback_Args, value_size), 56);
        assert_eq!(PJRT_KeyValueTryGetCallback_Args::STRUCT_SIZE, 72);

        assert_eq!(offset_of!(PJRT_KeyValuePutCallback_Args, value), 32);
        assert_eq!(offset_of!(PJRT_KeyValuePutCallback_Args, value_size), 40);
        assert_eq!(offset_of!(PJRT_KeyValuePutCallback_Args, callback_error), 48);
        assert_eq!(PJRT_KeyValuePutCallback_Args::STRUCT_SIZE, 64);

        let args = PJRT_KeyValueGetCallback_Args::new();
        assert_eq!(args.struct_size, 80);
        assert!(args.value_deleter_callback.is_none());
    }
}
