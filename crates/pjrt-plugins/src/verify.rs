//! Checking a plugin's files against their pinned SHA-256 ([`verified_cached`]), and
//! remembering a check beside the file, where that may be trusted ([`remembered_sha256`]).

use std::path::{Path, PathBuf};

use crate::catalog::{install_root_in, KnownPlugin, NO_CACHE_DIR};
use crate::error::{Error, Result};
use crate::trust::{cache_dir, check_trusted_dir, check_trusted_file, check_trusted_metadata};
use crate::verified::{sha256_of, VerifiedLibrary};

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
pub(crate) fn verified_cached_in(cache: &Path, plugin: &KnownPlugin) -> Result<VerifiedLibrary> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{default_plugin, KnownTool};
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
}
