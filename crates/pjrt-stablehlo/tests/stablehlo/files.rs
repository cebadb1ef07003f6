//! The committed test data: every `.jaxexport` and `.mlirbc` under tests/data, and the
//! portable artifact each holds.

use std::path::{Path, PathBuf};

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, out);
        } else if matches!(p.extension().and_then(|e| e.to_str()), Some("jaxexport" | "mlirbc")) {
            out.push(p);
        }
    }
}

/// Every `.jaxexport` and `.mlirbc` file under tests/data and examples.
pub fn all() -> Vec<PathBuf> {
    let mut out = Vec::new();
    walk(&repo().join("tests/data"), &mut out);
    walk(&repo().join("examples"), &mut out);
    assert!(out.len() >= 33, "found only {} test files under tests/data", out.len());
    out
}

/// The MLIR bytecode a file holds: the file itself, or a jax.export's module.
pub fn bytecode(path: &Path) -> Vec<u8> {
    let bytes = std::fs::read(path).unwrap();
    if bytes.starts_with(b"ML\xefR") {
        bytes
    } else {
        pjrt_formats::jax_export::JaxExport::from_bytes(&bytes).unwrap().mlir_module().to_vec()
    }
}

/// Whether the bytecode is a portable artifact (VHLO), not a StableHLO-dialect file.
pub fn is_portable(bytecode: &[u8]) -> bool {
    bytecode.windows(4).any(|w| w == b"vhlo")
}

/// Every `.mlir` file under tests/data and examples.
pub fn all_text() -> Vec<PathBuf> {
    fn walk_text(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk_text(&p, out);
            } else if p.extension().is_some_and(|e| e == "mlir") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk_text(&repo().join("tests/data"), &mut out);
    walk_text(&repo().join("examples"), &mut out);
    assert!(out.len() >= 76, "found only {} .mlir files under tests/data", out.len());
    out
}
