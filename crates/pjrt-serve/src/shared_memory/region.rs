//! One registered region: its file under `/dev/shm`, kept open from its registration on, read
//! and written with `pread`/`pwrite` at checked offsets, never mapped.

use std::fs::File;
use std::os::unix::fs::{FileExt as _, OpenOptionsExt as _};
use std::path::PathBuf;

use crate::error::ServeError;

/// Where POSIX shared memory objects are on Linux (what `shm_open` opens).
const SHM_DIR: &str = "/dev/shm";

/// The longest key: a file name's longest (`NAME_MAX`).
const MAX_KEY: usize = 255;

fn bad(message: String) -> ServeError {
    ServeError::BadRequest(message)
}

/// A system shared memory region as registered: `byte_size` bytes from `offset` of the shared
/// memory object `key`.
#[derive(Debug)]
pub(crate) struct Region {
    pub name: String,
    pub key: String,
    pub offset: u64,
    pub byte_size: u64,
    /// The object, open for reading and writing (as Triton opens it), or for reading only where
    /// its permissions let the server read it but not write it: its current size is read
    /// (`fstat`) before each use.
    file: File,
    /// Whether `file` is open for writing (outputs may go there).
    writable: bool,
}

/// The file of shared memory object `key` (`/NAME` or `NAME`, as `shm_open` takes it): a name
/// of `/dev/shm` itself, never a path elsewhere.
fn object_path(key: &str) -> Result<PathBuf, ServeError> {
    let name = key.trim_start_matches('/');
    let refuse = |why: &str| {
        Err(bad(format!(
            "Unable to open shared memory region: '{key}': {why} (a key is a name under {SHM_DIR}, as shm_open takes \
             it: \"/NAME\")"
        )))
    };
    if name.is_empty() || name == "." || name == ".." {
        return refuse("it names no object");
    }
    if name.contains('/') || name.contains('\0') {
        return refuse("it holds a '/' after its first character, or a NUL");
    }
    if name.len() > MAX_KEY {
        return refuse("it is longer than 255 bytes");
    }
    Ok(PathBuf::from(SHM_DIR).join(name))
}

impl Region {
    /// Opens object `key` (a regular file under `/dev/shm`, not followed through a symbolic
    /// link) and checks that it holds `offset + byte_size` bytes now.
    pub fn open(name: &str, key: &str, offset: u64, byte_size: u64) -> Result<Region, ServeError> {
        let path = object_path(key)?;
        let end = offset.checked_add(byte_size).ok_or_else(|| {
            bad(format!("shared memory region '{name}': offset {offset} + byte_size {byte_size} overflow"))
        })?;
        let open = |write: bool| {
            std::fs::OpenOptions::new().read(true).write(write).custom_flags(libc::O_NOFOLLOW).open(&path)
        };
        let (file, writable) = match open(true) {
            Ok(file) => (file, true),
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => match open(false) {
                Ok(file) => (file, false),
                Err(_) => return Err(bad(format!("Unable to open shared memory region: '{key}': {e}"))),
            },
            Err(e) => return Err(bad(format!("Unable to open shared memory region: '{key}': {e}"))),
        };
        let region = Region { name: name.to_string(), key: key.to_string(), offset, byte_size, file, writable };
        let metadata = region.file.metadata().map_err(|e| bad(format!("shared memory region '{name}': {e}")))?;
        if !metadata.is_file() {
            return Err(bad(format!("Unable to open shared memory region: '{key}': it is not a shared memory object")));
        }
        if metadata.len() < end {
            return Err(bad(format!(
                "shared memory region '{name}': object '{key}' is {} bytes, but offset {offset} + byte_size \
                 {byte_size} reach {end}",
                metadata.len()
            )));
        }
        Ok(region)
    }

    /// Where `byte_size` bytes at `offset` of the region are in its object, checked against the
    /// region (Triton's words) and against the object's current size (`fstat`): a region
    /// truncated since it was registered is an error, not a read past its end.
    fn span(&self, offset: usize, byte_size: usize) -> Result<u64, ServeError> {
        let fits = (offset as u64).checked_add(byte_size as u64).is_some_and(|end| end <= self.byte_size);
        if !fits {
            return Err(bad(format!(
                "Invalid offset + byte size for shared memory region: '{}' (offset {offset} + {byte_size} bytes, \
                 but the region has {})",
                self.name, self.byte_size
            )));
        }
        let at = self.offset + offset as u64;
        let now = self.file.metadata().map_err(|e| bad(format!("shared memory region '{}': {e}", self.name)))?.len();
        if now < at + byte_size as u64 {
            return Err(bad(format!(
                "shared memory region '{}': object '{}' is now {now} bytes, too small for {byte_size} bytes at {at}: \
                 it was truncated since it was registered (unregister it, and register it again)",
                self.name, self.key
            )));
        }
        Ok(at)
    }

    /// A copy of `byte_size` bytes at `offset` of the region. (Read with `pread`: an object
    /// truncated even between the size check and the read gives a short read, an error.)
    pub fn read(&self, offset: usize, byte_size: usize) -> Result<Vec<u8>, ServeError> {
        let at = self.span(offset, byte_size)?;
        let mut data = vec![0u8; byte_size];
        self.file.read_exact_at(&mut data, at).map_err(|e| {
            bad(format!("shared memory region '{}': reading {byte_size} bytes at {at} failed: {e}", self.name))
        })?;
        Ok(data)
    }

    /// Writes `data` at `offset` of the region, within `byte_size` (the room the request gave
    /// the output there).
    pub fn write(&self, offset: usize, data: &[u8]) -> Result<(), ServeError> {
        if !self.writable {
            return Err(bad(format!(
                "shared memory region '{}': the server may read object '{}' but not write it (its permissions): \
                 outputs cannot go there",
                self.name, self.key
            )));
        }
        let at = self.span(offset, data.len())?;
        self.file.write_all_at(data, at).map_err(|e| {
            ServeError::Internal(format!(
                "shared memory region '{}': writing {} bytes failed: {e}",
                self.name,
                data.len()
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn keys_are_names_under_dev_shm() {
        assert_eq!(super::object_path("/input").unwrap(), std::path::Path::new("/dev/shm/input"));
        assert_eq!(super::object_path("input").unwrap(), std::path::Path::new("/dev/shm/input"));
        for key in ["", "/", "/..", "..", "/a/b", "../etc/passwd", "/.", "a\0b"] {
            let e = super::object_path(key).unwrap_err().to_string();
            assert!(e.starts_with("Unable to open shared memory region"), "{key:?}: {e}");
        }
        assert!(super::object_path(&"k".repeat(256)).is_err());
    }
}
