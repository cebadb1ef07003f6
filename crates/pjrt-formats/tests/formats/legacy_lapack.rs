//! The upgrade of jaxlib's pre-FFI LAPACK custom calls (`upgrade_legacy_lapack`) on modules
//! written here: what it rewrites, and what it refuses rather than guess. The models of every
//! JAX release run in `lapack`.

use pjrt_formats::jax_export::{upgrade_legacy_lapack, LegacyLapackError};
use pjrt_stablehlo::ir::Module;

const SCALAR: &str = "dense<> : tensor<0xindex>";

/// `func.func @main` around `body`, returning `ret` of types `ty`.
fn module(args: &str, body: &str, ret: &str, ty: &str) -> Module {
    let text = format!("func.func public @main({args}) -> ({ty}) {{\n{body}\n  return {ret} : {ty}\n}}");
    pjrt_stablehlo::parse_text(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn constants(values: &[(&str, &str)]) -> String {
    values.iter().map(|(name, v)| format!("  %{name} = stablehlo.constant dense<{v}> : tensor<i32>\n")).collect()
}

/// JAX 0.4.30's batched potrf: lower, batch, n, a.
fn potrf(batch: i32, lower: i32) -> Module {
    let body = constants(&[("lower", &lower.to_string()), ("batch", &batch.to_string()), ("n", "2")])
        + &format!(
            "  %r:2 = stablehlo.custom_call @lapack_spotrf(%lower, %batch, %n, %a) {{api_version = 2 : i32, \
             operand_layouts = [{SCALAR}, {SCALAR}, {SCALAR}, dense<[1, 2, 0]> : tensor<3xindex>], \
             output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 3, \
             operand_tuple_indices = []>], result_layouts = [dense<[1, 2, 0]> : tensor<3xindex>, dense<0> : \
             tensor<1xindex>]}} : (tensor<i32>, tensor<i32>, tensor<i32>, tensor<3x2x2xf32>) -> (tensor<3x2x2xf32>, \
             tensor<3xi32>)"
        );
    module("%a: tensor<3x2x2xf32>", &body, "%r#0, %r#1", "tensor<3x2x2xf32>, tensor<3xi32>")
}

fn refusal(mut m: Module) -> String {
    match upgrade_legacy_lapack(&mut m) {
        Err(e @ LegacyLapackError::Refused { .. }) => e.to_string(),
        other => panic!("not refused: {other:?}"),
    }
}

#[test]
fn potrf_becomes_the_ffi_call_with_its_uplo() {
    for (lower, uplo) in [(1, 76), (0, 85)] {
        let mut m = potrf(3, lower);
        assert_eq!(upgrade_legacy_lapack(&mut m).unwrap(), 1);
        let text = pjrt_stablehlo::print(&m);
        assert!(text.contains("lapack_spotrf_ffi"), "{text}");
        assert!(text.contains(&format!("uplo = {uplo} : ui8")), "{text}");
        assert!(!text.contains("lapack_spotrf\""), "{text}");
        let call = m.walk().find(|op| op.name == "stablehlo.custom_call").unwrap();
        assert_eq!((call.operands.len(), call.results.len()), (1, 2));
        // The alias now names operand 0, the matrix.
        assert!(text.contains("operand_index = 0"), "{text}");
    }
}

#[test]
fn a_descriptor_that_disagrees_with_the_shapes_is_refused() {
    let e = refusal(potrf(2, 1));
    assert!(
        e.contains("lapack_spotrf") && e.contains("batch") && e.contains("is 2, but the matrices make it 3"),
        "{e}"
    );
    let e = refusal(potrf(3, 7));
    assert!(e.contains("lower") && e.contains("not 0 or 1"), "{e}");
}

/// JAX 0.4.30's geqrf (batch, m, n, lwork, a -> a, tau, info, work), returning `ret`.
fn geqrf(ret: &str, ty: &str) -> Module {
    let body = constants(&[("b", "1"), ("m", "3"), ("n", "2"), ("lwork", "64")])
        + &format!(
            "  %r:4 = stablehlo.custom_call @lapack_dgeqrf(%b, %m, %n, %lwork, %a) {{api_version = 2 : i32, \
             operand_layouts = [{SCALAR}, {SCALAR}, {SCALAR}, {SCALAR}, dense<[0, 1]> : tensor<2xindex>], \
             output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 4, \
             operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : \
             tensor<1xindex>, {SCALAR}, dense<0> : tensor<1xindex>]}} : (tensor<i32>, tensor<i32>, tensor<i32>, \
             tensor<i32>, tensor<3x2xf64>) -> (tensor<3x2xf64>, tensor<2xf64>, tensor<i32>, tensor<64xf64>)"
        );
    module("%a: tensor<3x2xf64>", &body, ret, ty)
}

#[test]
fn geqrf_info_becomes_a_zero_and_a_used_workspace_is_refused() {
    let mut m = geqrf("%r#0, %r#2", "tensor<3x2xf64>, tensor<i32>");
    upgrade_legacy_lapack(&mut m).unwrap();
    let call = m.walk().find(|op| op.name == "stablehlo.custom_call").unwrap();
    assert_eq!(call.results.len(), 2); // a, tau
    let text = pjrt_stablehlo::print(&m);
    assert!(
        text.contains("lapack_dgeqrf_ffi") && text.contains("value = dense<\"0x00000000\"> : tensor<i32>"),
        "{text}"
    );
    let e = refusal(geqrf("%r#0, %r#3", "tensor<3x2xf64>, tensor<64xf64>"));
    assert!(e.contains("result 3") && e.contains("workspace"), "{e}");
}

/// JAX 0.5.3's trsm_ffi with its third operand, alpha.
fn trsm_ffi(alpha: &str) -> Module {
    let body = format!(
        "  %alpha = stablehlo.constant dense<{alpha}> : tensor<f32>\n  %r = stablehlo.custom_call \
         @lapack_strsm_ffi(%x, %y, %alpha) {{mhlo.backend_config = {{diag = 78 : ui8, side = 76 : ui8, trans_x = 78 \
         : ui8, uplo = 76 : ui8}}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<[0, 1]> : \
         tensor<2xindex>, {SCALAR}], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices \
         = [], operand_index = 1, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>]}} \
         : (tensor<2x2xf32>, tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>"
    );
    module("%x: tensor<2x2xf32>, %y: tensor<2x1xf32>", &body, "%r", "tensor<2x1xf32>")
}

#[test]
fn trsm_ffi_drops_an_alpha_of_one_and_refuses_another() {
    let mut m = trsm_ffi("1.000000e+00");
    assert_eq!(upgrade_legacy_lapack(&mut m).unwrap(), 1);
    let call = m.walk().find(|op| op.name == "stablehlo.custom_call").unwrap();
    assert_eq!(call.operands.len(), 2);
    let text = pjrt_stablehlo::print(&m);
    assert!(text.contains("trans_x = 78 : ui8") && text.contains("operand_index = 1"), "{text}");
    let e = refusal(trsm_ffi("2.000000e+00"));
    assert!(e.contains("alpha") && e.contains("not 1"), "{e}");
}

#[test]
fn gees_with_sorting_is_refused() {
    let body = constants(&[("b", "1"), ("n", "2")])
        + "  %jobvs = stablehlo.constant dense<86> : tensor<ui8>\n  %sort = stablehlo.constant dense<83> : tensor<ui8>\n"
        + &format!(
            "  %r:6 = stablehlo.custom_call @lapack_sgees(%b, %n, %jobvs, %sort, %a) {{api_version = 2 : i32, \
             operand_layouts = [{SCALAR}, {SCALAR}, {SCALAR}, {SCALAR}, dense<[0, 1]> : tensor<2xindex>], \
             result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>, dense<0> : \
             tensor<1xindex>, dense<[0, 1]> : tensor<2xindex>, {SCALAR}, {SCALAR}]}} : (tensor<i32>, tensor<i32>, \
             tensor<ui8>, tensor<ui8>, tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, \
             tensor<2x2xf32>, tensor<i32>, tensor<i32>)"
        );
    let e = refusal(module("%a: tensor<2x2xf32>", &body, "%r#0", "tensor<2x2xf32>"));
    assert!(e.contains("lapack_sgees") && e.contains("sort"), "{e}");
}

#[test]
fn a_shape_polymorphic_call_not_refined_is_refused() {
    // JAX 0.4.30's shape-polymorphic form before refinement: the results' shapes as more
    // operands, named by this attribute (left out here: the refusal comes first).
    let text = pjrt_stablehlo::print(&potrf(3, 1)).replace(
        "call_target_name = \"lapack_spotrf\"",
        "call_target_name = \"lapack_spotrf\", indices_of_shape_operands = dense<[4, 5]> : tensor<2xi64>",
    );
    let e = refusal(pjrt_stablehlo::parse_text(&text).unwrap());
    assert!(e.contains("shape-polymorphic") && e.contains("refine"), "{e}");
}

/// A refined shape-polymorphic export of JAX 0.4.30: `@main` passes the batch size (a
/// dimension of its input, `batches` once per call) to a private `@inner`, whose `potrf`
/// computes its batch descriptor from that argument. `visibility` is `@inner`'s.
fn through_calls(batches: &[&str], visibility: &str) -> Module {
    let mut text = String::from("func.func public @main(%a: tensor<3x2x2xf32>) -> (tensor<3x2x2xf32>) {\n");
    text += "  %dim = stablehlo.get_dimension_size %a, dim = 0 : (tensor<3x2x2xf32>) -> tensor<i32>\n";
    text +=
        "  %three = stablehlo.constant dense<3> : tensor<i32>\n  %two = stablehlo.constant dense<2> : tensor<i32>\n";
    let mut last = "%a".to_string();
    for (k, b) in batches.iter().enumerate() {
        text +=
            &format!("  %r{k} = call @inner(%{b}, {last}) : (tensor<i32>, tensor<3x2x2xf32>) -> tensor<3x2x2xf32>\n");
        last = format!("%r{k}");
    }
    text += &format!("  return {last} : tensor<3x2x2xf32>\n}}\n");
    text += &format!(
        "func.func {visibility} @inner(%b: tensor<i32> {{jax.global_constant = \"b\"}}, %a: tensor<3x2x2xf32>) -> \
         (tensor<3x2x2xf32>) {{\n{}  %batch = stablehlo.multiply %one, %b : tensor<i32>\n\
           %r:2 = stablehlo.custom_call @lapack_spotrf(%lower, %batch, %n, %a) {{api_version = 2 : i32, \
         operand_layouts = [{SCALAR}, {SCALAR}, {SCALAR}, dense<[1, 2, 0]> : tensor<3xindex>], \
         output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 3, \
         operand_tuple_indices = []>], result_layouts = [dense<[1, 2, 0]> : tensor<3xindex>, dense<0> : \
         tensor<1xindex>]}} : (tensor<i32>, tensor<i32>, tensor<i32>, tensor<3x2x2xf32>) -> (tensor<3x2x2xf32>, \
         tensor<3xi32>)\n  return %r#0 : tensor<3x2x2xf32>\n}}\n",
        constants(&[("one", "1"), ("lower", "1"), ("n", "2")])
    );
    pjrt_stablehlo::parse_text(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

#[test]
fn a_descriptor_computed_from_a_private_function_argument_is_known_from_its_calls() {
    // The size of the static dimension, or a constant, passed by every call.
    for batches in [&["dim"][..], &["three"], &["dim", "three", "dim"]] {
        let mut m = through_calls(batches, "private");
        assert_eq!(upgrade_legacy_lapack(&mut m).unwrap(), 1, "{batches:?}");
        let text = pjrt_stablehlo::print(&m);
        assert!(text.contains("lapack_spotrf_ffi") && text.contains("uplo = 76 : ui8"), "{text}");
    }
}

#[test]
fn an_argument_not_known_from_every_call_is_refused() {
    // Calls that disagree (the one with 2 is wrong for 3 matrices, but neither is taken).
    let e = refusal(through_calls(&["dim", "two"], "private"));
    assert!(e.contains("operand 1 (batch) is not an integer constant"), "{e}");
    // A public function is called from outside too.
    let e = refusal(through_calls(&["three"], "public"));
    assert!(e.contains("operand 1 (batch) is not an integer constant"), "{e}");
    // A function some other op refers to (a custom call's body) may be called otherwise.
    let text = pjrt_stablehlo::print(&through_calls(&["three"], "private")).replacen(
        "\"func.return\"(%4)",
        "\"stablehlo.custom_call\"() {call_target_name = \"body_user\", called_computations = [@inner]} : () -> ()\n    \
         \"func.return\"(%4)",
        1,
    );
    assert!(text.contains("body_user"), "{text}");
    let e = refusal(pjrt_stablehlo::parse_text(&text).unwrap_or_else(|e| panic!("{e}\n{text}")));
    assert!(e.contains("operand 1 (batch) is not an integer constant"), "{e}");
    // The batch a call passes is checked against the shapes as a constant would be.
    let e = refusal(through_calls(&["two"], "private"));
    assert!(e.contains("operand 1 (batch) is 2, but the matrices make it 3"), "{e}");
}
