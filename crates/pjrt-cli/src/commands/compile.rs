//! `pjrt compile`: compiles a program ahead of time (for a client's devices, or against a
//! topology without devices) and writes an artifact that `pjrt run` loads without compiling.
//! A shape-polymorphic `jax.export` model is compiled for the shapes `--input-shape` gives.

use std::time::Instant;

use crate::error::Error;
use crate::out::outln;
use pjrt_client::{
    Client, ClientOptions, ElementType, ErrorCode, GpuTarget, GpuTopologyShape, ModuleCounts, Plugin, Program, Topology,
};
use pjrt_formats::artifact::{Artifact, PluginIdentity, Target};
use pjrt_formats::jax_export::{InputShape, JaxExport};
use serde_json::json;

use crate::cli::CompileArgs;
use crate::commands::run::jax_model::{read_program, shape_text};
use crate::compiling::{build_options, ms, open_cache};
use crate::plugins::{cpu_aware_client, plugin_is_cpu, plugin_is_cuda, resolve_plugin};
use crate::ui::invalid;

/// `pjrt compile`: compiles PROGRAM with the plugin `--plugin` names and writes an artifact.
pub fn exec(args: &CompileArgs) -> Result<(), Error> {
    let started = Instant::now();
    // A `jax.export` model compiles as its StableHLO module (its mhlo.num_partitions is its
    // device count); for a GPU target it must have been exported for `cuda`.
    let (mut program, model) = read_program(&args.program)?;
    let mut refined_for = None;
    match &model {
        None if !args.input_shapes.is_empty() => {
            return Err(invalid(format!(
                "--input-shape applies to jax.export models only; {} is not one (its shapes are in the program)",
                args.program.display()
            )))
        }
        Some(model) if model.is_polymorphic() && args.input_shapes.is_empty() => {
            return Err(invalid(format!(
                "{} is shape-polymorphic (inputs {}): give the shapes to compile it for with --input-shape, once \
                 per input in order (e.g. --input-shape 3,4 or --input-shape f32[3,4])",
                args.program.display(),
                avals(model)
            )))
        }
        Some(model) if !args.input_shapes.is_empty() => {
            let shapes = parse_input_shapes(model, &args.input_shapes)?;
            // A static model's program after its shapes are checked; else the refined module.
            program = model.program_for(&shapes)?;
            if model.is_polymorphic() {
                refined_for = Some(shapes);
            }
        }
        _ => {}
    }
    if args.emit_portable {
        return emit_portable(args, &program, started);
    }
    let plugin = &resolve_plugin(&args.plugin)?;
    // Written for the version asked; else as it is (a compile writes a newer portable artifact
    // for the plugin's own version itself).
    if let Some(version) = args.stablehlo_version {
        program = program.portable_artifact(version)?;
    }
    if let (Some(model), Some(target)) = (&model, &args.target) {
        if !model.platforms().iter().any(|p| p == "cuda") {
            return Err(invalid(format!(
                "{} was exported by jax.export for {:?}, not for `cuda`: export it with platforms=(\"cuda\", ...) to \
                 compile it for --target {target}",
                args.program.display(),
                model.platforms()
            )));
        }
    }
    let mut counts = program.module_counts();
    if let Some(model) = &model {
        // Bytecode carries no readable mhlo.num_partitions: the export's device count is its
        // partition count, as `JaxExport::compile_options` has it.
        if model.nr_devices() > 1 {
            counts.num_partitions = counts.num_partitions.or(Some(model.nr_devices() as usize));
            counts.uses_shardy |= model.uses_shardy();
        }
    }
    let replicas = args.replicas.or(counts.num_replicas).unwrap_or(1);
    let partitions = args.partitions.or(counts.num_partitions).unwrap_or(1);
    if replicas < 1 || partitions < 1 {
        return Err(invalid(format!("replicas and partitions must be at least 1, got {replicas} and {partitions}")));
    }
    let devices = replicas
        .checked_mul(partitions)
        .ok_or_else(|| invalid(format!("{replicas} replicas × {partitions} partitions is too many")))?;
    let compile_started = Instant::now();
    let mut cache = None;
    let artifact = match &args.topology {
        _ if args.target.is_some() => {
            let (artifact, outcome) = compile_for_gpu(plugin, &program, replicas, partitions, devices, counts, args)?;
            cache = Some(outcome);
            artifact
        }
        None => {
            let client = cpu_aware_client(plugin, devices as i64)?;
            let options = build_options(client.platform_name(), replicas, partitions, counts.uses_shardy, &args.xla)?;
            let executable = client
                .compile(&program, &options)
                .map_err(|e| crate::compiling::name_program_file(e.into(), &args.program))?;
            Artifact::from_loaded(&client, &executable, &program, &options)
                .map_err(|e| cannot_serialize(plugin, e.into()))?
        }
        Some(name) => compile_for_topology(plugin, name, &program, replicas, partitions, devices, counts, args)?,
    };
    let compile_ms = ms(compile_started);
    artifact.write(&args.output)?;
    let size = std::fs::metadata(&args.output).map(|m| m.len()).unwrap_or(0);
    let h = &artifact.header;
    if args.json {
        let report = json!({
            "artifact": args.output, "program": args.program, "bytes": size,
            "plugin": plugin.path(), "platform": h.plugin.platform_name, "platform_version": h.plugin.platform_version,
            "xla_version": h.plugin.xla_version, "api_version": h.plugin.api_version.to_string(),
            "replicas": h.num_replicas, "partitions": h.num_partitions, "device_count": h.device_count,
            "target": if h.target == Target::Topology { "topology" } else { "devices" },
            "gpu_target": h.gpu_target.as_ref().map(|g| json!({ "name": g.name, "topology": g.topology })),
            "executable_bytes": artifact.executable_bytes().len(),
            "cache": cache,
            "model": model.as_ref().map(|m| json!({
                "format": "jax.export", "polymorphic": m.is_polymorphic(),
                "refined_for": refined_for.as_ref().map(|s| s.iter().map(shape_text).collect::<Vec<_>>()),
            })),
            "timings_ms": { "compile": compile_ms, "total": ms(started) },
        });
        outln!("{report}")?;
    } else {
        outln!(
            "wrote {} ({size} bytes): {} replicas × {} partitions, compiled for the {} on {} {}{} in {compile_ms:.1} ms",
            args.output.display(),
            h.num_replicas,
            h.num_partitions,
            h.plugin,
            h.device_count,
            if h.target == Target::Topology { "topology devices" } else { "devices" },
            h.gpu_target.as_ref().map(|g| format!(" of the {g}")).unwrap_or_default(),
        )?;
        if let Some(shapes) = &refined_for {
            let shapes: Vec<String> = shapes.iter().map(shape_text).collect();
            outln!("refined for inputs {}: run it on inputs of these shapes", shapes.join(", "))?;
        }
    }
    Ok(())
}

/// The model's avals, for messages: `float32[b,4], float32[4]`.
fn avals(model: &JaxExport) -> String {
    model.in_avals().iter().map(|a| a.to_string()).collect::<Vec<_>>().join(", ")
}

/// The `--input-shape` values (one per input of `model`, in order) as input shapes: `3,4`
/// takes the aval's dtype, `f32[3,4]` (or `float32[3,4]`) must name it, `[]` or an empty value
/// is a scalar.
fn parse_input_shapes(model: &JaxExport, texts: &[String]) -> Result<Vec<InputShape>, Error> {
    if texts.len() != model.in_avals().len() {
        return Err(invalid(format!(
            "the model takes {} inputs ({}) but {} --input-shape were given; give one per input, in order, unused \
             ones too",
            model.in_avals().len(),
            avals(model),
            texts.len()
        )));
    }
    let mut shapes = Vec::with_capacity(texts.len());
    for (i, (text, aval)) in texts.iter().zip(model.in_avals()).enumerate() {
        let bad = |why: String| invalid(format!("--input-shape {text:?} (input {i}, {aval}): {why}"));
        let element_type =
            aval.element_type.ok_or_else(|| bad(format!("{} has no PJRT element type", aval.dtype_name)))?;
        let trimmed = text.trim();
        let dims_text = match trimmed.split_once('[') {
            Some((name, rest)) => {
                let inner = rest.strip_suffix(']').ok_or_else(|| bad("a `[` without its `]`".into()))?;
                let name = name.trim();
                if !name.is_empty() {
                    let named = ElementType::from_name(name).or((name == aval.dtype_name).then_some(element_type));
                    match named {
                        None => return Err(bad(format!("`{name}` is not a dtype (f32, s32, bf16, float32, ...)"))),
                        Some(t) if t != element_type => {
                            return Err(bad(format!("the input is {} ({element_type}), not {name}", aval.dtype_name)))
                        }
                        Some(_) => {}
                    }
                }
                inner
            }
            None => trimmed,
        };
        let mut dims = Vec::new();
        if !dims_text.trim().is_empty() {
            for d in dims_text.split(',') {
                let n = d.trim().parse::<i64>().ok().filter(|&n| n >= 0);
                dims.push(n.ok_or_else(|| bad(format!("`{}` is not a dimension (a number >= 0)", d.trim())))?);
            }
        }
        shapes.push((element_type, dims));
    }
    Ok(shapes)
}

#[allow(clippy::too_many_arguments)]
fn compile_for_topology(
    plugin: &Plugin,
    name: &str,
    program: &Program,
    replicas: usize,
    partitions: usize,
    devices: usize,
    counts: ModuleCounts,
    args: &CompileArgs,
) -> Result<Artifact, Error> {
    // First as a named topology; plugins that cannot create one by name (the CPU ones) describe
    // their own devices instead: `PLATFORM[:COUNT]`, taken from a client that compiles nothing.
    let (topology, _client) = match Topology::create(plugin, name, &[]) {
        Ok(topology) => (topology, None),
        Err(e) if e.code() == Some(ErrorCode::Unimplemented) => {
            let (platform, count) = match name.split_once(':') {
                Some((platform, count)) => {
                    let count: i64 = count.parse().ok().filter(|&c| c >= 1).ok_or_else(|| {
                        invalid(format!("--topology {name}: the device count must be a positive number"))
                    })?;
                    (platform, count)
                }
                None => (name, devices as i64),
            };
            let client = if plugin_is_cpu(plugin) {
                Client::new(plugin, &ClientOptions::new().cpu_device_count(count))?
            } else {
                Client::new(plugin, &ClientOptions::new())?
            };
            if platform != client.platform_name() {
                return Err(invalid(format!(
                    "--topology {name}: this plugin cannot create topologies by name ({e}); it can only describe \
                     its own platform, `{}` (e.g. --topology {}:{devices})",
                    client.platform_name(),
                    client.platform_name()
                )));
            }
            (client.topology()?, Some(client))
        }
        Err(e) => return Err(e.into()),
    };
    let options = build_options(&topology.platform_name()?, replicas, partitions, counts.uses_shardy, &args.xla)?;
    let id = PluginIdentity::of_topology(plugin, &topology)?;
    Artifact::compile_for_topology(plugin, &topology, program, &options).map_err(|e| {
        match e.client().and_then(|c| c.code()) {
            Some(ErrorCode::NotFound) | Some(ErrorCode::Unimplemented) => invalid(format!(
                "the {id} cannot compile against a topology without devices ({e}); compile without --topology, on a \
             machine that has the devices, or use a newer plugin"
            )),
            _ => e.into(),
        }
    })
}

/// `--target`: compiles for GPUs described by a built-in name or a file, without them.
#[allow(clippy::too_many_arguments)]
fn compile_for_gpu(
    plugin: &Plugin,
    program: &Program,
    replicas: usize,
    partitions: usize,
    devices: usize,
    counts: ModuleCounts,
    args: &CompileArgs,
) -> Result<(Artifact, &'static str), Error> {
    let spec = args.target.as_deref().unwrap_or_default();
    let target = GpuTarget::from_name_or_file(spec)?;
    let shape = match (&args.topology, args.devices) {
        (Some(text), _) => text.parse::<GpuTopologyShape>()?,
        (None, Some(n)) => GpuTopologyShape::devices(n)?,
        (None, None) => GpuTopologyShape::devices(u32::try_from(devices).map_err(|_| {
            invalid(format!("{replicas} replicas × {partitions} partitions is more GPUs than a topology can have"))
        })?)?,
    };
    if devices as u64 > shape.device_count() {
        return Err(invalid(format!(
            "{replicas} replicas × {partitions} partitions need {devices} GPUs, but the topology {shape} has {}; \
             pass --devices {devices} (or a larger --topology)",
            shape.device_count()
        )));
    }
    if !plugin_is_cuda(plugin) {
        return Err(invalid(format!(
            "--target compiles with a CUDA plugin; {} is not one. Install one with `pjrt plugin install cuda12` and \
             pass --plugin cuda12",
            plugin.path().display()
        )));
    }
    let options = build_options("cuda", replicas, partitions, counts.uses_shardy, &args.xla)?;
    // Through the compile cache `pjrt run` uses, keyed by the target as well as the plugin build.
    match open_cache() {
        Ok(cache) => {
            let cached = cache.compile_for_gpu_target(plugin, &target, shape, program, &options)?;
            if let Some(note) = &cached.note {
                crate::ui::log_line(&format!("note: {note}"));
            }
            Ok((cached.artifact, cached.outcome.as_str()))
        }
        Err(e) => {
            crate::ui::log_line(&format!("note: compiling without the compile cache: {e}"));
            Ok((Artifact::compile_for_gpu_target(plugin, &target, shape, program, &options)?, "off"))
        }
    }
}

fn cannot_serialize(plugin: &Plugin, e: Error) -> Error {
    match e.client() {
        Some(pjrt_client::Error::Pjrt { .. } | pjrt_client::Error::Unsupported { .. }) => invalid(format!(
            "the plugin {} cannot serialize executables, so it cannot write artifacts: {e}",
            plugin.path().display()
        )),
        _ => e,
    }
}

/// `pjrt compile --emit-portable`: the program written as a portable artifact for
/// `--stablehlo-version`, else for the plugin's `stablehlo_current_version`.
fn emit_portable(args: &CompileArgs, program: &Program, started: Instant) -> Result<(), Error> {
    let version = match args.stablehlo_version {
        Some(version) => version,
        None => {
            let plugin = resolve_plugin(&args.plugin)?;
            plugin.portable_target().ok_or_else(|| {
                invalid(format!(
                    "the plugin {} does not say which StableHLO version it reads (or says one older than {}): give \
                     --stablehlo-version",
                    plugin.path().display(),
                    pjrt_stablehlo::MINIMUM_VERSION
                ))
            })?
        }
    };
    let artifact = program.portable_artifact(version)?;
    pjrt_formats::atomic_file::write_with(&args.output, |w| std::io::Write::write_all(w, artifact.code()))
        .map_err(|e| pjrt_client::Error::Io { path: args.output.clone(), source: e })?;
    let bytes = artifact.code().len();
    if args.json {
        let report = json!({
            "portable_artifact": args.output, "program": args.program, "bytes": bytes,
            "stablehlo_version": version.to_string(), "producer": artifact.bytecode_producer(),
            "timings_ms": { "total": ms(started) },
        });
        outln!("{report}")?;
    } else {
        outln!(
            "wrote {} ({bytes} bytes): a StableHLO {version} portable artifact of {} in {:.1} ms",
            args.output.display(),
            args.program.display(),
            ms(started)
        )?;
    }
    Ok(())
}
