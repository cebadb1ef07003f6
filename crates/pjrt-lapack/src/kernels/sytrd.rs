//! `sytrd` / `hetrd`: reduction of a symmetric or Hermitian matrix to real tridiagonal form
//! (`lapack_{s,d}sytrd_ffi`, `lapack_{c,z}hetrd_ffi`).

use super::{check_info, check_len, int, leading, member, workspace, Batch};
use crate::{KernelError, Lapack, Scalar};

/// Reduces each symmetric (Hermitian) matrix of `a`, of which only the triangle `uplo` names
/// is read (`b'L'` lower, `b'U'` upper), to a real symmetric tridiagonal `T = Q^H A Q`: its
/// diagonal goes to `d` (`n` per matrix) and its off-diagonal to `e` (`n - 1`, real for every
/// element type), and the triangle holds LAPACK's packed Householder vectors of `Q` with their
/// scalars in `tau` (`n - 1`), the tridiagonal copied next to them (`uplo = b'L'`: `Q = H_1
/// ... H_{n-1}`, the vector of `H_i` below the subdiagonal of column `i`; `b'U'`: `Q = H_{n-1}
/// ... H_1`, the vector of `H_i` above the superdiagonal of column `i + 1`). `info` gets
/// LAPACK's `info` per matrix (always 0).
///
/// JAX's contract: operand `x` (`[batch..., n, n]`), attribute `uplo` (`u8`: `'L'` or `'U'`),
/// results `x_out` (aliasing `x`), `d` and `e` (of the real type), `tau`, and `info`
/// (`s32[batch...]`).
///
/// ```no_run
/// use pjrt_lapack::{kernels::{self, Batch}, Lapack};
/// let lapack = Lapack::load("libscipy_openblas.so")?;
/// // [[2, 1], [1, 2]] is tridiagonal already: d = (2, 2), e = (1) up to sign.
/// let mut a = [2.0f64, 1.0, 1.0, 2.0];
/// let (mut d, mut e, mut tau, mut info) = ([0.0; 2], [0.0; 1], [0.0; 1], [0; 1]);
/// let batch = Batch { count: 1, rows: 2, cols: 2 };
/// kernels::sytrd(&lapack, batch, b'L', &mut a, &mut d, &mut e, &mut tau, &mut info)?;
/// assert_eq!((d, e[0].abs(), info), ([2.0, 2.0], 1.0, [0]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[allow(clippy::too_many_arguments)] // JAX's operand and results, one slice each.
pub fn sytrd<T: Scalar>(
    lapack: &Lapack,
    batch: Batch,
    uplo: u8,
    a: &mut [T],
    d: &mut [T::Real],
    e: &mut [T::Real],
    tau: &mut [T],
    info: &mut [i32],
) -> Result<(), KernelError> {
    if uplo != b'L' && uplo != b'U' {
        return Err(KernelError::Attribute { name: "uplo", value: uplo, shown: uplo as char, expected: "'L' or 'U'" });
    }
    if batch.rows != batch.cols {
        return Err(KernelError::Shape(format!("sytrd needs square matrices; got {} x {}", batch.rows, batch.cols)));
    }
    let order = batch.cols;
    let off = order.saturating_sub(1);
    check_len("x", a.len(), batch.elements())?;
    check_len("d", d.len(), batch.count.checked_mul(order))?;
    check_len("e", e.len(), batch.count.checked_mul(off))?;
    check_len("tau", tau.len(), batch.count.checked_mul(off))?;
    check_len("info", info.len(), Some(batch.count))?;
    info.fill(0);
    if order == 0 || batch.count == 0 {
        return Ok(());
    }
    let (n, lda) = (int("cols", order)?, leading("rows", batch.rows)?);
    let sytrd = lapack.routines::<T>().sytrd;
    let (mut size, query, mut status) = (T::ZERO, -1, 0);
    // SAFETY: a query: LAPACK reads the scalars and writes one element to `size`; the slices
    // hold at least one matrix's share (count >= 1, n >= 1, checked; `e` and `tau` have n - 1
    // elements, which LAPACK takes as their dimension) and are not touched by a query.
    unsafe {
        sytrd(
            &uplo,
            &n,
            a.as_mut_ptr(),
            &lda,
            d.as_mut_ptr(),
            e.as_mut_ptr(),
            tau.as_mut_ptr(),
            &mut size,
            &query,
            &mut status,
            1,
        )
    };
    check_info("sytrd", status)?;
    let lwork = workspace("sytrd workspace", size.workspace_size(), 1)?;
    let mut work = vec![T::ZERO; lwork];
    let lwork_int = int("sytrd workspace", lwork)?;
    for (i, info) in info.iter_mut().enumerate() {
        let matrix = member(a, i, batch.matrix());
        let diagonal = member(d, i, order);
        let off_diagonal = member(e, i, off);
        let scalars = member(tau, i, off);
        let mut status = 0;
        // SAFETY: `matrix` holds n x n elements with leading dimension n (= lda), `diagonal`
        // n, `off_diagonal` and `scalars` n - 1 (LAPACK's dimensions for D, E and TAU: for
        // n = 1 it touches neither of the empty two), `work` lwork (lengths checked or made
        // above); `uplo` is 'L' or 'U' (checked), its hidden length 1; the scalars are live
        // locals.
        unsafe {
            sytrd(
                &uplo,
                &n,
                matrix.as_mut_ptr(),
                &lda,
                diagonal.as_mut_ptr(),
                off_diagonal.as_mut_ptr(),
                scalars.as_mut_ptr(),
                work.as_mut_ptr(),
                &lwork_int,
                &mut status,
                1,
            )
        };
        check_info("sytrd", status)?;
        *info = status;
    }
    Ok(())
}
