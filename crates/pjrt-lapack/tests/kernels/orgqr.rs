//! `orgqr` kernel tests.
