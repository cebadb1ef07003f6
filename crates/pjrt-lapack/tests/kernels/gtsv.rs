//! `gtsv`: tridiagonal solves, by hand and multiplied back against the dense matrix.

use num_complex::Complex;
use pjrt_lapack::kernels::{self, Batch};
use pjrt_lapack::KernelError;

use crate::potrf::{assert_close, Num};
use crate::support::{all_types, lapack};

#[test]
fn solves_a_3x3_by_hand() {
    // [[2, 1, 0], [1, 2, 1], [0, 1, 2]] z = [4, 8, 8]: z = [1, 2, 3]. dl[0] and du[2] are
    // outside the matrix: NaN there is neither read nor written.
    let (mut dl, mut d, mut du) = (vec![f64::NAN, 1.0, 1.0], vec![2.0; 3], vec![1.0, 1.0, f64::NAN]);
    let (mut b, mut info) = (vec![4.0, 8.0, 8.0], vec![-7]);
    kernels::gtsv(lapack(), Batch { count: 1, rows: 3, cols: 1 }, &mut dl, &mut d, &mut du, &mut b, &mut info).unwrap();
    assert_eq!(info, [0]);
    for (found, expected) in b.iter().zip([1.0, 2.0, 3.0]) {
        assert!((found - expected).abs() < 1e-14, "{b:?}");
    }
    assert!(dl[0].is_nan() && du[2].is_nan());
    // No pivoting here: d is U's diagonal [2, 3/2, 4/3], du its super-diagonal (as it was).
    assert_eq!(&du[..2], &[1.0, 1.0]);
    for (found, expected) in d.iter().zip([2.0, 1.5, 4.0 / 3.0]) {
        assert!((found - expected).abs() < 1e-14, "{d:?}");
    }
}

#[test]
fn pivots_rows_when_the_diagonal_is_zero() {
    // [[0, 1], [1, 0]] z = [[3, 1], [5, 2]]: z = [[5, 2], [3, 1]] (two right-hand sides).
    let (mut dl, mut d, mut du) = (vec![0.0f32, 1.0], vec![0.0; 2], vec![1.0, 0.0]);
    let (mut b, mut info) = (vec![3.0, 5.0, 1.0, 2.0], vec![-7]);
    kernels::gtsv(lapack(), Batch { count: 1, rows: 2, cols: 2 }, &mut dl, &mut d, &mut du, &mut b, &mut info).unwrap();
    assert_eq!((b, info), (vec![5.0, 3.0, 2.0, 1.0], vec![0]));
}

/// A batch of two 4 x 4 systems with 2 right-hand sides, one of them needing pivots;
/// `A z` (the dense `A`) compared with the original `b`.
fn solves_and_multiplies_back<T: Num>() {
    let (n, nrhs, count) = (4usize, 2usize, 2usize);
    let sub = [[(9.0, 9.0), (1.0, -1.0), (0.5, 0.0), (2.0, 1.0)], [(9.0, 9.0), (5.0, 0.0), (-4.0, 1.0), (3.0, 0.0)]];
    let diag = [[(4.0, 1.0), (5.0, 0.0), (6.0, -1.0), (4.0, 0.0)], [(1.0, 0.0), (0.5, 0.5), (2.0, 0.0), (1.0, -2.0)]];
    let sup = [[(1.0, 2.0), (-1.0, 0.0), (2.0, 0.5), (9.0, 9.0)], [(2.0, 0.0), (1.0, 1.0), (-1.0, 0.0), (9.0, 9.0)]];
    let of = |v: &[[(f64, f64); 4]; 2]| -> Vec<T> { v.iter().flatten().map(|&(re, im)| T::of(re, im)).collect() };
    let (mut dl, mut d, mut du) = (of(&sub), of(&diag), of(&sup));
    let b0: Vec<T> = (0..count * n * nrhs).map(|i| T::of(1.0 + i as f64, 2.0 - i as f64)).collect();
    let (mut b, mut info) = (b0.clone(), vec![-7; 2]);
    kernels::gtsv(lapack(), Batch { count, rows: n, cols: nrhs }, &mut dl, &mut d, &mut du, &mut b, &mut info).unwrap();
    assert_eq!(info, [0, 0], "{}", std::any::type_name::<T>());
    let exact = |v: (f64, f64)| T::of(v.0, v.1).c();
    for k in 0..count {
        let a = |r: usize, c: usize| -> Complex<f64> {
            match c as isize - r as isize {
                -1 => exact(sub[k][r]),
                0 => exact(diag[k][r]),
                1 => exact(sup[k][r]),
                _ => Complex::new(0.0, 0.0),
            }
        };
        for j in 0..nrhs {
            for r in 0..n {
                let product: Complex<f64> = (0..n).map(|c| a(r, c) * b[k * n * nrhs + j * n + c].c()).sum();
                let what = format!("member {k} row {r} column {j}");
                assert_close::<T>(product, b0[k * n * nrhs + j * n + r].c(), 20.0, &what);
            }
        }
        // Outside LAPACK's arrays: untouched.
        assert_eq!((dl[k * n], du[k * n + n - 1]), (T::of(9.0, 9.0), T::of(9.0, 9.0)));
    }
}

all_types!(solves_batches_of_every_type, solves_and_multiplies_back);

#[test]
fn singular_systems_report_the_zero_pivot_per_member() {
    // Member 0: [[1, 1], [1, 1]] (U(2, 2) = 0); member 1: the identity.
    let (mut dl, mut d, mut du) = (vec![0.0f64, 1.0, 0.0, 0.0], vec![1.0, 1.0, 1.0, 1.0], vec![1.0, 0.0, 0.0, 0.0]);
    let (mut b, mut info) = (vec![1.0, 2.0, 3.0, 4.0], vec![-7; 2]);
    kernels::gtsv(lapack(), Batch { count: 2, rows: 2, cols: 1 }, &mut dl, &mut d, &mut du, &mut b, &mut info).unwrap();
    assert_eq!(info, [2, 0]);
    assert_eq!(&b[2..], &[3.0, 4.0]);
}

#[test]
fn no_right_hand_side_still_factors_as_jax_does() {
    // nrhs = 0 with n > 0: JAX's kernel calls LAPACK, which factors the diagonals and reports
    // a zero pivot; b is empty.
    let (mut dl, mut d, mut du) = (vec![0.0f64, 1.0], vec![1.0, 1.0], vec![1.0, 0.0]);
    let mut info = vec![-7];
    kernels::gtsv(lapack(), Batch { count: 1, rows: 2, cols: 0 }, &mut dl, &mut d, &mut du, &mut [], &mut info)
        .unwrap();
    assert_eq!(info, [2]);
    assert_eq!(d, [1.0, 0.0]); // U's diagonal: 1 - 1 * 1
}

#[test]
fn empty_systems_call_nothing() {
    let mut info = vec![5; 3];
    kernels::gtsv::<Complex<f32>>(
        lapack(),
        Batch { count: 3, rows: 0, cols: 2 },
        &mut [],
        &mut [],
        &mut [],
        &mut [],
        &mut info,
    )
    .unwrap();
    assert_eq!(info, [0, 0, 0]);
    let none = Batch { count: 0, rows: 4, cols: 1 };
    kernels::gtsv::<f64>(lapack(), none, &mut [], &mut [], &mut [], &mut [], &mut []).unwrap();
}

#[test]
fn wrong_lengths_are_refused_before_lapack() {
    let batch = Batch { count: 1, rows: 3, cols: 2 };
    let (mut dl, mut d, mut du, mut b, mut info) = (vec![0.0f64; 3], vec![1.0; 3], vec![0.0; 3], vec![1.0; 6], vec![0]);
    let e = kernels::gtsv(lapack(), batch, &mut dl[..2], &mut d, &mut du, &mut b, &mut info).unwrap_err();
    assert_eq!(e, KernelError::Length { what: "dl", found: 2, expected: 3 });
    let e = kernels::gtsv(lapack(), batch, &mut dl, &mut d[..2], &mut du, &mut b, &mut info).unwrap_err();
    assert_eq!(e, KernelError::Length { what: "d", found: 2, expected: 3 });
    let e = kernels::gtsv(lapack(), batch, &mut dl, &mut d, &mut du[..2], &mut b, &mut info).unwrap_err();
    assert_eq!(e, KernelError::Length { what: "du", found: 2, expected: 3 });
    let e = kernels::gtsv(lapack(), batch, &mut dl, &mut d, &mut du, &mut b[..3], &mut info).unwrap_err();
    assert_eq!(e, KernelError::Length { what: "b", found: 3, expected: 6 });
    let e = kernels::gtsv(lapack(), batch, &mut dl, &mut d, &mut du, &mut b, &mut []).unwrap_err();
    assert_eq!(e, KernelError::Length { what: "info", found: 0, expected: 1 });
    assert_eq!(b, [1.0; 6]);
}
