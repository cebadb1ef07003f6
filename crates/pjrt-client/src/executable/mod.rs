//! Compiling programs and running loaded executables.

pub(crate) mod compile_layouts;
pub(crate) mod context_data;
pub(crate) mod execute_options;
pub(crate) mod execution;
mod hlo;
pub(crate) mod host_callbacks;
pub(crate) mod load;
pub(crate) mod metadata;
pub(crate) mod outputs;
pub(crate) mod unloaded;

use std::borrow::Borrow;
use std::ffi::c_char;
use std::fmt;
use std::ptr::NonNull;
use std::sync::OnceLock;

use prost::Message;
use smallvec::SmallVec;

use crate::buffer::layout::MemoryLayout;
use crate::buffer::{shape_fits, Buffer, KnownShape};
use crate::call::release::{blocking_in_callback, in_plugin_callback, refuse_in_callback, release_if_in_callback};
use crate::call::{checked_slice, checked_string, pjrt_call, Api};
use crate::client::device::Device;
use crate::client::Client;
use crate::compile_options::CompileOptions;
use crate::element_type::ElementType;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::executable::execute_options::raw_execute_options;
use crate::executable::execute_options::ExecuteOptions;
use crate::executable::execute_options::Keepalive;
use crate::executable::execution::{PendingExecution, PendingShardedExecution};
use crate::executable::metadata::OptimizedProgram;
use crate::executable::outputs::Outputs;
use crate::plugin::{Plugin, StableHloVersion};
use crate::program::{mlir_main_parameters, Program, ProgramFormat};
use crate::sys::{self, Args};

/// What a launch returns per device: `outputs[device]` and `events[device]`.
type PerDevice = (Vec<Vec<Buffer>>, Vec<Option<Event>>);

/// Most arguments and outputs the fast path of `execute` keeps on the stack.
const STACK_LIST: usize = 8;

/// What to do instead of a waiting execute inside a plugin callback.
const EXECUTE_INSTEAD: &str =
    "launch with execute_async (or execute_sharded_async) there and await the pending execution";

/// The type and shape of one parameter or output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArrayShape {
    /// The element type (`None` when the plugin reported a type this crate cannot map).
    pub element_type: Option<ElementType>,
    /// The dimensions.
    pub dims: Vec<i64>,
}

impl fmt::Display for ArrayShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.element_type {
            Some(t) => write!(f, "{t}{:?}", self.dims),
            None => write!(f, "?{:?}", self.dims),
        }
    }
}

impl Client {
    /// [`Client::compile`] without registering built-in handlers first (what their registration's
    /// own probe programs compile with).
    pub(crate) fn compile_program(&self, program: &Program, options: &CompileOptions) -> Result<LoadedExecutable> {
        let _span = span!(INFO, "compile", format = program.format().as_pjrt_str(), bytes = program.code().len());
        let options_bytes = options.to_bytes()?;
        let needed = options.num_replicas_requested() * options.num_partitions_requested();
        let available = self.devices().len();
        if !options.is_portable() && needed > available {
            return Err(Error::invalid(format!(
                "the program needs {} replicas × {} partitions = {needed} devices, but the client has {available}; \
                 create the client with more devices (for the CPU plugin: cpu_device_count)",
                options.num_replicas_requested(),
                options.num_partitions_requested()
            )));
        }
        if let Some(assignment) = options.assignment()? {
            for id in assignment.device_ids() {
                let known = i32::try_from(id).ok().and_then(|id| self.lookup_device(id).ok()).is_some();
                if !known {
                    return Err(Error::invalid(format!(
                        "the device assignment names device {id}, which the client does not have"
                    )));
                }
            }
        }
        check_stablehlo_version(self.plugin(), program)?;
        let format = program.format().as_pjrt_str();
        let mut raw_program = sys::PJRT_Program::new();
        // PJRT declares `code` as `char*` but only reads it.
        raw_program.code = program.code().as_ptr() as *mut c_char;
        raw_program.code_size = program.code().len();
        raw_program.format = format.as_ptr() as *const c_char;
        raw_program.format_size = format.len();
        let mut args = sys::PJRT_Client_Compile_Args::new();
        args.client = self.raw();
        args.program = &raw_program;
        args.compile_options = options_bytes.as_ptr() as *const c_char;
        args.compile_options_size = options_bytes.len();
        pjrt_call!(self.api(), PJRT_Client_Compile, &mut args).map_err(|e| add_compile_hint(e, program))?;
        let raw = NonNull::new(args.executable)
            .ok_or_else(|| Error::invalid("PJRT_Client_Compile succeeded but returned no executable"))?;
        let mut executable = LoadedExecutable::new(self, raw, options.is_portable())?;
        executable.argument_layouts = options.argument_layout_shapes()?.into_iter().map(|s| s.layout).collect();
        executable.source_parameters = match (program.text(), options.proto().parameter_is_tupled_arguments) {
            (_, true) => Err("the arguments are tupled (parameter_is_tupled_arguments)".to_owned()),
            _ if program.declared_parameters().is_some() => Ok(program
                .declared_parameters()
                .unwrap_or_default()
                .iter()
                .map(|(element_type, dims)| ArrayShape { element_type: Some(*element_type), dims: dims.clone() })
                .collect()),
            (Some(text), false) => mlir_main_parameters(text).map(|params| {
                params.into_iter().map(|(element_type, dims)| ArrayShape { element_type, dims }).collect()
            }),
            (None, false) => Err(format!(
                "the program compiled was {} (only MLIR text has a signature this crate reads; declare the \
                 parameters with Program::with_parameters)",
                if program.format() == ProgramFormat::Hlo { "an HLO module" } else { "MLIR bytecode" }
            )),
        };
        Ok(executable)
    }
}

/// Refuses a portable artifact serialized for a StableHLO version the plugin does not read
/// (its header says which; the plugin's attributes say what it reads). Programs without a
/// version (text, plain bytecode, HLO) and plugins without the attributes pass unchecked.
pub(crate) fn check_stablehlo_version(plugin: &Plugin, program: &Program) -> Result<()> {
    let Some((major, minor, patch)) = program.stablehlo_target() else { return Ok(()) };
    let target = StableHloVersion(major, minor, patch);
    let (Some(minimum), Some(current)) = (plugin.stablehlo_minimum_version(), plugin.stablehlo_current_version())
    else {
        return Ok(());
    };
    let advice = if target > current {
        "serialize it for an older target (jax.export / stablehlo.serialize_portable_artifact with target_version at \
         most the plugin's current version), or use a newer plugin"
    } else if target < minimum {
        "serialize it again for a newer target (at least the plugin's minimum version), or use an older plugin"
    } else {
        return Ok(());
    };
    Err(Error::ProgramVersion {
        program: target.to_string(),
        minimum: minimum.to_string(),
        current: current.to_string(),
        advice,
    })
}

fn add_compile_hint(error: Error, program: &Program) -> Error {
    match error {
        Error::Pjrt { function, code, message, payloads } => {
            let mut message = message;
            if let Some(text) = program.text() {
                if !text.contains("@main") {
                    message.push_str(" (hint: the entry function must be named `main`)");
                }
            }
            if message.contains("Failed to parse") || message.contains("forward incompatibility") {
                message.push_str(
                    " (hint: check the program's syntax, and that it targets a StableHLO version between the \
                     plugin's stablehlo_minimum_version and stablehlo_current_version, see Plugin::stablehlo_version)",
                );
            }
            Error::Pjrt { function, code, message, payloads }
        }
        other => other,
    }
}

/// A compiled program loaded onto devices.
///
/// `Send + Sync`: one executable can run from many threads at once (PJRT executes concurrently).
pub struct LoadedExecutable {
    client: Client,
    raw: NonNull<sys::PJRT_LoadedExecutable>,
    executable: NonNull<sys::PJRT_Executable>,
    name: String,
    num_replicas: usize,
    num_partitions: usize,
    portable: bool,
    outputs: Vec<ArrayShape>,
    /// The outputs' shapes again, given to every output buffer (inline or shared: no
    /// allocation and, up to rank 4, no atomic per execute); `None` for an element type this
    /// crate cannot map (the buffer then asks the plugin).
    output_shapes: Vec<Option<KnownShape>>,
    addressable_devices: Vec<NonNull<sys::PJRT_Device>>,
    /// The parameter shapes, or why they are unknown (argument checks are then off).
    parameters: OnceLock<std::result::Result<Vec<ArrayShape>, String>>,
    /// The parameters as the compiled program's signature says (set by `Client::compile`),
    /// used when the optimized program cannot be read; or why there are none.
    source_parameters: std::result::Result<Vec<ArrayShape>, String>,
    /// The argument layouts the program was compiled for (`CompileOptions::argument_layouts`;
    /// empty: the defaults). The plugins read an argument in whatever layout it has, so these
    /// are checked before every launch.
    argument_layouts: Vec<Option<MemoryLayout>>,
}

// SAFETY: PJRT loaded executables are thread-safe (XLA's PjRtLoadedExecutable::Execute may be
// called concurrently); the cached metadata is immutable or behind a OnceLock.
unsafe impl Send for LoadedExecutable {}
// SAFETY: as above.
unsafe impl Sync for LoadedExecutable {}

impl LoadedExecutable {
    pub(crate) fn new(client: &Client, raw: NonNull<sys::PJRT_LoadedExecutable>, portable: bool) -> Result<Self> {
        let api = client.api();
        let mut get = sys::PJRT_LoadedExecutable_GetExecutable_Args::new();
        get.loaded_executable = raw.as_ptr();
        if let Err(e) = pjrt_call!(api, PJRT_LoadedExecutable_GetExecutable, &mut get) {
            destroy_loaded(client, raw);
            return Err(e);
        }
        let Some(executable) = NonNull::new(get.executable) else {
            destroy_loaded(client, raw);
            return Err(Error::invalid("PJRT_LoadedExecutable_GetExecutable returned no executable"));
        };
        // From here on Drop cleans up both handles.
        let mut this = LoadedExecutable {
            client: client.clone(),
            raw,
            executable,
            name: String::new(),
            num_replicas: 1,
            num_partitions: 1,
            portable,
            outputs: Vec::new(),
            output_shapes: Vec::new(),
            addressable_devices: Vec::new(),
            parameters: OnceLock::new(),
            argument_layouts: Vec::new(),
            source_parameters: Err("the executable was loaded, not compiled from a program here".to_owned()),
        };
        let e = executable.as_ptr();
        let mut name = sys::PJRT_Executable_Name_Args::new();
        name.executable = e;
        pjrt_call!(api, PJRT_Executable_Name, &mut name)?;
        // SAFETY: owned by the executable, copied at once.
        this.name = unsafe {
            checked_string(name.executable_name, name.executable_name_size, "PJRT_Executable_Name", "the name")
        }?;
        let mut replicas = sys::PJRT_Executable_NumReplicas_Args::new();
        replicas.executable = e;
        pjrt_call!(api, PJRT_Executable_NumReplicas, &mut replicas)?;
        this.num_replicas = replicas.num_replicas;
        let mut partitions = sys::PJRT_Executable_NumPartitions_Args::new();
        partitions.executable = e;
        pjrt_call!(api, PJRT_Executable_NumPartitions, &mut partitions)?;
        this.num_partitions = partitions.num_partitions;
        let mut num_outputs = sys::PJRT_Executable_NumOutputs_Args::new();
        num_outputs.executable = e;
        pjrt_call!(api, PJRT_Executable_NumOutputs, &mut num_outputs)?;
        this.outputs = read_output_shapes(api, e, Some(num_outputs.num_outputs))?;
        this.output_shapes =
            this.outputs.iter().map(|shape| Some(KnownShape::new(shape.element_type?, &shape.dims))).collect();
        let mut devices = sys::PJRT_LoadedExecutable_AddressableDevices_Args::new();
        devices.executable = raw.as_ptr();
        pjrt_call!(api, PJRT_LoadedExecutable_AddressableDevices, &mut devices)?;
        // SAFETY: the device array is owned by the executable; devices are owned by the client.
        this.addressable_devices = unsafe {
            checked_slice(
                devices.addressable_devices,
                devices.num_addressable_devices,
                "PJRT_LoadedExecutable_AddressableDevices",
                "devices",
            )
        }?
        .iter()
        .filter_map(|d| NonNull::new(*d))
        .collect();
        Ok(this)
    }

    /// The client the executable is loaded on.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The module name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Number of replicas.
    pub fn num_replicas(&self) -> usize {
        self.num_replicas
    }

    /// Number of partitions.
    pub fn num_partitions(&self) -> usize {
        self.num_partitions
    }

    /// Number of outputs per device.
    pub fn num_outputs(&self) -> usize {
        self.outputs.len()
    }

    /// Element type and per-device shape of each output.
    pub fn output_shapes(&self) -> &[ArrayShape] {
        &self.outputs
    }

    /// The devices the executable runs on, in the order execution takes argument lists.
    /// Empty for portable executables.
    pub fn addressable_devices(&self) -> Vec<Device<'_>> {
        self.addressable_devices.iter().map(|d| Device::new(&self.client, *d)).collect()
    }

    /// The per-device parameter shapes, read once: from the optimized program the plugin reports
    /// (an HLO module, or MLIR text), else from the signature of the MLIR text compiled. `None`
    /// when neither can be read; execution then relies on the plugin's own checks, and
    /// [`LoadedExecutable::argument_checks_off_because`] says why.
    pub fn parameter_shapes(&self) -> Option<&[ArrayShape]> {
        self.parameter_result().as_ref().ok().map(Vec::as_slice)
    }

    /// Why the arguments of an execution are not checked against the parameters before the
    /// plugin sees them (`None`: they are). E.g. the plugin reports its optimized program as MLIR
    /// bytecode and the program compiled was bytecode too.
    ///
    /// ```
    /// use pjrt_client::{CompileOptions, Program};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_client::locate::resolve_or_install(None, |_| ())?.path)?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// let program = Program::mlir_text("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> { return %a : tensor<2xf32> }")?;
    /// let exe = client.compile(&program, &CompileOptions::new())?;
    /// assert_eq!(exe.argument_checks_off_because(), None);
    /// assert_eq!(exe.parameter_shapes().unwrap()[0].dims, [2]);
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn argument_checks_off_because(&self) -> Option<&str> {
        self.parameter_result().as_ref().err().map(String::as_str)
    }

    fn parameter_result(&self) -> &std::result::Result<Vec<ArrayShape>, String> {
        self.parameters.get_or_init(|| {
            let optimized = self.read_parameter_shapes();
            let result = match optimized {
                Ok(shapes) => Ok(shapes),
                Err(why) => self
                    .source_parameters
                    .clone()
                    .map_err(|source| format!("argument checks are off: {why}, and {source}")),
            };
            // Recorded (argument_checks_off_because) and logged: never off silently.
            #[cfg(feature = "tracing")]
            if let Err(why) = &result {
                tracing::warn!(executable = %self.name, "{why}");
            }
            result
        })
    }

    /// The parameters from the optimized program, or why they cannot be read from it.
    fn read_parameter_shapes(&self) -> std::result::Result<Vec<ArrayShape>, String> {
        let OptimizedProgram { code, format } =
            self.optimized_program().map_err(|e| format!("the optimized program is not available ({e})"))?;
        let module = match format.as_str() {
            "hlo_with_config" => {
                hlo::HloModuleProtoWithConfig::decode(code.as_slice())
                    .map_err(|e| format!("the optimized HloModuleProtoWithConfig does not decode ({e})"))?
                    .hlo_module
            }
            "hlo" => Some(
                hlo::HloModuleProto::decode(code.as_slice())
                    .map_err(|e| format!("the optimized HloModuleProto does not decode ({e})"))?,
            ),
            "mlir" if code.starts_with(b"ML\xefR") => {
                return Err("the plugin reports its optimized program as MLIR bytecode, whose signature this \
                            crate cannot read without MLIR"
                    .to_owned())
            }
            "mlir" => {
                let text = std::str::from_utf8(&code)
                    .map_err(|_| "the plugin's optimized MLIR program is neither text nor bytecode".to_owned())?;
                let params =
                    mlir_main_parameters(text).map_err(|why| format!("in the optimized MLIR program, {why}"))?;
                return Ok(params.into_iter().map(|(element_type, dims)| ArrayShape { element_type, dims }).collect());
            }
            other => return Err(format!("the plugin reports its optimized program in format `{other}`, unknown here")),
        };
        let shape = module
            .and_then(|m| m.host_program_shape)
            .ok_or("the optimized HLO module carries no host_program_shape")?;
        if shape.parameters.iter().any(|p| !p.tuple_shapes.is_empty() || p.element_type == hlo::TUPLE) {
            return Err("the program takes tupled parameters".to_owned());
        }
        Ok(shape
            .parameters
            .iter()
            .map(|p| ArrayShape { element_type: hlo::element_type(p.element_type), dims: p.dimensions.clone() })
            .collect())
    }

    /// Runs the program on one device and waits for it; returns that device's outputs.
    ///
    /// The device is the executable's own when it was compiled for exactly one; a portable
    /// executable (`CompileOptions::compile_portable_executable`) runs on the device named by
    /// [`ExecuteOptions::device`]. A program for several devices runs with
    /// [`LoadedExecutable::execute_sharded`].
    ///
    /// Inside a plugin callback it is refused before launching ([`Error::BlockingInCallback`]):
    /// launch with [`LoadedExecutable::execute_async`] there and await the result elsewhere.
    ///
    /// With default options (`&ExecuteOptions::new()`, a device or not) this is the hot path:
    /// for up to 8 arguments it allocates nothing for one output and once for several (see
    /// [`Outputs`]), makes no metadata query, and takes no lock.
    ///
    /// ```
    /// # use pjrt_client::{CompileOptions, ExecuteOptions, Program};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_client::locate::resolve_or_install(None, |_| ())?.path)?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// # let program = Program::mlir_text(r#"
    /// #   func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
    /// #     %0 = stablehlo.add %a, %b : tensor<4xf32>
    /// #     return %0 : tensor<4xf32>
    /// #   }"#)?;
    /// let exe = client.compile(&program, &CompileOptions::new())?;
    /// let a = client.upload(&[1f32, 2., 3., 4.], &[4])?;
    /// let b = client.upload(&[10f32, 20., 30., 40.], &[4])?;
    /// let outputs = exe.execute(&[&a, &b], &ExecuteOptions::new())?;
    /// assert_eq!(outputs[0].to_vec::<f32>()?, [11., 22., 33., 44.]);
    /// // Arguments are checked against the program's parameters before the plugin sees them.
    /// let wrong = client.upload(&[1i32, 2, 3, 4], &[4])?;
    /// assert!(exe.execute(&[&a, &wrong], &ExecuteOptions::new()).is_err());
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    ///
    /// Donation: an input that the program aliases to an output (`tf.aliasing_output` /
    /// `jax.buffer_donor` in the module, or `mhlo.input_output_alias`) may be donated, i.e.
    /// consumed by the execution and deleted, unless its index is listed with
    /// [`ExecuteOptions::non_donatable_inputs`]:
    ///
    /// ```
    /// use pjrt_client::{CompileOptions, ExecuteOptions, Program};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_client::locate::resolve_or_install(None, |_| ())?.path)?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// // The parameter may be reused for the result (what `jax.jit(f, donate_argnums=0)` writes).
    /// let program = Program::mlir_text(r#"
    ///   func.func @main(%a: tensor<4xf32> {tf.aliasing_output = 0 : i32}) -> tensor<4xf32> {
    ///     %0 = stablehlo.add %a, %a : tensor<4xf32>
    ///     return %0 : tensor<4xf32>
    ///   }"#)?;
    /// let exe = client.compile(&program, &CompileOptions::new())?;
    ///
    /// let x = client.upload(&[1f32, 2., 3., 4.], &[4])?;
    /// let kept = exe.execute(&[&x], &ExecuteOptions::new().non_donatable_inputs([0]))?;
    /// assert_eq!(kept[0].to_vec::<f32>()?, [2., 4., 6., 8.]);
    /// assert!(!x.is_deleted()?, "listed as non-donatable: still usable");
    ///
    /// let donated = exe.execute(&[&x], &ExecuteOptions::new())?;
    /// assert_eq!(donated[0].to_vec::<f32>()?, [2., 4., 6., 8.]);
    /// assert!(x.is_deleted()?, "donated: its memory now holds the result");
    /// assert!(x.to_vec::<f32>().is_err());
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    ///
    /// A portable executable, run on the device the options name:
    ///
    /// ```
    /// use pjrt_client::{CompileOptions, ExecuteOptions, HostSource, Program, UploadOptions};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_client::locate::resolve_or_install(None, |_| ())?.path)?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new().cpu_device_count(2))?;
    /// let program = Program::mlir_text(r#"
    ///   func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
    ///     %0 = stablehlo.add %a, %a : tensor<4xf32>
    ///     return %0 : tensor<4xf32>
    ///   }"#)?;
    /// // Compiled once, run on whichever device is chosen at launch.
    /// let exe = client.compile(&program, &CompileOptions::new().compile_portable_executable(true))?;
    /// let device = client.addressable_devices()[1];
    /// let x = client.upload_with(HostSource::slice(&[1f32, 2., 3., 4.], &[4]), &UploadOptions::new().device(&device))?;
    /// let outputs = exe.execute(&[&x], &ExecuteOptions::new().device(&device))?;
    /// assert_eq!(outputs[0].device()?, device);
    /// assert_eq!(outputs[0].to_vec::<f32>()?, [2., 4., 6., 8.]);
    /// // Without a device, a portable executable does not know where to run.
    /// assert!(exe.execute(&[&x], &ExecuteOptions::new()).is_err());
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn execute(&self, arguments: &[&Buffer], options: &ExecuteOptions) -> Result<Outputs> {
        if tracing_on!(DEBUG) || !options.is_plain() {
            return self.execute_general(arguments, options);
        }
        let device = match options.chosen_device() {
            None if self.portable || self.addressable_devices.len() != 1 => {
                return self.execute_general(arguments, options)
            }
            None => std::ptr::null_mut(),
            Some(chosen) if chosen.is_of(&self.client) => chosen.raw(),
            Some(_) => return self.execute_general(arguments, options),
        };
        self.run_one(arguments, device)
    }

    /// [`LoadedExecutable::execute`] with its span, with options other than the default, and
    /// for what it refuses: out of the hot path.
    #[cold]
    #[inline(never)]
    fn execute_general(&self, arguments: &[&Buffer], options: &ExecuteOptions) -> Result<Outputs> {
        refuse_in_callback("LoadedExecutable::execute", EXECUTE_INSTEAD)?;
        let device = self.single_device(options)?;
        let _span = span!(DEBUG, "execute", device = tracing::field::display(self.traced_devices(device)));
        if options.is_plain() {
            return self.run_one(arguments, device);
        }
        let mut raw = options.to_raw(self, 1, arguments.len())?;
        let keepalive = raw.keepalive.take();
        let (outputs, event) = self.launch_one(arguments, device, &mut raw.raw, keepalive)?;
        if let Some(event) = event {
            event.wait()?;
        }
        Ok(outputs)
    }

    /// The device a single-device launch goes to (NULL: the executable's own), or why there is
    /// none.
    fn single_device(&self, options: &ExecuteOptions) -> Result<*mut sys::PJRT_Device> {
        match options.chosen_device() {
            Some(chosen) if chosen.is_of(&self.client) => Ok(chosen.raw()),
            Some(_) => Err(Error::invalid("the device in ExecuteOptions::device belongs to another client")),
            None if self.portable => Err(Error::invalid(
                "this executable is portable (compiled with compile_portable_executable): name the device to run \
                 on with ExecuteOptions::device",
            )),
            None if self.addressable_devices.len() != 1 => Err(Error::invalid(format!(
                "the executable runs on {} devices ({} replicas × {} partitions): launch it with execute_sharded, \
                 one argument list per device",
                self.addressable_devices.len(),
                self.num_replicas,
                self.num_partitions
            ))),
            None => Ok(std::ptr::null_mut()),
        }
    }

    /// Launches on one device (as [`LoadedExecutable::execute`] chooses it) and returns at
    /// once: await the result (any executor) or call [`PendingExecution::wait`]. Submit many
    /// before awaiting any to let the plugin run them concurrently. What the options give the
    /// plugin (host callbacks, the context) stays alive until the execution has completed, even
    /// if the [`PendingExecution`] is dropped before; the callbacks are never dropped on a
    /// plugin thread.
    ///
    /// ```
    /// # use pjrt_client::{CompileOptions, ExecuteOptions, Program};
    /// use futures::executor::block_on;
    /// # let plugin = pjrt_client::Plugin::load(pjrt_client::locate::resolve_or_install(None, |_| ())?.path)?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// # let program = Program::mlir_text(r#"
    /// #   func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
    /// #     %0 = stablehlo.add %a, %b : tensor<4xf32>
    /// #     return %0 : tensor<4xf32>
    /// #   }"#)?;
    /// let exe = client.compile(&program, &CompileOptions::new())?;
    /// let x = client.upload(&[1f32, 2., 3., 4.], &[4])?;
    /// // Launch several executions, then wait for them: the plugin may run them at once.
    /// let options = ExecuteOptions::new();
    /// let pending: Vec<_> = (0..4).map(|_| exe.execute_async(&[&x, &x], &options)).collect::<Result<_, _>>()?;
    /// let results = block_on(async {
    ///     let mut results = Vec::new();
    ///     for execution in pending {
    ///         let outputs = execution.await?; // or `execution.wait()` without an executor
    ///         results.push(outputs[0].to_vec::<f32>()?);
    ///     }
    ///     Ok::<_, pjrt_client::Error>(results)
    /// })?;
    /// assert!(results.iter().all(|values| *values == [2., 4., 6., 8.]));
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn execute_async(&self, arguments: &[&Buffer], options: &ExecuteOptions) -> Result<PendingExecution> {
        let device = self.single_device(options)?;
        let _span = span!(DEBUG, "execute_launch", device = tracing::field::display(self.traced_devices(device)));
        let (outputs, event) = if options.is_plain() {
            self.launch_one(arguments, device, &mut raw_execute_options(), None)?
        } else {
            let mut raw = options.to_raw(self, 1, arguments.len())?;
            let keepalive = raw.keepalive.take();
            self.launch_one(arguments, device, &mut raw.raw, keepalive)?
        };
        Ok(PendingExecution { outputs: Some(outputs.into_vec()), event })
    }

    /// Launches on one device (`device` NULL = the executable's own) with the default options
    /// and waits: the hot path of [`LoadedExecutable::execute`]. The completion
    /// event is awaited and destroyed here, not wrapped in an [`Event`] (which would take and
    /// drop a plugin and a client reference per call).
    fn run_one(&self, arguments: &[&Buffer], device: *mut sys::PJRT_Device) -> Result<Outputs> {
        let num_outputs = self.outputs.len();
        let mut raw_args = [std::ptr::null_mut::<sys::PJRT_Buffer>(); STACK_LIST];
        if num_outputs > STACK_LIST || !self.fast_arguments(arguments, &mut raw_args) || in_plugin_callback() {
            return self.run_one_general(arguments, device);
        }
        let mut raw_outputs = [std::ptr::null_mut::<sys::PJRT_Buffer>(); STACK_LIST];
        let mut outputs = Outputs::with_capacity(num_outputs);
        let (status, event) = self.launch_one_unchecked(
            &raw_args[..arguments.len()],
            device,
            &mut raw_execute_options(),
            &mut raw_outputs[..num_outputs],
            &mut outputs,
        );
        self.finish_one(status, event)?;
        Ok(outputs)
    }

    /// The fast path's argument check: fills `raw` and says `true` when there are at most
    /// [`STACK_LIST`] arguments, the parameters are known, no argument layout is to be checked
    /// and every argument is this client's with its parameter's type and dimensions (as far as
    /// known without asking the plugin). Otherwise `false`, and the general path checks again
    /// and says what is wrong.
    #[inline]
    fn fast_arguments(&self, arguments: &[&Buffer], raw: &mut [*mut sys::PJRT_Buffer; STACK_LIST]) -> bool {
        let Some(params) = self.parameter_shapes() else { return false };
        if arguments.len() != params.len() || arguments.len() > STACK_LIST || !self.argument_layouts.is_empty() {
            return false;
        }
        for ((slot, buffer), param) in raw.iter_mut().zip(arguments).zip(params) {
            if !buffer.fits(&self.client, param.element_type, &param.dims) {
                return false;
            }
            *slot = buffer.as_raw();
        }
        true
    }

    /// The error for a launch that succeeded without returning every output.
    #[cold]
    fn missing_outputs(&self) -> Error {
        Error::invalid(format!(
            "PJRT_LoadedExecutable_Execute succeeded but did not return all {} outputs",
            self.outputs.len()
        ))
    }

    /// [`LoadedExecutable::run_one`] for what its fast path does not take (more than
    /// [`STACK_LIST`] arguments or outputs, unknown parameters, argument layouts, shapes not yet
    /// known, a call from inside a plugin callback) and for arguments that do not fit, which
    /// `check_arguments` then names.
    #[cold]
    #[inline(never)]
    fn run_one_general(&self, arguments: &[&Buffer], device: *mut sys::PJRT_Device) -> Result<Outputs> {
        if in_plugin_callback() {
            // Waiting here may wait for this very thread (the 0.106 CPU plugin's workers hang
            // so): refused before anything is launched.
            return Err(blocking_in_callback("LoadedExecutable::execute", EXECUTE_INSTEAD));
        }
        let mut outputs = Outputs::with_capacity(self.outputs.len());
        let (status, event) = self.launch_one_raw(arguments, device, &mut raw_execute_options(), &mut outputs)?;
        self.finish_one(status, event)?;
        Ok(outputs)
    }

    /// After a launch on one device: awaits the completion event when the launch succeeded,
    /// destroys it (the plugin's, NULL or not awaited alike), and says the launch's status
    /// first, then the wait's.
    #[inline(always)]
    fn finish_one(&self, status: Result<()>, event: *mut sys::PJRT_Event) -> Result<()> {
        // Matched here, not passed on: on success no `Result` with room for an error is moved.
        if let Err(error) = status {
            return Err(self.failed_launch(error, event));
        }
        if event.is_null() {
            return Ok(());
        }
        let api = self.client.api();
        let mut wait = sys::PJRT_Event_Await_Args::new();
        wait.event = event;
        let awaited = pjrt_call!(api, PJRT_Event_Await, &mut wait);
        self.destroy_event(event);
        awaited
    }

    /// Destroys a completion event the plugin returned (not NULL). A destroy failure leaves
    /// nothing to clean up; the launch's or the wait's status says what happened.
    #[inline(always)]
    fn destroy_event(&self, event: *mut sys::PJRT_Event) {
        let mut destroy = sys::PJRT_Event_Destroy_Args::new();
        destroy.event = event;
        let _ = pjrt_call!(self.client.api(), PJRT_Event_Destroy, &mut destroy);
    }

    /// A failed launch's error, after destroying its completion event (if any): nothing to
    /// wait for.
    #[cold]
    #[inline(never)]
    fn failed_launch(&self, error: Error, event: *mut sys::PJRT_Event) -> Error {
        if !event.is_null() {
            self.destroy_event(event);
        }
        error
    }

    /// Launches on one device (`device` NULL = the executable's own) without waiting. `keepalive`
    /// (what the options point to) is held until the device has completed.
    fn launch_one(
        &self,
        arguments: &[&Buffer],
        device: *mut sys::PJRT_Device,
        options: &mut sys::PJRT_ExecuteOptions,
        keepalive: Option<Keepalive>,
    ) -> Result<(Outputs, Option<Event>)> {
        let mut outputs = Outputs::with_capacity(self.outputs.len());
        let (status, event) = self.launch_one_raw(arguments, device, options, &mut outputs)?;
        let event = Event::from_raw(self.client.plugin(), Some(&self.client), event);
        if let Some(keepalive) = keepalive {
            keepalive.hold_until_complete(&self.client, event.as_slice(), 1);
        }
        status?;
        Ok((outputs, event))
    }

    /// [`LoadedExecutable::launch_one`] up to the plugin's return: the outputs, appended to
    /// `outputs` (owned, even on failure, so nothing leaks), the completion event as the plugin returned it (NULL or
    /// owned by the caller, who must destroy it) and the launch status, which includes the
    /// check that every output came back. The arguments are checked first: an error there is
    /// returned before anything is launched.
    fn launch_one_raw(
        &self,
        arguments: &[&Buffer],
        device: *mut sys::PJRT_Device,
        options: &mut sys::PJRT_ExecuteOptions,
        outputs: &mut Outputs,
    ) -> Result<(Result<()>, *mut sys::PJRT_Event)> {
        self.check_arguments(&[arguments])?;
        let raw_args: SmallVec<[*mut sys::PJRT_Buffer; STACK_LIST]> = arguments.iter().map(|b| b.as_raw()).collect();
        let mut raw_outputs: SmallVec<[*mut sys::PJRT_Buffer; STACK_LIST]> =
            SmallVec::from_elem(std::ptr::null_mut(), self.outputs.len());
        Ok(self.launch_one_unchecked(&raw_args, device, options, &mut raw_outputs, outputs))
    }

    /// The launch itself, once the arguments were checked (`raw_args` are theirs, in order):
    /// the plugin writes one output per program output into `raw_outputs`, which are then
    /// adopted into `outputs` (even on failure, so nothing leaks). Returns the launch status,
    /// which includes the check that every output came back, and the completion event (NULL
    /// or the caller's to destroy).
    #[inline(always)]
    fn launch_one_unchecked(
        &self,
        raw_args: &[*mut sys::PJRT_Buffer],
        device: *mut sys::PJRT_Device,
        options: &mut sys::PJRT_ExecuteOptions,
        raw_outputs: &mut [*mut sys::PJRT_Buffer],
        outputs: &mut Outputs,
    ) -> (Result<()>, *mut sys::PJRT_Event) {
        // The plugin writes as many outputs as the program has: never past `raw_outputs`.
        assert_eq!(raw_outputs.len(), self.outputs.len(), "one slot per program output");
        let arg_list: *const *mut sys::PJRT_Buffer = raw_args.as_ptr();
        let output_list: *mut *mut sys::PJRT_Buffer = raw_outputs.as_mut_ptr();
        let mut event: *mut sys::PJRT_Event = std::ptr::null_mut();
        let mut args = sys::PJRT_LoadedExecutable_Execute_Args::new();
        args.executable = self.raw.as_ptr();
        args.options = options;
        args.argument_lists = &arg_list;
        args.num_devices = 1;
        args.num_args = raw_args.len();
        args.output_lists = &output_list;
        args.device_complete_events = &mut event;
        args.execute_device = device;
        let status = pjrt_call!(self.client.api(), PJRT_LoadedExecutable_Execute, &mut args);
        for buffer in self.adopt_outputs(raw_outputs) {
            outputs.push(buffer);
        }
        if status.is_ok() && outputs.len() != self.outputs.len() {
            return (Err(self.missing_outputs()), event);
        }
        (status, event)
    }

    /// Wraps the raw output buffers of one device (NULLs skipped), with the cached output shapes.
    fn adopt_outputs<'a>(&'a self, raw: &'a [*mut sys::PJRT_Buffer]) -> impl Iterator<Item = Buffer> + 'a {
        raw.iter().zip(&self.output_shapes).filter_map(|(b, shape)| {
            let raw = NonNull::new(*b)?;
            Some(match shape {
                Some(shape) => Buffer::from_raw_with_shape(&self.client, raw, shape),
                None => Buffer::from_raw(&self.client, raw),
            })
        })
    }

    /// Runs the program on every addressable device, with one argument list per device (in the
    /// order of [`LoadedExecutable::addressable_devices`]), and waits for every device; returns
    /// the outputs per device. Host callbacks get the device's position in that order.
    ///
    /// An argument list is anything that derefs to a slice of buffers or of references to
    /// them: `Vec<Buffer>` (as [`LoadedExecutable::upload_sharded`] returns), `Vec<&Buffer>`,
    /// `[&Buffer; N]`.
    ///
    /// ```
    /// use pjrt_client::{Buffer, Client, ClientOptions, CompileOptions, ExecuteOptions, HostSource, Program, UploadOptions};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_client::locate::resolve_or_install(None, |_| ())?.path)?;
    /// let client = Client::new(&plugin, &ClientOptions::new().cpu_device_count(2))?;
    /// // Two replicas: each device sums its own argument with every other device's (a psum).
    /// let program = Program::mlir_text(r#"
    ///   func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    ///     %0 = "stablehlo.all_reduce"(%x) <{replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>}> ({
    ///     ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    ///       %s = stablehlo.add %a, %b : tensor<f32>
    ///       stablehlo.return %s : tensor<f32>
    ///     }) : (tensor<2xf32>) -> tensor<2xf32>
    ///     return %0 : tensor<2xf32>
    ///   }"#)?;
    /// let exe = client.compile(&program, &CompileOptions::new().num_replicas(2))?;
    /// // One argument list per device, each uploaded to its device.
    /// let mut per_device: Vec<Vec<Buffer>> = Vec::new();
    /// for (k, device) in exe.addressable_devices().iter().enumerate() {
    ///     let x = [k as f32 + 1., 10. * (k as f32 + 1.)];
    ///     per_device.push(vec![client.upload_with(HostSource::slice(&x, &[2]), &UploadOptions::new().device(device))?]);
    /// }
    /// let outputs = exe.execute_sharded(&per_device, &ExecuteOptions::new())?;
    /// for device_outputs in &outputs {
    ///     assert_eq!(device_outputs[0].to_vec::<f32>()?, [3., 30.]);
    /// }
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn execute_sharded<L, B>(&self, arguments: &[L], options: &ExecuteOptions) -> Result<Vec<Vec<Buffer>>>
    where
        L: AsRef<[B]>,
        B: Borrow<Buffer>,
    {
        refuse_in_callback("LoadedExecutable::execute_sharded", EXECUTE_INSTEAD)?;
        let _span = span!(
            DEBUG,
            "execute",
            devices = arguments.len(),
            device = tracing::field::display(self.traced_devices(std::ptr::null_mut()))
        );
        self.execute_sharded_async(arguments, options)?.wait()
    }

    /// Like [`LoadedExecutable::execute_sharded`], but returns at once: await the
    /// [`PendingShardedExecution`] or [`wait`](PendingShardedExecution::wait) for it, or take
    /// it apart into one [`PendingExecution`] per device
    /// ([`PendingShardedExecution::into_per_device`]) to take results device by device. Host
    /// callbacks and the context stay alive until every device has completed, whatever happens
    /// to the pending execution.
    ///
    /// ```
    /// use pjrt_client::{Client, ClientOptions, CompileOptions, ExecuteOptions, HostSource, Program, UploadOptions};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_client::locate::resolve_or_install(None, |_| ())?.path)?;
    /// let client = Client::new(&plugin, &ClientOptions::new().cpu_device_count(2))?;
    /// let program = Program::mlir_text(r#"
    ///   func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    ///     %0 = stablehlo.add %x, %x : tensor<2xf32>
    ///     return %0 : tensor<2xf32>
    ///   }"#)?;
    /// let exe = client.compile(&program, &CompileOptions::new().num_replicas(2))?;
    /// let mut inputs = Vec::new();
    /// for (k, device) in exe.addressable_devices().iter().enumerate() {
    ///     inputs.push(client.upload_with(HostSource::slice(&[k as f32, 1.], &[2]), &UploadOptions::new().device(device))?);
    /// }
    /// let arguments: Vec<[_; 1]> = inputs.iter().map(|x| [x]).collect();
    /// let options = ExecuteOptions::new().launch_id(3).non_donatable_inputs([0]);
    /// let pending = exe.execute_sharded_async(&arguments, &options)?; // returns at once
    /// for (k, device_result) in pending.into_per_device().into_iter().enumerate() {
    ///     let outputs = device_result.wait()?; // or `.await` it
    ///     assert_eq!(outputs[0].to_vec::<f32>()?, [2. * k as f32, 2.]);
    /// }
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn execute_sharded_async<L, B>(
        &self,
        arguments: &[L],
        options: &ExecuteOptions,
    ) -> Result<PendingShardedExecution>
    where
        L: AsRef<[B]>,
        B: Borrow<Buffer>,
    {
        let _span = span!(
            DEBUG,
            "execute_launch",
            devices = arguments.len(),
            device = tracing::field::display(self.traced_devices(std::ptr::null_mut()))
        );
        if self.portable {
            return Err(Error::invalid(
                "this executable is portable (compiled with compile_portable_executable): run it on one device with \
                 execute or execute_async and ExecuteOptions::device",
            ));
        }
        if options.chosen_device().is_some() {
            return Err(Error::invalid(
                "ExecuteOptions::device names the device of a single-device launch; execute_sharded runs on every \
                 addressable device of the executable",
            ));
        }
        let expected = self.addressable_devices.len();
        if arguments.len() != expected {
            return Err(Error::invalid(format!(
                "the executable runs on {expected} devices ({} replicas × {} partitions) and needs one argument list \
                 per device, but {} lists were given",
                self.num_replicas,
                self.num_partitions,
                arguments.len()
            )));
        }
        let (outputs, events) = if options.is_plain() {
            self.launch(arguments, None, &mut raw_execute_options(), None)?
        } else {
            let num_args = arguments.first().map(|l| l.as_ref().len()).unwrap_or(0);
            let mut raw = options.to_raw(self, arguments.len(), num_args)?;
            let keepalive = raw.keepalive.take();
            self.launch(arguments, None, &mut raw.raw, keepalive)?
        };
        Ok(PendingShardedExecution { outputs: Some(outputs), events })
    }

    /// The `device` field of the execute spans: the id of `device`, else of every addressable
    /// device, comma-separated. Only evaluated when a subscriber records the span.
    #[cfg(feature = "tracing")]
    fn traced_devices(&self, device: *mut sys::PJRT_Device) -> String {
        let id = |d: &Device<'_>| d.id().map_or_else(|_| "?".to_owned(), |id| id.to_string());
        match NonNull::new(device) {
            Some(device) => id(&Device::new(&self.client, device)),
            None => self
                .addressable_devices
                .iter()
                .map(|d| id(&Device::new(&self.client, *d)))
                .collect::<Vec<_>>()
                .join(","),
        }
    }

    fn check_arguments<L: AsRef<[B]>, B: Borrow<Buffer>>(&self, arguments: &[L]) -> Result<()> {
        let params = self.parameter_shapes();
        for (device_index, list) in arguments.iter().enumerate() {
            let list = list.as_ref();
            let at = |i: usize| {
                if arguments.len() > 1 {
                    format!("argument {i} for device {device_index}")
                } else {
                    format!("argument {i}")
                }
            };
            if let Some(params) = params {
                if list.len() != params.len() {
                    return Err(Error::invalid(format!(
                        "the program takes {} arguments but {} were given",
                        params.len(),
                        list.len()
                    )));
                }
            }
            for (i, buffer) in list.iter().map(Borrow::borrow).enumerate() {
                if !buffer.client().same_client(&self.client) {
                    return Err(Error::invalid(format!("{} belongs to another client", at(i))));
                }
                // A deleted buffer is the plugin's to refuse (it does, with INVALID_ARGUMENT): no
                // extra call per argument on the hot path.
                let Some(param) = params.and_then(|p| p.get(i)) else { continue };
                // One look-up for both (each is a call on the hot path).
                let (element_type, dims) = buffer.shape()?;
                if !shape_fits(param.element_type, &param.dims, element_type, dims) {
                    return Err(Error::invalid(format!(
                        "{} is {element_type}{dims:?} but the program's parameter {i} is {param}",
                        at(i)
                    )));
                }
            }
            for (i, (buffer, expected)) in list.iter().map(Borrow::borrow).zip(&self.argument_layouts).enumerate() {
                let Some(expected) = expected else { continue };
                let actual = buffer.memory_layout()?;
                if actual != *expected {
                    return Err(Error::invalid(format!(
                        "{} is laid out {actual} in device memory, but the program was compiled for {expected} \
                         (CompileOptions::argument_layouts); the plugin would read its bytes as is. Compile without \
                         the argument layout, or pass a buffer in that layout",
                        at(i)
                    )));
                }
            }
        }
        Ok(())
    }

    /// Launches one argument list per device without waiting: the outputs and the completion
    /// event (where the plugin gave one) of each device, in argument-list order.
    fn launch<L: AsRef<[B]>, B: Borrow<Buffer>>(
        &self,
        arguments: &[L],
        device: Option<*mut sys::PJRT_Device>,
        options: &mut sys::PJRT_ExecuteOptions,
        keepalive: Option<Keepalive>,
    ) -> Result<PerDevice> {
        self.check_arguments(arguments)?;
        let num_args = arguments.first().map(|l| l.as_ref().len()).unwrap_or(0);
        if arguments.iter().any(|l| l.as_ref().len() != num_args) {
            return Err(Error::invalid("every device needs the same number of arguments"));
        }
        let num_devices = arguments.len();
        let num_outputs = self.outputs.len();
        let raw_args: Vec<Vec<*mut sys::PJRT_Buffer>> =
            arguments.iter().map(|l| l.as_ref().iter().map(|b| b.borrow().as_raw()).collect()).collect();
        let arg_ptrs: Vec<*const *mut sys::PJRT_Buffer> = raw_args.iter().map(|l| l.as_ptr()).collect();
        let mut raw_outputs: Vec<Vec<*mut sys::PJRT_Buffer>> =
            vec![vec![std::ptr::null_mut(); num_outputs]; num_devices];
        let output_ptrs: Vec<*mut *mut sys::PJRT_Buffer> = raw_outputs.iter_mut().map(|l| l.as_mut_ptr()).collect();
        let mut events: Vec<*mut sys::PJRT_Event> = vec![std::ptr::null_mut(); num_devices];
        let mut args = sys::PJRT_LoadedExecutable_Execute_Args::new();
        args.executable = self.raw.as_ptr();
        args.options = options;
        args.argument_lists = arg_ptrs.as_ptr();
        args.num_devices = num_devices;
        args.num_args = num_args;
        args.output_lists = output_ptrs.as_ptr();
        args.device_complete_events = events.as_mut_ptr();
        args.execute_device = device.unwrap_or(std::ptr::null_mut());
        let status = pjrt_call!(self.client.api(), PJRT_LoadedExecutable_Execute, &mut args);
        // Take ownership of whatever the plugin returned, even on failure, so nothing leaks.
        let outputs: Vec<Vec<Buffer>> = raw_outputs.iter().map(|list| self.adopt_outputs(list).collect()).collect();
        let events: Vec<Option<Event>> =
            events.iter().map(|e| Event::from_raw(self.client.plugin(), Some(&self.client), *e)).collect();
        if let Some(keepalive) = keepalive {
            keepalive.hold_until_complete(&self.client, events.iter().flatten(), num_devices);
        }
        status?;
        if outputs.iter().any(|list| list.len() != num_outputs) {
            return Err(Error::invalid(format!(
                "PJRT_LoadedExecutable_Execute succeeded but did not return all {num_outputs} outputs of every device"
            )));
        }
        Ok((outputs, events))
    }

    /// Marks the executable deleted (frees device resources where the plugin supports it).
    pub fn delete(&self) -> Result<()> {
        let mut args = sys::PJRT_LoadedExecutable_Delete_Args::new();
        args.executable = self.raw.as_ptr();
        pjrt_call!(self.client.api(), PJRT_LoadedExecutable_Delete, &mut args)
    }

    /// Whether [`LoadedExecutable::delete`] was called (some plugins always say false).
    pub fn is_deleted(&self) -> Result<bool> {
        let mut args = sys::PJRT_LoadedExecutable_IsDeleted_Args::new();
        args.executable = self.raw.as_ptr();
        pjrt_call!(self.client.api(), PJRT_LoadedExecutable_IsDeleted, &mut args)?;
        // SAFETY: a byte of `args`, initialised by `new` and perhaps rewritten by the plugin.
        Ok(unsafe { crate::call::plugin_bool(&raw const args.is_deleted) })
    }

    /// A fingerprint of the compiled program as text (see [`LoadedExecutable::fingerprint_bytes`];
    /// bytes that are not UTF-8 are replaced, so prefer the bytes where a plugin returns binary
    /// fingerprints, as the TPU plugin does).
    pub fn fingerprint(&self) -> Result<String> {
        Ok(String::from_utf8_lossy(&self.fingerprint_bytes()?).into_owned())
    }

    /// A fingerprint of the compiled program (`PJRT_Executable_Fingerprint`; where that is
    /// missing or fails, the deprecated `PJRT_LoadedExecutable_Fingerprint`). When both fail, the
    /// first one's error is returned, unless the plugin lacks that function altogether. The CPU
    /// plugins return a decimal number as text, the TPU plugin binary bytes.
    pub fn fingerprint_bytes(&self) -> Result<Vec<u8>> {
        let api = self.client.api();
        let mut args = sys::PJRT_Executable_Fingerprint_Args::new();
        args.executable = self.executable.as_ptr();
        let first = match pjrt_call!(api, PJRT_Executable_Fingerprint, &mut args) {
            // SAFETY: owned by the executable; copied at once.
            Ok(()) => {
                return unsafe {
                    checked_slice(
                        args.executable_fingerprint as *const u8,
                        args.executable_fingerprint_size,
                        "PJRT_Executable_Fingerprint",
                        "the fingerprint",
                    )
                }
                .map(<[u8]>::to_vec)
            }
            Err(e) => e,
        };
        let mut old = sys::PJRT_LoadedExecutable_Fingerprint_Args::new();
        old.executable = self.raw.as_ptr();
        match pjrt_call!(api, PJRT_LoadedExecutable_Fingerprint, &mut old) {
            // SAFETY: owned by the executable; copied at once.
            Ok(()) => unsafe {
                checked_slice(
                    old.executable_fingerprint as *const u8,
                    old.executable_fingerprint_size,
                    "PJRT_LoadedExecutable_Fingerprint",
                    "the fingerprint",
                )
            }
            .map(<[u8]>::to_vec),
            Err(fallback) if matches!(first, Error::Unsupported { .. }) => Err(fallback),
            Err(_) => Err(first),
        }
    }

    /// The raw handle, for use with [`crate::sys`]. Do not destroy it.
    pub fn as_raw(&self) -> *mut sys::PJRT_LoadedExecutable {
        self.raw.as_ptr()
    }

    /// The `PJRT_Executable` behind this loaded executable (owned by it; do not destroy).
    pub(crate) fn raw_executable(&self) -> *mut sys::PJRT_Executable {
        self.executable.as_ptr()
    }
}

fn destroy_loaded(client: &Client, raw: NonNull<sys::PJRT_LoadedExecutable>) {
    let mut args = sys::PJRT_LoadedExecutable_Destroy_Args::new();
    args.executable = raw.as_ptr();
    let _ = pjrt_call!(client.api(), PJRT_LoadedExecutable_Destroy, &mut args);
}

impl Drop for LoadedExecutable {
    fn drop(&mut self) {
        release_if_in_callback!(LoadedExecutable {
            client: self.client.clone(),
            raw: self.raw,
            executable: self.executable,
            name: String::new(),
            num_replicas: self.num_replicas,
            num_partitions: self.num_partitions,
            portable: self.portable,
            outputs: Vec::new(),
            output_shapes: Vec::new(),
            addressable_devices: Vec::new(),
            parameters: OnceLock::new(),
            argument_layouts: Vec::new(),
            source_parameters: Err(String::new()),
        });
        let mut args = sys::PJRT_Executable_Destroy_Args::new();
        args.executable = self.executable.as_ptr();
        // Failures cannot be reported from Drop; they would only leak.
        let _ = pjrt_call!(self.client.api(), PJRT_Executable_Destroy, &mut args);
        destroy_loaded(&self.client, self.raw);
    }
}

impl fmt::Debug for LoadedExecutable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoadedExecutable")
            .field("name", &self.name)
            .field("replicas", &self.num_replicas)
            .field("partitions", &self.num_partitions)
            .field("outputs", &self.outputs)
            .finish()
    }
}

/// Element type and dimensions of each output of a PJRT executable
/// (`PJRT_Executable_OutputElementTypes` and `PJRT_Executable_OutputDimensions`), loaded or not.
/// `num_outputs`, when the caller asked `PJRT_Executable_NumOutputs`, must agree with both.
pub(crate) fn read_output_shapes(
    api: &Api,
    executable: *mut sys::PJRT_Executable,
    num_outputs: Option<usize>,
) -> Result<Vec<ArrayShape>> {
    const TYPES: &str = "PJRT_Executable_OutputElementTypes";
    const DIMS: &str = "PJRT_Executable_OutputDimensions";
    let mut types = sys::PJRT_Executable_OutputElementTypes_Args::new();
    types.executable = executable;
    pjrt_call!(api, PJRT_Executable_OutputElementTypes, &mut types)?;
    let mut dims = sys::PJRT_Executable_OutputDimensions_Args::new();
    dims.executable = executable;
    pjrt_call!(api, PJRT_Executable_OutputDimensions, &mut dims)?;
    // The calls describe the same outputs: counts that disagree are refused before any array
    // is read.
    let n = types.num_output_types;
    match num_outputs {
        Some(outputs) if outputs != n || dims.num_outputs != n => {
            return Err(Error::invalid(format!(
                "the plugin reports {outputs} outputs but {n} output types and {} output shapes",
                dims.num_outputs
            )))
        }
        None if dims.num_outputs != n => {
            return Err(Error::invalid(format!(
                "the plugin reports {n} output types but {} output shapes",
                dims.num_outputs
            )))
        }
        _ => {}
    }
    // SAFETY: arrays owned by the executable, of the sizes the plugin reported; copied now.
    unsafe {
        let element_types = checked_slice(types.output_types, n, TYPES, "output element types")?;
        let ranks = checked_slice(dims.dim_sizes, n, DIMS, "output ranks")?;
        let total = ranks
            .iter()
            .try_fold(0usize, |total, rank| total.checked_add(*rank))
            .ok_or_else(|| Error::invalid(format!("{DIMS} returned output ranks {ranks:?}, which overflow")))?;
        let flat = checked_slice(dims.dims, total, DIMS, "output dimensions")?;
        let mut at = 0;
        Ok(element_types
            .iter()
            .zip(ranks)
            .map(|(t, rank)| {
                let shape =
                    ArrayShape { element_type: Some(ElementType::from_raw(*t)), dims: flat[at..at + rank].to_vec() };
                at += rank;
                shape
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::metadata::{device_assignment_from_proto, CompiledMemoryStats, UNWRITTEN};
    use super::*;
    use crate::compile_options::proto::{ComputationDevice, DeviceAssignmentProto};

    #[test]
    fn hlo_primitive_types_map_to_element_types() {
        // Sub-byte parameters must be known so that `pjrt run` uploads widened arrays as them.
        let cases = [(21, ElementType::S4), (22, ElementType::U4), (26, ElementType::S2), (27, ElementType::U2)];
        let more = [(30, ElementType::S1), (31, ElementType::U1), (32, ElementType::F4E2M1FN)];
        let f6 = [(35, ElementType::F6E3M2FN), (36, ElementType::F6E2M3FN), (16, ElementType::BF16)];
        for (primitive, t) in cases.into_iter().chain(more).chain(f6) {
            assert_eq!(hlo::element_type(primitive), Some(t), "{primitive}");
        }
        assert_eq!(hlo::element_type(hlo::TUPLE), None);
        assert_eq!(hlo::element_type(34), None); // BUFFER
    }

    fn stats_args(fill: i64, unwritten_from_total: bool) -> sys::PJRT_Executable_GetCompiledMemoryStats_Args {
        let mut args = sys::PJRT_Executable_GetCompiledMemoryStats_Args::new();
        args.generated_code_size_in_bytes = 1;
        args.argument_size_in_bytes = 2;
        args.output_size_in_bytes = 3;
        args.alias_size_in_bytes = 4;
        args.temp_size_in_bytes = 5;
        args.host_generated_code_size_in_bytes = fill;
        args.host_argument_size_in_bytes = fill;
        args.host_output_size_in_bytes = fill;
        args.host_alias_size_in_bytes = fill;
        args.host_temp_size_in_bytes = fill;
        args.peak_memory_in_bytes = fill;
        let rest = if unwritten_from_total { UNWRITTEN } else { fill };
        args.total_size_in_bytes = rest;
        args.total_allocation_bytes = rest;
        args.indefinite_allocations = rest;
        args.peak_unpadded_heap_bytes = rest;
        args
    }

    #[test]
    fn memory_stats_fields_newer_than_the_plugin_or_unwritten_are_absent() {
        // A 0.115 plugin that wrote everything.
        let all = CompiledMemoryStats::from_raw(&stats_args(9, false), 115);
        assert_eq!(
            (all.temp_size_in_bytes, all.peak_memory_in_bytes, all.peak_unpadded_heap_bytes),
            (5, Some(9), Some(9))
        );
        // A plugin that stopped writing at its own (0.72) size although it claims 0.115.
        let short = CompiledMemoryStats::from_raw(&stats_args(9, true), 115);
        assert_eq!(
            (short.peak_memory_in_bytes, short.total_size_in_bytes, short.indefinite_allocations),
            (Some(9), None, None)
        );
        // A 0.90 plugin: its fields are there, the 0.104 ones are not, whatever the bytes say.
        let old = CompiledMemoryStats::from_raw(&stats_args(9, false), 90);
        assert_eq!((old.total_size_in_bytes, old.total_allocation_bytes), (Some(9), None));
        // A 0.60 plugin: no peak either; the base fields are always there.
        let older = CompiledMemoryStats::from_raw(&stats_args(9, false), 60);
        assert_eq!(
            (older.host_temp_size_in_bytes, older.peak_memory_in_bytes, older.argument_size_in_bytes),
            (Some(9), None, 2)
        );
    }

    #[test]
    fn every_launch_asks_for_major_to_minor_callback_chunks() {
        let raw = raw_execute_options();
        assert!(raw.use_major_to_minor_data_layout_for_callbacks);
        assert_eq!(raw.struct_size, 144, "the full 0.112+ size, so 0.108+ plugins read the field");
        assert_eq!(std::mem::offset_of!(sys::PJRT_ExecuteOptions, use_major_to_minor_data_layout_for_callbacks), 120);
    }

    #[test]
    fn device_assignment_protos_are_checked_before_use() {
        let proto = |replicas: i32, partitions: i32, ids: Vec<Vec<i64>>| DeviceAssignmentProto {
            replica_count: replicas,
            computation_count: partitions,
            computation_devices: ids
                .into_iter()
                .map(|replica_device_ids| ComputationDevice { replica_device_ids })
                .collect(),
        };
        // Two replicas of one partition: [[0], [1]] per replica.
        let two = device_assignment_from_proto(&proto(2, 1, vec![vec![0, 1]])).unwrap();
        assert_eq!((two.num_replicas(), two.num_partitions(), two.device(1, 0)), (2, 1, Some(1)));
        // One replica, two partitions.
        let spmd = device_assignment_from_proto(&proto(1, 2, vec![vec![3], vec![5]])).unwrap();
        assert_eq!(spmd.device_ids().collect::<Vec<_>>(), [3, 5]);
        // Counts that the ids do not back are refused without allocating their size.
        for bad in [
            proto(i32::MAX, 1, vec![vec![0]]),
            proto(1, 0, vec![]),
            proto(-1, 1, vec![vec![0]]),
            proto(2, 1, vec![vec![0]]),
        ] {
            assert!(matches!(device_assignment_from_proto(&bad), Err(Error::InvalidArgument(_))), "{bad:?}");
        }
    }
}
