//! Prints a StableHLO portable artifact (a `.mlirbc` file, or the module of a `.jaxexport`) as
//! MLIR text, with a line about what it holds.
//!
//! `cargo run -p pjrt-stablehlo --example print_artifact [FILE]` (default: the committed
//! tanh(x) * y + 1 artifact).

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args_os().nth(1).map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/formats/tanh_mul.portable-1.0.0.mlirbc")
    });
    let bytes = std::fs::read(&path)?;
    let bytecode = if bytes.starts_with(b"ML\xefR") {
        bytes
    } else {
        pjrt_formats::jax_export::JaxExport::from_bytes(&bytes)?.mlir_module().to_vec()
    };
    let module = pjrt_stablehlo::read_bytecode(&bytecode)?;
    eprintln!(
        "{}: MLIR bytecode version {} from {}, {} ops",
        path.display(),
        module.bytecode_version,
        module.producer,
        module.walk().count()
    );
    print!("{}", pjrt_stablehlo::print(&module));
    Ok(())
}
