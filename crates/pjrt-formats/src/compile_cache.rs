//! A persistent compile cache: compiled executables serialized on disk, so the next run of the
//! same program on the same plugin loads in milliseconds instead of compiling again.
//!
//! Opt-in: nothing is cached unless you make a [`CompileCache`].
//!
//! ```no_run
//! use pjrt_formats::compile_cache::{CacheOutcome, CompileCache};
//! use pjrt_client::{Client, ClientOptions, CompileOptions, Plugin, Program};
//!
//! # fn main() -> pjrt_formats::Result<()> {
//! let plugin = Plugin::load(pjrt_plugins::resolve(None)?.load_path())?;
//! let client = Client::new(&plugin, &ClientOptions::new())?;
//! let program = Program::from_file("model.mlir")?;
//! let cache = CompileCache::open_default()?;
//! let cached = cache.compile(&client, &program, &CompileOptions::new())?;
//! println!("{:?}: compile {:?}, load {:?}", cached.outcome, cached.compile, cached.load);
//! let exe = cached.executable;
//! # Ok(()) }
//! ```
//!
//! Entries are keyed by a SHA-256 of everything that changes the compiled result: the plugin
//! build ([`crate::artifact::PluginIdentity`]: platform name and version, `xla_version`, PJRT API and StableHLO
//! versions), the plugin library's SHA-256 (hashed once per change of the file and remembered
//! beside it: [`pjrt_plugins::remembered_sha256`]), the environment the plugin compiles
//! under ([`crate::artifact::COMPILE_ENVIRONMENT`]: `XLA_FLAGS`, ...), for a CPU plugin this
//! host's CPU model and features ([`crate::artifact::host_cpu`]: code compiled for one CPU never
//! loads on another), the program's format and bytes, the serialized compile options, and the
//! client's devices (count, ids and kinds); for a GPU target compiled without its devices
//! ([`CompileCache::compile_for_gpu_target`]), the target's description and topology instead of
//! the devices ([`gpu_target_key`]). Each entry is an [`Artifact`] file (one format, one reader),
//! written atomically (a temporary file in the same folder, then a rename). A corrupt, truncated
//! or foreign entry is a miss and is removed; it is never an error. The folder is kept under a
//! size cap by evicting the least recently used entries (a hit refreshes an entry's mtime).
//!
//! An entry is native code that a hit loads into the process, so the cache opens only in a
//! folder no other user can change ([`pjrt_plugins::check_trusted_dir`]: every resolved
//! folder from `/` down owned by you or root and writable by neither group nor others, root's
//! sticky `/tmp` allowed above it), and reads only entries that are regular files of yours that
//! others cannot write. Elsewhere [`CompileCache::open`] fails with
//! [`pjrt_plugins::Error::UntrustedFolder`]; `pjrt run` then compiles without the cache and says
//! why. Without a home folder there is no default folder ([`CompileCache::default_dir`]), never
//! a shared temporary one.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use pjrt_client::{Client, CompileOptions, GpuTarget, GpuTopologyShape, LoadedExecutable, Plugin, Program, Topology};

use crate::artifact::{self, Artifact, ArtifactHeader, Target};
pub use crate::artifact::{cache_key, gpu_target_key, CacheKey};
use crate::error::{Error, Result};

/// An artifact from [`CompileCache::compile_for_gpu_target`], with where it came from.
#[derive(Debug)]
pub struct CachedArtifact {
    /// The artifact (header and serialized executable).
    pub artifact: Artifact,
    /// [`CacheOutcome::Hit`] or [`CacheOutcome::Miss`].
    pub outcome: CacheOutcome,
    /// Why a compiled artifact was not stored, if it was not.
    pub note: Option<String>,
}

/// Entry files end with this.
const ENTRY_EXTENSION: &str = "pjrtx";

/// Whether a compile came from the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CacheOutcome {
    /// Loaded from the cache without compiling.
    Hit,
    /// Compiled, and stored for next time (see [`Cached::note`] if storing failed).
    Miss,
    /// Compiled without the cache (the executable cannot be cached; see [`Cached::note`]).
    Off,
}

impl CacheOutcome {
    /// `hit`, `miss` or `off`.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheOutcome::Hit => "hit",
            CacheOutcome::Miss => "miss",
            CacheOutcome::Off => "off",
        }
    }
}

/// The result of [`CompileCache::compile`].
#[derive(Debug)]
pub struct Cached {
    /// The executable, compiled or loaded.
    pub executable: LoadedExecutable,
    /// Hit, miss or off.
    pub outcome: CacheOutcome,
    /// Time spent compiling (zero on a hit).
    pub compile: Duration,
    /// Time spent reading and loading a cached executable (zero on a miss).
    pub load: Duration,
    /// Why the executable was not cached or not stored, when that happened.
    pub note: Option<String>,
}

/// What the cache folder holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheInfo {
    /// The folder.
    pub dir: PathBuf,
    /// Number of entries.
    pub entries: usize,
    /// Their total size in bytes.
    pub bytes: u64,
    /// The size cap.
    pub max_bytes: u64,
}

/// A compile cache in one folder. Cheap to clone; many processes may share a folder.
#[derive(Clone, Debug)]
pub struct CompileCache {
    dir: PathBuf,
    max_bytes: u64,
}

impl CompileCache {
    /// The default size cap: 2 GiB.
    pub const DEFAULT_MAX_BYTES: u64 = 2 << 30;

    /// Opens (creating it if needed, owner-only) a cache in `dir`, refused with
    /// [`pjrt_plugins::Error::UntrustedFolder`] when another user could change what it holds
    /// (see the module docs). [`CompileCache::dir`] is then its resolved path.
    ///
    /// ```
    /// use pjrt_formats::compile_cache::CompileCache;
    ///
    /// let dir = std::env::temp_dir().join(format!("pjrt-doc-cache-open-{}", std::process::id()));
    /// let cache = CompileCache::open(&dir)?;
    /// assert_eq!(cache.info()?.entries, 0);
    /// # #[cfg(unix)] {
    /// // Writable by every user: entries could be planted there, so it is refused.
    /// use std::os::unix::fs::PermissionsExt;
    /// std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777))?;
    /// let e = CompileCache::open(&dir).unwrap_err();
    /// assert!(matches!(e.client(), Some(pjrt_client::Error::Plugins(pjrt_plugins::Error::UntrustedFolder { .. }))), "{e}");
    /// # }
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(dir: impl Into<PathBuf>) -> Result<CompileCache> {
        let dir = pjrt_plugins::create_trusted_dir(&dir.into())?;
        Ok(CompileCache { dir, max_bytes: CompileCache::DEFAULT_MAX_BYTES })
    }

    /// Opens the cache in [`CompileCache::default_dir`]; without one (no home folder), an
    /// error that says to set `PJRT_CACHE_DIR`.
    ///
    /// ```no_run
    /// let cache = pjrt_formats::compile_cache::CompileCache::open_default()?;
    /// println!("{}", cache.dir().display());
    /// # Ok::<(), pjrt_formats::Error>(())
    /// ```
    pub fn open_default() -> Result<CompileCache> {
        CompileCache::open(CompileCache::default_dir().ok_or(Error::NoCacheFolder)?)
    }

    /// `$PJRT_CACHE_DIR` when set, else `$XDG_CACHE_HOME/pjrt-client/compile`, else
    /// `~/.cache/pjrt-client/compile` ([`pjrt_plugins::user_cache_dir`]); `None` when
    /// there is no home folder (no `HOME`, and none in the password database).
    ///
    /// ```
    /// use pjrt_formats::compile_cache::CompileCache;
    /// if let Some(dir) = CompileCache::default_dir() {
    ///     println!("compile cache: {}", dir.display());
    /// }
    /// ```
    pub fn default_dir() -> Option<PathBuf> {
        if let Some(dir) = std::env::var_os("PJRT_CACHE_DIR").filter(|d| !d.is_empty()) {
            return Some(PathBuf::from(dir));
        }
        pjrt_plugins::user_cache_dir().map(|base| base.join("pjrt-client").join("compile"))
    }

    /// Sets the size cap: after each store, the least recently used entries are removed until
    /// the folder holds at most `max_bytes`. An executable larger than the cap is not stored.
    pub fn max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the entry for `key` lives.
    pub fn entry_path(&self, key: &CacheKey) -> PathBuf {
        self.dir.join(format!("{}.{ENTRY_EXTENSION}", key.to_hex()))
    }

    /// Loads `program` compiled with `options` from the cache, or compiles it and stores it.
    ///
    /// Portable executables and plugins that cannot serialize executables are compiled without
    /// the cache ([`CacheOutcome::Off`], with a note). Cache trouble (an unreadable or corrupt
    /// entry, a full disk) never fails the compile: it becomes a miss or a note.
    pub fn compile(&self, client: &Client, program: &Program, options: &CompileOptions) -> Result<Cached> {
        if options.is_portable() {
            return compile_uncached(client, program, options, "portable executables are not cached".into());
        }
        let key = cache_key(client, program, options)?;
        let load_started = Instant::now();
        if let Some(executable) = self.lookup(client, &key) {
            return Ok(Cached {
                executable,
                outcome: CacheOutcome::Hit,
                compile: Duration::ZERO,
                load: load_started.elapsed(),
                note: None,
            });
        }
        let compile_started = Instant::now();
        let executable = client.compile(program, options)?;
        let compile = compile_started.elapsed();
        let bytes = match executable.serialize() {
            Ok(bytes) if !bytes.is_empty() => bytes,
            Ok(_) => return Ok(off(executable, compile, "the plugin serialized the executable to nothing".into())),
            Err(e) => return Ok(off(executable, compile, format!("the plugin cannot serialize executables: {e}"))),
        };
        let header = ArtifactHeader::for_devices(client, program, options, &key);
        let note = match Artifact::new(header, bytes).and_then(|a| self.store(&key, &a)) {
            Ok(()) => None,
            Err(e) => Some(format!("not stored in the compile cache: {e}")),
        };
        Ok(Cached { executable, outcome: CacheOutcome::Miss, compile, load: Duration::ZERO, note })
    }

    /// The artifact of `program` compiled with `options` for `shape` GPUs of the kind `target`
    /// describes, without them ([`Artifact::compile_for_gpu_target`]): from the cache when the
    /// same plugin build compiled the same program with the same options for the same target
    /// and topology before, else compiled and stored. A bad entry is a miss, as for
    /// [`CompileCache::compile`].
    ///
    /// ```no_run
    /// use pjrt_client::{CompileOptions, GpuTarget, GpuTopologyShape, Plugin, Program};
    /// use pjrt_formats::compile_cache::{CacheOutcome, CompileCache};
    ///
    /// # fn main() -> pjrt_formats::Result<()> {
    /// let plugin = Plugin::load(pjrt_plugins::install(pjrt_plugins::known_plugin("cuda12").unwrap(), |_| ())?)?;
    /// let cache = CompileCache::open_default()?;
    /// let program = Program::from_file("examples/mlp/train_step.mlir")?;
    /// let (h100, shape) = (GpuTarget::builtin("h100").unwrap(), GpuTopologyShape::devices(1)?);
    /// let first = cache.compile_for_gpu_target(&plugin, &h100, shape, &program, &CompileOptions::new())?;
    /// let again = cache.compile_for_gpu_target(&plugin, &h100, shape, &program, &CompileOptions::new())?;
    /// assert_eq!(again.outcome, CacheOutcome::Hit);
    /// assert_eq!(first.artifact.executable_bytes(), again.artifact.executable_bytes());
    /// # Ok(()) }
    /// ```
    pub fn compile_for_gpu_target(
        &self,
        plugin: &Plugin,
        target: &GpuTarget,
        shape: GpuTopologyShape,
        program: &Program,
        options: &CompileOptions,
    ) -> Result<CachedArtifact> {
        let topology = Topology::for_gpu_target(plugin, target, shape)?;
        let key = gpu_target_key(plugin, &topology, target, shape, program, options)?;
        let path = self.entry_path(&key);
        let cached = read_entry(&path).and_then(|bytes| Artifact::from_bytes(&bytes).ok()).filter(|a| {
            a.header.build_key == key.0
                && a.header.target == Target::Topology
                && a.header.gpu_target.as_ref().is_some_and(|g| g.fingerprint == target.fingerprint())
        });
        if let Some(artifact) = cached {
            if let Ok(file) = std::fs::File::options().append(true).open(&path) {
                let _ = file.set_modified(SystemTime::now());
            }
            return Ok(CachedArtifact { artifact, outcome: CacheOutcome::Hit, note: None });
        }
        let _ = std::fs::remove_file(&path);
        let artifact = Artifact::compile_for_gpu_topology(plugin, &topology, target, shape, program, options, key)?;
        // Cache trouble never fails the compile: it becomes a note.
        let note = self.store(&key, &artifact).err().map(|e| format!("not stored in the compile cache: {e}"));
        Ok(CachedArtifact { artifact, outcome: CacheOutcome::Miss, note })
    }

    /// The cached executable for `key`, loaded; `None` on a miss. A bad entry is removed.
    fn lookup(&self, client: &Client, key: &CacheKey) -> Option<LoadedExecutable> {
        let path = self.entry_path(key);
        let bytes = read_entry(&path)?;
        let usable = Artifact::from_bytes(&bytes).ok().filter(|a| {
            a.header.build_key == key.0 && a.header.target == Target::Devices && a.check_compatible(client).is_ok()
        });
        let loaded = usable.and_then(|a| client.deserialize_and_load(a.executable_bytes()).ok());
        match loaded {
            Some(executable) => {
                // Refresh the mtime: eviction removes the least recently used entries first.
                if let Ok(file) = std::fs::File::options().append(true).open(&path) {
                    let _ = file.set_modified(SystemTime::now());
                }
                Some(executable)
            }
            None => {
                let _ = std::fs::remove_file(&path);
                None
            }
        }
    }

    fn store(&self, key: &CacheKey, artifact: &Artifact) -> Result<()> {
        let bytes = artifact.to_bytes();
        if bytes.len() as u64 > self.max_bytes {
            return Err(Error::invalid(format!(
                "the executable is {} bytes, more than the cache's cap of {} bytes",
                bytes.len(),
                self.max_bytes
            )));
        }
        // Made again (and checked again) if it was removed since it was opened.
        pjrt_plugins::create_trusted_dir(&self.dir)?;
        let path = self.entry_path(key);
        artifact::write_atomically(&path, &bytes)?;
        self.evict(&path);
        Ok(())
    }

    /// Every entry with its size and mtime (entries that vanish meanwhile are skipped).
    fn entries(&self) -> Result<Vec<(PathBuf, u64, SystemTime)>> {
        let read = std::fs::read_dir(&self.dir).map_err(|e| Error::io(&self.dir, e))?;
        let mut entries = Vec::new();
        for entry in read.flatten() {
            let path = entry.path();
            if !is_entry_name(&path) {
                continue;
            }
            if let Ok(meta) = entry.metadata() {
                if meta.is_file() {
                    entries.push((path, meta.len(), meta.modified().unwrap_or(SystemTime::UNIX_EPOCH)));
                }
            }
        }
        Ok(entries)
    }

    /// Removes the least recently used entries until the folder fits the cap; `keep` (the entry
    /// just written) goes last.
    fn evict(&self, keep: &Path) {
        self.sweep_stale_temp_files();
        let Ok(mut entries) = self.entries() else { return };
        let mut total: u64 = entries.iter().map(|e| e.1).sum();
        if total <= self.max_bytes {
            return;
        }
        // Oldest first; the entry just written sorts as the newest whatever the clock says.
        entries.sort_by(|a, b| (a.0 == keep, a.2, &a.0).cmp(&(b.0 == keep, b.2, &b.0)));
        for (path, size, _) in entries {
            if total <= self.max_bytes || path == keep {
                break;
            }
            if std::fs::remove_file(&path).is_ok() {
                total -= size;
            }
        }
    }

    /// Removes temporary files that writers which died mid-write left behind (older than an
    /// hour, so no live writer loses its file).
    fn sweep_stale_temp_files(&self) {
        const STALE: Duration = Duration::from_secs(3600);
        let Ok(read) = std::fs::read_dir(&self.dir) else { return };
        for entry in read.flatten() {
            let is_temp = entry.file_name().to_string_lossy().starts_with(crate::atomic_file::TEMP_PREFIX);
            let old = entry
                .metadata()
                .ok()
                .filter(|m| m.is_file())
                .and_then(|m| m.modified().ok())
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > STALE);
            if is_temp && old {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }

    /// How many entries the cache holds and their size.
    pub fn info(&self) -> Result<CacheInfo> {
        if !self.dir.exists() {
            return Ok(CacheInfo { dir: self.dir.clone(), entries: 0, bytes: 0, max_bytes: self.max_bytes });
        }
        let entries = self.entries()?;
        Ok(CacheInfo {
            dir: self.dir.clone(),
            entries: entries.len(),
            bytes: entries.iter().map(|e| e.1).sum(),
            max_bytes: self.max_bytes,
        })
    }

    /// Removes every entry (and stale temporary files); returns how many entries were removed.
    pub fn clear(&self) -> Result<usize> {
        let read = match std::fs::read_dir(&self.dir) {
            Ok(read) => read,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(Error::io(&self.dir, e)),
        };
        let mut removed = 0;
        for entry in read.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let is_entry = is_entry_name(&path);
            let is_temp = name.to_string_lossy().starts_with(crate::atomic_file::TEMP_PREFIX);
            if (is_entry || is_temp) && entry.metadata().is_ok_and(|m| m.is_file()) {
                match std::fs::remove_file(&path) {
                    Ok(()) => removed += is_entry as usize,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(Error::io(&path, e)),
                }
            }
        }
        Ok(removed)
    }
}

/// An entry's bytes, when it is a regular file of ours (or root's) that others cannot write;
/// `None` on a miss (a missing file fails the check too). An untrusted entry is a miss and is
/// left alone: the compile that follows stores its own entry over it (an atomic rename).
fn read_entry(path: &Path) -> Option<Vec<u8>> {
    pjrt_plugins::check_trusted_file(path).ok()?;
    std::fs::read(path).ok()
}

/// `<hex key>.pjrtx`, not a temporary file (those end like the entry they become).
fn is_entry_name(path: &Path) -> bool {
    let temp = path.file_name().is_some_and(|n| n.to_string_lossy().starts_with(crate::atomic_file::TEMP_PREFIX));
    !temp && path.extension().and_then(|e| e.to_str()) == Some(ENTRY_EXTENSION)
}

fn off(executable: LoadedExecutable, compile: Duration, note: String) -> Cached {
    Cached { executable, outcome: CacheOutcome::Off, compile, load: Duration::ZERO, note: Some(note) }
}

fn compile_uncached(client: &Client, program: &Program, options: &CompileOptions, note: String) -> Result<Cached> {
    let started = Instant::now();
    let executable = client.compile(program, options)?;
    Ok(off(executable, started.elapsed(), note))
}
