//! Reading and printing the 29M-parameter, 8-layer transformer's jax.export (about 2k ops):
//! the goal is under 5 ms for read + print.
//!
//! The export is not committed (it is made by `tools/gen_transformer_export.py export DIR`);
//! the bench reads `$PJRT_STABLEHLO_BENCH_MODEL`, else `target/tfm/model.jaxexport`. Without
//! either it says so and measures the largest committed export instead.
//!
//! `cargo bench -p pjrt-stablehlo --bench read_print`

use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion};

fn model() -> (String, Vec<u8>) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let path = std::env::var_os("PJRT_STABLEHLO_BENCH_MODEL")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/tfm/model.jaxexport"));
    let (name, path) = if path.exists() {
        ("transformer".to_string(), path)
    } else {
        eprintln!(
            "{} is missing (make it with tools/gen_transformer_export.py export target/tfm); \
             measuring the committed cnn export instead",
            path.display()
        );
        ("cnn".to_string(), root.join("tests/data/jax_export/jax-0.10.2/cnn/model.jaxexport"))
    };
    let bytes = std::fs::read(&path).unwrap();
    let export = pjrt_formats::jax_export::JaxExport::from_bytes(&bytes).unwrap();
    (name, export.mlir_module().to_vec())
}

fn bench(c: &mut Criterion) {
    let (name, bc) = model();
    let module = pjrt_stablehlo::read_bytecode(&bc).unwrap();
    let text = pjrt_stablehlo::print(&module);
    eprintln!("{name}: {} bytes of bytecode, {} ops, {} bytes of text", bc.len(), module.walk().count(), text.len());
    c.bench_function(&format!("{name}: read"), |b| b.iter(|| pjrt_stablehlo::read_bytecode(&bc).unwrap()));
    c.bench_function(&format!("{name}: print"), |b| b.iter(|| pjrt_stablehlo::print(&module)));
    c.bench_function(&format!("{name}: read + print"), |b| {
        b.iter(|| pjrt_stablehlo::print(&pjrt_stablehlo::read_bytecode(&bc).unwrap()))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
