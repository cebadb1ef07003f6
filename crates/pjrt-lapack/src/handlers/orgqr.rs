//! `lapack_{s,d}orgqr_ffi`, `lapack_{c,z}ungqr_ffi`: `Q` from Householder vectors
//! (`jnp.linalg.qr` after `geqrf`, `lax.linalg.householder_product`).
//!
//! JAX's contract: operands `x` (`[batch..., m, n]`, column-major, `m >= n`: the vectors below
//! its diagonal) and `tau` (`[batch..., k]`, `k <= n`: the number of reflectors is tau's last
//! dimension); one result, `x_out` (aliasing `x`: the first `n` columns of `Q`); no attributes
//! and no `info`. The result is not a tuple: its alias has `output_tuple_indices = []`.
//!
//! ```
//! use pjrt_client::{Client, ClientOptions, CompileOptions, ExecuteOptions, Plugin, Program};
//! # let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
//! # pjrt_lapack::register(|| pjrt_plugins::install_verified(&pjrt_plugins::OPENBLAS, |_| ()));
//! let client = Client::new(&plugin, &ClientOptions::new())?;
//! // jnp.linalg.qr's lowering for a batch of two 3x2 matrices: geqrf, then orgqr on its
//! // packed result (R left out here); layouts as JAX writes them (batch dimension major).
//! let program = Program::mlir_text(r#"
//! func.func public @main(%a: tensor<2x3x2xf32>) -> tensor<2x3x2xf32> {
//!   %qr, %tau = stablehlo.custom_call @lapack_sgeqrf_ffi(%a) {mhlo.backend_config = {},
//!       operand_layouts = [dense<[1, 2, 0]> : tensor<3xindex>],
//!       output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>],
//!       result_layouts = [dense<[1, 2, 0]> : tensor<3xindex>, dense<[1, 0]> : tensor<2xindex>]}
//!       : (tensor<2x3x2xf32>) -> (tensor<2x3x2xf32>, tensor<2x2xf32>)
//!   %q = stablehlo.custom_call @lapack_sorgqr_ffi(%qr, %tau) {mhlo.backend_config = {},
//!       operand_layouts = [dense<[1, 2, 0]> : tensor<3xindex>, dense<[1, 0]> : tensor<2xindex>],
//!       output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [], operand_index = 0, operand_tuple_indices = []>],
//!       result_layouts = [dense<[1, 2, 0]> : tensor<3xindex>]}
//!       : (tensor<2x3x2xf32>, tensor<2x2xf32>) -> tensor<2x3x2xf32>
//!   return %q : tensor<2x3x2xf32>
//! }"#)?;
//! let exe = client.compile(&program, &CompileOptions::new())?;
//! // [[3, 0], [4, 5], [0, 0]] and [[1, 0], [0, 1], [0, 0]], row-major.
//! let a = client.upload(&[3.0f32, 0.0, 4.0, 5.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0], &[2, 3, 2])?;
//! let q = exe.execute(&[&a], &ExecuteOptions::new())?[0].to_vec::<f32>()?;
//! // Q = [[-0.6, -0.8], [-0.8, 0.6], [0, 0]] (LAPACK's signs: R's diagonal is (-5, 3)), and
//! // the second matrix's own columns (its reflectors are the identity: tau = 0).
//! let expected = [-0.6f32, -0.8, -0.8, 0.6, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0];
//! assert!(q.iter().zip(&expected).all(|(a, b)| (a - b).abs() < 1e-6), "{q:?}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::{kernels, Lapack};

use super::{batch_of, by_type, kernel_error, Element};
use pjrt_client::ffi::{Call, FfiError, Handler, Rank, Signature};

pub(super) fn handler(prefix: char, target: &str, lapack: &'static Lapack) -> Handler {
    by_type!(prefix, typed(target, lapack))
}

fn typed<T: Element>(target: &str, lapack: &'static Lapack) -> Handler {
    let signature = Signature::new().arg::<T>(Rank::Any).arg::<T>(Rank::Any).ret_aliasing(0);
    Handler::new(target, signature, move |call: &Call<'_>| {
        let tau = call.arg::<T>(1)?;
        let mut x = call.ret_in_place::<T>(0)?;
        let batch = batch_of("x", x.dims())?;
        let k = tau.dims().last().and_then(|&k| usize::try_from(k).ok()).ok_or_else(|| {
            FfiError::invalid_argument(format!("tau has dimensions {:?}: no number of reflectors", tau.dims()))
        })?;
        super::geqrf::expect_dims("tau", tau.dims(), x.dims(), &[k])?;
        kernels::orgqr(lapack, batch, k, x.as_mut_slice(), tau.as_slice()).map_err(kernel_error)
    })
}
