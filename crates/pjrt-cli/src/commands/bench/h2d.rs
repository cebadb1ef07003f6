//! `pjrt bench h2d --params FILE`: uploading a safetensors file's tensors, the ways the library
//! can, against a plain memcpy of the same bytes on the host.

use crate::out::outln;
use std::path::Path;
use std::time::Instant;

use pjrt_client::{Buffer, Client, Error, HostData, HostSource, Placement, UploadOptions};
use pjrt_formats::safetensors::SafeTensors;
use pjrt_formats::ClientExt;
use serde_json::{json, Value as Json};

/// Seconds of each run of one variant.
struct Runs(Vec<f64>);

impl Runs {
    fn json(mut self, bytes: u64) -> Json {
        self.0.sort_by(f64::total_cmp);
        let min = self.0.first().copied().unwrap_or(0.0);
        let median = self.0.get(self.0.len() / 2).copied().unwrap_or(0.0);
        let gbps = |s: f64| if s > 0.0 { bytes as f64 / s / 1e9 } else { 0.0 };
        json!({ "min_ms": min * 1e3, "median_ms": median * 1e3, "gbps": gbps(median), "best_gbps": gbps(min) })
    }
}

/// The benchmarks report the client's errors; a file's own errors (a broken safetensors file)
/// become invalid-argument ones, with their message.
fn client_error(e: impl Into<pjrt_formats::Error>) -> Error {
    match e.into() {
        pjrt_formats::Error::Client(e) => e,
        other => Error::InvalidArgument(other.to_string()),
    }
}

/// Waits until every buffer is ready (its data is on the device), so a variant's time covers
/// the whole transfer.
fn await_all(buffers: &[Buffer]) -> Result<(), Error> {
    for buffer in buffers {
        buffer.ready_event()?.wait()?;
    }
    Ok(())
}

/// Measures `file`'s upload `iters` times per variant, the variants alternating (after one
/// warm-up round that also brings the file into the page cache):
/// - `memcpy`: every tensor's bytes copied into one host allocation made (and touched) before;
/// - `copy`: [`ClientExt::upload_tensor_view`], one tensor after the other, each copied during
///   its call (the library's path before uploads overlapped);
/// - `overlapped_copy`: every tensor handed to the plugin to copy on its own threads
///   ([`HostData::Shared`]), all started before any is awaited;
/// - `upload_safetensors`: [`ClientExt::upload_safetensors`] from the file opened once: in
///   place (from the memory [`SafeTensors::open`] read the file into) where a tensor is 64-byte
///   aligned (no bytes move: its figure is the cost of the calls), overlapped copies elsewhere;
/// - `open_and_upload`: [`SafeTensors::open`] (one read of the whole file, from the page cache
///   after the warm-up) and then `upload_safetensors`: what `pjrt run --params` does, all told.
///
/// The file is never memory-mapped (`SafeTensors::open_mapped` is `unsafe`: nothing here can
/// promise that no other process changes the user's file meanwhile).
pub fn params_bench(client: &Client, path: &Path, iters: usize) -> Result<Json, Error> {
    let file = SafeTensors::open(path).map_err(client_error)?;
    let bytes = file.data_bytes();
    let names: Vec<String> = file.names().map(String::from).collect();
    let shared =
        names.iter().map(|name| file.shared_bytes(name).map_err(client_error)).collect::<Result<Vec<_>, Error>>()?;
    let aligned: Vec<bool> = shared.iter().map(|s| s.is_aligned()).collect();
    let aligned_bytes: u64 = shared.iter().filter(|s| s.is_aligned()).map(|s| s.len() as u64).sum();
    let packed = file.tensors().any(|(_, view)| view.dtype().is_sub_byte());
    let mut host = vec![0u8; bytes as usize];
    host.fill(1); // touched: the copy measures moving bytes, not first-touch page faults
    let memcpy = |host: &mut Vec<u8>| {
        let mut at = 0;
        for (_, view) in file.tensors() {
            host[at..at + view.bytes().len()].copy_from_slice(view.bytes());
            at += view.bytes().len();
        }
        std::hint::black_box(&host);
    };
    let copy = || -> Result<Vec<Buffer>, Error> {
        let buffers = file
            .tensors()
            .map(|(_, view)| client.upload_tensor_view(&view, Placement::Default).map_err(client_error))
            .collect::<Result<Vec<_>, Error>>()?;
        await_all(&buffers)?;
        Ok(buffers)
    };
    let overlapped_copy = || -> Result<Vec<Buffer>, Error> {
        let mut buffers = Vec::with_capacity(shared.len());
        for ((_, view), bytes) in file.tensors().zip(&shared) {
            let source = HostSource::owned(HostData::Shared(bytes.clone()), view.dtype(), view.dims());
            let buffer = client.upload_with(source, &UploadOptions::new())?;
            buffers.push(buffer);
        }
        await_all(&buffers)?;
        Ok(buffers)
    };
    let upload = |file: &SafeTensors| -> Result<Vec<Buffer>, Error> {
        let buffers = client.upload_safetensors(file, Placement::Default, |_| ()).map_err(client_error)?;
        Ok(buffers.into_iter().map(|(_, b)| b).collect())
    };
    let open_and_upload = || -> Result<Vec<Buffer>, Error> { upload(&SafeTensors::open(path).map_err(client_error)?) };
    let mut runs: [Vec<f64>; 5] = Default::default();
    for round in 0..=iters {
        let t = Instant::now();
        memcpy(&mut host);
        let memcpy_s = t.elapsed().as_secs_f64();
        // Each variant's buffers are dropped outside its timing.
        let t = Instant::now();
        let kept = copy()?;
        let copy_s = t.elapsed().as_secs_f64();
        drop(kept);
        // Sub-byte tensors need unpacking: HostData hands the plugin the file's bytes as they
        // are, which is right only for whole-byte types.
        let overlapped_s = if packed {
            f64::NAN
        } else {
            let t = Instant::now();
            let kept = overlapped_copy()?;
            let s = t.elapsed().as_secs_f64();
            drop(kept);
            s
        };
        let t = Instant::now();
        let kept = upload(&file)?;
        let upload_s = t.elapsed().as_secs_f64();
        drop(kept);
        let t = Instant::now();
        let kept = open_and_upload()?;
        let open_and_upload_s = t.elapsed().as_secs_f64();
        drop(kept);
        if round > 0 {
            for (runs, s) in runs.iter_mut().zip([memcpy_s, copy_s, overlapped_s, upload_s, open_and_upload_s]) {
                runs.push(s);
            }
        }
    }
    let [memcpy_runs, copy_runs, overlapped_runs, upload_runs, open_and_upload_runs] = runs;
    let memcpy = Runs(memcpy_runs).json(bytes);
    let mut report = json!({
        "benchmark": "h2d-params",
        "file": path,
        "tensors": names.len(),
        "bytes": bytes,
        "aligned_tensors": aligned.iter().filter(|a| **a).count(),
        "aligned_bytes": aligned_bytes,
        "iters": iters,
        "memcpy": memcpy,
        "copy": Runs(copy_runs).json(bytes),
        "upload_safetensors": Runs(upload_runs).json(bytes),
        "open_and_upload": Runs(open_and_upload_runs).json(bytes),
    });
    if !packed {
        report["overlapped_copy"] = Runs(overlapped_runs).json(bytes);
    }
    // Each variant's speed as a fraction of memcpy's (medians): 1.0 is memory speed.
    for variant in ["copy", "overlapped_copy", "upload_safetensors", "open_and_upload"] {
        if let (Some(v), Some(m)) = (report[variant]["gbps"].as_f64(), report["memcpy"]["gbps"].as_f64()) {
            report[variant]["over_memcpy"] = json!(if m > 0.0 { v / m } else { 0.0 });
        }
    }
    Ok(report)
}

/// Prints a [`params_bench`] report as text.
pub fn print_params_report(report: &Json) -> Result<(), crate::out::StdoutError> {
    outln!(
        "h2d --params {} on {} (PJRT {}): {} tensors, {:.1} MB ({} tensors, {:.1} MB 64-byte aligned)",
        report["file"].as_str().unwrap_or("?"),
        report["plugin"].as_str().unwrap_or("?"),
        report["api_version"].as_str().unwrap_or("?"),
        report["tensors"],
        report["bytes"].as_f64().unwrap_or(0.0) / 1e6,
        report["aligned_tensors"],
        report["aligned_bytes"].as_f64().unwrap_or(0.0) / 1e6,
    )?;
    for variant in ["memcpy", "copy", "overlapped_copy", "upload_safetensors", "open_and_upload"] {
        let v = &report[variant];
        if v.is_null() {
            continue;
        }
        let ratio = v["over_memcpy"].as_f64().map(|r| format!("  {r:.2}x memcpy")).unwrap_or_default();
        outln!(
            "  {variant:<19} median {:>9.2} ms  min {:>9.2} ms  {:>8.2} GB/s{ratio}",
            v["median_ms"].as_f64().unwrap_or(0.0),
            v["min_ms"].as_f64().unwrap_or(0.0),
            v["gbps"].as_f64().unwrap_or(0.0),
        )?;
    }
    if report["aligned_tensors"].as_u64().unwrap_or(0) > 0 {
        outln!(
            "  (upload_safetensors reads the {} aligned tensors in place from the bytes read at open: its \
             time is that of the calls, no bytes move; open_and_upload adds reading the file)",
            report["aligned_tensors"]
        )?;
    }
    Ok(())
}
