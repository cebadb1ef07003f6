//! A fake PJRT plugin for the integration tests of `pjrt-client`.
//!
//! It exports `GetPjrtApi` like a real plugin, but its function table is built to order: short
//! tables with garbage after them, NULL slots, old or impossible API versions, calls that fail,
//! events that complete on another thread. In its `working` scenarios it behaves like a tiny
//! plugin: a client with 2 devices and 3 memories, buffers that hold host bytes, a "compiler"
//! whose every executable takes two `f32[4]` and returns their sum, and events that complete at
//! once, later, never, or with an error. Beyond that: serialized executables, topologies made by
//! name or from bytes, ahead-of-time compilation and loading, views of (host) memory, donation
//! with a control dependency, alias buffers, raw copies whose destination comes later, and a
//! 16-byte host receive on channel 1 during every execution whose client registers a callback
//! for it.
//!
//! # Configuration: one scenario per copy of the library
//! The tests copy `libfake_plugin.so` to a fresh file per scenario (a copy has its own statics,
//! because the dynamic loader treats it as a different library) and write a sidecar file
//! `<path of the copy>.scenario`. On the first `GetPjrtApi` the plugin finds its own path with
//! `dladdr` and reads that file: its first line is the scenario's name (see
//! [`scenarios::Config::from_name`]), every further line a fault directive (below). Without a sidecar file
//! it runs `working`.
//!
//! # Hostile scenarios
//! Answers real plugins may give, or a buggy plugin could, that the C API does not rule out; the
//! fake still does nothing undefined (it writes only where it was given room and hands out only
//! memory it owns), and it still does the work, at once, so the client's answers can be checked:
//!
//! | scenario | what changes |
//! |---|---|
//! | `hostile_pred` | PRED bytes copied to the host say true with 2 or 0xff, not 1 (`hostile_pred_bytes` counts them) |
//! | `hostile_bools` | `bool` answers (`Event_IsReady`, `Device_IsAddressable`, `Buffer_IsOnCpu`, a memory statistic's `*_is_set`) say true with the byte 2 (not part of `hostile`) |
//! | `hostile_events` | every slot that hands out an event hands out NULL (`null_events_returned`) |
//! | `hostile_sizes` | the `ToHostBuffer` size query reports 8 bytes more than the dense size; `OnDeviceSizeInBytes` half the data; a transfer manager's `BufferSize` 8 bytes more |
//! | `hostile_sizes_fewer` | the same, but the `ToHostBuffer` size query reports 1 byte fewer |
//! | `old_extensions` | `extension_start` lists an early Layouts form (32 bytes), MemoryDescriptions version 0 (40 bytes, no default index written) and FFI version 1 (32 bytes); calls of the old functions are counted |
//! | `hostile` | all of the above (sizes: more) |
//!
//! Counts that disagree between `NumOutputs`, `OutputElementTypes` and `OutputDimensions` come
//! from the `bad_count` directive (below). `minor_<N>` claims API version 0.N (a full table).
//! `cpu_0_106` stands in for the 0.106 CPU plugin as `pjrt run` sees it (platform `cpu`, API
//! 0.106, 136 slots); `cpu_0_106_tuning_lines` also logs to fd 2, on every
//! `PJRT_Executable_DeserializeAndLoad`, the two "Target machine feature +prefer-no-gather
//! (+prefer-no-scatter) is not supported on the host machine ... SIGILL" lines the real one logs
//! on hosts whose CPU's tuning features hold those preferences, so their handling is tested on
//! any host.
//! `gpu_like` reports the platform `cuda` (so its `device` memories are a GPU's and memory 2 is
//! `pinned_host` host memory, as DLPack exports see them); `gpu_like_odd_memory` also names memory 2
//! `fake_scratch`, a kind no framework knows. `custom_partitioner` lists a CustomPartitioner extension whose functions count registrations
//! (`custom_partitioners_registered`, `batch_partitionable_registered`) and call a registered
//! partitioner's `dtor` at once. `profiler` lists a Profiler extension whose profiler records
//! every execution while it runs (a `fake_execute` event at its wall-clock time).
//!
//! # Fault directives
//! One per line (`#` starts a comment); `SLOT` is a `PJRT_Api` slot name such as
//! `PJRT_Client_Compile`:
//!
//! | directive | effect |
//! |---|---|
//! | `fail SLOT [after N]` | the call returns an `INTERNAL` error "fake: injected failure in SLOT" |
//! | `unimplemented SLOT [after N]` | the call returns `UNIMPLEMENTED` "fake: SLOT is not implemented (injected)", as a plugin without the feature does |
//! | `null_output SLOT [after N]` | the call succeeds but leaves its out-pointers NULL (array counts keep their true values) |
//! | `bad_count SLOT [after N]` | the call succeeds with an impossible count: 2^63 elements (more bytes than an address space), or, where another call reports the same count (output types vs `NumOutputs`, output dimension sizes), one that disagrees with it |
//! | `payload KEY VALUE` | every injected failure carries this payload (`PJRT_Error_ForEachPayload` reports it) |
//! | `event [ready\|never\|late <N>ms] [error] [for SLOT]` | events handed out (by `SLOT` only, or by every slot) complete at once, never, or `N` ms later on a thread of the fake; `error` makes them complete with `INTERNAL` "fake: event failed" |
//!
//! `after N` lets the first `N` calls of the slot through. The directives can also be replaced at
//! run time through the exported C function [`fake_set_faults`], which also resets the per-slot
//! call counts; one copy of the plugin can so run many fault cases in turn.
//!
//! # Observability
//! The plugin counts what it was asked to do (errors, clients, buffers, events, executables
//! created and destroyed, faults injected, callbacks run, threads still running). The tests read
//! the counters through the exported C function [`fake_counter`], found with `dlsym`.
//!
//! # Files
//! `lib.rs` holds `GetPjrtApi`; each other file one concept:
//! - `scenarios.rs`: what this copy does, read from its sidecar file;
//! - `faults.rs`: the fault directives and how a call applies them ([`fake_set_faults`]);
//! - `counters.rs`: what the tests can count ([`fake_counter`]);
//! - `calls.rs`: how a table function checks its args, catches panics and meets its fault
//!   (`slot_fn!`);
//! - `table.rs`: the `PJRT_Api` table, with garbage after its end;
//! - the slots, by the object they act on: `errors.rs`, `plugin.rs` (initialize, attributes),
//!   `clients.rs`, `devices.rs` (devices and their descriptions, and the device and memory
//!   objects), `memories.rs`, `events.rs`, `buffers.rs`, `transfer_manager.rs`, `topology.rs`,
//!   `compile.rs` (compile, load, serialize), `executables.rs` (executable queries), `execute.rs`
//!   and `host_receives.rs` (the receive streams handed out during execution);
//! - `old_extensions.rs`: the older extension forms of the `old_extensions` scenario;
//! - `custom_partitioner.rs`: the CustomPartitioner extension of the `custom_partitioner`
//!   scenario;
//! - `profiler.rs`: the Profiler extension of the `profiler` scenario;
//! - `ffi_frames.rs`: hostile XLA FFI call frames for a handler ([`fake_ffi_call`]).
//!
//! # Safety rules kept here
//! Every exported or table function catches panics, so no unwind ever crosses the C boundary; a
//! panic becomes an `INTERNAL` error (or is swallowed by the `void` functions). Every args struct
//! is checked for NULL and for a `struct_size` at least this crate's `STRUCT_SIZE`, like a real
//! plugin does.

#![deny(unsafe_op_in_unsafe_fn)]

mod buffers;
mod calls;
mod clients;
mod compile;
mod counters;
mod custom_partitioner;
mod devices;
mod error_slots;
mod errors;
mod events;
mod executables;
mod execute;
mod faults;
mod ffi_frames;
mod host_receives;
mod memories;
mod old_extensions;
mod plugin;
mod profiler;
mod scenarios;
mod table;
mod topology;
mod transfer_manager;

pub use counters::fake_counter;
pub use faults::fake_set_faults;
pub use ffi_frames::fake_ffi_call;

use std::panic::catch_unwind;
use std::ptr::null;

use pjrt_client_sys as sys;

use crate::scenarios::config;
use crate::table::table;

/// The PJRT entry point.
#[no_mangle]
#[allow(non_snake_case)]
pub extern "C" fn GetPjrtApi() -> *const sys::PJRT_Api {
    catch_unwind(|| {
        let config = config();
        if config.null_api {
            null()
        } else {
            table(config)
        }
    })
    .unwrap_or(null())
}
