//! `potrf` kernel tests.
