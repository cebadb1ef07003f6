//! Topologies: the `PJRT_TopologyDescription` handle (a client's, or one created without devices
//! for ahead-of-time compilation), its platform, device descriptions, attributes and fingerprint,
//! its (de)serialization, and the shapes its memory spaces store (0.109, 0.110).

#![allow(non_camel_case_types, non_snake_case, missing_docs)]

use std::ffi::{c_char, c_int};

use super::args::*;
use super::buffer::*;
use super::client::*;
use super::device::*;
use super::named_value::*;

opaque!(PJRT_TopologyDescription, PJRT_SerializedTopology);

pub type PJRT_SerializedTopologyDeleter = Option<unsafe extern "C" fn(topology: *mut PJRT_SerializedTopology)>;
pjrt_struct!(PJRT_Client_TopologyDescription_Args {
    struct_size: usize, extension_start: Ext, client: *mut PJRT_Client, topology: *mut PJRT_TopologyDescription,
});
pjrt_struct!(PJRT_TopologyDescription_Create_Args {
    struct_size: usize, extension_start: Ext, topology_name: *const c_char, topology_name_size: usize,
    create_options: *const PJRT_NamedValue, num_options: usize, topology: *mut PJRT_TopologyDescription,
});
pjrt_struct!(PJRT_TopologyDescription_Destroy_Args {
    struct_size: usize, extension_start: Ext, topology: *mut PJRT_TopologyDescription,
});
pjrt_struct!(PJRT_TopologyDescription_PlatformName_Args {
    struct_size: usize, extension_start: Ext, topology: *const PJRT_TopologyDescription,
    platform_name: *const c_char, platform_name_size: usize,
});
pjrt_struct!(PJRT_TopologyDescription_PlatformVersion_Args {
    struct_size: usize, extension_start: Ext, topology: *const PJRT_TopologyDescription,
    platform_version: *const c_char, platform_version_size: usize,
});
pjrt_struct!(PJRT_TopologyDescription_GetDeviceDescriptions_Args {
    struct_size: usize, extension_start: Ext, topology: *const PJRT_TopologyDescription,
    descriptions: *const *mut PJRT_DeviceDescription, num_descriptions: usize,
});
pjrt_struct!(PJRT_TopologyDescription_Serialize_Args {
    struct_size: usize, extension_start: Ext, topology: *mut PJRT_TopologyDescription,
    serialized_bytes: *const c_char, serialized_bytes_size: usize,
    serialized_topology: *mut PJRT_SerializedTopology, serialized_topology_deleter: PJRT_SerializedTopologyDeleter,
});
pjrt_struct!(PJRT_TopologyDescription_Attributes_Args {
    struct_size: usize, extension_start: Ext, topology: *mut PJRT_TopologyDescription,
    attributes: *const PJRT_NamedValue, num_attributes: usize,
});
pjrt_struct!(PJRT_TopologyDescription_Deserialize_Args {
    struct_size: usize, extension_start: Ext, serialized_topology: *const c_char, serialized_topology_size: usize,
    topology: *mut PJRT_TopologyDescription,
});
pjrt_struct!(PJRT_TopologyDescription_Fingerprint_Args {
    struct_size: usize, extension_start: Ext, topology: *const PJRT_TopologyDescription, fingerprint: u64,
});
pjrt_struct!(PJRT_TopologyDescription_GetMemorySpaceKindIds_Args {
    struct_size: usize, extension_start: Ext, topology: *const PJRT_TopologyDescription,
    memory_space_kind_ids: *const c_int, num_memory_space_kind_ids: usize,
});

// ---- canonical shapes (0.109) ----

/// Frees `serialized_shape`; call it once.
pub type PJRT_SerializedShapeDeleter = Option<unsafe extern "C" fn(shape: *const c_char)>;
// The shape a memory space would store `dims`/`element_type` (optional `layout`) as; the output is
// a serialized `xla.ShapeProto`.
pjrt_struct!(PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace_Args {
    struct_size: usize, extension_start: Ext, topology: *const PJRT_TopologyDescription, memory_space_kind_id: c_int,
    dims: *const i64, num_dims: usize, element_type: PJRT_Buffer_Type, layout: *const PJRT_Buffer_MemoryLayout,
    serialized_shape: *const c_char, serialized_shape_size: usize, serialized_shape_deleter: PJRT_SerializedShapeDeleter,
});

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::offset_of;

    #[test]
    fn topology_struct_sizes() {
        let expected: &[(usize, usize, &str)] = &[
            (PJRT_Client_TopologyDescription_Args::STRUCT_SIZE, 32, "Client_TopologyDescription"),
            (PJRT_TopologyDescription_Create_Args::STRUCT_SIZE, 56, "TopologyDescription_Create"),
            (PJRT_TopologyDescription_Destroy_Args::STRUCT_SIZE, 24, "TopologyDescription_Destroy"),
            (PJRT_TopologyDescription_PlatformName_Args::STRUCT_SIZE, 40, "TopologyDescription_PlatformName"),
            (PJRT_TopologyDescription_PlatformVersion_Args::STRUCT_SIZE, 40, "TopologyDescription_PlatformVersion"),
            (PJRT_TopologyDescription_GetDeviceDescriptions_Args::STRUCT_SIZE, 40, "GetDeviceDescriptions"),
            (PJRT_TopologyDescription_Serialize_Args::STRUCT_SIZE, 56, "TopologyDescription_Serialize"),
            (PJRT_TopologyDescription_Attributes_Args::STRUCT_SIZE, 40, "TopologyDescription_Attributes"),
            (PJRT_TopologyDescription_Deserialize_Args::STRUCT_SIZE, 40, "TopologyDescription_Deserialize"),
            (PJRT_TopologyDescription_Fingerprint_Args::STRUCT_SIZE, 32, "TopologyDescription_Fingerprint"),
            (PJRT_TopologyDescription_GetMemorySpaceKindIds_Args::STRUCT_SIZE, 40, "GetMemorySpaceKindIds"),
        ];
        for (ours, theirs, name) in expected {
            assert_eq!(ours, theirs, "{name}");
        }
    }

    #[test]
    fn canonical_shape_layout() {
        type Canonical = PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace_Args;
        assert_eq!(offset_of!(Canonical, memory_space_kind_id), 24);
        assert_eq!(offset_of!(Canonical, dims), 32);
        assert_eq!(offset_of!(Canonical, element_type), 48);
        assert_eq!(offset_of!(Canonical, layout), 56);
        assert_eq!(offset_of!(Canonical, serialized_shape), 64);
        assert_eq!(Canonical::STRUCT_SIZE, 88);
    }
}
