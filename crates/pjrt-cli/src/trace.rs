//! `--trace FILE.json`: the library's `tracing` spans (plugin load, client creation, compile or
//! compile-cache load, each transfer, each execute) written as a Chrome trace event file, which
//! opens in Perfetto (ui.perfetto.dev) and `chrome://tracing`; with the plugin's own profiler
//! data merged in where the plugin has the Profiler extension (see `docs/tracing.md`).
//!
//! The format is the JSON object form of the Trace Event Format: `{"traceEvents": [...],
//! "displayTimeUnit": "ns"}`. Every closed span is a complete event (`"ph": "X"`, `ts` and `dur`
//! in microseconds since the trace started, `pid`, `tid`, `name`, its fields in `args`); every
//! `tracing` event an instant event (`"ph": "i"`); `"ph": "M"` metadata events name the process
//! and each thread. The plugin's profiler events go into a process of their own per XPlane, a
//! thread per XLine, placed on the same clock through the wall-clock time noted when the trace
//! started (XPlane times are nanoseconds since the Unix epoch).
//!
//! Nothing here runs unless `--trace` is given: the layer is installed only then (see
//! [`crate::ui::init`]), so without it every span stays a single branch.
//!
//! ```
//! use tracing_subscriber::layer::SubscriberExt as _;
//! let path = std::env::temp_dir().join(format!("trace-doc-{}.json", std::process::id()));
//! let (trace, layer) = pjrt_cli::trace::Trace::start(&path);
//! tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), || {
//!     let _span = tracing::info_span!("compile", bytes = 12).entered();
//! });
//! trace.finish()?;
//! let written: serde_json::Value = serde_json::from_slice(&std::fs::read(&path)?)?;
//! assert!(written["traceEvents"].as_array().unwrap().iter().any(|e| e["name"] == "compile" && e["ph"] == "X"));
//! # std::fs::remove_file(&path)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use pjrt_client::extensions::profiler::{ProfiledEvent, ProfilerSession};
use pjrt_client::Plugin;
use serde_json::{json, Map, Value as Json};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::Subscriber;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// The `pid` of this process's own events (the plugin's profiler planes get 2, 3, ...).
const OWN_PID: u64 = 1;

/// A trace being recorded: the [`ChromeLayer`] fills it, [`Trace::finish`] writes it.
pub struct Trace {
    shared: Arc<Shared>,
    path: PathBuf,
}

/// The `tracing` layer that records spans into a [`Trace`].
pub struct ChromeLayer(Arc<Shared>);

/// What the layer and the trace share.
struct Shared {
    started: Instant,
    /// Wall-clock time at `started`, in ns since the Unix epoch: the plugin's profiler times
    /// (epoch based) are placed on the trace's clock through it.
    started_unix_ns: i128,
    events: Mutex<Vec<Recorded>>,
    /// Thread names by our small thread id.
    threads: Mutex<HashMap<u64, String>>,
    /// Profiler sessions started on the plugins this process loaded, collected at the end.
    profilers: Mutex<Vec<ProfilerSession>>,
    /// Plugins already asked for a profiler (by path), so each is profiled once.
    profiled: Mutex<Vec<PathBuf>>,
}

/// One recorded span or event, kept compact until the file is written.
struct Recorded {
    name: &'static str,
    /// Nanoseconds since `started`.
    start_ns: u64,
    /// `None` for an instant event.
    duration_ns: Option<u64>,
    tid: u64,
    args: Map<String, Json>,
}

/// What the layer keeps in an open span (in the registry's extensions).
struct OpenSpan {
    start: Instant,
    tid: u64,
    args: Map<String, Json>,
}

/// The trace this process is recording, if `--trace` was given (for [`profile_plugin`]).
static ACTIVE: OnceLock<Arc<Shared>> = OnceLock::new();

impl Trace {
    /// Starts recording a trace that [`Trace::finish`] writes to `path`; returns the layer to
    /// install. Also makes it the process's active trace (for [`profile_plugin`]).
    pub fn start(path: &Path) -> (Trace, ChromeLayer) {
        let (started, started_unix_ns) = clock_pair();
        let shared = Arc::new(Shared {
            started,
            started_unix_ns,
            events: Mutex::new(Vec::new()),
            threads: Mutex::new(HashMap::new()),
            profilers: Mutex::new(Vec::new()),
            profiled: Mutex::new(Vec::new()),
        });
        let _ = ACTIVE.set(Arc::clone(&shared));
        (Trace { shared: Arc::clone(&shared), path: path.to_owned() }, ChromeLayer(shared))
    }

    /// Collects the plugins' profiler data and writes the file (atomically: the file appears
    /// whole or not at all). Called at exit, after the command succeeded or failed. Profiler data
    /// that cannot be collected is reported as a note and in the file's `metadata.pjrt-notes`.
    pub fn finish(self) -> std::io::Result<()> {
        let mut notes = Vec::new();
        let sessions = std::mem::take(&mut *lock(&self.shared.profilers));
        let mut plugin_events = Vec::new();
        for session in sessions {
            let path = session.plugin().path().to_owned();
            match session.collect().map(|space| space.events()) {
                Ok(events) => plugin_events.extend(events),
                Err(e) => notes.push(format!("the profiler data of {} could not be read: {e}", path.display())),
            }
        }
        for note in &notes {
            note_line(note);
        }
        let document = self.shared.document(&plugin_events, &notes);
        pjrt_formats::atomic_file::write_with(&self.path, |w| {
            serde_json::to_writer(&mut *w, &document).map_err(std::io::Error::other)?;
            w.write_all(b"\n")
        })
    }
}

/// Starts the plugin's profiler when a trace is being recorded and the plugin has the Profiler
/// extension (once per plugin); its data is merged into the trace at the end. Without `--trace`
/// this does nothing. A profiler that fails to start is reported as a note, not an error: the
/// trace still has the library's spans.
pub fn profile_plugin(plugin: &Plugin) {
    let Some(shared) = ACTIVE.get() else { return };
    {
        let mut profiled = lock(&shared.profiled);
        if profiled.iter().any(|p| p == plugin.path()) {
            return;
        }
        profiled.push(plugin.path().to_owned());
    }
    if plugin.profiler_extension().is_none() {
        return;
    }
    match ProfilerSession::start(plugin) {
        Ok(session) => lock(&shared.profilers).push(session),
        Err(e) => {
            note_line(&format!("the plugin's profiler did not start ({e}); the trace has the library's spans only"))
        }
    }
}

/// A monotonic instant and the wall-clock time (ns since the Unix epoch) at that instant: the
/// wall clock read on both sides of the instant, the midpoint kept, retried (a few times) when a
/// preemption made the two readings far apart.
fn clock_pair() -> (Instant, i128) {
    let unix_ns = || SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as i128).unwrap_or(0);
    let mut best = None;
    for _ in 0..5 {
        let before = unix_ns();
        let instant = Instant::now();
        let after = unix_ns();
        let spread = after - before;
        if best.as_ref().is_none_or(|(_, _, s)| spread < *s) {
            best = Some((instant, before + spread / 2, spread));
        }
        if spread < 20_000 {
            break;
        }
    }
    let (instant, unix, _) = best.expect("at least one reading");
    (instant, unix)
}

/// A note on stderr (this module sits below `ui`, which imports it).
fn note_line(note: &str) {
    // Not `eprintln!`, which panics when stderr cannot be written.
    let _ = writeln!(std::io::stderr().lock(), "note: --trace: {note}");
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// This thread's small id in the trace (1, 2, ... in order of first use), its name noted once.
fn thread_id(shared: &Shared) -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local!(static TID: Cell<u64> = const { Cell::new(0) });
    TID.with(|tid| {
        if tid.get() == 0 {
            let id = NEXT.fetch_add(1, Ordering::Relaxed);
            tid.set(id);
            let thread = std::thread::current();
            let name = thread.name().map_or_else(|| format!("thread {id}"), str::to_owned);
            lock(&shared.threads).insert(id, name);
        }
        tid.get()
    })
}

/// Nanoseconds as the format's microseconds, kept to the nanosecond (3 decimals).
fn us(ns: f64) -> Json {
    json!(ns.round() / 1e3)
}

impl Shared {
    fn since_start(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.started).as_nanos() as u64
    }

    /// The whole trace document: metadata first, then every event in time order.
    fn document(&self, plugin_events: &[ProfiledEvent], notes: &[String]) -> Json {
        let mut out = vec![json!({"ph": "M", "name": "process_name", "pid": OWN_PID, "tid": 0, "ts": 0,
                                  "args": {"name": format!("pjrt (pid {})", std::process::id())}})];
        let mut threads: Vec<(u64, String)> = lock(&self.threads).iter().map(|(k, v)| (*k, v.clone())).collect();
        threads.sort();
        for (tid, name) in threads {
            out.push(json!({"ph": "M", "name": "thread_name", "pid": OWN_PID, "tid": tid, "ts": 0,
                            "args": {"name": name}}));
        }
        let mut events = std::mem::take(&mut *lock(&self.events));
        events.sort_by_key(|e| (e.start_ns, std::cmp::Reverse(e.duration_ns)));
        for e in events {
            let mut event = json!({"name": e.name, "pid": OWN_PID, "tid": e.tid, "ts": us(e.start_ns as f64),
                                   "args": Json::Object(e.args)});
            match e.duration_ns {
                Some(d) => {
                    event["ph"] = json!("X");
                    event["dur"] = us(d as f64);
                }
                None => {
                    event["ph"] = json!("i");
                    event["s"] = json!("t");
                }
            }
            out.push(event);
        }
        out.extend(self.plugin_events(plugin_events));
        json!({"traceEvents": out, "displayTimeUnit": "ns", "metadata": {"pjrt-notes": notes}})
    }

    /// The plugin's profiler events: a process per XPlane, a thread per XLine, on our clock.
    fn plugin_events(&self, events: &[ProfiledEvent]) -> Vec<Json> {
        let mut pids: HashMap<&str, u64> = HashMap::new();
        let mut tids: HashSet<(u64, i64)> = HashSet::new();
        let mut out = Vec::new();
        for e in events {
            let next_pid = OWN_PID + 1 + pids.len() as u64;
            let pid = *pids.entry(e.plane.as_str()).or_insert_with(|| {
                out.push(json!({"ph": "M", "name": "process_name", "pid": next_pid, "tid": 0, "ts": 0,
                                "args": {"name": format!("plugin profiler: {}", e.plane)}}));
                next_pid
            });
            if tids.insert((pid, e.line_id)) {
                out.push(json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": e.line_id, "ts": 0,
                                "args": {"name": e.line}}));
            }
            let start = (e.start_unix_ns - self.started_unix_ns) as f64;
            let args: Map<String, Json> = e.stats.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
            out.push(json!({"ph": "X", "name": e.name, "pid": pid, "tid": e.line_id, "ts": us(start),
                            "dur": us(e.duration_ns as f64), "args": args}));
        }
        out
    }
}

/// Collects span and event fields as JSON values.
struct JsonFields<'a>(&'a mut Map<String, Json>);

impl Visit for JsonFields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), json!(format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), json!(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_owned(), json!(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), json!(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().to_owned(), json!(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().to_owned(), json!(value));
    }
}

impl<S> Layer<S> for ChromeLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut args = Map::new();
        attrs.record(&mut JsonFields(&mut args));
        let tid = thread_id(&self.0);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(OpenSpan { start: Instant::now(), tid, args });
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id) {
            if let Some(open) = span.extensions_mut().get_mut::<OpenSpan>() {
                values.record(&mut JsonFields(&mut open.args));
            }
        }
    }

    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        let mut args = Map::new();
        event.record(&mut JsonFields(&mut args));
        let recorded = Recorded {
            name: event.metadata().name(),
            start_ns: self.0.since_start(Instant::now()),
            duration_ns: None,
            tid: thread_id(&self.0),
            args,
        };
        lock(&self.0.events).push(recorded);
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let ended = Instant::now();
        let Some(span) = ctx.span(&id) else { return };
        // Bound first: the extensions guard must be released before `span` is dropped.
        let open = span.extensions_mut().remove::<OpenSpan>();
        if let Some(open) = open {
            let recorded = Recorded {
                name: span.name(),
                start_ns: self.0.since_start(open.start),
                duration_ns: Some(ended.saturating_duration_since(open.start).as_nanos() as u64),
                tid: open.tid,
                args: open.args,
            };
            lock(&self.0.events).push(recorded);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::layer::SubscriberExt as _;

    #[test]
    fn spans_become_nested_complete_events_with_their_fields() {
        let dir = std::env::temp_dir().join(format!("pjrt-trace-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.json");
        let (trace, layer) = Trace::start(&path);
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, || {
            let _outer = tracing::info_span!("compile", bytes = 12u64).entered();
            let _inner = tracing::trace_span!("inner", device = 0i64).entered();
        });
        trace.finish().unwrap();
        let doc: Json = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let events = doc["traceEvents"].as_array().unwrap();
        let find = |name: &str| events.iter().find(|e| e["name"] == name && e["ph"] == "X").unwrap().clone();
        let (outer, inner) = (find("compile"), find("inner"));
        assert_eq!(outer["args"]["bytes"], 12);
        assert_eq!(inner["args"]["device"], 0);
        let end = |e: &Json| e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap();
        assert!(inner["ts"].as_f64() >= outer["ts"].as_f64() && end(&inner) <= end(&outer) + 1e-3);
        assert!(events.iter().any(|e| e["ph"] == "M" && e["name"] == "thread_name"));
        assert_eq!(doc["displayTimeUnit"], "ns");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn plugin_events_land_on_the_trace_clock() {
        let shared = Shared {
            started: Instant::now(),
            started_unix_ns: 1_000_000_000,
            events: Mutex::new(Vec::new()),
            threads: Mutex::new(HashMap::new()),
            profilers: Mutex::new(Vec::new()),
            profiled: Mutex::new(Vec::new()),
        };
        let event = ProfiledEvent {
            plane: "/device:FAKE:0".into(),
            line: "stream 7".into(),
            line_id: 7,
            name: "kernel".into(),
            start_unix_ns: 1_000_250_000,
            duration_ns: 2_000,
            stats: vec![("bytes".into(), "64".into())],
        };
        let out = shared.plugin_events(&[event]);
        let x = out.iter().find(|e| e["ph"] == "X").unwrap();
        assert_eq!((x["ts"].as_f64(), x["dur"].as_f64(), x["pid"].as_u64()), (Some(250.0), Some(2.0), Some(2)));
        assert_eq!(x["args"]["bytes"], "64");
        assert!(out.iter().any(|e| e["args"]["name"] == "plugin profiler: /device:FAKE:0"));
    }
}
