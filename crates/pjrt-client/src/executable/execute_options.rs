//! How an execution runs: [`ExecuteOptions`] (launch id, donation, non-donatable inputs, host
//! callbacks) and [`ExecuteContext`].

use std::ffi::{c_int, c_void, CString};
use std::fmt;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use crate::call::pjrt_call;
use crate::call::release::release_if_in_callback;
use crate::client::device::Device;
use crate::client::Client;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::executable::context_data;
use crate::executable::host_callbacks::{
    CallbackClosures, CallbackLists, CallbackTargets, CopyToDeviceStream, HostCallbacks, SendChunk,
};
use crate::executable::LoadedExecutable;
use crate::plugin::Plugin;
use crate::sys::{self, Args};

/// The minor version that added `PJRT_ExecuteOptions.context`.
pub(crate) const CONTEXT_FIELD_MINOR: i32 = 64;
/// The minor version that added `PJRT_ExecuteOptions.non_donatable_input_indices`.
pub(crate) const NON_DONATABLE_MINOR: i32 = 39;
/// The minor version that added `PJRT_ExecuteOptions.call_location`.
pub(crate) const CALL_LOCATION_MINOR: i32 = 76;
/// The minor version that added `PJRT_ExecuteOptions.num_tasks`, `task_ids` and `incarnation_ids`.
pub(crate) const TASK_INCARNATIONS_MINOR: i32 = 78;

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
/// e.g. FFI user data (see [`crate::extensions::FfiExtension::add_owned_user_data`], which moves
/// Rust values into it). Cheap to clone (shared); destroyed when the
/// last clone, and the last execution using it, is gone.
#[derive(Clone)]
pub struct ExecuteContext {
    inner: Arc<ContextInner>,
}

pub(crate) struct ContextInner {
    plugin: Plugin,
    raw: NonNull<sys::PJRT_ExecuteContext>,
    /// Keys of the user data given to the plugin with this context (see `context_data`): what
    /// the plugin has not released by the time the context is destroyed is dropped then.
    user_data: Mutex<Vec<usize>>,
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
        Ok(ExecuteContext {
            inner: Arc::new(ContextInner { plugin: plugin.clone(), raw, user_data: Mutex::default() }),
        })
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

    /// Takes ownership of `value` for as long as the context lives and returns the pointer to
    /// give the plugin; pass [`context_data::release_user_data`] as its deleter.
    pub(crate) fn adopt_user_data<T: Send + Sync + 'static>(&self, value: T) -> *mut c_void {
        let ptr = context_data::adopt(value);
        self.inner.user_data.lock().unwrap_or_else(|p| p.into_inner()).push(ptr as usize);
        ptr
    }
}

impl Drop for ContextInner {
    fn drop(&mut self) {
        let user_data = std::mem::take(self.user_data.get_mut().unwrap_or_else(|p| p.into_inner()));
        release_if_in_callback!(ContextInner {
            plugin: self.plugin.clone(),
            raw: self.raw,
            user_data: Mutex::new(user_data)
        });
        let mut args = sys::PJRT_ExecuteContext_Destroy_Args::new();
        args.context = self.raw.as_ptr();
        let destroyed = pjrt_call!(self.plugin.api(), PJRT_ExecuteContext_Destroy, &mut args);
        if destroyed.is_err() {
            // The plugin may still hold the context and reach the data through it: keep the
            // data forever rather than free it under the plugin.
            return;
        }
        // Data whose deleter the plugin did not call (or does not take) goes now; what the
        // deleter already released is no longer found.
        for key in user_data {
            drop(context_data::take(key));
        }
    }
}

impl fmt::Debug for ExecuteContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecuteContext").field("raw", &self.inner.raw).finish()
    }
}

/// Options of every launch: [`LoadedExecutable::execute`], [`LoadedExecutable::execute_async`],
/// [`LoadedExecutable::execute_sharded`] and [`LoadedExecutable::execute_sharded_async`].
/// `ExecuteOptions::new()` is the fast path (it allocates nothing); a device for a portable
/// executable keeps it. Clones share the callbacks and the context; one value may serve
/// many executions.
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
/// let outputs = exe.execute(&[x], &options)?;
/// # Ok(()) }
/// ```
#[derive(Clone, Default)]
pub struct ExecuteOptions {
    /// Everything but the device, made by the first setter: `None` is every default, so that
    /// `ExecuteOptions::new()` is two words to build, check and drop on the execute hot path.
    settings: Option<Box<Settings>>,
    /// The device of a single-device launch (see [`ExecuteOptions::device`]).
    device: Option<ChosenDevice>,
}

/// What [`ExecuteOptions`] set besides the device.
#[derive(Clone, Default)]
pub(crate) struct Settings {
    launch_id: i32,
    non_donatable: Vec<i64>,
    context: Option<ExecuteContext>,
    call_location: Option<String>,
    /// (task id, incarnation id), sorted by task id, one entry per task.
    incarnations: Vec<(c_int, i64)>,
    pub(crate) callbacks: HostCallbacks,
}

/// A device named by [`ExecuteOptions::device`], with its client (held, so that the handle stays
/// valid for as long as the options keep it).
#[derive(Clone)]
pub(crate) struct ChosenDevice {
    client: Client,
    raw: NonNull<sys::PJRT_Device>,
}

// SAFETY: the handle is only compared and passed back to the plugin that made it, whose devices
// live (and may be used from any thread) as long as their client, which is held here.
unsafe impl Send for ChosenDevice {}
// SAFETY: as above; nothing is reached through the handle here.
unsafe impl Sync for ChosenDevice {}

impl ChosenDevice {
    /// Whether the device is `client`'s.
    #[inline]
    pub(crate) fn is_of(&self, client: &Client) -> bool {
        self.client.same_client(client)
    }

    /// The raw handle.
    #[inline]
    pub(crate) fn raw(&self) -> *mut sys::PJRT_Device {
        self.raw.as_ptr()
    }
}

impl ExecuteOptions {
    /// No launch id, every input donatable per the program, no context, no callbacks, the
    /// executable's own device.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs a single-device launch ([`LoadedExecutable::execute`],
    /// [`LoadedExecutable::execute_async`]) on `device`: needed for a portable executable
    /// (`CompileOptions::compile_portable_executable`), allowed for one compiled for a single
    /// device, refused by [`LoadedExecutable::execute_sharded`] (which runs on every device of
    /// the executable). The device must be the executable's client's.
    ///
    /// ```
    /// use pjrt_client::{CompileOptions, ExecuteOptions, HostSource, Program, UploadOptions};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new().cpu_device_count(2))?;
    /// let program = Program::mlir_text(r#"
    ///   func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
    ///     %0 = stablehlo.negate %a : tensor<2xf32>
    ///     return %0 : tensor<2xf32>
    ///   }"#)?;
    /// let exe = client.compile(&program, &CompileOptions::new().compile_portable_executable(true))?;
    /// // One launch per device, all in flight at once.
    /// let mut pending = Vec::new();
    /// for device in client.addressable_devices() {
    ///     let x = client.upload_with(HostSource::slice(&[1f32, 2.], &[2]), &UploadOptions::new().device(&device))?;
    ///     pending.push(exe.execute_async(&[&x], &ExecuteOptions::new().device(&device))?);
    /// }
    /// for execution in pending {
    ///     assert_eq!(execution.wait()?[0].to_vec::<f32>()?, [-1., -2.]);
    /// }
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn device(mut self, device: &Device<'_>) -> Self {
        self.device = NonNull::new(device.as_raw()).map(|raw| ChosenDevice { client: device.client().clone(), raw });
        self
    }

    /// The device named by [`ExecuteOptions::device`].
    #[inline]
    pub(crate) fn chosen_device(&self) -> Option<&ChosenDevice> {
        self.device.as_ref()
    }

    /// Whether the options ask nothing of the plugin's `PJRT_ExecuteOptions` beyond the
    /// defaults (a chosen device is not part of them): the launch's fast path. Options on which
    /// a setter was called are not plain, even if it set a default value.
    #[inline]
    pub(crate) fn is_plain(&self) -> bool {
        self.settings.is_none()
    }

    /// The settings, made on first use.
    fn settings_mut(&mut self) -> &mut Settings {
        self.settings.get_or_insert_with(Box::default)
    }

    /// The host callbacks registered (for tests of the callback lists).
    #[cfg(test)]
    pub(crate) fn callbacks(&self) -> Option<&HostCallbacks> {
        self.settings.as_ref().map(|s| &s.callbacks)
    }

    /// Identifies this launch among those of a multi-device (or multi-host) program; 0 = none.
    pub fn launch_id(mut self, launch_id: i32) -> Self {
        self.settings_mut().launch_id = launch_id;
        self
    }

    /// Inputs (by argument index) the plugin must not donate even if the program aliases them to
    /// an output, e.g. a buffer passed twice or still needed afterwards.
    pub fn non_donatable_inputs(mut self, indices: impl IntoIterator<Item = usize>) -> Self {
        let non_donatable = &mut self.settings_mut().non_donatable;
        non_donatable.extend(indices.into_iter().map(|i| i64::try_from(i).unwrap_or(i64::MAX)));
        non_donatable.sort_unstable();
        non_donatable.dedup();
        self
    }

    /// Passes `context` to the execution (kept alive until it completes).
    pub fn context(mut self, context: &ExecuteContext) -> Self {
        self.settings_mut().context = Some(context.clone());
        self
    }

    /// Where in the caller's code this execution comes from (`PJRT_ExecuteOptions.call_location`,
    /// API 0.76), e.g. `"train.py:42"`; plugins may show it in errors, logs and profiles.
    /// A location with a NUL byte is refused when the execution starts (`Error::InvalidArgument`).
    ///
    /// ```
    /// # use pjrt_client::{Client, ClientOptions, CompileOptions, ExecuteOptions, Plugin, Program};
    /// # let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = Client::new(&plugin, &ClientOptions::new())?;
    /// # let program = Program::mlir_text("func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> { return %x : tensor<2xf32> }")?;
    /// let exe = client.compile(&program, &CompileOptions::new())?;
    /// let x = client.upload(&[1f32, 2.], &[2])?;
    /// let options = ExecuteOptions::new().call_location(concat!(file!(), ":", line!()));
    /// assert_eq!(exe.execute(&[&x], &options)?[0].to_vec::<f32>()?, [1., 2.]);
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn call_location(mut self, location: impl Into<String>) -> Self {
        self.settings_mut().call_location = Some(location.into());
        self
    }

    /// The incarnation of each task (process) of a multi-process job
    /// (`PJRT_ExecuteOptions.num_tasks`/`task_ids`/`incarnation_ids`, API 0.78): a plugin that
    /// tracks restarted processes fails the execution when a peer's incarnation differs, instead
    /// of hanging in a collective with a process that no longer exists. Pairs are `(task id,
    /// incarnation id)`; a task given twice keeps the last incarnation.
    ///
    /// ```
    /// # use pjrt_client::{Client, ClientOptions, CompileOptions, ExecuteOptions, Plugin, Program};
    /// # let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = Client::new(&plugin, &ClientOptions::new())?;
    /// # let program = Program::mlir_text("func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> { return %x : tensor<2xf32> }")?;
    /// # let exe = client.compile(&program, &CompileOptions::new())?;
    /// # let x = client.upload(&[1f32, 2.], &[2])?;
    /// // One process, started once: task 0 is in its first incarnation.
    /// let options = ExecuteOptions::new().task_incarnations([(0, 1)]);
    /// assert_eq!(exe.execute(&[&x], &options)?[0].to_vec::<f32>()?, [1., 2.]);
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn task_incarnations(mut self, incarnations: impl IntoIterator<Item = (i32, i64)>) -> Self {
        for (task, incarnation) in incarnations {
            let incarnations = &mut self.settings_mut().incarnations;
            match incarnations.binary_search_by_key(&task, |&(t, _)| t) {
                Ok(i) => incarnations[i].1 = incarnation,
                Err(i) => incarnations.insert(i, (task, incarnation)),
            }
        }
        self
    }

    /// Builds the raw options for `num_devices` argument lists of `num_args` buffers.
    pub(super) fn to_raw(
        &self,
        exe: &LoadedExecutable,
        num_devices: usize,
        num_args: usize,
    ) -> Result<RawExecuteOptions<'_>> {
        let mut raw = raw_execute_options();
        let Some(settings) = self.settings.as_deref() else {
            return Ok(RawExecuteOptions {
                raw,
                _lists: None,
                _tasks: None,
                _call_location: None,
                keepalive: None,
                _options: PhantomData,
            });
        };
        let api = exe.client.api();
        raw.launch_id = settings.launch_id;
        if let Some(&bad) = settings.non_donatable.iter().find(|&&i| i as u64 >= num_args as u64) {
            return Err(Error::invalid(format!(
                "non-donatable input {bad} does not exist: the execution has {num_args} arguments"
            )));
        }
        if !settings.non_donatable.is_empty() {
            // An older plugin would not read the field and donate the inputs anyway.
            if api.version().minor < NON_DONATABLE_MINOR {
                return Err(
                    api.unsupported_feature("PJRT_ExecuteOptions.non_donatable_input_indices", NON_DONATABLE_MINOR)
                );
            }
            raw.non_donatable_input_indices = settings.non_donatable.as_ptr();
            raw.num_non_donatable_input_indices = settings.non_donatable.len();
        }
        let call_location = match &settings.call_location {
            Some(location) => {
                let location = CString::new(location.as_str())
                    .map_err(|_| Error::invalid("the call location holds a NUL byte; pass text without NUL"))?;
                if api.version().minor < CALL_LOCATION_MINOR {
                    return Err(api.unsupported_feature("PJRT_ExecuteOptions.call_location", CALL_LOCATION_MINOR));
                }
                raw.call_location = location.as_ptr();
                Some(location)
            }
            None => None,
        };
        // The plugin gets its own copies: the C API declares the arrays mutable.
        let tasks = (!settings.incarnations.is_empty()).then(|| {
            let ids: Vec<c_int> = settings.incarnations.iter().map(|&(t, _)| t).collect();
            let incarnations: Vec<i64> = settings.incarnations.iter().map(|&(_, i)| i).collect();
            (ids, incarnations)
        });
        if let Some((ids, incarnations)) = &tasks {
            if api.version().minor < TASK_INCARNATIONS_MINOR {
                return Err(api.unsupported_feature("PJRT_ExecuteOptions.task_ids", TASK_INCARNATIONS_MINOR));
            }
            raw.num_tasks = ids.len();
            raw.task_ids = ids.as_ptr().cast_mut();
            raw.incarnation_ids = incarnations.as_ptr().cast_mut();
        }
        let mut keepalive = Keepalive { context: None, targets: None, closures: None };
        if let Some(context) = &settings.context {
            exe.client.plugin().check_same(&context.inner.plugin, "the execute context")?;
            if api.version().minor < CONTEXT_FIELD_MINOR {
                return Err(api.unsupported_feature("PJRT_ExecuteOptions.context", CONTEXT_FIELD_MINOR));
            }
            raw.context = context.as_raw();
            keepalive.context = Some(context.clone());
        }
        let mut lists = None;
        if !settings.callbacks.is_empty() {
            let (mut prepared, targets, closures) = settings.callbacks.prepare(&exe.client, num_devices);
            prepared.apply(&mut raw);
            lists = Some(prepared);
            keepalive.targets = Some(targets);
            keepalive.closures = Some(closures);
        }
        let keepalive = (keepalive.context.is_some() || keepalive.targets.is_some()).then_some(keepalive);
        Ok(RawExecuteOptions {
            raw,
            _lists: lists,
            _tasks: tasks,
            _call_location: call_location,
            keepalive,
            _options: PhantomData,
        })
    }
}

impl fmt::Debug for ExecuteOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let default = Settings::default();
        let settings = self.settings.as_deref().unwrap_or(&default);
        let (send, recv) = settings.callbacks.channels();
        f.debug_struct("ExecuteOptions")
            .field("launch_id", &settings.launch_id)
            .field("non_donatable_inputs", &settings.non_donatable)
            .field("context", &settings.context)
            .field("call_location", &settings.call_location)
            .field("task_incarnations", &settings.incarnations)
            .field("send_channels", &send)
            .field("recv_channels", &recv)
            .field("device", &self.device.as_ref().map(|d| d.raw))
            .finish()
    }
}

/// `PJRT_ExecuteOptions` and what it points to, for one Execute call.
pub(crate) struct RawExecuteOptions<'o> {
    pub(super) raw: sys::PJRT_ExecuteOptions,
    /// The callback lists `raw` points to (heap memory: moving this struct is fine).
    _lists: Option<CallbackLists>,
    /// The task ids and incarnation ids `raw` points to (heap memory).
    _tasks: Option<(Vec<c_int>, Vec<i64>)>,
    /// The text `raw.call_location` points to (heap memory).
    _call_location: Option<CString>,
    /// What must outlive the execution itself.
    pub(super) keepalive: Option<Keepalive>,
    /// `raw` also points into the options (non-donatable indices).
    _options: PhantomData<&'o ExecuteOptions>,
}

/// What an execution may use until every device has completed: the callbacks' `user_arg`s and
/// the execute context, which the plugin reaches, and the closures the `user_arg`s lead to.
pub(crate) struct Keepalive {
    context: Option<ExecuteContext>,
    targets: Option<CallbackTargets>,
    closures: Option<CallbackClosures>,
}

impl Keepalive {
    /// Keeps `self` alive until every one of `events` (one per device) has fired, then drops it
    /// on the release thread (it holds user closures, never dropped on a plugin thread; see
    /// `crate::call::release`).
    ///
    /// When there is not one event per device — the plugin gave fewer, or the launch failed
    /// (possibly after some devices started, which may still call the callbacks) — nothing tells
    /// when the plugin stops using what it reaches (the context, the callbacks' `user_arg`s): that
    /// is then kept until the client is destroyed (after `PJRT_Client_Destroy`), never freed
    /// early. The closures are not: they may own the client (a cycle: it would never be
    /// destroyed). They stay as long as the `ExecuteOptions` that hold them; a callback after
    /// that gets an error.
    pub(super) fn hold_until_complete<'e>(
        self,
        client: &Client,
        events: impl IntoIterator<Item = &'e Event>,
        num_devices: usize,
    ) {
        let Keepalive { context, targets, closures } = self;
        let reached = (context, targets);
        let events: Vec<&Event> = events.into_iter().collect();
        if events.len() < num_devices {
            client.keep_until_destroyed(reached);
            // `closures` is dropped here (on the release thread if this is a plugin callback).
            return;
        }
        let (reached, closures) = (Arc::new(reached), Arc::new(closures));
        let mut all_registered = true;
        for event in events {
            let held = (reached.clone(), closures.clone());
            if event.on_ready(move |_| crate::call::release::release_later(held)).is_err() {
                // Not registered (its closure, with its clones, is dropped).
                all_registered = false;
            }
        }
        if !all_registered {
            // A device whose completion cannot be seen: what the plugin reaches is kept until
            // the client goes; the closures only until the registered events fire.
            client.keep_until_destroyed(reached);
        }
    }
}

/// Host callbacks: closures the devices call during an execution (see `host_callbacks.rs`).
impl ExecuteOptions {
    /// Calls `callback` for every chunk a device sends to the host on channel `channel_id` (a
    /// `stablehlo.send` with `is_host_transfer = true` and a DEVICE_TO_HOST channel handle).
    ///
    /// An error returned by `callback`, or a panic in it, is passed to the plugin, which fails
    /// the execution with it (code from [`Error::code`], else INTERNAL for a panic and UNKNOWN
    /// otherwise). Registering a channel twice keeps the last closure.
    pub fn on_send<F>(mut self, channel_id: i64, callback: F) -> Self
    where
        F: FnMut(SendChunk<'_>) -> Result<()> + Send + 'static,
    {
        self.settings_mut().callbacks.add_send(channel_id, Box::new(callback));
        self
    }

    /// Calls `callback` when a device waits for data from the host on channel `channel_id` (a
    /// `stablehlo.recv` with `is_host_transfer = true` and a HOST_TO_DEVICE channel handle). The
    /// closure gets the stream to fill ([`CopyToDeviceStream::add_chunk`]) and may keep it to fill
    /// later, from any thread; the device waits until the stream holds
    /// [`CopyToDeviceStream::total_bytes`].
    ///
    /// The plugin cannot be told about a failure here: an error or a panic is recorded (see
    /// [`ExecuteOptions::take_callback_failures`]) and the stream is destroyed; what the device
    /// does with a stream destroyed before it was full is up to the plugin. Registering a channel
    /// twice keeps the last closure.
    pub fn on_recv<F>(mut self, channel_id: i64, callback: F) -> Self
    where
        F: FnMut(CopyToDeviceStream) -> Result<()> + Send + 'static,
    {
        self.settings_mut().callbacks.add_recv(channel_id, Box::new(callback));
        self
    }

    /// Removes and returns the failures (errors returned and panics) of the callbacks registered
    /// on these options (and their clones), in the order they happened.
    pub fn take_callback_failures(&self) -> Vec<Error> {
        self.settings.as_ref().map(|s| s.callbacks.take_failures()).unwrap_or_default()
    }

    /// Channel ids with a send and with a receive callback.
    pub fn callback_channels(&self) -> (Vec<i64>, Vec<i64>) {
        self.settings.as_ref().map(|s| s.callbacks.channels()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_launch_asks_for_major_to_minor_callback_chunks() {
        let raw = raw_execute_options();
        assert!(raw.use_major_to_minor_data_layout_for_callbacks);
        assert_eq!(raw.struct_size, 144, "the full 0.112+ size, so 0.108+ plugins read the field");
        assert_eq!(std::mem::offset_of!(sys::PJRT_ExecuteOptions, use_major_to_minor_data_layout_for_callbacks), 120);
    }
}
