//! Ahead-of-time artifacts: a compiled executable in a file of our own format, with a header
//! that says which plugin made it, so a mismatch is refused with a clear message before the
//! plugin ever sees the bytes. The compile cache (`compile_cache`) stores its entries in
//! the same format.
//!
//! Layout (all integers little-endian):
//!
//! ```text
//! magic            8 bytes  "PJRT-AOT"
//! format version   u32      1
//! header length    u32      at most 64 KiB
//! header           fields below, in order (a newer writer may append fields; readers skip them)
//!   platform name      u16 length + UTF-8
//!   platform version   u16 length + UTF-8
//!   xla_version        u8 present + i64
//!   PJRT API version   i32 major + i32 minor
//!   StableHLO version  u8 present + 3 × i64
//!   replicas, partitions, device count   3 × i64
//!   program fingerprint  32 bytes (SHA-256 of the program format and bytes)
//!   build key            32 bytes (the compile-cache key: program, options, plugin, devices)
//!   target               u8 (0: compiled on a client's devices, 1: against a topology)
//!   GPU target           u8 present, then: name (u16 length + UTF-8), GPU topology
//!                        (u16 length + UTF-8, e.g. `1x1x8`), SHA-256 of the description (32 bytes)
//!                        (absent from artifacts written before it was added: read as none)
//! payload SHA-256  32 bytes
//! payload          the rest of the file: the plugin's serialized executable
//! ```
//!
//! The reader checks every length against the bytes that are there, so a truncated, corrupt or
//! hostile file is an [`ArtifactError`] (as [`Error::Artifact`]), never a panic or a large
//! allocation.
mod key;

pub use key::{cache_key, gpu_target_key, host_cpu, CacheKey, COMPILE_ENVIRONMENT};

use std::fmt;
use std::io::Write;
use std::path::Path;

use sha2::{Digest, Sha256};

use pjrt_client::{
    ApiVersion, Client, CompileOptions, GpuTarget, GpuTopologyShape, LoadedExecutable, Plugin, Program,
    StableHloVersion, Topology,
};

use crate::error::{Error, Result};

/// The bytes every artifact starts with.
pub const MAGIC: &[u8; 8] = b"PJRT-AOT";
/// The format version this crate writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// The largest header accepted.
const MAX_HEADER_LEN: usize = 64 * 1024;
/// The longest platform name or version accepted.
const MAX_STRING_LEN: usize = 1024;

/// What identifies the plugin build an executable was compiled by: a serialized executable loads
/// only on the same one.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PluginIdentity {
    /// The platform name, e.g. `cpu`.
    pub platform_name: String,
    /// The platform version string.
    pub platform_version: String,
    /// The plugin's `xla_version` attribute, when it has one.
    pub xla_version: Option<i64>,
    /// The PJRT C API version the plugin implements.
    pub api_version: ApiVersion,
    /// The newest StableHLO version the plugin reads (tells XLA builds apart).
    pub stablehlo_version: Option<StableHloVersion>,
}

impl PluginIdentity {
    /// The identity of the plugin behind `client`.
    pub fn of_client(client: &Client) -> PluginIdentity {
        PluginIdentity::of_plugin(client.plugin(), client.platform_name(), client.platform_version())
    }

    /// The identity of the plugin behind `topology`.
    pub fn of_topology(plugin: &Plugin, topology: &Topology) -> Result<PluginIdentity> {
        Ok(PluginIdentity::of_plugin(plugin, &topology.platform_name()?, &topology.platform_version()?))
    }

    fn of_plugin(plugin: &Plugin, platform_name: &str, platform_version: &str) -> PluginIdentity {
        PluginIdentity {
            platform_name: platform_name.to_owned(),
            platform_version: platform_version.to_owned(),
            xla_version: plugin.xla_version(),
            api_version: plugin.api_version(),
            stablehlo_version: plugin.stablehlo_current_version(),
        }
    }
}

impl fmt::Display for PluginIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} plugin (version {}", self.platform_name, self.platform_version)?;
        match self.xla_version {
            Some(v) => write!(f, ", xla_version {v}")?,
            None => write!(f, ", no xla_version")?,
        }
        write!(f, ", API {}", self.api_version)?;
        if let Some(v) = self.stablehlo_version {
            write!(f, ", StableHLO {v}")?;
        }
        write!(f, ")")
    }
}

/// Whether an executable was compiled on a client's devices or against a topology.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Target {
    /// Compiled by a client for its devices.
    Devices,
    /// Compiled against a topology, without its devices.
    Topology,
}

/// The GPU an artifact was compiled for without it ([`Artifact::compile_for_gpu_target`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuTargetRecord {
    /// The target's name (`h100`, or a description file's stem).
    pub name: String,
    /// The GPU topology, `PARTITIONSxHOSTSxDEVICES`.
    pub topology: String,
    /// SHA-256 of the target description ([`GpuTarget::fingerprint`]).
    pub fingerprint: [u8; 32],
}

impl fmt::Display for GpuTargetRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GPU target `{}` (topology {})", self.name, self.topology)
    }
}

/// An artifact's header: what it was compiled for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArtifactHeader {
    /// The plugin build that compiled it.
    pub plugin: PluginIdentity,
    /// Number of replicas.
    pub num_replicas: usize,
    /// Number of partitions.
    pub num_partitions: usize,
    /// Number of devices the compiler saw (the client's or the topology's).
    pub device_count: i64,
    /// SHA-256 of the program (format and bytes).
    pub program_fingerprint: [u8; 32],
    /// The compile-cache key of the build (program, options, plugin, devices); all zero when
    /// unknown.
    pub build_key: [u8; 32],
    /// Devices or topology.
    pub target: Target,
    /// The GPU target, for an artifact compiled for one without its devices.
    pub gpu_target: Option<GpuTargetRecord>,
}

impl ArtifactHeader {
    /// The header of `program` compiled with `options` for `client`'s devices, with its
    /// compile-cache `key`.
    pub(crate) fn for_devices(
        client: &Client,
        program: &Program,
        options: &CompileOptions,
        key: &CacheKey,
    ) -> ArtifactHeader {
        ArtifactHeader {
            plugin: PluginIdentity::of_client(client),
            num_replicas: options.num_replicas_requested(),
            num_partitions: options.num_partitions_requested(),
            device_count: client.devices().len() as i64,
            program_fingerprint: program_fingerprint(program),
            build_key: key.0,
            target: Target::Devices,
            gpu_target: None,
        }
    }
}

/// A compiled executable with its header: an AOT artifact or a compile-cache entry.
#[derive(Clone, PartialEq, Eq)]
pub struct Artifact {
    /// What it was compiled for.
    pub header: ArtifactHeader,
    executable: Vec<u8>,
}

impl fmt::Debug for Artifact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Artifact")
            .field("header", &self.header)
            .field("executable_bytes", &self.executable.len())
            .finish()
    }
}

/// SHA-256 of a program's format and bytes.
pub fn program_fingerprint(program: &Program) -> [u8; 32] {
    let mut hash = Sha256::new();
    hash.update(program.format().as_pjrt_str().as_bytes());
    hash.update([0u8]);
    hash.update(program.code());
    hash.finalize().into()
}

/// Whether `bytes` start like an artifact.
pub fn is_artifact(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

/// Whether the file at `path` starts like an artifact (reads only its first bytes).
pub fn is_artifact_file(path: impl AsRef<Path>) -> bool {
    use std::io::Read;
    let mut start = [0u8; 8];
    std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut start)).is_ok() && &start == MAGIC
}

impl Artifact {
    /// An artifact from a header and a serialized executable.
    pub fn new(header: ArtifactHeader, executable: Vec<u8>) -> Result<Artifact> {
        if executable.is_empty() {
            return Err(Error::invalid("an artifact needs a non-empty serialized executable"));
        }
        Ok(Artifact { header, executable })
    }

    /// Serializes `executable` (compiled by `client` from `program` with `options`) into an
    /// artifact. Fails with the plugin's error when it cannot serialize executables.
    pub fn from_loaded(
        client: &Client,
        executable: &LoadedExecutable,
        program: &Program,
        options: &CompileOptions,
    ) -> Result<Artifact> {
        let bytes = executable.serialize()?;
        let key = cache_key(client, program, options)?;
        let header = ArtifactHeader::for_devices(client, program, options, &key);
        Artifact::new(header, bytes)
    }

    /// Compiles `program` against `topology` (no devices needed) and wraps the result.
    pub fn compile_for_topology(
        plugin: &Plugin,
        topology: &Topology,
        program: &Program,
        options: &CompileOptions,
    ) -> Result<Artifact> {
        let executable = topology.compile(program, options, None)?;
        let header = ArtifactHeader {
            plugin: PluginIdentity::of_topology(plugin, topology)?,
            num_replicas: options.num_replicas_requested(),
            num_partitions: options.num_partitions_requested(),
            device_count: topology.device_count()? as i64,
            program_fingerprint: program_fingerprint(program),
            build_key: [0; 32],
            target: Target::Topology,
            gpu_target: None,
        };
        Artifact::new(header, executable.serialize()?)
    }

    /// Compiles `program` for `shape` GPUs of the kind `target` describes, with a CUDA plugin
    /// and no GPU ([`Topology::for_gpu_target`]; XLA gets `ptxas` and `libdevice` from beside the
    /// plugin when they are there), and records the target in the header.
    ///
    /// ```no_run
    /// use pjrt_client::{CompileOptions, GpuTarget, GpuTopologyShape, Plugin, Program};
    /// use pjrt_formats::artifact::Artifact;
    ///
    /// let plugin = Plugin::load(pjrt_plugins::install(pjrt_plugins::known_plugin("cuda12").unwrap(), |_| ())?)?;
    /// let program = Program::from_file("examples/mlp/train_step.mlir")?;
    /// let h100 = GpuTarget::builtin("h100").unwrap();
    /// let artifact =
    ///     Artifact::compile_for_gpu_target(&plugin, &h100, GpuTopologyShape::devices(1)?, &program, &CompileOptions::new())?;
    /// assert_eq!(artifact.header.plugin.platform_name, "cuda");
    /// assert_eq!(artifact.header.gpu_target.as_ref().unwrap().name, "h100");
    /// artifact.write("mlp-h100.pjrt")?;
    /// # Ok::<(), pjrt_formats::Error>(())
    /// ```
    pub fn compile_for_gpu_target(
        plugin: &Plugin,
        target: &GpuTarget,
        shape: GpuTopologyShape,
        program: &Program,
        options: &CompileOptions,
    ) -> Result<Artifact> {
        let topology = Topology::for_gpu_target(plugin, target, shape)?;
        let key = gpu_target_key(plugin, &topology, target, shape, program, options)?;
        Artifact::compile_for_gpu_topology(plugin, &topology, target, shape, program, options, key)
    }

    /// [`Artifact::compile_for_gpu_target`] on a topology already made, with its cache key.
    pub(crate) fn compile_for_gpu_topology(
        plugin: &Plugin,
        topology: &Topology,
        target: &GpuTarget,
        shape: GpuTopologyShape,
        program: &Program,
        options: &CompileOptions,
        key: CacheKey,
    ) -> Result<Artifact> {
        let mut artifact = Artifact::compile_for_topology(plugin, topology, program, options)?;
        artifact.header.build_key = key.0;
        artifact.header.gpu_target = Some(GpuTargetRecord {
            name: target.name().to_owned(),
            topology: shape.to_string(),
            fingerprint: target.fingerprint(),
        });
        Ok(artifact)
    }

    /// The plugin's serialized executable.
    pub fn executable_bytes(&self) -> &[u8] {
        &self.executable
    }

    /// The file's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let h = &self.header;
        let mut header = Vec::with_capacity(256);
        put_str(&mut header, &h.plugin.platform_name);
        put_str(&mut header, &h.plugin.platform_version);
        header.push(h.plugin.xla_version.is_some() as u8);
        header.extend_from_slice(&h.plugin.xla_version.unwrap_or(0).to_le_bytes());
        header.extend_from_slice(&h.plugin.api_version.major.to_le_bytes());
        header.extend_from_slice(&h.plugin.api_version.minor.to_le_bytes());
        let shlo = h.plugin.stablehlo_version;
        header.push(shlo.is_some() as u8);
        let shlo = shlo.unwrap_or(StableHloVersion::new(0, 0, 0));
        let [a, b, c] = [shlo.major, shlo.minor, shlo.patch].map(i64::from);
        for v in [a, b, c, h.num_replicas as i64, h.num_partitions as i64, h.device_count] {
            header.extend_from_slice(&v.to_le_bytes());
        }
        header.extend_from_slice(&h.program_fingerprint);
        header.extend_from_slice(&h.build_key);
        header.push(match h.target {
            Target::Devices => 0,
            Target::Topology => 1,
        });
        header.push(h.gpu_target.is_some() as u8);
        if let Some(gpu) = &h.gpu_target {
            put_str(&mut header, &gpu.name);
            put_str(&mut header, &gpu.topology);
            header.extend_from_slice(&gpu.fingerprint);
        }
        let mut out = Vec::with_capacity(16 + header.len() + 32 + self.executable.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&(header.len() as u32).to_le_bytes());
        out.extend_from_slice(&header);
        out.extend_from_slice(&Sha256::digest(&self.executable));
        out.extend_from_slice(&self.executable);
        out
    }

    /// Parses an artifact. Anything malformed (wrong magic, another format version, truncation,
    /// a payload whose checksum does not match) is an [`ArtifactError`] (as [`Error::Artifact`]).
    pub fn from_bytes(bytes: &[u8]) -> Result<Artifact> {
        Ok(Artifact::parse(bytes)?)
    }

    fn parse(bytes: &[u8]) -> Parsed<Artifact> {
        let mut r = Reader { bytes, at: 0 };
        if r.take(8)? != MAGIC {
            return Err(ArtifactError::NotAnArtifact);
        }
        let version = r.u32()?;
        if version != FORMAT_VERSION {
            return Err(ArtifactError::Version { version, supported: FORMAT_VERSION });
        }
        let header_len = r.u32()? as usize;
        if header_len > MAX_HEADER_LEN {
            return Err(ArtifactError::HeaderTooLong { len: header_len, limit: MAX_HEADER_LEN });
        }
        let mut h = Reader { bytes: r.take(header_len)?, at: 0 };
        let platform_name = h.string()?;
        let platform_version = h.string()?;
        let xla_version = h.flagged_i64()?;
        let api_version = ApiVersion { major: h.i32()?, minor: h.i32()? };
        let has_shlo = h.flag()?;
        let shlo_parts = [h.i64()?, h.i64()?, h.i64()?];
        let shlo = match (has_shlo, StableHloVersion::from_parts(&shlo_parts)) {
            (false, _) => None,
            (true, Some(v)) => Some(v),
            (true, None) => {
                let [a, b, c] = shlo_parts;
                return Err(ArtifactError::Header(format!("StableHLO version {a}.{b}.{c}")));
            }
        };
        let (replicas, partitions, device_count) = (h.i64()?, h.i64()?, h.i64()?);
        let count = |value: i64, what: &str| {
            usize::try_from(value).map_err(|_| ArtifactError::Header(format!("{value} {what}")))
        };
        let (num_replicas, num_partitions) = (count(replicas, "replicas")?, count(partitions, "partitions")?);
        let program_fingerprint = h.array32()?;
        let build_key = h.array32()?;
        let target = match h.u8()? {
            0 => Target::Devices,
            1 => Target::Topology,
            other => return Err(ArtifactError::Header(format!("unknown target {other}"))),
        };
        // Written since GPU targets were added; older artifacts end here.
        let gpu_target = if h.at < h.bytes.len() && h.flag()? {
            Some(GpuTargetRecord { name: h.string()?, topology: h.string()?, fingerprint: h.array32()? })
        } else {
            None
        };
        // Any further header bytes are fields of a newer writer: skipped.
        let checksum = r.array32()?;
        let executable = &bytes[r.at..];
        if executable.is_empty() {
            return Err(ArtifactError::NoExecutable);
        }
        if <[u8; 32]>::from(Sha256::digest(executable)) != checksum {
            return Err(ArtifactError::Checksum);
        }
        let header = ArtifactHeader {
            plugin: PluginIdentity {
                platform_name,
                platform_version,
                xla_version,
                api_version,
                stablehlo_version: shlo,
            },
            num_replicas,
            num_partitions,
            device_count,
            program_fingerprint,
            build_key,
            target,
            gpu_target,
        };
        Ok(Artifact { header, executable: executable.to_vec() })
    }

    /// Reads an artifact file.
    pub fn read(path: impl AsRef<Path>) -> Result<Artifact> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        Ok(Artifact::parse(&bytes)
            .map_err(|e| ArtifactError::InFile { path: path.to_path_buf(), source: Box::new(e) })?)
    }

    /// Writes the artifact atomically: to a temporary file in the same folder, then renamed, so a
    /// reader never sees half a file.
    pub fn write(&self, path: impl AsRef<Path>) -> Result<()> {
        write_atomically(path.as_ref(), &self.to_bytes())
    }

    /// Checks that `client`'s plugin can load this artifact: the same plugin build (platform,
    /// version, `xla_version`, API and StableHLO versions) and enough devices.
    pub fn check_compatible(&self, client: &Client) -> Result<()> {
        let here = PluginIdentity::of_client(client);
        let made = &self.header.plugin;
        if let Some(gpu) = self.header.gpu_target.as_ref().filter(|_| made.platform_name != here.platform_name) {
            return Err(Error::invalid(format!(
                "the artifact was compiled for the {gpu} with the {made}; this plugin is the {here}. It runs only on \
                 that GPU with that plugin build: run it there, or compile the program for this plugin with \
                 `pjrt compile` (or run the source program)"
            )));
        }
        // A GPU target's topology reports the description's device name as its platform
        // version, where a client on the GPU reports its CUDA version: for those artifacts the
        // build is told by the other fields.
        let same_build = match &self.header.gpu_target {
            Some(_) => PluginIdentity { platform_version: here.platform_version.clone(), ..made.clone() } == here,
            None => *made == here,
        };
        if !same_build {
            return Err(Error::invalid(format!(
                "the artifact was compiled for the {made}; this plugin is the {here}. A serialized executable \
                 loads only on the plugin build that made it: recompile the program for this plugin with \
                 `pjrt compile` (or run the source program)"
            )));
        }
        let needed = self.header.num_replicas.saturating_mul(self.header.num_partitions);
        let available = client.devices().len();
        if needed > available {
            return Err(Error::invalid(format!(
                "the artifact runs on {} replicas × {} partitions = {needed} devices, but the client has {available}",
                self.header.num_replicas, self.header.num_partitions
            )));
        }
        Ok(())
    }

    /// Checks compatibility, then loads the executable onto `client`'s devices without compiling.
    pub fn load(&self, client: &Client) -> Result<LoadedExecutable> {
        self.check_compatible(client)?;
        Ok(client.deserialize_and_load(&self.executable)?)
    }
}

/// Writes `bytes` to `path` atomically ([`crate::atomic_file`]), so concurrent writers and
/// readers never see a partial file.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    crate::atomic_file::write_with(path, |w| w.write_all(bytes)).map_err(|e| Error::io(path, e))
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    // Longer strings are cut (at a char boundary) rather than written with a bad length.
    let mut end = s.len().min(MAX_STRING_LEN);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    out.extend_from_slice(&(end as u16).to_le_bytes());
    out.extend_from_slice(&s.as_bytes()[..end]);
}

/// A bounds-checked cursor: every read fails cleanly past the end.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

pub use crate::error::ArtifactError;

type Parsed<T> = std::result::Result<T, ArtifactError>;

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Parsed<&'a [u8]> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len())
            .ok_or(ArtifactError::Truncated { expected: n, at: self.at })?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn array<const N: usize>(&mut self) -> Parsed<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn array32(&mut self) -> Parsed<[u8; 32]> {
        self.array()
    }

    fn u8(&mut self) -> Parsed<u8> {
        Ok(self.array::<1>()?[0])
    }

    fn flag(&mut self) -> Parsed<bool> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(ArtifactError::Header(format!("flag byte {other} is neither 0 nor 1"))),
        }
    }

    fn u32(&mut self) -> Parsed<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn i32(&mut self) -> Parsed<i32> {
        Ok(i32::from_le_bytes(self.array()?))
    }

    fn i64(&mut self) -> Parsed<i64> {
        Ok(i64::from_le_bytes(self.array()?))
    }

    fn flagged_i64(&mut self) -> Parsed<Option<i64>> {
        let present = self.flag()?;
        let value = self.i64()?;
        Ok(present.then_some(value))
    }

    fn string(&mut self) -> Parsed<String> {
        let len = u16::from_le_bytes(self.array()?) as usize;
        if len > MAX_STRING_LEN {
            return Err(ArtifactError::Header(format!("a {len}-byte string is too long")));
        }
        String::from_utf8(self.take(len)?.to_vec())
            .map_err(|_| ArtifactError::Header("a platform string is not UTF-8".into()))
    }
}

#[cfg(test)]
mod tests;
