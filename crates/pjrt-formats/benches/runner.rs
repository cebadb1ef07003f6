//! `jax_export::Runner::executable` on the CPU plugin: a signature already compiled costs a
//! lookup; a new one costs refinement and compilation (a few samples, for comparison). And a
//! new signature side by side, the refined module sent two ways: written as MLIR bytecode (what
//! the runner sends) and printed as MLIR text (what it sent before), each `refine + write or
//! print + compile`, the same shapes in the same order.
//!
//! Models: the 6-layer, 29M-parameter transformer exported with tokens `(b, t)`
//! (crates/pjrt-stablehlo/benches/data/transformer_symbolic.jaxexport, 53 inputs) and the
//! symbolic data set's one-block `transformer` (13 inputs, quick to compile, so a runner can
//! be filled with 16 signatures).
//!
//! `cargo bench -p pjrt-formats --bench runner`

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode};
use pjrt_client::{Client, ClientOptions, Plugin, Program};
use pjrt_formats::jax_export::{InputShape, JaxExport, Runner};
use pjrt_stablehlo::ir::Type;

/// The input shapes with the symbolic input(s) at `dims` (every other input static).
fn shapes(model: &JaxExport, dims: &[i64]) -> Vec<InputShape> {
    model
        .in_avals()
        .iter()
        .map(|a| (a.element_type.unwrap(), a.fixed_dims().unwrap_or_else(|| dims.to_vec())))
        .collect()
}

fn runner(client: &Client, path: &Path) -> Runner {
    Runner::new(JaxExport::read(path).unwrap(), client)
}

/// Times `executable` at a new signature per iteration (`next` gives the k-th one).
fn first_time(c: &mut Criterion, name: &str, runner: &Runner, next: impl Fn(u64) -> Vec<i64>) {
    let mut group = c.benchmark_group(name);
    group.sample_size(10).sampling_mode(SamplingMode::Flat).warm_up_time(Duration::from_millis(1));
    let mut k = 0;
    group.bench_function("executable, new signature (refine + compile)", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let shapes = shapes(runner.model(), &next(k));
                k += 1;
                let t = Instant::now();
                runner.executable(&shapes).unwrap();
                total += t.elapsed();
            }
            total
        })
    });
    group.finish();
}

/// A new signature per iteration (`next` gives the k-th, the same sequence for both ways),
/// refined and sent as bytecode or as text, and compiled.
fn bytecode_against_text(
    c: &mut Criterion,
    name: &str,
    client: &Client,
    model: &JaxExport,
    next: impl Fn(u64) -> Vec<i64>,
) {
    let module = pjrt_stablehlo::read_bytecode(model.mlir_module()).unwrap();
    let options = model.compile_options(client.platform_name());
    let mut group = c.benchmark_group(name);
    group.sample_size(10).sampling_mode(SamplingMode::Flat).warm_up_time(Duration::from_millis(1));
    for (way, bytecode) in [("refine + write bytecode + compile", true), ("refine + print text + compile", false)] {
        let mut k = 0;
        group.bench_function(way, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let shapes = shapes(model, &next(k));
                    k += 1;
                    let args: Vec<Type> = shapes
                        .iter()
                        .map(|(e, d)| Type::tensor(*e, &d.iter().map(|&x| x as u64).collect::<Vec<_>>()))
                        .collect();
                    let t = Instant::now();
                    let refined = pjrt_stablehlo::refine(&module, &args).unwrap();
                    let program = if bytecode {
                        Program::from_module(&refined).unwrap()
                    } else {
                        Program::mlir_text(pjrt_stablehlo::print(&refined)).unwrap()
                    };
                    client.compile(&program.with_parameters(shapes), &options).unwrap();
                    total += t.elapsed();
                }
                total
            })
        });
    }
    group.finish();
}

fn bench(c: &mut Criterion) {
    let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ()).unwrap().load_path()).unwrap();
    let client = Client::new(&plugin, &ClientOptions::new()).unwrap();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");

    let big = runner(&client, &root.join("crates/pjrt-stablehlo/benches/data/transformer_symbolic.jaxexport"));
    let signature = shapes(big.model(), &[4, 128]);
    big.executable(&signature).unwrap();
    c.bench_function("transformer-6L: executable, cached (1 signature kept)", |b| {
        b.iter(|| big.executable(&signature).unwrap())
    });
    // New signatures: t from 1 to 256, then the next batch size.
    first_time(c, "transformer-6L", &big, |k| vec![1 + (k / 256) as i64, 1 + (k % 256) as i64]);
    bytecode_against_text(c, "transformer-6L: new signature", &client, big.model(), |k| {
        vec![3 + (k / 256) as i64, 1 + (k % 256) as i64]
    });

    let small = runner(&client, &root.join("tests/data/jax_export/symbolic/jax-0.10.2/transformer/model.jaxexport"));
    for t in 1..=16 {
        small.executable(&shapes(small.model(), &[1, t, 8])).unwrap();
    }
    assert_eq!(small.cached(), 16);
    // The oldest of 16, then (moved to most recent) the last one scanned for.
    let signature = shapes(small.model(), &[1, 1, 8]);
    c.bench_function("transformer-1L: executable, cached (16 signatures kept)", |b| {
        b.iter(|| small.executable(&signature).unwrap())
    });
    first_time(c, "transformer-1L", &small, |k| vec![2 + (k / 16) as i64, 1 + (k % 16) as i64, 8]);
    bytecode_against_text(c, "transformer-1L: new signature", &client, small.model(), |k| {
        vec![5 + (k / 16) as i64, 1 + (k % 16) as i64, 8]
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
