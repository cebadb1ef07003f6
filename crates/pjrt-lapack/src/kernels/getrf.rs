//! `getrf`: LU factorisation with partial pivoting (`lapack_{s,d,c,z}getrf_ffi`).

use super::{check_info, check_len, int, leading, member, Batch};
use crate::{KernelError, Lapack, Scalar};

/// Factors each matrix of `a` in place as `P L U` (LAPACK's packed form: `L` below the
/// diagonal with its unit diagonal implied, `U` on and above), writing the 1-based pivot rows
/// (`min(rows, cols)` per matrix) to `ipiv` and LAPACK's `info` per matrix (`> 0`: `U(i, i)`
/// is exactly zero, the matrix is singular; the factors are still written) to `info`.
///
/// JAX's contract: operand `x`, results `x_out` (aliasing `x`), `ipiv` and `info` (`s32`).
///
/// ```no_run
/// use pjrt_lapack::{kernels::{self, Batch}, Lapack};
/// let lapack = Lapack::load("libscipy_openblas.so")?;
/// let mut a = [0.0f32; 4]; // singular
/// let (mut ipiv, mut info) = ([0; 2], [0; 1]);
/// kernels::getrf(&lapack, Batch { count: 1, rows: 2, cols: 2 }, &mut a, &mut ipiv, &mut info)?;
/// assert_eq!(info, [1]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn getrf<T: Scalar>(
    lapack: &Lapack,
    batch: Batch,
    a: &mut [T],
    ipiv: &mut [i32],
    info: &mut [i32],
) -> Result<(), KernelError> {
    check_len("x", a.len(), batch.elements())?;
    check_len("ipiv", ipiv.len(), batch.count.checked_mul(batch.min_dim()))?;
    check_len("info", info.len(), Some(batch.count))?;
    if batch.min_dim() == 0 {
        info.fill(0);
        return Ok(());
    }
    let (m, n, lda) = (int("rows", batch.rows)?, int("cols", batch.cols)?, leading("rows", batch.rows)?);
    let getrf = lapack.routines::<T>().getrf;
    for (i, info) in info.iter_mut().enumerate() {
        let matrix = member(a, i, batch.matrix());
        let pivots = member(ipiv, i, batch.min_dim());
        let mut status = 0;
        // SAFETY: `matrix` holds rows x cols elements with leading dimension rows (= lda),
        // `pivots` min(rows, cols) (lengths checked above); the scalars are live locals.
        unsafe { getrf(&m, &n, matrix.as_mut_ptr(), &lda, pivots.as_mut_ptr(), &mut status) };
        check_info("getrf", status)?;
        *info = status;
    }
    Ok(())
}
