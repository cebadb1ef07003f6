//! Keeps docs/parity.md true: every slot of the `PJRT_Api` table this crate knows
//! (`pjrt_client::sys::SLOTS`) and every public method of XLA's C API client (the seed, listed
//! below) has a row; every `partial` or `omitted` row says why; and every test a row names exists.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use pjrt_client::sys::{SLOTS, SLOT_COUNT};

/// The seed's public methods per class, from `xla/pjrt/c_api_client/pjrt_c_api_client.h` at commit
/// 040b384 (constructors left out; overloads named by their first parameter). These are facts
/// about the seed: a new seed method means a new name here and a row in the doc.
const SEED: &[(&str, &[&str])] = &[
    (
        "PjRtCApiClient",
        &[
            "process_index",
            "device_count",
            "addressable_device_count",
            "devices",
            "addressable_devices",
            "LookupDevice",
            "LookupAddressableDevice",
            "UpdateGlobalProcessInfo",
            "memory_spaces",
            "platform_id",
            "platform_name",
            "platform_version",
            "plugin_attributes",
            "GetDefaultDeviceAssignment",
            "GetHloCostAnalysis",
            "GetDefaultLayout",
            "CompileAndLoad(XlaComputation)",
            "CompileAndLoad(mlir::ModuleOp)",
            "LoadSerializedExecutable",
            "CreateUninitializedBuffer",
            "CreateAliasBuffer",
            "CreateErrorBuffer",
            "GetTopologyDescription",
            "GetHostAllocator",
            "CreateBuffersForAsyncHostToDevice",
            "BufferFromHostBuffer",
            "BufferFromHostLiteral",
            "CreateViewOfDeviceBuffer",
            "UnsafeBufferPointer",
            "MakeCrossHostReceiveBuffers",
            "CrossHostSendBuffers",
            "CrossHostReceiveBuffers",
            "DmaMap",
            "DmaUnmap",
            "pjrt_c_api",
            "pjrt_c_client",
            "GetCppDevice",
            "GetCppMemory",
            "GetPjRtHostMemoryForDeviceManager",
            "FindExtension",
            "RegisterCallback",
            "InvokeCallbacks",
        ],
    ),
    (
        "PjRtCApiDevice",
        &[
            "client",
            "IsAddressable",
            "local_hardware_id",
            "TransferToInfeed",
            "TransferFromOutfeed",
            "memory_spaces",
            "default_memory_space",
            "memory_space_by_kind",
            "CreateAsyncTrackingEvent",
            "PoisonExecution",
            "c_device",
            "description",
            "GetAllocatorStats",
            "GetStreamForExternalReadyEvents",
        ],
    ),
    (
        "PjRtCApiDeviceDescription",
        &[
            "id",
            "process_index",
            "device_kind",
            "DebugString",
            "ToString",
            "Attributes",
            "memory_spaces",
            "default_memory_space",
        ],
    ),
    (
        "PjRtCApiMemorySpace",
        &["client", "devices", "id", "kind", "kind_id", "DebugString", "ToString", "pjrt_c_api", "c_memory"],
    ),
    (
        "PjRtCApiBuffer",
        &[
            "element_type",
            "dimensions",
            "layout",
            "IsTuple",
            "on_device_shape",
            "has_dynamic_dimensions",
            "is_dynamic_dimension",
            "logical_dimensions",
            "logical_on_device_shape",
            "memory_space",
            "device",
            "client",
            "AcquireExternalReference",
            "ToLiteral",
            "LazyToLiteral",
            "GetOnDeviceSizeInBytes",
            "CopyRawToHost",
            "CopyRawToHostFuture",
            "Delete",
            "ReleaseDeviceMemoryOwnership",
            "DonateWithControlDependency",
            "IsDeleted",
            "CopyToMemorySpace",
            "CopyToRemoteDevice",
            "GetReadyFuture",
            "IsOnCpu",
            "c_buffer",
            "pjrt_c_api",
        ],
    ),
    ("PjRtCApiExternalReference", &["WaitUntilBufferReadyOnStream", "~PjRtCApiExternalReference"]),
    (
        "PjRtCApiExecutable",
        &[
            "name",
            "num_replicas",
            "num_partitions",
            "SizeOfGeneratedCodeInBytes",
            "GetCostAnalysis",
            "GetHloModules",
            "GetCompiledMemoryStats",
            "GetOutputShapes",
            "GetOutputElementTypes",
            "GetOutputDimensions",
            "GetOutputLayouts",
            "GetOutputMemoryKinds",
            "pjrt_c_api",
            "c_executable",
            "SerializeExecutable",
            "FingerprintExecutable",
            "GetSerializedExecutableMetadata",
            "GetCompileOptions",
        ],
    ),
    (
        "PjRtCApiLoadedExecutable",
        &[
            "client",
            "name",
            "num_replicas",
            "num_partitions",
            "SizeOfGeneratedCodeInBytes",
            "GetCostAnalysis",
            "device_assignment",
            "addressable_device_logical_ids",
            "addressable_devices",
            "GetHloModules",
            "GetCompiledMemoryStats",
            "GetOutputShapes",
            "GetOutputElementTypes",
            "GetOutputDimensions",
            "GetOutputLayouts",
            "GetOutputMemoryKinds",
            "GetCompileOptions",
            "Execute",
            "ExecuteSharded",
            "ExecutePortable",
            "Delete",
            "IsDeleted",
            "SerializeExecutable",
            "pjrt_c_api",
            "c_executable",
            "c_loaded_executable",
            "FingerprintExecutable",
        ],
    ),
    (
        "PjRtCApiTopologyDescription",
        &[
            "platform_id",
            "platform_name",
            "platform_version",
            "compiler",
            "c_topology",
            "DeviceDescriptions",
            "Serialize",
            "Attributes",
            "GetDefaultLayout",
            "Subslice",
            "is_subslice_topology",
            "ToProto",
            "ProcessCount",
            "ChipsPerProcess",
            "CoreCountOfDefaultTypePerChip",
            "ChipCount",
            "CoreCountOfDefaultType",
            "LogicalDeviceCountOfDefaultType",
            "LogicalDeviceCountOfDefaultTypePerProcess",
            "LogicalDeviceCountOfDefaultTypePerChip",
            "CoreCountOfDefaultTypePerProcess",
            "ProcessIds",
            "LogicalDeviceOfDefaultTypeIdsOnProcess",
            "ProcessIdAndIndexOnProcessForChip",
            "ProcessIdAndIndexOnProcessForLogicalDeviceOfDefaultType",
            "ProcessCoordFromId",
            "ChipIdFromCoord",
            "LogicalDeviceOfDefaultTypeIdFromChipCoordAndCoreIndex",
            "ChipCoordAndCoreIndexForLogicalDeviceOfDefaultType",
            "ChipsPerProcessBounds",
            "ChipBounds",
            "ProcessBounds",
        ],
    ),
    (
        "PjRtCApiCompiler",
        &[
            "Compile(XlaComputation, topology, client)",
            "Compile(mlir::ModuleOp, topology, client)",
            "DeserializePjRtTopologyDescription",
        ],
    ),
    ("PjRtCApiAsyncTrackingEvent", &["AddDependency", "~PjRtCApiAsyncTrackingEvent"]),
    ("CApiCopyToDeviceStream", &["AddChunk", "~CApiCopyToDeviceStream"]),
    (
        "Free functions",
        &[
            "GetCApiClient(device_type, create_options, kv_store)",
            "WrapClientAroundCApi(c_api, create_options, kv_store)",
            "GetCApiTopology(c_api, topology_name, create_options)",
            "GetCApiTopology(device_type, topology_name, create_options)",
            "GetCApiCompiler(device_type)",
            "GetCApiCompiler()",
            "GetCApiPhaseCompiler(device_type)",
            "GetCApiPhaseCompiler()",
        ],
    ),
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn parity_doc() -> String {
    let path = workspace().join("docs/parity.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The cells of a table row, or None for a line that is no row (or a header or rule).
fn cells(line: &str) -> Option<Vec<String>> {
    let line = line.trim();
    if !line.starts_with('|') || line.starts_with("|---") {
        return None;
    }
    Some(line.trim_matches('|').split(" | ").map(|c| c.trim().to_owned()).collect())
}

/// The rows of part B: `| index | `name` | since | api | status | test |`.
fn slot_rows(doc: &str) -> Vec<Vec<String>> {
    let part_b = doc.split("## B.").nth(1).expect("docs/parity.md has a part B (the slot table)");
    let part_b = part_b.split("## C.").next().unwrap();
    part_b.lines().filter_map(cells).filter(|c| c[0].parse::<usize>().is_ok()).collect()
}

/// The rows of part A per section: section title -> rows of `| C++ method | Rust | status | test |`.
fn method_rows(doc: &str) -> HashMap<String, Vec<Vec<String>>> {
    let part_a = doc.split("## A.").nth(1).expect("docs/parity.md has a part A").split("## B.").next().unwrap();
    let mut sections: HashMap<String, Vec<Vec<String>>> = HashMap::new();
    let mut current = String::new();
    for line in part_a.lines() {
        if let Some(title) = line.strip_prefix("### ") {
            current = title.trim_matches('`').to_owned();
            sections.entry(current.clone()).or_default();
        } else if let Some(row) = cells(line) {
            if row[0] != "C++ method" {
                sections.entry(current.clone()).or_default().push(row);
            }
        }
    }
    sections
}

/// The backticked names in a C++ method cell (one row may list several).
fn names_in(cell: &str) -> Vec<&str> {
    cell.split('`').skip(1).step_by(2).collect()
}

/// Every `#[test] fn` of the workspace's crates (src and tests), as `file_stem::name`; a `mod.rs`
/// is named by its folder.
fn workspace_tests() -> Vec<String> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    for krate in std::fs::read_dir(workspace().join("crates")).unwrap().flatten() {
        for sub in ["src", "tests"] {
            let dir = krate.path().join(sub);
            if dir.is_dir() {
                walk(&dir, &mut files);
            }
        }
    }
    let mut tests = Vec::new();
    for file in files {
        let mut stem = file.file_stem().unwrap().to_string_lossy().into_owned();
        // A folder's `mod.rs`, and its `tests.rs` (a module's tests kept beside it), name the
        // folder's module: `artifact/tests.rs`'s `round_trips` is `artifact::round_trips`.
        if stem == "mod" || stem == "tests" && file.parent().is_some_and(|dir| dir.join("mod.rs").is_file()) {
            stem = file.parent().unwrap().file_name().unwrap().to_string_lossy().into_owned();
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let mut after_test_attribute = false;
        for line in text.lines().map(str::trim) {
            if line.starts_with("#[test]") {
                after_test_attribute = true;
            } else if after_test_attribute && !line.starts_with("#[") && !line.starts_with("//") {
                if let Some(rest) = line.strip_prefix("fn ").or_else(|| line.strip_prefix("async fn ")) {
                    let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                    tests.push(format!("{stem}::{name}"));
                }
                after_test_attribute = false;
            }
        }
    }
    tests
}

/// What is wrong with a row's status and test cells, if anything.
fn check_status_and_tests(status: &str, tests: &str, known: &[String]) -> Option<String> {
    let is_full = status == "full" || status.starts_with("full (");
    let reason = status.strip_prefix("partial:").or_else(|| status.strip_prefix("omitted:"));
    match reason {
        Some(reason) if reason.trim().is_empty() => return Some(format!("status `{status}` gives no reason")),
        None if !is_full => return Some(format!("status `{status}` is not `full`, `partial: why` or `omitted: why`")),
        _ => {}
    }
    if status.starts_with("omitted:") {
        return None;
    }
    let named = names_in(tests);
    if named.is_empty() {
        return Some("names no test: add the `file::function` that exercises it".into());
    }
    let unknown: Vec<&str> = named.iter().copied().filter(|t| !known.iter().any(|k| k == t)).collect();
    (!unknown.is_empty()).then(|| format!("names tests that do not exist: {unknown:?}"))
}

#[test]
fn every_slot_has_a_row_in_docs_parity_md() {
    let doc = parity_doc();
    let rows = slot_rows(&doc);
    assert_eq!(SLOTS.len(), SLOT_COUNT);
    let missing: Vec<&str> =
        SLOTS.iter().filter(|slot| !rows.iter().any(|r| r[1].trim_matches('`') == slot.name)).map(|s| s.name).collect();
    assert!(missing.is_empty(), "slots without a row in docs/parity.md part B: {missing:?}");
    assert_eq!(rows.len(), SLOTS.len(), "one row per slot, no extra rows");
    for (row, slot) in rows.iter().zip(SLOTS) {
        let name = row[1].trim_matches('`');
        assert_eq!((row[0].parse::<usize>().unwrap(), name), (slot.index, slot.name), "rows follow the table order");
        assert_eq!(row.len(), 6, "{name}: a slot row has 6 cells (#, slot, since, api, status, test)");
        assert!(row[3].contains('`'), "{name}: `{}` names no Rust API", row[3]);
    }
}

#[test]
fn every_seed_method_has_exactly_one_row() {
    let sections = method_rows(&parity_doc());
    let mut problems = Vec::new();
    for (class, methods) in SEED {
        let Some(rows) = sections.get(*class) else {
            problems.push(format!("no section `### {class}`"));
            continue;
        };
        for method in *methods {
            let count = rows.iter().filter(|r| names_in(&r[0]).contains(method)).count();
            if count != 1 {
                problems.push(format!("{class}::{method}: {count} rows (want 1)"));
            }
        }
        for row in rows {
            let inherited = row[0].contains("(base class)");
            for name in names_in(&row[0]) {
                if !inherited && !methods.contains(&name) {
                    problems.push(format!("{class}: row `{name}` is no method of the seed (or add it to SEED)"));
                }
            }
        }
    }
    for section in sections.keys() {
        if !SEED.iter().any(|(class, _)| class == section) {
            problems.push(format!("section `{section}` is no class of the seed"));
        }
    }
    assert!(problems.is_empty(), "docs/parity.md part A:\n{}", problems.join("\n"));
}

#[test]
fn every_row_has_a_reasoned_status_and_existing_tests() {
    let doc = parity_doc();
    let known = workspace_tests();
    let mut problems = Vec::new();
    for (class, rows) in method_rows(&doc) {
        for row in rows {
            if row.len() != 4 {
                problems.push(format!("{class} `{}`: a method row has 4 cells", row[0]));
            } else if let Some(why) = check_status_and_tests(&row[2], &row[3], &known) {
                problems.push(format!("{class} {}: {why}", row[0]));
            }
        }
    }
    for row in slot_rows(&doc) {
        if let Some(why) = row
            .get(4)
            .zip(row.get(5))
            .map_or(Some("missing cells".into()), |(s, t)| check_status_and_tests(s, t, &known))
        {
            problems.push(format!("slot {}: {why}", row[1]));
        }
    }
    assert!(problems.is_empty(), "docs/parity.md rows:\n{}", problems.join("\n"));
}

#[test]
fn the_intro_counts_match_the_rows() {
    let doc = parity_doc();
    let (mut full, mut partial, mut omitted) = (0, 0, 0);
    for rows in method_rows(&doc).values() {
        for row in rows.iter().filter(|r| !r[0].contains("(base class)")) {
            let n = names_in(&row[0]).len();
            match row[2].split([':', ' ']).next() {
                Some("full") => full += n,
                Some("partial") => partial += n,
                _ => omitted += n,
            }
        }
    }
    let total: usize = SEED.iter().map(|(_, m)| m.len()).sum();
    assert_eq!(full + partial + omitted, total);
    let stated = format!(
        "**{total} public methods and free functions** (constructors left out; an overload counts once each; the\n22 TpuTopology queries of `PjRtCApiTopologyDescription` have a row each). Of these, **{full} are\nfull**, **{partial} partial** and **{omitted} omitted**."
    );
    assert!(doc.contains(&stated), "the intro of docs/parity.md should say:\n{stated}");
}

/// The source of every crate's `src/` folder, concatenated (for name lookups).
fn workspace_sources() -> String {
    fn walk(dir: &Path, out: &mut String) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push_str(&std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let mut text = String::new();
    for krate in std::fs::read_dir(workspace().join("crates")).unwrap().flatten() {
        let dir = krate.path().join("src");
        if dir.is_dir() {
            walk(&dir, &mut text);
        }
    }
    text
}

/// What a Rust name of a row (`Type::method`, `Drop for Type`) misses in the sources.
fn missing_rust_name(name: &str, sources: &str) -> Option<String> {
    let is_ident = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_');
    let type_exists = |t: &str| {
        ["struct", "enum", "trait", "type"].iter().any(|kind| {
            sources.contains(&format!("{kind} {t} "))
                || sources.contains(&format!("{kind} {t}<"))
                || sources.contains(&format!("{kind} {t}("))
                || sources.contains(&format!("{kind} {t};"))
        })
    };
    if let Some(t) = name.strip_prefix("Drop for ") {
        // Some types release their handle through an inner owner (shared by clones or guards).
        let inner = match t {
            "ExternalReference" => "RawExternalReference",
            "ExecuteContext" => "ContextInner",
            t => t,
        };
        return (!sources.contains(&format!("impl Drop for {inner}"))).then(|| format!("no `impl Drop for {inner}`"));
    }
    if let Some(t) = name.strip_prefix("impl Future for ") {
        return (!sources.contains(&format!("Future for {t}"))).then(|| format!("no `impl Future for {t}`"));
    }
    // Bare names (a C++ type, another row's method, `Future`) are prose, not checked.
    let (ty, method) = match name.split_once("::") {
        Some((ty, method)) if is_ident(ty) && is_ident(method) => (ty, method),
        _ => return None,
    };
    if !ty.starts_with(|c: char| c.is_ascii_uppercase()) {
        return None;
    }
    if !type_exists(ty) {
        return Some(format!("no type `{ty}`"));
    }
    if method.starts_with(|c: char| c.is_ascii_uppercase()) {
        // An enum variant or an associated constant.
        return (!sources.contains(method)).then(|| format!("no `{method}`"));
    }
    // A method, a public field, or a method made by a query macro (`name, PJRT_Slot, ...`).
    let found =
        [format!("fn {method}("), format!("fn {method}<"), format!("pub {method}:"), format!("{method}, PJRT_")]
            .iter()
            .any(|pattern| sources.contains(pattern.as_str()));
    (!found).then(|| format!("no `fn {method}`"))
}

#[test]
fn every_rust_name_in_a_row_exists() {
    let doc = parity_doc();
    let sources = workspace_sources();
    let mut problems = Vec::new();
    let mut check = |row: &str, cell: &str| {
        for name in names_in(cell) {
            let name = name.trim_end_matches("()");
            if let Some(why) = missing_rust_name(name, &sources) {
                problems.push(format!("{row}: `{name}`: {why}"));
            }
        }
    };
    for (class, rows) in method_rows(&doc) {
        for row in rows {
            check(&format!("{class} {}", row[0]), &row[1]);
        }
    }
    for row in slot_rows(&doc) {
        check(&format!("slot {}", row[1]), &row[3]);
    }
    assert!(problems.is_empty(), "docs/parity.md names Rust items that do not exist:\n{}", problems.join("\n"));
}
