//! `tpu_topology.*`: what the TPU plugin (`libtpu`) answers without a TPU: a topology made by
//! name, its device descriptions, the TpuTopology extension's queries on it, and an ahead-of-time
//! compilation for it.

use pjrt_client::{CompileOptions, Plugin, Program, Topology};

use super::ADD;
use crate::commands::conform::report::{expect, Outcome, Problem, Report};

/// The topology the checks make: four v5e chips on one host.
pub(crate) const TPU_TOPOLOGY: &str = "v5e:2x2";

/// The variable that keeps libtpu from asking the cloud metadata server for each TPU setting
/// (30 tries per key, minutes in all, on a machine outside Google Cloud).
pub(crate) const SKIP_METADATA: &str = "TPU_SKIP_MDS_QUERY";

/// What the TPU plugin answers without a TPU, on [`TPU_TOPOLOGY`]. Needs `TPU_SKIP_MDS_QUERY=1`
/// off Google Cloud: without it the checks are unsupported rather than minutes long.
pub(crate) fn tpu_topology_checks(r: &mut Report, plugin: &Plugin) {
    if std::env::var_os(SKIP_METADATA).is_none_or(|v| v.is_empty() || v == "0") {
        r.check("tpu_topology.*", || {
            Err(Problem::Unsupported(format!(
                "{SKIP_METADATA} is not set: libtpu would ask the cloud metadata server for each TPU setting \
                 (minutes off Google Cloud); set {SKIP_METADATA}=1 to make TPU topologies without a TPU"
            )))
        });
        return;
    }
    let topology = Topology::create(plugin, TPU_TOPOLOGY, &[]);
    let with = |f: &dyn Fn(&Topology) -> Outcome| match &topology {
        Ok(t) => f(t),
        Err(e) => Err(Problem::Fail(e.to_string())),
    };
    r.check("tpu_topology.create", || {
        with(&|t| {
            expect(t.platform_name()? == "tpu", "not a tpu topology")?;
            Ok(format!("{TPU_TOPOLOGY}: {}", t.platform_version()?.lines().next().unwrap_or_default()))
        })
    });
    r.check("tpu_topology.device_descriptions", || {
        with(&|t| {
            let descriptions = t.device_descriptions()?;
            expect(descriptions.len() == 4, format!("{} devices for {TPU_TOPOLOGY}", descriptions.len()))?;
            Ok(format!("{} x {}", descriptions.len(), descriptions[0].kind()?))
        })
    });
    r.check("tpu_topology.queries", || {
        with(&|t| {
            let chips = t.chip_count()?;
            let processes = t.process_count()?;
            expect(chips == 4 && processes == 1, format!("{chips} chips on {processes} processes"))?;
            expect(t.chip_bounds()? == [2, 2, 1], "chip bounds")?;
            for device in 0..4 {
                let (coords, core) = t.chip_coord_and_core_index_for_logical_device_of_default_type(device)?;
                let back = t.logical_device_of_default_type_id_from_chip_coord_and_core_index(&coords, core)?;
                expect(back == device, format!("device {device} at {coords:?} core {core} maps back to {back}"))?;
            }
            Ok(format!(
                "{chips} chips, {} cores per chip, bounds {:?}, {processes} process",
                t.core_count_of_default_type_per_chip()?,
                t.chip_bounds()?
            ))
        })
    });
    r.check("tpu_topology.subslice", || {
        with(&|t| {
            let one = t.subslice(&[1, 1, 1], &[1, 1, 1])?;
            expect(one.is_subslice_topology()? && one.chip_count()? == 1, "not a 1-chip subslice")?;
            Ok("1x1x1 of 2x2x1".into())
        })
    });
    r.check("tpu_topology.topology_serialize", || with(&|t| Ok(format!("{} bytes", t.serialize()?.len()))));
    r.check("tpu_topology.compile_and_serialize", || {
        with(&|t| {
            let exe = t.compile(&Program::mlir_text(ADD)?, &CompileOptions::new(), None)?;
            expect(exe.num_outputs()? == 1, "one output")?;
            let bytes = exe.serialize()?;
            expect(!bytes.is_empty(), "an empty executable")?;
            Ok(format!("{} bytes", bytes.len()))
        })
    });
}
