//! `gees`: Schur decomposition of general matrices (`lapack_{s,d,c,z}gees_ffi`).

use num_complex::Complex;

use super::syevd::{choice, square};
use super::{check_len, int, leading, member, query_then_each, Batch};
use crate::{GeesComplex, GeesReal, KernelError, Lapack, Scalar};

/// The attributes: `mode` `b'N'` / `b'V'`; `sort` only `b'N'` (jaxlib passes LAPACK no
/// selection function, so sorting cannot be asked for).
fn modes(mode: u8, sort: u8) -> Result<(u8, u8), KernelError> {
    let mode = choice("mode", mode, b"NV", "'N' or 'V'")?;
    let sort = choice(
        "sort",
        sort,
        b"N",
        "'N' (ordering the eigenvalues, 'S', needs a selection function that JAX's kernel does not take)",
    )?;
    Ok((mode, sort))
}

/// Schur decomposition `A = Z T Z^T` of each real `n` x `n` matrix of `a`: `T` (quasi upper
/// triangular: 1 x 1 and 2 x 2 blocks on the diagonal, LAPACK's standard form) over `a`, with
/// `mode = b'V'` the orthogonal Schur vectors `Z` to `vs` (`n` x `n` per matrix, not written
/// with `b'N'`), the eigenvalues to `wr` / `wi` (`n` per matrix, in the order of `T`'s
/// diagonal), `sdim` per matrix (0: nothing is sorted) and LAPACK's `info` per matrix
/// (`> 0`: the QR algorithm failed). `sort` must be `b'N'`.
///
/// JAX's contract: operand `x`, attributes `mode` and `sort`, results `x_out` (aliasing `x`),
/// `schur_vectors`, `eigvals_real`, `eigvals_imag`, `selected_eigvals` and `info`.
///
/// ```no_run
/// use pjrt_lapack::{kernels::{self, Batch}, Lapack};
/// let lapack = Lapack::load("libscipy_openblas.so")?;
/// let mut a = [1.0f64, 0.0, 2.0, 3.0]; // [[1, 2], [0, 3]]: upper triangular already
/// let (mut vs, mut wr, mut wi, mut sdim, mut info) = ([0.0; 4], [0.0; 2], [0.0; 2], [0], [0]);
/// let batch = Batch { count: 1, rows: 2, cols: 2 };
/// kernels::gees(&lapack, batch, b'V', b'N', &mut a, &mut vs, &mut wr, &mut wi, &mut sdim, &mut info)?;
/// assert_eq!((wr, wi, info), ([1.0, 3.0], [0.0, 0.0], [0]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[allow(clippy::too_many_arguments)]
pub fn gees<T>(
    lapack: &Lapack,
    batch: Batch,
    mode: u8,
    sort: u8,
    a: &mut [T],
    vs: &mut [T],
    wr: &mut [T],
    wi: &mut [T],
    sdim: &mut [i32],
    info: &mut [i32],
) -> Result<(), KernelError>
where
    T: Scalar<Real = T, Gees = GeesReal<T>>,
{
    let (jobvs, sort) = modes(mode, sort)?;
    let n = square(batch, "gees")?;
    check_len("x", a.len(), batch.elements())?;
    check_len("schur_vectors", vs.len(), batch.elements())?;
    check_len("eigvals_real", wr.len(), batch.count.checked_mul(n))?;
    check_len("eigvals_imag", wi.len(), batch.count.checked_mul(n))?;
    check_len("selected_eigvals", sdim.len(), Some(batch.count))?;
    check_len("info", info.len(), Some(batch.count))?;
    if n == 0 || batch.count == 0 {
        sdim.fill(0);
        info.fill(0);
        return Ok(());
    }
    let (n_i, ld) = (int("n", n)?, leading("n", n)?);
    let gees = lapack.routines::<T>().gees;
    // Not referenced with SORT = 'N'; a real array all the same.
    let mut bwork = vec![0i32; n];
    let size = n * n;
    query_then_each("gees", "gees work", 3 * n, &[], info, |i, work, lwork| {
        let (matrix, vectors) = (member(a, i, size), member(vs, i, size));
        let (re, im) = (member(wr, i, n), member(wi, i, n));
        let mut status = 0;
        // SAFETY: `matrix` and `vectors` hold n x n elements (leading dimension n), `re` and
        // `im` n, `bwork` n; `work` lwork elements, or one for the query (lwork = -1: LAPACK
        // writes `work[0]` only), as `query_then_each` passes it; SORT = 'N', so the missing
        // select function is not called.
        unsafe {
            gees(
                &jobvs,
                &sort,
                None,
                &n_i,
                matrix.as_mut_ptr(),
                &ld,
                &mut sdim[i],
                re.as_mut_ptr(),
                im.as_mut_ptr(),
                vectors.as_mut_ptr(),
                &ld,
                work.as_mut_ptr(),
                &lwork,
                bwork.as_mut_ptr(),
                &mut status,
                1,
                1,
            )
        };
        status
    })
}

/// [`gees`] for complex matrices (`CGEES` / `ZGEES`): `A = Z T Z^H` with `T` upper triangular
/// and `Z` unitary, the eigenvalues (`T`'s diagonal) to `w`.
///
/// JAX's contract: operand `x`, attributes `mode` and `sort`, results `x_out` (aliasing `x`),
/// `schur_vectors`, `eigvals`, `selected_eigvals` and `info`.
///
/// ```no_run
/// use num_complex::Complex;
/// use pjrt_lapack::{kernels::{self, Batch}, Lapack};
/// let lapack = Lapack::load("libscipy_openblas.so")?;
/// let mut a = [Complex::new(0.0f32, 1.0)];
/// let (mut vs, mut w, mut sdim, mut info) = ([Complex::default()], [Complex::default()], [0], [0]);
/// let batch = Batch { count: 1, rows: 1, cols: 1 };
/// kernels::gees_complex(&lapack, batch, b'V', b'N', &mut a, &mut vs, &mut w, &mut sdim, &mut info)?;
/// assert_eq!(w, [Complex::new(0.0, 1.0)]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[allow(clippy::too_many_arguments)]
pub fn gees_complex<R>(
    lapack: &Lapack,
    batch: Batch,
    mode: u8,
    sort: u8,
    a: &mut [Complex<R>],
    vs: &mut [Complex<R>],
    w: &mut [Complex<R>],
    sdim: &mut [i32],
    info: &mut [i32],
) -> Result<(), KernelError>
where
    R: Scalar<Real = R>,
    Complex<R>: Scalar<Real = R, Gees = GeesComplex<Complex<R>, R>>,
{
    let (jobvs, sort) = modes(mode, sort)?;
    let n = square(batch, "gees")?;
    check_len("x", a.len(), batch.elements())?;
    check_len("schur_vectors", vs.len(), batch.elements())?;
    check_len("eigvals", w.len(), batch.count.checked_mul(n))?;
    check_len("selected_eigvals", sdim.len(), Some(batch.count))?;
    check_len("info", info.len(), Some(batch.count))?;
    if n == 0 || batch.count == 0 {
        sdim.fill(0);
        info.fill(0);
        return Ok(());
    }
    let (n_i, ld) = (int("n", n)?, leading("n", n)?);
    let gees = lapack.routines::<Complex<R>>().gees;
    let (mut bwork, mut rwork) = (vec![0i32; n], vec![R::ZERO; n]);
    let size = n * n;
    query_then_each("gees", "gees work", 2 * n, &[], info, |i, work, lwork| {
        let (matrix, vectors, values) = (member(a, i, size), member(vs, i, size), member(w, i, n));
        let mut status = 0;
        // SAFETY: `matrix` and `vectors` hold n x n elements (leading dimension n), `values`
        // n, `rwork` and `bwork` n; `work` as in `gees`; SORT = 'N': no select function is
        // called.
        unsafe {
            gees(
                &jobvs,
                &sort,
                None,
                &n_i,
                matrix.as_mut_ptr(),
                &ld,
                &mut sdim[i],
                values.as_mut_ptr(),
                vectors.as_mut_ptr(),
                &ld,
                work.as_mut_ptr(),
                &lwork,
                rwork.as_mut_ptr(),
                bwork.as_mut_ptr(),
                &mut status,
                1,
                1,
            )
        };
        status
    })
}
