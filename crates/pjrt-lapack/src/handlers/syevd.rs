//! `lapack_{s,d}syevd_ffi`, `lapack_{c,z}heevd_ffi`: eigenvalues and eigenvectors of symmetric
//! / Hermitian matrices (`jnp.linalg.eigh`, `eigvalsh`, `lax.linalg.eigh`).
//!
//! JAX's contract: operand `x` (`[batch..., n, n]`, column-major); attributes `uplo` (`u8`:
//! `'L'` / `'U'`, the triangle read) and `mode` (`u8`: `'V'` with eigenvectors, `'N'`
//! without); results `x_out` (aliasing `x`: the eigenvectors as columns), `eigenvalues`
//! (`[batch..., n]`, ascending, of the real type) and `info` (`s32[batch...]`).
//!
//! ```
//! use pjrt_client::{Client, ClientOptions, CompileOptions, ExecuteOptions, Plugin, Program};
//! # let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
//! # pjrt_lapack::register(|| pjrt_plugins::install_verified(&pjrt_plugins::OPENBLAS, |_| ()));
//! let client = Client::new(&plugin, &ClientOptions::new())?;
//! // What jnp.linalg.eigh lowers to for one 2x2 matrix (its custom call).
//! let program = Program::mlir_text(r#"
//! func.func public @main(%a: tensor<2x2xf64>) -> (tensor<2x2xf64>, tensor<2xf64>, tensor<i32>) {
//!   %v, %w, %info = stablehlo.custom_call @lapack_dsyevd_ffi(%a) {
//!       mhlo.backend_config = {mode = 86 : ui8, uplo = 76 : ui8},
//!       operand_layouts = [dense<[0, 1]> : tensor<2xindex>],
//!       output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>],
//!       result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>, dense<> : tensor<0xindex>]}
//!       : (tensor<2x2xf64>) -> (tensor<2x2xf64>, tensor<2xf64>, tensor<i32>)
//!   return %v, %w, %info : tensor<2x2xf64>, tensor<2xf64>, tensor<i32>
//! }"#)?;
//! let exe = client.compile(&program, &CompileOptions::new())?;
//! let a = client.upload(&[2.0f64, 1.0, 1.0, 2.0], &[2, 2])?;
//! let out = exe.execute(&[&a], &ExecuteOptions::new())?;
//! let (v, w) = (out[0].to_vec::<f64>()?, out[1].to_vec::<f64>()?);
//! assert!((w[0] - 1.0).abs() < 1e-12 && (w[1] - 3.0).abs() < 1e-12);
//! // A v = w v for each eigenvector (a column; the buffer is row-major [2, 2]).
//! for j in 0..2 {
//!     let (x, y) = (v[j], v[2 + j]);
//!     assert!((2.0 * x + y - w[j] * x).abs() < 1e-12 && (x + 2.0 * y - w[j] * y).abs() < 1e-12);
//! }
//! assert_eq!(out[2].to_vec::<i32>()?, [0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::kernels::{self, Batch};
use crate::{KernelError, Lapack};
use num_complex::Complex;

use super::{batch_of, by_kind, kernel_error, Element};
use pjrt_client::ffi::{Call, Handler, Rank, Signature};

pub(super) fn handler(prefix: char, target: &str, lapack: &'static Lapack) -> Handler {
    by_kind!(
        prefix,
        R => typed::<R, R>(target, lapack, kernels::syevd),
        typed::<Complex<R>, R>(target, lapack, kernels::heevd)
    )
}

fn signature<T: Element, R: Element>() -> Signature {
    Signature::new()
        .arg::<T>(Rank::Any)
        .ret_aliasing(0)
        .ret::<R>(Rank::Any)
        .ret::<i32>(Rank::Any)
        .attr::<u8>("uplo")
        .attr::<u8>("mode")
}

/// [`kernels::syevd`] or [`kernels::heevd`]: `T` the matrices' type, `R` the eigenvalues'.
type Kernel<T, R> = fn(&Lapack, Batch, u8, u8, &mut [T], &mut [R], &mut [i32]) -> Result<(), KernelError>;

fn typed<T: Element, R: Element>(target: &str, lapack: &'static Lapack, kernel: Kernel<T, R>) -> Handler {
    Handler::new(target, signature::<T, R>(), move |call: &Call<'_>| {
        let (uplo, mode) = (call.attr::<u8>("uplo")?, call.attr::<u8>("mode")?);
        let mut x = call.ret_in_place::<T>(0)?;
        let batch = batch_of("x", x.dims())?;
        let (mut w, mut info) = (call.ret::<R>(1)?, call.ret::<i32>(2)?);
        kernel(lapack, batch, uplo, mode, x.as_mut_slice(), w.as_mut_slice(), info.as_mut_slice()).map_err(kernel_error)
    })
}
