//! The kernels on scipy's OpenBLAS (installed into the plugin cache when missing), one module
//! per routine family: results against values worked out by hand or invariants
//! (reconstructions, residuals), the edge cases (empty, singular, NaN) and the length checks.

mod support;

mod gees;
mod geev;
mod gehrd;
mod geqrf;
mod gesdd;
mod getrf;
mod gtsv;
mod orgqr;
mod potrf;
mod syevd;
mod sytrd;
mod trsm;
