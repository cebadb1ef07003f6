//! Triton's statistics, per model and version: what `GET /v2/models[/NAME[/versions/V]]/stats`
//! and gRPC `ModelStatistics` answer (Triton's statistics extension), and the `nv_inference_*`
//! metrics with Triton's names and labels ([`crate::metrics`] writes them). They are recorded
//! with the server's other metrics, in one call per execution (or failed request) under their
//! one lock.
//!
//! As Triton counts (its `infer_stats.cc`): `success`, `queue` and the three `compute_*`
//! durations count each successful request once (so their counts are equal, which
//! perf_analyzer requires), each request of a batch adding the whole batch's compute phases;
//! `inference_count` counts inferences (a batched model's rows, one per request otherwise),
//! `execution_count` executions; `batch_stats` count executions by their batch size (a batched
//! model's rows in the execution, 1 otherwise); `last_inference` is the last execution's end,
//! in milliseconds since the epoch. Failed requests count in `fail` (with their time from
//! arrival), and in `nv_inference_request_failure` by Triton's reasons: `REJECTED` (a full
//! queue, a wait too long), `BACKEND` (the plugin failed the run), `OTHER` (a request that
//! does not fit the model). There is no response cache: `cache_hit` and `cache_miss` are zero.
//!
//! Which models the statistics routes list (`dispatch::statistics`): every model served (its
//! served version, zero until it runs) and every model version that has statistics, served or
//! not any more (they count from the server's start, across reloads of the same version). A
//! name or version in neither is a 404 (gRPC `NOT_FOUND`).

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::error::ServeError;

/// How long one execution spent in each phase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Phases {
    /// Its inputs to the device: the executable found, the request's inputs uploaded.
    pub input: Duration,
    /// The execution.
    pub infer: Duration,
    /// Its outputs from the device: downloaded (and split per request, for a batch).
    pub output: Duration,
}

/// A request an execution answered.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Answered {
    /// The inferences it asked for: its rows for a batched model, else 1.
    pub inferences: u64,
    /// Its wait for the device.
    pub queue: Duration,
    /// Its time from arrival to its answer.
    pub total: Duration,
}

/// An execution that succeeded and the requests it answered.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Execution<'a> {
    /// The replica (device) it ran on.
    pub replica: usize,
    /// Its batch size, as Triton counts: a batched model's rows, else 1.
    pub batch_size: u64,
    /// Its phases.
    pub phases: Phases,
    /// The requests it answered.
    pub answered: &'a [Answered],
}

/// Why a request failed, as Triton's `nv_inference_request_failure` labels it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FailureReason {
    /// Refused by the queue (full) or after waiting too long.
    Rejected,
    /// The plugin (or the server's run of it) failed.
    Backend,
    /// The request did not fit the model, or its body could not be read.
    Other,
}

impl FailureReason {
    /// Triton's reasons, in order of [`VersionStatistics::failures`] (CANCELED: a request whose
    /// client went away leaves the queue uncounted).
    pub(crate) const LABELS: [&'static str; 4] = ["REJECTED", "CANCELED", "BACKEND", "OTHER"];

    /// The reason of `error`.
    pub fn of(error: &ServeError) -> FailureReason {
        match error {
            ServeError::Unavailable(_) => FailureReason::Rejected,
            ServeError::Run(_) | ServeError::Task { .. } | ServeError::Internal(_) => FailureReason::Backend,
            _ => FailureReason::Other,
        }
    }

    fn index(self) -> usize {
        match self {
            FailureReason::Rejected => 0,
            FailureReason::Backend => 2,
            FailureReason::Other => 3,
        }
    }
}

/// A count and the durations it adds up (Triton's `StatisticDuration`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    /// How many.
    pub count: u64,
    /// Their total, in nanoseconds.
    pub ns: u64,
}

impl Tally {
    fn add(&mut self, duration: Duration) {
        self.count += 1;
        self.ns = self.ns.saturating_add(u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX));
    }

    fn json(&self) -> Value {
        json!({ "count": self.count, "ns": self.ns })
    }
}

/// The executions of one batch size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct BatchStatistics {
    /// Their inputs to the device.
    pub compute_input: Tally,
    /// Their executions.
    pub compute_infer: Tally,
    /// Their outputs from the device.
    pub compute_output: Tally,
}

/// What one version of a model did since the server started.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct VersionStatistics {
    /// The last execution's end, in milliseconds since the epoch (0: none yet).
    pub last_inference_ms: u64,
    /// Inferences: a batched model's rows, one per request otherwise.
    pub inference_count: u64,
    /// Executions.
    pub execution_count: u64,
    /// Successful requests, from arrival to answer.
    pub success: Tally,
    /// Failed requests, from arrival to answer.
    pub fail: Tally,
    /// Successful requests' waits for the device.
    pub queue: Tally,
    /// Successful requests' executions' inputs to the device.
    pub compute_input: Tally,
    /// Successful requests' executions.
    pub compute_infer: Tally,
    /// Successful requests' executions' outputs from the device.
    pub compute_output: Tally,
    /// Failed requests by reason ([`FailureReason::LABELS`]).
    pub failures: [u64; 4],
    /// Executions by batch size.
    pub batches: BTreeMap<u64, BatchStatistics>,
}

impl VersionStatistics {
    /// Records an execution that succeeded and the requests it answered.
    pub fn executed(&mut self, execution: &Execution<'_>) {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        self.last_inference_ms = self.last_inference_ms.max(now);
        self.execution_count += 1;
        let phases = execution.phases;
        let batch = self.batches.entry(execution.batch_size).or_default();
        batch.compute_input.add(phases.input);
        batch.compute_infer.add(phases.infer);
        batch.compute_output.add(phases.output);
        for request in execution.answered {
            self.inference_count += request.inferences;
            self.success.add(request.total);
            self.queue.add(request.queue);
            self.compute_input.add(phases.input);
            self.compute_infer.add(phases.infer);
            self.compute_output.add(phases.output);
        }
    }

    /// Records a request that failed after `total` from its arrival.
    pub fn failed(&mut self, reason: FailureReason, total: Duration) {
        self.fail.add(total);
        self.failures[reason.index()] += 1;
    }

    /// Triton's `$model_stat` object.
    pub fn json(&self, name: &str, version: &str) -> Value {
        let zero = Tally::default().json();
        let batches: Vec<Value> = self
            .batches
            .iter()
            .map(|(size, b)| {
                json!({
                    "batch_size": size,
                    "compute_input": b.compute_input.json(),
                    "compute_infer": b.compute_infer.json(),
                    "compute_output": b.compute_output.json(),
                })
            })
            .collect();
        json!({
            "name": name,
            "version": version,
            "last_inference": self.last_inference_ms,
            "inference_count": self.inference_count,
            "execution_count": self.execution_count,
            "inference_stats": {
                "success": self.success.json(),
                "fail": self.fail.json(),
                "queue": self.queue.json(),
                "compute_input": self.compute_input.json(),
                "compute_infer": self.compute_infer.json(),
                "compute_output": self.compute_output.json(),
                "cache_hit": zero,
                "cache_miss": zero,
            },
            "response_stats": {},
            "batch_stats": batches,
            "memory_usage": [],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_counts_each_request_with_the_batchs_phases_and_the_execution_once() {
        let mut stats = VersionStatistics::default();
        let phases = Phases {
            input: Duration::from_micros(10),
            infer: Duration::from_micros(100),
            output: Duration::from_micros(20),
        };
        let answered = [
            Answered { inferences: 2, queue: Duration::from_micros(5), total: Duration::from_micros(200) },
            Answered { inferences: 1, queue: Duration::from_micros(7), total: Duration::from_micros(300) },
        ];
        stats.executed(&Execution { replica: 0, batch_size: 3, phases, answered: &answered });
        stats.failed(FailureReason::of(&ServeError::Unavailable("full".into())), Duration::from_micros(1));
        assert_eq!((stats.inference_count, stats.execution_count), (3, 1));
        assert_eq!(stats.success, Tally { count: 2, ns: 500_000 });
        assert_eq!(stats.queue, Tally { count: 2, ns: 12_000 });
        assert_eq!(stats.compute_infer, Tally { count: 2, ns: 200_000 });
        assert_eq!(stats.batches[&3].compute_infer, Tally { count: 1, ns: 100_000 });
        assert_eq!((stats.fail.count, stats.failures), (1, [1, 0, 0, 0]));
        assert!(stats.last_inference_ms > 0);

        let value = stats.json("m", "1");
        assert_eq!(value["inference_stats"]["compute_output"], json!({ "count": 2, "ns": 40_000 }));
        assert_eq!(value["inference_stats"]["cache_miss"], json!({ "count": 0, "ns": 0 }));
        assert_eq!(value["batch_stats"][0]["batch_size"], 3);
    }
}
