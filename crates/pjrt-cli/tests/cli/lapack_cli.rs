//! `pjrt run MODEL.jaxexport` of models calling JAX's LAPACK kernels (tests/data/lapack, made by
//! tools/gen_lapack_testdata.py) with no option set: one model per JAX function, the four dtypes
//! spread over them, on both CPU plugins, outputs equal to JAX's (the library test
//! `pjrt-formats --test formats lapack::` runs all 208 with their invariants). And the ways out:
//! `--no-builtin-lapack`, a GPU export on a CPU plugin.

use pjrt_formats::npy::{Dtype, NpyArray};

use crate::common::{assert_fails, pjrt, root, stderr, temp_dir, PLUGINS};

/// (case, the outputs JAX determines exactly up to rounding: all, or these indices).
const CASES: &[(&str, Option<&[usize]>)] = &[
    ("solve_c128", None),
    ("inv_f32", None),
    ("det_f64", None),
    ("slogdet_c64", None),
    ("cholesky_f64", None),
    ("cho_solve_c64", None),
    ("qr_reduced_tall_f64", None),
    ("lu_scipy_f32", None),
    ("lu_lax_c128", None),
    ("solve_triangular_upper_t2_c128", None),
    ("expm_f64", None),
    ("lstsq_tall_f32", None),
    ("pinv_c128", None),
    ("tridiagonal_solve_f64", None),
    ("tridiagonal_lower_c64", None),
    ("householder_product_f32", None),
    ("eigvalsh_f64", None),
    ("svd_values_c64", None),
    // Vectors are LAPACK's choice of sign or phase: the values only (the library test checks
    // the vectors by reconstruction).
    ("eigh_c128", Some(&[0])),
    ("svd_thin_wide_f32", Some(&[1])),
    ("eig_f64", Some(&[])),
    ("eigvals_c64", Some(&[])),
    ("schur_real_f32", Some(&[])),
    ("hessenberg_c128", Some(&[])),
];

fn data(case: &str, file: &str) -> String {
    format!("tests/data/lapack/jax-0.10.2/{case}/{file}")
}

/// Real and imaginary parts, as f64.
fn parts(a: &NpyArray) -> Vec<f64> {
    match a.dtype {
        Dtype::F32 | Dtype::C64 => {
            a.data.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64).collect()
        }
        Dtype::F64 | Dtype::C128 => a.data.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect(),
        other => panic!("not a float array: {other}"),
    }
}

fn tolerance(case: &str) -> (f64, f64) {
    // The manifest's tolerances for these cases: the dtype's base times 10 (30 for expm and
    // tridiagonal_solve).
    let factor = if case.starts_with("expm") || case.starts_with("tridiagonal_solve") { 30.0 } else { 10.0 };
    let single = case.ends_with("_f32") || case.ends_with("_c64");
    let (rtol, atol) = if single { (1e-4, 1e-5) } else { (1e-10, 1e-12) };
    (rtol * factor, atol * factor)
}

#[test]
fn exported_linear_algebra_runs_with_no_option_on_both_plugins() {
    for plugin in PLUGINS {
        for (case, determined) in CASES {
            let dir = root().join(format!("tests/data/lapack/jax-0.10.2/{case}"));
            let inputs = (0..).map(|i| format!("in{i}.npy")).take_while(|f| dir.join(f).exists()).collect::<Vec<_>>();
            let outputs = (0..).map(|i| format!("out{i}.npy")).take_while(|f| dir.join(f).exists()).count();
            let out_dir = temp_dir(&format!("lapack-{plugin}-{case}"));
            let mut args =
                vec!["run".to_string(), data(case, "model.jaxexport"), "--plugin".into(), plugin.to_string()];
            for input in &inputs {
                args.extend(["--input".to_string(), data(case, input)]);
            }
            args.extend(["--output-dir".to_string(), out_dir.display().to_string()]);
            let argv: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = pjrt(&argv);
            assert!(out.status.success(), "{plugin} {case}: {}", stderr(&out));
            let (rtol, atol) = tolerance(case);
            for o in 0..outputs {
                let expected = NpyArray::read(&dir.join(format!("out{o}.npy"))).unwrap();
                let actual = NpyArray::read(&out_dir.join(format!("out{o}.npy"))).unwrap();
                assert_eq!(
                    (actual.dtype, &actual.dims),
                    (expected.dtype, &expected.dims),
                    "{plugin} {case} output {o}"
                );
                if determined.is_some_and(|d| !d.contains(&o)) {
                    continue;
                }
                if matches!(expected.dtype, Dtype::F32 | Dtype::F64 | Dtype::C64 | Dtype::C128) {
                    for (a, e) in parts(&actual).iter().zip(parts(&expected)) {
                        let ok = if e.is_nan() { a.is_nan() } else { (a - e).abs() <= atol + rtol * e.abs() };
                        assert!(ok, "{plugin} {case} output {o}: {a} vs JAX's {e}");
                    }
                } else {
                    assert_eq!(actual.data, expected.data, "{plugin} {case} output {o}");
                }
            }
            assert!(!out_dir.join(format!("out{outputs}.npy")).exists(), "{plugin} {case}: extra outputs");
        }
    }
}

#[test]
fn no_builtin_lapack_leaves_the_program_to_the_plugin() {
    let case = "cholesky_f64";
    let out = pjrt(&["--no-builtin-lapack", "run", &data(case, "model.jaxexport"), "--input", &data(case, "in0.npy")]);
    assert_fails(&out, "lapack_dpotrf_ffi");
}

#[test]
fn a_gpu_export_is_refused_by_name_on_a_cpu_plugin() {
    let dir = temp_dir("lapack-gpu-target");
    let program = dir.join("gpu_lu.mlir");
    std::fs::write(
        &program,
        "func.func @main(%a: tensor<2x5x5xf32>) -> tensor<2x5x5xf32> {\n  %0:3 = stablehlo.custom_call \
         @cusolver_getrf_ffi(%a) {api_version = 4 : i32} : (tensor<2x5x5xf32>) -> (tensor<2x5x5xf32>, \
         tensor<2x5xi32>, tensor<2xi32>)\n  return %0#0 : tensor<2x5x5xf32>\n}\n",
    )
    .unwrap();
    let out = pjrt(&["run", program.to_str().unwrap(), "--input", "tests/data/lapack/jax-0.10.2/inv_f32/in0.npy"]);
    assert_fails(&out, "cusolver_getrf_ffi");
    assert!(stderr(&out).contains("GPU kernels"), "{}", stderr(&out));
}

#[test]
fn without_a_loadable_lapack_the_error_says_what_to_install() {
    let case = "cholesky_f64";
    let missing = temp_dir("lapack-missing").join("libscipy_openblas.so");
    let out = crate::common::pjrt_env(
        &["run", &data(case, "model.jaxexport"), "--input", &data(case, "in0.npy")],
        &[("PJRT_LAPACK_LIBRARY", missing.to_str().unwrap())],
    );
    assert_fails(&out, "which run on scipy's OpenBLAS");
    assert!(stderr(&out).contains("pjrt plugin install openblas"), "{}", stderr(&out));
}
