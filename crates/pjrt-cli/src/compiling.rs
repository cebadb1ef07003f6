//! The compile step of `pjrt run` (through the compile cache, or loading an AOT artifact) and
//! `pjrt compile` (writes an artifact, optionally against a topology without devices).

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use pjrt_client::{
    Client, ClientOptions, CompileOptions, ErrorCode, LoadedExecutable, ModuleCounts, Plugin, Program, Topology,
};
use pjrt_formats::artifact::{self, Artifact, PluginIdentity, Target};
use pjrt_formats::compile_cache::{CacheOutcome, CompileCache};
use pjrt_formats::Error;
use serde_json::json;

use crate::PluginArg;

/// `pjrt compile` arguments.
#[derive(Args)]
pub struct CompileArgs {
    /// The program: StableHLO/MLIR text (.mlir), MLIR bytecode (.mlirbc) or an HLO module (.pb).
    pub program: PathBuf,
    /// The artifact to write (load it with `pjrt run FILE`).
    #[arg(long, short = 'o')]
    pub output: PathBuf,
    #[command(flatten)]
    pub plugin: PluginArg,
    /// Number of replicas (default: the module's mhlo.num_replicas, else 1).
    #[arg(long)]
    pub replicas: Option<i64>,
    /// Number of partitions (default: the module's mhlo.num_partitions, else 1); more than one
    /// compiles with SPMD partitioning.
    #[arg(long)]
    pub partitions: Option<i64>,
    /// Compile against a topology instead of a client's devices: a name the plugin knows, or,
    /// for plugins that cannot create topologies by name (the CPU ones), the platform name
    /// with an optional device count (`cpu`, `cpu:8`). Needs a plugin with a topology compiler.
    #[arg(long, value_name = "NAME")]
    pub topology: Option<String>,
    #[command(flatten)]
    pub xla: XlaSettings,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// What `pjrt run` was given: a program to compile, or an artifact to load.
pub enum ProgramSource {
    /// A program (compiled through the cache).
    Program(Program),
    /// An AOT artifact written by `pjrt compile` (loaded without compiling).
    Artifact(Box<Artifact>),
}

impl ProgramSource {
    /// Reads `path`: an artifact when it starts with the artifact magic, else a program.
    pub fn open(path: &Path) -> Result<ProgramSource, Error> {
        if artifact::is_artifact_file(path) {
            return Ok(ProgramSource::Artifact(Box::new(Artifact::read(path)?)));
        }
        Ok(ProgramSource::Program(Program::from_file(path)?))
    }

    /// The program, unless this is an artifact.
    pub fn program(&self) -> Option<&Program> {
        match self {
            ProgramSource::Program(p) => Some(p),
            ProgramSource::Artifact(_) => None,
        }
    }

    /// The replica and partition counts: the module's attributes, or the artifact's header.
    pub fn module_counts(&self) -> ModuleCounts {
        match self {
            ProgramSource::Program(p) => p.module_counts(),
            ProgramSource::Artifact(a) => ModuleCounts {
                replicas: Some(a.header.replicas),
                partitions: Some(a.header.partitions),
                ..ModuleCounts::default()
            },
        }
    }
}

/// A compiled or loaded executable with how it was obtained.
pub struct Compiled {
    /// The executable.
    pub executable: LoadedExecutable,
    /// `hit`, `miss` or `off`.
    pub cache: &'static str,
    /// Milliseconds spent compiling (0 on a cache hit and for an artifact).
    pub compile_ms: f64,
    /// Milliseconds spent loading a cached executable or an artifact.
    pub load_ms: f64,
}

/// The cache `pjrt run` and `pjrt cache` use: [`CompileCache::default_dir`] (`$PJRT_CACHE_DIR`),
/// capped at `$PJRT_CACHE_MAX_BYTES` when set.
pub fn open_cache() -> Result<CompileCache, Error> {
    let cache = CompileCache::open(CompileCache::default_dir())?;
    Ok(match std::env::var("PJRT_CACHE_MAX_BYTES") {
        Ok(text) => cache.max_bytes(
            text.trim()
                .parse()
                .map_err(|_| crate::invalid(format!("PJRT_CACHE_MAX_BYTES must be a number of bytes, got `{text}`")))?,
        ),
        Err(_) => cache,
    })
}

/// The compile step of `pjrt run`: loads an artifact (refusing one made for another plugin), or
/// compiles the program through the compile cache (`use_cache`) or directly.
pub fn compile_or_load(
    client: &Client,
    source: &ProgramSource,
    options: &CompileOptions,
    use_cache: bool,
) -> Result<Compiled, Error> {
    let program = match source {
        ProgramSource::Artifact(artifact) => {
            let h = &artifact.header;
            if (options.replicas(), options.partitions()) != (h.replicas, h.partitions) {
                return Err(crate::invalid(format!(
                    "the artifact was compiled for {} replicas × {} partitions, not {} × {}; recompile it with \
                     `pjrt compile --replicas R --partitions N`",
                    h.replicas,
                    h.partitions,
                    options.replicas(),
                    options.partitions()
                )));
            }
            let started = Instant::now();
            let executable = artifact.load(client)?;
            return Ok(Compiled { executable, cache: "off", compile_ms: 0.0, load_ms: ms(started) });
        }
        ProgramSource::Program(program) => program,
    };
    let cache = if use_cache {
        match open_cache() {
            Ok(cache) => Some(cache),
            Err(e) => {
                eprintln!("note: compiling without the compile cache: {e}");
                None
            }
        }
    } else {
        None
    };
    let Some(cache) = cache else {
        let started = Instant::now();
        let executable = client.compile(program, options)?;
        return Ok(Compiled { executable, cache: "off", compile_ms: ms(started), load_ms: 0.0 });
    };
    let cached = cache.compile(client, program, options)?;
    if let Some(note) = &cached.note {
        eprintln!("note: {note}");
    }
    Ok(Compiled {
        executable: cached.executable,
        cache: cached.outcome.as_str(),
        compile_ms: if cached.outcome == CacheOutcome::Hit { 0.0 } else { cached.compile.as_secs_f64() * 1e3 },
        load_ms: cached.load.as_secs_f64() * 1e3,
    })
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

/// The XLA flags `pjrt run` and `pjrt compile` share.
#[derive(Args, Default)]
pub struct XlaSettings {
    /// An XLA option, NAME=VALUE (bool, integer, float or string), passed as an
    /// env_option_override; may be repeated.
    #[arg(long = "xla-option", value_name = "NAME=VALUE")]
    pub xla_options: Vec<String>,
    /// Do not apply the XLA settings that make results match JAX (see `CompileOptions::jax_defaults`).
    #[arg(long)]
    pub no_jax_defaults: bool,
}

impl XlaSettings {
    /// Applies every `--xla-option` to `options`.
    pub fn apply_xla_options(&self, mut options: CompileOptions) -> Result<CompileOptions, Error> {
        for spec in &self.xla_options {
            options = crate::parse_xla_option(options, spec)?;
        }
        Ok(options)
    }
}

/// The options `pjrt run` and `pjrt compile` build from their flags and the module.
pub fn build_options(
    platform: &str,
    replicas: i64,
    partitions: i64,
    uses_shardy: bool,
    xla: &XlaSettings,
) -> Result<CompileOptions, Error> {
    let mut options = CompileOptions::new().num_replicas(replicas).num_partitions(partitions);
    if partitions > 1 {
        options = options.use_spmd_partitioning(true);
    }
    if !xla.no_jax_defaults {
        options = options.jax_defaults(platform);
    }
    if uses_shardy {
        options = options.use_shardy_partitioner(true);
    }
    xla.apply_xla_options(options)
}

/// `pjrt compile`: compiles PROGRAM and writes an artifact.
pub fn run_compile(args: &CompileArgs, plugin: &Plugin) -> Result<(), Error> {
    let started = Instant::now();
    let program = Program::from_file(&args.program)?;
    let counts = program.module_counts();
    let replicas = args.replicas.or(counts.replicas).unwrap_or(1);
    let partitions = args.partitions.or(counts.partitions).unwrap_or(1);
    if replicas < 1 || partitions < 1 {
        return Err(crate::invalid(format!(
            "replicas and partitions must be at least 1, got {replicas} and {partitions}"
        )));
    }
    let devices = replicas
        .checked_mul(partitions)
        .ok_or_else(|| crate::invalid(format!("{replicas} replicas × {partitions} partitions is too many")))?;
    let compile_started = Instant::now();
    let artifact = match &args.topology {
        None => {
            let client = cpu_aware_client(plugin, devices)?;
            let options = build_options(client.platform_name(), replicas, partitions, counts.uses_shardy, &args.xla)?;
            let executable = client.compile(&program, &options)?;
            Artifact::from_loaded(&client, &executable, &program, &options).map_err(|e| cannot_serialize(plugin, e))?
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
            "replicas": h.replicas, "partitions": h.partitions, "device_count": h.device_count,
            "target": if h.target == Target::Topology { "topology" } else { "devices" },
            "timings_ms": { "compile": compile_ms, "total": ms(started) },
        });
        println!("{report}");
    } else {
        println!(
            "wrote {} ({size} bytes): {} replicas × {} partitions, compiled for the {} on {} {} in {compile_ms:.1} ms",
            args.output.display(),
            h.replicas,
            h.partitions,
            h.plugin,
            h.device_count,
            if h.target == Target::Topology { "topology devices" } else { "devices" },
        );
    }
    Ok(())
}

/// A client with enough devices: the CPU plugins make as many as asked for.
pub(crate) fn cpu_aware_client(plugin: &Plugin, devices: i64) -> Result<Client, Error> {
    let mut options = ClientOptions::new();
    if devices > 1 && crate::plugin_is_cpu(plugin) {
        options = options.cpu_device_count(devices);
    }
    Ok(Client::new(plugin, &options)?)
}

#[allow(clippy::too_many_arguments)]
fn compile_for_topology(
    plugin: &Plugin,
    name: &str,
    program: &Program,
    replicas: i64,
    partitions: i64,
    devices: i64,
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
                        crate::invalid(format!("--topology {name}: the device count must be a positive number"))
                    })?;
                    (platform, count)
                }
                None => (name, devices),
            };
            let client = if crate::plugin_is_cpu(plugin) {
                Client::new(plugin, &ClientOptions::new().cpu_device_count(count))?
            } else {
                Client::new(plugin, &ClientOptions::new())?
            };
            if platform != client.platform_name() {
                return Err(crate::invalid(format!(
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
            Some(ErrorCode::NotFound) | Some(ErrorCode::Unimplemented) => crate::invalid(format!(
                "the {id} cannot compile against a topology without devices ({e}); compile without --topology, on a \
             machine that has the devices, or use a newer plugin"
            )),
            _ => e,
        }
    })
}

fn cannot_serialize(plugin: &Plugin, e: Error) -> Error {
    match e {
        Error::Client(pjrt_client::Error::Pjrt { .. } | pjrt_client::Error::Unsupported { .. }) => {
            crate::invalid(format!(
                "the plugin {} cannot serialize executables, so it cannot write artifacts: {e}",
                plugin.path().display()
            ))
        }
        other => other,
    }
}
