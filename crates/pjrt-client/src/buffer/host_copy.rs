//! Device-to-host copies straight into memory the caller owns.

use std::ffi::c_void;

use crate::buffer::raw_layout::RawLayout;
use crate::buffer::Buffer;
use crate::buffer::DOWNLOAD_INSTEAD;
use crate::call::pjrt_call;
use crate::call::release::refuse_in_callback;
use crate::call::trace::span;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::sys::{self, Args};
use pjrt_types::normalize_pred;
use pjrt_types::{ElementType, NativeType};

impl Buffer {
    /// Copies the buffer's bytes (dense row-major) into `destination`, which must have
    /// exactly [`Buffer::host_size`] bytes, and waits for the copy.
    pub(crate) fn copy_to_host_into(&self, destination: &mut [u8]) -> Result<()> {
        // Refused before the copy starts: `destination` is borrowed only until we return.
        refuse_in_callback("Buffer::copy_to_slice", DOWNLOAD_INSTEAD)?;
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
        let _span = span!(DEBUG, "download", bytes = size);
        let client = self.client();
        // Row-major whatever the device layout: without a host layout the plugin copies in the
        // device's dimension order.
        let mut row_major = RawLayout::dense(self.dimensions()?.len());
        let mut args = sys::PJRT_Buffer_ToHostBuffer_Args::new();
        args.src = self.as_raw();
        args.host_layout = row_major.as_mut_ptr();
        args.dst = destination.as_mut_ptr() as *mut c_void;
        args.dst_size = size;
        pjrt_call!(client.api(), PJRT_Buffer_ToHostBuffer, &mut args)?;
        // `destination` is borrowed only until we return: wait until the plugin stopped writing,
        // even if waiting itself reports an error.
        match Event::from_raw(client.plugin(), Some(client), args.event) {
            Some(event) => event.wait_until_complete(),
            None => {
                // The C API gives the plugin the destination until the event it returns
                // completes; it returned none, so it cannot claim the memory past this call.
                // Still, wait for the buffer to be ready (a copy can only finish after that)
                // before refusing the result, which nothing says is complete.
                if let Ok(ready) = self.ready_event() {
                    let _ = ready.wait_until_complete();
                }
                Err(Error::invalid("PJRT_Buffer_ToHostBuffer returned no completion event"))
            }
        }
    }

    /// Copies the buffer's bytes, dense row-major, into `destination`, which must have exactly
    /// [`Buffer::host_size`] bytes (sub-byte types one element per byte), and waits for the
    /// copy: [`Buffer::copy_to_slice`] for memory of no particular alignment, such as a C
    /// caller's. PRED bytes are read as numpy does: nonzero comes back as 1.
    ///
    /// ```
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// let x = client.upload(&[1u16, 2, 3], &[3])?;
    /// let mut bytes = [0u8; 7];
    /// x.copy_to_bytes(&mut bytes[1..])?; // at an odd address
    /// assert_eq!(bytes, [0, 1, 0, 2, 0, 3, 0]);
    /// assert!(x.copy_to_bytes(&mut bytes[..5]).is_err(), "the size must be the buffer's");
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn copy_to_bytes(&self, destination: &mut [u8]) -> Result<()> {
        refuse_in_callback("Buffer::copy_to_bytes", DOWNLOAD_INSTEAD)?;
        self.copy_to_host_into(destination)?;
        if self.element_type()? == ElementType::PRED {
            normalize_pred(destination);
        }
        Ok(())
    }

    /// Copies the buffer into a typed slice of the buffer's element type. PRED bytes are read
    /// as numpy does (nonzero is `true`), through a byte copy: the plugin never writes into the
    /// `bool`s themselves.
    pub fn copy_to_slice<T: NativeType>(&self, destination: &mut [T]) -> Result<()> {
        refuse_in_callback("Buffer::copy_to_slice", DOWNLOAD_INSTEAD)?;
        let element_type = self.element_type()?;
        if element_type != T::ELEMENT_TYPE {
            return Err(Error::invalid(format!("the buffer holds {element_type}, not {}", T::ELEMENT_TYPE)));
        }
        if element_type == ElementType::PRED {
            let size = std::mem::size_of_val(destination);
            let mut bytes = vec![0u8; size];
            self.copy_to_host_into(&mut bytes)?;
            normalize_pred(&mut bytes);
            // SAFETY: `destination` has exactly `size` bytes; the bytes are 0 or 1, valid for
            // any `T: NativeType` of PRED (its contract).
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), destination.as_mut_ptr() as *mut u8, size) };
            return Ok(());
        }
        // SAFETY: `T: NativeType` is plain data that accepts every bit pattern of its size (PRED
        // was handled above); the byte view covers exactly the slice.
        let bytes = unsafe {
            std::slice::from_raw_parts_mut(destination.as_mut_ptr() as *mut u8, std::mem::size_of_val(destination))
        };
        self.copy_to_host_into(bytes)
    }
}
