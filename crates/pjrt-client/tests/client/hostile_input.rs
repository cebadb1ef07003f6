//! Inputs a plugin could crash on are rejected, or come back as typed errors, on both plugins.

use pjrt_client::{CompileOptions, ElementType, Error, ErrorCode, ExecuteOptions, HostSource, Program, UploadOptions};

use crate::support;

const HUGE_OUTPUT: &str = r#"
func.func @main(%a: tensor<f32>) -> tensor<100000x100000x100xf32> {
  %0 = stablehlo.broadcast_in_dim %a, dims = [] : (tensor<f32>) -> tensor<100000x100000x100xf32>
  return %0 : tensor<100000x100000x100xf32>
}"#;

#[test]
fn more_memory_than_exists_is_a_resource_error_saying_how_much() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let exe = client.compile(&Program::mlir_text(HUGE_OUTPUT).unwrap(), &CompileOptions::new()).unwrap();
        let x = client.upload(&[1f32], &[]).unwrap();
        let e = exe.execute(&[&x], &ExecuteOptions::new()).unwrap_err();
        assert_eq!(e.code(), Some(ErrorCode::ResourceExhausted), "{name}: {e}");
        assert!(e.to_string().contains("4000000000000"), "{name}: the error says how much was asked: {e}");
        // The client is still usable.
        let y = client.upload(&[2f32], &[]).unwrap();
        assert_eq!(y.to_vec::<f32>().unwrap(), [2.]);
    }
}

#[test]
fn shapes_and_strides_that_do_not_match_the_data() {
    let client = support::client("cpu-0.106", 1);
    let data = [0u8; 24];
    let dense = UploadOptions::new();
    let cases: Vec<(&str, Vec<i64>, UploadOptions<'_>, &[u8])> = vec![
        ("negative dimension", vec![2, -3], UploadOptions::new(), &data),
        ("element count overflow", vec![1 << 40, 1 << 40], UploadOptions::new(), &data),
        ("byte size overflow", vec![i64::MAX / 2], UploadOptions::new(), &data),
        ("short slice", vec![2, 4], UploadOptions::new(), &data),
        ("long slice", vec![2, 2], UploadOptions::new(), &data),
        ("strides past the end", vec![2, 3], UploadOptions::new().byte_strides(vec![16, 4]), &data),
        ("negative strides", vec![2, 3], UploadOptions::new().byte_strides(vec![-12, 4]), &data),
        ("misaligned strides", vec![2, 3], UploadOptions::new().byte_strides(vec![12, 3]), &data),
        ("stride count", vec![2, 3], UploadOptions::new().byte_strides(vec![12]), &data),
    ];
    for (what, dims, layout, bytes) in cases {
        let result = client.upload_with(HostSource::bytes(bytes, ElementType::F32, &dims), &layout);
        assert!(matches!(result, Err(Error::InvalidArgument(_))), "{what}: {result:?}");
    }
    // Types the plugin does not know, or that cannot hold data, never reach it.
    for t in [ElementType::INVALID, ElementType::TOKEN, ElementType::F6E2M3FN, ElementType::F6E3M2FN] {
        assert!(client.upload_with(HostSource::bytes(&data, t, &[6]), &dense).is_err(), "{t}");
    }
}

#[test]
fn unknown_element_type_values_are_refused() {
    let client = support::client("cpu", 1);
    // A raw value from a future API version.
    let future = ElementType::from_i32(34);
    let e = client.upload_with(HostSource::bytes(&[0u8; 4], future, &[4]), &UploadOptions::new()).unwrap_err();
    assert!(e.to_string().contains("unknown element type"), "{e}");
}

/// A constant of `f6E2M3FN` or `f6E3M2FN` that reaches XLA aborts the 0.115 CPU plugin's process
/// (`array.h:316 Check failed`) and is refused by the 0.106 one: the compile refuses it first,
/// in text (custom and generic form), in bytecode, inside another function and through a
/// topology; the same types as arguments and converted results still compile. The process
/// running this test would die if one of them reached the plugin.
#[test]
fn f6_literals_that_abort_the_plugin_are_refused_before_the_compile() {
    for plugin in ["cpu", "cpu-0.106"] {
        let client = support::client(plugin, 1);
        let topology = client.topology().unwrap();
        for (name, t) in [("f6E2M3FN", ElementType::F6E2M3FN), ("f6E3M2FN", ElementType::F6E3M2FN)] {
            let custom = format!(
                "func.func @main() -> tensor<2x{name}> {{\n  \
                 %c = stablehlo.constant dense<[1.0, 2.0]> : tensor<2x{name}>\n  return %c : tensor<2x{name}>\n}}"
            );
            let generic = format!(
                "func.func @main() -> tensor<2x{name}> {{\n  \
                 %c = \"stablehlo.constant\"() <{{value = dense<1.0> : tensor<2x{name}>}}> : () -> tensor<2x{name}>\n  \
                 return %c : tensor<2x{name}>\n}}"
            );
            let nested = format!(
                "func.func private @k() -> tensor<2x{name}> {{\n  \
                 %c = stablehlo.constant dense<1.5> : tensor<2x{name}>\n  return %c : tensor<2x{name}>\n}}\n\
                 func.func @main() -> tensor<2x{name}> {{\n  %0 = call @k() : () -> tensor<2x{name}>\n  \
                 return %0 : tensor<2x{name}>\n}}"
            );
            for text in [&custom, &generic, &nested] {
                let program = Program::mlir_text(text.as_str()).unwrap();
                let bytecode = program.portable_artifact(client.plugin().stablehlo_current_version().unwrap()).unwrap();
                for (form, program) in [("text", &program), ("bytecode", &bytecode)] {
                    let refused = |result: Result<(), Error>| match result {
                        Err(Error::LiteralXlaCannotImport { element_type, op }) => {
                            assert_eq!(
                                (element_type, op.as_str()),
                                (t, "stablehlo.constant"),
                                "{plugin} {form}\n{text}"
                            );
                        }
                        other => panic!("{plugin} {form}: {other:?}\n{text}"),
                    };
                    refused(client.compile(program, &CompileOptions::new()).map(drop));
                    refused(topology.compile(program, &CompileOptions::new(), None).map(drop));
                }
            }
        }
    }
    // Converted from f32 and returned, an f6 array compiles and comes back (0.115).
    let client = support::client("cpu", 1);
    let program = Program::mlir_text(
        "func.func @main(%a: tensor<2xf32>) -> tensor<2xf6E2M3FN> {\n  \
         %0 = stablehlo.convert %a : (tensor<2xf32>) -> tensor<2xf6E2M3FN>\n  return %0 : tensor<2xf6E2M3FN>\n}",
    )
    .unwrap();
    let exe = client.compile(&program, &CompileOptions::new()).unwrap();
    let x = client.upload(&[1f32, 2.], &[2]).unwrap();
    let out = exe.execute(&[&x], &ExecuteOptions::new()).unwrap();
    assert_eq!(out[0].element_type().unwrap(), ElementType::F6E2M3FN);
}
