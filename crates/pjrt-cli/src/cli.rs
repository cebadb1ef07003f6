//! The command line: every command's arguments as clap definitions ([`Cli`], [`Command`] and one
//! argument struct or subcommand enum per command), the ones several commands share
//! ([`PluginArg`], [`XlaSettings`]), and [`parse_args`]. The doc comments of the fields are the
//! `--help` text. Parsing runs nothing: the commands live in [`crate::commands`].

use std::ffi::OsString;
use std::path::PathBuf;

use crate::error::Error;
use clap::{ArgAction, Args, Parser, Subcommand};
use pjrt_client::CompileOptions;

use crate::ui::invalid;

/// The whole command line: the global flags and one command.
#[derive(Parser)]
#[command(name = "pjrt", version, about = "Inspect PJRT plugins and run StableHLO programs on them")]
pub struct Cli {
    /// More output on stderr: -v shows the plugin's log and how long each step took (load,
    /// compile, transfers, execute); -vv also the plugin's debug log (VLOG 1) and every step.
    #[arg(long, short = 'v', action = ArgAction::Count, global = true)]
    pub verbose: u8,
    /// Do not register the built-in handlers of JAX's LAPACK kernels (`lapack_*_ffi`), which
    /// are registered on CPU plugins for programs that call them (pjrt-lapack).
    #[arg(long, global = true)]
    pub no_builtin_lapack: bool,
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands, each run by its module in [`crate::commands`].
// One value per process, parsed once: the size of its largest variant (`run`'s) costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
pub enum Command {
    /// Show a plugin's API version, attributes, devices and memories.
    Info {
        /// The plugin to show.
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
    Compile(CompileArgs),
    /// Inspect or clear the compile cache `pjrt run` uses ($PJRT_CACHE_DIR).
    #[command(subcommand)]
    Cache(CacheCommand),
    /// Find and install plugins.
    #[command(subcommand)]
    Plugin(PluginCommand),
    /// The C API (libpjrt, pjrt.h): install it for C, C++ and Fortran builds.
    #[command(subcommand)]
    Capi(CapiCommand),
    /// Measure dispatch and transfer speed, beside the raw C API.
    Bench(BenchArgs),
    /// Check what a plugin supports: one check per capability (pass, fail or unsupported).
    /// Exits non-zero only when a check fails.
    Conform(ConformArgs),
    /// Show what a program file holds, without a plugin: a StableHLO portable artifact as MLIR
    /// text, a jax.export model with its signature and platforms, an artifact of `pjrt compile`.
    Inspect(InspectArgs),
    /// Serve jax.export models, MLIR programs and AOT artifacts over HTTP with the Open Inference Protocol (KServe v2, Triton's
    /// HTTP client works unchanged): a model repository folder and/or --model specs.
    #[cfg(feature = "serve")]
    Serve(ServeArgs),
}

/// `pjrt serve`'s arguments.
#[cfg(feature = "serve")]
#[derive(Args)]
pub struct ServeArgs {
    /// A model repository: one folder per model (its program: .jaxexport, .mlir, .mlirbc or a
    /// .pjrt artifact of `pjrt compile`; an optional params.safetensors of weights and an
    /// optional config.json: name, version, program, params, inputs, outputs, batching,
    /// symbolic_dims, max_request_shapes, warmup).
    #[arg(value_name = "REPOSITORY")]
    pub repository: Option<PathBuf>,
    /// A model to serve, NAME=PATH[:params=WEIGHTS.safetensors] (the weights file's tensors
    /// feed the model's inputs by name, as for `pjrt run --params`; requests give the others);
    /// repeatable.
    #[arg(long = "model", value_name = "NAME=PATH")]
    pub models: Vec<pjrt_serve::ModelConfig>,
    /// The plugin to serve on.
    #[command(flatten)]
    pub plugin: PluginArg,
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// The HTTP port (0: any free one; the address is printed).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// The gRPC port (`inference.GRPCInferenceService`; 0: any free one).
    #[arg(long, default_value_t = 8001)]
    pub grpc_port: u16,
    /// Serve HTTP only.
    #[arg(long)]
    pub no_grpc: bool,
    /// The largest request body taken, in MiB (413 beyond).
    #[arg(long, value_name = "MIB", default_value_t = 64)]
    pub max_body_mib: usize,
    /// The server's budget of request bytes in flight, in MiB: bodies as they arrive and the
    /// tensors decoded from them, until answered; a request that does not fit is answered 503
    /// at once (413 if it never could).
    #[arg(long, value_name = "MIB", default_value_t = 512)]
    pub max_inflight_mib: usize,
    /// Requests of one model waiting or running at once; one more is answered 503 at once.
    #[arg(long, default_value_t = 64)]
    pub max_queue: usize,
    /// A client create option, NAME=VALUE (true/false, an integer, else a string), e.g.
    /// `asynchronous=false` on the XLA CPU plugin (lower latency for small models); repeatable.
    #[arg(long = "client-option", value_name = "NAME=VALUE")]
    pub client_options: Vec<String>,
    /// Devices each model is served on, fed from one queue (on a CPU plugin the client is made
    /// with that many devices).
    #[arg(long, default_value_t = 1)]
    pub replicas: usize,
    /// Executions running at once over all devices (default: the host's cores).
    #[arg(long, value_name = "N")]
    pub concurrent_executions: Option<usize>,
    /// How long a request may wait for the device, in milliseconds (503 after).
    #[arg(long, value_name = "MS", default_value_t = 30_000)]
    pub queue_timeout_ms: u64,
    /// Connections held at once over the HTTP and gRPC ports (more wait until one closes).
    #[arg(long, value_name = "N", default_value_t = 512)]
    pub max_connections: usize,
    /// How long a connection may take to send a request's head (or its HTTP/2 preface), in
    /// milliseconds; an idle HTTP/1 connection is closed after as long.
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    pub header_timeout_ms: u64,
    /// How long a request body may take to arrive whole, and an answer may wait for the client
    /// to read it, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 60_000)]
    pub body_timeout_ms: u64,
    /// Serve HTTPS (and gRPC over TLS) with this PEM certificate chain (leaf first); needs
    /// --tls-key.
    #[arg(long, value_name = "CERT.pem", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "KEY.pem", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// A file holding a bearer token every request must carry (`Authorization: Bearer ...`);
    /// else $PJRT_SERVE_TOKEN when set.
    #[arg(long, value_name = "PATH")]
    pub token_file: Option<PathBuf>,
    /// With a token: leave the health routes (HTTP /v2/health/live and /ready, gRPC ServerLive,
    /// ServerReady and grpc.health.v1.Health) and /metrics open, for Kubernetes probes and
    /// Prometheus scrapers.
    #[arg(long)]
    pub open_health_and_metrics: bool,
    /// Whether clients may load and unload the repository's models: `none` (the default, as
    /// Triton's) or `explicit` (the repository extension's load and unload calls; a load may
    /// carry a `config` parameter, a JSON model config used in place of the folder's
    /// config.json; an unloaded model stays in the index as UNAVAILABLE).
    #[arg(long, value_name = "MODE", default_value = "none", value_parser = ["none", "explicit"])]
    pub model_control: String,
    /// Whether the server is ready (HTTP /v2/health/ready, gRPC ServerReady and
    /// grpc.health.v1.Health) only when every model is (as Triton's --strict-readiness): a model
    /// that loads or failed to load makes it answer not ready (503), though it keeps serving the
    /// others; a model a client unloaded does not count. `false`: ready whenever it runs.
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    pub strict_readiness: bool,
    /// Let same-host clients register system shared memory regions (objects under /dev/shm, as
    /// Triton's --allow-client-shm) and send inputs and take outputs through them instead of the
    /// socket. A client that may register a region may have the server read any /dev/shm object
    /// its user may open: give it a token (--token) where other users reach the port.
    #[arg(long)]
    pub shared_memory: bool,
    /// Compile without the compile cache ($PJRT_CACHE_DIR, else ~/.cache/pjrt-client/compile).
    #[arg(long)]
    pub no_cache: bool,
    /// Write a Chrome trace to FILE.json when the server stops: model loads, compiles, and a
    /// span per request (`serve_request`) or batch (`serve_batch`) with its executions and
    /// transfers inside.
    #[arg(long, value_name = "FILE.json")]
    pub trace: Option<PathBuf>,
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

// Shared by several commands

/// `--plugin`: the plugin a command loads (`plugins::resolve_plugin` finds it).
#[derive(Args)]
pub struct PluginArg {
    /// A plugin path or name (cpu, cpu-0.106, cuda12, tpu, ...). Default: $PJRT_PLUGIN, then
    /// Python packages, then the plugin cache; if none is found, the default CPU plugin is
    /// installed. The site-packages folders python3 reports are remembered until python3 or
    /// its environment changes; PJRT_NO_PYTHON_CACHE=1 asks python3 on every run.
    #[arg(long, short = 'p')]
    pub plugin: Option<String>,
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
            options = parse_xla_option(options, spec)?;
        }
        Ok(options)
    }
}

/// Applies one `--xla-option NAME=VALUE`: `true`/`false` become a bool, then an integer, a float,
/// else a string.
pub fn parse_xla_option(options: CompileOptions, spec: &str) -> Result<CompileOptions, Error> {
    let (name, value) =
        spec.split_once('=').ok_or_else(|| invalid(format!("--xla-option needs NAME=VALUE, got `{spec}`")))?;
    Ok(match value {
        "true" | "false" => options.xla_option(name, value == "true"),
        v if v.parse::<i64>().is_ok() => options.xla_option(name, v.parse::<i64>().unwrap_or_default()),
        v if v.parse::<f64>().is_ok() => options.xla_option(name, v.parse::<f64>().unwrap_or_default()),
        v => options.xla_option(name, v),
    })
}

// `pjrt run`

/// `pjrt run` arguments.
#[derive(Args)]
pub struct RunArgs {
    /// The program: StableHLO/MLIR text (.mlir), MLIR bytecode (.mlirbc), a model serialized by
    /// jax.export (.jaxexport), or an artifact from `pjrt compile` (recognised by its magic;
    /// loaded without compiling).
    pub program: PathBuf,
    /// Input arrays, in parameter order: .npy files, or one tensor of a safetensors file as
    /// FILE.safetensors:NAME, or one array of an .npz archive as FILE.npz:NAME (for a jax.export model: every input of the function, unused ones too).
    /// A bf16 parameter takes raw 2-byte bits (<u2, or V2 as ml_dtypes writes it); a sub-byte one
    /// (i4, ui4, i2, ui2, i1, ui1, f4E2M1FN, f6*) takes int8 or uint8 values in its range (f4/f6 as
    /// bit codes), ml_dtypes' |V1, or a safetensors F4 tensor; a value out of range is an error.
    #[arg(long, short = 'i', num_args = 1..)]
    pub input: Vec<PathBuf>,
    /// A safetensors file (or an .npz archive, as np.savez writes it) whose tensors feed the
    /// program's parameters by name: a jax.export model's argument names (`params['block_0']['kernel']`,
    /// from its argument locations and input tree), or an MLIR program's (`jax.arg_info`, the
    /// location `loc("params['w1']")`, an SSA name), match a tensor under the same name, its keys
    /// joined by dots or slashes with or without the root (`block_0.kernel`, `params/block_0/kernel`)
    /// or JAX's bracketed keys; every tensor must match, and an argument whose pytree the file gives
    /// the rest of must have one. Only when no name matches do the tensors feed the first
    /// parameters by dtype and shape, if that leaves exactly one assignment (a note says so; two
    /// tensors that could trade places are refused, named). The --input arrays fill the other
    /// parameters in order. Each file is read once into memory (never memory-mapped, so another
    /// process rewriting or truncating it meanwhile changes nothing); without --shard-inputs,
    /// tensors (and .npy inputs, and stored .npz members) upload from there with no further copy,
    /// f8 tensors included; deflated .npz members are inflated first.
    #[arg(long, value_name = "FILE.safetensors|FILE.npz")]
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
    #[arg(long, value_enum, default_value_t = OutputFormat::Npy)]
    pub output_format: OutputFormat,
    /// The plugin to run on.
    #[command(flatten)]
    pub plugin: PluginArg,
    /// A shared library of XLA FFI handlers (custom calls written in Rust: a cdylib built with
    /// `pjrt_client::export_ffi_handlers!`), registered on the plugin before compiling, each
    /// proven by compiling a probe program. Repeatable. Loading it runs its code.
    #[arg(long, value_name = "PATH")]
    pub ffi_library: Vec<PathBuf>,
    /// Number of replicas (default: the module's mhlo.num_replicas, else 1). Each replica gets
    /// the same inputs; replica k's outputs go to DIR/device{k}/.
    #[arg(long)]
    pub replicas: Option<usize>,
    /// Split each input along AXIS into one shard per device (replicas × partitions): device k
    /// gets shard k. An input whose shape already is the program's (per-device) parameter shape
    /// is given whole to every device instead. Needed to run a partitioned program
    /// (mhlo.num_partitions > 1), which is then compiled with SPMD partitioning (and Shardy when
    /// the module uses sdy).
    #[arg(long, value_name = "AXIS")]
    pub shard_inputs: Option<usize>,
    /// The value of a dimension variable an MLIR text program takes as an argument (a
    /// `tensor<i32> {jax.global_constant = "b"}` parameter of @main), e.g. `--dim b=8`; one
    /// not given is inferred when exactly one assignment of the inputs' sizes fits. A text
    /// program with `?` dimensions is refined for the inputs' shapes either way.
    #[arg(long = "dim", value_name = "NAME=VALUE", value_parser = parse_dim)]
    pub dim: Vec<(String, i64)>,
    /// `--xla-option` and `--no-jax-defaults`.
    #[command(flatten)]
    pub xla: XlaSettings,
    /// Compile without the compile cache (by default compiled programs are cached in
    /// $PJRT_CACHE_DIR, else ~/.cache/pjrt-client/compile; see `pjrt cache`).
    #[arg(long)]
    pub no_cache: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// One process of a multi-process job: --kv-store, --job-id, --process, the etcd settings.
    #[command(flatten)]
    pub multi_process: MultiProcessArgs,
    /// Write a Chrome trace of the run to FILE.json (plugin load, client creation, compile or
    /// cache load, transfers, execute; the plugin's own profiler events where it has one). Open
    /// it in ui.perfetto.dev or chrome://tracing.
    #[arg(long, value_name = "FILE.json")]
    pub trace: Option<PathBuf>,
}

/// How `pjrt run` writes its outputs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// One `.npy` file per output: DIR/out0.npy, DIR/out1.npy, ...
    #[default]
    Npy,
    /// One DIR/outputs.safetensors holding tensors out0, out1, ...
    Safetensors,
}

// `pjrt compile`

/// `pjrt compile` arguments.
#[derive(Args)]
pub struct CompileArgs {
    /// The program: StableHLO/MLIR text (.mlir), MLIR bytecode (.mlirbc) or an HLO module (.pb).
    pub program: PathBuf,
    /// The artifact to write (load it with `pjrt run FILE`).
    #[arg(long, short = 'o')]
    pub output: PathBuf,
    /// The plugin to compile with.
    #[command(flatten)]
    pub plugin: PluginArg,
    /// Number of replicas (default: the module's mhlo.num_replicas, else 1).
    #[arg(long)]
    pub replicas: Option<usize>,
    /// Number of partitions (default: the module's mhlo.num_partitions, else 1); more than one
    /// compiles with SPMD partitioning.
    #[arg(long)]
    pub partitions: Option<usize>,
    /// Compile against a topology instead of a client's devices: a name the plugin knows, or,
    /// for plugins that cannot create topologies by name (the CPU ones), the platform name
    /// with an optional device count (`cpu`, `cpu:8`). Needs a plugin with a topology compiler.
    /// With --target: the GPUs as PARTITIONSxHOSTSxDEVICES (e.g. 1x2x8: two hosts of 8 GPUs).
    #[arg(long, value_name = "NAME")]
    pub topology: Option<String>,
    /// Compile for a GPU without having it, with a CUDA plugin (--plugin cuda12 or cuda13):
    /// h100, h200, a100, b200, l4, or a file holding a stream_executor.GpuTargetConfigProto in
    /// text format (FILE.txtpb) for any other GPU.
    #[arg(long, value_name = "NAME|FILE")]
    pub target: Option<String>,
    /// With --target: the number of GPUs (on one host). Default: replicas × partitions.
    #[arg(long, value_name = "N", requires = "target", conflicts_with = "topology")]
    pub devices: Option<u32>,
    /// The shape of one input of a jax.export model; give it once per input, in order (unused
    /// inputs too): `3,4` (the dimensions; the dtype is the model's), `f32[3,4]` (the dtype,
    /// as XLA or JAX names it, is checked against the model's), or `[]` (or an empty value)
    /// for a scalar. Required for a shape-polymorphic model: the artifact is its module refined
    /// for these shapes (run it on inputs of exactly these shapes). For a model of static
    /// shapes they are checked against its own.
    #[arg(long = "input-shape", value_name = "SHAPE")]
    pub input_shapes: Vec<String>,
    /// The StableHLO version to send the plugin the program in (a portable artifact written
    /// for it, e.g. 1.16.1). Default: the program as it is, unless it is a portable artifact
    /// newer than the plugin reads, which is written for the plugin's own version.
    #[arg(long, value_name = "X.Y.Z")]
    pub stablehlo_version: Option<pjrt_client::StableHloVersion>,
    /// Write the program as a StableHLO portable artifact (MLIR bytecode, `.mlirbc`) to
    /// --output instead of compiling it: for --stablehlo-version, else for the plugin's
    /// stablehlo_current_version. An op the version lacks is refused by name.
    #[arg(long, conflicts_with_all = ["topology", "target", "replicas", "partitions"])]
    pub emit_portable: bool,
    /// `--xla-option` and `--no-jax-defaults`.
    #[command(flatten)]
    pub xla: XlaSettings,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

// `pjrt cache`

/// `pjrt cache` subcommands.
#[derive(Subcommand)]
pub enum CacheCommand {
    /// Show the cache folder, its number of entries and their size.
    Info {
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Remove every cached executable.
    Clear {
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
}

// `pjrt capi`

/// `pjrt capi` subcommands.
#[derive(Subcommand)]
pub enum CapiCommand {
    /// Install the C API into PREFIX for C, C++ and Fortran builds: include/pjrt.h,
    /// lib/libpjrt.so.1 (and the link libpjrt.so), lib/libpjrt.a, lib/pkgconfig/pjrt.pc (for
    /// `pkg-config --cflags --libs pjrt`), lib/cmake/pjrt (for `find_package(pjrt)`: the target
    /// pjrt::pjrt) and share/pjrt/fortran/pjrt.f90 (the Fortran module's source). The libraries
    /// are copied from those `cargo build -p pjrt-capi` made beside this `pjrt`.
    Install {
        /// The folder to install into (made if missing; files there are replaced).
        prefix: std::path::PathBuf,
        /// The folder that holds libpjrt.so and libpjrt.a (a cargo profile folder such as
        /// target/release). Default: the folder of this `pjrt` executable.
        #[arg(long, value_name = "DIR")]
        lib_dir: Option<std::path::PathBuf>,
        /// Print one JSON object (prefix, files) instead of the list of files.
        #[arg(long)]
        json: bool,
    },
}

// `pjrt plugin`

/// `pjrt plugin` subcommands.
#[derive(Subcommand)]
pub enum PluginCommand {
    /// Install a known plugin from PyPI into the plugin cache (checks its SHA-256).
    Install {
        /// `cpu` (the default CPU plugin, API 0.115), `cpu-0.106` (an older one), `cuda12` or
        /// `cuda13` (the CUDA plugins with ptxas and libdevice: compile for GPUs without one;
        /// `cuda12-0.12.0.1` and `cuda13-0.12.0.1`, the newest, API 0.116), `tpu` (libtpu: TPU
        /// topologies and compiles without a TPU), `rocm7` or `rocm10` (load only where ROCm's
        /// runtime is installed) or `intel` (with the oneAPI runtime; loads with Level Zero and
        /// libpython, see `pjrt info --plugin intel`).
        name: String,
        /// Install from these wheel files instead of downloading (offline); each is checked
        /// against the plugin's pinned SHA-256s. The CUDA plugins need two or three wheels.
        #[arg(long = "wheel", value_name = "FILE")]
        wheels: Vec<std::path::PathBuf>,
        /// Download with `python3 -m pip` instead of fetching the wheels directly.
        #[arg(long, conflicts_with = "wheels")]
        pip: bool,
        /// Print one JSON object (name, package, version, path) instead of the path.
        #[arg(long)]
        json: bool,
    },
    /// List every plugin found, with its path, platform and API version ($PJRT_PLUGIN, Python
    /// packages of the python3 on PATH, the plugin cache; PJRT_NO_PYTHON_CACHE=1 asks python3
    /// for its site-packages instead of using its remembered answer).
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

// `pjrt bench`

/// `pjrt bench` arguments.
#[derive(Args)]
pub struct BenchArgs {
    /// What to measure.
    #[command(subcommand)]
    pub what: BenchWhat,
    /// A plugin path or name (see `pjrt info --help`).
    #[arg(long, short = 'p', global = true)]
    pub plugin: Option<String>,
    /// Print one JSON object instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    /// Write a Chrome trace of the benchmark to FILE.json (open it in ui.perfetto.dev or
    /// chrome://tracing). Tracing costs time per call: the figures of a traced run are higher.
    #[arg(long, global = true, value_name = "FILE.json")]
    pub trace: Option<PathBuf>,
    /// Draw the distribution of per-call latencies (safe and raw overlaid, with p10, median,
    /// p90 and p99 marked) as an SVG picture in FILE.svg (dispatch and d2h).
    #[arg(long, global = true, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
}

/// `pjrt bench serve`'s arguments.
#[cfg(feature = "serve")]
#[derive(Args)]
pub struct BenchServeArgs {
    /// The server, `http://HOST:PORT`.
    #[arg(long)]
    pub url: String,
    /// The model to call.
    #[arg(long)]
    pub model: String,
    /// The request's inputs, in the order of the model's metadata (its names and datatypes are
    /// read from the server).
    #[arg(long = "input", value_name = "F.npy", required = true)]
    pub inputs: Vec<PathBuf>,
    /// Concurrency levels (clients sending at once), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16")]
    pub concurrency: Vec<usize>,
    /// Requests per level (after a warm-up of one per client).
    #[arg(long, default_value_t = 400)]
    pub requests: usize,
    /// The name this server goes by in the report ("pjrt serve", "JAX", ...).
    #[arg(long, default_value = "server")]
    pub label: String,
}

/// The benchmarks.
#[derive(Subcommand)]
pub enum BenchWhat {
    /// Execute a compiled scalar f32 add, await it and drop the output; safe and raw alternating.
    /// `safe_over_raw` is the median of the per-round ratios of the medians (min and max beside it).
    Dispatch {
        /// Iterations per variant in each round (after a warm-up).
        #[arg(long, default_value_t = 20_000)]
        iters: usize,
        /// Rounds, each alternating the two variants (at least 1).
        #[arg(long, default_value_t = 7)]
        rounds: usize,
    },
    /// Host-to-device copies of BYTES bytes (f32 data); safe and raw alternating.
    H2d {
        /// Bytes per transfer.
        #[arg(long, default_value_t = 64 << 20)]
        bytes: usize,
        /// Transfers per variant.
        #[arg(long, default_value_t = 20)]
        iters: usize,
        /// Upload 64-byte aligned memory without copying (safe API only; no raw variant).
        #[arg(long)]
        zero_copy: bool,
        /// Upload every tensor of this safetensors file instead, each way the library can
        /// (copied one by one, copies overlapped, in place where aligned, and reading the file
        /// then uploading it, as `pjrt run --params` does), against a memcpy of the same bytes;
        /// ITERS rounds. The file is read, never memory-mapped.
        #[arg(long, value_name = "FILE.safetensors")]
        params: Option<PathBuf>,
    },
    /// Throughput of one client and one (portable) executable shared by THREADS threads, each
    /// keeping IN_FLIGHT executions launched before it waits for the oldest; thread t runs on
    /// device t mod devices (a 128x128 f32 matmul per execution). One row per combination.
    Threads {
        /// Thread counts, comma-separated (as many CPU devices as the largest are asked for).
        #[arg(long, value_delimiter = ',', default_values_t = [1, 2, 4])]
        threads: Vec<usize>,
        /// Executions each thread keeps in flight, comma-separated.
        #[arg(long, value_delimiter = ',', default_values_t = [1, 2, 4, 8, 16])]
        in_flight: Vec<usize>,
        /// Executions per thread in each combination.
        #[arg(long, default_value_t = 500)]
        iters: usize,
    },
    /// Per-call latency (p10/median/p90/p99) and throughput of any program or `.jaxexport`
    /// model with its inputs already on the device, sequential and with N calls in flight, and
    /// the time to its first result; with --raw, the same executable and buffers through the raw
    /// C API alternated with the safe calls.
    Run(BenchRunArgs),
    /// A load generator for an Open Inference Protocol server (`pjrt serve`, Triton, a Python
    /// one): CONCURRENCY clients each sending binary-tensor inference requests back to back,
    /// REQUESTS in all per level; throughput and p50/p99 latency per level.
    #[cfg(feature = "serve")]
    Serve(BenchServeArgs),
    /// Device-to-host copies of BYTES bytes into a reused host buffer; safe and raw alternating.
    D2h {
        /// Bytes per transfer.
        #[arg(long, default_value_t = 64 << 20)]
        bytes: usize,
        /// Transfers per variant.
        #[arg(long, default_value_t = 20)]
        iters: usize,
    },
}

/// `pjrt bench run` arguments.
#[derive(Args)]
pub struct BenchRunArgs {
    /// The program, as for `pjrt run`: .mlir, .mlirbc, .pb, a `.jaxexport` model, or a
    /// `pjrt compile` artifact.
    pub program: PathBuf,
    /// Input arrays in parameter order, as for `pjrt run --input`.
    #[arg(long, short = 'i', num_args = 1..)]
    pub input: Vec<PathBuf>,
    /// Parameters from a safetensors or .npz file, as for `pjrt run --params`.
    #[arg(long, value_name = "FILE.safetensors|FILE.npz")]
    pub params: Option<PathBuf>,
    /// Timed calls per variant (after a warm-up of a tenth as many).
    #[arg(long, default_value_t = 2_000)]
    pub iters: usize,
    /// Calls kept in flight for the throughput figure (launched before the oldest is awaited).
    #[arg(long, default_value_t = 8)]
    pub in_flight: usize,
    /// Also time the raw C API (`PJRT_LoadedExecutable_Execute` + `PJRT_Event_Await` on the same
    /// executable and device buffers), alternated with the safe calls.
    #[arg(long)]
    pub raw: bool,
    /// A client create option, NAME=VALUE (true/false, an integer, else a string), e.g.
    /// `asynchronous=false` on the XLA CPU plugin (API 0.115); may be repeated.
    #[arg(long = "client-option", value_name = "NAME=VALUE")]
    pub client_options: Vec<String>,
    /// `--xla-option` and `--no-jax-defaults`, as for `pjrt run`.
    #[command(flatten)]
    pub xla: XlaSettings,
    /// Compile without the compile cache.
    #[arg(long)]
    pub no_cache: bool,
}

// `pjrt conform`

/// `pjrt inspect` arguments.
#[derive(Args)]
pub struct InspectArgs {
    /// The file: a `.mlirbc` portable artifact, a `.jaxexport` model, a `.mlir` text program
    /// or a `pjrt compile` artifact.
    pub file: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Print the module in MLIR's generic op form (`"stablehlo.add"(%0, %1) : ...`) instead of
    /// the custom forms JAX prints.
    #[arg(long)]
    pub generic: bool,
}

/// `pjrt conform` arguments.
#[derive(Args)]
pub struct ConformArgs {
    /// The plugin to check (path or name). Not needed with --diff.
    pub plugin: Option<String>,
    /// The report as JSON. `--json` alone (or `--json -`) prints it on stdout instead of the
    /// text; `--json FILE` writes it to FILE and still prints the text. With --diff, the same for
    /// the differences. Put the plugin before `--json`: `pjrt conform cpu --json`.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<PathBuf>,
    /// Compare two JSON reports instead of checking a plugin.
    #[arg(long, num_args = 2, value_names = ["A.json", "B.json"])]
    pub diff: Option<Vec<PathBuf>>,
    /// Print one Markdown table of what the plugin does here instead of the report (docs/plugins.md):
    /// whether it loads (or what it lacks), API version, attributes, client, a topology without
    /// devices, an AOT compile for a named target, what fails and what is unsupported. Exit 0 even
    /// when it does not load.
    #[arg(long, conflicts_with_all = ["json", "diff"])]
    pub markdown: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::error::ErrorKind;

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

    #[test]
    fn run_flags_parse() {
        let cli = parse_args([
            "pjrt",
            "run",
            "p.mlir",
            "--params",
            "w.safetensors",
            "--input",
            "w.safetensors:x",
            "y.npy",
            "--output-format",
            "safetensors",
        ])
        .unwrap();
        let Command::Run(args) = cli.command else { panic!("not run") };
        assert_eq!(args.params, Some(PathBuf::from("w.safetensors")));
        assert_eq!(args.input, [PathBuf::from("w.safetensors:x"), PathBuf::from("y.npy")]);
        assert_eq!(args.output_format, OutputFormat::Safetensors);
        let cli = parse_args(["pjrt", "run", "p.mlir"]).unwrap();
        let Command::Run(args) = cli.command else { panic!("not run") };
        assert_eq!((args.params, args.output_format), (None, OutputFormat::Npy));
        assert!(parse_args(["pjrt", "run", "p.mlir", "--output-format", "csv"]).is_err());
    }
}

/// The multi-process options of `pjrt run` (`commands/run/multi_process.rs` connects with them).
#[derive(Args, Debug, Clone, Default)]
pub struct MultiProcessArgs {
    /// Run as one process of a multi-process job that meets through etcd:
    /// etcd+https://HOST:PORT[,HOST:PORT...] (the members' client URLs; etcd+http:// for plain
    /// HTTP on a trusted network). Needs --job-id and --process.
    #[arg(long, value_name = "etcd+https://HOST:PORT[,...]", requires_all = ["job_id", "process"])]
    pub kv_store: Option<String>,
    /// The job's id: its keys live under jobs/ID/ (every process of the job gives the same id).
    #[arg(long, value_name = "ID", requires = "kv_store")]
    pub job_id: Option<String>,
    /// This process's index and the job's process count, as I/N (0 <= I < N).
    #[arg(long, value_name = "I/N", requires = "kv_store")]
    pub process: Option<String>,
    /// The CA bundle (PEM) that signs the etcd members' certificates [env: PJRT_ETCD_CA].
    #[arg(long, value_name = "FILE")]
    pub etcd_ca: Option<PathBuf>,
    /// This process's client certificate (PEM), for mutual TLS [env: PJRT_ETCD_CERT].
    #[arg(long, value_name = "FILE")]
    pub etcd_cert: Option<PathBuf>,
    /// The client certificate's private key (PEM) [env: PJRT_ETCD_KEY].
    #[arg(long, value_name = "FILE")]
    pub etcd_key: Option<PathBuf>,
    /// The etcd user [env: PJRT_ETCD_USER]; its password comes from PJRT_ETCD_PASSWORD or the
    /// file of --etcd-password-file / PJRT_ETCD_PASSWORD_FILE.
    #[arg(long, value_name = "NAME")]
    pub etcd_user: Option<String>,
    /// A file holding the etcd user's password (one line) [env: PJRT_ETCD_PASSWORD_FILE].
    #[arg(long, value_name = "FILE")]
    pub etcd_password_file: Option<PathBuf>,
    /// How long this process's keys outlive it, in seconds (a lease renewed while it runs).
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub kv_lease_ttl: u64,
    /// How long to wait for the other processes (the rendezvous), in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    pub kv_timeout: u64,
}

/// `NAME=VALUE` of `--dim`.
fn parse_dim(s: &str) -> Result<(String, i64), String> {
    let (name, value) = s.split_once('=').ok_or_else(|| format!("`{s}` is not NAME=VALUE"))?;
    let value: i64 = value.trim().parse().map_err(|_| format!("`{value}` is not an integer"))?;
    if name.trim().is_empty() || value < 0 {
        return Err(format!("`{s}`: give a name and a size of 0 or more"));
    }
    Ok((name.trim().to_string(), value))
}
