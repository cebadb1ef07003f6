//! The MemoryDescriptions extension (type 6): the memory kinds a device description has.

#![allow(non_camel_case_types, non_snake_case, missing_docs)]

use std::ffi::{c_char, c_int};

use super::ExtFn;
use crate::args::*;
use crate::device::*;

opaque!(PJRT_MemoryDescription);

pjrt_struct!(
    /// Extension version 1 (0.61). Version 0 (0.59) had no `default_memory_index` (40 bytes) and
    /// the same struct size for the extension, so a version-0 plugin accepts these args but
    /// leaves `default_memory_index` as the caller set it. Version-1 plugins write `SIZE_MAX` for
    /// "no default".
    PJRT_DeviceDescription_MemoryDescriptions_Args {
        struct_size: usize, extension_start: Ext, device_description: *mut PJRT_DeviceDescription,
        memory_descriptions: *const *const PJRT_MemoryDescription, num_memory_descriptions: usize,
        default_memory_index: usize,
    }
);
pjrt_struct!(PJRT_MemoryDescription_Kind_Args {
    struct_size: usize, extension_start: Ext, memory_description: *const PJRT_MemoryDescription,
    kind: *const c_char, kind_size: usize, kind_id: c_int,
});

ext_struct!(
    /// `PJRT_MemoryDescriptions_Extension`: the memory kinds a device (description) has.
    PJRT_MemoryDescriptions_Extension = MemoryDescriptions {
        PJRT_DeviceDescription_MemoryDescriptions: ExtFn<PJRT_DeviceDescription_MemoryDescriptions_Args> = since 59,
        PJRT_MemoryDescription_Kind: ExtFn<PJRT_MemoryDescription_Kind_Args> = since 59,
    }
);
