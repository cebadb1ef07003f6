//! Keeps pjrt-serve's floor plan true: every `crate::` and `super::` path in `src/` points down
//! the floors written here (the order `src/lib.rs` declares its modules in, and the pjrt-serve
//! drawing of `docs/architecture.md`), so no module imports one of a floor above it. A folder's
//! files stand on its floor: they may use each other and their parent, as the floor's own code.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The modules of `src/`, lowest first. A module may use the ones before it, never one after.
const FLOORS: &[&str] = &[
    "error",         // ServeError: the one error, a status for HTTP and gRPC alike
    "datatype",      // Datatype: the protocol's tensor datatypes and their PJRT element types
    "protocol",      // the tensors of a request and a response, and their HTTP bodies (JSON, binary data)
    "config",        // ModelConfig, shape limits, batching: what a model's config.json says
    "shapes",        // the input signatures a model has compiled and may compile
    "statistics",    // Triton's statistics per model version: what each execution and failure adds
    "model",         // ServedModel: load, a request's inputs matched, run
    "tls",           // TlsConfig (feature `tls`)
    "options",       // ServerOptions
    "budget",        // the server's budget of request bytes in flight, bodies read within it
    "shared_memory", // system shared memory regions: registered, read from, written to
    "devices",       // the devices' execution slots
    "metrics",       // Prometheus metrics
    "state",         // Shared: the client, options, models and their queues, the limits
    "auth",          // the bearer token, HTTP and gRPC alike
    "compile",       // a request's new shapes compiled outside the device slots
    "batching",      // dynamic batching: a batcher per batched model
    "dispatch",      // a request from either front end: found, admitted, decoded, run
    "repository",    // loading, unloading and the index of models, model control, readiness
    "control",       // model control's parameters (a load's config override), from either front end
    "model_config",  // Triton's model configuration of a served model: its messages, as JSON
    "listen",        // the connections of a port: limits, timeouts, TLS, graceful shutdown
    "http",          // the HTTP/REST front end (axum)
    "grpc",          // the gRPC front end (tonic): messages, the wire reader, the service
    "server",        // Server: the face's one type, over all of the above
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `model/load.rs` is `["model", "load"]`; `model/mod.rs` is `["model"]`.
fn file_module(path: &Path) -> Vec<String> {
    let relative = path.strip_prefix(src()).unwrap().with_extension("");
    let mut parts: Vec<String> = relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The modules a file's code names after `crate::` and `super::` (each name of a
/// `crate::{a, b::C}` group), with their lines: comments, doc comments and the unit tests at the
/// end of a file (which may use anything) left out. `super::` in a folder's file stays on the
/// folder's floor; a type named right after `crate::` (or after `super::` in a top-level file)
/// is the crate root's.
fn imports(module: &[String], text: &str) -> Vec<(usize, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let tests =
        lines.windows(2).position(|w| w[0] == "#[cfg(test)]" && w[1].starts_with("mod tests")).unwrap_or(lines.len());
    let code: String = lines[..tests].iter().map(|l| format!("{}\n", l.split("//").next().unwrap())).collect();
    let ident =
        |s: &str| -> String { s.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect() };
    let module_of = |name: String| {
        if name.is_empty() || name.starts_with(char::is_uppercase) {
            "<root>".to_string()
        } else {
            name
        }
    };
    let mut found = Vec::new();
    for keyword in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(at) = code[from..].find(keyword).map(|a| a + from) {
            from = at + keyword.len();
            let before = code[..at].chars().last();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$' || c == ':') {
                continue; // `pjrt_client::`, `$crate::`, `super::super::`: not a path from here
            }
            let line = code[..at].matches('\n').count() + 1;
            if keyword == "super::" && module.len() > 1 {
                found.push((line, module[0].clone()));
                continue;
            }
            let rest = &code[from..];
            if let Some(group) = rest.strip_prefix('{') {
                // The group's top-level items, up to its closing brace.
                let (mut depth, mut item_start) = (0usize, 0usize);
                for (i, c) in group.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth > 0 => depth -= 1,
                        ',' | '}' if depth == 0 => {
                            let name = ident(&group[item_start..i]);
                            if !name.is_empty() {
                                found.push((line, module_of(name)));
                            }
                            if c == '}' {
                                break;
                            }
                            item_start = i + 1;
                        }
                        _ => {}
                    }
                }
            } else {
                found.push((line, module_of(ident(rest))));
            }
        }
    }
    found
}

fn floor_of(module: &str) -> Option<usize> {
    FLOORS.iter().position(|f| *f == module)
}

#[test]
fn every_module_has_a_floor_and_lib_declares_them_in_order() {
    let mut paths = Vec::new();
    rust_files(&src(), &mut paths);
    let tops: BTreeSet<String> = paths.iter().map(|p| file_module(p)).filter_map(|m| m.first().cloned()).collect();
    let missing: Vec<&String> = tops.iter().filter(|m| *m != "lib" && floor_of(m).is_none()).collect();
    assert!(missing.is_empty(), "modules outside the floors of tests/serve/floors.rs: {missing:?}");
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let declared: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod ").or_else(|| l.strip_prefix("mod ")))
        .map(|l| l.trim_end_matches(';'))
        .collect();
    assert_eq!(declared, FLOORS, "src/lib.rs declares its modules in the order of the floors");
    // lib.rs is the face: docs, module declarations and re-exports, no code of its own.
    let code: Vec<&str> = lib
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .filter(|l| !(l.starts_with("mod ") || l.starts_with("pub mod ") || l.starts_with("pub use ")))
        .filter(|l| *l != "#[cfg(feature = \"tls\")]")
        .collect();
    assert!(code.is_empty(), "src/lib.rs holds more than docs, modules and re-exports: {code:?}");
}

#[test]
fn imports_point_down_the_floors() {
    let mut paths = Vec::new();
    rust_files(&src(), &mut paths);
    let mut wrong = Vec::new();
    for path in &paths {
        let module = file_module(path);
        if module == ["lib"] {
            continue;
        }
        let text = std::fs::read_to_string(path).unwrap();
        let place = |line: usize| format!("src/{}:{line}", path.strip_prefix(src()).unwrap().display());
        let from = &module[0];
        for (line, target) in imports(&module, &text) {
            if target == "<root>" {
                wrong.push(format!("{}: {from} uses the crate root; name the module", place(line)));
                continue;
            }
            let (Some(a), Some(b)) = (floor_of(from), floor_of(&target)) else {
                wrong.push(format!("{}: {from} uses {target}, which is no floor", place(line)));
                continue;
            };
            if b > a {
                wrong.push(format!("{}: {from} ({a}) uses {target} ({b}), a floor above it", place(line)));
            }
        }
    }
    assert!(wrong.is_empty(), "imports running back up:\n{}", wrong.join("\n"));
}

#[test]
fn the_architecture_page_draws_the_same_floors() {
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/architecture.md");
    let page = std::fs::read_to_string(page).unwrap();
    let section = page.split("\n## pjrt-serve\n").nth(1).expect("docs/architecture.md has a \"## pjrt-serve\" section");
    let section = section.split("\n## ").next().unwrap();
    let drawing = section.split("```text\n").nth(1).and_then(|s| s.split("```").next()).expect("a text drawing");
    let drawn: Vec<&str> = drawing
        .lines()
        .filter(|l| !l.starts_with(' '))
        .filter_map(|l| l.split_whitespace().next())
        .map(|w| w.trim_end_matches('/'))
        .collect();
    assert_eq!(drawn, FLOORS, "docs/architecture.md's pjrt-serve section draws the floors of tests/serve/floors.rs");
}
