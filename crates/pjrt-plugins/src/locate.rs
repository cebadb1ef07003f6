//! Where plugins are found ([`resolve`]), which ones this crate knows ([`KNOWN_PLUGINS`]), and
//! how they are installed and verified ([`install`], [`verified_cached`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::{Error, Result};
use crate::trace::span;
use crate::trust::{cache_dir, check_trusted_dir, check_trusted_file, check_trusted_metadata, create_private_dir};
use crate::verified::{sha256_of, VerifiedLibrary};

/// A plugin this crate knows how to install from PyPI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KnownPlugin {
    /// Short name used by `pjrt plugin install NAME` and `--plugin NAME`.
    pub name: &'static str,
    /// The platform it serves.
    pub platform: &'static str,
    /// The PyPI distribution.
    pub package: &'static str,
    /// The pinned version.
    pub version: &'static str,
    /// The shared library inside the installed package.
    pub library: &'static str,
    /// SHA-256 of that library, checked after installing.
    pub sha256: &'static str,
    /// Files of other packages installed into the same folder (the CUDA plugins' compiler
    /// pieces, `ptxas` and `libdevice`), pinned and checked the same way. Empty for the CPU
    /// plugins.
    pub tools: &'static [KnownTool],
    /// For a CUDA plugin: the folder, inside the install, that holds `bin/ptxas` and
    /// `nvvm/libdevice/libdevice.10.bc`, i.e. what XLA's `xla_gpu_cuda_data_dir` must name
    /// ([`cuda_data_dir`]).
    pub cuda_data_dir: Option<&'static str>,
}

/// One file of a PyPI package that a [`KnownPlugin`] needs beside its library.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KnownTool {
    /// The PyPI distribution that holds it.
    pub package: &'static str,
    /// The pinned version.
    pub version: &'static str,
    /// The file inside the installed package.
    pub path: &'static str,
    /// SHA-256 of that file, checked after installing and before use.
    pub sha256: &'static str,
    /// Whether the file is a program: wheels store `ptxas` without its execute bit, and
    /// [`install`] sets it.
    pub executable: bool,
}

/// The plugins `pjrt plugin install` knows. The first is the default.
///
/// The CUDA ones (`cuda12`, `cuda13`, 410-500 MB each) load and compile on machines without a
/// GPU: they are what pjrt-client's `GpuTarget` compiles with. Each comes with NVIDIA's `ptxas` and
/// `libdevice` from PyPI, which XLA needs to compile for a GPU.
pub const KNOWN_PLUGINS: &[KnownPlugin] = &[
    KnownPlugin {
        name: "cpu",
        platform: "cpu",
        package: "lammps-jax-pjrt-cpu",
        version: "0.11.2",
        library: "lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so",
        sha256: "ad1309ac822b1b24d51b7f9947c7c9fa9ef5d67f390584cbc3d1fa2428fed9c2",
        tools: &[],
        cuda_data_dir: None,
    },
    KnownPlugin {
        name: "cpu-0.106",
        platform: "cpu",
        package: "fastatomstruct-xla-cpu",
        version: "2026.6.23",
        library: "fastatomstruct_xla_cpu/libpjrt_cpu.so",
        sha256: "0a0fe56ca17be9efc7b942e89e534e5e0ad4a0f1e369b66d27b62184509015b9",
        tools: &[],
        cuda_data_dir: None,
    },
    // The same JAX release (0.11.2, hence the same XLA) as the default CPU plugin and `cuda13`.
    KnownPlugin {
        name: "cuda12",
        platform: "cuda",
        package: "jax-cuda12-pjrt",
        version: "0.11.2",
        library: "jax_plugins/xla_cuda12/xla_cuda_plugin.so",
        sha256: "ed4d60d77427548709ca0b5a8e04c1b24cc0091452bb564e4aea01e03ae7eac1",
        tools: &[
            // The newest CUDA 12 compiler on PyPI; jax-cuda12-plugin asks for any 12.x.
            KnownTool {
                package: "nvidia-cuda-nvcc-cu12",
                version: "12.9.86",
                path: "nvidia/cuda_nvcc/bin/ptxas",
                sha256: "983b0e9283855979f42cebfd80d43f9b6e786eb84f03f7570bf941c4d3a3c461",
                executable: true,
            },
            KnownTool {
                package: "nvidia-cuda-nvcc-cu12",
                version: "12.9.86",
                path: "nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc",
                sha256: "9e84b504f25d26ec775ef91f7122e68dac77fa1f776f1044128f5028356265d8",
                executable: false,
            },
        ],
        cuda_data_dir: Some("nvidia/cuda_nvcc"),
    },
    // The build on the GPU machine this project tests on: an executable loads only on the
    // plugin build that compiled it.
    KnownPlugin {
        name: "cuda13",
        platform: "cuda",
        package: "jax-cuda13-pjrt",
        version: "0.11.2",
        library: "jax_plugins/xla_cuda13/xla_cuda_plugin.so",
        sha256: "43d3efd6fd43d8a5d9aa67176e830d81e4ad5fc19fda4ad09cdcc4aebd9f3920",
        tools: &[
            // jax-cuda13-plugin 0.11.2 asks for nvidia-cuda-nvcc>=13.0.48; CUDA 13 moved
            // libdevice out of nvcc into nvidia-nvvm. 13.0.88 is the last CUDA 13.0 release.
            KnownTool {
                package: "nvidia-cuda-nvcc",
                version: "13.0.88",
                path: "nvidia/cu13/bin/ptxas",
                sha256: "daba837a68265cae38c832d13399b61dab811891de9b8914defddef143b849f2",
                executable: true,
            },
            KnownTool {
                package: "nvidia-nvvm",
                version: "13.0.88",
                path: "nvidia/cu13/nvvm/libdevice/libdevice.10.bc",
                sha256: "91334d6e12748f6cb5bbf0a1cd965a56bcd93dc4f496d2e5c5f8c6e523094356",
                executable: false,
            },
        ],
        cuda_data_dir: Some("nvidia/cu13"),
    },
];

/// The OpenBLAS that JAX's LAPACK kernels run on (pjrt-client's `lapack`): scipy's build from PyPI
/// (`scipy-openblas32`, 32-bit integers, symbols prefixed `scipy_`, about 9 MB), installed into
/// the plugin cache like a plugin (`pjrt plugin install openblas`), with its two runtime
/// libraries beside it. Not a PJRT plugin: [`find_all`] and [`resolve`] never return it.
///
/// ```
/// let openblas = &pjrt_plugins::OPENBLAS;
/// assert_eq!(openblas.package, "scipy-openblas32");
/// assert!(pjrt_plugins::known_plugin("openblas").is_none()); // not a plugin
/// assert_eq!(pjrt_plugins::known_package("openblas"), Some(openblas));
/// ```
pub const OPENBLAS: KnownPlugin = KnownPlugin {
    name: "openblas",
    platform: "lapack",
    package: "scipy-openblas32",
    // The OpenBLAS release (0.3.30) of the scipy that JAX 0.10-0.12 install.
    version: "0.3.30.443.1",
    library: "scipy_openblas32/lib/libscipy_openblas.so",
    sha256: "db8c2dfee82155d13902745e7abd5bb363b5fe0adb8a4dfd630d0fc2bd04256a",
    tools: &[
        // Found by the library's RPATH ($ORIGIN): gfortran's runtime and the one it needs.
        KnownTool {
            package: "scipy-openblas32",
            version: "0.3.30.443.1",
            path: "scipy_openblas32/lib/libgfortran-040039e1.so.5.0.0",
            sha256: "0352e75f0719d9a299cb52919977eb5d7bd249d1fcad06d5e14030b272aae619",
            executable: false,
        },
        KnownTool {
            package: "scipy-openblas32",
            version: "0.3.30.443.1",
            path: "scipy_openblas32/lib/libquadmath-96973f99.so.0.0.0",
            sha256: "934c22ded0e7d169c4d4678876c96051adf3d94545da962f60b41659b075da3b",
            executable: false,
        },
    ],
    cuda_data_dir: None,
};

/// A known plugin ([`known_plugin`]) or [`OPENBLAS`], by name: what `pjrt plugin install NAME`
/// installs.
pub fn known_package(name: &str) -> Option<&'static KnownPlugin> {
    known_plugin(name).or((name == OPENBLAS.name).then_some(&OPENBLAS))
}

/// The default CPU plugin.
pub fn default_plugin() -> &'static KnownPlugin {
    &KNOWN_PLUGINS[0]
}

/// Looks a known plugin up by name.
pub fn known_plugin(name: &str) -> Option<&'static KnownPlugin> {
    KNOWN_PLUGINS.iter().find(|p| p.name == name)
}

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

/// [`cache_dir`], or an error saying how to name one.
fn require_cache_dir(plugin: &KnownPlugin) -> Result<PathBuf> {
    cache_dir().ok_or_else(|| Error::Install { name: plugin.name.into(), message: NO_CACHE_DIR.into() })
}

const NO_CACHE_DIR: &str = "there is no plugin cache folder (no HOME, XDG_CACHE_HOME or PJRT_PLUGIN_CACHE, and no \
                            home in the password database); set PJRT_PLUGIN_CACHE to a folder only you can write";

/// Where a known plugin is installed in the cache (`None` without a cache, see [`cache_dir`]).
pub fn cached_path(plugin: &KnownPlugin) -> Option<PathBuf> {
    cache_dir().map(|cache| install_root_in(&cache, plugin).join(plugin.library))
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
    let tpu = site.join("libtpu").join("libtpu.so");
    if tpu.is_file() {
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

/// Identity of a file on disk, cheap to read: size, modification time and inode.
fn file_stamp(path: &Path) -> Result<String> {
    Ok(stamp_of(&std::fs::metadata(path).map_err(|e| Error::io(path, e))?))
}

/// [`file_stamp`] of what `stat` or `fstat` said.
fn stamp_of(meta: &std::fs::Metadata) -> String {
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    #[cfg(unix)]
    let inode = {
        use std::os::unix::fs::MetadataExt;
        meta.ino()
    };
    #[cfg(not(unix))]
    let inode = 0u64;
    format!("{} {} {}", meta.len(), modified, inode)
}

fn marker_path(library: &Path) -> PathBuf {
    let mut name = library.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".pjrt-verified");
    library.with_file_name(name)
}

/// Returns the cached library of a known plugin after checking it is the file that was
/// verified: its SHA-256 is checked on first use and recorded with the file's size, time and
/// inode; a file that changed since is hashed again and refused if its content differs. Load
/// [`VerifiedLibrary::load_path`]: it loads exactly the bytes that were checked.
///
/// The marker is trusted only in a folder no other user can change ([`check_trusted_dir`]);
/// elsewhere the file is hashed on every call, from the descriptor it is then loaded through
/// (Linux; elsewhere such a folder is refused), and nothing is recorded. A library another user
/// could rewrite in place is refused, and so is a plugin with files beside it (`ptxas`,
/// OpenBLAS's runtime libraries) in a folder others can change: XLA and the loader open those by
/// name.
pub fn verified_cached(plugin: &KnownPlugin) -> Result<VerifiedLibrary> {
    let Some(cache) = cache_dir() else {
        return Err(Error::NotFound { tried: format!("  {NO_CACHE_DIR} (known plugin `{}`)", plugin.name) });
    };
    verified_cached_in(&cache, plugin)
}

/// [`verified_cached`] in the cache folder `cache`.
fn verified_cached_in(cache: &Path, plugin: &KnownPlugin) -> Result<VerifiedLibrary> {
    let root = install_root_in(cache, plugin);
    let path = root.join(plugin.library);
    if !path.is_file() {
        return Err(Error::NotFound {
            tried: format!(
                "  {} (install it with pjrt_plugins::install, known plugin `{}`)",
                path.display(),
                plugin.name
            ),
        });
    }
    for tool in plugin.tools {
        let tool_path = root.join(tool.path);
        if !tool_path.is_file() {
            return Err(Error::Install {
                name: plugin.name.into(),
                message: format!(
                    "{} is missing from the install (from {}=={}); install the plugin again (pjrt_plugins::install, known \
                     plugin `{}`)",
                    tool_path.display(),
                    tool.package,
                    tool.version,
                    plugin.name
                ),
            });
        }
        // Opened by name later (XLA runs `ptxas`, the loader finds OpenBLAS's runtime through
        // `$ORIGIN`): only a folder no one else can change keeps that name on what was checked.
        let folder = tool_path.parent().unwrap_or(&root);
        check_trusted_dir(folder).map_err(|e| match e {
            Error::UntrustedFolder { folder, component, reason } => Error::UntrustedFolder {
                folder,
                component,
                reason: format!(
                    "{reason}, and {} is opened by its name after it is checked (by XLA or the loader)",
                    tool.path
                ),
            },
            other => other,
        })?;
        verify_hash(plugin.name, tool.sha256, tool_path)?;
    }
    verify_file(plugin, path)
}

/// Where a known plugin's packages are installed in the cache.
fn install_root_in(cache: &Path, plugin: &KnownPlugin) -> PathBuf {
    cache.join(format!("{}-{}", plugin.package, plugin.version))
}

fn verify_file(plugin: &KnownPlugin, path: PathBuf) -> Result<VerifiedLibrary> {
    verify_hash(plugin.name, plugin.sha256, path)
}

/// The file at `path` seen through its folder's resolved path when that folder is trusted
/// ([`check_trusted_dir`]), so that a symlink swapped later cannot redirect us; `None` when it
/// is not: its markers are then neither read nor written.
fn in_trusted_folder(path: &Path) -> Option<PathBuf> {
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    Some(check_trusted_dir(folder).ok()?.join(path.file_name()?))
}

/// The marker beside `path` when it may be trusted: in a trusted folder, and itself a regular
/// file of ours that others cannot write.
fn read_marker(trusted_path: Option<&Path>) -> Option<String> {
    let marker = marker_path(trusted_path?);
    check_trusted_file(&marker).ok()?;
    std::fs::read_to_string(&marker).ok()
}

/// Writes a marker, readable and writable by its owner only; best effort.
fn write_marker(path: &Path, text: &str) -> std::io::Result<()> {
    let marker = marker_path(path);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    use std::io::Write;
    options.open(&marker)?.write_all(text.as_bytes())
}

/// Checks `path` against `sha256`, and says how to load exactly the bytes that were checked
/// (`verified.rs`). In a trusted folder the check is recorded in a marker beside the file and
/// not repeated while the file is unchanged, and the file is loaded by its path; elsewhere it is
/// hashed on every call from the descriptor it is then loaded through.
fn verify_hash(name: &str, sha256: &str, path: PathBuf) -> Result<VerifiedLibrary> {
    let trusted = in_trusted_folder(&path);
    let path = trusted.clone().unwrap_or(path);
    let mut file = open_for_check(&path)?;
    let meta = file.metadata().map_err(|e| Error::io(&path, e))?;
    // Neither a trusted folder nor a held descriptor stops a writer of the file itself.
    check_trusted_metadata(&path, &meta)?;
    let stamp = stamp_of(&meta);
    let recorded = read_marker(trusted.as_deref());
    if trusted.is_some() && recorded.as_deref() == Some(format!("{sha256} {stamp}").as_str()) {
        return Ok(VerifiedLibrary::by_path(path));
    }
    let digest = sha256_of(&mut file, &path)?;
    if digest != sha256 {
        let what = if recorded.is_some() { "changed since it was verified" } else { "is not the published file" };
        return Err(Error::Install {
            name: name.into(),
            message: format!(
                "{} {what} (SHA-256 {digest}, expected {sha256}); refusing to load it. Install it again (pjrt_plugins::install, known plugin `{name}`)",
                path.display(),
            ),
        });
    }
    if stamp_of(&file.metadata().map_err(|e| Error::io(&path, e))?) != stamp {
        return Err(Error::Install {
            name: name.into(),
            message: format!("{} changed while it was being checked; refusing to load it", path.display()),
        });
    }
    if trusted.is_none() {
        return VerifiedLibrary::through(path, file);
    }
    // Best effort: a folder we cannot write (an administrator's read-only cache) costs hashing
    // again next time.
    let _ = write_marker(&path, &format!("{sha256} {stamp}"));
    Ok(VerifiedLibrary::by_path(path))
}

/// Opens a file to check it; without blocking on a FIFO planted in its place.
fn open_for_check(path: &Path) -> Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    options.open(path).map_err(|e| Error::io(path, e))
}

/// SHA-256 of a file (lowercase hex), hashed once per change of the file: the digest is
/// remembered beside it with the file's size, modification time and inode (the marker
/// [`verified_cached`] keeps for cached plugins, in the same form), so later calls read only
/// the metadata. A folder that cannot be written only costs hashing again next time; a folder
/// another user could change ([`check_trusted_dir`]) is never trusted with a marker.
///
/// ```
/// # fn main() -> pjrt_plugins::Result<()> {
/// let plugin = pjrt_plugins::resolve_or_install(None, |_| ())?;
/// let digest = pjrt_plugins::remembered_sha256(&plugin.path)?;
/// assert_eq!(digest, pjrt_plugins::sha256_file(&plugin.path)?);
/// assert_eq!(digest, pjrt_plugins::remembered_sha256(&plugin.path)?, "the second call reads the marker");
/// # Ok(()) }
/// ```
pub fn remembered_sha256(path: &Path) -> Result<String> {
    let trusted = in_trusted_folder(path);
    let path = trusted.as_deref().unwrap_or(path);
    let stamp = file_stamp(path)?;
    if let Some(recorded) = read_marker(trusted.as_deref()) {
        if let Some((digest, rest)) = recorded.split_once(' ') {
            if rest == stamp && digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Ok(digest.to_string());
            }
        }
    }
    let digest = sha256_file(path)?;
    // Only a file unchanged while it was hashed is remembered, and only in a trusted folder.
    if trusted.is_some() && file_stamp(path)? == stamp {
        let _ = write_marker(path, &format!("{digest} {stamp}"));
    }
    Ok(digest)
}

/// SHA-256 of a file, as lowercase hex.
pub fn sha256_file(path: &Path) -> Result<String> {
    let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    sha256_of(&mut file, path)
}

/// A lock file held while one process installs a plugin; removed on drop. A lock whose process
/// is gone (Linux: its recorded pid has no `/proc` entry) or that is older than
/// [`InstallLock::STALE`] was left behind by a process that died, and is taken over.
struct InstallLock {
    path: PathBuf,
}

impl InstallLock {
    const STALE: std::time::Duration = std::time::Duration::from_secs(15 * 60);

    fn acquire(path: &Path, log: &mut impl FnMut(&str)) -> Result<InstallLock> {
        let mut said = false;
        loop {
            match std::fs::OpenOptions::new().write(true).create_new(true).open(path) {
                Ok(mut file) => {
                    use std::io::Write;
                    let _ = writeln!(file, "{}", std::process::id());
                    return Ok(InstallLock { path: path.to_path_buf() });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let age = std::fs::metadata(path).and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok());
                    if age.is_some_and(|age| age > Self::STALE) || Self::holder_is_gone(path) {
                        let _ = std::fs::remove_file(path);
                        continue;
                    }
                    if !said {
                        log(&format!(
                            "waiting for another process that is installing the plugin (lock file {})",
                            path.display()
                        ));
                        said = true;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(200));
                }
                Err(e) => return Err(Error::io(path, e)),
            }
        }
    }

    /// Whether the lock names a process that no longer runs. An empty file (its holder is
    /// between creating and writing it) or an unknown platform counts as alive.
    fn holder_is_gone(path: &Path) -> bool {
        let Some(pid) = std::fs::read_to_string(path).ok().and_then(|text| text.trim().parse::<u32>().ok()) else {
            return false;
        };
        cfg!(target_os = "linux") && !Path::new("/proc").join(pid.to_string()).exists()
    }
}

impl Drop for InstallLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Installs a known plugin into the cache and checks the SHA-256 of every file it installs.
/// Returns the library's path; does nothing if it is already installed and intact. `log`
/// receives progress lines for the user. To load it, take [`verified_cached`]'s
/// [`VerifiedLibrary::load_path`], which loads exactly the bytes that were checked.
///
/// With the `install` feature (on in the `pjrt` command), the wheels come straight from the
/// package index without Python (`install_from` with `wheel_sources_from_env`), unless
/// `PJRT_INSTALL_WITH_PIP=1` asks for pip. Without the feature, `python3 -m pip` downloads them
/// ([`install_with_pip`]).
///
/// ```
/// use pjrt_plugins;
///
/// // Installed already (the doc examples share the default CPU plugin): a check, no download.
/// let path = pjrt_plugins::install(pjrt_plugins::default_plugin(), |line| eprintln!("{line}"))?;
/// assert_eq!(path, pjrt_plugins::verified_cached(pjrt_plugins::default_plugin())?.path());
/// # Ok::<(), pjrt_plugins::Error>(())
/// ```
pub fn install(plugin: &KnownPlugin, log: impl FnMut(&str)) -> Result<PathBuf> {
    #[cfg(feature = "install")]
    if std::env::var_os("PJRT_INSTALL_WITH_PIP").is_none_or(|v| v.is_empty() || v == "0") {
        return install_from(plugin, &wheel_sources_from_env(), &require_cache_dir(plugin)?, log);
    }
    install_with_pip(plugin, log)
}

/// Installs `plugin` when it is missing ([`install`]) and returns what to load: exactly the
/// bytes checked against its pin ([`verified_cached`], [`VerifiedLibrary::load_path`]). What a
/// library's `find` of a known plugin returns, e.g. OpenBLAS for `pjrt_lapack::register`.
///
/// ```no_run
/// # fn main() -> Result<(), pjrt_plugins::Error> {
/// let openblas = pjrt_plugins::install_verified(&pjrt_plugins::OPENBLAS, |_| ())?;
/// assert!(openblas.is_file());
/// # Ok(()) }
/// ```
pub fn install_verified(plugin: &KnownPlugin, log: impl FnMut(&str)) -> Result<PathBuf> {
    install(plugin, log)?;
    Ok(verified_cached(plugin)?.load_path().to_path_buf())
}

#[cfg(feature = "install")]
pub use crate::pypi::WheelSource;

/// PyPI's simple index, the default [`WheelSource::Index`].
#[cfg(feature = "install")]
pub const PYPI_SIMPLE_INDEX: &str = "https://pypi.org/simple";

/// The wheel sources pip would use, in order: the folders of `PIP_FIND_LINKS` (separated by
/// spaces; URLs there are not supported and skipped), then `PIP_INDEX_URL` or PyPI.
///
/// ```
/// use pjrt_plugins::WheelSource;
///
/// let sources = pjrt_plugins::wheel_sources_from_env();
/// assert!(matches!(sources.last(), Some(WheelSource::Index(_))), "an index comes last");
/// ```
#[cfg(feature = "install")]
pub fn wheel_sources_from_env() -> Vec<WheelSource> {
    let mut sources = Vec::new();
    if let Ok(links) = std::env::var("PIP_FIND_LINKS") {
        for link in links.split_whitespace() {
            let folder = link.strip_prefix("file://").unwrap_or(link);
            if !folder.contains("://") {
                sources.push(WheelSource::Folder(PathBuf::from(folder)));
            }
        }
    }
    let index = std::env::var("PIP_INDEX_URL").ok().filter(|u| !u.is_empty());
    sources.push(WheelSource::Index(index.unwrap_or_else(|| PYPI_SIMPLE_INDEX.to_owned())));
    sources
}

/// Installs a known plugin into the cache folder `cache` from `sources` (tried in order for
/// each package), without Python: finds each wheel the plugin needs (its own, and its tools'
/// packages for CUDA), downloads it over HTTPS when it comes from an index (checked against the
/// index's SHA-256), and extracts only the pinned files, each checked against its pinned
/// SHA-256. Everything is staged in a temporary folder that is renamed into place at the end,
/// so a failed or interrupted install leaves nothing installed.
///
/// ```
/// use pjrt_plugins::WheelSource;
///
/// // An empty folder has no wheel: a clear error, and nothing is installed.
/// let dir = std::env::temp_dir().join(format!("pjrt-doc-install-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let sources = [WheelSource::Folder(dir.clone())];
/// let e = pjrt_plugins::install_from(pjrt_plugins::default_plugin(), &sources, &dir.join("cache"), |_| ()).unwrap_err();
/// assert!(e.to_string().contains("no wheel"), "{e}");
/// assert!(!dir.join("cache/lammps-jax-pjrt-cpu-0.11.2").exists());
/// std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(feature = "install")]
pub fn install_from(
    plugin: &KnownPlugin,
    sources: &[WheelSource],
    cache: &Path,
    mut log: impl FnMut(&str),
) -> Result<PathBuf> {
    use crate::{pypi, wheel};
    staged_install(plugin, cache, &mut log, |staging, log| {
        let downloads = staging.join(".downloads");
        std::fs::create_dir_all(&downloads).map_err(|e| Error::io(&downloads, e))?;
        let fail = |message: String| Error::Install { name: plugin.name.into(), message };
        let mut agent = None;
        for (package, version) in packages(plugin) {
            let mut members = Vec::new();
            if package == plugin.package {
                members.push(wheel::Member { path: plugin.library, sha256: plugin.sha256, executable: false });
            }
            for tool in plugin.tools.iter().filter(|t| t.package == package) {
                members.push(wheel::Member { path: tool.path, sha256: tool.sha256, executable: tool.executable });
            }
            let mut found = None;
            for source in sources {
                found = pypi::obtain(source, package, version, &downloads, &mut agent, log).map_err(fail)?;
                if found.is_some() {
                    break;
                }
            }
            let Some(wheel_path) = found else {
                return Err(fail(format!(
                    "no wheel of {package}=={version} for this machine ({}-{}) in {sources:?}; the plugin needs {}",
                    std::env::consts::OS,
                    std::env::consts::ARCH,
                    packages(plugin).iter().map(|(p, v)| format!("{p}=={v}")).collect::<Vec<_>>().join(" and ")
                )));
            };
            log(&format!(
                "extracting {} from {}",
                members.iter().map(|m| m.path).collect::<Vec<_>>().join(", "),
                wheel_path.display()
            ));
            wheel::extract(&wheel_path, &members, staging).map_err(fail)?;
            if wheel_path.starts_with(&downloads) {
                let _ = std::fs::remove_file(&wheel_path);
            }
        }
        std::fs::remove_dir_all(&downloads).map_err(|e| Error::io(&downloads, e))
    })
}

/// The packages a plugin needs, each once: its own, then its tools'.
#[cfg(feature = "install")]
fn packages(plugin: &KnownPlugin) -> Vec<(&'static str, &'static str)> {
    let mut list = vec![(plugin.package, plugin.version)];
    for tool in plugin.tools {
        if !list.contains(&(tool.package, tool.version)) {
            list.push((tool.package, tool.version));
        }
    }
    list
}

/// The steps every installer shares: the cache folder (owner-only, and refused when another
/// user could change it), a lock against other processes, a staging folder that `fill`
/// populates, the checks of every pinned file, and the rename into place. A failure removes the
/// staging folder and leaves the cache as it was.
fn staged_install<L: FnMut(&str)>(
    plugin: &KnownPlugin,
    cache: &Path,
    log: &mut L,
    fill: impl FnOnce(&Path, &mut dyn FnMut(&str)) -> Result<()>,
) -> Result<PathBuf> {
    if let Ok(verified) = verified_cached_in(cache, plugin) {
        return Ok(verified.path().to_path_buf());
    }
    create_private_dir(cache)?;
    // A plugin installed where another user could swap it would be loaded as it is then.
    let cache = &check_trusted_dir(cache)?;
    // Several processes may install at once (parallel doc tests on a fresh machine): one
    // downloads, the others wait for it and then find the plugin installed.
    let _lock = InstallLock::acquire(&cache.join(format!(".{}-{}.lock", plugin.package, plugin.version)), log)?;
    if let Ok(verified) = verified_cached_in(cache, plugin) {
        return Ok(verified.path().to_path_buf());
    }
    let final_dir = install_root_in(cache, plugin);
    let staging = cache.join(format!(".{}-{}.partial-{}", plugin.package, plugin.version, std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging).map_err(|e| Error::io(&staging, e))?;
    let _span = span!(INFO, "install_plugin", package = %plugin.package);
    log(&format!("installing PJRT plugin `{}` into {}", plugin.name, final_dir.display()));
    let filled = fill(&staging, log).and_then(|()| {
        // What pip or a wheel created with the user's umask: nobody else may write it.
        remove_write_for_others(&staging)?;
        check_staged(plugin.name, plugin.library, plugin.sha256, &staging)?;
        for tool in plugin.tools {
            check_staged_tool(plugin, tool, &staging)?;
        }
        Ok(())
    });
    if let Err(e) = filled {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(e);
    }
    let _ = std::fs::remove_dir_all(&final_dir);
    std::fs::rename(&staging, &final_dir).map_err(|e| Error::io(&final_dir, e))?;
    let target = verified_cached_in(cache, plugin)?.path().to_path_buf();
    log(&format!("installed {} (SHA-256 verified)", target.display()));
    Ok(target)
}

/// Removes the group's and others' write permission from `dir` and everything below it
/// (symlinks are left alone), so that the installed folders pass [`check_trusted_dir`].
fn remove_write_for_others(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let meta = std::fs::symlink_metadata(dir).map_err(|e| Error::io(dir, e))?;
        if meta.file_type().is_symlink() {
            return Ok(());
        }
        let mode = meta.permissions().mode();
        if mode & 0o022 != 0 {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode & !0o022))
                .map_err(|e| Error::io(dir, e))?;
        }
        if meta.is_dir() {
            for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
                remove_write_for_others(&entry.map_err(|e| Error::io(dir, e))?.path())?;
            }
        }
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// Checks a staged file against its pin.
fn check_staged(name: &str, path: &str, sha256: &str, staging: &Path) -> Result<()> {
    let digest = sha256_file(&staging.join(path))?;
    if digest != sha256 {
        return Err(Error::Install {
            name: name.into(),
            message: format!("SHA-256 mismatch for {path}: expected {sha256}, got {digest}; refusing to use it"),
        });
    }
    Ok(())
}

/// Installs a known plugin into the cache with `python3 -m pip` (no shell involved) and checks
/// the SHA-256 of its files, like [`install`] without the `install` feature. Needs `python3`
/// with pip on `PATH`; pip reads its own settings (`PIP_INDEX_URL`, `PIP_CERT`, proxies).
///
/// ```no_run
/// let path = pjrt_plugins::install_with_pip(pjrt_plugins::default_plugin(), |l| eprintln!("{l}"))?;
/// assert!(path.is_file());
/// # Ok::<(), pjrt_plugins::Error>(())
/// ```
///
/// pip takes wheels only (`--only-binary=:all:`): a source package would run its build code
/// before any hash could be checked.
pub fn install_with_pip(plugin: &KnownPlugin, mut log: impl FnMut(&str)) -> Result<PathBuf> {
    staged_install(plugin, &require_cache_dir(plugin)?, &mut log, |staging, log| {
        let requirements = requirements(plugin);
        let requirement = requirements.join(" ");
        log(&format!("downloading PJRT plugin `{}` with pip ({requirement})", plugin.name));
        let status = Command::new("python3")
            .args(PIP_INSTALL_ARGS)
            .arg(staging)
            .args(&requirements)
            .env("PIP_ROOT_USER_ACTION", "ignore")
            .stdin(Stdio::null())
            .status()
            .map_err(|e| Error::Install {
                name: plugin.name.into(),
                message: format!("cannot run `python3 -m pip` ({e}); install Python 3 with pip, or build with the `install` feature, or download {requirement} yourself and load it by its path"),
            })?;
        if !status.success() {
            return Err(Error::Install {
                name: plugin.name.into(),
                message: format!(
                    "`python3 -m pip install {requirement}` failed ({status}); check network access to PyPI"
                ),
            });
        }
        Ok(())
    })
}

/// `python3 ARGS STAGING REQUIREMENTS...`: no dependencies, wheels only (a source package would
/// run its build code before any hash check), no bytecode, into the staging folder.
const PIP_INSTALL_ARGS: &[&str] = &[
    "-m",
    "pip",
    "install",
    "--quiet",
    "--no-deps",
    "--only-binary=:all:",
    "--no-compile",
    "--disable-pip-version-check",
    "--target",
];

/// The `pip install` arguments for a plugin: its package, then each of its tools' packages once.
fn requirements(plugin: &KnownPlugin) -> Vec<String> {
    let mut list = vec![format!("{}=={}", plugin.package, plugin.version)];
    for tool in plugin.tools {
        let requirement = format!("{}=={}", tool.package, tool.version);
        if !list.contains(&requirement) {
            list.push(requirement);
        }
    }
    list
}

/// Checks a freshly installed tool's SHA-256 and sets the execute bit of a program (wheels
/// store `ptxas` as mode 644).
fn check_staged_tool(plugin: &KnownPlugin, tool: &KnownTool, staging: &Path) -> Result<()> {
    let path = staging.join(tool.path);
    let digest = sha256_file(&path)?;
    if digest != tool.sha256 {
        return Err(Error::Install {
            name: plugin.name.into(),
            message: format!(
                "SHA-256 mismatch for {} (from {}=={}): expected {}, got {digest}; refusing to use it",
                tool.path, tool.package, tool.version, tool.sha256
            ),
        });
    }
    #[cfg(unix)]
    if tool.executable {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).map_err(|e| Error::io(&path, e))?.permissions().mode();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode | 0o111))
            .map_err(|e| Error::io(&path, e))?;
    }
    Ok(())
}

/// The folder to give XLA as `xla_gpu_cuda_data_dir` for a CUDA plugin at `library`: the one
/// that holds `bin/ptxas` (where XLA runs `ptxas` from) and `nvvm/libdevice/libdevice.10.bc`,
/// installed beside the plugin. That is the case for `cuda12` and `cuda13` installed by
/// [`install`], and for a plugin installed with pip together with `nvidia-cuda-nvcc-cu12`
/// (CUDA 12) or `nvidia-cuda-nvcc` and `nvidia-nvvm` (CUDA 13) in the same site-packages.
/// `None` when `library` is not a CUDA plugin or its compiler pieces are not there; XLA then
/// looks on its own (`PATH`, `/usr/local/cuda`) and fails with "libdevice not found" when they
/// are nowhere.
///
/// pjrt-client's `DebugOption::GpuCudaDataDir` passes the folder to one compilation.
///
/// ```
/// use pjrt_plugins;
///
/// // A CPU plugin has no CUDA data folder.
/// let found = pjrt_plugins::resolve_or_install(None, |_| ())?;
/// assert_eq!(pjrt_plugins::cuda_data_dir(&found.path), None);
/// // cuda12 keeps its compiler pieces beside the plugin, in the cache.
/// let cuda12 = pjrt_plugins::known_plugin("cuda12").unwrap();
/// if let Some(dir) = pjrt_plugins::cached_path(cuda12).and_then(|path| pjrt_plugins::cuda_data_dir(&path)) {
///     assert!(dir.join("bin/ptxas").is_file() && dir.ends_with("nvidia/cuda_nvcc"));
/// }
/// # Ok::<(), pjrt_plugins::Error>(())
/// ```
pub fn cuda_data_dir(library: &Path) -> Option<PathBuf> {
    KNOWN_PLUGINS.iter().find_map(|known| {
        let data_dir = known.cuda_data_dir?;
        // ROOT/jax_plugins/xla_cudaNN/xla_cuda_plugin.so -> ROOT
        let mut root = library;
        for _ in Path::new(known.library).components() {
            root = root.parent()?;
        }
        if root.join(known.library) != library {
            return None;
        }
        let dir = root.join(data_dir);
        (dir.join("bin").join("ptxas").is_file() && dir.join("nvvm/libdevice/libdevice.10.bc").is_file()).then_some(dir)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trust::hex;
    use sha2::{Digest, Sha256};

    #[test]
    fn a_changed_plugin_file_is_refused() {
        let dir = std::env::temp_dir().join(format!("pjrt-verify-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("libfake.so");
        std::fs::write(&path, b"pretend plugin").unwrap();
        let digest: &'static str = Box::leak(sha256_file(&path).unwrap().into_boxed_str());
        let known = KnownPlugin { sha256: digest, ..*default_plugin() };
        // A folder of ours: loaded by its path.
        let by_path = VerifiedLibrary::by_path(path.clone());
        assert_eq!(verify_file(&known, path.clone()).unwrap(), by_path);
        assert!(marker_path(&path).is_file(), "the verification is recorded");
        assert_eq!(verify_file(&known, path.clone()).unwrap(), by_path, "the recorded stamp is accepted");
        std::fs::write(&path, b"tampered plugin").unwrap();
        let e = verify_file(&known, path.clone()).unwrap_err().to_string();
        assert!(e.contains("changed since it was verified"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A library another user planted in the cache with a marker that claims the pin: the
    /// marker is what skipped hashing, so it must be trusted only where no one else can write.
    #[test]
    #[cfg(unix)]
    fn a_planted_library_with_a_marker_is_refused_unless_the_folder_is_trusted() {
        use crate::trust::planted;
        let base = planted::scratch("planted-plugin");
        let pin: &'static str = Box::leak(hex(&Sha256::digest(b"the published plugin")).into_boxed_str());
        let known = KnownPlugin {
            name: "test",
            package: "pjrt-test",
            version: "1",
            library: "lib/plugin.so",
            sha256: pin,
            ..*default_plugin()
        };
        let plant = |cache: &Path| {
            let library = install_root_in(cache, &known).join(known.library);
            std::fs::create_dir_all(library.parent().unwrap()).unwrap();
            std::fs::write(&library, b"another user's library").unwrap();
            std::fs::write(marker_path(&library), format!("{pin} {}", file_stamp(&library).unwrap())).unwrap();
        };
        for (what, cache) in planted::untrusted_folders(&base) {
            plant(&cache);
            let e = verified_cached_in(&cache, &known).unwrap_err().to_string();
            assert!(e.contains("is not the published file") || e.contains("changed since"), "{what}: {e}");
            // Nor is a marker written there, or a hash remembered.
            let library = install_root_in(&cache, &known).join(known.library);
            std::fs::remove_file(marker_path(&library)).unwrap();
            assert_eq!(remembered_sha256(&library).unwrap(), sha256_file(&library).unwrap());
            assert!(!marker_path(&library).exists(), "{what}: no marker written");
        }
        // In a folder of ours the marker is what it always was: the record of our own check.
        for (what, cache) in planted::trusted_folders(&base) {
            plant(&cache);
            assert!(verified_cached_in(&cache, &known).is_ok(), "{what}");
        }
        let _ = std::fs::remove_dir_all(&base);
    }

    /// The published library in a folder others can change: hashed from the descriptor it is
    /// then loaded through, so a swap after the check does not change what is loaded.
    #[test]
    #[cfg(target_os = "linux")]
    fn in_a_folder_others_can_change_the_checked_descriptor_is_what_loads() {
        use crate::trust::planted;
        let base = planted::scratch("swapped-plugin");
        let published = b"the published plugin";
        let pin: &'static str = Box::leak(hex(&Sha256::digest(published)).into_boxed_str());
        let known = KnownPlugin {
            package: "pjrt-test",
            version: "1",
            library: "lib/plugin.so",
            sha256: pin,
            ..*default_plugin()
        };
        for (what, cache) in planted::untrusted_folders(&base) {
            let library = install_root_in(&cache, &known).join(known.library);
            std::fs::create_dir_all(library.parent().unwrap()).unwrap();
            std::fs::write(&library, published).unwrap();
            let verified = verified_cached_in(&cache, &known).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(verified.load_path().starts_with("/proc/self/fd/"), "{what}: {}", verified.load_path().display());
            assert!(!marker_path(verified.path()).exists(), "{what}: no marker where others can write");
            // Another user swaps the file after the check: the load path still reads what was checked.
            let swap = library.with_file_name("swap");
            std::fs::write(&swap, b"another user's library").unwrap();
            std::fs::rename(&swap, &library).unwrap();
            assert_eq!(std::fs::read(verified.load_path()).unwrap(), published, "{what}");
            // And a new check sees the swapped file for what it is.
            let e = verified_cached_in(&cache, &known).unwrap_err().to_string();
            assert!(e.contains("is not the published file"), "{what}: {e}");
        }
        let _ = std::fs::remove_dir_all(&base);
    }

    /// A library that other users can rewrite in place (neither a trusted folder nor a held
    /// descriptor stops that), and a plugin whose pinned tools are opened by name from a folder
    /// others can change: both refused, however their bytes look now.
    #[test]
    #[cfg(unix)]
    fn what_others_could_rewrite_after_the_check_is_refused() {
        use crate::trust::planted;
        use std::os::unix::fs::PermissionsExt;
        let base = planted::scratch("rewritable-plugin");
        let published = b"the published plugin";
        let pin: &'static str = Box::leak(hex(&Sha256::digest(published)).into_boxed_str());
        let known = KnownPlugin {
            package: "pjrt-test",
            version: "1",
            library: "lib/plugin.so",
            sha256: pin,
            ..*default_plugin()
        };
        let (_, ours) = planted::trusted_folders(&base).remove(0);
        let library = install_root_in(&ours, &known).join(known.library);
        std::fs::create_dir_all(library.parent().unwrap()).unwrap();
        std::fs::write(&library, published).unwrap();
        assert_eq!(verified_cached_in(&ours, &known).unwrap().load_path(), library.canonicalize().unwrap());
        std::fs::set_permissions(&library, std::fs::Permissions::from_mode(0o666)).unwrap();
        let e = verified_cached_in(&ours, &known).unwrap_err().to_string();
        assert!(e.contains("writable by other users"), "{e}");

        let tool_pin: &'static str = Box::leak(hex(&Sha256::digest(b"ptxas")).into_boxed_str());
        let tools: &'static [KnownTool] = Box::leak(Box::new([KnownTool {
            package: "pjrt-test-tool",
            version: "1",
            path: "bin/ptxas",
            sha256: tool_pin,
            executable: true,
        }]));
        let with_tools = KnownPlugin { tools, ..known };
        let (what, open) = planted::untrusted_folders(&base).remove(0);
        let root = install_root_in(&open, &with_tools);
        std::fs::create_dir_all(root.join("lib")).unwrap();
        std::fs::create_dir_all(root.join("bin")).unwrap();
        std::fs::write(root.join(with_tools.library), published).unwrap();
        std::fs::write(root.join("bin/ptxas"), b"ptxas").unwrap();
        let e = verified_cached_in(&open, &with_tools).unwrap_err().to_string();
        assert!(e.contains("bin/ptxas is opened by its name"), "{what}: {e}");
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn a_remembered_hash_is_read_back_until_the_file_changes() {
        let dir = std::env::temp_dir().join(format!("pjrt-remember-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("libplugin.so");
        std::fs::write(&path, b"build one").unwrap();
        let first = remembered_sha256(&path).unwrap();
        assert_eq!(first, sha256_file(&path).unwrap());
        // The marker is what a second call trusts while size, mtime and inode are unchanged.
        let stamp = file_stamp(&path).unwrap();
        let pretend = "ab".repeat(32);
        std::fs::write(marker_path(&path), format!("{pretend} {stamp}")).unwrap();
        assert_eq!(remembered_sha256(&path).unwrap(), pretend, "not hashed again");
        std::fs::write(&path, b"build two, longer").unwrap();
        let second = remembered_sha256(&path).unwrap();
        assert_eq!(second, sha256_file(&path).unwrap(), "a changed file is hashed again");
        assert_ne!(second, first);
        let _ = std::fs::remove_dir_all(&dir);
    }

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
    fn the_install_lock_is_exclusive_and_released_on_drop() {
        let dir = std::env::temp_dir().join(format!("pjrt-lock-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("plugin.lock");
        let first = InstallLock::acquire(&path, &mut |_| ()).unwrap();
        assert!(path.is_file());
        let (waiting_tx, waiting_rx) = std::sync::mpsc::channel();
        let (got_tx, got_rx) = std::sync::mpsc::channel();
        let waiter = {
            let path = path.clone();
            std::thread::spawn(move || {
                let second = InstallLock::acquire(&path, &mut |_| waiting_tx.send(()).unwrap()).unwrap();
                got_tx.send(()).unwrap();
                drop(second);
            })
        };
        // The second process says it waits, and gets the lock only after the first lets go.
        waiting_rx.recv().unwrap();
        assert!(got_rx.try_recv().is_err(), "the lock is held");
        drop(first);
        got_rx.recv().unwrap();
        waiter.join().unwrap();
        assert!(!path.exists(), "released");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_lock_left_by_a_dead_process_is_taken_over() {
        let dir = std::env::temp_dir().join(format!("pjrt-stale-lock-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("plugin.lock");
        // Above Linux's largest pid (2^22), so no process has it.
        std::fs::write(&path, "4000000000\n").unwrap();
        let lock = InstallLock::acquire(&path, &mut |line| panic!("should not wait: {line}")).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap().trim(), std::process::id().to_string());
        drop(lock);
        let _ = std::fs::remove_dir_all(&dir);
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

    #[test]
    fn known_plugins_are_pinned() {
        for p in KNOWN_PLUGINS {
            assert_eq!(p.sha256.len(), 64);
            assert!(p.version.chars().all(|c| c.is_ascii_digit() || c == '.'));
            for tool in p.tools {
                assert_eq!(tool.sha256.len(), 64, "{tool:?}");
                assert!(tool.version.chars().all(|c| c.is_ascii_digit() || c == '.'));
                assert!(tool.path.starts_with(p.cuda_data_dir.unwrap()), "{tool:?}");
            }
            // A CUDA plugin brings ptxas (as a program) and libdevice.
            if p.platform == "cuda" {
                let dir = p.cuda_data_dir.unwrap();
                assert!(p.tools.iter().any(|t| t.executable && t.path == format!("{dir}/bin/ptxas")), "{p:?}");
                assert!(p.tools.iter().any(|t| t.path == format!("{dir}/nvvm/libdevice/libdevice.10.bc")), "{p:?}");
            }
        }
        assert_eq!(default_plugin().package, "lammps-jax-pjrt-cpu");
        assert_eq!(known_plugin("cuda13").unwrap().version, "0.11.2", "the GPU machine's build");
    }

    #[test]
    fn requirements_name_each_package_once() {
        let cuda12 = known_plugin("cuda12").unwrap();
        assert_eq!(requirements(cuda12), ["jax-cuda12-pjrt==0.11.2", "nvidia-cuda-nvcc-cu12==12.9.86"]);
        let cuda13 = known_plugin("cuda13").unwrap();
        assert_eq!(
            requirements(cuda13),
            ["jax-cuda13-pjrt==0.11.2", "nvidia-cuda-nvcc==13.0.88", "nvidia-nvvm==13.0.88"]
        );
        assert_eq!(requirements(default_plugin()), ["lammps-jax-pjrt-cpu==0.11.2"]);
    }

    #[test]
    fn the_cuda_data_dir_is_found_beside_a_plugin_only_when_ptxas_and_libdevice_are_there() {
        let root = std::env::temp_dir().join(format!("pjrt-cuda-dir-test-{}", std::process::id()));
        let library = root.join("jax_plugins/xla_cuda12/xla_cuda_plugin.so");
        std::fs::create_dir_all(library.parent().unwrap()).unwrap();
        std::fs::write(&library, b"").unwrap();
        assert_eq!(cuda_data_dir(&library), None, "no compiler pieces yet");
        let dir = root.join("nvidia/cuda_nvcc");
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        std::fs::write(dir.join("bin/ptxas"), b"").unwrap();
        assert_eq!(cuda_data_dir(&library), None, "ptxas without libdevice");
        std::fs::create_dir_all(dir.join("nvvm/libdevice")).unwrap();
        std::fs::write(dir.join("nvvm/libdevice/libdevice.10.bc"), b"").unwrap();
        assert_eq!(cuda_data_dir(&library), Some(dir));
        // The CUDA 13 layout is not taken for a CUDA 12 plugin, and other paths have none.
        assert_eq!(cuda_data_dir(&root.join("jax_plugins/xla_cuda13/xla_cuda_plugin.so")), None);
        assert_eq!(cuda_data_dir(Path::new("/x.so")), None);
        let _ = std::fs::remove_dir_all(&root);
    }
}

/// The installer without Python against a local HTTP index serving synthetic wheels.
#[cfg(all(test, feature = "install"))]
mod install_tests {
    use super::*;
    use crate::trust::hex;
    use sha2::{Digest, Sha256};
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpListener;

    const LIBRARY: &str = "pjrt_test_plugin/libplugin.so";
    const CONTENT: &[u8] = b"pretend plugin library";

    fn hex_sha256(bytes: &[u8]) -> String {
        hex(&Sha256::digest(bytes))
    }

    fn test_plugin(library_sha256: String) -> KnownPlugin {
        KnownPlugin {
            name: "test",
            platform: "cpu",
            package: "pjrt-test-plugin",
            version: "1.0",
            library: LIBRARY,
            sha256: Box::leak(library_sha256.into_boxed_str()),
            tools: &[],
            cuda_data_dir: None,
        }
    }

    /// A wheel holding the library (deflated) and a file the installer must leave out.
    fn wheel(library: &[u8]) -> Vec<u8> {
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        zip.start_file(LIBRARY, options).unwrap();
        zip.write_all(library).unwrap();
        zip.start_file("pjrt_test_plugin/__init__.py", options).unwrap();
        zip.write_all(b"# not extracted").unwrap();
        zip.finish().unwrap().into_inner()
    }

    /// Serves a simple index for `pjrt-test-plugin` whose link carries `index_sha256`, and the
    /// wheel bytes; with `cut_off`, the wheel's response stops half way (its length says all).
    fn serve(wheel: Vec<u8>, index_sha256: String, cut_off: bool) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}/simple", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut request_line = String::new();
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                reader.read_line(&mut request_line).unwrap();
                loop {
                    let mut header = String::new();
                    if reader.read_line(&mut header).unwrap() == 0 || header == "\r\n" {
                        break;
                    }
                }
                let path = request_line.split(' ').nth(1).unwrap_or("").to_owned();
                let (body, sent): (Vec<u8>, usize) = if path == "/simple/pjrt-test-plugin/" {
                    let html = format!(
                        "<html><body><a href=\"../../files/pjrt_test_plugin-1.0-py3-none-any.whl#sha256={index_sha256}\">w</a></body></html>"
                    );
                    let len = html.len();
                    (html.into_bytes(), len)
                } else if path == "/files/pjrt_test_plugin-1.0-py3-none-any.whl" {
                    let len = if cut_off { wheel.len() / 2 } else { wheel.len() };
                    (wheel.clone(), len)
                } else {
                    let _ =
                        stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                    continue;
                };
                let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(&body[..sent]);
            }
        });
        base
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("pjrt-install-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// What the cache holds besides the lock-free, hidden-free result: every entry's name.
    fn entries(cache: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(cache)
            .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        names.sort();
        names
    }

    #[test]
    fn a_good_wheel_installs_only_the_pinned_library() {
        let wheel = wheel(CONTENT);
        let base = serve(wheel.clone(), hex_sha256(&wheel), false);
        let dir = scratch("good");
        let cache = dir.join("cache");
        let plugin = test_plugin(hex_sha256(CONTENT));
        let mut lines = Vec::new();
        let path = install_from(&plugin, &[WheelSource::Index(base)], &cache, |l| lines.push(l.to_owned())).unwrap();
        // Through the cache's resolved path (the temporary folder may be a symlink).
        assert_eq!(path, cache.canonicalize().unwrap().join("pjrt-test-plugin-1.0").join(LIBRARY));
        assert_eq!(std::fs::read(&path).unwrap(), CONTENT);
        assert!(!cache.join("pjrt-test-plugin-1.0/pjrt_test_plugin/__init__.py").exists(), "only the pinned files");
        assert_eq!(entries(&cache), ["pjrt-test-plugin-1.0"], "no staging folder, lock or download left");
        assert!(lines.iter().any(|l| l.contains("SHA-256 verified")), "{lines:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    #[cfg(unix)]
    fn a_cache_another_user_could_change_gets_no_install_unless_it_is_ours_and_made_owner_only() {
        use crate::trust::planted;
        let dir = scratch("untrusted-cache");
        let file = dir.join("pjrt_test_plugin-1.0-py3-none-any.whl");
        std::fs::write(&file, wheel(CONTENT)).unwrap();
        let plugin = test_plugin(hex_sha256(CONTENT));
        // Fresh folders for each case: an install makes a folder of ours owner-only.
        for i in 0..planted::untrusted_folders(&dir.join("count")).len() {
            let (what, cache) = planted::untrusted_folders(&dir.join(format!("case-{i}"))).swap_remove(i);
            let installed = install_from(&plugin, &[WheelSource::Files(vec![file.clone()])], &cache, |_| ());
            // Only the (resolved) folder's own mode is wrong (a folder of ours in a trusted one,
            // reached directly or through the symlink): stated per case, not asked of the check
            // under test.
            let only_its_mode = !matches!(what, "owned by another user" | "under a folder writable by others");
            if only_its_mode {
                // A folder of ours (writable by others, or by a shared group) is made owner-only
                // first, as the cache always was; what others planted before stays theirs, and
                // is refused.
                assert!(installed.is_ok(), "{what}: {installed:?}");
                use std::os::unix::fs::PermissionsExt;
                assert_eq!(std::fs::metadata(&cache).unwrap().permissions().mode() & 0o777, 0o700, "{what}");
            } else {
                let e = installed.unwrap_err();
                assert!(matches!(e, Error::UntrustedFolder { .. }), "{what}: {e}");
                assert!(!install_root_in(&cache, &plugin).exists(), "{what}: nothing installed");
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_wheel_whose_hash_differs_from_the_index_is_refused_and_nothing_is_installed() {
        let wheel = wheel(CONTENT);
        let base = serve(wheel, hex_sha256(b"another wheel"), false);
        let dir = scratch("bad-hash");
        let cache = dir.join("cache");
        let e = install_from(&test_plugin(hex_sha256(CONTENT)), &[WheelSource::Index(base)], &cache, |_| ())
            .unwrap_err()
            .to_string();
        assert!(e.contains("SHA-256 mismatch") && e.contains("refusing"), "{e}");
        assert_eq!(entries(&cache), Vec::<String>::new());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_library_that_differs_from_its_pin_is_refused_and_nothing_is_installed() {
        // The index's hash is right for the wheel, but the library inside is not the pinned one.
        let wheel = wheel(b"a tampered library");
        let base = serve(wheel.clone(), hex_sha256(&wheel), false);
        let dir = scratch("bad-library");
        let cache = dir.join("cache");
        let e = install_from(&test_plugin(hex_sha256(CONTENT)), &[WheelSource::Index(base)], &cache, |_| ())
            .unwrap_err()
            .to_string();
        assert!(e.contains("SHA-256 mismatch for pjrt_test_plugin/libplugin.so"), "{e}");
        assert_eq!(entries(&cache), Vec::<String>::new());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_download_cut_off_half_way_is_refused_and_nothing_is_installed() {
        let wheel = wheel(CONTENT);
        let base = serve(wheel.clone(), hex_sha256(&wheel), true);
        let dir = scratch("cut-off");
        let cache = dir.join("cache");
        let e = install_from(&test_plugin(hex_sha256(CONTENT)), &[WheelSource::Index(base)], &cache, |_| ())
            .unwrap_err()
            .to_string();
        assert!(e.contains("cut off") && e.contains("nothing was installed"), "{e}");
        assert_eq!(entries(&cache), Vec::<String>::new());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_offline_install_takes_the_users_wheel_or_a_folders_and_checks_the_pin() {
        let dir = scratch("offline");
        let file = dir.join("pjrt_test_plugin-1.0-py3-none-any.whl");
        std::fs::write(&file, wheel(CONTENT)).unwrap();
        let plugin = test_plugin(hex_sha256(CONTENT));
        let cache = dir.join("cache-files");
        let path = install_from(&plugin, &[WheelSource::Files(vec![file.clone()])], &cache, |_| ()).unwrap();
        assert_eq!(std::fs::read(path).unwrap(), CONTENT);
        assert!(file.is_file(), "the user's wheel is kept");
        let cache = dir.join("cache-folder");
        let path = install_from(&plugin, &[WheelSource::Folder(dir.clone())], &cache, |_| ()).unwrap();
        assert_eq!(std::fs::read(path).unwrap(), CONTENT);
        // A wheel that is not the pinned build is refused.
        let other = test_plugin(hex_sha256(b"the published library"));
        let cache = dir.join("cache-refused");
        let e = install_from(&other, &[WheelSource::Files(vec![file])], &cache, |_| ()).unwrap_err().to_string();
        assert!(e.contains("SHA-256 mismatch"), "{e}");
        assert_eq!(entries(&cache), Vec::<String>::new());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
