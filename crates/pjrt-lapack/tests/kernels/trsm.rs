//! `trsm` kernel tests.
