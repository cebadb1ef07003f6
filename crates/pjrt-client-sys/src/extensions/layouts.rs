//! The Layouts extension (type 4; header extension version 4): memory layouts of buffers,
//! clients' and topologies' defaults, and executables' parameters and outputs.

#![allow(non_camel_case_types, non_snake_case, missing_docs)]

use std::ffi::c_char;

use super::ExtFn;
use crate::args::*;
use crate::buffer::*;
use crate::client::*;
use crate::executable::*;
use crate::topology::*;

opaque!(PJRT_Layouts_MemoryLayout, PJRT_Layouts_SerializedLayout);

pjrt_struct!(PJRT_Layouts_MemoryLayout_Destroy_Args {
    struct_size: usize, extension_start: Ext, layout: *mut PJRT_Layouts_MemoryLayout,
});
pjrt_struct!(PJRT_Layouts_MemoryLayout_Serialize_Args {
    struct_size: usize, extension_start: Ext, layout: *mut PJRT_Layouts_MemoryLayout,
    serialized_bytes: *const c_char, serialized_bytes_size: usize,
    serialized_layout: *mut PJRT_Layouts_SerializedLayout,
    serialized_layout_deleter: Option<unsafe extern "C" fn(s_layout: *mut PJRT_Layouts_SerializedLayout)>,
});
pjrt_struct!(PJRT_Layouts_PJRT_Buffer_MemoryLayout_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_Buffer, layout: *mut PJRT_Layouts_MemoryLayout,
});
pjrt_struct!(PJRT_Layouts_PJRT_Client_GetDefaultLayout_Args {
    struct_size: usize, extension_start: Ext, client: *mut PJRT_Client, type_: PJRT_Buffer_Type,
    dims: *const i64, num_dims: usize, layout: *mut PJRT_Layouts_MemoryLayout,
});
pjrt_struct!(PJRT_Layouts_PJRT_Topology_GetDefaultLayout_Args {
    struct_size: usize, extension_start: Ext, topology_description: *mut PJRT_TopologyDescription,
    type_: PJRT_Buffer_Type, dims: *const i64, num_dims: usize, layout: *mut PJRT_Layouts_MemoryLayout,
});
pjrt_struct!(PJRT_Layouts_PJRT_Executable_GetOutputLayouts_Args {
    struct_size: usize, extension_start: Ext, executable: *mut PJRT_Executable, num_outputs: usize,
    layouts: *mut *mut PJRT_Layouts_MemoryLayout,
});
pjrt_struct!(PJRT_Layouts_PJRT_Executable_GetParameterLayouts_Args {
    struct_size: usize, extension_start: Ext, executable: *mut PJRT_Executable, num_parameters: usize,
    layouts: *mut *mut PJRT_Layouts_MemoryLayout,
});

ext_struct!(
    /// `PJRT_Layouts_Extension`: memory layouts of buffers, clients' defaults and executables.
    ///
    /// The first four members came together with the extension (0.51; 56 bytes). A shorter node
    /// is not a form this crate can use: an early cut of the extension is reported to have had a
    /// single member at offset 24, a buffer-layout getter with other args than
    /// `PJRT_Layouts_MemoryLayout_Destroy`. Such a node is listed, but none of its members is
    /// used ([`Extension::OLDER_FORM`](crate::Extension::OLDER_FORM)).
    ///
    /// Since-minors: 0.51 for the first four (CHANGELOG); `Topology_GetDefaultLayout` is in no
    /// CHANGELOG entry, 0.75 is the API version of the first header known to list it;
    /// `GetOutputLayouts` 0.81 and `GetParameterLayouts` 0.93 (CHANGELOG).
    PJRT_Layouts_Extension = Layouts {
        PJRT_Layouts_MemoryLayout_Destroy: ExtFn<PJRT_Layouts_MemoryLayout_Destroy_Args> = since 51,
        PJRT_Layouts_MemoryLayout_Serialize: ExtFn<PJRT_Layouts_MemoryLayout_Serialize_Args> = since 51,
        PJRT_Layouts_PJRT_Client_GetDefaultLayout: ExtFn<PJRT_Layouts_PJRT_Client_GetDefaultLayout_Args> = since 51,
        PJRT_Layouts_PJRT_Buffer_MemoryLayout: ExtFn<PJRT_Layouts_PJRT_Buffer_MemoryLayout_Args> = since 51,
        PJRT_Layouts_PJRT_Topology_GetDefaultLayout: ExtFn<PJRT_Layouts_PJRT_Topology_GetDefaultLayout_Args> = since 75,
        PJRT_Layouts_PJRT_Executable_GetOutputLayouts: ExtFn<PJRT_Layouts_PJRT_Executable_GetOutputLayouts_Args> = since 81,
        PJRT_Layouts_PJRT_Executable_GetParameterLayouts: ExtFn<PJRT_Layouts_PJRT_Executable_GetParameterLayouts_Args> = since 93,
    }
);
