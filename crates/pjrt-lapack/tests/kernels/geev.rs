//! `geev` kernel tests.
