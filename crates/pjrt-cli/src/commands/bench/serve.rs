//! `pjrt bench serve`: a bounded load generator for Open Inference Protocol servers. At each
//! concurrency level, that many clients (threads, one keep-alive connection each) send the
//! same binary-tensor inference request back to back until REQUESTS have been answered; the
//! report gives throughput and latency quantiles per level. Any server that speaks the
//! protocol and Triton's binary tensor data extension can be measured the same way.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use pjrt_formats::npy::NpyArray;
use serde_json::{json, Value as Json};

use super::samples::Samples;
use crate::cli::BenchServeArgs;
use crate::error::Error;
use crate::ui::invalid;

fn agent() -> ureq::Agent {
    ureq::Agent::new_with_config(ureq::Agent::config_builder().http_status_as_error(false).build())
}

/// The request body (JSON header, then the inputs' bytes) and its header's length.
fn request_body(url: &str, model: &str, inputs: &[NpyArray]) -> Result<(Vec<u8>, usize), Error> {
    let mut response = agent()
        .get(format!("{url}/v2/models/{model}"))
        .call()
        .map_err(|e| invalid(format!("{url}: the model's metadata: {e}")))?;
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().map_err(|e| invalid(format!("{url}: {e}")))?;
    if status != 200 {
        return Err(invalid(format!("{url}/v2/models/{model}: {status} {text}")));
    }
    let metadata: Json = serde_json::from_str(&text).map_err(|e| invalid(format!("the model's metadata: {e}")))?;
    let specs = metadata["inputs"].as_array().cloned().unwrap_or_default();
    if specs.len() != inputs.len() {
        return Err(invalid(format!("model {model} takes {} inputs, {} were given", specs.len(), inputs.len())));
    }
    let tensors: Vec<Json> = specs
        .iter()
        .zip(inputs)
        .map(|(spec, a)| {
            json!({ "name": spec["name"], "datatype": spec["datatype"], "shape": a.dims,
                    "parameters": { "binary_data_size": a.data.len() } })
        })
        .collect();
    let header = json!({ "inputs": tensors, "parameters": { "binary_data_output": true } }).to_string();
    let mut body = header.clone().into_bytes();
    for a in inputs {
        body.extend_from_slice(&a.data);
    }
    Ok((body, header.len()))
}

/// One level: `concurrency` clients until `requests` answers; the latencies and the wall time.
fn level(
    url: &str,
    model: &str,
    body: &[u8],
    header_length: usize,
    concurrency: usize,
    requests: usize,
) -> Result<(Vec<u64>, f64), Error> {
    let target = format!("{url}/v2/models/{model}/infer");
    let issued = AtomicUsize::new(0);
    let latencies = Mutex::new(Vec::with_capacity(requests));
    let failure = Mutex::new(None::<String>);
    let length = header_length.to_string();
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..concurrency {
            scope.spawn(|| {
                let agent = agent();
                let send = || -> Result<(), String> {
                    let mut response = agent
                        .post(&target)
                        .header("Inference-Header-Content-Length", &length)
                        .send(body)
                        .map_err(|e| e.to_string())?;
                    let status = response.status().as_u16();
                    let answer =
                        response.body_mut().with_config().limit(1 << 30).read_to_vec().map_err(|e| e.to_string())?;
                    if status != 200 {
                        return Err(format!("{status}: {}", String::from_utf8_lossy(&answer)));
                    }
                    Ok(())
                };
                // A warm-up request per client (connection set up, executable compiled).
                if let Err(e) = send() {
                    *failure.lock().unwrap() = Some(e);
                    return;
                }
                let mut mine = Vec::new();
                while issued.fetch_add(1, Ordering::Relaxed) < requests {
                    let t = Instant::now();
                    if let Err(e) = send() {
                        *failure.lock().unwrap() = Some(e);
                        return;
                    }
                    mine.push(t.elapsed().as_nanos() as u64);
                }
                latencies.lock().unwrap().extend(mine);
            });
        }
    });
    let wall = started.elapsed().as_secs_f64();
    if let Some(e) = failure.into_inner().unwrap() {
        return Err(invalid(format!("{target}: {e}")));
    }
    Ok((latencies.into_inner().unwrap(), wall))
}

/// Runs every level: the report and one latency series per level.
pub fn run(args: &BenchServeArgs) -> Result<(Json, Vec<Samples>), Error> {
    let url = args.url.trim_end_matches('/');
    let mut inputs = Vec::with_capacity(args.inputs.len());
    for path in &args.inputs {
        inputs.push(NpyArray::read(path).map_err(pjrt_formats::Error::from)?);
    }
    let (body, header_length) = request_body(url, &args.model, &inputs)?;
    let mut levels = Vec::new();
    let mut series = Vec::new();
    for &concurrency in &args.concurrency {
        if concurrency == 0 {
            return Err(invalid("a concurrency level is 1 or more"));
        }
        let (ns, wall) = level(url, &args.model, &body, header_length, concurrency, args.requests)?;
        let samples = Samples::new(format!("{} × {concurrency}", args.label), ns);
        let stats = samples.stats();
        levels.push(json!({
            "concurrency": concurrency,
            "requests": args.requests,
            "throughput_rps": args.requests as f64 / wall,
            "p50_ms": stats.median_us / 1e3,
            "p99_ms": stats.p99_us / 1e3,
        }));
        series.push(samples);
    }
    let report = json!({
        "benchmark": "serve",
        "label": args.label,
        "url": url,
        "model": args.model,
        "request_bytes": body.len(),
        "levels": levels,
    });
    Ok((report, series))
}
