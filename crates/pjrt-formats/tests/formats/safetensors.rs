//! Safetensors files: read what Python's `safetensors` package writes, round-trip our writer,
//! refuse broken files with typed errors, and upload whole files on both CPU plugins.

use std::path::PathBuf;

use pjrt_client::half::{bf16, f16};
use pjrt_client::num_complex::Complex;
use pjrt_client::{CompileOptions, DownloadOptions, ElementType, ExecuteOptions, Placement, Program};
use pjrt_formats::npy::{Dtype, NpyArray};
use pjrt_formats::safetensors::{self, SafeTensors, SafetensorsError, TensorView};
use pjrt_formats::{ClientExt as _, Error};

use crate::support;

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/safetensors")
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pjrt-safetensors-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// (name, dtype, shape, hex of the bytes) from the generator's JSON.
fn expected_tensors() -> Vec<(String, String, Vec<i64>, String)> {
    let text = std::fs::read_to_string(data_dir().join("all_dtypes.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json.as_object()
        .unwrap()
        .iter()
        .map(|(name, v)| {
            let shape = v["shape"].as_array().unwrap().iter().map(|d| d.as_i64().unwrap()).collect();
            (name.clone(), v["dtype"].as_str().unwrap().to_string(), shape, v["hex"].as_str().unwrap().to_string())
        })
        .collect()
}

#[test]
fn reads_files_written_by_python_safetensors() {
    let path = data_dir().join("all_dtypes.safetensors");
    let file = SafeTensors::open(&path).unwrap();
    assert!(!file.is_mapped(), "read into memory of its own");
    // SAFETY: the repository's test data, which nothing modifies while the tests run.
    let mapped = unsafe { SafeTensors::open_mapped(&path) }.unwrap();
    assert!(mapped.is_mapped());
    assert!(mapped.tensors().zip(file.tensors()).all(|(m, r)| m == r), "mapped and read give the same tensors");
    let expected = expected_tensors();
    assert_eq!(file.len(), expected.len());
    for (name, dtype, shape, bytes) in &expected {
        let view = file.tensor(name).unwrap();
        assert_eq!(Some(view.dtype()), safetensors::element_type_of(dtype), "{name}");
        assert_eq!(view.dims(), &shape[..], "{name}");
        assert_eq!(hex(view.bytes()), *bytes, "{name}");
    }
    // Typed values, checked against the generator's formula (arange(6), signed types minus 2).
    let t = |name: &str| file.tensor(name).unwrap();
    assert_eq!(t("bool").to_vec::<bool>().unwrap(), [false, true, false, true, false, true]);
    assert_eq!(t("i8").to_vec::<i8>().unwrap(), [-2, -1, 0, 1, 2, 3]);
    assert_eq!(t("u64").to_vec::<u64>().unwrap(), [0, 1, 2, 3, 4, 5]);
    assert_eq!(t("i64").to_vec::<i64>().unwrap(), [-2, -1, 0, 1, 2, 3]);
    assert_eq!(t("f16").to_vec::<f16>().unwrap(), (0..6).map(|v| f16::from_f32(v as f32)).collect::<Vec<_>>());
    assert_eq!(t("bf16").to_vec::<bf16>().unwrap(), (0..6).map(|v| bf16::from_f32(v as f32)).collect::<Vec<_>>());
    assert_eq!(t("f64").to_vec::<f64>().unwrap(), [0., 1., 2., 3., 4., 5.]);
    assert_eq!(
        t("c64").to_vec::<Complex<f32>>().unwrap(),
        (0..6).map(|v| Complex::new(v as f32, v as f32 + 0.5)).collect::<Vec<_>>()
    );
    assert_eq!(t("f8_e4m3").dtype(), ElementType::F8E4M3FN);
    assert_eq!(t("f8_e4m3").bytes(), [0x00, 0x38, 0x40, 0x44, 0x48, 0x4a]);
    assert_eq!(t("f8_e5m2").bytes(), [0x00, 0x3c, 0x40, 0x42, 0x44, 0x45]);
    assert_eq!(t("scalar").to_vec::<f32>().unwrap(), [7.5]);
    assert_eq!(t("scalar").dims(), &[] as &[i64]);
    assert_eq!(t("empty").dims(), [0, 3]);
    assert!(t("f32").to_vec::<i32>().is_err());
    assert_eq!(file.metadata().get("format").map(String::as_str), Some("np"));
    // Names come in data order (the package sorts by alignment, then name).
    let names: Vec<&str> = file.names().collect();
    let mut by_offset: Vec<(usize, &str)> =
        file.tensors().map(|(n, v)| (v.bytes().as_ptr() as usize, n)).collect::<Vec<_>>();
    by_offset.sort();
    assert_eq!(names, by_offset.iter().map(|(_, n)| *n).collect::<Vec<_>>());
    assert_eq!(names[0], "u64");
}

#[test]
fn our_writer_round_trips_every_dtype_and_python_layout() {
    let dir = temp_dir("round-trip");
    let source = SafeTensors::open(data_dir().join("all_dtypes.safetensors")).unwrap();
    // Rewrite the Python file in reverse order with our writer; read it back.
    let tensors: Vec<(&str, TensorView<'_>)> = source.tensors().rev().collect();
    let path = dir.join("ours.safetensors");
    safetensors::write(&path, &tensors, &[("who", "pjrt-client"), ("quote\"d", "é")]).unwrap();
    let back = SafeTensors::open(&path).unwrap();
    // Stored widest element type first (so each tensor is aligned to its element size); tensors
    // of one width keep the order given.
    let mut stored = tensors.clone();
    stored.sort_by_key(|(_, v)| std::cmp::Reverse(v.dtype().bits().unwrap_or(0)));
    assert_eq!(back.names().collect::<Vec<_>>(), stored.iter().map(|(n, _)| *n).collect::<Vec<_>>());
    for (name, view) in &tensors {
        assert_eq!(back.tensor(name).unwrap(), *view, "{name}");
    }
    assert_eq!(back.metadata().get("quote\"d").map(String::as_str), Some("é"));
    // The data starts 64-byte aligned (the reference writer: 8).
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!((8 + u64::from_le_bytes(bytes[..8].try_into().unwrap())) % 64, 0);

    // From .npy arrays: ml_dtypes bf16 (V2) is stored as BF16; npy again on the way out.
    let w = NpyArray::from_elements(vec![2, 2], &[1f32, -2., 3., 4.5]).unwrap();
    let b = NpyArray::new(Dtype::V2, vec![2], bf16::from_f32(1.5).to_le_bytes().repeat(2)).unwrap();
    let views = [("w", TensorView::from_npy(&w).unwrap()), ("b", TensorView::from_npy(&b).unwrap())];
    let bytes = safetensors::to_bytes(&views, &[]).unwrap();
    let back = SafeTensors::from_bytes(bytes).unwrap();
    assert!(!back.is_mapped());
    assert_eq!(back.tensor("b").unwrap().dtype(), ElementType::BF16);
    assert_eq!(back.tensor("b").unwrap().to_npy().unwrap(), b);
    assert_eq!(back.tensor("w").unwrap().to_npy().unwrap(), w);
    assert!(back.metadata().is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A file from a header text and a data section.
fn file(header: &str, data: &[u8]) -> Vec<u8> {
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

#[test]
fn broken_files_are_typed_errors() {
    use SafetensorsError as E;
    let entry = |name: &str, dtype: &str, shape: &str, begin: u64, end: u64| {
        format!(r#""{name}":{{"dtype":"{dtype}","shape":{shape},"data_offsets":[{begin},{end}]}}"#)
    };
    let one = |e: String| format!("{{{e}}}");
    let two = |a: String, b: String| format!("{{{a},{b}}}");
    let mut huge_length = 8u64.to_le_bytes().to_vec();
    huge_length[7] = 0xff;
    let mut beyond_file = file("{}", &[]);
    beyond_file[0] = 200;
    type Check = fn(&SafetensorsError) -> bool;
    let cases: Vec<(&str, Vec<u8>, Check)> = vec![
        ("empty file", vec![], |e| matches!(e, E::TooShort { len: 0 })),
        ("7 bytes", vec![1; 7], |e| matches!(e, E::TooShort { len: 7 })),
        ("header length 2^63", huge_length, |e| matches!(e, E::HeaderLength { .. })),
        ("header length beyond the file", beyond_file, |e| matches!(e, E::HeaderLength { header_len: 200, .. })),
        ("not JSON", file("{not json", &[]), |e| matches!(e, E::BadHeader(_))),
        ("not an object", file("[1, 2]", &[]), |e| matches!(e, E::BadHeader(_))),
        ("entry not an object", file(r#"{"a": 3}"#, &[]), |e| matches!(e, E::BadHeader(_))),
        (
            "unknown field",
            file(&one(entry("a", "U8", "[1]", 0, 1).replace('}', r#","x":1}"#)), &[0]),
            |e| matches!(e, E::BadHeader(m) if m.contains("unknown field 'x'")),
        ),
        (
            "missing data_offsets",
            file(r#"{"a":{"dtype":"U8","shape":[1]}}"#, &[0]),
            |e| matches!(e, E::BadHeader(m) if m.contains("data_offsets")),
        ),
        ("three offsets", file(r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}}"#, &[0]), |e| {
            matches!(e, E::BadHeader(_))
        }),
        ("negative dimension", file(&one(entry("a", "U8", "[-1]", 0, 1)), &[0]), |e| matches!(e, E::BadHeader(_))),
        ("float dimension", file(&one(entry("a", "U8", "[1.5]", 0, 1)), &[0]), |e| matches!(e, E::BadHeader(_))),
        (
            "rank 65",
            file(&one(entry("a", "U8", &format!("[{}1]", "1,".repeat(64)), 0, 1)), &[0]),
            |e| matches!(e, E::BadHeader(m) if m.contains("more than 64")),
        ),
        ("metadata not strings", file(r#"{"__metadata__":{"a":1}}"#, &[]), |e| matches!(e, E::BadHeader(_))),
        (
            "duplicate names",
            file(&two(entry("a", "U8", "[1]", 0, 1), entry("a", "U8", "[1]", 1, 2)), &[0, 0]),
            |e| matches!(e, E::DuplicateName(n) if n == "a"),
        ),
        (
            "unknown dtype",
            file(&one(entry("a", "F6_E2M3", "[4]", 0, 3)), &[0; 3]),
            |e| matches!(e, E::UnknownDtype { dtype, .. } if dtype == "F6_E2M3"),
        ),
        ("F4 filling half a byte", file(&one(entry("a", "F4", "[3]", 0, 2)), &[0; 2]), |e| {
            matches!(e, E::Misaligned { elements: 3, .. })
        }),
        ("F4 stored unpacked", file(&one(entry("a", "F4", "[2]", 0, 2)), &[0; 2]), |e| {
            matches!(e, E::SizeMismatch { expected: 1, actual: 2, .. })
        }),
        ("huge shape", file(&one(entry("a", "F64", "[4294967296,4294967296]", 0, 8)), &[0; 8]), |e| {
            matches!(e, E::ShapeOverflow { .. })
        }),
        ("offsets reversed", file(&one(entry("a", "U8", "[1]", 1, 0)), &[0]), |e| matches!(e, E::OutOfRange { .. })),
        ("offsets past the end", file(&one(entry("a", "U8", "[4]", 0, 4)), &[0]), |e| {
            matches!(e, E::OutOfRange { end: 4, data_len: 1, .. })
        }),
        ("offsets past 2^64", file(&one(entry("a", "U8", "[1]", u64::MAX, u64::MAX)), &[0]), |e| {
            matches!(e, E::OutOfRange { .. })
        }),
        ("offsets do not match dtype*shape", file(&one(entry("a", "F32", "[2]", 0, 4)), &[0; 4]), |e| {
            matches!(e, E::SizeMismatch { expected: 8, actual: 4, .. })
        }),
        (
            "overlap",
            file(&two(entry("a", "U8", "[2]", 0, 2), entry("b", "U8", "[2]", 1, 3)), &[0; 3]),
            |e| matches!(e, E::Overlap { tensor, other } if tensor == "b" && other == "a"),
        ),
        ("gap", file(&two(entry("a", "U8", "[1]", 0, 1), entry("b", "U8", "[1]", 2, 3)), &[0; 3]), |e| {
            matches!(e, E::Gap { begin: 1, end: 2 })
        }),
        ("trailing bytes", file(&one(entry("a", "U8", "[1]", 0, 1)), &[0; 5]), |e| {
            matches!(e, E::Gap { begin: 1, end: 5 })
        }),
        (
            "deep nesting",
            file(&format!("{{\"__metadata__\":{}{}", "[".repeat(100_000), "]".repeat(100_000)), &[]),
            |e| matches!(e, E::BadHeader(_)),
        ),
    ];
    for (what, bytes, check) in cases {
        match SafeTensors::from_bytes(bytes) {
            Err(e) => assert!(check(&e), "{what}: wrong error {e:?}"),
            Ok(f) => panic!("{what}: accepted: {f:?}"),
        }
    }
    // Through a file, the error names it and converts into the crate's error.
    let dir = temp_dir("broken");
    let path = dir.join("bad.safetensors");
    std::fs::write(&path, file(&one(entry("a", "F6_E3M2", "[4]", 0, 3)), &[0; 3])).unwrap();
    let e = SafeTensors::open(&path).unwrap_err();
    assert!(matches!(e.without_path(), E::UnknownDtype { .. }));
    let message = Error::from(e).to_string();
    assert!(
        message.contains("bad.safetensors") && message.contains("F6_E3M2") && message.contains("BF16"),
        "{message}"
    );
    assert!(matches!(SafeTensors::open(dir.join("missing.safetensors")), Err(E::Io { .. })));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn mutated_files_never_panic() {
    let seed = std::fs::read(data_dir().join("all_dtypes.safetensors")).unwrap();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for i in 0..3000 {
        let mut v = seed.clone();
        let pos = (next() as usize) % v.len();
        match i % 3 {
            0 => v[pos] = next() as u8,
            1 => v.truncate(pos),
            _ => v.insert(pos, b"{}[],:\"0123456789"[pos % 17]),
        }
        if let Ok(f) = SafeTensors::from_bytes(v) {
            for (_, view) in f.tensors() {
                assert_eq!(view.bytes().len(), view.dtype().packed_bytes(view.element_count()).unwrap());
            }
        }
    }
}

#[test]
fn whole_files_upload_on_both_plugins() {
    let file = SafeTensors::open(data_dir().join("all_dtypes.safetensors")).unwrap();
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let mut reports = Vec::new();
        let buffers = client
            .upload_safetensors(&file, Placement::Default, |p| {
                reports.push((p.tensor.to_string(), p.tensors_done, p.tensors_total, p.bytes_done, p.bytes_total))
            })
            .unwrap();
        assert_eq!(buffers.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), file.names().collect::<Vec<_>>());
        assert_eq!(reports.len(), file.len());
        let last = reports.last().unwrap();
        assert_eq!((last.1, last.2, last.3, last.4), (file.len(), file.len(), file.data_bytes(), file.data_bytes()));
        assert!(reports.windows(2).all(|w| w[0].3 <= w[1].3));
        for (tensor, buffer) in &buffers {
            let view = file.tensor(tensor).unwrap();
            assert_eq!(buffer.element_type().unwrap(), view.dtype(), "{name} {tensor}");
            assert_eq!(buffer.dimensions().unwrap(), view.dims(), "{name} {tensor}");
            assert_eq!(buffer.to_bytes(DownloadOptions::new()).unwrap(), view.bytes(), "{name} {tensor}");
        }
    }
}

#[test]
fn uploaded_weights_feed_a_program() {
    let w: Vec<u8> = [1f32, 2., 3., 4.].iter().flat_map(|v| v.to_le_bytes()).collect();
    let b: Vec<u8> = [10f32, 20.].iter().flat_map(|v| v.to_le_bytes()).collect();
    let bytes = safetensors::to_bytes(
        &[
            ("w", TensorView::new(ElementType::F32, &[2, 2], &w).unwrap()),
            ("b", TensorView::new(ElementType::F32, &[2], &b).unwrap()),
        ],
        &[],
    )
    .unwrap();
    let file = SafeTensors::from_bytes(bytes).unwrap();
    let program = Program::mlir_text(
        r#"func.func @main(%w: tensor<2x2xf32>, %b: tensor<2xf32>, %x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.dot_general %w, %x, contracting_dims = [1] x [0] : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %1 = stablehlo.add %0, %b : tensor<2xf32>
  return %1 : tensor<2xf32>
}"#,
    )
    .unwrap();
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let exe = client.compile(&program, &CompileOptions::new()).unwrap();
        let weights = client.upload_safetensors(&file, Placement::Default, |_| {}).unwrap();
        let x = client.upload(&[1f32, 1.], &[2]).unwrap();
        let out = exe.execute(&[&weights[0].1, &weights[1].1, &x], &ExecuteOptions::new()).unwrap();
        assert_eq!(out[0].to_vec::<f32>().unwrap(), [13., 27.], "{name}");
    }
}

/// float4_e2m1fn codes and their values (OCP MX e2m1: sign, 2 exponent bits, 1 mantissa bit).
const F4_CODES: [(u8, f32); 8] = [(0, 0.), (1, 0.5), (2, 1.), (7, 6.), (9, -0.5), (12, -2.), (5, 3.), (15, -6.)];

#[test]
fn packed_f4_tensors_upload_as_their_values() {
    let codes: Vec<u8> = F4_CODES.iter().map(|(c, _)| *c).collect();
    let packed = safetensors::pack_sub_byte(ElementType::F4E2M1FN, &codes).unwrap();
    assert_eq!(packed.len(), 4);
    let bytes = safetensors::to_bytes(&[("w", TensorView::new(ElementType::F4E2M1FN, &[2, 4], &packed).unwrap())], &[])
        .unwrap();
    let dir = temp_dir("f4");
    let path = dir.join("f4.safetensors");
    std::fs::write(&path, bytes).unwrap();
    let file = SafeTensors::open(&path).unwrap();
    // The program widens the f4 values to f32: what the device holds, not how the file packs it.
    let program = Program::mlir_text(
        r#"func.func @main(%w: tensor<2x4xf4E2M1FN>) -> tensor<2x4xf32> {
  %0 = stablehlo.convert %w : (tensor<2x4xf4E2M1FN>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}"#,
    )
    .unwrap();
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let buffers = client.upload_safetensors(&file, Placement::Default, |_| {}).unwrap();
        let w = &buffers[0].1;
        assert_eq!((w.element_type().unwrap(), w.dimensions().unwrap()), (ElementType::F4E2M1FN, &[2i64, 4][..]));
        // One code per byte on the host, in element order.
        assert_eq!(w.to_bytes(DownloadOptions::new()).unwrap(), codes, "{name}");
        let exe = client.compile(&program, &CompileOptions::new()).unwrap();
        let out = exe.execute(&[w], &ExecuteOptions::new()).unwrap();
        let want: Vec<f32> = F4_CODES.iter().map(|(_, v)| *v).collect();
        assert_eq!(out[0].to_vec::<f32>().unwrap(), want, "{name}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `python3` with `safetensors` and `numpy` importable: installed once (with pip, from the
/// package index, as the plugin installs of the other tests are) into a folder of this build's
/// target directory, handed to Python through `PYTHONPATH`.
fn python_with_safetensors() -> std::process::Command {
    static INSTALLED: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let site = INSTALLED.get_or_init(|| {
        let site = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("python-safetensors-0.8.0");
        if !site.join("safetensors").is_dir() {
            // Installed beside, then renamed: a half-finished install is never taken for one.
            let partial = site.with_extension(format!("partial-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&partial);
            let out = std::process::Command::new("python3")
                .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--target"])
                .arg(&partial)
                .args(["safetensors==0.8.0", "numpy"])
                .output()
                .expect("running python3 -m pip (this test needs python3 with pip and the package index)");
            assert!(out.status.success(), "pip install safetensors numpy: {}", String::from_utf8_lossy(&out.stderr));
            if std::fs::rename(&partial, &site).is_err() {
                // Another test process finished first.
                let _ = std::fs::remove_dir_all(&partial);
            }
        }
        site
    });
    let mut command = std::process::Command::new("python3");
    command.env("PYTHONPATH", site);
    command
}

#[test]
fn python_safetensors_reads_our_files_back() {
    let dir = temp_dir("python-reads");
    let odd = [1u8, 2, 3];
    let flags = [1u8, 0, 1];
    let f64s: Vec<u8> = [4e-323f64, -2.5].iter().flat_map(|v| v.to_le_bytes()).collect();
    let f32s: Vec<u8> = [1.5f32, 2., -3.].iter().flat_map(|v| v.to_le_bytes()).collect();
    let i16s: Vec<u8> = [-7i16].iter().flat_map(|v| v.to_le_bytes()).collect();
    let f16s: Vec<u8> = [f16::from_f32(0.5), f16::from_f32(-1.)].iter().flat_map(|v| v.to_le_bytes()).collect();
    let i64s: Vec<u8> = [i64::MIN, 42].iter().flat_map(|v| v.to_le_bytes()).collect();
    // Odd lengths first, in the order a careless writer would misalign everything after them.
    let tensors = [
        ("odd", TensorView::new(ElementType::U8, &[3], &odd).unwrap()),
        ("flags", TensorView::new(ElementType::PRED, &[3], &flags).unwrap()),
        ("f16", TensorView::new(ElementType::F16, &[2], &f16s).unwrap()),
        ("i16", TensorView::new(ElementType::S16, &[1, 1], &i16s).unwrap()),
        ("f32", TensorView::new(ElementType::F32, &[3], &f32s).unwrap()),
        ("f64", TensorView::new(ElementType::F64, &[2], &f64s).unwrap()),
        ("i64", TensorView::new(ElementType::S64, &[2, 1], &i64s).unwrap()),
    ];
    let path = dir.join("ours.safetensors");
    safetensors::write(&path, &tensors, &[("producer", "pjrt-formats test")]).unwrap();
    let expected = serde_json::json!({
        "odd": {"dtype": "uint8", "shape": [3], "values": [1, 2, 3]},
        "flags": {"dtype": "bool", "shape": [3], "values": [true, false, true]},
        "f16": {"dtype": "float16", "shape": [2], "values": [0.5, -1.0]},
        "i16": {"dtype": "int16", "shape": [1, 1], "values": [-7]},
        "f32": {"dtype": "float32", "shape": [3], "values": [1.5, 2.0, -3.0]},
        "f64": {"dtype": "float64", "shape": [2], "values": [4e-323, -2.5]},
        "i64": {"dtype": "int64", "shape": [2, 1], "values": [i64::MIN, 42]},
    });
    let expected_path = dir.join("expected.json");
    std::fs::write(&expected_path, expected.to_string()).unwrap();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tools/check_safetensors_read_back.py");
    let out = python_with_safetensors().arg(script).arg(&path).arg(&expected_path).output().unwrap();
    assert!(
        out.status.success(),
        "Python's safetensors refused our file: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok 7 tensors");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A file of our writer's with tensors that start 64-byte aligned (read in place) and tensors
/// that do not (copied by the plugin's threads), and the bytes each should upload as.
fn mixed_alignment_file(path: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let f32s = |n: usize, k: f32| -> Vec<u8> { (0..n).flat_map(|i| (i as f32 * k - 3.5).to_le_bytes()).collect() };
    let tensors: Vec<(String, ElementType, Vec<i64>, Vec<u8>)> = vec![
        ("w".into(), ElementType::F32, vec![16, 4], f32s(64, 0.25)), // 256 bytes: aligned
        ("b".into(), ElementType::F32, vec![3], f32s(3, 1.5)),       // aligned (starts at 256)
        ("c".into(), ElementType::F32, vec![5], f32s(5, -2.0)),      // starts at 268: not aligned
        ("i".into(), ElementType::S32, vec![2, 3], (0..6i32).flat_map(|v| (v * 1000 - 7).to_le_bytes()).collect()),
        ("h".into(), ElementType::BF16, vec![4], vec![0x80, 0x3f, 0x00, 0x40, 0x40, 0x40, 0x80, 0xbf]),
        ("m".into(), ElementType::PRED, vec![3], vec![1, 0, 1]),
    ];
    let views: Vec<(&str, TensorView<'_>)> =
        tensors.iter().map(|(n, t, shape, bytes)| (n.as_str(), TensorView::new(*t, shape, bytes).unwrap())).collect();
    safetensors::write(path, &views, &[]).unwrap();
    tensors.into_iter().map(|(n, _, _, bytes)| (n, bytes)).collect()
}

#[test]
fn overlapped_and_in_place_uploads_match_the_plain_path() {
    let path = temp_dir("mixed-alignment").join("w.safetensors");
    let expected = mixed_alignment_file(&path);
    let file = SafeTensors::open(&path).unwrap();
    let aligned: Vec<bool> = file.names().map(|n| file.shared_bytes(n).unwrap().is_aligned()).collect();
    assert!(aligned.contains(&true) && aligned.contains(&false), "both paths are exercised: {aligned:?}");
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let overlapped = client.upload_safetensors(&file, Placement::Default, |_| {}).unwrap();
        for (tensor, buffer) in &overlapped {
            let view = file.tensor(tensor).unwrap();
            let plain = client.upload_tensor_view(&view, Placement::Default).unwrap();
            let single = client.upload_tensor(&file, tensor, None, Placement::Default).unwrap();
            let want = &expected.iter().find(|(n, _)| n == tensor).unwrap().1;
            for (how, b) in [("upload_safetensors", buffer), ("upload_tensor_view", &plain), ("upload_tensor", &single)]
            {
                assert_eq!((b.element_type().unwrap(), b.dimensions().unwrap()), (view.dtype(), view.dims()));
                assert_eq!(&b.to_bytes(DownloadOptions::new()).unwrap(), want, "{name} {tensor} {how}");
            }
        }
        // In place means in place: an aligned tensor's buffer is the file's bytes read at open
        // time, on CPU.
        let w = &overlapped.iter().find(|(n, _)| n == "w").unwrap().1;
        let read = file.tensor("w").unwrap().bytes().as_ptr();
        assert_eq!(w.unsafe_pointer().unwrap() as *const u8, read, "{name}: zero-copy");
    }
    std::fs::remove_file(&path).unwrap();
}

/// A buffer read in place from the file's bytes (those `open` read into read-only memory of its
/// own, or the read-only mapping of `open_mapped`) exports as a DLPack tensor marked read-only (a
/// consumer writing it would fault, or change what `tensor().bytes()` hands safe code); a copied
/// tensor's buffer is its own memory, writable.
#[test]
fn in_place_tensors_export_read_only() {
    let path = temp_dir("dlpack-read-only").join("w.safetensors");
    mixed_alignment_file(&path);
    let read_only = pjrt_client::dlpack::ffi::DLPACK_FLAG_BITMASK_READ_ONLY;
    for mapped in [false, true] {
        let file = match mapped {
            // SAFETY: the test's own file: nothing modifies or truncates it while it is open.
            true => unsafe { SafeTensors::open_mapped(&path) }.unwrap(),
            false => SafeTensors::open(&path).unwrap(),
        };
        assert_eq!(file.is_mapped(), mapped);
        for name in support::PLUGINS {
            let client = support::client(name, 1);
            let w = client.upload_tensor(&file, "w", None, Placement::Default).unwrap();
            let tensor = w.into_dlpack().unwrap();
            let bytes = file.tensor("w").unwrap().bytes().as_ptr();
            assert_eq!(tensor.data_pointer() as *const u8, bytes, "{name} (mapped: {mapped}): in place");
            let flags = tensor.flags();
            assert_eq!(flags & read_only, read_only, "{name} (mapped: {mapped}): the file's bytes, flags {flags:#x}");
            let c = client.upload_tensor(&file, "c", None, Placement::Default).unwrap(); // not aligned: copied
            c.ready_event().unwrap().wait().unwrap();
            assert_eq!(c.into_dlpack().unwrap().flags() & read_only, 0, "{name} (mapped: {mapped}): a copy");
        }
    }
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn in_place_buffers_keep_the_file_bytes_alive() {
    for (name, mapped) in support::PLUGINS.iter().flat_map(|name| [(name, false), (name, true)]) {
        let path = temp_dir(&format!("keep-mapping-{name}-{mapped}")).join("w.safetensors");
        let expected = mixed_alignment_file(&path);
        let file = match mapped {
            // SAFETY: the test's own file: nothing modifies or truncates it (it is removed, which
            // leaves a mapping as it was).
            true => unsafe { SafeTensors::open_mapped(&path) }.unwrap(),
            false => SafeTensors::open(&path).unwrap(),
        };
        assert_eq!(file.is_mapped(), mapped);
        let client = support::client(name, 1);
        let buffers = client.upload_safetensors(&file, Placement::Default, |_| {}).unwrap();
        let one = client.upload_tensor(&file, "w", None, Placement::Default).unwrap();
        // The reader and the file go first; the buffers still read the bytes read at open time,
        // or the mapping.
        drop(file);
        std::fs::remove_file(&path).unwrap();
        let double = Program::mlir_text(
            "func.func @main(%w: tensor<16x4xf32>) -> tensor<16x4xf32> {
  %0 = stablehlo.add %w, %w : tensor<16x4xf32>
  return %0 : tensor<16x4xf32>
}",
        )
        .unwrap();
        let exe = client.compile(&double, &CompileOptions::new()).unwrap();
        let w = &buffers.iter().find(|(n, _)| n == "w").unwrap().1;
        let doubled: Vec<f32> =
            expected[0].1.chunks(4).map(|c| 2.0 * f32::from_le_bytes(c.try_into().unwrap())).collect();
        assert_eq!(exe.execute(&[w], &ExecuteOptions::new()).unwrap()[0].to_vec::<f32>().unwrap(), doubled, "{name}");
        assert_eq!(one.to_bytes(DownloadOptions::new()).unwrap(), expected[0].1, "{name}");
        drop(one);
        for (tensor, buffer) in &buffers {
            let want = &expected.iter().find(|(n, _)| n == tensor).unwrap().1;
            assert_eq!(&buffer.to_bytes(DownloadOptions::new()).unwrap(), want, "{name} {tensor}");
        }
    }
}

#[test]
fn upload_tensor_reads_same_width_types_and_refuses_others() {
    let bits = [0x80u8, 0x3f, 0x00, 0xc0]; // 1.0, -2.0 as bf16
    let bytes = safetensors::to_bytes(&[("u", TensorView::new(ElementType::U16, &[2], &bits).unwrap())], &[]).unwrap();
    let file = SafeTensors::from_bytes(bytes).unwrap();
    let client = support::client("cpu", 1);
    let x = client.upload_tensor(&file, "u", Some(ElementType::BF16), Placement::Default).unwrap();
    assert_eq!(x.element_type().unwrap(), ElementType::BF16);
    assert_eq!(x.to_bytes(DownloadOptions::new()).unwrap(), bits);
    let wrong = client.upload_tensor(&file, "u", Some(ElementType::F32), Placement::Default).unwrap_err();
    assert!(wrong.to_string().contains("cannot be read as"), "{wrong}");
    let missing = client.upload_tensor(&file, "nope", None, Placement::Default).unwrap_err();
    assert!(missing.to_string().contains("nope"), "{missing}");
}
