//! The text parser: every `.mlir` of the test data parses and prints the same after another
//! round; the printer's generic text of every portable artifact parses back to itself; the
//! pretty printer's text of every `.mlir` and portable artifact parses back to its module;
//! and JAX's text of each op family runs like its bytecode (in `ops`).

use std::collections::HashMap;
use std::sync::Arc;

use pjrt_stablehlo::ir::{Attr, Location, Module, Op, Region, Value};

use crate::files;

/// The module with every op's and block argument's location made unknown (the printer leaves
/// them out).
fn without_locations(mut m: Module) -> Module {
    fn clear(ops: &mut [Op]) {
        for op in ops {
            op.location = Arc::new(Location::Unknown);
            for r in &mut op.regions {
                for b in &mut r.blocks {
                    b.arg_locations.clear();
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

/// The module as the parser numbers and orders it: each value renumbered in the order the
/// text defines it (from 0 in each `builtin.module` and `func.func`, a nested region's values
/// before the results of the op that holds it, as `text/ops.rs` numbers them; bytecode
/// numbers an op's results first and from 0 again in every op isolated from above), each
/// op's attributes sorted by name (MLIR keeps an op's attributes as a dictionary, which has
/// no order; a custom form fixes where it puts the attributes it states, the bytecode reader
/// gives them in VHLO's order), locations made unknown.
pub(crate) fn normalized(m: Module) -> Module {
    fn drop_empty_batching(ops: &mut [Op]) {
        for op in ops {
            for (_, a) in &mut op.attributes {
                if let Attr::Struct { mnemonic: "gather" | "scatter", fields } = a {
                    fields.retain(|(n, v)| !(n.ends_with("batching_dims") && *v == Attr::I64Array(vec![])));
                }
            }
            for r in &mut op.regions {
                for b in &mut r.blocks {
                    drop_empty_batching(&mut b.ops);
                }
            }
        }
    }
    struct Renumber {
        map: HashMap<u32, u32>,
        undo: Vec<(u32, Option<u32>)>,
        next: u32,
    }
    impl Renumber {
        fn define(&mut self, v: &mut Value) {
            let old = self.map.insert(v.id, self.next);
            self.undo.push((v.id, old));
            v.id = self.next;
            self.next += 1;
        }
        fn region(&mut self, r: &mut Region, isolated: bool) {
            let (mark, next) = (self.undo.len(), self.next);
            if isolated {
                self.next = 0;
            }
            for b in &mut r.blocks {
                for a in &mut b.args {
                    self.define(a);
                }
                for op in &mut b.ops {
                    self.op(op);
                }
            }
            while self.undo.len() > mark {
                let (id, old) = self.undo.pop().unwrap();
                match old {
                    Some(o) => self.map.insert(id, o),
                    None => self.map.remove(&id),
                };
            }
            if isolated {
                self.next = next;
            }
        }
        fn op(&mut self, op: &mut Op) {
            for v in &mut op.operands {
                *v = *self.map.get(v).unwrap_or_else(|| panic!("{} uses undefined value {v}", op.name));
            }
            let isolated = matches!(op.name.as_str(), "builtin.module" | "func.func");
            for r in &mut op.regions {
                self.region(r, isolated);
            }
            for v in &mut op.results {
                self.define(v);
            }
        }
    }
    let mut m = sorted_attributes(m);
    drop_empty_batching(&mut m.ops);
    let mut r = Renumber { map: HashMap::new(), undo: Vec::new(), next: 0 };
    for op in &mut m.ops {
        r.op(op);
    }
    m.bytecode_version = 0;
    m.producer.clear();
    m
}

/// The module with each op's attributes sorted by name and its locations made unknown.
fn sorted_attributes(m: Module) -> Module {
    fn sort(ops: &mut [Op]) {
        for op in ops {
            op.attributes.sort_by(|a, b| a.0.cmp(&b.0));
            for r in &mut op.regions {
                for b in &mut r.blocks {
                    sort(&mut b.ops);
                }
            }
        }
    }
    let mut m = without_locations(m);
    sort(&mut m.ops);
    m
}

/// The ops the pretty printer writes in the generic form: those without a custom form the
/// parser reads (`"stablehlo.case"(...)`, as JAX writes them too).
fn generic_ops(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let l = if l.starts_with('%') { l.split_once(" = ")?.1 } else { l };
            Some(l.strip_prefix('"')?.split('"').next()?.to_string())
        })
        .collect()
}

/// The ops with no custom form in `text/custom.rs` (JAX prints them generic as well).
const NO_CUSTOM_FORM: &[&str] = &[
    "stablehlo.case",
    "stablehlo.if",
    "stablehlo.sort",
    "stablehlo.gather",
    "stablehlo.dynamic_gather",
    "stablehlo.scatter",
    "stablehlo.reduce_window",
    "stablehlo.select_and_scatter",
    "stablehlo.all_reduce",
    "stablehlo.all_gather",
    "stablehlo.all_to_all",
    "stablehlo.reduce_scatter",
    "stablehlo.collective_permute",
    "stablehlo.dynamic_conv",
    "stablehlo.triangular_solve",
    "stablehlo.cholesky",
    "builtin.unrealized_conversion_cast",
    // (StableHLO prints these generic too: tests/data/vhlo/send_recv.mlir, collectives.mlir.)
    "stablehlo.send",
    "stablehlo.recv",
    "stablehlo.infeed",
    "stablehlo.outfeed",
    "stablehlo.cross-replica-sum",
];

/// Prints `module` pretty and parses the print: the text, and the module it parses to.
fn pretty_round_trip(module: &Module) -> Result<(String, Module), String> {
    let text = pjrt_stablehlo::print_pretty(module);
    let again = pjrt_stablehlo::parse_text(&text).map_err(|e| {
        let line = match &e {
            pjrt_stablehlo::Error::Syntax { line, .. } => text.lines().nth(line - 1).unwrap_or(""),
            _ => "",
        };
        format!("the pretty print does not parse: {e}\n  {line}")
    })?;
    Ok((text, again))
}

/// The first op where two modules differ, for the failure message.
pub(crate) fn first_difference(a: &Module, b: &Module) -> String {
    let (x, y): (Vec<&Op>, Vec<&Op>) = (a.walk().collect(), b.walk().collect());
    for (i, (p, q)) in x.iter().zip(&y).enumerate() {
        let shallow = |o: &Op| (o.name.clone(), o.operands.clone(), o.results.clone(), o.attributes.clone());
        if shallow(p) != shallow(q) {
            return format!("op {i}: {} != {}\n  {:?}\n  {:?}", p.name, q.name, shallow(p), shallow(q));
        }
    }
    format!("{} ops and {} ops", x.len(), y.len())
}

#[test]
fn the_pretty_text_of_every_portable_artifact_parses_back_to_it() {
    let (mut failures, mut generic) = (Vec::new(), Vec::new());
    let (mut count, mut exact) = (0, 0);
    for path in &files::all() {
        let bytecode = files::bytecode(path);
        if !files::is_portable(&bytecode) {
            continue;
        }
        count += 1;
        let module = pjrt_stablehlo::read_bytecode(&bytecode).unwrap();
        // What the generic print reads back as: numbered by the parser, as the pretty print is.
        let generic_print = pjrt_stablehlo::parse_text(&pjrt_stablehlo::print(&module)).unwrap();
        match pretty_round_trip(&module) {
            Ok((text, again)) => {
                let (a, b) = (sorted_attributes(again.clone()), sorted_attributes(generic_print.clone()));
                if a != b {
                    failures.push(format!(
                        "{}: not the generic print's module: {}",
                        path.display(),
                        first_difference(&a, &b)
                    ));
                }
                // And, where the generic text can tell it (an `#stablehlo.replica_group_mesh_axes`
                // it reads back as text is not), the artifact's own module.
                let (a, b) = (normalized(again), normalized(module));
                if normalized(generic_print.clone()) == b {
                    exact += 1;
                    if a != b {
                        failures.push(format!(
                            "{}: not the artifact's module: {}",
                            path.display(),
                            first_difference(&a, &b)
                        ));
                    }
                }
                generic.extend(generic_ops(&text).into_iter().filter(|n| !NO_CUSTOM_FORM.contains(&n.as_str())));
            }
            Err(e) => failures.push(format!("{}: {e}", path.display())),
        }
    }
    assert!(
        count >= 290 && exact + 1 >= count,
        "{count} portable artifacts, {exact} whose generic print reads back as them"
    );
    assert!(failures.is_empty(), "{} of {count} failed:\n{}", failures.len(), failures.join("\n"));
    generic.sort();
    generic.dedup();
    assert!(generic.is_empty(), "ops with a custom form printed generic: {generic:?}");
}

#[test]
fn the_pretty_text_of_every_mlir_file_parses_back_to_the_same_module() {
    let (mut failures, mut generic) = (Vec::new(), Vec::new());
    let files = files::all_text();
    for path in &files {
        let module = pjrt_stablehlo::parse_text(&std::fs::read_to_string(path).unwrap()).unwrap();
        match pretty_round_trip(&module) {
            // Exact: the parser numbered and ordered both the same way.
            Ok((text, again)) => {
                let want = without_locations(module);
                // MLIR's generic print (the `.read.mlir` of tests/data/vhlo) lists an op's
                // attributes sorted by name; custom forms put them in their own order.
                let generic_input = path.to_string_lossy().ends_with(".read.mlir");
                if again != want
                    && !(generic_input && sorted_attributes(again.clone()) == sorted_attributes(want.clone()))
                {
                    failures.push(format!("{}: {}", path.display(), first_difference(&again, &want)));
                }
                generic.extend(generic_ops(&text).into_iter().filter(|n| !NO_CUSTOM_FORM.contains(&n.as_str())));
            }
            Err(e) => failures.push(format!("{}: {e}", path.display())),
        }
    }
    assert!(failures.is_empty(), "{} of {} failed:\n{}", failures.len(), files.len(), failures.join("\n"));
    generic.sort();
    generic.dedup();
    assert!(generic.is_empty(), "ops with a custom form printed generic: {generic:?}");
}

#[test]
fn the_pretty_print_uses_custom_forms_only_where_they_read_back_exactly() {
    // Generic text of ops at the edges of their custom forms.
    let text = r#"
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%x: tensor<4xf32>, %i: tensor<i32>, %p: tensor<4xi1>):
    %0 = "stablehlo.iota"() {iota_dimension = 0 : i32} : () -> tensor<4xf32>
    %1 = "stablehlo.compare"(%x, %0) {compare_type = #stablehlo<comparison_type FLOAT>, comparison_direction = #stablehlo<comparison_direction LT>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
    %2 = "stablehlo.slice"(%x) {start_indices = array<i64: 1>, limit_indices = array<i64: 4>, strides = array<i64: 2>} : (tensor<4xf32>) -> tensor<2xf32>
    %3 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %4 = "stablehlo.reduce"(%x, %3) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %r = "stablehlo.subtract"(%b, %a) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%r) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 0>} : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    %5 = "stablehlo.select"(%p, %x, %0) : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %6:2 = "stablehlo.optimization_barrier"(%x, %i) : (tensor<4xf32>, tensor<i32>) -> (tensor<4xf32>, tensor<i32>)
    %7 = "stablehlo.dot_general"(%x, %x) {dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [0], rhs_batching_dimensions = [0]>, precision_config = [#stablehlo<precision HIGH>, #stablehlo<precision DEFAULT>]} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %8 = "stablehlo.reduce_precision"(%x) {exponent_bits = 5 : i32, mantissa_bits = 10 : i32} : (tensor<4xf32>) -> tensor<4xf32>
    %9 = "stablehlo.while"(%i) ({
    ^bb0(%c: tensor<i32>):
      %t = "stablehlo.compare"(%c, %c) {comparison_direction = #stablehlo<comparison_direction LT>} : (tensor<i32>, tensor<i32>) -> tensor<i1>
      "stablehlo.return"(%t) : (tensor<i1>) -> ()
    }, {
    ^bb0(%c: tensor<i32>):
      "stablehlo.return"(%c) : (tensor<i32>) -> ()
    }) : (tensor<i32>) -> tensor<i32>
    "stablehlo.custom_call"(%x) {call_target_name = "my target", has_side_effect = true} : (tensor<4xf32>) -> ()
    "func.return"(%2) : (tensor<2xf32>) -> ()
  }) {arg_attrs = [{}, {}, {}], function_type = (tensor<4xf32>, tensor<i32>, tensor<4xi1>) -> tensor<2xf32>, sym_name = "main", sym_visibility = "public"} : () -> ()
  "func.func"() ({}) {function_type = (tensor<f32>) -> (), res_attrs = [], sym_name = "decl-1", sym_visibility = "private"} : () -> ()
}) {sym_name = "m"} : () -> ()
"#;
    let module = pjrt_stablehlo::parse_text(text).unwrap();
    let (pretty, again) = pretty_round_trip(&module).unwrap();
    for want in [
        "module @m {",
        // Empty argument attributes cannot be stated with the arguments.
        "func.func public @main(%arg0: tensor<4xf32>, %arg1: tensor<i32>, %arg2: tensor<4xi1>) -> tensor<2xf32> attributes {arg_attrs = [{}, {}, {}]} {",
        // An i32 iota dimension is not what `dim = 0` reads back as.
        "%0 = \"stablehlo.iota\"() {iota_dimension = 0 : i32} : () -> tensor<4xf32>",
        "%1 = stablehlo.compare LT, %arg0, %0, FLOAT : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>",
        "%2 = stablehlo.slice %arg0 [1:4:2] : (tensor<4xf32>) -> tensor<2xf32>",
        "%3 = stablehlo.constant dense<\"0x00000000\"> : tensor<f32>",
        // The body applies `subtract` to its arguments swapped: not `applies`.
        "across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>\n      reducer(%arg3: tensor<f32>, %arg4: tensor<f32>) {",
        "%5 = stablehlo.select %arg2, %arg0, %0 : tensor<4xi1>, tensor<4xf32>",
        "%6:2 = stablehlo.optimization_barrier %arg0, %arg1 : tensor<4xf32>, tensor<i32>",
        "stablehlo.dot_general %arg0, %arg0, batching_dims = [0] x [0], contracting_dims = [] x [], precision = [HIGH, DEFAULT] :",
        "%8 = stablehlo.reduce_precision %arg0, format = e5m10 : tensor<4xf32>",
        "%9 = stablehlo.while(%iterArg0 = %arg1) : tensor<i32>\n    cond {",
        "stablehlo.custom_call @\"my target\"(%arg0) {has_side_effect = true} : (tensor<4xf32>) -> ()",
        "return %2 : tensor<2xf32>",
        // A declaration; no results, so no result attributes to state them with.
        "func.func private @\"decl-1\"(%arg0: tensor<f32>) attributes {res_attrs = []}\n",
    ] {
        assert!(pretty.contains(want), "{want}\nnot in\n{pretty}");
    }
    // The same module, but for the order of the attributes the forms state.
    assert!(sorted_attributes(again) == sorted_attributes(module), "{pretty}");
}
