//! A shared library of XLA FFI handlers written in Rust: build it with
//! `cargo build -p pjrt-ffi-example-handlers` and load it into `pjrt run` with
//! `--ffi-library target/debug/libpjrt_ffi_example_handlers.so`. It holds the handler of
//! tutorial 10, `pjrt_tutorial_scale_shift` (`y = x * scale + shift`, `repeat` times), so the
//! `jax.export` model of `tests/data/ffi` runs from the command line:
//!
//! ```text
//! pjrt run tests/data/ffi/jax-0.10.2/scale_shift/model.jaxexport \
//!     -i tests/data/ffi/jax-0.10.2/scale_shift/in0.npy \
//!     --ffi-library target/debug/libpjrt_ffi_example_handlers.so
//! ```

use pjrt_client::ffi::{Call, FfiError, Handler, Rank, Signature};

fn scale_shift(call: &Call) -> Result<(), FfiError> {
    let x = call.arg::<f32>(0)?;
    let mut y = call.ret::<f32>(0)?;
    let scale: f32 = call.attr("scale")?;
    let shift = call.attr::<f64>("shift")? as f32;
    let repeat: i64 = call.attr("repeat")?;
    if call.attr_str("mode")? != "affine" {
        return Err(FfiError::invalid_argument("mode must be \"affine\""));
    }
    if y.dims() != x.dims() {
        return Err(FfiError::invalid_argument("the result's shape differs from the operand's"));
    }
    y.copy_from_iter(x.as_slice().iter().map(|&v| (0..repeat).fold(v, |v, _| v * scale + shift)));
    Ok(())
}

/// The handlers this library exports, by custom-call target.
fn handlers() -> Vec<(String, Handler)> {
    let signature = Signature::new()
        .arg::<f32>(Rank::Any)
        .ret::<f32>(Rank::Any)
        .attr::<f32>("scale")
        .attr::<f64>("shift")
        .attr::<i64>("repeat")
        .attr_str("mode");
    vec![("pjrt_tutorial_scale_shift".to_owned(), Handler::new("scale_shift", signature, scale_shift))]
}

pjrt_client::export_ffi_handlers!(handlers);
