//! `lapack_{s,d,c,z}geqrf_ffi`: Householder QR (`jnp.linalg.qr`, `lax.linalg.qr`,
//! `lax.linalg.geqrf`; `jnp.linalg.qr` follows it with `orgqr`).
//!
//! JAX's contract: operand `x` (`[batch..., m, n]`, column-major); results `x_out` (aliasing
//! `x`: `R` on and above the diagonal, the Householder vectors below) and `tau`
//! (`[batch..., min(m, n)]`); no attributes and no `info`.
//!
//! ```
//! use pjrt_client::{Client, ClientOptions, CompileOptions, ExecuteOptions, Plugin, Program};
//! # let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
//! # pjrt_lapack::register(|| pjrt_plugins::install_verified(&pjrt_plugins::OPENBLAS, |_| ()));
//! let client = Client::new(&plugin, &ClientOptions::new())?;
//! let program = Program::mlir_text(r#"
//! func.func public @main(%a: tensor<2x2xf64>) -> (tensor<2x2xf64>, tensor<2xf64>) {
//!   %qr, %tau = stablehlo.custom_call @lapack_dgeqrf_ffi(%a) {mhlo.backend_config = {},
//!       operand_layouts = [dense<[0, 1]> : tensor<2xindex>],
//!       output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>],
//!       result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>]}
//!       : (tensor<2x2xf64>) -> (tensor<2x2xf64>, tensor<2xf64>)
//!   return %qr, %tau : tensor<2x2xf64>, tensor<2xf64>
//! }"#)?;
//! let exe = client.compile(&program, &CompileOptions::new())?;
//! let a = client.upload(&[3.0f64, 0.0, 4.0, 5.0], &[2, 2])?; // [[3, 0], [4, 5]]
//! let out = exe.execute(&[&a], &ExecuteOptions::new())?;
//! // R = [[-5, -4], [., 3]] with the first vector's tail (0.5) below it; tau = (1.6, 0).
//! let (qr, tau) = (out[0].to_vec::<f64>()?, out[1].to_vec::<f64>()?);
//! let close = |x: &[f64], y: &[f64]| x.iter().zip(y).all(|(a, b)| (a - b).abs() < 1e-12);
//! assert!(close(&qr, &[-5.0, -4.0, 0.5, 3.0]) && close(&tau, &[1.6, 0.0]), "{qr:?} {tau:?}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::{kernels, Lapack};

use super::{batch_of, by_type, kernel_error, Element};
use pjrt_client::ffi::{Call, FfiError, Handler, Rank, Signature};

pub(super) fn handler(prefix: char, target: &str, lapack: &'static Lapack) -> Handler {
    by_type!(prefix, typed(target, lapack))
}

fn typed<T: Element>(target: &str, lapack: &'static Lapack) -> Handler {
    let signature = Signature::new().arg::<T>(Rank::Any).ret_aliasing(0).ret::<T>(Rank::Any);
    Handler::new(target, signature, move |call: &Call<'_>| {
        let mut x = call.ret_in_place::<T>(0)?;
        let batch = batch_of("x", x.dims())?;
        let mut tau = call.ret::<T>(1)?;
        expect_dims("tau", tau.dims(), x.dims(), &[batch.min_dim()])?;
        kernels::geqrf(lapack, batch, x.as_mut_slice(), tau.as_mut_slice()).map_err(kernel_error)
    })
}

/// Refuses a buffer whose dims are not the batch dims of `x_dims` (all but its last two)
/// followed by `tail`.
pub(super) fn expect_dims(what: &str, found: &[i64], x_dims: &[i64], tail: &[usize]) -> Result<(), FfiError> {
    let batch = &x_dims[..x_dims.len().saturating_sub(2)];
    let fits = found.len() == batch.len() + tail.len()
        && found[..batch.len()] == *batch
        && found[batch.len()..].iter().zip(tail).all(|(&f, &t)| usize::try_from(f) == Ok(t));
    if !fits {
        return Err(FfiError::invalid_argument(format!(
            "{what} has dimensions {found:?}, but x ({x_dims:?}) makes {batch:?} followed by {tail:?}"
        )));
    }
    Ok(())
}
