//! `gtsv`: tridiagonal solve by Gaussian elimination with partial pivoting
//! (`lapack_{s,d,c,z}gtsv_ffi`).

use super::{check_info, check_len, int, leading, member, Batch};
use crate::{KernelError, Lapack, Scalar};

/// Solves, for each member of the batch, `A z = b` for the `n` x `n` tridiagonal `A` of
/// sub-diagonal `dl`, diagonal `d` and super-diagonal `du`, `z` written over `b` (`n` x `nrhs`,
/// column-major; `batch` is `b`'s: `rows = n`, `cols = nrhs`).
///
/// The three diagonals have `n` elements each, as JAX's `tridiagonal_solve` takes them:
/// `A(i, i - 1) = dl[i]` (`dl[0]` is not read) and `A(i, i + 1) = du[i]` (`du[n - 1]` is not
/// read). All four are overwritten as LAPACK's `xGTSV` overwrites them (JAX's kernel returns
/// them all): `d` gets the diagonal of the `U` of `A`'s LU factorisation, `du[..n - 1]` its
/// first super-diagonal, `dl[1..n - 1]` its second super-diagonal (`dl[0]` and `du[n - 1]`,
/// outside LAPACK's arrays, are not touched). `info` gets LAPACK's code per member: `k > 0` when `U(k, k)` is
/// exactly zero (the solution was not computed and `b` holds partial work; JAX's lowering
/// replaces it with NaNs).
///
/// With `nrhs = 0` and `n > 0`, LAPACK still factors `A` (the diagonals and `info` are
/// written), as under JAX; with `n = 0` nothing is called and `info` is 0.
///
/// JAX's contract: operands `dl`, `d`, `du` (`[batch..., n]`) and `b` (`[batch..., n, nrhs]`,
/// column-major); results `dl_out`, `d_out`, `du_out`, `b_out` (aliasing the four operands, in
/// order) and `info` (`s32[batch...]`); no attributes.
///
/// ```no_run
/// use pjrt_lapack::{kernels::{self, Batch}, Lapack};
/// let lapack = Lapack::load("libscipy_openblas.so")?;
/// // [[2, 1], [1, 2]] z = [3, 3]
/// let (mut dl, mut d, mut du) = ([0.0f64, 1.0], [2.0, 2.0], [1.0, 0.0]);
/// let (mut b, mut info) = ([3.0, 3.0], [0; 1]);
/// kernels::gtsv(&lapack, Batch { count: 1, rows: 2, cols: 1 }, &mut dl, &mut d, &mut du, &mut b, &mut info)?;
/// assert_eq!((b, info), ([1.0, 1.0], [0]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn gtsv<T: Scalar>(
    lapack: &Lapack,
    batch: Batch,
    dl: &mut [T],
    d: &mut [T],
    du: &mut [T],
    b: &mut [T],
    info: &mut [i32],
) -> Result<(), KernelError> {
    let diagonals = batch.count.checked_mul(batch.rows);
    check_len("dl", dl.len(), diagonals)?;
    check_len("d", d.len(), diagonals)?;
    check_len("du", du.len(), diagonals)?;
    check_len("b", b.len(), batch.elements())?;
    check_len("info", info.len(), Some(batch.count))?;
    if batch.count == 0 || batch.rows == 0 {
        info.fill(0);
        return Ok(());
    }
    let (n, nrhs, ldb) = (int("rows", batch.rows)?, int("cols", batch.cols)?, leading("rows", batch.rows)?);
    let gtsv = lapack.routines::<T>().gtsv;
    for (i, code) in info.iter_mut().enumerate() {
        let sub = member(dl, i, batch.rows);
        let diag = member(d, i, batch.rows);
        let sup = member(du, i, batch.rows);
        let rhs = member(b, i, batch.matrix());
        let mut status = 0;
        // SAFETY: n >= 1; `sub[1..]` and `sup` hold at least the n - 1 elements LAPACK's DL and
        // DU have, `diag` the n of D, `rhs` n x nrhs elements with leading dimension n (= ldb):
        // lengths checked above. With nrhs = 0, `rhs` is empty and LAPACK reads no element of
        // B (it has no column). The scalars are live locals.
        unsafe {
            gtsv(
                &n,
                &nrhs,
                sub[1..].as_mut_ptr(),
                diag.as_mut_ptr(),
                sup.as_mut_ptr(),
                rhs.as_mut_ptr(),
                &ldb,
                &mut status,
            )
        };
        check_info("gtsv", status)?;
        *code = status;
    }
    Ok(())
}
