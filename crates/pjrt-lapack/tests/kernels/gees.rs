//! `gees`: Schur decomposition.

use num_complex::Complex;
use pjrt_lapack::kernels::{self, Batch};
use pjrt_lapack::KernelError;

use crate::support::{adjoint, all_types, col_major, identity, lapack, matmul, max_diff, random, to_c, Elem, C};

/// What a call gives back, as `Complex<f64>`: T, Z, eigenvalues, sdim, info.
type Schur = (Vec<C>, Vec<C>, Vec<C>, Vec<i32>, Vec<i32>);

/// `gees` for real types (eigenvalues from `wr`, `wi`), `gees_complex` for complex ones.
trait Gees: Elem {
    fn schur(batch: Batch, mode: u8, sort: u8, a: &[Self]) -> Result<Schur, KernelError>;
}

macro_rules! gees_real {
    ($t:ty) => {
        impl Gees for $t {
            fn schur(batch: Batch, mode: u8, sort: u8, a: &[Self]) -> Result<Schur, KernelError> {
                let (c, n) = (batch.count, batch.cols);
                let (mut t, mut z) = (a.to_vec(), vec![0.0 as $t; a.len()]);
                let (mut wr, mut wi) = (vec![0.0 as $t; c * n], vec![0.0 as $t; c * n]);
                let (mut sdim, mut info) = (vec![-9; c], vec![-9; c]);
                kernels::gees(lapack(), batch, mode, sort, &mut t, &mut z, &mut wr, &mut wi, &mut sdim, &mut info)?;
                let w = wr.iter().zip(&wi).map(|(&r, &i)| C::new(r.into(), i.into())).collect();
                Ok((to_c(&t), to_c(&z), w, sdim, info))
            }
        }
    };
}
macro_rules! gees_complex {
    ($r:ty) => {
        impl Gees for Complex<$r> {
            fn schur(batch: Batch, mode: u8, sort: u8, a: &[Self]) -> Result<Schur, KernelError> {
                let c = batch.count;
                let (mut t, mut z) = (a.to_vec(), vec![Complex::<$r>::default(); a.len()]);
                let mut w = vec![Complex::<$r>::default(); c * batch.cols];
                let (mut sdim, mut info) = (vec![-9; c], vec![-9; c]);
                kernels::gees_complex(lapack(), batch, mode, sort, &mut t, &mut z, &mut w, &mut sdim, &mut info)?;
                Ok((to_c(&t), to_c(&z), to_c(&w), sdim, info))
            }
        }
    };
}
gees_real!(f32);
gees_real!(f64);
gees_complex!(f32);
gees_complex!(f64);

/// A batch of two: A = Z T Z^H, Z unitary, T (quasi) upper triangular with the eigenvalues
/// on its diagonal (real 2 x 2 blocks: a +- bi); mode 'N' gives the same T.
fn decomposes<T: Gees>() {
    let n = 5;
    let batch = Batch { count: 2, rows: n, cols: n };
    let a = random::<T>(2 * n * n, 21);
    let (t, z, w, sdim, info) = T::schur(batch, b'V', b'N', &a).unwrap();
    assert_eq!((sdim, info), (vec![0, 0], vec![0, 0]));
    let tol = 100.0 * T::TOL;
    for b in 0..2 {
        let x = to_c(&a[b * n * n..(b + 1) * n * n]);
        let (t, z, w) = (&t[b * n * n..(b + 1) * n * n], &z[b * n * n..(b + 1) * n * n], &w[b * n..(b + 1) * n]);
        let ztz = matmul(&matmul(z, t, n, n, n), &adjoint(z, n, n), n, n, n);
        assert!(max_diff(&ztz, &x) < tol, "A != Z T Z^H for {}", T::PREFIX);
        assert!(max_diff(&matmul(&adjoint(z, n, n), z, n, n, n), &identity(n)) < tol);
        for j in 0..n {
            // Below the subdiagonal: zero; on it only inside a 2 x 2 block (complex pair).
            for i in j + 2..n {
                assert_eq!(t[j * n + i], C::new(0.0, 0.0));
            }
            if j + 1 < n && t[j * n + j + 1] != C::new(0.0, 0.0) {
                assert!(!T::IS_COMPLEX && w[j].im != 0.0 && w[j + 1] == w[j].conj());
            } else if w[j].im == 0.0 || T::IS_COMPLEX {
                assert!((t[j * n + j] - w[j]).norm() < tol);
            }
        }
    }
    let (t_only, _, w_only, _, info) = T::schur(batch, b'N', b'N', &a).unwrap();
    assert_eq!(info, [0, 0]);
    assert!(max_diff(&t_only, &t) < tol && max_diff(&w_only, &w) < tol);
}

all_types!(decomposes_all_types, decomposes);

#[test]
fn a_rotation_is_one_block() {
    let a = col_major(&[0.0f64, -2.0, 2.0, 0.0], 2, 2);
    let (t, _, w, _, info) = <f64 as Gees>::schur(Batch { count: 1, rows: 2, cols: 2 }, b'V', b'N', &a).unwrap();
    assert_eq!(info, [0]);
    assert!(max_diff(&w, &[C::new(0.0, 2.0), C::new(0.0, -2.0)]) < 1e-14, "{w:?}");
    assert!(t[1] != C::new(0.0, 0.0)); // the 2 x 2 block stays
}

fn nan<T: Gees>() {
    let n = 3;
    let mut a = random::<T>(n * n, 8);
    a[4] = T::NAN;
    let (t, _, w, _, info) = T::schur(Batch { count: 1, rows: n, cols: n }, b'V', b'N', &a).unwrap();
    // LAPACK either fails to converge or carries the NaN through; JAX turns either into NaN.
    assert!(info[0] != 0 || w.iter().chain(&t).any(|z| z.re.is_nan() || z.im.is_nan()), "{info:?}");
}

all_types!(nan_input_is_reported_not_refused, nan);

#[test]
fn empty_and_refused() {
    let (_, _, _, sdim, info) =
        <Complex<f64> as Gees>::schur(Batch { count: 2, rows: 0, cols: 0 }, b'V', b'N', &[]).unwrap();
    assert_eq!((sdim, info), (vec![0, 0], vec![0, 0]));
    let batch = Batch { count: 1, rows: 1, cols: 1 };
    // Sorting needs a select function JAX's kernel does not take: refused before LAPACK.
    let e = <f32 as Gees>::schur(batch, b'V', b'S', &[1.0]).unwrap_err();
    assert!(matches!(e, KernelError::Attribute { name: "sort", value: b'S', .. }), "{e}");
    let e = <f32 as Gees>::schur(batch, b'X', b'N', &[1.0]).unwrap_err();
    assert!(matches!(e, KernelError::Attribute { name: "mode", .. }), "{e}");
    let e = <f64 as Gees>::schur(Batch { count: 1, rows: 2, cols: 1 }, b'V', b'N', &[1.0, 2.0]).unwrap_err();
    assert!(matches!(e, KernelError::Shape(_)), "{e}");
}
