//! The LAPACK and BLAS routines the kernels call, as the Fortran interface declares them
//! (every argument by reference; 32-bit integers; each `CHARACTER` argument followed, after the
//! last explicit argument, by its hidden length, as gfortran passes it), and the table of them
//! for each element type.

use num_complex::Complex;

use crate::{Finder, Lapack};

type I = i32;

/// `xPOTRF(UPLO, N, A, LDA, INFO)`.
pub type Potrf<T> =
    unsafe extern "C" fn(uplo: *const u8, n: *const I, a: *mut T, lda: *const I, info: *mut I, uplo_len: usize);
/// `xGEQRF(M, N, A, LDA, TAU, WORK, LWORK, INFO)`.
pub type Geqrf<T> = unsafe extern "C" fn(
    m: *const I,
    n: *const I,
    a: *mut T,
    lda: *const I,
    tau: *mut T,
    work: *mut T,
    lwork: *const I,
    info: *mut I,
);
/// `xORGQR` / `xUNGQR(M, N, K, A, LDA, TAU, WORK, LWORK, INFO)`.
pub type Orgqr<T> = unsafe extern "C" fn(
    m: *const I,
    n: *const I,
    k: *const I,
    a: *mut T,
    lda: *const I,
    tau: *const T,
    work: *mut T,
    lwork: *const I,
    info: *mut I,
);
/// `xGETRF(M, N, A, LDA, IPIV, INFO)`.
pub type Getrf<T> =
    unsafe extern "C" fn(m: *const I, n: *const I, a: *mut T, lda: *const I, ipiv: *mut I, info: *mut I);
/// `xSYTRD` / `xHETRD(UPLO, N, A, LDA, D, E, TAU, WORK, LWORK, INFO)`.
pub type Sytrd<T, R> = unsafe extern "C" fn(
    uplo: *const u8,
    n: *const I,
    a: *mut T,
    lda: *const I,
    d: *mut R,
    e: *mut R,
    tau: *mut T,
    work: *mut T,
    lwork: *const I,
    info: *mut I,
    uplo_len: usize,
);
/// `xGEHRD(N, ILO, IHI, A, LDA, TAU, WORK, LWORK, INFO)`.
pub type Gehrd<T> = unsafe extern "C" fn(
    n: *const I,
    ilo: *const I,
    ihi: *const I,
    a: *mut T,
    lda: *const I,
    tau: *mut T,
    work: *mut T,
    lwork: *const I,
    info: *mut I,
);
/// `xTRSM(SIDE, UPLO, TRANSA, DIAG, M, N, ALPHA, A, LDA, B, LDB)` (BLAS 3).
pub type Trsm<T> = unsafe extern "C" fn(
    side: *const u8,
    uplo: *const u8,
    transa: *const u8,
    diag: *const u8,
    m: *const I,
    n: *const I,
    alpha: *const T,
    a: *const T,
    lda: *const I,
    b: *mut T,
    ldb: *const I,
    side_len: usize,
    uplo_len: usize,
    transa_len: usize,
    diag_len: usize,
);
/// `xGTSV(N, NRHS, DL, D, DU, B, LDB, INFO)`.
pub type Gtsv<T> = unsafe extern "C" fn(
    n: *const I,
    nrhs: *const I,
    dl: *mut T,
    d: *mut T,
    du: *mut T,
    b: *mut T,
    ldb: *const I,
    info: *mut I,
);

/// `SSYEVD` / `DSYEVD(JOBZ, UPLO, N, A, LDA, W, WORK, LWORK, IWORK, LIWORK, INFO)`.
pub type Syevd<T> = unsafe extern "C" fn(
    jobz: *const u8,
    uplo: *const u8,
    n: *const I,
    a: *mut T,
    lda: *const I,
    w: *mut T,
    work: *mut T,
    lwork: *const I,
    iwork: *mut I,
    liwork: *const I,
    info: *mut I,
    jobz_len: usize,
    uplo_len: usize,
);
/// `CHEEVD` / `ZHEEVD(JOBZ, UPLO, N, A, LDA, W, WORK, LWORK, RWORK, LRWORK, IWORK, LIWORK, INFO)`.
pub type Heevd<T, R> = unsafe extern "C" fn(
    jobz: *const u8,
    uplo: *const u8,
    n: *const I,
    a: *mut T,
    lda: *const I,
    w: *mut R,
    work: *mut T,
    lwork: *const I,
    rwork: *mut R,
    lrwork: *const I,
    iwork: *mut I,
    liwork: *const I,
    info: *mut I,
    jobz_len: usize,
    uplo_len: usize,
);
/// `SGEEV` / `DGEEV(JOBVL, JOBVR, N, A, LDA, WR, WI, VL, LDVL, VR, LDVR, WORK, LWORK, INFO)`.
pub type GeevReal<T> = unsafe extern "C" fn(
    jobvl: *const u8,
    jobvr: *const u8,
    n: *const I,
    a: *mut T,
    lda: *const I,
    wr: *mut T,
    wi: *mut T,
    vl: *mut T,
    ldvl: *const I,
    vr: *mut T,
    ldvr: *const I,
    work: *mut T,
    lwork: *const I,
    info: *mut I,
    jobvl_len: usize,
    jobvr_len: usize,
);
/// `CGEEV` / `ZGEEV(JOBVL, JOBVR, N, A, LDA, W, VL, LDVL, VR, LDVR, WORK, LWORK, RWORK, INFO)`.
pub type GeevComplex<T, R> = unsafe extern "C" fn(
    jobvl: *const u8,
    jobvr: *const u8,
    n: *const I,
    a: *mut T,
    lda: *const I,
    w: *mut T,
    vl: *mut T,
    ldvl: *const I,
    vr: *mut T,
    ldvr: *const I,
    work: *mut T,
    lwork: *const I,
    rwork: *mut R,
    info: *mut I,
    jobvl_len: usize,
    jobvr_len: usize,
);
/// `SGESDD` / `DGESDD(JOBZ, M, N, A, LDA, S, U, LDU, VT, LDVT, WORK, LWORK, IWORK, INFO)`.
pub type GesddReal<T> = unsafe extern "C" fn(
    jobz: *const u8,
    m: *const I,
    n: *const I,
    a: *mut T,
    lda: *const I,
    s: *mut T,
    u: *mut T,
    ldu: *const I,
    vt: *mut T,
    ldvt: *const I,
    work: *mut T,
    lwork: *const I,
    iwork: *mut I,
    info: *mut I,
    jobz_len: usize,
);
/// `CGESDD` / `ZGESDD(JOBZ, M, N, A, LDA, S, U, LDU, VT, LDVT, WORK, LWORK, RWORK, IWORK, INFO)`.
pub type GesddComplex<T, R> = unsafe extern "C" fn(
    jobz: *const u8,
    m: *const I,
    n: *const I,
    a: *mut T,
    lda: *const I,
    s: *mut R,
    u: *mut T,
    ldu: *const I,
    vt: *mut T,
    ldvt: *const I,
    work: *mut T,
    lwork: *const I,
    rwork: *mut R,
    iwork: *mut I,
    info: *mut I,
    jobz_len: usize,
);
/// The `SELECT` argument of `xGEES` (a `LOGICAL FUNCTION`); the kernels pass none (`SORT = 'N'`).
pub type GeesSelect = Option<unsafe extern "C" fn() -> I>;
/// `SGEES` / `DGEES(JOBVS, SORT, SELECT, N, A, LDA, SDIM, WR, WI, VS, LDVS, WORK, LWORK, BWORK, INFO)`.
pub type GeesReal<T> = unsafe extern "C" fn(
    jobvs: *const u8,
    sort: *const u8,
    select: GeesSelect,
    n: *const I,
    a: *mut T,
    lda: *const I,
    sdim: *mut I,
    wr: *mut T,
    wi: *mut T,
    vs: *mut T,
    ldvs: *const I,
    work: *mut T,
    lwork: *const I,
    bwork: *mut I,
    info: *mut I,
    jobvs_len: usize,
    sort_len: usize,
);
/// `CGEES` / `ZGEES(JOBVS, SORT, SELECT, N, A, LDA, SDIM, W, VS, LDVS, WORK, LWORK, RWORK, BWORK, INFO)`.
pub type GeesComplex<T, R> = unsafe extern "C" fn(
    jobvs: *const u8,
    sort: *const u8,
    select: GeesSelect,
    n: *const I,
    a: *mut T,
    lda: *const I,
    sdim: *mut I,
    w: *mut T,
    vs: *mut T,
    ldvs: *const I,
    work: *mut T,
    lwork: *const I,
    rwork: *mut R,
    bwork: *mut I,
    info: *mut I,
    jobvs_len: usize,
    sort_len: usize,
);

/// The routines of one element type. Those whose interface differs between real and complex
/// types (`syevd`/`heevd`, `geev`, `gesdd`, `gees`) have the type's own form
/// ([`Scalar::Eigh`], ...).
#[derive(Clone, Copy)]
pub struct Routines<T: Scalar> {
    /// `xPOTRF`.
    pub potrf: Potrf<T>,
    /// `xGEQRF`.
    pub geqrf: Geqrf<T>,
    /// `xORGQR` (real) or `xUNGQR` (complex).
    pub orgqr: Orgqr<T>,
    /// `xGETRF`.
    pub getrf: Getrf<T>,
    /// `xSYTRD` (real) or `xHETRD` (complex).
    pub sytrd: Sytrd<T, T::Real>,
    /// `xGEHRD`.
    pub gehrd: Gehrd<T>,
    /// `xTRSM`.
    pub trsm: Trsm<T>,
    /// `xGTSV`.
    pub gtsv: Gtsv<T>,
    /// `xSYEVD` (real) or `xHEEVD` (complex).
    pub eigh: T::Eigh,
    /// `xGEEV`.
    pub geev: T::Geev,
    /// `xGESDD`.
    pub gesdd: T::Gesdd,
    /// `xGEES`.
    pub gees: T::Gees,
}

impl<T: Scalar> Routines<T> {
    pub(crate) fn resolve(find: &mut Finder<'_>) -> Option<Routines<T>> {
        let p = T::PREFIX;
        let (orgqr, sytrd, eigh) =
            if T::IS_COMPLEX { ("ungqr", "hetrd", "heevd") } else { ("orgqr", "sytrd", "syevd") };
        // SAFETY: each type is the routine's Fortran interface (declared above from LAPACK's
        // documentation) for this element type.
        unsafe {
            let potrf = find.required(&format!("{p}potrf_"));
            let geqrf = find.required(&format!("{p}geqrf_"));
            let orgqr = find.required(&format!("{p}{orgqr}_"));
            let getrf = find.required(&format!("{p}getrf_"));
            let sytrd = find.required(&format!("{p}{sytrd}_"));
            let gehrd = find.required(&format!("{p}gehrd_"));
            let trsm = find.required(&format!("{p}trsm_"));
            let gtsv = find.required(&format!("{p}gtsv_"));
            let eigh = find.required(&format!("{p}{eigh}_"));
            let geev = find.required(&format!("{p}geev_"));
            let gesdd = find.required(&format!("{p}gesdd_"));
            let gees = find.required(&format!("{p}gees_"));
            Some(Routines {
                potrf: potrf?,
                geqrf: geqrf?,
                orgqr: orgqr?,
                getrf: getrf?,
                sytrd: sytrd?,
                gehrd: gehrd?,
                trsm: trsm?,
                gtsv: gtsv?,
                eigh: eigh?,
                geev: geev?,
                gesdd: gesdd?,
                gees: gees?,
            })
        }
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
    impl Sealed for num_complex::Complex<f32> {}
    impl Sealed for num_complex::Complex<f64> {}
}

/// The element types of LAPACK: `f32` (`s`), `f64` (`d`), `Complex<f32>` (`c`) and
/// `Complex<f64>` (`z`).
///
/// ```
/// use pjrt_lapack::Scalar;
/// assert_eq!(<f64 as Scalar>::PREFIX, 'd');
/// assert!(<num_complex::Complex<f32> as Scalar>::IS_COMPLEX);
/// ```
pub trait Scalar: Copy + Default + PartialEq + std::fmt::Debug + Send + Sync + sealed::Sealed + 'static {
    /// The real type of its parts (itself for a real type).
    type Real: Scalar<Real = Self::Real> + Into<f64>;
    /// The form of `xSYEVD` / `xHEEVD`.
    type Eigh: Copy;
    /// The form of `xGEEV`.
    type Geev: Copy;
    /// The form of `xGESDD`.
    type Gesdd: Copy;
    /// The form of `xGEES`.
    type Gees: Copy;
    /// LAPACK's letter for the type.
    const PREFIX: char;
    /// Whether it is complex.
    const IS_COMPLEX: bool;
    /// Zero.
    const ZERO: Self;
    /// One.
    const ONE: Self;
    /// A NaN (NaN in both parts for complex types).
    const NAN: Self;
    /// The table of this type's routines in `lapack`.
    fn routines(lapack: &Lapack) -> &Routines<Self>;
    /// The value of a workspace size that LAPACK returned in the first element of `WORK`
    /// (its real part, rounded up).
    fn workspace_size(self) -> f64;
    /// A real value as this type.
    fn from_real(real: Self::Real) -> Self;
}

macro_rules! real_scalar {
    ($t:ty, $p:literal, $field:ident) => {
        impl Scalar for $t {
            type Real = $t;
            type Eigh = Syevd<$t>;
            type Geev = GeevReal<$t>;
            type Gesdd = GesddReal<$t>;
            type Gees = GeesReal<$t>;
            const PREFIX: char = $p;
            const IS_COMPLEX: bool = false;
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const NAN: Self = <$t>::NAN;
            fn routines(lapack: &Lapack) -> &Routines<Self> {
                &lapack.$field
            }
            fn workspace_size(self) -> f64 {
                self as f64
            }
            fn from_real(real: $t) -> Self {
                real
            }
        }
    };
}

macro_rules! complex_scalar {
    ($r:ty, $p:literal, $field:ident) => {
        impl Scalar for Complex<$r> {
            type Real = $r;
            type Eigh = Heevd<Complex<$r>, $r>;
            type Geev = GeevComplex<Complex<$r>, $r>;
            type Gesdd = GesddComplex<Complex<$r>, $r>;
            type Gees = GeesComplex<Complex<$r>, $r>;
            const PREFIX: char = $p;
            const IS_COMPLEX: bool = true;
            const ZERO: Self = Complex::new(0.0, 0.0);
            const ONE: Self = Complex::new(1.0, 0.0);
            const NAN: Self = Complex::new(<$r>::NAN, <$r>::NAN);
            fn routines(lapack: &Lapack) -> &Routines<Self> {
                &lapack.$field
            }
            fn workspace_size(self) -> f64 {
                self.re as f64
            }
            fn from_real(real: $r) -> Self {
                Complex::new(real, 0.0)
            }
        }
    };
}

real_scalar!(f32, 's', s);
real_scalar!(f64, 'd', d);
complex_scalar!(f32, 'c', c);
complex_scalar!(f64, 'z', z);
