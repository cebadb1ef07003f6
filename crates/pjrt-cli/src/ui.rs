//! How `pjrt` talks to the person at the terminal: how much the plugin may log, the library's
//! spans printed with their durations (`-v`), a progress line for slow steps, and errors: the
//! invalid-argument errors the commands make (`invalid`) and how failures are reported, with hints.
//!
//! Verbosity (`-v` is repeatable):
//! - 0 (default): the plugin's INFO chatter is hidden (its warnings and errors still show); a
//!   step that takes over a second (compile, plugin download, client creation) gets a progress
//!   line, only when stderr is a terminal.
//! - 1 (`-v`): the plugin's INFO logs, and one line per library span (load, client creation,
//!   compile, transfers, execute) with its duration. Past [`SHOWN_PER_SPAN`] lines a span name is
//!   only tallied; the tally is printed at exit.
//! - 2 (`-vv`): also the plugin's VLOG(1) output (XLA's compiler passes: thousands of lines), the
//!   finer spans, and every span line.
//!
//! Hiding the chatter: the XLA CPU plugins (API 0.106 and 0.115 alike) log through TSL/absl,
//! which honour `TF_CPP_MIN_LOG_LEVEL` (0 INFO, 1 WARNING, 2 ERROR, 3 FATAL) and
//! `TF_CPP_MAX_VLOG_LEVEL`, read when the plugin first logs. `ABSL_MIN_LOG_LEVEL` and
//! `GLOG_minloglevel` have no effect on them. So [`init`] sets these variables, before any plugin
//! is loaded and while the process has a single thread, unless the user set them already (their
//! value wins).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use pjrt_client::Error as ClientError;
use pjrt_formats::npy::NpyError;
use pjrt_formats::Error;
use pjrt_plugins::Error as PluginsError;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::{Context, SubscriberExt as _};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

use crate::error::Error as CliError;
use crate::trace::Trace;

/// At `-v`, how many lines each span name gets before it is only tallied.
pub const SHOWN_PER_SPAN: usize = 20;

/// A step shows a progress line once it has run this long.
const PROGRESS_AFTER: Duration = Duration::from_secs(1);

/// What [`init`] set up; dropping it prints the tally of spans not shown one by one and writes
/// the trace (`--trace`), on success and on error alike.
pub struct Session {
    printer: Option<Arc<Printer>>,
    trace: Option<Trace>,
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(printer) = &self.printer {
            printer.print_tally();
        }
        if let Some(trace) = self.trace.take() {
            if let Err(e) = trace.finish() {
                log_line(&format!("error: --trace: the trace file could not be written: {e}"));
            }
        }
    }
}

/// Sets the plugin's log level from `verbosity` and installs the span printer, and with `trace`
/// (`--trace FILE.json`) the trace recorder. Call once, first thing, before any plugin is loaded.
pub fn init(verbosity: u8, trace: Option<&Path>) -> Session {
    quiet_plugin_logs(verbosity);
    let progress = verbosity == 0 && std::io::stderr().is_terminal();
    if verbosity == 0 && !progress && trace.is_none() {
        // Nothing to print, draw or record: no subscriber at all, so every span stays a single
        // branch.
        return Session { printer: None, trace: None };
    }
    let printer = (verbosity > 0 || progress).then(|| Arc::new(Printer::new(verbosity, progress)));
    let (trace, chrome) = trace.map(Trace::start).unzip();
    // Each layer filters for itself: the printer's level does not limit what the trace records.
    let printing = printer.as_ref().map(|p| {
        let max_level = p.max_level;
        let quiet = p.verbosity == 0;
        SpanPrinter(Arc::clone(p)).with_filter(filter_fn(move |metadata: &Metadata<'_>| {
            // Quiet mode subscribes only to draw progress for the (INFO) spans of slow steps.
            metadata.level() <= &max_level && (!quiet || metadata.is_span())
        }))
    });
    let subscriber = tracing_subscriber::registry().with(printing).with(chrome);
    let installed = tracing::subscriber::set_global_default(subscriber).is_ok();
    Session { printer: printer.filter(|_| installed), trace: trace.filter(|_| installed) }
}

/// Sets `TF_CPP_MIN_LOG_LEVEL` / `TF_CPP_MAX_VLOG_LEVEL` for the plugin unless already set.
fn quiet_plugin_logs(verbosity: u8) {
    let set_default = |name: &str, value: &str| {
        if std::env::var_os(name).is_none() {
            // Called at startup, before any thread exists or any plugin reads its environment.
            std::env::set_var(name, value);
        }
    };
    match verbosity {
        0 => set_default("TF_CPP_MIN_LOG_LEVEL", "1"),
        1 => {}
        _ => set_default("TF_CPP_MAX_VLOG_LEVEL", "1"),
    }
}

/// Prints one line of our own on stderr, first clearing the progress line if one is drawn.
pub fn log_line(line: &str) {
    if let Some(progress) = PROGRESS.get() {
        progress.clear();
    }
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// A usage error: what most mistakes on the command line are (arguments that do not fit
/// together, or do not fit the program or the files they name).
pub(crate) fn invalid(message: impl Into<String>) -> CliError {
    CliError::Usage(message.into())
}

/// Prints `error` on stderr the way `pjrt` reports failures: the message, its causes, then a
/// hint line with the next step when one is known.
pub fn report_error(error: &CliError) {
    let mut text = format!("error: {error}\n");
    let shown = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(s) = source {
        let cause = s.to_string();
        if !shown.contains(&cause) {
            let _ = writeln!(text, "  caused by: {cause}");
        }
        source = s.source();
    }
    if let Some(hint) = hint(error) {
        let _ = writeln!(text, "  hint: {hint}");
    }
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// The next step for errors whose message does not already say it.
pub fn hint(error: &CliError) -> Option<String> {
    let message = error.to_string();
    let io_hint = |source: &std::io::Error| match source.kind() {
        std::io::ErrorKind::NotFound => Some("check the path (relative paths start in the current directory)".into()),
        std::io::ErrorKind::PermissionDenied => Some("check the file's permissions".into()),
        _ => None,
    };
    if let Some(hint) = error.invalid_argument().and_then(input_hint) {
        return Some(hint);
    }
    match error {
        CliError::Formats(Error::Npy(NpyError::Io { source, .. })) => return io_hint(source),
        CliError::Formats(Error::Npy(_)) => {
            return Some(
                "inputs must be NumPy .npy files (numpy.save); check that the file is one and is complete".into(),
            )
        }
        CliError::CapiInstall(pjrt::install::InstallError::MissingLibrary { .. }) => {
            return Some(
                "`pjrt capi install` copies the libraries from its own folder (target/debug or target/release): \
                 build them there with `cargo build -p pjrt-capi` (`--release` for target/release), or pass \
                 --lib-dir DIR"
                    .into(),
            )
        }
        _ => {}
    }
    let client = error.client()?;
    match client {
        ClientError::Io { source, .. } | ClientError::Plugins(PluginsError::Io { source, .. }) => io_hint(source),
        ClientError::Load { path, .. } if crate::runtime_hint::missing_runtime(path, &message).is_some() => {
            crate::runtime_hint::missing_runtime(path, &message)
        }
        ClientError::Load { .. } | ClientError::Plugins(PluginsError::NotFound { .. })
            if !message.contains("pjrt plugin install") =>
        {
            Some(
                "`pjrt plugin list` shows the plugins found; `pjrt plugin install cpu` installs the CPU plugin; \
                 --plugin PATH (or PJRT_PLUGIN) loads another"
                    .into(),
            )
        }
        ClientError::Plugins(PluginsError::Install { .. }) => {
            Some("or download the plugin yourself and pass its library with --plugin PATH".into())
        }
        ClientError::Unsupported { .. } => Some(
            "`pjrt conform PLUGIN` lists what a plugin supports; `pjrt plugin install cpu` gets the newest known CPU \
             plugin (API 0.115)"
                .into(),
        ),
        _ => None,
    }
}

/// The next step for an input that does not fit its parameter (a library's invalid argument,
/// or ours naming the `--input`).
fn input_hint(message: &str) -> Option<String> {
    if message.contains("but the parameter is") {
        Some(
            "save the input with the parameter's dtype, e.g. numpy.save(path, array.astype(numpy.float32)) for f32"
                .into(),
        )
    } else if message.contains("but the program's parameter") {
        Some("--input takes the arrays in parameter order; check the order and each array's shape".into())
    } else {
        None
    }
}

/// The `tracing` layer on `tracing_subscriber`'s registry (which keeps the spans, their ids,
/// parents and references): a thin handle, so the session keeps the printer for the tally.
struct SpanPrinter(Arc<Printer>);

/// Prints each closed span with its duration, and draws the progress line.
struct Printer {
    verbosity: u8,
    max_level: Level,
    started: Instant,
    tally: Mutex<HashMap<&'static str, Tally>>,
    progress: Option<Arc<Progress>>,
}

/// What the layer keeps in each open span (in the registry's extensions).
struct OpenSpan {
    fields: String,
    opened: Instant,
}

#[derive(Default)]
struct Tally {
    shown: usize,
    hidden: usize,
    hidden_total: Duration,
}

impl Printer {
    fn new(verbosity: u8, progress: bool) -> Printer {
        let max_level = match verbosity {
            0 => Level::INFO,
            1 => Level::DEBUG,
            _ => Level::TRACE,
        };
        Printer {
            verbosity,
            max_level,
            started: Instant::now(),
            tally: Mutex::new(HashMap::new()),
            progress: progress.then(|| Arc::clone(PROGRESS.get_or_init(Progress::start))),
        }
    }

    fn closed(&self, name: &'static str, span: OpenSpan) {
        if self.verbosity == 0 {
            return;
        }
        let took = span.opened.elapsed();
        if self.verbosity == 1 {
            let mut tally = self.tally.lock().unwrap_or_else(|e| e.into_inner());
            let entry = tally.entry(name).or_default();
            if entry.shown >= SHOWN_PER_SPAN {
                entry.hidden += 1;
                entry.hidden_total += took;
                return;
            }
            entry.shown += 1;
        }
        self.line(&format!("{name}{}: {}", span.fields, format_duration(took)));
    }

    fn line(&self, text: &str) {
        let at = self.started.elapsed().as_secs_f64();
        let _ = writeln!(std::io::stderr().lock(), "[{at:>8.3}s] {text}");
    }

    fn print_tally(&self) {
        let tally = self.tally.lock().unwrap_or_else(|e| e.into_inner());
        let mut names: Vec<_> = tally.iter().filter(|(_, t)| t.hidden > 0).collect();
        names.sort_by_key(|(name, _)| **name);
        for (name, t) in names {
            self.line(&format!(
                "{name}: {} more not shown, {} in all, {} each on average",
                t.hidden,
                format_duration(t.hidden_total),
                format_duration(t.hidden_total / t.hidden as u32)
            ));
        }
    }
}

fn format_duration(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1e3 {
        format!("{us:.1} µs")
    } else if us < 1e6 {
        format!("{:.1} ms", us / 1e3)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}

/// Collects a span's or event's fields as ` name=value ...` (`message` first, bare).
#[derive(Default)]
struct Fields(String);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, " {value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            let _ = write!(self.0, " {value}");
        } else {
            let _ = write!(self.0, " {}={value}", field.name());
        }
    }
}

impl<S> Layer<S> for SpanPrinter
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let printer = &self.0;
        let mut fields = Fields::default();
        if printer.verbosity > 0 {
            attrs.record(&mut fields);
        }
        if let Some(progress) = &printer.progress {
            progress.begin(id.into_u64(), attrs.metadata().name());
        }
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(OpenSpan { fields: fields.0, opened: Instant::now() });
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if self.0.verbosity == 0 {
            return;
        }
        let mut fields = Fields::default();
        values.record(&mut fields);
        if let Some(span) = ctx.span(id) {
            if let Some(open) = span.extensions_mut().get_mut::<OpenSpan>() {
                open.fields.push_str(&fields.0);
            }
        }
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        self.0.line(&format!("{} {}:{}", event.metadata().level(), event.metadata().target(), fields.0));
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let printer = &self.0;
        if let Some(progress) = &printer.progress {
            progress.end(id.into_u64());
        }
        let Some(span) = ctx.span(&id) else { return };
        // Bound first: the extensions guard must be released before `span` is dropped.
        let open = span.extensions_mut().remove::<OpenSpan>();
        if let Some(open) = open {
            printer.closed(span.name(), open);
        }
    }
}

/// The process's progress line, once started.
static PROGRESS: OnceLock<Arc<Progress>> = OnceLock::new();

/// The progress line: a thread that, while a step has been running for over
/// [`PROGRESS_AFTER`], redraws `<step>... 3.2 s` on stderr (a terminal) every 100 ms, and clears
/// it as soon as the step ends.
struct Progress {
    state: Mutex<ProgressState>,
    wake: Condvar,
}

#[derive(Default)]
struct ProgressState {
    /// Open steps, oldest first; the newest is shown.
    steps: Vec<(u64, &'static str, Instant)>,
    drawn: bool,
}

impl Progress {
    fn start() -> Arc<Progress> {
        let progress = Arc::new(Progress { state: Mutex::new(ProgressState::default()), wake: Condvar::new() });
        let drawer = Arc::clone(&progress);
        // If no thread can be started there is no progress line; everything else works without it.
        let _ = std::thread::Builder::new().name("pjrt-progress".into()).spawn(move || drawer.draw_loop());
        progress
    }

    fn begin(&self, id: u64, name: &'static str) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.steps.push((id, name, Instant::now()));
        self.wake.notify_one();
    }

    fn end(&self, id: u64) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).steps.retain(|(open, _, _)| *open != id);
        self.clear();
    }

    /// Erases the progress line if it is drawn (it is redrawn on the next tick).
    fn clear(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.drawn {
            // Cleared before the caller goes on to print anything.
            let _ = write!(std::io::stderr().lock(), "\r\x1b[K");
            state.drawn = false;
        }
    }

    fn draw_loop(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let wait = match state.steps.last() {
                None => Duration::from_secs(3600),
                Some((_, name, since)) => {
                    let running = since.elapsed();
                    if running >= PROGRESS_AFTER {
                        let _ = write!(
                            std::io::stderr().lock(),
                            "\r\x1b[K{}... {:.1} s",
                            progress_label(name),
                            running.as_secs_f64()
                        );
                        state.drawn = true;
                        Duration::from_millis(100)
                    } else {
                        PROGRESS_AFTER - running
                    }
                }
            };
            state = self.wake.wait_timeout(state, wait).unwrap_or_else(|e| e.into_inner()).0;
        }
    }
}

/// What the progress line calls a step.
fn progress_label(span: &str) -> &str {
    match span {
        "compile" => "compiling",
        "install_plugin" => "downloading the plugin from PyPI",
        "create_client" => "creating the client",
        "load_plugin" => "loading the plugin",
        "load_executable" => "loading the compiled program",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_well() {
        assert_eq!(format_duration(Duration::from_nanos(1500)), "1.5 µs");
        assert_eq!(format_duration(Duration::from_micros(2500)), "2.5 ms");
        assert_eq!(format_duration(Duration::from_millis(3250)), "3.25 s");
    }

    #[test]
    fn spans_past_the_limit_are_tallied_not_printed() {
        let printer = Arc::new(Printer::new(1, false));
        let max_level = printer.max_level;
        let subscriber = tracing_subscriber::registry()
            .with(SpanPrinter(Arc::clone(&printer)).with_filter(filter_fn(move |m| m.level() <= &max_level)));
        tracing::subscriber::with_default(subscriber, || {
            for _ in 0..SHOWN_PER_SPAN + 5 {
                let _span = tracing::debug_span!("step", bytes = 4).entered();
            }
            // Below the -v level: not even recorded.
            let _fine = tracing::trace_span!("fine").entered();
        });
        let tally = printer.tally.lock().unwrap();
        assert_eq!((tally["step"].shown, tally["step"].hidden), (SHOWN_PER_SPAN, 5));
        assert!(!tally.contains_key("fine"));
    }

    #[test]
    fn hints_name_the_next_step() {
        let missing =
            CliError::from(ClientError::Io { path: "x.npy".into(), source: std::io::ErrorKind::NotFound.into() });
        assert!(hint(&missing).unwrap().contains("path"));
        let unsupported = CliError::from(ClientError::Unsupported {
            function: "f",
            since_minor: 115,
            plugin_major: 0,
            plugin_minor: 106,
        });
        assert!(hint(&unsupported).unwrap().contains("pjrt plugin install cpu"));
        assert!(hint(&invalid("x")).is_none());
        let dtype = invalid("input 0 (i.npy): the array is int32 (s32), but the parameter is f32");
        assert!(hint(&dtype).unwrap().contains("astype"));
    }
}
