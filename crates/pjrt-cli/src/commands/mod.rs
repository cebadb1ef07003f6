//! One module per command, as `pjrt --help` lists them. Each has an `exec` that runs the command
//! from its parsed arguments ([`crate::cli`]) and prints its result; [`crate::run`] picks the one
//! to call. Commands use the shared helpers ([`crate::compiling`], [`crate::plugins`],
//! [`crate::ui`]), never each other.

pub mod bench;
pub mod cache;
pub mod capi;
pub mod compile;
pub mod conform;
pub mod info;
pub mod inspect;
pub mod plugin;
pub mod run;
#[cfg(feature = "serve")]
pub mod serve;
