//! `pjrt conform`: one check per capability, each reported as pass, fail or unsupported.
//!
//! "Unsupported" means the plugin said UNIMPLEMENTED, or its version lacks the function: it is
//! not a failure. A failure is a wrong answer or an unexpected error.
//!
//! Files: `mod.rs` runs the groups in order (and reports what needs a client as unsupported when
//! the plugin has no device here); `report.rs` holds the report, its JSON and text and the diff
//! of two reports; `summary.rs` the Markdown table of `--markdown` (docs/plugins.md); `checks/`
//! has one file per group of checks; `fixtures/` the programs they compile.

use std::path::Path;

use pjrt_client::{Client, ClientOptions, Error, Plugin};
use serde_json::{json, Value as Json};

mod checks;
mod report;
mod summary;

use crate::cli::{ConformArgs, PluginArg};
use crate::out::outln;
use crate::plugins::{no_device_here, plugin_is_cuda, plugin_is_tpu, resolve_plugin};
use checks::{
    buffer_checks, buffer_memory_checks, client_checks, compile_checks, compile_options_checks, device_checks,
    executable_metadata_checks, execute_checks, execute_options_checks, extension_checks, gpu_target_checks,
    kv_store_checks, layouts_checks, newer_api_checks, plugin_table_checks, topology_checks, tpu_topology_checks,
    transfer_manager_checks,
};
pub use report::{diff, diff_json, print_text, read_report, report_json, Problem, Report, Status};

/// Runs every check against `plugin`.
pub fn run_checks(plugin: &Plugin) -> (Json, Report) {
    let mut r = Report::default();
    let path = plugin.path().to_path_buf();
    r.check("plugin.api_version", || Ok(plugin.api_version().to_string()));
    r.check("plugin.attributes", || Ok(format!("{} attributes", plugin.attributes().len())));
    r.check("plugin.xla_version", || {
        plugin.xla_version().map(|v| v.to_string()).ok_or(Problem::Unsupported("no xla_version attribute".into()))
    });
    r.check("plugin.stablehlo_versions", || {
        match (plugin.stablehlo_minimum_version(), plugin.stablehlo_current_version()) {
            (Some(min), Some(cur)) => Ok(format!("{min} .. {cur}")),
            _ => Err(Problem::Unsupported("no StableHLO version attributes".into())),
        }
    });
    r.check("plugin.extensions", || {
        let names: Vec<String> = plugin.extensions().iter().map(|e| format!("{:?}", e.kind)).collect();
        Ok(names.join(", "))
    });
    let is_cpu = path.to_string_lossy().contains("cpu");
    let options = if is_cpu { ClientOptions::new().cpu_device_count(4) } else { ClientOptions::new() };
    let client = match Client::new(plugin, &options) {
        Ok(c) => {
            r.check("client.create", || Ok(format!("{} devices", c.devices().len())));
            c
        }
        // No device here (a CUDA plugin without a GPU, libtpu without a TPU): what needs one is
        // unsupported, the rest is checked without a client.
        Err(e) if no_device_here(&e) => {
            let message = format!("no device: {e}");
            r.check("client.create", || Err(Problem::Unsupported(message.clone())));
            for group in NEEDS_A_CLIENT {
                r.check(group, || Err(Problem::Unsupported(message.clone())));
            }
            if plugin_is_cuda(plugin) {
                gpu_target_checks(&mut r, plugin);
            }
            if plugin_is_tpu(plugin) {
                tpu_topology_checks(&mut r, plugin);
            }
            return (plugin_json(plugin, None), r);
        }
        Err(e) => {
            let message = e.to_string();
            r.check("client.create", || Err(Problem::Fail(message)));
            return (plugin_json(plugin, None), r);
        }
    };
    client_checks(&mut r, &client);
    device_checks(&mut r, &client);
    buffer_checks(&mut r, &client);
    compile_checks(&mut r, &client);
    execute_checks(&mut r, &client);
    topology_checks(&mut r, &client);
    extension_checks(&mut r, &client);
    executable_metadata_checks(&mut r, &client);
    buffer_memory_checks(&mut r, &client);
    transfer_manager_checks(&mut r, &client);
    newer_api_checks(&mut r, &client);
    kv_store_checks(&mut r, plugin, &options);
    layouts_checks(&mut r, &client);
    execute_options_checks(&mut r, &client);
    plugin_table_checks(&mut r, &client);
    compile_options_checks(&mut r, &client);
    (plugin_json(plugin, Some(&client)), r)
}
/// The groups of checks that run on a client, reported once each as unsupported when the
/// plugin has no device here.
const NEEDS_A_CLIENT: &[&str] = &[
    "client.*",
    "device.*",
    "buffer.*",
    "compile.* (on a client)",
    "execute.*",
    "executable.* (loaded)",
    "topology.* (of a client)",
    "extension.* (on a client)",
    "transfer_manager.*",
    "kv_store.*",
    "layouts.*",
    "execute_options.*",
    "compile_options.*",
];
fn plugin_json(plugin: &Plugin, client: Option<&Client>) -> Json {
    json!({
        "path": plugin.path(),
        "api_version": plugin.api_version().to_string(),
        "functions": plugin.slot_count(),
        "platform": client.map(|c| c.platform_name().to_owned()),
        "platform_version": client.map(|c| c.platform_version().to_owned()),
        "xla_version": plugin.xla_version(),
    })
}
/// `pjrt conform`: checks the plugin named (or diffs two reports) and prints the result as
/// `args.json` asks. Fails when a check failed.
pub fn exec(args: &ConformArgs) -> Result<(), crate::error::Error> {
    let to_stdout = args.json.as_deref().is_some_and(|p| p == Path::new("-"));
    if let Some(files) = &args.diff {
        let (a, b) = (read_report(&files[0])?, read_report(&files[1])?);
        match args.json.as_deref() {
            Some(_) if to_stdout => outln!("{}", diff_json(&a, &b))?,
            Some(file) => {
                let text = format!("{:#}\n", diff_json(&a, &b));
                std::fs::write(file, text).map_err(|e| Error::Io { path: file.to_path_buf(), source: e })?;
                diff(&a, &b)?;
            }
            None => {
                diff(&a, &b)?;
            }
        }
        return Ok(());
    }
    let file = args.json.as_deref().filter(|_| !to_stdout);
    if let Some(file) = file {
        let name = file.to_string_lossy();
        if args.plugin.is_none() && pjrt_plugins::known_plugin(&name).is_some() && !file.exists() {
            return Err(Error::InvalidArgument(format!(
                "`--json {name}` would write the report to a file named `{name}` and check the default plugin; \
                 write `pjrt conform {name} --json` to print the JSON, or `pjrt conform {name} --json FILE`"
            ))
            .into());
        }
    }
    if args.markdown {
        // A table for docs/plugins.md, also for a plugin that does not load (what it lacks).
        let name = args.plugin.clone().unwrap_or_else(|| "default".into());
        let plugin = match resolve_plugin(&PluginArg { plugin: args.plugin.clone() }) {
            Ok(plugin) => plugin,
            Err(e) => {
                let error = crate::error::Error::from(e);
                let why = match crate::ui::hint(&error) {
                    Some(hint) => format!("{error} ({hint})"),
                    None => error.to_string(),
                };
                outln!("{}", summary::markdown(&name, Err(&why)))?;
                return Ok(());
            }
        };
        let (plugin_json, report) = run_checks(&plugin);
        outln!("{}", summary::markdown(&name, Ok(&report_json(plugin_json, &report))))?;
        return Ok(());
    }
    let plugin = resolve_plugin(&PluginArg { plugin: args.plugin.clone() })?;
    let (plugin_json, report) = run_checks(&plugin);
    let json = report_json(plugin_json, &report);
    if let Some(file) = file {
        std::fs::write(file, format!("{json:#}\n")).map_err(|e| Error::Io { path: file.to_path_buf(), source: e })?;
    }
    if to_stdout {
        outln!("{json}")?;
    } else {
        print_text(&json)?;
    }
    if report.failures() > 0 {
        return Err(Error::InvalidArgument(format!(
            "{} conformance checks failed; the report lists them (status \"fail\")",
            report.failures()
        ))
        .into());
    }
    Ok(())
}
