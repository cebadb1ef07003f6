//! Argument names read from MLIR, JAX paths as tensor names, and binding by name and by type.

use pjrt_client::Program;

use super::program::tensor_type;
use super::*;

fn f32s(name: &str, dims: &[i64]) -> Argument {
    Argument::named(name).with_type(ElementType::F32, &dims.iter().map(|&d| Some(d)).collect::<Vec<_>>())
}

fn tensor<'a>(name: &'a str, element_type: ElementType, dims: &'a [i64]) -> NamedTensor<'a> {
    NamedTensor { name, element_type, dims }
}

#[test]
fn parameter_names_from_mlir() {
    let program = Program::mlir_text(
        r#"module @m {
  func.func public @main(%arg0: tensor<2xf32> {jax.arg_info = "params['w1']", mhlo.sharding = "{replicated}"},
      %arg1: tensor<f32> {jax.arg_info = "x\"q"}, %arg2: tensor<2x!stablehlo.token>, %bias: tensor<3xf32>,
      %arg4: tensor<i32> {mhlo.layout_mode = "default"}) -> (tensor<2xf32> {jax.result_info = "r"}) {
    return %arg0 : tensor<2xf32>
  }
}"#,
    )
    .unwrap();
    let names: Vec<Option<String>> = program_arguments(&program).unwrap().into_iter().map(|a| a.name).collect();
    assert_eq!(names, [Some("params['w1']".into()), Some("x\"q".into()), None, Some("bias".into()), None]);
    // JAX with debug info (jax.export): names as argument locations, inline or aliased.
    let located = Program::mlir_text(
            r#"module @jit_f {
  func.func public @main(%arg0: tensor<4xf32> loc("params['b']"), %arg1: tensor<3xf32> loc(#loc2), %arg2: tensor<f32> loc(#loc3), %arg3: tensor<f32> loc("f.py":3:1)) -> (tensor<4xf32>) {
    return %arg0 : tensor<4xf32> loc(#loc4)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc2 = loc("x")
#loc3 = loc("f.py":1:2)
"#,
        )
        .unwrap();
    let names: Vec<Option<String>> = program_arguments(&located).unwrap().into_iter().map(|a| a.name).collect();
    assert_eq!(names, [Some("params['b']".into()), Some("x".into()), None, None]);
    let groups: Vec<Option<String>> = program_arguments(&located).unwrap().into_iter().map(|a| a.group).collect();
    assert_eq!(groups, [Some("params".into()), Some("x".into()), None, None]);
    let plain = Program::mlir_text("func.func @main() -> () {\n  return\n}").unwrap();
    assert_eq!(program_arguments(&plain).unwrap(), Vec::<Argument>::new());
}

#[test]
fn tensor_types_from_mlir() {
    assert_eq!(tensor_type("tensor<2x?xf32>"), Some((ElementType::F32, vec![Some(2), None])));
    assert_eq!(tensor_type("tensor<i1> {a}"), Some((ElementType::PRED, vec![])));
    assert_eq!(tensor_type("tensor<3xcomplex<f64>>"), Some((ElementType::C128, vec![Some(3)])));
    assert_eq!(tensor_type("tensor<4xf8E4M3FN, #enc>"), Some((ElementType::F8E4M3FN, vec![Some(4)])));
    assert_eq!(tensor_type("tensor<2x!stablehlo.token>"), None);
    assert_eq!(tensor_type("!stablehlo.token"), None);
}

#[test]
fn jax_paths_become_tensor_names() {
    let c = spellings("params['layer1']['w']");
    for want in ["params['layer1']['w']", "layer1.w", "params.layer1.w", "layer1/w", "params/layer1/w"] {
        assert!(c.contains(&want.to_string()), "{want}: {c:?}");
    }
    assert!(spellings("params['w1']").contains(&"w1".to_string()));
    assert!(spellings("layers[0].w").contains(&"0.w".to_string()));
    assert!(spellings("layers[0].w").contains(&"[0].w".to_string()));
    assert_eq!(spellings("['a'][0]"), ["['a'][0]", "a.0", "a/0"]);
    // Haiku's module names hold slashes; they stay as they are.
    assert!(spellings("['res_net/~/conv']['w']").contains(&"res_net/~/conv/w".to_string()));
    // Not a path: only the name itself.
    assert_eq!(spellings("a[b"), ["a[b"]);
}

#[test]
fn names_decide_whatever_the_order() {
    let arguments = [
        f32s("params['a']", &[3]).in_group("p"),
        Argument::named("params['b']").with_type(ElementType::S32, &[]).in_group("p"),
        f32s("params['c']", &[3]).in_group("p"),
        f32s("x", &[3]),
    ];
    let (a, b, c) =
        (tensor("a", ElementType::F32, &[3]), tensor("b", ElementType::S32, &[]), tensor("c", ElementType::F32, &[3]));
    for order in [[a, b, c], [b, a, c], [c, b, a]] {
        let binding = bind(&arguments, &order).unwrap();
        assert_eq!(binding.by(), BoundBy::Name);
        for (arg, t) in binding.tensors().iter().take(3).enumerate() {
            assert_eq!(order[t.unwrap()].name, ["a", "b", "c"][arg]);
        }
        assert_eq!(binding.caller_arguments(), [3]);
        assert!(binding.note().is_none());
    }
}

#[test]
fn missing_extra_and_mismatched_tensors_are_named() {
    let arguments = [f32s("params['a']", &[3]).in_group("p"), f32s("params['c']", &[3]).in_group("p"), f32s("x", &[3])];
    let a = tensor("params.a", ElementType::F32, &[3]);
    let e = bind(&arguments, &[a]).unwrap_err();
    assert!(matches!(&e, BindingError::MissingTensors { arguments, .. } if arguments == &["params['c']"]), "{e}");
    assert!(e.to_string().contains("params.c"), "{e}");
    let e = bind(&arguments, &[a, tensor("params.c", ElementType::F32, &[3]), tensor("d", ElementType::F32, &[3])])
        .unwrap_err();
    assert!(matches!(&e, BindingError::ExtraTensors { tensors, .. } if tensors == &["d"]), "{e}");
    assert!(e.to_string().contains("x, f32[3]"), "{e}");
    let e = bind(&arguments, &[a, tensor("c", ElementType::S32, &[3])]).unwrap_err();
    assert!(matches!(e, BindingError::Mismatch { .. }), "{e}");
    assert!(e.to_string().contains("'c' (s32[3])"), "{e}");
    // One tensor, two arguments that take its name.
    let twice = [f32s("params['w']", &[3]), f32s("opt['w']", &[3])];
    let e = bind(&twice, &[tensor("w", ElementType::F32, &[3])]).unwrap_err();
    assert!(matches!(e, BindingError::AmbiguousName { .. }), "{e}");
}

#[test]
fn without_names_types_must_leave_one_assignment() {
    let arguments = [
        f32s("params['a']", &[3]),
        Argument::named("params['b']").with_type(ElementType::S32, &[]),
        f32s("params['c']", &[2]),
        f32s("x", &[3]),
    ];
    // Sorted by dtype then name, under names the model does not use.
    let tensors = [
        tensor("p1", ElementType::S32, &[]),
        tensor("p0", ElementType::F32, &[3]),
        tensor("p2", ElementType::F32, &[2]),
    ];
    let binding = bind(&arguments, &tensors).unwrap();
    assert_eq!(binding.by(), BoundBy::DtypeAndShape);
    assert_eq!(binding.tensors(), [Some(1), Some(0), Some(2), None]);
    assert!(binding.note().unwrap().contains("not in file order"), "{:?}", binding.note());
    // Two tensors of one type: which is which is not known.
    let same = [f32s("u", &[3]), f32s("v", &[3])];
    let e = bind(&same, &[tensor("p", ElementType::F32, &[3]), tensor("q", ElementType::F32, &[3])]).unwrap_err();
    assert!(matches!(&e, BindingError::Ambiguous { tensors, .. } if tensors == &["p", "q"]), "{e}");
    // Nothing fits, too many tensors.
    assert!(matches!(
        bind(&same, &[tensor("p", ElementType::S32, &[3])]).unwrap_err(),
        BindingError::NoTensorFits { .. }
    ));
    let three =
        [tensor("p", ElementType::F32, &[3]), tensor("q", ElementType::F32, &[2]), tensor("r", ElementType::F32, &[1])];
    assert!(matches!(bind(&same, &three).unwrap_err(), BindingError::TooManyTensors { .. }));
    // Forced step by step: raw bf16 bits fit a bf16 and a u16 argument, bf16 only the first.
    let mixed = [
        Argument::unnamed().with_type(ElementType::BF16, &[Some(2)]),
        Argument::unnamed().with_type(ElementType::U16, &[Some(2)]),
    ];
    let binding =
        bind(&mixed, &[tensor("bits", ElementType::U16, &[2]), tensor("b", ElementType::BF16, &[2])]).unwrap();
    assert_eq!(binding.tensors(), [Some(1), Some(0)]);
    // Unknown types fit anything: one argument, one tensor.
    let binding = bind(&[Argument::unnamed()], &[tensor("p", ElementType::F32, &[3])]).unwrap();
    assert_eq!(binding.tensors(), [Some(0)]);
}
