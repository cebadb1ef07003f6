//! `pjrt bench dispatch`: a compiled scalar add executed, awaited and its output dropped, through
//! the safe API and through the raw C API, alternated in blocks over several rounds. The ratio
//! reported is the median of the per-round ratios (one lucky round proves nothing), with its
//! spread.

use pjrt_client::sys::{self, Args as _};
use pjrt_client::{Buffer, Client, CompileOptions, Error, ExecuteOptions, LoadedExecutable, Program};
use serde_json::{json, Map, Value as Json};

use super::samples::Samples;
use super::{alternate_samples, require_slots, Stats};

const SCALAR_ADD: &str = r#"
func.func @main(%a: tensor<f32>, %b: tensor<f32>) -> tensor<f32> {
  %0 = stablehlo.add %a, %b : tensor<f32>
  return %0 : tensor<f32>
}"#;

/// The dispatch benchmark's state: a compiled scalar add and its two inputs.
pub struct Dispatch {
    api: *const sys::PJRT_Api,
    exe: LoadedExecutable,
    a: Buffer,
    b: Buffer,
}

impl Dispatch {
    /// Compiles the program and makes the inputs.
    pub fn new(client: &Client) -> Result<Dispatch, Error> {
        let plugin = client.plugin();
        require_slots(
            plugin,
            &["PJRT_LoadedExecutable_Execute", "PJRT_Event_Await", "PJRT_Event_Destroy", "PJRT_Buffer_Destroy"],
        )?;
        let exe = client.compile(&Program::mlir_text(SCALAR_ADD)?, &CompileOptions::new())?;
        let a = client.upload(&[1f32], &[])?;
        let b = client.upload(&[2f32], &[])?;
        Ok(Dispatch { api: plugin.raw_api(), exe, a, b })
    }

    /// One execute + await + drop through the safe API. Not inlined, so that a profiler
    /// (`valgrind --tool=callgrind`) shows its inclusive cost beside [`Dispatch::raw`]'s.
    #[inline(never)]
    pub fn safe(&self) -> Result<(), Error> {
        drop(self.exe.execute(&[&self.a, &self.b], &ExecuteOptions::new())?);
        Ok(())
    }

    /// The same plugin calls through the C API directly, with the same execute options the safe
    /// path passes: no safe-layer work at all.
    #[inline(never)]
    pub fn raw(&self) {
        let list = [self.a.as_raw(), self.b.as_raw()];
        let lists = [list.as_ptr()];
        let mut output = [std::ptr::null_mut::<sys::PJRT_Buffer>()];
        let outputs = [output.as_mut_ptr()];
        let mut event = [std::ptr::null_mut::<sys::PJRT_Event>()];
        let mut options = sys::PJRT_ExecuteOptions::new();
        options.use_major_to_minor_data_layout_for_callbacks = true;
        let mut args = sys::PJRT_LoadedExecutable_Execute_Args::new();
        args.executable = self.exe.as_raw();
        args.options = &mut options;
        args.argument_lists = lists.as_ptr();
        args.num_devices = 1;
        args.num_args = 2;
        args.output_lists = outputs.as_ptr();
        args.device_complete_events = event.as_mut_ptr();
        raw_call!(self.api, PJRT_LoadedExecutable_Execute, &mut args);
        let mut wait = sys::PJRT_Event_Await_Args::new();
        wait.event = event[0];
        raw_call!(self.api, PJRT_Event_Await, &mut wait);
        let mut destroy = sys::PJRT_Event_Destroy_Args::new();
        destroy.event = event[0];
        raw_call!(self.api, PJRT_Event_Destroy, &mut destroy);
        let mut free = sys::PJRT_Buffer_Destroy_Args::new();
        free.buffer = output[0];
        raw_call!(self.api, PJRT_Buffer_Destroy, &mut free);
    }
}

/// Median of `values` (sorted in place); 0 when empty.
pub(super) fn median(values: &mut [f64]) -> f64 {
    values.sort_unstable_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// The dispatch figures: `iters` calls per variant and round after a warm-up, `rounds` rounds.
/// `safe`/`raw` hold the statistics of every sample, `rounds` each round's medians and ratio,
/// `safe_over_raw` the median ratio and `safe_over_raw_min`/`_max` its spread.
pub(super) fn dispatch_bench(
    client: &Client,
    iters: usize,
    rounds: usize,
) -> Result<(Map<String, Json>, Vec<Samples>), Error> {
    if iters == 0 || rounds == 0 {
        return Err(Error::InvalidArgument(format!(
            "--iters and --rounds must be at least 1, got {iters} and {rounds}"
        )));
    }
    let bench = Dispatch::new(client)?;
    for _ in 0..iters.min(2000) {
        bench.safe()?;
        bench.raw();
    }
    let (mut all_safe, mut all_raw) = (Vec::new(), Vec::new());
    let (mut ratios, mut per_round) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let (mut safe_ns, mut raw_ns) = alternate_samples(iters, 100, || bench.safe(), || bench.raw())?;
        all_safe.extend_from_slice(&safe_ns);
        all_raw.extend_from_slice(&raw_ns);
        let (safe, raw) = (Stats::from_ns(&mut safe_ns), Stats::from_ns(&mut raw_ns));
        let ratio = safe.median_us / raw.median_us;
        ratios.push(ratio);
        per_round.push(json!({ "safe_median_us": safe.median_us, "raw_median_us": raw.median_us, "ratio": ratio }));
    }
    let series = vec![Samples::new("safe", all_safe.clone()), Samples::new("raw", all_raw.clone())];
    let (safe, raw) = (Stats::from_ns(&mut all_safe), Stats::from_ns(&mut all_raw));
    let (min, max) = ratios.iter().fold((f64::MAX, f64::MIN), |(lo, hi), r| (lo.min(*r), hi.max(*r)));
    let figures = json!({
        "benchmark": "dispatch", "iters": iters, "rounds_run": rounds,
        "safe": safe.json(None), "raw": raw.json(None),
        "median_us": safe.median_us, "p10_us": safe.p10_us, "p90_us": safe.p90_us, "min_us": safe.min_us,
        "safe_over_raw": median(&mut ratios), "safe_over_raw_min": min, "safe_over_raw_max": max,
        "rounds": per_round,
    });
    let figures = match figures {
        Json::Object(map) => map,
        _ => Map::new(),
    };
    Ok((figures, series))
}
