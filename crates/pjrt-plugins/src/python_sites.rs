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
//! An answer is remembered only when the interpreter that gave it is the one we can see running
//! without running it: the `python3` on `PATH` after symlinks (or, behind pyenv's own shim, the
//! interpreter pyenv's version files choose). Python reports which binary it is
//! (`/proc/self/exe`, else `sys.executable`, resolved) and the answer is stored only when that is
//! the one we predicted; the prediction, with its size, time and inode, is part of the key. A
//! wrapper of any other kind (asdf's and mise's shims, a script that picks an interpreter from
//! `.tool-versions` or from the folder, a compiled launcher) is never the interpreter it runs, so
//! its answers are not remembered: recognising version managers by name could not be complete.
//! Nor is anything remembered where the plugin cache's folder is not one only this user can
//! change (`trust`): python is then asked every time.

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
const MAGIC: &str = "pjrt-client python-site-packages 2";

/// The line python adds to its answer: the interpreter binary that ran, resolved.
const INTERPRETER_LINE: &str = "pjrt-interpreter: ";

/// Appended to the caller's script: which binary runs (`/proc/self/exe` cannot be fooled by an
/// `argv[0]` a wrapper chose, as `sys.executable` can).
const REPORT_INTERPRETER: &str = "import os as _pjrt_os, sys as _pjrt_sys\n\
    _pjrt_exe = '/proc/self/exe' if _pjrt_os.path.exists('/proc/self/exe') else _pjrt_sys.executable\n\
    print('pjrt-interpreter: ' + _pjrt_os.path.realpath(_pjrt_exe))\n";

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
    if opted_out || pythons.is_empty() {
        return ask_python(script);
    }
    let Some(interpreter) = interpreter_that_runs(&pythons) else { return ask_python(script) };
    let Some(entry) = entry_path(&key(&pythons, &interpreter, script)) else { return ask_python(script) };
    if let Some(answer) = read_entry(&entry) {
        return Some(answer);
    }
    let (answer, ran, succeeded) = run_python(script)?;
    // Remembered only when the interpreter that answered is the one predicted: behind any other
    // wrapper the next run may get another interpreter. A python that failed (a pyenv version
    // not installed, say) is asked again next time. Best effort: a cache that cannot be written
    // costs the process start next time, nothing more.
    if succeeded && ran.as_deref() == Some(interpreter.as_path()) {
        let _ = write_entry(&entry, &answer);
        remove_expired(entry.parent());
    }
    Some(answer)
}

/// The interpreter binary that `python3` runs, as far as it can be known without running it:
/// the first `python3` on `PATH` after symlinks, or behind pyenv's shim the interpreter pyenv
/// would choose (`pyenv_choice`). `None` when no file can be named.
fn interpreter_that_runs(pythons: &[PathBuf]) -> Option<PathBuf> {
    let first = std::fs::canonicalize(pythons.first()?).ok()?;
    match pyenv_shim_root(&first) {
        Some(root) => std::fs::canonicalize(pyenv_choice(&root, pythons)?).ok(),
        None => Some(first),
    }
}

/// The `PYENV_ROOT` a file exports when it is pyenv's shim, as `pyenv rehash` writes it:
/// `program="${0##*/}"`, `export PYENV_ROOT="..."`, `exec ".../pyenv" exec "$program" "$@"`.
fn pyenv_shim_root(file: &Path) -> Option<PathBuf> {
    let mut head = [0u8; 4096];
    let read = std::fs::File::open(file).and_then(|mut f| std::io::Read::read(&mut f, &mut head)).ok()?;
    let text = std::str::from_utf8(&head[..read]).ok()?;
    if !text.starts_with("#!") {
        return None;
    }
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let has = |line: &str| lines.contains(&line);
    let execs_pyenv = lines.iter().any(|l| {
        l.strip_prefix("exec \"")
            .and_then(|rest| rest.strip_suffix("\" exec \"$program\" \"$@\""))
            .is_some_and(|pyenv| pyenv.ends_with("/pyenv"))
    });
    if !(has("program=\"${0##*/}\"") && execs_pyenv) {
        return None;
    }
    let root = lines.iter().find_map(|l| l.strip_prefix("export PYENV_ROOT=\"")?.strip_suffix('"'))?;
    Some(PathBuf::from(root))
}

/// The interpreter `pyenv exec python3` runs, by pyenv's rules: the versions of `PYENV_VERSION`,
/// else of the nearest `.python-version` (from `PYENV_DIR`, else the current folder, upward),
/// else of `$PYENV_ROOT/version`, else `system`; the first of them that has a `python3`
/// (`system`: the first `python3` on `PATH` outside pyenv's shims). `None` when none has one
/// (pyenv fails then), or where these rules may not be pyenv's (a version it would resolve by
/// prefix, say): then the answer is only not remembered, as the interpreter that answers is
/// checked against this one.
fn pyenv_choice(root: &Path, pythons: &[PathBuf]) -> Option<PathBuf> {
    let versions: Vec<String> = match std::env::var("PYENV_VERSION").ok().filter(|v| !v.is_empty()) {
        Some(list) => list.split(':').map(str::to_owned).collect(),
        None => {
            let file = pyenv_version_files(Some(root)).into_iter().map(|(_, f)| f).find(|f| f.is_file());
            let text = file.and_then(|f| std::fs::read_to_string(f).ok()).unwrap_or_default();
            let words: Vec<String> =
                text.split_whitespace().filter(|w| !w.starts_with('#')).map(str::to_owned).collect();
            if words.is_empty() {
                vec!["system".to_owned()]
            } else {
                words
            }
        }
    };
    let shims = root.join("shims");
    versions.iter().find_map(|version| {
        if version == "system" {
            pythons.iter().find(|p| p.parent() != Some(shims.as_path())).cloned()
        } else if version.contains('/') || version == ".." {
            None
        } else {
            Some(pyenv_interpreter(root, version)).filter(|p| is_executable(p))
        }
    })
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
    run_python(script).map(|(answer, _, _)| answer)
}

/// What `python3 -c script` printed, the interpreter binary that ran (as it reported it), and
/// whether it exited successfully; `None` when it could not be started.
fn run_python(script: &str) -> Option<(String, Option<PathBuf>, bool)> {
    let script = format!("{script}\n{REPORT_INTERPRETER}");
    let output =
        Command::new("python3").arg("-c").arg(script).stdin(Stdio::null()).stderr(Stdio::null()).output().ok()?;
    let printed = String::from_utf8_lossy(&output.stdout);
    let mut interpreter = None;
    let mut answer = String::new();
    for line in printed.lines() {
        match line.strip_prefix(INTERPRETER_LINE) {
            Some(path) => interpreter = Some(PathBuf::from(path)),
            None => {
                answer.push_str(line);
                answer.push('\n');
            }
        }
    }
    Some((answer, interpreter, output.status.success()))
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

/// SHA-256 (hex) of everything python's answer depends on, as length-prefixed name/value pairs.
fn key(pythons: &[PathBuf], interpreter: &Path, script: &str) -> String {
    let mut hasher = Sha256::new();
    let mut line = |name: &str, value: &[u8]| {
        // Lengths first, so that no two different keys write the same bytes.
        hasher.update(format!("{} {} ", name.len(), value.len()));
        hasher.update(name.as_bytes());
        hasher.update(value);
    };
    line("script", script.as_bytes());
    line("interpreter", &stamp(interpreter));
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
    fn only_pyenvs_own_shim_is_seen_through_and_any_other_wrapper_is_itself() {
        use std::os::unix::fs::PermissionsExt;
        let base = crate::trust::planted::scratch("shims");
        let script = |path: &Path, text: &str| {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
            path.to_path_buf()
        };
        // pyenv's shim, as `pyenv rehash` writes it.
        let pyenv = script(
            &base.join(".pyenv/shims/python3"),
            "#!/usr/bin/env bash\nset -e\n[ -n \"$PYENV_DEBUG\" ] && set -x\n\nprogram=\"${0##*/}\"\n\n\
             export PYENV_ROOT=\"/home/u/.pyenv\"\nexec \"/usr/lib/pyenv/libexec/pyenv\" exec \"$program\" \"$@\"\n",
        );
        assert_eq!(pyenv_shim_root(&pyenv), Some(PathBuf::from("/home/u/.pyenv")));
        // Anything else is taken for what it is: asdf's shim, a script that names no manager and
        // picks an interpreter from the folder, a binary.
        let asdf = script(
            &base.join("anywhere/python3"),
            "#!/usr/bin/env bash\n# asdf-plugin: python 3.12.4\nexec /home/u/.asdf/bin/asdf exec \"python3\" \"$@\"\n",
        );
        let generic = script(
            &base.join("bin/python3"),
            "#!/bin/sh\nv=$(cat .tool-versions)\nexec \"/opt/python-$v/bin/python3\" \"$@\"\n",
        );
        let binary = script(&base.join("usr/bin/python3.12"), "\x7fELF pyenv exec \"$program\"");
        for other in [&asdf, &generic, &binary] {
            assert_eq!(pyenv_shim_root(other), None, "{}", other.display());
            assert_eq!(interpreter_that_runs(std::slice::from_ref(other)), Some(other.canonicalize().unwrap()));
        }
        // A symlink (a venv's python3) is followed to its file.
        let link = base.join("venv/bin/python3");
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&binary, &link).unwrap();
        assert_eq!(interpreter_that_runs(&[link]), Some(binary.canonicalize().unwrap()));
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
