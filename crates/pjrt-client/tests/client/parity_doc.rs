//! Keeps docs/parity.md true: every slot of the `PJRT_Api` table this crate knows
//! (`pjrt_client::sys::SLOTS`) has exactly one row in its slot table, in table order, naming the
//! safe API that reaches it.

use pjrt_client::sys::{SLOTS, SLOT_COUNT};

fn parity_doc() -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/parity.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The rows of part B: `| index | `name` | since | api |`.
fn slot_rows(doc: &str) -> Vec<(usize, String, String)> {
    let part_b = doc.split("## B.").nth(1).expect("docs/parity.md has a part B (the slot table)");
    part_b
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            // ["", index, name, since, api, ""]
            let index = cells.get(1)?.parse().ok()?;
            let name = cells.get(2)?.trim_matches('`').to_owned();
            Some((index, name, cells.get(4)?.to_string()))
        })
        .collect()
}

#[test]
fn every_slot_has_a_row_in_docs_parity_md() {
    let doc = parity_doc();
    let rows = slot_rows(&doc);
    assert_eq!(SLOTS.len(), SLOT_COUNT);
    let missing: Vec<&str> =
        SLOTS.iter().filter(|slot| !rows.iter().any(|(_, name, _)| name == slot.name)).map(|s| s.name).collect();
    assert!(missing.is_empty(), "slots without a row in docs/parity.md part B: {missing:?}");
    assert_eq!(rows.len(), SLOTS.len(), "one row per slot, no extra rows");
    for ((index, name, api), slot) in rows.iter().zip(SLOTS) {
        assert_eq!((*index, name.as_str()), (slot.index, slot.name), "rows follow the table order");
        assert!(!api.is_empty(), "{name}: say which safe API reaches it, or `omitted: why`");
        assert!(api.contains('`') || api.starts_with("omitted:"), "{name}: `{api}` names no Rust API");
    }
}

#[test]
fn every_wrapper_class_has_a_section() {
    let doc = parity_doc();
    for class in [
        "PjRtCApiClient",
        "PjRtCApiDevice",
        "PjRtCApiDeviceDescription",
        "PjRtCApiMemorySpace",
        "PjRtCApiBuffer",
        "PjRtCApiExecutable",
        "PjRtCApiLoadedExecutable",
        "PjRtCApiTopologyDescription",
        "PjRtCApiCompiler",
        "CApiCopyToDeviceStream",
    ] {
        assert!(doc.contains(&format!("### `{class}`")), "docs/parity.md has no section for {class}");
    }
}
