//! A device-to-host copy in flight ([`HostTransfer`]): waited for, awaited, or waited for on drop
//! so that the plugin never writes into freed memory.

use std::fmt;

use crate::call::release::release_if_in_callback;
use crate::call::trace::span;
use crate::error::Result;
use crate::event::Event;

/// What to do instead of waiting for a transfer inside a plugin callback.
const TRANSFER_INSTEAD: &str =
    "await the transfer (it is a future), or take its bytes in an on_ready callback of its event";

/// A device-to-host copy in flight. It owns the destination until the copy completed; dropping
/// it waits for the copy, so the plugin never writes into freed memory.
pub struct HostTransfer {
    event: Option<Event>,
    data: Option<Vec<u8>>,
}

impl HostTransfer {
    /// A transfer that writes into `data` until `event` completes (`None`: already complete).
    pub(crate) fn new(event: Option<Event>, data: Vec<u8>) -> HostTransfer {
        HostTransfer { event, data: Some(data) }
    }

    /// How many bytes the transfer copies.
    pub fn len(&self) -> usize {
        self.data.as_ref().map_or(0, Vec::len)
    }

    /// Whether the transfer copies no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Waits for the copy and returns the bytes. When the wait fails and the copy cannot be seen
    /// to be over, the destination is leaked rather than freed (the plugin may still write it).
    ///
    /// Inside a plugin callback it is refused ([`Error::BlockingInCallback`](crate::Error::BlockingInCallback); the transfer is
    /// dropped, which waits elsewhere) unless the copy has completed: take the bytes in an
    /// [`Event::on_ready`] callback of [`HostTransfer::event`], or await the transfer.
    pub fn wait(mut self) -> Result<Vec<u8>> {
        let _span = span!(TRACE, "device_to_host_wait");
        if let Some(event) = &self.event {
            event.refuse_wait_in_callback("HostTransfer::wait", TRANSFER_INSTEAD)?;
        }
        if let Some(event) = self.event.take() {
            event.leak_if_in_use(event.wait_until_complete(), &mut self.data)?;
        }
        Ok(self.data.take().unwrap_or_default())
    }

    /// Like [`HostTransfer::wait`], but gives up after `timeout` with [`Error::Timeout`](crate::Error::Timeout). The
    /// plugin may then still write into the destination, so it is leaked rather than freed (this
    /// also happens when the wait fails and the copy cannot be seen to be over).
    /// Refused inside a plugin callback unless the copy has completed, like
    /// [`HostTransfer::wait`].
    pub fn wait_timeout(mut self, timeout: std::time::Duration) -> Result<Vec<u8>> {
        if let Some(event) = &self.event {
            event.refuse_wait_in_callback("HostTransfer::wait_timeout", TRANSFER_INSTEAD)?;
        }
        if let Some(event) = self.event.take() {
            event.leak_if_in_use(event.wait_timeout(timeout), &mut self.data)?;
        }
        Ok(self.data.take().unwrap_or_default())
    }

    /// The completion event, if the plugin returned one.
    pub fn event(&self) -> Option<&Event> {
        self.event.as_ref()
    }
}

/// Awaiting a transfer resolves to the copied bytes (see [`Event`]'s `Future`).
impl std::future::Future for HostTransfer {
    type Output = Result<Vec<u8>>;

    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Self::Output> {
        let this = self.get_mut();
        if let Some(event) = this.event.as_mut() {
            match std::pin::Pin::new(event).poll(cx) {
                std::task::Poll::Pending => return std::task::Poll::Pending,
                std::task::Poll::Ready(Err(e)) => {
                    // Keep the destination with the transfer: Drop waits before freeing it.
                    return std::task::Poll::Ready(Err(e));
                }
                std::task::Poll::Ready(Ok(())) => {
                    this.event = None;
                }
            }
        }
        std::task::Poll::Ready(Ok(this.data.take().unwrap_or_default()))
    }
}

impl fmt::Debug for HostTransfer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostTransfer").field("bytes", &self.data.as_ref().map(Vec::len)).finish()
    }
}

impl Drop for HostTransfer {
    fn drop(&mut self) {
        // Waiting for the copy inside a plugin callback could wait for this very thread.
        release_if_in_callback!(HostTransfer { event: self.event.take(), data: self.data.take() });
        if let Some(event) = self.event.take() {
            // A failed copy no longer touches `data`, but one that cannot be seen to be over may.
            let _ = event.leak_if_in_use(event.wait_until_complete(), &mut self.data);
        }
    }
}
