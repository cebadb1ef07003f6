//! `pjrt conform`: one check per capability, each reported as pass, fail or unsupported.
//!
//! "Unsupported" means the plugin said UNIMPLEMENTED, or its version lacks the function: it is
//! not a failure. A failure is a wrong answer or an unexpected error.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use pjrt_client::{
    AlignedHostBuffer, Buffer, Client, ClientOptions, CompileOptions, DeviceAssignment, DownloadOptions, ElementType,
    Error, ErrorCode, ExecuteContext, ExecuteOptions, GpuTarget, GpuTopologyShape, HostSource, InMemoryStore,
    Placement, Plugin, ProcessInfo, ProcessState, Program, ShapeSpec, Topology, UploadOptions, UserEvent, Value,
};
use serde_json::{json, Value as Json};

mod compile_options;
mod execute_options;
mod layouts;
mod plugin_table;

use crate::cli::{ConformArgs, PluginArg};
use crate::plugins::{plugin_is_cuda, resolve_plugin};

/// The outcome of one check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// The capability works.
    Pass,
    /// The capability gave a wrong answer or an unexpected error.
    Fail,
    /// The plugin does not offer it (UNIMPLEMENTED, or missing from its version).
    Unsupported,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Unsupported => "unsupported",
        }
    }
}

/// Why a check did not pass.
pub enum Problem {
    /// Not offered by the plugin.
    Unsupported(String),
    /// Wrong.
    Fail(String),
}

impl From<Error> for Problem {
    fn from(e: Error) -> Self {
        match &e {
            Error::Unsupported { .. } => Problem::Unsupported(e.to_string()),
            Error::Pjrt { code: ErrorCode::Unimplemented, .. } => Problem::Unsupported(e.to_string()),
            // A plugin built without a topology compiler says so with NOT_FOUND.
            Error::Pjrt { code: ErrorCode::NotFound, message, .. } if message.contains("No compiler factory") => {
                Problem::Unsupported(e.to_string())
            }
            _ => Problem::Fail(e.to_string()),
        }
    }
}

type Outcome = Result<String, Problem>;

fn expect(ok: bool, what: impl Into<String>) -> Result<(), Problem> {
    if ok {
        Ok(())
    } else {
        Err(Problem::Fail(what.into()))
    }
}

/// The report being built.
#[derive(Default)]
pub struct Report {
    checks: Vec<(String, Status, String)>,
}

impl Report {
    fn check(&mut self, name: &str, f: impl FnOnce() -> Outcome) {
        let (status, detail) = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
            Ok(Ok(detail)) => (Status::Pass, detail),
            Ok(Err(Problem::Unsupported(d))) => (Status::Unsupported, d),
            Ok(Err(Problem::Fail(d))) => (Status::Fail, d),
            Err(_) => (Status::Fail, "the check panicked".to_owned()),
        };
        self.checks.push((name.to_owned(), status, detail));
    }

    /// Number of failed checks.
    pub fn failures(&self) -> usize {
        self.checks.iter().filter(|c| c.1 == Status::Fail).count()
    }
}

const ADD: &str = r#"module @add_module {
  func.func public @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %a, %b : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}"#;
const BYTECODE: &[u8] = include_bytes!("fixtures/tanh_mul.mlirbc");
const PORTABLE: &[u8] = include_bytes!("fixtures/tanh_mul.portable-1.0.0.mlirbc");
const HLO: &[u8] = include_bytes!("fixtures/tanh_mul.hlo.pb");

fn f32s(buffer: &Buffer) -> Result<Vec<f32>, Problem> {
    Ok(buffer.to_vec::<f32>()?)
}

/// Runs every check against `plugin`.
pub fn run_checks(plugin: &Plugin) -> (Json, Report) {
    let mut r = Report::default();
    let path = plugin.path().to_path_buf();
    r.check("plugin.api_version", || Ok(plugin.api_version().to_string()));
    r.check("plugin.attributes", || Ok(format!("{} attributes", plugin.attributes().len())));
    r.check("plugin.xla_version", || {
        plugin.xla_version().map(|v| v.to_string()).ok_or(Problem::Unsupported("no xla_version attribute".into()))
    });
    r.check("plugin.stablehlo_versions", || {
        match (plugin.stablehlo_minimum_version(), plugin.stablehlo_current_version()) {
            (Some(min), Some(cur)) => Ok(format!("{min} .. {cur}")),
            _ => Err(Problem::Unsupported("no StableHLO version attributes".into())),
        }
    });
    r.check("plugin.extensions", || {
        let names: Vec<String> = plugin.extensions().iter().map(|e| format!("{:?}", e.kind)).collect();
        Ok(names.join(", "))
    });
    let is_cpu = path.to_string_lossy().contains("cpu");
    let options = if is_cpu { ClientOptions::new().cpu_device_count(4) } else { ClientOptions::new() };
    let client = match Client::new(plugin, &options) {
        Ok(c) => {
            r.check("client.create", || Ok(format!("{} devices", c.devices().len())));
            c
        }
        // No device here (a CUDA plugin without a GPU): what needs one is unsupported, the rest
        // is checked without a client.
        Err(e) if e.code() == Some(ErrorCode::FailedPrecondition) => {
            let message = format!("no device: {e}");
            r.check("client.create", || Err(Problem::Unsupported(message.clone())));
            for group in NEEDS_A_CLIENT {
                r.check(group, || Err(Problem::Unsupported(message.clone())));
            }
            if plugin_is_cuda(plugin) {
                gpu_target_checks(&mut r, plugin);
            }
            return (plugin_json(plugin, None), r);
        }
        Err(e) => {
            let message = e.to_string();
            r.check("client.create", || Err(Problem::Fail(message)));
            return (plugin_json(plugin, None), r);
        }
    };
    client_checks(&mut r, &client);
    device_checks(&mut r, &client);
    buffer_checks(&mut r, &client);
    compile_checks(&mut r, &client);
    execute_checks(&mut r, &client);
    topology_checks(&mut r, &client);
    extension_checks(&mut r, &client);
    executable_metadata_checks(&mut r, &client);
    buffer_ext_checks(&mut r, &client);
    transfer_manager_checks(&mut r, &client);
    client_ext_checks(&mut r, &client);
    kv_store_checks(&mut r, plugin, &options);
    layouts::checks(&mut r, &client);
    execute_options::checks(&mut r, &client);
    plugin_table::checks(&mut r, &client);
    compile_options::checks(&mut r, &client);
    (plugin_json(plugin, Some(&client)), r)
}

/// The groups of checks that run on a client, reported once each as unsupported when the
/// plugin has no device here.
const NEEDS_A_CLIENT: &[&str] = &[
    "client.*",
    "device.*",
    "buffer.*",
    "compile.* (on a client)",
    "execute.*",
    "executable.* (loaded)",
    "topology.* (of a client)",
    "extension.* (on a client)",
    "transfer_manager.*",
    "kv_store.*",
    "layouts.*",
    "execute_options.*",
    "compile_options.*",
];

/// What a CUDA plugin answers without a GPU: a topology for a GPU target (an H100), its
/// description, and a deviceless compilation of the add program, serialized. Needs `ptxas` and
/// `libdevice` beside the plugin (`pjrt plugin install cuda12` puts them there) for the compile.
fn gpu_target_checks(r: &mut Report, plugin: &Plugin) {
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

fn plugin_json(plugin: &Plugin, client: Option<&Client>) -> Json {
    json!({
        "path": plugin.path(),
        "api_version": plugin.api_version().to_string(),
        "functions": plugin.slot_count(),
        "platform": client.map(|c| c.platform_name().to_owned()),
        "platform_version": client.map(|c| c.platform_version().to_owned()),
        "xla_version": plugin.xla_version(),
    })
}

fn client_checks(r: &mut Report, client: &Client) {
    r.check("client.platform_name", || Ok(client.platform_name().to_owned()));
    r.check("client.platform_version", || Ok(client.platform_version().to_owned()));
    r.check("client.process_index", || Ok(client.process_index().to_string()));
    r.check("client.devices", || {
        let n = client.devices().len();
        expect(n > 0, "no devices")?;
        Ok(format!("{n}"))
    });
    r.check("client.addressable_devices", || {
        let n = client.addressable_devices().len();
        expect(n > 0, "no addressable devices")?;
        Ok(format!("{n}"))
    });
    r.check("client.lookup_device", || {
        let first = client.devices()[0].id()?;
        expect(client.lookup_device(first)?.id()? == first, "lookup returned another device")?;
        Ok(format!("id {first}"))
    });
    r.check("client.lookup_device_unknown_id_is_an_error", || {
        expect(client.lookup_device(i32::MAX).is_err(), "an unknown id was found")?;
        Ok(String::new())
    });
    r.check("client.lookup_addressable_device", || {
        let d = client.addressable_devices()[0];
        let hw = d.local_hardware_id()?;
        expect(client.lookup_addressable_device(hw)? == d, "lookup returned another device")?;
        Ok(format!("local hardware id {hw}"))
    });
    r.check("client.addressable_memories", || Ok(format!("{}", client.addressable_memories()?.len())));
    r.check("client.default_device_assignment", || {
        let a = client.default_device_assignment(1, 1)?;
        Ok(format!("{a:?}"))
    });
}

fn device_checks(r: &mut Report, client: &Client) {
    let device = client.addressable_devices()[0];
    r.check("device.id", || Ok(device.id()?.to_string()));
    r.check("device.process_index", || Ok(device.process_index()?.to_string()));
    r.check("device.kind", || Ok(device.kind()?));
    r.check("device.debug_string", || Ok(device.debug_string()?));
    r.check("device.to_string", || Ok(device.to_string()?));
    r.check("device.attributes", || Ok(format!("{}", device.attributes()?.len())));
    r.check("device.is_addressable", || {
        expect(device.is_addressable()?, "an addressable device says it is not")?;
        Ok(String::new())
    });
    r.check("device.local_hardware_id", || Ok(device.local_hardware_id()?.to_string()));
    r.check("device.memories", || Ok(format!("{}", device.memories()?.len())));
    r.check("device.default_memory", || Ok(device.default_memory()?.kind()?));
    r.check("device.memory_stats", || Ok(format!("{} bytes in use", device.memory_stats()?.bytes_in_use)));
    r.check("device.clear_memory_stats", || {
        device.clear_memory_stats()?;
        Ok(String::new())
    });
    r.check("device.runtime_attributes", || Ok(format!("{}", device.runtime_attributes()?.len())));
    r.check("device.poison_execution", || {
        Ok(format!("poisoned: {}", device.poison_execution(12345, ErrorCode::Cancelled, "conform")?))
    });
    r.check("device.async_tracking_event", || {
        Ok(if device.async_tracking_event("conform")?.is_some() { "event".into() } else { "no event".into() })
    });
    r.check("memory.id_kind_strings", || {
        let m = device.default_memory()?;
        Ok(format!("{} {} {} {}", m.id()?, m.kind()?, m.to_string()?, m.debug_string()?))
    });
    r.check("memory.kind_id", || Ok(device.default_memory()?.kind_id()?.to_string()));
    r.check("memory.devices", || {
        let m = device.default_memory()?;
        expect(m.devices()?.contains(&device), "the default memory does not list its device")?;
        Ok(String::new())
    });
}

fn upload_round_trip(client: &Client, t: ElementType) -> Outcome {
    let bytes = t.host_bytes(8).ok_or(Problem::Fail(format!("{t} has no size")))?;
    let data: Vec<u8> =
        (0..bytes).map(|i| if t == ElementType::PRED { (i % 2) as u8 } else { (i % 5) as u8 }).collect();
    let b = client.upload_with(HostSource::bytes(&data, t, &[2, 4]), &UploadOptions::new())?;
    expect(b.element_type()? == t, "wrong element type")?;
    expect(b.to_bytes(DownloadOptions::new())? == data, "data changed in a round trip")?;
    Ok(String::new())
}

fn buffer_checks(r: &mut Report, client: &Client) {
    for t in [
        ElementType::PRED,
        ElementType::S8,
        ElementType::S16,
        ElementType::S32,
        ElementType::S64,
        ElementType::U8,
        ElementType::U16,
        ElementType::U32,
        ElementType::U64,
        ElementType::F16,
        ElementType::BF16,
        ElementType::F32,
        ElementType::F64,
        ElementType::C64,
        ElementType::C128,
        ElementType::F8E5M2,
        ElementType::F8E4M3FN,
    ] {
        r.check(&format!("buffer.upload_{}", t.name()), || upload_round_trip(client, t));
    }
    let devices = client.addressable_devices();
    let make = || client.upload(&[1f32, 2., 3., 4.], &[4]);
    r.check("buffer.metadata", || {
        let b = make()?;
        expect(b.dimensions()? == [4], "dimensions")?;
        Ok(format!("{} bytes on device", b.on_device_size()?))
    });
    r.check("buffer.device_and_memory", || {
        let b = make()?;
        Ok(format!("{} / {}", b.device()?.to_string()?, b.memory()?.kind()?))
    });
    r.check("buffer.ready_event", || {
        make()?.ready_event()?.wait_timeout(Duration::from_secs(60))?;
        Ok(String::new())
    });
    r.check("buffer.delete", || {
        let b = make()?;
        b.delete()?;
        expect(b.is_deleted()?, "not deleted after delete")?;
        Ok(String::new())
    });
    r.check("buffer.copy_to_device", || {
        let target = devices.get(1).copied().ok_or(Problem::Unsupported("only one device".into()))?;
        let b = make()?.copy_to_device(&target)?;
        expect(f32s(&b)? == [1., 2., 3., 4.], "values changed")?;
        Ok(String::new())
    });
    for kind in ["pinned_host", "unpinned_host"] {
        r.check(&format!("buffer.copy_to_memory_{kind}"), || {
            let memories = devices[0].memories()?;
            let memory = memories
                .iter()
                .find(|m| m.kind().ok().as_deref() == Some(kind))
                .ok_or(Problem::Unsupported(format!("no {kind} memory")))?;
            let b = make()?.copy_to_memory(memory)?;
            expect(f32s(&b)? == [1., 2., 3., 4.], "values changed")?;
            Ok(String::new())
        });
    }
    r.check("buffer.strided_upload", || {
        let bytes: Vec<u8> = [1f32, 3., 2., 4.].iter().flat_map(|v| v.to_le_bytes()).collect();
        let layout = UploadOptions::new().byte_strides(vec![4, 8]);
        let b = client.upload_with(HostSource::bytes(&bytes, ElementType::F32, &[2, 2]), &layout)?;
        expect(f32s(&b)? == [1., 2., 3., 4.], "strides not applied")?;
        Ok(String::new())
    });
    r.check("buffer.zero_copy_upload", || {
        let host = Arc::new(AlignedHostBuffer::from_slice(&[5f32, 6.])?);
        let b = client.upload_with(HostSource::aligned(&host, ElementType::F32, &[2]), &UploadOptions::new())?;
        expect(f32s(&b)? == [5., 6.], "values")?;
        Ok(String::new())
    });
    r.check("buffer.to_bytes_async", || {
        let bytes = make()?
            .to_bytes_async(DownloadOptions::new().destination(vec![0; 16]))?
            .wait_timeout(Duration::from_secs(60))?;
        expect(bytes.len() == 16, "size")?;
        Ok(String::new())
    });
    r.check("buffer.copy_to_slice", || {
        let mut out = [0f32; 4];
        make()?.copy_to_slice(&mut out)?;
        expect(out == [1., 2., 3., 4.], "values")?;
        Ok(String::new())
    });
    r.check("buffer.rank0_and_zero_size", || {
        let s = client.upload(&[7i32], &[])?;
        let z = client.upload::<f32>(&[], &[0, 3])?;
        expect(s.to_vec::<i32>()? == [7] && z.to_vec::<f32>()?.is_empty(), "values")?;
        Ok(String::new())
    });
    r.check("event.on_ready", || {
        let (tx, rx) = std::sync::mpsc::channel();
        let handle = make()?.ready_event()?.on_ready(move |s| {
            let _ = tx.send(s.is_ok());
        })?;
        expect(handle.wait_timeout(Duration::from_secs(60))?, "the callback did not run")?;
        expect(rx.recv().unwrap_or(false), "the event failed")?;
        Ok(String::new())
    });
}

fn compile_checks(r: &mut Report, client: &Client) {
    let compile = |program: Program| client.compile(&program, &CompileOptions::new());
    r.check("compile.mlir_text", || Ok(compile(Program::mlir_text(ADD)?)?.name().to_owned()));
    r.check("compile.mlir_bytecode", || Ok(compile(Program::mlir_bytecode(BYTECODE.to_vec())?)?.name().to_owned()));
    r.check("compile.stablehlo_portable_artifact", || {
        Ok(compile(Program::mlir_bytecode(PORTABLE.to_vec())?)?.name().to_owned())
    });
    r.check("compile.hlo_module_proto", || Ok(compile(Program::hlo_module_proto(HLO.to_vec())?)?.name().to_owned()));
    r.check("compile.malformed_program_is_an_error", || {
        expect(compile(Program::mlir_text("func.func @main(")?).is_err(), "malformed MLIR compiled")?;
        Ok(String::new())
    });
    r.check("compile.device_assignment", || {
        let last = *client.addressable_devices().last().ok_or(Problem::Fail("no devices".into()))?;
        let id = last.id()? as i64;
        let exe = client.compile(
            &Program::mlir_text(ADD)?,
            &CompileOptions::new().device_assignment(&DeviceAssignment::new(vec![vec![id]])?),
        )?;
        expect(exe.addressable_devices()[0] == last, "placed on another device")?;
        Ok(format!("device {id}"))
    });
    r.check("compile.xla_option", || {
        client.compile(&Program::mlir_text(ADD)?, &CompileOptions::new().jax_defaults(client.platform_name()))?;
        Ok(String::new())
    });
}

fn execute_checks(r: &mut Report, client: &Client) {
    let Ok(exe) = Program::mlir_text(ADD).and_then(|p| client.compile(&p, &CompileOptions::new())) else {
        r.check("execute.compile", || Err(Problem::Fail("cannot compile the add program".into())));
        return;
    };
    let x = || client.upload(&[1f32, 2., 3., 4.], &[4]);
    r.check("executable.metadata", || {
        expect(exe.num_outputs() == 1 && exe.num_replicas() == 1 && exe.num_partitions() == 1, "counts")?;
        Ok(exe.output_shapes()[0].to_string())
    });
    r.check("executable.parameter_shapes", || {
        let p = exe.parameter_shapes().ok_or(Problem::Unsupported("no optimized program".into()))?;
        expect(p.len() == 2, "two parameters")?;
        Ok(p[0].to_string())
    });
    r.check("executable.fingerprint", || Ok(exe.fingerprint()?));
    r.check("execute.single_device", || {
        let a = x()?;
        expect(f32s(&exe.execute(&[&a, &a], &ExecuteOptions::new())?[0])? == [2., 4., 6., 8.], "wrong sum")?;
        Ok(String::new())
    });
    r.check("execute.argument_mismatch_is_refused", || {
        let i = client.upload(&[1i32; 4], &[4])?;
        let a = x()?;
        expect(exe.execute(&[&a, &i], &ExecuteOptions::new()).is_err(), "an s32 argument was accepted for f32")?;
        Ok(String::new())
    });
    r.check("execute.async", || {
        let a = x()?;
        let out = exe.execute_async(&[&a, &a], &ExecuteOptions::new())?.wait()?;
        expect(f32s(&out[0])? == [2., 4., 6., 8.], "wrong sum")?;
        Ok(String::new())
    });
    r.check("execute.replicated_2_devices", || {
        let devices = client.addressable_devices();
        if devices.len() < 2 {
            return Err(Problem::Unsupported("only one device".into()));
        }
        let exe = client.compile(&Program::mlir_text(ADD)?, &CompileOptions::new().num_replicas(2))?;
        let lists: Vec<Vec<Buffer>> = exe
            .addressable_devices()
            .iter()
            .map(|d| {
                client
                    .upload_with(HostSource::slice(&[1f32, 2., 3., 4.], &[4]), &UploadOptions::new().device(d))
                    .map(|b| vec![b])
            })
            .collect::<Result<_, _>>()?;
        let refs: Vec<Vec<&Buffer>> = lists.iter().map(|l| vec![&l[0], &l[0]]).collect();
        let mut run = exe.execute_sharded_async(&refs, &ExecuteOptions::new())?;
        for outs in &run.wait_timeout(Duration::from_secs(60))? {
            expect(f32s(&outs[0])? == [2., 4., 6., 8.], "wrong sum on a replica")?;
        }
        Ok(String::new())
    });
    r.check("execute.portable_on_chosen_device", || {
        let exe =
            client.compile(&Program::mlir_text(ADD)?, &CompileOptions::new().compile_portable_executable(true))?;
        let device = *client.addressable_devices().last().ok_or(Problem::Fail("no devices".into()))?;
        let a =
            client.upload_with(HostSource::slice(&[1f32, 2., 3., 4.], &[4]), &UploadOptions::new().device(&device))?;
        let out = exe.execute(&[&a, &a], &ExecuteOptions::new().device(&device))?;
        expect(out[0].device()? == device, "ran on another device")?;
        Ok(String::new())
    });
    r.check("executable.serialize_and_load", || {
        let bytes = exe.serialize()?;
        let again = client.deserialize_and_load(&bytes)?;
        let a = x()?;
        expect(f32s(&again.execute(&[&a, &a], &ExecuteOptions::new())?[0])? == [2., 4., 6., 8.], "wrong sum")?;
        Ok(format!("{} bytes", bytes.len()))
    });
    r.check("executable.delete", || {
        let e = client.compile(&Program::mlir_text(ADD)?, &CompileOptions::new())?;
        e.delete()?;
        Ok(format!("is_deleted: {}", e.is_deleted()?))
    });
}

fn topology_checks(r: &mut Report, client: &Client) {
    let topology = client.topology();
    let with = |f: &dyn Fn(&Topology) -> Outcome| match &topology {
        Ok(t) => f(t),
        Err(e) => Err(Problem::from(Error::InvalidArgument(e.to_string()))),
    };
    r.check("topology.client_topology", || with(&|t| Ok(t.platform_name()?)));
    r.check("topology.platform_version", || with(&|t| Ok(t.platform_version()?)));
    r.check("topology.device_descriptions", || with(&|t| Ok(t.device_count()?.to_string())));
    r.check("topology.attributes", || with(&|t| Ok(t.attributes()?.len().to_string())));
    r.check("topology.fingerprint", || with(&|t| Ok(t.fingerprint()?.to_string())));
    r.check("topology.serialize", || with(&|t| Ok(format!("{} bytes", t.serialize()?.len()))));
    r.check("topology.deserialize", || {
        with(&|t| Ok(Topology::deserialize(client.plugin(), &t.serialize()?)?.device_count()?.to_string()))
    });
    r.check("topology.memory_space_kind_ids", || with(&|t| Ok(format!("{:?}", t.memory_space_kind_ids()?))));
    r.check("topology.create_by_name", || {
        Ok(Topology::create(client.plugin(), client.platform_name(), &[])?.platform_name()?)
    });
    r.check("aot.compile_and_load", || {
        with(&|t| {
            let options = CompileOptions::new();
            let exe = t.compile(&Program::mlir_text(ADD)?, &options, Some(client))?;
            let loaded = client.load(&exe, &options)?;
            let a = client.upload(&[1f32, 2., 3., 4.], &[4])?;
            expect(f32s(&loaded.execute(&[&a, &a], &ExecuteOptions::new())?[0])? == [2., 4., 6., 8.], "wrong sum")?;
            Ok(String::new())
        })
    });
}

fn extension_checks(r: &mut Report, client: &Client) {
    let plugin = client.plugin();
    r.check("extension.layouts.default_layout", || {
        let ext = plugin.layouts_extension().ok_or(Problem::Unsupported("no Layouts extension".into()))?;
        let layout = ext.client_default_layout(client, ElementType::F32, &[2, 3])?;
        Ok(layout.as_str().unwrap_or("?").to_owned())
    });
    r.check("extension.layouts.buffer_layout", || {
        let ext = plugin.layouts_extension().ok_or(Problem::Unsupported("no Layouts extension".into()))?;
        let b = client.upload(&[1f32, 2.], &[2])?;
        Ok(ext.buffer_layout(&b)?.as_str().unwrap_or("?").to_owned())
    });
    r.check("extension.memory_descriptions", || {
        let ext = plugin
            .memory_descriptions_extension()
            .ok_or(Problem::Unsupported("no MemoryDescriptions extension".into()))?;
        Ok(format!("{}", ext.device_memory_descriptions(&client.addressable_devices()[0])?.len()))
    });
    r.check("extension.shardings", || {
        let ext = plugin.shardings_extension().ok_or(Problem::Unsupported("no Shardings extension".into()))?;
        let exe = client.compile(&Program::mlir_text(ADD)?, &CompileOptions::new())?;
        Ok(format!("{}", ext.output_shardings(&exe)?.count))
    });
    r.check("extension.ffi.register_type", || {
        let ext = plugin.ffi_extension().ok_or(Problem::Unsupported("no FFI extension".into()))?;
        Ok(ext.register_type("pjrt_conform_type")?.to_string())
    });
}

const WAIT: Duration = Duration::from_secs(60);

/// The newest executable queries (`PJRT_Executable_*` beyond name and counts), on a loaded and on
/// an unloaded (`PJRT_Compile`) executable.
fn executable_metadata_checks(r: &mut Report, client: &Client) {
    let Ok(exe) = Program::mlir_text(ADD).and_then(|p| client.compile(&p, &CompileOptions::new())) else {
        r.check("executable.metadata_compile", || Err(Problem::Fail("cannot compile the add program".into())));
        return;
    };
    r.check("executable.generated_code_size", || Ok(format!("{} bytes", exe.generated_code_size()?)));
    r.check("executable.cost_analysis", || Ok(format!("{} properties", exe.cost_analysis()?.len())));
    r.check("executable.output_memory_kinds", || {
        let kinds = exe.output_memory_kinds()?;
        expect(kinds.len() == 1, format!("{} kinds for 1 output", kinds.len()))?;
        Ok(kinds.join(","))
    });
    r.check("executable.parameter_memory_kinds", || {
        let kinds = exe.parameter_memory_kinds()?;
        expect(kinds.len() == 2, format!("{} kinds for 2 parameters", kinds.len()))?;
        Ok(kinds.join(","))
    });
    r.check("executable.compiled_memory_stats", || {
        let stats = exe.compiled_memory_stats()?;
        Ok(format!(
            "args {} out {} temp {}",
            stats.argument_size_in_bytes, stats.output_size_in_bytes, stats.temp_size_in_bytes
        ))
    });
    r.check("executable.optimized_program", || {
        let program = exe.optimized_program()?;
        expect(!program.code.is_empty(), "an empty program")?;
        Ok(format!("{} bytes of {}", program.code.len(), program.format))
    });
    r.check("executable.compile_options", || {
        let options = exe.compile_options()?;
        Ok(format!("{} bytes", options.to_bytes()?.len()))
    });
    r.check("executable.device_assignment", || Ok(format!("{:?}", exe.device_assignment()?)));
    r.check("executable.addressable_device_logical_ids", || Ok(format!("{:?}", exe.addressable_device_logical_ids()?)));
    r.check("execute.with_context_and_options", || {
        let context = ExecuteContext::new(client.plugin())?;
        let options = ExecuteOptions::new().launch_id(7).non_donatable_inputs([0, 1]).context(&context);
        let a = client.upload(&[1f32, 2., 3., 4.], &[4])?;
        expect(f32s(&exe.execute(&[&a, &a], &options)?[0])? == [2., 4., 6., 8.], "wrong sum")?;
        Ok(String::new())
    });
    r.check("aot.unloaded_executable_metadata", || {
        let topology = client.topology()?;
        let unloaded = topology.compile(&Program::mlir_text(ADD)?, &CompileOptions::new(), None)?;
        expect(unloaded.output_shapes()? == exe.output_shapes(), "output shapes differ from the loaded program")?;
        expect(unloaded.num_replicas()? == 1 && unloaded.num_partitions()? == 1, "counts")?;
        Ok(format!("fingerprint {}", unloaded.fingerprint()?))
    });
}

fn buffer_ext_checks(r: &mut Report, client: &Client) {
    let make = || client.upload(&[1f32, 2., 3., 4.], &[4]);
    r.check("buffer.is_on_cpu", || Ok(make()?.is_on_cpu()?.to_string()));
    r.check("buffer.dynamic_and_unpadded_dimensions", || {
        let b = make()?;
        expect(b.unpadded_dimensions()? == [4], "unpadded dimensions")?;
        Ok(format!("{} dynamic", b.dynamic_dimension_indices()?.len()))
    });
    r.check("buffer.memory_layout", || Ok(make()?.memory_layout()?.to_string()));
    r.check("buffer.legacy_memory_layout", || Ok(make()?.legacy_memory_layout()?.to_string()));
    r.check("buffer.unsafe_pointer", || {
        expect(!make()?.unsafe_pointer()?.is_null(), "NULL")?;
        Ok(String::new())
    });
    r.check("buffer.external_reference", || {
        let b = make()?;
        let reference = b.external_reference()?;
        expect(!reference.device_pointer()?.is_null(), "NULL device pointer")?;
        Ok(String::new())
    });
    r.check("buffer.raw_copy_to_host", || {
        let bytes = make()?.to_bytes(DownloadOptions::new().raw(4, 8))?;
        let expected: Vec<u8> = [2f32, 3.].iter().flat_map(|v| v.to_ne_bytes()).collect();
        expect(bytes == expected, "bytes 4..12 differ")?;
        Ok(String::new())
    });
    r.check("buffer.raw_copy_to_host_future", || {
        let b = make()?;
        let request = b.raw_copy_request(0, 4)?;
        let bytes = request.fulfill(vec![0; 4])?.wait_timeout(WAIT)?;
        expect(bytes == 1f32.to_ne_bytes(), "bytes 0..4 differ")?;
        Ok(String::new())
    });
    r.check("buffer.view_of_host_memory", || {
        if client.view_alignment().is_none() {
            return Err(Problem::Unsupported("views of host memory are only offered for CPU clients".into()));
        }
        let host = Arc::new(AlignedHostBuffer::from_slice(&[5f32, 6., 7.])?);
        let view = client.view_of_aligned(host, ElementType::F32, &[3], Placement::Default)?;
        expect(f32s(&view)? == [5., 6., 7.], "values")?;
        Ok(String::new())
    });
    r.check("buffer.uninitialized", || {
        let b = client.create_uninitialized_buffer(ElementType::S32, &[2, 3], Placement::Default)?;
        expect(b.dimensions()? == [2, 3], "dimensions")?;
        Ok(String::new())
    });
    r.check("buffer.error_buffer", || {
        let b =
            client.create_error_buffer(ErrorCode::Internal, "conform", ElementType::F32, &[4], Placement::Default)?;
        match b.ready_event()?.wait_timeout(WAIT) {
            Err(Error::Pjrt { code: ErrorCode::Internal, message, .. }) if message.contains("conform") => Ok(message),
            other => Err(Problem::Fail(format!("the ready event gave {other:?}"))),
        }
    });
    r.check("buffer.alias", || {
        let (alias, fulfiller) = client.create_alias_buffer(ElementType::F32, &[4], Placement::Default)?;
        fulfiller.fulfill(&make()?)?;
        expect(f32s(&alias)? == [1., 2., 3., 4.], "the alias does not read the real buffer")?;
        Ok(String::new())
    });
    r.check("buffer.bitcast", || {
        let square = make()?.bitcast(ElementType::F32, &[2, 2])?;
        expect(square.dimensions()? == [2, 2] && f32s(&square)? == [1., 2., 3., 4.], "values or shape")?;
        Ok(String::new())
    });
    r.check("buffer.donate_with_control_dependency", || {
        let (donated, dependency) = make()?.donate_with_control_dependency()?;
        dependency.ready();
        expect(f32s(&donated)? == [1., 2., 3., 4.], "values")?;
        Ok(String::new())
    });
    r.check("buffer.copy_to_client", || {
        let other = Client::new(client.plugin(), &ClientOptions::new())?;
        let copy = make()?.copy_to_client(&other, Placement::Default)?;
        expect(f32s(&copy)? == [1., 2., 3., 4.], "values")?;
        Ok(String::new())
    });
    r.check("buffer.copy_to_memory_by_kind", || {
        let device = client.addressable_devices()[0];
        let memory =
            device.memory_by_kind("pinned_host")?.ok_or(Problem::Unsupported("no pinned_host memory".into()))?;
        let b = make()?.copy_to_memory(&memory)?;
        expect(b.memory()?.kind()? == "pinned_host", "landed in another memory")?;
        Ok(String::new())
    });
}

fn transfer_manager_checks(r: &mut Report, client: &Client) {
    let shapes = [
        ShapeSpec::new(ElementType::F32, &[4]),
        ShapeSpec::new(ElementType::S32, &[2]),
        ShapeSpec::new(ElementType::U8, &[3]),
    ];
    r.check("transfer_manager.create", || {
        let m = client.create_buffers_for_async_host_to_device(&shapes, Placement::Default)?;
        expect(m.buffer_count()? == 3 && m.buffer_size(0)? == 16, "count or size")?;
        Ok(m.device()?.to_string()?)
    });
    r.check("transfer_manager.transfer_data", || {
        let m = client.create_buffers_for_async_host_to_device(&shapes[..1], Placement::Default)?;
        let data: Vec<u8> = [1f32, 2., 3., 4.].iter().flat_map(|v| v.to_ne_bytes()).collect();
        m.transfer_data(0, &data[..8], 0, false)?;
        m.transfer_data(0, &data[8..], 8, true)?;
        expect(f32s(&m.retrieve_buffer(0)?)? == [1., 2., 3., 4.], "values")?;
        Ok(String::new())
    });
    r.check("transfer_manager.transfer_literal", || {
        let m = client.create_buffers_for_async_host_to_device(&shapes[1..2], Placement::Default)?;
        let data: Vec<u8> = [7i32, 8].iter().flat_map(|v| v.to_ne_bytes()).collect();
        m.transfer_literal(0, &data)?;
        expect(m.retrieve_buffer(0)?.to_vec::<i32>()? == [7, 8], "values")?;
        Ok(String::new())
    });
    r.check("transfer_manager.set_buffer_error", || {
        let m = client.create_buffers_for_async_host_to_device(&shapes[2..], Placement::Default)?;
        m.set_buffer_error(0, ErrorCode::Unavailable, "conform")?;
        let b = m.retrieve_buffer(0)?;
        match b.ready_event()?.wait_timeout(WAIT) {
            Err(Error::Pjrt { code: ErrorCode::Unavailable, .. }) => Ok(String::new()),
            other => Err(Problem::Fail(format!("the ready event gave {other:?}"))),
        }
    });
    r.check("transfer_manager.add_metadata", || {
        let m = client.create_buffers_for_async_host_to_device(&shapes[..1], Placement::Default)?;
        m.add_metadata(&[("origin".to_owned(), Value::String("pjrt conform".into()))])?;
        m.set_buffer_error(0, ErrorCode::Cancelled, "not needed")?;
        Ok(String::new())
    });
}

fn client_ext_checks(r: &mut Report, client: &Client) {
    r.check("client.dma_map", || {
        let mapping = client.dma_map(AlignedHostBuffer::zeroed(4096)?)?;
        mapping.unmap()?;
        Ok(String::new())
    });
    r.check("client.update_global_process_info", || {
        client.update_global_process_info(&[ProcessInfo::new(client.process_index(), 1, ProcessState::Connected)])?;
        Ok(String::new())
    });
    r.check("event.user_event_ok", || {
        let event = UserEvent::new(client.plugin())?;
        expect(!event.event().is_ready()?, "ready before it was set")?;
        event.set_ok()?;
        event.event().wait_timeout(WAIT)?;
        Ok(String::new())
    });
    r.check("event.user_event_error", || {
        let event = UserEvent::new(client.plugin())?;
        let (tx, rx) = std::sync::mpsc::channel();
        let handle = event.event().on_ready(move |s| {
            let _ = tx.send(s.err().and_then(|e| e.code()));
        })?;
        event.set_error(ErrorCode::Aborted, "conform")?;
        expect(handle.wait_timeout(WAIT)?, "the callback did not run")?;
        expect(rx.recv().ok().flatten() == Some(ErrorCode::Aborted), "waiters did not see ABORTED")?;
        Ok(String::new())
    });
    r.check("error.payloads", || {
        let error = client.lookup_device(i32::MAX).err().ok_or(Problem::Fail("an unknown id was found".into()))?;
        Ok(format!("{} payloads", error.payloads().len()))
    });
    r.check("device.memory_by_kind", || {
        let device = client.addressable_devices()[0];
        let kind = device.default_memory()?.kind()?;
        expect(device.memory_by_kind(&kind)?.is_some(), "the default memory's kind was not found")?;
        Ok(kind)
    });
    let topology = client.topology();
    let with = |f: &dyn Fn(&Topology) -> Outcome| match &topology {
        Ok(t) => f(t),
        Err(e) => Err(Problem::from(Error::InvalidArgument(e.to_string()))),
    };
    r.check("topology.device_description_details", || {
        with(&|t| {
            let descriptions = t.device_descriptions()?;
            let first = descriptions.first().ok_or(Problem::Fail("no device descriptions".into()))?;
            Ok(format!("{} x {}", descriptions.len(), first.kind()?))
        })
    });
    r.check("topology.canonical_shape", || {
        with(&|t| {
            let kind = *t.memory_space_kind_ids()?.first().ok_or(Problem::Fail("no memory kinds".into()))?;
            let shape = t.canonical_shape(kind, ElementType::F32, &[2, 3])?;
            expect(shape.dims == [2, 3], format!("dims {:?}", shape.dims))?;
            Ok(format!("{:?}", shape.minor_to_major))
        })
    });
    r.check("extension.layouts.topology_default_layout", || {
        let ext = client.plugin().layouts_extension().ok_or(Problem::Unsupported("no Layouts extension".into()))?;
        with(&|t| Ok(ext.topology_default_layout(t, ElementType::F32, &[2, 3])?.to_string()))
    });
}

/// A client whose plugin may use a key-value store (`PJRT_Client_Create` with the kv callbacks).
fn kv_store_checks(r: &mut Report, plugin: &Plugin, options: &ClientOptions) {
    r.check("kv_store.client_with_in_memory_store", || {
        let store = InMemoryStore::new();
        let client = Client::builder(plugin).options(options.clone()).kv_store(store.clone()).build()?;
        let exe = client.compile(&Program::mlir_text(ADD)?, &CompileOptions::new())?;
        let a = client.upload(&[1f32, 2., 3., 4.], &[4])?;
        expect(f32s(&exe.execute(&[&a, &a], &ExecuteOptions::new())?[0])? == [2., 4., 6., 8.], "wrong sum")?;
        let calls = client.kv_callbacks().map(|kv| kv.call_counts());
        Ok(format!("{} keys; calls {calls:?}", store.len()))
    });
}

/// The JSON report.
pub fn report_json(plugin: Json, report: &Report) -> Json {
    let checks: Vec<Json> =
        report.checks.iter().map(|(n, s, d)| json!({ "name": n, "status": s.as_str(), "detail": d })).collect();
    json!({ "plugin": plugin, "checks": checks })
}

/// Prints a report for people.
pub fn print_text(json: &Json) {
    let plugin = &json["plugin"];
    println!(
        "conformance of {} (PJRT {}, platform {})",
        plugin["path"].as_str().unwrap_or("?"),
        plugin["api_version"].as_str().unwrap_or("?"),
        plugin["platform"].as_str().unwrap_or("?")
    );
    let mut counts = [0usize; 3];
    for c in json["checks"].as_array().into_iter().flatten() {
        let status = c["status"].as_str().unwrap_or("?");
        let mark = match status {
            "pass" => {
                counts[0] += 1;
                "PASS"
            }
            "fail" => {
                counts[1] += 1;
                "FAIL"
            }
            _ => {
                counts[2] += 1;
                "n/a "
            }
        };
        let detail = c["detail"].as_str().unwrap_or("");
        let detail: String = detail.chars().take(100).collect();
        println!("  {mark}  {:<45} {detail}", c["name"].as_str().unwrap_or(""));
    }
    println!(
        "{} checks: {} passed, {} failed, {} unsupported",
        counts.iter().sum::<usize>(),
        counts[0],
        counts[1],
        counts[2]
    );
}

/// Compares two reports: prints the checks whose status differs. Returns the number of them.
pub fn diff(a: &Json, b: &Json) -> usize {
    let status = |r: &Json| -> std::collections::BTreeMap<String, String> {
        r["checks"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| (c["name"].as_str().unwrap_or("").to_owned(), c["status"].as_str().unwrap_or("").to_owned()))
            .collect()
    };
    let (sa, sb) = (status(a), status(b));
    println!(
        "A: {} (PJRT {})\nB: {} (PJRT {})",
        a["plugin"]["path"].as_str().unwrap_or("?"),
        a["plugin"]["api_version"].as_str().unwrap_or("?"),
        b["plugin"]["path"].as_str().unwrap_or("?"),
        b["plugin"]["api_version"].as_str().unwrap_or("?")
    );
    let mut names: Vec<&String> = sa.keys().chain(sb.keys()).collect();
    names.sort();
    names.dedup();
    let mut differences = 0;
    for name in names {
        let (x, y) = (sa.get(name).map(String::as_str).unwrap_or("-"), sb.get(name).map(String::as_str).unwrap_or("-"));
        if x != y {
            differences += 1;
            println!("  {name:<45} {x:<12} -> {y}");
        }
    }
    println!("{differences} checks differ");
    differences
}

/// `pjrt conform`: checks the plugin named (or diffs two reports) and prints the result as
/// `args.json` asks. Fails when a check failed.
pub fn exec(args: &ConformArgs) -> Result<(), Error> {
    let to_stdout = args.json.as_deref().is_some_and(|p| p == Path::new("-"));
    if let Some(files) = &args.diff {
        let (a, b) = (read_report(&files[0])?, read_report(&files[1])?);
        match args.json.as_deref() {
            Some(_) if to_stdout => println!("{}", diff_json(&a, &b)),
            Some(file) => {
                let text = format!("{:#}\n", diff_json(&a, &b));
                std::fs::write(file, text).map_err(|e| Error::Io { path: file.to_path_buf(), source: e })?;
                diff(&a, &b);
            }
            None => {
                diff(&a, &b);
            }
        }
        return Ok(());
    }
    let file = args.json.as_deref().filter(|_| !to_stdout);
    if let Some(file) = file {
        let name = file.to_string_lossy();
        if args.plugin.is_none() && pjrt_plugins::known_plugin(&name).is_some() && !file.exists() {
            return Err(Error::InvalidArgument(format!(
                "`--json {name}` would write the report to a file named `{name}` and check the default plugin; \
                 write `pjrt conform {name} --json` to print the JSON, or `pjrt conform {name} --json FILE`"
            )));
        }
    }
    let plugin = resolve_plugin(&PluginArg { plugin: args.plugin.clone() })?;
    let (plugin_json, report) = run_checks(&plugin);
    let json = report_json(plugin_json, &report);
    if let Some(file) = file {
        std::fs::write(file, format!("{json:#}\n")).map_err(|e| Error::Io { path: file.to_path_buf(), source: e })?;
    }
    if to_stdout {
        println!("{json}");
    } else {
        print_text(&json);
    }
    if report.failures() > 0 {
        return Err(Error::InvalidArgument(format!(
            "{} conformance checks failed; the report lists them (status \"fail\")",
            report.failures()
        )));
    }
    Ok(())
}

/// The checks whose status differs between two reports, as JSON: `{"a": plugin, "b": plugin,
/// "differences": [{"name", "a", "b"}]}`, where `a` and `b` are the reports' `plugin` objects and
/// a status is `null` where a report lacks the check.
pub fn diff_json(a: &Json, b: &Json) -> Json {
    let status = |r: &Json| -> std::collections::BTreeMap<String, Json> {
        r["checks"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| (c["name"].as_str().unwrap_or("").to_owned(), c["status"].clone()))
            .collect()
    };
    let (sa, sb) = (status(a), status(b));
    let mut names: Vec<&String> = sa.keys().chain(sb.keys()).collect();
    names.sort();
    names.dedup();
    let differences: Vec<Json> = names
        .into_iter()
        .filter_map(|name| {
            let (x, y) = (sa.get(name).cloned().unwrap_or(Json::Null), sb.get(name).cloned().unwrap_or(Json::Null));
            (x != y).then(|| json!({ "name": name, "a": x, "b": y }))
        })
        .collect();
    json!({ "a": a["plugin"], "b": b["plugin"], "differences": differences })
}

/// Reads a report written with `--json`.
pub fn read_report(path: &Path) -> Result<Json, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::Io { path: path.to_path_buf(), source: e })?;
    serde_json::from_str(&text)
        .map_err(|e| Error::InvalidArgument(format!("{}: not a conformance report: {e}", path.display())))
}
