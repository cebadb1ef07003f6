//! `potrf`: Cholesky factorisation. Also the element-type helper [`Num`] the `trsm` and `gtsv`
//! tests share.

use num_complex::Complex;
use pjrt_lapack::kernels::{self, Batch};
use pjrt_lapack::{KernelError, Scalar};

use crate::support::{all_types, col_major, lapack};

/// The four element types, built from and compared as `Complex<f64>`.
pub trait Num: Scalar {
    /// Relative tolerance of results computed in this precision.
    const TOL: f64;
    /// `re + im i` (`re` alone for a real type).
    fn of(re: f64, im: f64) -> Self;
    /// As a complex double.
    fn c(self) -> Complex<f64>;
}

impl Num for f32 {
    const TOL: f64 = 1e-4;
    fn of(re: f64, _: f64) -> Self {
        re as f32
    }
    fn c(self) -> Complex<f64> {
        Complex::new(self as f64, 0.0)
    }
}

impl Num for f64 {
    const TOL: f64 = 1e-12;
    fn of(re: f64, _: f64) -> Self {
        re
    }
    fn c(self) -> Complex<f64> {
        Complex::new(self, 0.0)
    }
}

impl Num for Complex<f32> {
    const TOL: f64 = 1e-4;
    fn of(re: f64, im: f64) -> Self {
        Complex::new(re as f32, im as f32)
    }
    fn c(self) -> Complex<f64> {
        Complex::new(self.re as f64, self.im as f64)
    }
}

impl Num for Complex<f64> {
    const TOL: f64 = 1e-12;
    fn of(re: f64, im: f64) -> Self {
        Complex::new(re, im)
    }
    fn c(self) -> Complex<f64> {
        self
    }
}

/// Asserts `found` is `expected` within `T::TOL` (relative to the largest of `scale` and 1).
pub fn assert_close<T: Num>(found: Complex<f64>, expected: Complex<f64>, scale: f64, what: &str) {
    let tol = T::TOL * scale.max(1.0);
    assert!(
        (found - expected).norm() <= tol,
        "{what} ({}): {found} != {expected} (tolerance {tol})",
        std::any::type_name::<T>()
    );
}

#[test]
fn factors_a_2x2_by_hand_in_either_triangle() {
    // [[4, 2], [2, 5]] = L L^T with L = [[2, 0], [1, 2]].
    let a = col_major(&[4.0f64, 2.0, 2.0, 5.0], 2, 2);
    let one = Batch { count: 1, rows: 2, cols: 2 };
    let (mut lower, mut info) = (a.clone(), vec![-7]);
    kernels::potrf(lapack(), one, b'L', &mut lower, &mut info).unwrap();
    assert_eq!((lower, &info), (vec![2.0, 1.0, 2.0, 2.0], &vec![0])); // a[2] (upper) as it was
    let (mut upper, mut info) = (a, vec![-7]);
    kernels::potrf(lapack(), one, b'U', &mut upper, &mut info).unwrap();
    assert_eq!((upper, info), (vec![2.0, 2.0, 1.0, 2.0], vec![0])); // U = L^T; a[1] as it was
}

/// A batch of two Hermitian positive-definite 3 x 3 matrices (real for real types), with
/// `junk` in the triangle `uplo` does not name, factored and multiplied back.
fn factors_and_multiplies_back<T: Num>(uplo: u8) {
    let hermitian = [
        [
            [(4.0, 0.0), (2.0, 1.0), (0.0, 0.0)],
            [(2.0, -1.0), (5.0, 0.0), (1.0, -2.0)],
            [(0.0, 0.0), (1.0, 2.0), (6.0, 0.0)],
        ],
        [
            [(9.0, 0.0), (-3.0, 3.0), (1.0, 1.0)],
            [(-3.0, -3.0), (7.0, 0.0), (0.5, 0.0)],
            [(1.0, -1.0), (0.5, 0.0), (3.0, 0.0)],
        ],
    ];
    let junk = T::of(-77.0, 13.0);
    let stored = |r: usize, c: usize| if uplo == b'L' { r >= c } else { r <= c };
    let mut a = Vec::new();
    for m in &hermitian {
        // Column-major: column c, then row r.
        for (r, c) in (0..3).flat_map(|c| (0..3).map(move |r| (r, c))) {
            a.push(if stored(r, c) { T::of(m[r][c].0, m[r][c].1) } else { junk });
        }
    }
    let mut info = vec![-7; 2];
    kernels::potrf(lapack(), Batch { count: 2, rows: 3, cols: 3 }, uplo, &mut a, &mut info).unwrap();
    assert_eq!(info, [0, 0]);
    for (k, m) in hermitian.iter().enumerate() {
        let f = |r: usize, c: usize| -> Complex<f64> {
            if stored(r, c) {
                a[k * 9 + c * 3 + r].c()
            } else {
                Complex::new(0.0, 0.0)
            }
        };
        for r in 0..3 {
            for c in 0..3 {
                // L L^H (lower) or U^H U (upper).
                let product: Complex<f64> = (0..3)
                    .map(|j| if uplo == b'L' { f(r, j) * f(c, j).conj() } else { f(j, r).conj() * f(j, c) })
                    .sum();
                let expected =
                    if T::IS_COMPLEX { Complex::new(m[r][c].0, m[r][c].1) } else { Complex::new(m[r][c].0, 0.0) };
                assert_close::<T>(product, expected, 9.0, &format!("matrix {k} ({r}, {c}), uplo {}", uplo as char));
                if !stored(r, c) {
                    assert_eq!(a[k * 9 + c * 3 + r], junk, "the other triangle is neither read nor written");
                }
            }
            assert_eq!(f(r, r).im, 0.0, "a real positive diagonal");
            assert!(f(r, r).re > 0.0);
        }
    }
}

#[test]
fn factors_batches_of_every_type_in_both_triangles() {
    for uplo in [b'L', b'U'] {
        factors_and_multiplies_back::<f32>(uplo);
        factors_and_multiplies_back::<f64>(uplo);
        factors_and_multiplies_back::<Complex<f32>>(uplo);
        factors_and_multiplies_back::<Complex<f64>>(uplo);
    }
}

fn reports_the_first_minor_not_positive_definite<T: Num>() {
    // Member 0 is positive definite; member 1, [[1, 2], [2, 1]], has a negative second minor;
    // member 2 a negative first entry.
    let rows = [[1.0, 0.0, 0.0, 1.0], [1.0, 2.0, 2.0, 1.0], [-1.0, 0.0, 0.0, 1.0]];
    let mut a: Vec<T> = rows.iter().flat_map(|m| col_major(m, 2, 2)).map(|v| T::of(v, 0.0)).collect();
    let mut info = vec![-7; 3];
    kernels::potrf(lapack(), Batch { count: 3, rows: 2, cols: 2 }, b'L', &mut a, &mut info).unwrap();
    assert_eq!(info, [0, 2, 1], "{}", std::any::type_name::<T>());
}

all_types!(not_positive_definite_gives_the_order_of_the_failing_minor, reports_the_first_minor_not_positive_definite);

#[test]
fn nan_input_gives_info_0_and_a_nan_factor() {
    // Reference LAPACK stops at a NaN pivot (`info = k`, DISNAN); scipy's OpenBLAS (the
    // library jaxlib calls too) has its own potrf, which tests `ajj <= 0` only: the NaN runs
    // through the rest of the factor and info stays 0. The triangle not named stays as it was.
    for (at, nan) in [(0, [true, true, false, true]), (3, [false, false, false, true])] {
        let mut a = col_major(&[4.0f64, 2.0, 2.0, 5.0], 2, 2);
        a[at] = f64::NAN;
        let mut info = vec![-7];
        kernels::potrf(lapack(), Batch { count: 1, rows: 2, cols: 2 }, b'L', &mut a, &mut info).unwrap();
        assert_eq!(info, [0], "NaN at {at}: factor {a:?}");
        assert_eq!(a.iter().map(|v| v.is_nan()).collect::<Vec<_>>(), nan, "NaN at {at}: factor {a:?}");
        assert_eq!(a[2], 2.0);
    }
}

#[test]
fn empty_matrices_and_batches_call_nothing() {
    let (mut a, mut info) = (Vec::<Complex<f64>>::new(), vec![5; 3]);
    kernels::potrf(lapack(), Batch { count: 3, rows: 0, cols: 0 }, b'U', &mut a, &mut info).unwrap();
    assert_eq!(info, [0, 0, 0]);
    let (mut a, mut info) = (Vec::<f32>::new(), Vec::new());
    kernels::potrf(lapack(), Batch { count: 0, rows: 4, cols: 4 }, b'L', &mut a, &mut info).unwrap();
}

#[test]
fn bad_attributes_shapes_and_lengths_are_refused_before_lapack() {
    let one = Batch { count: 1, rows: 2, cols: 2 };
    let (mut a, mut info) = (vec![1.0f64, 0.0, 0.0, 1.0], vec![0]);
    let e = kernels::potrf(lapack(), one, b'l', &mut a, &mut info).unwrap_err();
    assert!(matches!(e, KernelError::Attribute { name: "uplo", value: b'l', .. }), "{e}");
    let e = kernels::potrf(lapack(), Batch { count: 1, rows: 1, cols: 4 }, b'L', &mut a, &mut info).unwrap_err();
    assert!(matches!(e, KernelError::Shape(_)), "{e}");
    let e = kernels::potrf(lapack(), Batch { count: 2, ..one }, b'L', &mut a, &mut [0; 2]).unwrap_err();
    assert_eq!(e, KernelError::Length { what: "x", found: 4, expected: 8 });
    let e = kernels::potrf(lapack(), one, b'L', &mut a, &mut [0; 2]).unwrap_err();
    assert_eq!(e, KernelError::Length { what: "info", found: 2, expected: 1 });
    assert_eq!(a, [1.0, 0.0, 0.0, 1.0]);
}
