//! `gesdd`: singular value decomposition by divide and conquer (`lapack_{s,d,c,z}gesdd_ffi`).

use num_complex::Complex;

use super::syevd::choice;
use super::{check_len, int, leading, member, query_then_each, Batch};
use crate::{GesddComplex, GesddReal, KernelError, Lapack, Scalar};

/// LAPACK's `info` for a matrix with a NaN element: `xGESDD` checks its norm and returns
/// `-4` (argument `A`) without calling `XERBLA`; kept as the matrix's `info`, as under JAX.
const NAN_INPUT: i32 = -4;

/// What one call needs: the checked dimensions and leading dimensions.
struct Dims {
    m: i32,
    n: i32,
    lda: i32,
    ldu: i32,
    ldvt: i32,
    k: usize,
    u_size: usize,
    vt_size: usize,
}

/// Checks the mode and every length; `None` when there is nothing to compute (empty).
#[allow(clippy::too_many_arguments)]
fn check(
    batch: Batch,
    mode: u8,
    a: usize,
    s: usize,
    u: usize,
    u_cols: usize,
    vt: usize,
    vt_rows: usize,
    info: usize,
) -> Result<(u8, Option<Dims>), KernelError> {
    // 'O' (VT, U over x) is refused by jaxlib too (UNIMPLEMENTED); JAX never emits it.
    let mode = choice("mode", mode, b"ASN", "'A' (full U and VT), 'S' (min(m, n) columns) or 'N' (no vectors)")?;
    let (m, n, k) = (batch.rows, batch.cols, batch.min_dim());
    check_len("x", a, batch.elements())?;
    check_len("s", s, batch.count.checked_mul(k))?;
    check_len("u", u, batch.count.checked_mul(m).and_then(|e| e.checked_mul(u_cols)))?;
    check_len("vt", vt, batch.count.checked_mul(vt_rows).and_then(|e| e.checked_mul(n)))?;
    check_len("info", info, Some(batch.count))?;
    let (need_u, need_vt) = match mode {
        b'A' => (m, n),
        b'S' => (k, k),
        _ => (0, 0),
    };
    if u_cols < need_u || vt_rows < need_vt {
        return Err(KernelError::Shape(format!(
            "gesdd with mode '{}' writes {m} x {need_u} of u and {need_vt} x {n} of vt, but u is {m} x {u_cols} \
             and vt {vt_rows} x {n}",
            mode as char
        )));
    }
    if k == 0 || batch.count == 0 {
        return Ok((mode, None));
    }
    let dims = Dims {
        m: int("rows", m)?,
        n: int("cols", n)?,
        lda: leading("rows", m)?,
        ldu: leading("rows", m)?,
        ldvt: leading("vt rows", vt_rows)?,
        k,
        u_size: m * u_cols,
        vt_size: vt_rows * n,
    };
    Ok((mode, Some(dims)))
}

/// The real workspace of the complex routines, as jaxlib sizes it (LAPACK's minimum).
fn complex_rwork(m: usize, n: usize, mode: u8) -> usize {
    let (k, big) = (m.min(n), m.max(n));
    if mode == b'N' {
        7 * k
    } else {
        (5 * k * k + 5 * k).max(2 * big * k + 2 * k * k + k)
    }
}

/// Singular values, and singular vectors per `mode`, of each `m` x `n` matrix of `a`
/// (destroyed): `A = U diag(s) VT`, the singular values descending to `s` (`min(m, n)` per
/// matrix); with `mode = b'A'` all of `U` (`m` x `m`) and `VT` (`n` x `n`), with `b'S'` the
/// first `min(m, n)` columns of `U` and rows of `VT`, with `b'N'` neither (`u` and `vt` not
/// written). `u` holds `m` x `u_cols` per matrix, `vt` `vt_rows` x `n` (its leading
/// dimension), column-major, as JAX's lowering shapes them. `info` per matrix: LAPACK's (`> 0`:
/// no convergence; `-4`: the matrix has a NaN, which LAPACK reports so). Mode `b'O'` is refused
/// (jaxlib does not implement it either).
///
/// JAX's contract: operand `x`, attribute `mode`, results `x_out` (aliasing `x`), `s` (real
/// type), `u`, `vt`, `info`.
///
/// ```no_run
/// use pjrt_lapack::{kernels::{self, Batch}, Lapack};
/// let lapack = Lapack::load("libscipy_openblas.so")?;
/// let mut a = [3.0f64, 0.0, 0.0, -2.0]; // diag(3, -2)
/// let (mut s, mut u, mut vt, mut info) = ([0.0; 2], [0.0; 4], [0.0; 4], [0; 1]);
/// let batch = Batch { count: 1, rows: 2, cols: 2 };
/// kernels::gesdd(&lapack, batch, b'A', &mut a, &mut s, &mut u, 2, &mut vt, 2, &mut info)?;
/// assert_eq!(s, [3.0, 2.0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[allow(clippy::too_many_arguments)]
pub fn gesdd<T>(
    lapack: &Lapack,
    batch: Batch,
    mode: u8,
    a: &mut [T],
    s: &mut [T],
    u: &mut [T],
    u_cols: usize,
    vt: &mut [T],
    vt_rows: usize,
    info: &mut [i32],
) -> Result<(), KernelError>
where
    T: Scalar<Real = T, Gesdd = GesddReal<T>>,
{
    let (mode, dims) = check(batch, mode, a.len(), s.len(), u.len(), u_cols, vt.len(), vt_rows, info.len())?;
    let Some(d) = dims else {
        info.fill(0);
        return Ok(());
    };
    let gesdd = lapack.routines::<T>().gesdd;
    let mut iwork = vec![0i32; 8 * d.k];
    int("iwork", iwork.len())?;
    let size = batch.matrix();
    query_then_each("gesdd", "gesdd work", 1, &[NAN_INPUT], info, |i, work, lwork| {
        let (matrix, values) = (member(a, i, size), member(s, i, d.k));
        let (left, right) = (member(u, i, d.u_size), member(vt, i, d.vt_size));
        let mut status = 0;
        // SAFETY: `matrix` holds m x n elements (lda = m), `values` min(m, n), `left` m x
        // u_cols (ldu = m) and `right` vt_rows x n (ldvt = vt_rows), at least what `mode`
        // writes (checked in `check`); `work` lwork elements, or one for the query (lwork =
        // -1: LAPACK writes `work[0]` only), as `query_then_each` passes it; `iwork` 8
        // min(m, n) elements.
        unsafe {
            gesdd(
                &mode,
                &d.m,
                &d.n,
                matrix.as_mut_ptr(),
                &d.lda,
                values.as_mut_ptr(),
                left.as_mut_ptr(),
                &d.ldu,
                right.as_mut_ptr(),
                &d.ldvt,
                work.as_mut_ptr(),
                &lwork,
                iwork.as_mut_ptr(),
                &mut status,
                1,
            )
        };
        status
    })
}

/// [`gesdd`] for complex matrices (`CGESDD` / `ZGESDD`): `s` of the real type, `U` and `VT`
/// unitary (`VT` is `V` conjugate-transposed).
///
/// JAX's contract: as [`gesdd`]'s.
///
/// ```no_run
/// use num_complex::Complex;
/// use pjrt_lapack::{kernels::{self, Batch}, Lapack};
/// let lapack = Lapack::load("libscipy_openblas.so")?;
/// let mut a = [Complex::new(0.0f32, 2.0)];
/// let (mut s, mut u, mut vt, mut info) = ([0.0f32], [Complex::default()], [Complex::default()], [0]);
/// let batch = Batch { count: 1, rows: 1, cols: 1 };
/// kernels::gesdd_complex(&lapack, batch, b'S', &mut a, &mut s, &mut u, 1, &mut vt, 1, &mut info)?;
/// assert_eq!(s, [2.0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[allow(clippy::too_many_arguments)]
pub fn gesdd_complex<R>(
    lapack: &Lapack,
    batch: Batch,
    mode: u8,
    a: &mut [Complex<R>],
    s: &mut [R],
    u: &mut [Complex<R>],
    u_cols: usize,
    vt: &mut [Complex<R>],
    vt_rows: usize,
    info: &mut [i32],
) -> Result<(), KernelError>
where
    R: Scalar<Real = R>,
    Complex<R>: Scalar<Real = R, Gesdd = GesddComplex<Complex<R>, R>>,
{
    let (mode, dims) = check(batch, mode, a.len(), s.len(), u.len(), u_cols, vt.len(), vt_rows, info.len())?;
    let Some(d) = dims else {
        info.fill(0);
        return Ok(());
    };
    let gesdd = lapack.routines::<Complex<R>>().gesdd;
    let mut iwork = vec![0i32; 8 * d.k];
    int("iwork", iwork.len())?;
    let mut rwork = vec![R::ZERO; complex_rwork(batch.rows, batch.cols, mode).max(1)];
    let size = batch.matrix();
    query_then_each("gesdd", "gesdd work", 1, &[NAN_INPUT], info, |i, work, lwork| {
        let (matrix, values) = (member(a, i, size), member(s, i, d.k));
        let (left, right) = (member(u, i, d.u_size), member(vt, i, d.vt_size));
        let mut status = 0;
        // SAFETY: as in `gesdd`; `rwork` has LAPACK's documented minimum for this mode
        // (jaxlib's size), `iwork` 8 min(m, n) elements.
        unsafe {
            gesdd(
                &mode,
                &d.m,
                &d.n,
                matrix.as_mut_ptr(),
                &d.lda,
                values.as_mut_ptr(),
                left.as_mut_ptr(),
                &d.ldu,
                right.as_mut_ptr(),
                &d.ldvt,
                work.as_mut_ptr(),
                &lwork,
                rwork.as_mut_ptr(),
                iwork.as_mut_ptr(),
                &mut status,
                1,
            )
        };
        status
    })
}
