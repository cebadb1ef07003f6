//! What the CLI tests share: running the built `pjrt`, with both CPU plugins installed into the
//! cache first (`pjrt plugin install`), so no test skips for a missing plugin.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// The two plugin versions every CLI test runs on.
pub const PLUGINS: &[&str] = &["cpu", "cpu-0.106"];

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs `pjrt ARGS` in the workspace root, after installing both plugins once per process. Each
/// call gets a fresh, empty compile cache (removed afterwards), never the user's: every run
/// compiles, as if there were no cache.
pub fn pjrt(args: &[&str]) -> Output {
    pjrt_configured(args, |_| {})
}

/// [`pjrt`] with the command adjusted by `configure` (environment variables set or removed)
/// before it runs; still with a fresh compile cache of its own.
pub fn pjrt_configured(args: &[&str], configure: impl FnOnce(&mut Command)) -> Output {
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, Ordering::Relaxed);
    let cache = std::env::temp_dir().join(format!("pjrt-cli-test-{}-compile-cache-{n}", std::process::id()));
    let out = run_pjrt(args, |command| {
        command.env("PJRT_CACHE_DIR", &cache);
        configure(command);
    });
    let _ = std::fs::remove_dir_all(&cache);
    out
}

/// Runs `pjrt ARGS` with extra environment variables (see [`pjrt`]); the caller chooses the
/// compile cache (`PJRT_CACHE_DIR`) if it matters.
pub fn pjrt_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    run_pjrt(args, |command| {
        command.envs(env.iter().copied());
    })
}

/// Installs both plugins once per process, then runs `pjrt ARGS` in the workspace root.
fn run_pjrt(args: &[&str], configure: impl FnOnce(&mut Command)) -> Output {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        for name in PLUGINS {
            let out = Command::new(env!("CARGO_BIN_EXE_pjrt")).args(["plugin", "install", name]).output().unwrap();
            assert!(
                out.status.success(),
                "`pjrt plugin install {name}` failed (needs python3 + pip + PyPI): {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    });
    let mut command = Command::new(env!("CARGO_BIN_EXE_pjrt"));
    command.args(args).current_dir(root());
    configure(&mut command);
    command.output().unwrap()
}

/// The CUDA plugin the GPU-target tests compile with: installed once per process like the CPU
/// plugins (`pjrt plugin install cuda12`: about 230 MB from PyPI, 570 MB in the cache, kept
/// between runs), with ptxas and libdevice.
pub const CUDA: &str = "cuda12";

/// Installs [`CUDA`] once per process (as [`pjrt`] does the CPU plugins), then runs `pjrt ARGS`
/// with a fresh compile cache.
pub fn pjrt_cuda(args: &[&str]) -> Output {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let out = Command::new(env!("CARGO_BIN_EXE_pjrt")).args(["plugin", "install", CUDA]).output().unwrap();
        assert!(
            out.status.success(),
            "`pjrt plugin install {CUDA}` failed (needs python3 + pip + PyPI): {}",
            String::from_utf8_lossy(&out.stderr)
        );
    });
    pjrt(args)
}

/// The command's stderr as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Asserts a clean failure: exit code 1 (not a signal) and a message containing `needle`.
pub fn assert_fails(out: &Output, needle: &str) {
    assert_eq!(out.status.code(), Some(1), "expected exit 1, got {:?}; stderr: {}", out.status, stderr(out));
    assert!(stderr(out).contains(needle), "stderr lacks {needle:?}: {}", stderr(out));
}

/// A fresh, empty folder for one test.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pjrt-cli-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A `pjrt conform --json` report that succeeded and failed no check: each check's status and
/// detail by name (a missing check panics, naming the report).
pub struct ConformReport {
    report: serde_json::Value,
}

impl ConformReport {
    /// The report of `out`, asserting the command succeeded and no check failed.
    pub fn passing(out: &Output) -> ConformReport {
        assert!(out.status.success(), "{}", stderr(out));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let checks = report["checks"].as_array().unwrap();
        assert!(checks.iter().all(|c| c["status"] != "fail"), "{report}");
        ConformReport { report }
    }

    /// Check `name`'s status and detail.
    pub fn status(&self, name: &str) -> (String, String) {
        let checks = self.report["checks"].as_array().unwrap();
        let check = checks.iter().find(|c| c["name"] == name).unwrap_or_else(|| panic!("no {name} in {}", self.report));
        (check["status"].as_str().unwrap().to_owned(), check["detail"].as_str().unwrap_or("").to_owned())
    }
}

impl std::fmt::Display for ConformReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.report.fmt(f)
    }
}
