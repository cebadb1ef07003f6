//! Tuples, rng_bit_generator (THREE_FRY and PHILOX: the same state gives the same bits, run
//! after run and on both plugins; different states different bits), optimization_barrier,
//! custom_call (the text it emits; the plugin runs XLA's own `Sharding` target and refuses an
//! unknown one by name).

use pjrt_builder::{CustomCall, Function, RngAlgorithm, Type};
use pjrt_client::{ElementType, HostArray};

use crate::harness::{assert_exact, run_on_both};

#[test]
fn rng_bits_are_deterministic_and_agree_between_plugins() {
    let f = Function::new("rng");
    let state = f.parameter(ElementType::U64, &[2]).unwrap();
    let philox_state = f.parameter(ElementType::U64, &[3]).unwrap();
    let (next, three_fry) = state.rng_bit_generator(RngAlgorithm::ThreeFry, ElementType::U32, &[4, 8]).unwrap();
    let (_, again) = next.rng_bit_generator(RngAlgorithm::ThreeFry, ElementType::U32, &[4, 8]).unwrap();
    let (_, philox) = philox_state.rng_bit_generator(RngAlgorithm::Philox, ElementType::U64, &[16]).unwrap();
    let (_, philox2) = state.rng_bit_generator(RngAlgorithm::Philox, ElementType::U32, &[5]).unwrap();
    let program = f.finish(&[&three_fry, &again, &philox, &philox2, &next]).unwrap();
    let inputs = |seed: u64| {
        vec![
            HostArray::from_elements(vec![2], &[seed, 0u64]).unwrap(),
            HostArray::from_elements(vec![3], &[seed, 1u64, 2]).unwrap(),
        ]
    };
    let first = run_on_both(&f, &program, &inputs(42));
    let second = run_on_both(&f, &program, &inputs(42));
    let other = run_on_both(&f, &program, &inputs(43));
    let (reference_plugin, reference) = &first[0];
    for (runs, what) in [(&first, "first run"), (&second, "second run")] {
        for (plugin, out) in runs.iter() {
            for (k, array) in out.iter().enumerate() {
                assert_exact(plugin, &format!("{what}, output {k} vs {reference_plugin}"), array, &reference[k]);
            }
        }
    }
    let bits = reference[0].to_vec::<u32>().unwrap();
    assert_eq!(reference[0].dims(), [4, 8]);
    assert_ne!(bits, reference[1].to_vec::<u32>().unwrap(), "the next state gives other bits");
    assert!(bits.iter().collect::<std::collections::HashSet<_>>().len() > 28, "32 random words are mostly distinct");
    for (plugin, out) in &other {
        assert_ne!(out[0].data(), reference[0].data(), "{plugin}: another seed gives other THREE_FRY bits");
        assert_ne!(out[2].data(), reference[2].data(), "{plugin}: another seed gives other PHILOX bits");
    }
    assert_eq!(reference[2].dims(), [16]);
    assert_eq!(reference[2].element_type(), ElementType::U64);
}

#[test]
fn tuples_barriers_and_custom_calls() {
    let f = Function::new("misc");
    let x = f.parameter(ElementType::F32, &[3]).unwrap();
    let n = f.parameter(ElementType::S32, &[]).unwrap();
    let t = f.tuple(&[&x, &n]).unwrap();
    assert_eq!(t.ty().to_string(), "tuple<tensor<3xf32>, tensor<i32>>");
    let nested = f.tuple(&[&t, &x]).unwrap();
    let back = nested.get_tuple_element(0).unwrap().get_tuple_element(1).unwrap();
    let kept = f.optimization_barrier(&[&x, &back]).unwrap();
    let call = CustomCall::new("Sharding").attribute("mhlo.sharding", "\"{replicated}\"");
    let same = f.custom_call(&call, &[&kept[0]], &[x.ty().clone()]).unwrap();
    let program = f.finish(&[&same[0], &kept[1], &f.partition_id().unwrap()]).unwrap();
    let text = program.text().unwrap();
    assert!(
        text.contains(
            "{call_target_name = \"Sharding\", has_side_effect = false, api_version = \
             1 : i32, mhlo.sharding = \"{replicated}\"} : (tensor<3xf32>) -> tensor<3xf32>"
        ),
        "{text}"
    );
    let inputs = [
        HostArray::from_elements(vec![3], &[1f32, -2., 3.5]).unwrap(),
        HostArray::from_elements(vec![], &[7i32]).unwrap(),
    ];
    for (plugin, out) in run_on_both(&f, &program, &inputs) {
        assert_exact(plugin, "Sharding custom call", &out[0], &inputs[0]);
        assert_exact(plugin, "tuple element through the barrier", &out[1], &inputs[1]);
        assert_eq!(out[2].to_vec::<u32>().unwrap(), [0], "{plugin}: partition_id of the only partition");
    }
    // An unknown target: the builder writes it, the plugin refuses it by name.
    let g = Function::new("unknown");
    let y = g.parameter(ElementType::F32, &[2]).unwrap();
    let call =
        CustomCall::new("no_such_target_for_pjrt_builder").has_side_effect(true).backend_config("opaque \"cfg\"");
    let r = g
        .custom_call(&call, &[&y], &[Type::Tensor(pjrt_builder::TensorType::new(ElementType::F32, &[2]).unwrap())])
        .unwrap();
    let program = g.finish(&[&r[0]]).unwrap();
    assert!(program
        .text()
        .unwrap()
        .contains("has_side_effect = true, api_version = 1 : i32, backend_config = \"opaque \\22cfg\\22\""));
    for plugin in crate::support::PLUGINS {
        let client = crate::support::client(plugin, 1);
        let e =
            client.compile(&program, &pjrt_client::CompileOptions::new()).expect_err("an unknown target is refused");
        assert!(e.to_string().contains("no_such_target_for_pjrt_builder"), "{plugin}: {e}");
    }
    // Checked before the plugin sees them.
    let e = g.custom_call(&CustomCall::new(""), &[&y], &[]).unwrap_err().to_string();
    assert!(e.contains("call target name is empty"), "{e}");
    let e = g.custom_call(&CustomCall::new("x").attribute("a} = 1 {", "1"), &[&y], &[]).unwrap_err().to_string();
    assert!(e.contains("is not an attribute name"), "{e}");
    let e = g.custom_call(&CustomCall::new("x").api_version(0), &[&y], &[]).unwrap_err().to_string();
    assert!(e.contains("api_version 0 is not one XLA runs"), "{e}");
    let e = y.get_tuple_element(0).unwrap_err().to_string();
    assert!(e.contains("a tuple is expected"), "{e}");
    let s = g.constant(&[1u64, 2, 3, 4], &[4]).unwrap();
    let e = s.rng_bit_generator(RngAlgorithm::ThreeFry, ElementType::U32, &[2]).unwrap_err().to_string();
    assert!(e.contains("tensor<2xui64> for THREE_FRY"), "{e}");
    let s = g.constant(&[1u64, 2], &[2]).unwrap();
    let e = s.rng_bit_generator(RngAlgorithm::ThreeFry, ElementType::F32, &[2]).unwrap_err().to_string();
    assert!(e.contains("use u32 or u64"), "{e}");
}

/// User text given as attribute names and values cannot reach past its attribute: the name from
/// the review that added a parameter to `@main`, a value that closes the dictionary, one that
/// adds a second attribute and one that comments out the rest of the line are all refused before
/// any text is written; honest attributes still compile and run on both plugins.
#[test]
fn attribute_text_cannot_inject_into_the_program() {
    use pjrt_builder::ParameterOptions;
    const INJECTED_NAME: &str = "my.note = 1 : i32}, %evil: tensor<2xf32> {my.other";
    let f = Function::new("injection");
    let bad_options = [
        ParameterOptions::new().attribute(INJECTED_NAME, "2 : i32"),
        ParameterOptions::new().attribute("my.note", "1 : i32}, %evil: tensor<2xf32> {my.other = 2 : i32"),
        ParameterOptions::new().attribute("my.note", "1 : i32, tf.aliasing_output = 0 : i32"),
        ParameterOptions::new().attribute("my.note", "1 : i32 // rest of the line"),
    ];
    for options in bad_options {
        let e = f.parameter_with(ElementType::F32, &[2], options.clone()).expect_err("refused");
        assert!(e.to_string().contains("func.func"), "{e}");
    }
    let x = f
        .parameter_with(ElementType::F32, &[2], ParameterOptions::new().attribute("my.note", "\"a } , // b\""))
        .unwrap();
    let call_values = ["\"{replicated}\"}, %evil: tensor<2xf32> {x = 1", "\"{replicated}\", b = 1", "["];
    for value in call_values {
        let call = CustomCall::new("Sharding").attribute("mhlo.sharding", value);
        let e = f.custom_call(&call, &[&x], &[x.ty().clone()]).expect_err("refused").to_string();
        assert!(e.contains("is not one MLIR attribute"), "{value}: {e}");
    }
    let call = CustomCall::new("Sharding").attribute(INJECTED_NAME, "1 : i32");
    let e = f.custom_call(&call, &[&x], &[x.ty().clone()]).expect_err("refused").to_string();
    assert!(e.contains("is not an attribute name"), "{e}");
    let call = CustomCall::new("Sharding").attribute("mhlo.sharding", "\"{replicated}\"");
    let y = f.custom_call(&call, &[&x], &[x.ty().clone()]).unwrap();
    let program = f.finish(&[&y[0]]).unwrap();
    let text = program.text().unwrap();
    assert!(!text.contains("%evil"), "{text}");
    assert!(text.contains("arg_attrs = [{my.note = \"a } , // b\"}]"), "{text}");
    let input = HostArray::from_elements(vec![2], &[1.5f32, -2.0]).unwrap();
    for (plugin, out) in run_on_both(&f, &program, std::slice::from_ref(&input)) {
        assert_exact(plugin, "the identity custom call", &out[0], &input);
    }
}
