//! A plugin from a table (`Plugin::from_table`), the seed's graceful fallbacks, XLA's platform id
//! and version, and the CustomPartitioner extension (issue 13, items 3, 4, 8a, 8b, 8d).

use pjrt_client::{
    Client, ClientOptions, CompileOptions, Error, ExecuteOptions, LoadError, Plugin, PluginSource, Program, TableInit,
    Topology,
};

use super::{f32s, ADD};
use crate::commands::conform::report::{expect, Problem, Report};

/// XLA's platform ids of the platforms it names (`xla::CpuId()`, `CudaId()`, `RocmId()`,
/// `TpuId()`): `tsl::Fingerprint64` of the name.
const KNOWN_PLATFORM_IDS: &[(&str, u64)] = &[
    ("cpu", 0xf88d_a91c_978c_8500),
    ("cuda", 0x3ab2_a1e5_3d4a_80a1),
    ("rocm", 0x344f_7353_d6ea_420d),
    ("tpu", 0x83d7_1adb_a779_68aa),
];

/// `tsl::Fingerprint32` of the memory kinds XLA's plugins use: the kind ids of plugins before
/// 0.48, and the ones the CPU plugins report.
const KNOWN_KIND_IDS: &[(&str, i32)] =
    &[("device", 42097224), ("pinned_host", 1756073601), ("unpinned_host", -272058569)];

/// Adds this group's checks to `r`.
pub(crate) fn checks(r: &mut Report, client: &Client) {
    let plugin = client.plugin();
    table_checks(r, plugin, client);
    platform_checks(r, client);
    fallback_checks(r, client);
    r.check("extension.custom_partitioner", || match plugin.custom_partitioner_extension() {
        Some(ext) => Ok(format!("members: {}", ext.members().join(", "))),
        None => Err(Problem::Unsupported("the plugin lists no CustomPartitioner extension".into())),
    });
}

/// A second handle on the loaded plugin, made from its table.
fn from_table(plugin: &Plugin) -> Result<Plugin, Problem> {
    // SAFETY: the table belongs to a library that is never unloaded; `Plugin::load` initialised it.
    Ok(unsafe { Plugin::from_table(plugin.raw_api(), TableInit::AlreadyInitialized) }?)
}

fn table_checks(r: &mut Report, plugin: &Plugin, client: &Client) {
    let options = if client.platform_name() == "cpu" {
        ClientOptions::new().cpu_device_count(client.addressable_devices().len() as i64)
    } else {
        ClientOptions::new()
    };
    r.check("plugin.from_table", || {
        let table = from_table(plugin)?;
        expect(table.source() == PluginSource::Table(plugin.raw_api()), "the source is not the table")?;
        expect(table.is_same(plugin), "not the same plugin as the one loaded")?;
        expect(table.api_version() == plugin.api_version(), "another API version")?;
        expect(table.attributes() == plugin.attributes(), "other attributes")?;
        Ok(table.path().display().to_string())
    });
    r.check("plugin.from_table.client_compile_execute", || {
        let table = from_table(plugin)?;
        let client = Client::new(&table, &options)?;
        let exe = client.compile(&Program::mlir_text(ADD)?, &CompileOptions::new())?;
        let a = client.upload(&[1f32, 2., 3., 4.], &[4])?;
        let b = client.upload(&[10f32, 20., 30., 40.], &[4])?;
        let out = f32s(&exe.execute(&[&a, &b], &ExecuteOptions::new())?[0])?;
        expect(out == [11., 22., 33., 44.], format!("got {out:?}"))?;
        Ok(format!("{} devices", client.addressable_devices().len()))
    });
    r.check("plugin.from_table.client_topology", || {
        let table = from_table(plugin)?;
        let client = Client::new(&table, &options)?;
        let topology = client.topology()?;
        expect(topology.plugin().is_same(plugin), "the topology is of another plugin")?;
        Ok(format!("{} device descriptions", topology.device_count()?))
    });
    r.check("plugin.from_table.topology_by_name", || {
        // XLA's `GetCApiTopology(const PJRT_Api*, name, options)`.
        let table = from_table(plugin)?;
        let topology = Topology::create(&table, client.platform_name(), &[])?;
        Ok(topology.platform_name()?)
    });
    r.check("plugin.from_table.refuses_bad_tables", || {
        // SAFETY: NULL is refused before anything is read.
        let null = unsafe { Plugin::from_table(std::ptr::null(), TableInit::AlreadyInitialized) };
        expect(matches!(null, Err(Error::Load { source: LoadError::NullApi, .. })), "a NULL table was accepted")?;
        // A 16-byte table: too small for a plugin, refused before any of its bytes past the size.
        let tiny = [16usize, 0];
        // SAFETY: readable for its struct_size (16 bytes); refused before a plugin is made, so it
        // need only live for the call; no function is called.
        let small = unsafe { Plugin::from_table(tiny.as_ptr().cast(), TableInit::CallInitialize) };
        expect(
            matches!(small, Err(Error::Load { source: LoadError::TableTooSmall { struct_size: 16, .. }, .. })),
            "a 16-byte table was accepted",
        )?;
        Ok(String::new())
    });
}

fn platform_checks(r: &mut Report, client: &Client) {
    r.check("client.platform_id", || {
        let id = client.platform_id();
        if let Some((_, known)) = KNOWN_PLATFORM_IDS.iter().find(|(name, _)| *name == client.platform_name()) {
            expect(id == *known, format!("{id:#x}, XLA's id of {} is {known:#x}", client.platform_name()))?;
        }
        Ok(format!("{id:#x}"))
    });
    r.check("topology.platform_id", || {
        let id = client.topology()?.platform_id()?;
        expect(id == client.platform_id(), format!("{id:#x}, the client's is {:#x}", client.platform_id()))?;
        Ok(format!("{id:#x}"))
    });
    r.check("client.xla_platform_version", || {
        let version = client.xla_platform_version();
        let plugin_own = client.platform_version();
        expect(version.starts_with("PJRT C API\n"), "no \"PJRT C API\" line first")?;
        expect(version.ends_with(plugin_own), "the plugin's version does not follow")?;
        Ok(version.replace('\n', " | "))
    });
}

fn fallback_checks(r: &mut Report, client: &Client) {
    // Each answers as XLA's C API client would: UNIMPLEMENTED reads as "nothing to report".
    r.check("fallback.addressable_memories", || Ok(format!("{} memories", client.addressable_memories()?.len())));
    r.check("fallback.device_memories", || {
        let device = *client.addressable_devices().first().ok_or(Problem::Fail("no devices".into()))?;
        Ok(format!("{} memories", device.memories()?.len()))
    });
    r.check("fallback.dynamic_dimensions", || {
        let buffer = client.upload(&[1f32, 2.], &[2])?;
        let dynamic = buffer.dynamic_dimension_indices()?;
        expect(dynamic.is_empty(), format!("a static buffer has dynamic dimensions {dynamic:?}"))?;
        Ok(String::new())
    });
    r.check("fallback.buffer_memory", || {
        let buffer = client.upload(&[1f32, 2.], &[2])?;
        match buffer.memory_if_reported()? {
            Some(memory) => {
                expect(memory == buffer.memory()?, "the two memory queries disagree")?;
                Ok(memory.kind()?)
            }
            None => Ok("none reported".into()),
        }
    });
    r.check("fallback.kind_id", || {
        let mut seen = Vec::new();
        for memory in client.addressable_memories()? {
            let (kind, id) = (memory.kind()?, memory.kind_id()?);
            let fingerprint = KNOWN_KIND_IDS.iter().find(|(k, _)| *k == kind).map(|(_, id)| *id);
            // Before 0.48 the id is the fingerprint; XLA's CPU plugins report the same ids.
            if client.plugin().api_version().minor < 48 || client.platform_name() == "cpu" {
                if let Some(fingerprint) = fingerprint {
                    expect(id == fingerprint, format!("kind {kind} has id {id}, XLA's is {fingerprint}"))?;
                }
            }
            seen.push(format!("{kind}={id}"));
        }
        seen.sort();
        seen.dedup();
        Ok(seen.join(", "))
    });
}
