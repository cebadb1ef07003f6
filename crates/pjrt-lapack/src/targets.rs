//! The custom-call targets JAX guarantees stable on CPU (`_CPU_FFI_KERNELS` of
//! `jax/_src/export/_export.py`), derived from the routine families: four per family, one per
//! element type, in LAPACK's order `s`, `d`, `c`, `z` (the complex ones take the family's complex
//! name: `orgqr` is `ungqr` for `c` and `z`).

/// Writes [`FAMILIES`] and [`TARGETS`] from one list of (real name, complex name), so the
/// number of targets is the number of families times four, written nowhere.
macro_rules! families {
    ($(($real:literal, $complex:literal)),* $(,)?) => {
        /// The routine families, in `_CPU_FFI_KERNELS` order, as (real name, complex name).
        ///
        /// ```
        /// assert_eq!(pjrt_lapack::FAMILIES[2], ("orgqr", "ungqr"));
        /// ```
        pub const FAMILIES: &[(&str, &str)] = &[$(($real, $complex)),*];

        /// The custom-call targets JAX guarantees stable on CPU, four per family of
        /// [`FAMILIES`] (`s`, `d`, `c`, `z`), each with a kernel here.
        ///
        /// ```
        /// assert_eq!(pjrt_lapack::TARGETS.len(), 4 * pjrt_lapack::FAMILIES.len());
        /// assert_eq!(pjrt_lapack::TARGETS.len(), 48);
        /// assert!(pjrt_lapack::TARGETS.contains(&"lapack_zheevd_ffi"));
        /// ```
        pub const TARGETS: [&str; 4 * FAMILIES.len()] = [$(
            concat!("lapack_s", $real, "_ffi"),
            concat!("lapack_d", $real, "_ffi"),
            concat!("lapack_c", $complex, "_ffi"),
            concat!("lapack_z", $complex, "_ffi"),
        )*];
    };
}

families![
    ("potrf", "potrf"),
    ("geqrf", "geqrf"),
    ("orgqr", "ungqr"),
    ("syevd", "heevd"),
    ("geev", "geev"),
    ("gesdd", "gesdd"),
    ("getrf", "getrf"),
    ("sytrd", "hetrd"),
    ("gehrd", "gehrd"),
    ("gees", "gees"),
    ("trsm", "trsm"),
    ("gtsv", "gtsv"),
];

/// The family (its real name) and LAPACK's type letter of `TARGETS[index]`.
///
/// ```
/// assert_eq!(pjrt_lapack::family_of(10), Some(("orgqr", 'c'))); // lapack_cungqr_ffi
/// assert_eq!(pjrt_lapack::family_of(pjrt_lapack::TARGETS.len()), None);
/// ```
pub fn family_of(index: usize) -> Option<(&'static str, char)> {
    let (real, _) = FAMILIES.get(index / 4)?;
    Some((real, ['s', 'd', 'c', 'z'][index % 4]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_follow_families() {
        for (i, target) in TARGETS.iter().enumerate() {
            let (real, complex) = FAMILIES[i / 4];
            let (family, p) = family_of(i).unwrap();
            assert_eq!(family, real);
            let routine = if i % 4 < 2 { real } else { complex };
            assert_eq!(*target, format!("lapack_{p}{routine}_ffi"));
        }
    }
}
