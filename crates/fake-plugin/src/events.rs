//! Events: their shared state, completion (at once, later on a thread of the fake, or never, as
//! the event rules say), `OnReady` callbacks, user events and the `PJRT_Event_*` slots.

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::null_mut;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};

use pjrt_client_sys::{self as sys, PJRT_Error, PJRT_Error_Code};

use crate::calls::{handle, lock, slot_fn, sys_bytes, OK};
use crate::counters::{bump, COUNTERS};
use crate::errors::{invalid, new_error};
use crate::faults::{injects, Completion, EventRule, Fault, FAULTS};
use crate::scenarios::config;

/// How an event ends: `None` for success, else the error's code and message.
type Failure = Option<(PJRT_Error_Code, String)>;
type Callback = unsafe extern "C" fn(error: *mut PJRT_Error, user_arg: *mut c_void);

/// The shared state of an event: its handle and, for late events, the completing thread hold it.
#[derive(Default)]
pub(crate) struct EventState {
    pub(crate) inner: Mutex<EventInner>,
    cond: Condvar,
}

#[derive(Default)]
pub(crate) struct EventInner {
    /// `None` until the event completes.
    pub(crate) result: Option<Failure>,
    /// Callbacks waiting for completion, with their `user_arg` (as an integer: opaque to us).
    callbacks: Vec<(Callback, usize)>,
}

impl Drop for EventInner {
    fn drop(&mut self) {
        // An event that never completed: its callbacks are never called (as with a real plugin
        // whose work never ends). Counted so the tests can see it.
        for _ in self.callbacks.drain(..) {
            bump(&COUNTERS.callbacks_dropped);
        }
    }
}

/// The object behind a `PJRT_Event*`.
pub(crate) struct FakeEvent(pub(crate) Arc<EventState>);

/// Runs `body` on a new thread of the fake, counted in `threads_running` until it returns.
/// `name` starts with `fake-pjrt` (see [`on_fake_thread`]).
fn spawn_counted(name: &str, body: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    bump(&COUNTERS.threads_running);
    let spawned = std::thread::Builder::new().name(name.to_owned()).spawn(move || {
        let _ = catch_unwind(AssertUnwindSafe(body));
        COUNTERS.threads_running.fetch_sub(1, Ordering::SeqCst);
    });
    if spawned.is_err() {
        COUNTERS.threads_running.fetch_sub(1, Ordering::SeqCst);
    }
    spawned.map(drop)
}

fn failure_error(failure: &Failure) -> *mut PJRT_Error {
    match failure {
        Some((code, message)) => new_error(*code, message.clone()),
        None => OK,
    }
}

/// Calls an `OnReady` callback, handing it a fresh error it owns.
fn invoke_callback(callback: Callback, user_arg: usize, failure: &Failure) {
    let error = failure_error(failure);
    bump(&COUNTERS.callbacks_invoked);
    // SAFETY: the callback and its argument came from `PJRT_Event_OnReady`; it is called exactly
    // once and takes ownership of `error`. It is an `extern "C"` function: if it unwound, the
    // process would abort here, which is what the tests guard against.
    unsafe { callback(error, user_arg as *mut c_void) };
    bump(&COUNTERS.callbacks_returned);
}

impl EventState {
    pub(crate) fn complete(&self, failure: Failure) {
        let callbacks = {
            let mut inner = lock(&self.inner);
            inner.result = Some(failure.clone());
            std::mem::take(&mut inner.callbacks)
        };
        self.cond.notify_all();
        for (callback, user_arg) in callbacks {
            invoke_callback(callback, user_arg, &failure);
        }
    }
}

/// The event rule for events handed out by `source`.
fn event_rule(source: &str) -> EventRule {
    let rule = {
        let faults = lock(&FAULTS);
        faults.events.iter().rev().find(|r| r.source.as_deref().is_none_or(|s| s == source)).cloned()
    };
    match rule {
        Some(rule) => {
            bump(&COUNTERS.faults_injected);
            rule
        }
        None => {
            let failure = (config().event_error && source == "PJRT_Buffer_ReadyEvent")
                .then(|| (PJRT_Error_Code::INTERNAL, "fake: transfer failed".to_owned()));
            EventRule { source: None, completion: Completion::Ready, failure }
        }
    }
}

/// A new event as the event rules for `source` say.
pub(crate) fn new_event(source: &str) -> *mut sys::PJRT_Event {
    let rule = event_rule(source);
    let state = Arc::new(EventState::default());
    match rule.completion {
        Completion::Ready => state.complete(rule.failure),
        Completion::Never => {}
        Completion::Late(delay) => {
            let later = state.clone();
            let failure = rule.failure.clone();
            let spawned = spawn_counted("fake-pjrt-late-event", move || {
                std::thread::sleep(delay);
                later.complete(failure);
            });
            if spawned.is_err() {
                state.complete(rule.failure);
            }
        }
    }
    bump(&COUNTERS.events_created);
    Box::into_raw(Box::new(FakeEvent(state))).cast()
}

/// The event a slot hands out: NULL under `null_output` (counted as an injected fault) or in the
/// `hostile_events` scenarios (counted in `null_events_returned`), else a new event as the event
/// rules for `source` say.
pub(crate) fn handed_out_event(fault: Option<Fault>, source: &str) -> *mut sys::PJRT_Event {
    if injects(fault, Fault::NullOutput) {
        null_mut()
    } else if config().hostile.null_events {
        bump(&COUNTERS.null_events_returned);
        null_mut()
    } else {
        new_event(source)
    }
}

/// Whether the current thread is one of the fake's own (late events, callbacks): see
/// [`spawn_counted`].
pub(crate) fn on_fake_thread() -> bool {
    std::thread::current().name().is_some_and(|name| name.starts_with("fake-pjrt"))
}

pub(crate) fn event<'a>(ptr: *mut sys::PJRT_Event) -> Result<&'a EventState, *mut PJRT_Error> {
    // SAFETY: the client library passes events this plugin created and has not destroyed.
    Ok(&unsafe { handle::<FakeEvent, _>(ptr, "event") }?.0)
}

slot_fn!(PJRT_Event_Destroy => fn event_destroy(args: PJRT_Event_Destroy_Args, fault) {
    if !args.event.is_null() {
        // SAFETY: an event this plugin created; the client library destroys it once.
        drop(unsafe { Box::from_raw(args.event.cast::<FakeEvent>()) });
        bump(&COUNTERS.events_destroyed);
    }
    Ok(())
});

slot_fn!(PJRT_Event_IsReady => fn event_is_ready(args: PJRT_Event_IsReady_Args, fault) {
    let ready = lock(&event(args.event)?.inner).result.is_some();
    crate::scenarios::set_bool(&raw mut args.is_ready, ready);
    Ok(())
});

// `PJRT_Event_Error` and `PJRT_Event_Await` return the event's error as their own result.
slot_fn!(PJRT_Event_Error => fn event_error(args: PJRT_Event_Error_Args, fault) {
    match &lock(&event(args.event)?.inner).result {
        Some(failure) => match failure_error(failure) {
            e if e.is_null() => Ok(()),
            e => Err(e),
        },
        None => Err(new_error(PJRT_Error_Code::FAILED_PRECONDITION, "fake: the event is not ready")),
    }
});

slot_fn!(PJRT_Event_Await => fn event_await(args: PJRT_Event_Await_Args, fault) {
    let state = event(args.event)?;
    let mut inner = lock(&state.inner);
    loop {
        if let Some(failure) = &inner.result {
            let error = failure_error(failure);
            return if error.is_null() { Ok(()) } else { Err(error) };
        }
        inner = state.cond.wait(inner).unwrap_or_else(|p| p.into_inner());
    }
});

// A ready event runs the callback on a new thread, as a real plugin does when work completes
// elsewhere; a pending one keeps it for the thread that completes the event. Neither touches the
// event handle, which the client may destroy at any time.
slot_fn!(PJRT_Event_OnReady => fn event_on_ready(args: PJRT_Event_OnReady_Args, fault) {
    bump(&COUNTERS.on_ready_calls);
    let state = event(args.event)?;
    let Some(callback) = args.callback else {
        return Err(invalid("fake: no callback"));
    };
    let user_arg = args.user_arg as usize;
    let mut inner = lock(&state.inner);
    let Some(failure) = inner.result.clone() else {
        inner.callbacks.push((callback, user_arg));
        return Ok(());
    };
    drop(inner);
    // The callback was not taken if the thread cannot start: the client keeps `user_arg`.
    spawn_counted("fake-pjrt-event", move || invoke_callback(callback, user_arg, &failure)).map_err(|e| {
        new_error(PJRT_Error_Code::RESOURCE_EXHAUSTED, format!("fake: cannot start a thread: {e}"))
    })
});

// A user event: pending until `PJRT_Event_Set`. Setting it twice is refused (a real plugin's
// promise would abort).
slot_fn!(PJRT_Event_Create => fn event_create(args: PJRT_Event_Create_Args, fault) {
    if injects(fault, Fault::NullOutput) {
        args.event = null_mut();
        return Ok(());
    }
    if config().hostile.null_events {
        bump(&COUNTERS.null_events_returned);
        args.event = null_mut();
        return Ok(());
    }
    bump(&COUNTERS.events_created);
    args.event = Box::into_raw(Box::new(FakeEvent(Arc::default()))).cast();
    Ok(())
});

slot_fn!(PJRT_Event_Set => fn event_set(args: PJRT_Event_Set_Args, fault) {
    let state = event(args.event)?;
    if lock(&state.inner).result.is_some() {
        return Err(new_error(PJRT_Error_Code::FAILED_PRECONDITION, "fake: the event was already set"));
    }
    let failure = (args.error_code.0 != 0).then(|| {
        // SAFETY: the client passes `error_message_size` readable bytes (or NULL with 0).
        let bytes = unsafe { sys_bytes(args.error_message, args.error_message_size) };
        (args.error_code, String::from_utf8_lossy(bytes).into_owned())
    });
    state.complete(failure);
    Ok(())
});
