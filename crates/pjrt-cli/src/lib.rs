//! `pjrt`: inspect PJRT plugins and run StableHLO programs on them. A thin user of the
//! `pjrt_client` and `pjrt_formats` libraries.
//!
//! The binary (`src/main.rs`) only calls [`main_with_args`]. The argument parser is public
//! ([`parse_args`]) so it can be tested and fuzzed without running anything.
//!
//! # Where things are
//!
//! Each command's arguments (and their `--help` text) are in [`cli`]; the command itself is one
//! module of [`commands`], whose `exec` [`run`] calls:
//!
//! | command | arguments ([`cli`]) | code |
//! | --- | --- | --- |
//! | `pjrt info` | [`Command::Info`], [`cli::PluginArg`] | `src/commands/info.rs` |
//! | `pjrt run` | [`cli::RunArgs`] | `src/commands/run/mod.rs`; its inputs in `run/inputs.rs`, its output files and summary in `run/outputs.rs`, `jax.export` models in `run/jax_model.rs` |
//! | `pjrt compile` | [`cli::CompileArgs`] | `src/commands/compile.rs` |
//! | `pjrt cache info\|clear` | [`cli::CacheCommand`] | `src/commands/cache.rs` |
//! | `pjrt plugin install\|list` | [`cli::PluginCommand`] | `src/commands/plugin.rs` |
//! | `pjrt capi install` | [`cli::CapiCommand`] | `src/commands/capi.rs` (the layout is `pjrt::install`'s, the C API crate's) |
//! | `pjrt bench` | [`cli::BenchArgs`] | `src/commands/bench/` |
//! | `pjrt conform` | [`cli::ConformArgs`] | `src/commands/conform/` |
//! | `pjrt serve` (feature `serve`) | `cli::ServeArgs` | `src/commands/serve.rs` (the server is the `pjrt_serve` crate) |
//!
//! What several commands share lives outside [`commands`]:
//! - `src/cli.rs`: the clap definitions, [`parse_args`] and [`parse_xla_option`].
//! - `src/plugins.rs`: the plugin `--plugin` names, and a client with enough devices on it.
//! - `src/compiling.rs`: the compile step of `run` and `compile` (options from the flags,
//!   the compile cache, artifacts); `cache` opens the same cache.
//! - `src/error.rs`: the CLI's own [`error::Error`], which every command returns (the libraries'
//!   errors wrapped as they are, and its usage errors); `ui` reports it.
//! - `src/out.rs`: stdout, where results go: `outln!`/`out!` return an error where `println!`
//!   would panic, and a reader that went away (`pjrt inspect FILE | head`) ends the run quietly.
//! - `src/ui.rs`: the terminal: log levels, `-v` span lines, progress, invalid-argument errors,
//!   and how errors are reported, with hints.
//! - `src/stderr_watch.rs`: fd 2 watched during a plugin call (forwarded unchanged), to learn
//!   whether the plugin printed a line (`compiling` explains the CPU plugin's tuning-feature
//!   lines only when they appeared).
//! - `src/trace.rs`: `--trace FILE.json`, the spans as a Chrome trace, with the plugin's own
//!   profiler events merged in.
//!
//! Imports point one way: `lib.rs` → `commands` → `compiling` (→ `stderr_watch`), `plugins` → `cli` → `ui` → `trace`. A
//! command never imports another command, and no shared module imports a command.

#![deny(missing_docs)]
// Results go through `out::outln!` and messages through `ui::log_line`: `println!` and
// `eprintln!` panic when their stream is closed (`pjrt inspect FILE | head`).
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod cli;
pub mod commands;
pub mod compiling;
pub mod error;
pub mod out;
pub mod plugins;
mod runtime_hint;
mod stderr_watch;
pub mod trace;
pub mod ui;

use std::ffi::OsString;
use std::process::ExitCode;

pub use cli::{parse_args, parse_xla_option, Cli, Command};

/// The whole `pjrt` command: parses `args` (`args[0]` is the program name), runs the command and
/// reports errors on stderr. Exit code 0 on success and for `--help` / `--version`, 1 on any error;
/// 0, quietly, when stdout's reader went away before the results were written (`pjrt inspect
/// FILE | head`), as ripgrep and other Rust tools do (they ignore SIGPIPE, as `pjrt` does).
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
    let trace = match &cli.command {
        Command::Run(args) => args.trace.clone(),
        Command::Bench(args) => args.trace.clone(),
        #[cfg(feature = "serve")]
        Command::Serve(args) => args.trace.clone(),
        _ => None,
    };
    let _ui = ui::init(cli.verbose, trace.as_deref());
    match run(cli).and_then(|()| Ok(out::flush()?)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error::Error::Stdout(e)) if e.reader_gone() => ExitCode::SUCCESS,
        Err(e) => {
            ui::report_error(&e);
            ExitCode::from(1)
        }
    }
}

/// Runs a parsed command.
pub fn run(cli: Cli) -> error::Result<()> {
    // JAX's LAPACK kernels: their provider for every command, with scipy's OpenBLAS installed
    // into the plugin cache the first time a program needs it (quietly: a failure is the
    // compile's error, saying what to install).
    pjrt_lapack::set_enabled(!cli.no_builtin_lapack);
    pjrt_lapack::register(|| pjrt_plugins::install_verified(&pjrt_plugins::OPENBLAS, |_| ()));
    match cli.command {
        Command::Conform(args) => Ok(commands::conform::exec(&args)?),
        Command::Bench(args) => Ok(commands::bench::exec(&args)?),
        Command::Info { plugin, json } => Ok(commands::info::exec(&plugin, json)?),
        Command::Run(args) => Ok(commands::run::exec(&args)?),
        Command::Compile(args) => Ok(commands::compile::exec(&args)?),
        Command::Cache(command) => Ok(commands::cache::exec(&command)?),
        Command::Plugin(command) => Ok(commands::plugin::exec(&command)?),
        Command::Capi(command) => commands::capi::exec(&command),
        Command::Inspect(args) => commands::inspect::exec(&args),
        #[cfg(feature = "serve")]
        Command::Serve(args) => commands::serve::exec(&args),
    }
}
