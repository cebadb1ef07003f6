//! `orgqr` / `ungqr`: `Q` from Householder vectors; fewer reflectors than columns, none, and
//! the shapes LAPACK refuses.

use pjrt_lapack::kernels::{self, Batch};
use pjrt_lapack::KernelError;

use crate::geqrf::la::{assert_close, assert_orthonormal, identity, matmul, random, sub_matrix, Elem};
use crate::support::lapack;

/// `Q = H_1 ... H_k` built from the packed vectors one reflector at a time.
fn product_of_reflectors<T: Elem>(packed: &[T], tau: &[T], m: usize) -> Vec<T> {
    let mut q = identity::<T>(m);
    for (i, &t) in tau.iter().enumerate() {
        let mut v = vec![T::ZERO; m];
        v[i] = T::ONE;
        v[i + 1..].copy_from_slice(&packed[i * m + i + 1..(i + 1) * m]);
        // H = I - tau v v^H
        let mut h = identity::<T>(m);
        for c in 0..m {
            for r in 0..m {
                h[c * m + r] = h[c * m + r] - t * v[r] * v[c].conj();
            }
        }
        q = matmul(&q, &h, m, m, m);
    }
    q
}

/// `orgqr` on `count` matrices of `m` x `n` with `k` reflectors from `geqrf`: orthonormal
/// columns, equal to the first `n` columns of the explicit product of the reflectors.
fn forms_q<T: Elem>(count: usize, m: usize, n: usize, k: usize) {
    let a = random::<T>(count * m * n, 7 + k as u64);
    let (mut packed, mut tau_full) = (a.clone(), vec![T::ZERO; count * n.min(m)]);
    kernels::geqrf(lapack(), Batch { count, rows: m, cols: n }, &mut packed, &mut tau_full).unwrap();
    // The first k reflectors of each matrix.
    let tau: Vec<T> = (0..count).flat_map(|i| tau_full[i * n.min(m)..][..k].to_vec()).collect();
    let mut q = packed.clone();
    kernels::orgqr(lapack(), Batch { count, rows: m, cols: n }, k, &mut q, &tau).unwrap();
    for i in 0..count {
        let q = &q[i * m * n..][..m * n];
        let what = format!("{m}x{n}, k = {k}, matrix {i}");
        assert_orthonormal(q, m, n, &what);
        let full = product_of_reflectors(&packed[i * m * n..][..m * n], &tau[i * k..][..k], m);
        assert_close(q, &sub_matrix(&full, m, 0..m, 0..n), &format!("{what}: H_1 ... H_k"));
    }
}

#[test]
fn all_reflectors_in_every_type() {
    crate::each_type!(forms_q(2, 5, 3, 3));
    crate::each_type!(forms_q(2, 4, 4, 4));
}

#[test]
fn fewer_reflectors_than_columns() {
    crate::each_type!(forms_q(2, 5, 3, 1));
}

#[test]
fn no_reflectors_give_the_identitys_columns() {
    let mut q = random::<f64>(12, 3);
    kernels::orgqr(lapack(), Batch { count: 1, rows: 4, cols: 3 }, 0, &mut q, &[]).unwrap();
    assert_close(&q, &sub_matrix(&identity::<f64>(4), 4, 0..4, 0..3), "k = 0");
}

#[test]
fn q_of_a_column() {
    // geqrf of (3, 4): v = (1, 0.5), tau = 1.6: Q e_1 = (1 - 1.6, -0.8) = -(3, 4) / 5.
    let mut q = vec![-5.0f64, 0.5];
    kernels::orgqr(lapack(), Batch { count: 1, rows: 2, cols: 1 }, 1, &mut q, &[1.6]).unwrap();
    assert_close(&q, &[-0.6, -0.8], "Q");
}

#[test]
fn empty_matrices_and_batches_call_nothing() {
    for (count, rows, cols) in [(2, 0, 0), (2, 3, 0), (0, 4, 4)] {
        let mut a = vec![7.0f32; count * rows * cols];
        kernels::orgqr(lapack(), Batch { count, rows, cols }, 0, &mut a, &[]).unwrap();
    }
}

#[test]
fn shapes_lapack_refuses_are_refused_first() {
    // rows < cols, and more reflectors than columns.
    let mut a = vec![0.0f64; 6];
    let e = kernels::orgqr(lapack(), Batch { count: 1, rows: 2, cols: 3 }, 2, &mut a, &[0.0; 2]).unwrap_err();
    assert!(matches!(e, KernelError::Shape(_)), "{e:?}");
    let e = kernels::orgqr(lapack(), Batch { count: 1, rows: 3, cols: 2 }, 3, &mut a, &[0.0; 3]).unwrap_err();
    assert!(matches!(e, KernelError::Shape(_)), "{e:?}");
    let e = kernels::orgqr(lapack(), Batch { count: 1, rows: 3, cols: 2 }, 2, &mut a, &[0.0; 3]).unwrap_err();
    assert_eq!(e, KernelError::Length { what: "tau", found: 3, expected: 2 });
}
