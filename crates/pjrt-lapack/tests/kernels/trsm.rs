//! `trsm`: triangular solves, every side / triangle / transpose / diagonal, multiplied back.

use num_complex::Complex;
use pjrt_lapack::kernels::{self, Batch, Triangular};
use pjrt_lapack::KernelError;

use crate::potrf::{assert_close, Num};
use crate::support::{all_types, col_major, lapack};

#[test]
fn solves_a_lower_system_by_hand() {
    // [[2, 0], [1, 4]] z = [[2, 4], [9, 6]]: z = [[1, 2], [2, 1]].
    let x = col_major(&[2.0f64, 0.0, 1.0, 4.0], 2, 2);
    let mut y = col_major(&[2.0, 4.0, 9.0, 6.0], 2, 2);
    let square = Batch { count: 1, rows: 2, cols: 2 };
    kernels::trsm(lapack(), Triangular::new(b'L', b'L', b'N', b'N'), square, &x, square, &mut y).unwrap();
    assert_eq!(y, col_major(&[1.0, 2.0, 2.0, 1.0], 2, 2));
    // From the right, transposed: z [[2, 0], [1, 4]]^T = [[4, 9]], z = [[2, 1.75]].
    let mut y = vec![4.0, 9.0];
    let row = Batch { count: 1, rows: 1, cols: 2 };
    kernels::trsm(lapack(), Triangular::new(b'R', b'L', b'T', b'N'), square, &x, row, &mut y).unwrap();
    assert_eq!(y, [2.0, 1.75]);
}

/// The `k` x `k` matrix `op(T)` BLAS solves with, from the stored `x` (column-major).
fn op_of(x: &[Complex<f64>], k: usize, t: Triangular) -> Vec<Vec<Complex<f64>>> {
    let tri = |r: usize, c: usize| {
        let inside = if t.uplo == b'L' { r >= c } else { r <= c };
        match (inside, r == c && t.diag == b'U') {
            (_, true) => Complex::new(1.0, 0.0),
            (true, false) => x[c * k + r],
            (false, false) => Complex::new(0.0, 0.0),
        }
    };
    (0..k)
        .map(|r| {
            (0..k)
                .map(|c| match t.trans_x {
                    b'N' => tri(r, c),
                    b'T' => tri(c, r),
                    _ => tri(c, r).conj(),
                })
                .collect()
        })
        .collect()
}

/// A batch of two systems with `y` of 3 x 2, for one combination of the four codes: the
/// triangle BLAS must not read (and the diagonal, when unit) holds junk; `op(x) z` (or
/// `z op(x)`) is compared with the original `y`.
fn solves_and_multiplies_back<T: Num>(t: Triangular) {
    let (m, n, count) = (3usize, 2usize, 2usize);
    let k = if t.side == b'L' { m } else { n };
    let mut x = Vec::new();
    for b in 0..count {
        for c in 0..k {
            for r in 0..k {
                let inside = if t.uplo == b'L' { r >= c } else { r <= c };
                let v = if !inside || (r == c && t.diag == b'U') {
                    T::of(1e3, -1e3) // never read
                } else if r == c {
                    T::of(2.0 + r as f64 + b as f64, 0.5)
                } else {
                    T::of(0.5 * (r as f64 - c as f64) + b as f64, 0.25 * (r + c) as f64)
                };
                x.push(v);
            }
        }
    }
    let y0: Vec<T> = (0..count * m * n).map(|i| T::of(i as f64 - 4.5, 0.5 * i as f64)).collect();
    let mut y = y0.clone();
    let x_batch = Batch { count, rows: k, cols: k };
    let y_batch = Batch { count, rows: m, cols: n };
    kernels::trsm(lapack(), t, x_batch, &x, y_batch, &mut y).unwrap();
    let xc: Vec<Complex<f64>> = x.iter().map(|v| v.c()).collect();
    for b in 0..count {
        let op = op_of(&xc[b * k * k..(b + 1) * k * k], k, t);
        let z = |r: usize, c: usize| y[b * m * n + c * m + r].c();
        for r in 0..m {
            for c in 0..n {
                let product: Complex<f64> = if t.side == b'L' {
                    (0..k).map(|j| op[r][j] * z(j, c)).sum()
                } else {
                    (0..k).map(|j| z(r, j) * op[j][c]).sum()
                };
                let what = format!("member {b} ({r}, {c}) of {t:?}");
                assert_close::<T>(product, y0[b * m * n + c * m + r].c(), 10.0, &what);
            }
        }
    }
}

fn every_combination<T: Num>() {
    for side in [b'L', b'R'] {
        for uplo in [b'L', b'U'] {
            for trans in [b'N', b'T', b'C'] {
                for diag in [b'N', b'U'] {
                    solves_and_multiplies_back::<T>(Triangular::new(side, uplo, trans, diag));
                }
            }
        }
    }
}

all_types!(every_side_triangle_transpose_and_diagonal_of_every_type, every_combination);

#[test]
fn conjugate_transpose_of_a_real_matrix_is_its_transpose() {
    // JAX passes 'C' for real types too (jax.scipy.linalg.solve_triangular(trans=2)).
    let x = col_major(&[2.0f32, 3.0, 0.0, 4.0], 2, 2); // upper
    let square = Batch { count: 1, rows: 2, cols: 2 };
    let rhs = Batch { count: 1, rows: 2, cols: 1 };
    let (mut by_t, mut by_c) = (vec![2.0f32, 10.0], vec![2.0f32, 10.0]);
    kernels::trsm(lapack(), Triangular::new(b'L', b'U', b'T', b'N'), square, &x, rhs, &mut by_t).unwrap();
    kernels::trsm(lapack(), Triangular::new(b'L', b'U', b'C', b'N'), square, &x, rhs, &mut by_c).unwrap();
    assert_eq!(by_t, [1.0, 1.75]); // [[2, 0], [3, 4]] z = [2, 10]
    assert_eq!(by_c, by_t);
}

#[test]
fn a_zero_on_the_diagonal_is_divided_by() {
    // No info output: BLAS divides by the zero, as under JAX.
    let x = vec![0.0f64, 0.0, 0.0, 1.0];
    let square = Batch { count: 1, rows: 2, cols: 2 };
    let mut y = vec![1.0, 1.0];
    kernels::trsm(lapack(), Triangular::new(b'L', b'L', b'N', b'N'), square, &x, Batch { cols: 1, ..square }, &mut y)
        .unwrap();
    assert_eq!(y[0], f64::INFINITY);
}

#[test]
fn empty_right_hand_sides_call_nothing() {
    let t = Triangular::new(b'L', b'U', b'N', b'N');
    // y of 3 x 0 (x still 3 x 3), y of 0 x 2 from the left (x 0 x 0), an empty batch.
    let x = vec![f64::NAN; 9];
    kernels::trsm(lapack(), t, Batch { count: 1, rows: 3, cols: 3 }, &x, Batch { count: 1, rows: 3, cols: 0 }, &mut [])
        .unwrap();
    kernels::trsm::<f64>(
        lapack(),
        t,
        Batch { count: 1, rows: 0, cols: 0 },
        &[],
        Batch { count: 1, rows: 0, cols: 2 },
        &mut [],
    )
    .unwrap();
    let none = Batch { count: 0, rows: 3, cols: 3 };
    kernels::trsm::<f32>(lapack(), t, none, &[], none, &mut []).unwrap();
}

#[test]
fn bad_codes_shapes_and_lengths_are_refused_before_blas() {
    let square = Batch { count: 1, rows: 2, cols: 2 };
    let x = vec![1.0f64, 0.0, 0.0, 1.0];
    let mut y = vec![1.0, 2.0, 3.0, 4.0];
    let refused = |t: Triangular, y: &mut [f64]| kernels::trsm(lapack(), t, square, &x, square, y).unwrap_err();
    for (t, name, value) in [
        (Triangular::new(b'X', b'L', b'N', b'N'), "side", b'X'),
        (Triangular::new(b'L', b'l', b'N', b'N'), "uplo", b'l'),
        (Triangular::new(b'L', b'L', b'H', b'N'), "trans_x", b'H'),
        (Triangular::new(b'L', b'L', b'N', 0), "diag", 0),
    ] {
        let e = refused(t, &mut y);
        assert!(matches!(e, KernelError::Attribute { name: n, value: v, .. } if n == name && v == value), "{e}");
    }
    let t = Triangular::new(b'R', b'L', b'N', b'N');
    // From the right, x must be n x n (n = 3 here), not m x m.
    let wide = Batch { count: 1, rows: 2, cols: 3 };
    let e = kernels::trsm(lapack(), t, square, &x, wide, &mut [0.0; 6]).unwrap_err();
    assert!(matches!(e, KernelError::Shape(_)), "{e}");
    let e = kernels::trsm(lapack(), t, Batch { count: 2, ..square }, &x, square, &mut y).unwrap_err();
    assert!(matches!(e, KernelError::Shape(_)), "{e}");
    let e = kernels::trsm(lapack(), t, square, &x[..3], square, &mut y).unwrap_err();
    assert_eq!(e, KernelError::Length { what: "x", found: 3, expected: 4 });
    let e = kernels::trsm(lapack(), t, square, &x, square, &mut y[..3]).unwrap_err();
    assert_eq!(e, KernelError::Length { what: "y", found: 3, expected: 4 });
    assert_eq!(y, [1.0, 2.0, 3.0, 4.0]);
}
