//! Portable artifacts written for a chosen StableHLO version (`pjrt_formats::portable`): a
//! JAX 0.12 model (StableHLO 1.18.0) is sent to the 0.106 plugin (which reads up to 1.16.1)
//! written for 1.16.1 and unchanged to the 0.115 one; the compile cache keys on what was sent;
//! an artifact our writer writes at 1.20.0 runs on the 0.106 plugin through the same downgrade
//! with the 0.115 plugin's answers; what the target lacks is refused by name.

use std::borrow::Cow;
use std::path::PathBuf;

use pjrt_client::{Client, Program};
use pjrt_formats::artifact::{program_fingerprint, Artifact};
use pjrt_formats::compile_cache::{cache_key, CacheOutcome, CompileCache};
use pjrt_formats::jax_export::JaxExport;
use pjrt_formats::npy::NpyArray;
use pjrt_formats::portable::{for_plugin, portable_artifact};
use pjrt_formats::{BufferExt, ClientExt};
use pjrt_stablehlo::StableHloVersion;

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
fn a_newer_artifact_is_written_for_the_older_plugin_and_sent_unchanged_to_the_newer() {
    let (model, _) = jax_0_12_mlp();
    let program = model.program().unwrap();
    assert_eq!(program.bytecode_producer(), Some("StableHLO_v1.18.0"));
    let old = support::client("cpu-0.106", 1);
    let sent = for_plugin(&program, old.plugin()).unwrap();
    assert!(matches!(sent, Cow::Owned(_)));
    assert_eq!(sent.bytecode_producer(), Some("StableHLO_v1.16.1"));
    // The module is the same, written for another version.
    let (a, b) =
        (pjrt_stablehlo::read_bytecode(program.code()).unwrap(), pjrt_stablehlo::read_bytecode(sent.code()).unwrap());
    assert_eq!(a.ops, b.ops);
    let new = support::client("cpu", 1);
    assert!(matches!(for_plugin(&program, new.plugin()).unwrap(), Cow::Borrowed(p) if std::ptr::eq(p, &program)));
    // Text is the plugin's own version: never rewritten.
    let text = Program::mlir_text(support::ADD_F32).unwrap();
    assert!(matches!(for_plugin(&text, old.plugin()).unwrap(), Cow::Borrowed(_)));
}

#[test]
fn the_compile_cache_keys_on_what_the_plugin_was_sent() {
    let (model, inputs) = jax_0_12_mlp();
    let client = support::client("cpu-0.106", 1);
    let dir = std::env::temp_dir().join(format!("pjrt-portable-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cache = CompileCache::open(&dir).unwrap();
    let (program, options) = (model.program().unwrap(), model.compile_options(client.platform_name()));
    let first = cache.compile(&client, &program, &options).unwrap();
    assert_eq!(first.outcome, CacheOutcome::Miss, "{:?}", first.note);
    let sent = for_plugin(&program, client.plugin()).unwrap();
    let key = cache_key(&client, &sent, &options).unwrap();
    let entry = Artifact::read(cache.entry_path(&key)).unwrap();
    assert_eq!(entry.header.program_fingerprint, program_fingerprint(&sent));
    assert_ne!(entry.header.program_fingerprint, program_fingerprint(&program));
    let again = cache.compile(&client, &program, &options).unwrap();
    assert_eq!(again.outcome, CacheOutcome::Hit);
    assert_eq!(run(&client, &first.executable, &inputs), run(&client, &again.executable, &inputs));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn what_the_writer_writes_at_1_20_runs_on_the_0_106_plugin_with_the_0_115_answers() {
    let (model, inputs) = jax_0_12_mlp();
    let written = portable_artifact(&model.program().unwrap(), StableHloVersion::new(1, 20, 0)).unwrap();
    assert_eq!(written.bytecode_producer(), Some("StableHLO_v1.20.0"));
    let mut answers = Vec::new();
    for plugin in support::PLUGINS {
        let client = support::client(plugin, 1);
        let options = model.compile_options(client.platform_name());
        let exe = client.compile(&for_plugin(&written, client.plugin()).unwrap(), &options).unwrap();
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
    let error = portable_artifact(&program, StableHloVersion::new(1, 3, 0)).unwrap_err();
    match &error {
        pjrt_formats::Error::Portable(pjrt_stablehlo::WriteError::NotInVersion { what, needs, target }) => {
            assert!(what.contains("tan"), "{what}");
            assert_eq!((*needs, *target), (StableHloVersion::new(1, 4, 0), StableHloVersion::new(1, 3, 0)));
        }
        other => panic!("{other:?}"),
    }
    assert!(error.to_string().contains("1.4.0"), "{error}");
    let error = portable_artifact(&program, StableHloVersion::new(9, 0, 0)).unwrap_err();
    assert!(matches!(error, pjrt_formats::Error::Portable(pjrt_stablehlo::WriteError::Target { .. })), "{error:?}");
    // HLO has no portable form.
    let hlo = Program::hlo_module_proto(vec![1, 2, 3]).unwrap();
    assert!(portable_artifact(&hlo, StableHloVersion::new(1, 16, 1)).unwrap_err().to_string().contains("HLO"));
}
