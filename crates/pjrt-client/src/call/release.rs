//! The plugin's threads and ours: nothing is destroyed inside a plugin callback.
//!
//! Plugins call back into Rust on their own threads (an event completing, a host send or
//! receive, the key-value store, a view's on-delete), often while holding their own locks or
//! from a worker of a pool the client owns. Destroying a PJRT object there re-enters the plugin
//! from inside itself: the last [`crate::Client`] dropped on one of the CPU client's worker
//! threads would make its destructor join that very thread. A user closure that owns the last
//! client (or buffer, executable, event, ...) is enough to get there.
//!
//! So every trampoline marks its thread as *inside a plugin callback* while it runs
//! ([`CallbackScope`]), and every handle whose drop calls the plugin, or owns user closures the
//! plugin may call, checks the mark: inside a callback it hands itself to the **release
//! thread**, one thread of this crate that drops what it is given, outside any plugin call.
//! Closures the plugin held for an execution (host send/receive callbacks, the execute
//! context) are always dropped there. Outside callbacks nothing changes: drops happen where
//! they happen, with no thread hop and no allocation.
//!
//! The same mark refuses waits: a call that would block until the plugin finishes something
//! ([`refuse_in_callback`], `Event::refuse_wait_in_callback`) returns
//! `Error::BlockingInCallback` inside a callback, before it starts anything, since the plugin
//! may need the very thread it would block (the 0.106 CPU plugin's workers parked in
//! `PJRT_Event_Await` for good). The crate documentation (*Callbacks and the plugin's threads*)
//! lists what a callback may do. The release thread is not a plugin thread (waits are fine
//! there), but [`flush_released`] returns at once on it: it would wait for itself.

use std::any::Any;
use std::cell::Cell;
use std::sync::mpsc::{self, Sender};
use std::sync::{Mutex, OnceLock};

use crate::error::{Error, Result};

thread_local! {
    /// How many plugin callbacks this thread is inside (they may nest: a callback that
    /// registers an on-ready callback on a completed event runs it at once).
    static CALLBACK_DEPTH: Cell<usize> = const { Cell::new(0) };
    /// Whether this thread is the release thread (set once, by the thread itself).
    static ON_RELEASE_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// Marks the current thread as inside a plugin callback until dropped. Every `extern "C"`
/// trampoline of this crate holds one while it runs user code or drops anything.
pub(crate) struct CallbackScope(());

impl CallbackScope {
    pub(crate) fn enter() -> CallbackScope {
        CALLBACK_DEPTH.with(|depth| depth.set(depth.get() + 1));
        CallbackScope(())
    }
}

impl Drop for CallbackScope {
    fn drop(&mut self) {
        CALLBACK_DEPTH.with(|depth| depth.set(depth.get().saturating_sub(1)));
    }
}

/// Whether the current thread is running a plugin callback of this crate.
#[inline]
pub(crate) fn in_plugin_callback() -> bool {
    CALLBACK_DEPTH.with(|depth| depth.get() > 0)
}

/// Refuses a call that waits for the plugin when made inside a plugin callback
/// ([`Error::BlockingInCallback`], naming `call` and what to do `instead`): such a wait may
/// need the very thread it blocks. Callers check before starting anything, so nothing is left
/// half done. One thread-local read and a branch; the error is built out of line.
#[inline(always)]
pub(crate) fn refuse_in_callback(call: &'static str, instead: &'static str) -> Result<()> {
    if in_plugin_callback() {
        return Err(blocking_in_callback(call, instead));
    }
    Ok(())
}

/// The error of [`refuse_in_callback`], out of the callers' paths.
#[cold]
#[inline(never)]
pub(crate) fn blocking_in_callback(call: &'static str, instead: &'static str) -> Error {
    Error::BlockingInCallback { call, instead }
}

type Released = Box<dyn Any + Send>;

/// The release thread's queue; `None` when the thread could not be started.
fn queue() -> Option<&'static Mutex<Sender<Released>>> {
    static QUEUE: OnceLock<Option<Mutex<Sender<Released>>>> = OnceLock::new();
    QUEUE
        .get_or_init(|| {
            let (sender, receiver) = mpsc::channel::<Released>();
            let spawned = std::thread::Builder::new().name("pjrt-release".into()).spawn(move || {
                ON_RELEASE_THREAD.with(|on| on.set(true));
                for value in receiver {
                    // A panicking drop must not end the thread (the queue would then fill up
                    // forever); it has nowhere to be reported.
                    crate::call::panic::no_unwind(move || drop(value));
                }
            });
            spawned.ok().map(|_| Mutex::new(sender))
        })
        .as_ref()
}

/// Drops `value` on the release thread, outside any plugin call. If that thread cannot be had
/// (it could not be started), `value` is leaked: never dropped is safe, dropped inside the
/// plugin is not.
#[cold]
#[inline(never)]
pub(crate) fn release_later<T: Send + 'static>(value: T) {
    let value: Released = Box::new(value);
    match queue() {
        Some(queue) => {
            let sent = queue.lock().unwrap_or_else(|p| p.into_inner()).send(value);
            if let Err(mpsc::SendError(value)) = sent {
                std::mem::forget(value);
            }
        }
        None => std::mem::forget(value),
    }
}

/// For `Drop` impls of handles that call the plugin when dropped: inside a plugin callback,
/// hands `$moved` (the handle's contents, moved out of `self` into a new value of the same
/// type, whose own drop then runs on the release thread) to the release thread and returns.
///
/// `$moved` is built inside a cold function (a closure handed to [`release_later_with`]), so a
/// drop that runs on a hot path (an execute's outputs) carries one test and a call, not the
/// code that moves the handle out.
macro_rules! release_if_in_callback {
    ($moved:expr) => {
        if $crate::call::release::in_plugin_callback() {
            $crate::call::release::release_later_with(|| $moved);
            return;
        }
    };
}
pub(crate) use release_if_in_callback;

/// [`release_later`] of what `moved` builds, built here: out of the caller's hot path.
#[cold]
#[inline(never)]
pub(crate) fn release_later_with<T: Send + 'static>(moved: impl FnOnce() -> T) {
    release_later(moved());
}

/// Blocks until everything handed to the release thread before this call has been dropped
/// (for tests, and for callers that want released handles gone before they go on).
///
/// Inside a plugin callback it returns at once (the release thread may be waiting for that
/// callback's plugin). On the release thread itself (a `Drop` of something released there,
/// say a host callback's closure, that flushes) it returns at once too: everything handed over
/// before the value being dropped is gone already, and waiting for the rest would wait for
/// itself.
///
/// ```
/// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
/// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
/// let x = client.upload(&[1f32, 2.], &[2])?;
/// let ready = x.ready_event()?;
/// // The callback owns the buffer and drops it, possibly on a plugin thread: it is destroyed
/// // on the release thread instead.
/// ready.on_ready(move |_| drop(x))?.wait()?;
/// pjrt_client::flush_released(); // the buffer is gone by now
/// # Ok::<(), pjrt_client::Error>(())
/// ```
pub fn flush_released() {
    if in_plugin_callback() || ON_RELEASE_THREAD.with(Cell::get) {
        // The release thread may be waiting for this very callback's plugin, or be this
        // thread: never block here.
        return;
    }
    let (done, wait) = mpsc::channel::<()>();
    struct Signal(Sender<()>);
    impl Drop for Signal {
        fn drop(&mut self) {
            let _ = self.0.send(());
        }
    }
    release_later(Signal(done));
    if queue().is_some() {
        let _ = wait.recv();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    use super::*;

    struct Probe {
        dropped_on: Arc<Mutex<Option<String>>>,
    }

    impl Drop for Probe {
        fn drop(&mut self) {
            *self.dropped_on.lock().unwrap() = std::thread::current().name().map(str::to_owned);
        }
    }

    #[test]
    fn released_values_are_dropped_on_the_release_thread() {
        let dropped_on = Arc::new(Mutex::new(None));
        assert!(!in_plugin_callback());
        {
            let _scope = CallbackScope::enter();
            assert!(in_plugin_callback());
            {
                let _nested = CallbackScope::enter();
                assert!(in_plugin_callback());
            }
            assert!(in_plugin_callback(), "nested scopes count");
            release_later(Probe { dropped_on: dropped_on.clone() });
        }
        assert!(!in_plugin_callback());
        flush_released();
        assert_eq!(dropped_on.lock().unwrap().as_deref(), Some("pjrt-release"));
    }

    #[test]
    fn waits_are_refused_inside_callbacks_only() {
        assert!(refuse_in_callback("Thing::wait", "do the other thing").is_ok());
        let _scope = CallbackScope::enter();
        match refuse_in_callback("Thing::wait", "do the other thing") {
            Err(e @ Error::BlockingInCallback { call: "Thing::wait", instead: "do the other thing" }) => {
                let message = e.to_string();
                assert!(message.starts_with("Thing::wait waits for the plugin"), "{message}");
                assert!(message.contains(": do the other thing, or wait on a thread of your own"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_panicking_drop_does_not_stop_the_release_thread() {
        struct Boom;
        impl Drop for Boom {
            fn drop(&mut self) {
                panic!("boom in drop");
            }
        }
        release_later(Boom);
        let flag = Arc::new(AtomicBool::new(false));
        struct Set(Arc<AtomicBool>);
        impl Drop for Set {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        release_later(Set(flag.clone()));
        flush_released();
        assert!(flag.load(Ordering::SeqCst));
    }
}
