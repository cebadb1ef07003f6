//! A fake PJRT plugin for the integration tests of `pjrt-client`.
//!
//! It exports `GetPjrtApi` like a real plugin, but its function table is built to order: short
//! tables with garbage after them, NULL slots, old or impossible API versions, calls that fail,
//! events that complete on another thread. It computes nothing.
//!
//! # Configuration: one scenario per copy of the library
//! The tests copy `libfake_plugin.so` to a fresh file per scenario (a copy has its own statics,
//! because the dynamic loader treats it as a different library) and write the scenario's name
//! into a sidecar file `<path of the copy>.scenario`. On the first `GetPjrtApi` the plugin finds
//! its own path with `dladdr` and reads that file. Without a sidecar file it runs `working`.
//! See [`Config::from_name`] for the scenarios.
//!
//! # Observability
//! The plugin counts what it was asked to do (errors created and destroyed, calls to some
//! functions, objects created and destroyed). The tests read the counters through the exported
//! C function [`fake_counter`], found with `dlsym`.
//!
//! # Safety rules kept here
//! Every exported or table function catches panics, so no unwind ever crosses the C boundary; a
//! panic becomes an `INTERNAL` error (or is swallowed by the `void` functions). Every args struct
//! is checked for NULL and for a `struct_size` at least this crate's `STRUCT_SIZE`, like a real
//! plugin does.

#![deny(unsafe_op_in_unsafe_fn)]

use std::ffi::{c_char, c_int, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::OnceLock;

use pjrt_client::sys::{self, Args, PJRT_Error, PJRT_Error_Code};

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
    on_ready_calls,
    callbacks_invoked,
    callbacks_returned,
    unimplemented_calls,
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
    /// `PJRT_Plugin_Initialize` fails.
    initialize_error: bool,
    /// The `PJRT_Client_Create` slot is NULL.
    null_client_create: bool,
    /// `PJRT_Client_Create` fails with INVALID_ARGUMENT "fake: bad option".
    client_create_error: bool,
    /// Buffer ready events complete with INTERNAL "fake: transfer failed".
    event_error: bool,
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
            initialize_error: false,
            null_client_create: false,
            client_create_error: false,
            event_error: false,
        };
        match name {
            // A plugin that does enough for a client, buffers and events (API 0.115, 138 slots).
            "working" => {}
            // The same, shaped like the real 0.106 CPU plugin: 136 slots, garbage after them.
            "working_0_106" => {
                config.minor = 106;
                config.struct_size = table_size(136);
            }
            // Ready events complete with an error.
            "event_error" => config.event_error = true,
            "minor_56" => config.minor = 56,
            "major_1" => config.major = 1,
            "minor_40" => config.minor = 40,
            // Slots 0..10 only (up to PJRT_Event_OnReady); PJRT_Client_Create is garbage.
            "short_table" => config.struct_size = table_size(10),
            "null_client_create" => config.null_client_create = true,
            "client_create_error" => config.client_create_error = true,
            "initialize_error" => config.initialize_error = true,
            "null_api" => config.null_api = true,
            "tiny_table" => config.struct_size = 16,
            // An unknown name: load fails in PJRT_Plugin_Initialize, naming the scenario.
            _ => config.initialize_error = true,
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
        let name = own_path()
            .and_then(|path| std::fs::read_to_string(format!("{path}.scenario")).ok())
            .map(|text| text.trim().to_owned())
            .unwrap_or_else(|| "working".to_owned());
        Config::from_name(&name)
    })
}

// ---------------------------------------------------------------------------------------------
// Errors

/// The fake's `PJRT_Error`: a boxed code and message.
struct FakeError {
    code: PJRT_Error_Code,
    message: String,
}

fn new_error(code: PJRT_Error_Code, message: impl Into<String>) -> *mut PJRT_Error {
    bump(&COUNTERS.errors_created);
    Box::into_raw(Box::new(FakeError { code, message: message.into() })).cast()
}

const OK: *mut PJRT_Error = null_mut();

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
        return Err(new_error(PJRT_Error_Code::INVALID_ARGUMENT, format!("fake: {name} is NULL")));
    }
    // SAFETY: every args struct starts with `struct_size: usize`; the caller guarantees it is
    // readable.
    let size = unsafe { args.cast::<usize>().read() };
    if size < T::STRUCT_SIZE {
        return Err(new_error(
            PJRT_Error_Code::INVALID_ARGUMENT,
            format!("Unexpected {name} size: expected {}, got {size}", T::STRUCT_SIZE),
        ));
    }
    // SAFETY: non-NULL, large enough, and exclusively ours for the call (caller's guarantee).
    Ok(unsafe { &mut *args })
}

/// Defines a table function `unsafe extern "C" fn(*mut Args) -> *mut PJRT_Error` whose body
/// sees the checked args as `$args` and returns NULL or an error.
macro_rules! slot_fn {
    ($fn_name:ident($args:ident: $ty:ident) $body:block) => {
        unsafe extern "C" fn $fn_name(raw: *mut sys::$ty) -> *mut PJRT_Error {
            guarded(stringify!($fn_name), || {
                // SAFETY: the client passes a valid args struct that it does not touch during
                // the call (the PJRT calling convention).
                let $args = match unsafe { checked_args(raw, stringify!($ty)) } {
                    Ok(args) => args,
                    Err(error) => return error,
                };
                $body
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
        return Err(new_error(PJRT_Error_Code::INVALID_ARGUMENT, format!("fake: {what} is NULL")));
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
        if !args.error.is_null() {
            // SAFETY: a live error of this plugin (not yet destroyed).
            let error = unsafe { &*args.error.cast::<FakeError>() };
            args.message = error.message.as_ptr().cast();
            args.message_size = error.message.len();
        }
    });
}

slot_fn!(error_get_code(args: PJRT_Error_GetCode_Args) {
    // SAFETY: a live error of this plugin (not yet destroyed).
    match unsafe { handle::<FakeError, _>(args.error.cast_mut(), "error") } {
        Ok(error) => {
            args.code = error.code;
            OK
        }
        Err(e) => e,
    }
});

// ---------------------------------------------------------------------------------------------
// Plugin

slot_fn!(plugin_initialize(_args: PJRT_Plugin_Initialize_Args) {
    bump(&COUNTERS.initialize_calls);
    let config = config();
    if config.initialize_error {
        return new_error(PJRT_Error_Code::INTERNAL, format!("fake: initialize failed (scenario `{}`)", config.name));
    }
    OK
});

/// The attribute array: built once, never freed (it lives as long as the plugin).
fn attributes() -> &'static [sys::PJRT_NamedValue] {
    struct Attributes(Vec<sys::PJRT_NamedValue>);
    // SAFETY: the array and the strings it points to are immutable and live forever.
    unsafe impl Send for Attributes {}
    // SAFETY: as above.
    unsafe impl Sync for Attributes {}
    static ATTRIBUTES: OnceLock<Attributes> = OnceLock::new();
    &ATTRIBUTES
        .get_or_init(|| {
            let mut version = sys::PJRT_NamedValue::new();
            version.name = c"xla_version".as_ptr();
            version.name_size = "xla_version".len();
            version.type_ = sys::PJRT_NamedValue_Type::Int64;
            version.value.int64_value = 7;
            version.value_size = 1;
            let scenario_name: &'static str = config().name.as_str();
            let mut scenario = sys::PJRT_NamedValue::new();
            scenario.name = c"fake_scenario".as_ptr();
            scenario.name_size = "fake_scenario".len();
            scenario.type_ = sys::PJRT_NamedValue_Type::String;
            scenario.value.string_value = scenario_name.as_ptr().cast();
            scenario.value_size = scenario_name.len();
            Attributes(vec![version, scenario])
        })
        .0
}

slot_fn!(plugin_attributes(args: PJRT_Plugin_Attributes_Args) {
    let attributes = attributes();
    args.attributes = attributes.as_ptr();
    args.num_attributes = attributes.len();
    OK
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
// Client and device

/// The one device. Only its address matters.
static FAKE_DEVICE: u64 = 0;

fn fake_device() -> *mut sys::PJRT_Device {
    std::ptr::addr_of!(FAKE_DEVICE).cast_mut().cast()
}

struct FakeClient {
    devices: [*mut sys::PJRT_Device; 1],
}

const PLATFORM_NAME: &str = "fake";
const PLATFORM_VERSION: &str = "fake 0.1";

slot_fn!(client_create(args: PJRT_Client_Create_Args) {
    bump(&COUNTERS.client_create_calls);
    COUNTERS.client_create_options.fetch_add(args.num_options as i64, Ordering::SeqCst);
    if config().client_create_error {
        return new_error(PJRT_Error_Code::INVALID_ARGUMENT, "fake: bad option");
    }
    args.client = Box::into_raw(Box::new(FakeClient { devices: [fake_device()] })).cast();
    bump(&COUNTERS.clients_created);
    OK
});

slot_fn!(client_destroy(args: PJRT_Client_Destroy_Args) {
    if !args.client.is_null() {
        // SAFETY: a client this plugin created; the client library destroys it once.
        drop(unsafe { Box::from_raw(args.client.cast::<FakeClient>()) });
        bump(&COUNTERS.clients_destroyed);
    }
    OK
});

slot_fn!(client_platform_name(args: PJRT_Client_PlatformName_Args) {
    args.platform_name = PLATFORM_NAME.as_ptr().cast();
    args.platform_name_size = PLATFORM_NAME.len();
    OK
});

slot_fn!(client_platform_version(args: PJRT_Client_PlatformVersion_Args) {
    args.platform_version = PLATFORM_VERSION.as_ptr().cast();
    args.platform_version_size = PLATFORM_VERSION.len();
    OK
});

slot_fn!(client_process_index(args: PJRT_Client_ProcessIndex_Args) {
    args.process_index = 0;
    OK
});

slot_fn!(client_devices(args: PJRT_Client_Devices_Args) {
    // SAFETY: a live client of this plugin.
    match unsafe { handle::<FakeClient, _>(args.client, "client") } {
        Ok(client) => {
            args.devices = client.devices.as_ptr();
            args.num_devices = client.devices.len();
            OK
        }
        Err(e) => e,
    }
});

slot_fn!(client_addressable_devices(args: PJRT_Client_AddressableDevices_Args) {
    // SAFETY: a live client of this plugin.
    match unsafe { handle::<FakeClient, _>(args.client, "client") } {
        Ok(client) => {
            args.addressable_devices = client.devices.as_ptr();
            args.num_addressable_devices = client.devices.len();
            OK
        }
        Err(e) => e,
    }
});

// ---------------------------------------------------------------------------------------------
// Buffers

struct FakeBuffer {
    element_type: sys::PJRT_Buffer_Type,
    dims: Vec<i64>,
    deleted: AtomicBool,
}

slot_fn!(client_buffer_from_host_buffer(args: PJRT_Client_BufferFromHostBuffer_Args) {
    bump(&COUNTERS.buffer_from_host_calls);
    if args.client.is_null() || args.data.is_null() {
        return new_error(PJRT_Error_Code::INVALID_ARGUMENT, "fake: client or data is NULL");
    }
    if args.device != fake_device() || !args.memory.is_null() {
        return new_error(PJRT_Error_Code::INVALID_ARGUMENT, "fake: expected the fake device and no memory");
    }
    let known = (1..=33).contains(&args.type_.0) && args.type_ != sys::PJRT_Buffer_Type::TOKEN;
    if !known {
        // A real plugin aborts or crashes here (API notes, §7); the tests check it is never
        // reached.
        return new_error(PJRT_Error_Code::INVALID_ARGUMENT, format!("fake: bad element type {}", args.type_.0));
    }
    let dims = if args.num_dims == 0 {
        Vec::new()
    } else if args.dims.is_null() {
        return new_error(PJRT_Error_Code::INVALID_ARGUMENT, "fake: dims is NULL");
    } else {
        // SAFETY: the client passes `num_dims` readable dimensions.
        unsafe { std::slice::from_raw_parts(args.dims, args.num_dims) }.to_vec()
    };
    let buffer = FakeBuffer { element_type: args.type_, dims, deleted: AtomicBool::new(false) };
    args.buffer = Box::into_raw(Box::new(buffer)).cast();
    args.done_with_host_buffer = null_mut();
    bump(&COUNTERS.buffers_created);
    OK
});

slot_fn!(buffer_destroy(args: PJRT_Buffer_Destroy_Args) {
    if !args.buffer.is_null() {
        // SAFETY: a buffer this plugin created; the client library destroys it once.
        drop(unsafe { Box::from_raw(args.buffer.cast::<FakeBuffer>()) });
        bump(&COUNTERS.buffers_destroyed);
    }
    OK
});

slot_fn!(buffer_element_type(args: PJRT_Buffer_ElementType_Args) {
    // SAFETY: a live buffer of this plugin.
    match unsafe { handle::<FakeBuffer, _>(args.buffer, "buffer") } {
        Ok(buffer) => {
            args.type_ = buffer.element_type;
            OK
        }
        Err(e) => e,
    }
});

slot_fn!(buffer_dimensions(args: PJRT_Buffer_Dimensions_Args) {
    // SAFETY: a live buffer of this plugin.
    match unsafe { handle::<FakeBuffer, _>(args.buffer, "buffer") } {
        Ok(buffer) => {
            args.dims = buffer.dims.as_ptr();
            args.num_dims = buffer.dims.len();
            OK
        }
        Err(e) => e,
    }
});

slot_fn!(buffer_delete(args: PJRT_Buffer_Delete_Args) {
    // SAFETY: a live buffer of this plugin.
    match unsafe { handle::<FakeBuffer, _>(args.buffer, "buffer") } {
        Ok(buffer) => {
            buffer.deleted.store(true, Ordering::SeqCst);
            OK
        }
        Err(e) => e,
    }
});

slot_fn!(buffer_is_deleted(args: PJRT_Buffer_IsDeleted_Args) {
    // SAFETY: a live buffer of this plugin.
    match unsafe { handle::<FakeBuffer, _>(args.buffer, "buffer") } {
        Ok(buffer) => {
            args.is_deleted = buffer.deleted.load(Ordering::SeqCst);
            OK
        }
        Err(e) => e,
    }
});

slot_fn!(buffer_ready_event(args: PJRT_Buffer_ReadyEvent_Args) {
    if args.buffer.is_null() {
        return new_error(PJRT_Error_Code::INVALID_ARGUMENT, "fake: buffer is NULL");
    }
    let failure = config()
        .event_error
        .then(|| (PJRT_Error_Code::INTERNAL, "fake: transfer failed".to_owned()));
    args.event = Box::into_raw(Box::new(FakeEvent { failure })).cast();
    bump(&COUNTERS.events_created);
    OK
});

// ---------------------------------------------------------------------------------------------
// Events: always complete; some carry an error.

struct FakeEvent {
    failure: Option<(PJRT_Error_Code, String)>,
}

impl FakeEvent {
    /// A new `PJRT_Error` for the event's failure (the receiver owns it), or NULL.
    fn error(&self) -> *mut PJRT_Error {
        match &self.failure {
            Some((code, message)) => new_error(*code, message.clone()),
            None => OK,
        }
    }
}

slot_fn!(event_destroy(args: PJRT_Event_Destroy_Args) {
    if !args.event.is_null() {
        // SAFETY: an event this plugin created; the client library destroys it once.
        drop(unsafe { Box::from_raw(args.event.cast::<FakeEvent>()) });
        bump(&COUNTERS.events_destroyed);
    }
    OK
});

slot_fn!(event_is_ready(args: PJRT_Event_IsReady_Args) {
    args.is_ready = true;
    OK
});

// `PJRT_Event_Error` and `PJRT_Event_Await` return the event's error as their own result.
slot_fn!(event_error(args: PJRT_Event_Error_Args) {
    // SAFETY: a live event of this plugin.
    match unsafe { handle::<FakeEvent, _>(args.event, "event") } {
        Ok(event) => event.error(),
        Err(e) => e,
    }
});

slot_fn!(event_await(args: PJRT_Event_Await_Args) {
    // SAFETY: a live event of this plugin.
    match unsafe { handle::<FakeEvent, _>(args.event, "event") } {
        Ok(event) => event.error(),
        Err(e) => e,
    }
});

// Runs the callback on a new thread, as a real plugin does when work completes elsewhere. The
// thread does not touch the event, which the client may destroy at any time.
slot_fn!(event_on_ready(args: PJRT_Event_OnReady_Args) {
    bump(&COUNTERS.on_ready_calls);
    // SAFETY: a live event of this plugin.
    let event = match unsafe { handle::<FakeEvent, _>(args.event, "event") } {
        Ok(event) => event,
        Err(e) => return e,
    };
    let Some(callback) = args.callback else {
        return new_error(PJRT_Error_Code::INVALID_ARGUMENT, "fake: no callback");
    };
    let failure = event.failure.clone();
    // Passed as an integer: the pointer is opaque to us and only handed back.
    let user_arg = args.user_arg as usize;
    let spawned = std::thread::Builder::new().name("fake-pjrt-event".to_owned()).spawn(move || {
        let error = match failure {
            Some((code, message)) => new_error(code, message),
            None => OK,
        };
        bump(&COUNTERS.callbacks_invoked);
        // SAFETY: the callback and its argument came from `PJRT_Event_OnReady`; it is called
        // exactly once and takes ownership of `error`. It is an `extern "C"` function: if it
        // unwound, the process would abort here, which is what the tests guard against.
        unsafe { callback(error, user_arg as *mut c_void) };
        bump(&COUNTERS.callbacks_returned);
    });
    match spawned {
        Ok(_) => OK,
        // The callback was not taken: the client keeps ownership of `user_arg`.
        Err(e) => new_error(PJRT_Error_Code::RESOURCE_EXHAUSTED, format!("fake: cannot start a thread: {e}")),
    }
});

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
        api.pjrt_api_version = sys::PJRT_Api_Version {
            struct_size: 24,
            extension_start: null_mut(),
            major_version: config.major,
            minor_version: config.minor,
        };
        api.PJRT_Error_Destroy = Some(error_destroy);
        api.PJRT_Error_Message = Some(error_message);
        api.PJRT_Error_GetCode = Some(error_get_code);
        api.PJRT_Plugin_Initialize = Some(plugin_initialize);
        api.PJRT_Plugin_Attributes = Some(plugin_attributes);
        api.PJRT_Event_Destroy = Some(event_destroy);
        api.PJRT_Event_IsReady = Some(event_is_ready);
        api.PJRT_Event_Error = Some(event_error);
        api.PJRT_Event_Await = Some(event_await);
        api.PJRT_Event_OnReady = Some(event_on_ready);
        api.PJRT_Client_Create = Some(client_create);
        api.PJRT_Client_Destroy = Some(client_destroy);
        api.PJRT_Client_PlatformName = Some(client_platform_name);
        api.PJRT_Client_ProcessIndex = Some(client_process_index);
        api.PJRT_Client_PlatformVersion = Some(client_platform_version);
        api.PJRT_Client_Devices = Some(client_devices);
        api.PJRT_Client_AddressableDevices = Some(client_addressable_devices);
        api.PJRT_Client_BufferFromHostBuffer = Some(client_buffer_from_host_buffer);
        api.PJRT_Buffer_Destroy = Some(buffer_destroy);
        api.PJRT_Buffer_ElementType = Some(buffer_element_type);
        api.PJRT_Buffer_Dimensions = Some(buffer_dimensions);
        api.PJRT_Buffer_Delete = Some(buffer_delete);
        api.PJRT_Buffer_IsDeleted = Some(buffer_is_deleted);
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
