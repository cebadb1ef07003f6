//! Launched executions in flight: [`PendingExecution`] (one device) and
//! [`PendingShardedExecution`] (every device of the executable), both futures.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::buffer::Buffer;
use crate::call::trace::span;
use crate::error::{Error, Result};
use crate::event::Event;

/// What to do instead of waiting for an execution inside a plugin callback.
const AWAIT_INSTEAD: &str =
    "await the execution (it is a future), or register what comes next with Event::on_ready on its events";
/// What to do instead of waiting for a pending execution inside a plugin callback.
const AWAIT_PENDING_INSTEAD: &str = "await the pending execution (it is a future)";

/// A single-device execution in flight: resolves to the outputs once the device has finished.
/// Made by [`crate::LoadedExecutable::execute_async`], and one per device by
/// [`PendingShardedExecution::into_per_device`].
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

    /// Takes the output buffers now, before the execution has finished: they are not computed
    /// yet, but may be passed to later launches at once (the plugin orders those after this
    /// one) or downloaded (which waits for them). The pending execution still says when the
    /// device has finished, and then resolves to no outputs.
    ///
    /// ```
    /// use pjrt_client::{CompileOptions, ExecuteOptions, Program};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// let program = Program::mlir_text(r#"
    ///   func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
    ///     %0 = stablehlo.add %a, %a : tensor<2xf32>
    ///     return %0 : tensor<2xf32>
    ///   }"#)?;
    /// let exe = client.compile(&program, &CompileOptions::new())?;
    /// let mut current = client.upload(&[1f32, 2.], &[2])?;
    /// let mut in_flight = Vec::new();
    /// for _ in 0..3 {
    ///     // Chained without waiting: each launch takes the previous one's (future) output.
    ///     let mut pending = exe.execute_async(&[&current], &ExecuteOptions::new())?;
    ///     current = pending.take_outputs().remove(0);
    ///     in_flight.push(pending);
    /// }
    /// for pending in in_flight {
    ///     assert!(pending.wait()?.is_empty(), "the outputs were taken");
    /// }
    /// assert_eq!(current.to_vec::<f32>()?, [8., 16.]);
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn take_outputs(&mut self) -> Vec<Buffer> {
        self.outputs.take().unwrap_or_default()
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

/// An execution on every device of the executable in flight: resolves to the outputs per device
/// (`outputs[device][output]`, in the order of
/// [`crate::LoadedExecutable::addressable_devices`]) once every device has finished. Made by
/// [`crate::LoadedExecutable::execute_sharded_async`].
///
/// Await it, [`wait`](Self::wait) for it, or take it apart into one [`PendingExecution`] per
/// device ([`into_per_device`](Self::into_per_device)) to take results device by device.
pub struct PendingShardedExecution {
    pub(super) outputs: Option<Vec<Vec<Buffer>>>,
    /// One completion event per device, where the plugin returned one.
    pub(super) events: Vec<Option<Event>>,
}

impl PendingShardedExecution {
    /// Inside a plugin callback, refuses the wait `call` unless every device has completed.
    fn refuse_wait_in_callback(&self, call: &'static str) -> Result<()> {
        self.events.iter().flatten().try_for_each(|event| event.refuse_wait_in_callback(call, AWAIT_INSTEAD))
    }

    /// Blocks until every device has finished; returns the outputs per device, or the first
    /// error. Refused inside a plugin callback unless every device has finished
    /// ([`Error::BlockingInCallback`]): await the execution, or register what comes next with
    /// [`Event::on_ready`] on its [`events`](Self::events).
    pub fn wait(mut self) -> Result<Vec<Vec<Buffer>>> {
        self.refuse_wait_in_callback("PendingShardedExecution::wait")?;
        let _span = span!(DEBUG, "execute_wait", devices = self.events.len());
        let mut first = Ok(());
        for event in self.events.iter().flatten() {
            let status = event.wait();
            if first.is_ok() {
                first = status;
            }
        }
        first?;
        Ok(self.outputs.take().unwrap_or_default())
    }

    /// Like [`PendingShardedExecution::wait`], but gives up once `timeout` has passed (for all
    /// devices together) with [`Error::Timeout`]. The execution goes on; waiting again is fine.
    pub fn wait_timeout(&mut self, timeout: Duration) -> Result<Vec<Vec<Buffer>>> {
        self.refuse_wait_in_callback("PendingShardedExecution::wait_timeout")?;
        let start = Instant::now();
        for event in self.events.iter().flatten() {
            if let Err(Error::Timeout { .. }) = event.wait_timeout(timeout.saturating_sub(start.elapsed())) {
                return Err(Error::Timeout { what: "waiting for an execution", after: timeout });
            }
        }
        let mut first = Ok(());
        for event in self.events.drain(..).flatten() {
            let status = event.error();
            if first.is_ok() {
                first = status;
            }
        }
        first?;
        Ok(self.outputs.take().unwrap_or_default())
    }

    /// The completion event of each device that has one (the plugin may return none for a
    /// device), e.g. to register what comes next with [`Event::on_ready`].
    pub fn events(&self) -> impl Iterator<Item = &Event> {
        self.events.iter().flatten()
    }

    /// Takes the output buffers of every device now (`outputs[device][output]`), before the
    /// execution has finished: see [`PendingExecution::take_outputs`]. The pending execution
    /// then resolves to no outputs.
    pub fn take_outputs(&mut self) -> Vec<Vec<Buffer>> {
        self.outputs.take().unwrap_or_default()
    }

    /// One [`PendingExecution`] per device, in the order of
    /// [`crate::LoadedExecutable::addressable_devices`]: each resolves to its device's outputs
    /// once that device has finished.
    pub fn into_per_device(mut self) -> Vec<PendingExecution> {
        let outputs = self.outputs.take().unwrap_or_default();
        let events = std::mem::take(&mut self.events);
        outputs
            .into_iter()
            .zip(events.into_iter().chain(std::iter::repeat_with(|| None)))
            .map(|(outputs, event)| PendingExecution { outputs: Some(outputs), event })
            .collect()
    }
}

/// Awaiting it waits for every device in turn; resolves to the outputs per device, or the first
/// error.
impl Future for PendingShardedExecution {
    type Output = Result<Vec<Vec<Buffer>>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        while let Some(slot) = this.events.first_mut() {
            if let Some(event) = slot.as_mut() {
                match Pin::new(event).poll(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(status) => {
                        this.events.remove(0);
                        status?;
                    }
                }
            } else {
                this.events.remove(0);
            }
        }
        Poll::Ready(Ok(this.outputs.take().unwrap_or_default()))
    }
}

impl fmt::Debug for PendingShardedExecution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingShardedExecution")
            .field("outputs", &self.outputs)
            .field("events", &self.events.iter().flatten().count())
            .finish()
    }
}
