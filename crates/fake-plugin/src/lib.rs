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
//! [`Config::from_name`]), every further line a fault directive (below). Without a sidecar file
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
//! | `hostile_events` | every slot that hands out an event hands out NULL (`null_events_returned`) |
//! | `hostile_sizes` | the `ToHostBuffer` size query reports 8 bytes more than the dense size; `OnDeviceSizeInBytes` half the data; a transfer manager's `BufferSize` 8 bytes more |
//! | `hostile_sizes_fewer` | the same, but the `ToHostBuffer` size query reports 1 byte fewer |
//! | `old_extensions` | `extension_start` lists an early Layouts form (32 bytes), MemoryDescriptions version 0 (40 bytes, no default index written) and FFI version 1 (32 bytes); calls of the old functions are counted |
//! | `hostile` | all of the above (sizes: more) |
//!
//! Counts that disagree between `NumOutputs`, `OutputElementTypes` and `OutputDimensions` come
//! from the `bad_count` directive (below). `minor_<N>` claims API version 0.N (a full table).
//!
//! # Fault directives
//! One per line (`#` starts a comment); `SLOT` is a `PJRT_Api` slot name such as
//! `PJRT_Client_Compile`:
//!
//! | directive | effect |
//! |---|---|
//! | `fail SLOT [after N]` | the call returns an `INTERNAL` error "fake: injected failure in SLOT" |
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
//! # Safety rules kept here
//! Every exported or table function catches panics, so no unwind ever crosses the C boundary; a
//! panic becomes an `INTERNAL` error (or is swallowed by the `void` functions). Every args struct
//! is checked for NULL and for a `struct_size` at least this crate's `STRUCT_SIZE`, like a real
//! plugin does.

#![deny(unsafe_op_in_unsafe_fn)]

use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use pjrt_client::compile_options::CompileOptions;
use pjrt_client::ElementType;
use pjrt_client_sys::{self as sys, Args, PJRT_Error, PJRT_Error_Code};

// ---------------------------------------------------------------------------------------------
// Counters

macro_rules! counters {
    ($($name:ident),+ $(,)?) => {
        struct Counters { $($name: AtomicI64,)+ }
        static COUNTERS: Counters = Counters { $($name: AtomicI64::new(0),)+ };
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
);

fn bump(counter: &AtomicI64) {
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

/// Replaces the fault directives (see the crate docs) with `text` and resets the per-slot call
/// counts. Returns the number of directives, or -1 (and changes nothing) if `text` is NULL or
/// does not parse; the reason is printed to stderr.
///
/// # Safety
/// `text` must be NULL or point to a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn fake_set_faults(text: *const c_char) -> i64 {
    if text.is_null() {
        return -1;
    }
    // SAFETY: the caller passes a NUL-terminated string (checked non-NULL above).
    let text = unsafe { CStr::from_ptr(text) };
    catch_unwind(|| match parse_directives(&text.to_string_lossy()) {
        Ok(faults) => {
            let n = (faults.rules.len() + faults.events.len()) as i64;
            *lock(&FAULTS) = faults;
            n
        }
        Err(message) => {
            eprintln!("fake plugin: {message}");
            -1
        }
    })
    .unwrap_or(-1)
}

/// Locks a mutex, ignoring poisoning (a panic inside the fake is already turned into an error).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

// ---------------------------------------------------------------------------------------------
// Fault directives

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    Fail,
    NullOutput,
    BadCount,
}

#[derive(Debug)]
struct Rule {
    fault: Fault,
    slot: String,
    /// Calls let through before the fault applies.
    after: u64,
}

#[derive(Clone, Copy, Debug)]
enum Completion {
    Ready,
    Late(Duration),
    Never,
}

#[derive(Clone, Debug)]
struct EventRule {
    /// The slot whose events this rule shapes (all when `None`).
    source: Option<String>,
    completion: Completion,
    failure: Option<(PJRT_Error_Code, String)>,
}

#[derive(Debug)]
struct Faults {
    rules: Vec<Rule>,
    events: Vec<EventRule>,
    /// Calls per slot since the directives were set.
    calls: BTreeMap<String, u64>,
    /// Payloads attached to injected failures.
    payloads: Vec<(String, Vec<u8>)>,
}

static FAULTS: Mutex<Faults> =
    Mutex::new(Faults { rules: Vec::new(), events: Vec::new(), calls: BTreeMap::new(), payloads: Vec::new() });

/// More elements than fit in an address space, whatever their size (2^63 > isize::MAX).
const IMPOSSIBLE_COUNT: usize = usize::MAX / 2 + 1;

fn known_slot(name: &str) -> Result<String, String> {
    if sys::SLOTS.iter().any(|s| s.name == name) {
        Ok(name.to_owned())
    } else {
        Err(format!("unknown slot `{name}`"))
    }
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("bad duration `{text}` (write e.g. 200ms or 1s)");
    if let Some(ms) = text.strip_suffix("ms") {
        ms.parse().map(Duration::from_millis).map_err(|_| bad())
    } else if let Some(s) = text.strip_suffix('s') {
        s.parse().map(Duration::from_secs).map_err(|_| bad())
    } else {
        Err(bad())
    }
}

fn parse_directives(text: &str) -> Result<Faults, String> {
    let mut faults = Faults { rules: Vec::new(), events: Vec::new(), calls: BTreeMap::new(), payloads: Vec::new() };
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let fault = match words[0] {
            "fail" => Some(Fault::Fail),
            "null_output" => Some(Fault::NullOutput),
            "bad_count" => Some(Fault::BadCount),
            "event" => None,
            "payload" => match words[1..] {
                [key, value] => {
                    faults.payloads.push((key.to_owned(), value.as_bytes().to_vec()));
                    continue;
                }
                _ => return Err(format!("expected `payload KEY VALUE`, got `{line}`")),
            },
            other => return Err(format!("unknown directive `{other}` in `{line}`")),
        };
        if let Some(fault) = fault {
            let (slot, after) = match words[1..] {
                [slot] => (slot, 0),
                [slot, "after", n] => (slot, n.parse().map_err(|_| format!("bad count in `{line}`"))?),
                _ => return Err(format!("expected `{} SLOT [after N]`, got `{line}`", words[0])),
            };
            faults.rules.push(Rule { fault, slot: known_slot(slot)?, after });
            continue;
        }
        let mut rule = EventRule { source: None, completion: Completion::Ready, failure: None };
        let mut rest = words[1..].iter();
        while let Some(word) = rest.next() {
            match *word {
                "ready" => rule.completion = Completion::Ready,
                "never" => rule.completion = Completion::Never,
                "late" => {
                    let delay = rest.next().ok_or_else(|| format!("`late` needs a delay in `{line}`"))?;
                    rule.completion = Completion::Late(parse_duration(delay)?);
                }
                "error" => rule.failure = Some((PJRT_Error_Code::INTERNAL, "fake: event failed".to_owned())),
                "for" => {
                    let slot = rest.next().ok_or_else(|| format!("`for` needs a slot in `{line}`"))?;
                    rule.source = Some(known_slot(slot)?);
                }
                other => return Err(format!("unknown event option `{other}` in `{line}`")),
            }
        }
        faults.events.push(rule);
    }
    Ok(faults)
}

/// Counts a call of `slot` and returns the fault that applies to it, if any.
fn fault_for(slot: &str) -> Option<Fault> {
    let mut faults = lock(&FAULTS);
    let calls = faults.calls.entry(slot.to_owned()).or_insert(0);
    *calls += 1;
    let n = *calls;
    faults.rules.iter().find(|r| r.slot == slot && n > r.after).map(|r| r.fault)
}

/// Whether `fault` is `wanted`; counts it as injected when it is.
fn injects(fault: Option<Fault>, wanted: Fault) -> bool {
    let yes = fault == Some(wanted);
    if yes {
        bump(&COUNTERS.faults_injected);
    }
    yes
}

fn injected_failure(slot: &str) -> *mut PJRT_Error {
    bump(&COUNTERS.faults_injected);
    let payloads = lock(&FAULTS).payloads.clone();
    let error = new_error(PJRT_Error_Code::INTERNAL, format!("fake: injected failure in {slot}"));
    // SAFETY: just made by `new_error`, not shared yet.
    unsafe { (*error.cast::<FakeError>()).payloads = payloads };
    error
}

/// Applies `null_output` / `bad_count` to an array out-parameter.
fn shape_array<T>(fault: Option<Fault>, ptr: &mut *const T, count: &mut usize) {
    if injects(fault, Fault::NullOutput) {
        *ptr = null();
    } else if injects(fault, Fault::BadCount) {
        *count = IMPOSSIBLE_COUNT;
    }
}

/// Applies `null_output` to a handle out-parameter.
fn null_handle<T>(fault: Option<Fault>, handle: *mut T) -> *mut T {
    if injects(fault, Fault::NullOutput) {
        null_mut()
    } else {
        handle
    }
}

/// Sets a (pointer, length) string out-parameter, shaped by `null_output` / `bad_count`.
fn set_string(fault: Option<Fault>, text: &'static str, ptr: &mut *const c_char, len: &mut usize) {
    *ptr = text.as_ptr().cast();
    *len = text.len();
    shape_array(fault, ptr, len);
}

// ---------------------------------------------------------------------------------------------
// Scenarios

/// What this copy of the plugin does, decided once from its sidecar file.
#[derive(Debug)]
struct Config {
    /// The scenario's name, reported as the `fake_scenario` plugin attribute.
    name: String,
    major: i32,
    minor: i32,
    /// `PJRT_Api.struct_size`; the words after the last slot it covers hold non-NULL garbage.
    struct_size: usize,
    /// `GetPjrtApi` returns NULL.
    null_api: bool,
    /// `PJRT_Plugin_Initialize` fails with this message.
    initialize_error: Option<String>,
    /// The `PJRT_Client_Create` slot is NULL.
    null_client_create: bool,
    /// `PJRT_Client_Create` fails with INVALID_ARGUMENT "fake: bad option".
    client_create_error: bool,
    /// Buffer ready events complete with INTERNAL "fake: transfer failed".
    event_error: bool,
    /// The answers of the `hostile*` and `old_extensions` scenarios.
    hostile: Hostile,
}

/// What the hostile scenarios change: answers real plugins may give, or a buggy one could, that
/// the C API does not rule out. The fake itself still does nothing undefined: it writes only
/// where it was given room, and hands out only memory it owns.
#[derive(Clone, Copy, Debug, Default)]
struct Hostile {
    /// PRED bytes copied to the host (`ToHostBuffer`, `CopyRawToHost`, raw copies whose
    /// destination comes later) say true with 2 (even positions) or 0xff (odd ones), not 1.
    pred: bool,
    /// Every slot that hands out an event (upload done events, downloads, raw copies, ready
    /// events, execution completion, transfer-manager pieces, stream chunks, user events) hands
    /// out NULL; the work itself is done at once, so the answers can still be checked.
    null_events: bool,
    /// Sizes that disagree with the data (see [`SizeLie`]).
    sizes: Option<SizeLie>,
    /// `PJRT_Api.extension_start` lists older forms of extensions (see [`old_extensions`]).
    old_extensions: bool,
}

/// How the size queries lie: `OnDeviceSizeInBytes` reports half the data and a transfer
/// manager's `BufferSize` 8 bytes more than the buffer holds in both cases; the
/// `ToHostBuffer` size query reports 8 bytes more than the dense size, or 1 fewer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SizeLie {
    More,
    Fewer,
}

/// `struct_size` of a table with `slots` slots.
const fn table_size(slots: usize) -> usize {
    sys::FIRST_SLOT_OFFSET + 8 * slots
}

/// What the 0.106 CPU plugin has after its last slot (observed; see the API notes, §1.1).
const GARBAGE: usize = 0x39f0_0000_0101;
/// Garbage words placed after every table.
const GARBAGE_WORDS: usize = 16;

impl Config {
    fn from_name(name: &str) -> Config {
        let mut config = Config {
            name: name.to_owned(),
            major: 0,
            minor: 115,
            struct_size: table_size(sys::SLOT_COUNT),
            null_api: false,
            initialize_error: None,
            null_client_create: false,
            client_create_error: false,
            event_error: false,
            hostile: Hostile::default(),
        };
        let all_hostile = Hostile { pred: true, null_events: true, sizes: Some(SizeLie::More), old_extensions: true };
        match name {
            // A plugin that does enough for clients, devices, memories, buffers, compilation,
            // execution and events (API 0.115, 138 slots).
            "working" => {}
            // The same, shaped like the real 0.106 CPU plugin: 136 slots, garbage after them.
            "working_0_106" => {
                config.minor = 106;
                config.struct_size = table_size(136);
            }
            // Ready events complete with an error.
            "event_error" => config.event_error = true,
            "major_1" => config.major = 1,
            // Any claimed minor version (`minor_40`, `minor_65`, ...): the full table otherwise.
            _ if name.strip_prefix("minor_").is_some_and(|n| n.parse::<i32>().is_ok()) => {
                config.minor = name["minor_".len()..].parse().unwrap_or(config.minor);
            }
            // Everything hostile at once: PRED bytes, NULL events, lying sizes, old extensions.
            "hostile" => config.hostile = all_hostile,
            "hostile_pred" => config.hostile.pred = true,
            "hostile_events" => config.hostile.null_events = true,
            "hostile_sizes" => config.hostile.sizes = Some(SizeLie::More),
            "hostile_sizes_fewer" => config.hostile.sizes = Some(SizeLie::Fewer),
            "old_extensions" => config.hostile.old_extensions = true,
            // Slots 0..10 only (up to PJRT_Event_OnReady); PJRT_Client_Create is garbage.
            "short_table" => config.struct_size = table_size(10),
            "null_client_create" => config.null_client_create = true,
            "client_create_error" => config.client_create_error = true,
            "initialize_error" => {
                config.initialize_error = Some(format!("fake: initialize failed (scenario `{name}`)"))
            }
            "null_api" => config.null_api = true,
            "tiny_table" => config.struct_size = 16,
            // An unknown name: load fails in PJRT_Plugin_Initialize, naming the scenario.
            _ => config.initialize_error = Some(format!("fake: initialize failed (unknown scenario `{name}`)")),
        }
        config
    }

    /// A sidecar file: the scenario's name, then fault directives.
    fn from_sidecar(text: &str) -> Config {
        let mut lines = text.lines().map(|l| l.split('#').next().unwrap_or("").trim()).filter(|l| !l.is_empty());
        let name = lines.next().unwrap_or("working");
        let mut config = Config::from_name(name);
        let directives: Vec<&str> = lines.collect();
        match parse_directives(&directives.join("\n")) {
            Ok(faults) => *lock(&FAULTS) = faults,
            Err(message) => config.initialize_error = Some(format!("fake: bad sidecar directives: {message}")),
        }
        config
    }
}

#[repr(C)]
struct DlInfo {
    dli_fname: *const c_char,
    dli_fbase: *mut c_void,
    dli_sname: *const c_char,
    dli_saddr: *mut c_void,
}

extern "C" {
    fn dladdr(addr: *const c_void, info: *mut DlInfo) -> c_int;
}

/// The path of the file this copy of the plugin was loaded from.
fn own_path() -> Option<String> {
    let mut info = DlInfo { dli_fname: null(), dli_fbase: null_mut(), dli_sname: null(), dli_saddr: null_mut() };
    // SAFETY: `dladdr` only writes `info`; the address is one of this library's own functions.
    let found = unsafe { dladdr(GetPjrtApi as *const c_void, &mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: `dli_fname` is a NUL-terminated string owned by the loader, valid while this
    // library stays loaded (we copy it at once).
    Some(unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned())
}

fn config() -> &'static Config {
    static CONFIG: OnceLock<Config> = OnceLock::new();
    CONFIG.get_or_init(|| {
        let text = own_path()
            .and_then(|path| std::fs::read_to_string(format!("{path}.scenario")).ok())
            .unwrap_or_else(|| "working".to_owned());
        Config::from_sidecar(&text)
    })
}

// ---------------------------------------------------------------------------------------------
// Errors

/// The fake's `PJRT_Error`: a boxed code and message.
struct FakeError {
    code: PJRT_Error_Code,
    message: String,
    payloads: Vec<(String, Vec<u8>)>,
}

fn new_error(code: PJRT_Error_Code, message: impl Into<String>) -> *mut PJRT_Error {
    bump(&COUNTERS.errors_created);
    Box::into_raw(Box::new(FakeError { code, message: message.into(), payloads: Vec::new() })).cast()
}

fn invalid(message: impl Into<String>) -> *mut PJRT_Error {
    new_error(PJRT_Error_Code::INVALID_ARGUMENT, message)
}

const OK: *mut PJRT_Error = null_mut();

/// What the body of a table function returns: `Err` carries the `PJRT_Error` to return.
type SlotResult = Result<(), *mut PJRT_Error>;

/// Runs a table function's body, turning a panic into an INTERNAL error.
fn guarded(function: &str, body: impl FnOnce() -> *mut PJRT_Error) -> *mut PJRT_Error {
    catch_unwind(AssertUnwindSafe(body))
        .unwrap_or_else(|_| new_error(PJRT_Error_Code::INTERNAL, format!("fake: {function} panicked")))
}

/// Borrows an args struct after the checks a real plugin makes.
///
/// # Safety
/// `args` must be NULL or point to a live `T` (at least its `struct_size` field readable) that
/// is not otherwise accessed during `'a`.
unsafe fn checked_args<'a, T: Args>(args: *mut T, name: &str) -> Result<&'a mut T, *mut PJRT_Error> {
    if args.is_null() {
        return Err(invalid(format!("fake: {name} is NULL")));
    }
    // SAFETY: every args struct starts with `struct_size: usize`; the caller guarantees it is
    // readable.
    let size = unsafe { args.cast::<usize>().read() };
    if size < T::STRUCT_SIZE {
        return Err(invalid(format!("Unexpected {name} size: expected {}, got {size}", T::STRUCT_SIZE)));
    }
    // SAFETY: non-NULL, large enough, and exclusively ours for the call (caller's guarantee).
    Ok(unsafe { &mut *args })
}

/// Defines the table function for `$slot`: `unsafe extern "C" fn(*mut Args) -> *mut PJRT_Error`.
/// The body sees the checked args as `$args` and the fault directed at this call as `$fault`
/// (a `fail` never reaches it), and evaluates to a [`SlotResult`].
macro_rules! slot_fn {
    ($slot:ident => fn $fn_name:ident($args:ident: $ty:ident, $fault:ident) $body:block) => {
        unsafe extern "C" fn $fn_name(raw: *mut sys::$ty) -> *mut PJRT_Error {
            guarded(stringify!($slot), || {
                // SAFETY: the client passes a valid args struct that it does not touch during
                // the call (the PJRT calling convention).
                let $args = match unsafe { checked_args(raw, stringify!($ty)) } {
                    Ok(args) => args,
                    Err(error) => return error,
                };
                #[allow(unused_variables)]
                let $fault = fault_for(stringify!($slot));
                if $fault == Some(Fault::Fail) {
                    return injected_failure(stringify!($slot));
                }
                // A closure, so that the body can use `?` and `return`.
                #[allow(clippy::redundant_closure_call)]
                let result: SlotResult = (|| $body)();
                match result {
                    Ok(()) => OK,
                    Err(error) => error,
                }
            })
        }
    };
}

/// Borrows a handle this plugin created.
///
/// # Safety
/// `ptr` must be NULL or a pointer this plugin returned as a `T` and has not destroyed.
unsafe fn handle<'a, T, P>(ptr: *mut P, what: &str) -> Result<&'a T, *mut PJRT_Error> {
    if ptr.is_null() {
        return Err(invalid(format!("fake: {what} is NULL")));
    }
    // SAFETY: guaranteed by the caller.
    Ok(unsafe { &*ptr.cast::<T>() })
}

unsafe extern "C" fn error_destroy(args: *mut sys::PJRT_Error_Destroy_Args) {
    let _ = catch_unwind(|| {
        // SAFETY: the client passes a valid args struct for the call.
        let Ok(args) = (unsafe { checked_args(args, "PJRT_Error_Destroy_Args") }) else { return };
        if !args.error.is_null() {
            // SAFETY: every error this plugin hands out is a leaked `Box<FakeError>`; the client
            // destroys each one exactly once.
            drop(unsafe { Box::from_raw(args.error.cast::<FakeError>()) });
            bump(&COUNTERS.errors_destroyed);
        }
    });
}

unsafe extern "C" fn error_message(args: *mut sys::PJRT_Error_Message_Args) {
    let _ = catch_unwind(|| {
        // SAFETY: the client passes a valid args struct for the call.
        let Ok(args) = (unsafe { checked_args(args, "PJRT_Error_Message_Args") }) else { return };
        let fault = fault_for("PJRT_Error_Message");
        if !args.error.is_null() {
            // SAFETY: a live error of this plugin (not yet destroyed).
            let error = unsafe { &*args.error.cast::<FakeError>() };
            args.message = error.message.as_ptr().cast();
            args.message_size = error.message.len();
            shape_array(fault, &mut args.message, &mut args.message_size);
        }
    });
}

slot_fn!(PJRT_Error_GetCode => fn error_get_code(args: PJRT_Error_GetCode_Args, fault) {
    // SAFETY: a live error of this plugin (not yet destroyed).
    let error = unsafe { handle::<FakeError, _>(args.error.cast_mut(), "error") }?;
    args.code = error.code;
    Ok(())
});

slot_fn!(PJRT_Error_ForEachPayload => fn error_for_each_payload(args: PJRT_Error_ForEachPayload_Args, fault) {
    // SAFETY: a live error of this plugin (not yet destroyed).
    let error = unsafe { handle::<FakeError, _>(args.error.cast_mut(), "error") }?;
    let Some(visitor) = args.visitor else { return Err(invalid("fake: visitor is NULL")) };
    for (key, value) in &error.payloads {
        // SAFETY: the visitor contract: key and value readable during the call.
        unsafe { visitor(key.as_ptr().cast(), key.len(), value.as_ptr().cast(), value.len(), args.user_arg) };
    }
    Ok(())
});

// ---------------------------------------------------------------------------------------------
// Plugin

slot_fn!(PJRT_Plugin_Initialize => fn plugin_initialize(_args: PJRT_Plugin_Initialize_Args, fault) {
    bump(&COUNTERS.initialize_calls);
    match &config().initialize_error {
        Some(message) => Err(new_error(PJRT_Error_Code::INTERNAL, message.clone())),
        None => Ok(()),
    }
});

/// A `Sync` wrapper for data that holds raw pointers to immutable, immortal memory.
struct Immortal<T>(T);
// SAFETY: only used for data that is never mutated after construction and lives forever.
unsafe impl<T> Send for Immortal<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Immortal<T> {}

fn int64_attribute(name: &'static CStr, value: i64) -> sys::PJRT_NamedValue {
    let mut v = sys::PJRT_NamedValue::new();
    v.name = name.as_ptr();
    v.name_size = name.to_bytes().len();
    v.type_ = sys::PJRT_NamedValue_Type::Int64;
    v.value.int64_value = value;
    v.value_size = 1;
    v
}

/// The attribute array: built once, never freed (it lives as long as the plugin).
fn attributes() -> &'static [sys::PJRT_NamedValue] {
    static ATTRIBUTES: OnceLock<Immortal<Vec<sys::PJRT_NamedValue>>> = OnceLock::new();
    &ATTRIBUTES
        .get_or_init(|| {
            let version = int64_attribute(c"xla_version", 7);
            let scenario_name: &'static str = config().name.as_str();
            let mut scenario = sys::PJRT_NamedValue::new();
            scenario.name = c"fake_scenario".as_ptr();
            scenario.name_size = "fake_scenario".len();
            scenario.type_ = sys::PJRT_NamedValue_Type::String;
            scenario.value.string_value = scenario_name.as_ptr().cast();
            scenario.value_size = scenario_name.len();
            Immortal(vec![version, scenario])
        })
        .0
}

slot_fn!(PJRT_Plugin_Attributes => fn plugin_attributes(args: PJRT_Plugin_Attributes_Args, fault) {
    let attributes = attributes();
    args.attributes = attributes.as_ptr();
    args.num_attributes = attributes.len();
    shape_array(fault, &mut args.attributes, &mut args.num_attributes);
    Ok(())
});

/// Every slot the fake does not implement points here: like the real plugins, no slot inside
/// the table is NULL unless a scenario says so, and a missing feature fails at call time.
unsafe extern "C" fn unimplemented_slot(_args: *mut c_void) -> *mut PJRT_Error {
    guarded("unimplemented_slot", || {
        bump(&COUNTERS.unimplemented_calls);
        new_error(PJRT_Error_Code::UNIMPLEMENTED, "fake: not implemented")
    })
}

// ---------------------------------------------------------------------------------------------
// Devices and memories: immortal objects shared by every client of this copy.
//
// device 0: memories 0 ("device", default) and 2 ("pinned_host")
// device 1: memories 1 ("device", default) and 2 ("pinned_host")

/// The object behind a `PJRT_Device*`; its description is the embedded field.
struct DeviceObject {
    index: usize,
    description: DescriptionObject,
}

struct DescriptionObject {
    index: usize,
}

/// The object behind a `PJRT_Memory*`.
struct MemoryObject {
    index: usize,
}

static DEVICE_OBJECTS: [DeviceObject; 2] = [
    DeviceObject { index: 0, description: DescriptionObject { index: 0 } },
    DeviceObject { index: 1, description: DescriptionObject { index: 1 } },
];
static MEMORY_OBJECTS: [MemoryObject; 3] =
    [MemoryObject { index: 0 }, MemoryObject { index: 1 }, MemoryObject { index: 2 }];

struct DeviceInfo {
    to_string: &'static str,
    debug_string: &'static str,
    memories: &'static [usize],
    default_memory: usize,
}

const DEVICES: [DeviceInfo; 2] = [
    DeviceInfo {
        to_string: "FakeDevice(id=0)",
        debug_string: "FakeDevice(id=0, process=0)",
        memories: &[0, 2],
        default_memory: 0,
    },
    DeviceInfo {
        to_string: "FakeDevice(id=1)",
        debug_string: "FakeDevice(id=1, process=0)",
        memories: &[1, 2],
        default_memory: 1,
    },
];
const DEVICE_KIND: &str = "fake";

struct MemoryInfo {
    kind: &'static str,
    kind_id: i32,
    to_string: &'static str,
    debug_string: &'static str,
    devices: &'static [usize],
}

const MEMORIES: [MemoryInfo; 3] = [
    MemoryInfo {
        kind: "device",
        kind_id: 0,
        to_string: "FAKE_DEVICE_0",
        debug_string: "FakeMemory(device, 0)",
        devices: &[0],
    },
    MemoryInfo {
        kind: "device",
        kind_id: 0,
        to_string: "FAKE_DEVICE_1",
        debug_string: "FakeMemory(device, 1)",
        devices: &[1],
    },
    MemoryInfo {
        kind: "pinned_host",
        kind_id: 1,
        to_string: "FAKE_PINNED_HOST",
        debug_string: "FakeMemory(pinned_host)",
        devices: &[0, 1],
    },
];

fn device_ptr(index: usize) -> *mut sys::PJRT_Device {
    std::ptr::addr_of!(DEVICE_OBJECTS[index]).cast_mut().cast()
}

fn description_ptr(index: usize) -> *mut sys::PJRT_DeviceDescription {
    std::ptr::addr_of!(DEVICE_OBJECTS[index].description).cast_mut().cast()
}

fn memory_ptr(index: usize) -> *mut sys::PJRT_Memory {
    std::ptr::addr_of!(MEMORY_OBJECTS[index]).cast_mut().cast()
}

fn device_index(ptr: *mut sys::PJRT_Device) -> Result<usize, *mut PJRT_Error> {
    DEVICE_OBJECTS
        .iter()
        .find(|d| device_ptr(d.index) == ptr)
        .map(|d| d.index)
        .ok_or_else(|| invalid("fake: not a device of this plugin"))
}

// ---- device statistics, attributes, poisoning and tracking events ----

slot_fn!(PJRT_Device_MemoryStats => fn device_memory_stats(args: PJRT_Device_MemoryStats_Args, fault) {
    device_index(args.device)?;
    args.bytes_in_use = 1024;
    args.peak_bytes_in_use = 4096;
    args.peak_bytes_in_use_is_set = true;
    Ok(())
});

slot_fn!(PJRT_Device_ClearMemoryStats => fn device_clear_memory_stats(args: PJRT_Device_ClearMemoryStats_Args, fault) {
    device_index(args.device)?;
    Ok(())
});

/// What `PJRT_Device_GetAttributes` hands out: the list and its owner, freed by the deleter.
struct FakeDeviceAttributes(Vec<sys::PJRT_NamedValue>);

unsafe extern "C" fn device_attributes_deleter(attributes: *mut sys::PJRT_Device_Attributes) {
    if !attributes.is_null() {
        // SAFETY: a `Box<FakeDeviceAttributes>` this plugin leaked; the client frees it once.
        drop(unsafe { Box::from_raw(attributes.cast::<FakeDeviceAttributes>()) });
        bump(&COUNTERS.device_attributes_destroyed);
    }
}

slot_fn!(PJRT_Device_GetAttributes => fn device_get_attributes(args: PJRT_Device_GetAttributes_Args, fault) {
    let index = device_index(args.device)?;
    let owned = Box::new(FakeDeviceAttributes(vec![int64_attribute(c"fake_device_index", index as i64)]));
    args.attributes = owned.0.as_ptr();
    args.num_attributes = owned.0.len();
    args.device_attributes = Box::into_raw(owned).cast();
    args.attributes_deleter = Some(device_attributes_deleter);
    bump(&COUNTERS.device_attributes_created);
    shape_array(fault, &mut args.attributes, &mut args.num_attributes);
    Ok(())
});

slot_fn!(PJRT_Device_PoisonExecution => fn device_poison_execution(args: PJRT_Device_PoisonExecution_Args, fault) {
    device_index(args.device)?;
    if args.error_code.0 == 0 {
        return Err(invalid("fake: poisoning with OK"));
    }
    // Nothing runs on the fake's devices: nothing to poison.
    args.poisoned = false;
    Ok(())
});

/// An async tracking event: only its life is tracked.
struct FakeTrackingEvent;

slot_fn!(PJRT_Device_CreateAsyncTrackingEvent => fn device_create_async_tracking_event(
    args: PJRT_Device_CreateAsyncTrackingEvent_Args, fault
) {
    device_index(args.device)?;
    if injects(fault, Fault::NullOutput) {
        args.event = null_mut();
        return Ok(());
    }
    args.event = Box::into_raw(Box::new(FakeTrackingEvent)).cast();
    bump(&COUNTERS.tracking_events_created);
    Ok(())
});

slot_fn!(PJRT_AsyncTrackingEvent_Destroy => fn async_tracking_event_destroy(args: PJRT_AsyncTrackingEvent_Destroy_Args, fault) {
    if !args.event.is_null() {
        // SAFETY: an event this plugin created; the client destroys it once.
        drop(unsafe { Box::from_raw(args.event.cast::<FakeTrackingEvent>()) });
        bump(&COUNTERS.tracking_events_destroyed);
    }
    Ok(())
});

fn description_index(ptr: *mut sys::PJRT_DeviceDescription) -> Result<usize, *mut PJRT_Error> {
    DEVICE_OBJECTS
        .iter()
        .find(|d| description_ptr(d.description.index) == ptr)
        .map(|d| d.description.index)
        .ok_or_else(|| invalid("fake: not a device description of this plugin"))
}

fn memory_index(ptr: *mut sys::PJRT_Memory) -> Result<usize, *mut PJRT_Error> {
    MEMORY_OBJECTS
        .iter()
        .find(|m| memory_ptr(m.index) == ptr)
        .map(|m| m.index)
        .ok_or_else(|| invalid("fake: not a memory of this plugin"))
}

/// Pointer arrays handed out by the topology queries, built once.
struct Tables {
    devices: Vec<*mut sys::PJRT_Device>,
    memories: Vec<*mut sys::PJRT_Memory>,
    device_memories: Vec<Vec<*mut sys::PJRT_Memory>>,
    memory_devices: Vec<Vec<*mut sys::PJRT_Device>>,
    device_attributes: Vec<Vec<sys::PJRT_NamedValue>>,
}

fn tables() -> &'static Tables {
    static TABLES: OnceLock<Immortal<Tables>> = OnceLock::new();
    &TABLES
        .get_or_init(|| {
            Immortal(Tables {
                devices: (0..DEVICES.len()).map(device_ptr).collect(),
                memories: (0..MEMORIES.len()).map(memory_ptr).collect(),
                device_memories: DEVICES.iter().map(|d| d.memories.iter().map(|&m| memory_ptr(m)).collect()).collect(),
                memory_devices: MEMORIES.iter().map(|m| m.devices.iter().map(|&d| device_ptr(d)).collect()).collect(),
                device_attributes: (0..DEVICES.len())
                    .map(|i| vec![int64_attribute(c"core_count", 1), int64_attribute(c"fake_index", i as i64)])
                    .collect(),
            })
        })
        .0
}

// ---------------------------------------------------------------------------------------------
// Clients

/// A client: the devices and memories are shared statics, so only its life is tracked.
struct FakeClient {
    _marker: u64,
}

const PLATFORM_NAME: &str = "fake";
const PLATFORM_VERSION: &str = "fake 0.1";

slot_fn!(PJRT_Client_Create => fn client_create(args: PJRT_Client_Create_Args, fault) {
    bump(&COUNTERS.client_create_calls);
    COUNTERS.client_create_options.fetch_add(args.num_options as i64, Ordering::SeqCst);
    if config().client_create_error {
        return Err(invalid("fake: bad option"));
    }
    if injects(fault, Fault::NullOutput) {
        args.client = null_mut();
        return Ok(());
    }
    args.client = Box::into_raw(Box::new(FakeClient { _marker: 0 })).cast();
    bump(&COUNTERS.clients_created);
    Ok(())
});

slot_fn!(PJRT_Client_Destroy => fn client_destroy(args: PJRT_Client_Destroy_Args, fault) {
    if !args.client.is_null() {
        // SAFETY: a client this plugin created; the client library destroys it once.
        drop(unsafe { Box::from_raw(args.client.cast::<FakeClient>()) });
        bump(&COUNTERS.clients_destroyed);
        if on_fake_thread() {
            bump(&COUNTERS.clients_destroyed_on_fake_threads);
        }
    }
    Ok(())
});

fn client<'a>(ptr: *mut sys::PJRT_Client) -> Result<&'a FakeClient, *mut PJRT_Error> {
    // SAFETY: the client library passes clients this plugin created and has not destroyed.
    unsafe { handle::<FakeClient, _>(ptr, "client") }
}

/// Start addresses of the host ranges currently DMA-mapped (by any client of this copy).
static DMA_MAPPED: Mutex<Vec<usize>> = Mutex::new(Vec::new());

slot_fn!(PJRT_Client_DmaMap => fn client_dma_map(args: PJRT_Client_DmaMap_Args, fault) {
    client(args.client)?;
    if args.data.is_null() || args.size == 0 {
        return Err(invalid("fake: DmaMap needs a non-empty range"));
    }
    let mut mapped = lock(&DMA_MAPPED);
    if mapped.contains(&(args.data as usize)) {
        return Err(invalid("fake: the range is already mapped"));
    }
    mapped.push(args.data as usize);
    bump(&COUNTERS.dma_maps);
    Ok(())
});

slot_fn!(PJRT_Client_DmaUnmap => fn client_dma_unmap(args: PJRT_Client_DmaUnmap_Args, fault) {
    client(args.client)?;
    let mut mapped = lock(&DMA_MAPPED);
    let Some(at) = mapped.iter().position(|p| *p == args.data as usize) else {
        return Err(invalid("fake: DmaUnmap of a range that is not mapped"));
    };
    mapped.swap_remove(at);
    bump(&COUNTERS.dma_unmaps);
    Ok(())
});

slot_fn!(PJRT_Client_UpdateGlobalProcessInfo => fn client_update_global_process_info(
    args: PJRT_Client_UpdateGlobalProcessInfo_Args, fault
) {
    client(args.client)?;
    if args.num_process_infos > 0 {
        if args.process_infos.is_null() {
            return Err(invalid("fake: process_infos is NULL"));
        }
        // SAFETY: the client passes `num_process_infos` readable entries.
        let infos = unsafe { std::slice::from_raw_parts(args.process_infos, args.num_process_infos) };
        if let Some(info) = infos.iter().find(|i| i.struct_size < sys::PJRT_ProcessInfo::STRUCT_SIZE) {
            return Err(invalid(format!("fake: PJRT_ProcessInfo of size {}", info.struct_size)));
        }
    }
    bump(&COUNTERS.process_info_updates);
    Ok(())
});

slot_fn!(PJRT_Client_PlatformName => fn client_platform_name(args: PJRT_Client_PlatformName_Args, fault) {
    client(args.client)?;
    set_string(fault, PLATFORM_NAME, &mut args.platform_name, &mut args.platform_name_size);
    Ok(())
});

slot_fn!(PJRT_Client_PlatformVersion => fn client_platform_version(args: PJRT_Client_PlatformVersion_Args, fault) {
    client(args.client)?;
    set_string(fault, PLATFORM_VERSION, &mut args.platform_version, &mut args.platform_version_size);
    Ok(())
});

slot_fn!(PJRT_Client_ProcessIndex => fn client_process_index(args: PJRT_Client_ProcessIndex_Args, fault) {
    client(args.client)?;
    args.process_index = 0;
    Ok(())
});

slot_fn!(PJRT_Client_Devices => fn client_devices(args: PJRT_Client_Devices_Args, fault) {
    client(args.client)?;
    args.devices = tables().devices.as_ptr();
    args.num_devices = tables().devices.len();
    shape_array(fault, &mut args.devices, &mut args.num_devices);
    Ok(())
});

slot_fn!(PJRT_Client_AddressableDevices => fn client_addressable_devices(args: PJRT_Client_AddressableDevices_Args, fault) {
    client(args.client)?;
    args.addressable_devices = tables().devices.as_ptr();
    args.num_addressable_devices = tables().devices.len();
    shape_array(fault, &mut args.addressable_devices, &mut args.num_addressable_devices);
    Ok(())
});

slot_fn!(PJRT_Client_LookupDevice => fn client_lookup_device(args: PJRT_Client_LookupDevice_Args, fault) {
    client(args.client)?;
    let index = usize::try_from(args.id).ok().filter(|i| *i < DEVICES.len());
    let Some(index) = index else {
        return Err(new_error(PJRT_Error_Code::NOT_FOUND, format!("fake: no device with id {}", args.id)));
    };
    args.device = null_handle(fault, device_ptr(index));
    Ok(())
});

slot_fn!(PJRT_Client_LookupAddressableDevice => fn client_lookup_addressable_device(
    args: PJRT_Client_LookupAddressableDevice_Args, fault
) {
    client(args.client)?;
    let index = usize::try_from(args.local_hardware_id).ok().filter(|i| *i < DEVICES.len());
    let Some(index) = index else {
        return Err(new_error(PJRT_Error_Code::NOT_FOUND, "fake: no such local hardware id"));
    };
    args.addressable_device = null_handle(fault, device_ptr(index));
    Ok(())
});

slot_fn!(PJRT_Client_AddressableMemories => fn client_addressable_memories(args: PJRT_Client_AddressableMemories_Args, fault) {
    client(args.client)?;
    args.addressable_memories = tables().memories.as_ptr();
    args.num_addressable_memories = tables().memories.len();
    shape_array(fault, &mut args.addressable_memories, &mut args.num_addressable_memories);
    Ok(())
});

slot_fn!(PJRT_Client_DefaultDeviceAssignment => fn client_default_device_assignment(
    args: PJRT_Client_DefaultDeviceAssignment_Args, fault
) {
    client(args.client)?;
    let count = (args.num_replicas.max(0) as usize) * (args.num_partitions.max(0) as usize);
    if count == 0 || count > DEVICES.len() {
        return Err(invalid(format!("fake: cannot assign {count} devices (there are {})", DEVICES.len())));
    }
    if args.default_assignment.is_null() || args.default_assignment_size < count {
        return Err(invalid("fake: the assignment array is too small"));
    }
    for i in 0..count {
        // SAFETY: the caller passes an array of `default_assignment_size >= count` ints.
        unsafe { args.default_assignment.add(i).write(i as c_int) };
    }
    Ok(())
});

// ---------------------------------------------------------------------------------------------
// Devices

slot_fn!(PJRT_Device_GetDescription => fn device_get_description(args: PJRT_Device_GetDescription_Args, fault) {
    let index = device_index(args.device)?;
    args.device_description = null_handle(fault, description_ptr(index));
    Ok(())
});

slot_fn!(PJRT_DeviceDescription_Id => fn description_id(args: PJRT_DeviceDescription_Id_Args, fault) {
    args.id = description_index(args.device_description)? as c_int;
    Ok(())
});

slot_fn!(PJRT_DeviceDescription_ProcessIndex => fn description_process_index(
    args: PJRT_DeviceDescription_ProcessIndex_Args, fault
) {
    description_index(args.device_description)?;
    args.process_index = 0;
    Ok(())
});

slot_fn!(PJRT_DeviceDescription_Attributes => fn description_attributes(args: PJRT_DeviceDescription_Attributes_Args, fault) {
    let attributes = &tables().device_attributes[description_index(args.device_description)?];
    args.attributes = attributes.as_ptr();
    args.num_attributes = attributes.len();
    shape_array(fault, &mut args.attributes, &mut args.num_attributes);
    Ok(())
});

slot_fn!(PJRT_DeviceDescription_Kind => fn description_kind(args: PJRT_DeviceDescription_Kind_Args, fault) {
    description_index(args.device_description)?;
    set_string(fault, DEVICE_KIND, &mut args.device_kind, &mut args.device_kind_size);
    Ok(())
});

slot_fn!(PJRT_DeviceDescription_DebugString => fn description_debug_string(
    args: PJRT_DeviceDescription_DebugString_Args, fault
) {
    let index = description_index(args.device_description)?;
    set_string(fault, DEVICES[index].debug_string, &mut args.debug_string, &mut args.debug_string_size);
    Ok(())
});

slot_fn!(PJRT_DeviceDescription_ToString => fn description_to_string(args: PJRT_DeviceDescription_ToString_Args, fault) {
    let index = description_index(args.device_description)?;
    set_string(fault, DEVICES[index].to_string, &mut args.to_string, &mut args.to_string_size);
    Ok(())
});

slot_fn!(PJRT_Device_IsAddressable => fn device_is_addressable(args: PJRT_Device_IsAddressable_Args, fault) {
    device_index(args.device)?;
    args.is_addressable = true;
    Ok(())
});

slot_fn!(PJRT_Device_LocalHardwareId => fn device_local_hardware_id(args: PJRT_Device_LocalHardwareId_Args, fault) {
    args.local_hardware_id = device_index(args.device)? as c_int;
    Ok(())
});

slot_fn!(PJRT_Device_AddressableMemories => fn device_addressable_memories(args: PJRT_Device_AddressableMemories_Args, fault) {
    let memories = &tables().device_memories[device_index(args.device)?];
    args.memories = memories.as_ptr();
    args.num_memories = memories.len();
    shape_array(fault, &mut args.memories, &mut args.num_memories);
    Ok(())
});

slot_fn!(PJRT_Device_DefaultMemory => fn device_default_memory(args: PJRT_Device_DefaultMemory_Args, fault) {
    let index = device_index(args.device)?;
    args.memory = null_handle(fault, memory_ptr(DEVICES[index].default_memory));
    Ok(())
});

// ---------------------------------------------------------------------------------------------
// Memories

slot_fn!(PJRT_Memory_Id => fn memory_id(args: PJRT_Memory_Id_Args, fault) {
    args.id = memory_index(args.memory)? as c_int;
    Ok(())
});

slot_fn!(PJRT_Memory_Kind => fn memory_kind(args: PJRT_Memory_Kind_Args, fault) {
    let index = memory_index(args.memory)?;
    set_string(fault, MEMORIES[index].kind, &mut args.kind, &mut args.kind_size);
    Ok(())
});

slot_fn!(PJRT_Memory_Kind_Id => fn memory_kind_id(args: PJRT_Memory_Kind_Id_Args, fault) {
    args.kind_id = MEMORIES[memory_index(args.memory)?].kind_id;
    Ok(())
});

slot_fn!(PJRT_Memory_DebugString => fn memory_debug_string(args: PJRT_Memory_DebugString_Args, fault) {
    let index = memory_index(args.memory)?;
    set_string(fault, MEMORIES[index].debug_string, &mut args.debug_string, &mut args.debug_string_size);
    Ok(())
});

slot_fn!(PJRT_Memory_ToString => fn memory_to_string(args: PJRT_Memory_ToString_Args, fault) {
    let index = memory_index(args.memory)?;
    set_string(fault, MEMORIES[index].to_string, &mut args.to_string, &mut args.to_string_size);
    Ok(())
});

slot_fn!(PJRT_Memory_AddressableByDevices => fn memory_addressable_by_devices(
    args: PJRT_Memory_AddressableByDevices_Args, fault
) {
    let devices = &tables().memory_devices[memory_index(args.memory)?];
    args.devices = devices.as_ptr();
    args.num_devices = devices.len();
    shape_array(fault, &mut args.devices, &mut args.num_devices);
    Ok(())
});

// ---------------------------------------------------------------------------------------------
// Events

/// How an event ends: `None` for success, else the error's code and message.
type Failure = Option<(PJRT_Error_Code, String)>;
type Callback = unsafe extern "C" fn(error: *mut PJRT_Error, user_arg: *mut c_void);

/// The shared state of an event: its handle and, for late events, the completing thread hold it.
#[derive(Default)]
struct EventState {
    inner: Mutex<EventInner>,
    cond: Condvar,
}

#[derive(Default)]
struct EventInner {
    /// `None` until the event completes.
    result: Option<Failure>,
    /// Callbacks waiting for completion, with their `user_arg` (as an integer: opaque to us).
    callbacks: Vec<(Callback, usize)>,
}

impl Drop for EventInner {
    fn drop(&mut self) {
        // An event that never completed: its callbacks are never called (as with a real plugin
        // whose work never ends). Counted so the tests can see it.
        for _ in self.callbacks.drain(..) {
            bump(&COUNTERS.callbacks_dropped);
        }
    }
}

/// The object behind a `PJRT_Event*`.
struct FakeEvent(Arc<EventState>);

/// Runs `body` on a new thread of the fake, counted in `threads_running` until it returns.
/// `name` starts with `fake-pjrt` (see [`on_fake_thread`]).
fn spawn_counted(name: &str, body: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    bump(&COUNTERS.threads_running);
    let spawned = std::thread::Builder::new().name(name.to_owned()).spawn(move || {
        let _ = catch_unwind(AssertUnwindSafe(body));
        COUNTERS.threads_running.fetch_sub(1, Ordering::SeqCst);
    });
    if spawned.is_err() {
        COUNTERS.threads_running.fetch_sub(1, Ordering::SeqCst);
    }
    spawned.map(drop)
}

fn failure_error(failure: &Failure) -> *mut PJRT_Error {
    match failure {
        Some((code, message)) => new_error(*code, message.clone()),
        None => OK,
    }
}

/// Calls an `OnReady` callback, handing it a fresh error it owns.
fn invoke_callback(callback: Callback, user_arg: usize, failure: &Failure) {
    let error = failure_error(failure);
    bump(&COUNTERS.callbacks_invoked);
    // SAFETY: the callback and its argument came from `PJRT_Event_OnReady`; it is called exactly
    // once and takes ownership of `error`. It is an `extern "C"` function: if it unwound, the
    // process would abort here, which is what the tests guard against.
    unsafe { callback(error, user_arg as *mut c_void) };
    bump(&COUNTERS.callbacks_returned);
}

impl EventState {
    fn complete(&self, failure: Failure) {
        let callbacks = {
            let mut inner = lock(&self.inner);
            inner.result = Some(failure.clone());
            std::mem::take(&mut inner.callbacks)
        };
        self.cond.notify_all();
        for (callback, user_arg) in callbacks {
            invoke_callback(callback, user_arg, &failure);
        }
    }
}

/// The event rule for events handed out by `source`.
fn event_rule(source: &str) -> EventRule {
    let rule = {
        let faults = lock(&FAULTS);
        faults.events.iter().rev().find(|r| r.source.as_deref().is_none_or(|s| s == source)).cloned()
    };
    match rule {
        Some(rule) => {
            bump(&COUNTERS.faults_injected);
            rule
        }
        None => {
            let failure = (config().event_error && source == "PJRT_Buffer_ReadyEvent")
                .then(|| (PJRT_Error_Code::INTERNAL, "fake: transfer failed".to_owned()));
            EventRule { source: None, completion: Completion::Ready, failure }
        }
    }
}

/// A new event as the event rules for `source` say.
fn new_event(source: &str) -> *mut sys::PJRT_Event {
    let rule = event_rule(source);
    let state = Arc::new(EventState::default());
    match rule.completion {
        Completion::Ready => state.complete(rule.failure),
        Completion::Never => {}
        Completion::Late(delay) => {
            let later = state.clone();
            let failure = rule.failure.clone();
            let spawned = spawn_counted("fake-pjrt-late-event", move || {
                std::thread::sleep(delay);
                later.complete(failure);
            });
            if spawned.is_err() {
                state.complete(rule.failure);
            }
        }
    }
    bump(&COUNTERS.events_created);
    Box::into_raw(Box::new(FakeEvent(state))).cast()
}

/// The event a slot hands out: NULL under `null_output` (counted as an injected fault) or in the
/// `hostile_events` scenarios (counted in `null_events_returned`), else a new event as the event
/// rules for `source` say.
fn handed_out_event(fault: Option<Fault>, source: &str) -> *mut sys::PJRT_Event {
    if injects(fault, Fault::NullOutput) {
        null_mut()
    } else if config().hostile.null_events {
        bump(&COUNTERS.null_events_returned);
        null_mut()
    } else {
        new_event(source)
    }
}

/// Whether the current thread is one of the fake's own (late events, callbacks): see
/// [`spawn_counted`].
fn on_fake_thread() -> bool {
    std::thread::current().name().is_some_and(|name| name.starts_with("fake-pjrt"))
}

fn event<'a>(ptr: *mut sys::PJRT_Event) -> Result<&'a EventState, *mut PJRT_Error> {
    // SAFETY: the client library passes events this plugin created and has not destroyed.
    Ok(&unsafe { handle::<FakeEvent, _>(ptr, "event") }?.0)
}

slot_fn!(PJRT_Event_Destroy => fn event_destroy(args: PJRT_Event_Destroy_Args, fault) {
    if !args.event.is_null() {
        // SAFETY: an event this plugin created; the client library destroys it once.
        drop(unsafe { Box::from_raw(args.event.cast::<FakeEvent>()) });
        bump(&COUNTERS.events_destroyed);
    }
    Ok(())
});

slot_fn!(PJRT_Event_IsReady => fn event_is_ready(args: PJRT_Event_IsReady_Args, fault) {
    args.is_ready = lock(&event(args.event)?.inner).result.is_some();
    Ok(())
});

// `PJRT_Event_Error` and `PJRT_Event_Await` return the event's error as their own result.
slot_fn!(PJRT_Event_Error => fn event_error(args: PJRT_Event_Error_Args, fault) {
    match &lock(&event(args.event)?.inner).result {
        Some(failure) => match failure_error(failure) {
            e if e.is_null() => Ok(()),
            e => Err(e),
        },
        None => Err(new_error(PJRT_Error_Code::FAILED_PRECONDITION, "fake: the event is not ready")),
    }
});

slot_fn!(PJRT_Event_Await => fn event_await(args: PJRT_Event_Await_Args, fault) {
    let state = event(args.event)?;
    let mut inner = lock(&state.inner);
    loop {
        if let Some(failure) = &inner.result {
            let error = failure_error(failure);
            return if error.is_null() { Ok(()) } else { Err(error) };
        }
        inner = state.cond.wait(inner).unwrap_or_else(|p| p.into_inner());
    }
});

// A ready event runs the callback on a new thread, as a real plugin does when work completes
// elsewhere; a pending one keeps it for the thread that completes the event. Neither touches the
// event handle, which the client may destroy at any time.
slot_fn!(PJRT_Event_OnReady => fn event_on_ready(args: PJRT_Event_OnReady_Args, fault) {
    bump(&COUNTERS.on_ready_calls);
    let state = event(args.event)?;
    let Some(callback) = args.callback else {
        return Err(invalid("fake: no callback"));
    };
    let user_arg = args.user_arg as usize;
    let mut inner = lock(&state.inner);
    let Some(failure) = inner.result.clone() else {
        inner.callbacks.push((callback, user_arg));
        return Ok(());
    };
    drop(inner);
    // The callback was not taken if the thread cannot start: the client keeps `user_arg`.
    spawn_counted("fake-pjrt-event", move || invoke_callback(callback, user_arg, &failure)).map_err(|e| {
        new_error(PJRT_Error_Code::RESOURCE_EXHAUSTED, format!("fake: cannot start a thread: {e}"))
    })
});

// A user event: pending until `PJRT_Event_Set`. Setting it twice is refused (a real plugin's
// promise would abort).
slot_fn!(PJRT_Event_Create => fn event_create(args: PJRT_Event_Create_Args, fault) {
    if injects(fault, Fault::NullOutput) {
        args.event = null_mut();
        return Ok(());
    }
    if config().hostile.null_events {
        bump(&COUNTERS.null_events_returned);
        args.event = null_mut();
        return Ok(());
    }
    bump(&COUNTERS.events_created);
    args.event = Box::into_raw(Box::new(FakeEvent(Arc::default()))).cast();
    Ok(())
});

slot_fn!(PJRT_Event_Set => fn event_set(args: PJRT_Event_Set_Args, fault) {
    let state = event(args.event)?;
    if lock(&state.inner).result.is_some() {
        return Err(new_error(PJRT_Error_Code::FAILED_PRECONDITION, "fake: the event was already set"));
    }
    let failure = (args.error_code.0 != 0).then(|| {
        // SAFETY: the client passes `error_message_size` readable bytes (or NULL with 0).
        let bytes = unsafe { sys_bytes(args.error_message, args.error_message_size) };
        (args.error_code, String::from_utf8_lossy(bytes).into_owned())
    });
    state.complete(failure);
    Ok(())
});

/// The bytes of a (pointer, length) pair the client passed; empty for NULL.
///
/// # Safety
/// `ptr` must be NULL or point to `len` readable bytes.
unsafe fn sys_bytes<'a>(ptr: *const c_char, len: usize) -> &'a [u8] {
    if ptr.is_null() || len == 0 {
        &[]
    } else {
        // SAFETY: the caller's guarantee.
        unsafe { std::slice::from_raw_parts(ptr.cast(), len) }
    }
}

// ---------------------------------------------------------------------------------------------
// Buffers

struct FakeBuffer {
    element_type: sys::PJRT_Buffer_Type,
    dims: Vec<i64>,
    bytes: Vec<u8>,
    device: usize,
    memory: usize,
    deleted: AtomicBool,
    /// External references taken (`IncreaseExternalReferenceCount`) and not yet released.
    external_references: AtomicI64,
    /// The error of an error buffer (`PJRT_Client_CreateErrorBuffer`): its ready event fails.
    error: Option<(PJRT_Error_Code, String)>,
    /// Its dense layout, for `PJRT_Buffer_GetMemoryLayout` (rank-1 .. 0).
    minor_to_major: Vec<i64>,
}

fn new_buffer(
    element_type: sys::PJRT_Buffer_Type,
    dims: Vec<i64>,
    bytes: Vec<u8>,
    device: usize,
    memory: usize,
) -> *mut sys::PJRT_Buffer {
    bump(&COUNTERS.buffers_created);
    let buffer = FakeBuffer {
        element_type,
        bytes,
        device,
        memory,
        deleted: AtomicBool::new(false),
        external_references: AtomicI64::new(0),
        error: None,
        minor_to_major: (0..dims.len() as i64).rev().collect(),
        dims,
    };
    Box::into_raw(Box::new(buffer)).cast()
}

fn buffer<'a>(ptr: *mut sys::PJRT_Buffer) -> Result<&'a FakeBuffer, *mut PJRT_Error> {
    // SAFETY: the client library passes buffers this plugin created and has not destroyed.
    unsafe { handle::<FakeBuffer, _>(ptr, "buffer") }
}

/// What a copy to the host gives for `bytes`, which start at byte `offset` of `buffer`: the
/// stored bytes, except PRED in the `hostile_pred` scenarios, whose true values come back as 2
/// (at even positions) or 0xff (at odd ones), as a plugin may (it returns PRED bytes unchanged).
fn host_copy_of(buffer: &FakeBuffer, offset: usize, bytes: &[u8]) -> Vec<u8> {
    if !config().hostile.pred || buffer.element_type != sys::PJRT_Buffer_Type::PRED {
        return bytes.to_vec();
    }
    bytes
        .iter()
        .enumerate()
        .map(|(i, b)| match (*b, (offset + i) % 2) {
            (0, _) => 0,
            (_, 0) => {
                bump(&COUNTERS.hostile_pred_bytes);
                2
            }
            _ => {
                bump(&COUNTERS.hostile_pred_bytes);
                0xff
            }
        })
        .collect()
}

fn live_buffer<'a>(ptr: *mut sys::PJRT_Buffer) -> Result<&'a FakeBuffer, *mut PJRT_Error> {
    let buffer = buffer(ptr)?;
    if buffer.deleted.load(Ordering::SeqCst) {
        return Err(new_error(PJRT_Error_Code::FAILED_PRECONDITION, "fake: the buffer was deleted"));
    }
    Ok(buffer)
}

/// Reads the host data of an upload: dense, or gathered with byte strides.
///
/// # Safety
/// `data` must point to the host array the strides describe (the client checked its length).
unsafe fn read_host_data(
    data: *const c_void,
    dims: &[i64],
    strides: Option<&[i64]>,
    element_bytes: usize,
    size: usize,
) -> Vec<u8> {
    if size == 0 {
        return Vec::new();
    }
    let Some(strides) = strides else {
        // SAFETY: a dense array of `size` bytes (caller's guarantee).
        return unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) }.to_vec();
    };
    let mut out = Vec::with_capacity(size);
    let count: usize = dims.iter().map(|d| *d as usize).product();
    let mut index = vec![0i64; dims.len()];
    for _ in 0..count {
        let offset: i64 = index.iter().zip(strides).map(|(i, s)| i * s).sum();
        // SAFETY: every element lies inside the strided array (caller's guarantee).
        let element = unsafe { std::slice::from_raw_parts(data.cast::<u8>().add(offset as usize), element_bytes) };
        out.extend_from_slice(element);
        for axis in (0..dims.len()).rev() {
            index[axis] += 1;
            if index[axis] < dims[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
    out
}

slot_fn!(PJRT_Client_BufferFromHostBuffer => fn client_buffer_from_host_buffer(
    args: PJRT_Client_BufferFromHostBuffer_Args, fault
) {
    bump(&COUNTERS.buffer_from_host_calls);
    client(args.client)?;
    if args.data.is_null() {
        return Err(invalid("fake: data is NULL"));
    }
    let known = (1..=33).contains(&args.type_.0) && args.type_ != sys::PJRT_Buffer_Type::TOKEN;
    if !known {
        // A real plugin aborts or crashes here (API notes, §7); the tests check it is never
        // reached.
        return Err(invalid(format!("fake: bad element type {}", args.type_.0)));
    }
    let (device, memory) = if !args.memory.is_null() {
        let memory = memory_index(args.memory)?;
        (MEMORIES[memory].devices[0], memory)
    } else {
        let device = device_index(args.device)?;
        (device, DEVICES[device].default_memory)
    };
    let dims = if args.num_dims == 0 {
        Vec::new()
    } else if args.dims.is_null() {
        return Err(invalid("fake: dims is NULL"));
    } else {
        // SAFETY: the client passes `num_dims` readable dimensions.
        unsafe { std::slice::from_raw_parts(args.dims, args.num_dims) }.to_vec()
    };
    if dims.iter().any(|d| *d < 0) {
        return Err(invalid("fake: negative dimension"));
    }
    let element_type = ElementType::from_raw(args.type_);
    let count = dims.iter().try_fold(1usize, |n, d| n.checked_mul(*d as usize));
    let size = count.and_then(|c| element_type.host_bytes(c)).ok_or_else(|| invalid("fake: too large"))?;
    let strides = if args.byte_strides.is_null() {
        None
    } else {
        if args.num_byte_strides != dims.len() {
            return Err(invalid("fake: one byte stride per dimension"));
        }
        // SAFETY: the client passes `num_byte_strides` readable strides.
        Some(unsafe { std::slice::from_raw_parts(args.byte_strides, args.num_byte_strides) })
    };
    let element_bytes = element_type.bits().unwrap_or(8).div_ceil(8);
    // SAFETY: the client checked that `data` holds the array its dims and strides describe.
    let bytes = unsafe { read_host_data(args.data, &dims, strides, element_bytes, size) };
    if injects(fault, Fault::NullOutput) {
        // The transfer "happened" but no buffer comes back; the done event still does.
        args.buffer = null_mut();
    } else {
        args.buffer = new_buffer(args.type_, dims, bytes, device, memory);
    }
    // The data was copied above: a NULL done event (hostile) still leaves nothing to read later.
    args.done_with_host_buffer = if config().hostile.null_events {
        bump(&COUNTERS.null_events_returned);
        null_mut()
    } else {
        new_event("PJRT_Client_BufferFromHostBuffer")
    };
    Ok(())
});

slot_fn!(PJRT_Buffer_Destroy => fn buffer_destroy(args: PJRT_Buffer_Destroy_Args, fault) {
    if !args.buffer.is_null() {
        // SAFETY: a buffer this plugin created; the client library destroys it once.
        drop(unsafe { Box::from_raw(args.buffer.cast::<FakeBuffer>()) });
        bump(&COUNTERS.buffers_destroyed);
        if on_fake_thread() {
            bump(&COUNTERS.buffers_destroyed_on_fake_threads);
        }
        let view = {
            let mut views = lock(&VIEWS);
            views.iter().position(|v| v.buffer == args.buffer as usize).map(|at| views.swap_remove(at))
        };
        if let Some(view) = view {
            // SAFETY: the callback and argument the client gave for this view, called once.
            unsafe { (view.on_delete)(view.memory as *mut c_void, view.arg as *mut c_void) };
        }
    }
    Ok(())
});

// ---- views of device memory and donation with a control dependency ----

/// A view's on-delete callback, called when its buffer is destroyed.
struct FakeView {
    buffer: usize,
    memory: usize,
    on_delete: unsafe extern "C" fn(*mut c_void, *mut c_void),
    arg: usize,
}

static VIEWS: Mutex<Vec<FakeView>> = Mutex::new(Vec::new());

// The fake's "device memory" is host memory: the view copies it at once (a real plugin reads it
// in place until the on-delete callback).
slot_fn!(PJRT_Client_CreateViewOfDeviceBuffer => fn client_create_view(
    args: PJRT_Client_CreateViewOfDeviceBuffer_Args, fault
) {
    bump(&COUNTERS.view_calls);
    client(args.client)?;
    // SAFETY: the client passes `num_dims` readable dimensions.
    let (dims, size) = unsafe { shape_of(args.dims, args.num_dims, args.element_type) }?;
    let (device, memory) = if args.memory.is_null() {
        let device = device_index(args.device)?;
        (device, DEVICES[device].default_memory)
    } else {
        let memory = memory_index(args.memory)?;
        (MEMORIES[memory].devices[0], memory)
    };
    let Some(on_delete) = args.on_delete_callback else {
        return Err(invalid("fake: a view needs an on-delete callback"));
    };
    if args.device_buffer_ptr.is_null() {
        return Err(invalid("fake: NULL device memory"));
    }
    if injects(fault, Fault::NullOutput) {
        args.buffer = null_mut();
        return Ok(());
    }
    // SAFETY: the client passes memory holding the array's dense bytes.
    let bytes = unsafe { sys_bytes(args.device_buffer_ptr.cast(), size) }.to_vec();
    args.buffer = new_buffer(args.element_type, dims, bytes, device, memory);
    lock(&VIEWS).push(FakeView {
        buffer: args.buffer as usize,
        memory: args.device_buffer_ptr as usize,
        on_delete,
        arg: args.on_delete_callback_arg as usize,
    });
    Ok(())
});

// ---- alias buffers ----

/// The fulfil callback object of an alias buffer: the shape a source must have (not the alias
/// itself, which the client may destroy first).
struct FakeAlias {
    element_type: sys::PJRT_Buffer_Type,
    dims: Vec<i64>,
}

slot_fn!(PJRT_Client_CreateAliasBuffer => fn client_create_alias_buffer(args: PJRT_Client_CreateAliasBuffer_Args, fault) {
    client(args.client)?;
    // SAFETY: the client passes `shape_num_dims` readable dimensions.
    let (dims, size) = unsafe { shape_of(args.shape_dims, args.shape_num_dims, args.shape_element_type) }?;
    let memory = memory_index(args.memory)?;
    if injects(fault, Fault::NullOutput) {
        args.alias_buffer = null_mut();
        args.fulfill_alias_buffer_cb = null_mut();
        return Ok(());
    }
    // The fake's alias holds zeros: its data is not replaced on fulfilment.
    let alias = FakeAlias { element_type: args.shape_element_type, dims: dims.clone() };
    args.alias_buffer = new_buffer(args.shape_element_type, dims, vec![0; size], MEMORIES[memory].devices[0], memory);
    args.fulfill_alias_buffer_cb = Box::into_raw(Box::new(alias)).cast();
    bump(&COUNTERS.aliases_created);
    Ok(())
});

// Written out rather than with `slot_fn!`: the callback object is consumed whether or not the
// call (or an injected failure) succeeds, as the real plugins do.
unsafe extern "C" fn client_fulfill_alias_buffer(
    raw: *mut sys::PJRT_Client_FulfillAliasBuffer_Args,
) -> *mut PJRT_Error {
    const SLOT: &str = "PJRT_Client_FulfillAliasBuffer";
    guarded(SLOT, || {
        // SAFETY: the client passes a valid args struct that it does not touch during the call.
        let args = match unsafe { checked_args(raw, "PJRT_Client_FulfillAliasBuffer_Args") } {
            Ok(args) => args,
            Err(error) => return error,
        };
        if args.fulfill_alias_buffer_cb.is_null() {
            return invalid("fake: no fulfil callback");
        }
        // SAFETY: a `Box<FakeAlias>` this plugin leaked; the client hands it back once.
        let alias = unsafe { Box::from_raw(args.fulfill_alias_buffer_cb.cast::<FakeAlias>()) };
        bump(&COUNTERS.aliases_destroyed);
        if fault_for(SLOT) == Some(Fault::Fail) {
            return injected_failure(SLOT);
        }
        if let Err(error) = client(args.client) {
            return error;
        }
        if args.status_code != PJRT_Error_Code::OK {
            // Like the CPU plugins: the alias fails, and the call returns the status it was given.
            // SAFETY: the client passes `error_message_size` readable bytes.
            let message = unsafe { sys_bytes(args.error_message, args.error_message_size) };
            return new_error(args.status_code, String::from_utf8_lossy(message));
        }
        match live_buffer(args.buffer) {
            Ok(source) if source.element_type != alias.element_type || source.dims != alias.dims => {
                invalid("fake: the source's shape is not the alias's")
            }
            Ok(source) => {
                // The source's memory moves into the alias.
                source.deleted.store(true, Ordering::SeqCst);
                OK
            }
            Err(error) => error,
        }
    })
}

// ---- raw copies whose destination comes later ----

/// A raw copy waiting for its destination: the bytes (read at once) and the event to complete.
struct FakeRawCopy {
    bytes: Vec<u8>,
    event: Arc<EventState>,
}

unsafe extern "C" fn raw_copy_ready(args: *mut sys::PJRT_Buffer_CopyRawToHostFuture_Callback_Args) {
    let _ = catch_unwind(|| {
        // SAFETY: the client passes a valid args struct with the data this plugin handed out.
        let Some(args) = (unsafe { args.as_mut() }) else { return };
        if args.callback_data.is_null() {
            return;
        }
        // SAFETY: a `Box<FakeRawCopy>` this plugin leaked; the client completes it once.
        let copy = unsafe { Box::from_raw(args.callback_data.cast::<FakeRawCopy>()) };
        bump(&COUNTERS.raw_copy_requests_destroyed);
        let failure = if args.error_code != PJRT_Error_Code::OK {
            // SAFETY: the client passes `error_message_size` readable bytes.
            let message = unsafe { sys_bytes(args.error_message, args.error_message_size) };
            Some((args.error_code, String::from_utf8_lossy(message).into_owned()))
        } else if args.dst.is_null() {
            Some((PJRT_Error_Code::INVALID_ARGUMENT, "fake: no destination".to_owned()))
        } else {
            // SAFETY: the client passes a destination of the requested size.
            unsafe { std::ptr::copy_nonoverlapping(copy.bytes.as_ptr(), args.dst.cast::<u8>(), copy.bytes.len()) };
            None
        };
        copy.event.complete(failure);
    });
}

// `null_output` leaves the event NULL but hands out the callback: the client must still complete
// (cancel) the request, so that its data comes back.
slot_fn!(PJRT_Buffer_CopyRawToHostFuture => fn buffer_copy_raw_to_host_future(
    args: PJRT_Buffer_CopyRawToHostFuture_Args, fault
) {
    let buffer = live_buffer(args.buffer)?;
    let (offset, size) = (usize::try_from(args.offset), usize::try_from(args.transfer_size));
    let (Ok(offset), Ok(size)) = (offset, size) else {
        return Err(invalid("fake: negative offset or size"));
    };
    let Some(bytes) = offset.checked_add(size).and_then(|end| buffer.bytes.get(offset..end)) else {
        return Err(invalid("fake: the range is outside the buffer"));
    };
    let state = Arc::new(EventState::default());
    let copy = FakeRawCopy { bytes: host_copy_of(buffer, offset, bytes), event: state.clone() };
    args.callback_data = Box::into_raw(Box::new(copy)).cast();
    args.future_ready_callback = Some(raw_copy_ready);
    bump(&COUNTERS.raw_copy_requests_created);
    args.event = if injects(fault, Fault::NullOutput) {
        null_mut()
    } else if config().hostile.null_events {
        bump(&COUNTERS.null_events_returned);
        null_mut()
    } else {
        bump(&COUNTERS.events_created);
        Box::into_raw(Box::new(FakeEvent(state))).cast()
    };
    Ok(())
});

/// The callback data of a control dependency: only its life is tracked.
struct FakeDependency;

unsafe extern "C" fn dependency_ready(args: *mut sys::PJRT_Buffer_DonateWithControlDependency_Callback_Args) {
    let _ = catch_unwind(|| {
        // SAFETY: the client passes a valid args struct with the data this plugin handed out.
        let Some(args) = (unsafe { args.as_mut() }) else { return };
        if !args.callback_data.is_null() {
            // SAFETY: a `Box<FakeDependency>` this plugin leaked; the client signals it once.
            drop(unsafe { Box::from_raw(args.callback_data.cast::<FakeDependency>()) });
            bump(&COUNTERS.dependencies_destroyed);
        }
    });
}

// The new buffer holds the bytes at once (a real plugin would hold back its readiness until the
// dependency is signalled); the old one is deleted, as donated.
slot_fn!(PJRT_Buffer_DonateWithControlDependency => fn buffer_donate_with_control_dependency(
    args: PJRT_Buffer_DonateWithControlDependency_Args, fault
) {
    let old = live_buffer(args.buffer)?;
    if injects(fault, Fault::NullOutput) {
        args.out_buffer = null_mut();
        args.dependency_ready_callback = None;
        args.callback_data = null_mut();
        return Ok(());
    }
    args.out_buffer = new_buffer(old.element_type, old.dims.clone(), old.bytes.clone(), old.device, old.memory);
    old.deleted.store(true, Ordering::SeqCst);
    args.callback_data = Box::into_raw(Box::new(FakeDependency)).cast();
    args.dependency_ready_callback = Some(dependency_ready);
    bump(&COUNTERS.dependencies_created);
    Ok(())
});

slot_fn!(PJRT_Buffer_ElementType => fn buffer_element_type(args: PJRT_Buffer_ElementType_Args, fault) {
    args.type_ = buffer(args.buffer)?.element_type;
    Ok(())
});

slot_fn!(PJRT_Buffer_Dimensions => fn buffer_dimensions(args: PJRT_Buffer_Dimensions_Args, fault) {
    let buffer = buffer(args.buffer)?;
    args.dims = buffer.dims.as_ptr();
    args.num_dims = buffer.dims.len();
    shape_array(fault, &mut args.dims, &mut args.num_dims);
    Ok(())
});

slot_fn!(PJRT_Buffer_OnDeviceSizeInBytes => fn buffer_on_device_size(args: PJRT_Buffer_OnDeviceSizeInBytes_Args, fault) {
    let size = live_buffer(args.buffer)?.bytes.len();
    // Hostile sizes: smaller than the data (a raw copy sized from it must stay inside).
    args.on_device_size_in_bytes = if config().hostile.sizes.is_some() { size / 2 } else { size };
    Ok(())
});

// ---- buffer extras ----

// The deprecated layout query: dense, no tiles.
slot_fn!(PJRT_Buffer_GetMemoryLayout => fn buffer_get_memory_layout(args: PJRT_Buffer_GetMemoryLayout_Args, fault) {
    let b = buffer(args.buffer)?;
    let mut tiled = sys::PJRT_Buffer_MemoryLayout_Tiled::new();
    tiled.minor_to_major = b.minor_to_major.as_ptr();
    tiled.minor_to_major_size = b.minor_to_major.len();
    shape_array(fault, &mut tiled.minor_to_major, &mut tiled.minor_to_major_size);
    args.layout.layout = sys::PJRT_Buffer_MemoryLayout_Union { tiled };
    args.layout.type_ = sys::PJRT_Buffer_MemoryLayout_Type::Tiled;
    Ok(())
});

slot_fn!(PJRT_Buffer_IsOnCpu => fn buffer_is_on_cpu(args: PJRT_Buffer_IsOnCpu_Args, fault) {
    buffer(args.buffer)?;
    args.is_on_cpu = true;
    Ok(())
});

slot_fn!(PJRT_Buffer_UnpaddedDimensions => fn buffer_unpadded_dimensions(args: PJRT_Buffer_UnpaddedDimensions_Args, fault) {
    let b = buffer(args.buffer)?;
    args.unpadded_dims = b.dims.as_ptr();
    args.num_dims = b.dims.len();
    shape_array(fault, &mut args.unpadded_dims, &mut args.num_dims);
    Ok(())
});

slot_fn!(PJRT_Buffer_DynamicDimensionIndices => fn buffer_dynamic_dimension_indices(
    args: PJRT_Buffer_DynamicDimensionIndices_Args, fault
) {
    buffer(args.buffer)?;
    // No dynamic dimensions; a count only a fault makes non-zero.
    static NONE: [usize; 1] = [0];
    args.dynamic_dim_indices = NONE.as_ptr();
    args.num_dynamic_dims = 0;
    shape_array(fault, &mut args.dynamic_dim_indices, &mut args.num_dynamic_dims);
    if injects(fault, Fault::NullOutput) {
        args.num_dynamic_dims = 1;
    }
    Ok(())
});

slot_fn!(PJRT_Buffer_UnsafePointer => fn buffer_unsafe_pointer(args: PJRT_Buffer_UnsafePointer_Args, fault) {
    args.buffer_pointer = buffer(args.buffer)?.bytes.as_ptr() as usize;
    Ok(())
});

slot_fn!(PJRT_Buffer_OpaqueDeviceMemoryDataPointer => fn buffer_device_pointer(
    args: PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args, fault
) {
    args.device_memory_ptr = null_handle(fault, buffer(args.buffer)?.bytes.as_ptr().cast_mut().cast());
    Ok(())
});

slot_fn!(PJRT_Buffer_IncreaseExternalReferenceCount => fn buffer_increase_references(
    args: PJRT_Buffer_IncreaseExternalReferenceCount_Args, fault
) {
    buffer(args.buffer)?.external_references.fetch_add(1, Ordering::SeqCst);
    Ok(())
});

slot_fn!(PJRT_Buffer_DecreaseExternalReferenceCount => fn buffer_decrease_references(
    args: PJRT_Buffer_DecreaseExternalReferenceCount_Args, fault
) {
    let b = buffer(args.buffer)?;
    if b.external_references.fetch_sub(1, Ordering::SeqCst) <= 0 {
        b.external_references.fetch_add(1, Ordering::SeqCst);
        return Err(invalid("fake: no external reference to release"));
    }
    Ok(())
});

slot_fn!(PJRT_Buffer_CopyRawToHost => fn buffer_copy_raw_to_host(args: PJRT_Buffer_CopyRawToHost_Args, fault) {
    let b = buffer(args.buffer)?;
    let (offset, size) = (usize::try_from(args.offset), usize::try_from(args.transfer_size));
    let (Ok(offset), Ok(size)) = (offset, size) else { return Err(invalid("fake: negative offset or size")) };
    if offset.checked_add(size).is_none_or(|end| end > b.bytes.len()) {
        return Err(invalid("fake: the range is outside the buffer"));
    }
    if size > 0 {
        if args.dst.is_null() {
            return Err(invalid("fake: dst is NULL"));
        }
        let bytes = host_copy_of(b, offset, &b.bytes[offset..offset + size]);
        // SAFETY: the client passes `transfer_size` writable bytes at `dst`.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), args.dst.cast::<u8>(), size) };
    }
    args.event = handed_out_event(fault, "PJRT_Buffer_CopyRawToHost");
    Ok(())
});

slot_fn!(PJRT_Buffer_Bitcast => fn buffer_bitcast(args: PJRT_Buffer_Bitcast_Args, fault) {
    let b = buffer(args.buffer)?;
    let dims: Vec<i64> = if args.num_dims == 0 {
        Vec::new()
    } else {
        // SAFETY: the client passes `num_dims` readable dimensions.
        unsafe { std::slice::from_raw_parts(args.dims, args.num_dims) }.to_vec()
    };
    let count = dims.iter().try_fold(1usize, |n, d| usize::try_from(*d).ok().and_then(|d| n.checked_mul(d)));
    let size = count.and_then(|c| ElementType::from_raw(args.element_type).host_bytes(c));
    if size != Some(b.bytes.len()) {
        return Err(invalid("fake: a bitcast keeps the byte size"));
    }
    if injects(fault, Fault::NullOutput) {
        args.out_buffer = null_mut();
        return Ok(());
    }
    args.out_buffer = new_buffer(args.element_type, dims, b.bytes.clone(), b.device, b.memory);
    Ok(())
});

slot_fn!(PJRT_Buffer_Delete => fn buffer_delete(args: PJRT_Buffer_Delete_Args, fault) {
    buffer(args.buffer)?.deleted.store(true, Ordering::SeqCst);
    Ok(())
});

slot_fn!(PJRT_Buffer_IsDeleted => fn buffer_is_deleted(args: PJRT_Buffer_IsDeleted_Args, fault) {
    args.is_deleted = buffer(args.buffer)?.deleted.load(Ordering::SeqCst);
    Ok(())
});

slot_fn!(PJRT_Buffer_Device => fn buffer_device(args: PJRT_Buffer_Device_Args, fault) {
    args.device = null_handle(fault, device_ptr(buffer(args.buffer)?.device));
    Ok(())
});

slot_fn!(PJRT_Buffer_Memory => fn buffer_memory(args: PJRT_Buffer_Memory_Args, fault) {
    args.memory = null_handle(fault, memory_ptr(buffer(args.buffer)?.memory));
    Ok(())
});

slot_fn!(PJRT_Buffer_ReadyEvent => fn buffer_ready_event(args: PJRT_Buffer_ReadyEvent_Args, fault) {
    let b = buffer(args.buffer)?;
    args.event = handed_out_event(fault, "PJRT_Buffer_ReadyEvent");
    if let (Some(error), false) = (&b.error, args.event.is_null()) {
        // An error buffer is never ready with data: its event completes with the error at once.
        // SAFETY: the event was just made by `new_event`.
        let state = unsafe { &(*args.event.cast::<FakeEvent>()).0 };
        let mut inner = lock(&state.inner);
        inner.result = Some(Some(error.clone()));
    }
    Ok(())
});

// ---- the async host-to-device transfer manager ----

/// One buffer of a transfer manager: its shape and the bytes received so far.
struct FakeTransferSlot {
    element_type: sys::PJRT_Buffer_Type,
    dims: Vec<i64>,
    bytes: Mutex<Vec<u8>>,
    error: Mutex<Option<(PJRT_Error_Code, String)>>,
}

struct FakeTransferManager {
    device: usize,
    memory: usize,
    slots: Vec<FakeTransferSlot>,
}

fn transfer_manager<'a>(
    ptr: *mut sys::PJRT_AsyncHostToDeviceTransferManager,
) -> Result<&'a FakeTransferManager, *mut PJRT_Error> {
    // SAFETY: the client library passes managers this plugin created and has not destroyed.
    unsafe { handle::<FakeTransferManager, _>(ptr, "transfer manager") }
}

fn transfer_slot(manager: &FakeTransferManager, index: c_int) -> Result<&FakeTransferSlot, *mut PJRT_Error> {
    usize::try_from(index).ok().and_then(|i| manager.slots.get(i)).ok_or_else(|| invalid("fake: no such buffer index"))
}

slot_fn!(PJRT_Client_CreateBuffersForAsyncHostToDevice => fn client_create_transfer_manager(
    args: PJRT_Client_CreateBuffersForAsyncHostToDevice_Args, fault
) {
    client(args.client)?;
    let memory = memory_index(args.memory)?;
    if args.num_shape_specs == 0 || args.shape_specs.is_null() {
        return Err(invalid("fake: no shape specs"));
    }
    // SAFETY: the client passes `num_shape_specs` readable specs.
    let specs = unsafe { std::slice::from_raw_parts(args.shape_specs, args.num_shape_specs) };
    let mut slots = Vec::with_capacity(specs.len());
    for spec in specs {
        // SAFETY: each spec's dims are readable for `num_dims` values.
        let (dims, size) = unsafe { shape_of(spec.dims, spec.num_dims, spec.element_type) }?;
        slots.push(FakeTransferSlot {
            element_type: spec.element_type,
            dims,
            bytes: Mutex::new(vec![0; size]),
            error: Mutex::new(None),
        });
    }
    if injects(fault, Fault::NullOutput) {
        args.transfer_manager = null_mut();
        return Ok(());
    }
    let manager = FakeTransferManager { device: MEMORIES[memory].devices[0], memory, slots };
    args.transfer_manager = Box::into_raw(Box::new(manager)).cast();
    bump(&COUNTERS.transfer_managers_created);
    Ok(())
});

slot_fn!(PJRT_AsyncHostToDeviceTransferManager_Destroy => fn transfer_manager_destroy(
    args: PJRT_AsyncHostToDeviceTransferManager_Destroy_Args, fault
) {
    if !args.transfer_manager.is_null() {
        // SAFETY: a manager this plugin created; the client destroys it once.
        drop(unsafe { Box::from_raw(args.transfer_manager.cast::<FakeTransferManager>()) });
        bump(&COUNTERS.transfer_managers_destroyed);
    }
    Ok(())
});

slot_fn!(PJRT_AsyncHostToDeviceTransferManager_TransferData => fn transfer_manager_transfer_data(
    args: PJRT_AsyncHostToDeviceTransferManager_TransferData_Args, fault
) {
    let slot = transfer_slot(transfer_manager(args.transfer_manager)?, args.buffer_index)?;
    let (Ok(offset), Ok(size)) = (usize::try_from(args.offset), usize::try_from(args.transfer_size)) else {
        return Err(invalid("fake: negative offset or size"));
    };
    let mut bytes = lock(&slot.bytes);
    if offset.checked_add(size).is_none_or(|end| end > bytes.len()) {
        return Err(invalid("fake: the transfer is outside the buffer"));
    }
    // SAFETY: the client passes `transfer_size` readable bytes, alive until the done event.
    bytes[offset..offset + size].copy_from_slice(unsafe { sys_bytes(args.data.cast(), size) });
    drop(bytes);
    args.done_with_h2d_transfer = handed_out_event(fault, "PJRT_AsyncHostToDeviceTransferManager_TransferData");
    Ok(())
});

slot_fn!(PJRT_AsyncHostToDeviceTransferManager_TransferLiteral => fn transfer_manager_transfer_literal(
    args: PJRT_AsyncHostToDeviceTransferManager_TransferLiteral_Args, fault
) {
    let slot = transfer_slot(transfer_manager(args.transfer_manager)?, args.buffer_index)?;
    if args.shape_layout.is_null() {
        return Err(invalid("fake: a literal needs a layout (the real plugin aborts without one)"));
    }
    let mut bytes = lock(&slot.bytes);
    let size = bytes.len();
    // SAFETY: the client passes the whole literal: the buffer's size in bytes.
    bytes.copy_from_slice(unsafe { sys_bytes(args.data.cast(), size) });
    drop(bytes);
    args.done_with_h2d_transfer = handed_out_event(fault, "PJRT_AsyncHostToDeviceTransferManager_TransferLiteral");
    Ok(())
});

slot_fn!(PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer => fn transfer_manager_retrieve_buffer(
    args: PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer_Args, fault
) {
    let manager = transfer_manager(args.transfer_manager)?;
    let slot = transfer_slot(manager, args.buffer_index)?;
    if injects(fault, Fault::NullOutput) {
        args.buffer_out = null_mut();
        return Ok(());
    }
    let raw = new_buffer(slot.element_type, slot.dims.clone(), lock(&slot.bytes).clone(), manager.device, manager.memory);
    // SAFETY: just made by `new_buffer`, not shared yet.
    unsafe { (*raw.cast::<FakeBuffer>()).error = lock(&slot.error).clone() };
    args.buffer_out = raw;
    Ok(())
});

slot_fn!(PJRT_AsyncHostToDeviceTransferManager_Device => fn transfer_manager_device(
    args: PJRT_AsyncHostToDeviceTransferManager_Device_Args, fault
) {
    args.device_out = null_handle(fault, device_ptr(transfer_manager(args.transfer_manager)?.device));
    Ok(())
});

slot_fn!(PJRT_AsyncHostToDeviceTransferManager_BufferCount => fn transfer_manager_buffer_count(
    args: PJRT_AsyncHostToDeviceTransferManager_BufferCount_Args, fault
) {
    args.buffer_count = transfer_manager(args.transfer_manager)?.slots.len();
    Ok(())
});

slot_fn!(PJRT_AsyncHostToDeviceTransferManager_BufferSize => fn transfer_manager_buffer_size(
    args: PJRT_AsyncHostToDeviceTransferManager_BufferSize_Args, fault
) {
    let size = lock(&transfer_slot(transfer_manager(args.transfer_manager)?, args.buffer_index)?.bytes).len();
    // Hostile sizes: more than the buffer holds (TransferData still checks its real size).
    args.buffer_size = if config().hostile.sizes.is_some() { size + 8 } else { size };
    Ok(())
});

slot_fn!(PJRT_AsyncHostToDeviceTransferManager_SetBufferError => fn transfer_manager_set_buffer_error(
    args: PJRT_AsyncHostToDeviceTransferManager_SetBufferError_Args, fault
) {
    let slot = transfer_slot(transfer_manager(args.transfer_manager)?, args.buffer_index)?;
    // SAFETY: the client passes `error_message_size` readable bytes.
    let message = String::from_utf8_lossy(unsafe { sys_bytes(args.error_message, args.error_message_size) }).into_owned();
    *lock(&slot.error) = Some((args.error_code, message));
    Ok(())
});

slot_fn!(PJRT_AsyncHostToDeviceTransferManager_AddMetadata => fn transfer_manager_add_metadata(
    args: PJRT_AsyncHostToDeviceTransferManager_AddMetadata_Args, fault
) {
    transfer_manager(args.transfer_manager)?;
    if args.num_metadata > 0 && args.transfer_metadata.is_null() {
        return Err(invalid("fake: metadata is NULL"));
    }
    Ok(())
});

/// Dims and element type of a shape the client passes, checked like a real plugin would.
///
/// # Safety
/// `dims` must be NULL or point to `num_dims` readable values.
unsafe fn shape_of(
    dims: *const i64,
    num_dims: usize,
    element_type: sys::PJRT_Buffer_Type,
) -> Result<(Vec<i64>, usize), *mut PJRT_Error> {
    let dims: Vec<i64> =
        if num_dims == 0 { Vec::new() } else { unsafe { std::slice::from_raw_parts(dims, num_dims) }.to_vec() };
    let count = dims.iter().try_fold(1usize, |n, d| usize::try_from(*d).ok().and_then(|d| n.checked_mul(d)));
    let size = count
        .and_then(|c| ElementType::from_raw(element_type).host_bytes(c))
        .ok_or_else(|| invalid("fake: a shape with a negative dimension, a bad type or too many bytes"))?;
    Ok((dims, size))
}

slot_fn!(PJRT_Client_CreateUninitializedBuffer => fn client_create_uninitialized_buffer(
    args: PJRT_Client_CreateUninitializedBuffer_Args, fault
) {
    client(args.client)?;
    // SAFETY: the client passes `shape_num_dims` readable dimensions.
    let (dims, size) = unsafe { shape_of(args.shape_dims, args.shape_num_dims, args.shape_element_type) }?;
    let (device, memory) = if args.memory.is_null() {
        let device = device_index(args.device)?;
        (device, DEVICES[device].default_memory)
    } else {
        let memory = memory_index(args.memory)?;
        (MEMORIES[memory].devices[0], memory)
    };
    args.buffer = if injects(fault, Fault::NullOutput) {
        null_mut()
    } else {
        new_buffer(args.shape_element_type, dims, vec![0; size], device, memory)
    };
    Ok(())
});

slot_fn!(PJRT_Client_CreateErrorBuffer => fn client_create_error_buffer(args: PJRT_Client_CreateErrorBuffer_Args, fault) {
    client(args.client)?;
    // SAFETY: the client passes `shape_num_dims` readable dimensions.
    let (dims, size) = unsafe { shape_of(args.shape_dims, args.shape_num_dims, args.shape_element_type) }?;
    let memory = memory_index(args.memory)?;
    if args.error_code.0 == 0 {
        return Err(invalid("fake: an error buffer needs an error code"));
    }
    // SAFETY: the client passes `error_message_size` readable bytes.
    let message = String::from_utf8_lossy(unsafe { sys_bytes(args.error_message, args.error_message_size) }).into_owned();
    if injects(fault, Fault::NullOutput) {
        args.buffer = null_mut();
        return Ok(());
    }
    let raw = new_buffer(args.shape_element_type, dims, vec![0; size], MEMORIES[memory].devices[0], memory);
    // SAFETY: just made by `new_buffer`, not shared yet.
    unsafe { (*raw.cast::<FakeBuffer>()).error = Some((args.error_code, message)) };
    args.buffer = raw;
    Ok(())
});

// Without `dst`, reports the size; with it, copies at once (the event may still complete late:
// the client must not rely on the data before it does).
slot_fn!(PJRT_Buffer_ToHostBuffer => fn buffer_to_host(args: PJRT_Buffer_ToHostBuffer_Args, fault) {
    let buffer = live_buffer(args.src)?;
    if !args.host_layout.is_null() {
        return Err(new_error(PJRT_Error_Code::UNIMPLEMENTED, "fake: host layouts"));
    }
    let size = buffer.bytes.len();
    if args.dst.is_null() {
        args.dst_size = if injects(fault, Fault::BadCount) {
            IMPOSSIBLE_COUNT
        } else {
            match config().hostile.sizes {
                None => size,
                Some(SizeLie::More) => size + 8,
                Some(SizeLie::Fewer) => size.saturating_sub(1),
            }
        };
        return Ok(());
    }
    if args.dst_size < size {
        return Err(invalid(format!("fake: dst_size {} < {size}", args.dst_size)));
    }
    let bytes = host_copy_of(buffer, 0, &buffer.bytes);
    // SAFETY: the client passes `dst_size >= size` writable bytes at `dst`.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), args.dst.cast::<u8>(), size) };
    args.event = handed_out_event(fault, "PJRT_Buffer_ToHostBuffer");
    Ok(())
});

slot_fn!(PJRT_Buffer_CopyToDevice => fn buffer_copy_to_device(args: PJRT_Buffer_CopyToDevice_Args, fault) {
    let source = live_buffer(args.buffer)?;
    let device = device_index(args.dst_device)?;
    args.dst_buffer = if injects(fault, Fault::NullOutput) {
        null_mut()
    } else {
        let memory = DEVICES[device].default_memory;
        new_buffer(source.element_type, source.dims.clone(), source.bytes.clone(), device, memory)
    };
    Ok(())
});

slot_fn!(PJRT_Buffer_CopyToMemory => fn buffer_copy_to_memory(args: PJRT_Buffer_CopyToMemory_Args, fault) {
    let source = live_buffer(args.buffer)?;
    let memory = memory_index(args.dst_memory)?;
    args.dst_buffer = if injects(fault, Fault::NullOutput) {
        null_mut()
    } else {
        let device = MEMORIES[memory].devices[0];
        new_buffer(source.element_type, source.dims.clone(), source.bytes.clone(), device, memory)
    };
    Ok(())
});

// ---------------------------------------------------------------------------------------------
// Compilation and execution: every program compiles to `fake_add(f32[4], f32[4]) -> f32[4]`.

/// The object behind a `PJRT_LoadedExecutable*`.
struct FakeLoaded {
    /// The devices it runs on (empty when portable).
    devices: Vec<*mut sys::PJRT_Device>,
    /// (replica, partition) of each device in `devices`.
    logical_ids: Vec<sys::PJRT_LogicalDeviceIds>,
    replicas: usize,
    partitions: usize,
    deleted: AtomicBool,
}

/// The object behind a `PJRT_Executable*` (a new one per `GetExecutable`).
struct FakeExecutable {
    replicas: usize,
    partitions: usize,
}

const EXECUTABLE_NAME: &str = "fake_add";
const FINGERPRINT: &str = "fake-fingerprint-1";
const NUM_PARAMETERS: usize = 2;
const PARAMETER_BYTES: usize = 16;
static OUTPUT_TYPES: [sys::PJRT_Buffer_Type; 2] = [sys::PJRT_Buffer_Type::F32, sys::PJRT_Buffer_Type::F32];
static OUTPUT_DIMS: [i64; 1] = [4];
static OUTPUT_DIM_SIZES: [usize; 1] = [1];
/// An output rank that cannot be: summing it with anything overflows.
static BAD_OUTPUT_DIM_SIZES: [usize; 1] = [usize::MAX];
/// `HloModuleProto { host_program_shape: { parameters: [f32[4], f32[4]], result: f32[4] } }`,
/// encoded by hand (field 4 → ProgramShapeProto; ShapeProto: element_type = 2, dimensions = 3).
static OPTIMIZED_HLO: [u8; 23] = [
    0x22, 21, // HloModuleProto.host_program_shape, 21 bytes
    0x0a, 5, 0x10, 11, 0x1a, 1, 4, // parameters: f32[4]
    0x0a, 5, 0x10, 11, 0x1a, 1, 4, // parameters: f32[4]
    0x12, 5, 0x10, 11, 0x1a, 1, 4, // result: f32[4]
];
const OPTIMIZED_FORMAT: &str = "hlo";

slot_fn!(PJRT_Client_Compile => fn client_compile(args: PJRT_Client_Compile_Args, fault) {
    bump(&COUNTERS.compile_calls);
    client(args.client)?;
    // SAFETY: the client passes a valid program for the call.
    let program = unsafe { checked_args(args.program.cast_mut(), "PJRT_Program") }?;
    if program.code.is_null() || program.code_size == 0 {
        return Err(invalid("fake: empty program"));
    }
    let options = if args.compile_options.is_null() {
        return Err(invalid("fake: no compile options"));
    } else {
        // SAFETY: the client passes `compile_options_size` readable bytes.
        unsafe { std::slice::from_raw_parts(args.compile_options.cast::<u8>(), args.compile_options_size) }
    };
    let options = CompileOptions::from_proto_bytes(options).map_err(|e| invalid(format!("fake: {e}")))?;
    let replicas = options.replicas().max(1) as usize;
    let partitions = options.partitions().max(1) as usize;
    let count = replicas * partitions;
    if count > DEVICES.len() {
        return Err(invalid(format!("fake: {count} devices asked for, {} exist", DEVICES.len())));
    }
    if injects(fault, Fault::NullOutput) {
        args.executable = null_mut();
        return Ok(());
    }
    args.executable = new_loaded(replicas, partitions, options.is_portable());
    Ok(())
});

/// A loaded executable for `replicas` × `partitions` devices (none when portable).
fn new_loaded(replicas: usize, partitions: usize, portable: bool) -> *mut sys::PJRT_LoadedExecutable {
    let count = replicas * partitions;
    let devices: Vec<_> = if portable { Vec::new() } else { (0..count).map(device_ptr).collect() };
    let logical_ids = (0..devices.len())
        .map(|i| sys::PJRT_LogicalDeviceIds {
            replica: (i / partitions) as c_int,
            partition: (i % partitions) as c_int,
        })
        .collect();
    let loaded = FakeLoaded { devices, logical_ids, replicas, partitions, deleted: AtomicBool::new(false) };
    bump(&COUNTERS.loaded_executables_created);
    Box::into_raw(Box::new(loaded)).cast()
}

/// What `PJRT_Executable_Serialize` writes: this prefix, then the replica and partition counts.
const SERIALIZED_PREFIX: &[u8] = b"fake-executable ";

/// Reads (replicas, partitions) back from serialized bytes; anything else is not ours.
fn parse_serialized(bytes: &[u8]) -> Option<(usize, usize)> {
    let rest = std::str::from_utf8(bytes.strip_prefix(SERIALIZED_PREFIX)?).ok()?;
    let (replicas, partitions) = rest.split_once(' ')?;
    let (replicas, partitions): (usize, usize) = (replicas.parse().ok()?, partitions.parse().ok()?);
    (replicas >= 1 && partitions >= 1 && replicas * partitions <= DEVICES.len()).then_some((replicas, partitions))
}

slot_fn!(PJRT_Executable_Serialize => fn executable_serialize(args: PJRT_Executable_Serialize_Args, fault) {
    let executable = executable(args.executable.cast_mut())?;
    let mut bytes = SERIALIZED_PREFIX.to_vec();
    bytes.extend(format!("{} {}", executable.replicas, executable.partitions).bytes());
    let (ptr, len, owner) = serialized(bytes);
    args.serialized_bytes = ptr;
    args.serialized_bytes_size = len;
    args.serialized_executable = owner.cast();
    args.serialized_executable_deleter = Some(free_serialized::<sys::PJRT_SerializedExecutable>);
    shape_array(fault, &mut args.serialized_bytes, &mut args.serialized_bytes_size);
    Ok(())
});

slot_fn!(PJRT_Executable_DeserializeAndLoad => fn executable_deserialize_and_load(
    args: PJRT_Executable_DeserializeAndLoad_Args, fault
) {
    client(args.client)?;
    // SAFETY: the client passes `serialized_executable_size` readable bytes.
    let bytes = unsafe { sys_bytes(args.serialized_executable, args.serialized_executable_size) };
    let Some((replicas, partitions)) = parse_serialized(bytes) else {
        return Err(invalid("fake: not a serialized executable of this plugin"));
    };
    if injects(fault, Fault::NullOutput) {
        args.loaded_executable = null_mut();
        return Ok(());
    }
    args.loaded_executable = new_loaded(replicas, partitions, false);
    Ok(())
});

fn loaded<'a>(ptr: *mut sys::PJRT_LoadedExecutable) -> Result<&'a FakeLoaded, *mut PJRT_Error> {
    // SAFETY: the client library passes executables this plugin created and has not destroyed.
    unsafe { handle::<FakeLoaded, _>(ptr, "loaded executable") }
}

fn executable<'a>(ptr: *mut sys::PJRT_Executable) -> Result<&'a FakeExecutable, *mut PJRT_Error> {
    // SAFETY: as above.
    unsafe { handle::<FakeExecutable, _>(ptr, "executable") }
}

slot_fn!(PJRT_LoadedExecutable_Destroy => fn loaded_destroy(args: PJRT_LoadedExecutable_Destroy_Args, fault) {
    if !args.executable.is_null() {
        // SAFETY: an executable this plugin created; the client library destroys it once.
        drop(unsafe { Box::from_raw(args.executable.cast::<FakeLoaded>()) });
        bump(&COUNTERS.loaded_executables_destroyed);
    }
    Ok(())
});

slot_fn!(PJRT_LoadedExecutable_GetExecutable => fn loaded_get_executable(
    args: PJRT_LoadedExecutable_GetExecutable_Args, fault
) {
    let loaded = loaded(args.loaded_executable)?;
    if injects(fault, Fault::NullOutput) {
        args.executable = null_mut();
        return Ok(());
    }
    let executable = FakeExecutable { replicas: loaded.replicas, partitions: loaded.partitions };
    args.executable = Box::into_raw(Box::new(executable)).cast();
    bump(&COUNTERS.executables_created);
    Ok(())
});

slot_fn!(PJRT_Executable_Destroy => fn executable_destroy(args: PJRT_Executable_Destroy_Args, fault) {
    if !args.executable.is_null() {
        // SAFETY: an executable this plugin created; the client library destroys it once.
        drop(unsafe { Box::from_raw(args.executable.cast::<FakeExecutable>()) });
        bump(&COUNTERS.executables_destroyed);
    }
    Ok(())
});

slot_fn!(PJRT_Executable_Name => fn executable_name(args: PJRT_Executable_Name_Args, fault) {
    executable(args.executable)?;
    set_string(fault, EXECUTABLE_NAME, &mut args.executable_name, &mut args.executable_name_size);
    Ok(())
});

slot_fn!(PJRT_Executable_NumReplicas => fn executable_num_replicas(args: PJRT_Executable_NumReplicas_Args, fault) {
    args.num_replicas = executable(args.executable)?.replicas;
    Ok(())
});

slot_fn!(PJRT_Executable_NumPartitions => fn executable_num_partitions(args: PJRT_Executable_NumPartitions_Args, fault) {
    args.num_partitions = executable(args.executable)?.partitions;
    Ok(())
});

slot_fn!(PJRT_Executable_NumOutputs => fn executable_num_outputs(args: PJRT_Executable_NumOutputs_Args, fault) {
    executable(args.executable)?;
    args.num_outputs = if injects(fault, Fault::BadCount) { IMPOSSIBLE_COUNT } else { 1 };
    Ok(())
});

slot_fn!(PJRT_Executable_OutputElementTypes => fn executable_output_types(
    args: PJRT_Executable_OutputElementTypes_Args, fault
) {
    executable(args.executable)?;
    args.output_types = OUTPUT_TYPES.as_ptr().cast_mut();
    args.num_output_types = 1;
    if injects(fault, Fault::NullOutput) {
        args.output_types = null_mut();
    } else if injects(fault, Fault::BadCount) {
        // Two types (the array has two) for an executable with one output.
        args.num_output_types = OUTPUT_TYPES.len();
    }
    Ok(())
});

slot_fn!(PJRT_Executable_OutputDimensions => fn executable_output_dimensions(
    args: PJRT_Executable_OutputDimensions_Args, fault
) {
    executable(args.executable)?;
    args.num_outputs = 1;
    args.dims = OUTPUT_DIMS.as_ptr();
    args.dim_sizes = OUTPUT_DIM_SIZES.as_ptr();
    if injects(fault, Fault::NullOutput) {
        args.dims = null();
        args.dim_sizes = null();
    } else if injects(fault, Fault::BadCount) {
        args.dim_sizes = BAD_OUTPUT_DIM_SIZES.as_ptr();
    }
    Ok(())
});

// The two-call protocol: `code` NULL asks for the size; then the caller passes a buffer.
slot_fn!(PJRT_Executable_OptimizedProgram => fn executable_optimized_program(
    args: PJRT_Executable_OptimizedProgram_Args, fault
) {
    executable(args.executable)?;
    // SAFETY: the client passes a valid program struct for the call.
    let program = unsafe { checked_args(args.program, "PJRT_Program") }?;
    program.format = OPTIMIZED_FORMAT.as_ptr().cast();
    program.format_size = OPTIMIZED_FORMAT.len();
    if injects(fault, Fault::NullOutput) {
        program.format = null();
    }
    if program.code.is_null() {
        program.code_size = if injects(fault, Fault::BadCount) { IMPOSSIBLE_COUNT } else { OPTIMIZED_HLO.len() };
        return Ok(());
    }
    if program.code_size < OPTIMIZED_HLO.len() {
        return Err(invalid(format!("fake: code_size {} is too small", program.code_size)));
    }
    // SAFETY: the caller passes `code_size` writable bytes at `code`.
    unsafe { std::ptr::copy_nonoverlapping(OPTIMIZED_HLO.as_ptr(), program.code.cast::<u8>(), OPTIMIZED_HLO.len()) };
    program.code_size = OPTIMIZED_HLO.len();
    Ok(())
});

slot_fn!(PJRT_Executable_Fingerprint => fn executable_fingerprint(args: PJRT_Executable_Fingerprint_Args, fault) {
    executable(args.executable)?;
    set_string(fault, FINGERPRINT, &mut args.executable_fingerprint, &mut args.executable_fingerprint_size);
    Ok(())
});

// ---- the client's topology (owned by the client: never destroyed) ----

struct FakeTopology;
static TOPOLOGY: FakeTopology = FakeTopology;
/// The memory kind ids of the fake's memories ("device" 0, "pinned_host" 1).
static KIND_IDS: [c_int; 2] = [0, 1];

/// Addresses of the live topologies made by `Create` or `Deserialize` (each a boxed
/// `FakeTopology`, destroyed with `PJRT_TopologyDescription_Destroy`).
static OWNED_TOPOLOGIES: Mutex<Vec<usize>> = Mutex::new(Vec::new());

fn topology(ptr: *const sys::PJRT_TopologyDescription) -> Result<(), *mut PJRT_Error> {
    if std::ptr::eq(ptr.cast::<FakeTopology>(), &TOPOLOGY) || lock(&OWNED_TOPOLOGIES).contains(&(ptr as usize)) {
        Ok(())
    } else {
        Err(invalid("fake: not a topology of this plugin"))
    }
}

/// A new topology the caller owns (the same devices as the client's).
fn new_owned_topology() -> *mut sys::PJRT_TopologyDescription {
    let raw = Box::into_raw(Box::new(FakeTopology));
    lock(&OWNED_TOPOLOGIES).push(raw as usize);
    bump(&COUNTERS.topologies_created);
    raw.cast()
}

/// What `PJRT_TopologyDescription_Serialize` writes and `Deserialize` reads.
const SERIALIZED_TOPOLOGY: &[u8] = b"fake topology";

slot_fn!(PJRT_TopologyDescription_Create => fn topology_create(args: PJRT_TopologyDescription_Create_Args, fault) {
    // SAFETY: the client passes `topology_name_size` readable bytes.
    let name = unsafe { sys_bytes(args.topology_name, args.topology_name_size) };
    if name != PLATFORM_NAME.as_bytes() {
        return Err(invalid(format!("fake: no topology named {:?}", String::from_utf8_lossy(name))));
    }
    args.topology = null_handle(fault, new_owned_topology());
    if args.topology.is_null() {
        // Nobody else can free it: a real plugin would leak it, the fake takes it back.
        let raw = lock(&OWNED_TOPOLOGIES).pop().unwrap_or(0);
        // SAFETY: made just above and never handed out.
        drop(unsafe { Box::from_raw(raw as *mut FakeTopology) });
        bump(&COUNTERS.topologies_destroyed);
    }
    Ok(())
});

slot_fn!(PJRT_TopologyDescription_Deserialize => fn topology_deserialize(
    args: PJRT_TopologyDescription_Deserialize_Args, fault
) {
    // SAFETY: the client passes `serialized_topology_size` readable bytes.
    if unsafe { sys_bytes(args.serialized_topology, args.serialized_topology_size) } != SERIALIZED_TOPOLOGY {
        return Err(invalid("fake: not a serialized topology of this plugin"));
    }
    if injects(fault, Fault::NullOutput) {
        args.topology = null_mut();
        return Ok(());
    }
    args.topology = new_owned_topology();
    Ok(())
});

slot_fn!(PJRT_TopologyDescription_Destroy => fn topology_destroy(args: PJRT_TopologyDescription_Destroy_Args, fault) {
    let mut owned = lock(&OWNED_TOPOLOGIES);
    let Some(at) = owned.iter().position(|p| *p == args.topology as usize) else {
        return Err(invalid("fake: not a topology the caller owns"));
    };
    owned.swap_remove(at);
    // SAFETY: a topology this plugin made and handed out; removed from the live list above.
    drop(unsafe { Box::from_raw(args.topology.cast::<FakeTopology>()) });
    bump(&COUNTERS.topologies_destroyed);
    Ok(())
});

/// The replica and partition counts of serialized compile options the client passed, checked
/// against the fake's devices.
///
/// # Safety
/// `ptr` must be NULL or point to `len` readable bytes.
unsafe fn compile_options(ptr: *const c_char, len: usize) -> Result<(usize, usize, bool), *mut PJRT_Error> {
    if ptr.is_null() {
        return Err(invalid("fake: no compile options"));
    }
    // SAFETY: the caller's guarantee.
    let options =
        CompileOptions::from_proto_bytes(unsafe { sys_bytes(ptr, len) }).map_err(|e| invalid(format!("fake: {e}")))?;
    let replicas = options.replicas().max(1) as usize;
    let partitions = options.partitions().max(1) as usize;
    if replicas * partitions > DEVICES.len() {
        return Err(invalid(format!("fake: {} devices asked for, {} exist", replicas * partitions, DEVICES.len())));
    }
    Ok((replicas, partitions, options.is_portable()))
}

// Ahead-of-time compilation: an executable that is not loaded anywhere.
slot_fn!(PJRT_Compile => fn topology_compile(args: PJRT_Compile_Args, fault) {
    topology(args.topology)?;
    if !args.client.is_null() {
        client(args.client)?;
    }
    // SAFETY: the client passes a valid program for the call.
    let program = unsafe { checked_args(args.program.cast_mut(), "PJRT_Program") }?;
    if program.code.is_null() || program.code_size == 0 {
        return Err(invalid("fake: empty program"));
    }
    // SAFETY: the client passes `compile_options_size` readable bytes.
    let (replicas, partitions, _) = unsafe { compile_options(args.compile_options, args.compile_options_size) }?;
    if injects(fault, Fault::NullOutput) {
        args.executable = null_mut();
        return Ok(());
    }
    args.executable = Box::into_raw(Box::new(FakeExecutable { replicas, partitions })).cast();
    bump(&COUNTERS.executables_created);
    Ok(())
});

slot_fn!(PJRT_Client_Load => fn client_load(args: PJRT_Client_Load_Args, fault) {
    client(args.client)?;
    executable(args.executable)?;
    // SAFETY: the client passes `compile_options_size` readable bytes.
    let (replicas, partitions, portable) = unsafe { compile_options(args.compile_options, args.compile_options_size) }?;
    if injects(fault, Fault::NullOutput) {
        args.loaded_executable = null_mut();
        return Ok(());
    }
    args.loaded_executable = new_loaded(replicas, partitions, portable);
    Ok(())
});

slot_fn!(PJRT_Client_TopologyDescription => fn client_topology(args: PJRT_Client_TopologyDescription_Args, fault) {
    client(args.client)?;
    args.topology = null_handle(fault, std::ptr::addr_of!(TOPOLOGY).cast_mut().cast());
    Ok(())
});

slot_fn!(PJRT_TopologyDescription_PlatformName => fn topology_platform_name(
    args: PJRT_TopologyDescription_PlatformName_Args, fault
) {
    topology(args.topology)?;
    set_string(fault, PLATFORM_NAME, &mut args.platform_name, &mut args.platform_name_size);
    Ok(())
});

slot_fn!(PJRT_TopologyDescription_PlatformVersion => fn topology_platform_version(
    args: PJRT_TopologyDescription_PlatformVersion_Args, fault
) {
    topology(args.topology)?;
    set_string(fault, PLATFORM_VERSION, &mut args.platform_version, &mut args.platform_version_size);
    Ok(())
});

slot_fn!(PJRT_TopologyDescription_GetDeviceDescriptions => fn topology_device_descriptions(
    args: PJRT_TopologyDescription_GetDeviceDescriptions_Args, fault
) {
    topology(args.topology)?;
    static DESCRIPTIONS: OnceLock<Immortal<Vec<*mut sys::PJRT_DeviceDescription>>> = OnceLock::new();
    let descriptions = &DESCRIPTIONS.get_or_init(|| Immortal((0..DEVICES.len()).map(description_ptr).collect())).0;
    args.descriptions = descriptions.as_ptr();
    args.num_descriptions = descriptions.len();
    shape_array(fault, &mut args.descriptions, &mut args.num_descriptions);
    Ok(())
});

slot_fn!(PJRT_TopologyDescription_Attributes => fn topology_attributes(args: PJRT_TopologyDescription_Attributes_Args, fault) {
    topology(args.topology)?;
    let attributes = attributes();
    args.attributes = attributes.as_ptr();
    args.num_attributes = attributes.len();
    shape_array(fault, &mut args.attributes, &mut args.num_attributes);
    Ok(())
});

slot_fn!(PJRT_TopologyDescription_Fingerprint => fn topology_fingerprint(args: PJRT_TopologyDescription_Fingerprint_Args, fault) {
    topology(args.topology)?;
    args.fingerprint = 0xfa4e;
    Ok(())
});

slot_fn!(PJRT_TopologyDescription_Serialize => fn topology_serialize(args: PJRT_TopologyDescription_Serialize_Args, fault) {
    topology(args.topology)?;
    let (ptr, len, owner) = serialized(SERIALIZED_TOPOLOGY.to_vec());
    args.serialized_bytes = ptr;
    args.serialized_bytes_size = len;
    args.serialized_topology = owner.cast();
    args.serialized_topology_deleter = Some(free_serialized::<sys::PJRT_SerializedTopology>);
    shape_array(fault, &mut args.serialized_bytes, &mut args.serialized_bytes_size);
    Ok(())
});

slot_fn!(PJRT_TopologyDescription_GetMemorySpaceKindIds => fn topology_kind_ids(
    args: PJRT_TopologyDescription_GetMemorySpaceKindIds_Args, fault
) {
    topology(args.topology)?;
    args.memory_space_kind_ids = KIND_IDS.as_ptr();
    args.num_memory_space_kind_ids = KIND_IDS.len();
    shape_array(fault, &mut args.memory_space_kind_ids, &mut args.num_memory_space_kind_ids);
    Ok(())
});

/// Canonical shapes handed out, by the address of their bytes (the deleter gets only that).
static CANONICAL_SHAPES: Mutex<Vec<(usize, Box<FakeSerialized>)>> = Mutex::new(Vec::new());

unsafe extern "C" fn free_canonical_shape(bytes: *const c_char) {
    let mut shapes = lock(&CANONICAL_SHAPES);
    if let Some(at) = shapes.iter().position(|(p, _)| *p == bytes as usize) {
        shapes.swap_remove(at);
        bump(&COUNTERS.serialized_destroyed);
    }
}

slot_fn!(PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace => fn topology_canonical_shape(
    args: PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace_Args, fault
) {
    topology(args.topology)?;
    if !KIND_IDS.contains(&args.memory_space_kind_id) {
        return Err(invalid(format!("fake: no memory kind {}", args.memory_space_kind_id)));
    }
    // SAFETY: the client passes `num_dims` readable dimensions.
    let dims: &[i64] = if args.num_dims == 0 { &[] } else { unsafe { std::slice::from_raw_parts(args.dims, args.num_dims) } };
    if dims.iter().any(|d| !(0..128).contains(d)) || dims.len() > 100 {
        return Err(invalid("fake: canonical shapes only for small arrays"));
    }
    // xla.ShapeProto { element_type (2), dimensions (3, packed), layout (5) { minor_to_major (1, packed) } }.
    let mut bytes = vec![0x10, args.element_type.0 as u8, 0x1a, dims.len() as u8];
    bytes.extend(dims.iter().map(|d| *d as u8));
    let minor_to_major: Vec<u8> = (0..dims.len() as u8).rev().collect();
    bytes.extend([0x2a, minor_to_major.len() as u8 + 2, 0x0a, minor_to_major.len() as u8]);
    bytes.extend(minor_to_major);
    let owned = Box::new(FakeSerialized(bytes));
    args.serialized_shape = owned.0.as_ptr().cast();
    args.serialized_shape_size = owned.0.len();
    args.serialized_shape_deleter = Some(free_canonical_shape);
    lock(&CANONICAL_SHAPES).push((args.serialized_shape as usize, owned));
    bump(&COUNTERS.serialized_created);
    shape_array(fault, &mut args.serialized_shape, &mut args.serialized_shape_size);
    if args.serialized_shape.is_null() {
        // The client cannot free what it cannot name: free it here, as a real plugin would leak it.
        lock(&CANONICAL_SHAPES).pop();
        bump(&COUNTERS.serialized_destroyed);
    }
    Ok(())
});

// ---- executable metadata ----

slot_fn!(PJRT_Executable_SizeOfGeneratedCodeInBytes => fn executable_code_size(
    args: PJRT_Executable_SizeOfGeneratedCodeInBytes_Args, fault
) {
    executable(args.executable)?;
    args.size_in_bytes = 4096;
    Ok(())
});

slot_fn!(PJRT_Executable_GetCostAnalysis => fn executable_cost_analysis(args: PJRT_Executable_GetCostAnalysis_Args, fault) {
    executable(args.executable)?;
    static PROPERTIES: OnceLock<Immortal<Vec<sys::PJRT_NamedValue>>> = OnceLock::new();
    let properties = &PROPERTIES.get_or_init(|| Immortal(vec![int64_attribute(c"flops", 4)])).0;
    args.properties = properties.as_ptr();
    args.num_properties = properties.len();
    shape_array(fault, &mut args.properties, &mut args.num_properties);
    Ok(())
});

/// `device` as a C string array with sizes, `n` times (the memory kind of every output or
/// parameter).
fn device_kinds() -> (&'static [*const c_char], &'static [usize]) {
    static KINDS: OnceLock<Immortal<(Vec<*const c_char>, Vec<usize>)>> = OnceLock::new();
    let kinds = &KINDS.get_or_init(|| Immortal((vec![c"device".as_ptr(); NUM_PARAMETERS], vec![6; NUM_PARAMETERS]))).0;
    (&kinds.0, &kinds.1)
}

slot_fn!(PJRT_Executable_OutputMemoryKinds => fn executable_output_memory_kinds(
    args: PJRT_Executable_OutputMemoryKinds_Args, fault
) {
    executable(args.executable)?;
    let (kinds, sizes) = device_kinds();
    args.memory_kinds = kinds.as_ptr();
    args.memory_kind_sizes = sizes.as_ptr();
    args.num_outputs = OUTPUT_DIM_SIZES.len();
    shape_array(fault, &mut args.memory_kinds, &mut args.num_outputs);
    Ok(())
});

slot_fn!(PJRT_Executable_ParameterMemoryKinds => fn executable_parameter_memory_kinds(
    args: PJRT_Executable_ParameterMemoryKinds_Args, fault
) {
    executable(args.executable)?;
    let (kinds, sizes) = device_kinds();
    args.memory_kinds = kinds.as_ptr();
    args.memory_kind_sizes = sizes.as_ptr();
    args.num_parameters = NUM_PARAMETERS;
    shape_array(fault, &mut args.memory_kinds, &mut args.num_parameters);
    Ok(())
});

slot_fn!(PJRT_Executable_GetCompiledMemoryStats => fn executable_compiled_memory_stats(
    args: PJRT_Executable_GetCompiledMemoryStats_Args, fault
) {
    executable(args.executable)?;
    args.generated_code_size_in_bytes = 4096;
    args.argument_size_in_bytes = (NUM_PARAMETERS * PARAMETER_BYTES) as i64;
    args.output_size_in_bytes = PARAMETER_BYTES as i64;
    args.peak_memory_in_bytes = 3 * PARAMETER_BYTES as i64;
    Ok(())
});

/// Bytes handed out with a deleter (serialized compile options, device assignments).
struct FakeSerialized(Vec<u8>);

fn serialized(bytes: Vec<u8>) -> (*const c_char, usize, *mut FakeSerialized) {
    let owned = Box::new(FakeSerialized(bytes));
    let (ptr, len) = (owned.0.as_ptr().cast(), owned.0.len());
    bump(&COUNTERS.serialized_created);
    (ptr, len, Box::into_raw(owned))
}

unsafe extern "C" fn free_serialized<T>(serialized: *mut T) {
    if !serialized.is_null() {
        // SAFETY: a `Box<FakeSerialized>` this plugin leaked; the client frees it once.
        drop(unsafe { Box::from_raw(serialized.cast::<FakeSerialized>()) });
        bump(&COUNTERS.serialized_destroyed);
    }
}

slot_fn!(PJRT_Executable_GetCompileOptions => fn executable_get_compile_options(
    args: PJRT_Executable_GetCompileOptions_Args, fault
) {
    let executable = executable(args.executable)?;
    // CompileOptionsProto { executable_build_options (3) { num_replicas (4), num_partitions (5) } }.
    let bytes = vec![0x1a, 0x04, 0x20, executable.replicas as u8, 0x28, executable.partitions as u8];
    let (ptr, len, owner) = serialized(bytes);
    args.serialized_bytes = ptr;
    args.serialized_bytes_size = len;
    args.serialized_compile_options = owner.cast();
    args.serialized_compile_options_deleter = Some(free_serialized::<sys::PJRT_SerializedCompileOptions>);
    shape_array(fault, &mut args.serialized_bytes, &mut args.serialized_bytes_size);
    Ok(())
});

slot_fn!(PJRT_LoadedExecutable_GetDeviceAssignment => fn loaded_get_device_assignment(
    args: PJRT_LoadedExecutable_GetDeviceAssignment_Args, fault
) {
    let loaded = loaded(args.executable)?;
    if loaded.devices.is_empty() {
        return Err(invalid("fake: a portable executable has no device assignment"));
    }
    // DeviceAssignmentProto { replica_count (1), computation_count (2),
    // computation_devices (3) { replica_device_ids (1) } per partition }.
    let mut bytes = vec![0x08, loaded.replicas as u8, 0x10, loaded.partitions as u8];
    for partition in 0..loaded.partitions {
        let ids: Vec<u8> = (0..loaded.replicas)
            .flat_map(|replica| {
                let device = loaded.devices[replica * loaded.partitions + partition];
                [0x08, device_index(device).unwrap_or(0) as u8]
            })
            .collect();
        bytes.extend([0x1a, ids.len() as u8]);
        bytes.extend(ids);
    }
    let (ptr, len, owner) = serialized(bytes);
    args.serialized_bytes = ptr;
    args.serialized_bytes_size = len;
    args.serialized_device_assignment = owner.cast();
    args.serialized_device_assignment_deleter = Some(free_serialized::<sys::PJRT_DeviceAssignmentSerialized>);
    shape_array(fault, &mut args.serialized_bytes, &mut args.serialized_bytes_size);
    Ok(())
});

slot_fn!(PJRT_LoadedExecutable_AddressableDeviceLogicalIds => fn loaded_logical_ids(
    args: PJRT_LoadedExecutable_AddressableDeviceLogicalIds_Args, fault
) {
    let loaded = loaded(args.executable)?;
    args.addressable_device_logical_ids = loaded.logical_ids.as_ptr().cast_mut();
    args.num_addressable_device_logical_ids = loaded.logical_ids.len();
    let mut ptr = args.addressable_device_logical_ids.cast_const();
    shape_array(fault, &mut ptr, &mut args.num_addressable_device_logical_ids);
    args.addressable_device_logical_ids = ptr.cast_mut();
    Ok(())
});

// The deprecated per-loaded-executable fingerprint: the same text.
slot_fn!(PJRT_LoadedExecutable_Fingerprint => fn loaded_fingerprint(args: PJRT_LoadedExecutable_Fingerprint_Args, fault) {
    loaded(args.executable)?;
    set_string(fault, FINGERPRINT, &mut args.executable_fingerprint, &mut args.executable_fingerprint_size);
    Ok(())
});

/// An execute context: only its life is tracked.
struct FakeExecuteContext;

slot_fn!(PJRT_ExecuteContext_Create => fn execute_context_create(args: PJRT_ExecuteContext_Create_Args, fault) {
    if injects(fault, Fault::NullOutput) {
        args.context = null_mut();
        return Ok(());
    }
    args.context = Box::into_raw(Box::new(FakeExecuteContext)).cast();
    bump(&COUNTERS.execute_contexts_created);
    Ok(())
});

slot_fn!(PJRT_ExecuteContext_Destroy => fn execute_context_destroy(args: PJRT_ExecuteContext_Destroy_Args, fault) {
    if !args.context.is_null() {
        // SAFETY: a context this plugin created; the client destroys it once.
        drop(unsafe { Box::from_raw(args.context.cast::<FakeExecuteContext>()) });
        bump(&COUNTERS.execute_contexts_destroyed);
    }
    Ok(())
});

slot_fn!(PJRT_LoadedExecutable_AddressableDevices => fn loaded_addressable_devices(
    args: PJRT_LoadedExecutable_AddressableDevices_Args, fault
) {
    let loaded = loaded(args.executable)?;
    args.addressable_devices = loaded.devices.as_ptr();
    args.num_addressable_devices = loaded.devices.len();
    shape_array(fault, &mut args.addressable_devices, &mut args.num_addressable_devices);
    Ok(())
});

slot_fn!(PJRT_LoadedExecutable_Delete => fn loaded_delete(args: PJRT_LoadedExecutable_Delete_Args, fault) {
    loaded(args.executable)?.deleted.store(true, Ordering::SeqCst);
    Ok(())
});

slot_fn!(PJRT_LoadedExecutable_IsDeleted => fn loaded_is_deleted(args: PJRT_LoadedExecutable_IsDeleted_Args, fault) {
    args.is_deleted = loaded(args.executable)?.deleted.load(Ordering::SeqCst);
    Ok(())
});

/// Adds the `f32[4]` arguments of one device.
fn add_f32(arguments: &[&FakeBuffer]) -> Result<Vec<u8>, *mut PJRT_Error> {
    let mut sum = [0f32; 4];
    for argument in arguments {
        if argument.element_type != sys::PJRT_Buffer_Type::F32 || argument.bytes.len() != PARAMETER_BYTES {
            return Err(invalid("fake: every argument must be an f32[4]"));
        }
        for (s, chunk) in sum.iter_mut().zip(argument.bytes.chunks_exact(4)) {
            *s += f32::from_ne_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        }
    }
    Ok(sum.iter().flat_map(|v| v.to_ne_bytes()).collect())
}

// ---- host receives: every program receives 16 bytes on channel 1 from the host ----

/// The channel every fake program receives on, when the client registers a callback for it.
const RECV_CHANNEL: i64 = 1;
const RECV_BYTES: usize = 16;
const RECV_GRANULE: usize = 4;

/// The object behind a `PJRT_CopyToDeviceStream*`: the bytes received so far.
#[derive(Default)]
struct FakeStream {
    received: Mutex<Vec<u8>>,
}

fn stream<'a>(ptr: *mut sys::PJRT_CopyToDeviceStream) -> Result<&'a FakeStream, *mut PJRT_Error> {
    // SAFETY: the client passes streams this plugin handed out and has not destroyed.
    unsafe { handle::<FakeStream, _>(ptr, "stream") }
}

/// Calls the receive callbacks for `RECV_CHANNEL` of device `i` of a launch, each with a new
/// stream it owns.
///
/// # Safety
/// `options` must be the client's valid execute options, with `num_recv_ops` callbacks per
/// device when `recv_callbacks` is set.
unsafe fn run_host_receives(options: &sys::PJRT_ExecuteOptions, i: usize) {
    if options.recv_callbacks.is_null() || options.num_recv_ops == 0 {
        return;
    }
    // SAFETY: the caller's guarantee: one list per device.
    let list = unsafe { *options.recv_callbacks.add(i) }.cast::<sys::PJRT_RecvCallbackInfo>();
    if list.is_null() {
        return;
    }
    for j in 0..options.num_recv_ops {
        // SAFETY: `num_recv_ops` entries per list.
        let info = unsafe { *list.add(j) };
        if let (RECV_CHANNEL, Some(callback)) = (info.channel_id, info.recv_callback) {
            bump(&COUNTERS.streams_created);
            let raw = Box::into_raw(Box::<FakeStream>::default()).cast();
            // SAFETY: the client's callback and argument; it takes the stream.
            unsafe { callback(raw, info.user_arg) };
        }
    }
}

slot_fn!(PJRT_CopyToDeviceStream_Destroy => fn stream_destroy(args: PJRT_CopyToDeviceStream_Destroy_Args, fault) {
    if !args.stream.is_null() {
        // SAFETY: a stream this plugin handed out; the client destroys it once.
        drop(unsafe { Box::from_raw(args.stream.cast::<FakeStream>()) });
        bump(&COUNTERS.streams_destroyed);
    }
    Ok(())
});

slot_fn!(PJRT_CopyToDeviceStream_TotalBytes => fn stream_total_bytes(args: PJRT_CopyToDeviceStream_TotalBytes_Args, fault) {
    stream(args.stream)?;
    args.total_bytes = RECV_BYTES as i64;
    Ok(())
});

slot_fn!(PJRT_CopyToDeviceStream_GranuleSize => fn stream_granule_size(
    args: PJRT_CopyToDeviceStream_GranuleSize_Args, fault
) {
    stream(args.stream)?;
    args.granule_size_in_bytes = RECV_GRANULE as i64;
    Ok(())
});

slot_fn!(PJRT_CopyToDeviceStream_CurrentBytes => fn stream_current_bytes(
    args: PJRT_CopyToDeviceStream_CurrentBytes_Args, fault
) {
    args.current_bytes = lock(&stream(args.stream)?.received).len() as i64;
    Ok(())
});

// Written out rather than with `slot_fn!`: the chunk is the plugin's from the call on, so it is
// freed whether or not the call (or an injected failure) succeeds.
unsafe extern "C" fn stream_add_chunk(raw: *mut sys::PJRT_CopyToDeviceStream_AddChunk_Args) -> *mut PJRT_Error {
    const SLOT: &str = "PJRT_CopyToDeviceStream_AddChunk";
    guarded(SLOT, || {
        // SAFETY: the client passes a valid args struct that it does not touch during the call.
        let args = match unsafe { checked_args(raw, "PJRT_CopyToDeviceStream_AddChunk_Args") } {
            Ok(args) => args,
            Err(error) => return error,
        };
        // SAFETY: the client passes a valid chunk (or NULL).
        let Some(chunk) = (unsafe { args.chunk.as_mut() }) else {
            return invalid("fake: no chunk");
        };
        // SAFETY: the chunk holds `size` readable bytes until its deleter runs.
        let data = unsafe { sys_bytes(chunk.data.cast(), chunk.size) }.to_vec();
        if let Some(deleter) = chunk.deleter.take() {
            // SAFETY: the client's deleter for this chunk, called once.
            unsafe { deleter(chunk.data, chunk.deleter_arg) };
        }
        if fault_for(SLOT) == Some(Fault::Fail) {
            return injected_failure(SLOT);
        }
        let stream = match stream(args.stream) {
            Ok(stream) => stream,
            Err(error) => return error,
        };
        let mut received = lock(&stream.received);
        if data.len() % RECV_GRANULE != 0 || received.len() + data.len() > RECV_BYTES {
            return invalid("fake: the chunk does not fit the stream");
        }
        received.extend(data);
        drop(received);
        args.transfer_complete = handed_out_event(None, SLOT);
        OK
    })
}

// Checks everything first, then creates the outputs and events: a failing call hands out nothing.
slot_fn!(PJRT_LoadedExecutable_Execute => fn loaded_execute(args: PJRT_LoadedExecutable_Execute_Args, fault) {
    bump(&COUNTERS.execute_calls);
    let loaded = loaded(args.executable)?;
    // SAFETY: the client passes valid execute options for the call.
    let options = unsafe { checked_args(args.options, "PJRT_ExecuteOptions") }?;
    // Plugins from 0.108 on read this flag (offset 120) when the options' struct_size covers it.
    // Read as a byte, as C writes it: any nonzero byte is true.
    const MAJOR_TO_MINOR: usize =
        std::mem::offset_of!(sys::PJRT_ExecuteOptions, use_major_to_minor_data_layout_for_callbacks);
    // SAFETY: the byte lies inside the options (struct_size checked just before the read).
    let major_to_minor = options.struct_size > MAJOR_TO_MINOR
        && unsafe { (options as *const sys::PJRT_ExecuteOptions).cast::<u8>().add(MAJOR_TO_MINOR).read() } != 0;
    if major_to_minor {
        bump(&COUNTERS.executions_major_to_minor);
    }
    let devices: Vec<usize> = if args.execute_device.is_null() {
        if loaded.devices.is_empty() {
            return Err(invalid("fake: a portable executable needs execute_device"));
        }
        loaded.devices.iter().map(|d| device_index(*d)).collect::<Result<_, _>>()?
    } else {
        vec![device_index(args.execute_device)?]
    };
    if args.num_devices != devices.len() {
        return Err(invalid(format!("fake: {} argument lists for {} devices", args.num_devices, devices.len())));
    }
    if args.num_args != NUM_PARAMETERS {
        return Err(invalid(format!("fake: {} arguments for {NUM_PARAMETERS} parameters", args.num_args)));
    }
    if args.argument_lists.is_null() || args.output_lists.is_null() {
        return Err(invalid("fake: NULL argument or output lists"));
    }
    let mut results = Vec::with_capacity(devices.len());
    for i in 0..devices.len() {
        // SAFETY: the client passes `num_devices` lists of `num_args` buffers each.
        let list = unsafe { *args.argument_lists.add(i) };
        if list.is_null() {
            return Err(invalid("fake: NULL argument list"));
        }
        let arguments = (0..NUM_PARAMETERS)
            // SAFETY: as above.
            .map(|j| live_buffer(unsafe { *list.add(j) }))
            .collect::<Result<Vec<_>, _>>()?;
        results.push(add_f32(&arguments)?);
    }
    if injects(fault, Fault::NullOutput) {
        return Ok(()); // outputs and events stay NULL
    }
    for i in 0..devices.len() {
        // SAFETY: the client's options for this launch of `devices.len()` devices.
        unsafe { run_host_receives(options, i) };
    }
    for (i, (bytes, device)) in results.into_iter().zip(devices).enumerate() {
        let output = new_buffer(sys::PJRT_Buffer_Type::F32, vec![4], bytes, device, DEVICES[device].default_memory);
        // SAFETY: the client passes `num_devices` output lists with room for the one output.
        unsafe { (*args.output_lists.add(i)).write(output) };
        if !args.device_complete_events.is_null() {
            let event = handed_out_event(None, "PJRT_LoadedExecutable_Execute");
            // SAFETY: the client passes `num_devices` event slots.
            unsafe { args.device_complete_events.add(i).write(event) };
        }
    }
    Ok(())
});

// ---------------------------------------------------------------------------------------------
// Older forms of extensions (scenarios `old_extensions` and `hostile`)
//
// The chain lists three nodes whose `struct_size` tells a careful client which form they are:
// an early Layouts node (32 bytes: one member at offset 24, a buffer-layout getter whose args are
// not `PJRT_Layouts_MemoryLayout_Destroy`'s), a MemoryDescriptions version-0 node (40 bytes, the
// size of version 1, whose describe function writes only the first 40 bytes of its args: there
// is no `default_memory_index`) and an FFI version-1 node (32 bytes: `user_data_add` where
// `type_register` sits later). Calls of the early Layouts and FFI functions are counted: a client
// must never make them.

/// The early Layouts form: `{base, buffer_memory_layout}`.
#[repr(C)]
struct EarlyLayouts {
    base: sys::PJRT_Extension_Base,
    buffer_memory_layout: unsafe extern "C" fn(*mut EarlyBufferLayoutArgs) -> *mut PJRT_Error,
}

/// The args of the early Layouts form's only function (32 bytes).
#[repr(C)]
struct EarlyBufferLayoutArgs {
    struct_size: usize,
    extension_start: *mut sys::PJRT_Extension_Base,
    buffer: *mut sys::PJRT_Buffer,
    layout: *mut sys::PJRT_Layouts_MemoryLayout,
}

/// MemoryDescriptions version 0: the same members (and size) as version 1.
#[repr(C)]
struct MemoryDescriptionsV0 {
    base: sys::PJRT_Extension_Base,
    memory_descriptions: unsafe extern "C" fn(*mut MemoryDescriptionsV0Args) -> *mut PJRT_Error,
    kind: unsafe extern "C" fn(*mut sys::PJRT_MemoryDescription_Kind_Args) -> *mut PJRT_Error,
}

/// The version-0 describe args (40 bytes: no `default_memory_index`).
#[repr(C)]
struct MemoryDescriptionsV0Args {
    struct_size: usize,
    extension_start: *mut sys::PJRT_Extension_Base,
    device_description: *mut sys::PJRT_DeviceDescription,
    memory_descriptions: *const *const sys::PJRT_MemoryDescription,
    num_memory_descriptions: usize,
}

/// FFI version 1: `{base, user_data_add}`.
#[repr(C)]
struct FfiV1 {
    base: sys::PJRT_Extension_Base,
    user_data_add: unsafe extern "C" fn(*mut c_void) -> *mut PJRT_Error,
}

const _: () = {
    assert!(std::mem::size_of::<EarlyLayouts>() == 32);
    assert!(std::mem::size_of::<EarlyBufferLayoutArgs>() == 32);
    assert!(std::mem::size_of::<MemoryDescriptionsV0>() == 40);
    assert!(std::mem::size_of::<MemoryDescriptionsV0Args>() == 40);
    assert!(std::mem::size_of::<FfiV1>() == 32);
};

/// The object behind a `PJRT_MemoryDescription*` of the version-0 extension.
struct MemoryDescriptionObject {
    kind: &'static str,
    kind_id: c_int,
}

static MEMORY_DESCRIPTION_OBJECTS: [MemoryDescriptionObject; 2] = [
    MemoryDescriptionObject { kind: "device", kind_id: 0 },
    MemoryDescriptionObject { kind: "pinned_host", kind_id: 1 },
];

// SAFETY: repr(C), first field `struct_size: usize`, every field valid zeroed; the size is the
// whole struct (its last field ends it, no tail padding).
unsafe impl Args for EarlyBufferLayoutArgs {
    const STRUCT_SIZE: usize = std::mem::size_of::<Self>();
}

// SAFETY: as above.
unsafe impl Args for MemoryDescriptionsV0Args {
    const STRUCT_SIZE: usize = std::mem::size_of::<Self>();
}

unsafe extern "C" fn early_buffer_memory_layout(raw: *mut EarlyBufferLayoutArgs) -> *mut PJRT_Error {
    guarded("early Layouts buffer_memory_layout", || {
        bump(&COUNTERS.early_layouts_calls);
        // SAFETY: a client passes a struct at least 8 bytes long (or NULL), ours for the call.
        let args = match unsafe { checked_args(raw, "early layout args") } {
            Ok(args) => args,
            Err(error) => return error,
        };
        args.layout = null_mut();
        new_error(PJRT_Error_Code::UNIMPLEMENTED, "fake: the early Layouts form gives no layouts")
    })
}

unsafe extern "C" fn memory_descriptions_v0(raw: *mut MemoryDescriptionsV0Args) -> *mut PJRT_Error {
    guarded("MemoryDescriptions v0 describe", || {
        bump(&COUNTERS.memory_descriptions_v0_calls);
        // SAFETY: a client passes a struct at least 8 bytes long (or NULL), ours for the call;
        // `checked_args` makes sure it has the 40 version-0 bytes, the only ones touched.
        let args = match unsafe { checked_args(raw, "MemoryDescriptions args") } {
            Ok(args) => args,
            Err(error) => return error,
        };
        if let Err(error) = description_index(args.device_description) {
            return error;
        }
        static POINTERS: OnceLock<Immortal<Vec<*const sys::PJRT_MemoryDescription>>> = OnceLock::new();
        let pointers = &POINTERS
            .get_or_init(|| {
                Immortal(
                    MEMORY_DESCRIPTION_OBJECTS.iter().map(|m| (m as *const MemoryDescriptionObject).cast()).collect(),
                )
            })
            .0;
        args.memory_descriptions = pointers.as_ptr();
        args.num_memory_descriptions = pointers.len();
        OK
    })
}

unsafe extern "C" fn memory_description_kind_v0(raw: *mut sys::PJRT_MemoryDescription_Kind_Args) -> *mut PJRT_Error {
    guarded("MemoryDescriptions v0 kind", || {
        // SAFETY: the client passes a valid args struct that it does not touch during the call.
        let args = match unsafe { checked_args(raw, "PJRT_MemoryDescription_Kind_Args") } {
            Ok(args) => args,
            Err(error) => return error,
        };
        let Some(object) = MEMORY_DESCRIPTION_OBJECTS
            .iter()
            .find(|m| std::ptr::eq((*m as *const MemoryDescriptionObject).cast(), args.memory_description))
        else {
            return invalid("fake: not a memory description of this plugin");
        };
        args.kind = object.kind.as_ptr().cast();
        args.kind_size = object.kind.len();
        args.kind_id = object.kind_id;
        OK
    })
}

unsafe extern "C" fn ffi_v1_user_data_add(_args: *mut c_void) -> *mut PJRT_Error {
    guarded("FFI v1 user_data_add", || {
        bump(&COUNTERS.ffi_v1_calls);
        new_error(PJRT_Error_Code::UNIMPLEMENTED, "fake: FFI version 1 adds no user data")
    })
}

/// The chain of older-form extensions, built once and never freed: FFI v1, then
/// MemoryDescriptions v0, then the early Layouts form.
fn old_extensions() -> *mut sys::PJRT_Extension_Base {
    static CHAIN: OnceLock<usize> = OnceLock::new();
    let start = *CHAIN.get_or_init(|| {
        let layouts = Box::leak(Box::new(EarlyLayouts {
            base: sys::PJRT_Extension_Base {
                struct_size: std::mem::size_of::<EarlyLayouts>(),
                type_: sys::PJRT_Extension_Type::Layouts,
                next: null_mut(),
            },
            buffer_memory_layout: early_buffer_memory_layout,
        }));
        let descriptions = Box::leak(Box::new(MemoryDescriptionsV0 {
            base: sys::PJRT_Extension_Base {
                struct_size: std::mem::size_of::<MemoryDescriptionsV0>(),
                type_: sys::PJRT_Extension_Type::MemoryDescriptions,
                next: (layouts as *mut EarlyLayouts).cast(),
            },
            memory_descriptions: memory_descriptions_v0,
            kind: memory_description_kind_v0,
        }));
        let ffi = Box::leak(Box::new(FfiV1 {
            base: sys::PJRT_Extension_Base {
                struct_size: std::mem::size_of::<FfiV1>(),
                type_: sys::PJRT_Extension_Type::FFI,
                next: (descriptions as *mut MemoryDescriptionsV0).cast(),
            },
            user_data_add: ffi_v1_user_data_add,
        }));
        ffi as *mut FfiV1 as usize
    });
    start as *mut sys::PJRT_Extension_Base
}

// ---------------------------------------------------------------------------------------------
// The table

/// Builds this copy's table once and leaks it (a plugin's table lives as long as the process).
///
/// The table is a word array longer than `PJRT_Api`: the typed struct is filled first (so every
/// function is checked against its slot's type), copied in, and then everything after
/// `struct_size` is overwritten with non-NULL garbage, as found after the 0.106 plugin's table.
fn table(config: &Config) -> *const sys::PJRT_Api {
    static TABLE: OnceLock<usize> = OnceLock::new();
    let address = *TABLE.get_or_init(|| {
        // SAFETY: every field of `PJRT_Api` is an integer, a raw pointer or an `Option` of a
        // function pointer, for all of which all-zero bytes are a valid value (0, NULL, None).
        let mut api: sys::PJRT_Api = unsafe { std::mem::zeroed() };
        api.struct_size = config.struct_size;
        if config.hostile.old_extensions {
            api.extension_start = old_extensions();
        }
        api.pjrt_api_version = sys::PJRT_Api_Version {
            struct_size: 24,
            extension_start: null_mut(),
            major_version: config.major,
            minor_version: config.minor,
        };
        api.PJRT_Error_Destroy = Some(error_destroy);
        api.PJRT_Error_Message = Some(error_message);
        api.PJRT_Error_GetCode = Some(error_get_code);
        api.PJRT_Error_ForEachPayload = Some(error_for_each_payload);
        api.PJRT_Plugin_Initialize = Some(plugin_initialize);
        api.PJRT_Plugin_Attributes = Some(plugin_attributes);
        api.PJRT_Event_Destroy = Some(event_destroy);
        api.PJRT_Event_IsReady = Some(event_is_ready);
        api.PJRT_Event_Error = Some(event_error);
        api.PJRT_Event_Await = Some(event_await);
        api.PJRT_Event_OnReady = Some(event_on_ready);
        api.PJRT_Event_Create = Some(event_create);
        api.PJRT_Event_Set = Some(event_set);
        api.PJRT_Client_Create = Some(client_create);
        api.PJRT_Client_DmaMap = Some(client_dma_map);
        api.PJRT_Client_CreateBuffersForAsyncHostToDevice = Some(client_create_transfer_manager);
        api.PJRT_AsyncHostToDeviceTransferManager_Destroy = Some(transfer_manager_destroy);
        api.PJRT_AsyncHostToDeviceTransferManager_TransferData = Some(transfer_manager_transfer_data);
        api.PJRT_AsyncHostToDeviceTransferManager_TransferLiteral = Some(transfer_manager_transfer_literal);
        api.PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer = Some(transfer_manager_retrieve_buffer);
        api.PJRT_AsyncHostToDeviceTransferManager_Device = Some(transfer_manager_device);
        api.PJRT_AsyncHostToDeviceTransferManager_BufferCount = Some(transfer_manager_buffer_count);
        api.PJRT_AsyncHostToDeviceTransferManager_BufferSize = Some(transfer_manager_buffer_size);
        api.PJRT_AsyncHostToDeviceTransferManager_SetBufferError = Some(transfer_manager_set_buffer_error);
        api.PJRT_AsyncHostToDeviceTransferManager_AddMetadata = Some(transfer_manager_add_metadata);
        api.PJRT_Client_CreateUninitializedBuffer = Some(client_create_uninitialized_buffer);
        api.PJRT_Client_CreateErrorBuffer = Some(client_create_error_buffer);
        api.PJRT_Buffer_IsOnCpu = Some(buffer_is_on_cpu);
        api.PJRT_Buffer_GetMemoryLayout = Some(buffer_get_memory_layout);
        api.PJRT_Buffer_UnpaddedDimensions = Some(buffer_unpadded_dimensions);
        api.PJRT_Buffer_DynamicDimensionIndices = Some(buffer_dynamic_dimension_indices);
        api.PJRT_Buffer_UnsafePointer = Some(buffer_unsafe_pointer);
        api.PJRT_Buffer_OpaqueDeviceMemoryDataPointer = Some(buffer_device_pointer);
        api.PJRT_Buffer_IncreaseExternalReferenceCount = Some(buffer_increase_references);
        api.PJRT_Buffer_DecreaseExternalReferenceCount = Some(buffer_decrease_references);
        api.PJRT_Buffer_CopyRawToHost = Some(buffer_copy_raw_to_host);
        api.PJRT_Buffer_Bitcast = Some(buffer_bitcast);
        api.PJRT_Client_TopologyDescription = Some(client_topology);
        api.PJRT_TopologyDescription_PlatformName = Some(topology_platform_name);
        api.PJRT_TopologyDescription_PlatformVersion = Some(topology_platform_version);
        api.PJRT_TopologyDescription_GetDeviceDescriptions = Some(topology_device_descriptions);
        api.PJRT_TopologyDescription_Attributes = Some(topology_attributes);
        api.PJRT_TopologyDescription_Fingerprint = Some(topology_fingerprint);
        api.PJRT_TopologyDescription_Serialize = Some(topology_serialize);
        api.PJRT_TopologyDescription_GetMemorySpaceKindIds = Some(topology_kind_ids);
        api.PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace = Some(topology_canonical_shape);
        api.PJRT_Executable_SizeOfGeneratedCodeInBytes = Some(executable_code_size);
        api.PJRT_Executable_GetCostAnalysis = Some(executable_cost_analysis);
        api.PJRT_Executable_OutputMemoryKinds = Some(executable_output_memory_kinds);
        api.PJRT_Executable_ParameterMemoryKinds = Some(executable_parameter_memory_kinds);
        api.PJRT_Executable_GetCompiledMemoryStats = Some(executable_compiled_memory_stats);
        api.PJRT_Executable_GetCompileOptions = Some(executable_get_compile_options);
        api.PJRT_LoadedExecutable_GetDeviceAssignment = Some(loaded_get_device_assignment);
        api.PJRT_LoadedExecutable_AddressableDeviceLogicalIds = Some(loaded_logical_ids);
        api.PJRT_LoadedExecutable_Fingerprint = Some(loaded_fingerprint);
        api.PJRT_ExecuteContext_Create = Some(execute_context_create);
        api.PJRT_ExecuteContext_Destroy = Some(execute_context_destroy);
        api.PJRT_Device_MemoryStats = Some(device_memory_stats);
        api.PJRT_Device_ClearMemoryStats = Some(device_clear_memory_stats);
        api.PJRT_Device_GetAttributes = Some(device_get_attributes);
        api.PJRT_Device_PoisonExecution = Some(device_poison_execution);
        api.PJRT_Device_CreateAsyncTrackingEvent = Some(device_create_async_tracking_event);
        api.PJRT_AsyncTrackingEvent_Destroy = Some(async_tracking_event_destroy);
        api.PJRT_Client_DmaUnmap = Some(client_dma_unmap);
        api.PJRT_Client_UpdateGlobalProcessInfo = Some(client_update_global_process_info);
        api.PJRT_Client_Destroy = Some(client_destroy);
        api.PJRT_Client_PlatformName = Some(client_platform_name);
        api.PJRT_Client_ProcessIndex = Some(client_process_index);
        api.PJRT_Client_PlatformVersion = Some(client_platform_version);
        api.PJRT_Client_Devices = Some(client_devices);
        api.PJRT_Client_AddressableDevices = Some(client_addressable_devices);
        api.PJRT_Client_LookupDevice = Some(client_lookup_device);
        api.PJRT_Client_LookupAddressableDevice = Some(client_lookup_addressable_device);
        api.PJRT_Client_AddressableMemories = Some(client_addressable_memories);
        api.PJRT_Client_Compile = Some(client_compile);
        api.PJRT_Client_DefaultDeviceAssignment = Some(client_default_device_assignment);
        api.PJRT_Client_BufferFromHostBuffer = Some(client_buffer_from_host_buffer);
        api.PJRT_DeviceDescription_Id = Some(description_id);
        api.PJRT_DeviceDescription_ProcessIndex = Some(description_process_index);
        api.PJRT_DeviceDescription_Attributes = Some(description_attributes);
        api.PJRT_DeviceDescription_Kind = Some(description_kind);
        api.PJRT_DeviceDescription_DebugString = Some(description_debug_string);
        api.PJRT_DeviceDescription_ToString = Some(description_to_string);
        api.PJRT_Device_GetDescription = Some(device_get_description);
        api.PJRT_Device_IsAddressable = Some(device_is_addressable);
        api.PJRT_Device_LocalHardwareId = Some(device_local_hardware_id);
        api.PJRT_Device_AddressableMemories = Some(device_addressable_memories);
        api.PJRT_Device_DefaultMemory = Some(device_default_memory);
        api.PJRT_Memory_Id = Some(memory_id);
        api.PJRT_Memory_Kind = Some(memory_kind);
        api.PJRT_Memory_DebugString = Some(memory_debug_string);
        api.PJRT_Memory_ToString = Some(memory_to_string);
        api.PJRT_Memory_AddressableByDevices = Some(memory_addressable_by_devices);
        api.PJRT_Memory_Kind_Id = Some(memory_kind_id);
        api.PJRT_Executable_Destroy = Some(executable_destroy);
        api.PJRT_Executable_Name = Some(executable_name);
        api.PJRT_Executable_NumReplicas = Some(executable_num_replicas);
        api.PJRT_Executable_NumPartitions = Some(executable_num_partitions);
        api.PJRT_Executable_NumOutputs = Some(executable_num_outputs);
        api.PJRT_Executable_OptimizedProgram = Some(executable_optimized_program);
        api.PJRT_Executable_OutputElementTypes = Some(executable_output_types);
        api.PJRT_Executable_OutputDimensions = Some(executable_output_dimensions);
        api.PJRT_Executable_Fingerprint = Some(executable_fingerprint);
        api.PJRT_LoadedExecutable_Destroy = Some(loaded_destroy);
        api.PJRT_LoadedExecutable_GetExecutable = Some(loaded_get_executable);
        api.PJRT_LoadedExecutable_AddressableDevices = Some(loaded_addressable_devices);
        api.PJRT_LoadedExecutable_Delete = Some(loaded_delete);
        api.PJRT_LoadedExecutable_IsDeleted = Some(loaded_is_deleted);
        api.PJRT_LoadedExecutable_Execute = Some(loaded_execute);
        api.PJRT_Executable_Serialize = Some(executable_serialize);
        api.PJRT_CopyToDeviceStream_Destroy = Some(stream_destroy);
        api.PJRT_CopyToDeviceStream_AddChunk = Some(stream_add_chunk);
        api.PJRT_CopyToDeviceStream_TotalBytes = Some(stream_total_bytes);
        api.PJRT_CopyToDeviceStream_GranuleSize = Some(stream_granule_size);
        api.PJRT_CopyToDeviceStream_CurrentBytes = Some(stream_current_bytes);
        api.PJRT_Client_CreateAliasBuffer = Some(client_create_alias_buffer);
        api.PJRT_Client_FulfillAliasBuffer = Some(client_fulfill_alias_buffer);
        api.PJRT_Buffer_CopyRawToHostFuture = Some(buffer_copy_raw_to_host_future);
        api.PJRT_Client_CreateViewOfDeviceBuffer = Some(client_create_view);
        api.PJRT_Buffer_DonateWithControlDependency = Some(buffer_donate_with_control_dependency);
        api.PJRT_TopologyDescription_Create = Some(topology_create);
        api.PJRT_TopologyDescription_Deserialize = Some(topology_deserialize);
        api.PJRT_TopologyDescription_Destroy = Some(topology_destroy);
        api.PJRT_Compile = Some(topology_compile);
        api.PJRT_Client_Load = Some(client_load);
        api.PJRT_Executable_DeserializeAndLoad = Some(executable_deserialize_and_load);
        api.PJRT_Buffer_Destroy = Some(buffer_destroy);
        api.PJRT_Buffer_ElementType = Some(buffer_element_type);
        api.PJRT_Buffer_Dimensions = Some(buffer_dimensions);
        api.PJRT_Buffer_OnDeviceSizeInBytes = Some(buffer_on_device_size);
        api.PJRT_Buffer_Device = Some(buffer_device);
        api.PJRT_Buffer_Memory = Some(buffer_memory);
        api.PJRT_Buffer_Delete = Some(buffer_delete);
        api.PJRT_Buffer_IsDeleted = Some(buffer_is_deleted);
        api.PJRT_Buffer_CopyToDevice = Some(buffer_copy_to_device);
        api.PJRT_Buffer_CopyToMemory = Some(buffer_copy_to_memory);
        api.PJRT_Buffer_ToHostBuffer = Some(buffer_to_host);
        api.PJRT_Buffer_ReadyEvent = Some(buffer_ready_event);

        const WORD: usize = std::mem::size_of::<usize>();
        let api_words = std::mem::size_of::<sys::PJRT_Api>() / WORD;
        let mut words = vec![0usize; api_words + GARBAGE_WORDS].into_boxed_slice();
        // SAFETY: `words` has room for the whole `PJRT_Api` (which has no padding: a header of
        // words and two i32s, then pointers), both are 8-aligned, and they do not overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(
                std::ptr::addr_of!(api).cast::<u8>(),
                words.as_mut_ptr().cast::<u8>(),
                std::mem::size_of::<sys::PJRT_Api>(),
            );
        }
        let first_slot = sys::FIRST_SLOT_OFFSET / WORD;
        for word in &mut words[first_slot..api_words] {
            if *word == 0 {
                *word = unimplemented_slot as *const () as usize;
            }
        }
        if config.null_client_create {
            words[std::mem::offset_of!(sys::PJRT_Api, PJRT_Client_Create) / WORD] = 0;
        }
        // Whatever lies past the plugin's own struct_size is not a slot of it.
        let end = config.struct_size.div_ceil(WORD).max(first_slot);
        for word in &mut words[end..] {
            *word = GARBAGE;
        }
        Box::leak(words).as_ptr() as usize
    });
    address as *const sys::PJRT_Api
}

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
