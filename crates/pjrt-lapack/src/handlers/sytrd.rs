//! `lapack_{s,d}sytrd_ffi`, `lapack_{c,z}hetrd_ffi`: reduction of a symmetric or Hermitian
//! matrix to real tridiagonal form (`lax.linalg.tridiagonal`).
//!
//! JAX's contract: operand `x` (`[batch..., n, n]`, column-major); attribute `uplo` (`u8`:
//! `'L'` = 76 or `'U'` = 85, the triangle read); results `x_out` (aliasing `x`: the packed
//! Householder vectors in that triangle, the tridiagonal next to them), `d` (`[batch..., n]`)
//! and `e` (`[batch..., n - 1]`), both of the REAL type also for complex `x`, `tau`
//! (`[batch..., n - 1]`, of `x`'s type) and `info` (`s32[batch...]`; JAX's lowering turns the
//! results of nonzero `info` into NaN).
//!
//! The call below is written as JAX writes it: the attributes in `mhlo.backend_config` (a
//! dictionary), `api_version` left at its default, which XLA turns into a typed FFI call.
//!
//! ```
//! use num_complex::Complex;
//! use pjrt_client::{Client, ClientOptions, CompileOptions, ExecuteOptions, Plugin, Program};
//! # let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
//! # pjrt_lapack::register(|| pjrt_plugins::install_verified(&pjrt_plugins::OPENBLAS, |_| ()));
//! let client = Client::new(&plugin, &ClientOptions::new())?;
//! let program = Program::mlir_text(r#"
//! func.func public @main(%a: tensor<3x3xcomplex<f64>>)
//!     -> (tensor<3xf64>, tensor<2xf64>, tensor<2xcomplex<f64>>, tensor<i32>) {
//!   %x, %d, %e, %tau, %info = stablehlo.custom_call @lapack_zhetrd_ffi(%a) {mhlo.backend_config = {uplo = 76 : ui8},
//!       operand_layouts = [dense<[0, 1]> : tensor<2xindex>],
//!       output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>],
//!       result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>,
//!                         dense<0> : tensor<1xindex>, dense<> : tensor<0xindex>]}
//!       : (tensor<3x3xcomplex<f64>>)
//!       -> (tensor<3x3xcomplex<f64>>, tensor<3xf64>, tensor<2xf64>, tensor<2xcomplex<f64>>, tensor<i32>)
//!   return %d, %e, %tau, %info : tensor<3xf64>, tensor<2xf64>, tensor<2xcomplex<f64>>, tensor<i32>
//! }"#)?;
//! let exe = client.compile(&program, &CompileOptions::new())?;
//! // [[1, 0, 1], [0, 1, 0], [1, 0, 1]]: one reflector (tau = 1) makes T = [[1, -1, 0], [-1, 1, 0], [0, 0, 1]].
//! let a: Vec<Complex<f64>> = [1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0].map(|v| Complex::new(v, 0.0)).to_vec();
//! let out = exe.execute(&[&client.upload(&a, &[3, 3])?], &ExecuteOptions::new())?;
//! let (d, e, tau) = (out[0].to_vec::<f64>()?, out[1].to_vec::<f64>()?, out[2].to_vec::<Complex<f64>>()?);
//! let close = |x: &[f64], y: &[f64]| x.iter().zip(y).all(|(a, b)| (a - b).abs() < 1e-12);
//! assert!(close(&d, &[1.0, 1.0, 1.0]) && close(&e, &[-1.0, 0.0]), "{d:?} {e:?}");
//! assert!((tau[0] - 1.0).norm() < 1e-12 && tau[1].norm() < 1e-12, "{tau:?}");
//! assert_eq!(out[3].to_vec::<i32>()?, [0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::{kernels, Lapack};

use super::geqrf::expect_dims;
use super::{batch_of, by_type, kernel_error, Element};
use pjrt_client::ffi::{Call, Handler, Rank, Signature};

pub(super) fn handler(prefix: char, target: &str, lapack: &'static Lapack) -> Handler {
    by_type!(prefix, typed(target, lapack))
}

fn typed<T: Element>(target: &str, lapack: &'static Lapack) -> Handler
where
    T::Real: Element,
{
    let signature = Signature::new()
        .arg::<T>(Rank::Any)
        .attr::<u8>("uplo")
        .ret_aliasing(0)
        .ret::<T::Real>(Rank::Any)
        .ret::<T::Real>(Rank::Any)
        .ret::<T>(Rank::Any)
        .ret::<i32>(Rank::Any);
    Handler::new(target, signature, move |call: &Call<'_>| {
        let uplo = call.attr::<u8>("uplo")?;
        let mut x = call.ret_in_place::<T>(0)?;
        let batch = batch_of("x", x.dims())?;
        let (mut d, mut e) = (call.ret::<T::Real>(1)?, call.ret::<T::Real>(2)?);
        let (mut tau, mut info) = (call.ret::<T>(3)?, call.ret::<i32>(4)?);
        let off = batch.cols.saturating_sub(1);
        expect_dims("d", d.dims(), x.dims(), &[batch.cols])?;
        expect_dims("e", e.dims(), x.dims(), &[off])?;
        expect_dims("tau", tau.dims(), x.dims(), &[off])?;
        expect_dims("info", info.dims(), x.dims(), &[])?;
        kernels::sytrd(
            lapack,
            batch,
            uplo,
            x.as_mut_slice(),
            d.as_mut_slice(),
            e.as_mut_slice(),
            tau.as_mut_slice(),
            info.as_mut_slice(),
        )
        .map_err(kernel_error)
    })
}
