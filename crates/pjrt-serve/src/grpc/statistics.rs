//! `ModelStatistics`: Triton's statistics extension over gRPC, its messages (with the field
//! numbers of Triton's `grpc_service.proto`) and its call.

use std::collections::HashMap;
use std::sync::Arc;

use tonic::{Request, Response, Status};

use crate::dispatch;
use crate::state::Shared;
use crate::statistics::Tally;

/// `ModelStatisticsRequest`: a model and version, or every one.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelStatisticsRequest {
    /// The model; empty: every model.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its version; empty: every version.
    #[prost(string, tag = "2")]
    pub version: String,
}

/// `StatisticDuration`: a count and the durations it adds up.
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct StatisticDuration {
    /// How many times.
    #[prost(uint64, tag = "1")]
    pub count: u64,
    /// Their total duration, in nanoseconds.
    #[prost(uint64, tag = "2")]
    pub ns: u64,
}

/// `InferStatistics`: a model version's requests.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InferStatistics {
    /// Successful requests, from arrival to answer.
    #[prost(message, optional, tag = "1")]
    pub success: Option<StatisticDuration>,
    /// Failed requests, from arrival to answer.
    #[prost(message, optional, tag = "2")]
    pub fail: Option<StatisticDuration>,
    /// Successful requests' waits for the device.
    #[prost(message, optional, tag = "3")]
    pub queue: Option<StatisticDuration>,
    /// Their inputs to the device (each request of a batch counts the batch's).
    #[prost(message, optional, tag = "4")]
    pub compute_input: Option<StatisticDuration>,
    /// Their executions (each request of a batch counts the batch's).
    #[prost(message, optional, tag = "5")]
    pub compute_infer: Option<StatisticDuration>,
    /// Their outputs from the device (each request of a batch counts the batch's).
    #[prost(message, optional, tag = "6")]
    pub compute_output: Option<StatisticDuration>,
    /// Response cache hits (none: this server has no response cache).
    #[prost(message, optional, tag = "7")]
    pub cache_hit: Option<StatisticDuration>,
    /// Response cache misses (none).
    #[prost(message, optional, tag = "8")]
    pub cache_miss: Option<StatisticDuration>,
}

/// `InferResponseStatistics`: one response of a decoupled model (this server answers each
/// request once: none are given).
#[derive(Clone, PartialEq, prost::Message)]
pub struct InferResponseStatistics {
    /// Computing the response.
    #[prost(message, optional, tag = "1")]
    pub compute_infer: Option<StatisticDuration>,
    /// Its outputs.
    #[prost(message, optional, tag = "2")]
    pub compute_output: Option<StatisticDuration>,
    /// Successful responses.
    #[prost(message, optional, tag = "3")]
    pub success: Option<StatisticDuration>,
    /// Failed responses.
    #[prost(message, optional, tag = "4")]
    pub fail: Option<StatisticDuration>,
    /// Empty responses.
    #[prost(message, optional, tag = "5")]
    pub empty_response: Option<StatisticDuration>,
    /// Cancelled responses.
    #[prost(message, optional, tag = "6")]
    pub cancel: Option<StatisticDuration>,
}

/// `InferBatchStatistics`: the executions of one batch size.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InferBatchStatistics {
    /// The batch size: a batched model's rows in the execution, else 1.
    #[prost(uint64, tag = "1")]
    pub batch_size: u64,
    /// Their inputs to the device.
    #[prost(message, optional, tag = "2")]
    pub compute_input: Option<StatisticDuration>,
    /// Their executions.
    #[prost(message, optional, tag = "3")]
    pub compute_infer: Option<StatisticDuration>,
    /// Their outputs from the device.
    #[prost(message, optional, tag = "4")]
    pub compute_output: Option<StatisticDuration>,
}

/// `MemoryUsage`: memory a model took at load (this server reports none).
#[derive(Clone, PartialEq, prost::Message)]
pub struct MemoryUsage {
    /// `CPU`, `CPU_PINNED` or `GPU`.
    #[prost(string, tag = "1")]
    pub r#type: String,
    /// The device of that memory.
    #[prost(int64, tag = "2")]
    pub id: i64,
    /// How many bytes.
    #[prost(uint64, tag = "3")]
    pub byte_size: u64,
}

/// `ModelStatistics`: what one model version did since the server started.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelStatistics {
    /// The model.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its version.
    #[prost(string, tag = "2")]
    pub version: String,
    /// Its last execution's end, in milliseconds since the epoch (0: none yet).
    #[prost(uint64, tag = "3")]
    pub last_inference: u64,
    /// Inferences: a batched model's rows, one per request otherwise.
    #[prost(uint64, tag = "4")]
    pub inference_count: u64,
    /// Executions.
    #[prost(uint64, tag = "5")]
    pub execution_count: u64,
    /// Its requests.
    #[prost(message, optional, tag = "6")]
    pub inference_stats: Option<InferStatistics>,
    /// Its executions by batch size.
    #[prost(message, repeated, tag = "7")]
    pub batch_stats: Vec<InferBatchStatistics>,
    /// Memory it took at load (none reported).
    #[prost(message, repeated, tag = "8")]
    pub memory_usage: Vec<MemoryUsage>,
    /// A decoupled model's responses (none).
    #[prost(map = "string, message", tag = "9")]
    pub response_stats: HashMap<String, InferResponseStatistics>,
}

/// `ModelStatisticsResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelStatisticsResponse {
    /// Each model version asked for.
    #[prost(message, repeated, tag = "1")]
    pub model_stats: Vec<ModelStatistics>,
}

fn duration(tally: Tally) -> Option<StatisticDuration> {
    Some(StatisticDuration { count: tally.count, ns: tally.ns })
}

impl From<dispatch::ModelStatistics> for ModelStatistics {
    fn from(m: dispatch::ModelStatistics) -> ModelStatistics {
        let s = m.stats;
        let batch_stats = s
            .batches
            .iter()
            .map(|(&batch_size, b)| InferBatchStatistics {
                batch_size,
                compute_input: duration(b.compute_input),
                compute_infer: duration(b.compute_infer),
                compute_output: duration(b.compute_output),
            })
            .collect();
        ModelStatistics {
            name: m.name,
            version: m.version,
            last_inference: s.last_inference_ms,
            inference_count: s.inference_count,
            execution_count: s.execution_count,
            inference_stats: Some(InferStatistics {
                success: duration(s.success),
                fail: duration(s.fail),
                queue: duration(s.queue),
                compute_input: duration(s.compute_input),
                compute_infer: duration(s.compute_infer),
                compute_output: duration(s.compute_output),
                cache_hit: duration(Tally::default()),
                cache_miss: duration(Tally::default()),
            }),
            batch_stats,
            memory_usage: Vec::new(),
            response_stats: HashMap::new(),
        }
    }
}

/// `ModelStatistics`: the statistics of a model version, of every version of a model (an empty
/// version) or of every model (an empty name); `NOT_FOUND` for a model or version with none.
pub(super) async fn model_statistics(
    shared: Arc<Shared>,
    request: Request<ModelStatisticsRequest>,
) -> Result<Response<ModelStatisticsResponse>, Status> {
    let r = request.into_inner();
    let listed = dispatch::statistics(&shared, &r.name, &r.version)?;
    Ok(Response::new(ModelStatisticsResponse { model_stats: listed.into_iter().map(ModelStatistics::from).collect() }))
}
