//! Prometheus metrics, kept with atomics and written in the text exposition format on
//! `/metrics`: requests and failures, request and queue latency histograms, batch sizes and
//! compiled executables, per model.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;

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
    request_seconds: Histogram,
    queue_seconds: Histogram,
    batch_size: Histogram,
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

    /// One execution of `requests` requests on replica (device) `replica`.
    pub fn execution(&self, model: &str, requests: usize, replica: usize) {
        self.with(model, |m| {
            m.batch_size.observe(&BATCH_BUCKETS, requests as f64);
            *m.executions.entry(replica).or_default() += 1;
        });
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
        out.push_str("# HELP pjrt_serve_executables Executables compiled for a model (one per input signature).\n");
        out.push_str("# TYPE pjrt_serve_executables gauge\n");
        for (model, count) in executables {
            let _ = writeln!(out, "pjrt_serve_executables{{model=\"{}\"}} {count}", label(model));
        }
        out
    }
}
