//! Triton's system shared memory calls over gRPC: `SystemSharedMemoryRegister`,
//! `SystemSharedMemoryUnregister`, `SystemSharedMemoryStatus` (their messages, and the
//! handlers over the server's registry).

use std::collections::HashMap;
use std::sync::Arc;

use tonic::{Request, Response, Status};

use crate::state::Shared;

/// `SystemSharedMemoryStatusRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SystemSharedMemoryStatusRequest {
    /// The region; empty: every region.
    #[prost(string, tag = "1")]
    pub name: String,
}

/// `SystemSharedMemoryStatusResponse.RegionStatus`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SystemSharedMemoryRegionStatus {
    /// The region's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// The key of the shared memory object that holds it.
    #[prost(string, tag = "2")]
    pub key: String,
    /// Where it starts in the object, in bytes.
    #[prost(uint64, tag = "3")]
    pub offset: u64,
    /// Its size in bytes.
    #[prost(uint64, tag = "4")]
    pub byte_size: u64,
}

/// `SystemSharedMemoryStatusResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SystemSharedMemoryStatusResponse {
    /// Each region's status, by name.
    #[prost(map = "string, message", tag = "1")]
    pub regions: HashMap<String, SystemSharedMemoryRegionStatus>,
}

/// `SystemSharedMemoryRegisterRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SystemSharedMemoryRegisterRequest {
    /// The name to register the region under.
    #[prost(string, tag = "1")]
    pub name: String,
    /// The key of the shared memory object that holds it (`/NAME`, as `shm_open` takes it).
    #[prost(string, tag = "2")]
    pub key: String,
    /// Where it starts in the object, in bytes.
    #[prost(uint64, tag = "3")]
    pub offset: u64,
    /// Its size in bytes.
    #[prost(uint64, tag = "4")]
    pub byte_size: u64,
}

/// `SystemSharedMemoryUnregisterRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SystemSharedMemoryUnregisterRequest {
    /// The region; empty: every region.
    #[prost(string, tag = "1")]
    pub name: String,
}

/// `SystemSharedMemoryRegisterResponse` and `SystemSharedMemoryUnregisterResponse` (no fields).
#[derive(Clone, PartialEq, prost::Message)]
pub struct SystemSharedMemoryResponse {}

pub(crate) async fn status(
    shared: Arc<Shared>,
    request: Request<SystemSharedMemoryStatusRequest>,
) -> Result<Response<SystemSharedMemoryStatusResponse>, Status> {
    let regions = shared.shared_memory.status(&request.into_inner().name)?;
    let regions = regions
        .into_iter()
        .map(|r| {
            let status = SystemSharedMemoryRegionStatus {
                name: r.name.clone(),
                key: r.key,
                offset: r.offset,
                byte_size: r.byte_size,
            };
            (r.name, status)
        })
        .collect();
    Ok(Response::new(SystemSharedMemoryStatusResponse { regions }))
}

pub(crate) async fn register(
    shared: Arc<Shared>,
    request: Request<SystemSharedMemoryRegisterRequest>,
) -> Result<Response<SystemSharedMemoryResponse>, Status> {
    let r = request.into_inner();
    shared.shared_memory.register(&r.name, &r.key, r.offset, r.byte_size)?;
    Ok(Response::new(SystemSharedMemoryResponse {}))
}

pub(crate) async fn unregister(
    shared: Arc<Shared>,
    request: Request<SystemSharedMemoryUnregisterRequest>,
) -> Result<Response<SystemSharedMemoryResponse>, Status> {
    shared.shared_memory.unregister(&request.into_inner().name)?;
    Ok(Response::new(SystemSharedMemoryResponse {}))
}
