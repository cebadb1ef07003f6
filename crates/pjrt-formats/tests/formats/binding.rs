//! Weights bound to a `jax.export` model's inputs by name (`pjrt_formats::binding`), with
//! models and weight files from tools/gen_weights_testdata.py (JAX 0.10.2, Python's
//! `safetensors`, which sorts tensors by dtype, then name): `mixed` (a nested dict of f32,
//! i32 and bf16 weights, with pairs of the same dtype and shape) and `haiku_cnn` (Haiku's
//! layout: params and batch-norm state with int32 counters, keyed `cnn/~/conv_0/w`). Every
//! spelling and order of the keys gives JAX's outputs through `Runner`; a missing, an extra and
//! an ambiguous tensor are refused by name.

use std::path::{Path, PathBuf};

use pjrt_client::ElementType;
use pjrt_formats::binding::{self, BindingError, BoundBy, NamedTensor};
use pjrt_formats::jax_export::{JaxExport, Runner};
use pjrt_formats::npy::NpyArray;
use pjrt_formats::safetensors::{self, SafeTensors, TensorView};

use crate::support;

fn data(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/weights").join(case)
}

fn temp_dir(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pjrt-formats-binding-{what}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `file`'s tensors written again in the order `order` gives them (our writer keeps the order).
fn rewritten(file: &SafeTensors, path: &Path, order: impl Fn(&mut Vec<(&str, TensorView<'_>)>)) -> SafeTensors {
    let mut tensors: Vec<(&str, TensorView<'_>)> = file.tensors().collect();
    order(&mut tensors);
    safetensors::write(path, &tensors, &[]).unwrap();
    SafeTensors::open(path).unwrap()
}

fn assert_close(got: &NpyArray, want: &NpyArray, what: &str) {
    assert_eq!(got.dims, want.dims, "{what}");
    for (g, w) in got.to_vec::<f32>().unwrap().iter().zip(&want.to_vec::<f32>().unwrap()) {
        assert!((g - w).abs() <= 1e-5 + 1e-5 * w.abs(), "{what}: {g} vs {w}");
    }
}

/// Where jax.export keeps argument names, in both JAX versions tested: as the locations of the
/// module's arguments (`loc("params['w1']")`); inputs the module drops are named from the
/// input tree. Each name ends with the input's path below its top-level argument.
#[test]
fn jax_exports_name_their_inputs_in_both_jax_versions() {
    for jax in ["0.10.2", "0.12.0.1"] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/jax_export").join(format!("jax-{jax}"));
        let manifest: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
        for case in manifest["cases"].as_array().unwrap() {
            let model = JaxExport::read(dir.join(case["model"].as_str().unwrap())).unwrap();
            let arguments = model.arguments();
            for (argument, path) in arguments.iter().zip(case["in_paths"].as_array().unwrap()) {
                // `[0][1]['w']`: below the arguments tuple and the argument's index.
                let path = path.as_str().unwrap();
                let below = path.splitn(3, ']').nth(2).unwrap_or("");
                if let Some(name) = &argument.name {
                    assert!(name.ends_with(below), "JAX {jax} {}: {name} vs {path}", case["name"]);
                }
            }
        }
        let mlp = JaxExport::read(dir.join("mlp_f32/model.jaxexport")).unwrap();
        let names: Vec<Option<String>> = mlp.arguments().into_iter().map(|a| a.name).collect();
        let want = ["params['b1']", "params['b2']", "params['w1']", "params['w2']", "x"];
        assert_eq!(names, want.map(|n| Some(n.to_owned())), "JAX {jax}");
    }
    let mixed = JaxExport::read(data("mixed").join("model.jaxexport")).unwrap();
    let names: Vec<String> = mixed.arguments().into_iter().map(|a| a.name.unwrap()).collect();
    assert_eq!(names[2], "params['block_0']['bias']");
    assert_eq!(names[8], "x");
}

/// The same weights under three spellings of their names (as Python wrote them: sorted by
/// dtype, then name), each also rewritten in reverse and with the two same-shape kernels and
/// `a`/`c` swapped in the file: always JAX's output, on both plugins.
#[test]
fn runner_binds_python_weights_by_name_in_any_order() {
    let dir = data("mixed");
    let model = JaxExport::read(dir.join("model.jaxexport")).unwrap();
    let x = NpyArray::read(&dir.join("x.npy")).unwrap();
    let want = NpyArray::read(&dir.join("out0.npy")).unwrap();
    let tmp = temp_dir("orders");
    let mut files = Vec::new();
    for spelling in ["dotted", "slashed", "bracketed"] {
        let python = SafeTensors::open(dir.join(format!("params_{spelling}.safetensors"))).unwrap();
        // Python's order is not the model's: b (i32) and scale (bf16) come last.
        let binding = model.bind_params(&binding::safetensors_tensors(&python)).unwrap();
        assert_eq!(binding.tensors()[1], Some(6), "{spelling}: {:?}", python.names().collect::<Vec<_>>());
        let reversed = rewritten(&python, &tmp.join(format!("{spelling}-reversed.safetensors")), |t| t.reverse());
        let swapped = rewritten(&python, &tmp.join(format!("{spelling}-swapped.safetensors")), |t| {
            let find =
                |t: &Vec<(&str, TensorView<'_>)>, key: &str| t.iter().position(|(n, _)| n.contains(key)).unwrap();
            let (k0, k1) = (find(t, "block_0"), find(t, "block_1"));
            t.swap(k0, k1);
            let (a, c) = (
                t.iter().position(|(n, _)| n.ends_with('a') || n.ends_with("['a']")).unwrap(),
                t.iter().position(|(n, _)| n.ends_with('c') || n.ends_with("['c']")).unwrap(),
            );
            t.swap(a, c);
        });
        files.push((format!("{spelling} (python)"), python));
        files.push((format!("{spelling} reversed"), reversed));
        files.push((format!("{spelling} swapped"), swapped));
    }
    for plugin in support::PLUGINS {
        let client = support::client(plugin, 1);
        for (what, file) in &files {
            let runner = Runner::new(model.clone(), &client).with_params(file).unwrap();
            let binding = runner.params().unwrap();
            assert_eq!(binding.by(), BoundBy::Name, "{what}");
            assert_eq!(binding.caller_arguments(), [8], "{what}");
            assert_close(&runner.run(std::slice::from_ref(&x)).unwrap()[0], &want, &format!("{plugin} {what}"));
        }
    }
}

/// Haiku's layout: params and state (int32 counters beside float averages) in one file, keyed
/// by module names that hold slashes themselves.
#[test]
fn runner_binds_haiku_params_and_state() {
    let dir = data("haiku_cnn");
    let model = JaxExport::read(dir.join("model.jaxexport")).unwrap();
    let file = SafeTensors::open(dir.join("weights.safetensors")).unwrap();
    assert!(file.names().any(|n| n == "cnn/~/bn_0/~/mean_ema/counter"));
    let x = NpyArray::read(&dir.join("x.npy")).unwrap();
    let want = NpyArray::read(&dir.join("out0.npy")).unwrap();
    for plugin in support::PLUGINS {
        let client = support::client(plugin, 1);
        let runner = Runner::new(model.clone(), &client).with_params(&file).unwrap();
        assert_eq!(runner.params().unwrap().caller_arguments(), [12]);
        assert_close(&runner.run(std::slice::from_ref(&x)).unwrap()[0], &want, plugin);
        // The weights are not inputs of the run any more.
        let err = runner.run(&[x.clone(), x.clone()]).unwrap_err().to_string();
        assert!(err.contains("takes 1 inputs besides its weights"), "{err}");
    }
}

/// A file without one weight, with one too many, or whose names match nothing and whose
/// same-shape tensors could trade places: refused, naming the tensors.
#[test]
fn missing_extra_and_ambiguous_weights_are_refused_by_name() {
    let dir = data("mixed");
    let model = JaxExport::read(dir.join("model.jaxexport")).unwrap();
    let python = SafeTensors::open(dir.join("params_dotted.safetensors")).unwrap();
    let tensors = binding::safetensors_tensors(&python);
    let without_c: Vec<NamedTensor<'_>> = tensors.iter().copied().filter(|t| t.name != "c").collect();
    let e = binding::bind(&model.arguments(), &without_c).unwrap_err();
    assert!(matches!(&e, BindingError::MissingTensors { arguments, .. } if arguments == &["params['c']"]), "{e}");
    assert!(e.to_string().contains("'params.c'"), "{e}");
    let mut extra = tensors.clone();
    extra.push(NamedTensor { name: "block_2.kernel", element_type: ElementType::F32, dims: &[3, 3] });
    let e = binding::bind(&model.arguments(), &extra).unwrap_err();
    assert!(matches!(&e, BindingError::ExtraTensors { tensors, .. } if tensors == &["block_2.kernel"]), "{e}");
    // Names that match nothing: a and c (f32[3]) could trade places.
    let renamed: Vec<String> = (0..tensors.len()).map(|i| format!("w{i}")).collect();
    let anonymous: Vec<NamedTensor<'_>> =
        tensors.iter().zip(&renamed).map(|(t, name)| NamedTensor { name, ..*t }).collect();
    let e = binding::bind(&model.arguments(), &anonymous).unwrap_err();
    assert!(matches!(e, BindingError::Ambiguous { .. }), "{e}");
    assert!(e.to_string().contains("params['a']") && e.to_string().contains("params['c']"), "{e}");
    // Through the runner, as the library's error.
    let tmp = temp_dir("refused");
    let path = tmp.join("without_c.safetensors");
    let kept: Vec<(&str, TensorView<'_>)> = python.tensors().filter(|(n, _)| *n != "c").collect();
    safetensors::write(&path, &kept, &[]).unwrap();
    let client = support::client("cpu", 1);
    let e = Runner::new(model, &client).with_params(&SafeTensors::open(&path).unwrap()).unwrap_err();
    assert!(matches!(e, pjrt_formats::Error::Binding(BindingError::MissingTensors { .. })), "{e}");
}

/// No names to go by, but dtypes and shapes leave one assignment: bound, and said so.
#[test]
fn unnamed_weights_bind_by_type_only_when_one_assignment_fits() {
    let dir = data("haiku_cnn");
    let model = JaxExport::read(dir.join("model.jaxexport")).unwrap();
    let file = SafeTensors::open(dir.join("weights.safetensors")).unwrap();
    let tensors = binding::safetensors_tensors(&file);
    // Only the conv and linear weights (distinct shapes), under names the model does not use.
    let names = ["k0", "k1", "k2", "k3"];
    let mut picked: Vec<NamedTensor<'_>> = Vec::new();
    for (name, key) in names.iter().zip(["conv_0/w", "conv_0/b", "linear/w", "linear/b"]) {
        let t = tensors.iter().find(|t| t.name.ends_with(key)).unwrap();
        picked.push(NamedTensor { name, ..*t });
    }
    // The model's first inputs are bn_0's offset and scale (f32[4]); conv_0/b is f32[4] too.
    let e = binding::bind(&model.arguments(), &picked).unwrap_err();
    assert!(matches!(e, BindingError::NoTensorFits { .. } | BindingError::Ambiguous { .. }), "{e}");
    let mlp = JaxExport::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/jax_export/jax-0.10.2/mlp_f32/model.jaxexport"),
    )
    .unwrap();
    let f32s = |name, dims| NamedTensor { name, element_type: ElementType::F32, dims };
    let unnamed = [f32s("p3", &[16, 3][..]), f32s("p0", &[16]), f32s("p2", &[8, 16]), f32s("p1", &[3])];
    let binding = mlp.bind_params(&unnamed).unwrap();
    assert_eq!(binding.by(), BoundBy::DtypeAndShape);
    assert_eq!(binding.tensors(), [Some(1), Some(3), Some(2), Some(0), None]);
    assert!(binding.note().unwrap().contains("by dtype and shape"), "{:?}", binding.note());
}
