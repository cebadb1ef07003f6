//! Tutorial 01: find a PJRT plugin, load it, and look at what it offers.
//!
//! Teaches: `pjrt_plugins::resolve_or_install` (which plugin, from where; installs the default CPU
//! plugin from PyPI when there is none), `Plugin::load`, the plugin's API version and attributes
//! (XLA version, the StableHLO versions it accepts), creating a `Client`, and the client's devices
//! and memories. This is what `pjrt info` prints.
//!
//! Run it with:
//!
//!     cargo run -p pjrt-examples --example 01_inspect_plugin
//!
//! Set `PJRT_PLUGIN=/path/to/plugin.so` to inspect another plugin (the CPU-only parts, such as
//! asking for two devices, are then skipped).

use pjrt_client::{Client, ClientOptions, Plugin, Result};

fn main() -> Result<()> {
    // 1. Find a plugin. The order: PJRT_PLUGIN, Python packages (jax_plugins/*, libtpu, ...),
    //    then this crate's plugin cache; with nothing found, the default CPU plugin is installed.
    let found = pjrt_plugins::resolve_or_install(None, |line| eprintln!("{line}"))?;
    println!("plugin file: {} (found in {:?})", found.path.display(), found.source);

    // 2. Load it. This checks the API version before calling anything else.
    let plugin = Plugin::load(found.load_path())?;
    let version = plugin.api_version();
    println!("PJRT C API version: {version} ({} function slots)", plugin.slot_count());
    assert_eq!(version.major, 0, "every PJRT plugin so far has major version 0");
    if let Some(xla) = plugin.xla_version() {
        println!("XLA version: {xla}");
    }
    if let (Some(min), Some(current)) = (plugin.stablehlo_minimum_version(), plugin.stablehlo_current_version()) {
        println!("accepts StableHLO {min} .. {current}");
        assert!(min <= current);
    }
    println!("attributes:");
    for (name, value) in plugin.attributes() {
        println!("  {name} = {value:?}");
    }

    // 3. A client. On the CPU plugins a client has one device unless asked for more.
    let is_cpu = found.platform.as_deref() == Some("cpu");
    let options = if is_cpu { ClientOptions::new().cpu_device_count(2) } else { ClientOptions::new() };
    let client = Client::new(&plugin, &options)?;
    println!("platform: {} {}", client.platform_name(), client.platform_version());
    if is_cpu {
        assert_eq!(client.platform_name(), "cpu");
        assert_eq!(client.addressable_devices().len(), 2, "asked for 2 CPU devices");
    }

    // 4. Devices (every process's) and the memories each can address.
    for device in client.devices() {
        println!(
            "device {} = {} kind {:?}, process {}, addressable {}",
            device.id()?,
            device.to_string()?,
            device.kind()?,
            device.process_index()?,
            device.is_addressable()?
        );
        for (name, value) in device.attributes()? {
            println!("    attribute {name} = {value:?}");
        }
        let default_memory = device.default_memory()?;
        let memories = device.memories()?;
        for memory in &memories {
            let mark = if *memory == default_memory { " (default)" } else { "" };
            println!("    memory {} {:?} = {}{mark}", memory.id()?, memory.kind()?, memory.to_string()?);
            assert!(memory.devices()?.contains(&device), "a memory lists the devices that address it");
        }
        assert!(memories.contains(&default_memory), "the default memory is one of the device's memories");
    }
    let memories = client.addressable_memories()?;
    println!("{} addressable memories in all", memories.len());
    assert!(!memories.is_empty());
    println!("ok");
    Ok(())
}
