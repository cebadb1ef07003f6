//! `gtsv` kernel tests.
