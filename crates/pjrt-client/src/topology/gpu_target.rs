//! GPU targets for compiling without the GPU: a `stream_executor.GpuTargetConfigProto` (in
//! protobuf text format) that the CUDA plugin compiles against instead of asking a device, and
//! the shape of the machine (`partitions x hosts x devices per host`).

use std::fmt;
use std::path::Path;

use crate::call::named_value::Value;
use crate::error::{Error, ErrorCode, Result};
use crate::plugin::Plugin;
use crate::topology::Topology;

/// The largest target description accepted (the built-in ones are under 3 KB).
const MAX_TEXT_LEN: usize = 1 << 20;
/// The most devices a GPU topology may have here (a sanity bound, far above any machine).
const MAX_DEVICES: u64 = 1 << 16;

/// The built-in targets: name and description. Each description is written for this crate from
/// the device's public figures; the sources are named in each file.
const BUILTIN: &[(&str, &str)] = &[
    ("h100", include_str!("gpu_targets/h100.txtpb")),
    ("h200", include_str!("gpu_targets/h200.txtpb")),
    ("a100", include_str!("gpu_targets/a100.txtpb")),
    ("b200", include_str!("gpu_targets/b200.txtpb")),
    ("l4", include_str!("gpu_targets/l4.txtpb")),
];

/// An NVIDIA GPU to compile for, described as XLA's `stream_executor.GpuTargetConfigProto` in
/// protobuf text format: compute capability, SM count, clock, memory size and bandwidth, L2
/// size, shared memory and register limits, cuDNN version. The CUDA plugin compiles against
/// it without a GPU ("deviceless compilation"); see [`Topology::for_gpu_target`].
///
/// ```
/// use pjrt_client::GpuTarget;
///
/// let h100 = GpuTarget::builtin("h100").unwrap();
/// assert_eq!(h100.name(), "h100");
/// assert!(h100.text().contains("cuda_compute_capability { major: 9 minor: 0 }"));
/// assert_eq!(GpuTarget::builtin_names(), ["h100", "h200", "a100", "b200", "l4"]);
/// // Any other GPU: its description, e.g. from a file.
/// let mine = GpuTarget::from_text("my-gpu", h100.text().replace("core_count: 132", "core_count: 114"))?;
/// assert_ne!(mine.fingerprint(), h100.fingerprint());
/// # Ok::<(), pjrt_client::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct GpuTarget {
    name: String,
    text: String,
}

impl GpuTarget {
    /// A built-in target by name: `h100` (H100 SXM5 80GB), `h200`, `a100` (A100 SXM4 80GB),
    /// `b200`, `l4`.
    pub fn builtin(name: &str) -> Option<GpuTarget> {
        BUILTIN
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(name, text)| GpuTarget { name: (*name).to_owned(), text: (*text).to_owned() })
    }

    /// The names [`GpuTarget::builtin`] knows.
    pub fn builtin_names() -> Vec<&'static str> {
        BUILTIN.iter().map(|(n, _)| *n).collect()
    }

    /// A target from its `GpuTargetConfigProto` text, named `name` (for messages and artifact
    /// headers). Checked here: not empty, at most 1 MiB, no NUL byte, a `gpu_device_info`
    /// message present; the plugin parses the rest and says what it cannot read.
    pub fn from_text(name: impl Into<String>, text: impl Into<String>) -> Result<GpuTarget> {
        let (name, text) = (name.into(), text.into());
        if name.is_empty() || name.len() > 256 || name.contains(['\0', '\n']) {
            return Err(Error::invalid("a GPU target's name must be 1 to 256 characters on one line"));
        }
        if text.len() > MAX_TEXT_LEN {
            return Err(Error::invalid(format!(
                "GPU target `{name}`: the description is {} bytes, more than the {MAX_TEXT_LEN} accepted",
                text.len()
            )));
        }
        if text.contains('\0') {
            return Err(Error::invalid(format!("GPU target `{name}`: the description holds a NUL byte")));
        }
        if !text.contains("gpu_device_info") {
            return Err(Error::invalid(format!(
                "GPU target `{name}`: not a stream_executor.GpuTargetConfigProto in text format (no `gpu_device_info`)"
            )));
        }
        Ok(GpuTarget { name, text })
    }

    /// A built-in name, or else a `.txtpb` file holding a description (named by its file stem).
    pub fn from_name_or_file(spec: &str) -> Result<GpuTarget> {
        if let Some(target) = GpuTarget::builtin(spec) {
            return Ok(target);
        }
        let path = Path::new(spec);
        if !path.is_file() {
            return Err(Error::invalid(format!(
                "`{spec}` is neither a built-in GPU target ({}) nor a GpuTargetConfigProto text file",
                GpuTarget::builtin_names().join(", ")
            )));
        }
        let len = std::fs::metadata(path).map_err(|e| Error::io(path, e))?.len();
        if len > MAX_TEXT_LEN as u64 {
            return Err(Error::invalid(format!("{spec} is {len} bytes, more than the {MAX_TEXT_LEN} accepted")));
        }
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| spec.to_owned());
        GpuTarget::from_text(name, text)
    }

    /// The target's name (`h100`, or what it was given).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The `GpuTargetConfigProto` text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// SHA-256 of the description: what the compile cache and artifacts key the target by.
    pub fn fingerprint(&self) -> [u8; 32] {
        use sha2::{Digest, Sha256};
        Sha256::digest(self.text.as_bytes()).into()
    }
}

impl fmt::Debug for GpuTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GpuTarget").field("name", &self.name).field("bytes", &self.text.len()).finish()
    }
}

/// How many GPUs a topology has and how they are grouped: `partitions x hosts x devices per
/// host`, as XLA's GPU topology string reads it (`"1x1x8"`: one host with 8 GPUs).
///
/// ```
/// use pjrt_client::GpuTopologyShape;
///
/// let eight = GpuTopologyShape::devices(8)?;
/// assert_eq!(eight.to_string(), "1x1x8");
/// let pods: GpuTopologyShape = "2x4x8".parse()?;
/// assert_eq!(pods.device_count(), 64);
/// assert!("0x1x1".parse::<GpuTopologyShape>().is_err());
/// # Ok::<(), pjrt_client::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GpuTopologyShape {
    /// Partitions (slices) of hosts.
    pub partitions: u32,
    /// Hosts per partition.
    pub hosts: u32,
    /// GPUs per host.
    pub devices_per_host: u32,
}

impl GpuTopologyShape {
    /// One host with `count` GPUs.
    pub fn devices(count: u32) -> Result<GpuTopologyShape> {
        GpuTopologyShape::new(1, 1, count)
    }

    /// A shape, checked: each number at least 1, at most 65,536 devices in all.
    pub fn new(partitions: u32, hosts: u32, devices_per_host: u32) -> Result<GpuTopologyShape> {
        let shape = GpuTopologyShape { partitions, hosts, devices_per_host };
        if partitions == 0 || hosts == 0 || devices_per_host == 0 {
            return Err(Error::invalid(format!("GPU topology {shape}: every number must be at least 1")));
        }
        if shape.device_count() > MAX_DEVICES {
            return Err(Error::invalid(format!(
                "GPU topology {shape}: {} devices, more than the {MAX_DEVICES} accepted",
                shape.device_count()
            )));
        }
        Ok(shape)
    }

    /// All GPUs: partitions × hosts × devices per host.
    pub fn device_count(&self) -> u64 {
        u64::from(self.partitions) * u64::from(self.hosts) * u64::from(self.devices_per_host)
    }
}

impl fmt::Display for GpuTopologyShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}x{}", self.partitions, self.hosts, self.devices_per_host)
    }
}

impl std::str::FromStr for GpuTopologyShape {
    type Err = Error;

    fn from_str(text: &str) -> Result<GpuTopologyShape> {
        let parts: Vec<&str> = text.split('x').collect();
        let numbers: Option<Vec<u32>> = parts.iter().map(|p| p.trim().parse().ok()).collect();
        match numbers.as_deref() {
            Some([p, h, d]) => GpuTopologyShape::new(*p, *h, *d),
            _ => Err(Error::invalid(format!(
                "`{text}` is not a GPU topology: expected PARTITIONSxHOSTSxDEVICES, e.g. 1x1x8"
            ))),
        }
    }
}

impl Topology {
    /// A topology of `shape` GPUs of the kind `target` describes, made by a CUDA plugin without
    /// any GPU present (the create options `target_config` and `topology`), for
    /// [`Topology::compile`]. The plugin must be a CUDA PJRT plugin (e.g. `cuda12` or `cuda13`
    /// from `pjrt_plugins::install`); others refuse with [`Error::Pjrt`] (UNIMPLEMENTED for
    /// the CPU plugins).
    ///
    /// To compile, XLA also needs `ptxas` and `libdevice`. With the `plugins` feature (off by
    /// default; pjrt-formats and the `pjrt` command turn it on), when they are installed beside
    /// the plugin (`pjrt_plugins::cuda_data_dir`: the known CUDA plugins install them), each
    /// [`Topology::compile`] on this topology passes their folder as the compile option
    /// `xla_gpu_cuda_data_dir` ([`crate::DebugOption::GpuCudaDataDir`]), unless the options
    /// set it already; nothing of the process (`PATH`, `XLA_FLAGS`) is changed. Without the
    /// feature, set that option yourself.
    ///
    /// ```no_run
    /// use pjrt_client::{CompileOptions, GpuTarget, GpuTopologyShape, Plugin, Program, Topology};
    ///
    /// // The CUDA 12 plugin and its compiler pieces (about 230 MB from PyPI, 530 MB installed).
    /// let library = pjrt_plugins::install(pjrt_plugins::known_plugin("cuda12").unwrap(), |line| eprintln!("{line}"))?;
    /// let plugin = Plugin::load(&library)?;
    /// let h100 = GpuTarget::builtin("h100").unwrap();
    /// let topology = Topology::for_gpu_target(&plugin, &h100, GpuTopologyShape::devices(1)?)?;
    /// assert_eq!(topology.platform_name()?, "cuda");
    /// assert!(topology.cuda_data_dir().unwrap().join("bin/ptxas").is_file());
    /// let options = CompileOptions::new();
    /// let program = Program::mlir_text(r#"
    ///   func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
    ///     %0 = stablehlo.add %a, %a : tensor<4xf32>
    ///     return %0 : tensor<4xf32>
    ///   }"#)?;
    /// let bytes = topology.compile(&program, &options, None)?.serialize()?; // an H100 executable
    /// assert!(!bytes.is_empty());
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn for_gpu_target(plugin: &Plugin, target: &GpuTarget, shape: GpuTopologyShape) -> Result<Topology> {
        // Re-checked: the shape's fields are public.
        let shape = GpuTopologyShape::new(shape.partitions, shape.hosts, shape.devices_per_host)?;
        let options = [
            ("target_config".to_owned(), Value::String(target.text.clone())),
            ("topology".to_owned(), Value::String(shape.to_string())),
        ];
        let mut topology = Topology::create(plugin, "cuda", &options).map_err(|e| match e {
            Error::Pjrt { code: ErrorCode::Unimplemented, .. } => Error::invalid(format!(
                "the plugin {} cannot make GPU topologies ({e}); use a CUDA plugin (e.g. `cuda12`)",
                plugin.path().display()
            )),
            other => other,
        })?;
        topology.cuda_data_dir = cuda_data_dir_beside(plugin.path());
        Ok(topology)
    }

    /// The folder of `ptxas` and `libdevice` this topology hands to each compilation whose
    /// options do not set `xla_gpu_cuda_data_dir` themselves: the one installed beside the
    /// plugin (`pjrt_plugins::cuda_data_dir`), for a topology made by
    /// [`Topology::for_gpu_target`]; `None` otherwise.
    ///
    /// ```
    /// # use pjrt_client::{Client, ClientOptions};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// let client = Client::new(&plugin, &ClientOptions::new())?;
    /// assert_eq!(client.topology()?.cuda_data_dir(), None); // a CPU client's topology
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn cuda_data_dir(&self) -> Option<&Path> {
        self.cuda_data_dir.as_deref()
    }
}

/// The `ptxas` and `libdevice` folder installed beside a CUDA plugin (`pjrt_plugins` knows where
/// the known plugins put it); without the `plugins` feature, none.
#[cfg(feature = "plugins")]
fn cuda_data_dir_beside(plugin: &Path) -> Option<std::path::PathBuf> {
    pjrt_plugins::cuda_data_dir(plugin)
}

#[cfg(not(feature = "plugins"))]
fn cuda_data_dir_beside(_plugin: &Path) -> Option<std::path::PathBuf> {
    None
}
