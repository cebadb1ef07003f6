//! `lapack_{s,d,c,z}trsm_ffi`: triangular solve (`lax.linalg.triangular_solve`,
//! `jax.scipy.linalg.solve_triangular`, `cho_solve`, and the solves behind `jnp.linalg.solve`
//! and `inv`).
//!
//! JAX's contract: operands `x` (`[batch..., k, k]`, the triangular matrix) and `y`
//! (`[batch..., m, n]`), both column-major, with the same batch dimensions; `k = m` for
//! `side = 'L'` (solve `op(x) z = y`), `k = n` for `side = 'R'` (`z op(x) = y`), `m` and `n`
//! taken from `y`; attributes `side` (`'L'`/`'R'`), `uplo` (`'L'`/`'U'`), `trans_x`
//! (`'N'`/`'T'`/`'C'`, `'C'` also for real types) and `diag` (`'N'`/`'U'`), all `u8`; one
//! result `y_out` (aliasing `y`, not in a tuple: `output_tuple_indices = []`). BLAS runs
//! with `alpha = 1`; there is no `info` (a zero on the diagonal gives infinities). JAX 0.4.38
//! to 0.5.x passed a third operand, the scalar `alpha` (always 1 in its lowering): accepted
//! when it is 1, refused otherwise.
//!
//! ```
//! use pjrt_client::{Client, ClientOptions, CompileOptions, ExecuteOptions, Plugin, Program};
//! # let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
//! # pjrt_lapack::register(|| pjrt_plugins::install_verified(&pjrt_plugins::OPENBLAS, |_| ()));
//! let client = Client::new(&plugin, &ClientOptions::new())?;
//! // The custom call as JAX 0.10 prints it (`mhlo.backend_config` holds the attributes of an
//! // FFI call; the `sdy.sharding_rule` left out).
//! // solve_triangular(x, y, lower=True, trans=1): x^T z = y.
//! let program = Program::mlir_text(r#"
//! func.func public @main(%x: tensor<2x2xf64>, %y: tensor<2x1xf64>) -> tensor<2x1xf64> {
//!   %z = stablehlo.custom_call @lapack_dtrsm_ffi(%x, %y) {backend_config = "",
//!       mhlo.frontend_attributes = {num_batch_dims = "0"},
//!       mhlo.backend_config = {diag = 78 : ui8, side = 76 : ui8, trans_x = 84 : ui8, uplo = 76 : ui8},
//!       operand_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>],
//!       result_layouts = [dense<[0, 1]> : tensor<2xindex>],
//!       output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [], operand_index = 1, operand_tuple_indices = []>]}
//!       : (tensor<2x2xf64>, tensor<2x1xf64>) -> tensor<2x1xf64>
//!   return %z : tensor<2x1xf64>
//! }"#)?;
//! let exe = client.compile(&program, &CompileOptions::new())?;
//! // x = [[2, 99], [1, 4]]: lower, so the 99 is never read; x^T = [[2, 1], [0, 4]].
//! let x = client.upload(&[2.0f64, 99.0, 1.0, 4.0], &[2, 2])?;
//! let y = client.upload(&[4.0f64, 8.0], &[2, 1])?;
//! let z = exe.execute(&[&x, &y], &ExecuteOptions::new())?[0].to_vec::<f64>()?;
//! assert_eq!(z, [1.0, 2.0]);
//!
//! // JAX 0.5's form: alpha as a third operand (1, or the call fails).
//! let program = Program::mlir_text(r#"
//! func.func public @main(%x: tensor<2x2xf64>, %y: tensor<2x1xf64>) -> tensor<2x1xf64> {
//!   %alpha = stablehlo.constant dense<1.0> : tensor<f64>
//!   %z = stablehlo.custom_call @lapack_dtrsm_ffi(%x, %y, %alpha) {
//!       mhlo.backend_config = {diag = 78 : ui8, side = 76 : ui8, trans_x = 84 : ui8, uplo = 76 : ui8},
//!       operand_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>],
//!       result_layouts = [dense<[0, 1]> : tensor<2xindex>],
//!       output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [], operand_index = 1, operand_tuple_indices = []>]}
//!       : (tensor<2x2xf64>, tensor<2x1xf64>, tensor<f64>) -> tensor<2x1xf64>
//!   return %z : tensor<2x1xf64>
//! }"#)?;
//! let exe = client.compile(&program, &CompileOptions::new())?;
//! let z = exe.execute(&[&x, &y], &ExecuteOptions::new())?[0].to_vec::<f64>()?;
//! assert_eq!(z, [1.0, 2.0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::kernels::{self, Triangular};
use crate::Lapack;

use super::{batch_of, by_type, kernel_error, Element};
use pjrt_client::ffi::{Call, FfiError, Handler, Rank, Signature};

pub(super) fn handler(prefix: char, target: &str, lapack: &'static Lapack) -> Handler {
    by_type!(prefix, typed(target, lapack))
}

fn typed<T: Element>(target: &str, lapack: &'static Lapack) -> Handler {
    let signature = Signature::new()
        .arg::<T>(Rank::Any)
        .arg::<T>(Rank::Any)
        .arg_optional::<T>(Rank::Exact(0))
        .ret_aliasing(1)
        .attr::<u8>("side")
        .attr::<u8>("uplo")
        .attr::<u8>("trans_x")
        .attr::<u8>("diag");
    Handler::new(target, signature, move |call: &Call<'_>| {
        let attrs = Triangular::new(
            call.attr::<u8>("side")?,
            call.attr::<u8>("uplo")?,
            call.attr::<u8>("trans_x")?,
            call.attr::<u8>("diag")?,
        );
        if call.arg_count() == 3 {
            let alpha = call.arg::<T>(2)?;
            if alpha.as_slice() != [T::ONE] {
                return Err(FfiError::invalid_argument(format!(
                    "alpha (operand 2) is {:?}: this kernel solves with alpha = 1 only, as JAX's lowering asks",
                    alpha.as_slice()
                )));
            }
        }
        let x = call.arg::<T>(0)?;
        let mut y = call.ret_in_place::<T>(0)?;
        let (x_batch, y_batch) = (batch_of("x", x.dims())?, batch_of("y", y.dims())?);
        let (xd, yd) = (x.dims(), y.dims());
        if xd[..xd.len() - 2] != yd[..yd.len() - 2] {
            return Err(FfiError::invalid_argument(format!(
                "x has dimensions {xd:?} and y {yd:?}: their batch dimensions (all but the last two) must be equal"
            )));
        }
        kernels::trsm(lapack, attrs, x_batch, x.as_slice(), y_batch, y.as_mut_slice()).map_err(kernel_error)
    })
}
