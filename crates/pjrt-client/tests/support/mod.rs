//! Shared setup for the tests that use the real CPU plugins.
//!
//! Each plugin is installed into the plugin cache on first use (with pip, from PyPI), so the tests
//! never skip; if installing fails the test fails and says how to install by hand.

#![allow(dead_code)]

use std::sync::{Mutex, OnceLock};

use pjrt_client::{locate, Client, ClientOptions, Plugin};

/// The two plugin versions every behaviour test runs on.
pub const PLUGINS: &[&str] = &["cpu", "cpu-0.106"];

fn install_lock() -> &'static Mutex<()> {
    static LOCK: OnceLock<Mutex<()>> = OnceLock::new();
    LOCK.get_or_init(|| Mutex::new(()))
}

/// Loads a known plugin, installing it into the cache first if needed.
pub fn plugin(name: &str) -> Plugin {
    let known = locate::known_plugin(name).expect("a known plugin name");
    let path = {
        let _guard = install_lock().lock().unwrap_or_else(|p| p.into_inner());
        if let Ok(verified) = locate::verified_cached(known) {
            verified
        } else {
            locate::install(known, |line| eprintln!("{line}")).unwrap_or_else(|e| {
                panic!(
                    "the {name} plugin is not installed and installing it failed: {e}\n\
                     Install it by hand with `cargo run -p pjrt-cli -- plugin install {name}` \
                     (needs python3 with pip and access to PyPI)"
                )
            })
        }
    };
    Plugin::load(&path).unwrap_or_else(|e| panic!("loading {}: {e}", path.display()))
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
