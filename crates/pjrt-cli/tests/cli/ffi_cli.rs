//! `pjrt run --ffi-library`: a `jax.export` model calling a custom call written in Rust
//! (tests/data/ffi, made by tools/gen_ffi_export_testdata.py) runs on both CPU plugins with the
//! handler from a shared library built with `pjrt_client::export_ffi_handlers!`
//! (examples/ffi-handlers), and its outputs equal numpy's.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use pjrt_formats::npy::NpyArray;

use crate::common::{assert_fails, pjrt, root, stderr, temp_dir, PLUGINS};

/// Builds examples/ffi-handlers once per test process (into the fake plugin's target folder,
/// whose dependencies are built already) and returns the library's path.
fn handler_library() -> &'static PathBuf {
    static LIBRARY: OnceLock<PathBuf> = OnceLock::new();
    LIBRARY.get_or_init(|| {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let target_dir = root().join("target").join("fake-plugin");
        let output = Command::new(&cargo)
            .current_dir(root())
            .args(["build", "--quiet", "-p", "pjrt-ffi-example-handlers", "--target-dir"])
            .arg(&target_dir)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {cargo:?}: {e}"));
        assert!(
            output.status.success(),
            "building the handler library failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let library = target_dir.join("debug").join("libpjrt_ffi_example_handlers.so");
        assert!(library.is_file(), "{} is missing", library.display());
        library
    })
}

fn data(file: &str) -> String {
    root().join("tests/data/ffi/jax-0.10.2/scale_shift").join(file).display().to_string()
}

#[test]
fn a_jaxexport_model_calling_a_rust_handler_runs_on_both_plugins() {
    let library = handler_library().display().to_string();
    for plugin in PLUGINS {
        let out_dir = temp_dir(&format!("ffi-{plugin}"));
        let out = pjrt(&[
            "run",
            &data("model.jaxexport"),
            "-i",
            &data("in0.npy"),
            "--ffi-library",
            &library,
            "--plugin",
            plugin,
            "-o",
            out_dir.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{plugin}: {}", stderr(&out));
        for i in 0..2 {
            let got: Vec<f32> = NpyArray::read(&out_dir.join(format!("out{i}.npy"))).unwrap().to_vec().unwrap();
            let want: Vec<f32> = NpyArray::read(data(&format!("out{i}.npy")).as_ref()).unwrap().to_vec().unwrap();
            assert_eq!(got.len(), want.len());
            let worst = got.iter().zip(&want).map(|(g, w)| (g - w).abs()).fold(0.0f32, f32::max);
            assert!(worst < 1e-5, "{plugin} out{i}: {got:?} vs {want:?}");
        }
    }
}

#[test]
fn without_the_library_the_model_does_not_compile_and_a_non_library_is_refused() {
    let out = pjrt(&["run", &data("model.jaxexport"), "-i", &data("in0.npy"), "--plugin", "cpu"]);
    assert_fails(&out, "pjrt_tutorial_scale_shift");
    // A shared library that is not a handler library: named, with what to do.
    let not_handlers = crate::fake_support::fake_library().display().to_string();
    let out = pjrt(&["run", &data("model.jaxexport"), "-i", &data("in0.npy"), "--ffi-library", &not_handlers]);
    assert_fails(&out, "exports no `pjrt_ffi_library` (build it with pjrt_client::export_ffi_handlers!)");
}
