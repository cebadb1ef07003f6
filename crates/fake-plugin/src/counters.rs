//! Counters: what the plugin was asked to do (errors, clients, buffers, events, executables
//! created and destroyed, faults injected, callbacks run, threads still running), read by the
//! tests through the exported [`fake_counter`].

use std::ffi::{c_char, CStr};
use std::panic::catch_unwind;
use std::sync::atomic::{AtomicI64, Ordering};

macro_rules! counters {
    ($($name:ident),+ $(,)?) => {
        pub(crate) struct Counters { $(pub(crate) $name: AtomicI64,)+ }
        pub(crate) static COUNTERS: Counters = Counters { $($name: AtomicI64::new(0),)+ };
        fn counter_by_name(name: &[u8]) -> Option<i64> {
            match name {
                $(n if n == stringify!($name).as_bytes() => Some(COUNTERS.$name.load(Ordering::SeqCst)),)+
                _ => None,
            }
        }
    };
}

counters!(
    errors_created,
    errors_destroyed,
    initialize_calls,
    client_create_calls,
    client_create_options,
    clients_created,
    clients_destroyed,
    buffer_from_host_calls,
    buffers_created,
    buffers_destroyed,
    events_created,
    events_destroyed,
    loaded_executables_created,
    loaded_executables_destroyed,
    executables_created,
    executables_destroyed,
    compile_calls,
    execute_calls,
    on_ready_calls,
    callbacks_invoked,
    callbacks_returned,
    // Callbacks registered on events that never completed, dropped without being called when
    // the event's last handle went.
    callbacks_dropped,
    // Threads of the fake (late events, callbacks) that have not finished yet.
    threads_running,
    faults_injected,
    unimplemented_calls,
    // Host ranges registered with `PJRT_Client_DmaMap` and released with `DmaUnmap`.
    dma_maps,
    dma_unmaps,
    process_info_updates,
    // Device attribute lists handed out by `PJRT_Device_GetAttributes` and freed by their deleter.
    device_attributes_created,
    device_attributes_destroyed,
    tracking_events_created,
    tracking_events_destroyed,
    // Serialized compile options and device assignments, freed by their deleters.
    serialized_created,
    serialized_destroyed,
    execute_contexts_created,
    execute_contexts_destroyed,
    transfer_managers_created,
    transfer_managers_destroyed,
    // Topologies made by `PJRT_TopologyDescription_Create` / `Deserialize` (not the client's).
    topologies_created,
    topologies_destroyed,
    // Control dependencies handed out by `PJRT_Buffer_DonateWithControlDependency`, signalled
    // (their callback data consumed) by the client.
    dependencies_created,
    dependencies_destroyed,
    // Fulfil callbacks of alias buffers (`PJRT_Client_CreateAliasBuffer`), handed back with
    // `PJRT_Client_FulfillAliasBuffer`.
    aliases_created,
    aliases_destroyed,
    // Raw copies waiting for their destination (`PJRT_Buffer_CopyRawToHostFuture`), completed
    // by the client's call of the callback.
    raw_copy_requests_created,
    raw_copy_requests_destroyed,
    // Host-to-device streams handed to receive callbacks during Execute, destroyed by the client.
    streams_created,
    streams_destroyed,
    // `PJRT_Client_Destroy` / `PJRT_Buffer_Destroy` calls made on a thread of the fake (a late
    // event's or a callback's): a client library must never destroy anything there.
    clients_destroyed_on_fake_threads,
    buffers_destroyed_on_fake_threads,
    // Calls of `PJRT_Client_CreateViewOfDeviceBuffer` that reached the fake.
    view_calls,
    // Executions whose `PJRT_ExecuteOptions` covered offset 120 and set
    // `use_major_to_minor_data_layout_for_callbacks`.
    executions_major_to_minor,
    // Hostile scenarios: NULL events handed out where an event belongs (`hostile_events`),
    // PRED bytes other than 0 and 1 copied to the host (`hostile_pred`), and calls of the
    // older-form extension functions (`old_extensions`), which a client must never make.
    null_events_returned,
    hostile_pred_bytes,
    early_layouts_calls,
    memory_descriptions_v0_calls,
    ffi_v1_calls,
    // Registrations through the CustomPartitioner extension (scenario `custom_partitioner`).
    custom_partitioners_registered,
    batch_partitionable_registered,
);

pub(crate) fn bump(counter: &AtomicI64) {
    counter.fetch_add(1, Ordering::SeqCst);
}

/// Reads one counter by its NUL-terminated name; returns -1 for an unknown name or NULL.
///
/// # Safety
/// `name` must be NULL or point to a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn fake_counter(name: *const c_char) -> i64 {
    if name.is_null() {
        return -1;
    }
    // SAFETY: the caller passes a NUL-terminated string (checked non-NULL above).
    let name = unsafe { CStr::from_ptr(name) };
    catch_unwind(|| counter_by_name(name.to_bytes()).unwrap_or(-1)).unwrap_or(-1)
}
