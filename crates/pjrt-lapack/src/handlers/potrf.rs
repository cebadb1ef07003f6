//! `lapack_{s,d,c,z}potrf_ffi`: Cholesky factorisation (`jnp.linalg.cholesky`,
//! `lax.linalg.cholesky`, `jax.scipy.linalg.cho_factor`, `cho_solve`).
//!
//! JAX's contract: operand `x` (`[batch..., n, n]`, column-major), attribute `uplo` (`u8`,
//! `'L'` = 76 or `'U'` = 85; JAX's own lowering always asks for `'L'`), results `x_out`
//! (aliasing `x`: the factor in the triangle `uplo` names, the other triangle as it was) and
//! `info` (`s32[batch...]`, `> 0`: not positive definite; JAX's lowering replaces such matrices
//! with NaNs and zeroes the other triangle afterwards).
//!
//! ```
//! use pjrt_client::{Client, ClientOptions, CompileOptions, ExecuteOptions, Plugin, Program};
//! # let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
//! # pjrt_lapack::register(|| pjrt_plugins::install_verified(&pjrt_plugins::OPENBLAS, |_| ()));
//! let client = Client::new(&plugin, &ClientOptions::new())?;
//! // The custom call as JAX 0.10 prints it (`mhlo.backend_config` holds the attributes of an
//! // FFI call; the `sdy.sharding_rule` left out).
//! // lax.linalg.cholesky on a batch of two, before its NaN and tril steps.
//! let program = Program::mlir_text(r#"
//! func.func public @main(%a: tensor<2x2x2xf32>) -> (tensor<2x2x2xf32>, tensor<2xi32>) {
//!   %l, %info = stablehlo.custom_call @lapack_spotrf_ffi(%a) {backend_config = "",
//!       mhlo.backend_config = {uplo = 76 : ui8}, mhlo.frontend_attributes = {num_batch_dims = "1"},
//!       operand_layouts = [dense<[1, 2, 0]> : tensor<3xindex>],
//!       result_layouts = [dense<[1, 2, 0]> : tensor<3xindex>, dense<0> : tensor<1xindex>],
//!       output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>]}
//!       : (tensor<2x2x2xf32>) -> (tensor<2x2x2xf32>, tensor<2xi32>)
//!   return %l, %info : tensor<2x2x2xf32>, tensor<2xi32>
//! }"#)?;
//! let exe = client.compile(&program, &CompileOptions::new())?;
//! // [[4, 2], [2, 5]] (positive definite) and [[1, 2], [2, 1]] (not).
//! let a = client.upload(&[4.0f32, 2.0, 2.0, 5.0, 1.0, 2.0, 2.0, 1.0], &[2, 2, 2])?;
//! let out = exe.execute(&[&a], &ExecuteOptions::new())?;
//! let l = out[0].to_vec::<f32>()?;
//! assert_eq!(l[..4], [2.0, 2.0, 1.0, 2.0]); // L = [[2, 0], [1, 2]]; the upper 2 as it was
//! assert_eq!(out[1].to_vec::<i32>()?, [0, 2]); // the second minor of member 1 is negative
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::{kernels, Lapack};

use super::{batch_of, by_type, kernel_error, Element};
use pjrt_client::ffi::{Call, Handler, Rank, Signature};

pub(super) fn handler(prefix: char, target: &str, lapack: &'static Lapack) -> Handler {
    by_type!(prefix, typed(target, lapack))
}

fn typed<T: Element>(target: &str, lapack: &'static Lapack) -> Handler {
    let signature = Signature::new().arg::<T>(Rank::Any).ret_aliasing(0).ret::<i32>(Rank::Any).attr::<u8>("uplo");
    Handler::new(target, signature, move |call: &Call<'_>| {
        let uplo = call.attr::<u8>("uplo")?;
        let mut x = call.ret_in_place::<T>(0)?;
        let batch = batch_of("x", x.dims())?;
        let mut info = call.ret::<i32>(1)?;
        kernels::potrf(lapack, batch, uplo, x.as_mut_slice(), info.as_mut_slice()).map_err(kernel_error)
    })
}
