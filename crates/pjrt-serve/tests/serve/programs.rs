//! Models beyond `.jaxexport`: an `.mlir` program (weights bound by name), an `.mlirbc` with
//! `?` dimensions (refined per request shape, bounded as a symbolic export is) and an AOT
//! artifact of the plugin, each answering what `pjrt run` computes: the same library calls
//! (`TextProgram::from_program`, `program_for`, JAX's compile options; `Artifact::load`), whose
//! numbers the server's must equal bit for bit.

use std::path::Path;

use pjrt_client::{CompileOptions, ExecuteOptions, Placement, Program};
use pjrt_formats::artifact::Artifact;
use pjrt_formats::jax_export::JaxExport;
use pjrt_formats::mlir_text::TextProgram;
use pjrt_formats::npy::NpyArray;
use pjrt_formats::{BufferExt as _, ClientExt as _};
use pjrt_serve::{Server, ServerOptions};
use serde_json::{json, Value};

use crate::harness::{client, data, npy, temp_dir, Running};

/// What `pjrt run PATH --input ...` computes for `inputs` (every argument, in order): a
/// program refined for the inputs' shapes where it is dynamic, compiled with JAX's defaults;
/// an artifact loaded.
fn as_pjrt_run_does(path: &Path, inputs: &[NpyArray]) -> Vec<NpyArray> {
    let client = client();
    let exe = if pjrt_formats::artifact::is_artifact_file(path) {
        Artifact::read(path).unwrap().load(&client).unwrap()
    } else {
        let mut program = Program::from_file(path).unwrap();
        let parsed = TextProgram::from_program(&program, "program").unwrap();
        if parsed.is_dynamic() {
            let types = parsed.parameter_element_types();
            let shapes: Vec<_> = inputs.iter().zip(types).map(|(a, t)| (t.unwrap(), a.dims.clone())).collect();
            program = parsed.program_for(&shapes, &[]).unwrap();
        }
        let options = CompileOptions::new().num_replicas(1).num_partitions(1).jax_defaults(client.platform_name());
        client.compile(&program, &options).unwrap()
    };
    let buffers: Vec<_> = inputs.iter().map(|a| client.upload_npy(a, None, Placement::Default).unwrap()).collect();
    let refs: Vec<_> = buffers.iter().collect();
    let outputs = exe.execute(&refs, &ExecuteOptions::new()).unwrap();
    outputs.iter().map(|b| b.to_npy().unwrap()).collect()
}

fn tensor(name: &str, a: &NpyArray) -> Value {
    json!({ "name": name, "datatype": "FP32", "shape": a.dims, "data": a.to_vec::<f32>().unwrap() })
}

/// The outputs of an answer, as f32s.
fn outputs(answer: &Value) -> Vec<Vec<f32>> {
    let outputs = answer["outputs"].as_array().unwrap_or_else(|| panic!("{answer}"));
    outputs.iter().map(|o| o["data"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect()).collect()
}

fn metric(text: &str, name: &str) -> u64 {
    let line = text.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("no {name} in {text}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

/// An MLIR text program whose arguments are named (`%w`, `%x`): the weights file's `w` feeds
/// `w` by name, the request gives `x` (its name from the program), and the answer is `pjrt
/// run`'s; `tanh_mul.mlir` (generic names) takes `input0`, `input1`.
#[test]
fn an_mlir_program_is_served_with_its_signature_and_weights_by_name() {
    let repo = temp_dir("mlir");
    std::fs::create_dir_all(repo.join("affine")).unwrap();
    let text = "func.func public @main(%x: tensor<2x3xf32>, %w: tensor<3x2xf32>, %b: tensor<2xf32>) -> tensor<2x2xf32> {
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %1 = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<2xf32>) -> tensor<2x2xf32>
  %2 = stablehlo.add %0, %1 : tensor<2x2xf32>
  return %2 : tensor<2x2xf32>
}";
    std::fs::write(repo.join("affine/model.mlir"), text).unwrap();
    let w = NpyArray::from_elements(vec![3, 2], &[1f32, -2.0, 0.5, 3.0, -1.5, 0.25]).unwrap();
    let b = NpyArray::from_elements(vec![2], &[10f32, -10.0]).unwrap();
    // Stored b before w: bound by name, not by the file's order.
    let views = [
        ("b", pjrt_formats::safetensors::TensorView::from_npy(&b).unwrap()),
        ("w", pjrt_formats::safetensors::TensorView::from_npy(&w).unwrap()),
    ];
    std::fs::write(repo.join("affine/params.safetensors"), pjrt_formats::safetensors::to_bytes(&views, &[]).unwrap())
        .unwrap();
    std::fs::create_dir_all(repo.join("tanh_mul")).unwrap();
    std::fs::copy(data("formats/tanh_mul.mlir"), repo.join("tanh_mul/model.mlir")).unwrap();
    let server = Server::new(client(), ServerOptions::default());
    let errors = server.load_repository(&repo).unwrap();
    assert!(errors.is_empty(), "{errors:?}");
    let server = Running::start(server);

    let (status, meta) = server.get_json("/v2/models/affine");
    assert_eq!(status, 200, "{meta}");
    assert_eq!(meta["inputs"], json!([{ "name": "x", "datatype": "FP32", "shape": [2, 3] }]));
    assert_eq!(meta["outputs"], json!([{ "name": "output0", "datatype": "FP32", "shape": [2, 2] }]));
    let (status, config) = server.get_json("/v2/models/affine/config");
    assert_eq!(status, 200, "{config}");
    assert_eq!((config["input"][0]["name"].as_str(), config["input"].as_array().unwrap().len()), (Some("x"), 1));
    assert_eq!(config["default_model_filename"], "model.mlir", "{config}");
    let x = NpyArray::from_elements(vec![2, 3], &[1f32, 2.0, 3.0, -4.0, 5.0, -6.0]).unwrap();
    let (status, answer) = server.post_json("/v2/models/affine/infer", &json!({ "inputs": [tensor("x", &x)] }));
    assert_eq!(status, 200, "{answer}");
    let want = as_pjrt_run_does(&repo.join("affine/model.mlir"), &[x, w, b]);
    assert_eq!(outputs(&answer), [want[0].to_vec::<f32>().unwrap()]);

    let (a, b) = (npy("formats/a.npy"), npy("formats/b.npy"));
    let (status, meta) = server.get_json("/v2/models/tanh_mul");
    assert_eq!(status, 200, "{meta}");
    assert_eq!(meta["inputs"][1], json!({ "name": "input1", "datatype": "FP32", "shape": [2, 3] }));
    let body = json!({ "inputs": [tensor("input0", &a), tensor("input1", &b)] });
    let (status, answer) = server.post_json("/v2/models/tanh_mul/infer", &body);
    assert_eq!(status, 200, "{answer}");
    let want = as_pjrt_run_does(&data("formats/tanh_mul.mlir"), &[a, b]);
    assert_eq!(outputs(&answer), [want[0].to_vec::<f32>().unwrap()]);
    let expected = npy("formats/expected.npy").to_vec::<f32>().unwrap();
    for (got, want) in outputs(&answer)[0].iter().zip(&expected) {
        assert!((got - want).abs() <= 1e-5 + 1e-5 * want.abs(), "{got} vs JAX's {want}");
    }
}

/// JAX's serialized module of the shape-polymorphic MLP (`f32[?,8]` and its weights), as a
/// `.mlirbc`: `-1` in its metadata, each batch size refined and compiled once, the answers
/// `pjrt run`'s; `symbolic_dims` bounds its `?` dimension by the name `input0.0`, and batching
/// is refused (a `?` does not say which output dimension is the batch).
#[test]
fn an_mlirbc_with_unknown_dimensions_is_refined_per_request_shape_and_bounded() {
    let repo = temp_dir("mlirbc");
    std::fs::create_dir_all(repo.join("mlp")).unwrap();
    let model = JaxExport::read(data("jax_export/symbolic/jax-0.10.2/mlp_batch/model.jaxexport")).unwrap();
    let path = repo.join("mlp/model.mlirbc");
    std::fs::write(&path, model.mlir_module()).unwrap();
    std::fs::write(
        repo.join("mlp/config.json"),
        br#"{"symbolic_dims": {"input0.0": {"min": 1, "max": 4}}, "max_request_shapes": 8}"#,
    )
    .unwrap();
    let server = Server::new(client(), ServerOptions::default());
    let errors = server.load_repository(&repo).unwrap();
    assert!(errors.is_empty(), "{errors:?}");
    let server = Running::start(server);
    let (status, meta) = server.get_json("/v2/models/mlp");
    assert_eq!(status, 200, "{meta}");
    assert_eq!(meta["inputs"][0], json!({ "name": "input0", "datatype": "FP32", "shape": [-1, 8] }));
    assert_eq!(meta["outputs"][0], json!({ "name": "output0", "datatype": "FP32", "shape": [-1, 3] }));

    for case in ["ok0", "ok1"] {
        let dir = format!("jax_export/symbolic/jax-0.10.2/mlp_batch/{case}");
        let inputs: Vec<NpyArray> = (0..5).map(|i| npy(&format!("{dir}/in{i}.npy"))).collect();
        let body: Vec<Value> = inputs.iter().enumerate().map(|(i, a)| tensor(&format!("input{i}"), a)).collect();
        let (status, answer) = server.post_json("/v2/models/mlp/infer", &json!({ "inputs": body }));
        assert_eq!(status, 200, "{case}: {answer}");
        let want = as_pjrt_run_does(&path, &inputs);
        assert_eq!(outputs(&answer), [want[0].to_vec::<f32>().unwrap()], "{case}");
        let jax = npy(&format!("{dir}/out0.npy")).to_vec::<f32>().unwrap();
        for (got, want) in outputs(&answer)[0].iter().zip(&jax) {
            assert!((got - want).abs() <= 1e-5 + 1e-5 * want.abs(), "{case}: {got} vs JAX's {want}");
        }
    }
    let metrics = server.get_text("/metrics");
    assert_eq!(metric(&metrics, "pjrt_serve_compiles_total{model=\"mlp\"}"), 2, "{metrics}");
    // Five rows: outside the bound, refused before anything compiles.
    let dir = "jax_export/symbolic/jax-0.10.2/mlp_batch/ok2";
    let body: Vec<Value> = (0..5).map(|i| tensor(&format!("input{i}"), &npy(&format!("{dir}/in{i}.npy")))).collect();
    let (status, answer) = server.post_json("/v2/models/mlp/infer", &json!({ "inputs": body }));
    assert_eq!(status, 400, "{answer}");
    assert!(answer["error"].as_str().unwrap().contains("(input0.0), but the model's config allows 1 to 4"), "{answer}");
    assert_eq!(metric(&server.get_text("/metrics"), "pjrt_serve_compiles_total{model=\"mlp\"}"), 2);

    // A size list of its `?` dimension: both sizes compiled and warmed at load.
    std::fs::write(repo.join("mlp/config.json"), br#"{"symbolic_dims": {"input0.0": {"sizes": [1, 3]}}}"#).unwrap();
    let warmed = Server::new(client(), ServerOptions::default());
    assert!(warmed.load_repository(&repo).unwrap().is_empty());
    let warmed = Running::start(warmed);
    let metrics = warmed.get_text("/metrics");
    assert_eq!(metric(&metrics, "pjrt_serve_warmup_executions_total{model=\"mlp\"}"), 2, "{metrics}");
    assert_eq!(metric(&metrics, "pjrt_serve_executables{model=\"mlp\"}"), 2, "{metrics}");

    std::fs::write(repo.join("mlp/config.json"), br#"{"max_batch_size": 8}"#).unwrap();
    let errors = Server::new(client(), ServerOptions::default()).load_repository(&repo).unwrap();
    assert!(errors[0].to_string().contains("batching needs a jax.export model"), "{}", errors[0]);
}

/// An AOT artifact of this plugin (written at test time: an artifact loads only on the plugin
/// build and host that made it) is served as its executable's signature says, with `pjrt
/// run`'s answers; one whose header names another plugin build is refused at load, saying so.
#[test]
fn an_aot_artifact_is_served_and_one_of_another_plugin_build_is_refused() {
    let client = client();
    let program = Program::from_file(data("formats/tanh_mul.mlir")).unwrap();
    let options = CompileOptions::new().num_replicas(1).num_partitions(1).jax_defaults(client.platform_name());
    let exe = client.compile(&program, &options).unwrap();
    let artifact = Artifact::from_loaded(&client, &exe, &program, &options).unwrap();
    let repo = temp_dir("aot");
    std::fs::create_dir_all(repo.join("tanh_mul")).unwrap();
    artifact.write(repo.join("tanh_mul/model.pjrt")).unwrap();
    let mut foreign = artifact.header.clone();
    foreign.plugin.platform_version = format!("{} (another build)", foreign.plugin.platform_version);
    std::fs::create_dir_all(repo.join("foreign")).unwrap();
    Artifact::new(foreign, artifact.executable_bytes().to_vec())
        .unwrap()
        .write(repo.join("foreign/model.pjrt"))
        .unwrap();

    let server = Server::new(client.clone(), ServerOptions::default());
    let errors = server.load_repository(&repo).unwrap();
    assert_eq!(errors.len(), 1, "{errors:?}");
    let e = errors[0].to_string();
    assert!(e.contains("foreign") && e.contains("the artifact was compiled for"), "{e}");
    let server = Running::start(server);
    let (status, meta) = server.get_json("/v2/models/tanh_mul");
    assert_eq!(status, 200, "{meta}");
    assert_eq!(meta["inputs"][0], json!({ "name": "input0", "datatype": "FP32", "shape": [2, 3] }));
    assert_eq!(meta["outputs"][0], json!({ "name": "output0", "datatype": "FP32", "shape": [2, 3] }));
    let (a, b) = (npy("formats/a.npy"), npy("formats/b.npy"));
    let body = json!({ "inputs": [tensor("input0", &a), tensor("input1", &b)] });
    let (status, answer) = server.post_json("/v2/models/tanh_mul/infer", &body);
    assert_eq!(status, 200, "{answer}");
    let want = as_pjrt_run_does(&repo.join("tanh_mul/model.pjrt"), &[a, b]);
    assert_eq!(outputs(&answer), [want[0].to_vec::<f32>().unwrap()]);
    let (status, index) = server.post_json("/v2/repository/index", &json!({}));
    assert_eq!(status, 200);
    let foreign = index.as_array().unwrap().iter().find(|m| m["name"] == "foreign").unwrap().clone();
    assert_eq!(foreign["state"], "UNAVAILABLE", "{index}");
}
