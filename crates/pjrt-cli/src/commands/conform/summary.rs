//! `pjrt conform PLUGIN --markdown`: one table of what a plugin does on this machine, for
//! `docs/plugins.md`: whether it loads (and if not, what it lacks), its API version, attributes
//! and extensions, its client (or "no device"), a topology made without devices, an ahead-of-time
//! compilation (for a named TPU topology or GPU target where the plugin has no device), and what fails or is unsupported, with the plugin's words.
//! Made from the same report as the text and the JSON, so the tables follow the plugins.

use serde_json::Value as Json;

/// The checks that make a topology without devices, first found wins: libtpu's by name, a CUDA
/// plugin's for a GPU target, any plugin's `PJRT_TopologyDescription_Create`.
const DEVICELESS_TOPOLOGY: &[&str] = &["tpu_topology.create", "gpu_target.topology", "topology.create_by_name"];
/// The checks that compile ahead of time (for a named TPU topology or GPU target, or a CPU
/// client's topology), first found wins.
const AOT: &[&str] =
    &["tpu_topology.compile_and_serialize", "gpu_target.compile_and_serialize", "aot.compile_and_load"];

/// A table cell: the text on one line, `|` escaped, the plugin cache's folder (machine-specific)
/// written as `$PJRT_PLUGIN_CACHE`.
fn cell(text: &str) -> String {
    let mut text = text.replace('|', "\\|").replace('\n', " ");
    if let Some(cache) = pjrt_plugins::cache_dir() {
        text = text.replace(&*cache.to_string_lossy(), "$PJRT_PLUGIN_CACHE");
    }
    text
}

fn check<'a>(report: &'a Json, name: &str) -> Option<(&'a str, &'a str)> {
    report["checks"]
        .as_array()?
        .iter()
        .find(|c| c["name"] == name)
        .map(|c| (c["status"].as_str().unwrap_or("?"), c["detail"].as_str().unwrap_or("")))
}

/// `status: detail` of the first of `names` in the report, or `not checked`.
fn first_of(report: &Json, names: &[&str]) -> String {
    names
        .iter()
        .find_map(|name| {
            check(report, name).map(|(status, detail)| match detail {
                "" => format!("{status} (`{name}`)"),
                detail => format!("{status} (`{name}`): {detail}"),
            })
        })
        .unwrap_or_else(|| "not checked (no client here, and no way known to this plugin without one)".into())
}

/// The table for plugin `name`: from its report, or from why it did not load.
pub fn markdown(name: &str, report: Result<&Json, &str>) -> String {
    let mut rows: Vec<(&str, String)> = Vec::new();
    match report {
        Err(why) => rows.push(("loads", format!("no: {why}"))),
        Ok(report) => {
            let plugin = &report["plugin"];
            rows.push((
                "loads",
                format!(
                    "yes: PJRT API {}, {} functions",
                    plugin["api_version"].as_str().unwrap_or("?"),
                    plugin["functions"].as_u64().unwrap_or(0)
                ),
            ));
            let detail =
                |n: &str| check(report, n).map(|(s, d)| if s == "pass" { d.to_owned() } else { format!("{s}: {d}") });
            rows.push(("StableHLO", detail("plugin.stablehlo_versions").unwrap_or_default()));
            rows.push(("attributes", detail("plugin.attributes").unwrap_or_default()));
            rows.push(("extensions", detail("plugin.extensions").unwrap_or_default()));
            rows.push(("client", detail("client.create").unwrap_or_default()));
            rows.push(("topology without devices", first_of(report, DEVICELESS_TOPOLOGY)));
            rows.push(("ahead-of-time compile", first_of(report, AOT)));
            let checks = report["checks"].as_array().cloned().unwrap_or_default();
            let count = |s: &str| checks.iter().filter(|c| c["status"] == s).count();
            rows.push((
                "checks",
                format!("{} passed, {} failed, {} unsupported", count("pass"), count("fail"), count("unsupported")),
            ));
            // Checks with the same words are listed together (e.g. everything that needs a device).
            let listed = |s: &str| {
                let mut groups: Vec<(String, Vec<String>)> = Vec::new();
                for c in checks.iter().filter(|c| c["status"] == s) {
                    let name = format!("`{}`", c["name"].as_str().unwrap_or("?"));
                    let detail = c["detail"].as_str().unwrap_or("").to_owned();
                    match groups.iter_mut().find(|(d, _)| *d == detail) {
                        Some((_, names)) => names.push(name),
                        None => groups.push((detail, vec![name])),
                    }
                }
                if groups.is_empty() {
                    return "none".to_owned();
                }
                groups
                    .iter()
                    .map(|(detail, names)| format!("{}: {detail}", names.join(", ")))
                    .collect::<Vec<_>>()
                    .join("; ")
            };
            rows.push(("fails", listed("fail")));
            rows.push(("unsupported", listed("unsupported")));
        }
    }
    let mut out = format!("| `{}` | |\n|---|---|\n", cell(name));
    for (fact, value) in rows {
        out.push_str(&format!("| {fact} | {} |\n", cell(&value)));
    }
    out
}
