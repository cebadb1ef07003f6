//! `syevd` / `heevd`: symmetric / Hermitian eigendecomposition.

use num_complex::Complex;
use pjrt_lapack::kernels::{self, Batch};
use pjrt_lapack::KernelError;

use crate::support::{adjoint, all_types, identity, lapack, matmul, max_diff, random, to_c, Elem, C};

/// `a + a^H` of a random n x n matrix: symmetric / Hermitian.
fn hermitian<T: Elem>(n: usize, seed: u64) -> Vec<T> {
    let a = to_c(&random::<T>(n * n, seed));
    let h = adjoint(&a, n, n);
    a.iter().zip(&h).map(|(x, y)| T::from_c(x + y)).collect()
}

/// `syevd` for real types, `heevd` for complex ones, eigenvalues as f64.
trait Eigh: Elem {
    fn eigh(
        batch: Batch,
        uplo: u8,
        mode: u8,
        a: &mut [Self],
        w: &mut [f64],
        info: &mut [i32],
    ) -> Result<(), KernelError>;
}

macro_rules! eigh_impl {
    ($t:ty, $r:ty, $f:ident) => {
        impl Eigh for $t {
            fn eigh(
                batch: Batch,
                uplo: u8,
                mode: u8,
                a: &mut [Self],
                w: &mut [f64],
                info: &mut [i32],
            ) -> Result<(), KernelError> {
                let mut ws = vec![0.0 as $r; w.len()];
                kernels::$f(lapack(), batch, uplo, mode, a, &mut ws, info)?;
                w.iter_mut().zip(ws).for_each(|(o, v)| *o = v.into());
                Ok(())
            }
        }
    };
}
eigh_impl!(f32, f32, syevd);
eigh_impl!(f64, f64, syevd);
eigh_impl!(Complex<f32>, f32, heevd);
eigh_impl!(Complex<f64>, f64, heevd);

/// A batch of two: A V = V diag(w), V^H V = I, w ascending, for both triangles; the
/// eigenvalues alone (mode 'N') agree.
fn decomposes<T: Eigh>() {
    let n = 5;
    let batch = Batch { count: 2, rows: n, cols: n };
    let original: Vec<T> = [hermitian::<T>(n, 1), hermitian::<T>(n, 2)].concat();
    for uplo in [b'L', b'U'] {
        let mut a = original.clone();
        let (mut w, mut info) = (vec![0.0; 2 * n], vec![-9; 2]);
        T::eigh(batch, uplo, b'V', &mut a, &mut w, &mut info).unwrap();
        assert_eq!(info, [0, 0]);
        for b in 0..2 {
            let x = to_c(&original[b * n * n..(b + 1) * n * n]);
            let v = to_c(&a[b * n * n..(b + 1) * n * n]);
            let values = &w[b * n..(b + 1) * n];
            assert!(values.windows(2).all(|p| p[0] <= p[1]), "{values:?} not ascending");
            let av = matmul(&x, &v, n, n, n);
            let vw: Vec<C> = v.iter().enumerate().map(|(k, z)| z * values[k / n]).collect();
            assert!(max_diff(&av, &vw) < 10.0 * T::TOL, "A V != V diag(w) for {}", T::PREFIX);
            assert!(max_diff(&matmul(&adjoint(&v, n, n), &v, n, n, n), &identity(n)) < 10.0 * T::TOL);
        }
        let mut b = original.clone();
        let (mut w_only, mut info) = (vec![0.0; 2 * n], vec![-9; 2]);
        T::eigh(batch, uplo, b'N', &mut b, &mut w_only, &mut info).unwrap();
        assert_eq!(info, [0, 0]);
        assert!(w.iter().zip(&w_only).all(|(x, y)| (x - y).abs() < 10.0 * T::TOL));
    }
}

all_types!(decomposes_all_types, decomposes);

#[test]
fn known_eigenvalues() {
    let mut a = [2.0f64, 1.0, 1.0, 2.0];
    let (mut w, mut info) = ([0.0; 2], [7]);
    kernels::syevd(lapack(), Batch { count: 1, rows: 2, cols: 2 }, b'L', b'V', &mut a, &mut w, &mut info).unwrap();
    assert!((w[0] - 1.0).abs() < 1e-14 && (w[1] - 3.0).abs() < 1e-14 && info == [0]);
    // Only the lower triangle is read: garbage above it changes nothing.
    let mut a = [2.0f64, 1.0, 99.0, 2.0];
    kernels::syevd(lapack(), Batch { count: 1, rows: 2, cols: 2 }, b'L', b'N', &mut a, &mut w, &mut info).unwrap();
    assert!((w[0] - 1.0).abs() < 1e-14 && (w[1] - 3.0).abs() < 1e-14);
}

fn nan_input<T: Eigh>() {
    let n = 3;
    let mut a = hermitian::<T>(n, 3);
    a[4] = T::NAN;
    let (mut w, mut info) = (vec![0.0; n], vec![0]);
    T::eigh(Batch { count: 1, rows: n, cols: n }, b'L', b'V', &mut a, &mut w, &mut info).unwrap();
    // LAPACK either fails to converge or carries the NaN through; JAX turns either into NaN.
    assert!(info[0] != 0 || w.iter().any(|x| x.is_nan()), "{info:?} {w:?}");
}

all_types!(nan_input_is_reported_not_refused, nan_input);

#[test]
fn empty_matrices_and_batches_call_nothing() {
    let (mut w, mut info) = (Vec::<f64>::new(), vec![5; 3]);
    kernels::syevd::<f64>(lapack(), Batch { count: 3, rows: 0, cols: 0 }, b'L', b'V', &mut [], &mut w, &mut info)
        .unwrap();
    assert_eq!(info, [0, 0, 0]);
    let mut none: [i32; 0] = [];
    kernels::heevd::<f32>(lapack(), Batch { count: 0, rows: 4, cols: 4 }, b'U', b'N', &mut [], &mut [], &mut none)
        .unwrap();
}

#[test]
fn bad_attributes_shapes_and_lengths_are_refused() {
    let batch = Batch { count: 1, rows: 2, cols: 2 };
    let (mut a, mut w, mut info) = (vec![1.0f64; 4], vec![0.0; 2], vec![0]);
    let e = kernels::syevd(lapack(), batch, b'X', b'V', &mut a, &mut w, &mut info).unwrap_err();
    assert!(matches!(e, KernelError::Attribute { name: "uplo", value: b'X', .. }), "{e}");
    let e = kernels::syevd(lapack(), batch, b'L', b'O', &mut a, &mut w, &mut info).unwrap_err();
    assert!(matches!(e, KernelError::Attribute { name: "mode", .. }), "{e}");
    let e = kernels::syevd(lapack(), Batch { count: 1, rows: 1, cols: 4 }, b'L', b'V', &mut a, &mut w, &mut info)
        .unwrap_err();
    assert!(matches!(e, KernelError::Shape(_)), "{e}");
    let e = kernels::syevd(lapack(), batch, b'L', b'V', &mut a, &mut w[..1], &mut info).unwrap_err();
    assert_eq!(e, KernelError::Length { what: "eigenvalues", found: 1, expected: 2 });
}
