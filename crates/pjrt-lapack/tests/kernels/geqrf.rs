//! `geqrf` kernel tests.
