//! `syevd` kernel tests.
