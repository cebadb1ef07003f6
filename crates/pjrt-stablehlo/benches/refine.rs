//! Refining shape-polymorphic jax.export modules for concrete input shapes (what
//! `JaxExport::program_for` does before each new signature is compiled): the goal is under
//! 10 ms for a transformer-sized module.
//!
//! Two modules, each read once:
//! * `transformer-6L`: the 29M-parameter, 6-layer decoder of tools/gen_transformer_export.py,
//!   exported with tokens `(b, t)`, `t <= 256`, the weights as arguments
//!   (benches/data/transformer_symbolic.jaxexport, made by its `symbolic` command);
//! * `transformer-1L`: the symbolic data set's one-block `transformer`, x `(b, t, 8)`.
//!
//! For each, `refine` alone, `refine` + `write_bytecode` (the MLIR bytecode handed to the
//! plugin, for the version the model was exported for) and `refine` + `print` (the MLIR text
//! handed to it before).
//!
//! `cargo bench -p pjrt-stablehlo --bench refine`

use std::path::{Path, PathBuf};

use criterion::{criterion_group, criterion_main, Criterion};
use pjrt_formats::jax_export::JaxExport;
use pjrt_stablehlo::ir::Type;

/// @main's argument types for the export called with its symbolic input(s) of shape `dims`
/// (every other input has the aval's static shape), as `JaxExport::program_for` builds them.
fn arg_types(export: &JaxExport, dims: &[u64]) -> Vec<Type> {
    assert_eq!(export.platforms().len(), 1, "one platform: no platform-index argument");
    export
        .module_kept_var_idx()
        .iter()
        .map(|&i| {
            let aval = &export.in_avals()[i];
            let fixed: Vec<u64> = match aval.fixed_dims() {
                Some(d) => d.iter().map(|&n| n as u64).collect(),
                None => dims.to_vec(),
            };
            Type::tensor(aval.element_type.unwrap(), &fixed)
        })
        .collect()
}

fn bench_module(c: &mut Criterion, name: &str, path: &Path, shapes: &[Vec<u64>]) {
    let export = JaxExport::read(path).unwrap();
    let module = pjrt_stablehlo::read_bytecode(export.mlir_module()).unwrap();
    eprintln!(
        "{name}: {} bytes of bytecode, {} ops, {} inputs",
        export.mlir_module().len(),
        module.walk().count(),
        export.in_avals().len()
    );
    for dims in shapes {
        let args = arg_types(&export, dims);
        let refined = pjrt_stablehlo::refine(&module, &args).unwrap();
        assert!(!pjrt_stablehlo::is_polymorphic(&refined));
        let shape = dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("x");
        let target = pjrt_stablehlo::StableHloVersion::of_producer(&module.producer).unwrap();
        eprintln!(
            "{name} at {shape}: refined to {} ops, {} bytes of text, {} bytes of bytecode",
            refined.walk().count(),
            pjrt_stablehlo::print(&refined).len(),
            pjrt_stablehlo::write_bytecode(&refined, target).unwrap().len()
        );
        c.bench_function(&format!("{name} {shape}: refine"), |b| {
            b.iter(|| pjrt_stablehlo::refine(&module, &args).unwrap())
        });
        let target = pjrt_stablehlo::StableHloVersion::of_producer(&module.producer).unwrap();
        c.bench_function(&format!("{name} {shape}: refine + write bytecode"), |b| {
            b.iter(|| pjrt_stablehlo::write_bytecode(&pjrt_stablehlo::refine(&module, &args).unwrap(), target).unwrap())
        });
        c.bench_function(&format!("{name} {shape}: refine + print"), |b| {
            b.iter(|| pjrt_stablehlo::print(&pjrt_stablehlo::refine(&module, &args).unwrap()))
        });
    }
}

fn bench(c: &mut Criterion) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let big = root.join("benches/data/transformer_symbolic.jaxexport");
    bench_module(c, "transformer-6L", &big, &[vec![1, 16], vec![8, 128], vec![4, 256]]);
    let small = root.join("../../tests/data/jax_export/symbolic/jax-0.10.2/transformer/model.jaxexport");
    bench_module(c, "transformer-1L", &small, &[vec![2, 7, 8], vec![3, 16, 8]]);
}

criterion_group!(benches, bench);
criterion_main!(benches);
