//! `potrf`: Cholesky factorisation (`lapack_{s,d,c,z}potrf_ffi`).

use super::{check_info, check_len, int, leading, member, Batch};
use crate::{KernelError, Lapack, Scalar};

/// `value` if it is one of the character codes `allowed`, else the attribute error.
fn choice(name: &'static str, value: u8, allowed: &[u8], expected: &'static str) -> Result<u8, KernelError> {
    if allowed.contains(&value) {
        Ok(value)
    } else {
        Err(KernelError::Attribute { name, value, shown: value as char, expected })
    }
}

/// Factors each symmetric (Hermitian) positive-definite matrix of `a` in place as `L L^H`
/// (`uplo = b'L'`: `L` written on and below the diagonal) or `U^H U` (`uplo = b'U'`: `U` on
/// and above). Only that triangle is read, and only it is written: the other triangle keeps
/// the values it had (JAX's kernel does the same; `lax.linalg.cholesky` zeroes it afterwards).
/// `info` gets LAPACK's code per matrix: `k > 0` when the leading minor of order `k` is not
/// positive definite (the factorisation stopped there; JAX's lowering then replaces the
/// matrix with NaNs).
///
/// JAX's contract: operand `x` (`[batch..., n, n]`, column-major), attribute `uplo` (`u8`:
/// `'L'` or `'U'`), results `x_out` (aliasing `x`) and `info` (`s32[batch...]`).
///
/// Refused before LAPACK runs: an `uplo` other than `b'L'` or `b'U'`
/// ([`KernelError::Attribute`]), non-square matrices ([`KernelError::Shape`]) and slices of
/// other lengths than `batch` makes.
///
/// ```no_run
/// use pjrt_lapack::{kernels::{self, Batch}, Lapack};
/// let lapack = Lapack::load("libscipy_openblas.so")?;
/// let mut a = [4.0f64, 2.0, 2.0, 5.0]; // [[4, 2], [2, 5]], column-major
/// let mut info = [0; 1];
/// kernels::potrf(&lapack, Batch { count: 1, rows: 2, cols: 2 }, b'L', &mut a, &mut info)?;
/// assert_eq!((a, info), ([2.0, 1.0, 2.0, 2.0], [0])); // L = [[2, 0], [1, 2]]; a[2] untouched
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn potrf<T: Scalar>(
    lapack: &Lapack,
    batch: Batch,
    uplo: u8,
    a: &mut [T],
    info: &mut [i32],
) -> Result<(), KernelError> {
    let uplo = choice("uplo", uplo, b"LU", "'L' or 'U'")?;
    if batch.rows != batch.cols {
        return Err(KernelError::Shape(format!(
            "potrf factors square matrices, but x is a batch of {} x {} matrices",
            batch.rows, batch.cols
        )));
    }
    check_len("x", a.len(), batch.elements())?;
    check_len("info", info.len(), Some(batch.count))?;
    if batch.count == 0 || batch.rows == 0 {
        info.fill(0);
        return Ok(());
    }
    let (n, lda) = (int("rows", batch.rows)?, leading("rows", batch.rows)?);
    let potrf = lapack.routines::<T>().potrf;
    for (i, code) in info.iter_mut().enumerate() {
        let matrix = member(a, i, batch.matrix());
        let mut status = 0;
        // SAFETY: `matrix` holds n x n elements with leading dimension n (= lda; length checked
        // above); `uplo` is 'L' or 'U' (checked), its hidden length 1; the scalars are live
        // locals.
        unsafe { potrf(&uplo, &n, matrix.as_mut_ptr(), &lda, &mut status, 1) };
        check_info("potrf", status)?;
        *code = status;
    }
    Ok(())
}
