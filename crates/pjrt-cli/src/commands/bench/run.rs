//! `pjrt bench run PROGRAM --input ...`: any program or `jax.export` model, read, compiled and
//! fed the way `pjrt run` does it (its input parsing is called, not copied), inputs uploaded
//! once. Reports the time to the first result (from the start of the command: plugin load,
//! client, compile or cache load, upload, execute, download), per-call latency percentiles and
//! throughput of sequential calls, the throughput with N calls in flight, and with `--raw` the
//! same executable and device buffers through the raw C API, alternated with the safe calls.

use std::collections::VecDeque;
use std::time::Instant;

use crate::error::Error;
use crate::out::outln;
use pjrt_client::sys::{self, Args as _};
use pjrt_client::{Buffer, Client, DownloadOptions, ExecuteOptions, LoadedExecutable, Placement};
use serde_json::{json, Value as Json};

use super::samples::Samples;
use super::{require_slots, Stats};
use crate::cli::{BenchRunArgs, PluginArg};
use crate::commands::run::inputs::{self, gather_inputs, Inputs};
use crate::commands::run::jax_model;
use crate::compiling;
use crate::plugins::{cpu_aware_client, resolve_plugin};
use crate::ui::invalid;

/// Calls per alternation block of the safe and raw variants.
const BLOCK: usize = 50;

/// Runs `pjrt bench run` and returns its report.
pub(super) fn run_bench(args: &BenchRunArgs, plugin_name: Option<&str>) -> Result<(Json, Vec<Samples>), Error> {
    let started = Instant::now();
    if args.iters == 0 || args.in_flight == 0 {
        return Err(invalid(format!(
            "--iters and --in-flight must be at least 1, got {} and {}",
            args.iters, args.in_flight
        )));
    }
    let (mut program, jax_model) = jax_model::open_program(&args.program)?;
    if let Some(model) = jax_model.as_ref().filter(|m| m.nr_devices() > 1) {
        return Err(invalid(format!(
            "the model was exported for {} devices; `pjrt bench run` measures single-device programs (time it with \
             `pjrt run`)",
            model.nr_devices()
        )));
    }
    let counts = program.module_counts();
    if counts.num_replicas.unwrap_or(1) != 1 || counts.num_partitions.unwrap_or(1) != 1 {
        return Err(invalid(
            "the program has several replicas or partitions; `pjrt bench run` measures single-device programs",
        ));
    }
    let plugin = resolve_plugin(&PluginArg { plugin: plugin_name.map(str::to_owned) })?;
    let client = if args.client_options.is_empty() {
        cpu_aware_client(&plugin, 1)?
    } else {
        Client::new(&plugin, &crate::plugins::client_options(&args.client_options)?)?
    };
    let options = compiling::build_options(client.platform_name(), 1, 1, counts.uses_shardy, &args.xla)?;
    let compile = |program: &compiling::ProgramSource| {
        compiling::compile_or_load(&client, program, &options, !args.no_cache)
            .map_err(|e| compiling::name_program_file(e, &args.program))
    };
    // What --params binds to (as `pjrt run` does): an artifact's parameters once it is loaded.
    let mut arguments = inputs::program_arguments(&program, jax_model.as_ref());
    let mut loaded = None;
    let is_text = program.program().is_some_and(|p| p.text().is_some());
    if arguments.is_none() && args.params.is_some() && !is_text {
        let compiled = compile(&program)?;
        arguments = inputs::executable_arguments(&compiled.executable, false);
        loaded = Some(compiled);
    }
    let mut inputs = gather_inputs(arguments.as_deref(), args.params.as_deref(), &args.input)?;
    let mut refined_for = None;
    if let Some(model) = &jax_model {
        let (arrays, labels) = inputs.into_host_arrays()?;
        let shapes = model.input_shapes(&arrays);
        let (arrays, labels) = jax_model::module_arguments(model, client.platform_name(), arrays, &labels, None)?;
        inputs = Inputs::arrays(arrays, labels);
        // A shape-polymorphic model is timed as refined for these inputs.
        if let Some(refined) = jax_model::refined_program(model, &shapes)? {
            program = compiling::ProgramSource::Program(refined);
            refined_for = Some(shapes);
        }
    }
    let compiled = match loaded {
        Some(compiled) => compiled,
        None => compile(&program)?,
    };
    let exe = compiled.executable;
    let params = exe.parameter_shapes().map(|p| p.to_vec());
    if let Some(params) = &params {
        if params.len() != inputs.len() {
            return Err(invalid(format!(
                "the program takes {} inputs ({}) but {} were given; pass them in order with --input",
                params.len(),
                params.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", "),
                inputs.len()
            )));
        }
    }
    let upload = || -> Result<Vec<Buffer>, Error> {
        let devices = exe.addressable_devices();
        let device = devices.first().ok_or_else(|| invalid("the executable has no addressable device"))?;
        (0..inputs.len())
            .map(|i| {
                let wanted = params.as_ref().and_then(|p| p.get(i)).and_then(|p| p.element_type);
                inputs
                    .upload(&client, i, wanted, Placement::Device(device))
                    .map_err(|e| e.context(format_args!("input {i} ({})", inputs.labels[i])))
            })
            .collect()
    };
    let mut buffers = upload()?;
    let refs: Vec<&Buffer> = buffers.iter().collect();
    for output in exe.execute(&refs, &ExecuteOptions::new())? {
        output.to_bytes(DownloadOptions::new())?;
    }
    let first_result_ms = started.elapsed().as_secs_f64() * 1e3;
    // A program that donates its inputs (aliases them to outputs) consumed them: upload them
    // again and keep them from then on, on both paths alike.
    let donates = buffers.iter().any(|b| b.is_deleted().unwrap_or(false));
    if donates {
        buffers = upload()?;
    }
    let refs: Vec<&Buffer> = buffers.iter().collect();
    let keep = ExecuteOptions::new().non_donatable_inputs(0..refs.len());
    let safe = || -> Result<(), pjrt_client::Error> {
        drop(if donates { exe.execute(&refs, &keep)? } else { exe.execute(&refs, &ExecuteOptions::new())? });
        Ok(())
    };
    let raw = if args.raw { Some(RawExecute::new(&exe, &refs, donates)?) } else { None };

    // Warm-up, then the timed calls (alternated with the raw ones in blocks).
    for _ in 0..(args.iters / 10).max(1) {
        safe()?;
        if let Some(raw) = &raw {
            raw.call()?;
        }
    }
    let mut safe_ns = Vec::with_capacity(args.iters);
    let mut raw_ns = Vec::with_capacity(if raw.is_some() { args.iters } else { 0 });
    while safe_ns.len() < args.iters {
        let block = BLOCK.min(args.iters - safe_ns.len());
        for _ in 0..block {
            let t = Instant::now();
            safe()?;
            safe_ns.push(t.elapsed().as_nanos() as u64);
        }
        if let Some(raw) = &raw {
            for _ in 0..block {
                let t = Instant::now();
                raw.call()?;
                raw_ns.push(t.elapsed().as_nanos() as u64);
            }
        }
    }
    let sequential_calls_per_s = safe_ns.len() as f64 / (safe_ns.iter().sum::<u64>().max(1) as f64 / 1e9);

    // Throughput with `in_flight` calls launched before the oldest is awaited.
    let in_flight_started = Instant::now();
    let mut pending = VecDeque::with_capacity(args.in_flight);
    for _ in 0..args.iters {
        if pending.len() == args.in_flight {
            if let Some(oldest) = pending.pop_front() {
                let oldest: pjrt_client::PendingExecution = oldest;
                drop(oldest.wait()?);
            }
        }
        pending.push_back(if donates {
            exe.execute_async(&refs, &keep)?
        } else {
            exe.execute_async(&refs, &ExecuteOptions::new())?
        });
    }
    for execution in pending {
        drop(execution.wait()?);
    }
    let in_flight_calls_per_s = args.iters as f64 / in_flight_started.elapsed().as_secs_f64();

    let mut series = vec![Samples::new("safe", safe_ns.clone())];
    let safe_stats = Stats::from_ns(&mut safe_ns);
    let mut report = json!({
        "benchmark": "run", "program": args.program, "plugin": plugin.path(),
        "api_version": plugin.api_version().to_string(), "platform": client.platform_name(),
        "iters": args.iters, "in_flight": args.in_flight, "inputs_donated_by_program": donates,
        "client_options": args.client_options,
        "polymorphic": jax_model.as_ref().map(|m| m.is_polymorphic()),
        "refined_for": refined_for.as_ref().map(|s| s.iter().map(jax_model::shape_text).collect::<Vec<_>>()),
        "cache": compiled.cache, "compile_ms": compiled.compile_ms, "load_ms": compiled.load_ms,
        "first_result_ms": first_result_ms,
        "first_result_from": "the start of the command (after argument parsing): plugin load, client, compile or cache \
                              load, upload, execute, download",
        "safe": safe_stats.json(None),
        "median_us": safe_stats.median_us, "p10_us": safe_stats.p10_us, "p90_us": safe_stats.p90_us,
        "p99_us": safe_stats.p99_us, "min_us": safe_stats.min_us,
        "sequential_calls_per_s": sequential_calls_per_s, "in_flight_calls_per_s": in_flight_calls_per_s,
    });
    if raw.is_some() {
        series.push(Samples::new("raw", raw_ns.clone()));
        let raw_stats = Stats::from_ns(&mut raw_ns);
        report["raw"] = raw_stats.json(None);
        report["safe_over_raw"] = json!(safe_stats.median_us / raw_stats.median_us);
        report["safe_over_raw_p10"] = json!(safe_stats.p10_us / raw_stats.p10_us);
    }
    Ok((report, series))
}

/// The text lines only `pjrt bench run` reports.
pub(super) fn print_extra(report: &Json) -> Result<(), crate::out::StdoutError> {
    if let Some(ms) = report["first_result_ms"].as_f64() {
        outln!("  first result after {ms:.1} ms ({} compile)", report["cache"].as_str().unwrap_or("?"))?;
    }
    if let (Some(sequential), Some(overlapped)) =
        (report["sequential_calls_per_s"].as_f64(), report["in_flight_calls_per_s"].as_f64())
    {
        outln!(
            "  throughput: {sequential:.0} calls/s one at a time, {overlapped:.0} calls/s with {} in flight",
            report["in_flight"]
        )?;
    }
    Ok(())
}

/// One execution through the raw C API on the safe side's executable and device buffers:
/// `PJRT_LoadedExecutable_Execute`, `PJRT_Event_Await`, then the event and outputs destroyed,
/// the same plugin calls (and execute options) as `LoadedExecutable::execute`.
struct RawExecute {
    api: *const sys::PJRT_Api,
    executable: *mut sys::PJRT_LoadedExecutable,
    arguments: Vec<*mut sys::PJRT_Buffer>,
    outputs: usize,
    /// Every input index when the program donates (as `ExecuteOptions::non_donatable_inputs`).
    non_donatable: Vec<i64>,
}

impl RawExecute {
    fn new(exe: &LoadedExecutable, arguments: &[&Buffer], donates: bool) -> Result<RawExecute, Error> {
        require_slots(
            exe.client().plugin(),
            &[
                "PJRT_LoadedExecutable_Execute",
                "PJRT_Event_Await",
                "PJRT_Event_Destroy",
                "PJRT_Buffer_Destroy",
                "PJRT_Error_Destroy",
            ],
        )?;
        Ok(RawExecute {
            api: exe.client().plugin().raw_api(),
            executable: exe.as_raw(),
            arguments: arguments.iter().map(|b| b.as_raw()).collect(),
            outputs: exe.num_outputs(),
            non_donatable: if donates { (0..arguments.len() as i64).collect() } else { Vec::new() },
        })
    }

    /// Destroys a non-NULL error; whether there was one.
    fn failed(&self, error: *mut sys::PJRT_Error) -> bool {
        if error.is_null() {
            return false;
        }
        let mut destroy = sys::PJRT_Error_Destroy_Args::new();
        destroy.error = error;
        // SAFETY: the slot was checked at setup (`require_slots`); the error is the plugin's,
        // destroyed once.
        unsafe { ((*self.api).PJRT_Error_Destroy.expect("checked at setup"))(&mut destroy) };
        true
    }

    fn call(&self) -> Result<(), Error> {
        let failure = |function: &str| {
            invalid(format!("{function} failed on the raw path (the safe path made the same call successfully)"))
        };
        let lists = [self.arguments.as_ptr()];
        let mut outputs = vec![std::ptr::null_mut::<sys::PJRT_Buffer>(); self.outputs];
        let output_lists = [outputs.as_mut_ptr()];
        let mut event = std::ptr::null_mut::<sys::PJRT_Event>();
        let mut options = sys::PJRT_ExecuteOptions::new();
        options.use_major_to_minor_data_layout_for_callbacks = true;
        if !self.non_donatable.is_empty() {
            options.non_donatable_input_indices = self.non_donatable.as_ptr();
            options.num_non_donatable_input_indices = self.non_donatable.len();
        }
        let mut args = sys::PJRT_LoadedExecutable_Execute_Args::new();
        args.executable = self.executable;
        args.options = &mut options;
        args.argument_lists = lists.as_ptr();
        args.num_devices = 1;
        args.num_args = self.arguments.len();
        args.output_lists = output_lists.as_ptr();
        args.device_complete_events = &mut event;
        // SAFETY: the slot was checked at setup; the arguments are live device buffers of this
        // executable's client that the safe path checked against its parameters, `outputs` has
        // room for every output the executable has, and everything outlives the call.
        let error = unsafe { ((*self.api).PJRT_LoadedExecutable_Execute.expect("checked at setup"))(&mut args) };
        let mut status = if self.failed(error) { Err(failure("PJRT_LoadedExecutable_Execute")) } else { Ok(()) };
        if !event.is_null() {
            let mut wait = sys::PJRT_Event_Await_Args::new();
            wait.event = event;
            // SAFETY: the slot was checked at setup; the event is the plugin's, still alive.
            let error = unsafe { ((*self.api).PJRT_Event_Await.expect("checked at setup"))(&mut wait) };
            if self.failed(error) && status.is_ok() {
                status = Err(failure("PJRT_Event_Await"));
            }
            let mut destroy = sys::PJRT_Event_Destroy_Args::new();
            destroy.event = event;
            // SAFETY: as above; destroyed once.
            self.failed(unsafe { ((*self.api).PJRT_Event_Destroy.expect("checked at setup"))(&mut destroy) });
        }
        for output in outputs.into_iter().filter(|b| !b.is_null()) {
            let mut free = sys::PJRT_Buffer_Destroy_Args::new();
            free.buffer = output;
            // SAFETY: the slot was checked at setup; each output is the plugin's, destroyed once.
            self.failed(unsafe { ((*self.api).PJRT_Buffer_Destroy.expect("checked at setup"))(&mut free) });
        }
        status
    }
}
