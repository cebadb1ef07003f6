//! Device-to-host copies straight into memory the caller owns.

use std::ffi::c_void;

use crate::api::pjrt_call;
use crate::buffer::Buffer;
use crate::element_type::NativeType;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::sys::{self, Args};

impl Buffer {
    /// Copies the buffer into `destination` (dense, row-major), which must be exactly
    /// [`Buffer::host_size`] bytes, and waits for the copy: no intermediate buffer.
    pub fn copy_to_host_into(&self, destination: &mut [u8]) -> Result<()> {
        let size = self.host_size()?;
        if destination.len() != size {
            return Err(Error::invalid(format!(
                "the destination has {} bytes but the buffer needs {size}",
                destination.len()
            )));
        }
        if size == 0 {
            return Ok(());
        }
        let client = self.client();
        let mut args = sys::PJRT_Buffer_ToHostBuffer_Args::new();
        args.src = self.as_raw();
        args.dst = destination.as_mut_ptr() as *mut c_void;
        args.dst_size = size;
        pjrt_call!(client.api(), PJRT_Buffer_ToHostBuffer, &mut args)?;
        // `destination` is borrowed only until we return: wait until the plugin stopped writing,
        // even if waiting itself reports an error.
        if let Some(event) = Event::from_raw(client.plugin(), Some(client), args.event) {
            event.wait_until_complete()?;
        }
        Ok(())
    }

    /// Copies the buffer into a typed slice of the buffer's element type.
    pub fn copy_to_slice<T: NativeType>(&self, destination: &mut [T]) -> Result<()> {
        let element_type = self.element_type()?;
        if element_type != T::ELEMENT_TYPE {
            return Err(Error::invalid(format!("the buffer holds {element_type}, not {}", T::ELEMENT_TYPE)));
        }
        // SAFETY: `T: NativeType` is plain data; every bit pattern the plugin writes for its
        // element type is a valid `T`, and the byte view covers exactly the slice.
        let bytes = unsafe {
            std::slice::from_raw_parts_mut(destination.as_mut_ptr() as *mut u8, std::mem::size_of_val(destination))
        };
        self.copy_to_host_into(bytes)
    }
}
