//! Cache keys: what identifies a compile (program, options, plugin, devices, environment), for
//! the compile cache and the build key of an artifact.

use std::path::Path;

use sha2::{Digest, Sha256};

use pjrt_client::{Client, CompileOptions, GpuTarget, GpuTopologyShape, Plugin, Program, Topology};

use super::PluginIdentity;
use crate::error::Result;

/// A cache key (of the compile cache, and the build key of an artifact): SHA-256 of everything that changes a compiled executable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CacheKey(pub [u8; 32]);

impl CacheKey {
    /// Lower-case hex.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// The environment variables a plugin reads when it compiles, so part of every cache key:
/// `XLA_FLAGS` (XLA's `DebugOptions`, parsed from the environment by every XLA-based plugin:
/// optimization passes, CPU ISA limits, fast-math, autotuning) and `NEURON_CC_FLAGS` (the
/// AWS Neuron plugin's compiler flags). Not included: `TF_CPP_*` (logging only),
/// `TF_XLA_FLAGS` (read by TensorFlow's own XLA bridge, not by a PJRT plugin), and device
/// selection such as `CUDA_VISIBLE_DEVICES` (the key holds the client's devices instead).
///
/// ```
/// assert!(pjrt_formats::artifact::COMPILE_ENVIRONMENT.contains(&"XLA_FLAGS"));
/// ```
pub const COMPILE_ENVIRONMENT: &[&str] = &["XLA_FLAGS", "NEURON_CC_FLAGS"];

/// Adds each of [`COMPILE_ENVIRONMENT`] to a key: its name, and whether and how it is set.
fn compile_environment(field: &mut impl FnMut(&[u8])) {
    for name in COMPILE_ENVIRONMENT {
        field(name.as_bytes());
        match std::env::var_os(name) {
            Some(value) => {
                field(b"set");
                field(value.as_encoded_bytes());
            }
            None => field(b"unset"),
        }
    }
}

/// The plugin library's SHA-256, hashed once per change of the file
/// ([`pjrt_plugins::remembered_sha256`]).
fn plugin_file_digest(path: &Path) -> Result<String> {
    Ok(pjrt_plugins::remembered_sha256(path)?)
}

/// This host's CPU as a CPU plugin compiles for it: the model and feature flags the kernel
/// reports for the first processor (`/proc/cpuinfo`), else the architecture and the features
/// the standard library detects. Read once per process.
///
/// ```
/// let cpu = pjrt_formats::artifact::host_cpu();
/// assert!(cpu.contains(std::env::consts::ARCH));
/// ```
pub fn host_cpu() -> &'static str {
    static HOST_CPU: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HOST_CPU.get_or_init(|| {
        // x86 and arm64 name the model and features under these keys.
        const KEYS: &[&str] = &[
            "vendor_id",
            "cpu family",
            "model",
            "model name",
            "flags",
            "CPU implementer",
            "CPU architecture",
            "CPU variant",
            "CPU part",
            "Features",
        ];
        let mut out = format!("arch {}", std::env::consts::ARCH);
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        // The first processor's block ends at the first blank line.
        for line in cpuinfo.lines().take_while(|l| !l.trim().is_empty()) {
            if let Some((key, value)) = line.split_once(':') {
                if KEYS.contains(&key.trim()) {
                    out.push_str(&format!("\n{}: {}", key.trim(), value.trim()));
                }
            }
        }
        if !out.contains('\n') {
            out.push_str(&detected_features());
        }
        out
    })
}

/// The CPU features the standard library detects, where `/proc/cpuinfo` is not there.
fn detected_features() -> String {
    #[allow(unused_mut)]
    let mut features: Vec<&str> = Vec::new();
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        macro_rules! detect {
            ($($f:tt),*) => { $(if std::arch::is_x86_feature_detected!($f) { features.push($f); })* };
        }
        detect!(
            "sse4.2",
            "avx",
            "avx2",
            "fma",
            "f16c",
            "bmi2",
            "avx512f",
            "avx512bw",
            "avx512vl",
            "avx512dq",
            "avx512vnni",
            "avx512bf16"
        );
    }
    #[cfg(target_arch = "aarch64")]
    {
        macro_rules! detect {
            ($($f:tt),*) => { $(if std::arch::is_aarch64_feature_detected!($f) { features.push($f); })* };
        }
        detect!("neon", "fp16", "dotprod", "i8mm", "bf16", "sve", "sve2");
    }
    format!("\nfeatures: {}", features.join(" "))
}

/// The compile-cache key of `program` compiled with `options` for a GPU target without its
/// devices: the plugin build (as [`cache_key`]), the target's description
/// ([`GpuTarget::fingerprint`]), the GPU topology, the program, the options, and the CUDA data
/// folder the topology hands XLA (another `ptxas` may assemble other code).
pub fn gpu_target_key(
    plugin: &Plugin,
    topology: &Topology,
    target: &GpuTarget,
    shape: GpuTopologyShape,
    program: &Program,
    options: &CompileOptions,
) -> Result<CacheKey> {
    let mut hash = Sha256::new();
    let mut field = |bytes: &[u8]| {
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(bytes);
    };
    field(b"pjrt-client compile cache v2: GPU target");
    let id = PluginIdentity::of_topology(plugin, topology)?;
    field(id.platform_name.as_bytes());
    field(id.platform_version.as_bytes());
    field(&id.xla_version.map(|v| v.to_le_bytes().to_vec()).unwrap_or_default());
    field(&id.api_version.major.to_le_bytes());
    field(&id.api_version.minor.to_le_bytes());
    field(id.stablehlo_version.map(|v| format!("{v}")).unwrap_or_default().as_bytes());
    field(plugin_file_digest(plugin.path())?.as_bytes());
    compile_environment(&mut field);
    field(&target.fingerprint());
    field(shape.to_string().as_bytes());
    field(topology.cuda_data_dir().map(|d| d.display().to_string()).unwrap_or_default().as_bytes());
    field(program.format().as_pjrt_str().as_bytes());
    field(program.code());
    field(&options.to_bytes()?);
    Ok(CacheKey(hash.finalize().into()))
}

/// The key of compiling `program` with `options` on `client`.
pub fn cache_key(client: &Client, program: &Program, options: &CompileOptions) -> Result<CacheKey> {
    let mut hash = Sha256::new();
    // Every field is length-prefixed so no two different inputs hash the same bytes.
    let mut field = |bytes: &[u8]| {
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(bytes);
    };
    field(b"pjrt-client compile cache v2");
    let id = PluginIdentity::of_client(client);
    field(id.platform_name.as_bytes());
    field(id.platform_version.as_bytes());
    field(&id.xla_version.map(|v| v.to_le_bytes().to_vec()).unwrap_or_default());
    field(&id.api_version.major.to_le_bytes());
    field(&id.api_version.minor.to_le_bytes());
    field(id.stablehlo_version.map(|v| format!("{v}")).unwrap_or_default().as_bytes());
    // Two builds of a plugin can report the same versions; the library's content tells them apart.
    field(plugin_file_digest(client.plugin().path())?.as_bytes());
    compile_environment(&mut field);
    // A CPU plugin compiles for this host's CPU: code using its features must not load on another.
    if id.platform_name.eq_ignore_ascii_case("cpu") {
        field(host_cpu().as_bytes());
    }
    field(program.format().as_pjrt_str().as_bytes());
    field(program.code());
    field(&options.to_bytes()?);
    let devices = client.devices();
    field(&(devices.len() as u64).to_le_bytes());
    let addressable = client.addressable_devices();
    field(&(addressable.len() as u64).to_le_bytes());
    for device in &addressable {
        field(&device.id()?.to_le_bytes());
        field(device.kind()?.as_bytes());
    }
    field(&client.process_index().to_le_bytes());
    Ok(CacheKey(hash.finalize().into()))
}
