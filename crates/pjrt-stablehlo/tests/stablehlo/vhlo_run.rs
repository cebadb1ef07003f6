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
    let exe = client.compile(&program, &model.compile_options(client.platform_name())).map_err(|e| e.to_string())?;
    crate::round_trip::run(client, model, &exe, args)
}

/// The JAX op-family programs, read at every version and printed, run on the 0.115 CPU
/// plugin with the outputs of JAX's text of the program (each distinct print is run once:
/// the versions of a program read into one module and print the same).
#[test]
fn every_version_of_the_op_families_runs_as_its_text_on_cpu_0_115() {
    let client = crate::support::client("cpu", 4);
    let ops_dir = files::repo().join("tests/data/stablehlo_ops/jax-0.10.2");
    let (mut failures, mut artifacts_run, mut compiled) = (Vec::new(), 0, 0);
    let mut expected: std::collections::HashMap<String, Vec<Vec<u8>>> = std::collections::HashMap::new();
    let mut ran: std::collections::HashSet<String> = std::collections::HashSet::new();
    for a in artifacts() {
        let family = a.program.trim_end_matches("_noloc");
        let path = ops_dir.join(format!("{family}.jaxexport"));
        if !path.exists() {
            continue; // A hand-written program (send/recv, collectives, custom calls): not run.
        }
        let model = pjrt_formats::jax_export::JaxExport::read(&path).unwrap();
        let args = crate::ops::inputs(&model).unwrap();
        let want = match expected.get(family) {
            Some(w) => w.clone(),
            None => {
                let text = std::fs::read_to_string(ops_dir.join(format!("{family}.mlir"))).unwrap();
                let w = outputs(&client, &model, &text, &args).unwrap_or_else(|e| panic!("{family}.mlir: {e}"));
                expected.insert(family.to_string(), w.clone());
                w
            }
        };
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
    assert!(failures.is_empty(), "{} failed:\n{}", failures.len(), failures.join("\n"));
    assert!(artifacts_run >= 500 && compiled >= 18, "{artifacts_run} artifacts, {compiled} compiled");
}
