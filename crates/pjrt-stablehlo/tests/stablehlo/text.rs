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

/// The error `text` gives, which must be a syntax error inside the text.
fn syntax_error(text: &str) -> String {
    match pjrt_stablehlo::parse_text(text) {
        Ok(_) => panic!("parsed: {text:.200}"),
        Err(e) => {
            assert!(e.offset() <= text.len(), "{e}");
            assert!(matches!(e, pjrt_stablehlo::Error::Syntax { .. }), "{e}");
            e.to_string()
        }
    }
}

#[test]
fn truncated_text_gives_errors_with_line_and_column() {
    // Every cut (500 spread over each file) from the opening brace of the first module or
    // function body to its closing brace fails: the body is left open. (A cut before the
    // brace can be a whole declaration.)
    for name in ["stablehlo_ops/jax-0.10.2/control_flow.mlir", "stablehlo_text/dynamic/gather_conv.mlir"] {
        let text = std::fs::read_to_string(files::repo().join("tests/data").join(name)).unwrap();
        let start = ["module ", "func.func "]
            .iter()
            .filter_map(|w| {
                text.lines().find(|l| l.starts_with(w)).map(|l| l.as_ptr() as usize - text.as_ptr() as usize)
            })
            .min()
            .unwrap();
        let start = start + text[start..].find(" {\n").unwrap() + 2;
        let end = text.rfind("\n}").unwrap() + 1;
        let step = ((end - start) / 500).max(1);
        for cut in (start..end).step_by(step).filter(|&c| text.is_char_boundary(c)) {
            if pjrt_stablehlo::parse_text(&text[..cut]).is_ok() {
                panic!("{name}: cut at byte {cut} parses");
            }
        }
    }
    let e = syntax_error(
        "func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = stablehlo.add %x, %x : tensor<2xf32>\n",
    );
    assert!(e.contains("line 3, column 1") && e.contains("expected"), "{e}");
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    for depth in [100, 100_000] {
        let attr = format!("func.func @f() attributes {{a = {}{}}}", "[".repeat(depth), "]".repeat(depth));
        assert!(syntax_error(&attr).contains("max_attr_depth"));
        let ty = format!("func.func @f(%x: {}f32{})", "tuple<".repeat(depth), ">".repeat(depth));
        assert!(syntax_error(&ty).contains("max_attr_depth"));
        let loc = format!("#loc = loc({}unknown{})\nmodule {{}}", "\"a\"(".repeat(depth), ")".repeat(depth));
        assert!(syntax_error(&loc).contains("max_attr_depth"));
        let dense = format!(
            "func.func @f() attributes {{a = dense<{}1{}> : tensor<f32>}}",
            "[".repeat(depth),
            "]".repeat(depth)
        );
        assert!(syntax_error(&dense).contains("max_attr_depth"));
    }
    let mut regions = String::from("func.func @f(%p: tensor<i1>) {\n");
    for _ in 0..10_000 {
        regions.push_str("\"stablehlo.case\"(%p) ({\n");
    }
    assert!(syntax_error(&regions).contains("max_region_depth"));
}

#[test]
fn huge_numbers_and_bad_literals_are_errors() {
    let f = |body: &str| format!("func.func @f() attributes {{a = {body}}}");
    for (text, needle) in [
        (f("340282366920938463463374607431768211457"), "128 bits"),
        (f("300 : i8"), "does not fit 8 bits"),
        (f("-1 : ui8"), "does not fit"),
        (f("0x1FFFF : f16"), "wider than 16 bits"),
        (f("dense<[1, 2, 3]> : tensor<2xi32>"), "3 elements where the type has 2"),
        (f("dense<\"0x0102\"> : tensor<3xi8>"), "bytes of data"),
        (f("dense<inf> : tensor<f4E2M1FN>"), "not representable"),
        (f("\"unterminated"), "does not end"),
        (f("#stablehlo<comparison_direction XX>"), "unknown StableHLO enum value"),
        ("func.func @f(%x: tensor<99999999999999999999xf32>)".to_string(), "dimension too large"),
        ("func.func @f() {\n  %0 = stablehlo.add %y, %y : tensor<f32>\n}".to_string(), "undefined value %y"),
        (
            "func.func @f(%x: tensor<f32>) {\n  %0 = stablehlo.add %x, %x : tensor<i32>\n}".to_string(),
            "operand 0 is tensor<f32>",
        ),
        ("func.func @f() {\n  %0 = foo.bar\n}".to_string(), "write it in the generic form"),
    ] {
        let e = syntax_error(&text);
        assert!(e.contains(needle), "{text}: {e}");
    }
}

#[test]
fn location_aliases_are_resolved_and_kept_on_the_ops() {
    let text = "#loc1 = loc(\"model.py\":3:7)\nfunc.func @main(%x: tensor<f32>) -> tensor<f32> {\n  %0 = stablehlo.abs %x : tensor<f32> loc(#loc2)\n  return %0 : tensor<f32> loc(#loc1)\n}\n#loc2 = loc(\"abs\"(#loc1))\n";
    let module = pjrt_stablehlo::parse_text(text).unwrap();
    let abs = module.walk().find(|op| op.name == "stablehlo.abs").unwrap();
    let file = Location::FileLineCol { file: "model.py".into(), line: 3, column: 7 };
    assert_eq!(*abs.location, Location::Name { name: "abs".into(), child: Arc::new(file) });
    assert!(syntax_error("func.func @f() {\n  return loc(#nowhere)\n}").contains("#nowhere is used but never defined"));
}
