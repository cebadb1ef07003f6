//! `sytrd` / `hetrd`: tridiagonal reduction of symmetric and Hermitian matrices, checked by
//! reconstruction (`Q T Q^H = A`, `Q` from the packed Householder vectors of either triangle)
//! in every element type; the edge cases and the refusals.

use pjrt_lapack::kernels::{self, Batch};
use pjrt_lapack::KernelError;

use crate::gehrd::q_of_hessenberg;
use crate::geqrf::la::{adjoint, assert_close, assert_orthonormal, identity, matmul, random, Elem};
use crate::support::lapack;

/// A random Hermitian `n` x `n` matrix: `B + B^H`.
fn hermitian<T: Elem>(n: usize, seed: u64) -> Vec<T> {
    let b = random::<T>(n * n, seed);
    let bh = adjoint(&b, n, n);
    b.iter().zip(&bh).map(|(&x, &y)| x + y).collect()
}

/// `Q = H_{n-1} ... H_1` of the upper triangle: the vector of `H_i` is `A(1 : i - 1, i + 1)`,
/// a unit in place `i`, zeros after (1-based).
fn q_of_upper<T: Elem>(packed: &[T], tau: &[T], n: usize) -> Vec<T> {
    let mut q = identity::<T>(n);
    for i in (1..n).rev() {
        let mut v = vec![T::ZERO; n];
        v[..i - 1].copy_from_slice(&packed[i * n..i * n + i - 1]);
        v[i - 1] = T::ONE;
        let mut h = identity::<T>(n);
        for c in 0..n {
            for r in 0..n {
                h[c * n + r] = h[c * n + r] - tau[i - 1] * v[r] * v[c].conj();
            }
        }
        q = matmul(&q, &h, n, n, n);
    }
    q
}

/// Reduces `count` random Hermitian `n` x `n` matrices from triangle `uplo`; checks
/// `Q T Q^H = A`, `Q` orthonormal, and the tridiagonal copied into the triangle.
fn reconstructs<T: Elem>(count: usize, n: usize, uplo: u8) {
    let a: Vec<T> = (0..count).flat_map(|i| hermitian::<T>(n, 100 + i as u64)).collect();
    let mut packed = a.clone();
    // The other triangle must not be read: poison it.
    for i in 0..count {
        for c in 0..n {
            for r in 0..n {
                if (uplo == b'L' && r < c) || (uplo == b'U' && r > c) {
                    packed[i * n * n + c * n + r] = T::NAN;
                }
            }
        }
    }
    let zero = <T::Real as pjrt_lapack::Scalar>::ZERO;
    let (mut d, mut e) = (vec![zero; count * n], vec![zero; count * (n - 1)]);
    let (mut tau, mut info) = (vec![T::ZERO; count * (n - 1)], vec![-1; count]);
    let batch = Batch { count, rows: n, cols: n };
    kernels::sytrd(lapack(), batch, uplo, &mut packed, &mut d, &mut e, &mut tau, &mut info).unwrap();
    assert_eq!(info, vec![0; count]);
    for i in 0..count {
        let what = format!("{n}x{n} uplo {}, matrix {i}", uplo as char);
        let (a, packed) = (&a[i * n * n..][..n * n], &packed[i * n * n..][..n * n]);
        let (d, e, tau) = (&d[i * n..][..n], &e[i * (n - 1)..][..n - 1], &tau[i * (n - 1)..][..n - 1]);
        let mut t = vec![T::ZERO; n * n];
        for j in 0..n {
            t[j * n + j] = T::from_real(d[j]);
            assert_close(&[packed[j * n + j]], &[t[j * n + j]], &format!("{what}: diagonal copied"));
        }
        for j in 0..n - 1 {
            t[j * n + j + 1] = T::from_real(e[j]);
            t[(j + 1) * n + j] = T::from_real(e[j]);
            let copied = if uplo == b'L' { packed[j * n + j + 1] } else { packed[(j + 1) * n + j] };
            assert_close(&[copied], &[T::from_real(e[j])], &format!("{what}: off-diagonal copied"));
        }
        let q = if uplo == b'L' { q_of_hessenberg(packed, tau, n) } else { q_of_upper(packed, tau, n) };
        assert_orthonormal(&q, n, n, &what);
        let qtq = matmul(&matmul(&q, &t, n, n, n), &adjoint(&q, n, n), n, n, n);
        assert_close(&qtq, a, &format!("{what}: Q T Q^H = A"));
    }
}

#[test]
fn lower_triangles_reconstruct_in_every_type() {
    crate::each_type!(reconstructs(2, 5, b'L'));
}

#[test]
fn upper_triangles_reconstruct_in_every_type() {
    crate::each_type!(reconstructs(2, 5, b'U'));
    crate::each_type!(reconstructs(1, 2, b'U'));
}

#[test]
fn a_tridiagonal_matrix_keeps_its_diagonals() {
    let mut a = vec![2.0f64, 1.0, 1.0, 2.0];
    let (mut d, mut e, mut tau, mut info) = (vec![0.0; 2], vec![0.0; 1], vec![9.0; 1], vec![-1]);
    let batch = Batch { count: 1, rows: 2, cols: 2 };
    kernels::sytrd(lapack(), batch, b'L', &mut a, &mut d, &mut e, &mut tau, &mut info).unwrap();
    assert_eq!((d, e[0].abs(), info), (vec![2.0, 2.0], 1.0, vec![0]));
}

#[test]
fn one_by_one_gives_the_real_diagonal_and_empty_calls_nothing() {
    // hetrd of a 1x1 matrix: d = Re(a), e and tau empty.
    let mut a = vec![num_complex::Complex::new(3.0f32, 0.0)];
    let (mut d, mut info) = (vec![0.0f32], vec![-1]);
    kernels::sytrd(lapack(), Batch { count: 1, rows: 1, cols: 1 }, b'U', &mut a, &mut d, &mut [], &mut [], &mut info)
        .unwrap();
    assert_eq!((d, info), (vec![3.0], vec![0]));
    let mut info = vec![-1; 2];
    let batch = Batch { count: 2, rows: 0, cols: 0 };
    kernels::sytrd::<f64>(lapack(), batch, b'L', &mut [], &mut [], &mut [], &mut [], &mut info).unwrap();
    assert_eq!(info, [0, 0]);
}

#[test]
fn unknown_uplo_non_square_and_wrong_lengths_are_refused() {
    let batch = Batch { count: 1, rows: 2, cols: 2 };
    let (mut a, mut d, mut e, mut tau, mut info) = (vec![0.0f64; 4], vec![0.0; 2], vec![0.0; 1], vec![0.0; 1], vec![0]);
    let err = kernels::sytrd(lapack(), batch, b'l', &mut a, &mut d, &mut e, &mut tau, &mut info).unwrap_err();
    assert!(matches!(err, KernelError::Attribute { name: "uplo", value: b'l', .. }), "{err:?}");
    let wide = Batch { count: 1, rows: 1, cols: 4 };
    let err = kernels::sytrd(lapack(), wide, b'L', &mut a, &mut d, &mut e, &mut tau, &mut info).unwrap_err();
    assert!(matches!(err, KernelError::Shape(_)), "{err:?}");
    let err = kernels::sytrd(lapack(), batch, b'U', &mut a, &mut d, &mut [], &mut tau, &mut info).unwrap_err();
    assert_eq!(err, KernelError::Length { what: "e", found: 0, expected: 1 });
}
