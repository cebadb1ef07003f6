//! The remembered answer of `python3` about its site-packages folders: `pjrt plugin list` runs with
//! a venv's `python3` (a copy of the interpreter, no pip) first on `PATH`, whose `sitecustomize`
//! counts its runs, and a plugin cache of the test's own. An answer is remembered only where the
//! interpreter that gave it is the one `pjrt` can name without running it.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::common::{pjrt_configured, stderr, temp_dir};

/// Environment variables that would change the key from outside the test.
const OUTSIDE: &[&str] = &[
    "PJRT_PLUGIN",
    "PJRT_NO_PYTHON_CACHE",
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
];

struct Fixture {
    root: PathBuf,
    bin: PathBuf,
    site: PathBuf,
    cache: PathBuf,
}

impl Fixture {
    fn new(name: &str) -> Fixture {
        let root = temp_dir(&format!("python-sites-{name}"));
        let cache = root.join("plugin-cache");
        for dir in [&cache, &root.join("home"), &root.join("work")] {
            std::fs::create_dir_all(dir).unwrap();
        }
        let (bin, site) = venv(&root.join("venv"), &root.join("runs"), &root.join("user-packages"));
        Fixture { root, bin, site, cache }
    }

    /// How many times the fake python3 ran so far.
    fn runs(&self) -> usize {
        std::fs::read_to_string(self.root.join("runs")).map(|t| t.lines().count()).unwrap_or(0)
    }

    /// `pjrt plugin list --json` with `env` set: the names of the plugins found in Python
    /// packages, with the folder each was found in.
    fn list(&self, env: &[(&str, &str)]) -> Vec<(String, String)> {
        self.list_in(&self.root.join("work"), env)
    }

    /// [`Fixture::list`] run from the folder `work`.
    fn list_in(&self, work: &Path, env: &[(&str, &str)]) -> Vec<(String, String)> {
        let out = pjrt_configured(&["plugin", "list", "--json"], |command| {
            for name in OUTSIDE {
                command.env_remove(name);
            }
            command
                .env("PATH", format!("{}:/usr/bin:/bin", self.bin.display()))
                .env("HOME", self.root.join("home"))
                .env("PJRT_PLUGIN_CACHE", &self.cache)
                .envs(env.iter().copied())
                .current_dir(work);
        });
        assert!(out.status.success(), "{}", stderr(&out));
        let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        rows.as_array()
            .unwrap()
            .iter()
            .filter_map(|row| {
                let source = row["source"].as_str()?.strip_prefix("python (")?.strip_suffix(')')?;
                Some((row["name"].as_str()?.to_owned(), source.to_owned()))
            })
            .collect()
    }

    /// Lists, then checks how many more times python3 ran (0: served from the cache).
    #[track_caller]
    fn assert_runs(&self, env: &[(&str, &str)], more: usize) -> Vec<(String, String)> {
        let before = self.runs();
        let found = self.list(env);
        assert_eq!(self.runs() - before, more, "python3 runs with {env:?}");
        found
    }

    fn entries(&self) -> Vec<PathBuf> {
        std::fs::read_dir(self.cache.join("python-site-packages"))
            .map(|entries| entries.flatten().map(|e| e.path()).collect())
            .unwrap_or_default()
    }
}

fn s(path: &Path) -> String {
    path.display().to_string()
}

/// A venv at `dir` (the interpreter copied, no pip: no system site-packages, no user site, so
/// its answer is the same on every host) whose python appends a line to `runs` each time it
/// starts and names `extra` (a `*-packages` folder that need not exist) on `sys.path`. Returns
/// its `bin` and `site-packages` folders.
fn venv(dir: &Path, runs: &Path, extra: &Path) -> (PathBuf, PathBuf) {
    let out = std::process::Command::new("python3")
        .args(["-m", "venv", "--without-pip", "--copies"])
        .arg(dir)
        .output()
        .expect("python3 (the plugin installs need it too)");
    assert!(out.status.success(), "python3 -m venv: {}", String::from_utf8_lossy(&out.stderr));
    let lib = std::fs::read_dir(dir.join("lib")).unwrap().flatten().map(|e| e.path()).next().unwrap();
    let site = lib.join("site-packages");
    std::fs::write(
        site.join("sitecustomize.py"),
        format!(
            "import sys\nopen({runs:?}, 'a').write('run\\n')\nsys.path.append({extra:?})\n",
            runs = s(runs),
            extra = s(extra)
        ),
    )
    .unwrap();
    (dir.join("bin"), site)
}

/// An executable script at `path`.
fn write_script(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A fake plugin `fake<suffix>` in `site`.
fn plant_plugin(site: &Path, suffix: &str) -> Vec<(String, String)> {
    let plugin_dir = site.join("jax_plugins").join(format!("xla_fake{suffix}"));
    std::fs::create_dir_all(&plugin_dir).unwrap();
    std::fs::write(plugin_dir.join("plugin.so"), b"not a library").unwrap();
    vec![(format!("fake{suffix}"), s(site))]
}

#[test]
fn python_sites_are_asked_once_until_what_decides_the_answer_changes() {
    let fx = Fixture::new("asked-once");
    assert_eq!(fx.assert_runs(&[], 1), vec![], "no plugin in the site folder yet");
    assert_eq!(fx.entries().len(), 1, "one entry written: {:?}", fx.entries());

    // A plugin installed after the answer was cached is found: the folders are scanned every time.
    let plugin_dir = fx.site.join("jax_plugins").join("xla_fake");
    std::fs::create_dir_all(&plugin_dir).unwrap();
    std::fs::write(plugin_dir.join("xla_fake_plugin.so"), b"not a library").unwrap();
    assert_eq!(fx.assert_runs(&[], 0), vec![("fake".to_owned(), s(&fx.site))]);
    // So is a folder python named that did not exist then (a user site made by `pip install --user`).
    let user_site = fx.root.join("user-packages");
    std::fs::create_dir_all(user_site.join("libtpu")).unwrap();
    std::fs::write(user_site.join("libtpu").join("libtpu.so"), b"not a library").unwrap();
    let both = vec![("fake".to_owned(), s(&fx.site)), ("tpu".to_owned(), s(&user_site))];
    assert_eq!(fx.assert_runs(&[], 0), both);
    std::fs::remove_dir_all(&user_site).unwrap();

    // Each input of the key asks again once, then is served from the cache.
    for env in [[("PYTHONPATH", "/somewhere")], [("VIRTUAL_ENV", "/some/venv")], [("PYENV_VERSION", "3.11.9")]] {
        fx.assert_runs(&env, 1);
        assert_eq!(fx.assert_runs(&env, 0).len(), 1);
    }
    let local_version = fx.root.join("work").join(".python-version");
    std::fs::write(&local_version, "3.11.9\n").unwrap();
    fx.assert_runs(&[], 1);
    fx.assert_runs(&[], 0);
    std::fs::write(&local_version, "3.12.4\n").unwrap();
    fx.assert_runs(&[], 1);
    fx.assert_runs(&[], 0);

    // A python3 that changed (reinstalled, upgraded) is asked again.
    // Opened read-only: a file open for writing cannot be run (ETXTBSY).
    let python = std::fs::File::open(fx.bin.join("python3")).unwrap();
    python.set_modified(SystemTime::now() - Duration::from_secs(3600)).unwrap();
    drop(python);
    fx.assert_runs(&[], 1);
    fx.assert_runs(&[], 0);

    // A damaged entry is a miss, and is rewritten.
    for entry in fx.entries() {
        std::fs::write(entry, "pjrt-client python-site-packages 1\nkey 00\n/elsewhere\n").unwrap();
    }
    assert_eq!(fx.assert_runs(&[], 1), vec![("fake".to_owned(), s(&fx.site))]);
    fx.assert_runs(&[], 0);

    // The opt-out asks every time.
    for _ in 0..2 {
        assert_eq!(fx.assert_runs(&[("PJRT_NO_PYTHON_CACHE", "1")], 1).len(), 1);
    }

    // No python3 on PATH: no Python plugins, nothing run, nothing cached for it.
    let before = fx.entries().len();
    let empty = fx.root.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    assert_eq!(fx.assert_runs(&[("PATH", &s(&empty))], 0), vec![]);
    assert_eq!(fx.entries().len(), before);
    std::fs::remove_dir_all(&fx.root).unwrap();
}

/// A shim like asdf's (or mise's): which interpreter runs, hence its site-packages, depends on
/// the `.tool-versions` of the folder it runs in, which no key of ours holds.
fn write_shim(path: &Path, root: &Path, manager: &str) {
    let script = format!(
        "#!/bin/sh\n# {manager} shim: the version comes from the current folder\necho run >> '{runs}'\n\
         version=$(sed -n 's/^python //p' .tool-versions)\necho '{root}/sites/'\"$version\"\n",
        runs = root.join("runs").display(),
        root = root.display(),
    );
    std::fs::write(path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn python_sites_behind_an_asdf_or_mise_shim_are_those_of_the_current_project() {
    for manager in ["asdf", "mise"] {
        let fx = Fixture::new(manager);
        let python = fx.bin.join("python3");
        if manager == "asdf" {
            // asdf's shims are scripts that name asdf.
            write_shim(&python, &fx.root, "asdf");
        } else {
            // mise's are symlinks to the mise program.
            std::fs::remove_file(&python).unwrap();
            let program = fx.root.join("mise-bin").join("mise");
            std::fs::create_dir_all(program.parent().unwrap()).unwrap();
            write_shim(&program, &fx.root, "version manager");
            std::os::unix::fs::symlink(&program, &python).unwrap();
        }
        // Two projects, each with its python version and a plugin installed in that version.
        let mut found = Vec::new();
        for (project, version) in [("a", "3.11.9"), ("b", "3.12.4")] {
            let work = fx.root.join(project);
            std::fs::create_dir_all(&work).unwrap();
            std::fs::write(work.join(".tool-versions"), format!("python {version}\n")).unwrap();
            let site = fx.root.join("sites").join(version);
            let plugin_dir = site.join("jax_plugins").join(format!("xla_fake{}", version.replace('.', "")));
            std::fs::create_dir_all(&plugin_dir).unwrap();
            std::fs::write(plugin_dir.join("plugin.so"), b"not a library").unwrap();
            found.push((work, vec![(format!("fake{}", version.replace('.', "")), s(&site))]));
        }
        // Each project gets its own answer, again and again.
        for _ in 0..2 {
            for (work, expected) in &found {
                let before = fx.runs();
                assert_eq!(&fx.list_in(work, &[]), expected, "{manager} in {}", work.display());
                assert_eq!(fx.runs() - before, 1, "{manager}: python3 is asked every time behind the shim");
            }
        }
        assert!(fx.entries().is_empty(), "{manager}: nothing remembered: {:?}", fx.entries());
        std::fs::remove_dir_all(&fx.root).unwrap();
    }
}

#[test]
fn python_sites_are_not_remembered_in_a_plugin_cache_another_user_could_change() {
    let fx = Fixture::new("untrusted-cache");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fx.cache, std::fs::Permissions::from_mode(0o757)).unwrap();
    // Writable by others: an answer could be planted there, so none is written or read.
    fx.assert_runs(&[], 1);
    fx.assert_runs(&[], 1);
    assert!(fx.entries().is_empty(), "nothing written: {:?}", fx.entries());
    // The same through a symlink to that folder.
    let link = fx.root.join("cache-link");
    std::os::unix::fs::symlink(&fx.cache, &link).unwrap();
    fx.assert_runs(&[("PJRT_PLUGIN_CACHE", &s(&link))], 1);
    fx.assert_runs(&[("PJRT_PLUGIN_CACHE", &s(&link))], 1);
    // Once it is the user's alone, the answer is remembered again.
    std::fs::set_permissions(&fx.cache, std::fs::Permissions::from_mode(0o700)).unwrap();
    fx.assert_runs(&[], 1);
    fx.assert_runs(&[], 0);
    std::fs::remove_dir_all(&fx.root).unwrap();
}

/// Two projects, `a` and `b`, each with its own interpreter (a venv with a plugin of its own) named
/// in its `.tool-versions`; `launcher` is a `python3` that runs the project's interpreter from
/// the current folder. Runs `pjrt plugin list` in a, b, a, b and returns how many times python
/// ran in each, with each project's answer checked.
fn projects_behind(fx: &Fixture, launcher: impl FnOnce(&Path, &Path)) -> Vec<usize> {
    let mut projects = Vec::new();
    for name in ["a", "b"] {
        let (bin, site) = venv(&fx.root.join(format!("venv-{name}")), &fx.root.join("runs"), &fx.root.join("none"));
        let work = fx.root.join(name);
        std::fs::create_dir_all(&work).unwrap();
        std::fs::write(work.join(".tool-versions"), format!("python {name}\n")).unwrap();
        projects.push((work, plant_plugin(&site, name), bin));
    }
    launcher(&fx.bin.join("python3"), &fx.root);
    let mut runs = Vec::new();
    for _ in 0..2 {
        for (work, expected, _) in &projects {
            let before = fx.runs();
            // The same folders, whichever path (pyenv's versions/NAME is a symlink) python named them by.
            let canonical = |found: &[(String, String)]| -> Vec<(String, PathBuf)> {
                found.iter().map(|(name, dir)| (name.clone(), Path::new(dir).canonicalize().unwrap())).collect()
            };
            assert_eq!(canonical(&fx.list_in(work, &[])), canonical(expected), "in {}", work.display());
            runs.push(fx.runs() - before);
        }
    }
    runs
}

#[test]
fn python_sites_behind_a_wrapper_of_no_known_name_are_those_of_the_current_project() {
    // A script that names no version manager: it reads `.tool-versions` and runs that venv.
    let fx = Fixture::new("generic-shim");
    let runs = projects_behind(&fx, |python, root| {
        std::fs::remove_file(python).unwrap();
        let script = format!(
            "#!/bin/sh\nversion=$(sed -n 's/^python //p' .tool-versions)\nexec '{}'/venv-\"$version\"/bin/python3 \"$@\"\n",
            s(root)
        );
        write_script(python, &script);
    });
    assert_eq!(runs, [1, 1, 1, 1], "python3 is asked every time behind the wrapper");
    assert!(fx.entries().is_empty(), "nothing remembered: {:?}", fx.entries());
    std::fs::remove_dir_all(&fx.root).unwrap();

    // The same launcher compiled: a binary, not a script, and still not the interpreter it runs.
    let fx = Fixture::new("compiled-shim");
    let runs = projects_behind(&fx, |python, root| {
        let source = root.join("launcher.rs");
        let program = format!(
            "use std::os::unix::process::CommandExt;\n\
             fn main() {{\n\
                 let versions = std::fs::read_to_string(\".tool-versions\").unwrap();\n\
                 let version = versions.trim().trim_start_matches(\"python \");\n\
                 let python = format!(\"{}/venv-{{version}}/bin/python3\");\n\
                 panic!(\"{{}}\", std::process::Command::new(python).args(std::env::args_os().skip(1)).exec());\n\
             }}\n",
            s(root)
        );
        std::fs::write(&source, program).unwrap();
        std::fs::remove_file(python).unwrap();
        let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
        let out = std::process::Command::new(rustc).arg(&source).arg("-o").arg(python).output().unwrap();
        assert!(out.status.success(), "rustc: {}", String::from_utf8_lossy(&out.stderr));
    });
    assert_eq!(runs, [1, 1, 1, 1], "python3 is asked every time behind the compiled launcher");
    assert!(fx.entries().is_empty(), "nothing remembered: {:?}", fx.entries());
    std::fs::remove_dir_all(&fx.root).unwrap();
}

#[test]
fn python_sites_behind_pyenvs_shim_are_remembered_per_project() {
    let fx = Fixture::new("pyenv");
    let runs = projects_behind(&fx, |python, root| {
        // pyenv's root: each project's venv as a pyenv version, and `pyenv exec` run by pyenv's
        // own shim (as `pyenv rehash` writes it) picking the version from `.python-version`.
        let pyenv_root = root.join("pyenv");
        std::fs::create_dir_all(pyenv_root.join("versions")).unwrap();
        for name in ["a", "b"] {
            std::os::unix::fs::symlink(root.join(format!("venv-{name}")), pyenv_root.join("versions").join(name))
                .unwrap();
            std::fs::write(root.join(name).join(".python-version"), format!("{name}\n")).unwrap();
        }
        write_script(
            &pyenv_root.join("libexec/pyenv"),
            "#!/bin/sh\n# pyenv exec PROGRAM ARGS: the version of ./.python-version\nshift\nprogram=$1\nshift\n\
             exec \"$PYENV_ROOT/versions/$(cat .python-version)/bin/$program\" \"$@\"\n",
        );
        std::fs::remove_file(python).unwrap();
        let shim = format!(
            "#!/usr/bin/env bash\nset -e\n[ -n \"$PYENV_DEBUG\" ] && set -x\n\nprogram=\"${{0##*/}}\"\n\n\
             export PYENV_ROOT=\"{root}\"\nexec \"{root}/libexec/pyenv\" exec \"$program\" \"$@\"\n",
            root = s(&pyenv_root)
        );
        write_script(python, &shim);
    });
    // Asked once per project, then each project's own answer is remembered.
    assert_eq!(runs, [1, 1, 0, 0]);
    assert_eq!(fx.entries().len(), 2, "{:?}", fx.entries());
    std::fs::remove_dir_all(&fx.root).unwrap();
}
