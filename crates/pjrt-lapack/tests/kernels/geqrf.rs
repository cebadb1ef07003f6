//! `geqrf`: Householder QR, checked by reconstruction (`A = Q R` with `Q` from `orgqr`,
//! orthonormal) in every element type, on tall, wide and square matrices, batched.
//!
//! [`la`] holds the small column-major linear algebra the Householder families' tests share
//! (`orgqr`, `gehrd`, `sytrd`).

use num_complex::Complex;
use pjrt_lapack::kernels::{self, Batch};
use pjrt_lapack::KernelError;

use crate::support::lapack;

use la::{assert_close, matmul, random, sub_matrix, Elem};

/// Column-major dense helpers over the four element types.
pub mod la {
    use std::ops::{Add, Mul, Neg, Sub};

    use num_complex::Complex;
    use pjrt_lapack::Scalar;

    /// The arithmetic the checks need, in each element type.
    pub trait Elem: Scalar + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Neg<Output = Self> {
        /// The complex conjugate (itself for a real type).
        fn conj(self) -> Self;
        /// The modulus, as `f64`.
        fn modulus(self) -> f64;
        /// `re + i im` (the imaginary part dropped for a real type).
        fn from_parts(re: f64, im: f64) -> Self;
        /// A tolerance for O(1) entries of small matrices.
        const TOL: f64;
    }

    macro_rules! real {
        ($t:ty, $tol:expr) => {
            impl Elem for $t {
                fn conj(self) -> Self {
                    self
                }
                fn modulus(self) -> f64 {
                    (self as f64).abs()
                }
                fn from_parts(re: f64, _im: f64) -> Self {
                    re as $t
                }
                const TOL: f64 = $tol;
            }
        };
    }
    macro_rules! complex {
        ($t:ty, $tol:expr) => {
            impl Elem for Complex<$t> {
                fn conj(self) -> Self {
                    Complex::conj(&self)
                }
                fn modulus(self) -> f64 {
                    (self.norm() as f64)
                }
                fn from_parts(re: f64, im: f64) -> Self {
                    Complex::new(re as $t, im as $t)
                }
                const TOL: f64 = $tol;
            }
        };
    }
    real!(f32, 1e-4);
    real!(f64, 1e-11);
    complex!(f32, 1e-4);
    complex!(f64, 1e-11);

    /// `len` pseudo-random entries in [-1, 1) (both parts for complex types), from `seed`.
    pub fn random<T: Elem>(len: usize, seed: u64) -> Vec<T> {
        let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let mut next = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        };
        (0..len).map(|_| T::from_parts(next(), next())).collect()
    }

    /// The `n` x `n` identity.
    pub fn identity<T: Elem>(n: usize) -> Vec<T> {
        let mut out = vec![T::ZERO; n * n];
        for i in 0..n {
            out[i * n + i] = T::ONE;
        }
        out
    }

    /// `a` (`m` x `k`) times `b` (`k` x `n`).
    pub fn matmul<T: Elem>(a: &[T], b: &[T], m: usize, k: usize, n: usize) -> Vec<T> {
        assert_eq!((a.len(), b.len()), (m * k, k * n));
        let mut out = vec![T::ZERO; m * n];
        for j in 0..n {
            for l in 0..k {
                let b_lj = b[j * k + l];
                for i in 0..m {
                    out[j * m + i] = out[j * m + i] + a[l * m + i] * b_lj;
                }
            }
        }
        out
    }

    /// The conjugate transpose of `a` (`m` x `n`).
    pub fn adjoint<T: Elem>(a: &[T], m: usize, n: usize) -> Vec<T> {
        let mut out = vec![T::ZERO; m * n];
        for j in 0..n {
            for i in 0..m {
                out[i * n + j] = a[j * m + i].conj();
            }
        }
        out
    }

    /// Rows `rows` and columns `cols` of `a` (`m` rows), as a new matrix.
    pub fn sub_matrix<T: Elem>(
        a: &[T],
        m: usize,
        rows: std::ops::Range<usize>,
        cols: std::ops::Range<usize>,
    ) -> Vec<T> {
        let mut out = Vec::with_capacity(rows.len() * cols.len());
        for j in cols {
            out.extend_from_slice(&a[j * m + rows.start..j * m + rows.end]);
        }
        out
    }

    /// `q^H q = I` for `q` of `m` x `n`.
    pub fn assert_orthonormal<T: Elem>(q: &[T], m: usize, n: usize, what: &str) {
        assert_close(&matmul(&adjoint(q, m, n), q, n, m, n), &identity(n), &format!("{what}: Q^H Q = I"));
    }

    /// Entrywise within `T::TOL`.
    pub fn assert_close<T: Elem>(found: &[T], expected: &[T], what: &str) {
        assert_eq!(found.len(), expected.len(), "{what}: lengths");
        for (i, (f, e)) in found.iter().zip(expected).enumerate() {
            let diff = (*f - *e).modulus();
            assert!(diff <= T::TOL, "{what} ({}): element {i} is {f:?}, expected {e:?}", std::any::type_name::<T>());
        }
    }
}

/// Runs `$check::<T>(args)` for each of the four element types.
#[macro_export]
macro_rules! each_type {
    ($check:ident($($arg:expr),*)) => {{
        $check::<f32>($($arg),*);
        $check::<f64>($($arg),*);
        $check::<num_complex::Complex<f32>>($($arg),*);
        $check::<num_complex::Complex<f64>>($($arg),*);
    }};
}

/// Factors `count` random `m` x `n` matrices; checks `Q R = A` and `Q^H Q = I` for each, with
/// `Q` (`m` x `min(m, n)`) from `orgqr` on the packed vectors and `R` the upper triangle.
fn reconstructs<T: Elem>(count: usize, m: usize, n: usize) {
    let batch = Batch { count, rows: m, cols: n };
    let a = random::<T>(count * m * n, (m * 10 + n) as u64);
    let k = m.min(n);
    let (mut packed, mut tau) = (a.clone(), vec![T::NAN; count * k]);
    kernels::geqrf(lapack(), batch, &mut packed, &mut tau).unwrap();
    for i in 0..count {
        let (a, packed, tau) = (&a[i * m * n..][..m * n], &packed[i * m * n..][..m * n], &tau[i * k..][..k]);
        // Q: the first k columns of the packed matrix, through orgqr.
        let mut q = sub_matrix(packed, m, 0..m, 0..k);
        kernels::orgqr(lapack(), Batch { count: 1, rows: m, cols: k }, k, &mut q, tau).unwrap();
        // R: the upper triangle of the first k rows.
        let mut r = sub_matrix(packed, m, 0..k, 0..n);
        for j in 0..n {
            for row in (j + 1).min(k)..k {
                r[j * k + row] = T::ZERO;
            }
        }
        let what = format!("{m}x{n} matrix {i}");
        assert_close(&matmul(&q, &r, m, k, n), a, &format!("{what}: Q R = A"));
        la::assert_orthonormal(&q, m, k, &what);
    }
}

#[test]
fn tall_matrices_reconstruct_in_every_type() {
    each_type!(reconstructs(2, 5, 3));
}

#[test]
fn wide_matrices_reconstruct_in_every_type() {
    each_type!(reconstructs(2, 3, 5));
}

#[test]
fn square_matrices_reconstruct_in_every_type() {
    each_type!(reconstructs(2, 4, 4));
    each_type!(reconstructs(1, 1, 1));
}

#[test]
fn a_column_gets_lapacks_reflector() {
    // (3, 4): xLARFG makes beta = -5, tau = (beta - alpha) / beta = 1.6, v = (1, 4 / 8).
    let (mut a, mut tau) = (vec![3.0f64, 4.0], vec![0.0; 1]);
    kernels::geqrf(lapack(), Batch { count: 1, rows: 2, cols: 1 }, &mut a, &mut tau).unwrap();
    assert_close(&a, &[-5.0, 0.5], "packed");
    assert_close(&tau, &[1.6], "tau");
    // Complex: alpha = 3i, |x| = 5: beta = -5 (the sign of alpha's real part, +0), tau = 1 + 0.6i.
    let (mut a, mut tau) = (vec![Complex::new(0.0f64, 3.0), Complex::new(4.0, 0.0)], vec![Complex::default(); 1]);
    kernels::geqrf(lapack(), Batch { count: 1, rows: 2, cols: 1 }, &mut a, &mut tau).unwrap();
    assert_close(&a[..1], &[Complex::new(-5.0, 0.0)], "complex R");
    assert_close(&tau, &[Complex::new(1.0, 0.6)], "complex tau");
}

#[test]
fn empty_matrices_and_batches_call_nothing() {
    for (count, rows, cols) in [(2, 0, 3), (2, 3, 0), (0, 4, 4), (3, 0, 0)] {
        let mut a = vec![7.0f32; count * rows * cols];
        let mut tau = vec![0.0f32; count * rows.min(cols)];
        kernels::geqrf(lapack(), Batch { count, rows, cols }, &mut a, &mut tau).unwrap();
        assert!(a.iter().all(|&v| v == 7.0));
    }
}

#[test]
fn wrong_lengths_are_refused_before_lapack() {
    let batch = Batch { count: 2, rows: 3, cols: 2 };
    let (mut a, mut tau) = (vec![0.0f64; 12], vec![0.0; 3]);
    let e = kernels::geqrf(lapack(), batch, &mut a, &mut tau).unwrap_err();
    assert_eq!(e, KernelError::Length { what: "tau", found: 3, expected: 4 });
    let (mut a, mut tau) = (vec![0.0f64; 11], vec![0.0; 4]);
    let e = kernels::geqrf(lapack(), batch, &mut a, &mut tau).unwrap_err();
    assert_eq!(e, KernelError::Length { what: "x", found: 11, expected: 12 });
}
