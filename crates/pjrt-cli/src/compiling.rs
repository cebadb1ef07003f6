//! The compile step `pjrt run` and `pjrt compile` share: the program or artifact `pjrt run` was
//! given ([`ProgramSource`]), the compile options both build from their flags and the module
//! ([`build_options`]), and compiling through the compile cache `pjrt run` and `pjrt cache` use
//! ([`open_cache`], [`compile_or_load`]).

use std::path::Path;
use std::time::Instant;

use crate::error::Error;
use pjrt_client::{Client, CompileOptions, LoadedExecutable, ModuleCounts, Program};
use pjrt_formats::artifact::{self, Artifact};
use pjrt_formats::compile_cache::{CacheOutcome, CompileCache};

use crate::cli::XlaSettings;
use crate::ui::invalid;

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
                num_replicas: Some(a.header.num_replicas),
                num_partitions: Some(a.header.num_partitions),
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
/// capped at `$PJRT_CACHE_MAX_BYTES` when set. Refused in a folder another user could change,
/// or when there is no home folder (`pjrt run` then compiles without it and says why).
pub fn open_cache() -> Result<CompileCache, Error> {
    let cache = CompileCache::open_default()?;
    Ok(match std::env::var("PJRT_CACHE_MAX_BYTES") {
        Ok(text) => cache.max_bytes(
            text.trim()
                .parse()
                .map_err(|_| invalid(format!("PJRT_CACHE_MAX_BYTES must be a number of bytes, got `{text}`")))?,
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
            if (options.num_replicas_requested(), options.num_partitions_requested())
                != (h.num_replicas, h.num_partitions)
            {
                return Err(invalid(format!(
                    "the artifact was compiled for {} replicas × {} partitions, not {} × {}; recompile it with \
                     `pjrt compile --replicas R --partitions N`",
                    h.num_replicas,
                    h.num_partitions,
                    options.num_replicas_requested(),
                    options.num_partitions_requested()
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
                crate::ui::log_line(&format!("note: compiling without the compile cache: {e}"));
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
    // The cache step as one span (`--trace`, `-v`): a hit loads the executable inside it
    // (`load_executable`), a miss compiles (`compile`) and stores.
    let span = tracing::info_span!("compile_cache_load", outcome = tracing::field::Empty).entered();
    // Whether the CPU plugin logs its tuning-feature lines depends on the host CPU, not on the
    // plugin's version: watch its stderr (on the CPU platform only, the one that prints them).
    let (cached, tuning_lines_printed) = if client.platform_name().eq_ignore_ascii_case("cpu") {
        crate::stderr_watch::watch(TUNING_FEATURE_LINE, || cache.compile(client, program, options))
    } else {
        (cache.compile(client, program, options), false)
    };
    let cached = cached?;
    span.record("outcome", cached.outcome.as_str());
    drop(span);
    if let Some(note) = &cached.note {
        crate::ui::log_line(&format!("note: {note}"));
    }
    if cached.outcome == CacheOutcome::Hit && tuning_lines_printed {
        crate::ui::log_line(CACHED_CPU_EXECUTABLE_NOTE);
    }
    Ok(Compiled {
        executable: cached.executable,
        cache: cached.outcome.as_str(),
        compile_ms: if cached.outcome == CacheOutcome::Hit { 0.0 } else { cached.compile.as_secs_f64() * 1e3 },
        load_ms: cached.load.as_secs_f64() * 1e3,
    })
}

/// Milliseconds since `since`.
pub(crate) fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

/// The options `pjrt run` and `pjrt compile` build from their flags and the module.
pub fn build_options(
    platform: &str,
    replicas: usize,
    partitions: usize,
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

/// What the XLA CPU plugin logs (error level, to fd 2, from its C++ logging) for each tuning
/// feature of the executable it loads that the host's feature list lacks: "Loading XLA:CPU AOT
/// result. Target machine feature +prefer-no-gather is not supported on the host machine ...
/// could lead to ... SIGILL" (0.106; the same for +prefer-no-scatter). It appears only where the
/// CPU model LLVM detects for the host carries those tuning preferences (not on an AMD EPYC Zen 3
/// without AVX-512, for one), hence watched for rather than assumed.
const TUNING_FEATURE_LINE: &[u8] = b"Target machine feature +prefer-no-";

/// Why those lines are benign on a cache hit: what they name are LLVM tuning preferences, not
/// instructions (the same host's feature list lacks them because it lists only instructions), and
/// the compile cache keys CPU executables by this host's CPU model and features.
const CACHED_CPU_EXECUTABLE_NOTE: &str =
    "note: the plugin's \"+prefer-no-gather/+prefer-no-scatter is not supported\" \
    lines are benign here: those are code-generation preferences, not instructions, and the compile cache only \
    loads executables compiled on this CPU model with these CPU features";

/// `error` with the program's file named where the plugin's compiler wrote `-` (it parses the
/// program from memory, so its diagnostics read `-:3:10: error: ...`).
pub fn name_program_file(error: Error, file: &Path) -> Error {
    let named = |e: pjrt_client::Error| match e {
        pjrt_client::Error::Pjrt { function, code, message, payloads } => {
            let message = replace_stdin_locations(&message, &file.display().to_string());
            pjrt_client::Error::Pjrt { function, code, message, payloads }
        }
        other => other,
    };
    match error {
        Error::Client(e) | Error::Formats(pjrt_formats::Error::Client(e)) => Error::Client(named(e)),
        other => other,
    }
}

/// Replaces each `-:` that starts a location (`-:LINE:COL`, at the start of a line or after a
/// space) with `file:`.
fn replace_stdin_locations(message: &str, file: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    let mut at_boundary = true;
    while let Some(c) = rest.chars().next() {
        let location = rest.strip_prefix("-:").filter(|r| r.starts_with(|d: char| d.is_ascii_digit()));
        match location {
            Some(after) if at_boundary => {
                out.push_str(file);
                out.push(':');
                rest = after;
                at_boundary = false;
            }
            _ => {
                out.push(c);
                rest = &rest[c.len_utf8()..];
                at_boundary = c.is_whitespace();
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compile_errors_name_the_program_file() {
        let message = "-:3:10: error: custom op 'stablehlo.bogus' is unknown\n<unknown>:0: error: x-:1:2 a -:not";
        assert_eq!(
            replace_stdin_locations(message, "model.mlir"),
            "model.mlir:3:10: error: custom op 'stablehlo.bogus' is unknown\n<unknown>:0: error: x-:1:2 a -:not"
        );
        let error = Error::Client(pjrt_client::Error::Pjrt {
            function: "PJRT_Client_Compile",
            code: pjrt_client::ErrorCode::InvalidArgument,
            message: "-:1:1: error: bad".into(),
            payloads: Vec::new(),
        });
        let named = name_program_file(error, Path::new("dir/m.mlir")).to_string();
        assert!(named.contains("dir/m.mlir:1:1: error: bad") && !named.contains("-:1:1"), "{named}");
    }
}
