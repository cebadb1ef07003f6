//! `--trace FILE.json` (a Chrome trace of the library's spans, with the plugin's profiler events
//! merged in) and `pjrt bench --plot FILE.svg`.

use std::collections::HashMap;
use std::path::Path;

use pjrt_formats::npy::NpyArray;
use serde_json::Value as Json;

use crate::common::{pjrt, stderr, temp_dir, PLUGINS};
use crate::fake_support::Fake;

fn mlp_inputs() -> Vec<String> {
    ["b1", "b2", "w1", "w2", "x", "y"].iter().map(|n| format!("examples/mlp/{n}.npy")).collect()
}

fn read_trace(path: &Path) -> Json {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// A complete event's start, end (µs) and name.
type Span = (f64, f64, String);

/// Checks the Trace Event Format's object form and returns the events: every event has
/// ph/ts/pid/tid/name, complete events a duration ≥ 0, and the complete events of one thread
/// nest (each one inside the previous still open, or after it).
fn checked_events(trace: &Json) -> Vec<Json> {
    assert_eq!(trace["displayTimeUnit"], "ns");
    let events = trace["traceEvents"].as_array().expect("traceEvents is an array").clone();
    assert!(!events.is_empty());
    let mut threads: HashMap<(u64, u64), Vec<Span>> = HashMap::new();
    for e in &events {
        for key in ["ph", "ts", "pid", "tid", "name"] {
            assert!(!e[key].is_null(), "an event without `{key}`: {e}");
        }
        assert!(e["ts"].as_f64().is_some() && e["pid"].as_u64().is_some(), "{e}");
        match e["ph"].as_str().unwrap() {
            "X" => {
                let dur = e["dur"].as_f64().unwrap_or_else(|| panic!("an X event without dur: {e}"));
                assert!(dur >= 0.0, "{e}");
                let ts = e["ts"].as_f64().unwrap();
                let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap_or(u64::MAX));
                threads.entry(key).or_default().push((ts, ts + dur, e["name"].as_str().unwrap().to_owned()));
            }
            "M" => assert!(e["args"]["name"].is_string(), "{e}"),
            "i" => {}
            other => panic!("unexpected phase {other}: {e}"),
        }
    }
    // Rounding to the nanosecond can move an end by 1 ns.
    const SLACK: f64 = 0.002;
    for (thread, mut spans) in threads {
        spans.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
        let mut open: Vec<Span> = Vec::new();
        for span in spans {
            while open.last().is_some_and(|top| top.1 <= span.0 + SLACK) {
                open.pop();
            }
            if let Some(top) = open.last() {
                assert!(span.1 <= top.1 + SLACK, "{thread:?}: {} overlaps {} without nesting in it", span.2, top.2);
            }
            open.push(span);
        }
    }
    events
}

fn complete<'a>(events: &'a [Json], name: &str) -> Vec<&'a Json> {
    events.iter().filter(|e| e["ph"] == "X" && e["name"] == name).collect()
}

#[test]
fn run_writes_a_chrome_trace_of_every_step() {
    let dir = temp_dir("trace-run");
    for plugin in PLUGINS {
        let (out, trace) = (dir.join(format!("out-{plugin}")), dir.join(format!("{plugin}.json")));
        let mut args = vec!["run", "examples/mlp/train_step.mlir", "--plugin", plugin];
        let inputs = mlp_inputs();
        args.push("--input");
        args.extend(inputs.iter().map(String::as_str));
        args.extend(["-o", out.to_str().unwrap(), "--trace", trace.to_str().unwrap()]);
        let run = pjrt(&args);
        assert!(run.status.success(), "{plugin}: {}", stderr(&run));
        let doc = read_trace(&trace);
        let events = checked_events(&doc);
        for name in ["load_plugin", "create_client", "download"] {
            assert!(!complete(&events, name).is_empty(), "{plugin}: no `{name}` event");
        }
        // A fresh cache: the cache step, with the compile inside it.
        assert!(!complete(&events, "compile_cache_load").is_empty() && !complete(&events, "compile").is_empty());
        // Uploads: `upload`, with their size and device.
        let uploads = complete(&events, "upload");
        assert_eq!(uploads.len(), 6, "{plugin}: one upload per input");
        assert!(uploads.iter().all(|u| u["args"]["bytes"].as_u64().is_some_and(|b| b > 0)));
        assert!(uploads.iter().all(|u| !u["args"]["device"].is_null()), "{plugin}: an upload without its device");
        // The execute names its device(s).
        let executes = [complete(&events, "execute"), complete(&events, "execute_launch")].concat();
        assert!(!executes.is_empty(), "{plugin}: no execute event");
        assert!(
            executes.iter().all(|e| e["args"]["device"].as_str().is_some_and(|d| !d.is_empty())),
            "{plugin}: no execute names its device: {executes:?}"
        );
        let load = complete(&events, "load_plugin")[0]["ts"].as_f64().unwrap();
        assert!(executes.iter().all(|e| e["ts"].as_f64().unwrap() > load), "{plugin}: execute before load");
        assert!(events.iter().any(|e| e["ph"] == "M" && e["name"] == "process_name"));
        assert!(events.iter().any(|e| e["ph"] == "M" && e["name"] == "thread_name"));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_failed_run_still_writes_its_trace() {
    let dir = temp_dir("trace-failed");
    let trace = dir.join("t.json");
    // One input short: refused after the plugin is loaded and the program compiled.
    let run = pjrt(&[
        "run",
        "examples/mlp/train_step.mlir",
        "--input",
        "examples/mlp/b1.npy",
        "-o",
        dir.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert!(!run.status.success());
    let events = checked_events(&read_trace(&trace));
    assert!(!complete(&events, "load_plugin").is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_plugins_profiler_events_are_merged_on_the_trace_clock() {
    let fake = Fake::new("profiler");
    let dir = temp_dir("trace-profiler");
    let program = dir.join("add.mlir");
    std::fs::write(
        &program,
        "func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {\n\
         %0 = stablehlo.add %a, %b : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n",
    )
    .unwrap();
    let (a, b) = (dir.join("a.npy"), dir.join("b.npy"));
    NpyArray::from_elements(vec![4], &[1f32, 2., 3., 4.]).unwrap().write(&a).unwrap();
    NpyArray::from_elements(vec![4], &[10f32, 20., 30., 40.]).unwrap().write(&b).unwrap();
    let trace = dir.join("t.json");
    let run = pjrt(&[
        "run",
        program.to_str().unwrap(),
        "--plugin",
        fake.path.to_str().unwrap(),
        "--input",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--no-cache",
        "-o",
        dir.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    assert_eq!(NpyArray::read(&dir.join("out0.npy")).unwrap().to_vec::<f32>().unwrap(), [11., 22., 33., 44.]);
    let events = checked_events(&read_trace(&trace));
    let fake_events = complete(&events, "fake_execute");
    assert_eq!(fake_events.len(), 1, "one execution, one profiler event");
    let event = fake_events[0];
    assert_eq!(event["args"]["execution"], "0");
    assert_eq!(event["dur"].as_f64(), Some(1.0), "1 µs, as the fake recorded it");
    let pid = event["pid"].as_u64().unwrap();
    assert_ne!(pid, 1, "the plugin's events are a process of their own");
    assert!(events.iter().any(|e| e["ph"] == "M"
        && e["pid"].as_u64() == Some(pid)
        && e["args"]["name"] == "plugin profiler: /device:FAKE:0"));
    // The fake noted the execution's wall-clock time inside the plugin's execute call: on the
    // trace's clock it falls inside our execute span (with 2 ms for the two clocks' reading).
    let launch = [complete(&events, "execute"), complete(&events, "execute_launch")].concat();
    let outer = launch.iter().max_by(|x, y| x["dur"].as_f64().unwrap().total_cmp(&y["dur"].as_f64().unwrap()));
    let outer = outer.expect("an execute span");
    let (start, end) = (outer["ts"].as_f64().unwrap(), outer["ts"].as_f64().unwrap() + outer["dur"].as_f64().unwrap());
    let at = event["ts"].as_f64().unwrap();
    assert!(at >= start - 2000.0 && at <= end + 2000.0, "profiler event at {at} µs, execute span {start}..{end} µs");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bench_draws_its_latencies_and_traces() {
    let dir = temp_dir("trace-bench");
    let (svg, trace) = (dir.join("dispatch.svg"), dir.join("bench.json"));
    let bench = pjrt(&[
        "bench",
        "--plugin",
        "cpu",
        "dispatch",
        "--iters",
        "300",
        "--rounds",
        "1",
        "--plot",
        svg.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert!(bench.status.success(), "{}", stderr(&bench));
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg") && text.contains("safe / raw (medians)"), "{text}");
    assert_eq!(text.matches("<path ").count(), 2, "safe and raw curves");
    assert!(text.contains("(300 calls)"));
    let events = checked_events(&read_trace(&trace));
    assert!(complete(&events, "execute").len() >= 300, "every safe execute is in the trace");
    // --plot needs per-call samples.
    let threads = pjrt(&["bench", "threads", "--plot", svg.to_str().unwrap()]);
    assert!(!threads.status.success() && stderr(&threads).contains("--plot"));
    std::fs::remove_dir_all(&dir).unwrap();
}
