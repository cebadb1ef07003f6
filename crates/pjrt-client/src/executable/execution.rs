//! Launched executions: [`Execution`] (outputs and a completion event per device) and
//! [`PendingExecution`], both futures.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::buffer::Buffer;
use crate::error::{Error, Result};
use crate::event::Event;

/// What to do instead of waiting for an execution inside a plugin callback.
const AWAIT_INSTEAD: &str =
    "await the execution (it is a future), or register what comes next with Event::on_ready on its events";
/// What to do instead of waiting for a pending execution inside a plugin callback.
const AWAIT_PENDING_INSTEAD: &str = "await the pending execution (it is a future)";

/// The result of launching an execution: outputs and a completion event per device.
#[derive(Debug)]
pub struct Execution {
    /// `outputs[device][output]`.
    pub outputs: Vec<Vec<Buffer>>,
    /// One completion event per device (where the plugin returned them).
    pub events: Vec<Event>,
}

/// Awaiting an execution (as `(&mut execution).await`) waits for every device, keeping the
/// outputs in place; resolves to the first error.
impl Future for Execution {
    type Output = Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        let this = self.get_mut();
        while let Some(event) = this.events.first_mut() {
            match Pin::new(event).poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(status) => {
                    this.events.remove(0);
                    status?;
                }
            }
        }
        Poll::Ready(Ok(()))
    }
}

/// A single-device execution in flight: resolves to the outputs once the device has finished.
/// Made by [`crate::LoadedExecutable::execute_async`] and `execute_async_with`,
/// [`crate::LoadedExecutable::execute_on_async`] and `execute_on_async_with`, and, one per device,
/// by [`crate::LoadedExecutable::execute_sharded_async`].
#[derive(Debug)]
pub struct PendingExecution {
    pub(super) outputs: Option<Vec<Buffer>>,
    pub(super) event: Option<Event>,
}

impl PendingExecution {
    /// Blocks until the execution finished; returns the outputs.
    ///
    /// Refused inside a plugin callback unless the execution has finished
    /// ([`Error::BlockingInCallback`]; the execution goes on, its outputs are dropped): await
    /// it, or send it to a thread of your own to wait there.
    pub fn wait(mut self) -> Result<Vec<Buffer>> {
        if let Some(event) = &self.event {
            event.refuse_wait_in_callback("PendingExecution::wait", AWAIT_PENDING_INSTEAD)?;
        }
        let _span = span!(DEBUG, "execute_wait");
        if let Some(event) = self.event.take() {
            event.wait()?;
        }
        Ok(self.outputs.take().unwrap_or_default())
    }

    /// Like [`PendingExecution::wait`], with a bound ([`Error::Timeout`] when it runs out; the
    /// execution goes on and may be waited for again).
    /// Refused inside a plugin callback unless the execution has finished, like
    /// [`PendingExecution::wait`] (the execution stays here, to be waited for elsewhere).
    pub fn wait_timeout(&mut self, timeout: Duration) -> Result<Vec<Buffer>> {
        if let Some(event) = &self.event {
            event.refuse_wait_in_callback("PendingExecution::wait_timeout", AWAIT_PENDING_INSTEAD)?;
        }
        if let Some(event) = &self.event {
            event.wait_timeout(timeout)?;
        }
        self.event = None;
        Ok(self.outputs.take().unwrap_or_default())
    }
}

impl Future for PendingExecution {
    type Output = Result<Vec<Buffer>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if let Some(event) = this.event.as_mut() {
            match Pin::new(event).poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(status) => {
                    this.event = None;
                    status?;
                }
            }
        }
        Poll::Ready(Ok(this.outputs.take().unwrap_or_default()))
    }
}

impl Execution {
    /// Inside a plugin callback, refuses the wait `call` unless every device has completed.
    fn refuse_wait_in_callback(&self, call: &'static str) -> Result<()> {
        self.events.iter().try_for_each(|event| event.refuse_wait_in_callback(call, AWAIT_INSTEAD))
    }

    /// Waits for every device to finish; returns the first error. Refused inside a plugin
    /// callback unless every device has finished ([`Error::BlockingInCallback`]): await the
    /// execution, or register what comes next with [`Event::on_ready`] on its events.
    pub fn wait(&self) -> Result<()> {
        self.refuse_wait_in_callback("Execution::wait")?;
        let _span = span!(DEBUG, "execute_wait", devices = self.events.len());
        let mut first = Ok(());
        for event in &self.events {
            let status = event.wait();
            if first.is_ok() {
                first = status;
            }
        }
        first
    }

    /// Like [`Execution::wait`], but gives up once `timeout` has passed (for all devices
    /// together) with [`Error::Timeout`]. The execution goes on; waiting again is fine.
    /// Refused inside a plugin callback unless every device has finished, like
    /// [`Execution::wait`].
    pub fn wait_timeout(&self, timeout: Duration) -> Result<()> {
        self.refuse_wait_in_callback("Execution::wait_timeout")?;
        let start = Instant::now();
        let mut first = Ok(());
        for event in &self.events {
            let status = event.wait_timeout(timeout.saturating_sub(start.elapsed()));
            if let Err(Error::Timeout { .. }) = status {
                return Err(Error::Timeout { what: "waiting for an execution", after: timeout });
            }
            if first.is_ok() {
                first = status;
            }
        }
        first
    }
}
