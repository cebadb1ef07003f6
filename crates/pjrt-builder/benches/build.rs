//! `cargo bench -p pjrt-builder`: building and emitting a program of 10,000 ops (a stack of
//! dense layers with layer norm, GELU and a residual, plus a softmax head: matmuls,
//! broadcasts, elementwise ops and reduces with regions), from `Function::new` to the MLIR text
//! of `finish` (the IR built, then printed by pjrt-stablehlo's printer); and to the IR alone
//! (`Function::to_module`). No plugin is involved.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pjrt_builder::{BuildError, Function};
use pjrt_client::{ElementType, Program};

/// Ops (lines of MLIR that are ops, region returns included) the program must have at least.
const OPS: usize = 10_000;

/// Builds the program with `layers` layers; returns it and its op count.
fn build(layers: usize) -> Result<(Program, usize), BuildError> {
    let program = layers_of(layers, |f, out| f.finish(&[out]))?;
    let ops = program
        .text()
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("= \"stablehlo.") || l.contains("\"stablehlo.return\""))
        .count();
    Ok((program, ops))
}

/// Builds the function of `layers` layers and hands it and its output to `finish`.
fn layers_of<R>(
    layers: usize,
    finish: impl FnOnce(&Function, &pjrt_builder::Value<'_>) -> Result<R, BuildError>,
) -> Result<R, BuildError> {
    let f = Function::new("bench");
    let mut x = f.parameter(ElementType::F32, &[32, 64])?;
    let w = f.parameter(ElementType::F32, &[64, 64])?;
    let b = f.parameter(ElementType::F32, &[64])?;
    for _ in 0..layers {
        let z = x.matmul(&w)?.add(&b.broadcast_in_dim(&[32, 64], &[1])?)?;
        let mean = z.mean(&[1])?.broadcast_in_dim(&[32, 64], &[0])?;
        let centered = z.subtract(&mean)?;
        let scale = centered.variance(&[1])?.add(&f.splat(1e-5f32, &[32])?)?.rsqrt()?;
        let normed = centered.multiply(&scale.broadcast_in_dim(&[32, 64], &[0])?)?;
        x = x.add(&normed.gelu()?)?;
    }
    let out = x.softmax(1)?;
    finish(&f, &out)
}

fn build_and_emit(c: &mut Criterion) {
    // Enough layers for OPS ops.
    let (_, per_layer_probe) = build(1).expect("one layer builds");
    let (_, base) = build(0).expect("no layers builds");
    let layers = (OPS - base).div_ceil(per_layer_probe - base);
    let (program, ops) = build(layers).expect("the program builds");
    assert!(ops >= OPS, "{ops} ops");
    let bytes = program.text().map_or(0, str::len);
    eprintln!("{layers} layers: {ops} ops, {bytes} bytes of MLIR");
    let mut group = c.benchmark_group("build");
    group.throughput(Throughput::Elements(ops as u64));
    group.sample_size(20);
    group.bench_function("10k_ops", |bench| bench.iter(|| build(layers).expect("builds")));
    group.bench_function("10k_ops, IR only (to_module)", |bench| {
        bench.iter(|| layers_of(layers, |f, out| f.to_module(&[out])).expect("a module"))
    });
    group.finish();
}

criterion_group!(benches, build_and_emit);
criterion_main!(benches);
