//! `gehrd`: Hessenberg reduction, checked by reconstruction (`Q H Q^H = A`, `Q` from `orgqr`
//! on the packed vectors, `H` upper Hessenberg) in every element type; a partial range
//! (`low`, `high`), the attribute range, and the edge cases.

use pjrt_lapack::kernels::{self, Batch};
use pjrt_lapack::KernelError;

use crate::geqrf::la::{adjoint, assert_close, assert_orthonormal, identity, matmul, random, sub_matrix, Elem};
use crate::support::lapack;

/// `Q`: the identity's first row and column, and `orgqr` of the `(n - 1) x (n - 1)` block of
/// the packed vectors below the first row and left of the last column.
pub fn q_of_hessenberg<T: Elem>(packed: &[T], tau: &[T], n: usize) -> Vec<T> {
    let mut block = sub_matrix(packed, n, 1..n, 0..n - 1);
    let k = n - 1;
    kernels::orgqr(lapack(), Batch { count: 1, rows: k, cols: k }, k, &mut block, tau).unwrap();
    let mut q = identity::<T>(n);
    for j in 0..k {
        q[(j + 1) * n + 1..(j + 2) * n].copy_from_slice(&block[j * k..(j + 1) * k]);
    }
    q
}

/// Reduces `count` random `n` x `n` matrices with (`low`, `high`); checks `H` (the packed
/// matrix above the first subdiagonal) against `Q^H A Q`, and `Q` orthonormal.
fn reconstructs<T: Elem>(count: usize, n: usize, low: i32, high: i32, a: Option<Vec<T>>) {
    let a = a.unwrap_or_else(|| random::<T>(count * n * n, n as u64));
    let (mut packed, mut tau, mut info) = (a.clone(), vec![T::NAN; count * (n - 1)], vec![-1; count]);
    kernels::gehrd(lapack(), Batch { count, rows: n, cols: n }, low, high, &mut packed, &mut tau, &mut info).unwrap();
    assert_eq!(info, vec![0; count]);
    for i in 0..count {
        let (a, packed, tau) = (&a[i * n * n..][..n * n], &packed[i * n * n..][..n * n], &tau[i * (n - 1)..][..n - 1]);
        let what = format!("{n}x{n} ({low}, {high}), matrix {i}");
        let mut h = packed.to_vec();
        for j in 0..n {
            for r in j + 2..n {
                h[j * n + r] = T::ZERO;
            }
        }
        let q = q_of_hessenberg(packed, tau, n);
        assert_orthonormal(&q, n, n, &what);
        let qhq = matmul(&matmul(&q, &h, n, n, n), &adjoint(&q, n, n), n, n, n);
        assert_close(&qhq, a, &format!("{what}: Q H Q^H = A"));
    }
}

#[test]
fn reduces_and_reconstructs_in_every_type() {
    crate::each_type!(reconstructs(2, 5, 1, 5, None));
    crate::each_type!(reconstructs(1, 2, 1, 2, None));
}

#[test]
fn a_partial_range_reduces_only_its_block() {
    // low = 2, high = 4 on 5x5: the matrix must be reduced outside rows/columns 2..=4 already
    // (as balancing leaves it): zero below the diagonal in column 1 and in row 5.
    let n = 5;
    let mut a = random::<f64>(n * n, 11);
    a[1..n].fill(0.0); // column 1 below the diagonal
    for c in 0..n - 1 {
        a[c * n + n - 1] = 0.0; // row 5 left of the diagonal
    }
    reconstructs::<f64>(1, n, 2, 4, Some(a.clone()));
    let (mut tau, mut info) = (vec![f64::NAN; n - 1], vec![-1]);
    kernels::gehrd(lapack(), Batch { count: 1, rows: n, cols: n }, 2, 4, &mut a, &mut tau, &mut info).unwrap();
    // tau(1 : low - 1) and tau(high : n - 1) are zero (1-based).
    assert_eq!((tau[0], tau[3]), (0.0, 0.0));
    assert!(tau[1].is_finite() && tau[2].is_finite());
}

#[test]
fn one_by_one_and_empty_call_nothing() {
    let (mut a, mut info) = (vec![3.0f64, 4.0], vec![-1; 2]);
    kernels::gehrd(lapack(), Batch { count: 2, rows: 1, cols: 1 }, 1, 1, &mut a, &mut [], &mut info).unwrap();
    assert_eq!((a, info), (vec![3.0, 4.0], vec![0, 0]));
    let mut info = vec![-1; 3];
    kernels::gehrd::<f32>(lapack(), Batch { count: 3, rows: 0, cols: 0 }, 1, 0, &mut [], &mut [], &mut info).unwrap();
    assert_eq!(info, [0, 0, 0]);
    kernels::gehrd::<f32>(lapack(), Batch { count: 0, rows: 4, cols: 4 }, 1, 4, &mut [], &mut [], &mut []).unwrap();
}

#[test]
fn attributes_out_of_lapacks_range_are_refused() {
    let batch = Batch { count: 1, rows: 3, cols: 3 };
    for (low, high) in [(0, 3), (1, 4), (3, 2), (4, 3), (-1, -1)] {
        let (mut a, mut tau, mut info) = (vec![0.0f64; 9], vec![0.0; 2], vec![0]);
        let e = kernels::gehrd(lapack(), batch, low, high, &mut a, &mut tau, &mut info).unwrap_err();
        assert!(matches!(e, KernelError::Shape(ref m) if m.contains("low")), "({low}, {high}): {e:?}");
    }
}

#[test]
fn non_square_and_wrong_lengths_are_refused() {
    let (mut a, mut tau, mut info) = (vec![0.0f64; 6], vec![0.0; 2], vec![0]);
    let e = kernels::gehrd(lapack(), Batch { count: 1, rows: 2, cols: 3 }, 1, 3, &mut a, &mut tau, &mut info);
    assert!(matches!(e, Err(KernelError::Shape(_))));
    let (mut a, mut tau, mut info) = (vec![0.0f64; 9], vec![0.0; 3], vec![0]);
    let e = kernels::gehrd(lapack(), Batch { count: 1, rows: 3, cols: 3 }, 1, 3, &mut a, &mut tau, &mut info);
    assert_eq!(e, Err(KernelError::Length { what: "tau", found: 3, expected: 2 }));
}
