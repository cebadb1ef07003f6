//! Remembers what `python3` answers when asked for its site-packages folders, so that finding a
//! plugin does not start a Python process on every run (a pyenv shim takes ~100 ms to start).
//!
//! Only python's raw answer (the folder paths it printed) is kept, never the plugins found: every
//! lookup still scans the folders, so a plugin installed or removed since is seen at once. The
//! answer is stored under a key made of everything that decides which `python3` runs and what it
//! answers (environment variables, pyenv's version files, the `python3` files on `PATH` with their
//! size, time and inode, a venv's `pyvenv.cfg`); any change is a new key, so python is asked
//! again. Entries older than [`MAX_AGE`] are asked again too, a last guard for what the key cannot
//! see (a `.pth` file that adds a `*-packages` folder, say). `PJRT_NO_PYTHON_CACHE=1` turns the
//! cache off.
//!
//! Not remembered at all: behind a version manager's shim that picks the interpreter from the
//! current folder without pyenv's files (asdf, mise: `.tool-versions`, `mise.toml`, their
//! `ASDF_*`/`MISE_*` variables and config folders, too many inputs to key on faithfully); and
//! where the plugin cache's folder is not one only this user can change (`trust`): python is
//! then asked every time.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};

/// The environment variable that turns the cache off (any value but empty or `0`).
pub(crate) const OPT_OUT_ENV: &str = "PJRT_NO_PYTHON_CACHE";

/// An entry older than this is recomputed even when its key still matches.
const MAX_AGE: Duration = Duration::from_secs(24 * 60 * 60);

/// First line of every entry; an entry without it (or with another version) is a miss.
const MAGIC: &str = "pjrt-client python-site-packages 1";

/// Last line of every entry: a file cut short by a crash lacks it and is a miss.
const END: &str = "end";

/// Environment variables that choose the `python3` that runs or change what `site` answers.
const KEY_ENV: &[&str] = &[
    "PATH",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONUSERBASE",
    "PYTHONNOUSERSITE",
    "PYTHONSAFEPATH",
    "PYTHONPLATLIBDIR",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "PYENV_VERSION",
    "PYENV_ROOT",
    "PYENV_DIR",
    "HOME",
];

/// The printed folders of `python3 -c <site script>`, one per line, from the cache when its key
/// matches, else from python (then stored). `None` when there is no `python3` to run.
pub(crate) fn site_packages_answer(script: &str) -> Option<String> {
    let opted_out = std::env::var_os(OPT_OUT_ENV).is_some_and(|v| !v.is_empty() && v != "0");
    // Without a python3 that PATH resolves to, there is nothing to key on: ask as before (the
    // spawn fails at once when there is none, and the process's own lookup decides otherwise).
    let pythons = pythons_on_path();
    if opted_out || pythons.is_empty() || pythons.iter().any(|p| is_folder_dependent_shim(p)) {
        return ask_python(script);
    }
    let Some(entry) = entry_path(&key(&pythons, script)) else { return ask_python(script) };
    if let Some(answer) = read_entry(&entry) {
        return Some(answer);
    }
    let (answer, succeeded) = run_python(script)?;
    // A python that failed (a pyenv version not installed, say) is asked again next time. Best
    // effort: a cache that cannot be written costs the process start next time, nothing more.
    if succeeded {
        let _ = write_entry(&entry, &answer);
        remove_expired(entry.parent());
    }
    Some(answer)
}

/// Removes the entries of keys no longer used (older than [`MAX_AGE`]), so that the folder does
/// not grow with every environment ever seen. Runs only after python was asked (a miss).
fn remove_expired(dir: Option<&Path>) {
    let Some(Ok(entries)) = dir.map(std::fs::read_dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let expired = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| SystemTime::now().duration_since(t).unwrap_or_default() > MAX_AGE);
        let ours = path.extension().is_some_and(|e| e == "txt" || e == "tmp");
        if expired && ours {
            let _ = std::fs::remove_file(path);
        }
    }
}

fn ask_python(script: &str) -> Option<String> {
    run_python(script).map(|(answer, _)| answer)
}

/// What `python3 -c script` printed, and whether it exited successfully; `None` when it could
/// not be started.
fn run_python(script: &str) -> Option<(String, bool)> {
    let output =
        Command::new("python3").arg("-c").arg(script).stdin(Stdio::null()).stderr(Stdio::null()).output().ok()?;
    Some((String::from_utf8_lossy(&output.stdout).into_owned(), output.status.success()))
}

/// Every executable `python3` on `PATH`, in order: the first runs, and the later ones are what a
/// pyenv shim set to `system` (or another wrapper) falls through to.
fn pythons_on_path() -> Vec<PathBuf> {
    let Some(path) = std::env::var_os("PATH") else { return Vec::new() };
    std::env::split_paths(&path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(if cfg!(windows) { "python3.exe" } else { "python3" }))
        .filter(|candidate| is_executable(candidate))
        .collect()
}

fn is_executable(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else { return false };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.is_file() && meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    meta.is_file()
}

/// Whether `python` is the shim of a version manager that chooses the interpreter from the
/// current folder through files pyenv does not read (asdf's `.tool-versions`, mise's
/// `mise.toml`, ...): a symlink to the `mise` (or `rtx`) program, a file in asdf's or mise's
/// `shims` folder, or a script that names asdf or mise. pyenv's shims are not: the key holds
/// pyenv's version files.
pub(crate) fn is_folder_dependent_shim(python: &Path) -> bool {
    const MANAGERS: &[&str] = &["asdf", "mise", "rtx"];
    let target = std::fs::canonicalize(python).unwrap_or_else(|_| python.to_path_buf());
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if MANAGERS.contains(&name.as_str()) {
        return true;
    }
    // ~/.asdf/shims/python3, ~/.local/share/mise/shims/python3, and the same after symlinks.
    for path in [python, target.as_path()] {
        let mut folders = path.ancestors().skip(1);
        if folders.next().is_some_and(|bin| bin.ends_with("shims")) {
            if let Some(manager) = folders.next().and_then(|d| d.file_name()).map(|n| n.to_string_lossy()) {
                if MANAGERS.iter().any(|m| manager.trim_start_matches('.') == *m) {
                    return true;
                }
            }
        }
    }
    // A script (asdf's shims are shell scripts that `exec asdf exec python3`).
    let mut head = [0u8; 4096];
    let read = std::fs::File::open(&target).and_then(|mut f| std::io::Read::read(&mut f, &mut head)).unwrap_or(0);
    let head = &head[..read];
    head.starts_with(b"#!") && {
        let text = String::from_utf8_lossy(head);
        text.split(|c: char| !c.is_ascii_alphanumeric()).any(|word| MANAGERS.contains(&word))
    }
}

/// SHA-256 (hex) of everything python's answer depends on, as length-prefixed name/value pairs.
fn key(pythons: &[PathBuf], script: &str) -> String {
    let mut hasher = Sha256::new();
    let mut line = |name: &str, value: &[u8]| {
        // Lengths first, so that no two different keys write the same bytes.
        hasher.update(format!("{} {} ", name.len(), value.len()));
        hasher.update(name.as_bytes());
        hasher.update(value);
    };
    line("script", script.as_bytes());
    for name in KEY_ENV {
        match std::env::var_os(name) {
            Some(value) => line(name, value.as_encoded_bytes()),
            None => line(name, b"(unset)"),
        }
    }
    for python in pythons {
        line("python3", &stamp(python));
        // A venv's python3 is a symlink; its pyvenv.cfg decides whether system site-packages count.
        if let Some(bin) = python.parent() {
            line("pyvenv.cfg", &stamp(&bin.join("pyvenv.cfg")));
            line("pyvenv.cfg", &stamp(&bin.join("../pyvenv.cfg")));
        }
    }
    let pyenv_root = pyenv_root();
    for (name, file) in pyenv_version_files(pyenv_root.as_deref()) {
        let content = std::fs::read(&file).unwrap_or_default();
        line(name, &content);
        // The interpreters a pyenv shim would run for these versions, without running pyenv.
        if let Some(root) = &pyenv_root {
            for version in String::from_utf8_lossy(&content).split_whitespace() {
                line("pyenv python3", &stamp(&pyenv_interpreter(root, version)));
            }
        }
    }
    if let (Some(root), Some(version)) = (&pyenv_root, std::env::var_os("PYENV_VERSION")) {
        for version in version.to_string_lossy().split(':') {
            line("pyenv python3", &stamp(&pyenv_interpreter(root, version)));
        }
    }
    crate::trust::hex(&hasher.finalize())
}

/// The interpreter a pyenv shim runs for `version`, found without running pyenv.
fn pyenv_interpreter(root: &Path, version: &str) -> PathBuf {
    root.join("versions").join(version).join("bin").join("python3")
}

/// The file a path leads to, following symlinks: its path, size, modification time and inode.
fn stamp(path: &Path) -> Vec<u8> {
    let target = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let Ok(meta) = std::fs::metadata(&target) else { return b"(missing)".to_vec() };
    let modified =
        meta.modified().ok().and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok()).map(|d| d.as_nanos());
    #[cfg(unix)]
    let inode = {
        use std::os::unix::fs::MetadataExt;
        meta.ino()
    };
    #[cfg(not(unix))]
    let inode = 0u64;
    format!("{} {} {:?} {}", target.display(), meta.len(), modified, inode).into_bytes()
}

fn pyenv_root() -> Option<PathBuf> {
    std::env::var_os("PYENV_ROOT")
        .filter(|r| !r.is_empty())
        .map(PathBuf::from)
        .or_else(|| crate::trust::home_dir().map(|h| h.join(".pyenv")))
}

/// pyenv's version files: the nearest `.python-version` walking up from `$PYENV_DIR` (default:
/// the current directory), and the global `$PYENV_ROOT/version`.
fn pyenv_version_files(root: Option<&Path>) -> Vec<(&'static str, PathBuf)> {
    let mut files = Vec::new();
    let start = std::env::var_os("PYENV_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::current_dir().ok());
    if let Some(start) = start {
        if let Some(local) = start.ancestors().map(|dir| dir.join(".python-version")).find(|f| f.is_file()) {
            files.push((".python-version", local));
        }
    }
    if let Some(root) = root {
        files.push(("pyenv version", root.join("version")));
    }
    files
}

/// Where the entry for `key` lives; `None` without a plugin cache (no home).
fn entry_path(key: &str) -> Option<PathBuf> {
    Some(crate::trust::cache_dir()?.join("python-site-packages").join(format!("{key}.txt")))
}

/// The answer stored in an entry, or `None` when it is missing, too old, unreadable, not an
/// entry this code wrote, or in a folder (or a file) another user could change.
fn read_entry(path: &Path) -> Option<String> {
    crate::trust::check_trusted_dir(path.parent()?).ok()?;
    crate::trust::check_trusted_file(path).ok()?;
    let meta = std::fs::metadata(path).ok()?;
    let age = SystemTime::now().duration_since(meta.modified().ok()?).unwrap_or_default();
    if age > MAX_AGE {
        return None;
    }
    let text = std::fs::read_to_string(path).ok()?;
    let body = text.strip_prefix(MAGIC)?.strip_prefix('\n')?;
    let answer = body.strip_suffix(&format!("\n{END}\n"))?;
    // The name is the key, so a file copied under another name is refused: its first line says
    // which key it was written for.
    let (key_line, answer) = answer.split_once('\n').unwrap_or((answer, ""));
    let stem = path.file_stem()?.to_str()?;
    if key_line.strip_prefix("key ")? != stem {
        return None;
    }
    Some(answer.to_owned())
}

/// Writes an entry atomically: a temporary file in the same folder, renamed over the entry.
fn write_entry(path: &Path, answer: &str) -> std::io::Result<()> {
    let dir = path.parent().ok_or_else(|| std::io::Error::other("entry without a folder"))?;
    // Owner-only, like the plugin cache it lives in (created here when nothing was installed yet),
    // and never where another user could plant an answer.
    crate::trust::create_private_dir(dir).map_err(|e| std::io::Error::other(e.to_string()))?;
    let dir = &crate::trust::check_trusted_dir(dir).map_err(|e| std::io::Error::other(e.to_string()))?;
    let path = &dir.join(path.file_name().ok_or_else(|| std::io::Error::other("entry without a name"))?);
    let key = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    let answer = answer.strip_suffix('\n').unwrap_or(answer);
    let text = format!("{MAGIC}\nkey {key}\n{answer}\n{END}\n");
    // Unique per process and call, so that two writers never share a temporary file.
    static WRITES: AtomicUsize = AtomicUsize::new(0);
    let n = WRITES.fetch_add(1, Ordering::Relaxed);
    let temp = dir.join(format!(".{key}.{}.{n}.tmp", std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    std::io::Write::write_all(&mut options.open(&temp)?, text.as_bytes())?;
    std::fs::rename(&temp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&temp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(unix)]
    fn answers_are_neither_read_nor_written_where_another_user_could_plant_them() {
        use crate::trust::planted;
        let base = planted::scratch("python-sites");
        for (what, dir) in planted::untrusted_folders(&base) {
            let path = dir.join("python-site-packages").join("abc.txt");
            assert!(write_entry(&path, "/ours").is_err(), "{what}: written");
            // An answer planted there is not read.
            std::fs::write(&path, format!("{MAGIC}\nkey abc\n/planted\n{END}\n")).unwrap();
            assert_eq!(read_entry(&path), None, "{what}");
        }
        for (what, dir) in planted::trusted_folders(&base) {
            let path = dir.join("python-site-packages").join("abc.txt");
            write_entry(&path, "/ours").unwrap();
            assert_eq!(read_entry(&path).as_deref(), Some("/ours"), "{what}");
        }
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    #[cfg(unix)]
    fn the_shims_of_asdf_and_mise_are_recognised_and_pyenvs_and_real_pythons_are_not() {
        use std::os::unix::fs::PermissionsExt;
        let base = crate::trust::planted::scratch("shims");
        let script = |path: &Path, text: &str| {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
            path.to_path_buf()
        };
        // asdf's shim, as asdf writes it.
        let asdf = script(
            &base.join("anywhere/python3"),
            "#!/usr/bin/env bash\n# asdf-plugin: python 3.12.4\nexec /home/u/.asdf/bin/asdf exec \"python3\" \"$@\"\n",
        );
        assert!(is_folder_dependent_shim(&asdf));
        // mise's shims are symlinks to the mise program; its shims folder counts too.
        let mise = script(&base.join("bin/mise"), "#!/bin/sh\n");
        let link = base.join("mise-link/python3");
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&mise, &link).unwrap();
        assert!(is_folder_dependent_shim(&link));
        assert!(is_folder_dependent_shim(&script(&base.join(".local/share/mise/shims/python3"), "\x7fELF")));
        assert!(is_folder_dependent_shim(&script(&base.join(".asdf/shims/python3"), "\x7fELF")));
        // pyenv's shim reads the files the key holds; a plain interpreter is no shim.
        let pyenv = script(
            &base.join(".pyenv/shims/python3"),
            "#!/usr/bin/env bash\nset -e\nprogram=\"${0##*/}\"\nexport PYENV_ROOT=\"/home/u/.pyenv\"\nexec \"/usr/lib/pyenv/libexec/pyenv\" exec \"$program\" \"$@\"\n",
        );
        assert!(!is_folder_dependent_shim(&pyenv));
        assert!(!is_folder_dependent_shim(&script(&base.join("usr/bin/python3"), "\x7fELF mise asdf")));
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn an_entry_reads_back_and_a_damaged_or_renamed_one_is_a_miss() {
        let dir = std::env::temp_dir().join(format!("pjrt-python-sites-unit-{}", std::process::id()));
        let path = dir.join("abc.txt");
        write_entry(&path, "/a/site-packages\n/b/dist-packages\n").unwrap();
        assert_eq!(read_entry(&path).as_deref(), Some("/a/site-packages\n/b/dist-packages"));
        write_entry(&path, "").unwrap();
        assert_eq!(read_entry(&path).as_deref(), Some(""));

        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.trim_end_matches("end\n")).unwrap();
        assert_eq!(read_entry(&path), None, "cut short");
        std::fs::write(&path, "garbage\n").unwrap();
        assert_eq!(read_entry(&path), None, "foreign");
        write_entry(&dir.join("other.txt"), "/x").unwrap();
        std::fs::rename(dir.join("other.txt"), &path).unwrap();
        assert_eq!(read_entry(&path), None, "written for another key");

        write_entry(&path, "/x").unwrap();
        let old = SystemTime::now() - MAX_AGE - Duration::from_secs(60);
        std::fs::File::options().write(true).open(&path).unwrap().set_modified(old).unwrap();
        assert_eq!(read_entry(&path), None, "expired");
        write_entry(&dir.join("fresh.txt"), "/y").unwrap();
        remove_expired(Some(&dir));
        assert!(!path.exists(), "an expired entry is removed");
        assert!(dir.join("fresh.txt").exists(), "a fresh one is kept");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
