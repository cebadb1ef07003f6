//! The same JAX function as MLIR text, MLIR bytecode, a StableHLO portable artifact and a
//! serialized HloModuleProto (tests/data/formats, made by tools/gen_format_testdata.py) compiles
//! and computes JAX's result on both CPU plugins.

use std::path::{Path, PathBuf};

use pjrt_client::{CompileOptions, ExecuteOptions, Program, ProgramFormat};
use pjrt_formats::npy::NpyArray;

use crate::support;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/formats").join(name)
}

#[test]
fn every_program_format_runs() {
    let a = NpyArray::read(&data("a.npy")).unwrap().to_vec::<f32>().unwrap();
    let b = NpyArray::read(&data("b.npy")).unwrap().to_vec::<f32>().unwrap();
    let expected = NpyArray::read(&data("expected.npy")).unwrap().to_vec::<f32>().unwrap();
    let files = [
        ("tanh_mul.mlir", ProgramFormat::Mlir),
        ("tanh_mul.mlirbc", ProgramFormat::Mlir),
        ("tanh_mul.portable-1.0.0.mlirbc", ProgramFormat::Mlir),
        ("tanh_mul.hlo.pb", ProgramFormat::Hlo),
    ];
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        for (file, format) in files {
            let program = Program::from_file(data(file)).unwrap();
            assert_eq!(program.format(), format, "{file}");
            let exe = client
                .compile(&program, &CompileOptions::new())
                .unwrap_or_else(|e| panic!("{name}: compiling {file}: {e}"));
            let x = client.upload(&a, &[2, 3]).unwrap();
            let y = client.upload(&b, &[2, 3]).unwrap();
            let got = exe.execute(&[&x, &y], &ExecuteOptions::new()).unwrap()[0].to_vec::<f32>().unwrap();
            for (g, e) in got.iter().zip(&expected) {
                assert!((g - e).abs() <= 1e-6 + 1e-6 * e.abs(), "{name} {file}: {g} vs {e}");
            }
        }
    }
}

#[test]
fn text_that_is_not_a_program_is_refused_by_us_or_the_plugin() {
    let client = support::client("cpu", 1);
    assert!(Program::mlir_bytecode(b"ML\xefR-truncated".to_vec()).is_ok());
    let truncated = Program::mlir_bytecode(b"ML\xefR-truncated".to_vec()).unwrap();
    assert!(client.compile(&truncated, &CompileOptions::new()).is_err());
    let binary = data("../jax/dot_f32/in0.npy");
    let e = Program::from_file(&binary).unwrap_err().to_string();
    assert!(e.contains("neither MLIR text"), "{e}");
}
