//! The Profiler extension (`PJRT_Profiler_Extension`): raw access to the plugin's profiler table.

use crate::extensions::{field_type, ProfilerExtension};
use crate::sys::{self};

impl<'p> ProfilerExtension<'p> {
    /// The plugin's profiler table (`PLUGIN_Profiler_Api`, not declared by this crate), if the
    /// plugin's struct contains it and it is not NULL.
    pub fn profiler_api(&self) -> Option<*mut sys::PLUGIN_Profiler_Api> {
        type P = sys::PJRT_Profiler_Extension;
        const OFFSET: usize = std::mem::offset_of!(P, profiler_api);
        let api = self.read_member(OFFSET, field_type::<P, _>(|e| &e.profiler_api)).ok()?;
        (!api.is_null()).then_some(api)
    }
}
