//! Where plugins are found ([`resolve`], [`find_all`]): an explicit path or name, `PJRT_PLUGIN`,
//! Python packages, the plugin cache.

use std::path::{Path, PathBuf};

use crate::catalog::{cached_path, default_plugin, known_plugin, KnownPlugin, KNOWN_PLUGINS};
use crate::error::{Error, Result};
use crate::install::install;
use crate::trace::span;
use crate::trust::cache_dir;
use crate::verified::VerifiedLibrary;
use crate::verify::verified_cached;

/// Where a plugin was found.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Source {
    /// Given explicitly.
    Explicit,
    /// From the `PJRT_PLUGIN` environment variable.
    Environment,
    /// Inside a Python package in site-packages.
    PythonPackage(PathBuf),
    /// In this crate's plugin cache.
    Cache,
}

/// A plugin file found on this machine (not loaded). Load it with
/// `pjrt_client::Plugin::load(found.load_path())`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundPlugin {
    /// A short name (`cpu`, `cuda12`, `tpu`, or the package name).
    pub name: String,
    /// The platform, when the package says it.
    pub platform: Option<String>,
    /// The shared library.
    pub path: PathBuf,
    /// Where it was found.
    pub source: Source,
    /// For a plugin of the cache, checked against its pin: the path that loads exactly the bytes
    /// that were checked ([`VerifiedLibrary::load_path`]).
    load_path: Option<PathBuf>,
}

impl FoundPlugin {
    /// A plugin found at `path`, to be loaded by that path.
    pub(crate) fn new(name: String, platform: Option<String>, path: PathBuf, source: Source) -> FoundPlugin {
        FoundPlugin { name, platform, path, source, load_path: None }
    }

    /// What to load: [`FoundPlugin::path`], except for a plugin of the cache, where it is the
    /// path that loads exactly the bytes checked against the plugin's pin
    /// ([`VerifiedLibrary::load_path`]: `/proc/self/fd/N` when the cache folder is one other
    /// users can change).
    ///
    /// ```
    /// let found = pjrt_plugins::resolve_or_install(None, |_| ())?;
    /// // pjrt_client::Plugin::load(found.load_path())
    /// assert!(found.load_path().is_file());
    /// # Ok::<(), pjrt_plugins::Error>(())
    /// ```
    pub fn load_path(&self) -> &Path {
        self.load_path.as_deref().unwrap_or(&self.path)
    }
}

/// The site-packages folders of the `python3` on `PATH` (empty when there is none), the ones
/// that exist.
///
/// Asking `python3` takes a process start (~100 ms behind a pyenv shim), so its answer (the
/// folder list, never the plugins in them) is remembered under [`cache_dir`]`/python-site-packages/`,
/// keyed on what decides which `python3` runs and what it answers: `PATH`, `PYTHONPATH`,
/// `PYTHONHOME`, `PYTHONUSERBASE`, `PYTHONNOUSERSITE`, `VIRTUAL_ENV`, `CONDA_PREFIX`, `HOME`,
/// pyenv's variables and version files, and the size, time and inode of every `python3` on
/// `PATH`. Any change asks again, as does an entry older than a day. An answer is remembered
/// only when the interpreter that gave it (python reports its binary) is the `python3` on `PATH`
/// after symlinks, or the one pyenv's shim would run: behind any other wrapper (asdf, mise, a
/// script or launcher that picks an interpreter per folder) python is asked every time. Set
/// `PJRT_NO_PYTHON_CACHE=1` to ask `python3` every time.
///
/// ```
/// for site in pjrt_plugins::python_site_packages() {
///     assert!(site.is_dir());
/// }
/// ```
pub fn python_site_packages() -> Vec<PathBuf> {
    let script = "import site, sys\n\
                  paths = list(getattr(site, 'getsitepackages', lambda: [])())\n\
                  user = getattr(site, 'getusersitepackages', lambda: None)()\n\
                  paths += [user] if user else []\n\
                  paths += [p for p in sys.path if p.endswith('-packages')]\n\
                  print('\\n'.join(paths))";
    let Some(answer) = crate::python_sites::site_packages_answer(script) else { return Vec::new() };
    let mut dirs: Vec<PathBuf> = Vec::new();
    for line in answer.lines() {
        let dir = PathBuf::from(line.trim());
        if dir.is_dir() && !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs
}

/// Plugins installed as Python packages under one site-packages folder.
pub fn plugins_in_site_packages(site: &Path) -> Vec<FoundPlugin> {
    let mut found = Vec::new();
    let source = Source::PythonPackage(site.to_path_buf());
    // JAX's plugin namespace: jax_plugins/xla_cuda12/xla_cuda_plugin.so, .../xla_rocm_plugin.so
    if let Ok(entries) = std::fs::read_dir(site.join("jax_plugins")) {
        let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        entries.sort();
        for dir in entries {
            let Ok(files) = std::fs::read_dir(&dir) else { continue };
            let mut files: Vec<_> = files.flatten().map(|e| e.path()).collect();
            files.sort();
            for file in files {
                if file.extension().is_some_and(|e| e == "so") {
                    let dir_name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                    let name = dir_name.trim_start_matches("xla_").to_owned();
                    let platform = if name.starts_with("cuda") {
                        Some("cuda".to_owned())
                    } else if name.starts_with("rocm") {
                        Some("rocm".to_owned())
                    } else {
                        None
                    };
                    found.push(FoundPlugin::new(name, platform, file, source.clone()));
                }
            }
        }
    }
    for known in KNOWN_PLUGINS {
        let path = site.join(known.library);
        // The CUDA plugins live in jax_plugins/ and were found above, under the same name.
        if path.is_file() && !found.iter().any(|f| f.path == path) {
            found.push(FoundPlugin::new(known.name.to_owned(), Some(known.platform.to_owned()), path, source.clone()));
        }
    }
    // `tpu` is also a known plugin (found just above, under its name); other layouts are not.
    let tpu = site.join("libtpu").join("libtpu.so");
    if tpu.is_file() && !found.iter().any(|f| f.path == tpu) {
        found.push(FoundPlugin::new("tpu".into(), Some("tpu".into()), tpu, source));
    }
    found
}

/// Every plugin this crate can find, in resolution order (environment, Python packages, cache).
pub fn find_all() -> Vec<FoundPlugin> {
    find_all_in(&python_site_packages())
}

/// [`find_all`] with the site-packages folders already known (asking `python3` for them is the
/// slow part: a process start).
fn find_all_in(sites: &[PathBuf]) -> Vec<FoundPlugin> {
    let mut found = Vec::new();
    if let Some(path) = std::env::var_os("PJRT_PLUGIN").filter(|p| !p.is_empty()) {
        found.push(FoundPlugin::new("PJRT_PLUGIN".into(), None, PathBuf::from(path), Source::Environment));
    }
    for site in sites {
        found.extend(plugins_in_site_packages(site));
    }
    for known in KNOWN_PLUGINS {
        let Some(path) = cached_path(known) else { break };
        if path.is_file() {
            found.push(FoundPlugin::new(known.name.into(), Some(known.platform.into()), path, Source::Cache));
        }
    }
    found
}

/// Resolves a plugin: `explicit` may be a path or a name (`cpu`, `cpu-0.106`, `cuda12`, `tpu`,
/// ...). Without it: `PJRT_PLUGIN`, then Python packages (accelerator plugins before CPU ones,
/// so an installed accelerator plugin wins), then the CPU plugins of the cache. Accelerator
/// plugins in the cache (`cuda12`, `cuda13`) are used only when named.
///
/// Python's site-packages folders are remembered between runs ([`python_site_packages`]), so
/// this starts no `python3` process when nothing that decides its answer changed; set
/// `PJRT_NO_PYTHON_CACHE=1` to ask it every time.
pub fn resolve(explicit: Option<&str>) -> Result<FoundPlugin> {
    let _span = span!(INFO, "find_plugin");
    let mut tried = Vec::new();
    if let Some(spec) = explicit {
        let path = Path::new(spec);
        if spec.contains('/') || spec.ends_with(".so") || path.is_file() {
            return Ok(FoundPlugin::new(spec.into(), None, path.to_path_buf(), Source::Explicit));
        }
        let all = find_all();
        if let Some(found) = all.into_iter().find(|f| f.name == spec && f.source != Source::Environment) {
            return verify_if_cached(found);
        }
        let hint = match known_plugin(spec) {
            Some(_) => format!("install it with pjrt_plugins::install (known plugin `{spec}`)"),
            None => format!(
                "known names: {}; or give a path to a .so file",
                KNOWN_PLUGINS.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
            ),
        };
        return Err(Error::NotFound { tried: format!("  plugin named `{spec}` ({hint})") });
    }
    if let Some(env) = find_all_in(&[]).into_iter().find(|f| f.source == Source::Environment) {
        // Before asking python3 for its site-packages, which takes a process start.
        return Ok(env);
    }
    tried.push("  $PJRT_PLUGIN (unset)".to_owned());
    let sites = python_site_packages();
    let all = find_all_in(&sites);
    tried.push(format!(
        "  Python packages (jax_plugins/*, lammps_jax_pjrt_cpu, fastatomstruct_xla_cpu, libtpu) in: {}",
        if sites.is_empty() {
            "no python3 on PATH".to_owned()
        } else {
            sites.iter().map(|s| s.display().to_string()).collect::<Vec<_>>().join(", ")
        }
    ));
    tried.push(match cache_dir() {
        Some(dir) => format!("  the plugin cache {}", dir.display()),
        None => "  no plugin cache (no HOME; set PJRT_PLUGIN_CACHE)".to_owned(),
    });
    let best = default_choice(all).ok_or(Error::NotFound { tried: tried.join("\n") })?;
    verify_if_cached(best)
}

/// The plugin [`resolve`] takes when none is named: a CPU plugin of the Python environment, then
/// any other plugin there (JAX's `jax_plugins/*`), then a CPU plugin of the cache, the default
/// one first. An accelerator plugin in the cache was installed to compile for its devices from
/// any machine (`pjrt plugin install cuda12`): it is used when named, never by default, so that
/// installing it does not turn a CPU machine's default into a plugin without devices.
fn default_choice(all: Vec<FoundPlugin>) -> Option<FoundPlugin> {
    let rank = |f: &FoundPlugin| match (f.platform.as_deref(), &f.source) {
        (Some("cpu"), Source::Cache) => 3,
        (Some("cpu"), _) => 2,
        _ => 1,
    };
    let by_default = |f: &FoundPlugin| match &f.source {
        Source::Environment => false,
        Source::Cache => f.platform.as_deref() == Some("cpu"),
        _ => true,
    };
    all.into_iter().filter(by_default).min_by_key(|f| (rank(f), if f.name == default_plugin().name { 0 } else { 1 }))
}

/// Like [`resolve`], but when no name was given and no plugin is found at all, installs the
/// default CPU plugin ([`default_plugin`], about 60 MB from PyPI, needs `python3` with `pip`)
/// into the cache and returns it. `log` receives what is being done, for the user.
///
/// This is what `pjrt run` and `pjrt info` do, and what the examples of pjrt-client's docs use:
///
/// ```
/// let found = pjrt_plugins::resolve_or_install(None, |line| eprintln!("{line}"))?;
/// assert!(found.path.is_file());
/// // Load it with pjrt_client::Plugin::load(found.load_path()).
/// # Ok::<(), pjrt_plugins::Error>(())
/// ```
pub fn resolve_or_install(name: Option<&str>, log: impl FnMut(&str)) -> Result<FoundPlugin> {
    resolve_or_install_with(
        name,
        resolve,
        |plugin, log| {
            install(plugin, log)?;
            verified_cached(plugin)
        },
        log,
    )
}

/// [`resolve_or_install`] with the resolving and installing steps given, so the decision can
/// be tested without touching the machine's plugins.
fn resolve_or_install_with<L: FnMut(&str)>(
    name: Option<&str>,
    resolve: impl FnOnce(Option<&str>) -> Result<FoundPlugin>,
    install: impl FnOnce(&KnownPlugin, &mut L) -> Result<VerifiedLibrary>,
    mut log: L,
) -> Result<FoundPlugin> {
    match resolve(name) {
        Err(Error::NotFound { .. }) if name.is_none() => {
            let default = default_plugin();
            let cache = cache_dir().map_or_else(|| "(no plugin cache)".to_owned(), |d| d.display().to_string());
            log(&format!(
                "no PJRT plugin found; installing the default CPU plugin ({}=={}, about 60 MB from PyPI) into {cache}",
                default.package, default.version,
            ));
            let verified = install(default, &mut log)?;
            Ok(FoundPlugin {
                load_path: Some(verified.load_path().to_path_buf()),
                ..FoundPlugin::new(
                    default.name.into(),
                    Some(default.platform.into()),
                    verified.path().to_path_buf(),
                    Source::Cache,
                )
            })
        }
        other => other,
    }
}

/// Plugins from the cache are checked against their published SHA-256 before use; the result's
/// [`FoundPlugin::load_path`] then loads exactly the bytes that were checked.
pub fn verify_if_cached(found: FoundPlugin) -> Result<FoundPlugin> {
    if found.source != Source::Cache {
        return Ok(found);
    }
    match known_plugin(&found.name) {
        Some(known) => {
            let verified = verified_cached(known)?;
            Ok(FoundPlugin {
                path: verified.path().to_path_buf(),
                load_path: Some(verified.load_path().to_path_buf()),
                ..found
            })
        }
        None => Ok(found),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(name: &str) -> FoundPlugin {
        FoundPlugin::new(name.into(), None, PathBuf::from("/x.so"), Source::Explicit)
    }

    fn not_found(_: Option<&str>) -> Result<FoundPlugin> {
        Err(Error::NotFound { tried: "  nowhere".into() })
    }

    #[test]
    fn resolve_or_install_installs_the_default_only_when_nothing_is_found_and_no_name_was_given() {
        let mut lines = Vec::new();
        let got = resolve_or_install_with(
            None,
            not_found,
            |plugin, _| {
                assert_eq!(plugin, default_plugin());
                Ok(VerifiedLibrary::by_path(PathBuf::from("/cache/plugin.so")))
            },
            |line| lines.push(line.to_owned()),
        )
        .unwrap();
        assert_eq!(got.name, default_plugin().name);
        assert_eq!(got.path, PathBuf::from("/cache/plugin.so"));
        assert_eq!(got.source, Source::Cache);
        assert!(lines[0].contains("installing the default CPU plugin"), "{lines:?}");

        // A named plugin that is missing is an error, not an install of something else.
        let e = resolve_or_install_with(Some("cuda12"), not_found, |_, _| panic!("no install"), |_| ()).unwrap_err();
        assert!(matches!(e, Error::NotFound { .. }), "{e}");
        // A plugin that is found is returned as it is.
        let got = resolve_or_install_with(None, |_| Ok(found("tpu")), |_, _| panic!("no install"), |_| ()).unwrap();
        assert_eq!(got.name, "tpu");
        // Other errors (a tampered cached plugin) are not papered over by installing.
        let tampered = |_: Option<&str>| Err(Error::Install { name: "cpu".into(), message: "changed".into() });
        let e = resolve_or_install_with(None, tampered, |_, _| panic!("no install"), |_| ()).unwrap_err();
        assert!(matches!(e, Error::Install { .. }), "{e}");
        // A failed install is reported.
        let e = resolve_or_install_with(
            None,
            not_found,
            |p, _| Err(Error::Install { name: p.name.into(), message: "no pip".into() }),
            |_| (),
        )
        .unwrap_err();
        assert!(e.to_string().contains("no pip"), "{e}");
    }

    #[test]
    fn a_cuda_plugin_in_the_cache_is_never_the_default() {
        let found = |name: &str, platform: &str, source: Source| {
            FoundPlugin::new(name.into(), Some(platform.into()), PathBuf::from(format!("/x/{name}.so")), source)
        };
        let site = || Source::PythonPackage(PathBuf::from("/site"));
        let names = |all: Vec<FoundPlugin>| default_choice(all).map(|f| f.name);
        // Only an accelerator plugin in the cache: no default (the CPU plugin gets installed).
        assert_eq!(names(vec![found("cuda12", "cuda", Source::Cache)]), None);
        assert_eq!(
            names(vec![found("cuda12", "cuda", Source::Cache), found("cpu-0.106", "cpu", Source::Cache)]),
            Some("cpu-0.106".into())
        );
        assert_eq!(
            names(vec![found("cpu-0.106", "cpu", Source::Cache), found("cpu", "cpu", Source::Cache)]),
            Some("cpu".into()),
            "the default CPU plugin first"
        );
        // JAX's plugins of the Python environment come first (the user installed them to use them).
        assert_eq!(
            names(vec![found("cpu", "cpu", Source::Cache), found("cuda12", "cuda", site())]),
            Some("cuda12".into())
        );
        assert_eq!(names(vec![found("cpu", "cpu", Source::Environment)]), None, "PJRT_PLUGIN is handled before");
    }
}
