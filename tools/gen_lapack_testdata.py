#!/usr/bin/env python3
"""Generate `jax.export` models that call JAX's CPU LAPACK custom calls, with inputs and JAX's outputs.

Every case below is a small JAX linear-algebra function (``jnp.linalg``,
``jax.scipy.linalg``, ``jax.lax.linalg``) with seeded inputs.  It is exported
with ``jax.export.export(jax.jit(f), platforms=["cpu"])(*args)``; the exported
module calls the stable ``lapack_*_ffi`` custom-call targets of jaxlib (the
``_CPU_FFI_KERNELS`` of jax/_src/export/_export.py; older JAX also wrote the
targets of jaxlib before their FFI form: ``lapack_spotrf``, ``blas_strsm``, ...).
For JAX 0.10.2, the reference version, it writes

    tests/data/lapack/jax-0.10.2/<case>/model.jaxexport   (exported.serialize())
    tests/data/lapack/jax-0.10.2/<case>/in<i>.npy         (inputs in the order of in_avals)
    tests/data/lapack/jax-0.10.2/<case>/out<i>.npy        (JAX's CPU results, in the order of out_avals)
    tests/data/lapack/jax-0.10.2/manifest.json            (one entry per case; "invariants" describes
                                                           the checks that are not "values")
    tests/data/lapack/jax-0.10.2/contracts.txt            (for each target, the distinct
                                                           stablehlo.custom_call lines JAX printed)

Outputs that LAPACK leaves free (eigenvectors, singular vectors, Schur vectors,
the order of general eigenvalues) are still written, but their case's "check"
names an invariant to test instead of comparing values.  "values" compares
every output with the case's rtol/atol (NaN equals NaN, inf equals inf of the
same sign).  Before writing, the script checks in JAX itself that the
deserialized model reproduces the outputs, that every invariant holds for
JAX's outputs, that f32/c64 results agree with the same function run in
f64/c128 within the suggested tolerances, and that the targets of all cases
together cover all 48 ``_CPU_FFI_KERNELS`` (for JAX 0.6 and newer, whose
lowerings call the FFI targets only; older versions print what they cover).

Other JAX versions (``--jax 0.4.30`` ... ``--jax 0.12.0.1``, the versions of
tools/jax_venv.py) write ``tests/data/lapack/jax-<version>/`` with the same case
names and the same seeded inputs, but without the data that 0.10.2 already has:

    <case>/model.jaxexport      this version's export
    <case>/out<i>.npy           only the outputs whose .npy bytes differ from
                                jax-0.10.2/<case>/out<i>.npy (the manifest's
                                "own_outputs" lists them); the others are 0.10.2's
    (no in<i>.npy)              the inputs are jax-0.10.2/<case>/in<i>.npy: the
                                script regenerates them, checks they are the same
                                arrays (within the last bits, which the host's
                                BLAS decides) and exports and runs 0.10.2's
    manifest.json               as above, plus "reference": "jax-0.10.2" and, for a
                                case this version cannot export (the function is
                                missing, or jax.export refuses the custom call),
                                an entry {"name", "function", "exportable": false,
                                "reason"}: nothing is dropped silently
    contracts.txt               as above, with the pre-FFI targets this version wrote

Generate 0.10.2 first: the other versions read its inputs and outputs.

The script runs itself again in ``target/jax-venv-<version>`` (tools/jax_venv.py;
made on first use).  Rerun from the repository root with any python3:

    python3 tools/gen_lapack_testdata.py                 # JAX 0.10.2
    python3 tools/gen_lapack_testdata.py --jax 0.4.30    # any version of tools/jax_venv.py

Cases are appended at the end of ``cases()`` only: inputs come from one seeded
generator in order, so the data of the earlier cases stays the same.
"""

import argparse
import io
import json
import os
import re
import shutil
import sys

sys.dont_write_bytecode = True  # importing jax_venv leaves no tools/__pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jax_venv import REPO, reexec_in_venv  # noqa: E402

REFERENCE_VERSION = "0.10.2"
_parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
_parser.add_argument("--jax", default=REFERENCE_VERSION, help="the JAX version to export with (tools/jax_venv.py)")
JAX_VERSION = _parser.parse_args().jax
reexec_in_venv(JAX_VERSION)

os.environ["JAX_PLATFORMS"] = "cpu"

import numpy as np  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import jax.scipy.linalg as jsl  # noqa: E402
from jax import export, lax  # noqa: E402

jax.config.update("jax_enable_x64", True)
# Source locations in the modules name files without the folders of the machine that made them.
jax.config.update("jax_hlo_source_file_canonicalization_regex", r".*/")

ROOT = os.path.join(REPO, "tests", "data", "lapack", f"jax-{JAX_VERSION}")
REF_ROOT = os.path.join(REPO, "tests", "data", "lapack", f"jax-{REFERENCE_VERSION}")
IS_REFERENCE = JAX_VERSION == REFERENCE_VERSION
# Versions whose lowerings call only the FFI targets: their cases must cover all 48.
FFI_ONLY = tuple(int(x) for x in JAX_VERSION.split(".")[:2]) >= (0, 6)

# The 48 targets of _CPU_FFI_KERNELS in jax/_src/export/_export.py.
CPU_FFI_KERNELS = []
for real, cplx in [("potrf", "potrf"), ("geqrf", "geqrf"), ("orgqr", "ungqr"), ("syevd", "heevd"),
                   ("geev", "geev"), ("gesdd", "gesdd"), ("getrf", "getrf"), ("sytrd", "hetrd"),
                   ("gehrd", "gehrd"), ("gees", "gees"), ("trsm", "trsm"), ("gtsv", "gtsv")]:
    CPU_FFI_KERNELS += [f"lapack_s{real}_ffi", f"lapack_d{real}_ffi", f"lapack_c{cplx}_ffi", f"lapack_z{cplx}_ffi"]

DTYPES = {"f32": np.float32, "f64": np.float64, "c64": np.complex64, "c128": np.complex128}
WIDER = {"f32": "f64", "c64": "c128"}
# Base tolerances per dtype; a case multiplies them by its "tol" factor.
BASE_TOL = {"f32": (1e-4, 1e-5), "c64": (1e-4, 1e-5), "f64": (1e-10, 1e-12), "c128": (1e-10, 1e-12)}

INVARIANTS = {
    "values": "every output equals JAX's out<i>.npy: |ours - jax| <= atol + rtol * |jax| elementwise "
              "(NaN matches NaN, +-inf matches the same inf; integer outputs exactly)",
    "all_nan": "every element of every floating-point output is NaN (JAX's error convention: a failed "
               "LAPACK info replaces the results with NaN); integer outputs, if any, exactly as JAX's",
    "eigh_reconstruct": "outputs (w, V) of eigh(A): w equals JAX's w (values, ascending); with n = A's order, "
                        "max|A_h V - V diag(w)| <= rtol * max(1, max|A|) * n and max|V^H V - I| <= rtol * n, "
                        "where A_h is the Hermitian matrix of the triangle named by the case's 'uplo' of in0 "
                        "(both triangles agree when the input is Hermitian); batched over leading dims",
    "svd_reconstruct": "outputs (U, s, Vh) of svd(A) (m x n, k = min(m, n)): s equals JAX's s (values, descending); "
                       "max|U[:, :k] diag(s) Vh[:k, :] - A| <= rtol * max(1, max|A|) * max(m, n); "
                       "max|U^H U - I| <= rtol * m and max|Vh Vh^H - I| <= rtol * n for the full U/Vh written",
    "eig_residual": "outputs (w, V) of eig(A) (complex, right eigenvectors): w equals JAX's w as a multiset "
                    "(match each to the nearest unused one: |w - w_jax| <= atol + rtol * max(1, max|A|) * n); "
                    "max|A V - V diag(w)| <= rtol * max(1, max|A|) * n; every column of V has 2-norm 1 within "
                    "rtol * n (xGEEV also makes each column's largest component real; not required)",
    "eigvals_multiset": "output w of eigvals(A): equals JAX's w as a multiset (the order is the algorithm's, not "
                        "fixed): match each to the nearest unused one, |w - w_jax| <= atol + rtol * max(1, max|A|) * n",
    "schur_reconstruct": "outputs (T, Z) of schur(A): max|Z T Z^H - A| <= rtol * max(1, max|A|) * n; "
                         "max|Z^H Z - I| <= rtol * n; T is zero below its first subdiagonal; output 'complex': "
                         "T is upper triangular; output 'real': no two adjacent subdiagonal entries T[i+1, i], "
                         "T[i+2, i+1] are both non-zero (1x1 and 2x2 diagonal blocks); the eigenvalues of T "
                         "(its diagonal, and those of its 2x2 blocks) equal JAX's as a multiset, as in "
                         "'eigvals_multiset'",
    "nonfinite": "every output element that is not finite in JAX's output is not finite in ours (NaN or inf, "
                 "either), and at least one is; finite ones compare as in 'values'",
    "nan_propagates": "inputs have a NaN in batch item 0 only: item 1 compares as in 'values' (or by the invariant the "
                      "case names in 'finite_items_check'); in item 0 ours is NaN "
                      "wherever JAX's is NaN, and where JAX's is finite ours equals it (as in 'values') or is NaN "
                      "(whether LAPACK reports the NaN through info, after which JAX writes NaN, depends on the "
                      "implementation: jaxlib's OpenBLAS potrf does not, reference LAPACK's does)",
    "hessenberg_reconstruct": "outputs (H, Q) of hessenberg(A): max|Q H Q^H - A| <= rtol * max(1, max|A|) * n; "
                              "max|Q^H Q - I| <= rtol * n; H[i, j] == 0 for i > j + 1",
}


# ---------------------------------------------------------------------------------------------------------------
# Inputs: one generator, consumed in case order.
RNG = np.random.default_rng(30)


def randn(shape, dt):
    dt = np.dtype(dt)
    if dt.kind == "c":
        return ((RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)) / np.sqrt(2)).astype(dt)
    return RNG.standard_normal(shape).astype(dt)


def eye_like(shape, dt):
    return np.broadcast_to(np.eye(shape[-1], dtype=dt), shape).copy()


def hpd(shape, dt):
    """Hermitian positive definite."""
    a = randn(shape, dt)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * eye_like(shape, dt)).astype(dt)


def herm(shape, dt):
    a = randn(shape, dt)
    return ((a + np.conj(np.swapaxes(a, -1, -2))) / 2).astype(dt)


def tri_ok(shape, dt):
    """A full matrix whose triangles are well-conditioned triangular matrices."""
    return (randn(shape, dt) + 3 * eye_like(shape, dt)).astype(dt)


# Row 2 = 2 * row 1: partial-pivoting LU reaches an exact zero pivot U[3, 3] with every step exact.
SINGULAR = np.array([[1, 2, 3, 4], [2, 4, 6, 8], [1, 0, 1, 0], [0, 1, 0, 2]])
INDEFINITE = np.array([[1, 2, 0], [2, 1, 0], [0, 0, 3]])  # eigenvalues -1, 3, 3


# ---------------------------------------------------------------------------------------------------------------
# Cases.
CASES = []


def case(name, function, fn, args, check="values", params=None, tol=1.0, note=None, dtype=None, **extra):
    CASES.append(dict(name=name, function=function, fn=fn, args=[np.asarray(a) for a in args], check=check,
                      params=params or {}, tol=tol, note=note, dtype=dtype, extra=extra))


def all_dtypes(base, function, make, check="values", params=None, tol=1.0, note=None, dtypes=DTYPES, **extra):
    """One case per dtype: make(dt) -> (fn, args)."""
    for tag in dtypes:
        fn, args = make(DTYPES[tag])
        case(f"{base}_{tag}", function, fn, args, check, params, tol, note, dtype=tag, **extra)


def cases():
    s = (2,)  # batch
    all_dtypes("solve", "jnp.linalg.solve", lambda dt: (jnp.linalg.solve, [randn(s + (4, 4), dt),
                                                                            randn(s + (4, 3), dt)]), tol=10)
    all_dtypes("inv", "jnp.linalg.inv", lambda dt: (jnp.linalg.inv, [randn(s + (5, 5), dt)]), tol=10)
    all_dtypes("det", "jnp.linalg.det", lambda dt: (jnp.linalg.det, [randn(s + (4, 4), dt)]), tol=10,
               note="4x4: JAX computes 2x2 and 3x3 determinants without LAPACK")
    all_dtypes("slogdet", "jnp.linalg.slogdet", lambda dt: (lambda a: tuple(jnp.linalg.slogdet(a)),
                                                            [randn(s + (4, 4), dt)]), tol=10)
    all_dtypes("cholesky", "jnp.linalg.cholesky", lambda dt: (jnp.linalg.cholesky, [hpd(s + (4, 4), dt)]))
    all_dtypes("cholesky_upper", "jax.scipy.linalg.cholesky", lambda dt: (
        lambda a: jsl.cholesky(a, lower=False), [hpd(s + (5, 5), dt)]), params={"lower": False})
    for mode in ["reduced", "complete"]:
        for tag, shape in [("tall", (5, 3)), ("wide", (3, 5))]:
            all_dtypes(f"qr_{mode}_{tag}", "jnp.linalg.qr", lambda dt, mode=mode, shape=shape: (
                lambda a: tuple(jnp.linalg.qr(a, mode=mode)), [randn(s + shape, dt)]),
                params={"mode": mode}, tol=10, note="Q and R follow LAPACK's Householder sign convention "
                                                    "(xLARFG); A = Q R holds as well")
    all_dtypes("eigh", "jnp.linalg.eigh", lambda dt: (lambda a: tuple(jnp.linalg.eigh(a)), [herm(s + (4, 4), dt)]),
               check="eigh_reconstruct", params={"UPLO": "L"}, tol=10, uplo="L")
    all_dtypes("eigh_upper_nosym", "jnp.linalg.eigh", lambda dt: (
        lambda a: tuple(jnp.linalg.eigh(a, UPLO="U", symmetrize_input=False)), [randn(s + (5, 5), dt)]),
        check="eigh_reconstruct", params={"UPLO": "U", "symmetrize_input": False}, tol=10, uplo="U",
        note="the input is not Hermitian: only its upper triangle (and the real part of its diagonal) counts")
    all_dtypes("eigvalsh", "jnp.linalg.eigvalsh", lambda dt: (jnp.linalg.eigvalsh, [herm(s + (5, 5), dt)]), tol=10)
    for fm in [True, False]:
        for tag, shape in [("tall", (5, 3)), ("wide", (3, 4))]:
            all_dtypes(f"svd_{'full' if fm else 'thin'}_{tag}", "jnp.linalg.svd", lambda dt, fm=fm, shape=shape: (
                lambda a: tuple(jnp.linalg.svd(a, full_matrices=fm)), [randn(s + shape, dt)]),
                check="svd_reconstruct", params={"full_matrices": fm}, tol=10)
    all_dtypes("svd_values", "jnp.linalg.svd", lambda dt: (
        lambda a: jnp.linalg.svd(a, compute_uv=False), [randn(s + (4, 4), dt)]),
        params={"compute_uv": False}, tol=10)
    all_dtypes("pinv", "jnp.linalg.pinv", lambda dt: (jnp.linalg.pinv, [randn(s + (5, 3), dt)]), tol=10)
    all_dtypes("lstsq_tall", "jnp.linalg.lstsq", lambda dt: (
        lambda a, b: tuple(jnp.linalg.lstsq(a, b)), [randn((6, 4), dt), randn((6, 2), dt)]), tol=10,
        note="outputs: solution, residuals, rank, singular values")
    all_dtypes("lstsq_wide", "jnp.linalg.lstsq", lambda dt: (
        lambda a, b: tuple(jnp.linalg.lstsq(a, b)), [randn((3, 5), dt), randn((3, 2), dt)]), tol=10,
        note="minimum-norm solution; outputs: solution, residuals, rank, singular values")
    all_dtypes("eigvals", "jnp.linalg.eigvals", lambda dt: (jnp.linalg.eigvals, [randn(s + (4, 4), dt)]),
               check="eigvals_multiset", tol=10)
    all_dtypes("eig", "jnp.linalg.eig", lambda dt: (lambda a: tuple(jnp.linalg.eig(a)), [randn(s + (4, 4), dt)]),
               check="eig_residual", tol=10)
    all_dtypes("cho_solve", "jax.scipy.linalg.cho_solve(cho_factor)", lambda dt: (
        lambda a, b: jsl.cho_solve(jsl.cho_factor(a, lower=True), b), [hpd(s + (4, 4), dt), randn(s + (4, 2), dt)]),
        params={"lower": True}, tol=10)
    all_dtypes("schur_real", "jax.scipy.linalg.schur", lambda dt: (
        lambda a: tuple(jsl.schur(a, output="real")), [randn(s + (4, 4), dt)]),
        check="schur_reconstruct", params={"output": "real"}, tol=10, dtypes=["f32", "f64"])
    all_dtypes("schur_complex", "jax.scipy.linalg.schur", lambda dt: (
        lambda a: tuple(jsl.schur(a, output="complex")), [randn(s + (4, 4), dt)]),
        check="schur_reconstruct", params={"output": "complex"}, tol=10)
    all_dtypes("hessenberg", "jax.scipy.linalg.hessenberg", lambda dt: (
        lambda a: tuple(jsl.hessenberg(a, calc_q=True)), [randn(s + (5, 5), dt)]),
        check="hessenberg_reconstruct", params={"calc_q": True}, tol=10,
        note="H and Q follow LAPACK's Householder convention (xGEHRD, xORGHR/xUNGHR via householder_product)")
    all_dtypes("expm", "jax.scipy.linalg.expm", lambda dt: (jsl.expm, [0.5 * randn(s + (3, 3), dt)]), tol=30)
    all_dtypes("lu_scipy", "jax.scipy.linalg.lu", lambda dt: (lambda a: tuple(jsl.lu(a)), [randn((4, 4), dt)]),
               tol=10, note="outputs p, l, u (jax.scipy.linalg.lu takes no batch dimensions)")
    all_dtypes("lu_scipy_tall", "jax.scipy.linalg.lu", lambda dt: (lambda a: tuple(jsl.lu(a)),
                                                                   [randn((5, 3), dt)]), tol=10)
    for lower, trans, unit in [(True, 0, False), (False, 0, False), (True, 1, False), (False, 2, False),
                               (True, 2, True), (False, 1, True)]:
        tag = f"{'lower' if lower else 'upper'}_t{trans}{'_unit' if unit else ''}"
        all_dtypes(f"solve_triangular_{tag}", "jax.scipy.linalg.solve_triangular",
                   lambda dt, lower=lower, trans=trans, unit=unit: (
                       lambda a, b: jsl.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit),
                       [tri_ok(s + (4, 4), dt), randn(s + (4, 3), dt)]),
                   params={"lower": lower, "trans": trans, "unit_diagonal": unit}, tol=10,
                   note="a is a full matrix: only the named triangle (without its diagonal when unit) counts")
    for lower, transpose, conj in [(True, False, False), (False, True, True)]:
        tag = f"{'lower' if lower else 'upper'}{'_transpose' if transpose else ''}{'_conj' if conj else ''}"
        all_dtypes(f"triangular_solve_right_{tag}", "jax.lax.linalg.triangular_solve",
                   lambda dt, lower=lower, transpose=transpose, conj=conj: (
                       lambda a, b: lax.linalg.triangular_solve(a, b, left_side=False, lower=lower,
                                                                transpose_a=transpose, conjugate_a=conj),
                       [tri_ok(s + (4, 4), dt), randn(s + (3, 4), dt)]),
                   params={"left_side": False, "lower": lower, "transpose_a": transpose, "conjugate_a": conj},
                   tol=10, note="solves x op(a) = b")

    def tridiag(dt):
        dl, d, du = randn(s + (5,), dt), randn(s + (5,), dt), randn(s + (5,), dt)
        dl[..., 0] = 0
        du[..., -1] = 0
        return lax.linalg.tridiagonal_solve, [dl, d, du, randn(s + (5, 2), dt)]
    all_dtypes("tridiagonal_solve", "jax.lax.linalg.tridiagonal_solve", tridiag, tol=30,
               note="inputs dl (dl[0] = 0), d, du (du[-1] = 0), b; the diagonal is not dominant (gtsv pivots)")
    for lower in [True, False]:
        all_dtypes(f"tridiagonal_{'lower' if lower else 'upper'}", "jax.lax.linalg.tridiagonal",
                   lambda dt, lower=lower: (lambda a: tuple(lax.linalg.tridiagonal(a, lower=lower)),
                                            [herm(s + (5, 5), dt)]),
                   params={"lower": lower}, tol=10,
                   note="outputs: a with the reflectors, d, e, taus (xSYTRD/xHETRD layout)")
    all_dtypes("householder_product", "jax.lax.linalg.householder_product", lambda dt: (
        lax.linalg.householder_product, [randn(s + (5, 3), dt), randn(s + (2,), dt)]), tol=10,
        note="orgqr/ungqr directly, with arbitrary reflectors (below the diagonal of in0) and taus (in1); "
             "k = 2 taus for 3 columns")
    all_dtypes("lu_lax", "jax.lax.linalg.lu", lambda dt: (lambda a: tuple(lax.linalg.lu(a)), [randn(s + (4, 4), dt)]),
               tol=10, note="outputs lu, pivots (int32, 0-based), permutation (int32)")
    all_dtypes("lu_lax_wide", "jax.lax.linalg.lu", lambda dt: (lambda a: tuple(lax.linalg.lu(a)),
                                                               [randn(s + (3, 5), dt)]), tol=10)

    # Edge cases (real dtypes).
    edge = ["f32", "f64"]
    all_dtypes("solve_singular", "jnp.linalg.solve", lambda dt: (
        jnp.linalg.solve, [SINGULAR.astype(dt), np.array([1, 2, 3, 4], dt)]), dtypes=edge,
        check="nonfinite", note="exactly singular (getrf's U[3, 3] == 0 exactly)")
    all_dtypes("det_singular", "jnp.linalg.det", lambda dt: (jnp.linalg.det, [SINGULAR.astype(dt)]), dtypes=edge)
    all_dtypes("lu_singular", "jax.lax.linalg.lu", lambda dt: (lambda a: tuple(lax.linalg.lu(a)),
                                                               [SINGULAR.astype(dt)]), dtypes=edge,
               note="getrf reports info > 0 and JAX keeps the factorization")
    all_dtypes("cholesky_not_pd", "jnp.linalg.cholesky", lambda dt: (
        jnp.linalg.cholesky, [np.stack([INDEFINITE, np.eye(3) * 2]).astype(dt)]), dtypes=edge, check="values",
        note="batch item 0 is indefinite (NaN result), item 1 is 2 I (sqrt(2) I)")

    def nan_in(dt, shape):
        a = hpd(shape, dt)
        a[0, 1, 2] = np.nan
        return a
    all_dtypes("cholesky_nan", "jnp.linalg.cholesky", lambda dt: (jnp.linalg.cholesky, [nan_in(dt, s + (4, 4))]),
               dtypes=edge, check="nan_propagates",
               note="a NaN at [0, 1, 2]: batch item 0 has a NaN, item 1 does not")
    all_dtypes("eigh_nan", "jnp.linalg.eigh", lambda dt: (lambda a: tuple(jnp.linalg.eigh(a)),
                                                          [nan_in(dt, s + (4, 4))]), dtypes=edge,
               check="nan_propagates", finite_items_check="eigh_reconstruct", uplo="L",
               note="a NaN at [0, 1, 2]: batch item 0 has a NaN, item 1 does not")
    all_dtypes("svd_nan", "jnp.linalg.svd", lambda dt: (lambda a: tuple(jnp.linalg.svd(a)),
                                                        [nan_in(dt, s + (4, 4))]), dtypes=edge,
               check="nan_propagates", finite_items_check="svd_reconstruct",
               note="a NaN at [0, 1, 2]: batch item 0 has a NaN, item 1 does not")
    for bshape, tag in [((), "0x0"), ((2,), "2x0x0")]:
        e = bshape + (0, 0)
        all_dtypes(f"solve_empty_{tag}", "jnp.linalg.solve", lambda dt, e=e, bshape=bshape: (
            jnp.linalg.solve, [np.zeros(e, dt), np.zeros(bshape + (0, 1), dt)]), dtypes=edge)
        all_dtypes(f"cholesky_empty_{tag}", "jnp.linalg.cholesky", lambda dt, e=e: (
            jnp.linalg.cholesky, [np.zeros(e, dt)]), dtypes=edge)
        all_dtypes(f"qr_empty_{tag}", "jnp.linalg.qr", lambda dt, e=e: (
            lambda a: tuple(jnp.linalg.qr(a)), [np.zeros(e, dt)]), dtypes=edge)
        all_dtypes(f"eigh_empty_{tag}", "jnp.linalg.eigh", lambda dt, e=e: (
            lambda a: tuple(jnp.linalg.eigh(a)), [np.zeros(e, dt)]), dtypes=edge)
        all_dtypes(f"svd_empty_{tag}", "jnp.linalg.svd", lambda dt, e=e: (
            lambda a: tuple(jnp.linalg.svd(a)), [np.zeros(e, dt)]), dtypes=edge)


# ---------------------------------------------------------------------------------------------------------------
# Checks of JAX's outputs (numpy); each returns a list of failure messages.
def herm_t(x):
    return np.conj(np.swapaxes(x, -1, -2))


def amax(x):
    return float(np.max(np.abs(x))) if np.size(x) else 0.0


def close(ours, ref, rtol, atol):
    ours, ref = np.asarray(ours), np.asarray(ref)
    if ours.shape != ref.shape:
        return False
    if ref.dtype.kind in "iub":
        return np.array_equal(ours, ref)
    nan_ok = np.isnan(ours) == np.isnan(ref)
    inf_ok = np.where(np.isinf(ref), ours == ref, True)
    fin = np.isfinite(ref)
    val_ok = np.where(fin, np.abs(ours - ref) <= atol + rtol * np.abs(ref), True)
    return bool(np.all(nan_ok) and np.all(inf_ok) and np.all(val_ok))


def hermitian_from(a, uplo):
    """The Hermitian matrix of triangle `uplo` of a."""
    lower = np.tril(a, -1) if uplo == "L" else np.triu(a, 1)
    d = np.real(np.diagonal(a, axis1=-2, axis2=-1))
    return lower + herm_t(lower) + d[..., None] * np.eye(a.shape[-1])


def match_multiset(w, ref, tol):
    w, ref = list(np.ravel(w)), list(np.ravel(ref))
    for x in w:
        j = int(np.argmin([abs(x - r) for r in ref]))
        if abs(x - ref[j]) > tol:
            return False
        ref.pop(j)
    return True


def check_invariant(c, ins, outs, rtol, atol):
    a = ins[0].astype(np.complex128 if np.iscomplexobj(ins[0]) else np.float64)
    n = a.shape[-1] if a.ndim else 1
    scale = max(1.0, amax(a))
    bad = []

    def need(ok, what):
        if not ok:
            bad.append(what)
    kind = c["check"]
    if kind == "eigh_reconstruct":
        w, v = outs
        ah = hermitian_from(a, c["extra"]["uplo"])
        need(amax(ah @ v - v * w[..., None, :]) <= rtol * scale * n, "A V = V diag(w)")
        need(amax(herm_t(v) @ v - np.eye(n)) <= rtol * n, "V^H V = I")
        need(np.all(np.diff(w, axis=-1) >= 0), "w ascending")
    elif kind == "svd_reconstruct":
        u, s_, vh = outs
        m, k = a.shape[-2], min(a.shape[-2:])
        rec = (u[..., :, :k] * s_[..., None, :]) @ vh[..., :k, :]
        need(amax(rec - a) <= rtol * scale * max(m, n), "U S Vh = A")
        need(amax(herm_t(u) @ u - np.eye(u.shape[-1])) <= rtol * m, "U^H U = I")
        need(amax(vh @ herm_t(vh) - np.eye(vh.shape[-2])) <= rtol * n, "Vh Vh^H = I")
        need(np.all(np.diff(s_, axis=-1) <= 0), "s descending")
    elif kind == "eig_residual":
        w, v = outs
        need(amax(a @ v - v * w[..., None, :]) <= rtol * scale * n, "A V = V diag(w)")
        need(amax(np.linalg.norm(v, axis=-2) - 1) <= rtol * n, "columns of V have norm 1")
        ref = np.linalg.eigvals(a)
        for i in np.ndindex(a.shape[:-2]):
            need(match_multiset(w[i], ref[i], atol + rtol * scale * n), f"eigenvalues of item {i}")
    elif kind == "eigvals_multiset":
        (w,) = outs
        ref = np.linalg.eigvals(a)
        for i in np.ndindex(a.shape[:-2]):
            need(match_multiset(w[i], ref[i], atol + rtol * scale * n), f"eigenvalues of item {i}")
    elif kind == "schur_reconstruct":
        t, z = outs
        need(amax(z @ t @ herm_t(z) - a) <= rtol * scale * n, "Z T Z^H = A")
        need(amax(herm_t(z) @ z - np.eye(n)) <= rtol * n, "Z^H Z = I")
        sub = np.diagonal(t, -1, axis1=-2, axis2=-1)
        need(amax(np.tril(t, -2)) == 0, "T zero below the subdiagonal")
        if c["params"]["output"] == "complex":
            need(amax(sub) == 0, "T upper triangular")
        else:
            need(not np.any((sub[..., 1:] != 0) & (sub[..., :-1] != 0)), "2x2 blocks do not touch")
        ref = np.linalg.eigvals(a)
        for i in np.ndindex(a.shape[:-2]):
            need(match_multiset(np.linalg.eigvals(t[i]), ref[i], atol + rtol * scale * n), f"eigenvalues of T {i}")
    elif kind == "hessenberg_reconstruct":
        h, q = outs
        need(amax(q @ h @ herm_t(q) - a) <= rtol * scale * n, "Q H Q^H = A")
        need(amax(herm_t(q) @ q - np.eye(n)) <= rtol * n, "Q^H Q = I")
        need(amax(np.tril(h, -2)) == 0, "H zero below the subdiagonal")
    elif kind == "nonfinite":
        need(any(np.any(~np.isfinite(o)) for o in outs if o.dtype.kind in "fc"), "some output is not finite")
    elif kind == "nan_propagates":
        need(any(np.any(np.isnan(o[0])) for o in outs if o.dtype.kind in "fc"), "item 0 has a NaN")
        need(all(np.all(np.isfinite(o[1])) for o in outs if o.dtype.kind in "fc"), "item 1 is finite")
        if c["extra"].get("finite_items_check"):
            bad += check_invariant(dict(c, check=c["extra"]["finite_items_check"]), [x[1:] for x in ins],
                                   [o[1:] for o in outs], rtol, atol)
    elif kind == "all_nan":
        need(all(np.all(np.isnan(o)) for o in outs if o.dtype.kind in "fc"), "all NaN")
    return bad


# ---------------------------------------------------------------------------------------------------------------
CALL_RE = re.compile(r"stablehlo\.custom_call @((?:lapack|blas)_\w+)\(")


def targets_and_lines(exported):
    text = exported.mlir_module()
    lines = {}
    for line in text.splitlines():
        m = CALL_RE.search(line)
        if m:
            norm = re.sub(r"\s*loc\(#loc\d*\)\s*$", "", line.strip())
            norm = re.sub(r"%[\w#:]+", "%_", norm)
            lines.setdefault(m.group(1), []).append(norm)
    return lines


def write_npy(path, x):
    np.save(path, np.asarray(x), allow_pickle=False)


def npy_bytes(x):
    buf = io.BytesIO()
    np.save(buf, np.asarray(x), allow_pickle=False)
    return buf.getvalue()


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def main():
    from jax._src.export import _export
    kernels = getattr(_export, "_CPU_FFI_KERNELS", [])  # JAX before 0.4.38 has no list
    if FFI_ONLY:
        assert sorted(kernels) == sorted(CPU_FFI_KERNELS), set(kernels) ^ set(CPU_FFI_KERNELS)
    else:
        assert set(kernels) <= set(CPU_FFI_KERNELS), set(kernels) - set(CPU_FFI_KERNELS)
    if not IS_REFERENCE:
        with open(os.path.join(REF_ROOT, "manifest.json")) as f:
            reference = {e["name"]: e for e in json.load(f)["cases"]}
    cases()
    if not IS_REFERENCE:
        # The inputs are 0.10.2's committed ones: regenerated here they can differ in the last bit (the
        # matrix products of hpd() depend on the host's BLAS), so check they are the same arrays and use those.
        for c in CASES:
            ref = [np.load(os.path.join(REF_ROOT, c["name"], f"in{i}.npy")) for i in range(len(c["args"]))]
            for i, (a, r) in enumerate(zip(c["args"], ref)):
                assert a.dtype == r.dtype and a.shape == r.shape and close(a, r, 1e-5, 1e-6), (c["name"], i)
            c["args"] = ref
    names = [c["name"] for c in CASES]
    assert len(names) == len(set(names)), "duplicate case names"
    if os.path.isdir(ROOT):
        shutil.rmtree(ROOT)
    os.makedirs(ROOT)
    manifest, coverage, contracts, refused, failures = [], {}, {}, [], []
    for c in CASES:
        try:
            exported = export.export(jax.jit(c["fn"]), platforms=["cpu"])(*c["args"])
        except Exception as e:  # noqa: BLE001 (recorded and reported)
            reason = f"{type(e).__name__}: {str(e).splitlines()[0]}"
            unstable = re.search(r"custom_call @(\w+)\(", str(e))
            if "no compatibility guarantees" in str(e) and unstable:
                reason = (f"jax.export refuses the custom call {unstable.group(1)}: JAX {JAX_VERSION} does not "
                          "guarantee it stable")
            refused.append(f"{c['name']}: {reason}")
            if not IS_REFERENCE:
                manifest.append({"name": c["name"], "function": c["function"], "exportable": False,
                                 "reason": reason})
            continue
        outs = [np.asarray(o) for o in jax.tree_util.tree_leaves(jax.jit(c["fn"])(*c["args"]))]
        assert len(outs) == len(exported.out_avals), c["name"]
        # The serialized model run by JAX gives the same outputs.
        again = export.deserialize(bytearray(exported.serialize()))
        outs2 = [np.asarray(o) for o in jax.tree_util.tree_leaves(again.call(*c["args"]))]
        for o, o2 in zip(outs, outs2):
            if not close(o2, o, 0, 0):
                failures.append(f"{c['name']}: deserialized model differs")
        lines = targets_and_lines(exported)
        for t, ls in lines.items():
            coverage.setdefault(t, []).append(c["name"])
            for line in ls:
                # One example per form: lines that differ only in their dimensions are the same form.
                form = re.sub(r"\{[a-z]=\d+[^}]*\}", "{..}", re.sub(r"(?<=[<x])\d+x", "Nx", line))
                contracts.setdefault(t, {}).setdefault(form, [line, []])[1].append(c["name"])
        rtol, atol = (f * c["tol"] for f in BASE_TOL[c["dtype"]])
        check = c["check"]
        if check == "values" and any(o.dtype.kind in "fc" and o.size for o in outs) and \
                all(np.all(np.isnan(o)) for o in outs if o.dtype.kind in "fc"):
            check = c["check"] = "all_nan"
        if check != "values":
            failures += [f"{c['name']}: {check}: {b}" for b in check_invariant(c, c["args"], outs, rtol, atol)]
        wider = WIDER.get(c["dtype"])
        if wider and check in ("values", "eigh_reconstruct", "svd_reconstruct"):
            # The same function in double precision agrees within the suggested tolerances.
            wide = [np.asarray(o) for o in jax.tree_util.tree_leaves(
                jax.jit(c["fn"])(*[a.astype(DTYPES[wider]) if a.dtype.kind in "fc" else a for a in c["args"]]))]
            idx = {"values": range(len(outs)), "eigh_reconstruct": [0], "svd_reconstruct": [1]}[check]
            for i in idx:
                if not close(outs[i], wide[i].astype(outs[i].dtype), rtol, atol):
                    err = amax(outs[i] - wide[i]) if outs[i].dtype.kind in "fc" else "int"
                    failures.append(f"{c['name']}: out{i} vs {wider}: max err {err}")
        folder = os.path.join(ROOT, c["name"])
        os.makedirs(folder)
        with open(os.path.join(folder, "model.jaxexport"), "wb") as f:
            f.write(exported.serialize())
        own_outputs = []
        if IS_REFERENCE:
            for i, a in enumerate(c["args"]):
                write_npy(os.path.join(folder, f"in{i}.npy"), a)
            for i, o in enumerate(outs):
                write_npy(os.path.join(folder, f"out{i}.npy"), o)
        else:
            ref_folder = os.path.join(REF_ROOT, c["name"])
            assert c["name"] in reference, f"{c['name']} is not a case of jax-{REFERENCE_VERSION}"
            for i, o in enumerate(outs):
                ref_out = os.path.join(ref_folder, f"out{i}.npy")
                if not os.path.exists(ref_out) or npy_bytes(o) != read_bytes(ref_out):
                    write_npy(os.path.join(folder, f"out{i}.npy"), o)
                    own_outputs.append(i)
        entry = {
            "name": c["name"], "function": c["function"], "params": c["params"], "dtype": c["dtype"],
            "inputs": [{"shape": list(a.shape), "dtype": str(a.dtype)} for a in c["args"]],
            "outputs": [{"shape": list(o.shape), "dtype": str(o.dtype)} for o in outs],
            "targets": sorted(lines), "check": check, "rtol": rtol, "atol": atol,
        }
        entry.update(c["extra"])
        if c["note"]:
            entry["note"] = c["note"]
        if not IS_REFERENCE:
            entry["own_outputs"] = own_outputs
        manifest.append(entry)
    with open(os.path.join(ROOT, "manifest.json"), "w") as f:
        head = {"jax": JAX_VERSION, "generator": "tools/gen_lapack_testdata.py", "invariants": INVARIANTS,
                "tolerances": "rtol/atol per case: f32/c64 1e-4/1e-5, f64/c128 1e-10/1e-12, times the case's "
                              "factor (1, 10 or 30)"}
        if not IS_REFERENCE:
            head["reference"] = f"jax-{REFERENCE_VERSION}"
            head["layout"] = (f"inputs are ../jax-{REFERENCE_VERSION}/<case>/in<i>.npy; outputs are <case>/out<i>.npy "
                              f"for i in the case's own_outputs, else ../jax-{REFERENCE_VERSION}/<case>/out<i>.npy; "
                              "a case with exportable false was not exported (reason)")
        # One line per case keeps the file short and its diffs readable.
        text = json.dumps(head, indent=1)[:-2]
        text += ',\n "cases": [\n' + ",\n".join("  " + json.dumps(e) for e in manifest) + "\n ]\n}\n"
        json.loads(text)
        f.write(text)
    with open(os.path.join(ROOT, "contracts.txt"), "w") as f:
        f.write(f"# The stablehlo.custom_call lines of JAX {JAX_VERSION}'s CPU LAPACK targets, as jax.export printed\n"
                "# them in the cases of tools/gen_lapack_testdata.py (SSA names replaced by %_, locations dropped).\n"
                "# For each target: one line per form (lines that differ only in dimensions are one form),\n"
                "# with the case it comes from and the other cases that have the same form.\n")
        f.write("#\n# Summary: target: the mhlo.backend_config variants seen; then the first form's types.\n")
        listed = CPU_FFI_KERNELS + sorted(set(contracts) - set(CPU_FFI_KERNELS))
        for t in listed:
            forms = list(contracts.get(t, {}).values())
            configs = sorted({m.group(1) if m else "(none)" for m in
                              (re.search(r"mhlo\.backend_config = \{([^}]*)\}", line) for line, _ in forms)})
            types = forms[0][0].rsplit(" : ", 1)[1] if forms else "(not reached)"
            f.write(f"#   {t}: {' | '.join('{' + c + '}' for c in configs)}\n#       {types}\n")
        for t in listed:
            f.write(f"\n== {t}\n")
            for line, names in contracts.get(t, {}).values():
                f.write(f"# case {names[0]} (this form also in: {', '.join(names[1:]) or 'none'})\n{line}\n")
    print(f"{len(manifest)} cases written to {os.path.relpath(ROOT, REPO)}")
    for t in CPU_FFI_KERNELS + sorted(set(coverage) - set(CPU_FFI_KERNELS)):
        print(f"  {t:22} {len(coverage.get(t, [])):3} cases  {', '.join(coverage.get(t, [])[:4])}")
    for r in refused:
        print("refused:", r)
    missing = [t for t in CPU_FFI_KERNELS if t not in coverage]
    if failures:
        sys.exit("checks failed:\n  " + "\n  ".join(failures))
    if missing and FFI_ONLY:
        sys.exit(f"targets not covered by any case: {', '.join(missing)}")
    if missing:
        print(f"JAX {JAX_VERSION} lowers these FFI targets in no case (it wrote older targets): {', '.join(missing)}")
        print("all checks passed")
    else:
        print("all 48 targets covered; all checks passed")


if __name__ == "__main__":
    main()
