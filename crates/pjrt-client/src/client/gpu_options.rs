//! The create options of XLA's GPU plugins (CUDA and ROCm), typed and checked.
//!
//! XLA's GPU plugin reads these names in `PJRT_Client_Create` (`xla/pjrt/c/pjrt_c_api_gpu_internal.cc`)
//! and refuses any other name ("Unexpected option name passed to PJRT_Client_Create"). The
//! `jax-cuda13-pjrt` 0.11.2 plugin (API 0.115) was probed on a machine without a GPU: every name
//! below with its right type gets as far as looking for devices (FAILED_PRECONDITION "No visible
//! GPU devices."), a wrong type is INVALID_ARGUMENT, an unknown allocator UNIMPLEMENTED. It checks
//! no ranges: a `memory_fraction` of 2 or -1, a `node_id` of 5 among 1 node, a device id of -1 all
//! pass its checks and would reach the allocator or the device setup on a machine with GPUs. Older
//! GPU plugins read options with `std::get` without checking the type first (the way the 0.106
//! CPU plugin aborts on a string `cpu_device_count`), so the types are checked here for every
//! plugin, and the ranges too.

use std::collections::HashSet;

use crate::call::named_value::Value;
use crate::client::ClientOptions;
use crate::error::{Error, Result};

/// The allocator an XLA GPU client uses for device memory (create option `allocator`).
///
/// ```
/// use pjrt_client::{ClientOptions, GpuAllocator};
///
/// let options = ClientOptions::new().allocator(GpuAllocator::CudaAsync);
/// assert_eq!(options.options()[0], ("allocator".to_string(), "cuda_async".into()));
/// assert_eq!(GpuAllocator::from_name("bfc"), Some(GpuAllocator::Bfc));
/// assert_eq!(GpuAllocator::from_name("malloc"), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GpuAllocator {
    /// `"default"`: the plugin's choice (XLA picks BFC).
    Default,
    /// `"platform"`: the platform's own allocation for every buffer (`cuMemAlloc`), no pool;
    /// slow, but frees memory as soon as a buffer goes (JAX's `XLA_PYTHON_CLIENT_ALLOCATOR=platform`).
    Platform,
    /// `"bfc"`: XLA's best-fit-with-coalescing pool, sized by
    /// [`memory_fraction`](ClientOptions::memory_fraction) and
    /// [`preallocate`](ClientOptions::preallocate).
    Bfc,
    /// `"cuda_async"`: CUDA's stream-ordered allocator (`cudaMallocAsync`).
    CudaAsync,
    /// `"vmm"`: an allocator on CUDA's virtual memory management API (newer plugins only; the
    /// 0.11.2 plugin names it, older ones answer UNIMPLEMENTED).
    Vmm,
    /// `"address"`: named by newer plugins (0.11.2 lists it); what it does is the plugin's.
    Address,
}

impl GpuAllocator {
    /// Every allocator this crate knows, in the order the 0.11.2 plugin lists them.
    pub const ALL: [GpuAllocator; 6] = [
        GpuAllocator::Default,
        GpuAllocator::Platform,
        GpuAllocator::Bfc,
        GpuAllocator::CudaAsync,
        GpuAllocator::Vmm,
        GpuAllocator::Address,
    ];

    /// The name the plugin reads.
    ///
    /// ```
    /// assert_eq!(pjrt_client::GpuAllocator::CudaAsync.name(), "cuda_async");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            GpuAllocator::Default => "default",
            GpuAllocator::Platform => "platform",
            GpuAllocator::Bfc => "bfc",
            GpuAllocator::CudaAsync => "cuda_async",
            GpuAllocator::Vmm => "vmm",
            GpuAllocator::Address => "address",
        }
    }

    /// The allocator with this name, if it is one of [`GpuAllocator::ALL`].
    ///
    /// ```
    /// use pjrt_client::GpuAllocator;
    /// assert_eq!(GpuAllocator::from_name("platform"), Some(GpuAllocator::Platform));
    /// assert_eq!(GpuAllocator::from_name("BFC"), None); // names are exact
    /// ```
    pub fn from_name(name: &str) -> Option<GpuAllocator> {
        GpuAllocator::ALL.into_iter().find(|a| a.name() == name)
    }
}

/// The GPU plugins' create options. Their values are checked when the client is created
/// ([`Client::new`](crate::Client::new), [`ClientBuilder::build`](crate::ClientBuilder::build)),
/// whichever way they were set ([`ClientOptions::set`] too).
impl ClientOptions {
    /// GPU: the share of each GPU's memory the client's BFC pool may take, in `(0, 1]` (XLA's
    /// default is 0.75, as JAX's `XLA_PYTHON_CLIENT_MEM_FRACTION`). Create option
    /// `memory_fraction` (float).
    ///
    /// ```
    /// use pjrt_client::{Client, ClientOptions, Error};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// // Checked before the plugin sees it, on any plugin.
    /// let too_much = ClientOptions::new().memory_fraction(1.5);
    /// assert!(matches!(Client::new(&plugin, &too_much), Err(Error::InvalidArgument(_))));
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn memory_fraction(self, fraction: f32) -> Self {
        self.set("memory_fraction", fraction)
    }

    /// GPU: whether the BFC pool takes its whole [`memory_fraction`](Self::memory_fraction) when
    /// the client is created (`true`, JAX's default) or grows on demand. Create option
    /// `preallocate` (bool).
    ///
    /// ```
    /// use pjrt_client::{ClientOptions, Value};
    /// let options = ClientOptions::new().preallocate(false).memory_fraction(0.5);
    /// assert_eq!(options.options()[0], ("preallocate".to_string(), Value::Bool(false)));
    /// ```
    pub fn preallocate(self, preallocate: bool) -> Self {
        self.set("preallocate", preallocate)
    }

    /// GPU: the device memory allocator ([`GpuAllocator`]). Create option `allocator` (string).
    ///
    /// ```
    /// use pjrt_client::{Client, ClientOptions, Error, GpuAllocator};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// let options = ClientOptions::new().allocator(GpuAllocator::Platform);
    /// assert_eq!(options.options()[0].1, "platform".into());
    /// // A name no GPU plugin knows is refused here, whichever way it was set.
    /// let unknown = ClientOptions::new().set("allocator", "malloc");
    /// assert!(matches!(Client::new(&plugin, &unknown), Err(Error::InvalidArgument(_))));
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn allocator(self, allocator: GpuAllocator) -> Self {
        self.set("allocator", allocator.name())
    }

    /// GPU: bytes of device memory set aside for collectives (NCCL), outside the BFC pool; `>= 0`.
    /// Create option `collective_memory_size` (int64).
    ///
    /// ```
    /// let options = pjrt_client::ClientOptions::new().collective_memory_size(256 << 20);
    /// assert_eq!(options.options()[0].1, pjrt_client::Value::Int64(268_435_456));
    /// ```
    pub fn collective_memory_size(self, bytes: i64) -> Self {
        self.set("collective_memory_size", bytes)
    }

    /// GPU: only these local GPUs (ordinals, as `CUDA_VISIBLE_DEVICES` counts them) become
    /// devices of the client; non-empty, each `>= 0`, no repeats. Create option `visible_devices`
    /// (int64 list).
    ///
    /// ```
    /// use pjrt_client::{Client, ClientOptions, Error};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// let options = ClientOptions::new().visible_devices([0, 2]);
    /// assert_eq!(options.options()[0].1, vec![0i64, 2].into());
    /// let repeated = ClientOptions::new().visible_devices([1, 1]);
    /// assert!(matches!(Client::new(&plugin, &repeated), Err(Error::InvalidArgument(_))));
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn visible_devices(self, ordinals: impl IntoIterator<Item = i64>) -> Self {
        self.set("visible_devices", ordinals.into_iter().collect::<Vec<i64>>())
    }

    /// GPU: this process's index among [`num_nodes`](Self::num_nodes) processes (hosts) of one
    /// job; `0 <= node_id < num_nodes` (`num_nodes` defaults to 1). Create option `node_id`
    /// (int64). [`ClientBuilder::process`](crate::ClientBuilder::process) sets both for you,
    /// on CPU and GPU plugins alike; a multi-process client needs a key-value store.
    ///
    /// ```
    /// use pjrt_client::{Client, ClientOptions, Error};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// let options = ClientOptions::new().node_id(1).num_nodes(2);
    /// assert_eq!(options.options().len(), 2);
    /// // Node 2 of 2 does not exist: refused before the plugin.
    /// let past_the_end = ClientOptions::new().node_id(2).num_nodes(2);
    /// assert!(matches!(Client::new(&plugin, &past_the_end), Err(Error::InvalidArgument(_))));
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn node_id(self, id: i64) -> Self {
        self.set("node_id", id)
    }

    /// GPU: how many processes (hosts) the job has, `>= 1`. Create option `num_nodes` (int64).
    /// See [`node_id`](Self::node_id).
    ///
    /// ```
    /// assert_eq!(pjrt_client::ClientOptions::new().num_nodes(4).options()[0].0, "num_nodes");
    /// ```
    pub fn num_nodes(self, count: i64) -> Self {
        self.set("num_nodes", count)
    }

    /// GPU: which platform of the plugin to use, as XLA names them (`"cuda"`, `"rocm"`; the
    /// plugin answers NOT_FOUND naming the ones it has). Create option `platform_name` (string).
    ///
    /// ```
    /// assert_eq!(pjrt_client::ClientOptions::new().platform_name("cuda").options()[0].1, "cuda".into());
    /// ```
    pub fn platform_name(self, name: impl Into<String>) -> Self {
        self.set("platform_name", name.into())
    }

    /// GPU: whether host-to-device copies go through a staging buffer in pinned host memory
    /// (`true`, the plugin's default) or straight from the caller's memory. Create option
    /// `should_stage_host_to_device_transfers` (bool).
    ///
    /// ```
    /// let options = pjrt_client::ClientOptions::new().stage_host_to_device_transfers(false);
    /// assert_eq!(options.options()[0].0, "should_stage_host_to_device_transfers");
    /// ```
    pub fn stage_host_to_device_transfers(self, stage: bool) -> Self {
        self.set("should_stage_host_to_device_transfers", stage)
    }

    /// GPU: whether a failed collective aborts the other collectives in flight, so peers fail
    /// instead of waiting (default `false`). Create option `abort_collectives_on_failure` (bool).
    ///
    /// ```
    /// let options = pjrt_client::ClientOptions::new().abort_collectives_on_failure(true);
    /// assert_eq!(options.options()[0].1, true.into());
    /// ```
    pub fn abort_collectives_on_failure(self, abort: bool) -> Self {
        self.set("abort_collectives_on_failure", abort)
    }

    /// GPU: NCCL replaced by a mock that does no communication, so a single process can compile
    /// and run programs laid out for [`mock_gpu_topology`](Self::mock_gpu_topology) (for
    /// testing; results of collectives are not computed). Create option `enable_mock_nccl` (bool).
    ///
    /// ```
    /// let options = pjrt_client::ClientOptions::new().enable_mock_nccl(true).mock_gpu_topology(1, 2, 8);
    /// assert_eq!(options.options()[1].1, "1x2x8".into());
    /// ```
    pub fn enable_mock_nccl(self, enable: bool) -> Self {
        self.set("enable_mock_nccl", enable)
    }

    /// GPU: the topology the mock NCCL pretends to have: `partitions x hosts x devices per host`,
    /// each `>= 1`. The plugin checks it against `num_nodes` and the local devices. Create option
    /// `mock_gpu_topology` (string `"PxHxD"`; [`ClientOptions::set`] with a string is checked for
    /// that form).
    ///
    /// ```
    /// use pjrt_client::{Client, ClientOptions, Error};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// let malformed = ClientOptions::new().set("mock_gpu_topology", "2x8");
    /// assert!(matches!(Client::new(&plugin, &malformed), Err(Error::InvalidArgument(_))));
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn mock_gpu_topology(self, partitions: i64, hosts: i64, devices_per_host: i64) -> Self {
        self.set("mock_gpu_topology", format!("{partitions}x{hosts}x{devices_per_host}"))
    }

    /// GPU: this process's partition (slice) among several, for topologies split into partitions;
    /// `>= 0`. Create option `partition_index` (int64; plugins from 0.11 on).
    ///
    /// ```
    /// assert_eq!(pjrt_client::ClientOptions::new().partition_index(0).options()[0].0, "partition_index");
    /// ```
    pub fn partition_index(self, index: i64) -> Self {
        self.set("partition_index", index)
    }

    /// GPU: XLA's TFRT-based GPU client instead of the stream-executor one (default `false`).
    /// Create option `use_tfrt_gpu_client` (bool).
    ///
    /// ```
    /// assert_eq!(pjrt_client::ClientOptions::new().use_tfrt_gpu_client(false).options().len(), 1);
    /// ```
    pub fn use_tfrt_gpu_client(self, use_tfrt: bool) -> Self {
        self.set("use_tfrt_gpu_client", use_tfrt)
    }
}

/// The value checks of the GPU options (their types are checked against `KNOWN_OPTIONS` first).
pub(crate) fn validate(options: &[(String, Value)]) -> Result<()> {
    let get = |wanted: &str| options.iter().find(|(name, _)| name == wanted).map(|(_, value)| value);
    if let Some(Value::Float(fraction)) = get("memory_fraction") {
        // NaN fails this too.
        if !(*fraction > 0.0 && *fraction <= 1.0) {
            return Err(Error::invalid(format!("memory_fraction must be in (0, 1], got {fraction}")));
        }
    }
    if let Some(Value::String(name)) = get("allocator") {
        if GpuAllocator::from_name(name).is_none() {
            let known: Vec<&str> = GpuAllocator::ALL.iter().map(|a| a.name()).collect();
            return Err(Error::invalid(format!("allocator `{name}` is not one of {}", known.join(", "))));
        }
    }
    if let Some(Value::Int64(bytes)) = get("collective_memory_size") {
        if *bytes < 0 {
            return Err(Error::invalid(format!("collective_memory_size must be >= 0 bytes, got {bytes}")));
        }
    }
    if let Some(Value::Int64List(ordinals)) = get("visible_devices") {
        if ordinals.is_empty() {
            return Err(Error::invalid("visible_devices is empty: the client would have no device"));
        }
        let mut seen = HashSet::new();
        for ordinal in ordinals {
            // The plugin keeps them in a std::set<int>: an id past i32 would be truncated.
            if !(0..=i64::from(i32::MAX)).contains(ordinal) {
                return Err(Error::invalid(format!("visible_devices: device {ordinal} is not a GPU ordinal (>= 0)")));
            }
            if !seen.insert(ordinal) {
                return Err(Error::invalid(format!("visible_devices names device {ordinal} twice")));
            }
        }
    }
    // The plugin stores both in an `int`.
    let num_nodes = match get("num_nodes") {
        Some(Value::Int64(count)) => {
            if !(1..=i64::from(i32::MAX)).contains(count) {
                return Err(Error::invalid(format!("num_nodes must be >= 1, got {count}")));
            }
            *count
        }
        _ => 1,
    };
    if let Some(Value::Int64(id)) = get("node_id") {
        if !(0..num_nodes).contains(id) {
            return Err(Error::invalid(format!(
                "node_id must be in 0..num_nodes (num_nodes {num_nodes}{}), got {id}",
                if get("num_nodes").is_none() { ", the default" } else { "" }
            )));
        }
    }
    if let Some(Value::String(topology)) = get("mock_gpu_topology") {
        let sizes: Vec<Option<i64>> = topology.split('x').map(|n| n.parse().ok()).collect();
        if sizes.len() != 3 || sizes.iter().any(|n| !matches!(n, Some(1..=65536))) {
            return Err(Error::invalid(format!(
                "mock_gpu_topology must be `PARTITIONSxHOSTSxDEVICES` with each from 1 to 65536, got `{topology}`"
            )));
        }
    }
    if let Some(Value::Int64(index)) = get("partition_index") {
        if *index < 0 {
            return Err(Error::invalid(format!("partition_index must be >= 0, got {index}")));
        }
    }
    Ok(())
}
