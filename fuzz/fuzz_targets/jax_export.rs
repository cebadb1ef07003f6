//! `jax.export` artifacts: any bytes either fail to parse with an error, or parse to a model
//! whose parts agree (kept inputs within the inputs, pytree leaves = avals, a bytecode program),
//! and whose run checks and input mapping never panic.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pjrt_formats::jax_export::JaxExport;
use pjrt_formats::npy::NpyArray;

fuzz_target!(|data: &[u8]| {
    let looks_like = JaxExport::looks_like(data);
    let Ok(model) = JaxExport::from_bytes(data) else { return };
    assert!(looks_like, "a readable artifact must be detected by content");
    assert!(model.module_kept_var_idx().iter().all(|&i| i < model.in_avals().len()));
    assert!(model.module_kept_var_idx().windows(2).all(|w| w[0] < w[1]));
    assert_eq!(model.in_tree().leaf_count(), model.in_avals().len());
    assert_eq!(model.out_tree().leaf_count(), model.out_avals().len());
    assert_eq!(model.in_tree().leaf_paths().len(), model.in_avals().len());
    assert!(model.nr_devices() >= 1);
    model.program().expect("the module is MLIR bytecode");
    assert!(model.jax_version().is_none_or(|v| v.len() <= 64), "the writer's version is cut");
    let summary = model.to_string();
    assert!(!summary.contains(|c: char| c.is_control()), "the summary escapes what the file holds: {summary:?}");
    for s in model.in_shardings().iter().chain(model.out_shardings()) {
        let _ = s.is_replicated();
    }
    let _ = model.device_shardings();
    for platform in ["cpu", "cuda", "gpu", "tpu"] {
        let _ = model.platform_index(platform);
        if model.check_runnable(platform).is_err() {
            continue;
        }
        // Inputs of exactly the model's avals (small ones only) map to its arguments.
        let mut inputs = Vec::new();
        for aval in model.in_avals() {
            let dims: Vec<i64> = aval.fixed_dims().unwrap();
            let count = dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(usize::try_from(d).ok()?));
            let Some(count) = count.filter(|&c| c <= 4096) else { return };
            let Some(dtype) = aval.element_type.and_then(pjrt_formats::dtype_of) else { return };
            let bytes = count * dtype.size();
            inputs.push(NpyArray::new(dtype, dims, vec![0; bytes]).unwrap());
        }
        let args = model.arrange_inputs(platform, &inputs).expect("inputs of the model's avals are accepted");
        let index = usize::from(model.platform_index(platform).unwrap().is_some());
        assert_eq!(args.len(), model.module_kept_var_idx().len() + index);
    }
});
