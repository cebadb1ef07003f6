//! `pjrt bench`: dispatch and transfer figures for the safe library beside a "raw" variant that
//! calls the C API directly (through `pjrt_client::sys`), alternating the two in one run so
//! that the overhead of the safe layer is visible. Dispatch is in `dispatch.rs`, the thread and
//! in-flight matrix in `threads.rs`, any program or model (`pjrt bench run`) in `run.rs`.

use std::ffi::c_void;
use std::sync::Arc;
use std::time::Instant;

use pjrt_client::sys::{self, Args as _};
use pjrt_client::{
    AlignedHostBuffer, Buffer, Client, ClientOptions, ElementType, Error, HostSource, Plugin, UploadOptions,
};
use serde_json::{json, Value as Json};

use crate::cli::{BenchArgs, BenchWhat, PluginArg};
use crate::out::outln;
use crate::plugins::resolve_plugin;

mod h2d;
pub mod plot;
#[cfg(feature = "serve")]
mod serve;
pub mod samples;

use samples::Samples;

/// Timing statistics of one variant, in microseconds.
#[derive(Clone, Debug)]
pub struct Stats {
    /// Median.
    pub median_us: f64,
    /// 10th percentile.
    pub p10_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// Fastest.
    pub min_us: f64,
}

impl Stats {
    /// Statistics of per-iteration samples in nanoseconds.
    pub fn from_ns(samples: &mut [u64]) -> Stats {
        samples.sort_unstable();
        let at = |q: f64| {
            if samples.is_empty() {
                0.0
            } else {
                samples[((samples.len() - 1) as f64 * q).round() as usize] as f64 / 1e3
            }
        };
        Stats { median_us: at(0.5), p10_us: at(0.1), p90_us: at(0.9), p99_us: at(0.99), min_us: at(0.0) }
    }

    fn json(&self, bytes: Option<usize>) -> Json {
        let mut j = json!({ "median_us": self.median_us, "p10_us": self.p10_us, "p90_us": self.p90_us,
                            "p99_us": self.p99_us, "min_us": self.min_us });
        if let Some(bytes) = bytes {
            j["gbps"] = json!(bytes as f64 / (self.median_us * 1e3));
        }
        j
    }
}

/// Calls slot `$slot` of a raw table with `$args`; panics on a PJRT error (benchmarks only run
/// well-formed calls; the slot was checked to exist when the benchmark was set up).
macro_rules! raw_call {
    ($api:expr, $slot:ident, $args:expr) => {{
        // SAFETY: `$api` is the plugin's table and the slot's presence was checked at setup
        // (`require_slots`); the args were built with `Args::new` and point at live data.
        let error = unsafe { ((*$api).$slot.expect(stringify!($slot)))($args) };
        assert!(error.is_null(), concat!(stringify!($slot), " failed in the raw benchmark"));
    }};
}

fn require_slots(plugin: &Plugin, names: &[&str]) -> Result<(), Error> {
    match names.iter().find(|n| !plugin.has_function(n)) {
        Some(missing) => Err(Error::InvalidArgument(format!("the plugin lacks {missing}, which the benchmark needs"))),
        None => Ok(()),
    }
}

// After `raw_call!`, which they use.
mod dispatch;
mod run;
mod threads;

pub use dispatch::Dispatch;

/// Runs `safe` and `raw` alternately in blocks, timing each iteration; returns the per-call
/// samples (safe, raw).
fn alternate(
    iters: usize,
    block: usize,
    safe: impl FnMut() -> Result<(), Error>,
    raw: impl FnMut(),
) -> Result<(Samples, Samples), Error> {
    let (safe_ns, raw_ns) = alternate_samples(iters, block, safe, raw)?;
    Ok((Samples::new("safe", safe_ns), Samples::new("raw", raw_ns)))
}

/// [`alternate`]'s samples (nanoseconds per iteration, in the order taken).
fn alternate_samples(
    iters: usize,
    block: usize,
    mut safe: impl FnMut() -> Result<(), Error>,
    mut raw: impl FnMut(),
) -> Result<(Vec<u64>, Vec<u64>), Error> {
    let mut safe_ns = Vec::with_capacity(iters);
    let mut raw_ns = Vec::with_capacity(iters);
    while safe_ns.len() < iters {
        for _ in 0..block.min(iters - safe_ns.len()) {
            let t = Instant::now();
            safe()?;
            safe_ns.push(t.elapsed().as_nanos() as u64);
        }
        for _ in 0..block.min(iters - raw_ns.len()) {
            let t = Instant::now();
            raw();
            raw_ns.push(t.elapsed().as_nanos() as u64);
        }
    }
    Ok((safe_ns, raw_ns))
}

fn raw_upload(api: *const sys::PJRT_Api, client: &Client, data: &[u8], count: i64) {
    let dims = [count];
    let device = client.addressable_devices()[0].as_raw();
    let mut args = sys::PJRT_Client_BufferFromHostBuffer_Args::new();
    args.client = client.as_raw();
    args.data = data.as_ptr() as *const c_void;
    args.type_ = pjrt_client::sys::PJRT_Buffer_Type(ElementType::F32.to_i32());
    args.dims = dims.as_ptr();
    args.num_dims = 1;
    args.host_buffer_semantics = sys::PJRT_HostBufferSemantics::ImmutableOnlyDuringCall;
    args.device = device;
    raw_call!(api, PJRT_Client_BufferFromHostBuffer, &mut args);
    if !args.done_with_host_buffer.is_null() {
        let mut destroy = sys::PJRT_Event_Destroy_Args::new();
        destroy.event = args.done_with_host_buffer;
        raw_call!(api, PJRT_Event_Destroy, &mut destroy);
    }
    let mut ready = sys::PJRT_Buffer_ReadyEvent_Args::new();
    ready.buffer = args.buffer;
    raw_call!(api, PJRT_Buffer_ReadyEvent, &mut ready);
    let mut wait = sys::PJRT_Event_Await_Args::new();
    wait.event = ready.event;
    raw_call!(api, PJRT_Event_Await, &mut wait);
    let mut destroy = sys::PJRT_Event_Destroy_Args::new();
    destroy.event = ready.event;
    raw_call!(api, PJRT_Event_Destroy, &mut destroy);
    let mut free = sys::PJRT_Buffer_Destroy_Args::new();
    free.buffer = args.buffer;
    raw_call!(api, PJRT_Buffer_Destroy, &mut free);
}

fn raw_download(api: *const sys::PJRT_Api, buffer: &Buffer, dst: &mut [u8]) {
    let mut args = sys::PJRT_Buffer_ToHostBuffer_Args::new();
    args.src = buffer.as_raw();
    args.dst = dst.as_mut_ptr() as *mut c_void;
    args.dst_size = dst.len();
    raw_call!(api, PJRT_Buffer_ToHostBuffer, &mut args);
    if !args.event.is_null() {
        let mut wait = sys::PJRT_Event_Await_Args::new();
        wait.event = args.event;
        raw_call!(api, PJRT_Event_Await, &mut wait);
        let mut destroy = sys::PJRT_Event_Destroy_Args::new();
        destroy.event = args.event;
        raw_call!(api, PJRT_Event_Destroy, &mut destroy);
    }
}

fn check_bytes(bytes: usize) -> Result<i64, Error> {
    if bytes == 0 || bytes % 4 != 0 {
        return Err(Error::InvalidArgument(format!("--bytes must be a positive multiple of 4, got {bytes}")));
    }
    Ok((bytes / 4) as i64)
}

/// Whether the benchmark keeps per-call latencies (for `--plot`).
fn keeps_latencies(what: &BenchWhat) -> bool {
    match what {
        BenchWhat::Dispatch { .. } | BenchWhat::D2h { .. } | BenchWhat::Run(_) => true,
        #[cfg(feature = "serve")]
        BenchWhat::Serve(_) => true,
        _ => false,
    }
}

/// `pjrt bench`: runs the benchmark `args` names on the plugin `--plugin` names and prints its
/// report (text, or JSON with `--json`).
pub fn exec(args: &BenchArgs) -> Result<(), crate::error::Error> {
    if args.plot.is_some() && !keeps_latencies(&args.what) {
        return Err(Error::InvalidArgument(
            "--plot draws per-call latencies, which `bench dispatch`, `bench d2h`, `bench run` and `bench serve` keep; this benchmark does not"
                .into(),
        )
        .into());
    }
    let (report, series) = match &args.what {
        // Times the whole way to a first result, plugin loading included.
        BenchWhat::Run(run_args) => run::run_bench(run_args, args.plugin.as_deref())?,
        #[cfg(feature = "serve")]
        BenchWhat::Serve(serve_args) => serve::run(serve_args)?,
        _ => measure(args, &resolve_plugin(&PluginArg { plugin: args.plugin.clone() })?)?,
    };
    if let Some(path) = &args.plot {
        plot_report(path, &report, &series)?;
    }
    if args.json {
        outln!("{report}")?;
    } else {
        print_report(&report)?;
    }
    Ok(())
}

/// `--plot`: the samples as an SVG picture, titled with the benchmark and its safe/raw ratio,
/// captioned with the plugin, the date and the machine.
fn plot_report(path: &std::path::Path, report: &Json, series: &[Samples]) -> Result<(), Error> {
    let name = report["benchmark"].as_str().unwrap_or("benchmark");
    let mut title = format!("pjrt bench {name}: latency per call");
    if let Some(ratio) = report["safe_over_raw"].as_f64() {
        title.push_str(&format!(", safe / raw (medians) {ratio:.3}"));
    }
    let plugin = report["plugin"].as_str().unwrap_or("?");
    let plugin = std::path::Path::new(plugin).file_name().map_or(plugin.into(), |f| f.to_string_lossy());
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let subtitle = format!(
        "{plugin} (PJRT {}), {}, {} {} with {cores} cores",
        report["api_version"].as_str().unwrap_or("?"),
        plot::today(),
        std::env::consts::OS,
        std::env::consts::ARCH
    );
    plot::write(path, &title, &subtitle, series).map_err(|e| Error::Io { path: path.to_owned(), source: e })
}

/// Runs one benchmark and returns its report.
pub fn run_bench(args: &BenchArgs, plugin: &Plugin) -> Result<Json, Error> {
    Ok(measure(args, plugin)?.0)
}

/// Runs one benchmark and returns its report and its per-call samples (for `--plot`; empty
/// for the benchmarks that keep none).
pub fn measure(args: &BenchArgs, plugin: &Plugin) -> Result<(Json, Vec<Samples>), Error> {
    let mut series = Vec::new();
    if let BenchWhat::Threads { threads, in_flight, iters } = &args.what {
        let mut report = threads::threads_bench(plugin, threads, in_flight, *iters)?;
        report["benchmark"] = json!("threads");
        report["plugin"] = json!(plugin.path());
        report["api_version"] = json!(plugin.api_version().to_string());
        return Ok((report, series));
    }
    let client = Client::new(plugin, &ClientOptions::new())?;
    let api = plugin.raw_api();
    let mut report = json!({
        "plugin": plugin.path(), "api_version": plugin.api_version().to_string(),
        "platform": client.platform_name(),
    });
    match args.what {
        BenchWhat::Dispatch { iters, rounds } => {
            let (figures, samples) = dispatch::dispatch_bench(&client, iters, rounds)?;
            report.as_object_mut().expect("an object").extend(figures);
            series = samples;
        }
        BenchWhat::H2d { iters, params: Some(ref params), .. } => {
            let mut params_report = h2d::params_bench(&client, params, iters)?;
            params_report["plugin"] = report["plugin"].take();
            params_report["api_version"] = report["api_version"].take();
            params_report["platform"] = report["platform"].take();
            report = params_report;
        }
        BenchWhat::H2d { bytes, iters, zero_copy, params: None } => {
            let count = check_bytes(bytes)?;
            require_slots(plugin, &["PJRT_Client_BufferFromHostBuffer", "PJRT_Buffer_ReadyEvent"])?;
            report["benchmark"] = json!(if zero_copy { "h2d-zero-copy" } else { "h2d" });
            report["bytes"] = json!(bytes);
            report["iters"] = json!(iters);
            if zero_copy {
                let host = Arc::new(AlignedHostBuffer::zeroed(bytes)?);
                let mut samples = Vec::with_capacity(iters);
                for i in 0..iters + 2 {
                    let t = Instant::now();
                    let buffer = client
                        .upload_with(HostSource::aligned(&host, ElementType::F32, &[count]), &UploadOptions::new())?;
                    let elapsed = t.elapsed().as_nanos() as u64;
                    drop(buffer);
                    if i >= 2 {
                        samples.push(elapsed);
                    }
                }
                let stats = Stats::from_ns(&mut samples);
                report["safe"] = stats.json(Some(bytes));
                report["median_us"] = json!(stats.median_us);
                report["gbps"] = report["safe"]["gbps"].clone();
            } else {
                let data = vec![1u8; bytes];
                let layout = UploadOptions::new();
                let safe = || {
                    let buffer = client.upload_with(HostSource::bytes(&data, ElementType::F32, &[count]), &layout)?;
                    buffer.ready_event()?.wait()?;
                    Ok(())
                };
                let raw = || raw_upload(api, &client, &data, count);
                let (safe, raw) = alternate(iters, 1, safe, raw)?;
                let (safe, raw) = (safe.stats(), raw.stats());
                report["safe"] = safe.json(Some(bytes));
                report["raw"] = raw.json(Some(bytes));
                report["median_us"] = json!(safe.median_us);
                report["gbps"] = report["safe"]["gbps"].clone();
                report["safe_over_raw"] = json!(safe.median_us / raw.median_us);
            }
        }
        BenchWhat::Threads { .. } | BenchWhat::Run(_) => unreachable!("handled above"),
        #[cfg(feature = "serve")]
        BenchWhat::Serve(_) => unreachable!("handled above"),
        BenchWhat::D2h { bytes, iters } => {
            let count = check_bytes(bytes)?;
            let data = vec![1u8; bytes];
            let buffer =
                client.upload_with(HostSource::bytes(&data, ElementType::F32, &[count]), &UploadOptions::new())?;
            let mut dst = vec![0f32; count as usize];
            let mut raw_dst = vec![0u8; bytes];
            buffer.copy_to_slice(&mut dst)?;
            raw_download(api, &buffer, &mut raw_dst);
            let (safe_samples, raw_samples) =
                alternate(iters, 1, || buffer.copy_to_slice(&mut dst), || raw_download(api, &buffer, &mut raw_dst))?;
            let (safe, raw) = (safe_samples.stats(), raw_samples.stats());
            series = vec![safe_samples, raw_samples];
            report["benchmark"] = json!("d2h");
            report["bytes"] = json!(bytes);
            report["iters"] = json!(iters);
            report["safe"] = safe.json(Some(bytes));
            report["raw"] = raw.json(Some(bytes));
            report["median_us"] = json!(safe.median_us);
            report["gbps"] = report["safe"]["gbps"].clone();
            report["safe_over_raw"] = json!(safe.median_us / raw.median_us);
        }
    }
    Ok((report, series))
}

/// Prints a report as text.
pub fn print_report(report: &Json) -> Result<(), crate::out::StdoutError> {
    if report["benchmark"] == "h2d-params" {
        return h2d::print_params_report(report);
    }
    if report["benchmark"] == "serve" {
        outln!(
            "{} at {}, model {} ({} bytes per request)",
            report["label"].as_str().unwrap_or("?"),
            report["url"].as_str().unwrap_or("?"),
            report["model"].as_str().unwrap_or("?"),
            report["request_bytes"]
        )?;
        for level in report["levels"].as_array().into_iter().flatten() {
            outln!(
                "  concurrency {:>3}: {:>9.1} requests/s  p50 {:>8.3} ms  p99 {:>8.3} ms",
                level["concurrency"],
                level["throughput_rps"].as_f64().unwrap_or(0.0),
                level["p50_ms"].as_f64().unwrap_or(0.0),
                level["p99_ms"].as_f64().unwrap_or(0.0)
            )?;
        }
        return Ok(());
    }
    let name = report["benchmark"].as_str().unwrap_or("?");
    outln!(
        "{name} on {} (PJRT {})",
        report["plugin"].as_str().unwrap_or("?"),
        report["api_version"].as_str().unwrap_or("?")
    )?;
    for variant in ["safe", "raw"] {
        let v = &report[variant];
        if v.is_null() {
            continue;
        }
        let gbps = v["gbps"].as_f64().map(|g| format!("  {g:.2} GB/s")).unwrap_or_default();
        outln!(
            "  {variant:<5} median {:>10.2} us  p10 {:>10.2}  p90 {:>10.2}  p99 {:>10.2}  min {:>10.2}{gbps}",
            v["median_us"].as_f64().unwrap_or(0.0),
            v["p10_us"].as_f64().unwrap_or(0.0),
            v["p90_us"].as_f64().unwrap_or(0.0),
            v["p99_us"].as_f64().unwrap_or(0.0),
            v["min_us"].as_f64().unwrap_or(0.0)
        )?;
    }
    for row in report["rows"].as_array().into_iter().flatten() {
        let in_flight = row["in_flight"].as_u64().map(|n| format!(", {n:>2} in flight")).unwrap_or_default();
        outln!(
            "  {:>3} threads{in_flight}: {:>10.0} executions/s",
            row["threads"],
            row["executions_per_s"].as_f64().unwrap_or(0.0)
        )?;
    }
    run::print_extra(report)?;
    if let Some(ratio) = report["safe_over_raw"].as_f64() {
        let spread = match (report["safe_over_raw_min"].as_f64(), report["safe_over_raw_max"].as_f64()) {
            (Some(lo), Some(hi)) => format!(" (median of {} rounds; min {lo:.3}, max {hi:.3})", report["rounds_run"]),
            _ => String::new(),
        };
        outln!("  safe / raw (medians): {ratio:.3}{spread}")?;
    }
    Ok(())
}
