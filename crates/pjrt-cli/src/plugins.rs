//! The plugin a command runs on: found from `--plugin` (installing the default CPU plugin when
//! nothing is found at all), and a client on it with as many devices as the program needs.

use crate::error::Error;
use pjrt_client::{Client, ClientOptions, Plugin};

use crate::cli::PluginArg;
use crate::ui;

/// Resolves the plugin to use; installs the default CPU plugin when nothing is found at all.
pub(crate) fn resolve_plugin(arg: &PluginArg) -> pjrt_client::Result<Plugin> {
    let found = pjrt_plugins::resolve_or_install(arg.plugin.as_deref(), ui::log_line)?;
    // For a plugin of the cache: exactly the bytes that were checked against its pin.
    let plugin = Plugin::load(found.load_path())?;
    // With --trace, the plugin's own profiler (if it has one) records from here on.
    crate::trace::profile_plugin(&plugin);
    Ok(plugin)
}

/// Whether `plugin` is a CPU plugin (one that makes as many devices as it is asked for).
pub(crate) fn plugin_is_cpu(plugin: &Plugin) -> bool {
    pjrt_plugins::KNOWN_PLUGINS.iter().any(|k| k.platform == "cpu" && plugin.path().ends_with(k.library))
        || plugin.path().to_string_lossy().contains("cpu")
}

/// A client with enough devices: the CPU plugins make as many as asked for.
pub(crate) fn cpu_aware_client(plugin: &Plugin, devices: i64) -> Result<Client, Error> {
    let mut options = ClientOptions::new();
    if devices > 1 && plugin_is_cpu(plugin) {
        options = options.cpu_device_count(devices);
    }
    Ok(Client::new(plugin, &options)?)
}

/// Whether `plugin` is a CUDA plugin: a known one, or a library in JAX's `xla_cuda*` layout.
pub(crate) fn plugin_is_cuda(plugin: &Plugin) -> bool {
    pjrt_plugins::KNOWN_PLUGINS.iter().any(|k| k.platform == "cuda" && plugin.path().ends_with(k.library))
        || plugin.path().to_string_lossy().contains("cuda")
}

/// Whether `plugin` is the TPU plugin: the known one, or a library named `libtpu.so`.
pub(crate) fn plugin_is_tpu(plugin: &Plugin) -> bool {
    pjrt_plugins::KNOWN_PLUGINS.iter().any(|k| k.platform == "tpu" && plugin.path().ends_with(k.library))
        || plugin.path().file_name().is_some_and(|n| n == "libtpu.so")
}

/// Whether a failed `PJRT_Client_Create` means "no device here" rather than a broken plugin: the
/// CUDA plugins say FAILED_PRECONDITION ("No visible GPU devices"), libtpu NOT_FOUND ("TPU
/// initialization failed: No jellyfish device found"). Such a plugin still loads, and what it
/// answers without a client (attributes, extensions, topologies, compilation) is described.
pub(crate) fn no_device_here(error: &pjrt_client::Error) -> bool {
    use pjrt_client::ErrorCode;
    matches!(error, pjrt_client::Error::Pjrt { .. })
        && matches!(error.code(), Some(ErrorCode::FailedPrecondition | ErrorCode::NotFound))
}

/// What a plugin that failed to load lacks, when the loader's `message` says a library or a
/// symbol is missing and the plugin at `path` is one whose runtime lives outside its wheel:
/// JAX's ROCm plugins (ROCm's runtime, not on the package index) and Intel's XPU plugin (Level
/// Zero's loader from Debian's `libze1`, the oneAPI runtime wheels, and Python's C API). `None`
/// for other plugins and other failures.
pub(crate) fn missing_runtime(path: &std::path::Path, message: &str) -> Option<String> {
    let missing_library = message
        .split(": cannot open shared object file")
        .next()
        .filter(|_| message.contains(": cannot open shared object file"))
        .and_then(|before| before.rsplit([' ', ':']).find(|word| !word.is_empty()));
    let missing_symbol = message.split("undefined symbol: ").nth(1).map(|s| s.split([',', ' ']).next().unwrap_or(s));
    let dirs = pjrt_plugins::runtime_library_dirs(path);
    let path = path.to_string_lossy();
    if let Some(at) = path.find("xla_rocm") {
        let library = missing_library?;
        let release: String = path[at + "xla_rocm".len()..].chars().take_while(|c| c.is_ascii_digit()).collect();
        return Some(format!(
            "{library} is the first library of ROCm's runtime that the ROCm plugin needs and this machine lacks; \
             ROCm's runtime (HIP, rocBLAS, MIOpen, rocprofiler-sdk, ...) is not on the package index (PyPI), and \
             Debian packages ROCm 5 only: install ROCm {release} (the runtime the plugin's name asks for) from AMD's \
             repositories, then load the plugin again"
        ));
    }
    if path.contains("intel_extension_for_openxla") {
        if let Some(symbol) = missing_symbol.filter(|s| s.starts_with("Py")) {
            return Some(format!(
                "the Intel plugin calls Python's C API ({symbol}) and this process has no libpython: run pjrt with \
                 libpython loaded, e.g. LD_PRELOAD=libpython3.11.so.1.0 (pjrt never loads Python itself)"
            ));
        }
        return match missing_library? {
            "libze_loader.so.1" => Some(
                "libze_loader.so.1 (Level Zero's loader) is missing: install it from the system's packages \
                 (Debian: apt-get install libze1)"
                    .into(),
            ),
            library if dirs.is_empty() => Some(format!(
                "{library} is missing: the Intel plugin finds the oneAPI runtime only on the library path; \
                 `pjrt plugin install intel` installs the runtime wheels beside it (<package>.data/data/lib): \
                 put those folders on LD_LIBRARY_PATH"
            )),
            library => Some(format!(
                "{library} is missing: the Intel plugin finds the oneAPI runtime only on the library path; run pjrt \
                 with LD_LIBRARY_PATH={} (the runtime wheels `pjrt plugin install intel` installed beside it)",
                std::env::join_paths(&dirs).map(|p| p.to_string_lossy().into_owned()).unwrap_or_default()
            )),
        };
    }
    None
}

/// `--client-option NAME=VALUE` flags as client create options: `true`/`false` a bool, an
/// integer an int64, anything else a string.
pub(crate) fn client_options(specs: &[String]) -> Result<ClientOptions, Error> {
    let mut options = ClientOptions::new();
    for spec in specs {
        let (name, value) = spec
            .split_once('=')
            .ok_or_else(|| ui::invalid(format!("--client-option needs NAME=VALUE, got `{spec}`")))?;
        options = match (value, value.parse::<i64>()) {
            ("true" | "false", _) => options.set(name, value == "true"),
            (_, Ok(number)) => options.set(name, number),
            _ => options.set(name, value),
        };
    }
    Ok(options)
}

#[cfg(test)]
mod tests {
    use super::missing_runtime;
    use std::path::Path;

    #[test]
    fn the_first_missing_runtime_library_is_named_for_rocm_and_intel_only() {
        let rocm = Path::new("/c/jax-rocm7-pjrt-0.12.0/jax_plugins/xla_rocm7/xla_rocm_plugin.so");
        let message = "cannot load PJRT plugin /x.so: cannot open it as a shared library: librocprofiler-sdk.so.1: \
                       cannot open shared object file: No such file or directory";
        let hint = missing_runtime(rocm, message).unwrap();
        assert!(hint.starts_with("librocprofiler-sdk.so.1 is the first library of ROCm's runtime"), "{hint}");
        assert!(hint.contains("not on the package index") && hint.contains("install ROCm 7 "), "{hint}");
        let intel = Path::new("/c/jax_plugins/intel_extension_for_openxla/pjrt_plugin_xpu.so");
        let ze = message.replace("librocprofiler-sdk.so.1", "libze_loader.so.1");
        assert!(missing_runtime(intel, &ze).unwrap().contains("apt-get install libze1"));
        let py = "cannot open it as a shared library: /c/pjrt_plugin_xpu.so: undefined symbol: PyExc_TypeError";
        assert!(missing_runtime(intel, py).unwrap().contains("LD_PRELOAD=libpython"));
        assert_eq!(missing_runtime(Path::new("/c/libtpu/libtpu.so"), message), None);
        assert_eq!(missing_runtime(rocm, "PJRT_Plugin_Initialize failed"), None);
    }
}
