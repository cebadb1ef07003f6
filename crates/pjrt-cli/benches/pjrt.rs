//! `cargo bench -p pjrt-cli`: the `pjrt bench` figures as criterion benchmarks, on the default
//! CPU plugin (installed into the plugin cache on first use). The "raw" variants call the C API
//! directly, so the overhead of the safe layer shows side by side.

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use pjrt_cli::commands::bench::Dispatch;
use pjrt_client::{AlignedHostBuffer, Client, ClientOptions, ElementType, HostSource, Plugin, UploadOptions};

fn client() -> Client {
    let known = pjrt_plugins::default_plugin();
    let verified = pjrt_plugins::verified_cached(known)
        .or_else(|_| {
            pjrt_plugins::install(known, |line| eprintln!("{line}")).and_then(|_| pjrt_plugins::verified_cached(known))
        })
        .expect("the default CPU plugin (install with `pjrt plugin install cpu`)");
    let plugin = Plugin::load(verified.load_path()).expect("loading the plugin");
    Client::new(&plugin, &ClientOptions::new().cpu_device_count(1)).expect("a client")
}

fn dispatch(c: &mut Criterion) {
    let client = client();
    let bench = Dispatch::new(&client).unwrap();
    let mut group = c.benchmark_group("dispatch");
    group.bench_function("safe", |b| b.iter(|| bench.safe().unwrap()));
    group.bench_function("raw", |b| b.iter(|| bench.raw()));
    group.finish();
}

fn transfers(c: &mut Criterion) {
    let client = client();
    let mut group = c.benchmark_group("transfers");
    group.sample_size(10);
    for bytes in [4usize << 10, 1 << 20, 64 << 20] {
        let count = (bytes / 4) as i64;
        let data = vec![1u8; bytes];
        group.throughput(Throughput::Bytes(bytes as u64));
        group.bench_with_input(BenchmarkId::new("h2d", bytes), &bytes, |b, _| {
            b.iter(|| {
                let buffer = client
                    .upload_with(HostSource::bytes(&data, ElementType::F32, &[count]), &UploadOptions::new())
                    .unwrap();
                buffer.ready_event().unwrap().wait().unwrap();
            })
        });
        let host = Arc::new(AlignedHostBuffer::from_bytes(&data).unwrap());
        group.bench_with_input(BenchmarkId::new("h2d-zero-copy", bytes), &bytes, |b, _| {
            b.iter(|| {
                drop(
                    client
                        .upload_with(HostSource::aligned(&host, ElementType::F32, &[count]), &UploadOptions::new())
                        .unwrap(),
                )
            })
        });
        let buffer =
            client.upload_with(HostSource::bytes(&data, ElementType::F32, &[count]), &UploadOptions::new()).unwrap();
        let mut dst = vec![0f32; count as usize];
        group.bench_with_input(BenchmarkId::new("d2h", bytes), &bytes, |b, _| {
            b.iter(|| buffer.copy_to_slice(&mut dst).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, dispatch, transfers);
criterion_main!(benches);
