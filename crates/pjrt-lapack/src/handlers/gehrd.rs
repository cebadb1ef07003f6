//! `lapack_{s,d,c,z}gehrd_ffi`: reduction to upper Hessenberg form
//! (`jax.scipy.linalg.hessenberg`, `lax.linalg.hessenberg`).
//!
//! JAX's contract: operand `x` (`[batch..., n, n]`, column-major); attributes `low` and `high`
//! (`i32`, LAPACK's 1-based `ILO` and `IHI`: JAX passes `low = 1`, `high = n`); results
//! `x_out` (aliasing `x`: `H` on and above the first subdiagonal, the Householder vectors
//! below), `tau` (`[batch..., n - 1]`) and `info` (`s32[batch...]`; JAX's lowering turns the
//! matrices of nonzero `info` into NaN).
//!
//! The call below is written as JAX writes it: the attributes in `mhlo.backend_config` (a
//! dictionary), `api_version` left at its default, which XLA turns into a typed FFI call.
//!
//! ```
//! use pjrt_client::{Client, ClientOptions, CompileOptions, ExecuteOptions, Plugin, Program};
//! # let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
//! # pjrt_lapack::register(|| pjrt_plugins::install_verified(&pjrt_plugins::OPENBLAS, |_| ()));
//! let client = Client::new(&plugin, &ClientOptions::new())?;
//! let program = Program::mlir_text(r#"
//! func.func public @main(%a: tensor<3x3xf64>) -> (tensor<3x3xf64>, tensor<2xf64>, tensor<i32>) {
//!   %h, %tau, %info = stablehlo.custom_call @lapack_dgehrd_ffi(%a) {mhlo.backend_config = {high = 3 : i32, low = 1 : i32},
//!       operand_layouts = [dense<[0, 1]> : tensor<2xindex>],
//!       output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>],
//!       result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>, dense<> : tensor<0xindex>]}
//!       : (tensor<3x3xf64>) -> (tensor<3x3xf64>, tensor<2xf64>, tensor<i32>)
//!   return %h, %tau, %info : tensor<3x3xf64>, tensor<2xf64>, tensor<i32>
//! }"#)?;
//! let exe = client.compile(&program, &CompileOptions::new())?;
//! let a = client.upload(&[1.0f64, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0], &[3, 3])?;
//! let out = exe.execute(&[&a], &ExecuteOptions::new())?;
//! // One reflector (tau = 1, vector (0, 1, 1)) swaps rows and columns 2 and 3 with a sign:
//! // H = [[1, -1, 0], [-1, 1, 0], [0, 0, 1]], the vector's tail 1 stored at (3, 1).
//! let (h, tau) = (out[0].to_vec::<f64>()?, out[1].to_vec::<f64>()?);
//! let close = |x: &[f64], y: &[f64]| x.iter().zip(y).all(|(a, b)| (a - b).abs() < 1e-12);
//! assert!(close(&h, &[1.0, -1.0, 0.0, -1.0, 1.0, 0.0, 1.0, 0.0, 1.0]), "{h:?}");
//! assert!(close(&tau, &[1.0, 0.0]), "{tau:?}");
//! assert_eq!(out[2].to_vec::<i32>()?, [0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::{kernels, Lapack};

use super::geqrf::expect_dims;
use super::{batch_of, by_type, kernel_error, Element};
use pjrt_client::ffi::{Call, Handler, Rank, Signature};

pub(super) fn handler(prefix: char, target: &str, lapack: &'static Lapack) -> Handler {
    by_type!(prefix, typed(target, lapack))
}

fn typed<T: Element>(target: &str, lapack: &'static Lapack) -> Handler {
    let signature = Signature::new()
        .arg::<T>(Rank::Any)
        .attr::<i32>("low")
        .attr::<i32>("high")
        .ret_aliasing(0)
        .ret::<T>(Rank::Any)
        .ret::<i32>(Rank::Any);
    Handler::new(target, signature, move |call: &Call<'_>| {
        let (low, high) = (call.attr::<i32>("low")?, call.attr::<i32>("high")?);
        let mut x = call.ret_in_place::<T>(0)?;
        let batch = batch_of("x", x.dims())?;
        let (mut tau, mut info) = (call.ret::<T>(1)?, call.ret::<i32>(2)?);
        expect_dims("tau", tau.dims(), x.dims(), &[batch.cols.saturating_sub(1)])?;
        expect_dims("info", info.dims(), x.dims(), &[])?;
        kernels::gehrd(lapack, batch, low, high, x.as_mut_slice(), tau.as_mut_slice(), info.as_mut_slice())
            .map_err(kernel_error)
    })
}
