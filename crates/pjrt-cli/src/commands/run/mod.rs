//! `pjrt`: inspect PJRT plugins and run StableHLO programs on them. A thin user of the
//! `pjrt_client` library.
//!
//! The binary (`src/main.rs`) only calls [`main_with_args`]. The argument parser is public
//! ([`parse_args`]) so it can be tested and fuzzed without running anything.

pub mod arrays;
pub mod bench;
pub mod cache;
pub mod compile;
pub mod conform;
pub mod jax_model;
pub mod ui;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{ArgAction, Args, Parser, Subcommand};
use pjrt_client::locate::{self, Source};
use pjrt_client::{Client, ClientOptions, CompileOptions, ElementType, Placement, Plugin, Value};
use pjrt_formats::npy::{Dtype, NpyArray};
use pjrt_formats::{BufferExt as _, Error};
use serde_json::{json, Value as Json};

#[derive(Parser)]
#[command(name = "pjrt", version, about = "Inspect PJRT plugins and run StableHLO programs on them")]
pub struct Cli {
    /// More output on stderr: -v shows the plugin's log and how long each step took (load,
    /// compile, transfers, execute); -vv also the plugin's debug log (VLOG 1) and every step.
    #[arg(long, short = 'v', action = ArgAction::Count, global = true)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Show a plugin's API version, attributes, devices and memories.
    Info {
        #[command(flatten)]
        plugin: PluginArg,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Compile a StableHLO program (.mlir text or .mlirbc bytecode, or a jax.export model) and
    /// run it on .npy or safetensors inputs; or load an artifact written by `pjrt compile` and
    /// run it without compiling.
    Run(RunArgs),
    /// Compile a program ahead of time into an artifact file for `pjrt run`.
    Compile(compile::CompileArgs),
    /// Inspect or clear the compile cache `pjrt run` uses ($PJRT_CACHE_DIR).
    #[command(subcommand)]
    Cache(cache::CacheCommand),
    /// Find and install plugins.
    #[command(subcommand)]
    Plugin(PluginCommand),
    /// Measure dispatch and transfer speed, beside the raw C API.
    Bench(bench::BenchArgs),
    /// Check what a plugin supports: one check per capability (pass, fail or unsupported).
    /// Exits non-zero only when a check fails.
    Conform(conform::ConformArgs),
}

#[derive(Args)]
pub struct PluginArg {
    /// A plugin path or name (cpu, cpu-0.106, cuda12, tpu, ...). Default: $PJRT_PLUGIN, then
    /// Python packages, then the plugin cache; if none is found, the default CPU plugin is
    /// installed.
    #[arg(long, short = 'p')]
    pub plugin: Option<String>,
}

#[derive(Args)]
pub struct RunArgs {
    /// The program: StableHLO/MLIR text (.mlir), MLIR bytecode (.mlirbc), a model serialized by
    /// jax.export (.jaxexport), or an artifact from `pjrt compile` (recognised by its magic;
    /// loaded without compiling).
    pub program: PathBuf,
    /// Input arrays, in parameter order: .npy files, or one tensor of a safetensors file as
    /// FILE.safetensors:NAME (for a jax.export model: every input of the function, unused ones too).
    /// A bf16 parameter takes raw 2-byte bits (<u2, or V2 as ml_dtypes writes it); a sub-byte one
    /// (i4, ui4, i2, ui2, i1, ui1, f4E2M1FN, f6*) takes int8 or uint8 values in its range (f4/f6 as
    /// bit codes), ml_dtypes' |V1, or a safetensors F4 tensor; a value out of range is an error.
    #[arg(long, short = 'i', num_args = 1..)]
    pub input: Vec<PathBuf>,
    /// A safetensors file whose tensors feed the program's parameters: by name where the
    /// program names its parameters (JAX's `jax.arg_info` attribute or its argument location
    /// `loc("params['w1']")`, as `jax.export` writes it; "params['w1']" matches a tensor w1 or
    /// params.w1), else in file order before the --input arrays. Without --shard-inputs, tensors
    /// (and .npy inputs) upload straight from the memory-mapped file, f8 tensors included.
    #[arg(long, value_name = "FILE.safetensors")]
    pub params: Option<PathBuf>,
    /// Where to write out0.npy, out1.npy, ... (default: the current directory). Sub-byte outputs
    /// are widened so their values survive: s4/s2/s1 as int8, u4/u2/u1 as uint8, f4e2m1fn and
    /// f6* as uint8 bit codes (the summary and --json name the original type).
    #[arg(long, short = 'o')]
    pub output_dir: Option<PathBuf>,
    /// How to write the outputs: npy (DIR/out0.npy, ...) or safetensors (DIR/outputs.safetensors
    /// with tensors out0, out1, ...; f4e2m1fn as the format's packed F4, which needs an even
    /// element count, other sub-byte types widened to I8/U8). An output that cannot be written
    /// is refused before the program runs.
    #[arg(long, value_enum, default_value_t = arrays::OutputFormat::Npy)]
    pub output_format: arrays::OutputFormat,
    #[command(flatten)]
    pub plugin: PluginArg,
    /// Number of replicas (default: the module's mhlo.num_replicas, else 1). Each replica gets
    /// the same inputs; replica k's outputs go to DIR/device{k}/.
    #[arg(long)]
    pub replicas: Option<i64>,
    /// Split each input along AXIS into one shard per device (replicas × partitions): device k
    /// gets shard k. An input whose shape already is the program's (per-device) parameter shape
    /// is given whole to every device instead. Needed to run a partitioned program
    /// (mhlo.num_partitions > 1), which is then compiled with SPMD partitioning (and Shardy when
    /// the module uses sdy).
    #[arg(long, value_name = "AXIS")]
    pub shard_inputs: Option<usize>,
    #[command(flatten)]
    pub xla: compile::XlaSettings,
    /// Compile without the compile cache (by default compiled programs are cached in
    /// $PJRT_CACHE_DIR, else ~/.cache/pjrt-client/compile; see `pjrt cache`).
    #[arg(long)]
    pub no_cache: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Subcommand)]
pub enum PluginCommand {
    /// Install a known plugin from PyPI into the plugin cache (checks its SHA-256).
    Install {
        /// `cpu` (the default CPU plugin, API 0.115) or `cpu-0.106` (an older one).
        name: String,
        /// Print one JSON object (name, package, version, path) instead of the path.
        #[arg(long)]
        json: bool,
    },
    /// List every plugin found, with its path, platform and API version.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Parses command-line arguments (`args[0]` is the program name) without running anything.
/// `--help` and `--version` come back as an `Err` whose kind is `DisplayHelp` / `DisplayVersion`.
pub fn parse_args<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    Cli::try_parse_from(args)
}

/// The whole `pjrt` command: parses `args` (`args[0]` is the program name), runs the command and
/// reports errors on stderr. Exit code 0 on success and for `--help` / `--version`, 1 on any error.
pub fn main_with_args<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match parse_args(args) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 1 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let _ui = ui::init(cli.verbose);
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            ui::report_error(&e);
            ExitCode::from(1)
        }
    }
}

/// An invalid-argument error (what most mistakes on the command line are).
pub(crate) fn invalid(message: impl Into<String>) -> Error {
    pjrt_client::Error::InvalidArgument(message.into()).into()
}

/// Runs a parsed command.
pub fn run(cli: Cli) -> Result<(), Error> {
    match cli.command {
        Command::Conform(args) => Ok(conform::command(&args, |plugin| resolve_plugin(&PluginArg { plugin }))?),
        Command::Bench(args) => {
            let plugin = resolve_plugin(&PluginArg { plugin: args.plugin.clone() })?;
            let report = bench::run_bench(&args, &plugin)?;
            if args.json {
                println!("{report}");
            } else {
                bench::print_report(&report);
            }
            Ok(())
        }
        Command::Info { plugin, json } => info(&plugin, json),
        Command::Run(args) => run_program(&args),
        Command::Compile(args) => compile::run_compile(&args, &resolve_plugin(&args.plugin)?),
        Command::Cache(command) => cache::run_cache(&command),
        Command::Plugin(PluginCommand::Install { name, json }) => {
            let known = locate::known_plugin(&name).ok_or_else(|| {
                crate::invalid(format!(
                    "unknown plugin `{name}`; known: {} (a plugin you already have needs no install: pass --plugin PATH)",
                    locate::KNOWN_PLUGINS.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
                ))
            })?;
            let path = locate::install(known, ui::log_line)?;
            if json {
                println!(
                    "{}",
                    json!({ "name": known.name, "package": known.package, "version": known.version, "path": path })
                );
            } else {
                println!("{}", path.display());
            }
            Ok(())
        }
        Command::Plugin(PluginCommand::List { json }) => list_plugins(json),
    }
}

/// Resolves the plugin to use; installs the default CPU plugin when nothing is found at all.
fn resolve_plugin(arg: &PluginArg) -> pjrt_client::Result<Plugin> {
    let found = locate::resolve_or_install(arg.plugin.as_deref(), ui::log_line)?;
    Plugin::load(&found.path)
}

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

fn info(arg: &PluginArg, as_json: bool) -> Result<(), Error> {
    let plugin = resolve_plugin(arg)?;
    let client = Client::new(&plugin, &ClientOptions::new())?;
    let mut devices = Vec::new();
    for device in client.devices() {
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
        "platform": client.platform_name(),
        "platform_version": client.platform_version(),
        "process_index": client.process_index(),
        "devices": devices,
    });
    if as_json {
        println!("{report}");
        return Ok(());
    }
    println!("plugin:       {}", plugin.path().display());
    println!("API version:  {} ({} functions)", plugin.api_version(), plugin.slot_count());
    println!("platform:     {} ({})", client.platform_name(), client.platform_version());
    if let (Some(min), Some(cur)) = (plugin.stablehlo_minimum_version(), plugin.stablehlo_current_version()) {
        println!("StableHLO:    {min} .. {cur}");
    }
    for (name, value) in plugin.attributes() {
        println!("attribute:    {name} = {}", value_json(value));
    }
    for device in devices {
        println!(
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
        );
    }
    Ok(())
}

fn list_plugins(as_json: bool) -> Result<(), Error> {
    let mut rows = Vec::new();
    for found in locate::find_all() {
        let (version, error) = match Plugin::load(&found.path) {
            Ok(p) => (Some(p.api_version().to_string()), None),
            Err(e) => (None, Some(e.to_string())),
        };
        let source = match &found.source {
            Source::Explicit => "explicit".to_owned(),
            Source::Environment => "PJRT_PLUGIN".to_owned(),
            Source::PythonPackage(site) => format!("python ({})", site.display()),
            Source::Cache => "cache".to_owned(),
            _ => "other".to_owned(),
        };
        rows.push(json!({
            "name": found.name, "path": found.path, "platform": found.platform,
            "api_version": version, "source": source, "error": error,
        }));
    }
    if as_json {
        println!("{}", Json::Array(rows));
        return Ok(());
    }
    if rows.is_empty() {
        println!("no plugins found; install one with `pjrt plugin install cpu`");
    }
    for row in rows {
        println!(
            "{:<12} {:<6} API {:<7} {}  [{}]{}",
            row["name"].as_str().unwrap_or(""),
            row["platform"].as_str().unwrap_or("?"),
            row["api_version"].as_str().unwrap_or("-"),
            row["path"].as_str().unwrap_or(""),
            row["source"].as_str().unwrap_or(""),
            row["error"].as_str().map(|e| format!("\n    cannot load: {e}")).unwrap_or_default()
        );
    }
    Ok(())
}

/// Applies one `--xla-option NAME=VALUE`: `true`/`false` become a bool, then an integer, a float,
/// else a string.
pub fn parse_xla_option(options: CompileOptions, spec: &str) -> Result<CompileOptions, Error> {
    let (name, value) =
        spec.split_once('=').ok_or_else(|| crate::invalid(format!("--xla-option needs NAME=VALUE, got `{spec}`")))?;
    Ok(match value {
        "true" | "false" => options.xla_option(name, value == "true"),
        v if v.parse::<i64>().is_ok() => options.xla_option(name, v.parse::<i64>().unwrap_or_default()),
        v if v.parse::<f64>().is_ok() => options.xla_option(name, v.parse::<f64>().unwrap_or_default()),
        v => options.xla_option(name, v),
    })
}

fn run_program(args: &RunArgs) -> Result<(), Error> {
    let started = Instant::now();
    let (program, jax_model) = if pjrt_formats::artifact::is_artifact_file(&args.program) {
        (compile::ProgramSource::open(&args.program)?, None)
    } else {
        let (program, model) = jax_model::read_program(&args.program)?;
        (compile::ProgramSource::Program(program), model)
    };
    if let Some(model) = jax_model.as_ref().filter(|m| m.nr_devices() > 1) {
        return jax_model::run_multi_device_model(args, model);
    }
    let counts = program.module_counts();
    let replicas = args.replicas.or(counts.replicas).unwrap_or(1);
    let partitions = counts.partitions.unwrap_or(1);
    if replicas < 1 {
        return Err(crate::invalid(format!("--replicas must be at least 1, got {replicas}")));
    }
    if partitions < 1 {
        return Err(crate::invalid(format!("mhlo.num_partitions must be at least 1, got {partitions}")));
    }
    if partitions > 1 && args.shard_inputs.is_none() {
        return Err(crate::invalid(format!(
            "the program is partitioned over {partitions} devices (mhlo.num_partitions): give --shard-inputs AXIS \
             to split the inputs into one shard per device along AXIS"
        )));
    }
    let device_count = replicas
        .checked_mul(partitions)
        .ok_or_else(|| crate::invalid(format!("{replicas} replicas × {partitions} partitions is too many")))?;
    let mut inputs = arrays::gather_inputs(program.program(), args.params.as_deref(), &args.input)?;
    // Sharding and jax.export models work on host arrays. Otherwise every device takes each
    // whole input, and safetensors tensors upload straight from their mapped files.
    let mut host_inputs = None;
    if args.shard_inputs.is_some() || jax_model.is_some() {
        let (arrays, labels) = inputs.into_host_arrays()?;
        if let Some(axis) = args.shard_inputs {
            for (i, array) in arrays.iter().enumerate() {
                if axis >= array.shape.len() {
                    return Err(crate::invalid(format!(
                        "--shard-inputs {axis}: input {i} ({}) has rank {}",
                        labels[i],
                        array.shape.len()
                    )));
                }
            }
        }
        host_inputs = Some(arrays);
        inputs = arrays::Inputs::host(Vec::new(), labels);
    }
    let plugin = resolve_plugin(&args.plugin)?;
    let client = compile::cpu_aware_client(&plugin, device_count)?;
    if let Some(arrays) = host_inputs.take() {
        if let Some(model) = &jax_model {
            // The model's arguments, each of its parameter's type (--shard-inputs is refused).
            let (arrays, labels) =
                jax_model::module_arguments(model, client.platform_name(), arrays, &inputs.labels, args.shard_inputs)?;
            inputs = arrays::Inputs::arrays(arrays, labels);
        } else {
            // --shard-inputs: split below, once the parameters' types are known.
            host_inputs = Some(arrays);
        }
    }
    let input_count = host_inputs.as_ref().map_or(inputs.len(), Vec::len);
    let options = compile::build_options(client.platform_name(), replicas, partitions, counts.uses_shardy, &args.xla)?;
    if matches!(program, compile::ProgramSource::Artifact(_)) && !args.xla.xla_options.is_empty() {
        ui::log_line("note: --xla-option has no effect on an artifact: it was compiled by `pjrt compile`");
    }
    let compiled = compile::compile_or_load(&client, &program, &options, !args.no_cache)?;
    let (exe, compile_ms, load_ms) = (compiled.executable, compiled.compile_ms, compiled.load_ms);
    // Every output must be writable before anything is uploaded or run: a failure after the
    // work would leave some outputs written and the others lost.
    let stored = arrays::output_dtypes(args.output_format, exe.output_shapes())?;
    let params = exe.parameter_shapes().map(|p| p.to_vec());
    if let Some(params) = &params {
        if params.len() != input_count {
            return Err(crate::invalid(format!(
                "the program takes {} inputs ({}) but {} were given; pass them in order with --input",
                params.len(),
                params.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", "),
                input_count
            )));
        }
    }
    let transfer_started = Instant::now();
    let devices = exe.addressable_devices();
    // One set of inputs per device when sharded; else all devices share `inputs`.
    let sharded: Option<Vec<arrays::Inputs>> = match (args.shard_inputs, host_inputs) {
        (Some(axis), Some(host)) => {
            // Each input as its parameter's element type (bf16 bits, widened sub-byte values).
            let host = host
                .iter()
                .enumerate()
                .map(|(i, array)| {
                    let wanted = params.as_ref().and_then(|p| p.get(i)).and_then(|p| p.element_type);
                    array.to_host_array(wanted).map_err(|e| e.context(format_args!("input {i} ({})", inputs.labels[i])))
                })
                .collect::<Result<Vec<_>, Error>>()?;
            // Replicated where the input already has the (per-device) parameter shape.
            let shardings: Vec<pjrt_client::sharding::Sharding> = host
                .iter()
                .enumerate()
                .map(|(i, array)| {
                    let param = params.as_ref().and_then(|p| p.get(i));
                    let whole = param.is_some_and(|p| {
                        p.dims.len() == array.shape().len()
                            && p.dims.iter().zip(array.shape()).all(|(d, s)| *d as usize == *s)
                    });
                    if whole && devices.len() > 1 && partitions > 1 {
                        pjrt_client::sharding::Sharding::Replicated
                    } else {
                        pjrt_client::sharding::Sharding::Split(axis)
                    }
                })
                .collect();
            let per_device = pjrt_client::sharding::per_device_arrays(&host, &shardings, devices.len())
                .map_err(|e| Error::from(e).context(format_args!("--shard-inputs {axis}")))?;
            Some(per_device.into_iter().map(|arrays| arrays::Inputs::arrays(arrays, inputs.labels.clone())).collect())
        }
        _ => None,
    };
    let mut buffers = Vec::new();
    for (k, device) in devices.iter().enumerate() {
        let device_inputs = sharded.as_ref().map_or(&inputs, |s| &s[k]);
        let mut row = Vec::new();
        for i in 0..device_inputs.len() {
            let wanted = params.as_ref().and_then(|p| p.get(i)).and_then(|p| p.element_type);
            let buffer = device_inputs
                .upload(&client, i, wanted, Placement::Device(device))
                .map_err(|e| e.context(format_args!("input {i} ({})", device_inputs.labels[i])))?;
            row.push(buffer);
        }
        buffers.push(row);
    }
    let mut transfer_ms = transfer_started.elapsed().as_secs_f64() * 1e3;
    let execute_started = Instant::now();
    let refs: Vec<Vec<&pjrt_client::Buffer>> = buffers.iter().map(|r| r.iter().collect()).collect();
    let execution = exe.execute_sharded(&refs)?;
    execution.wait()?;
    let execute_ms = execute_started.elapsed().as_secs_f64() * 1e3;
    let out_dir = args.output_dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let download_started = Instant::now();
    let mut outputs = Vec::new();
    for (k, device_outputs) in execution.outputs.iter().enumerate() {
        let dir = if execution.outputs.len() > 1 { out_dir.join(format!("device{k}")) } else { out_dir.clone() };
        std::fs::create_dir_all(&dir).map_err(|e| pjrt_client::Error::Io { path: dir.clone(), source: e })?;
        let mut sink = arrays::OutputSink::new(args.output_format, &dir);
        for (i, buffer) in device_outputs.iter().enumerate() {
            let array = buffer.to_npy()?;
            let element_type = buffer.element_type()?;
            // `dtype` and `element_type` name the program's type (s4), `npy_dtype` and
            // `stored_as` what the file holds (int8 for s4: sub-byte types are widened).
            let mut row = json!({
                "device": k, "index": i, "dtype": element_type.name(), "element_type": element_type.name(),
                "npy_dtype": array.dtype.descr(), "stored_as": stored.get(i).copied().unwrap_or(array.dtype.name()),
                "shape": array.shape, "preview": preview(&array, element_type.name() == "bf16"),
            });
            let (file, tensor) = sink.add(i, element_type, array)?;
            row["file"] = json!(file);
            row["tensor"] = json!(tensor);
            outputs.push(row);
        }
        sink.finish()?;
    }
    transfer_ms += download_started.elapsed().as_secs_f64() * 1e3;
    if args.json {
        let report = json!({
            "program": args.program, "plugin": plugin.path(), "platform": client.platform_name(),
            "replicas": replicas, "partitions": partitions, "shard_inputs": args.shard_inputs, "outputs": outputs,
            "cache": compiled.cache,
            "timings_ms": { "compile": compile_ms, "load": load_ms, "transfer": transfer_ms, "execute": execute_ms,
                            "total": started.elapsed().as_secs_f64() * 1e3 },
        });
        println!("{report}");
    } else {
        for o in &outputs {
            let shape: Vec<String> = o["shape"].as_array().into_iter().flatten().map(|d| d.to_string()).collect();
            let element_type = o["element_type"].as_str().unwrap_or("");
            // Sub-byte outputs are stored widened: say as what.
            let widened = ElementType::from_name(element_type)
                .filter(|t| t.is_sub_byte())
                .map(|t| {
                    let stored = o["stored_as"].as_str().unwrap_or("?");
                    let codes = if t.is_integral() || stored == "F4" { "" } else { " bit codes" };
                    format!(" (as {stored}{codes})")
                })
                .unwrap_or_default();
            println!(
                "{}{}: {}[{}] = {}  -> {}{}{widened}",
                if execution.outputs.len() > 1 { format!("device{} ", o["device"]) } else { String::new() },
                format_args!("out{}", o["index"]),
                element_type,
                shape.join(","),
                o["preview"].as_str().unwrap_or(""),
                Path::new(o["file"].as_str().unwrap_or("")).display(),
                o["tensor"].as_str().map(|t| format!(":{t}")).unwrap_or_default()
            );
        }
        println!(
            "{}",
            cache_line(compiled.cache, compile_ms, load_ms, matches!(program, compile::ProgramSource::Artifact(_)))
        );
    }
    Ok(())
}

/// What the compile cache did, in one line: `compile cache: hit (loaded in 21.1 ms)`.
fn cache_line(cache: &str, compile_ms: f64, load_ms: f64, artifact: bool) -> String {
    match cache {
        _ if artifact => format!("compile cache: off (artifact loaded in {load_ms:.1} ms)"),
        "hit" => format!("compile cache: hit (loaded in {load_ms:.1} ms)"),
        "miss" => format!("compile cache: miss (compiled in {compile_ms:.1} ms)"),
        other => format!("compile cache: {other} (compiled in {compile_ms:.1} ms)"),
    }
}

fn plugin_is_cpu(plugin: &Plugin) -> bool {
    locate::KNOWN_PLUGINS.iter().any(|k| plugin.path().ends_with(k.library))
        || plugin.path().to_string_lossy().contains("cpu")
}

/// The first few values of an array, as text.
fn preview(array: &NpyArray, bf16: bool) -> String {
    const SHOWN: usize = 6;
    let size = array.dtype.size();
    let count = array.element_count();
    let values: Vec<String> = array
        .data
        .chunks_exact(size)
        .take(SHOWN)
        .map(|c| match array.dtype {
            Dtype::Bool => (c[0] != 0).to_string(),
            Dtype::I8 => (c[0] as i8).to_string(),
            Dtype::U8 => c[0].to_string(),
            Dtype::I16 => i16::from_le_bytes([c[0], c[1]]).to_string(),
            Dtype::U16 if bf16 => half::bf16::from_le_bytes([c[0], c[1]]).to_string(),
            Dtype::U16 => u16::from_le_bytes([c[0], c[1]]).to_string(),
            Dtype::I32 => i32::from_le_bytes([c[0], c[1], c[2], c[3]]).to_string(),
            Dtype::U32 => u32::from_le_bytes([c[0], c[1], c[2], c[3]]).to_string(),
            Dtype::I64 => i64::from_le_bytes(c.try_into().unwrap_or([0; 8])).to_string(),
            Dtype::U64 => u64::from_le_bytes(c.try_into().unwrap_or([0; 8])).to_string(),
            Dtype::F16 => half::f16::from_le_bytes([c[0], c[1]]).to_string(),
            Dtype::F32 => f32::from_le_bytes([c[0], c[1], c[2], c[3]]).to_string(),
            Dtype::F64 => f64::from_le_bytes(c.try_into().unwrap_or([0; 8])).to_string(),
            Dtype::C64 => format!(
                "{}{:+}i",
                f32::from_le_bytes([c[0], c[1], c[2], c[3]]),
                f32::from_le_bytes([c[4], c[5], c[6], c[7]])
            ),
            Dtype::C128 => format!(
                "{}{:+}i",
                f64::from_le_bytes(c[..8].try_into().unwrap_or([0; 8])),
                f64::from_le_bytes(c[8..].try_into().unwrap_or([0; 8]))
            ),
            _ => format!("{c:02x?}"),
        })
        .collect();
    let more = if count > SHOWN { ", ..." } else { "" };
    if array.shape.is_empty() {
        values.first().cloned().unwrap_or_default()
    } else {
        format!("[{}{more}]", values.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::error::ErrorKind;

    #[test]
    fn cache_line_says_what_happened() {
        assert_eq!(cache_line("hit", 0.0, 21.14, false), "compile cache: hit (loaded in 21.1 ms)");
        assert_eq!(cache_line("miss", 887.0, 0.0, false), "compile cache: miss (compiled in 887.0 ms)");
        assert_eq!(cache_line("off", 12.0, 0.0, false), "compile cache: off (compiled in 12.0 ms)");
        assert_eq!(cache_line("off", 0.0, 3.0, true), "compile cache: off (artifact loaded in 3.0 ms)");
    }

    #[test]
    fn parses_run_arguments() {
        let cli = parse_args([
            "pjrt",
            "run",
            "p.mlir",
            "-i",
            "a.npy",
            "b.npy",
            "--replicas",
            "2",
            "--xla-option",
            "x=1",
            "--json",
        ])
        .unwrap();
        let Command::Run(args) = cli.command else { panic!("not run") };
        assert_eq!(args.program, PathBuf::from("p.mlir"));
        assert_eq!(args.input, [PathBuf::from("a.npy"), PathBuf::from("b.npy")]);
        assert_eq!((args.replicas, args.json, args.xla.no_jax_defaults), (Some(2), true, false));
        assert_eq!(args.xla.xla_options, ["x=1"]);
    }

    #[test]
    fn help_and_version_are_not_errors_for_the_exit_code() {
        for (args, kind) in [
            (&["pjrt", "--help"][..], ErrorKind::DisplayHelp),
            (&["pjrt", "--version"], ErrorKind::DisplayVersion),
            (&["pjrt", "run", "--help"], ErrorKind::DisplayHelp),
        ] {
            let e = parse_args(args).err().unwrap();
            assert_eq!(e.kind(), kind);
            assert!(!e.use_stderr());
        }
        for args in [&["pjrt"][..], &["pjrt", "run"], &["pjrt", "run", "p", "--replicas", "x"], &["pjrt", "frob"]] {
            assert!(parse_args(args).err().unwrap().use_stderr(), "{args:?}");
        }
    }

    #[test]
    fn parser_survives_odd_words() {
        // Words the fuzz target found interesting: empty, lone dashes, `=` forms, non-UTF-8.
        use std::os::unix::ffi::OsStringExt;
        let odd = [
            OsString::from(""),
            OsString::from("-"),
            OsString::from("--"),
            OsString::from("--replicas="),
            OsString::from("-i="),
            OsString::from_vec(vec![0xff, 0xfe]),
        ];
        for a in &odd {
            for b in &odd {
                let _ = parse_args([OsString::from("pjrt"), OsString::from("run"), a.clone(), b.clone()]);
                let _ = parse_args([OsString::from("pjrt"), a.clone(), b.clone()]);
            }
        }
    }
}
