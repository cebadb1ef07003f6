//! Installing a known plugin into the cache ([`install`]): from the package index without
//! Python (the `install` feature) or with `python3 -m pip`, staged, checked and renamed into place.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::catalog::{install_root_in, KnownPlugin, KnownTool, NO_CACHE_DIR};
use crate::error::{Error, Result};
use crate::trace::span;
use crate::trust::{cache_dir, check_trusted_dir, create_private_dir};
use crate::verify::{sha256_file, verified_cached, verified_cached_in};

/// [`cache_dir`], or an error saying how to name one.
fn require_cache_dir(plugin: &KnownPlugin) -> Result<PathBuf> {
    cache_dir().ok_or_else(|| Error::Install { name: plugin.name.into(), message: NO_CACHE_DIR.into() })
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
/// [`VerifiedLibrary::load_path`](crate::VerifiedLibrary::load_path), which loads exactly the bytes that were checked.
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
/// bytes checked against its pin ([`verified_cached`], [`VerifiedLibrary::load_path`](crate::VerifiedLibrary::load_path)). What a
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{default_plugin, known_plugin};

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
