//! pjrt-stablehlo's integration tests: one binary, one module per concern.
//!
//! `round_trip`: every committed portable artifact is read, printed, compiled from the text and
//! run on both CPU plugins; the results equal those of the bytecode given to the plugin
//! directly. `hostile`: truncated and bit-flipped files give errors, never panics. `refine`:
//! shape refinement of the symbolic models and of hand-made (and hostile) modules.
//! `support` (the real CPU plugins) is pjrt-client's.

#[path = "../../../pjrt-client/tests/support/mod.rs"]
mod support;

mod chlo;
mod dense;
mod files;
mod gaps;
mod hostile;
mod ops;
mod refine;
mod round_trip;
mod text;
mod vhlo;
mod write;
