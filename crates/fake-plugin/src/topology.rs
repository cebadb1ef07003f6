//! Topologies: the client's own (owned by the client: never destroyed), and those made by name
//! or from bytes, which their caller destroys.

use std::ffi::{c_char, c_int};
use std::ptr::null_mut;
use std::sync::{Mutex, OnceLock};

use pjrt_client_sys::{self as sys, PJRT_Error};

use crate::calls::{lock, slot_fn, sys_bytes};
use crate::clients::{client, platform_name, PLATFORM_VERSION};
use crate::counters::{bump, COUNTERS};
use crate::devices::{description_ptr, DEVICES};
use crate::errors::invalid;
use crate::executables::{free_serialized, serialized, FakeSerialized};
use crate::faults::{injects, null_handle, set_string, shape_array, Fault};
use crate::plugin::{attributes, Immortal};

struct FakeTopology;
static TOPOLOGY: FakeTopology = FakeTopology;
/// The memory kind ids of the fake's memories ("device" 0, "pinned_host" 1).
static KIND_IDS: [c_int; 2] = [0, 1];

/// Addresses of the live topologies made by `Create` or `Deserialize` (each a boxed
/// `FakeTopology`, destroyed with `PJRT_TopologyDescription_Destroy`).
static OWNED_TOPOLOGIES: Mutex<Vec<usize>> = Mutex::new(Vec::new());

pub(crate) fn topology(ptr: *const sys::PJRT_TopologyDescription) -> Result<(), *mut PJRT_Error> {
    if std::ptr::eq(ptr.cast::<FakeTopology>(), &TOPOLOGY) || lock(&OWNED_TOPOLOGIES).contains(&(ptr as usize)) {
        Ok(())
    } else {
        Err(invalid("fake: not a topology of this plugin"))
    }
}

/// A new topology the caller owns (the same devices as the client's).
fn new_owned_topology() -> *mut sys::PJRT_TopologyDescription {
    let raw = Box::into_raw(Box::new(FakeTopology));
    lock(&OWNED_TOPOLOGIES).push(raw as usize);
    bump(&COUNTERS.topologies_created);
    raw.cast()
}

/// What `PJRT_TopologyDescription_Serialize` writes and `Deserialize` reads.
const SERIALIZED_TOPOLOGY: &[u8] = b"fake topology";

slot_fn!(PJRT_TopologyDescription_Create => fn topology_create(args: PJRT_TopologyDescription_Create_Args, fault) {
    // SAFETY: the client passes `topology_name_size` readable bytes.
    let name = unsafe { sys_bytes(args.topology_name, args.topology_name_size) };
    if name != platform_name().as_bytes() {
        return Err(invalid(format!("fake: no topology named {:?}", String::from_utf8_lossy(name))));
    }
    args.topology = null_handle(fault, new_owned_topology());
    if args.topology.is_null() {
        // Nobody else can free it: a real plugin would leak it, the fake takes it back.
        let raw = lock(&OWNED_TOPOLOGIES).pop().unwrap_or(0);
        // SAFETY: made just above and never handed out.
        drop(unsafe { Box::from_raw(raw as *mut FakeTopology) });
        bump(&COUNTERS.topologies_destroyed);
    }
    Ok(())
});

slot_fn!(PJRT_TopologyDescription_Deserialize => fn topology_deserialize(
    args: PJRT_TopologyDescription_Deserialize_Args, fault
) {
    // SAFETY: the client passes `serialized_topology_size` readable bytes.
    if unsafe { sys_bytes(args.serialized_topology, args.serialized_topology_size) } != SERIALIZED_TOPOLOGY {
        return Err(invalid("fake: not a serialized topology of this plugin"));
    }
    if injects(fault, Fault::NullOutput) {
        args.topology = null_mut();
        return Ok(());
    }
    args.topology = new_owned_topology();
    Ok(())
});

slot_fn!(PJRT_TopologyDescription_Destroy => fn topology_destroy(args: PJRT_TopologyDescription_Destroy_Args, fault) {
    let mut owned = lock(&OWNED_TOPOLOGIES);
    let Some(at) = owned.iter().position(|p| *p == args.topology as usize) else {
        return Err(invalid("fake: not a topology the caller owns"));
    };
    owned.swap_remove(at);
    // SAFETY: a topology this plugin made and handed out; removed from the live list above.
    drop(unsafe { Box::from_raw(args.topology.cast::<FakeTopology>()) });
    bump(&COUNTERS.topologies_destroyed);
    Ok(())
});

slot_fn!(PJRT_Client_TopologyDescription => fn client_topology(args: PJRT_Client_TopologyDescription_Args, fault) {
    client(args.client)?;
    args.topology = null_handle(fault, std::ptr::addr_of!(TOPOLOGY).cast_mut().cast());
    Ok(())
});

slot_fn!(PJRT_TopologyDescription_PlatformName => fn topology_platform_name(
    args: PJRT_TopologyDescription_PlatformName_Args, fault
) {
    topology(args.topology)?;
    set_string(fault, platform_name(), &mut args.platform_name, &mut args.platform_name_size);
    Ok(())
});

slot_fn!(PJRT_TopologyDescription_PlatformVersion => fn topology_platform_version(
    args: PJRT_TopologyDescription_PlatformVersion_Args, fault
) {
    topology(args.topology)?;
    set_string(fault, PLATFORM_VERSION, &mut args.platform_version, &mut args.platform_version_size);
    Ok(())
});

slot_fn!(PJRT_TopologyDescription_GetDeviceDescriptions => fn topology_device_descriptions(
    args: PJRT_TopologyDescription_GetDeviceDescriptions_Args, fault
) {
    topology(args.topology)?;
    static DESCRIPTIONS: OnceLock<Immortal<Vec<*mut sys::PJRT_DeviceDescription>>> = OnceLock::new();
    let descriptions = &DESCRIPTIONS.get_or_init(|| Immortal((0..DEVICES.len()).map(description_ptr).collect())).0;
    args.descriptions = descriptions.as_ptr();
    args.num_descriptions = descriptions.len();
    shape_array(fault, &mut args.descriptions, &mut args.num_descriptions);
    Ok(())
});

slot_fn!(PJRT_TopologyDescription_Attributes => fn topology_attributes(args: PJRT_TopologyDescription_Attributes_Args, fault) {
    topology(args.topology)?;
    let attributes = attributes();
    args.attributes = attributes.as_ptr();
    args.num_attributes = attributes.len();
    shape_array(fault, &mut args.attributes, &mut args.num_attributes);
    Ok(())
});

slot_fn!(PJRT_TopologyDescription_Fingerprint => fn topology_fingerprint(args: PJRT_TopologyDescription_Fingerprint_Args, fault) {
    topology(args.topology)?;
    args.fingerprint = 0xfa4e;
    Ok(())
});

slot_fn!(PJRT_TopologyDescription_Serialize => fn topology_serialize(args: PJRT_TopologyDescription_Serialize_Args, fault) {
    topology(args.topology)?;
    let (ptr, len, owner) = serialized(SERIALIZED_TOPOLOGY.to_vec());
    args.serialized_bytes = ptr;
    args.serialized_bytes_size = len;
    args.serialized_topology = owner.cast();
    args.serialized_topology_deleter = Some(free_serialized::<sys::PJRT_SerializedTopology>);
    shape_array(fault, &mut args.serialized_bytes, &mut args.serialized_bytes_size);
    Ok(())
});

slot_fn!(PJRT_TopologyDescription_GetMemorySpaceKindIds => fn topology_kind_ids(
    args: PJRT_TopologyDescription_GetMemorySpaceKindIds_Args, fault
) {
    topology(args.topology)?;
    args.memory_space_kind_ids = KIND_IDS.as_ptr();
    args.num_memory_space_kind_ids = KIND_IDS.len();
    shape_array(fault, &mut args.memory_space_kind_ids, &mut args.num_memory_space_kind_ids);
    Ok(())
});

/// Canonical shapes handed out, by the address of their bytes (the deleter gets only that).
static CANONICAL_SHAPES: Mutex<Vec<(usize, Box<FakeSerialized>)>> = Mutex::new(Vec::new());

unsafe extern "C" fn free_canonical_shape(bytes: *const c_char) {
    let mut shapes = lock(&CANONICAL_SHAPES);
    if let Some(at) = shapes.iter().position(|(p, _)| *p == bytes as usize) {
        shapes.swap_remove(at);
        bump(&COUNTERS.serialized_destroyed);
    }
}

slot_fn!(PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace => fn topology_canonical_shape(
    args: PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace_Args, fault
) {
    topology(args.topology)?;
    if !KIND_IDS.contains(&args.memory_space_kind_id) {
        return Err(invalid(format!("fake: no memory kind {}", args.memory_space_kind_id)));
    }
    // SAFETY: the client passes `num_dims` readable dimensions.
    let dims: &[i64] = if args.num_dims == 0 { &[] } else { unsafe { std::slice::from_raw_parts(args.dims, args.num_dims) } };
    if dims.iter().any(|d| !(0..128).contains(d)) || dims.len() > 100 {
        return Err(invalid("fake: canonical shapes only for small arrays"));
    }
    // xla.ShapeProto { element_type (2), dimensions (3, packed), layout (5) { minor_to_major (1, packed) } }.
    let mut bytes = vec![0x10, args.element_type.0 as u8, 0x1a, dims.len() as u8];
    bytes.extend(dims.iter().map(|d| *d as u8));
    let minor_to_major: Vec<u8> = (0..dims.len() as u8).rev().collect();
    bytes.extend([0x2a, minor_to_major.len() as u8 + 2, 0x0a, minor_to_major.len() as u8]);
    bytes.extend(minor_to_major);
    let owned = Box::new(FakeSerialized(bytes));
    args.serialized_shape = owned.0.as_ptr().cast();
    args.serialized_shape_size = owned.0.len();
    args.serialized_shape_deleter = Some(free_canonical_shape);
    lock(&CANONICAL_SHAPES).push((args.serialized_shape as usize, owned));
    bump(&COUNTERS.serialized_created);
    shape_array(fault, &mut args.serialized_shape, &mut args.serialized_shape_size);
    if args.serialized_shape.is_null() {
        // The client cannot free what it cannot name: free it here, as a real plugin would leak it.
        lock(&CANONICAL_SHAPES).pop();
        bump(&COUNTERS.serialized_destroyed);
    }
    Ok(())
});
