//! Compiling programs and running loaded executables.

pub(crate) mod host_callbacks;
pub(crate) mod unloaded;

use std::ffi::c_char;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use prost::Message;
use smallvec::SmallVec;

use crate::buffer::Buffer;
use crate::call::named_value::{read_named_values, Value};
use crate::call::release::release_if_in_callback;
use crate::call::{checked_slice, checked_string, pjrt_call, Api};
use crate::client::device::Device;
use crate::client::Client;
use crate::compile_options::{proto::DeviceAssignmentProto, CompileOptions, DeviceAssignment};
use crate::element_type::ElementType;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::executable::host_callbacks::{CallbackLists, CallbackTargets, HostCallbacks};
pub use crate::executable::host_callbacks::{CopyToDeviceStream, SendChunk};
use crate::plugin::Plugin;
use crate::program::Program;
use crate::sys::{self, Args};

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
    /// Compiles `program` for this client's devices.
    ///
    /// The options are validated first: nothing that makes a plugin abort (no replicas, no
    /// partitions, more devices than the client has, unknown device ids) reaches it.
    ///
    /// ```
    /// use pjrt_client::{CompileOptions, ElementType, Program};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_client::locate::resolve_or_install(None, |_| ())?.path)?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// let program = Program::mlir_text(r#"
    ///   func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
    ///     %0 = stablehlo.add %a, %b : tensor<4xf32>
    ///     return %0 : tensor<4xf32>
    ///   }"#)?;
    /// let exe = client.compile(&program, &CompileOptions::new())?;
    /// assert_eq!((exe.num_replicas(), exe.num_partitions(), exe.num_outputs()), (1, 1, 1));
    /// assert_eq!(exe.output_shapes()[0].element_type, Some(ElementType::F32));
    /// assert_eq!(exe.output_shapes()[0].dims, [4]);
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn compile(&self, program: &Program, options: &CompileOptions) -> Result<LoadedExecutable> {
        let _span =
            tracing::info_span!("compile", format = program.format().as_pjrt_str(), bytes = program.code().len())
                .entered();
        let options_bytes = options.to_bytes()?;
        let needed = options.replicas() * options.partitions();
        let available = self.devices().len() as i64;
        if !options.is_portable() && needed > available {
            return Err(Error::invalid(format!(
                "the program needs {} replicas × {} partitions = {needed} devices, but the client has {available}; \
                 create the client with more devices (for the CPU plugin: cpu_device_count)",
                options.replicas(),
                options.partitions()
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
        LoadedExecutable::new(self, raw, options.is_portable())
    }
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
    /// The outputs' dims again, shared with every output buffer (no allocation per execute).
    output_dims: Vec<Arc<[i64]>>,
    addressable_devices: Vec<NonNull<sys::PJRT_Device>>,
    parameters: OnceLock<Option<Vec<ArrayShape>>>,
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
            output_dims: Vec::new(),
            addressable_devices: Vec::new(),
            parameters: OnceLock::new(),
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
        this.output_dims = this.outputs.iter().map(|shape| Arc::from(shape.dims.as_slice())).collect();
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

    /// The per-device parameter shapes, read once from the compiled program (`None` when the
    /// plugin cannot report them; execution then relies on the plugin's own checks).
    pub fn parameter_shapes(&self) -> Option<&[ArrayShape]> {
        self.parameters.get_or_init(|| self.read_parameter_shapes().ok().flatten()).as_deref()
    }

    fn read_parameter_shapes(&self) -> Result<Option<Vec<ArrayShape>>> {
        let OptimizedProgram { code, format } = self.optimized_program()?;
        let module = match format.as_str() {
            "hlo_with_config" => {
                hlo::HloModuleProtoWithConfig::decode(code.as_slice())
                    .map_err(|source| Error::Decode { what: "HloModuleProtoWithConfig", source })?
                    .hlo_module
            }
            "hlo" => Some(
                hlo::HloModuleProto::decode(code.as_slice())
                    .map_err(|source| Error::Decode { what: "HloModuleProto", source })?,
            ),
            _ => None,
        };
        let Some(shape) = module.and_then(|m| m.host_program_shape) else { return Ok(None) };
        if shape.parameters.iter().any(|p| !p.tuple_shapes.is_empty() || p.element_type == hlo::TUPLE) {
            return Ok(None); // tupled parameters: leave checking to the plugin
        }
        Ok(Some(
            shape
                .parameters
                .iter()
                .map(|p| ArrayShape { element_type: hlo::element_type(p.element_type), dims: p.dimensions.clone() })
                .collect(),
        ))
    }

    /// Runs the program on its single device and waits for it; returns the outputs.
    ///
    /// This is the hot path: besides the returned vector it allocates nothing for up to 8
    /// arguments and outputs, makes no metadata query, and takes no lock.
    ///
    /// ```
    /// # use pjrt_client::{CompileOptions, Placement, Program};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_client::locate::resolve_or_install(None, |_| ())?.path)?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// # let program = Program::mlir_text(r#"
    /// #   func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
    /// #     %0 = stablehlo.add %a, %b : tensor<4xf32>
    /// #     return %0 : tensor<4xf32>
    /// #   }"#)?;
    /// let exe = client.compile(&program, &CompileOptions::new())?;
    /// let a = client.buffer_from_slice(&[1f32, 2., 3., 4.], &[4], Placement::Default)?;
    /// let b = client.buffer_from_slice(&[10f32, 20., 30., 40.], &[4], Placement::Default)?;
    /// let outputs = exe.execute(&[&a, &b])?;
    /// assert_eq!(outputs[0].to_vec::<f32>()?, [11., 22., 33., 44.]);
    /// // Arguments are checked against the program's parameters before the plugin sees them.
    /// let wrong = client.buffer_from_slice(&[1i32, 2, 3, 4], &[4], Placement::Default)?;
    /// assert!(exe.execute(&[&a, &wrong]).is_err());
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn execute(&self, arguments: &[&Buffer]) -> Result<Vec<Buffer>> {
        let _span = tracing::debug_span!("execute").entered();
        if self.portable || self.addressable_devices.len() != 1 {
            // Let the general path explain what is needed instead.
            let result = self.execute_sharded(&[arguments])?;
            result.wait()?;
            return Ok(result.outputs.into_iter().next().unwrap_or_default());
        }
        let (outputs, event) = self.launch_one(arguments, std::ptr::null_mut(), &mut raw_execute_options(), None)?;
        if let Some(event) = event {
            event.wait()?;
        }
        Ok(outputs)
    }

    /// Like [`LoadedExecutable::execute`], with [`ExecuteOptions`]: a launch id, inputs that must
    /// not be donated, an execute context, host send/receive callbacks.
    ///
    /// Donation: an input that the program aliases to an output (`tf.aliasing_output` /
    /// `jax.buffer_donor` in the module, or `mhlo.input_output_alias`) may be donated, i.e.
    /// consumed by the execution and deleted, unless its index is listed with
    /// [`ExecuteOptions::non_donatable_inputs`]. Plain [`LoadedExecutable::execute`] lets the
    /// plugin donate per the program's aliasing.
    ///
    /// ```
    /// use pjrt_client::{CompileOptions, ExecuteOptions, Placement, Program};
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
    /// let x = client.buffer_from_slice(&[1f32, 2., 3., 4.], &[4], Placement::Default)?;
    /// let kept = exe.execute_with(&[&x], &ExecuteOptions::new().non_donatable_inputs([0]))?;
    /// assert_eq!(kept[0].to_vec::<f32>()?, [2., 4., 6., 8.]);
    /// assert!(!x.is_deleted()?, "listed as non-donatable: still usable");
    ///
    /// let donated = exe.execute(&[&x])?;
    /// assert_eq!(donated[0].to_vec::<f32>()?, [2., 4., 6., 8.]);
    /// assert!(x.is_deleted()?, "donated: its memory now holds the result");
    /// assert!(x.to_vec::<f32>().is_err());
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn execute_with(&self, arguments: &[&Buffer], options: &ExecuteOptions) -> Result<Vec<Buffer>> {
        let _span = tracing::debug_span!("execute").entered();
        if self.portable || self.addressable_devices.len() != 1 {
            let result = self.execute_sharded_with(&[arguments], options)?;
            result.wait()?;
            return Ok(result.outputs.into_iter().next().unwrap_or_default());
        }
        let mut raw = options.to_raw(self, 1, arguments.len())?;
        let keepalive = raw.keepalive.take();
        let (outputs, event) = self.launch_one(arguments, std::ptr::null_mut(), &mut raw.raw, keepalive)?;
        if let Some(event) = event {
            event.wait()?;
        }
        Ok(outputs)
    }

    /// Launches on the executable's single device and returns at once: await the result (any
    /// executor) or call [`PendingExecution::wait`]. Submit many before awaiting any to let the
    /// plugin run them concurrently.
    ///
    /// ```
    /// # use pjrt_client::{CompileOptions, Placement, Program};
    /// use futures::executor::block_on;
    /// # let plugin = pjrt_client::Plugin::load(pjrt_client::locate::resolve_or_install(None, |_| ())?.path)?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// # let program = Program::mlir_text(r#"
    /// #   func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
    /// #     %0 = stablehlo.add %a, %b : tensor<4xf32>
    /// #     return %0 : tensor<4xf32>
    /// #   }"#)?;
    /// let exe = client.compile(&program, &CompileOptions::new())?;
    /// let x = client.buffer_from_slice(&[1f32, 2., 3., 4.], &[4], Placement::Default)?;
    /// // Launch several executions, then wait for them: the plugin may run them at once.
    /// let pending: Vec<_> = (0..4).map(|_| exe.execute_async(&[&x, &x])).collect::<Result<_, _>>()?;
    /// let results = block_on(async {
    ///     let mut results = Vec::new();
    ///     for execution in pending {
    ///         let outputs = execution.await?; // or `execution.wait()` without an executor
    ///         results.push(outputs[0].to_host_async()?.await?);
    ///     }
    ///     Ok::<_, pjrt_client::Error>(results)
    /// })?;
    /// assert!(results.iter().all(|bytes| bytes.len() == 16));
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn execute_async(&self, arguments: &[&Buffer]) -> Result<PendingExecution> {
        let _span = tracing::debug_span!("execute_launch").entered();
        if self.portable || self.addressable_devices.len() != 1 {
            let result = self.execute_sharded(&[arguments])?;
            let mut outputs = result.outputs;
            let event = result.events.into_iter().next();
            return Ok(PendingExecution { outputs: Some(outputs.pop().unwrap_or_default()), event });
        }
        let (outputs, event) = self.launch_one(arguments, std::ptr::null_mut(), &mut raw_execute_options(), None)?;
        Ok(PendingExecution { outputs: Some(outputs), event })
    }

    /// Launches on one device (`device` NULL = the executable's own) without waiting. `keepalive`
    /// (what the options point to) is held until the device has completed.
    fn launch_one(
        &self,
        arguments: &[&Buffer],
        device: *mut sys::PJRT_Device,
        options: &mut sys::PJRT_ExecuteOptions,
        keepalive: Option<Keepalive>,
    ) -> Result<(Vec<Buffer>, Option<Event>)> {
        self.check_arguments(&[arguments])?;
        let raw_args: SmallVec<[*mut sys::PJRT_Buffer; 8]> = arguments.iter().map(|b| b.as_raw()).collect();
        let arg_list: *const *mut sys::PJRT_Buffer = raw_args.as_ptr();
        let mut raw_outputs: SmallVec<[*mut sys::PJRT_Buffer; 8]> =
            SmallVec::from_elem(std::ptr::null_mut(), self.outputs.len());
        let output_list: *mut *mut sys::PJRT_Buffer = raw_outputs.as_mut_ptr();
        let mut event: *mut sys::PJRT_Event = std::ptr::null_mut();
        let mut args = sys::PJRT_LoadedExecutable_Execute_Args::new();
        args.executable = self.raw.as_ptr();
        args.options = options;
        args.argument_lists = &arg_list;
        args.num_devices = 1;
        args.num_args = arguments.len();
        args.output_lists = &output_list;
        args.device_complete_events = &mut event;
        args.execute_device = device;
        let status = pjrt_call!(self.client.api(), PJRT_LoadedExecutable_Execute, &mut args);
        // Take ownership of whatever the plugin returned, even on failure, so nothing leaks.
        let outputs = self.adopt_outputs(&raw_outputs);
        let event = Event::from_raw(self.client.plugin(), Some(&self.client), event);
        if let Some(keepalive) = keepalive {
            keepalive.hold_until_complete(&self.client, event.as_slice(), 1);
        }
        status?;
        if outputs.len() != self.outputs.len() {
            return Err(Error::invalid(format!(
                "PJRT_LoadedExecutable_Execute succeeded but did not return all {} outputs",
                self.outputs.len()
            )));
        }
        Ok((outputs, event))
    }

    /// Wraps the raw output buffers of one device, sharing the cached output shapes.
    fn adopt_outputs(&self, raw: &[*mut sys::PJRT_Buffer]) -> Vec<Buffer> {
        let mut outputs = Vec::with_capacity(raw.len());
        for ((b, shape), dims) in raw.iter().zip(&self.outputs).zip(&self.output_dims) {
            if let Some(raw) = NonNull::new(*b) {
                let buffer = Buffer::from_raw(&self.client, raw);
                if let Some(t) = shape.element_type {
                    buffer.set_shared_shape(t, dims);
                }
                outputs.push(buffer);
            }
        }
        outputs
    }

    /// Runs the program on every addressable device, with one argument list per device (in the
    /// order of [`LoadedExecutable::addressable_devices`]). Returns at once; the result holds
    /// the outputs per device and a completion event per device.
    ///
    /// ```
    /// use pjrt_client::{Buffer, Client, ClientOptions, CompileOptions, Placement, Program};
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
    ///     per_device.push(vec![client.buffer_from_slice(&x, &[2], Placement::Device(device))?]);
    /// }
    /// let arguments: Vec<Vec<&Buffer>> = per_device.iter().map(|list| list.iter().collect()).collect();
    /// let execution = exe.execute_sharded(&arguments)?; // returns at once
    /// execution.wait()?;
    /// for outputs in &execution.outputs {
    ///     assert_eq!(outputs[0].to_vec::<f32>()?, [3., 30.]);
    /// }
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn execute_sharded<'b, L: AsRef<[&'b Buffer]>>(&self, arguments: &[L]) -> Result<Execution> {
        let _span = tracing::debug_span!("execute_launch", devices = arguments.len()).entered();
        if self.portable {
            return Err(Error::invalid(
                "this executable is portable (compiled with compile_portable_executable): run it with execute_on(device, ...)",
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
        self.launch(arguments, None, &mut raw_execute_options(), None)
    }

    /// Like [`LoadedExecutable::execute_sharded`], with [`ExecuteOptions`] (see
    /// [`LoadedExecutable::execute_with`]). Host callbacks get the device's position in
    /// [`LoadedExecutable::addressable_devices`]; what the plugin was given stays alive until
    /// every device has completed, even if the returned [`Execution`] is dropped before.
    pub fn execute_sharded_with<'b, L: AsRef<[&'b Buffer]>>(
        &self,
        arguments: &[L],
        options: &ExecuteOptions,
    ) -> Result<Execution> {
        let _span = tracing::debug_span!("execute_launch", devices = arguments.len()).entered();
        if self.portable {
            return Err(Error::invalid(
                "this executable is portable (compiled with compile_portable_executable): run it with execute_on(device, ...)",
            ));
        }
        let expected = self.addressable_devices.len();
        if arguments.len() != expected {
            return Err(Error::invalid(format!(
                "the executable runs on {expected} devices and needs one argument list per device, but {} lists were given",
                arguments.len()
            )));
        }
        let num_args = arguments.first().map(|l| l.as_ref().len()).unwrap_or(0);
        let mut raw = options.to_raw(self, arguments.len(), num_args)?;
        let keepalive = raw.keepalive.take();
        self.launch(arguments, None, &mut raw.raw, keepalive)
    }

    /// Runs a portable executable (or a single-device one) on `device`.
    pub fn execute_on(&self, device: &Device<'_>, arguments: &[&Buffer]) -> Result<Vec<Buffer>> {
        let _span = tracing::debug_span!("execute").entered();
        if !device.client().same_client(&self.client) {
            return Err(Error::invalid("the device belongs to another client"));
        }
        let (outputs, event) = self.launch_one(arguments, device.as_raw(), &mut raw_execute_options(), None)?;
        if let Some(event) = event {
            event.wait()?;
        }
        Ok(outputs)
    }

    fn check_arguments<'b, L: AsRef<[&'b Buffer]>>(&self, arguments: &[L]) -> Result<()> {
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
            for (i, buffer) in list.iter().enumerate() {
                if !buffer.client().same_client(&self.client) {
                    return Err(Error::invalid(format!("{} belongs to another client", at(i))));
                }
                // A deleted buffer is the plugin's to refuse (it does, with INVALID_ARGUMENT): no
                // extra call per argument on the hot path.
                let Some(param) = params.and_then(|p| p.get(i)) else { continue };
                let element_type = buffer.element_type()?;
                let dims = buffer.dimensions()?;
                let type_ok = param.element_type.is_none_or(|t| t == element_type);
                if !type_ok || param.dims != dims {
                    return Err(Error::invalid(format!(
                        "{} is {element_type}{dims:?} but the program's parameter {i} is {param}",
                        at(i)
                    )));
                }
            }
        }
        Ok(())
    }

    fn launch<'b, L: AsRef<[&'b Buffer]>>(
        &self,
        arguments: &[L],
        device: Option<*mut sys::PJRT_Device>,
        options: &mut sys::PJRT_ExecuteOptions,
        keepalive: Option<Keepalive>,
    ) -> Result<Execution> {
        self.check_arguments(arguments)?;
        let num_args = arguments.first().map(|l| l.as_ref().len()).unwrap_or(0);
        if arguments.iter().any(|l| l.as_ref().len() != num_args) {
            return Err(Error::invalid("every device needs the same number of arguments"));
        }
        let num_devices = arguments.len();
        let num_outputs = self.outputs.len();
        let raw_args: Vec<Vec<*mut sys::PJRT_Buffer>> =
            arguments.iter().map(|l| l.as_ref().iter().map(|b| b.as_raw()).collect()).collect();
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
        let outputs: Vec<Vec<Buffer>> = raw_outputs.iter().map(|list| self.adopt_outputs(list)).collect();
        let events: Vec<Event> =
            events.iter().filter_map(|e| Event::from_raw(self.client.plugin(), Some(&self.client), *e)).collect();
        if let Some(keepalive) = keepalive {
            keepalive.hold_until_complete(&self.client, &events, num_devices);
        }
        status?;
        if outputs.iter().any(|list| list.len() != num_outputs) {
            return Err(Error::invalid(format!(
                "PJRT_LoadedExecutable_Execute succeeded but did not return all {num_outputs} outputs of every device"
            )));
        }
        Ok(Execution { outputs, events })
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
        Ok(args.is_deleted)
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
            output_dims: Vec::new(),
            addressable_devices: Vec::new(),
            parameters: OnceLock::new(),
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

/// The result of launching an execution: outputs and a completion event per device.
#[derive(Debug)]
pub struct Execution {
    /// `outputs[device][output]`.
    pub outputs: Vec<Vec<Buffer>>,
    /// One completion event per device (where the plugin returned them).
    pub events: Vec<Event>,
}

/// Awaiting an execution (as `(&mut execution).await`) waits for every device, keeping the
/// outputs in place; resolves to the first error.
impl Future for Execution {
    type Output = Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        let this = self.get_mut();
        while let Some(event) = this.events.first_mut() {
            match Pin::new(event).poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(status) => {
                    this.events.remove(0);
                    status?;
                }
            }
        }
        Poll::Ready(Ok(()))
    }
}

/// A single-device execution in flight ([`LoadedExecutable::execute_async`]): resolves to the
/// outputs once the device has finished.
#[derive(Debug)]
pub struct PendingExecution {
    outputs: Option<Vec<Buffer>>,
    event: Option<Event>,
}

impl PendingExecution {
    /// Blocks until the execution finished; returns the outputs.
    pub fn wait(mut self) -> Result<Vec<Buffer>> {
        let _span = tracing::debug_span!("execute_wait").entered();
        if let Some(event) = self.event.take() {
            event.wait()?;
        }
        Ok(self.outputs.take().unwrap_or_default())
    }

    /// Like [`PendingExecution::wait`], with a bound ([`Error::Timeout`] when it runs out; the
    /// execution goes on and may be waited for again).
    pub fn wait_timeout(&mut self, timeout: Duration) -> Result<Vec<Buffer>> {
        if let Some(event) = &self.event {
            event.wait_timeout(timeout)?;
        }
        self.event = None;
        Ok(self.outputs.take().unwrap_or_default())
    }
}

impl Future for PendingExecution {
    type Output = Result<Vec<Buffer>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if let Some(event) = this.event.as_mut() {
            match Pin::new(event).poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(status) => {
                    this.event = None;
                    status?;
                }
            }
        }
        Poll::Ready(Ok(this.outputs.take().unwrap_or_default()))
    }
}

impl Execution {
    /// Waits for every device to finish; returns the first error.
    pub fn wait(&self) -> Result<()> {
        let _span = tracing::debug_span!("execute_wait", devices = self.events.len()).entered();
        let mut first = Ok(());
        for event in &self.events {
            let status = event.wait();
            if first.is_ok() {
                first = status;
            }
        }
        first
    }

    /// Like [`Execution::wait`], but gives up once `timeout` has passed (for all devices
    /// together) with [`Error::Timeout`]. The execution goes on; waiting again is fine.
    pub fn wait_timeout(&self, timeout: Duration) -> Result<()> {
        let start = Instant::now();
        let mut first = Ok(());
        for event in &self.events {
            let status = event.wait_timeout(timeout.saturating_sub(start.elapsed()));
            if let Err(Error::Timeout { .. }) = status {
                return Err(Error::Timeout { what: "waiting for an execution", after: timeout });
            }
            if first.is_ok() {
                first = status;
            }
        }
        first
    }
}

// ---- metadata of a compiled program ----

/// Memory the compiled program needs, as the plugin estimates it
/// (`PJRT_Executable_GetCompiledMemoryStats`). Fields newer than the plugin's API version, or
/// that it did not write, are `None`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompiledMemoryStats {
    /// Size of the generated code in device memory.
    pub generated_code_size_in_bytes: i64,
    /// Size of the arguments.
    pub argument_size_in_bytes: i64,
    /// Size of the outputs.
    pub output_size_in_bytes: i64,
    /// How much of the arguments is reused for outputs.
    pub alias_size_in_bytes: i64,
    /// Size of temporaries.
    pub temp_size_in_bytes: i64,
    /// Host memory: generated code (0.43).
    pub host_generated_code_size_in_bytes: Option<i64>,
    /// Host memory: arguments (0.43).
    pub host_argument_size_in_bytes: Option<i64>,
    /// Host memory: outputs (0.43).
    pub host_output_size_in_bytes: Option<i64>,
    /// Host memory: aliased arguments (0.43).
    pub host_alias_size_in_bytes: Option<i64>,
    /// Host memory: temporaries (0.43).
    pub host_temp_size_in_bytes: Option<i64>,
    /// Peak device memory (0.72).
    pub peak_memory_in_bytes: Option<i64>,
    /// Total device memory (0.90).
    pub total_size_in_bytes: Option<i64>,
    /// Total allocations (0.104).
    pub total_allocation_bytes: Option<i64>,
    /// Allocations that live for the whole program (0.104).
    pub indefinite_allocations: Option<i64>,
    /// Peak heap size without padding (0.104).
    pub peak_unpadded_heap_bytes: Option<i64>,
}

/// The program after the plugin's optimisations ([`LoadedExecutable::optimized_program`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptimizedProgram {
    /// The serialized program.
    pub code: Vec<u8>,
    /// Its format, e.g. `hlo_with_config` (a serialized `HloModuleProtoWithConfig`; the XLA CPU
    /// plugins always answer this) or `hlo` (`HloModuleProto`).
    pub format: String,
}

/// The logical position of one addressable device in an execution.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LogicalDeviceId {
    /// The replica.
    pub replica: i32,
    /// The partition.
    pub partition: i32,
}

/// What a plugin filled in the memory-stats struct: a value no plugin writes marks "not written".
const UNWRITTEN: i64 = i64::MIN;

impl CompiledMemoryStats {
    /// Reads what a plugin of API `minor` wrote into `args` (whose optional fields were set to
    /// [`UNWRITTEN`] before the call).
    fn from_raw(args: &sys::PJRT_Executable_GetCompiledMemoryStats_Args, minor: i32) -> Self {
        let since = |added: i32, value: i64| (minor >= added && value != UNWRITTEN).then_some(value);
        CompiledMemoryStats {
            generated_code_size_in_bytes: args.generated_code_size_in_bytes,
            argument_size_in_bytes: args.argument_size_in_bytes,
            output_size_in_bytes: args.output_size_in_bytes,
            alias_size_in_bytes: args.alias_size_in_bytes,
            temp_size_in_bytes: args.temp_size_in_bytes,
            host_generated_code_size_in_bytes: since(43, args.host_generated_code_size_in_bytes),
            host_argument_size_in_bytes: since(43, args.host_argument_size_in_bytes),
            host_output_size_in_bytes: since(43, args.host_output_size_in_bytes),
            host_alias_size_in_bytes: since(43, args.host_alias_size_in_bytes),
            host_temp_size_in_bytes: since(43, args.host_temp_size_in_bytes),
            peak_memory_in_bytes: since(72, args.peak_memory_in_bytes),
            total_size_in_bytes: since(90, args.total_size_in_bytes),
            total_allocation_bytes: since(104, args.total_allocation_bytes),
            indefinite_allocations: since(104, args.indefinite_allocations),
            peak_unpadded_heap_bytes: since(104, args.peak_unpadded_heap_bytes),
        }
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

/// The queries every compiled program answers, loaded ([`LoadedExecutable`]) or not
/// ([`crate::Executable`], from [`crate::Topology::compile`]): `PJRT_Executable_*`.
macro_rules! executable_metadata {
    ($($ty:ty),+) => {$(
impl $ty {
    /// Size of the generated code in bytes (`PJRT_Executable_SizeOfGeneratedCodeInBytes`; the
    /// CPU plugins say 0).
    pub fn generated_code_size(&self) -> Result<i64> {
        let mut args = sys::PJRT_Executable_SizeOfGeneratedCodeInBytes_Args::new();
        args.executable = self.metadata_raw();
        pjrt_call!(self.metadata_api(), PJRT_Executable_SizeOfGeneratedCodeInBytes, &mut args)?;
        Ok(args.size_in_bytes)
    }

    /// The plugin's cost estimates, by name (`PJRT_Executable_GetCostAnalysis`; plugin-specific
    /// names such as `flops`; the CPU plugins say UNIMPLEMENTED).
    pub fn cost_analysis(&self) -> Result<Vec<(String, Value)>> {
        let mut args = sys::PJRT_Executable_GetCostAnalysis_Args::new();
        args.executable = self.metadata_raw();
        pjrt_call!(self.metadata_api(), PJRT_Executable_GetCostAnalysis, &mut args)?;
        // SAFETY: owned by the executable; checked and copied at once.
        let properties = unsafe {
            checked_slice(args.properties, args.num_properties, "PJRT_Executable_GetCostAnalysis", "properties")
        }?;
        // SAFETY: each named value is the plugin's, valid while the executable lives.
        Ok(unsafe { read_named_values(properties.as_ptr(), properties.len()) })
    }

    /// Memory kind of each output, e.g. `device` or `pinned_host`
    /// (`PJRT_Executable_OutputMemoryKinds`; UNIMPLEMENTED on the 0.106 CPU plugin).
    pub fn output_memory_kinds(&self) -> Result<Vec<String>> {
        let mut args = sys::PJRT_Executable_OutputMemoryKinds_Args::new();
        args.executable = self.metadata_raw();
        pjrt_call!(self.metadata_api(), PJRT_Executable_OutputMemoryKinds, &mut args)?;
        // SAFETY: arrays owned by the executable, of the count the plugin reported.
        unsafe {
            read_kinds(args.memory_kinds, args.memory_kind_sizes, args.num_outputs, "PJRT_Executable_OutputMemoryKinds")
        }
    }

    /// Memory kind of each parameter (`PJRT_Executable_ParameterMemoryKinds`, 0.102;
    /// UNIMPLEMENTED on the 0.106 CPU plugin).
    pub fn parameter_memory_kinds(&self) -> Result<Vec<String>> {
        let mut args = sys::PJRT_Executable_ParameterMemoryKinds_Args::new();
        args.executable = self.metadata_raw();
        pjrt_call!(self.metadata_api(), PJRT_Executable_ParameterMemoryKinds, &mut args)?;
        // SAFETY: arrays owned by the executable, of the count the plugin reported.
        unsafe {
            read_kinds(
                args.memory_kinds,
                args.memory_kind_sizes,
                args.num_parameters,
                "PJRT_Executable_ParameterMemoryKinds",
            )
        }
    }

    /// The plugin's memory estimates (`PJRT_Executable_GetCompiledMemoryStats`, 0.40). The full
    /// struct of 0.104+ is sent (plugins accept any size from the 0.72 one on and write what
    /// fits); fields newer than the plugin's version, or left unwritten, are `None`.
    pub fn compiled_memory_stats(&self) -> Result<CompiledMemoryStats> {
        let minor = self.metadata_api().version().minor;
        let mut args = sys::PJRT_Executable_GetCompiledMemoryStats_Args::new();
        args.executable = self.metadata_raw();
        for field in [
            &mut args.host_generated_code_size_in_bytes,
            &mut args.host_argument_size_in_bytes,
            &mut args.host_output_size_in_bytes,
            &mut args.host_alias_size_in_bytes,
            &mut args.host_temp_size_in_bytes,
            &mut args.peak_memory_in_bytes,
            &mut args.total_size_in_bytes,
            &mut args.total_allocation_bytes,
            &mut args.indefinite_allocations,
            &mut args.peak_unpadded_heap_bytes,
        ] {
            *field = UNWRITTEN;
        }
        pjrt_call!(self.metadata_api(), PJRT_Executable_GetCompiledMemoryStats, &mut args)?;
        Ok(CompiledMemoryStats::from_raw(&args, minor))
    }

    /// The optimised program (`PJRT_Executable_OptimizedProgram`: the size is asked first, then
    /// the plugin fills a buffer of that size).
    pub fn optimized_program(&self) -> Result<OptimizedProgram> {
        const FUNCTION: &str = "PJRT_Executable_OptimizedProgram";
        let api = self.metadata_api();
        let mut program = sys::PJRT_Program::new();
        let mut args = sys::PJRT_Executable_OptimizedProgram_Args::new();
        args.executable = self.metadata_raw();
        args.program = &mut program;
        // First call: the plugin reports the size.
        pjrt_call!(api, PJRT_Executable_OptimizedProgram, &mut args)?;
        let size = program.code_size;
        let mut code = Vec::new();
        if size > isize::MAX as usize || code.try_reserve_exact(size).is_err() {
            return Err(Error::invalid(format!("{FUNCTION} reports a program of {size} bytes")));
        }
        code.resize(size, 0);
        program.code = code.as_mut_ptr() as *mut c_char;
        pjrt_call!(api, PJRT_Executable_OptimizedProgram, &mut args)?;
        // The second call reports the size it wrote; more than the buffer would be a plugin bug.
        if program.code_size > size {
            return Err(Error::invalid(format!(
                "{FUNCTION} wrote {} bytes into a buffer of the {size} bytes it asked for",
                program.code_size
            )));
        }
        code.truncate(program.code_size);
        // SAFETY: the format string is owned by the plugin (static); copied at once.
        let format = unsafe { checked_string(program.format, program.format_size, FUNCTION, "the format") }?;
        Ok(OptimizedProgram { code, format })
    }

    /// The serialized `CompileOptionsProto` the executable was built with, as the plugin reports
    /// it (`PJRT_Executable_GetCompileOptions`, 0.87): the plugin fills in what it decided, e.g.
    /// the result layout.
    pub fn compile_options_bytes(&self) -> Result<Vec<u8>> {
        let mut args = sys::PJRT_Executable_GetCompileOptions_Args::new();
        args.executable = self.metadata_raw();
        pjrt_call!(self.metadata_api(), PJRT_Executable_GetCompileOptions, &mut args)?;
        // SAFETY: the bytes live until the deleter runs, right after the copy.
        let bytes = unsafe {
            checked_slice(
                args.serialized_bytes as *const u8,
                args.serialized_bytes_size,
                "PJRT_Executable_GetCompileOptions",
                "the options",
            )
        }
        .map(<[u8]>::to_vec);
        if let Some(deleter) = args.serialized_compile_options_deleter {
            // SAFETY: called once, on the object the plugin handed out.
            unsafe { deleter(args.serialized_compile_options) };
        }
        bytes
    }

    /// The compile options the executable was built with, decoded
    /// ([`Self::compile_options_bytes`] through [`CompileOptions::from_proto_bytes`]).
    pub fn compile_options(&self) -> Result<CompileOptions> {
        CompileOptions::from_proto_bytes(&self.compile_options_bytes()?)
    }
}
    )+};
}

executable_metadata!(LoadedExecutable, crate::executable::unloaded::Executable);

impl LoadedExecutable {
    fn metadata_api(&self) -> &Api {
        self.client.api()
    }

    fn metadata_raw(&self) -> *mut sys::PJRT_Executable {
        self.executable.as_ptr()
    }

    /// Which device runs which replica and partition
    /// (`PJRT_LoadedExecutable_GetDeviceAssignment`, 0.79).
    pub fn device_assignment(&self) -> Result<DeviceAssignment> {
        let mut args = sys::PJRT_LoadedExecutable_GetDeviceAssignment_Args::new();
        args.executable = self.raw.as_ptr();
        pjrt_call!(self.client.api(), PJRT_LoadedExecutable_GetDeviceAssignment, &mut args)?;
        // SAFETY: the bytes live until the deleter runs, right after the decode.
        let decoded = unsafe {
            checked_slice(
                args.serialized_bytes as *const u8,
                args.serialized_bytes_size,
                "PJRT_LoadedExecutable_GetDeviceAssignment",
                "the assignment",
            )
        }
        .and_then(|bytes| {
            DeviceAssignmentProto::decode(bytes)
                .map_err(|source| Error::Decode { what: "DeviceAssignmentProto", source })
        });
        if let Some(deleter) = args.serialized_device_assignment_deleter {
            // SAFETY: called once, on the object the plugin handed out.
            unsafe { deleter(args.serialized_device_assignment) };
        }
        device_assignment_from_proto(&decoded?)
    }

    /// The (replica, partition) of each addressable device, in the order of
    /// [`LoadedExecutable::addressable_devices`] (`PJRT_LoadedExecutable_AddressableDeviceLogicalIds`,
    /// 0.96).
    pub fn addressable_device_logical_ids(&self) -> Result<Vec<LogicalDeviceId>> {
        let mut args = sys::PJRT_LoadedExecutable_AddressableDeviceLogicalIds_Args::new();
        args.executable = self.raw.as_ptr();
        pjrt_call!(self.client.api(), PJRT_LoadedExecutable_AddressableDeviceLogicalIds, &mut args)?;
        // SAFETY: owned by the executable; copied at once.
        let ids = unsafe {
            checked_slice(
                args.addressable_device_logical_ids,
                args.num_addressable_device_logical_ids,
                "PJRT_LoadedExecutable_AddressableDeviceLogicalIds",
                "logical ids",
            )
        }?;
        Ok(ids.iter().map(|id| LogicalDeviceId { replica: id.replica, partition: id.partition }).collect())
    }
}

/// Reads a (strings, sizes) pair of arrays returned by the plugin.
///
/// # Safety
/// `kinds` and `sizes` must be NULL or point to `n` valid values each, every string readable for
/// its size.
unsafe fn read_kinds(
    kinds: *const *const c_char,
    sizes: *const usize,
    n: usize,
    function: &'static str,
) -> Result<Vec<String>> {
    // SAFETY: the caller's guarantee.
    let (kinds, sizes) =
        unsafe { (checked_slice(kinds, n, function, "memory kinds")?, checked_slice(sizes, n, function, "sizes")?) };
    kinds
        .iter()
        .zip(sizes)
        // SAFETY: the caller's guarantee.
        .map(|(kind, size)| unsafe { checked_string(*kind, *size, function, "a memory kind") })
        .collect()
}

/// `DeviceAssignmentProto` → [`DeviceAssignment`], checking the counts against the ids present
/// before building anything of their size (the bytes come from the plugin).
fn device_assignment_from_proto(proto: &DeviceAssignmentProto) -> Result<DeviceAssignment> {
    let bad = || {
        Error::invalid(format!(
            "the plugin returned an inconsistent device assignment ({} replicas × {} partitions, {} partition lists)",
            proto.replica_count,
            proto.computation_count,
            proto.computation_devices.len()
        ))
    };
    let replicas = usize::try_from(proto.replica_count).ok().filter(|&r| r >= 1).ok_or_else(bad)?;
    let partitions = usize::try_from(proto.computation_count).ok().filter(|&c| c >= 1).ok_or_else(bad)?;
    if proto.computation_devices.len() != partitions
        || proto.computation_devices.iter().any(|c| c.replica_device_ids.len() != replicas)
    {
        return Err(bad());
    }
    DeviceAssignment::new(
        (0..replicas).map(|r| proto.computation_devices.iter().map(|c| c.replica_device_ids[r]).collect()).collect(),
    )
}

// ---- loading serialized executables with options ----

/// Options for loading a serialized executable (`PJRT_LoadOptions`, API 0.111).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadOptions {
    computation_origin: Option<Vec<i32>>,
}

impl LoadOptions {
    /// No options set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Where the computation sits in a larger device mesh (plugin-specific; for multi-slice
    /// setups).
    pub fn computation_origin(mut self, origin: &[i32]) -> Self {
        self.computation_origin = Some(origin.to_vec());
        self
    }
}

/// The minor version that added `PJRT_LoadOptions`.
const LOAD_OPTIONS_MINOR: i32 = 111;
/// The minor version that added the compile-option overrides of `DeserializeAndLoad`.
const OVERRIDES_MINOR: i32 = 71;

impl Client {
    /// Like [`Client::deserialize_and_load`], optionally replacing the compile options stored in
    /// the serialized executable with `overrides`, and with `load_options`.
    ///
    /// Each is refused with [`Error::Unsupported`] on a plugin too old to read it (overrides:
    /// 0.71; load options: 0.111; an older plugin would silently ignore them).
    pub fn deserialize_and_load_with(
        &self,
        serialized: &[u8],
        overrides: Option<&CompileOptions>,
        load_options: Option<&LoadOptions>,
    ) -> Result<LoadedExecutable> {
        let _span = tracing::info_span!("load_executable", bytes = serialized.len()).entered();
        if serialized.is_empty() {
            return Err(Error::invalid("the serialized executable is empty"));
        }
        let api = self.api();
        let overrides_bytes = match overrides {
            Some(_) if api.version().minor < OVERRIDES_MINOR => {
                return Err(api.unsupported_feature(
                    "PJRT_Executable_DeserializeAndLoad_Args.overridden_serialized_compile_options",
                    OVERRIDES_MINOR,
                ));
            }
            Some(options) => Some(options.to_bytes()?),
            None => None,
        };
        let mut raw_load = sys::PJRT_LoadOptions::new();
        if load_options.is_some() && api.version().minor < LOAD_OPTIONS_MINOR {
            return Err(api.unsupported_feature("PJRT_LoadOptions", LOAD_OPTIONS_MINOR));
        }
        if let Some(origin) = load_options.and_then(|o| o.computation_origin.as_ref()) {
            raw_load.computation_origin = origin.as_ptr();
            raw_load.computation_origin_size = origin.len();
        }
        let mut args = sys::PJRT_Executable_DeserializeAndLoad_Args::new();
        args.client = self.raw();
        args.serialized_executable = serialized.as_ptr() as *const c_char;
        args.serialized_executable_size = serialized.len();
        if let Some(bytes) = &overrides_bytes {
            args.overridden_serialized_compile_options = bytes.as_ptr() as *const c_char;
            args.overridden_serialized_compile_options_size = bytes.len();
        }
        if load_options.is_some() {
            args.load_options = &mut raw_load as *mut sys::PJRT_LoadOptions as *mut std::ffi::c_void;
        }
        pjrt_call!(api, PJRT_Executable_DeserializeAndLoad, &mut args)?;
        let raw = NonNull::new(args.loaded_executable)
            .ok_or_else(|| Error::invalid("PJRT_Executable_DeserializeAndLoad returned no executable"))?;
        LoadedExecutable::new(self, raw, overrides.is_some_and(CompileOptions::is_portable))
    }
}

// ---- execute options ----

/// The minor version that added `PJRT_ExecuteOptions.context`.
const CONTEXT_FIELD_MINOR: i32 = 64;
/// The minor version that added `PJRT_ExecuteOptions.non_donatable_input_indices`.
const NON_DONATABLE_MINOR: i32 = 39;

/// The `PJRT_ExecuteOptions` every launch starts from: zeroed, full size, and with
/// `use_major_to_minor_data_layout_for_callbacks` set, as XLA's own frameworks (JAX, IFRT,
/// TensorFlow) set it: host send/receive callbacks then get and give their chunks in the dense
/// row-major layout this crate documents, not in the device's layout. Plugins older than 0.108
/// do not read the field and use that layout anyway.
#[inline]
pub(crate) fn raw_execute_options() -> sys::PJRT_ExecuteOptions {
    let mut raw = sys::PJRT_ExecuteOptions::new();
    raw.use_major_to_minor_data_layout_for_callbacks = true;
    raw
}

/// An execute context (`PJRT_ExecuteContext`, API 0.52): per-execution data for the plugin,
/// e.g. FFI user data (see [`crate::extensions`]). Cheap to clone (shared); destroyed when the
/// last clone, and the last execution using it, is gone.
#[derive(Clone)]
pub struct ExecuteContext {
    inner: Arc<ContextInner>,
}

struct ContextInner {
    plugin: Plugin,
    raw: NonNull<sys::PJRT_ExecuteContext>,
}

// SAFETY: the context is only read by executions (thread-safe in PJRT) and destroyed once, when
// the last handle is dropped; mutation through `as_raw` is the raw-API user's responsibility.
unsafe impl Send for ContextInner {}
// SAFETY: as above.
unsafe impl Sync for ContextInner {}

impl ExecuteContext {
    /// Creates an empty context (`PJRT_ExecuteContext_Create`).
    pub fn new(plugin: &Plugin) -> Result<ExecuteContext> {
        let mut args = sys::PJRT_ExecuteContext_Create_Args::new();
        pjrt_call!(plugin.api(), PJRT_ExecuteContext_Create, &mut args)?;
        let raw = NonNull::new(args.context)
            .ok_or_else(|| Error::invalid("PJRT_ExecuteContext_Create returned no context"))?;
        Ok(ExecuteContext { inner: Arc::new(ContextInner { plugin: plugin.clone(), raw }) })
    }

    /// The raw handle, for use with [`crate::sys`] (e.g. the FFI extension's user data). Do not
    /// destroy it.
    pub fn as_raw(&self) -> *mut sys::PJRT_ExecuteContext {
        self.inner.raw.as_ptr()
    }

    /// The function table of the plugin the context belongs to.
    pub(crate) fn api(&self) -> &crate::call::Api {
        self.inner.plugin.api()
    }
}

impl Drop for ContextInner {
    fn drop(&mut self) {
        release_if_in_callback!(ContextInner { plugin: self.plugin.clone(), raw: self.raw });
        let mut args = sys::PJRT_ExecuteContext_Destroy_Args::new();
        args.context = self.raw.as_ptr();
        let _ = pjrt_call!(self.plugin.api(), PJRT_ExecuteContext_Destroy, &mut args);
    }
}

impl fmt::Debug for ExecuteContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecuteContext").field("raw", &self.inner.raw).finish()
    }
}

/// Options for [`LoadedExecutable::execute_with`] and
/// [`LoadedExecutable::execute_sharded_with`]. Cheap to clone (callbacks and context are
/// shared); one value may serve many executions.
///
/// ```no_run
/// # use pjrt_client::{ExecuteOptions, LoadedExecutable, Buffer};
/// # fn f(exe: &LoadedExecutable, x: &Buffer) -> pjrt_client::Result<()> {
/// let options = ExecuteOptions::new()
///     .launch_id(7)
///     .non_donatable_inputs([0])
///     .on_send(1, |chunk| {
///         println!("device {} sent {} bytes", chunk.device_index(), chunk.data().len());
///         Ok(())
///     });
/// let outputs = exe.execute_with(&[x], &options)?;
/// # Ok(()) }
/// ```
#[derive(Clone, Default)]
pub struct ExecuteOptions {
    launch_id: i32,
    non_donatable: Vec<i64>,
    context: Option<ExecuteContext>,
    pub(crate) callbacks: HostCallbacks,
}

impl ExecuteOptions {
    /// No launch id, every input donatable per the program, no context, no callbacks.
    pub fn new() -> Self {
        Self::default()
    }

    /// Identifies this launch among those of a multi-device (or multi-host) program; 0 = none.
    pub fn launch_id(mut self, launch_id: i32) -> Self {
        self.launch_id = launch_id;
        self
    }

    /// Inputs (by argument index) the plugin must not donate even if the program aliases them to
    /// an output, e.g. a buffer passed twice or still needed afterwards.
    pub fn non_donatable_inputs(mut self, indices: impl IntoIterator<Item = usize>) -> Self {
        self.non_donatable.extend(indices.into_iter().map(|i| i64::try_from(i).unwrap_or(i64::MAX)));
        self.non_donatable.sort_unstable();
        self.non_donatable.dedup();
        self
    }

    /// Passes `context` to the execution (kept alive until it completes).
    pub fn context(mut self, context: &ExecuteContext) -> Self {
        self.context = Some(context.clone());
        self
    }

    /// Builds the raw options for `num_devices` argument lists of `num_args` buffers.
    fn to_raw(&self, exe: &LoadedExecutable, num_devices: usize, num_args: usize) -> Result<RawExecuteOptions<'_>> {
        let api = exe.client.api();
        let mut raw = raw_execute_options();
        raw.launch_id = self.launch_id;
        if let Some(&bad) = self.non_donatable.iter().find(|&&i| i as u64 >= num_args as u64) {
            return Err(Error::invalid(format!(
                "non-donatable input {bad} does not exist: the execution has {num_args} arguments"
            )));
        }
        if !self.non_donatable.is_empty() {
            // An older plugin would not read the field and donate the inputs anyway.
            if api.version().minor < NON_DONATABLE_MINOR {
                return Err(
                    api.unsupported_feature("PJRT_ExecuteOptions.non_donatable_input_indices", NON_DONATABLE_MINOR)
                );
            }
            raw.non_donatable_input_indices = self.non_donatable.as_ptr();
            raw.num_non_donatable_input_indices = self.non_donatable.len();
        }
        let mut keepalive = Keepalive { context: None, targets: None };
        if let Some(context) = &self.context {
            exe.client.plugin().check_same(&context.inner.plugin, "the execute context")?;
            if api.version().minor < CONTEXT_FIELD_MINOR {
                return Err(api.unsupported_feature("PJRT_ExecuteOptions.context", CONTEXT_FIELD_MINOR));
            }
            raw.context = context.as_raw();
            keepalive.context = Some(context.clone());
        }
        let mut lists = None;
        if !self.callbacks.is_empty() {
            let (mut prepared, targets) = self.callbacks.prepare(&exe.client, num_devices);
            prepared.apply(&mut raw);
            lists = Some(prepared);
            keepalive.targets = Some(targets);
        }
        let keepalive = (keepalive.context.is_some() || keepalive.targets.is_some()).then_some(keepalive);
        Ok(RawExecuteOptions { raw, _lists: lists, keepalive, _options: PhantomData })
    }
}

impl fmt::Debug for ExecuteOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (send, recv) = self.callbacks.channels();
        f.debug_struct("ExecuteOptions")
            .field("launch_id", &self.launch_id)
            .field("non_donatable_inputs", &self.non_donatable)
            .field("context", &self.context)
            .field("send_channels", &send)
            .field("recv_channels", &recv)
            .finish()
    }
}

/// `PJRT_ExecuteOptions` and what it points to, for one Execute call.
struct RawExecuteOptions<'o> {
    raw: sys::PJRT_ExecuteOptions,
    /// The callback lists `raw` points to (heap memory: moving this struct is fine).
    _lists: Option<CallbackLists>,
    /// What must outlive the execution itself.
    keepalive: Option<Keepalive>,
    /// `raw` also points into the options (non-donatable indices).
    _options: PhantomData<&'o ExecuteOptions>,
}

/// What an execution may use until every device has completed: the callbacks' `user_arg`s and
/// the execute context.
pub(crate) struct Keepalive {
    context: Option<ExecuteContext>,
    targets: Option<CallbackTargets>,
}

impl Keepalive {
    /// Keeps `self` alive until every one of `events` (one per device) has fired, then drops it
    /// on the release thread (it holds user closures, never dropped on a plugin thread; see
    /// `crate::call::release`).
    ///
    /// When there is not one event per device — the plugin gave fewer, or the launch failed
    /// (possibly after some devices started, which may still call the callbacks) — nothing tells
    /// when the plugin stops using what `self` holds: it is then kept until the client is
    /// destroyed (after `PJRT_Client_Destroy`), never freed early.
    fn hold_until_complete(self, client: &Client, events: &[Event], num_devices: usize) {
        if events.len() < num_devices {
            client.keep_until_destroyed(self);
            return;
        }
        let shared = Arc::new(self);
        for event in events {
            let held = shared.clone();
            if event.on_ready(move |_| crate::call::release::release_later(held)).is_err() {
                // The callback was not registered (its closure, with its clone, is dropped): keep
                // one clone until the client goes instead.
                client.keep_until_destroyed(shared.clone());
            }
        }
    }
}

/// The parts of XLA's HLO protos needed to read an entry computation's signature (field numbers
/// from the published `hlo.proto` / `xla_data.proto`).
mod hlo {
    use super::ElementType;

    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct HloModuleProtoWithConfig {
        #[prost(message, optional, tag = "1")]
        pub hlo_module: Option<HloModuleProto>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct HloModuleProto {
        #[prost(message, optional, tag = "4")]
        pub host_program_shape: Option<ProgramShapeProto>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct ProgramShapeProto {
        #[prost(message, repeated, tag = "1")]
        pub parameters: Vec<ShapeProto>,
        #[prost(message, optional, tag = "2")]
        pub result: Option<ShapeProto>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub(super) struct ShapeProto {
        #[prost(int32, tag = "2")]
        pub element_type: i32,
        #[prost(int64, repeated, tag = "3")]
        pub dimensions: Vec<i64>,
        #[prost(message, repeated, tag = "4")]
        pub tuple_shapes: Vec<ShapeProto>,
    }

    /// `xla.PrimitiveType.TUPLE`.
    pub(super) const TUPLE: i32 = 13;

    /// Maps `xla.PrimitiveType` to the PJRT element type, for the values known for certain.
    pub(super) fn element_type(primitive: i32) -> Option<ElementType> {
        Some(match primitive {
            1 => ElementType::PRED,
            2 => ElementType::S8,
            3 => ElementType::S16,
            4 => ElementType::S32,
            5 => ElementType::S64,
            6 => ElementType::U8,
            7 => ElementType::U16,
            8 => ElementType::U32,
            9 => ElementType::U64,
            10 => ElementType::F16,
            11 => ElementType::F32,
            12 => ElementType::F64,
            15 => ElementType::C64,
            16 => ElementType::BF16,
            18 => ElementType::C128,
            19 => ElementType::F8E5M2,
            20 => ElementType::F8E4M3FN,
            21 => ElementType::S4,
            22 => ElementType::U4,
            23 => ElementType::F8E4M3B11FNUZ,
            24 => ElementType::F8E5M2FNUZ,
            25 => ElementType::F8E4M3FNUZ,
            26 => ElementType::S2,
            27 => ElementType::U2,
            28 => ElementType::F8E4M3,
            29 => ElementType::F8E3M4,
            30 => ElementType::S1,
            31 => ElementType::U1,
            32 => ElementType::F4E2M1FN,
            33 => ElementType::F8E8M0FNU,
            // Not in the published xla_data.proto yet; read from the current CPU plugin's
            // compiled parameters (f6E3M2FN and f6E2M3FN programs).
            35 => ElementType::F6E3M2FN,
            36 => ElementType::F6E2M3FN,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile_options::proto::ComputationDevice;

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
        assert_eq!((two.replicas(), two.partitions(), two.device(1, 0)), (2, 1, Some(1)));
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
