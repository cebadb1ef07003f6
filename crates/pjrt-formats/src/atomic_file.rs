//! Files that appear whole or not at all: written to a uniquely named temporary file in the
//! target's folder, then renamed over the target. Readers (and a crash) never see a partial
//! file, and several files can be staged first and committed together ([`StagedFile`]).
//!
//! ```
//! use std::io::Write;
//! use pjrt_formats::atomic_file::StagedFile;
//!
//! # fn main() -> std::io::Result<()> {
//! let dir = std::env::temp_dir().join(format!("atomic-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let target = dir.join("out.txt");
//! let mut staged = StagedFile::create(&target)?;
//! staged.writer().write_all(b"all or nothing")?;
//! assert!(!target.exists(), "nothing is visible before the commit");
//! staged.commit()?;
//! assert_eq!(std::fs::read(&target)?, b"all or nothing");
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok(()) }
//! ```

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

/// Temporary files start with this (the compile cache sweeps stale ones).
pub(crate) const TEMP_PREFIX: &str = ".tmp-";

/// A file being written beside its target; [`StagedFile::commit`] renames it over the target,
/// and dropping it uncommitted removes it, so an error part way leaves the target untouched.
#[derive(Debug)]
pub struct StagedFile {
    target: PathBuf,
    temp: PathBuf,
    writer: Option<BufWriter<File>>,
}

impl StagedFile {
    /// Creates the temporary file in `target`'s folder (which must exist). Failing here is how a
    /// caller learns early that `target` cannot be written.
    ///
    /// ```
    /// use pjrt_formats::atomic_file::StagedFile;
    /// let missing = std::env::temp_dir().join("no-such-folder-for-pjrt").join("x.npy");
    /// assert!(StagedFile::create(&missing).is_err());
    /// ```
    pub fn create(target: impl AsRef<Path>) -> std::io::Result<StagedFile> {
        let target = target.as_ref().to_path_buf();
        if target.is_dir() {
            return Err(std::io::Error::other(format!("{} is a folder; name a file to write", target.display())));
        }
        let dir = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let temp = dir.join(temp_name(&target));
        let file = File::options().write(true).create_new(true).open(&temp)?;
        Ok(StagedFile { target, temp, writer: Some(BufWriter::new(file)) })
    }

    /// Where the data goes until the commit.
    ///
    /// ```
    /// # use std::io::Write;
    /// # let target = std::env::temp_dir().join(format!("staged-writer-doc-{}", std::process::id()));
    /// let mut staged = pjrt_formats::atomic_file::StagedFile::create(&target)?;
    /// staged.writer().write_all(b"x")?;
    /// drop(staged); // not committed: the temporary file is removed, the target never appears
    /// assert!(!target.exists());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Panics
    ///
    /// On a staged file this crate returned already written and closed
    /// ([`crate::npy::NpyArray::stage`], [`crate::safetensors::stage`]).
    pub fn writer(&mut self) -> &mut BufWriter<File> {
        self.writer.as_mut().expect("this staged file is complete: commit it")
    }

    /// Flushes, syncs and closes the temporary file, so that many staged files do not hold
    /// many open files until they are committed.
    pub(crate) fn close(&mut self) -> std::io::Result<()> {
        if let Some(writer) = self.writer.take() {
            let file = writer.into_inner().map_err(|e| e.into_error())?;
            file.sync_data()?;
        }
        Ok(())
    }

    /// The file this becomes.
    ///
    /// ```
    /// # let target = std::env::temp_dir().join(format!("staged-target-doc-{}", std::process::id()));
    /// let staged = pjrt_formats::atomic_file::StagedFile::create(&target)?;
    /// assert_eq!(staged.target(), target.as_path());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Flushes, syncs and renames the file over its target.
    ///
    /// ```
    /// # use std::io::Write;
    /// # let target = std::env::temp_dir().join(format!("staged-commit-doc-{}", std::process::id()));
    /// let mut staged = pjrt_formats::atomic_file::StagedFile::create(&target)?;
    /// staged.writer().write_all(b"done")?;
    /// staged.commit()?;
    /// assert_eq!(std::fs::read(&target)?, b"done");
    /// # std::fs::remove_file(&target)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn commit(mut self) -> std::io::Result<()> {
        self.close()?;
        std::fs::rename(&self.temp, &self.target)?;
        // Renamed: nothing left for Drop to remove.
        self.temp = PathBuf::new();
        Ok(())
    }
}

impl Drop for StagedFile {
    fn drop(&mut self) {
        if !self.temp.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

/// Writes a whole file through [`StagedFile`]: `write` fills it, then it replaces `path`.
///
/// ```
/// # use std::io::Write;
/// # let path = std::env::temp_dir().join(format!("write-with-doc-{}", std::process::id()));
/// pjrt_formats::atomic_file::write_with(&path, |w| w.write_all(b"hello"))?;
/// assert_eq!(std::fs::read(&path)?, b"hello");
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn write_with(path: &Path, write: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>) -> std::io::Result<()> {
    let mut staged = StagedFile::create(path)?;
    write(staged.writer())?;
    staged.commit()
}

fn temp_name(path: &Path) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    format!("{TEMP_PREFIX}{}-{n}-{nanos}-{name}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_failed_write_leaves_neither_target_nor_temporary_file() {
        let dir = std::env::temp_dir().join(format!("atomic-fail-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let target = dir.join("t.bin");
        std::fs::write(&target, b"old").unwrap();
        let err = write_with(&target, |w| {
            w.write_all(b"half")?;
            Err(std::io::Error::other("disk full"))
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "disk full");
        assert_eq!(std::fs::read(&target).unwrap(), b"old", "the old file is kept whole");
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(left, vec![std::ffi::OsString::from("t.bin")], "no temporary file is left");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
