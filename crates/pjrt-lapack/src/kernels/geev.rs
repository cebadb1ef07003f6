//! `geev`: eigenvalues and left/right eigenvectors of general matrices
//! (`lapack_{s,d,c,z}geev_ffi`).

use num_complex::Complex;

use super::syevd::{choice, square};
use super::{check_info, check_len, int, leading, member, workspace, Batch};
use crate::{GeevComplex, GeevReal, KernelError, Lapack, Scalar};

/// The info jaxlib reports for a matrix with a NaN or infinite element (LAPACK is not called).
const NOT_FINITE: i32 = -4;

/// Turns LAPACK's packed real eigenvectors of one `n` x `n` matrix (a complex pair `j`,
/// `j + 1` as the real part in column `j` and the imaginary part in column `j + 1`) into
/// complex columns, as jaxlib's `UnpackEigenvectors` does: column `j + 1` is the conjugate.
fn unpack<T: Copy + Default + PartialEq + std::ops::Neg<Output = T> + Into<f64>>(
    n: usize,
    imag: &[T],
    packed: &[T],
    out: &mut [Complex<T>],
) {
    let zero = T::default();
    let mut j = 0;
    while j < n {
        let im: f64 = imag[j].into();
        // A last column cannot start a pair (LAPACK never writes one; refuse to read past).
        if im == 0.0 || im.is_nan() || j + 1 == n {
            for i in 0..n {
                out[j * n + i] = Complex::new(packed[j * n + i], zero);
            }
            j += 1;
        } else {
            for i in 0..n {
                let (re, im) = (packed[j * n + i], packed[(j + 1) * n + i]);
                out[j * n + i] = Complex::new(re, im);
                out[(j + 1) * n + i] = Complex::new(re, -im);
            }
            j += 2;
        }
    }
}

/// The attributes `compute_left` / `compute_right`: `b'N'` or `b'V'`.
fn modes(left: u8, right: u8) -> Result<(u8, u8), KernelError> {
    Ok((choice("compute_left", left, b"NV", "'N' or 'V'")?, choice("compute_right", right, b"NV", "'N' or 'V'")?))
}

/// Eigenvalues, and with `compute_left` / `compute_right` = `b'V'` the left / right
/// eigenvectors, of each real `n` x `n` matrix of `a` (`a` is read, not changed: LAPACK
/// works on a copy). The eigenvalues go to `wr` (real parts) and `wi` (imaginary parts), `n`
/// per matrix, complex conjugate pairs next to each other, positive imaginary part first; the
/// eigenvectors, each of unit 2-norm with its largest component real, to `vl` / `vr` as
/// complex `n` x `n` matrices (column `j` for eigenvalue `j`: LAPACK's packed pairs unpacked
/// as jaxlib does). `info` per matrix: LAPACK's (`> 0`: the QR algorithm failed; the
/// eigenvectors are then not written), or `-4` without calling LAPACK when the matrix has a
/// NaN or infinite element (jaxlib's code; JAX's lowering makes the outputs NaN for any
/// `info != 0`). Eigenvectors not asked for are written as zeros.
///
/// JAX's contract: operand `x`, attributes `compute_left` and `compute_right`, results
/// `eigvals_real`, `eigvals_imag`, `eigvecs_left` and `eigvecs_right` (complex), `info`.
///
/// ```no_run
/// use pjrt_lapack::{kernels::{self, Batch}, Lapack};
/// let lapack = Lapack::load("libscipy_openblas.so")?;
/// let a = [0.0f64, 1.0, -1.0, 0.0]; // a rotation by 90 degrees: eigenvalues +-i
/// let (mut wr, mut wi, mut info) = ([0.0; 2], [0.0; 2], [0; 1]);
/// let (mut vl, mut vr) = (vec![Default::default(); 4], vec![Default::default(); 4]);
/// let batch = Batch { count: 1, rows: 2, cols: 2 };
/// kernels::geev(&lapack, batch, b'N', b'V', &a, &mut wr, &mut wi, &mut vl, &mut vr, &mut info)?;
/// assert_eq!(wi, [1.0, -1.0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[allow(clippy::too_many_arguments)]
pub fn geev<T>(
    lapack: &Lapack,
    batch: Batch,
    compute_left: u8,
    compute_right: u8,
    a: &[T],
    wr: &mut [T],
    wi: &mut [T],
    vl: &mut [Complex<T>],
    vr: &mut [Complex<T>],
    info: &mut [i32],
) -> Result<(), KernelError>
where
    T: Scalar<Real = T, Geev = GeevReal<T>> + std::ops::Neg<Output = T> + Into<f64>,
{
    let (jobvl, jobvr) = modes(compute_left, compute_right)?;
    let n = square(batch, "geev")?;
    let size = n * n;
    check_len("x", a.len(), batch.elements())?;
    check_len("eigvals_real", wr.len(), batch.count.checked_mul(n))?;
    check_len("eigvals_imag", wi.len(), batch.count.checked_mul(n))?;
    check_len("eigvecs_left", vl.len(), batch.elements())?;
    check_len("eigvecs_right", vr.len(), batch.elements())?;
    check_len("info", info.len(), Some(batch.count))?;
    if n == 0 || batch.count == 0 {
        info.fill(0);
        return Ok(());
    }
    let (n_i, ld) = (int("n", n)?, leading("n", n)?);
    let geev = lapack.routines::<T>().geev;
    let (mut copy, mut packed_l, mut packed_r) = (vec![T::ZERO; size], vec![T::ZERO; size], vec![T::ZERO; size]);
    let (mut wr_q, mut wi_q) = (vec![T::ZERO; n], vec![T::ZERO; n]);

    let (mut work_q, mut status) = ([T::ZERO], 0);
    // SAFETY: a query: LAPACK writes the size to `work_q[0]` only; every array passed has the
    // size the dimensions give it (n x n matrices with leading dimension n, n eigenvalues).
    unsafe {
        geev(
            &jobvl,
            &jobvr,
            &n_i,
            copy.as_mut_ptr(),
            &ld,
            wr_q.as_mut_ptr(),
            wi_q.as_mut_ptr(),
            packed_l.as_mut_ptr(),
            &ld,
            packed_r.as_mut_ptr(),
            &ld,
            work_q.as_mut_ptr(),
            &-1,
            &mut status,
            1,
            1,
        )
    };
    check_info("geev", status)?;
    let vectors = jobvl == b'V' || jobvr == b'V';
    let lwork = workspace("geev work", work_q[0].workspace_size(), if vectors { 4 * n } else { 3 * n })?;
    let mut work = vec![T::ZERO; lwork];
    let lwork = int("lwork", lwork)?;
    for i in 0..batch.count {
        let source = &a[i * size..(i + 1) * size];
        if !source.iter().all(|&x| Into::<f64>::into(x).is_finite()) {
            info[i] = NOT_FINITE;
            continue;
        }
        copy.copy_from_slice(source);
        packed_l.fill(T::ZERO);
        packed_r.fill(T::ZERO);
        let (re, im) = (member(wr, i, n), member(wi, i, n));
        let mut status = 0;
        // SAFETY: `copy`, `packed_l` and `packed_r` hold n x n elements (leading dimension n),
        // `re` and `im` n, `work` lwork (all allocated or checked above).
        unsafe {
            geev(
                &jobvl,
                &jobvr,
                &n_i,
                copy.as_mut_ptr(),
                &ld,
                re.as_mut_ptr(),
                im.as_mut_ptr(),
                packed_l.as_mut_ptr(),
                &ld,
                packed_r.as_mut_ptr(),
                &ld,
                work.as_mut_ptr(),
                &lwork,
                &mut status,
                1,
                1,
            )
        };
        check_info("geev", status)?;
        info[i] = status;
        if status == 0 {
            unpack(n, im, &packed_l, member(vl, i, size));
            unpack(n, im, &packed_r, member(vr, i, size));
        }
    }
    Ok(())
}

/// [`geev`] for complex matrices (`CGEEV` / `ZGEEV`): the eigenvalues to `w`, the
/// eigenvectors straight from LAPACK to `vl` / `vr`; `a` is read, not changed. `info` as for
/// [`geev`] (`-4` for a matrix with a non-finite element, LAPACK not called); eigenvectors
/// not asked for are zeros.
///
/// JAX's contract: operand `x`, attributes `compute_left` and `compute_right`, results
/// `eigvals`, `eigvecs_left`, `eigvecs_right` and `info`.
///
/// ```no_run
/// use num_complex::Complex;
/// use pjrt_lapack::{kernels::{self, Batch}, Lapack};
/// let lapack = Lapack::load("libscipy_openblas.so")?;
/// let a = [Complex::new(2.0f32, 1.0)];
/// let (mut w, mut vl, mut vr, mut info) = ([Complex::default()], [Complex::default()], [Complex::default()], [0]);
/// let batch = Batch { count: 1, rows: 1, cols: 1 };
/// kernels::geev_complex(&lapack, batch, b'V', b'V', &a, &mut w, &mut vl, &mut vr, &mut info)?;
/// assert_eq!(w, a);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[allow(clippy::too_many_arguments)]
pub fn geev_complex<R>(
    lapack: &Lapack,
    batch: Batch,
    compute_left: u8,
    compute_right: u8,
    a: &[Complex<R>],
    w: &mut [Complex<R>],
    vl: &mut [Complex<R>],
    vr: &mut [Complex<R>],
    info: &mut [i32],
) -> Result<(), KernelError>
where
    R: Scalar<Real = R> + Into<f64>,
    Complex<R>: Scalar<Real = R, Geev = GeevComplex<Complex<R>, R>>,
{
    let (jobvl, jobvr) = modes(compute_left, compute_right)?;
    let n = square(batch, "geev")?;
    let size = n * n;
    check_len("x", a.len(), batch.elements())?;
    check_len("eigvals", w.len(), batch.count.checked_mul(n))?;
    check_len("eigvecs_left", vl.len(), batch.elements())?;
    check_len("eigvecs_right", vr.len(), batch.elements())?;
    check_len("info", info.len(), Some(batch.count))?;
    if n == 0 || batch.count == 0 {
        info.fill(0);
        return Ok(());
    }
    let (n_i, ld) = (int("n", n)?, leading("n", n)?);
    let geev = lapack.routines::<Complex<R>>().geev;
    let zero = Complex::<R>::ZERO;
    let (mut copy, mut rwork) = (vec![zero; size], vec![R::ZERO; 2 * n]);

    let (mut work_q, mut status) = ([zero], 0);
    // SAFETY: a query: LAPACK writes the size to `work_q[0]` (and may write `rwork`, 2n
    // elements); the matrices passed hold n x n elements with leading dimension n, `w` n.
    unsafe {
        geev(
            &jobvl,
            &jobvr,
            &n_i,
            copy.as_mut_ptr(),
            &ld,
            w.as_mut_ptr(),
            vl.as_mut_ptr(),
            &ld,
            vr.as_mut_ptr(),
            &ld,
            work_q.as_mut_ptr(),
            &-1,
            rwork.as_mut_ptr(),
            &mut status,
            1,
            1,
        )
    };
    check_info("geev", status)?;
    let lwork = workspace("geev work", work_q[0].workspace_size(), 2 * n)?;
    let mut work = vec![zero; lwork];
    let lwork = int("lwork", lwork)?;
    let finite = |z: &Complex<R>| Into::<f64>::into(z.re).is_finite() && Into::<f64>::into(z.im).is_finite();
    for i in 0..batch.count {
        let source = &a[i * size..(i + 1) * size];
        if !source.iter().all(finite) {
            info[i] = NOT_FINITE;
            continue;
        }
        copy.copy_from_slice(source);
        let (values, left, right) = (member(w, i, n), member(vl, i, size), member(vr, i, size));
        // Vectors not asked for: zeros, as the real kernel writes them.
        if jobvl == b'N' {
            left.fill(zero);
        }
        if jobvr == b'N' {
            right.fill(zero);
        }
        let mut status = 0;
        // SAFETY: `copy`, `left` and `right` hold n x n elements (leading dimension n),
        // `values` n, `work` lwork, `rwork` 2n (checked or allocated above).
        unsafe {
            geev(
                &jobvl,
                &jobvr,
                &n_i,
                copy.as_mut_ptr(),
                &ld,
                values.as_mut_ptr(),
                left.as_mut_ptr(),
                &ld,
                right.as_mut_ptr(),
                &ld,
                work.as_mut_ptr(),
                &lwork,
                rwork.as_mut_ptr(),
                &mut status,
                1,
                1,
            )
        };
        check_info("geev", status)?;
        info[i] = status;
    }
    Ok(())
}
