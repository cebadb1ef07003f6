//! Inputs a plugin could crash on are rejected, or come back as typed errors, on both plugins.

use pjrt_client::{CompileOptions, ElementType, Error, ErrorCode, HostLayout, Placement, Program};

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
        let x = client.buffer_from_slice(&[1f32], &[], Placement::Default).unwrap();
        let e = exe.execute(&[&x]).unwrap_err();
        assert_eq!(e.code(), Some(ErrorCode::ResourceExhausted), "{name}: {e}");
        assert!(e.to_string().contains("4000000000000"), "{name}: the error says how much was asked: {e}");
        // The client is still usable.
        let y = client.buffer_from_slice(&[2f32], &[], Placement::Default).unwrap();
        assert_eq!(y.to_vec::<f32>().unwrap(), [2.]);
    }
}

#[test]
fn shapes_and_strides_that_do_not_match_the_data() {
    let client = support::client("cpu-0.106", 1);
    let data = [0u8; 24];
    let dense = HostLayout::default();
    let cases: Vec<(&str, Vec<i64>, HostLayout, &[u8])> = vec![
        ("negative dimension", vec![2, -3], HostLayout::default(), &data),
        ("element count overflow", vec![1 << 40, 1 << 40], HostLayout::default(), &data),
        ("byte size overflow", vec![i64::MAX / 2], HostLayout::default(), &data),
        ("short slice", vec![2, 4], HostLayout::default(), &data),
        ("long slice", vec![2, 2], HostLayout::default(), &data),
        (
            "strides past the end",
            vec![2, 3],
            HostLayout { byte_strides: Some(vec![16, 4]), ..Default::default() },
            &data,
        ),
        ("negative strides", vec![2, 3], HostLayout { byte_strides: Some(vec![-12, 4]), ..Default::default() }, &data),
        ("misaligned strides", vec![2, 3], HostLayout { byte_strides: Some(vec![12, 3]), ..Default::default() }, &data),
        ("stride count", vec![2, 3], HostLayout { byte_strides: Some(vec![12]), ..Default::default() }, &data),
    ];
    for (what, dims, layout, bytes) in cases {
        let result = client.buffer_from_bytes(bytes, ElementType::F32, &dims, &layout, Placement::Default);
        assert!(matches!(result, Err(Error::InvalidArgument(_))), "{what}: {result:?}");
    }
    // Types the plugin does not know, or that cannot hold data, never reach it.
    for t in [ElementType::INVALID, ElementType::TOKEN, ElementType::F6E2M3FN, ElementType::F6E3M2FN] {
        assert!(client.buffer_from_bytes(&data, t, &[6], &dense, Placement::Default).is_err(), "{t}");
    }
}

#[test]
fn unknown_element_type_values_are_refused() {
    let client = support::client("cpu", 1);
    // A raw value from a future API version.
    let future = ElementType::from_raw(pjrt_client::sys::PJRT_Buffer_Type(34));
    let e = client.buffer_from_bytes(&[0u8; 4], future, &[4], &HostLayout::default(), Placement::Default).unwrap_err();
    assert!(e.to_string().contains("unknown element type"), "{e}");
}
