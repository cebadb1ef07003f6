//! `geev`: general eigendecomposition, the real kernels' eigenvectors unpacked to complex.

use num_complex::Complex;
use pjrt_lapack::kernels::{self, Batch};
use pjrt_lapack::KernelError;

use crate::support::{adjoint, all_types, col_major, lapack, matmul, max_diff, random, to_c, Elem, C};

/// What a call gives back, as `Complex<f64>`: eigenvalues, left and right vectors, info.
type Eig = (Vec<C>, Vec<C>, Vec<C>, Vec<i32>);

/// `geev` for real types (eigenvalues from `wr`, `wi`), `geev_complex` for complex ones.
trait Geev: Elem {
    fn eig(batch: Batch, left: u8, right: u8, a: &[Self]) -> Result<Eig, KernelError>;
}

macro_rules! geev_real {
    ($t:ty) => {
        impl Geev for $t {
            fn eig(batch: Batch, left: u8, right: u8, a: &[Self]) -> Result<Eig, KernelError> {
                let n = batch.cols;
                let (mut wr, mut wi) = (vec![0.0 as $t; batch.count * n], vec![0.0 as $t; batch.count * n]);
                let mut vl = vec![Complex::<$t>::default(); a.len()];
                let mut vr = vl.clone();
                let mut info = vec![-9; batch.count];
                kernels::geev(lapack(), batch, left, right, a, &mut wr, &mut wi, &mut vl, &mut vr, &mut info)?;
                let w = wr.iter().zip(&wi).map(|(&r, &i)| C::new(r.into(), i.into())).collect();
                Ok((w, to_c(&vl), to_c(&vr), info))
            }
        }
    };
}
macro_rules! geev_complex {
    ($r:ty) => {
        impl Geev for Complex<$r> {
            fn eig(batch: Batch, left: u8, right: u8, a: &[Self]) -> Result<Eig, KernelError> {
                let mut w = vec![Complex::<$r>::default(); batch.count * batch.cols];
                let mut vl = vec![Complex::<$r>::default(); a.len()];
                let mut vr = vl.clone();
                let mut info = vec![-9; batch.count];
                kernels::geev_complex(lapack(), batch, left, right, a, &mut w, &mut vl, &mut vr, &mut info)?;
                Ok((to_c(&w), to_c(&vl), to_c(&vr), info))
            }
        }
    };
}
geev_real!(f32);
geev_real!(f64);
geev_complex!(f32);
geev_complex!(f64);

/// A vr_j = w_j vr_j and vl_j^H A = w_j vl_j^H for each matrix of the batch; columns of unit norm.
fn residuals(a: &[C], n: usize, w: &[C], vl: &[C], vr: &[C], tol: f64) {
    let av = matmul(a, vr, n, n, n);
    let vw: Vec<C> = vr.iter().enumerate().map(|(k, z)| z * w[k / n]).collect();
    assert!(max_diff(&av, &vw) < tol, "A VR != VR diag(w): {av:?} {vw:?}");
    let vla = matmul(&adjoint(vl, n, n), a, n, n, n);
    let wvl: Vec<C> = adjoint(vl, n, n).iter().enumerate().map(|(k, z)| z * w[k % n]).collect();
    assert!(max_diff(&vla, &wvl) < tol, "VL^H A != diag(w) VL^H");
    for j in 0..n {
        let norm: f64 = vr[j * n..(j + 1) * n].iter().map(|z| z.norm_sqr()).sum();
        assert!((norm - 1.0).abs() < tol, "column {j} of VR has norm^2 {norm}");
    }
}

fn decomposes<T: Geev>() {
    let n = 6;
    let batch = Batch { count: 2, rows: n, cols: n };
    let a = random::<T>(2 * n * n, 11);
    let (w, vl, vr, info) = T::eig(batch, b'V', b'V', &a).unwrap();
    assert_eq!(info, [0, 0]);
    for b in 0..2 {
        let m = |v: &[C]| v[b * n * n..(b + 1) * n * n].to_vec();
        residuals(&m(&to_c(&a)), n, &w[b * n..(b + 1) * n], &m(&vl), &m(&vr), 100.0 * T::TOL);
    }
    // Eigenvalues only: the same, vectors zero; the operand is not changed.
    let copy = a.clone();
    let (w_only, vl, vr, info) = T::eig(batch, b'N', b'N', &a).unwrap();
    assert_eq!((info, a), (vec![0, 0], copy));
    assert!(max_diff(&w, &w_only) < 100.0 * T::TOL);
    assert!(vl.iter().chain(&vr).all(|z| *z == C::new(0.0, 0.0)));
}

all_types!(decomposes_all_types, decomposes);

#[test]
fn real_rotation_has_conjugate_complex_vectors() {
    // [[0, -1], [1, 0]] and [[2, 0, 0], [0, 0, -3], [0, 3, 0]]: eigenvalues +-i, and 2, +-3i.
    for (rows, n) in [(vec![0.0, -1.0, 1.0, 0.0], 2), (vec![2.0, 0.0, 0.0, 0.0, 0.0, -3.0, 0.0, 3.0, 0.0], 3)] {
        let a: Vec<f64> = col_major(&rows, n, n);
        let (w, vl, vr, info) = <f64 as Geev>::eig(Batch { count: 1, rows: n, cols: n }, b'V', b'V', &a).unwrap();
        assert_eq!(info, [0]);
        let pair = w.iter().position(|z| z.im != 0.0).unwrap();
        assert!(w[pair].im > 0.0 && w[pair + 1] == w[pair].conj(), "{w:?}");
        // The unpacked pair: the second vector is the conjugate of the first.
        for i in 0..n {
            assert_eq!(vr[(pair + 1) * n + i], vr[pair * n + i].conj());
            assert_eq!(vl[(pair + 1) * n + i], vl[pair * n + i].conj());
        }
        assert!(vr[pair * n..(pair + 1) * n].iter().any(|z| z.im != 0.0));
        residuals(&to_c(&a), n, &w, &vl, &vr, 1e-12);
    }
}

fn non_finite<T: Geev>() {
    let n = 3;
    let mut a = random::<T>(2 * n * n, 5);
    a[n * n + 4] = T::NAN;
    let (_, _, _, info) = T::eig(Batch { count: 2, rows: n, cols: n }, b'V', b'V', &a).unwrap();
    assert_eq!(info, [0, -4]); // jaxlib's code; LAPACK is not called for the second
}

all_types!(non_finite_matrices_get_info_minus_4, non_finite);

#[test]
fn empty_and_refused() {
    let (_, _, _, info) = <f64 as Geev>::eig(Batch { count: 2, rows: 0, cols: 0 }, b'V', b'V', &[]).unwrap();
    assert_eq!(info, [0, 0]);
    let e = <Complex<f32> as Geev>::eig(Batch { count: 1, rows: 1, cols: 1 }, b'V', b'Q', &[Complex::new(1.0, 0.0)])
        .unwrap_err();
    assert!(matches!(e, KernelError::Attribute { name: "compute_right", .. }), "{e}");
    let (mut wr, mut wi, mut info) = (vec![0.0f64; 2], vec![0.0; 2], vec![0]);
    let (mut vl, mut vr) = (vec![Complex::default(); 4], vec![Complex::default(); 3]);
    let batch = Batch { count: 1, rows: 2, cols: 2 };
    let e = kernels::geev(lapack(), batch, b'V', b'V', &[0.0; 4], &mut wr, &mut wi, &mut vl, &mut vr, &mut info)
        .unwrap_err();
    assert_eq!(e, KernelError::Length { what: "eigvecs_right", found: 3, expected: 4 });
}
