//! `gesdd`: singular value decomposition, in the shapes of JAX's lowering for each mode.

use num_complex::Complex;
use pjrt_lapack::kernels::{self, Batch};
use pjrt_lapack::KernelError;

use crate::support::{adjoint, all_types, identity, lapack, matmul, max_diff, random, to_c, Elem, C};

/// What a call gives back: singular values (f64), u, vt (as `Complex<f64>`), info.
type Svd = (Vec<f64>, Vec<C>, Vec<C>, Vec<i32>);

/// `gesdd` for real types, `gesdd_complex` for complex ones; `u` m x u_cols, `vt` vt_rows x n.
trait Gesdd: Elem {
    fn svd(batch: Batch, mode: u8, a: &mut [Self], u_cols: usize, vt_rows: usize) -> Result<Svd, KernelError>;
}

macro_rules! gesdd_impl {
    ($t:ty, $r:ty, $f:ident) => {
        impl Gesdd for $t {
            fn svd(batch: Batch, mode: u8, a: &mut [Self], u_cols: usize, vt_rows: usize) -> Result<Svd, KernelError> {
                let (m, n, c) = (batch.rows, batch.cols, batch.count);
                let mut s = vec![0.0 as $r; c * m.min(n)];
                let mut u = vec![<$t>::default(); c * m * u_cols];
                let mut vt = vec![<$t>::default(); c * vt_rows * n];
                let mut info = vec![-9; c];
                kernels::$f(lapack(), batch, mode, a, &mut s, &mut u, u_cols, &mut vt, vt_rows, &mut info)?;
                Ok((s.into_iter().map(Into::into).collect(), to_c(&u), to_c(&vt), info))
            }
        }
    };
}
gesdd_impl!(f32, f32, gesdd);
gesdd_impl!(f64, f64, gesdd);
gesdd_impl!(Complex<f32>, f32, gesdd_complex);
gesdd_impl!(Complex<f64>, f64, gesdd_complex);

/// For tall and wide matrices, a batch of two: A = U diag(s) VT with the full and the thin
/// factors, U and V with orthonormal columns, s descending; mode 'N' gives the same s.
fn decomposes<T: Gesdd>() {
    for (m, n) in [(5, 3), (3, 5), (4, 4)] {
        let k = m.min(n);
        let batch = Batch { count: 2, rows: m, cols: n };
        let original = random::<T>(2 * m * n, (m * 10 + n) as u64);
        let mut reference = Vec::new();
        for (mode, u_cols, vt_rows) in [(b'A', m, n), (b'S', k, k)] {
            let mut a = original.clone();
            let (s, u, vt, info) = T::svd(batch, mode, &mut a, u_cols, vt_rows).unwrap();
            assert_eq!(info, [0, 0]);
            for b in 0..2 {
                let x = to_c(&original[b * m * n..(b + 1) * m * n]);
                let u = &u[b * m * u_cols..(b + 1) * m * u_cols];
                let vt = &vt[b * vt_rows * n..(b + 1) * vt_rows * n];
                let s = &s[b * k..(b + 1) * k];
                assert!(s.windows(2).all(|p| p[0] >= p[1]) && s[k - 1] >= 0.0, "{s:?}");
                // U[:, :k] diag(s) VT[:k, :]
                let us: Vec<C> = (0..m * k).map(|i| u[i] * s[i / m]).collect();
                let vt_k: Vec<C> = (0..k * n).map(|i| vt[(i / k) * vt_rows + i % k]).collect();
                assert!(max_diff(&matmul(&us, &vt_k, m, k, n), &x) < 10.0 * T::TOL, "{} {mode}", T::PREFIX);
                let tol = 10.0 * T::TOL;
                assert!(max_diff(&matmul(&adjoint(u, m, u_cols), u, u_cols, m, u_cols), &identity(u_cols)) < tol);
                let v = adjoint(vt, vt_rows, n);
                assert!(max_diff(&matmul(&adjoint(&v, n, vt_rows), &v, vt_rows, n, vt_rows), &identity(vt_rows)) < tol);
            }
            reference = s;
        }
        // JAX's shapes for mode 'N' (u m x k, vt k x n), not written.
        let mut a = original.clone();
        let (s, u, vt, info) = T::svd(batch, b'N', &mut a, k, k).unwrap();
        assert_eq!(info, [0, 0]);
        assert!(s.iter().zip(&reference).all(|(x, y)| (x - y).abs() < 10.0 * T::TOL));
        assert!(u.iter().chain(&vt).all(|z| *z == C::new(0.0, 0.0)));
    }
}

all_types!(decomposes_all_types, decomposes);

fn nan<T: Gesdd>() {
    let (m, n) = (3, 2);
    let mut a = random::<T>(2 * m * n, 4);
    a[m * n + 1] = T::NAN;
    let (_, _, _, info) = T::svd(Batch { count: 2, rows: m, cols: n }, b'S', &mut a, 2, 2).unwrap();
    // LAPACK's own check of the norm: argument 4 (A) is NaN, reported, not an error.
    assert_eq!(info, [0, -4]);
}

all_types!(nan_input_gives_info_minus_4, nan);

#[test]
fn empty_matrices_call_nothing() {
    let (s, _, _, info) = <f64 as Gesdd>::svd(Batch { count: 2, rows: 3, cols: 0 }, b'A', &mut [], 3, 0).unwrap();
    assert_eq!((s.len(), info), (0, vec![0, 0]));
}

#[test]
fn modes_and_shapes_are_checked() {
    let batch = Batch { count: 1, rows: 2, cols: 2 };
    let e = <f64 as Gesdd>::svd(batch, b'O', &mut [1.0; 4], 2, 2).unwrap_err();
    assert!(matches!(e, KernelError::Attribute { name: "mode", value: b'O', .. }), "{e}");
    // Full U and VT do not fit in thin buffers.
    let batch = Batch { count: 1, rows: 3, cols: 2 };
    let e = <Complex<f32> as Gesdd>::svd(batch, b'A', &mut [Complex::default(); 6], 2, 2).unwrap_err();
    assert!(matches!(e, KernelError::Shape(_)), "{e}");
    let (mut s, mut u, mut vt, mut info) = (vec![0.0f32; 2], vec![0.0; 6], vec![0.0; 3], vec![0]);
    let e = kernels::gesdd(lapack(), batch, b'S', &mut [0.0; 6], &mut s, &mut u, 2, &mut vt, 2, &mut info).unwrap_err();
    assert_eq!(e, KernelError::Length { what: "vt", found: 3, expected: 4 });
}
