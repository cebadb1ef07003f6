//! Keeps the floor plan true: every `crate::` path in `src/` points down the layers written
//! here (the same order as `src/lib.rs` and the "Layers" section of `docs/architecture.md`), and no two files
//! import each other in a circle, other than the child objects below naming their parent type.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The modules of `src/`, lowest first. A module may use the ones before it, never one after.
const LAYERS: &[&str] = &[
    "error",           // Error, ErrorCode: only the raw ABI and pjrt-types below
    "fingerprint",     // FarmHash fingerprints XLA derives platform and memory-kind ids from
    "call",            // the checked call path, named values, the panic and release boundaries
    "host_array",      // HostArray
    "program",         // Program
    "compile_options", // CompileOptions and their wire format
    "plugin",          // loading and version negotiation (finding and installing: pjrt-plugins)
    "client",          // Client, devices, memories, stats, processes, the key-value store
    "event",           // Event, UserEvent
    "buffer",          // buffers, transfers, zero-copy, DMA, views, transfer manager, ndarray
    "dlpack",          // DLPack export and import of buffers
    "executable",      // compile, loaded and unloaded executables, execute, host callbacks
    "topology",        // topologies, device descriptions, compiling against them
    "sharding",        // host arrays split across devices
    "extensions",      // one file per PJRT extension
    "ffi",             // custom calls written in Rust: typed XLA FFI handlers, registered through the FFI extension
];

/// Files that may use their parent's file: a child object naming its parent type.
const CHILD_NAMES_PARENT: &[(&str, &str, &str)] = &[
    ("call::named_value", "call", "named values are read and written through the checked call"),
    ("client::builtins", "client", "a provider of built-in handlers prepares programs for a Client"),
    ("client::device", "client", "a Device and a Memory belong to a Client"),
    ("client::device_stats", "client", "memory stats are read through the Client's devices"),
    ("client::process", "client", "process state is told to a Client"),
    ("client::kv_store", "client", "the key-value callbacks are installed at Client creation"),
    ("client::gpu_options", "client", "the GPU options are setters on ClientOptions, checked by its validation"),
    ("event::user_event", "event", "a UserEvent is an Event the user completes"),
    ("topology::device_description", "topology", "a DeviceDescription belongs to a Topology"),
    ("topology::gpu_target", "topology", "a GPU target's topology is a Topology (Topology::for_gpu_target)"),
    ("extensions::custom_partitioner", "extensions", "an extension's methods are on its view type, ExtensionRef"),
    ("extensions::ffi", "extensions", "an extension's methods are on its view type, ExtensionRef"),
    ("extensions::layouts", "extensions", "an extension's methods are on its view type, ExtensionRef"),
    ("extensions::memory_descriptions", "extensions", "an extension's methods are on its view type, ExtensionRef"),
    ("extensions::phase_compile", "extensions", "an extension's methods are on its view type, ExtensionRef"),
    ("extensions::profiler", "extensions", "an extension's methods are on its view type, ExtensionRef"),
    ("extensions::shardings", "extensions", "an extension's methods are on its view type, ExtensionRef"),
    ("extensions::tpu_topology", "extensions", "an extension's methods are on its view type, ExtensionRef"),
    ("executable::execute_options", "executable", "options become the raw args of a LoadedExecutable's launch"),
    ("executable::metadata", "executable", "metadata queries are methods of LoadedExecutable"),
    ("executable::load", "executable", "loading with options makes a LoadedExecutable"),
    ("executable::unloaded", "executable", "an unloaded Executable shares LoadedExecutable's metadata"),
    ("buffer::aligned", "buffer", "aligned host memory becomes a Buffer"),
    ("buffer::bitcast", "buffer", "a bitcast is the same Buffer seen as another type or shape"),
    ("buffer::borrowed", "buffer", "borrowed host memory is uploaded into a Buffer"),
    ("buffer::checks", "buffer", "the checks take a Buffer and its Placement"),
    ("buffer::dma", "buffer", "DMA-mapped memory is uploaded into Buffers"),
    ("buffer::client_copy", "buffer", "a Buffer is copied to another client through the host"),
    ("buffer::donation", "buffer", "donation acts on a Buffer"),
    ("buffer::download", "buffer", "downloads read a Buffer into a HostTransfer"),
    ("buffer::external_reference", "buffer", "an external reference pins a Buffer's memory"),
    ("buffer::host_copy", "buffer", "host copies read a Buffer"),
    ("buffer::host_data", "buffer", "host data uploads make a Buffer"),
    ("buffer::ndarray", "buffer", "ndarray arrays become Buffers"),
    ("buffer::queries", "buffer", "queries act on a Buffer"),
    ("buffer::raw_copy", "buffer", "raw copies read a Buffer"),
    ("buffer::transfer_manager", "buffer", "a transfer manager fills Buffers"),
    ("buffer::upload", "buffer", "uploads make a Buffer where its UploadOptions place it"),
    ("buffer::views", "buffer", "views of memory are Buffers"),
    ("buffer::without_host_data", "buffer", "uninitialized, error and alias buffers are Buffers"),
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// `call/release.rs` is `call::release`; `call/mod.rs` is `call`.
fn file_module(path: &Path) -> String {
    let relative = path.strip_prefix(src()).unwrap().with_extension("");
    let mut parts: Vec<String> = relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts.join("::")
}

/// Every `.rs` file below `dir` (also used by `fault_injection`).
pub(crate) fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The `crate::a::b` paths in a file's code (comments, doc comments and the unit tests at the
/// end of the file, which may use anything, left out).
fn crate_paths(text: &str) -> Vec<(usize, Vec<String>)> {
    let mut paths = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let tests =
        lines.windows(2).position(|w| w[0] == "#[cfg(test)]" && w[1].starts_with("mod tests")).unwrap_or(lines.len());
    for (number, line) in lines[..tests].iter().enumerate() {
        let code = line.split("//").next().unwrap();
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let before = rest[..at].chars().last();
            rest = &rest[at + "crate::".len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
                continue; // `pjrt_client::`, `$crate::`: not this crate's path
            }
            let segments: Vec<String> = rest
                .split("::")
                .map_while(|s| {
                    let ident: String = s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                    (!ident.is_empty() && ident.len() == s.len()).then_some(ident)
                })
                .collect();
            // The last segment may end the path (`crate::a::B;`): take it too.
            let tail: String = rest
                .split("::")
                .nth(segments.len())
                .map(|s| s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect())
                .unwrap_or_default();
            let mut all = segments;
            if !tail.is_empty() {
                all.push(tail);
            }
            paths.push((number + 1, all));
        }
    }
    paths
}

struct Tree {
    /// Every file's module path.
    files: BTreeSet<String>,
    /// File -> the files it uses, with a line for the message.
    uses: BTreeMap<String, BTreeMap<String, String>>,
}

fn read_tree() -> Tree {
    let mut paths = Vec::new();
    rust_files(&src(), &mut paths);
    let files: BTreeSet<String> = paths.iter().map(|p| file_module(p)).collect();
    let mut uses: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for path in &paths {
        let from = file_module(path);
        let text = std::fs::read_to_string(path).unwrap();
        for (line, segments) in crate_paths(&text) {
            // The longest prefix of the path that is a file.
            let target = (1..=segments.len())
                .rev()
                .map(|n| segments[..n].join("::"))
                .find(|candidate| files.contains(candidate))
                .unwrap_or_else(|| format!("<root>::{}", segments.join("::")));
            if target != from {
                let place = format!("{}:{line}", path.strip_prefix(src()).unwrap().display());
                uses.entry(from.clone()).or_default().entry(target).or_insert(place);
            }
        }
    }
    Tree { files, uses }
}

fn layer_of(module: &str) -> Option<usize> {
    let top = module.split("::").next().unwrap();
    LAYERS.iter().position(|l| *l == top)
}

#[test]
fn every_module_has_a_layer() {
    let tree = read_tree();
    let missing: Vec<&String> =
        tree.files.iter().filter(|f| f.as_str() != "lib" && f.as_str() != "sys" && layer_of(f).is_none()).collect();
    assert!(missing.is_empty(), "files outside the layers written in tests/client/layers.rs: {missing:?}");
    // And lib.rs declares the modules in the same order.
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let declared: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod ").or_else(|| l.strip_prefix("mod ")))
        .map(|l| l.trim_end_matches(';'))
        .filter(|m| *m != "sys")
        .collect();
    assert_eq!(declared, LAYERS, "src/lib.rs declares its modules in the order of the layers");
}

#[test]
fn imports_point_down_the_layers() {
    let tree = read_tree();
    let mut wrong = Vec::new();
    for (from, targets) in &tree.uses {
        if from == "lib" {
            continue;
        }
        for (target, place) in targets {
            if target == "<root>::sys" || target.starts_with("<root>::sys::") {
                continue; // the raw ABI: the crate pjrt-client-sys, below every layer
            }
            if target.starts_with("<root>") {
                wrong.push(format!("{place}: {from} uses {target} through the crate root; name its module"));
                continue;
            }
            let (Some(a), Some(b)) = (layer_of(from), layer_of(target)) else { continue };
            if b > a {
                wrong.push(format!("{place}: {from} ({}) uses {target} ({}), a layer above it", LAYERS[a], LAYERS[b]));
            }
        }
    }
    assert!(wrong.is_empty(), "imports running back up:\n{}", wrong.join("\n"));
}

#[test]
fn no_file_imports_in_a_circle() {
    let tree = read_tree();
    let allowed: BTreeSet<(&str, &str)> = CHILD_NAMES_PARENT.iter().map(|(c, p, _)| (*c, *p)).collect();
    let mut wrong = Vec::new();
    // The list names real files only.
    for (child, parent, _) in CHILD_NAMES_PARENT {
        assert!(
            tree.files.contains(*child) && tree.files.contains(*parent),
            "CHILD_NAMES_PARENT: no file {child} or {parent}"
        );
    }
    // A child may use its parent's file only where written down above.
    for (from, targets) in &tree.uses {
        for (target, place) in targets {
            let is_parent = from.rsplit_once("::").is_some_and(|(parent, _)| parent == target);
            if is_parent && !allowed.contains(&(from.as_str(), target.as_str())) {
                wrong.push(format!("{place}: {from} uses its parent {target}; add it to CHILD_NAMES_PARENT with a reason, or move what it needs down"));
            }
        }
    }
    // Without those edges, the files form no circle.
    let edges: BTreeMap<&str, Vec<&str>> = tree
        .uses
        .iter()
        .map(|(from, targets)| {
            let to = targets
                .keys()
                .filter(|t| !allowed.contains(&(from.as_str(), t.as_str())) && tree.files.contains(*t))
                .map(String::as_str)
                .collect();
            (from.as_str(), to)
        })
        .collect();
    fn visit<'a>(
        node: &'a str,
        edges: &BTreeMap<&'a str, Vec<&'a str>>,
        state: &mut BTreeMap<&'a str, u8>,
        stack: &mut Vec<&'a str>,
        circles: &mut Vec<String>,
    ) {
        match state.get(node) {
            Some(2) => return,
            Some(1) => {
                let start = stack.iter().position(|n| *n == node).unwrap();
                circles.push(format!("{} -> {node}", stack[start..].join(" -> ")));
                return;
            }
            _ => {}
        }
        state.insert(node, 1);
        stack.push(node);
        for next in edges.get(node).into_iter().flatten() {
            visit(next, edges, state, stack, circles);
        }
        stack.pop();
        state.insert(node, 2);
    }
    let mut state = BTreeMap::new();
    let mut circles = Vec::new();
    for node in edges.keys() {
        visit(node, &edges, &mut state, &mut Vec::new(), &mut circles);
    }
    wrong.extend(circles.into_iter().map(|c| format!("circle: {c}")));
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_architecture_page_draws_the_same_layers() {
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/architecture.md");
    let page = std::fs::read_to_string(page).unwrap();
    let section = page.split("\n## Layers\n").nth(1).expect("docs/architecture.md has a \"## Layers\" section");
    let section = section.split("\n## ").next().unwrap();
    // The module drawing: one line per layer, the name first.
    let drawn: Vec<&str> = section
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(|w| w.trim_end_matches('/'))
        .filter(|w| LAYERS.contains(w))
        .collect();
    assert_eq!(
        drawn, LAYERS,
        "docs/architecture.md's Layers section draws the modules in the order of tests/client/layers.rs"
    );
}
