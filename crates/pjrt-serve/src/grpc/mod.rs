//! The Open Inference Protocol over gRPC, as Triton's `inference.GRPCInferenceService` (the
//! service and field numbers `tritonclient.grpc` speaks): server live/ready/metadata, model
//! ready/metadata/config, infer, model statistics (Triton's statistics extension), the
//! repository index, load and unload, and system shared memory's register, unregister and
//! status. Its other calls (streaming inference, CUDA shared memory, trace, log settings)
//! answer UNIMPLEMENTED. Beside it, the standard health service
//! ([`health`], `grpc.health.v1.Health`).
//!
//! The messages ([`messages`]) are declared with prost's derive, from the service's published
//! definition: no code generation, no `.proto` file in the tree. `ModelInfer` is read by hand
//! from its encoded bytes (`wire.rs`), bounded; the service (`service.rs`) routes the calls and
//! turns a `ServeError` into a `Status` through one `From`.

pub mod health;
pub mod messages;
mod service;
mod shared_memory;
mod statistics;
mod wire;

pub(crate) use service::GrpcService;

#[cfg(test)]
mod tests;
