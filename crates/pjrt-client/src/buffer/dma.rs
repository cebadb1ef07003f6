//! DMA mapping of host memory for direct transfers between host and devices
//! (`PJRT_Client_DmaMap` / `DmaUnmap`, 0.67).

use std::ffi::c_void;
use std::fmt;

use crate::buffer::aligned::AlignedHostBuffer;
use crate::call::pjrt_call;
use crate::call::release::release_if_in_callback;
use crate::client::Client;
use crate::error::{Error, Result};
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
}
