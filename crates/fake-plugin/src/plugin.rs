//! The plugin: `PJRT_Plugin_Initialize` and `PJRT_Plugin_Attributes`, with the named-value and
//! immortal-data helpers that other attribute lists share.

use std::ffi::CStr;
use std::sync::OnceLock;

use pjrt_client_sys::{self as sys, Args, PJRT_Error_Code};

use crate::calls::slot_fn;
use crate::counters::{bump, COUNTERS};
use crate::errors::new_error;
use crate::faults::shape_array;
use crate::scenarios::config;

slot_fn!(PJRT_Plugin_Initialize => fn plugin_initialize(_args: PJRT_Plugin_Initialize_Args, fault) {
    bump(&COUNTERS.initialize_calls);
    match &config().initialize_error {
        Some(message) => Err(new_error(PJRT_Error_Code::INTERNAL, message.clone())),
        None => Ok(()),
    }
});

/// A `Sync` wrapper for data that holds raw pointers to immutable, immortal memory.
pub(crate) struct Immortal<T>(pub(crate) T);
// SAFETY: only used for data that is never mutated after construction and lives forever.
unsafe impl<T> Send for Immortal<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Immortal<T> {}

pub(crate) fn int64_attribute(name: &'static CStr, value: i64) -> sys::PJRT_NamedValue {
    let mut v = sys::PJRT_NamedValue::new();
    v.name = name.as_ptr();
    v.name_size = name.to_bytes().len();
    v.type_ = sys::PJRT_NamedValue_Type::Int64;
    v.value.int64_value = value;
    v.value_size = 1;
    v
}

/// The attribute array: built once, never freed (it lives as long as the plugin).
pub(crate) fn attributes() -> &'static [sys::PJRT_NamedValue] {
    static ATTRIBUTES: OnceLock<Immortal<Vec<sys::PJRT_NamedValue>>> = OnceLock::new();
    &ATTRIBUTES
        .get_or_init(|| {
            let version = int64_attribute(c"xla_version", 7);
            let scenario_name: &'static str = config().name.as_str();
            let mut scenario = sys::PJRT_NamedValue::new();
            scenario.name = c"fake_scenario".as_ptr();
            scenario.name_size = "fake_scenario".len();
            scenario.type_ = sys::PJRT_NamedValue_Type::String;
            scenario.value.string_value = scenario_name.as_ptr().cast();
            scenario.value_size = scenario_name.len();
            Immortal(vec![version, scenario])
        })
        .0
}

slot_fn!(PJRT_Plugin_Attributes => fn plugin_attributes(args: PJRT_Plugin_Attributes_Args, fault) {
    let attributes = attributes();
    args.attributes = attributes.as_ptr();
    args.num_attributes = attributes.len();
    shape_array(fault, &mut args.attributes, &mut args.num_attributes);
    Ok(())
});
