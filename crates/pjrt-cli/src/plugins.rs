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

/// `--client-option NAME=VALUE` flags as client create options: `true`/`false` a bool, an
/// integer an int64, anything else a string ([`ClientOptions::set_text`]).
pub(crate) fn client_options(specs: &[String]) -> Result<ClientOptions, Error> {
    let mut options = ClientOptions::new();
    for spec in specs {
        options = options
            .set_text(spec)
            .map_err(|_| ui::invalid(format!("--client-option needs NAME=VALUE, got `{spec}`")))?;
    }
    Ok(options)
}
