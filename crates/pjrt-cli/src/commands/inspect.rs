//! `pjrt inspect FILE`: what a program file holds, without a plugin. A StableHLO portable
//! artifact (`.mlirbc` as JAX writes it) prints as MLIR text with its signature, custom-call
//! targets and producer; a `jax.export` artifact adds its platforms, avals (symbolic dimensions
//! as JAX names them), shardings and effects; an AOT artifact of `pjrt compile` shows what it
//! was compiled for. `--json` gives the same as one object.
//!
//! MLIR text and MLIR bytecode of other dialects than VHLO are refused by name: reading them
//! needs the text parser (and the bytecode reader reads portable artifacts only).

use std::path::Path;

use pjrt_formats::artifact::{Artifact, Target};
use pjrt_formats::jax_export::JaxExport;
use pjrt_stablehlo::ir::{Attr, Module};
use serde_json::{json, Value as Json};

use crate::cli::InspectArgs;
use crate::error::Error;
use crate::ui::invalid;

/// What MLIR bytecode starts with.
const MLIR_BYTECODE_MAGIC: &[u8] = b"ML\xefR";

/// Runs `pjrt inspect`.
pub fn exec(args: &InspectArgs) -> Result<(), Error> {
    let report = inspect(&args.file)?;
    if args.json {
        println!("{}", report.json);
    } else {
        print!("{}", report.text);
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

/// Reads `path` and describes it (see the module docs).
pub fn inspect(path: &Path) -> Result<Inspection, Error> {
    let bytes = std::fs::read(path).map_err(|e| pjrt_client::Error::Io { path: path.to_path_buf(), source: e })?;
    if pjrt_formats::artifact::is_artifact(&bytes) {
        return Ok(inspect_artifact(&Artifact::from_bytes(&bytes).map_err(|e| e.context(path.display()))?));
    }
    if bytes.starts_with(MLIR_BYTECODE_MAGIC) {
        let module = read_portable(&bytes, path)?;
        let (text, json) = describe_module(&module);
        return Ok(Inspection { text, json: json!({ "kind": "stablehlo", "module": json }) });
    }
    // By name, or by content as `pjrt run` recognises it (a jax.export artifact has no magic).
    if path.extension().is_some_and(|e| e == "jaxexport") || JaxExport::looks_like(&bytes) {
        let model = JaxExport::from_bytes(&bytes).map_err(|e| e.context(path.display()))?;
        return inspect_jax_export(&model, path);
    }
    if std::str::from_utf8(&bytes).is_ok() {
        return Err(invalid(format!(
            "{}: MLIR text is not read by `pjrt inspect` yet (it reads portable artifacts, .jaxexport files and AOT \
             artifacts); the text is the program: read it as it is, or serialize it as a portable artifact",
            path.display()
        )));
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

/// The module's text, with a header of what matters: producer, signature of each public
/// function, custom-call targets.
fn describe_module(module: &Module) -> (String, Json) {
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
    let text = pjrt_stablehlo::print(module);
    let mut out = format!("producer: {}\n", module.producer);
    for (name, signature) in &functions {
        out.push_str(&format!("function @{name}: {signature}\n"));
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
        "text": text,
    });
    (out, json)
}

fn inspect_jax_export(model: &JaxExport, path: &Path) -> Result<Inspection, Error> {
    let module = read_portable(model.mlir_module(), path)?;
    let (module_text, module_json) = describe_module(&module);
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
