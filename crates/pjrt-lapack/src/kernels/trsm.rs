//! `trsm`: triangular solve with many right-hand sides (`lapack_{s,d,c,z}trsm_ffi`, BLAS 3).

use super::{check_len, int, leading, Batch};
use crate::{KernelError, Lapack, Scalar};

/// `value` if it is one of the character codes `allowed`, else the attribute error.
fn choice(name: &'static str, value: u8, allowed: &[u8], expected: &'static str) -> Result<u8, KernelError> {
    if allowed.contains(&value) {
        Ok(value)
    } else {
        Err(KernelError::Attribute { name, value, shown: value as char, expected })
    }
}

/// The attributes of [`trsm`], as JAX passes them (`u8` character codes).
///
/// ```
/// let t = pjrt_lapack::kernels::Triangular::new(b'L', b'U', b'T', b'N');
/// assert_eq!((t.side, t.uplo, t.trans_x, t.diag), (b'L', b'U', b'T', b'N'));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Triangular {
    /// `b'L'`: solve `op(x) z = y`; `b'R'`: solve `z op(x) = y`.
    pub side: u8,
    /// `b'L'`: `x` is lower triangular (only that triangle is read); `b'U'`: upper.
    pub uplo: u8,
    /// `op`: `b'N'` (`x`), `b'T'` (`x^T`) or `b'C'` (`x^H`; `x^T` for real types).
    pub trans_x: u8,
    /// `b'U'`: the diagonal of `x` is taken as ones (not read); `b'N'`: it is read.
    pub diag: u8,
}

impl Triangular {
    /// The four codes, in the order of BLAS's arguments (checked when [`trsm`] runs).
    ///
    /// ```
    /// use pjrt_lapack::kernels::Triangular;
    /// // solve_triangular(a, b, lower=True, trans='C', unit_diagonal=True), from the left.
    /// assert_eq!(Triangular::new(b'L', b'L', b'C', b'U').trans_x, b'C');
    /// ```
    pub fn new(side: u8, uplo: u8, trans_x: u8, diag: u8) -> Triangular {
        Triangular { side, uplo, trans_x, diag }
    }

    fn checked(self) -> Result<Triangular, KernelError> {
        Ok(Triangular {
            side: choice("side", self.side, b"LR", "'L' or 'R'")?,
            uplo: choice("uplo", self.uplo, b"LU", "'L' or 'U'")?,
            trans_x: choice("trans_x", self.trans_x, b"NTC", "'N', 'T' or 'C'")?,
            diag: choice("diag", self.diag, b"NU", "'N' or 'U'")?,
        })
    }
}

/// Solves, for each matrix of the batch, `op(x) z = y` (`side = b'L'`) or `z op(x) = y`
/// (`side = b'R'`) for `z`, written over `y` (BLAS `xTRSM` with `alpha = 1`, as JAX calls it).
/// `y_batch` gives the batch and each `y`'s `m` x `n` (JAX takes `m` and `n` from `y`'s
/// dims); `x_batch` must be the same count of triangular `k` x `k` matrices, `k = m` on the
/// left, `n` on the right. Only the triangle `uplo` of `x` is read (without its diagonal when
/// `diag = b'U'`). A zero on the diagonal is not detected: BLAS divides by it (infinities or
/// NaNs in the result), as under JAX.
///
/// JAX's contract: operands `x` (`[batch..., k, k]`) and `y` (`[batch..., m, n]`), both
/// column-major; attributes `side`, `uplo`, `trans_x`, `diag` (`u8`); result `y_out`
/// (aliasing `y`). No `info`.
///
/// Refused before BLAS runs: unknown codes ([`KernelError::Attribute`]), an `x` that is not a
/// batch of `k` x `k` matrices of `y`'s count ([`KernelError::Shape`]) and slices of other
/// lengths than the batches make.
///
/// ```no_run
/// use pjrt_lapack::{kernels::{self, Batch, Triangular}, Lapack};
/// let lapack = Lapack::load("libscipy_openblas.so")?;
/// let x = [2.0f64, 1.0, 0.0, 4.0]; // [[2, 0], [1, 4]], lower, column-major
/// let mut y = [2.0, 9.0]; // one right-hand side: [2, 9]
/// let one = |k| Batch { count: 1, rows: k, cols: k };
/// let y_batch = Batch { count: 1, rows: 2, cols: 1 };
/// kernels::trsm(&lapack, Triangular::new(b'L', b'L', b'N', b'N'), one(2), &x, y_batch, &mut y)?;
/// assert_eq!(y, [1.0, 2.0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn trsm<T: Scalar>(
    lapack: &Lapack,
    attrs: Triangular,
    x_batch: Batch,
    x: &[T],
    y_batch: Batch,
    y: &mut [T],
) -> Result<(), KernelError> {
    let t = attrs.checked()?;
    let k = if t.side == b'L' { y_batch.rows } else { y_batch.cols };
    if x_batch.count != y_batch.count || x_batch.rows != k || x_batch.cols != k {
        return Err(KernelError::Shape(format!(
            "trsm: y is a batch of {} matrices of {} x {}, so x must be {} matrices of {k} x {k} (side {}), but it \
             is {} of {} x {}",
            y_batch.count,
            y_batch.rows,
            y_batch.cols,
            y_batch.count,
            t.side as char,
            x_batch.count,
            x_batch.rows,
            x_batch.cols
        )));
    }
    check_len("x", x.len(), x_batch.elements())?;
    check_len("y", y.len(), y_batch.elements())?;
    if y_batch.count == 0 || y_batch.rows == 0 || y_batch.cols == 0 {
        return Ok(());
    }
    let (m, n) = (int("rows", y_batch.rows)?, int("cols", y_batch.cols)?);
    let (lda, ldb) = (leading("x rows", k)?, leading("rows", y_batch.rows)?);
    let trsm = lapack.routines::<T>().trsm;
    let alpha = T::ONE;
    let (x_step, y_step) = (k * k, y_batch.matrix());
    for i in 0..y_batch.count {
        let a = &x[i * x_step..(i + 1) * x_step];
        let b = &mut y[i * y_step..(i + 1) * y_step];
        // SAFETY: `a` holds k x k elements with leading dimension k (= lda), k being m on the
        // left and n on the right (BLAS's order of A), `b` m x n with leading dimension m (=
        // ldb): lengths checked above; BLAS only reads `a`. The four codes are among those BLAS
        // knows (checked), each of hidden length 1; the scalars are live locals.
        unsafe {
            trsm(
                &t.side,
                &t.uplo,
                &t.trans_x,
                &t.diag,
                &m,
                &n,
                &alpha,
                a.as_ptr(),
                &lda,
                b.as_mut_ptr(),
                &ldb,
                1,
                1,
                1,
                1,
            )
        };
    }
    Ok(())
}
