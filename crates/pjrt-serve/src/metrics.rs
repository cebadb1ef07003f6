//! Prometheus metrics, kept under one short lock and written in the text exposition format on
//! `/metrics`: requests and failures, request and queue latency histograms, batch sizes and
//! compiled executables, per model; beside them Triton's (`nv_inference_*`, per model and
//! version), from the statistics that Triton's statistics extension answers, recorded in the
//! same call.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::Duration;

use crate::error::ServeError;
use crate::statistics::{Execution, FailureReason, VersionStatistics};

/// Upper bounds of the latency buckets, in seconds.
const LATENCY_BUCKETS: [f64; 14] =
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];
/// Upper bounds of the batch-size buckets.
const BATCH_BUCKETS: [f64; 8] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0];

#[derive(Default, Clone)]
struct Histogram {
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    fn observe(&mut self, bounds: &[f64], value: f64) {
        if self.counts.is_empty() {
            self.counts = vec![0; bounds.len()];
        }
        for (c, &b) in self.counts.iter_mut().zip(bounds) {
            if value <= b {
                *c += 1;
            }
        }
        self.sum += value;
        self.count += 1;
    }

    fn write(&self, out: &mut String, name: &str, model: &str, bounds: &[f64]) {
        for (i, &b) in bounds.iter().enumerate() {
            let c = self.counts.get(i).copied().unwrap_or(0);
            let _ = writeln!(out, "{name}_bucket{{model=\"{model}\",le=\"{b}\"}} {c}");
        }
        let _ = writeln!(out, "{name}_bucket{{model=\"{model}\",le=\"+Inf\"}} {}", self.count);
        let _ = writeln!(out, "{name}_sum{{model=\"{model}\"}} {}", self.sum);
        let _ = writeln!(out, "{name}_count{{model=\"{model}\"}} {}", self.count);
    }
}

#[derive(Default, Clone)]
struct ModelMetrics {
    success: u64,
    failure: u64,
    rejected: u64,
    /// Executions per replica (device index).
    executions: BTreeMap<usize, u64>,
    /// Input signatures compiled for requests.
    compiles: u64,
    /// Warm-up executions (at load, before the model was ready), over its loads.
    warmup_executions: u64,
    /// Their time in all.
    warmup_seconds: f64,
    request_seconds: Histogram,
    queue_seconds: Histogram,
    batch_size: Histogram,
    /// Triton's statistics, per version.
    versions: BTreeMap<String, VersionStatistics>,
}

/// A histogram's name, help, field and buckets.
type HistogramRow = (&'static str, &'static str, fn(&ModelMetrics) -> &Histogram, &'static [f64]);

/// The server's metrics.
#[derive(Default)]
pub struct Metrics {
    models: Mutex<BTreeMap<String, ModelMetrics>>,
}

/// Label values are escaped as the exposition format says.
fn label(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

impl Metrics {
    fn with(&self, model: &str, f: impl FnOnce(&mut ModelMetrics)) {
        let mut models = self.models.lock().unwrap_or_else(|e| e.into_inner());
        f(models.entry(model.to_string()).or_default());
    }

    /// A request that ran: its outcome, its time in the queue and in all.
    pub fn request(&self, model: &str, ok: bool, queue_seconds: f64, total_seconds: f64) {
        self.with(model, |m| {
            if ok {
                m.success += 1;
            } else {
                m.failure += 1;
            }
            m.queue_seconds.observe(&LATENCY_BUCKETS, queue_seconds);
            m.request_seconds.observe(&LATENCY_BUCKETS, total_seconds);
        });
    }

    /// A request refused at once (queue full, waited too long).
    pub fn rejected(&self, model: &str) {
        self.with(model, |m| m.rejected += 1);
    }

    /// An input signature compiled for a request (on every replica).
    pub fn compiled(&self, model: &str) {
        self.with(model, |m| m.compiles += 1);
    }

    /// A model's warm-up at load: `executions` executions (one per compiled input signature
    /// and replica) in `seconds`. Counted apart from the requests' executions (and from
    /// Triton's statistics, which count what clients asked for).
    pub fn warmed(&self, model: &str, executions: usize, seconds: f64) {
        self.with(model, |m| {
            m.warmup_executions += executions as u64;
            m.warmup_seconds += seconds;
        });
    }

    /// One execution of `requests` requests on replica (device) `replica`.
    pub fn execution(&self, model: &str, requests: usize, replica: usize) {
        self.with(model, |m| {
            m.batch_size.observe(&BATCH_BUCKETS, requests as f64);
            *m.executions.entry(replica).or_default() += 1;
        });
    }

    /// An execution of version `version` of `model` that succeeded, and the requests it
    /// answered: ours ([`Metrics::execution`], [`Metrics::request`] for each) and Triton's
    /// statistics, in one call.
    pub(crate) fn executed(&self, model: &str, version: &str, execution: &Execution<'_>) {
        self.with(model, |m| {
            m.batch_size.observe(&BATCH_BUCKETS, execution.answered.len() as f64);
            *m.executions.entry(execution.replica).or_default() += 1;
            for request in execution.answered {
                m.success += 1;
                m.queue_seconds.observe(&LATENCY_BUCKETS, request.queue.as_secs_f64());
                m.request_seconds.observe(&LATENCY_BUCKETS, request.total.as_secs_f64());
            }
            m.versions.entry(version.to_string()).or_default().executed(execution);
        });
    }

    /// A request to version `version` of `model` that failed with `error` after `total` from
    /// its arrival: a rejection (queue full, waited too long) or a failure, and Triton's `fail`.
    pub(crate) fn failed(&self, model: &str, version: &str, error: &ServeError, total: Duration) {
        let reason = FailureReason::of(error);
        self.with(model, |m| {
            if reason == FailureReason::Rejected {
                m.rejected += 1;
            } else {
                m.failure += 1;
                m.queue_seconds.observe(&LATENCY_BUCKETS, 0.0);
                m.request_seconds.observe(&LATENCY_BUCKETS, total.as_secs_f64());
            }
            m.versions.entry(version.to_string()).or_default().failed(reason, total);
        });
    }

    /// Triton's statistics of every model version that has any, by (model, version).
    pub(crate) fn statistics(&self) -> BTreeMap<(String, String), VersionStatistics> {
        let models = self.models.lock().unwrap_or_else(|e| e.into_inner());
        models
            .iter()
            .flat_map(|(name, m)| m.versions.iter().map(|(v, s)| ((name.clone(), v.clone()), s.clone())))
            .collect()
    }

    /// The text exposition format, with each model's compiled executables as given.
    ///
    /// ```
    /// let metrics = pjrt_serve::metrics::Metrics::default();
    /// metrics.request("mlp", true, 0.001, 0.004);
    /// metrics.execution("mlp", 1, 0);
    /// let text = metrics.render(&[("mlp".to_string(), 1)]);
    /// assert!(text.contains("pjrt_serve_requests_total{model=\"mlp\",outcome=\"success\"} 1"), "{text}");
    /// assert!(text.contains("pjrt_serve_executables{model=\"mlp\"} 1"), "{text}");
    /// ```
    pub fn render(&self, executables: &[(String, usize)]) -> String {
        let mut out = self.render_ours(executables);
        write_triton_metrics(&mut out, &self.statistics(), &[]);
        out
    }

    /// The text exposition format for the models served: ours and Triton's metrics, and
    /// Triton's of every model served even before it runs (its pending requests among them).
    pub(crate) fn render_loaded(&self, loaded: &[Loaded]) -> String {
        let executables: Vec<(String, usize)> = loaded.iter().map(|l| (l.name.clone(), l.executables)).collect();
        let mut out = self.render_ours(&executables);
        write_triton_metrics(&mut out, &self.statistics(), loaded);
        out
    }

    fn render_ours(&self, executables: &[(String, usize)]) -> String {
        let models = self.models.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut out = String::new();
        out.push_str("# HELP pjrt_serve_requests_total Inference requests by outcome.\n");
        out.push_str("# TYPE pjrt_serve_requests_total counter\n");
        for (name, m) in &models {
            let n = label(name);
            for (outcome, count) in [("success", m.success), ("failure", m.failure), ("rejected", m.rejected)] {
                let _ = writeln!(out, "pjrt_serve_requests_total{{model=\"{n}\",outcome=\"{outcome}\"}} {count}");
            }
        }
        let histograms: [HistogramRow; 3] = [
            (
                "pjrt_serve_request_duration_seconds",
                "Time from a request's arrival to its answer.",
                |m| &m.request_seconds,
                &LATENCY_BUCKETS,
            ),
            (
                "pjrt_serve_queue_duration_seconds",
                "Time a request waited for the device.",
                |m| &m.queue_seconds,
                &LATENCY_BUCKETS,
            ),
            ("pjrt_serve_batch_size", "Requests per execution.", |m| &m.batch_size, &BATCH_BUCKETS),
        ];
        for (name, help, get, bounds) in histograms {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
            for (model, m) in &models {
                get(m).write(&mut out, name, &label(model), bounds);
            }
        }
        out.push_str("# HELP pjrt_serve_executions_total Executions per device (replica) the model is served on.\n");
        out.push_str("# TYPE pjrt_serve_executions_total counter\n");
        for (model, m) in &models {
            for (replica, count) in &m.executions {
                let _ = writeln!(
                    out,
                    "pjrt_serve_executions_total{{model=\"{}\",device=\"{replica}\"}} {count}",
                    label(model)
                );
            }
        }
        out.push_str(
            "# HELP pjrt_serve_compiles_total Input signatures compiled for requests (new shapes of a symbolic model).\n",
        );
        out.push_str("# TYPE pjrt_serve_compiles_total counter\n");
        for (model, m) in &models {
            let _ = writeln!(out, "pjrt_serve_compiles_total{{model=\"{}\"}} {}", label(model), m.compiles);
        }
        out.push_str(
            "# HELP pjrt_serve_warmup_executions_total Warm-up executions at load (one per compiled input signature \
             and device), before the model was ready.\n",
        );
        out.push_str("# TYPE pjrt_serve_warmup_executions_total counter\n");
        for (model, m) in &models {
            let _ = writeln!(
                out,
                "pjrt_serve_warmup_executions_total{{model=\"{}\"}} {}",
                label(model),
                m.warmup_executions
            );
        }
        out.push_str("# HELP pjrt_serve_warmup_seconds_total Time the warm-ups at load took.\n");
        out.push_str("# TYPE pjrt_serve_warmup_seconds_total counter\n");
        for (model, m) in &models {
            let _ = writeln!(out, "pjrt_serve_warmup_seconds_total{{model=\"{}\"}} {}", label(model), m.warmup_seconds);
        }
        out.push_str("# HELP pjrt_serve_executables Executables compiled for a model (one per input signature).\n");
        out.push_str("# TYPE pjrt_serve_executables gauge\n");
        for (model, count) in executables {
            let _ = writeln!(out, "pjrt_serve_executables{{model=\"{}\"}} {count}", label(model));
        }
        out
    }
}

/// A model served, at a scrape: its gauges.
pub(crate) struct Loaded {
    /// The model.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Its executables compiled.
    pub executables: usize,
    /// Its requests waiting or running (its queue's places taken).
    pub pending: usize,
}

/// Writes Triton's metrics (`nv_inference_*`, labels `model` and `version`) of `versions`
/// (every model version with statistics, and every one served: zero until it runs) and the
/// pending-request gauge of the `loaded` ones.
fn write_triton_metrics(out: &mut String, versions: &BTreeMap<(String, String), VersionStatistics>, loaded: &[Loaded]) {
    let mut all = versions.clone();
    for l in loaded {
        all.entry((l.name.clone(), l.version.clone())).or_default();
    }
    type Counter = (&'static str, &'static str, fn(&VersionStatistics) -> u64);
    let counters: [Counter; 8] = [
        ("nv_inference_request_success", "Number of successful inference requests, all batch sizes", |s| {
            s.success.count
        }),
        ("nv_inference_count", "Number of inferences performed (does not include cached requests)", |s| {
            s.inference_count
        }),
        ("nv_inference_exec_count", "Number of model executions performed (does not include cached requests)", |s| {
            s.execution_count
        }),
        (
            "nv_inference_request_duration_us",
            "Cumulative inference request duration in microseconds (includes cached requests)",
            |s| s.success.ns / 1000,
        ),
        (
            "nv_inference_queue_duration_us",
            "Cumulative inference queuing duration in microseconds (includes cached requests)",
            |s| s.queue.ns / 1000,
        ),
        (
            "nv_inference_compute_input_duration_us",
            "Cumulative compute input duration in microseconds (does not include cached requests)",
            |s| s.compute_input.ns / 1000,
        ),
        (
            "nv_inference_compute_infer_duration_us",
            "Cumulative compute inference duration in microseconds (does not include cached requests)",
            |s| s.compute_infer.ns / 1000,
        ),
        (
            "nv_inference_compute_output_duration_us",
            "Cumulative inference compute output duration in microseconds (does not include cached requests)",
            |s| s.compute_output.ns / 1000,
        ),
    ];
    for (name, help, get) in counters {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
        for ((model, version), s) in &all {
            let _ = writeln!(out, "{name}{{model=\"{}\",version=\"{}\"}} {}", label(model), label(version), get(s));
        }
    }
    let name = "nv_inference_request_failure";
    let _ = writeln!(out, "# HELP {name} Number of failed inference requests, all batch sizes\n# TYPE {name} counter");
    for ((model, version), s) in &all {
        for (reason, count) in FailureReason::LABELS.iter().zip(s.failures) {
            let _ = writeln!(
                out,
                "{name}{{model=\"{}\",reason=\"{reason}\",version=\"{}\"}} {count}",
                label(model),
                label(version)
            );
        }
    }
    let name = "nv_inference_pending_request_count";
    let _ = writeln!(
        out,
        "# HELP {name} Requests waiting or running per model (its queue's places taken).\n# TYPE {name} gauge"
    );
    for l in loaded {
        let _ = writeln!(out, "{name}{{model=\"{}\",version=\"{}\"}} {}", label(&l.name), label(&l.version), l.pending);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::statistics::{Answered, Phases};

    #[test]
    fn triton_metrics_count_requests_rows_executions_and_microseconds_per_model_version() {
        let metrics = Metrics::default();
        let phases =
            Phases { input: Duration::from_micros(10), infer: Duration::from_micros(100), ..Phases::default() };
        let answered = [
            Answered { inferences: 2, queue: Duration::from_micros(5), total: Duration::from_micros(200) },
            Answered { inferences: 1, queue: Duration::from_micros(7), total: Duration::from_micros(300) },
        ];
        metrics.executed("m", "1", &Execution { replica: 0, batch_size: 3, phases, answered: &answered });
        metrics.failed("m", "1", &ServeError::Unavailable("full".into()), Duration::from_micros(1));
        let loaded = [
            Loaded { name: "m".into(), version: "1".into(), executables: 1, pending: 2 },
            Loaded { name: "idle".into(), version: "3".into(), executables: 0, pending: 0 },
        ];
        let text = metrics.render_loaded(&loaded);
        for line in [
            "nv_inference_request_success{model=\"m\",version=\"1\"} 2",
            "nv_inference_count{model=\"m\",version=\"1\"} 3",
            "nv_inference_exec_count{model=\"m\",version=\"1\"} 1",
            "nv_inference_request_duration_us{model=\"m\",version=\"1\"} 500",
            "nv_inference_queue_duration_us{model=\"m\",version=\"1\"} 12",
            "nv_inference_compute_infer_duration_us{model=\"m\",version=\"1\"} 200",
            "nv_inference_request_failure{model=\"m\",reason=\"REJECTED\",version=\"1\"} 1",
            "nv_inference_pending_request_count{model=\"m\",version=\"1\"} 2",
            "nv_inference_request_success{model=\"idle\",version=\"3\"} 0",
            "pjrt_serve_requests_total{model=\"m\",outcome=\"success\"} 2",
            "pjrt_serve_requests_total{model=\"m\",outcome=\"rejected\"} 1",
        ] {
            assert!(text.lines().any(|l| l == line), "no {line} in {text}");
        }
    }
}
