//! `lapack_{s,d,c,z}gtsv_ffi`: tridiagonal solve (`lax.linalg.tridiagonal_solve`, without
//! `perturb_singular`, which lowers to another target).
//!
//! JAX's contract: operands `dl`, `d`, `du` (`[batch..., n]`: sub-diagonal with `dl[0]` unused,
//! diagonal, super-diagonal with `du[n - 1]` unused) and `b` (`[batch..., n, nrhs]`,
//! column-major); results `dl_out`, `d_out`, `du_out`, `b_out`, each aliasing the operand of
//! its position (all four are overwritten, as LAPACK's `xGTSV` does: the diagonals with its
//! `U` factor, `b` with the solution), and `info` (`s32[batch...]`, `k > 0`: `U(k, k)` is
//! exactly zero, nothing solved; JAX's lowering keeps only `b_out`, replaced with NaNs there).
//!
//! ```
//! use pjrt_client::{Client, ClientOptions, CompileOptions, ExecuteOptions, Plugin, Program};
//! # let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
//! # pjrt_lapack::register(|| pjrt_plugins::install_verified(&pjrt_plugins::OPENBLAS, |_| ()));
//! let client = Client::new(&plugin, &ClientOptions::new())?;
//! // The custom call as JAX 0.10 prints it (`mhlo.backend_config` holds the attributes of an
//! // FFI call; the `sdy.sharding_rule` left out).
//! let program = Program::mlir_text(r#"
//! func.func public @main(%dl: tensor<3xf64>, %d: tensor<3xf64>, %du: tensor<3xf64>, %b: tensor<3x1xf64>)
//!     -> (tensor<3x1xf64>, tensor<i32>) {
//!   %0:5 = stablehlo.custom_call @lapack_dgtsv_ffi(%dl, %d, %du, %b) {backend_config = "",
//!       mhlo.backend_config = {}, mhlo.frontend_attributes = {num_batch_dims = "0"},
//!       operand_layouts = [dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>, dense<[0, 1]> : tensor<2xindex>],
//!       result_layouts = [dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>, dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>],
//!       output_operand_aliases = [
//!         #stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>,
//!         #stablehlo.output_operand_alias<output_tuple_indices = [1], operand_index = 1, operand_tuple_indices = []>,
//!         #stablehlo.output_operand_alias<output_tuple_indices = [2], operand_index = 2, operand_tuple_indices = []>,
//!         #stablehlo.output_operand_alias<output_tuple_indices = [3], operand_index = 3, operand_tuple_indices = []>]}
//!       : (tensor<3xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3x1xf64>)
//!       -> (tensor<3xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3x1xf64>, tensor<i32>)
//!   return %0#3, %0#4 : tensor<3x1xf64>, tensor<i32>
//! }"#)?;
//! let exe = client.compile(&program, &CompileOptions::new())?;
//! // [[2, 1, 0], [1, 2, 1], [0, 1, 2]] z = [4, 8, 8]; dl[0] and du[2] are not read.
//! let dl = client.upload(&[0.0f64, 1.0, 1.0], &[3])?;
//! let d = client.upload(&[2.0f64, 2.0, 2.0], &[3])?;
//! let du = client.upload(&[1.0f64, 1.0, 0.0], &[3])?;
//! let b = client.upload(&[4.0f64, 8.0, 8.0], &[3, 1])?;
//! let out = exe.execute(&[&dl, &d, &du, &b], &ExecuteOptions::new())?;
//! let z = out[0].to_vec::<f64>()?;
//! assert!(z.iter().zip([1.0, 2.0, 3.0]).all(|(z, e)| (z - e).abs() < 1e-14), "{z:?}");
//! assert_eq!(out[1].to_vec::<i32>()?, [0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::{kernels, Lapack};

use super::{batch_of, by_type, kernel_error, Element};
use pjrt_client::ffi::{Call, FfiError, Handler, Rank, Signature};

pub(super) fn handler(prefix: char, target: &str, lapack: &'static Lapack) -> Handler {
    by_type!(prefix, typed(target, lapack))
}

fn typed<T: Element>(target: &str, lapack: &'static Lapack) -> Handler {
    let signature = Signature::new()
        .arg::<T>(Rank::Any)
        .arg::<T>(Rank::Any)
        .arg::<T>(Rank::Any)
        .arg::<T>(Rank::Any)
        .ret_aliasing(0)
        .ret_aliasing(1)
        .ret_aliasing(2)
        .ret_aliasing(3)
        .ret::<i32>(Rank::Any);
    Handler::new(target, signature, move |call: &Call<'_>| {
        let (mut dl, mut d, mut du) =
            (call.ret_in_place::<T>(0)?, call.ret_in_place::<T>(1)?, call.ret_in_place::<T>(2)?);
        let mut b = call.ret_in_place::<T>(3)?;
        let batch = batch_of("b", b.dims())?;
        let vector = &b.dims()[..b.dims().len() - 1];
        for (what, dims) in [("dl", dl.dims()), ("d", d.dims()), ("du", du.dims())] {
            if dims != vector {
                return Err(FfiError::invalid_argument(format!(
                    "{what} has dimensions {dims:?}, but b ({:?}) makes {vector:?}: the diagonals have b's \
                     dimensions but its last",
                    b.dims()
                )));
            }
        }
        let mut info = call.ret::<i32>(4)?;
        kernels::gtsv(
            lapack,
            batch,
            dl.as_mut_slice(),
            d.as_mut_slice(),
            du.as_mut_slice(),
            b.as_mut_slice(),
            info.as_mut_slice(),
        )
        .map_err(kernel_error)
    })
}
