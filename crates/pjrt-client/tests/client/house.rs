//! Keeps the whole workspace's floor plan true, beyond pjrt-client's own layers (`layers.rs`):
//! - the crates stand on floors ([`FLOORS`], drawn in `docs/architecture.md`): a crate's
//!   dependencies (optional ones too, dev-dependencies aside) are on floors below its own, so no
//!   crate import runs back up; the core (pjrt-client) reaches neither LAPACK nor, by default, the
//!   installer, and pjrt-lapack's kernels know nothing of PJRT;
//! - no crate has an import circle: two sibling modules (`a` and `b` under one parent) never
//!   name each other, directly or around a loop, through `crate::` or `super::` paths;
//! - the docs name only what exists: every repository path a Markdown file or a module doc
//!   writes in backticks (`crates/...`, `docs/...`, `mod.rs`) is a file or folder of the
//!   repository, and every Rust path (`pjrt_client::Client::compile`) names items defined in
//!   that crate. `CHANGELOG.md` is history and may name what is gone.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::layers::rust_files;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// Every crate's `src` folder (`crates/*/src`; the examples are single files).
fn crate_sources() -> Vec<(String, PathBuf)> {
    let root = workspace();
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("src").is_dir())
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), p.join("src")))
        .collect();
    out.sort();
    out
}

/// The workspace's packages by floor, lowest first: each depends only on packages of floors
/// below its own (`docs/architecture.md` draws them in this order).
const FLOORS: &[&[&str]] = &[
    // No package of ours below: the vocabulary (element types, StableHLO versions), the raw ABI,
    // finding and installing plugins.
    &["pjrt-types", "pjrt-client-sys", "pjrt-plugins"],
    // Pure Rust on the vocabulary alone: the StableHLO IR.
    &["pjrt-stablehlo"],
    // The core.
    &["pjrt-client"],
    // On the core: LAPACK's handlers (its kernels need nothing), the builder, etcd, the test
    // plugin and the example handler library.
    &["pjrt-lapack", "pjrt-builder", "pjrt-etcd", "fake-plugin", "pjrt-ffi-example-handlers"],
    &["pjrt-formats"],
    // Models served over HTTP and gRPC; models run from C.
    &["pjrt-serve", "pjrt-capi"],
    &["pjrt-cli", "pjrt-examples"],
];

/// One package's manifest, as far as the floors need it.
struct Manifest {
    name: String,
    /// Dependencies (not dev-dependencies) on packages of the workspace: (name, optional).
    ours: Vec<(String, bool)>,
    /// Every dependency name, dev-dependencies too.
    all: Vec<String>,
    /// `[features]`: name -> what it turns on.
    features: BTreeMap<String, Vec<String>>,
}

/// Reads the few things [`Manifest`] holds from a `Cargo.toml` (one dependency per line, as the
/// workspace writes them).
fn manifest(path: &Path) -> Manifest {
    let text = std::fs::read_to_string(path).unwrap();
    let (mut name, mut section) = (String::new(), String::new());
    let (mut ours, mut all, mut features) = (Vec::new(), Vec::new(), BTreeMap::new());
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.trim_matches(['[', ']']).to_owned();
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        let key = key.trim();
        if line.starts_with('#') {
            continue;
        }
        if section == "package" && key == "name" {
            name = value.trim().trim_matches('"').to_owned();
        } else if section == "features" {
            let items = value.trim().trim_matches(['[', ']']).split(',');
            let items = items.map(|i| i.trim().trim_matches('"').to_owned()).filter(|i| !i.is_empty()).collect();
            features.insert(key.to_owned(), items);
        } else if section.ends_with("dependencies") {
            let dependency = key.split('.').next().unwrap().to_owned();
            if !section.ends_with("dev-dependencies")
                && (dependency.starts_with("pjrt-") || dependency == "fake-plugin")
            {
                ours.push((dependency.clone(), value.contains("optional = true")));
            }
            all.push(dependency);
        }
    }
    Manifest { name, ours, all, features }
}

/// Every package's manifest: `crates/*` and the examples.
fn manifests() -> Vec<Manifest> {
    let root = workspace();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path().join("Cargo.toml"))
        .filter(|p| p.is_file())
        .collect();
    paths.extend([root.join("examples/Cargo.toml"), root.join("examples/ffi-handlers/Cargo.toml")]);
    paths.iter().map(|p| manifest(p)).collect()
}

fn floor_of(package: &str) -> Option<usize> {
    FLOORS.iter().position(|floor| floor.contains(&package))
}

#[test]
fn every_crate_depends_only_on_floors_below_it() {
    let all = manifests();
    let mut wrong = Vec::new();
    for m in &all {
        let Some(floor) = floor_of(&m.name) else {
            wrong.push(format!("{} is on no floor of FLOORS (tests/client/house.rs)", m.name));
            continue;
        };
        for (dependency, _) in &m.ours {
            match floor_of(dependency) {
                Some(f) if f < floor => {}
                Some(f) => wrong.push(format!(
                    "{} (floor {floor}) depends on {dependency} (floor {f}): an import running back up",
                    m.name
                )),
                None => wrong.push(format!("{dependency}, a dependency of {}, is on no floor", m.name)),
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // The bottom: the vocabulary and the raw ABI depend on no package of ours, and the IR on the
    // vocabulary only (never on the client).
    let ours = |name: &str| -> Vec<String> {
        all.iter().find(|m| m.name == name).unwrap().ours.iter().map(|(d, _)| d.clone()).collect()
    };
    assert_eq!(ours("pjrt-types"), Vec::<String>::new());
    assert_eq!(ours("pjrt-client-sys"), Vec::<String>::new());
    assert_eq!(ours("pjrt-stablehlo"), ["pjrt-types"]);
}

#[test]
fn the_architecture_page_draws_the_floors_in_order() {
    let page = std::fs::read_to_string(workspace().join("docs/architecture.md")).unwrap();
    let section = page.split("\n## Layers\n").nth(1).expect("docs/architecture.md has a \"## Layers\" section");
    let drawing = section.split("```text\n").nth(1).unwrap().split("```").next().unwrap();
    // The crate drawing: one entry per package, its name first (the examples as `examples`),
    // under `floor N` headings.
    let drawn: Vec<&str> = drawing
        .lines()
        .filter(|l| !l.starts_with(' ') && !l.starts_with("floor "))
        .filter_map(|l| l.split_whitespace().next())
        .map(|w| if w == "examples" { "pjrt-examples" } else { w })
        .collect();
    let floors: Vec<usize> =
        drawn.iter().map(|c| floor_of(c).unwrap_or_else(|| panic!("{c} is on no floor"))).collect();
    assert!(floors.windows(2).all(|w| w[0] <= w[1]), "docs/architecture.md draws {drawn:?}: not in FLOORS order");
    let packages = FLOORS.iter().flat_map(|f| f.iter()).filter(|p| **p != "pjrt-ffi-example-handlers").count();
    assert_eq!(drawn.len(), packages, "docs/architecture.md draws every package: {drawn:?}");
}

/// The features `start` turns on, itself included, followed through the manifest's `[features]`.
fn enabled(m: &Manifest, start: &[&str]) -> BTreeSet<String> {
    let mut on: BTreeSet<String> = BTreeSet::new();
    let mut todo: Vec<String> = start.iter().map(|s| s.to_string()).collect();
    while let Some(feature) = todo.pop() {
        if on.insert(feature.clone()) {
            todo.extend(m.features.get(&feature).into_iter().flatten().cloned());
        }
    }
    on
}

#[test]
fn the_core_holds_neither_lapack_nor_by_default_the_installer() {
    let all = manifests();
    let core = all.iter().find(|m| m.name == "pjrt-client").unwrap();
    // pjrt-lapack sits above the core: the core never names it, not even for its tests.
    assert!(!core.all.iter().any(|d| d == "pjrt-lapack"), "pjrt-client depends on pjrt-lapack");
    // The installer (pjrt-plugins) only behind a feature, which its defaults leave off.
    assert_eq!(core.ours.iter().find(|(d, _)| d == "pjrt-plugins"), Some(&("pjrt-plugins".to_owned(), true)));
    let defaults = enabled(core, &["default"]);
    // `dep:x`, `x` and `x/feature` turn a dependency on; `x?/feature` only when it is on already.
    let reaches = |item: &String| {
        ["pjrt-plugins", "pjrt-lapack"]
            .iter()
            .any(|d| item == d || *item == format!("dep:{d}") || item.starts_with(&format!("{d}/")))
    };
    assert!(!defaults.iter().any(reaches), "pjrt-client's default features reach {defaults:?}");
    assert!(!defaults.contains("plugins"));
    // pjrt-lapack's kernels are numerics only: pjrt-client is its `client` feature's, optional,
    // and named only in its handlers.
    let lapack = all.iter().find(|m| m.name == "pjrt-lapack").unwrap();
    assert_eq!(lapack.ours, [("pjrt-client".to_owned(), true)]);
    assert!(enabled(lapack, &["client"]).contains("dep:pjrt-client"));
    assert!(!enabled(lapack, &["default"]).contains("dep:pjrt-client"));
    let src = workspace().join("crates/pjrt-lapack/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    for file in files.iter().filter(|f| !f.starts_with(src.join("handlers"))) {
        let text = std::fs::read_to_string(file).unwrap();
        let code: Vec<&str> = text.lines().filter(|l| !l.trim_start().starts_with("//")).collect();
        assert!(
            !code.iter().any(|l| l.contains("pjrt_client")),
            "{} names pjrt_client outside the handlers",
            file.display()
        );
    }
}

#[test]
fn the_floor_reader_reads_a_manifest() {
    let dir = std::env::temp_dir().join(format!("pjrt-house-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("Cargo.toml");
    std::fs::write(
        &path,
        "[package]\nname = \"pjrt-x\"\n\n[features]\ndefault = [\"a\"]\na = [\"dep:pjrt-y\"]\n\n[dependencies]\n\
         pjrt-y = { workspace = true, optional = true }\nserde.workspace = true\n# pjrt-z = 1\n\n\
         [dev-dependencies]\npjrt-w.workspace = true\n",
    )
    .unwrap();
    let m = manifest(&path);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(m.name, "pjrt-x");
    assert_eq!(m.ours, [("pjrt-y".to_owned(), true)]);
    assert_eq!(m.all, ["pjrt-y", "serde", "pjrt-w"]);
    assert_eq!(enabled(&m, &["default"]), BTreeSet::from(["default".into(), "a".into(), "dep:pjrt-y".into()]));
}

/// `a/b.rs` is `[a, b]`; `a/mod.rs`, `lib.rs` and `main.rs` are their folder's module.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let mut parts: Vec<String> =
        file.strip_prefix(src).unwrap().with_extension("").iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib" || p == "main") {
        parts.pop();
    }
    parts
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `a::b::C` at the start of `text`, as segments (an ident each).
fn path_at(text: &str) -> Vec<String> {
    let mut segments = Vec::new();
    let mut rest = text;
    loop {
        let ident: String = rest.chars().take_while(|&c| is_ident(c)).collect();
        if ident.is_empty() {
            break;
        }
        rest = &rest[ident.len()..];
        segments.push(ident);
        match rest.strip_prefix("::") {
            Some(r) if r.starts_with(|c: char| is_ident(c)) => rest = r,
            _ => break,
        }
    }
    segments
}

/// The items of a `{a, b::c as d}` list at the start of `text` (one level of braces).
fn brace_items(text: &str) -> Vec<Vec<String>> {
    let Some(inner) = text.strip_prefix('{').and_then(|t| t.split('}').next()) else { return Vec::new() };
    inner.split(',').map(|item| path_at(item.trim())).filter(|p| !p.is_empty()).collect()
}

/// The module paths a file's code names, made absolute (`crate::a::b`, `super::c`, and their
/// brace lists). Comments and the `#[cfg(test)] mod tests` at the end of a file are left out.
fn named_paths(text: &str, module: &[String]) -> Vec<Vec<String>> {
    let lines: Vec<&str> = text.lines().collect();
    let end = lines
        .windows(2)
        .position(|w| {
            w[0].trim() == "#[cfg(test)]"
                && w[1].trim_start().trim_start_matches("pub(crate) ").starts_with("mod tests")
        })
        .unwrap_or(lines.len());
    let mut out = Vec::new();
    for line in &lines[..end] {
        let code = line.split("//").next().unwrap();
        for (at, _) in code.match_indices("crate::") {
            if code[..at].chars().last().is_some_and(|c| is_ident(c) || c == '$' || c == ':') {
                continue; // `pjrt_client::`, `$crate::`
            }
            let rest = &code[at + "crate::".len()..];
            if rest.starts_with('{') {
                out.extend(brace_items(rest));
            } else {
                out.push(path_at(rest));
            }
        }
        for (at, _) in code.match_indices("super::") {
            if code[..at].chars().last().is_some_and(|c| is_ident(c) || c == ':') {
                continue; // the second `super::` of `super::super::`
            }
            let mut rest = &code[at..];
            let mut up = 0;
            while let Some(r) = rest.strip_prefix("super::") {
                up += 1;
                rest = r;
            }
            let base = &module[..module.len().saturating_sub(up)];
            let tails = if rest.starts_with('{') { brace_items(rest) } else { vec![path_at(rest)] };
            for tail in tails {
                out.push(base.iter().cloned().chain(tail).collect());
            }
        }
    }
    out
}

/// Sibling edges `a -> b` with one reference each (`file: path`) that makes it.
type Edges = BTreeMap<Vec<String>, BTreeMap<Vec<String>, String>>;

fn sibling_edges(src: &Path) -> Edges {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_of(src, f)).collect();
    let mut edges = Edges::new();
    for file in &files {
        let module = module_of(src, file);
        let text = std::fs::read_to_string(file).unwrap();
        for path in named_paths(&text, &module) {
            // The module named: the longest prefix that is one.
            let Some(target) = (0..=path.len()).rev().map(|k| &path[..k]).find(|p| modules.contains(*p)) else {
                continue;
            };
            let common = module.iter().zip(target).take_while(|(a, b)| a == b).count();
            if common < module.len() && common < target.len() {
                let why = format!("{}: {}", file.strip_prefix(src).unwrap().display(), path.join("::"));
                edges.entry(module[..=common].to_vec()).or_default().entry(target[..=common].to_vec()).or_insert(why);
            }
        }
    }
    edges
}

/// A loop of edges from `start` back to it, if there is one.
fn circle_through(edges: &Edges, start: &[String]) -> Option<Vec<Vec<String>>> {
    fn walk(
        edges: &Edges,
        at: &[String],
        start: &[String],
        path: &mut Vec<Vec<String>>,
        seen: &mut BTreeSet<Vec<String>>,
    ) -> bool {
        for next in edges.get(at).into_iter().flat_map(|m| m.keys()) {
            if next.as_slice() == start {
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if walk(edges, next, start, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![start.to_vec()];
    walk(edges, start, start, &mut path, &mut BTreeSet::new()).then_some(path)
}

#[test]
fn no_crate_has_an_import_circle() {
    let mut circles = Vec::new();
    for (name, src) in crate_sources() {
        let edges = sibling_edges(&src);
        let mut reported = BTreeSet::new();
        for start in edges.keys() {
            if reported.contains(start) {
                continue;
            }
            if let Some(circle) = circle_through(&edges, start) {
                let steps: Vec<String> = circle
                    .iter()
                    .zip(circle.iter().cycle().skip(1))
                    .map(|(a, b)| format!("    {} -> {} ({})", a.join("::"), b.join("::"), edges[a][b]))
                    .collect();
                circles.push(format!("{name}:\n{}", steps.join("\n")));
                reported.extend(circle);
            }
        }
    }
    assert!(
        circles.is_empty(),
        "import circles (move what both sides need into a module below them):\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_circle_finder_finds_a_circle() {
    let module = |m: &str| m.split("::").map(String::from).collect::<Vec<_>>();
    let refs = named_paths("use crate::a::X;\nuse super::{b, c::D};\n// crate::z\n", &module("p::q"));
    assert_eq!(refs, [module("a::X"), module("p::b"), module("p::c::D")]);
    let mut edges = Edges::new();
    edges.entry(module("a")).or_default().insert(module("b"), "a.rs: b".into());
    edges.entry(module("b")).or_default().insert(module("a"), "b.rs: a".into());
    assert_eq!(circle_through(&edges, &module("a")), Some(vec![module("a"), module("b")]));
    edges.get_mut(&module("b")).unwrap().clear();
    assert_eq!(circle_through(&edges, &module("a")), None);
}

/// Every file and folder of the repository (relative, `/`-separated), `target/` and `.git/` left out.
fn repository_paths() -> BTreeSet<String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let relative = path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
            if relative == "target" || relative == ".git" || relative.ends_with("/target") {
                continue;
            }
            if path.is_dir() {
                walk(root, &path, out);
            }
            out.insert(relative);
        }
    }
    let root = workspace();
    let mut out = BTreeSet::new();
    walk(&root, &root, &mut out);
    out
}

/// What each library crate of the workspace defines, by name: items, enum variants, fields and
/// the names of re-exports. A Rust path in the docs must name only these.
fn defined_names() -> BTreeMap<String, BTreeSet<String>> {
    let mut out = BTreeMap::new();
    for (name, src) in crate_sources() {
        let mut names = BTreeSet::new();
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let words: Vec<&str> = text.split(|c: char| !is_ident(c) && c != '!').filter(|w| !w.is_empty()).collect();
            for pair in words.windows(2) {
                let keyword = matches!(
                    pair[0],
                    "fn" | "struct"
                        | "enum"
                        | "mod"
                        | "trait"
                        | "type"
                        | "const"
                        | "static"
                        | "union"
                        | "as"
                        | "macro_rules!"
                );
                if keyword {
                    names.insert(pair[1].to_owned());
                }
            }
            for line in text.lines() {
                // Enum variants and struct fields: `    Name(`, `    Name {`, `    Name,`, `    pub name:`.
                let t = line.trim_start().trim_start_matches("pub(crate) ").trim_start_matches("pub ");
                let ident: String = t.chars().take_while(|&c| is_ident(c)).collect();
                let after = t[ident.len()..].trim_start();
                if !ident.is_empty()
                    && line.starts_with(' ')
                    && (after.is_empty() || after.starts_with(['(', '{', ',', ':', '=']))
                {
                    names.insert(ident);
                }
            }
        }
        out.insert(name.replace('-', "_"), names);
    }
    out
}

/// The `code spans` of a Markdown text or a module doc, code blocks left out.
fn code_spans(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_block = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if in_block {
            continue;
        }
        let mut parts = line.split('`');
        parts.next();
        while let (Some(span), Some(_)) = (parts.next(), parts.next()) {
            out.push(span.to_owned());
        }
    }
    out
}

const TOP_FOLDERS: &[&str] = &["crates", "docs", "examples", "tools", "tests", "fuzz", ".ci", "src", "benches"];

/// Why `span` (a repository path in backticks in `doc`) names nothing, if it does not.
fn missing_path(span: &str, doc: &str, paths: &BTreeSet<String>) -> Option<String> {
    let path = span.trim_end_matches(['/', ':']);
    let placeholder = |segment: &str| segment.len() >= 3 && segment.chars().all(|c| c.is_ascii_uppercase() || c == '_');
    if path.is_empty()
        || path.starts_with('/')
        || path.starts_with("target/")
        || path.contains("...")
        || !path.chars().all(|c| is_ident(c) || matches!(c, '.' | '-' | '/'))
        || path.split('/').any(|s| placeholder(s.split('.').next().unwrap_or(s)))
    {
        return None;
    }
    if !path.contains('/') {
        // A bare file name: it must exist somewhere in the repository.
        let is_source = path.ends_with(".rs") || path.ends_with(".md");
        let exists = paths.iter().any(|p| p == path || p.ends_with(&format!("/{path}")));
        return (is_source && !exists).then(|| format!("{doc}: `{span}` is no file of the repository"));
    }
    // Relative to the repository, to the doc's folder or to its crate (and its src).
    let doc_dir = Path::new(doc).parent().unwrap_or(Path::new(""));
    let crate_dir: PathBuf = Path::new(doc).iter().take(2).collect();
    let bases = [PathBuf::new(), doc_dir.to_path_buf(), crate_dir.clone(), crate_dir.join("src")];
    let normalized = |p: PathBuf| {
        let mut parts: Vec<String> = Vec::new();
        for c in p.iter() {
            match c.to_str().unwrap() {
                ".." => {
                    parts.pop();
                }
                "." => {}
                s => parts.push(s.to_owned()),
            }
        }
        parts.join("/")
    };
    if bases.iter().any(|b| paths.contains(&normalized(b.join(path)))) {
        return None;
    }
    let first = path.split('/').next().unwrap();
    let looks_like_ours = TOP_FOLDERS.contains(&first) || first == "..";
    looks_like_ours.then(|| format!("{doc}: `{span}` names no file or folder of the repository"))
}

/// Why `span` (a Rust path in backticks) names something its crate does not define, if it does.
fn missing_item(span: &str, doc: &str, names: &BTreeMap<String, BTreeSet<String>>) -> Option<String> {
    let path = path_at(span);
    let crate_names = names.get(path.first()?)?;
    let sys = &names["pjrt_client_sys"];
    let missing =
        path[1..].iter().find(|s| !(crate_names.contains(*s) || path[0] == "pjrt_client" && sys.contains(*s)))?;
    Some(format!("{doc}: `{span}`: {} defines no `{missing}`", path[0]))
}

#[test]
fn the_docs_name_only_files_and_items_that_exist() {
    let root = workspace();
    let paths = repository_paths();
    let names = defined_names();
    let mut problems = Vec::new();
    for doc in &paths {
        let is_markdown = doc.ends_with(".md") && doc != "CHANGELOG.md" && !doc.starts_with("fuzz/corpus");
        let is_module_doc = doc.ends_with(".rs") && (doc.starts_with("crates/") || doc.starts_with("examples/"));
        if !is_markdown && !is_module_doc {
            continue;
        }
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        let text = if is_markdown {
            text
        } else {
            text.lines().filter_map(|l| l.trim_start().strip_prefix("//!")).collect::<Vec<_>>().join("\n")
        };
        for span in code_spans(&text) {
            let problem = if span.starts_with("pjrt_") && span.contains("::") {
                missing_item(&span, doc, &names)
            } else if span.contains('/') || span.ends_with(".rs") || span.ends_with(".md") {
                missing_path(&span, doc, &paths)
            } else {
                None
            };
            problems.extend(problem);
        }
    }
    assert!(
        problems.is_empty(),
        "the docs name what does not exist (fix the doc, or the name):\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_docs_check_finds_what_is_gone() {
    let paths: BTreeSet<String> = ["crates", "crates/a", "crates/a/src", "crates/a/src/lib.rs", "docs", "docs/x.md"]
        .into_iter()
        .map(String::from)
        .collect();
    assert_eq!(missing_path("crates/a/src/lib.rs", "README.md", &paths), None);
    assert_eq!(missing_path("src/lib.rs", "crates/a/src/x.rs", &paths), None);
    assert_eq!(missing_path("../docs/x.md", "docs/y.md", &paths), None);
    assert!(missing_path("crates/a/src/gone.rs", "README.md", &paths).is_some());
    assert!(missing_path("gone.rs", "README.md", &paths).is_some());
    assert_eq!(missing_path("crates/NAME/src", "README.md", &paths), None, "placeholders are not paths");
    let names = BTreeMap::from([
        ("pjrt_client".to_owned(), BTreeSet::from(["Client".to_owned(), "compile".to_owned()])),
        ("pjrt_client_sys".to_owned(), BTreeSet::new()),
    ]);
    assert_eq!(missing_item("pjrt_client::Client::compile(&program)", "d.md", &names), None);
    assert!(missing_item("pjrt_client::locate::resolve", "d.md", &names).is_some());
}
