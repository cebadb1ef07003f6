//! Events the caller creates and completes (`PJRT_Event_Create` / `PJRT_Event_Set`, 0.89): a
//! completion signal made by the program rather than by the plugin, for example to order work
//! after something that happens outside PJRT.

use std::fmt;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::call::pjrt_call;
use crate::error::{Error, ErrorCode, Result};
use crate::event::Event;
use crate::plugin::Plugin;
use crate::sys::{self, Args};

/// An event that completes when [`UserEvent::set_ok`] or [`UserEvent::set_error`] is called.
///
/// Wait for it, or register callbacks, through [`UserEvent::event`]. It can be completed once;
/// a second completion is refused here (the plugin must never see one). Dropping it unset
/// completes it with `CANCELLED`, so that nothing waits forever on an event nobody can set.
///
/// `Send + Sync`: share it (in an `Arc`) between the thread that sets it and those that wait.
pub struct UserEvent {
    // Declared first: the event is set (if needed) in Drop before it is destroyed.
    event: Event,
    completed: AtomicBool,
}

impl UserEvent {
    /// Creates an unset event (`PJRT_Event_Create`). Needs no client.
    pub fn new(plugin: &Plugin) -> Result<UserEvent> {
        let mut args = sys::PJRT_Event_Create_Args::new();
        pjrt_call!(plugin.api(), PJRT_Event_Create, &mut args)?;
        let raw = NonNull::new(args.event)
            .ok_or_else(|| Error::invalid("PJRT_Event_Create succeeded but returned no event"))?;
        let event = Event::from_raw(plugin, None, raw.as_ptr()).expect("checked non-NULL above");
        Ok(UserEvent { event, completed: AtomicBool::new(false) })
    }

    /// The event itself: wait for it, poll it or register callbacks.
    pub fn event(&self) -> &Event {
        &self.event
    }

    /// Whether it has been set (by this handle).
    pub fn is_set(&self) -> bool {
        self.completed.load(Ordering::Acquire)
    }

    /// Completes the event successfully. Fails if it was already set.
    pub fn set_ok(&self) -> Result<()> {
        self.set(sys::PJRT_Error_Code(0), "")
    }

    /// Completes the event with an error: waiters see `code` and `message`. `code` must be an
    /// error code (1..=16); fails if the event was already set.
    pub fn set_error(&self, code: ErrorCode, message: &str) -> Result<()> {
        let raw = code.to_raw();
        if !(1..=16).contains(&raw.0) {
            return Err(Error::invalid(format!(
                "{code} is not an error code a plugin accepts (1..=16); use set_ok for success"
            )));
        }
        self.set(raw, message)
    }

    fn set(&self, code: sys::PJRT_Error_Code, message: &str) -> Result<()> {
        if self.completed.swap(true, Ordering::AcqRel) {
            return Err(Error::invalid("the user event was already set; an event completes only once"));
        }
        let mut args = sys::PJRT_Event_Set_Args::new();
        args.event = self.event.as_raw();
        args.error_code = code;
        if !message.is_empty() {
            args.error_message = message.as_ptr().cast();
            args.error_message_size = message.len();
        }
        // The plugin copies the message during the call.
        pjrt_call!(self.event.plugin().api(), PJRT_Event_Set, &mut args).inspect_err(|_| {
            // Not set after all: allow another try.
            self.completed.store(false, Ordering::Release);
        })
    }
}

impl Drop for UserEvent {
    fn drop(&mut self) {
        // Setting the event is no destroy (its `Event` field releases itself on the release
        // thread when dropped inside a plugin callback).
        if !self.is_set() {
            let _ = self.set(ErrorCode::Cancelled.to_raw(), "the UserEvent was dropped without being set");
        }
    }
}

impl fmt::Debug for UserEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UserEvent").field("set", &self.is_set()).finish()
    }
}
