//! `orgqr` / `ungqr`: the orthonormal factor of a Householder QR (`lapack_{s,d}orgqr_ffi`,
//! `lapack_{c,z}ungqr_ffi`).

use super::{check_info, check_len, int, leading, member, workspace, Batch};
use crate::{KernelError, Lapack, Scalar};

/// Overwrites each matrix of `a` (`rows` x `cols`, holding the first `k` Householder vectors
/// below its diagonal, as [`geqrf`](super::geqrf) leaves them) with the first `cols` columns
/// of `Q = H_1 ... H_k`, `H_i = I - tau_i v_i v_i^H`: orthonormal columns. `tau` holds `k`
/// scalars per matrix; `rows >= cols >= k` (LAPACK's requirement, refused otherwise).
///
/// JAX's contract: operands `x` and `tau` (`[batch..., k]`: `k` is its last dimension),
/// result `x_out` (aliasing `x`); no `info`.
///
/// ```no_run
/// use pjrt_lapack::{kernels::{self, Batch}, Lapack};
/// let lapack = Lapack::load("libscipy_openblas.so")?;
/// let batch = Batch { count: 1, rows: 2, cols: 1 };
/// let (mut a, mut tau) = ([3.0f64, 4.0], [0.0; 1]);
/// kernels::geqrf(&lapack, batch, &mut a, &mut tau)?;
/// kernels::orgqr(&lapack, batch, 1, &mut a, &tau)?;
/// assert!((a[0] + 0.6).abs() < 1e-12 && (a[1] + 0.8).abs() < 1e-12); // Q = -(3, 4) / 5
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn orgqr<T: Scalar>(lapack: &Lapack, batch: Batch, k: usize, a: &mut [T], tau: &[T]) -> Result<(), KernelError> {
    check_len("x", a.len(), batch.elements())?;
    check_len("tau", tau.len(), batch.count.checked_mul(k))?;
    if batch.rows < batch.cols || batch.cols < k {
        return Err(KernelError::Shape(format!(
            "orgqr needs rows >= cols >= k (the number of reflectors, tau's last dimension); got rows {}, cols \
             {}, k {k}",
            batch.rows, batch.cols
        )));
    }
    if batch.cols == 0 || batch.count == 0 {
        return Ok(());
    }
    let (m, n, kk, lda) =
        (int("rows", batch.rows)?, int("cols", batch.cols)?, int("k", k)?, leading("rows", batch.rows)?);
    let orgqr = lapack.routines::<T>().orgqr;
    let (mut size, query, mut status) = (T::ZERO, -1, 0);
    // SAFETY: a query: LAPACK reads the scalars and writes one element to `size`; `a` holds at
    // least one matrix (cols > 0 and count > 0 here), and neither it nor `tau` is touched by a
    // query.
    unsafe { orgqr(&m, &n, &kk, a.as_mut_ptr(), &lda, tau.as_ptr(), &mut size, &query, &mut status) };
    check_info("orgqr", status)?;
    let lwork = workspace("orgqr workspace", size.workspace_size(), batch.cols)?;
    let mut work = vec![T::ZERO; lwork];
    let lwork_int = int("orgqr workspace", lwork)?;
    for i in 0..batch.count {
        let matrix = member(a, i, batch.matrix());
        let scalars = &tau[i * k..(i + 1) * k];
        let mut status = 0;
        // SAFETY: `matrix` holds rows x cols elements with leading dimension rows (= lda),
        // rows >= cols >= k (checked); `scalars` holds k elements, `work` lwork; the scalars
        // are live locals.
        unsafe {
            orgqr(&m, &n, &kk, matrix.as_mut_ptr(), &lda, scalars.as_ptr(), work.as_mut_ptr(), &lwork_int, &mut status)
        };
        check_info("orgqr", status)?;
    }
    Ok(())
}
