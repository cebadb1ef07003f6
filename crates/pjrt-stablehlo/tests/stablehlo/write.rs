//! The VHLO bytecode writer: every portable artifact read, written back for its own StableHLO
//! version (and for other targets), reads back to the same module; ops too new for a target
//! are refused by name.

use pjrt_stablehlo::{print, read_bytecode, write_bytecode, StableHloVersion, WriteError};

use pjrt_client::{Client, Program};
use pjrt_formats::jax_export::JaxExport;

use crate::round_trip::run;
use crate::{files, ops, support};

/// Every portable artifact of the test data, read.
fn portable_modules() -> Vec<(std::path::PathBuf, pjrt_stablehlo::ir::Module)> {
    let mut out = Vec::new();
    for path in files::all() {
        let bytes = files::bytecode(&path);
        if !files::is_portable(&bytes) {
            continue;
        }
        let module = read_bytecode(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        out.push((path, module));
    }
    out
}

/// Whether the writer refuses the module for its Shardy ops (`sdy.mesh`, ... of sharded
/// exports), which it has no encoding for.
fn uses_shardy(err: &WriteError) -> bool {
    matches!(err, WriteError::Unrepresentable { what } if what.contains("sdy."))
}

#[test]
fn every_portable_artifact_round_trips_through_the_writer() {
    let mut written = 0;
    let mut shardy = Vec::new();
    let mut failures = Vec::new();
    for (path, module) in portable_modules() {
        let target = StableHloVersion::of_producer(&module.producer).unwrap();
        match write_bytecode(&module, target) {
            Ok(bytes) => match read_bytecode(&bytes) {
                Ok(again) if again == module => written += 1,
                Ok(_) => failures.push(format!("{}: reads back to another module", path.display())),
                Err(e) => failures.push(format!("{}: does not read back: {e}", path.display())),
            },
            // Sharded exports hold Shardy attributes, which the writer has no encoding for.
            Err(e) if uses_shardy(&e) => shardy.push(path.display().to_string()),
            Err(e) => failures.push(format!("{}: {e}", path.display())),
        }
    }
    assert!(failures.is_empty(), "{} failed:\n{}", failures.len(), failures.join("\n"));
    // No exclusions: sharded exports (Shardy ops and attributes) are written too.
    assert!(shardy.is_empty(), "refused for Shardy: {shardy:#?}");
    assert!(written >= 298, "only {written} portable artifacts round-tripped");
}

/// Writes the model's module for `target`, compiles it on `client` and runs it: the outputs
/// equal the original's (the original bytecode's, or where the plugin reads an older version, the
/// printed text's). `Ok(false)`: skipped (Shardy, or a model the plugin cannot
/// compile in any form).
fn written_runs_the_same(client: &Client, path: &std::path::Path, target: StableHloVersion) -> Result<bool, String> {
    let model = JaxExport::read(path).map_err(|e| e.to_string())?;
    let module = read_bytecode(model.mlir_module()).map_err(|e| e.to_string())?;
    let bytes = match write_bytecode(&module, target) {
        Ok(b) => b,
        Err(e) if uses_shardy(&e) => return Ok(false),
        Err(e) => return Err(format!("not written for {target}: {e}")),
    };
    let options = model.compile_options(client.platform_name());
    let written = client.compile(&Program::mlir_bytecode(bytes).map_err(|e| e.to_string())?, &options);
    // The original as it is, where the plugin reads its version; else the printed text (a
    // compile would write it for the plugin's version with this very writer).
    let as_exported = Program::mlir_bytecode(model.mlir_module().to_vec()).map_err(|e| e.to_string())?;
    let original = match (as_exported.stablehlo_target(), client.plugin().stablehlo_current_version()) {
        (Some(version), Some(current)) if version > current => {
            let text = Program::mlir_text(pjrt_stablehlo::print(&module)).map_err(|e| e.to_string())?;
            client.compile(&text, &options).map_err(|e| e.to_string())
        }
        _ => client.compile(&as_exported, &options).map_err(|e| e.to_string()),
    };
    let (original, written) = match (original, written) {
        (Ok(o), Ok(w)) => (o, w),
        // jaxlib's LAPACK custom calls are not the plugin's: both forms fail alike.
        (Err(_), Err(_)) => return Ok(false),
        (Ok(_), Err(e)) => return Err(format!("written for {target}, does not compile: {e}")),
        (Err(e), Ok(_)) => return Err(format!("the original does not compile ({e}), what was written does")),
    };
    let args = ops::inputs(&model)?;
    if run(client, &model, &original, &args)? != run(client, &model, &written, &args)? {
        return Err(format!("written for {target}, runs differently"));
    }
    Ok(true)
}

fn plugin_runs_what_is_written(plugin: &str, target: StableHloVersion) {
    let client = support::client(plugin, 4);
    let (mut compared, mut failures) = (0, Vec::new());
    for path in ops::models() {
        match written_runs_the_same(&client, &path, target) {
            Ok(true) => compared += 1,
            Ok(false) => {}
            Err(e) => failures.push(format!("{}: {e}", path.display())),
        }
    }
    assert!(failures.is_empty(), "{plugin}: {} failed:\n{}", failures.len(), failures.join("\n"));
    eprintln!("{plugin}: {compared} written, compiled and run the same");
    assert!(compared >= 21, "{plugin}: only {compared} compared");
}

#[test]
fn the_0_115_plugin_runs_what_is_written_for_1_20_0() {
    plugin_runs_what_is_written("cpu", StableHloVersion::new(1, 20, 0));
}

#[test]
fn the_0_106_plugin_runs_what_is_written_for_1_16_1() {
    plugin_runs_what_is_written("cpu-0.106", StableHloVersion::new(1, 16, 1));
}

/// Every artifact written at another target than its own reads back the same (but for the
/// producer and bytecode version), where the target has every op it uses.
#[test]
fn writing_for_other_targets_reads_back_the_same() {
    for target in
        [pjrt_stablehlo::NEWEST_READ_VERSION, pjrt_stablehlo::CURRENT_VERSION, StableHloVersion::new(1, 16, 1)]
    {
        let (mut same, mut refused) = (0, 0);
        for (path, module) in portable_modules() {
            match write_bytecode(&module, target) {
                Ok(bytes) => {
                    let mut again = read_bytecode(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                    assert_eq!(again.producer, target.producer());
                    again.producer = module.producer.clone();
                    again.bytecode_version = module.bytecode_version;
                    // Before properties (bytecode 0, JAX 0.4.30) an op's attributes are one
                    // dictionary sorted by name; with them, its inherent ones come first: the
                    // same attributes in another order. Such old ops written as a newer op
                    // version also gain that version's empty defaults (a gather's
                    // operand_batching_dims = []): the same module, as its text shows.
                    if module.bytecode_version < 5 {
                        sort_attributes(&mut again.ops);
                        let mut sorted = module.clone();
                        sort_attributes(&mut sorted.ops);
                        assert_eq!(print(&again), print(&sorted), "{}: written for {target}", path.display());
                        same += 1;
                        continue;
                    }
                    assert!(again == module, "{}: written for {target}, reads back differently", path.display());
                    same += 1;
                }
                Err(e) if uses_shardy(&e) => {}
                Err(WriteError::NotInVersion { .. }) => refused += 1,
                Err(e) => panic!("{}: {e}", path.display()),
            }
        }
        assert!(same >= 280, "{target}: only {same} read back the same ({refused} refused)");
    }
}

/// Every op's attributes sorted by name, nested ops too.
fn sort_attributes(ops: &mut [pjrt_stablehlo::ir::Op]) {
    for op in ops {
        op.attributes.sort_by(|a, b| a.0.cmp(&b.0));
        for region in &mut op.regions {
            for block in &mut region.blocks {
                sort_attributes(&mut block.ops);
            }
        }
    }
}

/// The writer targets 0.9.0 .. 1.22.0 (the newest version read), each end included, and
/// nothing outside (a patch version past 1.22.0 is outside too: it may hold more).
#[test]
fn targets_outside_the_range_are_refused() {
    let (_, module) = portable_modules().into_iter().next().unwrap();
    for target in [
        StableHloVersion::new(0, 8, 0),
        StableHloVersion::new(1, 22, 1),
        StableHloVersion::new(1, 23, 0),
        StableHloVersion::new(9, 0, 0),
    ] {
        assert_eq!(write_bytecode(&module, target), Err(WriteError::Target { target }));
    }
    for target in [pjrt_stablehlo::MINIMUM_VERSION, pjrt_stablehlo::NEWEST_READ_VERSION] {
        let bytes = write_bytecode(&module, target).unwrap();
        assert_eq!(read_bytecode(&bytes).unwrap().producer, target.producer());
    }
}

fn module_of(text: &str) -> pjrt_stablehlo::ir::Module {
    pjrt_stablehlo::parse_text(text).unwrap()
}

#[test]
fn ops_too_new_for_the_target_are_named() {
    let tan = module_of("func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = stablehlo.tan %x : tensor<2xf32>\n  return %0 : tensor<2xf32>\n}");
    let err = write_bytecode(&tan, StableHloVersion::new(1, 3, 0)).unwrap_err();
    assert!(matches!(&err, WriteError::NotInVersion { what, .. } if what.contains("stablehlo.tan")), "{err}");
    assert!(err.to_string().contains("compile for a newer plugin"), "{err}");
    assert!(write_bytecode(&tan, pjrt_stablehlo::CURRENT_VERSION).is_ok());

    let exp = module_of(
        "func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = \"stablehlo.exponential\"(%x) {result_accuracy = #stablehlo.result_accuracy<atol = 1.0e-5, rtol = 0.0, ulps = 1, mode = #stablehlo.result_accuracy_mode<TOLERANCE>>} : (tensor<2xf32>) -> tensor<2xf32>\n  return %0 : tensor<2xf32>\n}",
    );
    let err = write_bytecode(&exp, StableHloVersion::new(1, 8, 0)).unwrap_err();
    assert!(
        matches!(&err, WriteError::NotInVersion { what, .. } if what.contains("exponential") && what.contains("result_accuracy")),
        "{err}"
    );
    let bytes = write_bytecode(&exp, pjrt_stablehlo::CURRENT_VERSION).unwrap();
    assert!(read_bytecode(&bytes).unwrap().walk().any(|op| op.attr("result_accuracy").is_some()));
}
