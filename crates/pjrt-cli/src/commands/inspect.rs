//! `pjrt inspect FILE`: what a program file holds, without a plugin. A StableHLO portable
//! artifact (`.mlirbc` as JAX writes it) or a `.mlir` text program prints as MLIR text (the
//! custom forms JAX prints, or the generic form with `--generic`) with its signatures (`?`
//! dimensions and dimension parameters included), shardings, custom-call targets and producer;
//! a `jax.export` artifact adds its platforms, avals (symbolic dimensions as JAX names them),
//! shardings and effects; an AOT artifact of `pjrt compile` shows what it was compiled for.
//! `--json` gives the same as one object.
//!
//! MLIR bytecode of other dialects than VHLO is refused by name: the bytecode reader reads
//! portable artifacts only.

use std::path::Path;

use pjrt_formats::artifact::{Artifact, Target};
use pjrt_formats::jax_export::JaxExport;
use pjrt_stablehlo::ir::{Attr, Module};
use serde_json::{json, Value as Json};

use crate::cli::InspectArgs;
use crate::error::Error;
use crate::out::{out, outln};
use crate::ui::invalid;

/// What MLIR bytecode starts with.
const MLIR_BYTECODE_MAGIC: &[u8] = b"ML\xefR";

/// Runs `pjrt inspect`.
pub fn exec(args: &InspectArgs) -> Result<(), Error> {
    let report = inspect(&args.file, args.generic)?;
    if args.json {
        outln!("{}", report.json)?;
    } else {
        out!("{}", report.text)?;
    }
    Ok(())
}

/// What `pjrt inspect` shows of a file, as text and as JSON.
pub struct Inspection {
    /// For people.
    pub text: String,
    /// The same, as one object (`kind` says which file it was).
    pub json: Json,
}

/// Reads `path` and describes it (see the module docs); `generic` prints modules in the
/// generic op form.
pub fn inspect(path: &Path, generic: bool) -> Result<Inspection, Error> {
    let bytes = std::fs::read(path).map_err(|e| pjrt_client::Error::Io { path: path.to_path_buf(), source: e })?;
    if pjrt_formats::artifact::is_artifact(&bytes) {
        return Ok(inspect_artifact(&Artifact::from_bytes(&bytes).map_err(|e| e.context(path.display()))?));
    }
    if bytes.starts_with(MLIR_BYTECODE_MAGIC) {
        let module = read_portable(&bytes, path)?;
        let (text, json) = describe_module(&module, generic);
        return Ok(Inspection { text, json: json!({ "kind": "stablehlo", "module": json }) });
    }
    // By name, or by content as `pjrt run` recognises it (a jax.export artifact has no magic).
    if path.extension().is_some_and(|e| e == "jaxexport") || JaxExport::looks_like(&bytes) {
        let model = JaxExport::from_bytes(&bytes).map_err(|e| e.context(path.display()))?;
        return inspect_jax_export(&model, path, generic);
    }
    if let Ok(text) = std::str::from_utf8(&bytes) {
        let program = pjrt_formats::mlir_text::TextProgram::parse(text, &path.display().to_string())?;
        let (text, json) = describe_module(program.module(), generic);
        return Ok(Inspection {
            text: format!("MLIR text\n{text}"),
            json: json!({ "kind": "mlir_text", "module": json }),
        });
    }
    Err(invalid(format!(
        "{}: not a file `pjrt inspect` knows (a StableHLO portable artifact, a .jaxexport file or an artifact of \
         `pjrt compile`)",
        path.display()
    )))
}

/// A portable artifact's IR, or an error saying what the bytecode is when it is not one.
fn read_portable(bytes: &[u8], path: &Path) -> Result<Module, Error> {
    pjrt_stablehlo::read_bytecode(bytes).map_err(|e| {
        invalid(format!(
            "{}: {e} (`pjrt inspect` reads StableHLO portable artifacts, the VHLO bytecode JAX writes; MLIR bytecode of \
             the stablehlo dialect itself is read by the plugins only)",
            path.display()
        ))
    })
}

/// The shardings `@main` declares for its arguments and results (`sdy.sharding` or
/// `mhlo.sharding`), as text: one list per side, `None` where a value has none.
fn main_shardings(module: &Module) -> (Vec<Option<String>>, Vec<Option<String>>) {
    let main = module
        .walk()
        .find(|op| op.name == "func.func" && matches!(op.attr("sym_name"), Some(Attr::String(s)) if s == b"main"));
    let side = |name: &str| -> Vec<Option<String>> {
        match main.and_then(|m| m.attr(name)) {
            Some(Attr::Array(dicts)) => dicts
                .iter()
                .map(|d| match d {
                    Attr::Dict(d) => d
                        .iter()
                        .find(|(k, _)| k == "sdy.sharding" || k == "mhlo.sharding")
                        .map(|(_, v)| pjrt_stablehlo::attr_text(v)),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    };
    (side("arg_attrs"), side("res_attrs"))
}

/// The module's text, with a header of what matters: producer, signature of each public
/// function, dimension parameters, shardings, custom-call targets.
fn describe_module(module: &Module, generic: bool) -> (String, Json) {
    let mut targets: Vec<String> = module
        .walk()
        .filter(|op| op.name == "stablehlo.custom_call")
        .filter_map(|op| match op.attr("call_target_name") {
            Some(Attr::String(name)) => Some(String::from_utf8_lossy(name.as_slice()).into_owned()),
            _ => None,
        })
        .collect();
    targets.sort();
    targets.dedup();
    let functions: Vec<(String, String)> = module
        .walk()
        .filter(|op| op.name == "func.func")
        .filter(|op| !matches!(op.attr("sym_visibility"), Some(Attr::String(v)) if v == b"private"))
        .filter_map(|op| {
            let name = match op.attr("sym_name") {
                Some(Attr::String(name)) => String::from_utf8_lossy(name.as_slice()).into_owned(),
                _ => return None,
            };
            let signature = op.attr("function_type").map(pjrt_stablehlo::attr_text).unwrap_or_default();
            Some((name, signature))
        })
        .collect();
    let text = if generic { pjrt_stablehlo::print(module) } else { pjrt_stablehlo::print_pretty(module) };
    let mut out = String::new();
    if !module.producer.is_empty() {
        out.push_str(&format!("producer: {}\n", module.producer));
    }
    for (name, signature) in &functions {
        out.push_str(&format!("function @{name}: {signature}\n"));
    }
    let dimensions: Vec<String> = pjrt_stablehlo::dimension_parameters(module).into_iter().map(|(_, n)| n).collect();
    if !dimensions.is_empty() {
        out.push_str(&format!("dimension parameters of @main: {}\n", dimensions.join(", ")));
    }
    let (in_shardings, out_shardings) = main_shardings(module);
    let listed = |v: &[Option<String>]| v.iter().map(|s| s.as_deref().unwrap_or("-")).collect::<Vec<_>>().join(", ");
    if in_shardings.iter().chain(&out_shardings).any(Option::is_some) {
        out.push_str(&format!("shardings of @main: ({}) -> ({})\n", listed(&in_shardings), listed(&out_shardings)));
    }
    out.push_str(&format!(
        "custom calls: {}\n\n",
        if targets.is_empty() { "none".to_owned() } else { targets.join(", ") }
    ));
    out.push_str(&text);
    if !text.ends_with('\n') {
        out.push('\n');
    }
    let json = json!({
        "producer": module.producer,
        "functions": functions.iter().map(|(n, s)| json!({ "name": n, "type": s })).collect::<Vec<_>>(),
        "custom_call_targets": targets,
        "dimension_parameters": dimensions,
        "in_shardings": in_shardings,
        "out_shardings": out_shardings,
        "polymorphic": pjrt_stablehlo::is_polymorphic(module),
        "text": text,
    });
    (out, json)
}

fn inspect_jax_export(model: &JaxExport, path: &Path, generic: bool) -> Result<Inspection, Error> {
    let module = read_portable(model.mlir_module(), path)?;
    let (module_text, module_json) = describe_module(&module, generic);
    let avals = |avals: &[pjrt_formats::jax_export::Aval]| avals.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    let (inputs, outputs) = (avals(model.in_avals()), avals(model.out_avals()));
    let shardings =
        |s: &[pjrt_formats::jax_export::JaxSharding]| s.iter().map(|s| format!("{s:?}")).collect::<Vec<_>>();
    let mut text = format!("{model}\n");
    text.push_str(&format!("platforms: {}\n", model.platforms().join(", ")));
    text.push_str(&format!("inputs:  ({})\n", inputs.join(", ")));
    text.push_str(&format!("outputs: ({})\n", outputs.join(", ")));
    text.push_str(&format!("devices: {}\n", model.nr_devices()));
    let effects: Vec<&String> = model.ordered_effects().iter().chain(model.unordered_effects()).collect();
    if !effects.is_empty() {
        text.push_str(&format!("effects: {}\n", effects.iter().map(|e| e.as_str()).collect::<Vec<_>>().join(", ")));
    }
    text.push('\n');
    text.push_str(&module_text);
    let json = json!({
        "kind": "jax.export",
        "function_name": model.function_name(),
        "serialization_version": model.serialization_version(),
        "jax_version": model.jax_version(),
        "platforms": model.platforms(),
        "inputs": inputs,
        "outputs": outputs,
        "in_shardings": shardings(model.in_shardings()),
        "out_shardings": shardings(model.out_shardings()),
        "nr_devices": model.nr_devices(),
        "ordered_effects": model.ordered_effects(),
        "unordered_effects": model.unordered_effects(),
        "module": module_json,
    });
    Ok(Inspection { text, json })
}

fn inspect_artifact(artifact: &Artifact) -> Inspection {
    let h = &artifact.header;
    let target = match h.target {
        Target::Devices => "a client's devices",
        Target::Topology => "a topology, without its devices",
        _ => "another target",
    };
    let gpu = h.gpu_target.as_ref().map(|g| g.to_string());
    let mut text = format!("pjrt artifact, compiled for the {}\n", h.plugin);
    text.push_str(&format!("target: {target}{}\n", gpu.as_ref().map(|g| format!(" ({g})")).unwrap_or_default()));
    text.push_str(&format!(
        "replicas: {}, partitions: {}, devices: {}\n",
        h.num_replicas, h.num_partitions, h.device_count
    ));
    text.push_str(&format!("executable: {} bytes\n", artifact.executable_bytes().len()));
    let json = json!({
        "kind": "artifact",
        "plugin": h.plugin.to_string(),
        "platform_name": h.plugin.platform_name,
        "platform_version": h.plugin.platform_version,
        "target": match h.target { Target::Devices => "devices", Target::Topology => "topology", _ => "other" },
        "gpu_target": gpu,
        "num_replicas": h.num_replicas,
        "num_partitions": h.num_partitions,
        "device_count": h.device_count,
        "executable_bytes": artifact.executable_bytes().len(),
    });
    Inspection { text, json }
}
