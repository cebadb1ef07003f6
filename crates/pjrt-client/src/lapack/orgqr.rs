//! `lapack_?orgqr_ffi`.

use pjrt_lapack::Lapack;

use crate::ffi::Handler;

pub(super) fn handler(_prefix: char, target: &str, _lapack: &'static Lapack) -> Handler {
    super::not_yet(target)
}
