//! The XLA FFI call-frame decoder (`pjrt_client::ffi`): a valid frame mutated by the input's
//! bytes (sizes, counts, type tags, element types, ranks, dimensions, attribute names and kinds,
//! NULL and misaligned pointers; always with memory for what the frame claims) is decoded and
//! handed to a handler. Every answer must be a clean `Ok` or `FrameError`, the handler's
//! function must run exactly on `Ok`, and the error returned must be the decoder's. Reached
//! through the hidden `ffi::frames::fuzz_frame`, which the crate's randomized test also drives.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    pjrt_client::ffi::frames::fuzz_frame(data);
});
