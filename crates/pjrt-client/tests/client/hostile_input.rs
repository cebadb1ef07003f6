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
