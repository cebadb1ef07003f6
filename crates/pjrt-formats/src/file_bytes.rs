//! A file's bytes, as the readers hold them: read into memory of their own (what the safe
//! `open` functions do), or memory-mapped (their `unsafe` `open_mapped`).
//!
//! Read bytes live in an anonymous private mapping, which is page-aligned (so data at a 64-byte
//! file offset is 64-byte aligned: the plugin can use it in place), zero-filled lazily by the
//! kernel (no memset before the read) and visible to no other process. Nothing writes to it
//! after the read, so uploads may read it in place for as long as they hold it. A mapping of
//! the file itself reads the file as it is at each access instead: another writer changes what
//! it holds, and a truncation makes the next access end the process with SIGBUS. Only the
//! `unsafe` constructors make one, and their callers promise that neither happens.

use std::fs::File;
use std::io::Read;
use std::path::Path;

/// The bytes of one file.
pub(crate) enum FileBytes {
    /// Read once into an anonymous mapping of our own (read-only once filled).
    Read(memmap2::Mmap),
    /// The file's own mapping (read-only), made by an `unsafe` `open_mapped`.
    Mapped(memmap2::Mmap),
    /// An empty file: nothing to map or read.
    Empty,
}

impl FileBytes {
    /// Reads the whole file at `path` into memory of its own.
    pub(crate) fn read(path: &Path) -> std::io::Result<FileBytes> {
        let mut file = File::open(path)?;
        let len = usize::try_from(file.metadata()?.len())
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::OutOfMemory, "the file does not fit in memory"))?;
        if len == 0 {
            return Ok(FileBytes::Empty);
        }
        let mut memory = memmap2::MmapOptions::new().len(len).map_anon()?;
        // Every byte is written at once, so huge pages cost no memory, and they save most of
        // the page faults of filling fresh memory (the read of a 109 MB file took about 2.5x
        // less time with them). Only advice: where it is refused, the read is just slower.
        #[cfg(target_os = "linux")]
        let _ = memory.advise(memmap2::Advice::HugePage);
        // A file truncated since `metadata` ends the read early: an error (UnexpectedEof). One
        // that grew is read up to the old length; what follows is checked like any file.
        file.read_exact(&mut memory)?;
        Ok(FileBytes::Read(memory.make_read_only()?))
    }

    /// Maps the whole file at `path`.
    ///
    /// # Safety
    /// The file must not be modified or truncated while the mapping lives: the caller's promise,
    /// stated on the public `open_mapped` functions.
    pub(crate) unsafe fn map(path: &Path) -> std::io::Result<FileBytes> {
        let file = File::open(path)?;
        if file.metadata()?.len() == 0 {
            // An empty file cannot be mapped.
            return Ok(FileBytes::Empty);
        }
        // SAFETY: a read-only mapping; that the file stays unchanged while it lives is the
        // caller's promise (this function's contract).
        Ok(FileBytes::Mapped(unsafe { memmap2::Mmap::map(&file) }?))
    }

    /// The bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            FileBytes::Read(memory) | FileBytes::Mapped(memory) => memory,
            FileBytes::Empty => &[],
        }
    }

    /// Whether these are the file's own mapping rather than memory read from it.
    pub(crate) fn is_mapped(&self) -> bool {
        matches!(self, FileBytes::Mapped(_))
    }
}

// SAFETY: `bytes` returns the same memory every time: both mappings stay at their address
// until dropped, and nothing here writes to them (no `&mut` is ever given out). Read bytes are
// an anonymous private mapping made read-only after the read: no file backs it and no other
// process shares it, so it cannot change. A file's own mapping is unchanged while it lives by
// the promise of whoever called the `unsafe` `FileBytes::map` (the public `open_mapped`s).
unsafe impl pjrt_client::SharedHostBytes for FileBytes {
    fn host_bytes(&self) -> &[u8] {
        self.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_bytes_are_aligned_and_a_snapshot() {
        let path = std::env::temp_dir().join(format!("pjrt-file-bytes-{}", std::process::id()));
        std::fs::write(&path, [7u8; 100]).unwrap();
        let read = FileBytes::read(&path).unwrap();
        assert!(!read.is_mapped());
        assert_eq!(read.bytes().as_ptr() as usize % pjrt_client::HOST_ALIGNMENT, 0);
        // Rewritten and then truncated: the bytes read stay as they were.
        std::fs::write(&path, [0u8; 100]).unwrap();
        std::fs::write(&path, []).unwrap();
        assert_eq!(read.bytes(), [7u8; 100]);
        assert!(matches!(FileBytes::read(&path).unwrap(), FileBytes::Empty));
        std::fs::remove_file(&path).unwrap();
    }
}
