//! Shared by the kernel tests: the library, column-major helpers, and for the eigen, SVD and
//! Schur tests the element types seen as `Complex<f64>` (`Elem`) with complex matrix arithmetic.

use std::sync::OnceLock;

/// A test `$test` that runs `$check::<T>()` for the four element types (f32, f64 and their
/// complex types).
macro_rules! all_types {
    ($test:ident, $check:ident) => {
        #[test]
        fn $test() {
            $check::<f32>();
            $check::<f64>();
            $check::<num_complex::Complex<f32>>();
            $check::<num_complex::Complex<f64>>();
        }
    };
}
pub(crate) use all_types;

use num_complex::Complex;
use pjrt_lapack::{Lapack, Scalar};

/// scipy's OpenBLAS from the plugin cache, installed there first when missing.
pub fn lapack() -> &'static Lapack {
    static LAPACK: OnceLock<Lapack> = OnceLock::new();
    LAPACK.get_or_init(|| {
        let path = pjrt_plugins::install_verified(&pjrt_plugins::OPENBLAS, |line| eprintln!("{line}"))
            .unwrap_or_else(|e| panic!("installing scipy's OpenBLAS for the kernel tests: {e}"));
        Lapack::load(&path).unwrap_or_else(|e| panic!("loading {}: {e}", path.display()))
    })
}

/// A column-major copy of a row-major `rows` x `cols` matrix.
#[allow(dead_code)]
pub fn col_major<T: Copy>(row_major: &[T], rows: usize, cols: usize) -> Vec<T> {
    assert_eq!(row_major.len(), rows * cols);
    let mut out = Vec::with_capacity(rows * cols);
    for c in 0..cols {
        for r in 0..rows {
            out.push(row_major[r * cols + c]);
        }
    }
    out
}

pub type C = Complex<f64>;

/// The four element types, seen through `Complex<f64>` for checking.
pub trait Elem: Scalar {
    /// A tolerance for residuals of small well-conditioned matrices.
    const TOL: f64;
    fn c(self) -> C;
    /// The value of `z` (its real part for a real type).
    fn from_c(z: C) -> Self;
}

impl Elem for f32 {
    const TOL: f64 = 1e-4;
    fn c(self) -> C {
        C::new(self.into(), 0.0)
    }
    fn from_c(z: C) -> Self {
        z.re as f32
    }
}
impl Elem for f64 {
    const TOL: f64 = 1e-11;
    fn c(self) -> C {
        C::new(self, 0.0)
    }
    fn from_c(z: C) -> Self {
        z.re
    }
}
impl Elem for Complex<f32> {
    const TOL: f64 = 1e-4;
    fn c(self) -> C {
        C::new(self.re.into(), self.im.into())
    }
    fn from_c(z: C) -> Self {
        Complex::new(z.re as f32, z.im as f32)
    }
}
impl Elem for Complex<f64> {
    const TOL: f64 = 1e-11;
    fn c(self) -> C {
        self
    }
    fn from_c(z: C) -> Self {
        z
    }
}

/// Deterministic values in [-1, 1) (complex for complex types).
pub fn random<T: Elem>(len: usize, seed: u64) -> Vec<T> {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let mut next = move || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    };
    (0..len).map(|_| T::from_c(C::new(next(), next()))).collect()
}

/// `v` as `Complex<f64>`.
pub fn to_c<T: Elem>(v: &[T]) -> Vec<C> {
    v.iter().map(|x| x.c()).collect()
}

/// `a` (m x k) times `b` (k x n), column-major.
pub fn matmul(a: &[C], b: &[C], m: usize, k: usize, n: usize) -> Vec<C> {
    let mut out = vec![C::new(0.0, 0.0); m * n];
    for j in 0..n {
        for p in 0..k {
            for i in 0..m {
                out[j * m + i] += a[p * m + i] * b[j * k + p];
            }
        }
    }
    out
}

/// The conjugate transpose of `a` (m x n).
pub fn adjoint(a: &[C], m: usize, n: usize) -> Vec<C> {
    let mut out = vec![C::new(0.0, 0.0); m * n];
    for j in 0..n {
        for i in 0..m {
            out[i * n + j] = a[j * m + i].conj();
        }
    }
    out
}

/// The largest distance between corresponding elements.
pub fn max_diff(a: &[C], b: &[C]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).norm()).fold(0.0, f64::max)
}

/// The `n` x `n` identity.
pub fn identity(n: usize) -> Vec<C> {
    (0..n * n).map(|k| C::new(f64::from(u8::from(k % (n + 1) == 0)), 0.0)).collect()
}
