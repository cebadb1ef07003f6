//! Running a loaded executable: [`LoadedExecutable::execute`] and `execute_async` (one device),
//! `execute_sharded` and `execute_sharded_async` (one argument list per device), and the launch
//! helpers under them: the hot path of `execute` first, then the general launches and the
//! argument checks.

use std::borrow::Borrow;
use std::ptr::NonNull;

use smallvec::SmallVec;

use super::LoadedExecutable;
use crate::buffer::{shape_fits, Buffer};
use crate::call::pjrt_call;
use crate::call::release::{blocking_in_callback, in_plugin_callback, refuse_in_callback};
use crate::call::trace::{span, tracing_on};
use crate::error::{Error, Result};
use crate::event::Event;
use crate::executable::execute_options::{raw_execute_options, ExecuteOptions, Keepalive};
use crate::executable::execution::{PendingExecution, PendingShardedExecution};
use crate::executable::outputs::Outputs;
use crate::sys::{self, Args};

/// What a launch returns per device: `outputs[device]` and `events[device]`.
type PerDevice = (Vec<Vec<Buffer>>, Vec<Option<Event>>);

/// Most arguments and outputs the fast path of `execute` keeps on the stack.
const STACK_LIST: usize = 8;

/// What to do instead of a waiting execute inside a plugin callback.
const EXECUTE_INSTEAD: &str =
    "launch with execute_async (or execute_sharded_async) there and await the pending execution";

impl LoadedExecutable {
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
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
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
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
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
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
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
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
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
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
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
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
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
        use crate::client::device::Device;
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
}
