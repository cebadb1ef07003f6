//! `gpu_target.*`: what a CUDA plugin answers without a GPU (a topology for an H100, its description, a deviceless compilation).

use pjrt_client::{CompileOptions, GpuTarget, GpuTopologyShape, Plugin, Program, Topology};

use super::ADD;
use crate::commands::conform::report::{expect, Outcome, Problem, Report};

/// What a CUDA plugin answers without a GPU: a topology for a GPU target (an H100), its
/// description, and a deviceless compilation of the add program, serialized. Needs `ptxas` and
/// `libdevice` beside the plugin (`pjrt plugin install cuda12` puts them there) for the compile.
pub(crate) fn gpu_target_checks(r: &mut Report, plugin: &Plugin) {
    let Some(h100) = GpuTarget::builtin("h100") else { return };
    let topology = GpuTopologyShape::devices(2).and_then(|shape| Topology::for_gpu_target(plugin, &h100, shape));
    let with = |f: &dyn Fn(&Topology) -> Outcome| match &topology {
        Ok(t) => f(t),
        Err(e) => Err(Problem::Fail(e.to_string())),
    };
    r.check("gpu_target.topology", || {
        with(&|t| {
            expect(t.platform_name()? == "cuda", "not a cuda topology")?;
            Ok(t.platform_version()?)
        })
    });
    r.check("gpu_target.device_descriptions", || {
        with(&|t| {
            let descriptions = t.device_descriptions()?;
            expect(descriptions.len() == 2, format!("{} devices for a 1x1x2 topology", descriptions.len()))?;
            Ok(descriptions[0].kind()?)
        })
    });
    r.check("gpu_target.topology_attributes", || with(&|t| Ok(format!("{} attributes", t.attributes()?.len()))));
    r.check("gpu_target.topology_fingerprint", || with(&|t| Ok(t.fingerprint()?.to_string())));
    r.check("gpu_target.topology_serialize", || with(&|t| Ok(format!("{} bytes", t.serialize()?.len()))));
    r.check("gpu_target.memory_space_kind_ids", || with(&|t| Ok(format!("{:?}", t.memory_space_kind_ids()?))));
    r.check("gpu_target.cuda_data_dir", || {
        with(&|t| {
            let dir = t.cuda_data_dir().ok_or(Problem::Unsupported(
                "no ptxas and libdevice beside the plugin (pjrt plugin install cuda12 installs them)".into(),
            ))?;
            Ok(dir.display().to_string())
        })
    });
    r.check("gpu_target.compile_and_serialize", || {
        with(&|t| {
            let exe = t.compile(&Program::mlir_text(ADD)?, &CompileOptions::new(), None)?;
            expect(exe.num_outputs()? == 1 && exe.num_replicas()? == 1 && exe.num_partitions()? == 1, "counts")?;
            expect(exe.output_shapes()?.len() == 1, "one output shape")?;
            let bytes = exe.serialize()?;
            expect(!bytes.is_empty(), "an empty executable")?;
            Ok(format!("{} bytes, fingerprint {}", bytes.len(), exe.fingerprint()?))
        })
    });
    r.check("gpu_target.compile_2_partitions", || {
        with(&|t| {
            let options = CompileOptions::new().num_partitions(2).use_spmd_partitioning(true);
            let exe = t.compile(&Program::mlir_text(ADD)?, &options, None)?;
            expect(exe.num_partitions()? == 2, "not 2 partitions")?;
            Ok(format!("{} bytes", exe.serialize()?.len()))
        })
    });
    r.check("gpu_target.malformed_target_is_an_error", || {
        let bad = GpuTarget::from_text("bad", "gpu_device_info { no_such_field: 1 }")?;
        expect(Topology::for_gpu_target(plugin, &bad, GpuTopologyShape::devices(1)?).is_err(), "accepted")?;
        Ok(String::new())
    });
}
