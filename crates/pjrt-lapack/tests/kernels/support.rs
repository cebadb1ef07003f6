//! Shared by the kernel tests: the library, and column-major helpers.

use std::sync::OnceLock;

use pjrt_lapack::Lapack;

/// scipy's OpenBLAS from the plugin cache, installed there first when missing.
pub fn lapack() -> &'static Lapack {
    static LAPACK: OnceLock<Lapack> = OnceLock::new();
    LAPACK.get_or_init(|| {
        let path = pjrt_client::locate::install(&pjrt_client::locate::OPENBLAS, |line| eprintln!("{line}"))
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
