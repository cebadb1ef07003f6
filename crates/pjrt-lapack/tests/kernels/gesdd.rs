//! `gesdd` kernel tests.
