//! `gehrd`: reduction to upper Hessenberg form (`lapack_{s,d,c,z}gehrd_ffi`).

use super::{check_info, check_len, int, leading, member, workspace, Batch};
use crate::{KernelError, Lapack, Scalar};

/// Reduces each square matrix of `a` in place to upper Hessenberg form `H = Q^H A Q`, in
/// LAPACK's packed form: `H` on and above the first subdiagonal, and below it the Householder
/// vectors whose reflectors `H_i = I - tau_i v_i v_i^H` multiply to `Q = H_low ... H_{high-1}`
/// (the vector of `H_i` has zeros in its first `i` places, a unit in place `i + 1`, and the
/// rest in column `i` below the subdiagonal); the `n - 1` scalars per matrix go to `tau`
/// (zero outside `low..high`). `Q`'s first row and column are those of the identity, and
/// [`orgqr`](super::orgqr) on the `(n - 1) x (n - 1)` block below the first row and left of the
/// last column (with the `n - 1` scalars) gives the rest. `info` gets LAPACK's `info` per
/// matrix (always 0).
///
/// `low` and `high` are LAPACK's 1-based `ILO` and `IHI` (rows and columns outside
/// `low..=high` are taken as reduced already, as a balancing leaves them): JAX passes `1` and
/// `n`. Values LAPACK would refuse (`1 <= low <= max(1, n)`, `min(low, n) <= high <= n`) are
/// refused here first.
///
/// JAX's contract: operand `x` (`[batch..., n, n]`), attributes `low` and `high` (`i32`),
/// results `x_out` (aliasing `x`), `tau` (`[batch..., n - 1]`) and `info` (`s32[batch...]`).
///
/// ```no_run
/// use pjrt_lapack::{kernels::{self, Batch}, Lapack};
/// let lapack = Lapack::load("libscipy_openblas.so")?;
/// // [[1, 0, 1], [0, 1, 0], [1, 0, 1]], column-major.
/// let mut a = [1.0f64, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0];
/// let (mut tau, mut info) = ([0.0; 2], [7; 1]);
/// kernels::gehrd(&lapack, Batch { count: 1, rows: 3, cols: 3 }, 1, 3, &mut a, &mut tau, &mut info)?;
/// assert_eq!(info, [0]);
/// // The reflector maps column 1's (0, 1) below the diagonal to (-1, 0): h(2, 1) = -1.
/// assert!((a[1] + 1.0).abs() < 1e-12 && (tau[0] - 1.0).abs() < 1e-12);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn gehrd<T: Scalar>(
    lapack: &Lapack,
    batch: Batch,
    low: i32,
    high: i32,
    a: &mut [T],
    tau: &mut [T],
    info: &mut [i32],
) -> Result<(), KernelError> {
    if batch.rows != batch.cols {
        return Err(KernelError::Shape(format!("gehrd needs square matrices; got {} x {}", batch.rows, batch.cols)));
    }
    let order = batch.cols;
    check_len("x", a.len(), batch.elements())?;
    let reflectors = order.saturating_sub(1);
    check_len("tau", tau.len(), batch.count.checked_mul(reflectors))?;
    check_len("info", info.len(), Some(batch.count))?;
    let n = int("cols", order)?;
    if low < 1 || low > n.max(1) || high < low.min(n) || high > n {
        return Err(KernelError::Shape(format!(
            "gehrd's attributes must be 1 <= low <= max(1, n) and min(low, n) <= high <= n (1-based, as LAPACK's \
             ILO and IHI; JAX passes low = 1, high = n); got low {low}, high {high}, n {n}"
        )));
    }
    info.fill(0);
    // Nothing to reduce in a 0x0 or 1x1 matrix (LAPACK returns at once, and `tau` is empty).
    if order <= 1 || batch.count == 0 {
        return Ok(());
    }
    let lda = leading("rows", batch.rows)?;
    let gehrd = lapack.routines::<T>().gehrd;
    let (mut size, query, mut status) = (T::ZERO, -1, 0);
    // SAFETY: a query: LAPACK reads the scalars and writes one element to `size`; `a` and `tau`
    // hold at least one matrix and its n - 1 scalars (n >= 2, count >= 1, checked), not
    // touched by a query.
    unsafe { gehrd(&n, &low, &high, a.as_mut_ptr(), &lda, tau.as_mut_ptr(), &mut size, &query, &mut status) };
    check_info("gehrd", status)?;
    let lwork = workspace("gehrd workspace", size.workspace_size(), order)?;
    let mut work = vec![T::ZERO; lwork];
    let lwork_int = int("gehrd workspace", lwork)?;
    for (i, info) in info.iter_mut().enumerate() {
        let matrix = member(a, i, batch.matrix());
        let scalars = member(tau, i, reflectors);
        let mut status = 0;
        // SAFETY: `matrix` holds n x n elements with leading dimension n (= lda), `scalars`
        // n - 1, `work` lwork (lengths checked or made above); low and high are in LAPACK's
        // range (checked); the scalars are live locals.
        unsafe {
            gehrd(
                &n,
                &low,
                &high,
                matrix.as_mut_ptr(),
                &lda,
                scalars.as_mut_ptr(),
                work.as_mut_ptr(),
                &lwork_int,
                &mut status,
            )
        };
        check_info("gehrd", status)?;
        *info = status;
    }
    Ok(())
}
