//! Clients: creation and destruction, DMA mappings, process info, and the client's device,
//! memory and device-assignment queries.

use std::ffi::c_int;
use std::ptr::null_mut;
use std::sync::atomic::Ordering;
use std::sync::Mutex;

use pjrt_client_sys::{self as sys, Args, PJRT_Error, PJRT_Error_Code};

use crate::calls::{handle, lock, slot_fn};
use crate::counters::{bump, COUNTERS};
use crate::devices::{device_ptr, tables, DEVICES};
use crate::errors::{invalid, new_error};
use crate::events::on_fake_thread;
use crate::faults::{injects, null_handle, set_string, shape_array, Fault};
use crate::scenarios::config;

/// A client: the devices and memories are shared statics, so only its life is tracked.
pub(crate) struct FakeClient {
    _marker: u64,
}

pub(crate) const PLATFORM_NAME: &str = "fake";
pub(crate) const PLATFORM_VERSION: &str = "fake 0.1";

/// The create options of the last `PJRT_Client_Create` call, one `name=type:value` line each
/// (read by the tests through [`fake_client_create_options`]).
static LAST_CREATE_OPTIONS: Mutex<String> = Mutex::new(String::new());

/// One create option as a `name=type:value` line: `string:TEXT`, `int64:N`, `int64_list:[A,B]`,
/// `float:X`, `bool:B`, or `type0x..:?` for a type the fake does not know.
fn describe_option(option: &sys::PJRT_NamedValue) -> String {
    /// `len` elements at `ptr`, or none for NULL.
    ///
    /// # Safety
    /// A non-NULL `ptr` must be readable for `len` elements.
    unsafe fn elements<'a, T>(ptr: *const T, len: usize) -> &'a [T] {
        if ptr.is_null() || len == 0 {
            &[]
        } else {
            // SAFETY: the caller's promise.
            unsafe { std::slice::from_raw_parts(ptr, len) }
        }
    }
    // SAFETY: the fake is a test double that trusts its one caller, the client library, which
    // passes options whose name and string/list pointers are valid for `name_size` /
    // `value_size` elements during the call, and whose union member is the one `type_` names.
    // The tests check what the fake saw.
    unsafe {
        let name = String::from_utf8_lossy(elements(option.name.cast::<u8>(), option.name_size));
        let value = match option.type_ {
            sys::PJRT_NamedValue_Type::String => format!(
                "string:{}",
                String::from_utf8_lossy(elements(option.value.string_value.cast::<u8>(), option.value_size))
            ),
            sys::PJRT_NamedValue_Type::Int64 => format!("int64:{}", option.value.int64_value),
            sys::PJRT_NamedValue_Type::Int64List => {
                format!("int64_list:{:?}", elements(option.value.int64_array_value, option.value_size)).replace(' ', "")
            }
            sys::PJRT_NamedValue_Type::Float => format!("float:{}", option.value.float_value),
            sys::PJRT_NamedValue_Type::Bool => format!("bool:{}", option.value.bool_value),
            other => format!("type{:#x}:?", other.0),
        };
        format!("{name}={value}")
    }
}

/// Copies the last `PJRT_Client_Create` call's options (see `describe_option`; one line each,
/// in the order given) into `buffer` (up to `capacity` bytes, not NUL-terminated) and returns
/// their full length in bytes, or -1 for a NULL buffer with a non-zero capacity.
///
/// # Safety
/// `buffer` must be NULL or writable for `capacity` bytes.
#[no_mangle]
pub unsafe extern "C" fn fake_client_create_options(buffer: *mut u8, capacity: usize) -> i64 {
    if buffer.is_null() && capacity != 0 {
        return -1;
    }
    let text = lock(&LAST_CREATE_OPTIONS).clone();
    let n = text.len().min(capacity);
    if n > 0 {
        // SAFETY: `buffer` is writable for `capacity >= n` bytes (the caller's promise), and
        // does not overlap our own string.
        unsafe { std::ptr::copy_nonoverlapping(text.as_ptr(), buffer, n) };
    }
    text.len() as i64
}

slot_fn!(PJRT_Client_Create => fn client_create(args: PJRT_Client_Create_Args, fault) {
    bump(&COUNTERS.client_create_calls);
    COUNTERS.client_create_options.fetch_add(args.num_options as i64, Ordering::SeqCst);
    let options = if args.create_options.is_null() || args.num_options == 0 {
        &[][..]
    } else {
        // SAFETY: the client library passes `num_options` options (see `describe_option`).
        unsafe { std::slice::from_raw_parts(args.create_options, args.num_options) }
    };
    *lock(&LAST_CREATE_OPTIONS) = options.iter().map(|o| describe_option(o) + "\n").collect();
    if config().client_create_error {
        return Err(invalid("fake: bad option"));
    }
    if injects(fault, Fault::NullOutput) {
        args.client = null_mut();
        return Ok(());
    }
    args.client = Box::into_raw(Box::new(FakeClient { _marker: 0 })).cast();
    bump(&COUNTERS.clients_created);
    Ok(())
});

slot_fn!(PJRT_Client_Destroy => fn client_destroy(args: PJRT_Client_Destroy_Args, fault) {
    if !args.client.is_null() {
        // SAFETY: a client this plugin created; the client library destroys it once.
        drop(unsafe { Box::from_raw(args.client.cast::<FakeClient>()) });
        bump(&COUNTERS.clients_destroyed);
        if on_fake_thread() {
            bump(&COUNTERS.clients_destroyed_on_fake_threads);
        }
    }
    Ok(())
});

pub(crate) fn client<'a>(ptr: *mut sys::PJRT_Client) -> Result<&'a FakeClient, *mut PJRT_Error> {
    // SAFETY: the client library passes clients this plugin created and has not destroyed.
    unsafe { handle::<FakeClient, _>(ptr, "client") }
}

/// Start addresses of the host ranges currently DMA-mapped (by any client of this copy).
static DMA_MAPPED: Mutex<Vec<usize>> = Mutex::new(Vec::new());

slot_fn!(PJRT_Client_DmaMap => fn client_dma_map(args: PJRT_Client_DmaMap_Args, fault) {
    client(args.client)?;
    if args.data.is_null() || args.size == 0 {
        return Err(invalid("fake: DmaMap needs a non-empty range"));
    }
    let mut mapped = lock(&DMA_MAPPED);
    if mapped.contains(&(args.data as usize)) {
        return Err(invalid("fake: the range is already mapped"));
    }
    mapped.push(args.data as usize);
    bump(&COUNTERS.dma_maps);
    Ok(())
});

slot_fn!(PJRT_Client_DmaUnmap => fn client_dma_unmap(args: PJRT_Client_DmaUnmap_Args, fault) {
    client(args.client)?;
    let mut mapped = lock(&DMA_MAPPED);
    let Some(at) = mapped.iter().position(|p| *p == args.data as usize) else {
        return Err(invalid("fake: DmaUnmap of a range that is not mapped"));
    };
    mapped.swap_remove(at);
    bump(&COUNTERS.dma_unmaps);
    Ok(())
});

slot_fn!(PJRT_Client_UpdateGlobalProcessInfo => fn client_update_global_process_info(
    args: PJRT_Client_UpdateGlobalProcessInfo_Args, fault
) {
    client(args.client)?;
    if args.num_process_infos > 0 {
        if args.process_infos.is_null() {
            return Err(invalid("fake: process_infos is NULL"));
        }
        // SAFETY: the client passes `num_process_infos` readable entries.
        let infos = unsafe { std::slice::from_raw_parts(args.process_infos, args.num_process_infos) };
        if let Some(info) = infos.iter().find(|i| i.struct_size < sys::PJRT_ProcessInfo::STRUCT_SIZE) {
            return Err(invalid(format!("fake: PJRT_ProcessInfo of size {}", info.struct_size)));
        }
    }
    bump(&COUNTERS.process_info_updates);
    Ok(())
});

slot_fn!(PJRT_Client_PlatformName => fn client_platform_name(args: PJRT_Client_PlatformName_Args, fault) {
    client(args.client)?;
    set_string(fault, config().client_platform, &mut args.platform_name, &mut args.platform_name_size);
    Ok(())
});

slot_fn!(PJRT_Client_PlatformVersion => fn client_platform_version(args: PJRT_Client_PlatformVersion_Args, fault) {
    client(args.client)?;
    set_string(fault, PLATFORM_VERSION, &mut args.platform_version, &mut args.platform_version_size);
    Ok(())
});

slot_fn!(PJRT_Client_ProcessIndex => fn client_process_index(args: PJRT_Client_ProcessIndex_Args, fault) {
    client(args.client)?;
    args.process_index = 0;
    Ok(())
});

slot_fn!(PJRT_Client_Devices => fn client_devices(args: PJRT_Client_Devices_Args, fault) {
    client(args.client)?;
    args.devices = tables().devices.as_ptr();
    args.num_devices = tables().devices.len();
    shape_array(fault, &mut args.devices, &mut args.num_devices);
    Ok(())
});

slot_fn!(PJRT_Client_AddressableDevices => fn client_addressable_devices(args: PJRT_Client_AddressableDevices_Args, fault) {
    client(args.client)?;
    args.addressable_devices = tables().devices.as_ptr();
    args.num_addressable_devices = tables().devices.len();
    shape_array(fault, &mut args.addressable_devices, &mut args.num_addressable_devices);
    Ok(())
});

slot_fn!(PJRT_Client_LookupDevice => fn client_lookup_device(args: PJRT_Client_LookupDevice_Args, fault) {
    client(args.client)?;
    let index = usize::try_from(args.id).ok().filter(|i| *i < DEVICES.len());
    let Some(index) = index else {
        return Err(new_error(PJRT_Error_Code::NOT_FOUND, format!("fake: no device with id {}", args.id)));
    };
    args.device = null_handle(fault, device_ptr(index));
    Ok(())
});

slot_fn!(PJRT_Client_LookupAddressableDevice => fn client_lookup_addressable_device(
    args: PJRT_Client_LookupAddressableDevice_Args, fault
) {
    client(args.client)?;
    let index = usize::try_from(args.local_hardware_id).ok().filter(|i| *i < DEVICES.len());
    let Some(index) = index else {
        return Err(new_error(PJRT_Error_Code::NOT_FOUND, "fake: no such local hardware id"));
    };
    args.addressable_device = null_handle(fault, device_ptr(index));
    Ok(())
});

slot_fn!(PJRT_Client_AddressableMemories => fn client_addressable_memories(args: PJRT_Client_AddressableMemories_Args, fault) {
    client(args.client)?;
    args.addressable_memories = tables().memories.as_ptr();
    args.num_addressable_memories = tables().memories.len();
    shape_array(fault, &mut args.addressable_memories, &mut args.num_addressable_memories);
    Ok(())
});

slot_fn!(PJRT_Client_DefaultDeviceAssignment => fn client_default_device_assignment(
    args: PJRT_Client_DefaultDeviceAssignment_Args, fault
) {
    client(args.client)?;
    let count = (args.num_replicas.max(0) as usize) * (args.num_partitions.max(0) as usize);
    if count == 0 || count > DEVICES.len() {
        return Err(invalid(format!("fake: cannot assign {count} devices (there are {})", DEVICES.len())));
    }
    if args.default_assignment.is_null() || args.default_assignment_size < count {
        return Err(invalid("fake: the assignment array is too small"));
    }
    for i in 0..count {
        // SAFETY: the caller passes an array of `default_assignment_size >= count` ints.
        unsafe { args.default_assignment.add(i).write(i as c_int) };
    }
    Ok(())
});
