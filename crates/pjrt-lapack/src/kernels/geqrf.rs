//! `geqrf`: Householder QR factorisation (`lapack_{s,d,c,z}geqrf_ffi`).

use super::{check_info, check_len, int, leading, member, workspace, Batch};
use crate::{KernelError, Lapack, Scalar};

/// Factors each matrix of `a` in place as `Q R` in LAPACK's packed form: `R` on and above the
/// diagonal, and below it the Householder vectors `v_i` whose reflectors `H_i = I - tau_i v_i
/// v_i^H` (unit first element implied) multiply to `Q = H_1 ... H_k`, `k = min(rows, cols)`;
/// the scalars `tau_i` go to `tau` (`k` per matrix). [`orgqr`](super::orgqr) turns the packed
/// form into `Q`.
///
/// JAX's contract: operand `x`, results `x_out` (aliasing `x`) and `tau`; no `info` (`xGEQRF`
/// cannot fail on valid arguments).
///
/// ```no_run
/// use pjrt_lapack::{kernels::{self, Batch}, Lapack};
/// let lapack = Lapack::load("libscipy_openblas.so")?;
/// // [[3], [4]]: R = -5, the reflector maps (3, 4) to (-5, 0).
/// let (mut a, mut tau) = ([3.0f64, 4.0], [0.0; 1]);
/// kernels::geqrf(&lapack, Batch { count: 1, rows: 2, cols: 1 }, &mut a, &mut tau)?;
/// assert!((a[0] + 5.0).abs() < 1e-12 && (tau[0] - 1.6).abs() < 1e-12);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn geqrf<T: Scalar>(lapack: &Lapack, batch: Batch, a: &mut [T], tau: &mut [T]) -> Result<(), KernelError> {
    check_len("x", a.len(), batch.elements())?;
    let k = batch.min_dim();
    check_len("tau", tau.len(), batch.count.checked_mul(k))?;
    if k == 0 || batch.count == 0 {
        return Ok(());
    }
    let (m, n, lda) = (int("rows", batch.rows)?, int("cols", batch.cols)?, leading("rows", batch.rows)?);
    let geqrf = lapack.routines::<T>().geqrf;
    // The workspace size, asked once for the batch (LWORK = -1 writes only WORK(1)).
    let (mut size, query, mut status) = (T::ZERO, -1, 0);
    // SAFETY: a query: LAPACK reads the scalars and writes one element to `size`; `a` and
    // `tau` hold at least one matrix and its `tau` (checked above), not touched by a query.
    unsafe { geqrf(&m, &n, a.as_mut_ptr(), &lda, tau.as_mut_ptr(), &mut size, &query, &mut status) };
    check_info("geqrf", status)?;
    let lwork = workspace("geqrf workspace", size.workspace_size(), batch.cols)?;
    let mut work = vec![T::ZERO; lwork];
    let lwork_int = int("geqrf workspace", lwork)?;
    for i in 0..batch.count {
        let matrix = member(a, i, batch.matrix());
        let scalars = member(tau, i, k);
        let mut status = 0;
        // SAFETY: `matrix` holds rows x cols elements with leading dimension rows (= lda),
        // `scalars` min(rows, cols), `work` lwork (lengths checked or made above); the
        // scalars are live locals.
        unsafe {
            geqrf(&m, &n, matrix.as_mut_ptr(), &lda, scalars.as_mut_ptr(), work.as_mut_ptr(), &lwork_int, &mut status)
        };
        check_info("geqrf", status)?;
    }
    Ok(())
}
