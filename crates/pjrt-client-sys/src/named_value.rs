//! Named values: the (name, typed value) pairs of plugin, device and topology attributes, client
//! and topology create options, and error payloads ([`PJRT_NamedValue`]).

#![allow(non_camel_case_types, non_snake_case, missing_docs)]

use std::ffi::c_char;

use super::args::*;

c_enum!(
    /// `PJRT_NamedValue_Type`.
    PJRT_NamedValue_Type { String = 0, Int64 = 1, Int64List = 2, Float = 3, Bool = 4 }
);

/// The value union of `PJRT_NamedValue`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union PJRT_NamedValue_Value {
    pub string_value: *const c_char,
    pub int64_value: i64,
    pub int64_array_value: *const i64,
    pub float_value: f32,
    pub bool_value: bool,
}

impl std::fmt::Debug for PJRT_NamedValue_Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PJRT_NamedValue_Value")
    }
}

pjrt_struct!(PJRT_NamedValue {
    struct_size: usize, extension_start: Ext, name: *const c_char, name_size: usize,
    type_: PJRT_NamedValue_Type, value: PJRT_NamedValue_Value, value_size: usize,
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_value_layout() {
        assert_eq!(PJRT_NamedValue::STRUCT_SIZE, 56);
        assert_eq!(std::mem::offset_of!(PJRT_NamedValue, type_), 32);
        assert_eq!(std::mem::offset_of!(PJRT_NamedValue, value), 40);
        assert_eq!(std::mem::offset_of!(PJRT_NamedValue, value_size), 48);
    }
}
