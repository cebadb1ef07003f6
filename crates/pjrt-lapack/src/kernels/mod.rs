//! The kernels: each runs one LAPACK routine over a batch of column-major matrices, with the
//! contract of JAX's kernel of the same name (operands, packed outputs and `info` as JAX's
//! lowering reads them). One file per routine family.
//!
//! Every kernel checks each slice's length against the [`Batch`] dimensions first, and passes
//! LAPACK leading dimensions of at least 1 (LAPACK refuses 0, even for empty matrices); an
//! empty batch or empty matrices call nothing.

mod gees;
mod gehrd;
mod geqrf;
mod geev;
mod gesdd;
mod getrf;
mod gtsv;
mod orgqr;
mod potrf;
mod syevd;
mod sytrd;
mod trsm;

pub use gees::{gees, gees_complex};
pub use geev::{geev, geev_complex};
pub use gehrd::gehrd;
pub use geqrf::geqrf;
pub use gesdd::{gesdd, gesdd_complex};
pub use getrf::getrf;
pub use gtsv::gtsv;
pub use orgqr::orgqr;
pub use potrf::potrf;
pub use syevd::{heevd, syevd};
pub use sytrd::sytrd;
pub use trsm::{trsm, Triangular};

use crate::{KernelError, Scalar};

/// A batch of `count` matrices of `rows` x `cols`, each column-major, one after the other (the
/// layout JAX hands its LAPACK kernels: the batch dimensions first, row-major over them).
///
/// ```
/// use pjrt_lapack::kernels::Batch;
/// let b = Batch::from_dims(&[2, 3, 4, 5]).unwrap();
/// assert_eq!((b.count, b.rows, b.cols), (6, 4, 5));
/// assert_eq!(b.elements(), Some(120));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Batch {
    /// How many matrices.
    pub count: usize,
    /// Rows of each.
    pub rows: usize,
    /// Columns of each.
    pub cols: usize,
}

impl Batch {
    /// From an array's dimensions, the last two being the matrix's: `None` for fewer than two
    /// dimensions, a negative one, or a product that overflows.
    pub fn from_dims(dims: &[i64]) -> Option<Batch> {
        let [batch @ .., rows, cols] = dims else { return None };
        let mut count = 1usize;
        for &d in batch {
            count = count.checked_mul(usize::try_from(d).ok()?)?;
        }
        let b = Batch { count, rows: usize::try_from(*rows).ok()?, cols: usize::try_from(*cols).ok()? };
        b.elements()?;
        Some(b)
    }

    /// Elements of one matrix.
    pub fn matrix(&self) -> usize {
        self.rows * self.cols
    }

    /// Elements of the whole batch (`None` on overflow).
    pub fn elements(&self) -> Option<usize> {
        self.count.checked_mul(self.rows)?.checked_mul(self.cols)
    }

    /// The smaller of rows and columns.
    pub fn min_dim(&self) -> usize {
        self.rows.min(self.cols)
    }
}

/// `value` as a LAPACK integer.
pub(crate) fn int(what: &'static str, value: usize) -> Result<i32, KernelError> {
    i32::try_from(value).map_err(|_| KernelError::TooLarge { what, value })
}

/// A leading dimension: at least 1.
pub(crate) fn leading(what: &'static str, rows: usize) -> Result<i32, KernelError> {
    int(what, rows.max(1))
}

/// Refuses a slice of another length than `expected`.
pub(crate) fn check_len(what: &'static str, found: usize, expected: Option<usize>) -> Result<(), KernelError> {
    let expected = expected.ok_or(KernelError::TooLarge { what, value: usize::MAX })?;
    if found != expected {
        return Err(KernelError::Length { what, found, expected });
    }
    Ok(())
}

/// The `count` elements of `slice` for batch member `i` (lengths checked by the caller).
pub(crate) fn member<T>(slice: &mut [T], i: usize, count: usize) -> &mut [T] {
    &mut slice[i * count..(i + 1) * count]
}

/// Turns the size LAPACK answered to a workspace query (`LWORK = -1`) into a length: at least
/// `minimum`, refused when it does not fit.
pub(crate) fn workspace(what: &'static str, answered: f64, minimum: usize) -> Result<usize, KernelError> {
    let size = if answered.is_finite() && answered > 0.0 { answered.ceil() as usize } else { 0 };
    let size = size.max(minimum).max(1);
    int(what, size)?;
    Ok(size)
}

/// Refuses `info < 0` (LAPACK says an argument was wrong: a bug in the kernel).
pub(crate) fn check_info(routine: &'static str, info: i32) -> Result<(), KernelError> {
    if info < 0 {
        return Err(KernelError::Argument { routine, argument: -info });
    }
    Ok(())
}

/// The batch loop of a routine sized by one workspace query. `call(i, work, lwork)` runs the
/// routine on matrix `i` with `work` of `lwork` elements and returns LAPACK's `info`: first on
/// matrix 0 with one element and `lwork = -1` (the query: LAPACK writes the size to `work[0]`
/// only), then on each matrix with the size answered (at least `minimum`, named `what` in
/// errors). Each matrix's `info` goes to `info[i]`; `info < 0` is refused unless it is in
/// `kept` (a value LAPACK reports for the matrix, not for a wrong argument).
pub(crate) fn query_then_each<T: Scalar>(
    routine: &'static str,
    what: &'static str,
    minimum: usize,
    kept: &[i32],
    info: &mut [i32],
    mut call: impl FnMut(usize, &mut [T], i32) -> i32,
) -> Result<(), KernelError> {
    let mut work_q = [T::ZERO];
    check_info(routine, call(0, &mut work_q, -1))?;
    let lwork = workspace(what, work_q[0].workspace_size(), minimum)?;
    let mut work = vec![T::ZERO; lwork];
    let lwork = int("lwork", lwork)?;
    for (i, info_i) in info.iter_mut().enumerate() {
        let status = call(i, &mut work, lwork);
        if !kept.contains(&status) {
            check_info(routine, status)?;
        }
        *info_i = status;
    }
    Ok(())
}
