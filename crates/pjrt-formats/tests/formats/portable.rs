//! Portable artifacts newer than a plugin reads (`pjrt_client::Client::compile` writes them
//! for the plugin's version, `pjrt_client::Program::portable_artifact` for any): a JAX 0.12
//! model (StableHLO 1.18.0) compiles on the 0.106 plugin (which reads up to 1.16.1) as it
//! is and runs as on the 0.115 one; the compile cache keys on the program given; an artifact our
//! writer writes at 1.20.0 runs on both plugins with the same answers; what a target lacks is
//! refused by name.

use std::path::PathBuf;

use pjrt_client::{Client, Program, StableHloVersion};
use pjrt_formats::artifact::{program_fingerprint, Artifact};
use pjrt_formats::compile_cache::{cache_key, CacheOutcome, CompileCache};
use pjrt_formats::jax_export::JaxExport;
use pjrt_formats::npy::NpyArray;
use pjrt_formats::{BufferExt, ClientExt};

use crate::support;

fn data(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data").join(path)
}

/// JAX 0.12's MLP export and its inputs.
fn jax_0_12_mlp() -> (JaxExport, Vec<NpyArray>) {
    let model = JaxExport::read(data("jax_export/jax-0.12.0.1/mlp_f32/model.jaxexport")).unwrap();
    let inputs = (0..5).map(|i| NpyArray::read(&data(&format!("jax_export/jax-0.12.0.1/mlp_f32/in{i}.npy"))).unwrap());
    (model, inputs.collect())
}

fn run(client: &Client, exe: &pjrt_client::LoadedExecutable, inputs: &[NpyArray]) -> Vec<NpyArray> {
    let buffers: Vec<pjrt_client::Buffer> =
        inputs.iter().map(|a| client.upload_npy(a, None, pjrt_client::Placement::Default).unwrap()).collect();
    let refs: Vec<&pjrt_client::Buffer> = buffers.iter().collect();
    exe.execute(&refs, &pjrt_client::ExecuteOptions::new()).unwrap().iter().map(|o| o.to_npy().unwrap()).collect()
}

#[test]
fn a_newer_artifact_compiles_on_the_older_plugin_written_for_its_version() {
    let (model, inputs) = jax_0_12_mlp();
    let program = model.program().unwrap();
    assert_eq!(program.bytecode_producer(), Some("StableHLO_v1.18.0"));
    let old = support::client("cpu-0.106", 1);
    let target = old.plugin().portable_target().unwrap();
    assert_eq!(target, StableHloVersion::new(1, 16, 1));
    // What the compile sends: the same module, written for 1.16.1.
    let sent = program.portable_artifact(target).unwrap();
    assert_eq!(sent.bytecode_producer(), Some("StableHLO_v1.16.1"));
    assert_eq!(sent.declared_parameters(), program.declared_parameters());
    let (a, b) =
        (pjrt_stablehlo::read_bytecode(program.code()).unwrap(), pjrt_stablehlo::read_bytecode(sent.code()).unwrap());
    assert_eq!(a.ops, b.ops);
    // The program as exported compiles on both plugins, with the same answers.
    let options = |client: &Client| model.compile_options(client.platform_name());
    let on_old = run(&old, &old.compile(&program, &options(&old)).unwrap(), &inputs);
    let new = support::client("cpu", 1);
    assert_eq!(on_old, run(&new, &new.compile(&program, &options(&new)).unwrap(), &inputs));
}

#[test]
fn the_compile_cache_keys_on_the_program_given() {
    let (model, inputs) = jax_0_12_mlp();
    let client = support::client("cpu-0.106", 1);
    let dir = std::env::temp_dir().join(format!("pjrt-portable-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cache = CompileCache::open(&dir).unwrap();
    let (program, options) = (model.program().unwrap(), model.compile_options(client.platform_name()));
    let first = cache.compile(&client, &program, &options).unwrap();
    assert_eq!(first.outcome, CacheOutcome::Miss, "{:?}", first.note);
    // The key covers the plugin (its StableHLO version among the rest) and the program as given:
    // a hit writes nothing again.
    let key = cache_key(&client, &program, &options).unwrap();
    let entry = Artifact::read(cache.entry_path(&key)).unwrap();
    assert_eq!(entry.header.program_fingerprint, program_fingerprint(&program));
    let again = cache.compile(&client, &program, &options).unwrap();
    assert_eq!(again.outcome, CacheOutcome::Hit);
    assert_eq!(run(&client, &first.executable, &inputs), run(&client, &again.executable, &inputs));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn what_the_writer_writes_at_1_20_runs_on_the_0_106_plugin_with_the_0_115_answers() {
    let (model, inputs) = jax_0_12_mlp();
    let written = model.program().unwrap().portable_artifact(StableHloVersion::new(1, 20, 0)).unwrap();
    assert_eq!(written.bytecode_producer(), Some("StableHLO_v1.20.0"));
    let mut answers = Vec::new();
    for plugin in support::PLUGINS {
        let client = support::client(plugin, 1);
        let options = model.compile_options(client.platform_name());
        let exe = client.compile(&written, &options).unwrap();
        answers.push(run(&client, &exe, &inputs));
    }
    assert_eq!(answers[0], answers[1]);
    // And the same as JAX's own export compiled on the newer plugin.
    let client = support::client("cpu", 1);
    let exe = model.compile(&client).unwrap();
    assert_eq!(run(&client, &exe, &inputs), answers[0]);
}

#[test]
fn an_op_the_target_lacks_is_refused_by_name_with_the_version_it_needs() {
    let text =
        "func.func public @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = stablehlo.tan %x : tensor<2xf32>\n  \
                return %0 : tensor<2xf32>\n}";
    let program = Program::mlir_text(text).unwrap();
    let error = program.portable_artifact(StableHloVersion::new(1, 3, 0)).unwrap_err();
    match &error {
        pjrt_client::Error::Portable(pjrt_stablehlo::WriteError::NotInVersion { what, needs, target }) => {
            assert!(what.contains("tan"), "{what}");
            assert_eq!((*needs, *target), (StableHloVersion::new(1, 4, 0), StableHloVersion::new(1, 3, 0)));
        }
        other => panic!("{other:?}"),
    }
    assert!(error.to_string().contains("1.4.0"), "{error}");
    let error = program.portable_artifact(StableHloVersion::new(9, 0, 0)).unwrap_err();
    assert!(matches!(error, pjrt_client::Error::Portable(pjrt_stablehlo::WriteError::Target { .. })), "{error:?}");
    // HLO has no portable form.
    let hlo = Program::hlo_module_proto(vec![1, 2, 3]).unwrap();
    assert!(program.portable_artifact(StableHloVersion::new(1, 16, 1)).is_ok());
    assert!(hlo.portable_artifact(StableHloVersion::new(1, 16, 1)).unwrap_err().to_string().contains("HLO"));
}
