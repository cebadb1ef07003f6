//! The text parser: every `.mlir` of the test data parses and prints the same after another
//! round; the printer's generic text of every portable artifact parses back to itself; and
//! JAX's text of each op family runs like its bytecode (in `ops`).

use std::sync::Arc;

use pjrt_stablehlo::ir::{Location, Module, Op};

use crate::files;

/// The module with every op's location made unknown (the printer leaves them out).
fn without_locations(mut m: Module) -> Module {
    fn clear(ops: &mut [Op]) {
        for op in ops {
            op.location = Arc::new(Location::Unknown);
            for r in &mut op.regions {
                for b in &mut r.blocks {
                    clear(&mut b.ops);
                }
            }
        }
    }
    clear(&mut m.ops);
    m
}

/// Parses, prints and parses the print: the same module (but for locations), which prints
/// the same.
fn stable_round_trip(text: &str) -> Result<String, String> {
    let module = pjrt_stablehlo::parse_text(text).map_err(|e| format!("parse: {e}"))?;
    let printed = pjrt_stablehlo::print(&module);
    let again = pjrt_stablehlo::parse_text(&printed).map_err(|e| format!("parse of the print: {e}\n{printed}"))?;
    if again != without_locations(module) {
        return Err(format!("the print parses to another module\n{printed}"));
    }
    Ok(printed)
}

#[test]
fn every_mlir_file_of_the_test_data_parses_and_round_trips() {
    let mut failures = Vec::new();
    let files = files::all_text();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        if let Err(e) = stable_round_trip(&text) {
            failures.push(format!("{}: {}", path.display(), e.lines().take(3).collect::<Vec<_>>().join("\n")));
        }
    }
    assert!(failures.is_empty(), "{} of {} failed:\n{}", failures.len(), files.len(), failures.join("\n"));
}

#[test]
fn the_generic_text_of_every_portable_artifact_parses_back_to_itself() {
    let mut failures = Vec::new();
    let files = files::all();
    for path in &files {
        let bytecode = files::bytecode(path);
        if !files::is_portable(&bytecode) {
            continue;
        }
        let module = pjrt_stablehlo::read_bytecode(&bytecode).unwrap();
        let printed = pjrt_stablehlo::print(&module);
        match stable_round_trip(&printed) {
            Ok(again) if again == printed => {}
            Ok(again) => {
                let line = printed.lines().zip(again.lines()).find(|(a, b)| a != b);
                failures.push(format!("{}: prints differently: {line:?}", path.display()));
            }
            Err(e) => failures.push(format!("{}: {}", path.display(), e.lines().next().unwrap_or(""))),
        }
    }
    assert!(failures.is_empty(), "{} of {} failed:\n{}", failures.len(), files.len(), failures.join("\n"));
}
