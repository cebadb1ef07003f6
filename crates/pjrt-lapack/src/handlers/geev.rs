//! `lapack_{s,d,c,z}geev_ffi`: eigenvalues and left/right eigenvectors of general matrices
//! (`jnp.linalg.eig`, `eigvals`, `lax.linalg.eig`).
//!
//! JAX's contract: operand `x` (`[batch..., n, n]`, column-major, not changed: the kernel
//! works on a copy); attributes `compute_left` and `compute_right` (`u8`: `'V'` / `'N'`);
//! results, for real types, `eigvals_real` and `eigvals_imag` (`[batch..., n]`),
//! `eigvecs_left` and `eigvecs_right` (`[batch..., n, n]`, of the *complex* type: LAPACK's
//! packed conjugate pairs unpacked), `info` (`s32[batch...]`; `-4` for a matrix with a NaN or
//! infinity, as jaxlib reports it); for complex types `eigvals`, `eigvecs_left`,
//! `eigvecs_right`, `info`.
//!
//! ```
//! use num_complex::Complex;
//! use pjrt_client::{Client, ClientOptions, CompileOptions, ExecuteOptions, Plugin, Program};
//! # let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
//! # pjrt_lapack::register(|| pjrt_plugins::install_verified(&pjrt_plugins::OPENBLAS, |_| ()));
//! let client = Client::new(&plugin, &ClientOptions::new())?;
//! // What jnp.linalg.eig lowers to for one real 2x2 matrix (its custom call).
//! let program = Program::mlir_text(r#"
//! func.func public @main(%a: tensor<2x2xf64>) -> (tensor<2xf64>, tensor<2xf64>, tensor<2x2xcomplex<f64>>, tensor<i32>) {
//!   %wr, %wi, %vl, %vr, %info = stablehlo.custom_call @lapack_dgeev_ffi(%a) {
//!       mhlo.backend_config = {compute_left = 78 : ui8, compute_right = 86 : ui8},
//!       operand_layouts = [dense<[0, 1]> : tensor<2xindex>],
//!       result_layouts = [dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>, dense<[0, 1]> : tensor<2xindex>,
//!                         dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>]}
//!       : (tensor<2x2xf64>) -> (tensor<2xf64>, tensor<2xf64>, tensor<2x2xcomplex<f64>>, tensor<2x2xcomplex<f64>>, tensor<i32>)
//!   return %wr, %wi, %vr, %info : tensor<2xf64>, tensor<2xf64>, tensor<2x2xcomplex<f64>>, tensor<i32>
//! }"#)?;
//! let exe = client.compile(&program, &CompileOptions::new())?;
//! let a = [0.0f64, -1.0, 1.0, 0.0]; // [[0, -1], [1, 0]]: a quarter turn, eigenvalues +-i
//! let out = exe.execute(&[&client.upload(&a, &[2, 2])?], &ExecuteOptions::new())?;
//! assert_eq!((out[0].to_vec::<f64>()?, out[1].to_vec::<f64>()?), (vec![0.0, 0.0], vec![1.0, -1.0]));
//! let vr = out[2].to_vec::<Complex<f64>>()?; // row-major: vr[2 * i + j] is entry i of vector j
//! for (j, w) in [Complex::new(0.0, 1.0), Complex::new(0.0, -1.0)].into_iter().enumerate() {
//!     let (x, y) = (vr[j], vr[2 + j]);
//!     assert!((-y - w * x).norm() < 1e-12 && (x - w * y).norm() < 1e-12); // A v = w v
//! }
//! assert_eq!(vr[1], vr[0].conj()); // the pair's vectors are conjugates
//! assert_eq!(out[3].to_vec::<i32>()?, [0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::{kernels, GeevComplex, GeevReal, Lapack, Scalar};
use num_complex::Complex;

use super::{batch_of, by_kind, kernel_error, Element};
use pjrt_client::ffi::{Call, Handler, Rank, Signature};

pub(super) fn handler(prefix: char, target: &str, lapack: &'static Lapack) -> Handler {
    by_kind!(prefix, R => real::<R>(target, lapack), complex::<R>(target, lapack))
}

fn real<T>(target: &str, lapack: &'static Lapack) -> Handler
where
    T: Element + Scalar<Real = T, Geev = GeevReal<T>> + std::ops::Neg<Output = T> + Into<f64>,
    Complex<T>: Element,
{
    let signature = Signature::new()
        .arg::<T>(Rank::Any)
        .ret::<T>(Rank::Any)
        .ret::<T>(Rank::Any)
        .ret::<Complex<T>>(Rank::Any)
        .ret::<Complex<T>>(Rank::Any)
        .ret::<i32>(Rank::Any)
        .attr::<u8>("compute_left")
        .attr::<u8>("compute_right");
    Handler::new(target, signature, move |call: &Call<'_>| {
        let (left, right) = (call.attr::<u8>("compute_left")?, call.attr::<u8>("compute_right")?);
        let x = call.arg::<T>(0)?;
        let batch = batch_of("x", x.dims())?;
        let (mut wr, mut wi) = (call.ret::<T>(0)?, call.ret::<T>(1)?);
        let (mut vl, mut vr) = (call.ret::<Complex<T>>(2)?, call.ret::<Complex<T>>(3)?);
        let mut info = call.ret::<i32>(4)?;
        kernels::geev(
            lapack,
            batch,
            left,
            right,
            x.as_slice(),
            wr.as_mut_slice(),
            wi.as_mut_slice(),
            vl.as_mut_slice(),
            vr.as_mut_slice(),
            info.as_mut_slice(),
        )
        .map_err(kernel_error)
    })
}

fn complex<R>(target: &str, lapack: &'static Lapack) -> Handler
where
    R: Element + Scalar<Real = R> + Into<f64>,
    Complex<R>: Element + Scalar<Real = R, Geev = GeevComplex<Complex<R>, R>>,
{
    let signature = Signature::new()
        .arg::<Complex<R>>(Rank::Any)
        .ret::<Complex<R>>(Rank::Any)
        .ret::<Complex<R>>(Rank::Any)
        .ret::<Complex<R>>(Rank::Any)
        .ret::<i32>(Rank::Any)
        .attr::<u8>("compute_left")
        .attr::<u8>("compute_right");
    Handler::new(target, signature, move |call: &Call<'_>| {
        let (left, right) = (call.attr::<u8>("compute_left")?, call.attr::<u8>("compute_right")?);
        let x = call.arg::<Complex<R>>(0)?;
        let batch = batch_of("x", x.dims())?;
        let mut w = call.ret::<Complex<R>>(0)?;
        let (mut vl, mut vr) = (call.ret::<Complex<R>>(1)?, call.ret::<Complex<R>>(2)?);
        let mut info = call.ret::<i32>(3)?;
        kernels::geev_complex(
            lapack,
            batch,
            left,
            right,
            x.as_slice(),
            w.as_mut_slice(),
            vl.as_mut_slice(),
            vr.as_mut_slice(),
            info.as_mut_slice(),
        )
        .map_err(kernel_error)
    })
}
