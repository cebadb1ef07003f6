//! The RawBuffer extension (type 8; experimental; header extension version 2): raw aliases of
//! buffers for byte-level device transfers.

#![allow(non_camel_case_types, non_snake_case, missing_docs)]

use std::ffi::c_void;

use super::ExtFn;
use crate::args::*;
use crate::buffer::*;
use crate::device::*;
use crate::event::*;

opaque!(PJRT_RawBuffer);

pjrt_struct!(PJRT_RawBuffer_CreateRawAliasOfBuffer_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_Buffer, raw_buffer: *mut PJRT_RawBuffer,
});
pjrt_struct!(PJRT_RawBuffer_Destroy_Args { struct_size: usize, extension_start: Ext, buffer: *mut PJRT_RawBuffer });
pjrt_struct!(PJRT_RawBuffer_GetHostPointer_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_RawBuffer, host_pointer: *mut c_void,
});
pjrt_struct!(PJRT_RawBuffer_GetOnDeviceSizeInBytes_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_RawBuffer, on_device_size_in_bytes: usize,
});
pjrt_struct!(PJRT_RawBuffer_GetMemorySpace_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_RawBuffer, memory_space: *mut PJRT_Memory,
});
pjrt_struct!(PJRT_RawBuffer_CopyRawDeviceToHost_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_RawBuffer, dst: *mut c_void, offset: i64,
    transfer_size: i64, event: *mut PJRT_Event,
});
pjrt_struct!(PJRT_RawBuffer_CopyRawHostToDevice_Args {
    struct_size: usize, extension_start: Ext, buffer: *mut PJRT_RawBuffer, src: *const c_void, offset: i64,
    transfer_size: i64, event: *mut PJRT_Event,
});

ext_struct!(
    /// `PJRT_RawBuffer_Extension`: raw aliases of buffers for byte-level device transfers.
    PJRT_RawBuffer_Extension = RawBuffer {
        PJRT_RawBuffer_CreateRawAliasOfBuffer: ExtFn<PJRT_RawBuffer_CreateRawAliasOfBuffer_Args> = since 81,
        PJRT_RawBuffer_Destroy: ExtFn<PJRT_RawBuffer_Destroy_Args> = since 81,
        PJRT_RawBuffer_GetOnDeviceSizeInBytes: ExtFn<PJRT_RawBuffer_GetOnDeviceSizeInBytes_Args> = since 81,
        PJRT_RawBuffer_GetMemorySpace: ExtFn<PJRT_RawBuffer_GetMemorySpace_Args> = since 81,
        PJRT_RawBuffer_CopyRawHostToDevice: ExtFn<PJRT_RawBuffer_CopyRawHostToDevice_Args> = since 81,
        PJRT_RawBuffer_CopyRawDeviceToHost: ExtFn<PJRT_RawBuffer_CopyRawDeviceToHost_Args> = since 81,
        PJRT_RawBuffer_GetHostPointer: ExtFn<PJRT_RawBuffer_GetHostPointer_Args> = since 81,
    }
);
