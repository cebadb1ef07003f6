//! `pjrt info`: a plugin's API version, attributes, devices and memories, as text or JSON.

use crate::error::Error;
use crate::out::outln;
use pjrt_client::{Client, ClientOptions, GpuTarget, Value};
use serde_json::{json, Value as Json};

use crate::cli::PluginArg;
use crate::plugins::{no_device_here, plugin_is_cuda, resolve_plugin};

/// A plugin or device attribute as JSON.
fn value_json(value: &Value) -> Json {
    match value {
        Value::String(s) => json!(s),
        Value::Int64(i) => json!(i),
        Value::Int64List(l) => json!(l),
        Value::Float(f) => json!(f),
        Value::Bool(b) => json!(b),
        other => json!(format!("{other:?}")),
    }
}

/// `pjrt info`: loads the plugin `arg` names, makes a client and describes both (JSON with `as_json`).
pub fn exec(arg: &PluginArg, as_json: bool) -> Result<(), Error> {
    let plugin = resolve_plugin(arg)?;
    // A plugin without its devices here (the CUDA plugins on a machine without a GPU, libtpu
    // without a TPU) refuses a client; what it says without one is still described.
    let (client, no_device) = match Client::new(&plugin, &ClientOptions::new()) {
        Ok(client) => (Some(client), None),
        Err(e) if no_device_here(&e) => (None, Some(e.to_string())),
        Err(e) => return Err(e.into()),
    };
    let mut devices = Vec::new();
    for device in client.iter().flat_map(|c| c.devices()) {
        let mut memories = Vec::new();
        let default_memory = device.default_memory().ok().and_then(|m| m.id().ok());
        for memory in device.memories().unwrap_or_default() {
            memories.push(json!({
                "id": memory.id()?, "kind": memory.kind()?, "kind_id": memory.kind_id().ok(),
                "name": memory.to_string()?, "default": Some(memory.id()?) == default_memory,
            }));
        }
        let attributes: serde_json::Map<String, Json> =
            device.attributes()?.iter().map(|(k, v)| (k.clone(), value_json(v))).collect();
        devices.push(json!({
            "id": device.id()?, "process_index": device.process_index()?, "kind": device.kind()?,
            "name": device.to_string()?, "debug_string": device.debug_string()?,
            "local_hardware_id": device.local_hardware_id()?, "addressable": device.is_addressable()?,
            "attributes": attributes, "memories": memories,
        }));
    }
    let attributes: serde_json::Map<String, Json> =
        plugin.attributes().iter().map(|(k, v)| (k.clone(), value_json(v))).collect();
    let report = json!({
        "plugin": plugin.path(),
        "api_version": plugin.api_version().to_string(),
        "functions": plugin.slot_count(),
        "attributes": attributes,
        "extensions": plugin.extensions().iter().map(|e| format!("{:?}", e.kind)).collect::<Vec<_>>(),
        "platform": client.as_ref().map(|c| c.platform_name()),
        "platform_version": client.as_ref().map(|c| c.platform_version()),
        "process_index": client.as_ref().map(|c| c.process_index()),
        "devices": devices,
        "no_device": no_device,
        "gpu_targets": if plugin_is_cuda(&plugin) { GpuTarget::builtin_names() } else { Vec::new() },
    });
    if as_json {
        outln!("{report}")?;
        return Ok(());
    }
    outln!("plugin:       {}", plugin.path().display())?;
    outln!("API version:  {} ({} functions)", plugin.api_version(), plugin.slot_count())?;
    match (&client, &no_device) {
        (Some(client), _) => outln!("platform:     {} ({})", client.platform_name(), client.platform_version())?,
        (None, message) => outln!("platform:     no device: {}", message.as_deref().unwrap_or_default())?,
    }
    outln!("extensions:   {}", report["extensions"].as_array().map(|e| e.len()).unwrap_or(0))?;
    if plugin_is_cuda(&plugin) {
        outln!("GPU targets:  {} (pjrt compile --target NAME)", GpuTarget::builtin_names().join(", "))?;
    }
    if let (Some(min), Some(cur)) = (plugin.stablehlo_minimum_version(), plugin.stablehlo_current_version()) {
        outln!("StableHLO:    {min} .. {cur}")?;
    }
    for (name, value) in plugin.attributes() {
        outln!("attribute:    {name} = {}", value_json(value))?;
    }
    for device in devices {
        outln!(
            "device {}:     {} kind={} process={} memories=[{}]",
            device["id"],
            device["name"].as_str().unwrap_or(""),
            device["kind"].as_str().unwrap_or(""),
            device["process_index"],
            device["memories"]
                .as_array()
                .map(|m| m
                    .iter()
                    .map(|m| format!(
                        "{}{}",
                        m["kind"].as_str().unwrap_or(""),
                        if m["default"].as_bool() == Some(true) { "*" } else { "" }
                    ))
                    .collect::<Vec<_>>()
                    .join(", "))
                .unwrap_or_default()
        )?;
    }
    Ok(())
}
