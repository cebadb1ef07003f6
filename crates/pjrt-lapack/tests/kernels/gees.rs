//! `gees` kernel tests.
