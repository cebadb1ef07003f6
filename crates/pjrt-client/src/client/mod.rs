//! Clients: one per plugin and set of devices; the root of every other object.

pub(crate) mod builtins;
pub(crate) mod device;
pub(crate) mod device_stats;
pub(crate) mod gpu_options;
pub(crate) mod kv_store;
pub(crate) mod process;

use std::any::Any;
use std::fmt;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use crate::call::named_value::{RawNamedValues, Value};
use crate::call::release::release_if_in_callback;
use crate::call::trace::span;
use crate::call::{checked_slice, checked_string, pjrt_call};
use crate::client::builtins::{BuiltinProvider, Providers};
use crate::client::device::{Device, Memory};
use crate::client::kv_store::{KeyValueStore, KvCallbacks};
use crate::error::{Error, ErrorCode, Result};
use crate::plugin::Plugin;
use crate::sys::{self, Args};

/// Options for [`Client::new`]: typed name/value pairs passed to `PJRT_Client_Create`.
///
/// Well-known option names are type-checked before the call (a plugin may abort the process on a
/// wrongly typed option: the 0.106 CPU plugin does for `cpu_device_count`), and their values
/// range-checked; other names go through and the plugin decides.
///
/// The CPU plugins read `cpu_device_count` ([`cpu_device_count`](Self::cpu_device_count)),
/// `asynchronous` and `process_id`. XLA's GPU plugins (CUDA, ROCm) read their own set, each with
/// a setter here: [`memory_fraction`](Self::memory_fraction), [`preallocate`](Self::preallocate),
/// [`allocator`](Self::allocator), [`collective_memory_size`](Self::collective_memory_size),
/// [`visible_devices`](Self::visible_devices), [`node_id`](Self::node_id) and
/// [`num_nodes`](Self::num_nodes), [`platform_name`](Self::platform_name),
/// [`stage_host_to_device_transfers`](Self::stage_host_to_device_transfers),
/// [`abort_collectives_on_failure`](Self::abort_collectives_on_failure),
/// [`enable_mock_nccl`](Self::enable_mock_nccl), [`mock_gpu_topology`](Self::mock_gpu_topology),
/// [`partition_index`](Self::partition_index), [`use_tfrt_gpu_client`](Self::use_tfrt_gpu_client).
/// Each plugin refuses the other's names (the 0.115 CPU and the GPU plugins with
/// INVALID_ARGUMENT, the 0.106 CPU plugin ignores them).
///
/// ```
/// use pjrt_client::{ClientOptions, GpuAllocator, Value};
/// // A CUDA client on GPUs 0 and 1 that grows its memory pool on demand, up to half of each GPU.
/// let options = ClientOptions::new()
///     .visible_devices([0, 1])
///     .allocator(GpuAllocator::Bfc)
///     .preallocate(false)
///     .memory_fraction(0.5);
/// assert_eq!(options.options()[3], ("memory_fraction".to_string(), Value::Float(0.5)));
/// ```
#[derive(Clone, Debug, Default)]
pub struct ClientOptions {
    options: Vec<(String, Value)>,
    /// Not create options: what the client's compiles consult ([`ClientOptions::builtin_provider`]).
    providers: Providers,
}

/// Create options XLA's plugins define, with the type each expects.
const KNOWN_OPTIONS: &[(&str, &str)] = &[
    ("cpu_device_count", "int64"),
    ("asynchronous", "bool"),
    ("process_id", "int64"),
    ("num_nodes", "int64"),
    ("node_id", "int64"),
    ("platform_name", "string"),
    ("allocator", "string"),
    ("memory_fraction", "float"),
    ("preallocate", "bool"),
    ("visible_devices", "int64 list"),
    ("collective_memory_size", "int64"),
    ("enable_mock_nccl", "bool"),
    ("mock_gpu_topology", "string"),
    ("should_stage_host_to_device_transfers", "bool"),
    ("abort_collectives_on_failure", "bool"),
    ("use_tfrt_gpu_client", "bool"),
    ("partition_index", "int64"),
];

impl ClientOptions {
    /// No options: the plugin's defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) one option.
    pub fn set(mut self, name: impl Into<String>, value: impl Into<Value>) -> Self {
        let name = name.into();
        let value = value.into();
        self.options.retain(|(n, _)| *n != name);
        self.options.push((name, value));
        self
    }

    /// Adds (or replaces) one option written as text, `NAME=VALUE`: `true`/`false` a bool, an
    /// integer an int64, anything else a string (what `pjrt run --client-option` and the C
    /// API's `pjrt_options.client_options` take).
    ///
    /// ```
    /// use pjrt_client::{ClientOptions, Value};
    /// let options = ClientOptions::new().set_text("asynchronous=false")?.set_text("cpu_device_count=2")?;
    /// assert_eq!(options.options()[0], ("asynchronous".to_owned(), Value::Bool(false)));
    /// assert_eq!(options.options()[1], ("cpu_device_count".to_owned(), Value::Int64(2)));
    /// assert!(ClientOptions::new().set_text("asynchronous").is_err(), "NAME=VALUE");
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn set_text(self, spec: &str) -> Result<Self> {
        let (name, value) = spec
            .split_once('=')
            .filter(|(name, _)| !name.is_empty())
            .ok_or_else(|| Error::invalid(format!("a client option is NAME=VALUE, got `{spec}`")))?;
        Ok(match (value, value.parse::<i64>()) {
            ("true" | "false", _) => self.set(name, value == "true"),
            (_, Ok(number)) => self.set(name, number),
            _ => self.set(name, value),
        })
    }

    /// Shorthand for the CPU plugins' `cpu_device_count`.
    pub fn cpu_device_count(self, count: i64) -> Self {
        self.set("cpu_device_count", count)
    }

    /// Adds a provider of built-in custom-call handlers for this client (see
    /// [`crate::ffi::BuiltinProvider`]; not a create option, the plugin never sees it): its
    /// [`Client::compile`] and [`Client::deserialize_and_load`] consult it before the process's
    /// providers ([`crate::ffi::add_provider`]). A provider of the same name replaces the one
    /// added before.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use pjrt_client::ffi::BuiltinProvider;
    /// use pjrt_client::ClientOptions;
    /// struct Nothing;
    /// impl BuiltinProvider for Nothing {
    ///     fn name(&self) -> &str { "nothing" }
    ///     fn provides(&self, _: &str) -> bool { false }
    ///     fn prepare(&self, _: &pjrt_client::Client, _: &[u8]) -> pjrt_client::Result<()> { Ok(()) }
    /// }
    /// let options = ClientOptions::new().builtin_provider(Arc::new(Nothing));
    /// assert_eq!(options.builtin_provider_names(), ["nothing"]);
    /// assert!(options.options().is_empty()); // no create option
    /// ```
    pub fn builtin_provider(mut self, provider: Arc<dyn BuiltinProvider>) -> Self {
        self.providers.0.retain(|p| p.name() != provider.name());
        self.providers.0.push(provider);
        self
    }

    /// The names of the providers added with [`ClientOptions::builtin_provider`], in order.
    pub fn builtin_provider_names(&self) -> Vec<&str> {
        self.providers.0.iter().map(|p| p.name()).collect()
    }

    /// The options set so far.
    pub fn options(&self) -> &[(String, Value)] {
        &self.options
    }

    fn has(&self, name: &str) -> bool {
        self.options.iter().any(|(n, _)| n == name)
    }

    fn validate(&self) -> Result<()> {
        for (name, value) in &self.options {
            if let Value::Unknown(t) = value {
                return Err(Error::invalid(format!("client option `{name}` has an unknown value type {t}")));
            }
            if let Some((_, expected)) = KNOWN_OPTIONS.iter().find(|(n, _)| n == name) {
                if value.type_name() != *expected {
                    return Err(Error::invalid(format!(
                        "client option `{name}` must be of type {expected}, got a {} ({value:?})",
                        value.type_name()
                    )));
                }
            }
            if name == "cpu_device_count" {
                if let Value::Int64(n) = value {
                    if !(1..=4096).contains(n) {
                        return Err(Error::invalid(format!("cpu_device_count must be between 1 and 4096, got {n}")));
                    }
                }
            }
        }
        gpu_options::validate(&self.options)
    }
}

/// A PJRT client: devices, memories, compilation and transfers of one plugin.
///
/// Cheap to clone (an `Arc`). Every buffer, executable and event made from a client holds a
/// clone, so the client is destroyed only after the last of them.
///
/// `Send + Sync`: PJRT clients are thread-safe; share one client across threads.
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<ClientInner>,
}

pub(crate) struct ClientInner {
    pub(crate) plugin: Plugin,
    pub(crate) raw: NonNull<sys::PJRT_Client>,
    platform_name: String,
    platform_version: String,
    process_index: i32,
    devices: Vec<NonNull<sys::PJRT_Device>>,
    addressable_devices: Vec<NonNull<sys::PJRT_Device>>,
    /// The key-value callbacks' state and store. A field, so it is dropped only after `drop`
    /// below has destroyed the client: the plugin may call the callbacks until then.
    kv: Option<KvCallbacks>,
    /// What the plugin may still use until the client is destroyed and nothing tells when it
    /// stops sooner (e.g. the context and callback `user_arg`s of an execution whose launch
    /// failed after some devices may have started; never the user's closures, which may own
    /// the client). Dropped after `PJRT_Client_Destroy`, like `kv`.
    kept_until_destroyed: Mutex<Vec<Box<dyn Any + Send>>>,
    /// The providers of built-in handlers of the client's options.
    providers: Vec<Arc<dyn BuiltinProvider>>,
}

// SAFETY: PJRT clients are thread-safe objects (XLA's PjRtClient contract: every method may be
// called concurrently); the cached fields are immutable after construction; the key-value store is
// `Send + Sync` and its callbacks' state holds only atomics besides it; the providers are
// `Send + Sync` (the trait's bounds).
unsafe impl Send for ClientInner {}
// SAFETY: as above.
unsafe impl Sync for ClientInner {}

impl Drop for ClientInner {
    fn drop(&mut self) {
        // The last client handle dropped inside a plugin callback (say, by a closure that owned
        // it): destroy it on the release thread, never on the plugin's own thread.
        release_if_in_callback!(ClientInner {
            plugin: self.plugin.clone(),
            raw: self.raw,
            platform_name: std::mem::take(&mut self.platform_name),
            platform_version: std::mem::take(&mut self.platform_version),
            process_index: self.process_index,
            devices: std::mem::take(&mut self.devices),
            addressable_devices: std::mem::take(&mut self.addressable_devices),
            kv: self.kv.take(),
            kept_until_destroyed: std::mem::take(&mut self.kept_until_destroyed),
            providers: std::mem::take(&mut self.providers),
        });
        let mut args = sys::PJRT_Client_Destroy_Args::new();
        args.client = self.raw.as_ptr();
        // Nothing else refers to the client any more (every child holds an Arc to us). A failure
        // here cannot be reported from Drop; it would only mean the plugin leaked.
        let _ = pjrt_call!(self.plugin.api(), PJRT_Client_Destroy, &mut args);
    }
}

fn non_null_devices(
    ptr: *const *mut sys::PJRT_Device,
    len: usize,
    function: &'static str,
) -> Result<Vec<NonNull<sys::PJRT_Device>>> {
    // SAFETY: the plugin returned `len` device pointers owned by the client.
    let devices = unsafe { checked_slice(ptr, len, function, "devices") }?;
    Ok(devices.iter().filter_map(|d| NonNull::new(*d)).collect())
}

impl Client {
    /// Creates a client with `options`. For a key-value store or a multi-process client, see
    /// [`Client::builder`].
    ///
    /// ```
    /// use pjrt_client::{Client, ClientOptions, Plugin};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// // The CPU plugins make one device unless asked for more.
    /// let client = Client::new(&plugin, &ClientOptions::new().cpu_device_count(2))?;
    /// assert_eq!(client.platform_name(), "cpu");
    /// assert_eq!(client.addressable_devices().len(), 2);
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn new(plugin: &Plugin, options: &ClientOptions) -> Result<Client> {
        options.validate()?;
        Self::create(plugin, options, None)
    }

    /// A builder for clients with a key-value store and a place in a multi-process job.
    ///
    /// ```
    /// use pjrt_client::{Client, ClientOptions, InMemoryStore, Plugin};
    ///
    /// # fn main() -> pjrt_client::Result<()> {
    /// let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// // Process 0 of a 2-process job; the processes share the store (here an in-process one; on
    /// // several hosts `pjrt_etcd::EtcdStore` or your own `KeyValueStore`).
    /// let store = InMemoryStore::new();
    /// let client = Client::builder(&plugin)
    ///     .options(ClientOptions::new().cpu_device_count(2))
    ///     .kv_store(store.clone())
    ///     .process(0, 2)
    ///     .build()?;
    /// assert_eq!(client.process_index(), 0);
    /// assert_eq!(client.addressable_devices().len(), 2);
    /// # Ok(()) }
    /// ```
    pub fn builder(plugin: &Plugin) -> ClientBuilder<'_> {
        ClientBuilder { plugin, options: ClientOptions::new(), kv_store: None, process: None }
    }

    /// Calls `PJRT_Client_Create` (options already validated) and reads the client's fixed facts.
    fn create(plugin: &Plugin, options: &ClientOptions, kv: Option<KvCallbacks>) -> Result<Client> {
        let _span = span!(INFO, "create_client");
        let raw_options = RawNamedValues::new(&options.options);
        let api = plugin.api();
        let mut args = sys::PJRT_Client_Create_Args::new();
        args.create_options = raw_options.as_ptr();
        args.num_options = raw_options.len();
        if let Some(kv) = &kv {
            kv.install(&mut args);
        }
        // On failure `kv` is dropped on return: the plugin made no client that could call it.
        pjrt_call!(api, PJRT_Client_Create, &mut args)?;
        let raw = NonNull::new(args.client)
            .ok_or_else(|| Error::invalid("PJRT_Client_Create succeeded but returned no client"))?;
        // Build the inner value first so the client is destroyed if a query below fails.
        let mut inner = ClientInner {
            plugin: plugin.clone(),
            raw,
            platform_name: String::new(),
            platform_version: String::new(),
            process_index: 0,
            devices: Vec::new(),
            addressable_devices: Vec::new(),
            kv,
            kept_until_destroyed: Mutex::new(Vec::new()),
            providers: options.providers.0.clone(),
        };
        let mut name = sys::PJRT_Client_PlatformName_Args::new();
        name.client = raw.as_ptr();
        pjrt_call!(api, PJRT_Client_PlatformName, &mut name)?;
        // SAFETY: the string is owned by the client and valid while it lives.
        inner.platform_name = unsafe {
            checked_string(name.platform_name, name.platform_name_size, "PJRT_Client_PlatformName", "the name")
        }?;
        let mut version = sys::PJRT_Client_PlatformVersion_Args::new();
        version.client = raw.as_ptr();
        pjrt_call!(api, PJRT_Client_PlatformVersion, &mut version)?;
        // SAFETY: as above.
        inner.platform_version = unsafe {
            checked_string(
                version.platform_version,
                version.platform_version_size,
                "PJRT_Client_PlatformVersion",
                "the version",
            )
        }?;
        let mut process = sys::PJRT_Client_ProcessIndex_Args::new();
        process.client = raw.as_ptr();
        pjrt_call!(api, PJRT_Client_ProcessIndex, &mut process)?;
        inner.process_index = process.process_index;
        let mut devices = sys::PJRT_Client_Devices_Args::new();
        devices.client = raw.as_ptr();
        pjrt_call!(api, PJRT_Client_Devices, &mut devices)?;
        inner.devices = non_null_devices(devices.devices, devices.num_devices, "PJRT_Client_Devices")?;
        let mut addressable = sys::PJRT_Client_AddressableDevices_Args::new();
        addressable.client = raw.as_ptr();
        pjrt_call!(api, PJRT_Client_AddressableDevices, &mut addressable)?;
        inner.addressable_devices = non_null_devices(
            addressable.addressable_devices,
            addressable.num_addressable_devices,
            "PJRT_Client_AddressableDevices",
        )?;
        Ok(Client { inner: Arc::new(inner) })
    }

    /// The plugin this client belongs to.
    pub fn plugin(&self) -> &Plugin {
        &self.inner.plugin
    }

    /// The platform name, e.g. `"cpu"`, `"cuda"`, `"tpu"`.
    pub fn platform_name(&self) -> &str {
        &self.inner.platform_name
    }

    /// The providers of built-in handlers of the options this client was made with.
    pub(crate) fn builtin_providers(&self) -> &[Arc<dyn BuiltinProvider>] {
        &self.inner.providers
    }

    /// The platform version string, as the plugin reports it (`PJRT_Client_PlatformVersion`).
    ///
    /// XLA's C API client prefixes it with `"PJRT C API\n"` (see
    /// [`Client::xla_platform_version`]); this does not, because the prefix marks C++ clients that
    /// wrap the C API, which every client of this crate is, and because artifacts compare it with
    /// [`crate::Topology::platform_version`], which XLA leaves unprefixed.
    pub fn platform_version(&self) -> &str {
        &self.inner.platform_version
    }

    /// The platform version the way XLA's C API client reports it: `"PJRT C API\n"` followed by
    /// [`Client::platform_version`]. JAX looks for `"PJRT C API"` in it to tell a plugin client.
    ///
    /// ```
    /// # use pjrt_client::{Client, ClientOptions};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// let client = Client::new(&plugin, &ClientOptions::new())?;
    /// let version = client.xla_platform_version();
    /// assert!(version.starts_with("PJRT C API\n"));
    /// assert!(version.ends_with(client.platform_version()));
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn xla_platform_version(&self) -> String {
        format!("PJRT C API\n{}", self.inner.platform_version)
    }

    /// XLA's id of the platform (`PjRtPlatformId`): the FarmHash `Fingerprint64` of
    /// [`Client::platform_name`], as XLA's C API client computes it, so it equals XLA's
    /// `CpuId()`, `CudaId()`, `RocmId()` and `TpuId()` for those platforms.
    ///
    /// ```
    /// # use pjrt_client::{Client, ClientOptions};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// let client = Client::new(&plugin, &ClientOptions::new())?;
    /// assert_eq!(client.platform_name(), "cpu");
    /// assert_eq!(client.platform_id(), 0xf88d_a91c_978c_8500); // xla::CpuId()
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn platform_id(&self) -> u64 {
        crate::fingerprint::fingerprint64(self.inner.platform_name.as_bytes())
    }

    /// This process's index in a multi-process setup (0 otherwise).
    pub fn process_index(&self) -> i32 {
        self.inner.process_index
    }

    /// Every device of every process.
    ///
    /// ```
    /// # use pjrt_client::{Client, ClientOptions};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// let client = Client::new(&plugin, &ClientOptions::new().cpu_device_count(2))?;
    /// for device in client.devices() {
    ///     let memories = device.memories()?;
    ///     let kinds: Vec<String> = memories.iter().map(|m| m.kind()).collect::<Result<_, _>>()?;
    ///     println!("{} ({}): memories {kinds:?}", device.to_string()?, device.kind()?);
    ///     assert!(device.is_addressable()?);
    ///     // Uploads without a memory go to the default one ("device" on CPU).
    ///     assert!(memories.contains(&device.default_memory()?));
    /// }
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn devices(&self) -> Vec<Device<'_>> {
        self.inner.devices.iter().map(|raw| Device::new(self, *raw)).collect()
    }

    /// The devices this process can use.
    pub fn addressable_devices(&self) -> Vec<Device<'_>> {
        self.inner.addressable_devices.iter().map(|raw| Device::new(self, *raw)).collect()
    }

    /// Looks a device up by its global id.
    pub fn lookup_device(&self, id: i32) -> Result<Device<'_>> {
        let mut args = sys::PJRT_Client_LookupDevice_Args::new();
        args.client = self.raw();
        args.id = id;
        pjrt_call!(self.api(), PJRT_Client_LookupDevice, &mut args)?;
        NonNull::new(args.device)
            .map(|raw| Device::new(self, raw))
            .ok_or_else(|| Error::invalid(format!("no device with id {id}")))
    }

    /// Looks an addressable device up by its local hardware id.
    pub fn lookup_addressable_device(&self, local_hardware_id: i32) -> Result<Device<'_>> {
        let mut args = sys::PJRT_Client_LookupAddressableDevice_Args::new();
        args.client = self.raw();
        args.local_hardware_id = local_hardware_id;
        pjrt_call!(self.api(), PJRT_Client_LookupAddressableDevice, &mut args)?;
        NonNull::new(args.addressable_device)
            .map(|raw| Device::new(self, raw))
            .ok_or_else(|| Error::invalid(format!("no addressable device with local hardware id {local_hardware_id}")))
    }

    /// Every memory this process can address. Empty when the plugin answers UNIMPLEMENTED (a
    /// plugin without memories), as XLA's C API client reads that answer.
    ///
    /// ```
    /// # use pjrt_client::{Client, ClientOptions};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// let client = Client::new(&plugin, &ClientOptions::new())?;
    /// let kinds: Vec<String> = client.addressable_memories()?.iter().map(|m| m.kind()).collect::<Result<_, _>>()?;
    /// assert!(kinds.iter().any(|k| k == "device"));
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn addressable_memories(&self) -> Result<Vec<Memory<'_>>> {
        let mut args = sys::PJRT_Client_AddressableMemories_Args::new();
        args.client = self.raw();
        match pjrt_call!(self.api(), PJRT_Client_AddressableMemories, &mut args) {
            Err(e) if e.is_unimplemented() => return Ok(Vec::new()),
            other => other?,
        }
        // SAFETY: memories are owned by the client and live as long as it does.
        let raw = unsafe {
            checked_slice(
                args.addressable_memories,
                args.num_addressable_memories,
                "PJRT_Client_AddressableMemories",
                "memories",
            )
        }?;
        Ok(raw.iter().filter_map(|m| NonNull::new(*m)).map(|m| Memory::new(self, m)).collect())
    }

    /// The plugin's default assignment of `replicas × partitions` to device ids:
    /// `result[replica][partition]`.
    pub fn default_device_assignment(&self, replicas: usize, partitions: usize) -> Result<Vec<Vec<i32>>> {
        if replicas == 0 || partitions == 0 {
            return Err(Error::invalid("a device assignment needs at least 1 replica and 1 partition"));
        }
        let count = replicas
            .checked_mul(partitions)
            .filter(|c| *c <= i32::MAX as usize)
            .ok_or_else(|| Error::invalid("replicas × partitions is too large"))?;
        let mut out = vec![0i32; count];
        let mut args = sys::PJRT_Client_DefaultDeviceAssignment_Args::new();
        args.client = self.raw();
        args.num_replicas = replicas as i32;
        args.num_partitions = partitions as i32;
        args.default_assignment_size = count;
        args.default_assignment = out.as_mut_ptr();
        pjrt_call!(self.api(), PJRT_Client_DefaultDeviceAssignment, &mut args)?;
        Ok(out.chunks(partitions).map(|c| c.to_vec()).collect())
    }

    /// The key-value store callbacks this client was created with (see
    /// [`ClientBuilder::kv_store`]): the store, and how often the plugin called it.
    pub fn kv_callbacks(&self) -> Option<&KvCallbacks> {
        self.inner.kv.as_ref()
    }

    /// The raw handle, for use with [`crate::sys`]. Do not destroy it.
    pub fn as_raw(&self) -> *mut sys::PJRT_Client {
        self.raw()
    }

    pub(crate) fn raw(&self) -> *mut sys::PJRT_Client {
        self.inner.raw.as_ptr()
    }

    pub(crate) fn api(&self) -> &crate::call::Api {
        self.inner.plugin.api()
    }

    pub(crate) fn first_addressable_device(&self) -> Option<*mut sys::PJRT_Device> {
        self.inner.addressable_devices.first().map(|d| d.as_ptr())
    }

    pub(crate) fn same_client(&self, other: &Client) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// A handle that does not keep the client alive (for what the client itself may own).
    pub(crate) fn downgrade(&self) -> WeakClient {
        WeakClient(Arc::downgrade(&self.inner))
    }

    /// Keeps `value` until the client is destroyed (after `PJRT_Client_Destroy`): for what the
    /// plugin may still use when nothing says when it stops.
    pub(crate) fn keep_until_destroyed(&self, value: impl Any + Send) {
        self.inner.kept_until_destroyed.lock().unwrap_or_else(|p| p.into_inner()).push(Box::new(value));
    }
}

/// A [`Client`] that does not keep it alive ([`Client::downgrade`]).
#[derive(Clone)]
pub(crate) struct WeakClient(std::sync::Weak<ClientInner>);

impl WeakClient {
    /// The client, if it still exists.
    pub(crate) fn upgrade(&self) -> Option<Client> {
        self.0.upgrade().map(|inner| Client { inner })
    }
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("platform", &self.inner.platform_name)
            .field("devices", &self.inner.devices.len())
            .finish()
    }
}

/// Builds a [`Client`]: options, a [`KeyValueStore`], and this process's place in a
/// multi-process job. Made by [`Client::builder`].
///
/// The client owns the store and the state of its C callbacks for its whole life: both are freed
/// only after `PJRT_Client_Destroy`.
pub struct ClientBuilder<'a> {
    plugin: &'a Plugin,
    options: ClientOptions,
    kv_store: Option<Arc<dyn KeyValueStore>>,
    process: Option<(i64, i64)>,
}

impl ClientBuilder<'_> {
    /// Replaces the create options (see [`ClientOptions`]).
    pub fn options(mut self, options: ClientOptions) -> Self {
        self.options = options;
        self
    }

    /// Adds (or replaces) one create option.
    pub fn option(mut self, name: impl Into<String>, value: impl Into<Value>) -> Self {
        self.options = self.options.set(name, value);
        self
    }

    /// The key-value store the plugin's `kv_get` / `kv_try_get` / `kv_put` callbacks use. Pass a
    /// store, or an `Arc<dyn KeyValueStore>` (an `Arc` of a store is a store). Several clients may
    /// share one store: [`crate::InMemoryStore`] is a cloneable handle.
    pub fn kv_store(mut self, store: impl KeyValueStore) -> Self {
        self.kv_store = Some(Arc::new(store));
        self
    }

    /// This process's index `id` among `count` processes (`0 <= id < count`).
    ///
    /// The option names differ between plugins, and PJRT says nothing about the platform before
    /// a client exists, so [`build`](Self::build) asks the plugin:
    /// - first with XLA's CPU option `process_id = id` (int64). The 0.115 CPU plugin takes it
    ///   (its device ids then start at `id * 2048`); the 0.106 CPU plugin ignores it (as it
    ///   ignores every unknown name), so there every client is process 0. No CPU plugin has an
    ///   option for `count`: it is only checked here.
    /// - if the plugin rejects `process_id` as an unknown option (`INVALID_ARGUMENT` naming it,
    ///   as XLA's GPU plugins do, before creating anything), again with XLA's GPU options
    ///   `node_id = id` and `num_nodes = count` (int64).
    ///
    /// To choose the names yourself, set them with [`option`](Self::option) instead; setting both
    /// is an error. Multi-process GPU clients need a [`kv_store`](Self::kv_store) too.
    pub fn process(mut self, id: i64, count: i64) -> Self {
        self.process = Some((id, count));
        self
    }

    /// Creates the client.
    pub fn build(self) -> Result<Client> {
        let ClientBuilder { plugin, options, kv_store, process } = self;
        options.validate()?;
        let callbacks = || kv_store.as_ref().map(|store| KvCallbacks::new(Arc::clone(store)));
        let Some((id, count)) = process else {
            return Client::create(plugin, &options, callbacks());
        };
        if count < 1 || !(0..count).contains(&id) {
            return Err(Error::invalid(format!("process({id}, {count}): need 0 <= id < count")));
        }
        if let Some(name) = ["process_id", "node_id", "num_nodes"].into_iter().find(|n| options.has(n)) {
            return Err(Error::invalid(format!(
                "both process({id}, {count}) and the client option `{name}` are set; use one of them"
            )));
        }
        let cpu = options.clone().set("process_id", id);
        match Client::create(plugin, &cpu, callbacks()) {
            Err(Error::Pjrt { code: ErrorCode::InvalidArgument, message, function, .. })
                if message.contains("process_id") =>
            {
                let gpu = options.set("node_id", id).set("num_nodes", count);
                Client::create(plugin, &gpu, callbacks()).map_err(|second| match second {
                    Error::Pjrt { code: ErrorCode::InvalidArgument, message: second, .. } => Error::invalid(format!(
                        "the plugin takes neither `process_id` ({function}: {message}) nor `node_id`/`num_nodes` \
                         ({second}); set the options it takes with ClientBuilder::option"
                    )),
                    other => other,
                })
            }
            other => other,
        }
    }
}

impl fmt::Debug for ClientBuilder<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("plugin", &self.plugin.path())
            .field("options", &self.options)
            .field("kv_store", &self.kv_store.is_some())
            .field("process", &self.process)
            .finish()
    }
}
