//! `lapack_{s,d,c,z}gesdd_ffi`: singular value decomposition by divide and conquer
//! (`jnp.linalg.svd`, `pinv`, `matrix_rank`, `norm(ord=2)`, `lax.linalg.svd`).
//!
//! JAX's contract: operand `x` (`[batch..., m, n]`, column-major); attribute `mode` (`u8`:
//! `'A'` full `U` and `VT`, `'S'` their first `min(m, n)` columns / rows, `'N'` neither; `'O'`
//! is refused, as by jaxlib); results `x_out` (aliasing `x`, destroyed), `s`
//! (`[batch..., min(m, n)]`, descending, of the real type), `u` (`[batch..., m, m]` for `'A'`,
//! `[batch..., m, min(m, n)]` otherwise), `vt` (`[batch..., n, n]` for `'A'`,
//! `[batch..., min(m, n), n]` otherwise), `info` (`s32[batch...]`; `-4` for a matrix with a NaN,
//! LAPACK's own report). JAX lowers empty matrices without calling it.
//!
//! ```
//! use pjrt_client::{Client, ClientOptions, CompileOptions, ExecuteOptions, Plugin, Program};
//! # let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
//! # pjrt_lapack::register(|| pjrt_plugins::install_verified(&pjrt_plugins::OPENBLAS, |_| ()));
//! let client = Client::new(&plugin, &ClientOptions::new())?;
//! // What jnp.linalg.svd(a, full_matrices=False) lowers to for one 3x2 matrix (its custom call).
//! let program = Program::mlir_text(r#"
//! func.func public @main(%a: tensor<3x2xf32>) -> (tensor<2xf32>, tensor<3x2xf32>, tensor<2x2xf32>, tensor<i32>) {
//!   %x, %s, %u, %vt, %info = stablehlo.custom_call @lapack_sgesdd_ffi(%a) {
//!       mhlo.backend_config = {mode = 83 : ui8},
//!       operand_layouts = [dense<[0, 1]> : tensor<2xindex>],
//!       output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>],
//!       result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>, dense<[0, 1]> : tensor<2xindex>,
//!                         dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>]}
//!       : (tensor<3x2xf32>) -> (tensor<3x2xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<2x2xf32>, tensor<i32>)
//!   return %s, %u, %vt, %info : tensor<2xf32>, tensor<3x2xf32>, tensor<2x2xf32>, tensor<i32>
//! }"#)?;
//! let exe = client.compile(&program, &CompileOptions::new())?;
//! let a = [3.0f32, 0.0, 0.0, 4.0, 0.0, 0.0]; // [[3, 0], [0, 4], [0, 0]]
//! let out = exe.execute(&[&client.upload(&a, &[3, 2])?], &ExecuteOptions::new())?;
//! let s = out[0].to_vec::<f32>()?;
//! assert!((s[0] - 4.0).abs() < 1e-6 && (s[1] - 3.0).abs() < 1e-6);
//! let (u, vt) = (out[1].to_vec::<f32>()?, out[2].to_vec::<f32>()?); // row-major
//! // A = U diag(s) VT, entry by entry.
//! for i in 0..3 {
//!     for j in 0..2 {
//!         let x: f32 = (0..2).map(|k| u[2 * i + k] * s[k] * vt[2 * k + j]).sum();
//!         assert!((x - a[2 * i + j]).abs() < 1e-6);
//!     }
//! }
//! assert_eq!(out[3].to_vec::<i32>()?, [0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::kernels::{self, Batch};
use crate::{KernelError, Lapack};
use num_complex::Complex;

use super::{batch_of, by_kind, kernel_error, Element};
use pjrt_client::ffi::{Call, FfiError, Handler, Rank, Signature};

pub(super) fn handler(prefix: char, target: &str, lapack: &'static Lapack) -> Handler {
    by_kind!(
        prefix,
        R => typed::<R, R>(target, lapack, kernels::gesdd),
        typed::<Complex<R>, R>(target, lapack, kernels::gesdd_complex)
    )
}

fn signature<T: Element, R: Element>() -> Signature {
    Signature::new()
        .arg::<T>(Rank::Any)
        .ret_aliasing(0)
        .ret::<R>(Rank::Any)
        .ret::<T>(Rank::Any)
        .ret::<T>(Rank::Any)
        .ret::<i32>(Rank::Any)
        .attr::<u8>("mode")
}

/// The last dimension of `u` (its columns) and the next to last of `vt` (its rows, the leading
/// dimension LAPACK gets); the kernel checks them against the mode and the lengths.
fn vector_dims(u: &[i64], vt: &[i64]) -> Result<(usize, usize), FfiError> {
    let bad = || FfiError::invalid_argument(format!("gesdd: u has dimensions {u:?} and vt {vt:?}: not matrices"));
    let u_cols = u.last().and_then(|&d| usize::try_from(d).ok()).ok_or_else(bad)?;
    let vt_rows = vt.len().checked_sub(2).and_then(|i| usize::try_from(vt[i]).ok()).ok_or_else(bad)?;
    Ok((u_cols, vt_rows))
}

/// [`kernels::gesdd`] or [`kernels::gesdd_complex`]: `T` the matrices' type, `R` the singular
/// values'.
type Kernel<T, R> =
    fn(&Lapack, Batch, u8, &mut [T], &mut [R], &mut [T], usize, &mut [T], usize, &mut [i32]) -> Result<(), KernelError>;

fn typed<T: Element, R: Element>(target: &str, lapack: &'static Lapack, kernel: Kernel<T, R>) -> Handler {
    Handler::new(target, signature::<T, R>(), move |call: &Call<'_>| {
        let mode = call.attr::<u8>("mode")?;
        let mut x = call.ret_in_place::<T>(0)?;
        let batch = batch_of("x", x.dims())?;
        let mut s = call.ret::<R>(1)?;
        let (mut u, mut vt, mut info) = (call.ret::<T>(2)?, call.ret::<T>(3)?, call.ret::<i32>(4)?);
        let (u_cols, vt_rows) = vector_dims(u.dims(), vt.dims())?;
        kernel(
            lapack,
            batch,
            mode,
            x.as_mut_slice(),
            s.as_mut_slice(),
            u.as_mut_slice(),
            u_cols,
            vt.as_mut_slice(),
            vt_rows,
            info.as_mut_slice(),
        )
        .map_err(kernel_error)
    })
}
