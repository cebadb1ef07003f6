//! `lapack_{s,d,c,z}getrf_ffi`: LU with partial pivoting (`jnp.linalg.solve`, `inv`, `det`,
//! `slogdet`, `jax.scipy.linalg.lu`, `lax.linalg.lu`).
//!
//! JAX's contract: operand `x` (`[batch..., m, n]`, column-major); results `x_out` (aliasing
//! `x`: the packed `L` and `U`), `ipiv` (`s32[batch..., min(m, n)]`, 1-based) and `info`
//! (`s32[batch...]`); no attributes.

use crate::{kernels, Lapack};

use super::{batch_of, by_type, kernel_error, Element};
use pjrt_client::ffi::{Call, Handler, Rank, Signature};

pub(super) fn handler(prefix: char, target: &str, lapack: &'static Lapack) -> Handler {
    by_type!(prefix, typed(target, lapack))
}

fn typed<T: Element>(target: &str, lapack: &'static Lapack) -> Handler {
    let signature = Signature::new().arg::<T>(Rank::Any).ret_aliasing(0).ret::<i32>(Rank::Any).ret::<i32>(Rank::Any);
    Handler::new(target, signature, move |call: &Call<'_>| {
        let mut x = call.ret_in_place::<T>(0)?;
        let batch = batch_of("x", x.dims())?;
        let (mut ipiv, mut info) = (call.ret::<i32>(1)?, call.ret::<i32>(2)?);
        kernels::getrf(lapack, batch, x.as_mut_slice(), ipiv.as_mut_slice(), info.as_mut_slice()).map_err(kernel_error)
    })
}
