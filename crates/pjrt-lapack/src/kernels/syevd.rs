//! `syevd` / `heevd`: eigenvalues (and eigenvectors) of symmetric / Hermitian matrices by
//! divide and conquer (`lapack_{s,d}syevd_ffi`, `lapack_{c,z}heevd_ffi`).

use num_complex::Complex;

use super::{check_info, check_len, int, leading, member, workspace, Batch};
use crate::{Heevd, KernelError, Lapack, Scalar, Syevd};

/// Refuses an attribute value outside `allowed` (LAPACK would print and return `info < 0`).
pub(super) fn choice(name: &'static str, value: u8, allowed: &[u8], expected: &'static str) -> Result<u8, KernelError> {
    if allowed.contains(&value) {
        Ok(value)
    } else {
        Err(KernelError::Attribute { name, value, shown: value as char, expected })
    }
}

/// Refuses a batch of non-square matrices.
pub(super) fn square(batch: Batch, routine: &str) -> Result<usize, KernelError> {
    if batch.rows != batch.cols {
        return Err(KernelError::Shape(format!(
            "{routine} takes square matrices, not {} x {}",
            batch.rows, batch.cols
        )));
    }
    Ok(batch.cols)
}

/// The sizes jaxlib passes (`eig::GetWorkspaceSize`, `GetIntWorkspaceSize`,
/// `GetComplexWorkspaceSize`, `GetRealWorkspaceSize`): LAPACK's documented minimums.
fn minimums(n: usize, vectors: bool) -> (usize, usize, usize, usize) {
    if vectors {
        // (real work, int work, complex work, real work of heevd)
        (1 + 6 * n + 2 * n * n, 3 + 5 * n, 2 * n + n * n, 1 + 5 * n + 2 * n * n)
    } else {
        (2 * n + 1, 1, n + 1, n.max(1))
    }
}

/// Checks the attributes and every length: `(uplo, mode, n)`, or `None` (and `info` zeros)
/// when there is nothing to compute (empty).
fn check(
    routine: &str,
    batch: Batch,
    uplo: u8,
    mode: u8,
    a: usize,
    w: usize,
    info: &mut [i32],
) -> Result<Option<(u8, u8, usize)>, KernelError> {
    let uplo = choice("uplo", uplo, b"LU", "'L' or 'U'")?;
    let mode = choice("mode", mode, b"NV", "'N' or 'V'")?;
    let n = square(batch, routine)?;
    check_len("x", a, batch.elements())?;
    check_len("eigenvalues", w, batch.count.checked_mul(n))?;
    check_len("info", info.len(), Some(batch.count))?;
    if n == 0 || batch.count == 0 {
        info.fill(0);
        return Ok(None);
    }
    Ok(Some((uplo, mode, n)))
}

/// Eigenvalues, and with `mode = b'V'` eigenvectors, of each real symmetric `n` x `n` matrix
/// of `a`, of which only the triangle `uplo` (`b'L'` or `b'U'`) is read: the eigenvalues in
/// ascending order to `w` (`n` per matrix), the orthonormal eigenvectors over `a` (column `j`
/// for `w[j]`; with `mode = b'N'` the triangle is destroyed), LAPACK's `info` per matrix to
/// `info` (`> 0`: the algorithm failed to converge).
///
/// JAX's contract: operand `x`, attributes `uplo` and `mode`, results `x_out` (aliasing `x`),
/// `eigenvalues` and `info` (`s32`). The workspace is at least the size jaxlib passes, more
/// where LAPACK's query asks for it.
///
/// ```no_run
/// use pjrt_lapack::{kernels::{self, Batch}, Lapack};
/// let lapack = Lapack::load("libscipy_openblas.so")?;
/// let mut a = [2.0f64, 1.0, 1.0, 2.0];
/// let (mut w, mut info) = ([0.0; 2], [0; 1]);
/// kernels::syevd(&lapack, Batch { count: 1, rows: 2, cols: 2 }, b'L', b'V', &mut a, &mut w, &mut info)?;
/// assert!((w[0] - 1.0).abs() < 1e-12 && (w[1] - 3.0).abs() < 1e-12);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn syevd<T>(
    lapack: &Lapack,
    batch: Batch,
    uplo: u8,
    mode: u8,
    a: &mut [T],
    w: &mut [T],
    info: &mut [i32],
) -> Result<(), KernelError>
where
    T: Scalar<Real = T, Eigh = Syevd<T>>,
{
    let Some((uplo, mode, n)) = check("syevd", batch, uplo, mode, a.len(), w.len(), info)? else {
        return Ok(());
    };
    let (n_i, lda) = (int("n", n)?, leading("n", n)?);
    let syevd = lapack.routines::<T>().eigh;
    let (min_work, min_iwork, _, _) = minimums(n, mode == b'V');

    // Workspace query (LWORK = LIWORK = -1) on the first matrix.
    let (mut work_q, mut iwork_q, mut status) = ([T::ZERO], [0i32], 0);
    // SAFETY: a query: LAPACK writes the sizes to `work_q[0]` and `iwork_q[0]` only; `a` and
    // `w` hold at least n x n and n elements (checked above), the scalars are live locals.
    unsafe {
        syevd(
            &mode,
            &uplo,
            &n_i,
            a.as_mut_ptr(),
            &lda,
            w.as_mut_ptr(),
            work_q.as_mut_ptr(),
            &-1,
            iwork_q.as_mut_ptr(),
            &-1,
            &mut status,
            1,
            1,
        )
    };
    check_info("syevd", status)?;
    let lwork = workspace("syevd work", work_q[0].workspace_size(), min_work)?;
    let liwork = workspace("syevd iwork", f64::from(iwork_q[0]), min_iwork)?;
    let (mut work, mut iwork) = (vec![T::ZERO; lwork], vec![0i32; liwork]);
    let (lwork, liwork) = (int("lwork", lwork)?, int("liwork", liwork)?);
    for (i, info_i) in info.iter_mut().enumerate() {
        let matrix = member(a, i, n * n);
        let values = member(w, i, n);
        let mut status = 0;
        // SAFETY: `matrix` holds n x n elements with leading dimension n (= lda), `values` n,
        // `work` lwork and `iwork` liwork elements (allocated above with those lengths); the
        // character arguments are one byte each, as their hidden lengths say.
        unsafe {
            syevd(
                &mode,
                &uplo,
                &n_i,
                matrix.as_mut_ptr(),
                &lda,
                values.as_mut_ptr(),
                work.as_mut_ptr(),
                &lwork,
                iwork.as_mut_ptr(),
                &liwork,
                &mut status,
                1,
                1,
            )
        };
        check_info("syevd", status)?;
        *info_i = status;
    }
    Ok(())
}

/// [`syevd`] for complex Hermitian matrices (`CHEEVD` / `ZHEEVD`): the eigenvalues are real
/// (`w` of the real type), the eigenvectors unitary.
///
/// JAX's contract: as [`syevd`]'s, with `eigenvalues` of the real type.
///
/// ```no_run
/// use num_complex::Complex;
/// use pjrt_lapack::{kernels::{self, Batch}, Lapack};
/// let lapack = Lapack::load("libscipy_openblas.so")?;
/// // [[2, -i], [i, 2]], column-major: eigenvalues 1 and 3.
/// let mut a = [Complex::new(2.0f64, 0.0), Complex::new(0.0, 1.0), Complex::new(0.0, -1.0), Complex::new(2.0, 0.0)];
/// let (mut w, mut info) = ([0.0f64; 2], [0; 1]);
/// kernels::heevd(&lapack, Batch { count: 1, rows: 2, cols: 2 }, b'L', b'V', &mut a, &mut w, &mut info)?;
/// assert!((w[0] - 1.0).abs() < 1e-12 && (w[1] - 3.0).abs() < 1e-12);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn heevd<R>(
    lapack: &Lapack,
    batch: Batch,
    uplo: u8,
    mode: u8,
    a: &mut [Complex<R>],
    w: &mut [R],
    info: &mut [i32],
) -> Result<(), KernelError>
where
    R: Scalar<Real = R>,
    Complex<R>: Scalar<Real = R, Eigh = Heevd<Complex<R>, R>>,
{
    let Some((uplo, mode, n)) = check("heevd", batch, uplo, mode, a.len(), w.len(), info)? else {
        return Ok(());
    };
    let (n_i, lda) = (int("n", n)?, leading("n", n)?);
    let heevd = lapack.routines::<Complex<R>>().eigh;
    let (_, min_iwork, min_work, min_rwork) = minimums(n, mode == b'V');

    let (mut work_q, mut rwork_q, mut iwork_q, mut status) = ([Complex::<R>::ZERO], [R::ZERO], [0i32], 0);
    // SAFETY: a query: LAPACK writes the sizes to the first element of `work_q`, `rwork_q`
    // and `iwork_q` only; `a` and `w` hold at least n x n and n elements (checked above).
    unsafe {
        heevd(
            &mode,
            &uplo,
            &n_i,
            a.as_mut_ptr(),
            &lda,
            w.as_mut_ptr(),
            work_q.as_mut_ptr(),
            &-1,
            rwork_q.as_mut_ptr(),
            &-1,
            iwork_q.as_mut_ptr(),
            &-1,
            &mut status,
            1,
            1,
        )
    };
    check_info("heevd", status)?;
    let lwork = workspace("heevd work", work_q[0].workspace_size(), min_work)?;
    let lrwork = workspace("heevd rwork", rwork_q[0].workspace_size(), min_rwork)?;
    let liwork = workspace("heevd iwork", f64::from(iwork_q[0]), min_iwork)?;
    let (mut work, mut rwork, mut iwork) = (vec![Complex::<R>::ZERO; lwork], vec![R::ZERO; lrwork], vec![0i32; liwork]);
    let (lwork, lrwork, liwork) = (int("lwork", lwork)?, int("lrwork", lrwork)?, int("liwork", liwork)?);
    for (i, info_i) in info.iter_mut().enumerate() {
        let matrix = member(a, i, n * n);
        let values = member(w, i, n);
        let mut status = 0;
        // SAFETY: `matrix` holds n x n elements with leading dimension n (= lda), `values` n,
        // `work`, `rwork` and `iwork` lwork, lrwork and liwork elements (allocated above).
        unsafe {
            heevd(
                &mode,
                &uplo,
                &n_i,
                matrix.as_mut_ptr(),
                &lda,
                values.as_mut_ptr(),
                work.as_mut_ptr(),
                &lwork,
                rwork.as_mut_ptr(),
                &lrwork,
                iwork.as_mut_ptr(),
                &liwork,
                &mut status,
                1,
                1,
            )
        };
        check_info("heevd", status)?;
        *info_i = status;
    }
    Ok(())
}
