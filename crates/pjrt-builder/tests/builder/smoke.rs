//! One program through the core ops: parameters, constants, dot_general, broadcast_in_dim,
//! the elementwise ops, compare/select, convert, reshape, transpose and reduce.

use pjrt_builder::{ComparisonDirection, DotDimensions, Function};
use pjrt_client::{ElementType, ExecuteOptions};

use crate::harness::{assert_close_f32, assert_exact, data, run_on_both};

#[test]
fn a_small_network_matches_numpy_on_both_plugins() {
    let d = data("smoke");
    let f = Function::new("smoke");
    let x = f.parameter(ElementType::F32, &d.dims("x")).unwrap();
    let w = f.parameter(ElementType::F32, &d.dims("w")).unwrap();
    let b = f.parameter(ElementType::F32, &d.dims("b")).unwrap();

    let xw = x.dot_general(&w, &DotDimensions::matmul(), None).unwrap();
    let hidden = xw.add(&b.broadcast_in_dim(xw.dims(), &[1]).unwrap()).unwrap().tanh().unwrap();
    let zero = f.scalar(0f32).unwrap();
    let rowsum = hidden.exp().unwrap().reduce(&zero, &[1], |_, acc, v| acc.add(v)).unwrap();
    let half = f.splat(2f32, hidden.dims()).unwrap();
    let mix = hidden
        .abs()
        .unwrap()
        .log()
        .unwrap()
        .subtract(&hidden.negate().unwrap().divide(&half).unwrap())
        .unwrap()
        .maximum(&hidden)
        .unwrap();
    let zeros = f.splat(0f32, hidden.dims()).unwrap();
    let relu_t = hidden
        .compare(&zeros, ComparisonDirection::Gt)
        .unwrap()
        .select(&hidden, &zeros)
        .unwrap()
        .transpose(&[1, 0])
        .unwrap();
    let ints = x
        .multiply(&f.splat(10f32, x.dims()).unwrap())
        .unwrap()
        .convert(ElementType::S32)
        .unwrap()
        .reshape(&[6])
        .unwrap();

    let program = f.finish(&[&hidden, &rowsum, &mix, &relu_t, &ints]).unwrap();
    for (plugin, out) in run_on_both(&f, &program, &[d.array("x"), d.array("w"), d.array("b")]) {
        // tanh, exp and log: 1e-5 relative (XLA's CPU approximations are within a few ulp).
        assert_close_f32(plugin, "hidden", &out[0], &d.array("hidden_want"), 1e-5, 1e-6);
        assert_close_f32(plugin, "rowsum", &out[1], &d.array("rowsum_want"), 1e-5, 1e-6);
        assert_close_f32(plugin, "mix", &out[2], &d.array("mix_want"), 1e-5, 1e-5);
        assert_close_f32(plugin, "relu_t", &out[3], &d.array("relu_t_want"), 1e-5, 1e-6);
        assert_exact(plugin, "ints", &out[4], &d.array("int_want"));
    }
}

#[test]
fn mismatched_operands_name_the_op_and_the_types() {
    let f = Function::new("errors");
    let a = f.parameter(ElementType::F32, &[2, 3]).unwrap();
    let b = f.parameter(ElementType::F32, &[3, 2]).unwrap();
    let err = a.add(&b).unwrap_err().to_string();
    assert_eq!(
        err,
        "stablehlo.add: operand types tensor<2x3xf32> and tensor<3x2xf32>: they differ; elementwise operands must \
         have the same type (convert or broadcast_in_dim one first)"
    );
    let other = Function::new("other");
    let c = other.parameter(ElementType::F32, &[2, 3]).unwrap();
    assert!(a.add(&c).unwrap_err().to_string().contains("belongs to another Function"));
    // A value that escapes a reduce body cannot be used afterwards.
    let mut escaped = None;
    let init = f.scalar(0f32).unwrap();
    a.reduce(&init, &[0, 1], |_, acc, v| {
        let s = acc.add(v)?;
        escaped = Some(s.clone());
        Ok(s)
    })
    .unwrap();
    let escaped = escaped.unwrap();
    assert!(escaped.add(&escaped).unwrap_err().to_string().contains("region that is finished"));
    // An outer value inside a reduce body is refused.
    let outer = f.scalar(1f32).unwrap();
    let err = a.reduce(&init, &[0], |_, acc, _| acc.add(&outer)).unwrap_err();
    assert!(err.to_string().contains("from outside this region"), "{err}");
}

#[test]
fn the_text_is_mlir_generic_form() {
    let f = Function::new("tiny");
    let x = f.parameter_with(ElementType::F32, &[2], pjrt_builder::ParameterOptions::new().buffer_donor()).unwrap();
    let one = f.splat(1f32, &[2]).unwrap();
    let y = x.add(&one).unwrap().compare(&x, ComparisonDirection::Gt).unwrap();
    let s = x.reduce(&f.scalar(0f32).unwrap(), &[0], |_, a, b| a.maximum(b)).unwrap();
    let text = f.to_mlir(&[&y, &s]).unwrap();
    assert_eq!(
        text,
        r#""builtin.module"() ({
  "func.func"() ({
  ^bb0(%0: tensor<2xf32>):
    %1 = "stablehlo.constant"() {value = dense<"0x0000803F"> : tensor<f32>} : () -> tensor<f32>
    %2 = "stablehlo.broadcast_in_dim"(%1) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2xf32>
    %3 = "stablehlo.add"(%0, %2) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %4 = "stablehlo.compare"(%3, %0) {comparison_direction = #stablehlo<comparison_direction GT>, compare_type = #stablehlo<comparison_type FLOAT>} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
    %5 = "stablehlo.constant"() {value = dense<"0x00000000"> : tensor<f32>} : () -> tensor<f32>
    %6 = "stablehlo.reduce"(%0, %5) ({
    ^bb0(%7: tensor<f32>, %8: tensor<f32>):
      %9 = "stablehlo.maximum"(%7, %8) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%9) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 0>} : (tensor<2xf32>, tensor<f32>) -> tensor<f32>
    "func.return"(%4, %6) : (tensor<2xi1>, tensor<f32>) -> ()
  }) {arg_attrs = [{jax.buffer_donor = true}], function_type = (tensor<2xf32>) -> (tensor<2xi1>, tensor<f32>), sym_name = "main", sym_visibility = "public"} : () -> ()
}) {sym_name = "tiny"} : () -> ()
"#
    );
    // Versions: most ops are StableHLO 1.0.0; tan needs 1.4.0, f8E4M3 1.7.0 (both plugins read
    // newer, so check_plugin passes on them: see harness::run_on_both).
    assert_eq!(f.required_stablehlo_version(), (1, 0, 0));
    x.tan().unwrap();
    assert_eq!(f.required_stablehlo_version(), (1, 4, 0));
    f.constant_bits(ElementType::F8E4M3, &[0x38], &[]).unwrap();
    assert_eq!(f.required_stablehlo_version(), (1, 7, 0));
}

#[test]
fn a_parameter_marked_for_aliasing_is_donated_on_both_plugins() {
    let f = Function::new("donating");
    let x = f.parameter_with(ElementType::F32, &[4], pjrt_builder::ParameterOptions::new().aliasing_output(0)).unwrap();
    let program = f.finish(&[&x.add(&x).unwrap()]).unwrap();
    assert_eq!(program.declared_parameters(), Some(&[(ElementType::F32, vec![4])][..]));
    for plugin in crate::support::PLUGINS {
        let client = crate::harness::client(plugin);
        let exe = client.compile(&program, &pjrt_client::CompileOptions::new()).unwrap();
        let input = client.upload(&[1f32, 2., 3., 4.], &[4]).unwrap();
        assert_eq!(
            exe.execute(&[&input], &ExecuteOptions::new()).unwrap()[0].to_vec::<f32>().unwrap(),
            [2., 4., 6., 8.],
            "{plugin}"
        );
        assert!(input.is_deleted().unwrap(), "{plugin}: the argument was donated to the output");
    }
}

/// The program is built in pjrt-stablehlo's IR: its text is that printer's (it reads back to
/// the same text), and the module written as a portable artifact (for the version the program
/// needs) runs on both plugins with the text's answers, bit for bit.
#[test]
fn the_module_runs_as_a_portable_artifact_like_its_text() {
    let d = data("smoke");
    let f = Function::new("portable");
    let x = f.parameter(ElementType::F32, &d.dims("x")).unwrap();
    let w = f.parameter(ElementType::F32, &d.dims("w")).unwrap();
    let y = x.dot_general(&w, &DotDimensions::matmul(), None).unwrap().tanh().unwrap();
    let total = y.reduce(&f.scalar(0f32).unwrap(), &[0, 1], |_, a, b| a.add(b)).unwrap();
    let text = f.finish(&[&y, &total]).unwrap();
    let printed = text.text().unwrap();
    assert_eq!(pjrt_stablehlo::print(&pjrt_stablehlo::parse_text(printed).unwrap()), printed);
    let module = f.to_module(&[&y, &total]).unwrap();
    assert_eq!(module.producer, "StableHLO_v1.0.0");
    let artifact = pjrt_client::Program::from_module(&module).unwrap().with_parameters(f.parameter_types());
    assert_eq!(artifact.bytecode_producer(), Some("StableHLO_v1.0.0"));
    let inputs = [d.array("x"), d.array("w")];
    let from_text = run_on_both(&f, &text, &inputs);
    let from_artifact = run_on_both(&f, &artifact, &inputs);
    for ((plugin, a), (_, b)) in from_text.iter().zip(&from_artifact) {
        for (k, (a, b)) in a.iter().zip(b).enumerate() {
            assert_exact(plugin, &format!("output {k}"), b, a);
        }
    }
}
