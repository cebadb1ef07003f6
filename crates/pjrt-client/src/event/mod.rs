//! Events: completion of asynchronous work (transfers, executions).

pub(crate) mod user_event;

use std::ffi::c_void;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crate::call::release::{blocking_in_callback, in_plugin_callback};
use crate::call::{pjrt_call, Api};
use crate::client::Client;
use crate::error::{Error, Result};
use crate::plugin::Plugin;
use crate::sys::{self, Args};

/// What to do instead of waiting for an event inside a plugin callback.
const NOT_IN_CALLBACK: &str = "register what comes next with Event::on_ready, or await the event (it is a future)";

/// A PJRT event. Dropping it destroys the event (the work it tracks goes on).
///
/// `Send + Sync`: events may be awaited, queried or given callbacks from any thread.
///
/// An event is a future (any executor; the plugin wakes it), or can be waited on directly:
///
/// ```
/// use std::time::Duration;
/// use futures::executor::block_on;
/// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
/// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
/// let x = client.upload(&[1f32; 1024], &[1024])?;
/// // Ready when the upload has landed on the device.
/// x.ready_event()?.wait_timeout(Duration::from_secs(60))?;
/// block_on(x.ready_event()?)?;
/// // Or a callback, run by the plugin's thread when the event completes.
/// let (tx, rx) = std::sync::mpsc::channel();
/// let _callback = x.ready_event()?.on_ready(move |status| tx.send(status.is_ok()).unwrap())?;
/// assert!(rx.recv().unwrap());
/// # Ok::<(), pjrt_client::Error>(())
/// ```
pub struct Event {
    plugin: Plugin,
    // Keeps the client (and so whatever the event refers to) alive until the event is gone.
    _client: Option<Client>,
    raw: NonNull<sys::PJRT_Event>,
    // The one on-ready callback this handle registers for its own waits (`wait_timeout`,
    // `poll`, `wait_until_complete`), made on the first wait that finds the event pending:
    // waiting again, or from several threads, reuses it instead of adding a callback each time.
    completion: OnceLock<Arc<Completion>>,
}

/// What the waits of an `Event` and its one on-ready callback share.
#[derive(Default)]
struct Completion {
    state: Mutex<CompletionState>,
    cond: Condvar,
}

#[derive(Default)]
struct CompletionState {
    done: bool,
    waker: Option<Waker>,
}

// SAFETY: PJRT events are thread-safe (`PjRtFuture` may be awaited and queried from any
// thread); this handle owns the event exclusively.
unsafe impl Send for Event {}
// SAFETY: every method takes `&self` and calls thread-safe PJRT functions.
unsafe impl Sync for Event {}

impl Event {
    /// Wraps a raw event returned by the plugin. Returns `None` for NULL.
    pub(crate) fn from_raw(plugin: &Plugin, client: Option<&Client>, raw: *mut sys::PJRT_Event) -> Option<Event> {
        NonNull::new(raw).map(|raw| Event {
            plugin: plugin.clone(),
            _client: client.cloned(),
            raw,
            completion: OnceLock::new(),
        })
    }

    fn api(&self) -> &Api {
        self.plugin.api()
    }

    pub(crate) fn plugin(&self) -> &Plugin {
        &self.plugin
    }

    /// Blocks until the event completes; returns its error, if any.
    ///
    /// Inside a plugin callback it is refused ([`Error::BlockingInCallback`]) unless the event
    /// has completed already (then it returns at once): register what comes next with
    /// [`Event::on_ready`] instead, or await the event.
    pub fn wait(&self) -> Result<()> {
        self.refuse_wait_in_callback("Event::wait", NOT_IN_CALLBACK)?;
        self.await_raw()
    }

    /// Inside a plugin callback, refuses a wait for this event (the public call `call`; do
    /// `instead`) unless the event has completed, when the wait returns at once. Outside
    /// callbacks: one thread-local read.
    #[inline]
    pub(crate) fn refuse_wait_in_callback(&self, call: &'static str, instead: &'static str) -> Result<()> {
        if in_plugin_callback() {
            return self.refuse_unless_ready(call, instead);
        }
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn refuse_unless_ready(&self, call: &'static str, instead: &'static str) -> Result<()> {
        if self.is_ready()? {
            Ok(())
        } else {
            Err(blocking_in_callback(call, instead))
        }
    }

    /// `PJRT_Event_Await`, unchecked: for the waits that guard memory the plugin may still use.
    fn await_raw(&self) -> Result<()> {
        let mut args = sys::PJRT_Event_Await_Args::new();
        args.event = self.raw.as_ptr();
        pjrt_call!(self.api(), PJRT_Event_Await, &mut args)
    }

    /// Like [`Event::wait`], but when `PJRT_Event_Await` fails while the event has not completed,
    /// waits for its completion before returning the error: for waits that guard memory the
    /// plugin may still use (host data of uploads, destinations of downloads). It waits through
    /// a callback, or, if the plugin refuses one, by asking `PJRT_Event_IsReady` until it says
    /// yes. Only when that fails too can it return before the event completed: callers that own
    /// the memory then check [`Event::is_ready`] and leak it unless the event is known complete.
    ///
    /// Never refused inside a callback (the memory it guards must outlive the plugin's use):
    /// the public calls that get here refuse before they start anything.
    pub(crate) fn wait_until_complete(&self) -> Result<()> {
        let status = self.await_raw();
        if status.is_err() && !matches!(self.is_ready(), Ok(true)) {
            match self.completion() {
                Ok(completion) => {
                    completion.wait_for(Duration::MAX);
                }
                Err(_) => {
                    let mut pause = Duration::from_micros(100);
                    while let Ok(false) = self.is_ready() {
                        std::thread::sleep(pause);
                        pause = (pause * 2).min(Duration::from_millis(10));
                    }
                }
            }
        }
        status
    }

    /// After a wait for this event ended with `status`: when the wait failed and the event
    /// cannot be seen to be complete, the plugin may still use `held` (a destination it writes,
    /// host data it reads), so it is taken out and leaked, never freed. Returns `status`.
    pub(crate) fn leak_if_in_use<T>(&self, status: Result<()>, held: &mut Option<T>) -> Result<()> {
        if status.is_err() && !matches!(self.is_ready(), Ok(true)) {
            std::mem::forget(held.take());
        }
        status
    }

    /// The shared completion callback, registered on first use (see the `completion` field).
    fn completion(&self) -> Result<&Arc<Completion>> {
        if let Some(completion) = self.completion.get() {
            return Ok(completion);
        }
        let completion = Arc::new(Completion::default());
        let shared = completion.clone();
        // `OnReady` only tracks the callback; the completion itself is what waits look at.
        let _tracker = self.on_ready(move |_status| {
            let mut state = shared.state.lock().unwrap_or_else(|p| p.into_inner());
            state.done = true;
            let waker = state.waker.take();
            drop(state);
            shared.cond.notify_all();
            if let Some(waker) = waker {
                waker.wake();
            }
        })?;
        // Two threads may get here at once; the first to store wins and the other's callback
        // only sets a completion nobody looks at (at most one per racing thread, not per wait).
        Ok(self.completion.get_or_init(|| completion))
    }

    /// Blocks until the event completes or `timeout` passes. A timeout gives [`Error::Timeout`]
    /// and leaves the event (and the work it tracks) as it was: waiting again is fine, and
    /// registers nothing new with the plugin. [`Duration::MAX`] waits without a limit.
    ///
    /// Refused inside a plugin callback unless the event has completed, like [`Event::wait`].
    pub fn wait_timeout(&self, timeout: Duration) -> Result<()> {
        self.refuse_wait_in_callback("Event::wait_timeout", NOT_IN_CALLBACK)?;
        if self.is_ready()? {
            return self.error();
        }
        if !self.completion()?.wait_for(timeout) {
            return Err(Error::Timeout { what: "waiting for a PJRT event", after: timeout });
        }
        self.error()
    }

    /// Whether the event has completed.
    pub fn is_ready(&self) -> Result<bool> {
        let mut args = sys::PJRT_Event_IsReady_Args::new();
        args.event = self.raw.as_ptr();
        pjrt_call!(self.api(), PJRT_Event_IsReady, &mut args)?;
        // SAFETY: a byte of `args`, initialised by `new` and perhaps rewritten by the plugin.
        Ok(unsafe { crate::call::plugin_bool(&raw const args.is_ready) })
    }

    /// The event's error, once it is ready (`Ok(())` when it succeeded). Call only after
    /// [`Event::is_ready`] returned true or [`Event::wait`] returned.
    pub fn error(&self) -> Result<()> {
        let mut args = sys::PJRT_Event_Error_Args::new();
        args.event = self.raw.as_ptr();
        pjrt_call!(self.api(), PJRT_Event_Error, &mut args)
    }

    /// Runs `callback` when the event completes, on whatever thread completes it (or at once,
    /// in this thread, if it already has).
    ///
    /// That thread may be one of the plugin's own: PJRT objects the callback drops, or owns
    /// when it returns (the last [`Client`], a [`crate::Buffer`], ...), are destroyed on this
    /// crate's release thread instead, never inside the plugin ([`crate::flush_released`]
    /// waits for them).
    ///
    /// A panic in `callback` is caught at the C boundary (it never unwinds into the plugin) and
    /// reported by [`OnReady::wait`] as [`Error::CallbackPanicked`].
    ///
    /// `callback` may start work but not wait for the plugin: a call that would wait returns
    /// [`Error::BlockingInCallback`] there (see the crate documentation, *Callbacks and the
    /// plugin's threads*, for what a callback may do).
    ///
    /// ```
    /// use std::sync::{mpsc, Arc};
    /// use pjrt_client::{DownloadOptions, Error};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// let x = Arc::new(client.upload(&[1f32, 2.], &[2])?);
    /// let (tx, rx) = mpsc::channel();
    /// let inside = x.clone();
    /// x.ready_event()?.on_ready(move |_status| {
    ///     // Waiting for a download here could wait for this very thread: refused.
    ///     assert!(matches!(inside.to_vec::<f32>(), Err(Error::BlockingInCallback { .. })));
    ///     // Starting one is fine; it is awaited elsewhere.
    ///     tx.send(inside.to_bytes_async(DownloadOptions::new())).unwrap();
    /// })?;
    /// assert_eq!(rx.recv().unwrap()?.wait()?.len(), 8);
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn on_ready<F>(&self, callback: F) -> Result<OnReady>
    where
        F: FnOnce(Result<()>) + Send + 'static,
    {
        let state = Arc::new(OnReadyState::default());
        // By id, not by pointer (see `crate::call::handoff`): a plugin calling back twice, or with a
        // wrong argument, finds nothing.
        let user_arg =
            crate::call::handoff::give(OnReadyClosure { callback, state: state.clone(), plugin: self.plugin.clone() });
        let mut args = sys::PJRT_Event_OnReady_Args::new();
        args.event = self.raw.as_ptr();
        args.callback = Some(on_ready_trampoline::<F>);
        args.user_arg = user_arg;
        if let Err(e) = pjrt_call!(self.api(), PJRT_Event_OnReady, &mut args) {
            // The plugin did not take the callback: reclaim the closure.
            drop(crate::call::handoff::take::<OnReadyClosure<F>>(user_arg));
            return Err(e);
        }
        Ok(OnReady { state })
    }

    /// The raw handle, for use with [`crate::sys`]. Do not destroy it.
    pub fn as_raw(&self) -> *mut sys::PJRT_Event {
        self.raw.as_ptr()
    }
}

/// Awaiting an event: the waker is registered through `PJRT_Event_OnReady` (no polling), so it
/// works with any executor. Resolves to the event's status.
impl Future for Event {
    type Output = Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        let this = self.get_mut();
        if this.completion.get().is_none() {
            match this.is_ready() {
                Ok(true) => return Poll::Ready(this.error()),
                Ok(false) => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
        let completion = match this.completion() {
            Ok(completion) => completion,
            Err(e) => return Poll::Ready(Err(e)),
        };
        let mut state = completion.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.done {
            drop(state);
            return Poll::Ready(this.error());
        }
        // Only the latest waker is kept: the event is polled through `&mut`, by one task.
        state.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl Completion {
    /// Waits until the callback ran, for at most `timeout` (`Duration::MAX`: no limit; std's
    /// timed wait takes any duration). Returns whether it ran.
    fn wait_for(&self, timeout: Duration) -> bool {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let waited = self.cond.wait_timeout_while(state, timeout, |state| !state.done);
        !waited.unwrap_or_else(|p| p.into_inner()).1.timed_out()
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        crate::call::release::release_if_in_callback!(Event {
            plugin: self.plugin.clone(),
            _client: self._client.take(),
            raw: self.raw,
            completion: std::mem::take(&mut self.completion),
        });
        let mut args = sys::PJRT_Event_Destroy_Args::new();
        args.event = self.raw.as_ptr();
        // A destroy failure cannot be reported from Drop and leaves nothing to clean up.
        let _ = pjrt_call!(self.api(), PJRT_Event_Destroy, &mut args);
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event").field("ready", &self.is_ready().ok()).finish()
    }
}

#[derive(Default)]
struct OnReadyState {
    done: Mutex<Option<Result<()>>>,
    cond: Condvar,
}

struct OnReadyClosure<F> {
    callback: F,
    state: Arc<OnReadyState>,
    plugin: Plugin,
}

/// Tracks a callback registered with [`Event::on_ready`].
pub struct OnReady {
    state: Arc<OnReadyState>,
}

impl OnReady {
    /// Blocks until the callback has run. Returns [`Error::CallbackPanicked`] if it panicked.
    ///
    /// Refused inside a plugin callback ([`Error::BlockingInCallback`]) unless the callback
    /// has run already: the callback waited for may need the thread. Check
    /// [`OnReady::is_done`] there instead.
    pub fn wait(&self) -> Result<()> {
        self.refuse_wait_in_callback("OnReady::wait")?;
        self.wait_timeout(Duration::MAX).map(|_| ())
    }

    /// Inside a plugin callback, refuses the wait `call` unless the callback has run.
    #[inline]
    fn refuse_wait_in_callback(&self, call: &'static str) -> Result<()> {
        if in_plugin_callback() && !self.is_done() {
            return Err(blocking_in_callback(call, "check OnReady::is_done instead"));
        }
        Ok(())
    }

    /// Like [`OnReady::wait`], but gives up after `timeout`: `Ok(false)` when the callback has
    /// not run by then. [`Duration::MAX`] waits without a limit. Refused inside a plugin
    /// callback unless the callback has run, like [`OnReady::wait`].
    pub fn wait_timeout(&self, timeout: Duration) -> Result<bool> {
        self.refuse_wait_in_callback("OnReady::wait_timeout")?;
        let done = self.state.done.lock().unwrap_or_else(|p| p.into_inner());
        let (done, _) =
            self.state.cond.wait_timeout_while(done, timeout, |done| done.is_none()).unwrap_or_else(|p| p.into_inner());
        match done.as_ref() {
            None => Ok(false),
            Some(Err(Error::CallbackPanicked(m))) => Err(Error::CallbackPanicked(m.clone())),
            Some(_) => Ok(true),
        }
    }

    /// Whether the callback has run.
    pub fn is_done(&self) -> bool {
        self.state.done.lock().map(|d| d.is_some()).unwrap_or(true)
    }
}

unsafe extern "C" fn on_ready_trampoline<F>(error: *mut sys::PJRT_Error, user_arg: *mut c_void)
where
    F: FnOnce(Result<()>) + Send + 'static,
{
    // Whatever the callback drops that would call the plugin goes to the release thread.
    let _scope = crate::call::release::CallbackScope::enter();
    // The closure is taken out of the hand-off table: once. A second call for the same event (a
    // plugin bug), or an argument this crate never gave, finds nothing; its error, if any, then
    // cannot be freed (no plugin to free it with) and is left to the plugin.
    let Some(OnReadyClosure { callback, state, plugin }) = crate::call::handoff::take::<OnReadyClosure<F>>(user_arg)
    else {
        return;
    };
    // The callback owns `error` and must destroy it: `check` converts and destroys. Everything
    // runs inside catch_unwind so no panic unwinds into the plugin.
    let record = crate::call::panic::catch(move || {
        let status = plugin.api().check(error, "PJRT_Event");
        callback(status)
    })
    .map_err(Error::CallbackPanicked);
    // Never panic here: a poisoned lock is still usable.
    let mut done = state.done.lock().unwrap_or_else(|p| p.into_inner());
    *done = Some(record);
    state.cond.notify_all();
}
