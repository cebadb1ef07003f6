//! Text that MLIR reads and this crate once refused (found by parsing StableHLO's own test
//! files): zero-element tensors with a splat (StableHLO's FFT test programs), `chlo.scan` in
//! its custom form, unranked memrefs, quantized types with unsigned storage (`u8`), dense
//! strings of another dialect's type; and a 1-D `dynamic_conv` whose window attributes are
//! longer than its one spatial dimension (StableHLO's `conv_general_dilated_1d_stride_2`
//! test programs), which refines and runs. Each case parses, prints, and the print parses to
//! the same module; the runnable ones run on the 0.115 CPU plugin (the dynamic_conv on both).

use pjrt_client::{Client, ElementType, HostArray, Program};
use pjrt_stablehlo::ir::{Attr, Module, Type};

use crate::support;

/// Parse, print, parse: the same module (locations aside, which these texts do not have),
/// whose pretty print parses to it too. The generic print.
fn round_trip(text: &str) -> String {
    let module = pjrt_stablehlo::parse_text(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let printed = pjrt_stablehlo::print(&module);
    let again = pjrt_stablehlo::parse_text(&printed).unwrap_or_else(|e| panic!("{e}\n{printed}"));
    assert_eq!(again, module, "the print parses to another module\n{printed}");
    assert_eq!(pjrt_stablehlo::print(&again), printed);
    pjrt_stablehlo::fuzz_check_text(text.as_bytes());
    printed
}

/// Compiles `text` and runs it on `args`: each output's element type, dimensions and bytes.
fn run(client: &Client, text: &str, args: &[HostArray]) -> Vec<(ElementType, Vec<i64>, Vec<u8>)> {
    let program = Program::mlir_text(text).unwrap();
    let outs = crate::compile_and_run(client, &program, args, text);
    outs.iter().map(|a| (a.element_type(), a.dims().to_vec(), a.data().to_vec())).collect()
}

fn f32s(dims: Vec<i64>, values: impl IntoIterator<Item = f32>) -> HostArray {
    let data: Vec<u8> = values.into_iter().flat_map(f32::to_le_bytes).collect();
    HostArray::new(ElementType::F32, dims, data).unwrap()
}

#[test]
fn zero_element_splats_parse_print_and_run() {
    let client = support::client("cpu", 1);
    // StableHLO's fft_*_14_15_0_17 programs write their zero-element inputs as a splat of
    // one value; a hex splat of one element is the same constant.
    for (fft, input, output, literal) in [
        ("IRFFT, length = [33]", "14x15x0x17xcomplex<f32>", "14x15x0x33xf32", "(0.0, 0.0)"),
        ("IRFFT, length = [33]", "14x15x0x17xcomplex<f64>", "14x15x0x33xf64", "\"0x00000000000000000000000000000000\""),
        ("RFFT, length = [17]", "14x15x0x17xf32", "14x15x0x9xcomplex<f32>", "\"0x00000000\""),
        ("FFT, length = [17]", "14x15x0x17xcomplex<f32>", "14x15x0x17xcomplex<f32>", "\"0x0000803F00000000\""),
        ("IFFT, length = [17]", "14x15x0x17xcomplex<f64>", "14x15x0x17xcomplex<f64>", "(1.0, 2.0)"),
        ("RFFT, length = [17]", "14x15x0x17xf64", "14x15x0x9xcomplex<f64>", ""),
    ] {
        let text = format!(
            "func.func public @main() -> tensor<{output}> {{\n  \
             %0 = stablehlo.constant dense<{literal}> : tensor<{input}>\n  \
             %1 = stablehlo.fft %0, type = {fft} : (tensor<{input}>) -> tensor<{output}>\n  \
             return %1 : tensor<{output}>\n}}"
        );
        let printed = round_trip(&text);
        assert!(printed.contains(&format!("dense<> : tensor<{input}>")), "{printed}");
        for program in [text.as_str(), printed.as_str()] {
            let outs = run(&client, program, &[]);
            assert_eq!(outs.len(), 1);
            assert!(outs[0].1.contains(&0) && outs[0].2.is_empty(), "{program}: {:?}", outs[0].1);
        }
    }
}

const SCAN: &str = r#"func.func public @main(%x: tensor<5x2xf32>, %init: tensor<2xf32>) -> (tensor<5x2xf32>, tensor<2xf32>) {
  %0:2 = chlo.scan (%x) inits (%init) dimension = 0 attributes {} {
  ^bb0(%in: tensor<2xf32>, %carry: tensor<2xf32>):
    %s = stablehlo.add %in, %carry : tensor<2xf32>
    stablehlo.return %s, %s : tensor<2xf32>, tensor<2xf32>
  } : (tensor<5x2xf32>, tensor<2xf32>) -> (tensor<5x2xf32>, tensor<2xf32>)
  return %0#0, %0#1 : tensor<5x2xf32>, tensor<2xf32>
}"#;

#[test]
fn chlo_scan_in_its_custom_form_parses_with_its_segment_sizes() {
    let printed = round_trip(SCAN);
    assert!(printed.contains("operandSegmentSizes = array<i32: 1, 1>"), "{printed}");
    assert!(printed.contains("resultSegmentSizes = array<i32: 1, 1>"), "{printed}");
    assert!(printed.contains("dimension = 0 : i64"), "{printed}");
    // The form ChloOps.cpp prints (`inits(...)`, `dimension=0`, no attributes), two inputs
    // and two inits.
    let two = r#"func.func @f(%a: tensor<5xi32>, %b: tensor<5xi32>, %c: tensor<i32>, %d: tensor<i32>) {
  %0:4 = chlo.scan(%a, %b) inits(%c, %d) dimension=0 {
  ^bb0(%p: tensor<i32>, %q: tensor<i32>, %r: tensor<i32>, %s: tensor<i32>):
    %m = stablehlo.maximum %p, %r : tensor<i32>
    stablehlo.return %m, %q, %m, %s : tensor<i32>, tensor<i32>, tensor<i32>, tensor<i32>
  } : (tensor<5xi32>, tensor<5xi32>, tensor<i32>, tensor<i32>) -> (tensor<5xi32>, tensor<5xi32>, tensor<i32>, tensor<i32>)
  return
}"#;
    let printed = round_trip(two);
    assert!(printed.contains("operandSegmentSizes = array<i32: 2, 2>"), "{printed}");
    // More carries than results: refused, with where.
    let bad = SCAN.replace("-> (tensor<5x2xf32>, tensor<2xf32>) {", "-> tensor<5x2xf32> {").replace(
        "-> (tensor<5x2xf32>, tensor<2xf32>)\n  return %0#0, %0#1 : tensor<5x2xf32>, tensor<2xf32>",
        "-> ()\n  return %0#0 : tensor<5x2xf32>",
    );
    let err = pjrt_stablehlo::parse_text(&bad).unwrap_err().to_string();
    assert!(err.contains("fewer results than carries"), "{err}");
}

#[test]
fn unranked_memrefs_unsigned_quantized_storage_and_dense_strings_parse_and_print() {
    // stablehlo_convert_to_signless.mlir's unranked memrefs.
    let memref = "func.func @f(%arg0: memref<*xui16>) -> memref<*xui16> {\n  return %arg0 : memref<*xui16>\n}";
    let printed = round_trip(memref);
    assert!(printed.contains("(memref<*xui16>) -> memref<*xui16>"), "{printed}");
    let module = pjrt_stablehlo::parse_text(memref).unwrap();
    let err = pjrt_stablehlo::write_bytecode(&module, pjrt_stablehlo::CURRENT_VERSION).unwrap_err();
    assert!(err.to_string().contains("unranked memref"), "{err}");

    // `u8` storage: unsigned, in the signless i8 with the signed flag clear (as MLIR and VHLO
    // hold it); printed back as `u8`, and not the same type as `i8`.
    let q = |storage: &str| {
        format!(
            "func.func @f(%x: tensor<2xf32>) -> tensor<2x!quant.uniform<{storage}:f32, 3.400000e+01:16>> {{\n  \
             %0 = stablehlo.uniform_quantize %x : (tensor<2xf32>) -> tensor<2x!quant.uniform<{storage}:f32, 3.400000e+01:16>>\n  \
             return %0 : tensor<2x!quant.uniform<{storage}:f32, 3.400000e+01:16>>\n}}"
        )
    };
    let unsigned = round_trip(&q("u8"));
    assert!(unsigned.contains("!quant.uniform<u8:f32, 3.4e1:16>"), "{unsigned}");
    let element =
        |m: &Module| match m.walk().find(|o| o.name == "stablehlo.uniform_quantize").unwrap().results[0].ty.clone() {
            Type::Tensor(t) => *t.element,
            other => panic!("{other:?}"),
        };
    let (u, i) = (pjrt_stablehlo::parse_text(&q("u8")).unwrap(), pjrt_stablehlo::parse_text(&q("i8")).unwrap());
    match (element(&u), element(&i)) {
        (Type::Quantized(u), Type::Quantized(i)) => {
            assert_eq!((u.flags, u.storage_min, u.storage_max), (0, 0, 255));
            assert_eq!((i.flags, i.storage_min, i.storage_max), (1, -128, 127));
            assert_eq!(u.storage, i.storage);
        }
        other => panic!("{other:?}"),
    }
    // Written and read back, the unsigned type is still `u8`.
    let back =
        pjrt_stablehlo::read_bytecode(&pjrt_stablehlo::write_bytecode(&u, pjrt_stablehlo::CURRENT_VERSION).unwrap())
            .unwrap();
    assert!(pjrt_stablehlo::print(&back).contains("!quant.uniform<u8:f32"));
    assert!(pjrt_stablehlo::parse_text(&q("u7")).is_err());

    // stablehlo_probe_instrumentation.mlir's TensorFlow string constant: kept as its text.
    for literal in [r#""hello""#, r#"["a", "b"]"#] {
        let ty = if literal.starts_with('[') { "tensor<2x!tf_type.string>" } else { "tensor<!tf_type.string>" };
        let text = format!(
            "func.func @f() {{\n  %0 = \"tf.Const\"() {{value = dense<{literal}> : {ty}}} : () -> {ty}\n  return\n}}"
        );
        let printed = round_trip(&text);
        let module = pjrt_stablehlo::parse_text(&text).unwrap();
        let op = module.walk().find(|o| o.name == "tf.Const").unwrap();
        assert_eq!(op.attr("value"), Some(&Attr::Opaque(format!("dense<{literal}> : {ty}"))), "{printed}");
    }
    // A string that is not hex data for a tensor of numbers is still an error, as in MLIR.
    for bad in [r#"dense<"hello"> : tensor<2xi8>"#, r#"dense<["a"]> : tensor<1xf32>"#] {
        let text = format!("func.func @f() {{\n  %0 = stablehlo.constant {bad}\n  return\n}}");
        assert!(pjrt_stablehlo::parse_text(&text).is_err(), "{bad}");
    }
}

/// A 1-D `dynamic_conv` as StableHLO's conv_general_dilated_1d_stride_2 programs write it:
/// `window_strides = array<i64: 2, 2>` for one spatial dimension, padding computed from the
/// input's size.
const DYNAMIC_CONV_1D: &str = r#"func.func public @main(%x: tensor<1x?x3xf32>, %w: tensor<4x3x2xf32>) -> tensor<1x?x2xf32> {
  %n = stablehlo.get_dimension_size %x, dim = 1 : (tensor<1x?x3xf32>) -> tensor<i32>
  %c2 = stablehlo.constant dense<2> : tensor<i32>
  %rem = stablehlo.remainder %n, %c2 : tensor<i32>
  %lo = stablehlo.constant dense<1> : tensor<1xi32>
  %hi = stablehlo.reshape %rem : (tensor<i32>) -> tensor<1xi32>
  %pad1 = stablehlo.concatenate %lo, %hi, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %pad = stablehlo.reshape %pad1 : (tensor<2xi32>) -> tensor<1x2xi32>
  %0 = "stablehlo.dynamic_conv"(%x, %w, %pad) {batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, f]x[0, i, o]->[b, 0, f]>, feature_group_count = 1 : i64, window_strides = array<i64: 2, 2>} : (tensor<1x?x3xf32>, tensor<4x3x2xf32>, tensor<1x2xi32>) -> tensor<1x?x2xf32>
  return %0 : tensor<1x?x2xf32>
}"#;

#[test]
fn a_1d_dynamic_conv_with_repeated_window_attributes_refines_and_runs() {
    let client = support::client("cpu", 1);
    let old = support::client("cpu-0.106", 1);
    let module = pjrt_stablehlo::parse_text(DYNAMIC_CONV_1D).unwrap();
    for n in [9u64, 10] {
        let arg = |dims: Vec<u64>| {
            pjrt_stablehlo::parse_text(&format!(
                "func.func @f(%a: tensor<{}xf32>) {{ return }}",
                dims.iter().map(u64::to_string).collect::<Vec<_>>().join("x")
            ))
            .unwrap()
            .walk()
            .find(|o| o.name == "func.func")
            .and_then(|f| match f.attr("function_type") {
                Some(Attr::Type(Type::Function { inputs, .. })) => inputs.first().cloned(),
                _ => None,
            })
            .unwrap()
        };
        let refined = pjrt_stablehlo::refine(&module, &[arg(vec![1, n, 3]), arg(vec![4, 3, 2])])
            .unwrap_or_else(|e| panic!("{n}: {e}"));
        let text = pjrt_stablehlo::print(&refined);
        // (n + 1 + n % 2 - 4) / 2 + 1 outputs, one stride for the one spatial dimension.
        let out = (n + 1 + n % 2 - 4) / 2 + 1;
        assert!(text.contains(&format!("-> tensor<1x{out}x2xf32>")), "{text}");
        assert!(text.contains("window_strides = array<i64: 2>") && !text.contains("dynamic_conv"), "{text}");
        // The same convolution written statically by hand gives the same numbers.
        let x = f32s(vec![1, n as i64, 3], (0..n * 3).map(|i| (i as f32 * 0.37).sin()));
        let w = f32s(vec![4, 3, 2], (0..24).map(|i| (i as f32 * 0.11).cos()));
        let expected_text = format!(
            "func.func public @main(%x: tensor<1x{n}x3xf32>, %w: tensor<4x3x2xf32>) -> tensor<1x{out}x2xf32> {{\n  \
             %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {{stride = [2], pad = [[1, {}]]}} \
             {{batch_group_count = 1 : i64, feature_group_count = 1 : i64}} : (tensor<1x{n}x3xf32>, tensor<4x3x2xf32>) -> tensor<1x{out}x2xf32>\n  \
             return %0 : tensor<1x{out}x2xf32>\n}}",
            n % 2
        );
        let want = run(&client, &expected_text, &[x.clone(), w.clone()]);
        assert_eq!(run(&client, &text, &[x.clone(), w.clone()]), want, "{n}");
        // The older plugin too, through a portable artifact of its version.
        let artifact =
            pjrt_stablehlo::write_bytecode(&refined, pjrt_stablehlo::StableHloVersion::new(1, 16, 1)).unwrap();
        let program = Program::mlir_bytecode(artifact).unwrap();
        let outs = crate::compile_and_run(&old, &program, &[x.clone(), w.clone()], &format!("{n} on 0.106"));
        assert_eq!(outs[0].data(), &want[0].2[..], "{n} on 0.106");
    }
    // Window attributes that differ are not guessed at: refused.
    let differing = DYNAMIC_CONV_1D.replace("array<i64: 2, 2>", "array<i64: 2, 3>");
    let module = pjrt_stablehlo::parse_text(&differing).unwrap();
    let main = module.walk().find(|o| o.name == "func.func").unwrap();
    let Some(Attr::Type(Type::Function { inputs, .. })) = main.attr("function_type") else { panic!() };
    let mut args = inputs.clone();
    if let Type::Tensor(t) = &mut args[0] {
        t.dims[1] = pjrt_stablehlo::ir::Dim::Fixed(9);
    }
    let err = pjrt_stablehlo::refine(&module, &args).unwrap_err().to_string();
    assert!(err.contains("window attributes do not match the 1 spatial dimensions"), "{err}");
}

#[test]
fn chlo_scan_runs_from_its_text_and_its_print() {
    let client = support::client("cpu", 1);
    // A cumulative sum over the rows: the 0.115 plugin lowers chlo.scan itself; the text
    // this crate prints runs the same.
    let x = f32s(vec![5, 2], (0..10).map(|i| i as f32 * 0.5 - 1.0));
    let init = f32s(vec![2], [0.25, -0.5]);
    let printed = round_trip(SCAN);
    let want: Vec<f32> = {
        let mut carry = [0.25f32, -0.5];
        let mut out = Vec::new();
        for r in 0..5 {
            for (c, slot) in carry.iter_mut().enumerate() {
                *slot += (r * 2 + c) as f32 * 0.5 - 1.0;
                out.push(*slot);
            }
        }
        out
    };
    for program in [SCAN, printed.as_str()] {
        let outs = run(&client, program, &[x.clone(), init.clone()]);
        let sums: Vec<f32> = outs[0].2.chunks(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
        assert_eq!(sums, want, "{program}");
        assert_eq!(outs[1].2, outs[0].2[32..].to_vec());
    }
    // Written as a portable artifact, chlo.scan (which JAX does not emit) is refused by name.
    let err =
        pjrt_stablehlo::write_bytecode(&pjrt_stablehlo::parse_text(SCAN).unwrap(), pjrt_stablehlo::CURRENT_VERSION)
            .unwrap_err();
    assert!(err.to_string().contains("chlo.scan"), "{err}");
    // (The quantized programs do not run: neither CPU plugin translates uniform_quantize to
    // HLO; they parse, print and are written in the test above.)
}
