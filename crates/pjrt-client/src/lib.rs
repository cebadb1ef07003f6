//! # pjrt-client
//!
//! A safe Rust client for the [PJRT C API](https://openxla.org/xla/pjrt): load any PJRT plugin
//! (CPU, CUDA, ROCm, TPU), compile StableHLO, move data between host and devices, and run
//! programs on one or many devices.
//!
//! ```
//! use pjrt_client::{Client, ClientOptions, CompileOptions, ExecuteOptions, Plugin, Program};
//!
//! # fn main() -> pjrt_client::Result<()> {
//! // Find a plugin; with none on the machine, install the default CPU plugin from PyPI.
//! let found = pjrt_plugins::resolve_or_install(None, |line| eprintln!("{line}"))?;
//! let plugin = Plugin::load(found.load_path())?;
//! let client = Client::new(&plugin, &ClientOptions::new())?;
//! let program = Program::mlir_text(r#"
//!   func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
//!     %0 = stablehlo.add %a, %b : tensor<4xf32>
//!     return %0 : tensor<4xf32>
//!   }"#)?;
//! let exe = client.compile(&program, &CompileOptions::new())?;
//! let a = client.upload(&[1f32, 2., 3., 4.], &[4])?;
//! let b = client.upload(&[10f32, 20., 30., 40.], &[4])?;
//! let out = exe.execute(&[&a, &b], &ExecuteOptions::new())?;
//! assert_eq!(out[0].to_vec::<f32>()?, [11., 22., 33., 44.]);
//! # Ok(()) }
//! ```
//!
//! ## Tutorials and guides
//! The repository's `examples/` folder holds numbered tutorials, each runnable with
//! `cargo run -p pjrt-examples --example NAME`: `01_inspect_plugin` (plugin, devices, memories),
//! `02_run_stablehlo` (compile and run a JAX-lowered training step), `03_multi_device`
//! (replicas, all-reduce, sharded inputs), `04_aot_compile_and_load` (compile ahead of time, load later),
//! `05_async_execution` (futures, overlapping transfers, events), `06_safetensors_weights` (weights),
//! `07_jax_exported_model` (a model exported from JAX). `docs/jax-guide.md` maps JAX concepts to this
//! API; `docs/multi-host.md` covers many devices, processes and hosts.
//!
//! ## The calls you use most
//! | to | call |
//! |---|---|
//! | upload | [`Client::upload`] (a typed slice), [`Client::upload_with`] (any [`HostSource`], with [`UploadOptions`]: see [`upload`]), [`LoadedExecutable::upload_sharded`] |
//! | execute | [`LoadedExecutable::execute`] / [`LoadedExecutable::execute_async`] (one device), [`LoadedExecutable::execute_sharded`] / [`LoadedExecutable::execute_sharded_async`] (one argument list per device), each with [`ExecuteOptions`] |
//! | download | [`Buffer::to_vec`], [`Buffer::to_host_array`], [`Buffer::copy_to_slice`], [`Buffer::copy_to_bytes`], [`Buffer::to_bytes`] / [`Buffer::to_bytes_async`] with [`DownloadOptions`], [`Buffer::raw_copy_request`]: see [`download`] |
//!
//! ## Layers
//! | level | where | what |
//! |---|---|---|
//! | raw | [`sys`] (the `pjrt-client-sys` crate) | our own `#[repr(C)]` declarations of the C API; no logic |
//! | checked | `call/` (internal) | one checked call path: the slot exists in the plugin's table and its version, args carry their `struct_size`, returned errors become [`Error::Pjrt`] and are freed; the panic and release boundaries |
//! | safe | a folder per object | `plugin/` [`Plugin`] (finding and installing plugins: the `pjrt-plugins` crate); `client/` [`Client`], [`Device`], [`Memory`], [`KeyValueStore`], the providers of built-in handlers; `event/` [`Event`], [`UserEvent`]; `buffer/` [`Buffer`], uploads and downloads, [`TransferManager`]; `executable/` [`LoadedExecutable`], [`Executable`]; `topology/` [`Topology`]; [`extensions`] one file per extension |
//!
//! Each module uses only the ones below it (`tests/client/layers.rs` checks the order). File formats
//! (`.npy`, safetensors, `jax.export`, AOT artifacts, the compile cache) are the `pjrt-formats`
//! crate; an etcd key-value store is `pjrt-etcd`. [`ElementType`], [`NativeType`] and
//! [`StableHloVersion`] are the `pjrt-types` crate's (at the bottom, no dependencies),
//! re-exported here.
//!
//! ## Features
//! - `tracing` (default): [`tracing`](https://docs.rs/tracing) spans around plugin loading,
//!   client creation, compiles, transfers and executions. Without it, no spans and no
//!   dependency.
//! - `ndarray`: buffers from and to [`ndarray`](https://docs.rs/ndarray) arrays
//!   (uploads from arrays and views through [`HostSource`], `HostArray::to_ndarray`).
//! - `plugins`: the `pjrt-plugins` crate (never its installer) finds `ptxas` and `libdevice`
//!   beside a CUDA plugin for [`Topology::for_gpu_target`], and its errors convert into
//!   `Error::Plugins`. Off by default; pjrt-formats and the `pjrt` command turn it on.
//! - `stablehlo` (default): programs through `pjrt-stablehlo`'s IR (pure Rust): a portable
//!   artifact newer than the plugin reads is written for the plugin's version when compiled
//!   ([`Client::compile`], [`Topology::compile`]), `Program::portable_artifact`,
//!   `Program::from_module`, `Plugin::portable_target`, and MLIR bytecode's signature and
//!   module attributes read. Without it such an artifact is refused
//!   ([`Error::ProgramVersion`]).
//!
//! The defaults hold neither an installer nor LAPACK: custom calls a program needs without
//! knowing it (JAX's LAPACK kernels) come from providers of built-in handlers installed from
//! above ([`ffi::BuiltinProvider`]; for LAPACK, `pjrt_lapack::register` of the crate
//! pjrt-lapack's `client` feature).
//!
//! ## Threads
//! Every public handle is `Send + Sync`: PJRT objects are thread-safe by contract, so one client
//! and one executable can serve many threads. [`Client`], [`Buffer`], [`LoadedExecutable`],
//! [`Event`], [`Topology`] and [`Executable`] own their PJRT object (destroyed on drop); children
//! hold an `Arc` to their client, so a client is destroyed only after its last buffer, executable
//! and event, whichever thread drops it. [`Device`] and [`Memory`] are views borrowed from a
//! client. [`HostTransfer`], [`PendingExecution`] and [`PendingShardedExecution`] own the memory a transfer or
//! execution writes to until it completes. Each `unsafe impl Send/Sync` carries its reasoning in
//! a `SAFETY` comment.
//!
//! ## Callbacks and the plugin's threads
//! Plugins call back (events completing, host send/receive, the key-value store) on their own
//! threads. Nothing that calls the plugin is destroyed there: a handle dropped inside a plugin
//! callback (say, the last [`Client`], owned by an `on_ready` closure) is handed to one
//! release thread of this crate and destroyed outside the plugin; [`flush_released`] waits for
//! it. What the plugin is given to hand back later (a callback's `user_arg`) is an id, never a
//! pointer: a plugin calling back twice, late or with another argument finds nothing.
//!
//! **What a callback may do.** A callback ([`Event::on_ready`], the `on_done` of
//! [`HostSource::on_done`], [`ExecuteOptions::on_send`] and `on_recv`) runs on a
//! thread the plugin may need to finish other work, often one of a pool the client owns. So it
//! may *start* work, query and drop anything, but not *wait* for the plugin: every call that
//! would wait returns [`Error::BlockingInCallback`] there, before starting anything, and the
//! error names the call that does not wait. Allowed: the launches that return at once
//! ([`LoadedExecutable::execute_async`], [`LoadedExecutable::execute_sharded_async`]), uploads
//! that copy during the call or own their data ([`Client::upload`], [`Client::upload_with`]),
//! starting downloads ([`Buffer::to_bytes_async`]), registering more
//! callbacks, [`Event::is_ready`], [`OnReady::is_done`], polling futures, sending to a thread of
//! your own, and dropping handles (destroyed on the release thread). Refused: the waiting
//! executes ([`LoadedExecutable::execute`], [`LoadedExecutable::execute_sharded`]), downloads
//! that wait ([`Buffer::to_vec`], `to_host_array`, `copy_to_slice`, `copy_to_bytes`, `to_bytes`,
//! `copy_to_client`), uploads with
//! [`HostBufferSemantics::CopyUntilTransferCompletes`], [`TransferManager::transfer_data`] and
//! `transfer_literal`, and the waits ([`Event::wait`], [`OnReady::wait`],
//! [`PendingExecution::wait`], [`PendingShardedExecution::wait`], [`HostTransfer::wait`],
//! [`PendingTransfer::wait`], their `wait_timeout`s and the DLPack export) unless what they wait
//! for has completed already, when they return at once (so a transfer may be taken in the
//! `on_ready` callback of its own event). [`flush_released`] returns at once inside a callback
//! and on the release thread. A callback that blocks on something else (a channel, a lock held
//! by a thread that waits for the plugin) can still hang the plugin: hand such work to a thread
//! of your own.
//!
//! ## Async
//! [`Event`], [`HostTransfer`], [`PendingExecution`] and [`PendingShardedExecution`] are futures: the waker is
//! registered through `PJRT_Event_OnReady`, so they work with any executor and never poll.
//!
//! ## Trust
//! Loading a plugin runs its native code with the rights of this process.

#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

/// The raw ABI: our own `#[repr(C)]` declarations of the PJRT C API, with no logic (the
/// `pjrt-client-sys` crate, re-exported).
///
/// Nothing there is checked: use the safe types of this crate unless you need an escape hatch.
pub use pjrt_client_sys as sys;

// The layers, lowest first: a module uses only the modules before it in this list (a child object
// may name its parent type, e.g. `Device` its `Client`). `tests/client/layers.rs` checks it; the
// "Layers" section of `docs/architecture.md` draws it.
mod error;
mod fingerprint;
mod call;
mod host_array;
mod program;
pub mod compile_options;
mod plugin;
mod client;
mod event;
mod buffer;
pub mod dlpack;
mod executable;
mod topology;
pub mod sharding;
pub mod extensions;
pub mod ffi;

pub use buffer::aligned::{AlignedHostBuffer, SharedBytes, SharedHostBytes, HOST_ALIGNMENT};
pub use buffer::dma::DmaMapping;
pub use buffer::donation::ControlDependency;
pub use buffer::download::{self, DownloadOptions};
pub use buffer::external_reference::ExternalReference;
pub use buffer::host_data::HostData;
pub use buffer::host_layout::HostBufferSemantics;
pub use buffer::host_transfer::HostTransfer;
pub use buffer::layout::MemoryLayout;
pub use buffer::raw_copy::RawCopyRequest;
pub use buffer::transfer_manager::{PendingTransfer, ShapeSpec, TransferManager};
pub use buffer::upload::{self, HostSource, UploadOptions};
pub use buffer::views::ViewOptions;
pub use buffer::without_host_data::AliasFulfiller;
pub use buffer::{Buffer, Placement};
pub use call::named_value::Value;
pub use call::release::flush_released;
pub use call::ApiVersion;
pub use client::device::{Device, Memory};
pub use client::device_stats::{AsyncTrackingEvent, MemoryStats};
pub use client::gpu_options::GpuAllocator;
pub use client::kv_store::{InMemoryStore, KeyValueStore, KvCallCounts, KvCallbacks, KvError};
pub use client::process::{ProcessInfo, ProcessState};
pub use client::{Client, ClientBuilder, ClientOptions};
pub use compile_options::{CompileOptions, DebugOption, DeviceAssignment};
pub use error::{Error, ErrorCode, LoadError, Result};
pub use event::user_event::UserEvent;
pub use event::{Event, OnReady};
pub use executable::compile_layouts::ShapeWithLayout;
pub use executable::execute_options::{ExecuteContext, ExecuteOptions};
pub use executable::execution::{PendingExecution, PendingShardedExecution};
pub use executable::host_callbacks::{CopyToDeviceStream, SendChunk};
pub use executable::load::LoadOptions;
pub use executable::metadata::{CompiledMemoryStats, LogicalDeviceId, OptimizedProgram};
pub use executable::outputs::{Outputs, OutputsIntoIter};
pub use executable::unloaded::Executable;
pub use executable::{ArrayShape, LoadedExecutable};
pub use host_array::HostArray;
pub use pjrt_types::{ElementType, HostValueError, NativeType, ParseVersionError, StableHloVersion};
pub use plugin::{Plugin, PluginSource, TableInit};
pub use program::{ModuleCounts, Program, ProgramFormat};
pub use topology::device_description::DeviceDescription;
pub use topology::gpu_target::{GpuTarget, GpuTopologyShape};
pub use topology::{CanonicalShape, Topology};

pub use half;
#[cfg(feature = "ndarray")]
pub use ndarray;
pub use num_complex;

/// The Rust snippets of `docs/gpu-tpu-from-cpu.md`, compiled as doc tests so the guide stays
/// true to the API (they are `no_run`: they need the CUDA plugin's download).
#[cfg(doctest)]
#[doc = include_str!("../../../docs/gpu-tpu-from-cpu.md")]
pub struct GpuTpuGuide;
