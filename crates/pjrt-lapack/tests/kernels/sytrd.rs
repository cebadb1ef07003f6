//! `sytrd` kernel tests.
