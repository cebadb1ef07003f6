//! What the caches trust, end to end: the compile cache (serialized executables are native
//! code) is not used from a folder another user could change, nothing goes to `$TMPDIR` when
//! there is no `HOME`, and pip installs wheels only. On both CPU plugins where a plugin runs.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde_json::Value as Json;

use crate::common::*;

/// `nobody` on most systems; any uid other than ours and root's does.
const OTHER_UID: u32 = 65534;

const PROGRAM: &str = "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n  %0 = stablehlo.add %a, %a : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n";

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Whether this process runs as root: the owner of a file it just made.
fn is_root(scratch: &Path) -> bool {
    let probe = scratch.join("owner-probe");
    std::fs::write(&probe, b"").unwrap();
    let root = std::fs::metadata(&probe).unwrap().uid() == 0;
    std::fs::remove_file(probe).unwrap();
    root
}

fn folder(path: &Path, mode: u32) -> PathBuf {
    std::fs::create_dir_all(path).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    path.to_path_buf()
}

/// Compile-cache folders another user could plant entries in, each filled with the entries of
/// `entries` (a cache of ours): writable by others, writable by a group (another group, when
/// root), owned by another user (root only: `chown`), inside a folder writable by others, and a
/// symlink to such a folder.
fn untrusted_caches(base: &Path, entries: &Path) -> Vec<(&'static str, PathBuf)> {
    folder(base, 0o700);
    let root = is_root(base);
    let fill = |dir: &Path| {
        for entry in std::fs::read_dir(entries).unwrap().flatten() {
            std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
        }
    };
    let mut caches = Vec::new();
    let others = folder(&base.join("o+w"), 0o700);
    fill(&others);
    folder(&others, 0o757);
    caches.push(("writable by others", others.clone()));
    if root {
        let group = folder(&base.join("g+w"), 0o700);
        fill(&group);
        std::os::unix::fs::chown(&group, None, Some(OTHER_UID)).unwrap();
        folder(&group, 0o775);
        caches.push(("writable by another group", group));
        let owned = folder(&base.join("theirs"), 0o755);
        fill(&owned);
        std::os::unix::fs::chown(&owned, Some(OTHER_UID), Some(OTHER_UID)).unwrap();
        caches.push(("owned by another user", owned));
    } else {
        eprintln!("not root: the owner and group cases are checked on synthetic metadata (pjrt-client's trust tests)");
    }
    let parent = folder(&base.join("open-parent"), 0o777);
    let inside = folder(&parent.join("ours"), 0o700);
    fill(&inside);
    caches.push(("inside a folder writable by others", inside));
    let link = base.join("link-to-o+w");
    std::os::unix::fs::symlink(&others, &link).unwrap();
    caches.push(("a symlink to a folder writable by others", link));
    caches
}

fn run_json(program: &Path, plugin: &str, cache: &Path) -> (Json, String) {
    let x = program.with_file_name("x.npy");
    pjrt_formats::npy::NpyArray::from_elements(vec![4], &[1f32, 2.0, 3.0, 4.0]).unwrap().write(&x).unwrap();
    let out =
        pjrt_env(&["run", s(program), "--plugin", plugin, "--input", s(&x), "--json"], &[("PJRT_CACHE_DIR", s(cache))]);
    assert!(out.status.success(), "{plugin}: {}", stderr(&out));
    (serde_json::from_slice(&out.stdout).expect("one JSON object"), stderr(&out))
}

#[test]
fn cache_trust_entries_in_a_folder_another_user_could_change_are_never_loaded() {
    for plugin in PLUGINS {
        let dir = temp_dir(&format!("cache-trust-{plugin}"));
        let program = dir.join("double.mlir");
        std::fs::write(&program, PROGRAM).unwrap();
        let ours = dir.join("ours");
        assert_eq!(run_json(&program, plugin, &ours).0["cache"], "miss", "{plugin}");
        assert_eq!(run_json(&program, plugin, &ours).0["cache"], "hit", "{plugin}: a folder of ours is used");
        // The same entries, where another user could have planted them: compiled without the
        // cache, and the run says why.
        for (what, cache) in untrusted_caches(&dir.join("planted"), &ours) {
            let (report, err) = run_json(&program, plugin, &cache);
            assert_eq!(report["cache"], "off", "{plugin}, {what}: {report}");
            assert!(err.contains("compiling without the compile cache"), "{plugin}, {what}: {err}");
            assert!(err.contains("not a folder only you can change"), "{plugin}, {what}: {err}");
        }
        // A symlink to a folder of ours (a cache on a scratch disk) is used.
        let link = dir.join("link-to-ours");
        std::os::unix::fs::symlink(&ours, &link).unwrap();
        assert_eq!(run_json(&program, plugin, &link).0["cache"], "hit", "{plugin}");
        // `pjrt cache` refuses such a folder too.
        let out = pjrt_env(&["cache", "info"], &[("PJRT_CACHE_DIR", s(&dir.join("planted/o+w")))]);
        assert_fails(&out, "not a folder only you can change");
    }
}

#[test]
fn cache_trust_without_home_nothing_goes_to_the_temporary_folder() {
    let dir = temp_dir("cache-trust-no-home");
    let tmp = folder(&dir.join("tmp"), 0o777);
    // What another user could plant in the old fallback, $TMPDIR/pjrt-client/plugins: the
    // default CPU plugin's place, with a marker that claims its pin.
    let known = pjrt_plugins::default_plugin();
    let planted =
        tmp.join("pjrt-client/plugins").join(format!("{}-{}", known.package, known.version)).join(known.library);
    std::fs::create_dir_all(planted.parent().unwrap()).unwrap();
    std::fs::write(&planted, b"another user's library").unwrap();
    let meta = std::fs::metadata(&planted).unwrap();
    let modified = meta.modified().unwrap().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let marker = planted.with_file_name(format!("{}.pjrt-verified", planted.file_name().unwrap().to_string_lossy()));
    std::fs::write(marker, format!("{} {} {modified} {}", known.sha256, meta.len(), meta.ino())).unwrap();
    // The plugin to run, by path: where this test's HOME keeps it.
    let plugin = pjrt_plugins::verified_cached(known).unwrap().path().to_path_buf();
    let program = dir.join("double.mlir");
    std::fs::write(&program, PROGRAM).unwrap();
    let x = dir.join("x.npy");
    pjrt_formats::npy::NpyArray::from_elements(vec![4], &[1f32, 2.0, 3.0, 4.0]).unwrap().write(&x).unwrap();
    let without_home = |args: &[&str]| {
        pjrt_configured(args, |command| {
            for name in ["HOME", "XDG_CACHE_HOME", "PJRT_PLUGIN_CACHE", "PJRT_CACHE_DIR", "PJRT_PLUGIN"] {
                command.env_remove(name);
            }
            command.env("TMPDIR", &tmp);
        })
    };
    let out = without_home(&["plugin", "list", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: Json = serde_json::from_slice(&out.stdout).unwrap();
    for row in rows.as_array().unwrap() {
        assert!(!row["path"].as_str().unwrap().starts_with(s(&tmp)), "a plugin from $TMPDIR: {row}");
    }
    let out = without_home(&["run", s(&program), "--plugin", s(&plugin), "--input", s(&x), "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The home of the password database holds the compile cache instead.
    let report: Json = serde_json::from_slice(&out.stdout).unwrap();
    assert_ne!(report["cache"], "off", "{report}: {}", stderr(&out));
    // Neither python's answer nor a compiled executable was kept there.
    let mut left: Vec<String> = std::fs::read_dir(tmp.join("pjrt-client"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["plugins"], "only what was planted");
    assert!(!tmp.join("pjrt-client/plugins/python-site-packages").exists());
}

#[test]
fn cache_trust_pip_installs_wheels_only() {
    let dir = temp_dir("cache-trust-pip");
    let bin = folder(&dir.join("bin"), 0o755);
    let args = dir.join("args");
    // A python3 that records its arguments, one per line, and fails like pip without network.
    let python = bin.join("python3");
    std::fs::write(
        &python,
        format!("#!/bin/sh\nfor a in \"$@\"; do echo \"$a\" >> '{}'; done\nexit 1\n", args.display()),
    )
    .unwrap();
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = pjrt_configured(&["plugin", "install", "cpu", "--pip"], |command| {
        command
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .env("PJRT_PLUGIN_CACHE", dir.join("plugin-cache"))
            .env("PJRT_NO_PYTHON_CACHE", "1");
    });
    assert_fails(&out, "pip install");
    let recorded = std::fs::read_to_string(&args).unwrap();
    let recorded: Vec<&str> = recorded.lines().collect();
    assert_eq!(recorded[..3], ["-m", "pip", "install"], "{recorded:?}");
    assert!(recorded.contains(&"--only-binary=:all:"), "a source package would run its build code: {recorded:?}");
    assert!(recorded.contains(&"lammps-jax-pjrt-cpu==0.11.2"), "{recorded:?}");
}

/// A plugin cache in a folder others can change (`PJRT_PLUGIN_CACHE`): the plugin is hashed on
/// every use and loaded through the descriptor it was hashed from (`/proc/self/fd/N`), so a
/// file swapped in after the check is not what runs; the plugin is still named by its path.
#[test]
fn a_plugin_in_a_cache_others_can_change_loads_through_the_checked_descriptor() {
    let dir = temp_dir("cache-trust-descriptor");
    let cache = folder(&dir.join("plugins"), 0o777);
    let program = dir.join("double.mlir");
    std::fs::write(&program, PROGRAM).unwrap();
    let x = dir.join("x.npy");
    pjrt_formats::npy::NpyArray::from_elements(vec![4], &[1f32, 2.0, 3.0, 4.0]).unwrap().write(&x).unwrap();
    let out_dir = dir.join("out");
    // Installed (by `pjrt` in the test's setup) into the user's cache first.
    assert!(pjrt(&["plugin", "list"]).status.success());
    for name in PLUGINS {
        let known = pjrt_plugins::known_plugin(name).unwrap();
        let installed = pjrt_plugins::verified_cached(known).unwrap();
        let library = cache.join(format!("{}-{}", known.package, known.version)).join(known.library);
        std::fs::create_dir_all(library.parent().unwrap()).unwrap();
        // The same file, not a copy (hundreds of MB): a hard link.
        std::fs::hard_link(installed.path(), &library).unwrap();
        let out = pjrt_configured(
            &["-v", "run", s(&program), "--plugin", name, "--input", s(&x), "-o", s(&out_dir), "--json"],
            |command| {
                command.env("PJRT_PLUGIN_CACHE", &cache);
            },
        );
        let text = stderr(&out);
        assert!(out.status.success(), "{name}: {text}");
        assert!(text.contains("load_plugin path=/proc/self/fd/"), "{name}: not loaded through its descriptor: {text}");
        let report: Json = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["plugin"].as_str().map(Path::new), Some(library.as_path()), "{name}: {report}");
        let doubled = pjrt_formats::npy::NpyArray::read(&out_dir.join("out0.npy")).unwrap();
        assert_eq!(doubled.to_vec::<f32>().unwrap(), [2.0, 4.0, 6.0, 8.0], "{name}");
        // In a folder of ours (the user's cache) the plugin loads by its path, as before.
        let out = pjrt(&["-v", "info", "--plugin", name]);
        assert!(stderr(&out).contains(&format!("load_plugin path={}", installed.path().display())), "{}", stderr(&out));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
