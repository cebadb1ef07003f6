//! `pjrt plugin install|list`: installs a known plugin (or `openblas`, the LAPACK of JAX's linear
//! algebra kernels) from PyPI into the plugin cache, and lists
//! every plugin found with its path, platform and API version.

use crate::error::Error;
use crate::out::outln;
use pjrt_client::Plugin;
use pjrt_plugins::Source;
use serde_json::{json, Value as Json};

use crate::cli::PluginCommand;
use crate::ui::{self, invalid};

/// Runs a `pjrt plugin` subcommand.
pub fn exec(command: &PluginCommand) -> Result<(), Error> {
    match command {
        PluginCommand::Install { name, wheels, pip, json } => install(name, wheels, *pip, *json),
        PluginCommand::List { json } => list(*json),
    }
}

/// `pjrt plugin install NAME`: installs the known plugin NAME and prints where it went.
fn install(name: &str, wheels: &[std::path::PathBuf], pip: bool, json: bool) -> Result<(), Error> {
    let known = pjrt_plugins::known_package(name).ok_or_else(|| {
        invalid(format!(
            "unknown plugin `{name}`; known: {}, and `{}` (the OpenBLAS of JAX's LAPACK kernels) (a plugin you \
             already have needs no install: pass --plugin PATH)",
            pjrt_plugins::KNOWN_PLUGINS.iter().map(|p| p.name).collect::<Vec<_>>().join(", "),
            pjrt_plugins::OPENBLAS.name
        ))
    })?;
    let path = if pip {
        pjrt_plugins::install_with_pip(known, ui::log_line)?
    } else if !wheels.is_empty() {
        install_from_wheels(known, wheels)?
    } else {
        pjrt_plugins::install(known, ui::log_line)?
    };
    // A CUDA plugin's compiler pieces (ptxas, libdevice), which `pjrt compile` hands to XLA.
    let cuda_data_dir = pjrt_plugins::cuda_data_dir(&path);
    if json {
        outln!(
            "{}",
            json!({
                "name": known.name, "package": known.package, "version": known.version, "path": path,
                "cuda_data_dir": cuda_data_dir,
            })
        )?;
    } else {
        outln!("{}", path.display())?;
        if let Some(dir) = cuda_data_dir {
            outln!("{} (ptxas and libdevice for XLA)", dir.display())?;
        }
    }
    Ok(())
}

/// `--wheel FILE...`: an offline install from the user's wheels.
#[cfg(feature = "install")]
fn install_from_wheels(
    known: &pjrt_plugins::KnownPlugin,
    wheels: &[std::path::PathBuf],
) -> Result<std::path::PathBuf, Error> {
    for wheel in wheels {
        if !wheel.is_file() {
            return Err(invalid(format!("--wheel {}: no such file", wheel.display())));
        }
    }
    let sources = [pjrt_plugins::WheelSource::Files(wheels.to_vec())];
    let cache = pjrt_plugins::cache_dir().ok_or_else(|| {
        invalid("there is no plugin cache folder (no HOME); set PJRT_PLUGIN_CACHE to a folder only you can write")
    })?;
    Ok(pjrt_plugins::install_from(known, &sources, &cache, ui::log_line)?)
}

#[cfg(not(feature = "install"))]
fn install_from_wheels(_: &pjrt_plugins::KnownPlugin, _: &[std::path::PathBuf]) -> Result<std::path::PathBuf, Error> {
    Err(invalid("--wheel needs pjrt built with its `install` feature (on by default)".to_owned()))
}

/// `pjrt plugin list`: every plugin found, whether it loads, and where it was found.
fn list(as_json: bool) -> Result<(), Error> {
    let mut rows = Vec::new();
    for found in pjrt_plugins::find_all() {
        // A plugin of the cache is checked against its pin before it is loaded, like any other use.
        let checked = pjrt_plugins::verify_if_cached(found.clone()).map_err(pjrt_client::Error::from);
        let (version, error) = match checked.and_then(|checked| Plugin::load(checked.load_path())) {
            Ok(p) => (Some(p.api_version().to_string()), None),
            Err(e) => (None, Some(e.to_string())),
        };
        let source = match &found.source {
            Source::Explicit => "explicit".to_owned(),
            Source::Environment => "PJRT_PLUGIN".to_owned(),
            Source::PythonPackage(site) => format!("python ({})", site.display()),
            Source::Cache => "cache".to_owned(),
            _ => "other".to_owned(),
        };
        rows.push(json!({
            "name": found.name, "path": found.path, "platform": found.platform,
            "api_version": version, "source": source, "error": error,
        }));
    }
    if as_json {
        outln!("{}", Json::Array(rows))?;
        return Ok(());
    }
    if rows.is_empty() {
        outln!("no plugins found; install one with `pjrt plugin install cpu`")?;
    }
    for row in rows {
        outln!(
            "{:<12} {:<6} API {:<7} {}  [{}]{}",
            row["name"].as_str().unwrap_or(""),
            row["platform"].as_str().unwrap_or("?"),
            row["api_version"].as_str().unwrap_or("-"),
            row["path"].as_str().unwrap_or(""),
            row["source"].as_str().unwrap_or(""),
            row["error"].as_str().map(|e| format!("\n    cannot load: {e}")).unwrap_or_default()
        )?;
    }
    Ok(())
}
