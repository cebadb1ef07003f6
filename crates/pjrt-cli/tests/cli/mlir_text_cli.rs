//! `pjrt run PROGRAM.mlir` with dynamic shapes: hand-written programs using every `dynamic_*`
//! op (tests/data/stablehlo_text/dynamic) are refined for the inputs' shapes and give the
//! answers their comments state, on both CPU plugins; dimension variables taken as arguments
//! come from `--dim` or are inferred when exactly one assignment fits; JAX's text of a
//! shape-polymorphic export gives JAX's answers, and so does its bytecode (`.mlirbc`).

use pjrt_formats::npy::NpyArray;

use crate::common::{assert_fails, pjrt, root, stderr, temp_dir, PLUGINS};

fn program(name: &str) -> String {
    root().join(format!("tests/data/stablehlo_text/dynamic/{name}.mlir")).display().to_string()
}

fn f32s(a: &NpyArray) -> Vec<f32> {
    a.data.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// `0, 1, 2, ...` of shape `dims`, written to `dir/name.npy`.
fn iota(dir: &std::path::Path, name: &str, dims: &[i64]) -> String {
    let n: i64 = dims.iter().product();
    let values: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let path = dir.join(format!("{name}.npy"));
    NpyArray::from_elements(dims.to_vec(), &values).unwrap().write(&path).unwrap();
    path.display().to_string()
}

/// Runs `name` on `inputs` (and `extra` arguments) and returns each output's dims and values.
fn run(plugin: &str, name: &str, inputs: &[String], extra: &[&str]) -> Vec<(Vec<i64>, Vec<f32>)> {
    let out_dir = temp_dir(&format!("mlir-text-{plugin}-{name}-out"));
    let prog = program(name);
    let mut args = vec!["run", prog.as_str(), "--plugin", plugin, "--output-dir", out_dir.to_str().unwrap()];
    for i in inputs {
        args.extend(["--input", i.as_str()]);
    }
    args.extend(extra);
    let out = pjrt(&args);
    assert!(out.status.success(), "{name} on {plugin}: {}", stderr(&out));
    (0..)
        .map(|k| out_dir.join(format!("out{k}.npy")))
        .take_while(|p| p.exists())
        .map(|p| {
            let a = NpyArray::read(&p).unwrap();
            (a.dims.clone(), f32s(&a))
        })
        .collect()
}

#[test]
fn programs_with_every_dynamic_op_run_for_their_inputs_shapes() {
    for plugin in PLUGINS {
        let dir = temp_dir(&format!("mlir-text-inputs-{plugin}"));
        let x43 = iota(&dir, "x43", &[4, 3]);
        let x5 = iota(&dir, "x5", &[5]);
        let x34 = iota(&dir, "x34", &[3, 4]);
        let y = iota(&dir, "y", &[1, 5, 1]);

        let out = run(plugin, "iota_reshape", std::slice::from_ref(&x43), &[]);
        let want: Vec<f32> = (0..12).map(|k| (k + k / 3) as f32).collect();
        assert_eq!(out, vec![(vec![4, 3], want.clone()), (vec![12], want)], "iota_reshape");

        let out = run(plugin, "broadcast_pad", std::slice::from_ref(&x5), &[]);
        let row: Vec<f32> = (0..5).map(|k| k as f32).collect();
        let padded = vec![0.0, 0.0, 1.0, 2.0, 3.0, 4.0, 0.0, 0.0];
        assert_eq!(out, vec![(vec![2, 5], [row.clone(), row].concat()), (vec![8], padded)], "broadcast_pad");

        let out = run(plugin, "slices", &[x34], &[]);
        let updated = [vec![1.0; 4], (4..12).map(|k| k as f32).collect()].concat();
        assert_eq!(
            out,
            vec![(vec![2, 2], vec![4.0, 6.0, 8.0, 10.0]), (vec![1, 2], vec![1.0, 2.0]), (vec![3, 4], updated)],
            "slices"
        );

        let out = run(plugin, "gather_conv", &[x43, y], &[]);
        assert_eq!(
            out,
            vec![(vec![2, 3], vec![3.0, 4.0, 5.0, 0.0, 1.0, 2.0]), (vec![1, 4, 1], vec![1.0, 3.0, 5.0, 7.0])],
            "gather_conv"
        );

        // b inferred from x, or given.
        let doubled = vec![0.0, 2.0, 4.0, 6.0, 8.0];
        assert_eq!(run(plugin, "dim_param", std::slice::from_ref(&x5), &[]), vec![(vec![5], doubled.clone())]);
        assert_eq!(run(plugin, "dim_param", &[x5], &["--dim", "b=5"]), vec![(vec![5], doubled)]);
    }
}

#[test]
fn dimension_values_that_do_not_fit_or_are_ambiguous_are_refused_by_name() {
    let dir = temp_dir("mlir-text-refusals");
    let x5 = iota(&dir, "x5", &[5]);
    let x7 = iota(&dir, "x7", &[7]);
    let out_dir = dir.join("out");
    let out = out_dir.to_str().unwrap();
    let prog = program("dim_param");
    assert_fails(
        &pjrt(&["run", &prog, "--input", &x5, "--dim", "b=4", "--output-dir", out]),
        "its operands have the shapes [5] and [4]",
    );
    assert_fails(
        &pjrt(&["run", &prog, "--input", &x5, "--dim", "c=4", "--output-dir", out]),
        "no dimension parameter c",
    );
    let unused = program("dim_unused");
    assert_fails(
        &pjrt(&["run", &unused, "--input", &x5, "--input", &x7, "--output-dir", out]),
        "more than one assignment fits the inputs (k=5 and k=7); give --dim k=VALUE",
    );
    let scaled = pjrt(&["run", &unused, "--input", &x5, "--input", &x7, "--dim", "k=3", "--output-dir", out]);
    assert!(scaled.status.success(), "{}", stderr(&scaled));
    assert_eq!(f32s(&NpyArray::read(&out_dir.join("out0.npy")).unwrap()), vec![0.0, 3.0, 6.0, 9.0, 12.0]);
    let static_text = root().join("tests/data/formats/tanh_mul.mlir").display().to_string();
    assert_fails(&pjrt(&["run", &static_text, "--dim", "b=1", "--output-dir", out]), "--dim is for MLIR text programs");
    // A syntax error in a dynamic program names the file, line and column.
    let bad = dir.join("bad.mlir");
    std::fs::write(&bad, "func.func @main(%x: tensor<?xf32>) -> tensor<?xf32> {\n  return %y : tensor<?xf32>\n}\n")
        .unwrap();
    assert_fails(
        &pjrt(&["run", bad.to_str().unwrap(), "--input", &x5, "--output-dir", out]),
        "bad.mlir:2:10: use of undefined value %y",
    );
}

#[test]
fn jax_text_of_a_symbolic_export_gives_jaxs_answers() {
    let case = root().join("tests/data/jax_export/symbolic/jax-0.10.2/mlp_batch");
    for plugin in PLUGINS {
        let out_dir = temp_dir(&format!("mlir-text-mlp-{plugin}"));
        let program = case.join("program.mlir").display().to_string();
        let mut args = vec!["run".to_string(), program, "--plugin".into(), plugin.to_string()];
        for i in 0..5 {
            args.extend(["--input".to_string(), case.join(format!("ok1/in{i}.npy")).display().to_string()]);
        }
        args.extend(["--output-dir".to_string(), out_dir.display().to_string()]);
        let out = pjrt(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(out.status.success(), "{plugin}: {}", stderr(&out));
        let ours = NpyArray::read(&out_dir.join("out0.npy")).unwrap();
        let jax = NpyArray::read(&case.join("ok1/out0.npy")).unwrap();
        assert_eq!(ours.dims, jax.dims, "{plugin}");
        for (a, b) in f32s(&ours).iter().zip(f32s(&jax)) {
            assert!((a - b).abs() <= 1e-4 + 1e-4 * b.abs(), "{plugin}: {a} vs JAX's {b}");
        }
    }
}

/// Each output of `pjrt run` in `out_dir`, as its npy dims and raw bytes (a bool one byte each).
fn outputs(out_dir: &std::path::Path) -> Vec<(Vec<i64>, Vec<u8>)> {
    (0..)
        .map(|k| out_dir.join(format!("out{k}.npy")))
        .take_while(|p| p.exists())
        .map(|p| {
            let a = NpyArray::read(&p).unwrap();
            (a.dims.clone(), a.data.clone())
        })
        .collect()
}

/// `dense<true> : tensor<4xi1>` beside a `?` dimension: refined by this crate (parsed, refined,
/// printed or written), every element stays true on both plugins (it read as
/// `[true, false, false, false]`, a one-byte splat taken for packed bits).
#[test]
fn a_boolean_splat_in_a_refined_program_is_every_element() {
    for plugin in PLUGINS {
        let dir = temp_dir(&format!("mlir-text-bool-{plugin}"));
        let x = dir.join("x.npy");
        NpyArray::from_elements(vec![5], &[1.0f32, -2.0, 3.0, 4.0, 5.0]).unwrap().write(&x).unwrap();
        let out_dir = dir.join("out");
        let prog = root().join("tests/data/stablehlo_text/dense/bool_dynamic.mlir");
        let out = pjrt(&[
            "run",
            prog.to_str().unwrap(),
            "--plugin",
            plugin,
            "--input",
            x.to_str().unwrap(),
            "--output-dir",
            out_dir.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{plugin}: {}", stderr(&out));
        let outs = outputs(&out_dir);
        assert_eq!(outs.len(), 3, "{plugin}");
        assert_eq!(outs[0].0, vec![5], "{plugin}: refined for x of 5");
        assert_eq!(outs[1], (vec![4], vec![1, 1, 1, 1]), "{plugin}: dense<true> : tensor<4xi1>");
        assert_eq!(outs[2], (vec![3], vec![1, 0, 1]), "{plugin}: (x > 0) and [true, false, true]");
    }
}

/// JAX's serialized module of a shape-polymorphic export (`mlir_module_serialized`, a
/// portable artifact with `?` dimensions) as an `.mlirbc`: refined for the inputs' shapes as
/// MLIR text is, giving JAX's answers (the plugin refused its dynamic ops before).
#[test]
fn jax_bytecode_of_a_symbolic_export_is_refined_and_gives_jaxs_answers() {
    let case = root().join("tests/data/jax_export/symbolic/jax-0.10.2/mlp_batch");
    let model = pjrt_formats::jax_export::JaxExport::read(case.join("model.jaxexport")).unwrap();
    let dir = temp_dir("mlirbc-mlp");
    let program = dir.join("mlp.mlirbc");
    std::fs::write(&program, model.mlir_module()).unwrap();
    for plugin in PLUGINS {
        for ok in ["ok0", "ok2"] {
            let out_dir = dir.join(format!("out-{plugin}-{ok}"));
            let mut args =
                vec!["run".to_string(), program.display().to_string(), "--plugin".into(), plugin.to_string()];
            for i in 0..5 {
                args.extend(["--input".to_string(), case.join(format!("{ok}/in{i}.npy")).display().to_string()]);
            }
            args.extend(["--output-dir".to_string(), out_dir.display().to_string()]);
            let out = pjrt(&args.iter().map(String::as_str).collect::<Vec<_>>());
            assert!(out.status.success(), "{plugin} {ok}: {}", stderr(&out));
            let ours = NpyArray::read(&out_dir.join("out0.npy")).unwrap();
            let jax = NpyArray::read(&case.join(format!("{ok}/out0.npy"))).unwrap();
            assert_eq!(ours.dims, jax.dims, "{plugin} {ok}");
            for (a, b) in f32s(&ours).iter().zip(f32s(&jax)) {
                assert!((a - b).abs() <= 1e-4 + 1e-4 * b.abs(), "{plugin} {ok}: {a} vs JAX's {b}");
            }
        }
    }
}
