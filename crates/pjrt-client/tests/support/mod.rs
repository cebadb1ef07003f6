//! Shared setup for the tests that use the real CPU plugins.
//!
//! Each plugin is installed into the plugin cache on first use (with pip, from PyPI), so the tests
//! never skip; if installing fails the test fails and says how to install by hand.

#![allow(dead_code)]

pub mod spmd;

use std::sync::{Mutex, OnceLock};

use pjrt_client::{Client, ClientOptions, Plugin};

/// The two plugin versions every behaviour test runs on (the CUDA ones, `cuda12` and `cuda13`,
/// are installed by the tests that use them, through [`plugin`]).
pub const PLUGINS: &[&str] = &["cpu", "cpu-0.106"];

fn install_lock() -> &'static Mutex<()> {
    static LOCK: OnceLock<Mutex<()>> = OnceLock::new();
    LOCK.get_or_init(|| Mutex::new(()))
}

/// Loads a known plugin, installing it into the cache first if needed.
pub fn plugin(name: &str) -> Plugin {
    let known = pjrt_plugins::known_plugin(name).expect("a known plugin name");
    let path = {
        let _guard = install_lock().lock().unwrap_or_else(|p| p.into_inner());
        if let Ok(verified) = pjrt_plugins::verified_cached(known) {
            verified.load_path().to_path_buf()
        } else {
            pjrt_plugins::install(known, |line| eprintln!("{line}")).unwrap_or_else(|e| {
                panic!(
                    "the {name} plugin is not installed and installing it failed: {e}\n\
                     Install it by hand with `cargo run -p pjrt-cli -- plugin install {name}` \
                     (needs python3 with pip and access to PyPI)"
                )
            });
            pjrt_plugins::verified_cached(known).unwrap().load_path().to_path_buf()
        }
    };
    Plugin::load(&path).unwrap_or_else(|e| panic!("loading {}: {e}", path.display()))
}

/// The environment variable naming a plugin with a device (a path), for the `#[ignore]`d tests
/// that need one (the host send/receive tests on a GPU, run by `tools/gpu_check.sh`). The
/// CPU-plugin tests never read it: their plugins stay the two of [`PLUGINS`].
pub const DEVICE_PLUGIN_ENV: &str = "PJRT_TEST_PLUGIN";

/// Loads the plugin [`DEVICE_PLUGIN_ENV`] names; fails the test saying how to set it when unset.
pub fn device_plugin() -> Plugin {
    let path = std::env::var_os(DEVICE_PLUGIN_ENV).unwrap_or_else(|| {
        panic!(
            "this test needs a plugin with a device: set {DEVICE_PLUGIN_ENV}=PATH to it (e.g. the CUDA \
             plugin `.../site-packages/jax_plugins/xla_cuda13/xla_cuda_plugin.so` on a GPU machine; \
             tools/gpu_check.sh does)"
        )
    });
    Plugin::load(&path).unwrap_or_else(|e| panic!("loading {} ({DEVICE_PLUGIN_ENV}): {e}", path.to_string_lossy()))
}

/// A client on a known plugin with `devices` CPU devices.
pub fn client(name: &str, devices: i64) -> Client {
    Client::new(&plugin(name), &ClientOptions::new().cpu_device_count(devices))
        .unwrap_or_else(|e| panic!("creating a client on {name}: {e}"))
}

/// The scalar/vector add program used by many tests.
pub const ADD_F32: &str = r#"
module @add_module {
  func.func public @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %a, %b : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}"#;

/// A program that donates its argument to its result (`tf.aliasing_output`): `a + a`.
pub const DONATING: &str = r#"
module @donating {
  func.func public @main(%a: tensor<4xf32> {tf.aliasing_output = 0 : i32}) -> tensor<4xf32> {
    %0 = stablehlo.add %a, %a : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}"#;

/// `x * y + z` on f32[64] and the sum of an i32[64]: two outputs of different types (used by the
/// stress and soak tests).
pub const FMA_AND_SUM: &str = r#"
module @fma_and_sum {
  func.func public @main(%x: tensor<64xf32>, %y: tensor<64xf32>, %z: tensor<64xf32>, %k: tensor<64xi32>)
      -> (tensor<64xf32>, tensor<i32>) {
    %m = stablehlo.multiply %x, %y : tensor<64xf32>
    %a = stablehlo.add %m, %z : tensor<64xf32>
    %c0 = stablehlo.constant dense<0> : tensor<i32>
    %s = stablehlo.reduce(%k init: %c0) applies stablehlo.add across dimensions = [0]
        : (tensor<64xi32>, tensor<i32>) -> tensor<i32>
    return %a, %s : tensor<64xf32>, tensor<i32>
  }
}"#;

/// Waits, bounded (30 s), until `done` holds; fails the test naming `what` otherwise.
pub fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !done() {
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// Runs the `#[ignore]`d test `test` (its path in this test binary, `module::name`) in a child
/// process: this test binary again, with `env` set and the plugins' info logging off. The child
/// is killed after `limit`, failing the test with `hung` and what it printed: a regression that
/// hangs, aborts or dies of a signal (SIGBUS is 7) fails the calling test, not the whole run.
/// The child must exit successfully having printed `CHILD-DONE` (every child test ends so, so
/// that a child that ran no test fails too); its standard output is returned for more checks.
pub fn run_child_test(test: &str, env: &[(&str, &str)], limit: std::time::Duration, hung: &str) -> String {
    use std::io::Read;
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", test, "--nocapture"])
        .envs(env.iter().copied())
        .env("TF_CPP_MIN_LOG_LEVEL", "2")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Read both pipes while waiting, so a child that prints much never blocks on a full pipe.
    fn read_all(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            let _ = pipe.read_to_end(&mut text);
            String::from_utf8_lossy(&text).into_owned()
        })
    }
    let stdout = read_all(child.stdout.take().unwrap());
    let stderr = read_all(child.stderr.take().unwrap());
    let printed = |stdout: std::thread::JoinHandle<String>, stderr: std::thread::JoinHandle<String>| {
        (stdout.join().unwrap(), stderr.join().unwrap())
    };
    let deadline = std::time::Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            let (stdout, stderr) = printed(stdout, stderr);
            panic!("{test}: the child hung for {limit:?} ({hung}); it printed:\n{stdout}\n{stderr}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let (stdout, stderr) = printed(stdout, stderr);
    assert!(
        status.success() && stdout.contains("CHILD-DONE"),
        "{test} {env:?}: the child failed ({status}; SIGBUS is signal 7):\n{stdout}\n{stderr}"
    );
    stdout
}
