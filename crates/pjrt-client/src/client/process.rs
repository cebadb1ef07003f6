//! Client calls for distributed jobs: the state of every process of a job
//! (`PJRT_Client_UpdateGlobalProcessInfo`, 0.73).

use crate::call::pjrt_call;
use crate::client::Client;
use crate::error::{ErrorCode, Result};
use crate::sys::{self, Args};

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
