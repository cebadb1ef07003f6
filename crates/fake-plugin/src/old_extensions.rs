//! Older forms of extensions (scenarios `old_extensions` and `hostile`)
//!
//! The chain lists three nodes whose `struct_size` tells a careful client which form they are:
//! an early Layouts node (32 bytes: one member at offset 24, a buffer-layout getter whose args are
//! not `PJRT_Layouts_MemoryLayout_Destroy`'s), a MemoryDescriptions version-0 node (40 bytes, the
//! size of version 1, whose describe function writes only the first 40 bytes of its args: there
//! is no `default_memory_index`) and an FFI version-1 node (32 bytes: `user_data_add` where
//! `type_register` sits later). Calls of the early Layouts and FFI functions are counted: a client
//! must never make them.

use std::ffi::{c_int, c_void};
use std::ptr::null_mut;
use std::sync::OnceLock;

use pjrt_client_sys::{self as sys, Args, PJRT_Error, PJRT_Error_Code};

use crate::calls::{checked_args, guarded, OK};
use crate::counters::{bump, COUNTERS};
use crate::devices::description_index;
use crate::errors::{invalid, new_error};
use crate::plugin::Immortal;

/// The early Layouts form: `{base, buffer_memory_layout}`.
#[repr(C)]
struct EarlyLayouts {
    base: sys::PJRT_Extension_Base,
    buffer_memory_layout: unsafe extern "C" fn(*mut EarlyBufferLayoutArgs) -> *mut PJRT_Error,
}

/// The args of the early Layouts form's only function (32 bytes).
#[repr(C)]
struct EarlyBufferLayoutArgs {
    struct_size: usize,
    extension_start: *mut sys::PJRT_Extension_Base,
    buffer: *mut sys::PJRT_Buffer,
    layout: *mut sys::PJRT_Layouts_MemoryLayout,
}

/// MemoryDescriptions version 0: the same members (and size) as version 1.
#[repr(C)]
struct MemoryDescriptionsV0 {
    base: sys::PJRT_Extension_Base,
    memory_descriptions: unsafe extern "C" fn(*mut MemoryDescriptionsV0Args) -> *mut PJRT_Error,
    kind: unsafe extern "C" fn(*mut sys::PJRT_MemoryDescription_Kind_Args) -> *mut PJRT_Error,
}

/// The version-0 describe args (40 bytes: no `default_memory_index`).
#[repr(C)]
struct MemoryDescriptionsV0Args {
    struct_size: usize,
    extension_start: *mut sys::PJRT_Extension_Base,
    device_description: *mut sys::PJRT_DeviceDescription,
    memory_descriptions: *const *const sys::PJRT_MemoryDescription,
    num_memory_descriptions: usize,
}

/// FFI version 1: `{base, user_data_add}`.
#[repr(C)]
struct FfiV1 {
    base: sys::PJRT_Extension_Base,
    user_data_add: unsafe extern "C" fn(*mut c_void) -> *mut PJRT_Error,
}

const _: () = {
    assert!(std::mem::size_of::<EarlyLayouts>() == 32);
    assert!(std::mem::size_of::<EarlyBufferLayoutArgs>() == 32);
    assert!(std::mem::size_of::<MemoryDescriptionsV0>() == 40);
    assert!(std::mem::size_of::<MemoryDescriptionsV0Args>() == 40);
    assert!(std::mem::size_of::<FfiV1>() == 32);
};

/// The object behind a `PJRT_MemoryDescription*` of the version-0 extension.
struct MemoryDescriptionObject {
    kind: &'static str,
    kind_id: c_int,
}

static MEMORY_DESCRIPTION_OBJECTS: [MemoryDescriptionObject; 2] = [
    MemoryDescriptionObject { kind: "device", kind_id: 0 },
    MemoryDescriptionObject { kind: "pinned_host", kind_id: 1 },
];

// SAFETY: repr(C), first field `struct_size: usize`, every field valid zeroed; the size is the
// whole struct (its last field ends it, no tail padding).
unsafe impl Args for EarlyBufferLayoutArgs {
    const STRUCT_SIZE: usize = std::mem::size_of::<Self>();
}

// SAFETY: as above.
unsafe impl Args for MemoryDescriptionsV0Args {
    const STRUCT_SIZE: usize = std::mem::size_of::<Self>();
}

unsafe extern "C" fn early_buffer_memory_layout(raw: *mut EarlyBufferLayoutArgs) -> *mut PJRT_Error {
    guarded("early Layouts buffer_memory_layout", || {
        bump(&COUNTERS.early_layouts_calls);
        // SAFETY: a client passes a struct at least 8 bytes long (or NULL), ours for the call.
        let args = match unsafe { checked_args(raw, "early layout args") } {
            Ok(args) => args,
            Err(error) => return error,
        };
        args.layout = null_mut();
        new_error(PJRT_Error_Code::UNIMPLEMENTED, "fake: the early Layouts form gives no layouts")
    })
}

unsafe extern "C" fn memory_descriptions_v0(raw: *mut MemoryDescriptionsV0Args) -> *mut PJRT_Error {
    guarded("MemoryDescriptions v0 describe", || {
        bump(&COUNTERS.memory_descriptions_v0_calls);
        // SAFETY: a client passes a struct at least 8 bytes long (or NULL), ours for the call;
        // `checked_args` makes sure it has the 40 version-0 bytes, the only ones touched.
        let args = match unsafe { checked_args(raw, "MemoryDescriptions args") } {
            Ok(args) => args,
            Err(error) => return error,
        };
        if let Err(error) = description_index(args.device_description) {
            return error;
        }
        static POINTERS: OnceLock<Immortal<Vec<*const sys::PJRT_MemoryDescription>>> = OnceLock::new();
        let pointers = &POINTERS
            .get_or_init(|| {
                Immortal(
                    MEMORY_DESCRIPTION_OBJECTS.iter().map(|m| (m as *const MemoryDescriptionObject).cast()).collect(),
                )
            })
            .0;
        args.memory_descriptions = pointers.as_ptr();
        args.num_memory_descriptions = pointers.len();
        OK
    })
}

unsafe extern "C" fn memory_description_kind_v0(raw: *mut sys::PJRT_MemoryDescription_Kind_Args) -> *mut PJRT_Error {
    guarded("MemoryDescriptions v0 kind", || {
        // SAFETY: the client passes a valid args struct that it does not touch during the call.
        let args = match unsafe { checked_args(raw, "PJRT_MemoryDescription_Kind_Args") } {
            Ok(args) => args,
            Err(error) => return error,
        };
        let Some(object) = MEMORY_DESCRIPTION_OBJECTS
            .iter()
            .find(|m| std::ptr::eq((*m as *const MemoryDescriptionObject).cast(), args.memory_description))
        else {
            return invalid("fake: not a memory description of this plugin");
        };
        args.kind = object.kind.as_ptr().cast();
        args.kind_size = object.kind.len();
        args.kind_id = object.kind_id;
        OK
    })
}

unsafe extern "C" fn ffi_v1_user_data_add(_args: *mut c_void) -> *mut PJRT_Error {
    guarded("FFI v1 user_data_add", || {
        bump(&COUNTERS.ffi_v1_calls);
        new_error(PJRT_Error_Code::UNIMPLEMENTED, "fake: FFI version 1 adds no user data")
    })
}

/// The chain of older-form extensions, built once and never freed: FFI v1, then
/// MemoryDescriptions v0, then the early Layouts form.
pub(crate) fn old_extensions() -> *mut sys::PJRT_Extension_Base {
    static CHAIN: OnceLock<usize> = OnceLock::new();
    let start = *CHAIN.get_or_init(|| {
        let layouts = Box::leak(Box::new(EarlyLayouts {
            base: sys::PJRT_Extension_Base {
                struct_size: std::mem::size_of::<EarlyLayouts>(),
                type_: sys::PJRT_Extension_Type::Layouts,
                next: null_mut(),
            },
            buffer_memory_layout: early_buffer_memory_layout,
        }));
        let descriptions = Box::leak(Box::new(MemoryDescriptionsV0 {
            base: sys::PJRT_Extension_Base {
                struct_size: std::mem::size_of::<MemoryDescriptionsV0>(),
                type_: sys::PJRT_Extension_Type::MemoryDescriptions,
                next: (layouts as *mut EarlyLayouts).cast(),
            },
            memory_descriptions: memory_descriptions_v0,
            kind: memory_description_kind_v0,
        }));
        let ffi = Box::leak(Box::new(FfiV1 {
            base: sys::PJRT_Extension_Base {
                struct_size: std::mem::size_of::<FfiV1>(),
                type_: sys::PJRT_Extension_Type::FFI,
                next: (descriptions as *mut MemoryDescriptionsV0).cast(),
            },
            user_data_add: ffi_v1_user_data_add,
        }));
        ffi as *mut FfiV1 as usize
    });
    start as *mut sys::PJRT_Extension_Base
}
