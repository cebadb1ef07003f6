//! StableHLO's serializer's artifacts at every version (see `vhlo`) run on the CPU plugins:
//! what each reads as, printed, gives the answers of the program's text.

use crate::files;
use crate::vhlo::artifacts;

/// The outputs of `text` compiled on `client` as `model`'s program, run on `args`.
fn outputs(
    client: &pjrt_client::Client,
    model: &pjrt_formats::jax_export::JaxExport,
    text: &str,
    args: &[pjrt_client::HostArray],
) -> Result<Vec<Vec<u8>>, String> {
    let program = pjrt_client::Program::mlir_text(text.to_string()).map_err(|e| e.to_string())?;
    run_program(client, model, &program, args)
}

/// The outputs of `program` compiled on `client` as `model`'s program, run on `args`.
fn run_program(
    client: &pjrt_client::Client,
    model: &pjrt_formats::jax_export::JaxExport,
    program: &pjrt_client::Program,
    args: &[pjrt_client::HostArray],
) -> Result<Vec<Vec<u8>>, String> {
    let exe = client.compile(program, &model.compile_options(client.platform_name())).map_err(|e| e.to_string())?;
    crate::round_trip::run(client, model, &exe, args)
}

/// The op-family program artifact `a` is of (its name without `_noloc`), with its JAX export
/// and inputs; `None` for a hand-written program, which has no export to run.
fn family_case<'a>(
    ops_dir: &std::path::Path,
    a: &'a crate::vhlo::Artifact,
) -> Option<(&'a str, pjrt_formats::jax_export::JaxExport, Vec<pjrt_client::HostArray>)> {
    let family = a.program.trim_end_matches("_noloc");
    let path = ops_dir.join(format!("{family}.jaxexport"));
    if !path.exists() {
        return None;
    }
    let model = pjrt_formats::jax_export::JaxExport::read(&path).unwrap();
    let args = crate::ops::inputs(&model).unwrap();
    Some((family, model, args))
}

/// The answers of JAX's text of `family` on `client` (plugin `name`), computed once per family.
fn text_answers(
    expected: &mut std::collections::HashMap<String, Vec<Vec<u8>>>,
    client: &pjrt_client::Client,
    name: &str,
    ops_dir: &std::path::Path,
    family: &str,
    model: &pjrt_formats::jax_export::JaxExport,
    args: &[pjrt_client::HostArray],
) -> Vec<Vec<u8>> {
    if let Some(w) = expected.get(family) {
        return w.clone();
    }
    let text = std::fs::read_to_string(ops_dir.join(format!("{family}.mlir"))).unwrap();
    let w = outputs(client, model, &text, args).unwrap_or_else(|e| panic!("{family}.mlir on {name}: {e}"));
    expected.insert(family.to_string(), w.clone());
    w
}

/// The JAX op-family programs, read at every version and printed, run on both CPU plugins
/// (0.115 and 0.106) with the outputs of JAX's text of the program on the same plugin (each
/// distinct print is run once per plugin: the versions of a program read into one module and
/// print the same).
#[test]
fn every_version_of_the_op_families_runs_as_its_text_on_both_cpu_plugins() {
    let ops_dir = files::repo().join("tests/data/stablehlo_ops/jax-0.10.2");
    let all = artifacts();
    for (name, client) in
        [("0.115", crate::support::client("cpu", 4)), ("0.106", crate::support::client("cpu-0.106", 4))]
    {
        let (mut failures, mut artifacts_run, mut compiled) = (Vec::new(), 0, 0);
        let mut expected: std::collections::HashMap<String, Vec<Vec<u8>>> = std::collections::HashMap::new();
        let mut ran: std::collections::HashSet<String> = std::collections::HashSet::new();
        for a in &all {
            let Some((family, model, args)) = family_case(&ops_dir, a) else {
                continue; // A hand-written program (send/recv, collectives, custom calls): not run.
            };
            let want = text_answers(&mut expected, &client, name, &ops_dir, family, &model, &args);
            let printed = pjrt_stablehlo::print(&pjrt_stablehlo::read_bytecode(&a.bytes).unwrap());
            artifacts_run += 1;
            if !ran.insert(format!("{family}\n{printed}")) {
                continue;
            }
            compiled += 1;
            match outputs(&client, &model, &printed, &args) {
                Ok(got) if got == want => {}
                Ok(_) => failures.push(format!("{} {}: other outputs", a.program, a.version)),
                Err(e) => failures.push(format!("{} {}: {e}", a.program, a.version)),
            }
        }
        assert!(failures.is_empty(), "{name}: {} failed:\n{}", failures.len(), failures.join("\n"));
        assert!(artifacts_run >= 500 && compiled >= 18, "{name}: {artifacts_run} artifacts, {compiled} compiled");
    }
}

/// The versions the written-artifact run test writes programs for: one of each bytecode
/// version the writer writes (0, 1, 3, 4 and 6), 1.0.0, the newest the 0.106 plugin reads
/// (1.16.x) and the writer's newest. Each program runs at three of them, in turn (program
/// `i` at `i`, `i + 2` and `i + 4`, modulo 7), so that every version runs some program on each
/// plugin that reads it: every version of every program on both plugins is some 1,300
/// compiles, over ten minutes on two cores; these are about 100.
const RUN_VERSIONS: [&str; 7] = ["0.9.0", "0.10.0", "0.12.0", "0.14.0", "1.0.0", "1.16.0", "1.20.0"];

/// This writer's artifact of each JAX op-family program, written at the versions of
/// [`RUN_VERSIONS`] each CPU plugin reads (from the module StableHLO's artifact at that
/// version reads as), compiled from the bytes on the 0.115 and the 0.106 plugins: each gives
/// the outputs of JAX's text of the program on the same plugin.
#[test]
fn written_artifacts_run_as_their_text_on_both_cpu_plugins() {
    let ops_dir = files::repo().join("tests/data/stablehlo_ops/jax-0.10.2");
    let clients = [("0.115", crate::support::client("cpu", 4)), ("0.106", crate::support::client("cpu-0.106", 4))];
    let all = artifacts();
    let (mut failures, mut ran) = (Vec::new(), std::collections::BTreeMap::<String, usize>::new());
    let mut programs: Vec<&str> = all.iter().map(|a| a.program.as_str()).collect();
    programs.dedup();
    let chosen = |a: &crate::vhlo::Artifact| {
        let i = programs.iter().position(|p| *p == a.program).unwrap_or(0);
        [0, 2, 4].iter().any(|k| RUN_VERSIONS[(i + k) % RUN_VERSIONS.len()] == a.version)
    };
    for (name, client) in &clients {
        let newest = client.plugin().stablehlo_current_version().expect("the plugin's StableHLO version");
        let mut expected: std::collections::HashMap<String, Vec<Vec<u8>>> = Default::default();
        for a in all.iter().filter(|a| chosen(a)) {
            let target: pjrt_stablehlo::StableHloVersion = a.version.parse().unwrap();
            if target > newest || target > pjrt_stablehlo::CURRENT_VERSION {
                continue;
            }
            let Some((family, model, args)) = family_case(&ops_dir, a) else {
                continue; // A hand-written program (send/recv, collectives, custom calls): not run.
            };
            let want = text_answers(&mut expected, client, name, &ops_dir, family, &model, &args);
            let module = pjrt_stablehlo::read_bytecode(&a.bytes).unwrap();
            let bytes = pjrt_stablehlo::write_bytecode(&module, target).unwrap();
            let program = pjrt_client::Program::mlir_bytecode(bytes).unwrap();
            *ran.entry(format!("{name} {}", a.version)).or_insert(0) += 1;
            match run_program(client, &model, &program, &args) {
                Ok(got) if got == want => {}
                Ok(_) => failures.push(format!("{} {} on {name}: other outputs", a.program, a.version)),
                Err(e) => failures.push(format!("{} {} on {name}: {e}", a.program, a.version)),
            }
        }
    }
    println!("{ran:?}");
    assert!(failures.is_empty(), "{} failed:\n{}", failures.len(), failures.join("\n"));
    let runs: usize = ran.values().sum();
    assert_eq!(ran.len(), 2 * RUN_VERSIONS.len() - 1, "{ran:?}"); // 0.106 reads all but 1.20.0
    assert!(runs >= 80, "{runs} runs: {ran:?}");
}
