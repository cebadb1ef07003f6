//! Device-to-host copies straight into memory the caller owns.

use std::ffi::c_void;

use crate::buffer::layout::RawLayout;
use crate::buffer::DOWNLOAD_INSTEAD;
use crate::buffer::{check_destination, Buffer};
use crate::call::pjrt_call;
use crate::call::release::refuse_in_callback;
use crate::element_type::normalize_pred;
use crate::element_type::{ElementType, NativeType};
use crate::error::{Error, Result};
use crate::event::Event;
use crate::sys::{self, Args};

impl Buffer {
    /// XLA's `LazyToLiteral`: waits (asynchronously) until the buffer is ready, only then asks
    /// `destination` for host memory of the size it is given ([`Buffer::host_size`] bytes,
    /// dense row-major), and copies into it. Memory for the result is thus not held while the
    /// computation that produces the buffer still runs. A destination of another size is refused
    /// (`Error::InvalidArgument`), as for [`Buffer::copy_to_host_async`].
    ///
    /// ```
    /// use futures::executor::block_on;
    /// use pjrt_client::Placement;
    /// # let plugin = pjrt_client::Plugin::load(pjrt_client::locate::resolve_or_install(None, |_| ())?.path)?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// let x = client.buffer_from_slice(&[1f32, 2., 3.], &[3], Placement::Default)?;
    /// let bytes = block_on(x.copy_to_host_lazy(|size| vec![0u8; size]))?;
    /// assert_eq!(bytes, [1f32, 2., 3.].iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<u8>>());
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub async fn copy_to_host_lazy<F>(&self, destination: F) -> Result<Vec<u8>>
    where
        F: FnOnce(usize) -> Vec<u8>,
    {
        self.ready_event()?.await?;
        let layout = self.row_major()?;
        let size = self.host_size_in(&layout)?;
        let destination = destination(size);
        check_destination(destination.len(), size, &layout)?;
        self.start_host_copy(destination, &layout)?.await
    }

    /// Copies the buffer into `destination` (dense, row-major), which must be exactly
    /// [`Buffer::host_size`] bytes, and waits for the copy: no intermediate buffer.
    pub fn copy_to_host_into(&self, destination: &mut [u8]) -> Result<()> {
        // Refused before the copy starts: `destination` is borrowed only until we return.
        refuse_in_callback("Buffer::copy_to_host_into", DOWNLOAD_INSTEAD)?;
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
