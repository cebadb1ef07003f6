//! Loading exactly the bytes that were checked ([`VerifiedLibrary`]).
//!
//! A library is checked against its pinned SHA-256 and then loaded, and between the two another
//! user who can change its folder could swap the file. Where that can happen depends on the
//! folder ([`crate::check_trusted_dir`]):
//!
//! - In a trusted folder (the cache as [`crate::install`] makes it) only you and root can
//!   change anything, and the file itself must be writable by nobody else: the library is
//!   loaded by its resolved path. Its name then still works for what plugins find beside
//!   themselves: the loader's `$ORIGIN` (OpenBLAS's gfortran runtime, the CUDA plugins'
//!   libraries) and `dladdr` (XLA's search for `ptxas` and `libdevice`).
//! - In a folder others can change, the file is opened once, hashed from that descriptor, and on
//!   Linux loaded through it: [`VerifiedLibrary::load_path`] is `/proc/self/fd/N`, which names
//!   the open file whatever its name points to later. The descriptor stays open until the
//!   process exits (a closed descriptor's number would be reused by the next file opened). A
//!   file another user can write in place is refused (a descriptor does not stop that), and so
//!   are plugins with pinned files beside them (`ptxas`, OpenBLAS's runtime libraries), which
//!   XLA and the loader open by name. Without `/proc` (other systems, or no `/proc` mounted)
//!   there is no such path: the library is refused there, with a message saying to move the
//!   cache to a folder of yours.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::trust::hex;

/// A library checked against its pinned SHA-256, with the path that loads exactly the bytes
/// that were checked (see [`VerifiedLibrary::load_path`]).
///
/// ```
/// # fn main() -> pjrt_plugins::Result<()> {
/// # pjrt_plugins::install(pjrt_plugins::default_plugin(), |_| ())?;
/// let verified = pjrt_plugins::verified_cached(pjrt_plugins::default_plugin())?;
/// // Load `load_path()`, show `path()`.
/// assert!(verified.load_path().is_file());
/// println!("checked {}", verified.path().display());
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifiedLibrary {
    path: PathBuf,
    load_path: PathBuf,
}

impl VerifiedLibrary {
    /// The library's file (its folder's resolved path), for messages and for what is found
    /// beside it.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What to load (`pjrt_client::Plugin::load`, `dlopen`): [`VerifiedLibrary::path`] in a
    /// trusted folder, else (Linux) `/proc/self/fd/N` of the descriptor that was hashed, open
    /// until the process exits. See the module docs of `verified.rs`, or the crate's "Trust".
    pub fn load_path(&self) -> &Path {
        &self.load_path
    }

    /// Checked in a trusted folder: loaded by its path.
    pub(crate) fn by_path(path: PathBuf) -> VerifiedLibrary {
        VerifiedLibrary { load_path: path.clone(), path }
    }

    /// Checked through `file`, which is kept open: loaded through it.
    pub(crate) fn through(path: PathBuf, file: File) -> Result<VerifiedLibrary> {
        let load_path = hold_open(&path, file)?;
        Ok(VerifiedLibrary { path, load_path })
    }
}

/// SHA-256 of what `file` reads from its current position to its end, as lowercase hex.
pub(crate) fn sha256_of(file: &mut File, path: &Path) -> Result<String> {
    let mut hasher = Sha256::new();
    let mut chunk = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut chunk).map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&chunk[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

/// The descriptors [`hold_open`] handed out, with the identity of the file each one holds.
static HELD: Mutex<Vec<(FileId, File)>> = Mutex::new(Vec::new());

/// A file on disk: device and inode. Every descriptor of one reads the same bytes.
type FileId = (u64, u64);

#[cfg(target_os = "linux")]
fn file_id(meta: &std::fs::Metadata) -> FileId {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

/// Keeps `file` open until the process exits and returns `/proc/self/fd/N` for it; the same
/// file (same [`FileId`]) checked again reuses the first descriptor, so one descriptor is held
/// per file checked (a file replaced by a new one is a new file).
#[cfg(target_os = "linux")]
fn hold_open(path: &Path, file: File) -> Result<PathBuf> {
    use std::os::fd::AsRawFd;
    let fd_path = |file: &File| PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
    let id = file_id(&file.metadata().map_err(|e| Error::io(path, e))?);
    let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, kept)) = held.iter().find(|(kept, _)| *kept == id) {
        return Ok(fd_path(kept));
    }
    let load_path = fd_path(&file);
    // `/proc` may be missing (a chroot, a container without it): then there is no path that
    // names the open file.
    let named = std::fs::metadata(&load_path).map(|m| file_id(&m) == id).unwrap_or(false);
    if !named {
        return Err(no_descriptor_path(path));
    }
    held.push((id, file));
    Ok(load_path)
}

#[cfg(not(target_os = "linux"))]
fn hold_open(path: &Path, _file: File) -> Result<PathBuf> {
    let _ = &HELD;
    Err(no_descriptor_path(path))
}

fn no_descriptor_path(path: &Path) -> Error {
    let folder = path.parent().unwrap_or(path).to_path_buf();
    Error::UntrustedFolder {
        component: folder.clone(),
        folder,
        reason: "can be changed by another user, and without /proc/self/fd the library could not be loaded \
                 through the descriptor that was checked"
            .into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_os = "linux")]
    fn a_held_descriptor_names_the_checked_file_after_a_swap() {
        let dir = std::env::temp_dir().join(format!("pjrt-held-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("lib.so");
        std::fs::write(&path, b"checked bytes").unwrap();
        let mut file = File::open(&path).unwrap();
        let digest = sha256_of(&mut file, &path).unwrap();
        let verified = VerifiedLibrary::through(path.clone(), file).unwrap();
        assert!(verified.load_path().starts_with("/proc/self/fd"), "{}", verified.load_path().display());
        // Swapped after the check, as another user with write access to the folder could.
        let swap = dir.join("swap.so");
        std::fs::write(&swap, b"other bytes").unwrap();
        std::fs::rename(&swap, &path).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"other bytes");
        assert_eq!(std::fs::read(verified.load_path()).unwrap(), b"checked bytes");
        assert_eq!(digest, sha256_of(&mut File::open(verified.load_path()).unwrap(), &path).unwrap());
        // Checked again, the same version keeps its first descriptor; the new one gets its own.
        let again = VerifiedLibrary::through(path.clone(), File::open(verified.load_path()).unwrap()).unwrap();
        assert_eq!(again.load_path(), verified.load_path());
        let swapped = VerifiedLibrary::through(path.clone(), File::open(&path).unwrap()).unwrap();
        assert_ne!(swapped.load_path(), verified.load_path());
        assert_eq!(std::fs::read(swapped.load_path()).unwrap(), b"other bytes");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
