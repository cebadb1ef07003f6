//! Client calls few programs need: DMA mapping of host memory (`PJRT_Client_DmaMap` /
//! `DmaUnmap`, 0.67) and the state of every process of a distributed job
//! (`PJRT_Client_UpdateGlobalProcessInfo`, 0.73).

use std::ffi::c_void;
use std::fmt;

use crate::buffer::aligned::AlignedHostBuffer;
use crate::call::pjrt_call;
use crate::call::release::release_if_in_callback;
use crate::client::Client;
use crate::error::{Error, ErrorCode, Result};
use crate::sys::{self, Args};

/// Host memory registered with the plugin for direct (DMA) transfers, made by
/// [`Client::dma_map`]. Holds the memory and the client; unmaps on drop (or with
/// [`DmaMapping::unmap`], which hands the memory back).
pub struct DmaMapping {
    client: Client,
    // `Some` until unmapped.
    memory: Option<AlignedHostBuffer>,
}

impl DmaMapping {
    /// The mapped memory.
    pub fn memory(&self) -> &AlignedHostBuffer {
        self.memory.as_ref().expect("present until unmapped")
    }

    /// The mapped memory, writable (the mapping stays).
    pub fn memory_mut(&mut self) -> &mut AlignedHostBuffer {
        self.memory.as_mut().expect("present until unmapped")
    }

    /// Unmaps (`PJRT_Client_DmaUnmap`) and returns the memory. If the plugin refuses, the
    /// memory may still be mapped: it is leaked rather than freed while a device may use it.
    pub fn unmap(mut self) -> Result<AlignedHostBuffer> {
        let status = self.unmap_in_place();
        match status {
            Ok(()) => Ok(self.memory.take().expect("present until unmapped")),
            Err(e) => {
                // Still mapped: never free memory a device may write into.
                std::mem::forget(self.memory.take());
                Err(e)
            }
        }
    }

    fn unmap_in_place(&mut self) -> Result<()> {
        let Some(memory) = self.memory.as_ref() else { return Ok(()) };
        let mut args = sys::PJRT_Client_DmaUnmap_Args::new();
        args.client = self.client.raw();
        args.data = memory.as_bytes().as_ptr() as *mut c_void;
        pjrt_call!(self.client.api(), PJRT_Client_DmaUnmap, &mut args)
    }
}

impl Drop for DmaMapping {
    fn drop(&mut self) {
        release_if_in_callback!(DmaMapping { client: self.client.clone(), memory: self.memory.take() });
        if self.memory.is_some() && self.unmap_in_place().is_err() {
            // Still mapped: leak rather than free memory the device may use.
            std::mem::forget(self.memory.take());
        }
    }
}

impl fmt::Debug for DmaMapping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DmaMapping").field("bytes", &self.memory.as_ref().map(|m| m.len())).finish()
    }
}

/// The state of one process of a distributed job (`PJRT_ProcessState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProcessState {
    /// Not known.
    Unspecified,
    /// Not started yet.
    Uninitialized,
    /// Lost its connection to the coordination service.
    Disconnected,
    /// Connected and running.
    Connected,
    /// Failed.
    Error,
}

impl ProcessState {
    fn to_raw(self) -> sys::PJRT_ProcessState {
        match self {
            ProcessState::Unspecified => sys::PJRT_ProcessState::kUnspecified,
            ProcessState::Uninitialized => sys::PJRT_ProcessState::kUninitialized,
            ProcessState::Disconnected => sys::PJRT_ProcessState::kDisconnected,
            ProcessState::Connected => sys::PJRT_ProcessState::kConnected,
            ProcessState::Error => sys::PJRT_ProcessState::kError,
        }
    }
}

/// What a client is told about one process by [`Client::update_global_process_info`] (XLA's
/// `CoordinatedTaskStateInfo`: task id, incarnation, state, error).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessInfo {
    /// The process's task id in the job.
    pub task_id: i32,
    /// Changes whenever the process restarts.
    pub incarnation_id: u64,
    /// Its state.
    pub state: ProcessState,
    /// Why it failed, when it did: a status code and a message.
    pub error: Option<(ErrorCode, String)>,
}

impl ProcessInfo {
    /// A process in `state`, without an error.
    pub fn new(task_id: i32, incarnation_id: u64, state: ProcessState) -> ProcessInfo {
        ProcessInfo { task_id, incarnation_id, state, error: None }
    }
}

impl Client {
    /// Registers `memory` for direct transfers between host and devices
    /// (`PJRT_Client_DmaMap`, 0.67). The mapping owns the memory until it is unmapped.
    ///
    /// The CPU plugins answer `UNIMPLEMENTED` ("DmaMap is not supported."); the memory is then
    /// dropped with the error.
    pub fn dma_map(&self, memory: AlignedHostBuffer) -> Result<DmaMapping> {
        if memory.is_empty() {
            return Err(Error::invalid("cannot DMA-map an empty buffer"));
        }
        let mut args = sys::PJRT_Client_DmaMap_Args::new();
        args.client = self.raw();
        args.data = memory.as_bytes().as_ptr() as *mut c_void;
        args.size = memory.len();
        pjrt_call!(self.api(), PJRT_Client_DmaMap, &mut args)?;
        Ok(DmaMapping { client: self.clone(), memory: Some(memory) })
    }

    /// Tells the client the state of every process of the job
    /// (`PJRT_Client_UpdateGlobalProcessInfo`, 0.73), e.g. from a coordination service, so that
    /// it can fail collectives with a dead peer early. The CPU plugins accept it and do nothing
    /// (they log "UpdateGlobalProcessInfo is not supported.").
    pub fn update_global_process_info(&self, infos: &[ProcessInfo]) -> Result<()> {
        let mut raw: Vec<sys::PJRT_ProcessInfo> = infos
            .iter()
            .map(|info| {
                let mut r = sys::PJRT_ProcessInfo::new();
                r.task_id = info.task_id;
                r.incarnation_id = info.incarnation_id;
                r.state = info.state.to_raw();
                if let Some((code, message)) = &info.error {
                    r.error_code = code.to_raw().0;
                    r.error_message = message.as_ptr().cast();
                    r.error_message_size = message.len();
                }
                r
            })
            .collect();
        let mut args = sys::PJRT_Client_UpdateGlobalProcessInfo_Args::new();
        args.client = self.raw();
        // The plugin reads the array (and the messages it points into) during the call only.
        args.process_infos = if raw.is_empty() { std::ptr::null_mut() } else { raw.as_mut_ptr() };
        args.num_process_infos = raw.len();
        pjrt_call!(self.api(), PJRT_Client_UpdateGlobalProcessInfo, &mut args)
    }
}
