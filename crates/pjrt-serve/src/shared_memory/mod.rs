//! Triton's system shared memory extension: regions of POSIX shared memory objects
//! (`/dev/shm`) that same-host clients register by name, then name in requests for inputs to
//! be read from and outputs written to, instead of sending them through the socket.
//!
//! Safety and bounds: a region's object is opened at registration (a name under `/dev/shm`,
//! no path; not through a symbolic link; a regular file holding the region) and kept open.
//! It is never mapped: inputs are copied out with `pread` and outputs written with `pwrite`
//! at offsets checked against the region, after the object's current size is read (`fstat`),
//! so a region truncated after its registration is an error, and can never raise a SIGBUS in
//! the server (a truncation between the size check and the copy gives a short read, an error,
//! or a write that grows the client's object again, never a fault). An input read from shared
//! memory is taken of the server's budget of bytes in flight like any other; the registry
//! holds at most [`MAX_REGIONS`] regions (one open file each, no memory of the regions' own).
//! Registering and unregistering need [`crate::ServerOptions::shared_memory`] (off by
//! default, as Triton's `--allow-client-shm`) and the bearer token, as model control does.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::error::ServeError;
use crate::protocol::{OutputTensor, RequestedOutput, SharedMemoryRef};

mod region;

use region::Region;

/// The most regions registered at once.
pub(crate) const MAX_REGIONS: usize = 64;

/// A region as the status calls list it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RegionStatus {
    pub name: String,
    pub key: String,
    pub offset: u64,
    pub byte_size: u64,
}

/// The regions registered, by name.
#[derive(Debug)]
pub(crate) struct Registry {
    /// Whether clients may register regions ([`crate::ServerOptions::shared_memory`]).
    allowed: bool,
    regions: Mutex<BTreeMap<String, Arc<Region>>>,
}

impl Registry {
    pub fn new(allowed: bool) -> Registry {
        Registry { allowed, regions: Mutex::new(BTreeMap::new()) }
    }

    fn check_allowed(&self) -> Result<(), ServeError> {
        if self.allowed {
            return Ok(());
        }
        Err(ServeError::Forbidden(
            "system shared memory is off: start the server with --shared-memory to let same-host clients register \
             regions"
                .into(),
        ))
    }

    /// Registers `byte_size` bytes at `offset` of object `key` as region `name`.
    pub fn register(&self, name: &str, key: &str, offset: u64, byte_size: u64) -> Result<(), ServeError> {
        self.check_allowed()?;
        if name.is_empty() {
            // (An empty name is every region's, to the status and unregister calls.)
            return Err(ServeError::BadRequest("a shared memory region needs a name".into()));
        }
        let mut regions = self.regions.lock().unwrap_or_else(|e| e.into_inner());
        if regions.contains_key(name) {
            return Err(ServeError::Conflict(format!("shared memory region '{name}' already in manager")));
        }
        if regions.len() >= MAX_REGIONS {
            return Err(ServeError::TooLarge(format!(
                "this server holds at most {MAX_REGIONS} shared memory regions: unregister one first"
            )));
        }
        let region = Region::open(name, key, offset, byte_size)?;
        regions.insert(name.to_string(), Arc::new(region));
        Ok(())
    }

    /// Unregisters region `name`, or every region for an empty name; a name not registered is
    /// no error (as Triton's). A request that uses the region already keeps it open until it
    /// is answered.
    pub fn unregister(&self, name: &str) -> Result<(), ServeError> {
        self.check_allowed()?;
        let mut regions = self.regions.lock().unwrap_or_else(|e| e.into_inner());
        if name.is_empty() {
            regions.clear();
        } else {
            regions.remove(name);
        }
        Ok(())
    }

    /// Region `name`'s status, or every region's for an empty name.
    pub fn status(&self, name: &str) -> Result<Vec<RegionStatus>, ServeError> {
        let regions = self.regions.lock().unwrap_or_else(|e| e.into_inner());
        let status = |r: &Region| RegionStatus {
            name: r.name.clone(),
            key: r.key.clone(),
            offset: r.offset,
            byte_size: r.byte_size,
        };
        if name.is_empty() {
            return Ok(regions.values().map(|r| status(r)).collect());
        }
        match regions.get(name) {
            Some(r) => Ok(vec![status(r)]),
            None => Err(ServeError::NotFound(format!("Unable to find system shared memory region: '{name}'"))),
        }
    }

    fn find(&self, name: &str) -> Result<Arc<Region>, ServeError> {
        let regions = self.regions.lock().unwrap_or_else(|e| e.into_inner());
        regions
            .get(name)
            .cloned()
            .ok_or_else(|| ServeError::BadRequest(format!("Unable to find shared memory region: '{name}'")))
    }

    /// A copy of an input's bytes from where `place` says they are.
    pub fn read(&self, place: &SharedMemoryRef) -> Result<Vec<u8>, ServeError> {
        self.find(&place.region)?.read(place.offset, place.byte_size)
    }

    /// The regions the outputs `wanted` go to, found before the request runs (an unknown
    /// region or a place outside its region fails it before it takes the device).
    pub fn outputs(&self, wanted: &[RequestedOutput]) -> Result<OutputPlaces, ServeError> {
        let mut places = Vec::new();
        for w in wanted {
            let Some(place) = &w.shared_memory else { continue };
            let region = self.find(&place.region)?;
            let fits = (place.offset as u64).checked_add(place.byte_size as u64).is_some_and(|e| e <= region.byte_size);
            if !fits {
                return Err(ServeError::BadRequest(format!(
                    "Invalid offset + byte size for shared memory region: '{}' (output '{}': offset {} + {} bytes, but \
                     the region has {})",
                    place.region, w.name, place.offset, place.byte_size, region.byte_size
                )));
            }
            places.push((w.name.clone(), place.clone(), region));
        }
        Ok(OutputPlaces(places))
    }
}

/// The outputs a request asks for in shared memory: each one's name, place and region.
pub(crate) struct OutputPlaces(Vec<(String, SharedMemoryRef, Arc<Region>)>);

impl OutputPlaces {
    /// Whether no output goes to shared memory.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Writes the outputs that go to shared memory there (each checked to fit the room the
    /// request gave it, in Triton's words), their data then dropped: for each output, where it
    /// went (its `byte_size` the bytes written), in the order of `outputs`.
    pub fn write(&self, outputs: &mut [OutputTensor]) -> Result<Vec<Option<SharedMemoryRef>>, ServeError> {
        let mut placed = vec![None; outputs.len()];
        if self.0.is_empty() {
            return Ok(placed);
        }
        for (output, placed) in outputs.iter_mut().zip(&mut placed) {
            let Some((_, place, region)) = self.0.iter().find(|(name, ..)| *name == output.name) else { continue };
            if output.data.len() > place.byte_size {
                return Err(ServeError::BadRequest(format!(
                    "shared memory size specified with the request for output '{}' ({} bytes) should be at least {} \
                     bytes to hold the results",
                    output.name,
                    place.byte_size,
                    output.data.len()
                )));
            }
            region.write(place.offset, &output.data)?;
            *placed = Some(SharedMemoryRef { byte_size: output.data.len(), ..place.clone() });
            output.data = Vec::new();
            output.binary = false;
        }
        Ok(placed)
    }
}
