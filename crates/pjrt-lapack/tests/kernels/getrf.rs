//! `getrf`: LU with partial pivoting.

use pjrt_lapack::kernels::{self, Batch};
use pjrt_lapack::KernelError;

use crate::support::{col_major, lapack};

#[test]
fn factors_a_batch_with_lapack_pivots() {
    // Two 2x2 matrices: [[4, 3], [6, 3]] pivots on row 2; [[1, 0], [0, 1]] does not pivot.
    let mut a: Vec<f64> = [col_major(&[4.0, 3.0, 6.0, 3.0], 2, 2), col_major(&[1.0, 0.0, 0.0, 1.0], 2, 2)].concat();
    let (mut ipiv, mut info) = (vec![0; 4], vec![-7; 2]);
    kernels::getrf(lapack(), Batch { count: 2, rows: 2, cols: 2 }, &mut a, &mut ipiv, &mut info).unwrap();
    assert_eq!(ipiv, [2, 2, 1, 2]);
    assert_eq!(info, [0, 0]);
    // L = [[1, 0], [2/3, 1]], U = [[6, 3], [0, 1]], packed column-major.
    assert_eq!(&a[..4], &[6.0, 4.0 / 6.0, 3.0, 1.0]);
}

#[test]
fn singular_matrices_report_the_zero_pivot() {
    let mut a = vec![0.0f32; 4];
    let (mut ipiv, mut info) = (vec![0; 2], vec![0; 1]);
    kernels::getrf(lapack(), Batch { count: 1, rows: 2, cols: 2 }, &mut a, &mut ipiv, &mut info).unwrap();
    assert_eq!(info, [1]);
}

#[test]
fn empty_matrices_call_nothing() {
    let (mut a, mut ipiv, mut info) = (Vec::<f64>::new(), Vec::new(), vec![5; 3]);
    kernels::getrf(lapack(), Batch { count: 3, rows: 0, cols: 0 }, &mut a, &mut ipiv, &mut info).unwrap();
    assert_eq!(info, [0, 0, 0]);
}

#[test]
fn wrong_lengths_are_refused_before_lapack() {
    let (mut a, mut ipiv, mut info) = (vec![0.0f64; 3], vec![0; 2], vec![0; 1]);
    let e = kernels::getrf(lapack(), Batch { count: 1, rows: 2, cols: 2 }, &mut a, &mut ipiv, &mut info).unwrap_err();
    assert_eq!(e, KernelError::Length { what: "x", found: 3, expected: 4 });
}
