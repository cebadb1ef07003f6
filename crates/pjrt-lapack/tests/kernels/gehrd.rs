//! `gehrd` kernel tests.
