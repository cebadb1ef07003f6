//! pjrt-builder's tests: a module per op family, each program built in Rust and run on BOTH CPU
//! plugins (0.115 with StableHLO 1.20, 0.106 with 1.17) against values numpy computed
//! (`tools/gen_builder_testdata.py` writes `tests/data/builder/FAMILY.npz`).

// The CPU plugins, installed into the cache on first use: pjrt-client's test support.
#[path = "../../../pjrt-client/tests/support/mod.rs"]
mod support;

mod harness;

mod constant;
mod edges;
mod elementwise;
mod linalg;
mod nn;
mod reduce;
mod shape;
mod smoke;
// regions
mod collectives;
mod control;
mod gather;
mod misc;
mod sort;
mod window;
mod train_step;
