//! The `span!` macro: a `tracing` span entered until the end of the scope, or nothing without
//! the `tracing` feature (so no call site needs a `cfg` of its own).

#[cfg(feature = "tracing")]
macro_rules! span {
    ($level:ident, $($args:tt)*) => {
        ::tracing::span!(::tracing::Level::$level, $($args)*).entered()
    };
}
#[cfg(not(feature = "tracing"))]
macro_rules! span {
    ($level:ident, $($args:tt)*) => {
        ()
    };
}
pub(crate) use span;
