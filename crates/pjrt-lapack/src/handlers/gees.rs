//! `lapack_{s,d,c,z}gees_ffi`: Schur decomposition (`jax.scipy.linalg.schur`,
//! `lax.linalg.schur`; `jax.scipy.linalg.sqrtm` and `funm` through it).
//!
//! JAX's contract: operand `x` (`[batch..., n, n]`, column-major); attributes `mode` (`u8`:
//! `'V'` with Schur vectors, `'N'` without) and `sort` (`u8`: only `'N'`; jaxlib passes LAPACK
//! no selection function, and JAX refuses to lower sorting); results `x_out` (aliasing `x`:
//! the Schur form `T`, quasi upper triangular for real types), `schur_vectors` (`Z`,
//! `[batch..., n, n]`, with `A = Z T Z^H`), for real types `eigvals_real` and `eigvals_imag`,
//! for complex types `eigvals` (`[batch..., n]`), then `selected_eigvals` (`s32[batch...]`,
//! 0 without sorting) and `info` (`s32[batch...]`).
//!
//! ```
//! use pjrt_client::{Client, ClientOptions, CompileOptions, ExecuteOptions, Plugin, Program};
//! # let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
//! # pjrt_lapack::register(|| pjrt_plugins::install_verified(&pjrt_plugins::OPENBLAS, |_| ()));
//! let client = Client::new(&plugin, &ClientOptions::new())?;
//! // What jax.scipy.linalg.schur lowers to for one real 2x2 matrix (its custom call).
//! let program = Program::mlir_text(r#"
//! func.func public @main(%a: tensor<2x2xf64>) -> (tensor<2x2xf64>, tensor<2x2xf64>, tensor<2xf64>, tensor<i32>) {
//!   %t, %z, %wr, %wi, %sdim, %info = stablehlo.custom_call @lapack_dgees_ffi(%a) {
//!       mhlo.backend_config = {mode = 86 : ui8, sort = 78 : ui8},
//!       operand_layouts = [dense<[0, 1]> : tensor<2xindex>],
//!       output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>],
//!       result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>,
//!                         dense<0> : tensor<1xindex>, dense<> : tensor<0xindex>, dense<> : tensor<0xindex>]}
//!       : (tensor<2x2xf64>) -> (tensor<2x2xf64>, tensor<2x2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<i32>, tensor<i32>)
//!   return %t, %z, %wr, %info : tensor<2x2xf64>, tensor<2x2xf64>, tensor<2xf64>, tensor<i32>
//! }"#)?;
//! let exe = client.compile(&program, &CompileOptions::new())?;
//! let a = [1.0f64, 2.0, 2.0, 1.0]; // [[1, 2], [2, 1]]: eigenvalues 3 and -1
//! let out = exe.execute(&[&client.upload(&a, &[2, 2])?], &ExecuteOptions::new())?;
//! let (t, z) = (out[0].to_vec::<f64>()?, out[1].to_vec::<f64>()?); // row-major
//! assert!(t[2].abs() < 1e-12); // upper triangular
//! let mut w = out[2].to_vec::<f64>()?;
//! w.sort_by(f64::total_cmp);
//! assert!((w[0] + 1.0).abs() < 1e-12 && (w[1] - 3.0).abs() < 1e-12);
//! // A = Z T Z^T, entry by entry.
//! for i in 0..2 {
//!     for j in 0..2 {
//!         let x: f64 = (0..4).map(|kl| z[2 * i + kl / 2] * t[2 * (kl / 2) + kl % 2] * z[2 * j + kl % 2]).sum();
//!         assert!((x - a[2 * i + j]).abs() < 1e-12);
//!     }
//! }
//! assert_eq!(out[3].to_vec::<i32>()?, [0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::{kernels, GeesComplex, GeesReal, Lapack, Scalar};
use num_complex::Complex;

use super::{batch_of, by_kind, kernel_error, Element};
use pjrt_client::ffi::{Call, Handler, Rank, Signature};

pub(super) fn handler(prefix: char, target: &str, lapack: &'static Lapack) -> Handler {
    by_kind!(prefix, R => real::<R>(target, lapack), complex::<R>(target, lapack))
}

fn real<T>(target: &str, lapack: &'static Lapack) -> Handler
where
    T: Element + Scalar<Real = T, Gees = GeesReal<T>>,
{
    let signature = Signature::new()
        .arg::<T>(Rank::Any)
        .ret_aliasing(0)
        .ret::<T>(Rank::Any)
        .ret::<T>(Rank::Any)
        .ret::<T>(Rank::Any)
        .ret::<i32>(Rank::Any)
        .ret::<i32>(Rank::Any)
        .attr::<u8>("mode")
        .attr::<u8>("sort");
    Handler::new(target, signature, move |call: &Call<'_>| {
        let (mode, sort) = (call.attr::<u8>("mode")?, call.attr::<u8>("sort")?);
        let mut x = call.ret_in_place::<T>(0)?;
        let batch = batch_of("x", x.dims())?;
        let (mut vs, mut wr, mut wi) = (call.ret::<T>(1)?, call.ret::<T>(2)?, call.ret::<T>(3)?);
        let (mut sdim, mut info) = (call.ret::<i32>(4)?, call.ret::<i32>(5)?);
        kernels::gees(
            lapack,
            batch,
            mode,
            sort,
            x.as_mut_slice(),
            vs.as_mut_slice(),
            wr.as_mut_slice(),
            wi.as_mut_slice(),
            sdim.as_mut_slice(),
            info.as_mut_slice(),
        )
        .map_err(kernel_error)
    })
}

fn complex<R>(target: &str, lapack: &'static Lapack) -> Handler
where
    R: Element + Scalar<Real = R>,
    Complex<R>: Element + Scalar<Real = R, Gees = GeesComplex<Complex<R>, R>>,
{
    let signature = Signature::new()
        .arg::<Complex<R>>(Rank::Any)
        .ret_aliasing(0)
        .ret::<Complex<R>>(Rank::Any)
        .ret::<Complex<R>>(Rank::Any)
        .ret::<i32>(Rank::Any)
        .ret::<i32>(Rank::Any)
        .attr::<u8>("mode")
        .attr::<u8>("sort");
    Handler::new(target, signature, move |call: &Call<'_>| {
        let (mode, sort) = (call.attr::<u8>("mode")?, call.attr::<u8>("sort")?);
        let mut x = call.ret_in_place::<Complex<R>>(0)?;
        let batch = batch_of("x", x.dims())?;
        let (mut vs, mut w) = (call.ret::<Complex<R>>(1)?, call.ret::<Complex<R>>(2)?);
        let (mut sdim, mut info) = (call.ret::<i32>(3)?, call.ret::<i32>(4)?);
        kernels::gees_complex(
            lapack,
            batch,
            mode,
            sort,
            x.as_mut_slice(),
            vs.as_mut_slice(),
            w.as_mut_slice(),
            sdim.as_mut_slice(),
            info.as_mut_slice(),
        )
        .map_err(kernel_error)
    })
}
