//! `pjrt run`: compiles a program (through the compile cache) or loads an artifact, uploads its
//! inputs to every device (split along an axis with `--shard-inputs`), runs it, and writes and
//! summarises its outputs. A `jax.export` model exported for several devices takes its own path
//! ([`jax_model::run_multi_device_model`]); a shape-polymorphic one is compiled as refined for
//! its inputs' shapes ([`jax_model::refined_program`]), so the compile cache keeps one
//! executable per set of shapes.

pub mod inputs;
pub mod jax_model;
pub mod multi_process;
pub mod outputs;

use std::path::PathBuf;
use std::time::Instant;

use pjrt_client::{ExecuteOptions, Placement};
use pjrt_formats::BufferExt as _;

use crate::error::Error;
use crate::out::outln;
use serde_json::json;

use self::inputs::{gather_inputs, Inputs};
use self::outputs::{
    cache_line, check_writable, commit_all, output_dtypes, output_files, preview, print_summary, OutputSink,
};
use crate::cli::RunArgs;
use crate::compiling::{self, ProgramSource};
use crate::plugins::{cpu_aware_client, resolve_plugin};
use crate::ui::{self, invalid};

/// Loads the `--ffi-library` handler libraries and registers their handlers on the client's plugin.
pub(crate) fn register_ffi_libraries(paths: &[std::path::PathBuf], client: &pjrt_client::Client) -> Result<(), Error> {
    for path in paths {
        // SAFETY: the user named this library to be loaded into `pjrt run` (the option's help
        // says loading it runs its code).
        let library = unsafe { pjrt_client::ffi::FfiLibrary::load(path) }?;
        library.register(client)?;
    }
    Ok(())
}

/// Compiles `program` (or loads it from the cache, or an artifact), naming the file and the
/// JAX that wrote a model on failure.
fn compile(
    client: &pjrt_client::Client,
    program: &ProgramSource,
    options: &pjrt_client::CompileOptions,
    args: &RunArgs,
    model: Option<&pjrt_formats::jax_export::JaxExport>,
) -> Result<compiling::Compiled, Error> {
    compiling::compile_or_load(client, program, options, !args.no_cache).map_err(|e| {
        jax_model::explain_version_error(&e, model);
        compiling::name_program_file(e, &args.program)
    })
}

/// `pjrt run`: runs the program `args` names on its inputs and writes its outputs.
pub fn exec(args: &RunArgs) -> Result<(), Error> {
    let started = Instant::now();
    let (mut program, jax_model) = jax_model::open_program(&args.program)?;
    if let Some(model) = jax_model.as_ref().filter(|m| m.nr_devices() > 1) {
        if args.multi_process.kv_store.is_some() {
            return Err(invalid(
                "--kv-store runs one process of a job; a jax.export model exported for several devices runs in one \
                 process only (drop --kv-store)",
            ));
        }
        return jax_model::run_multi_device_model(args, model);
    }
    let counts = program.module_counts();
    let replicas = args.replicas.or(counts.num_replicas).unwrap_or(1);
    let partitions = counts.num_partitions.unwrap_or(1);
    if replicas < 1 {
        return Err(invalid(format!("--replicas must be at least 1, got {replicas}")));
    }
    if partitions < 1 {
        return Err(invalid(format!("mhlo.num_partitions must be at least 1, got {partitions}")));
    }
    if partitions > 1 && args.shard_inputs.is_none() {
        return Err(invalid(format!(
            "the program is partitioned over {partitions} devices (mhlo.num_partitions): give --shard-inputs AXIS \
             to split the inputs into one shard per device along AXIS"
        )));
    }
    let device_count = replicas
        .checked_mul(partitions)
        .ok_or_else(|| invalid(format!("{replicas} replicas × {partitions} partitions is too many")))?;
    // What --params binds to: the model's or program's arguments. An artifact's (or HLO's)
    // parameters are known once it is loaded, so its inputs are read after the load; others'
    // before the plugin is loaded or a job joined, so that a bad input fails first.
    let arguments = inputs::program_arguments(&program, jax_model.as_ref());
    let is_text = program.program().is_some_and(|p| p.text().is_some());
    let after_load = arguments.is_none() && args.params.is_some() && !is_text;
    let early = match after_load {
        false => Some(gather_inputs(arguments.as_deref(), args.params.as_deref(), &args.input)?),
        true => None,
    };
    let plugin = resolve_plugin(&args.plugin)?;
    let job = multi_process::connect(&args.multi_process)?;
    let client = match &job {
        Some(job) => multi_process::client(&plugin, device_count as i64, job)?,
        None => cpu_aware_client(&plugin, device_count as i64)?,
    };
    register_ffi_libraries(&args.ffi_library, &client)?;
    let options =
        compiling::build_options(client.platform_name(), replicas, partitions, counts.uses_shardy, &args.xla)?;
    let (mut inputs, loaded) = match early {
        Some(inputs) => (inputs, None),
        None => {
            let compiled = compile(&client, &program, &options, args, jax_model.as_ref())?;
            let arguments = inputs::executable_arguments(&compiled.executable, partitions > 1);
            (gather_inputs(arguments.as_deref(), args.params.as_deref(), &args.input)?, Some(compiled))
        }
    };
    // Sharding works on host arrays. Otherwise every device takes each whole input, and
    // safetensors tensors upload straight from the files' bytes (jax.export models' too).
    let mut host_inputs = None;
    if args.shard_inputs.is_some() {
        let (arrays, labels) = inputs.into_host_arrays()?;
        if let Some(axis) = args.shard_inputs {
            for (i, array) in arrays.iter().enumerate() {
                if axis >= array.dims.len() {
                    return Err(invalid(format!(
                        "--shard-inputs {axis}: input {i} ({}) has rank {}",
                        labels[i],
                        array.dims.len()
                    )));
                }
            }
        }
        host_inputs = Some(arrays);
        inputs = Inputs::host(Vec::new(), labels);
    }
    // A jax.export model's arguments, each of its parameter's type (--shard-inputs is refused);
    // other host inputs are split below, once the parameters' types are known. A
    // shape-polymorphic model's program is refined for the inputs' shapes here.
    let mut refined_for = None;
    if let Some(model) = &jax_model {
        inputs = match host_inputs.take() {
            // --shard-inputs: refused there, with the reason.
            Some(arrays) => {
                let (arrays, labels) = jax_model::module_arguments(
                    model,
                    client.platform_name(),
                    arrays,
                    &inputs.labels,
                    args.shard_inputs,
                )?;
                Inputs::arrays(arrays, labels)
            }
            None => {
                let (arguments, shapes) = inputs.into_module_arguments(model, client.platform_name())?;
                if let Some(refined) = jax_model::refined_program(model, &shapes)? {
                    program = ProgramSource::Program(refined);
                    refined_for = Some(shapes);
                }
                arguments
            }
        };
    }
    // An MLIR program with `?` dimensions (or dimension parameters) is refined for the
    // inputs' shapes, as a shape-polymorphic jax.export model is: text, or a StableHLO portable
    // artifact (`.mlirbc`; bytecode that is not one goes to the plugin as it is).
    let parsed = match program.program().filter(|_| jax_model.is_none()) {
        Some(p) if p.text().is_some_and(pjrt_formats::mlir_text::may_be_dynamic) => {
            Some(pjrt_formats::mlir_text::TextProgram::from_program(p, &args.program.display().to_string())?)
        }
        Some(p) if p.text().is_none() && p.format() == pjrt_client::ProgramFormat::Mlir => {
            pjrt_formats::mlir_text::TextProgram::from_program(p, &args.program.display().to_string()).ok()
        }
        _ => None,
    };
    match parsed.filter(|p| p.is_dynamic()) {
        Some(parsed) => {
            if host_inputs.is_some() {
                return Err(invalid(
                    "--shard-inputs with a program of dynamic shapes: refine it first (run it unsharded)",
                ));
            }
            let declared = parsed.parameter_element_types();
            let shapes = inputs.shapes(|i| declared.get(i).copied().flatten())?;
            program = ProgramSource::Program(parsed.program_for(&shapes, &args.dim)?);
        }
        None if !args.dim.is_empty() => {
            return Err(invalid(
                "--dim is for MLIR text programs that take dimension variables as arguments or have `?` dimensions; \
                 this program has neither",
            ))
        }
        None => {}
    }
    let input_count = host_inputs.as_ref().map_or(inputs.len(), Vec::len);
    if matches!(program, ProgramSource::Artifact(_)) && !args.xla.xla_options.is_empty() {
        ui::log_line("note: --xla-option has no effect on an artifact: it was compiled by `pjrt compile`");
    }
    let compiled = match loaded {
        Some(compiled) => compiled,
        None => compile(&client, &program, &options, args, jax_model.as_ref())?,
    };
    let (exe, compile_ms, load_ms) = (compiled.executable, compiled.compile_ms, compiled.load_ms);
    // Every output must be writable before anything is uploaded or run: a failure after the
    // work would leave some outputs written and the others lost.
    let stored = output_dtypes(args.output_format, exe.output_shapes())?;
    let out_dir = args.output_dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let device_dir =
        |k: usize, devices: usize| if devices > 1 { out_dir.join(format!("device{k}")) } else { out_dir.clone() };
    let device_count = exe.addressable_devices().len();
    for k in 0..device_count {
        check_writable(&output_files(args.output_format, &device_dir(k, device_count), stored.len()))?;
    }
    let params = exe.parameter_shapes().map(|p| p.to_vec());
    let wanted = |i: usize| params.as_ref().and_then(|p| p.get(i)).and_then(|p| p.element_type);
    if let Some(params) = &params {
        if params.len() != input_count {
            return Err(invalid(format!(
                "the program takes {} inputs ({}) but {} were given; pass them in order with --input",
                params.len(),
                params.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", "),
                input_count
            )));
        }
    }
    let transfer_started = Instant::now();
    let devices = exe.addressable_devices();
    // One set of inputs per device when sharded; else all devices share `inputs`.
    let sharded: Option<Vec<Inputs>> = match (args.shard_inputs, host_inputs) {
        (Some(axis), Some(host)) => {
            // Each input as its parameter's element type (bf16 bits, widened sub-byte values).
            let host = host
                .iter()
                .enumerate()
                .map(|(i, array)| {
                    array
                        .to_host_array(wanted(i))
                        .map_err(|e| e.context(format_args!("input {i} ({})", inputs.labels[i])))
                })
                .collect::<Result<Vec<_>, pjrt_formats::Error>>()?;
            // Replicated where the input already has the (per-device) parameter shape.
            let shardings: Vec<pjrt_client::sharding::Sharding> = host
                .iter()
                .enumerate()
                .map(|(i, array)| {
                    let param = params.as_ref().and_then(|p| p.get(i));
                    let whole = param.is_some_and(|p| p.dims == array.dims());
                    if whole && devices.len() > 1 && partitions > 1 {
                        pjrt_client::sharding::Sharding::Replicated
                    } else {
                        pjrt_client::sharding::Sharding::Split(axis)
                    }
                })
                .collect();
            let per_device = pjrt_client::sharding::per_device_arrays(&host, &shardings, devices.len())
                .map_err(|e| Error::from(e).context(format_args!("--shard-inputs {axis}")))?;
            Some(per_device.into_iter().map(|arrays| Inputs::arrays(arrays, inputs.labels.clone())).collect())
        }
        _ => None,
    };
    let mut buffers = Vec::new();
    for (k, device) in devices.iter().enumerate() {
        let device_inputs = sharded.as_ref().map_or(&inputs, |s| &s[k]);
        let mut row = Vec::new();
        for i in 0..device_inputs.len() {
            let buffer = device_inputs
                .upload(&client, i, wanted(i), Placement::Device(device))
                .map_err(|e| e.context(format_args!("input {i} ({})", device_inputs.labels[i])))?;
            row.push(buffer);
        }
        buffers.push(row);
    }
    let mut transfer_ms = transfer_started.elapsed().as_secs_f64() * 1e3;
    let execute_started = Instant::now();
    let device_outputs = exe.execute_sharded(&buffers, &ExecuteOptions::new())?;
    let execute_ms = execute_started.elapsed().as_secs_f64() * 1e3;
    let download_started = Instant::now();
    let mut outputs = Vec::new();
    // Every output is staged first and committed at the end: all files appear, or none.
    let mut staged = Vec::new();
    for (k, outputs_of_device) in device_outputs.iter().enumerate() {
        let dir = device_dir(k, device_outputs.len());
        std::fs::create_dir_all(&dir).map_err(|e| pjrt_client::Error::Io { path: dir.clone(), source: e })?;
        let mut sink = OutputSink::new(args.output_format, &dir);
        for (i, buffer) in outputs_of_device.iter().enumerate() {
            let array = buffer.to_npy()?;
            let element_type = buffer.element_type()?;
            // `dtype` and `element_type` name the program's type (s4), `npy_dtype` and
            // `stored_as` what the file holds (int8 for s4: sub-byte types are widened).
            let mut row = json!({
                "device": k, "index": i, "dtype": element_type.name(), "element_type": element_type.name(),
                "npy_dtype": array.dtype.descr(), "stored_as": stored.get(i).copied().unwrap_or(array.dtype.name()),
                "shape": array.dims, "preview": preview(&array, element_type.name() == "bf16"),
            });
            let (file, tensor) = sink.add(i, element_type, array)?;
            row["file"] = json!(file);
            row["tensor"] = json!(tensor);
            outputs.push(row);
        }
        staged.extend(sink.finish()?);
    }
    commit_all(staged)?;
    transfer_ms += download_started.elapsed().as_secs_f64() * 1e3;
    if args.json {
        let report = json!({
            "program": args.program, "plugin": plugin.path(), "platform": client.platform_name(),
            "replicas": replicas, "partitions": partitions, "shard_inputs": args.shard_inputs,
            "model": jax_model.as_ref().map(|m| jax_model::model_summary(m, refined_for.as_deref())), "outputs": outputs,
            "cache": compiled.cache,
            "process": job.as_ref().map(|j| json!({
                "job": j.id, "index": j.process, "count": j.count, "rendezvous_ms": j.rendezvous_ms,
                "process_index": client.process_index(),
            })),
            "timings_ms": { "compile": compile_ms, "load": load_ms, "transfer": transfer_ms, "execute": execute_ms,
                            "total": started.elapsed().as_secs_f64() * 1e3 },
        });
        outln!("{report}")?;
    } else {
        if let Some(j) = &job {
            outln!("process {}/{} of job {} (all joined in {:.0} ms)", j.process, j.count, j.id, j.rendezvous_ms)?;
        }
        print_summary(&outputs, device_outputs.len() > 1)?;
        outln!("{}", cache_line(compiled.cache, compile_ms, load_ms, matches!(program, ProgramSource::Artifact(_))))?;
    }
    Ok(())
}
