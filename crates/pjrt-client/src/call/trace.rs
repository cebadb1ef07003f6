//! The tracing macros: [`span!`] and [`tracing_on!`], imported like [`pjrt_call!`](super::pjrt_call)
//! (`use crate::call::trace::{span, tracing_on};`). Without the `tracing` feature they expand to
//! nothing, so no call site needs a `cfg` of its own.

/// A `tracing` span entered until the end of the scope (`let _span = span!(DEBUG, "name", field
/// = value);`), or nothing at all without the `tracing` feature.
#[cfg(feature = "tracing")]
macro_rules! span {
    ($level:ident, $($args:tt)*) => {
        // `None` unless the level is on: a disabled span is then one load and one branch,
        // with nothing to drop (a `Span::none()` would still be entered and dropped).
        if ::tracing::level_enabled!(::tracing::Level::$level) {
            Some(::tracing::span!(::tracing::Level::$level, $($args)*).entered())
        } else {
            None
        }
    };
}
#[cfg(not(feature = "tracing"))]
macro_rules! span {
    ($level:ident, $($args:tt)*) => {
        ()
    };
}
pub(crate) use span;

/// Whether spans of this level may be recorded (`false` without the `tracing` feature): hot
/// paths test it first and build their span in a cold function, so that their own code stays
/// small (a few cache lines fewer per call).
#[cfg(feature = "tracing")]
macro_rules! tracing_on {
    ($level:ident) => {
        ::tracing::level_enabled!(::tracing::Level::$level)
    };
}
#[cfg(not(feature = "tracing"))]
macro_rules! tracing_on {
    ($level:ident) => {
        false
    };
}
pub(crate) use tracing_on;
