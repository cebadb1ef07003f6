//! The Stream extension (type 3): platform streams for externally managed buffers (GPU).

#![allow(non_camel_case_types, non_snake_case, missing_docs)]

use super::ExtFn;
use crate::buffer::*;
use crate::device::*;

pjrt_struct!(
    /// Note: no `extension_start`.
    PJRT_Get_Stream_For_External_Ready_Events_Args {
        struct_size: usize, device: *mut PJRT_Device, stream: isize,
    }
);
pjrt_struct!(
    /// Note: no `extension_start`.
    PJRT_Wait_Until_Buffer_Ready_On_Stream_Args {
        struct_size: usize, stream: isize, buffer: *mut PJRT_Buffer,
    }
);

ext_struct!(
    /// `PJRT_Stream_Extension`: platform streams for externally managed buffers (GPU).
    PJRT_Stream_Extension = Stream {
        get_stream: ExtFn<PJRT_Get_Stream_For_External_Ready_Events_Args> = since 49,
        wait_stream: ExtFn<PJRT_Wait_Until_Buffer_Ready_On_Stream_Args> = since 49,
    }
);
