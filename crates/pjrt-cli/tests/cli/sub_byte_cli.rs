//! `pjrt run` with sub-byte element types (i4, ui4, f4E2M1FN), on both CPU plugins: outputs
//! are written widened so their values survive (s4 as int8, f4 as uint8 bit codes or
//! safetensors' packed F4), widened arrays feed sub-byte parameters back, values that do not
//! fit are refused, and an output that cannot be written is refused before anything runs.

use std::path::{Path, PathBuf};

use pjrt_client::ElementType;
use pjrt_formats::npy::{Dtype, NpyArray};
use pjrt_formats::safetensors::{self, SafeTensors, TensorView};

use crate::common::*;

/// An s4 output (int4 -8, -1, 0, 5, 7) after an f32 one.
const S4_OUT: &str = r#"func.func @main() -> (tensor<2xf32>, tensor<5xi4>) {
  %f = stablehlo.constant dense<[1.5, -2.0]> : tensor<2xf32>
  %c = stablehlo.constant dense<[-8, -1, 0, 5, 7]> : tensor<5xi8>
  %0 = stablehlo.convert %c : (tensor<5xi8>) -> tensor<5xi4>
  return %f, %0 : tensor<2xf32>, tensor<5xi4>
}"#;

/// An i4 parameter, widened back to i8 (and doubled, so the program computes on int4 values).
const S4_IN: &str = r#"func.func @main(%x: tensor<5xi4>) -> tensor<5xi8> {
  %0 = stablehlo.convert %x : (tensor<5xi4>) -> tensor<5xi8>
  %1 = stablehlo.add %0, %0 : tensor<5xi8>
  return %1 : tensor<5xi8>
}"#;

/// A ui4 parameter.
const U4_IN: &str = r#"func.func @main(%x: tensor<3xui4>) -> tensor<3xui8> {
  %0 = stablehlo.convert %x : (tensor<3xui4>) -> tensor<3xui8>
  return %0 : tensor<3xui8>
}"#;

/// An f4E2M1FN parameter as f32, and f4 outputs: 4 elements (fills 2 bytes) and 3 (does not).
const F4: &str = r#"func.func @main(%w: tensor<4xf4E2M1FN>) -> (tensor<4xf32>, tensor<4xf4E2M1FN>, tensor<3xf4E2M1FN>) {
  %0 = stablehlo.convert %w : (tensor<4xf4E2M1FN>) -> tensor<4xf32>
  %c = stablehlo.constant dense<[1.0, 6.0, -0.5]> : tensor<3xf32>
  %1 = stablehlo.convert %c : (tensor<3xf32>) -> tensor<3xf4E2M1FN>
  return %0, %w, %1 : tensor<4xf32>, tensor<4xf4E2M1FN>, tensor<3xf4E2M1FN>
}"#;

/// An f4 output of 4 elements and an s4 one: both fit a safetensors file.
const F4_S4_OUT: &str = r#"func.func @main() -> (tensor<4xf4E2M1FN>, tensor<2xi4>) {
  %c = stablehlo.constant dense<[1.0, 6.0, -0.5, -6.0]> : tensor<4xf32>
  %0 = stablehlo.convert %c : (tensor<4xf32>) -> tensor<4xf4E2M1FN>
  %i = stablehlo.constant dense<[-3, 4]> : tensor<2xi8>
  %1 = stablehlo.convert %i : (tensor<2xi8>) -> tensor<2xi4>
  return %0, %1 : tensor<4xf4E2M1FN>, tensor<2xi4>
}"#;

/// An f8 output after an f32 one: no .npy dtype holds f8 here.
const F8_OUT: &str = r#"func.func @main() -> (tensor<2xf32>, tensor<2xf8E4M3FN>) {
  %f = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %0 = stablehlo.convert %f : (tensor<2xf32>) -> tensor<2xf8E4M3FN>
  return %f, %0 : tensor<2xf32>, tensor<2xf8E4M3FN>
}"#;

fn write_program(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn run(args: &[&str]) -> std::process::Output {
    let out = pjrt(args);
    assert!(out.status.success(), "pjrt {args:?}: {}", stderr(&out));
    out
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn s4_outputs_are_int8_files_that_feed_i4_parameters() {
    let dir = temp_dir("sub-byte-s4");
    let (producer, consumer) = (write_program(&dir, "out.mlir", S4_OUT), write_program(&dir, "in.mlir", S4_IN));
    for plugin in PLUGINS {
        let out_dir = dir.join(format!("out-{plugin}"));
        let out = run(&["run", s(&producer), "--plugin", plugin, "--output-dir", s(&out_dir), "--json"]);
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let o = &report["outputs"][1];
        assert_eq!((o["element_type"].as_str(), o["dtype"].as_str()), (Some("s4"), Some("s4")), "{plugin}: {o}");
        assert_eq!((o["npy_dtype"].as_str(), o["stored_as"].as_str()), (Some("|i1"), Some("int8")), "{plugin}");
        assert_eq!(o["preview"].as_str(), Some("[-8, -1, 0, 5, 7]"), "{plugin}");
        let s4 = out_dir.join("out1.npy");
        let array = NpyArray::read(&s4).unwrap();
        assert_eq!((array.dtype, array.to_vec::<i8>().unwrap()), (Dtype::I8, vec![-8, -1, 0, 5, 7]), "{plugin}");
        // The text summary names the type and the widening.
        let out = run(&["run", s(&producer), "--plugin", plugin, "--output-dir", s(&out_dir)]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("out1: s4[5] = [-8, -1, 0, 5, 7]") && text.contains("(as int8)"), "{plugin}: {text}");

        // The int8 file is accepted back for an i4 parameter: the program sees the int4 values.
        let again = dir.join(format!("again-{plugin}"));
        run(&["run", s(&consumer), "--plugin", plugin, "--input", s(&s4), "--output-dir", s(&again)]);
        let doubled = NpyArray::read(&again.join("out0.npy")).unwrap().to_vec::<i8>().unwrap();
        assert_eq!(doubled, [-16, -2, 0, 10, 14], "{plugin}");

        // ml_dtypes' int4 file (`|V1`, low bits) too.
        let v1 = dir.join("v1.npy");
        NpyArray::new(Dtype::V1, vec![5], vec![0x08, 0x0f, 0x00, 0x05, 0x07]).unwrap().write(&v1).unwrap();
        run(&["run", s(&consumer), "--plugin", plugin, "--input", s(&v1), "--output-dir", s(&again)]);
        let doubled = NpyArray::read(&again.join("out0.npy")).unwrap().to_vec::<i8>().unwrap();
        assert_eq!(doubled, [-16, -2, 0, 10, 14], "{plugin}");

        // int8 8 is no int4 value: refused, naming the input and the element.
        let big = dir.join("big.npy");
        NpyArray::from_elements(vec![5], &[0i8, 1, 2, 8, 3]).unwrap().write(&big).unwrap();
        let out = pjrt(&["run", s(&consumer), "--plugin", plugin, "--input", s(&big), "--output-dir", s(&again)]);
        assert_fails(&out, "input 0 (");
        assert_fails(&out, "element 3 of the int8 array is 8, which is not a s4 value (-8..=7)");
    }
}

#[test]
fn u4_parameters_refuse_values_over_15() {
    let dir = temp_dir("sub-byte-u4");
    let program = write_program(&dir, "u4.mlir", U4_IN);
    let good = dir.join("good.npy");
    NpyArray::from_elements(vec![3], &[0u8, 9, 15]).unwrap().write(&good).unwrap();
    let bad = dir.join("bad.npy");
    NpyArray::from_elements(vec![3], &[0u8, 15, 16]).unwrap().write(&bad).unwrap();
    for plugin in PLUGINS {
        let out_dir = dir.join(format!("out-{plugin}"));
        run(&["run", s(&program), "--plugin", plugin, "--input", s(&good), "--output-dir", s(&out_dir)]);
        assert_eq!(NpyArray::read(&out_dir.join("out0.npy")).unwrap().to_vec::<u8>().unwrap(), [0, 9, 15]);
        let out = pjrt(&["run", s(&program), "--plugin", plugin, "--input", s(&bad), "--output-dir", s(&out_dir)]);
        assert_fails(
            &out,
            &format!("input 0 ({}): element 2 of the uint8 array is 16, which is not a u4 value", s(&bad)),
        );
        // Other dtypes say what a sub-byte parameter takes.
        let wide = dir.join("wide.npy");
        NpyArray::from_elements(vec![3], &[0i32, 1, 2]).unwrap().write(&wide).unwrap();
        let out = pjrt(&["run", s(&program), "--plugin", plugin, "--input", s(&wide), "--output-dir", s(&out_dir)]);
        assert_fails(&out, "int8 or uint8");
    }
}

#[test]
fn f4_values_survive_npy_and_safetensors() {
    let dir = temp_dir("sub-byte-f4");
    let program = write_program(&dir, "f4.mlir", F4);
    // 1.0, 6.0, -0.5, -6.0 as float4_e2m1fn bit codes.
    let codes = [2u8, 7, 9, 15];
    let npy_in = dir.join("codes.npy");
    NpyArray::from_elements(vec![4], &codes).unwrap().write(&npy_in).unwrap();
    let packed = safetensors::pack_sub_byte(ElementType::F4E2M1FN, &codes).unwrap();
    assert_eq!(packed, [0x72, 0xf9]);
    let st_in = dir.join("w.safetensors");
    safetensors::write(&st_in, &[("w", TensorView::new(ElementType::F4E2M1FN, &[4], &packed).unwrap())], &[]).unwrap();
    let tensor_arg = format!("{}:w", s(&st_in));
    for plugin in PLUGINS {
        // uint8 codes, a packed F4 tensor by name, and the whole file as --params: same values.
        for (how, input) in [
            ("npy", ["--input", s(&npy_in)]),
            ("tensor", ["--input", &tensor_arg]),
            ("params", ["--params", s(&st_in)]),
        ] {
            let out_dir = dir.join(format!("out-{plugin}-{how}"));
            let mut args = vec!["run", s(&program), "--plugin", plugin, "--output-dir", s(&out_dir), "--json"];
            args.extend(input);
            let out = run(&args);
            let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(report["outputs"][1]["element_type"].as_str(), Some("f4e2m1fn"), "{plugin} {how}");
            assert_eq!(report["outputs"][1]["stored_as"].as_str(), Some("uint8"), "{plugin} {how}");
            let values = NpyArray::read(&out_dir.join("out0.npy")).unwrap().to_vec::<f32>().unwrap();
            assert_eq!(values, [1., 6., -0.5, -6.], "{plugin} {how}");
            let back = NpyArray::read(&out_dir.join("out1.npy")).unwrap();
            assert_eq!((back.dtype, back.data), (Dtype::U8, codes.to_vec()), "{plugin} {how}");
            // Three f4 elements: uint8 codes in .npy.
            assert_eq!(NpyArray::read(&out_dir.join("out2.npy")).unwrap().data, [2, 7, 9], "{plugin} {how}");
        }
        // A code over 15 is no f4 value.
        let bad = dir.join("bad.npy");
        NpyArray::from_elements(vec![4], &[2u8, 7, 9, 16]).unwrap().write(&bad).unwrap();
        let out_dir = dir.join(format!("bad-{plugin}"));
        let out = pjrt(&["run", s(&program), "--plugin", plugin, "--input", s(&bad), "--output-dir", s(&out_dir)]);
        assert_fails(&out, "element 3 of the uint8 array is 16, which is not a f4e2m1fn value (0..=15, as bit codes)");

        // Safetensors outputs: f4 packed as F4, s4 widened to I8.
        let out_dir = dir.join(format!("st-{plugin}"));
        let producer = write_program(&dir, "f4_s4.mlir", F4_S4_OUT);
        let out = run(&[
            "run",
            s(&producer),
            "--plugin",
            plugin,
            "--output-dir",
            s(&out_dir),
            "--output-format",
            "safetensors",
            "--json",
        ]);
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let stored: Vec<&str> =
            report["outputs"].as_array().unwrap().iter().map(|o| o["stored_as"].as_str().unwrap()).collect();
        assert_eq!(stored, ["F4", "I8"], "{plugin}");
        let file = SafeTensors::open(out_dir.join("outputs.safetensors")).unwrap();
        let f4 = file.tensor("out0").unwrap();
        assert_eq!((f4.dtype(), f4.bytes()), (ElementType::F4E2M1FN, &[0x72, 0xf9][..]), "{plugin}");
        let s4 = file.tensor("out1").unwrap();
        assert_eq!((s4.dtype(), s4.to_vec::<i8>().unwrap()), (ElementType::S8, vec![-3, 4]), "{plugin}");
    }
}

#[test]
fn outputs_that_cannot_be_written_are_refused_before_running() {
    let dir = temp_dir("sub-byte-refused");
    let f4 = write_program(&dir, "f4.mlir", F4);
    let codes = dir.join("codes.npy");
    NpyArray::from_elements(vec![4], &[2u8, 7, 9, 15]).unwrap().write(&codes).unwrap();
    let f8 = write_program(&dir, "f8.mlir", F8_OUT);
    for plugin in PLUGINS {
        // Three f4 elements fill half a byte, which safetensors cannot store.
        let out_dir = dir.join(format!("st-{plugin}"));
        let out = pjrt(&[
            "run",
            s(&f4),
            "--plugin",
            plugin,
            "--input",
            s(&codes),
            "--output-dir",
            s(&out_dir),
            "--output-format",
            "safetensors",
        ]);
        assert_fails(&out, "output 2 is f4e2m1fn[3], which safetensors cannot store");
        assert_fails(&out, "--output-format npy");
        assert!(!out_dir.exists(), "{plugin}: nothing is written");
        // No .npy dtype for f8: refused before the f32 output before it is written.
        let out_dir = dir.join(format!("f8-{plugin}"));
        let out = pjrt(&["run", s(&f8), "--plugin", plugin, "--output-dir", s(&out_dir)]);
        assert_fails(&out, "output 1 is f8e4m3fn[2]");
        assert!(!out_dir.join("out0.npy").exists(), "{plugin}: out0 was written before the failure");
    }
}

/// Two replicas, each taking its shard of an i4 and an f4 input.
const SHARDED: &str = r#"module @sharded attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 2 : i32} {
  func.func public @main(%x: tensor<2xi4>, %w: tensor<2xf4E2M1FN>) -> (tensor<2xi8>, tensor<2xf32>) {
    %0 = stablehlo.convert %x : (tensor<2xi4>) -> tensor<2xi8>
    %1 = stablehlo.convert %w : (tensor<2xf4E2M1FN>) -> tensor<2xf32>
    return %0, %1 : tensor<2xi8>, tensor<2xf32>
  }
}"#;

#[test]
fn sharded_inputs_take_widened_and_packed_sub_byte_arrays() {
    let dir = temp_dir("sub-byte-sharded");
    let program = write_program(&dir, "sharded.mlir", SHARDED);
    let x = dir.join("x.npy");
    NpyArray::from_elements(vec![4], &[-8i8, -1, 3, 7]).unwrap().write(&x).unwrap();
    // 1.0, 6.0, -0.5, -6.0, packed as safetensors' F4.
    let packed = safetensors::pack_sub_byte(ElementType::F4E2M1FN, &[2, 7, 9, 15]).unwrap();
    let w = dir.join("w.safetensors");
    safetensors::write(&w, &[("w", TensorView::new(ElementType::F4E2M1FN, &[4], &packed).unwrap())], &[]).unwrap();
    let w_arg = format!("{}:w", s(&w));
    for plugin in PLUGINS {
        let out_dir = dir.join(format!("out-{plugin}"));
        run(&[
            "run",
            s(&program),
            "--plugin",
            plugin,
            "--shard-inputs",
            "0",
            "--input",
            s(&x),
            &w_arg,
            "--output-dir",
            s(&out_dir),
        ]);
        let read = |k: usize, i: usize| NpyArray::read(&out_dir.join(format!("device{k}/out{i}.npy"))).unwrap();
        assert_eq!(read(0, 0).to_vec::<i8>().unwrap(), [-8, -1], "{plugin}");
        assert_eq!(read(1, 0).to_vec::<i8>().unwrap(), [3, 7], "{plugin}");
        assert_eq!(read(0, 1).to_vec::<f32>().unwrap(), [1., 6.], "{plugin}");
        assert_eq!(read(1, 1).to_vec::<f32>().unwrap(), [-0.5, -6.], "{plugin}");
        // Values are checked on this path too, before the split: the index is the file's.
        let big = dir.join("big.npy");
        NpyArray::from_elements(vec![4], &[0i8, 0, 0, 9]).unwrap().write(&big).unwrap();
        let out = pjrt(&["run", s(&program), "--plugin", plugin, "--shard-inputs", "0", "--input", s(&big), &w_arg]);
        assert_fails(&out, "element 3 of the int8 array is 9, which is not a s4 value");
    }
}
