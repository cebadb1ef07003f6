//! Tests against `fake-plugin`: a PJRT plugin whose table, version and behaviour each test picks.
//!
//! The fake is built once per test process (`cargo build -p fake-plugin` into
//! `target/fake-plugin`). Each test copies the library to a file of its own (plugins are cached
//! by path and never unloaded, and a copy has its own statics) and writes the scenario name into
//! `<copy>.scenario`, which the fake reads when `GetPjrtApi` is first called. The fake's counters
//! are read through its exported `fake_counter`, found with `dlopen`/`dlsym` on the copy.
//!
//! Several scenarios would crash the process if the client called what it must not (garbage
//! slots): a passing test is the proof that it did not.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Once, OnceLock};
use std::time::{Duration, Instant};

use pjrt_client::{
    ApiVersion, Client, ClientOptions, ElementType, Error, ErrorCode, HostLayout, LoadError, Placement, Plugin, Value,
};

extern "C" {
    fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn dlerror() -> *mut c_char;
}

const RTLD_NOW: c_int = 2;

type FakeCounterFn = unsafe extern "C" fn(name: *const c_char) -> i64;

fn workspace_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap_or(root)
}

fn fake_target_dir() -> PathBuf {
    workspace_root().join("target").join("fake-plugin")
}

/// This process's folder for scenario copies.
fn scenario_dir() -> PathBuf {
    fake_target_dir().join("scenarios").join(std::process::id().to_string())
}

/// Removes scenario folders left by test processes that no longer run.
fn remove_stale_scenario_dirs() {
    let Ok(entries) = std::fs::read_dir(fake_target_dir().join("scenarios")) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        if pid != std::process::id() && !Path::new("/proc").join(pid.to_string()).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Builds the fake plugin once per test process and returns the path of the library.
fn fake_library() -> &'static Path {
    static LIBRARY: OnceLock<PathBuf> = OnceLock::new();
    LIBRARY.get_or_init(|| {
        let cargo = std::env::var_os("CARGO")
            .or_else(|| option_env!("CARGO").map(Into::into))
            .unwrap_or_else(|| "cargo".into());
        let target_dir = fake_target_dir();
        let output = Command::new(&cargo)
            .current_dir(workspace_root())
            .args(["build", "--quiet", "-p", "fake-plugin", "--target-dir"])
            .arg(&target_dir)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {cargo:?} to build fake-plugin: {e}"));
        assert!(
            output.status.success(),
            "building fake-plugin failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        let library = target_dir.join("debug").join("libfake_plugin.so");
        assert!(library.is_file(), "cargo built fake-plugin but {} is missing", library.display());
        remove_stale_scenario_dirs();
        library
    })
}

/// Silences the expected panics of the callback tests (they happen on the fake's threads, where
/// the test harness does not capture output); every other panic is reported as usual.
const EXPECTED_PANIC: &str = "boom (an expected panic in a fake_plugin test callback)";

fn quiet_expected_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let message =
                payload.downcast_ref::<&str>().copied().or(payload.downcast_ref::<String>().map(String::as_str));
            if message != Some(EXPECTED_PANIC) {
                previous(info);
            }
        }));
    });
}

/// One copy of the fake plugin, configured with one scenario.
struct Fake {
    path: PathBuf,
    counter: FakeCounterFn,
}

impl Fake {
    fn new(scenario: &str) -> Fake {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let library = fake_library();
        let dir = scenario_dir();
        std::fs::create_dir_all(&dir).unwrap();
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let path = dir.join(format!("{scenario}-{n}.so"));
        // Copy under a temporary name and rename: the copy is a new file (new inode), so the
        // loader never mistakes it for another copy.
        let partial = dir.join(format!("{scenario}-{n}.so.partial"));
        std::fs::copy(library, &partial).unwrap();
        std::fs::rename(&partial, &path).unwrap();
        std::fs::write(sidecar(&path), scenario).unwrap();
        let path = path.canonicalize().unwrap();

        // Open the copy ourselves first and never close it: the counters stay readable even when
        // `Plugin::load` fails and drops (dlcloses) its own handle.
        let c_path = CString::new(path.as_os_str().as_bytes()).unwrap();
        // SAFETY: loading the fake runs only its (Rust std) initialisers; the path is a valid
        // C string.
        let handle = unsafe { dlopen(c_path.as_ptr(), RTLD_NOW) };
        assert!(!handle.is_null(), "dlopen {}: {}", path.display(), last_dl_error());
        // SAFETY: `handle` is a live handle and the symbol name a C string.
        let symbol = unsafe { dlsym(handle, c"fake_counter".as_ptr()) };
        assert!(!symbol.is_null(), "dlsym fake_counter: {}", last_dl_error());
        // SAFETY: the fake exports `fake_counter` with exactly this signature; the library is
        // never unloaded (our handle is never closed), so the pointer stays valid.
        let counter = unsafe { std::mem::transmute::<*mut c_void, FakeCounterFn>(symbol) };
        Fake { path, counter }
    }

    fn load(&self) -> pjrt_client::Result<Plugin> {
        Plugin::load(&self.path)
    }

    /// Loads the copy and checks that the fake runs the intended scenario.
    fn plugin(&self) -> Plugin {
        let plugin = self.load().unwrap_or_else(|e| panic!("loading the fake plugin: {e}"));
        let scenario = std::fs::read_to_string(sidecar(&self.path)).unwrap();
        assert_eq!(plugin.attribute("fake_scenario"), Some(&Value::String(scenario)));
        plugin
    }

    fn counter(&self, name: &str) -> i64 {
        let c_name = CString::new(name).unwrap();
        // SAFETY: `fake_counter` reads a NUL-terminated string and returns a number.
        let value = unsafe { (self.counter)(c_name.as_ptr()) };
        assert!(value >= 0, "the fake plugin has no counter `{name}`");
        value
    }

    /// Waits (up to 10 s) until a counter reaches `value`; for work on the fake's own threads.
    fn wait_for_counter(&self, name: &str, value: i64) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.counter(name) < value {
            assert!(Instant::now() < deadline, "counter `{name}` stayed at {} (expected {value})", self.counter(name));
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(self.counter(name), value, "counter `{name}`");
    }

    /// Every error, client, buffer and event the fake handed out was destroyed.
    fn assert_nothing_leaked(&self) {
        for (created, destroyed) in [
            ("errors_created", "errors_destroyed"),
            ("clients_created", "clients_destroyed"),
            ("buffers_created", "buffers_destroyed"),
            ("events_created", "events_destroyed"),
        ] {
            assert_eq!(self.counter(created), self.counter(destroyed), "{created} vs {destroyed}");
        }
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        // The library stays mapped (never unloaded), so the files can go.
        let _ = std::fs::remove_file(sidecar(&self.path));
        let _ = std::fs::remove_file(&self.path);
    }
}

fn sidecar(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".scenario");
    PathBuf::from(name)
}

fn last_dl_error() -> String {
    // SAFETY: `dlerror` returns NULL or a NUL-terminated string valid until the next dl call.
    unsafe {
        let message = dlerror();
        if message.is_null() {
            "unknown error".to_owned()
        } else {
            CStr::from_ptr(message).to_string_lossy().into_owned()
        }
    }
}

fn load_error(result: pjrt_client::Result<Plugin>) -> LoadError {
    match result {
        Err(Error::Load { source, .. }) => source,
        other => panic!("expected a load error, got {other:?}"),
    }
}

fn working_client(fake: &Fake) -> Client {
    let plugin = fake.plugin();
    let client = Client::new(&plugin, &ClientOptions::new()).unwrap();
    assert_eq!(client.platform_name(), "fake");
    assert_eq!(client.platform_version(), "fake 0.1");
    assert_eq!(client.addressable_devices().len(), 1);
    client
}

#[test]
fn version_0_56_is_refused() {
    let fake = Fake::new("minor_56");
    match load_error(fake.load()) {
        LoadError::IncompatibleVersion { major: 0, minor: 56, .. } => {}
        other => panic!("expected IncompatibleVersion for 0.56, got {other:?}"),
    }
    assert_eq!(fake.counter("initialize_calls"), 0, "a refused plugin must not be initialised");

    let fake = Fake::new("major_1");
    match load_error(fake.load()) {
        LoadError::IncompatibleVersion { major: 1, minor: 115, .. } => {}
        other => panic!("expected IncompatibleVersion for 1.115, got {other:?}"),
    }
    assert_eq!(fake.counter("initialize_calls"), 0);
}

#[test]
fn short_table_gates_slots() {
    // 10 slots (0..=9, up to PJRT_Event_OnReady); PJRT_Client_Create and everything after it is
    // non-NULL garbage. Calling it would crash the test process.
    let fake = Fake::new("short_table");
    let plugin = fake.plugin();
    assert_eq!(plugin.api_version(), ApiVersion { major: 0, minor: 115 });
    assert_eq!(plugin.slot_count(), 10);
    assert!(plugin.has_function("PJRT_Event_OnReady"));
    assert!(!plugin.has_function("PJRT_Client_Create"));
    assert!(!plugin.has_function("PJRT_Client_Destroy"));
    assert!(!plugin.has_function("PJRT_TopologyDescription_GetMemorySpaceKindIds"));
    match Client::new(&plugin, &ClientOptions::new()) {
        Err(Error::Unsupported {
            function: "PJRT_Client_Create",
            since_minor: 0,
            plugin_major: 0,
            plugin_minor: 115,
        }) => {}
        other => panic!("expected Unsupported PJRT_Client_Create, got {other:?}"),
    }
    assert_eq!(fake.counter("client_create_calls"), 0);
    assert_eq!(fake.counter("unimplemented_calls"), 0);

    // Shaped like the real 0.106 CPU plugin: 136 slots and garbage where slots 136, 137 would be.
    let fake = Fake::new("working_0_106");
    let plugin = fake.plugin();
    assert_eq!(plugin.slot_count(), 136);
    assert!(plugin.has_function("PJRT_Device_ClearMemoryStats"));
    assert!(!plugin.has_function("PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace"));
    assert!(!plugin.has_function("PJRT_TopologyDescription_GetMemorySpaceKindIds"));
}

#[test]
fn null_slot_is_unsupported() {
    let fake = Fake::new("null_client_create");
    let plugin = fake.plugin();
    assert_eq!(plugin.slot_count(), 138);
    assert!(!plugin.has_function("PJRT_Client_Create"));
    assert!(plugin.has_function("PJRT_Client_Destroy"));
    match Client::new(&plugin, &ClientOptions::new()) {
        Err(Error::Unsupported { function: "PJRT_Client_Create", plugin_minor: 115, .. }) => {}
        other => panic!("expected Unsupported PJRT_Client_Create, got {other:?}"),
    }
    assert_eq!(fake.counter("client_create_calls"), 0);
}

#[test]
fn minor_gates_slots() {
    // A full 138-slot table that claims 0.40: slots newer than 0.40 are absent although present
    // and non-NULL in the table, and before 0.57 only slots 0..100 have known positions.
    let fake = Fake::new("minor_40");
    let plugin = fake.plugin();
    assert_eq!(plugin.api_version(), ApiVersion { major: 0, minor: 40 });
    assert_eq!(plugin.slot_count(), 100);
    assert!(plugin.has_function("PJRT_Executable_OutputElementTypes"), "since 0.29");
    assert!(plugin.has_function("PJRT_Executable_GetCompiledMemoryStats"), "since 0.40");
    assert!(!plugin.has_function("PJRT_Memory_Kind_Id"), "since 0.48");
    assert!(!plugin.has_function("PJRT_Buffer_CopyRawToHost"), "slot 100, since 0.57");
    assert!(!plugin.has_function("PJRT_Event_Create"), "since 0.89");
    assert!(!plugin.has_function("PJRT_No_Such_Function"));
}

#[test]
fn plugin_errors_keep_code_and_message_and_are_freed() {
    let fake = Fake::new("client_create_error");
    let plugin = fake.plugin();
    let error = Client::new(&plugin, &ClientOptions::new()).unwrap_err();
    match &error {
        Error::Pjrt { function: "PJRT_Client_Create", code: ErrorCode::InvalidArgument, message } => {
            assert_eq!(message, "fake: bad option");
        }
        other => panic!("expected a PJRT_Client_Create error, got {other:?}"),
    }
    assert_eq!(error.code(), Some(ErrorCode::InvalidArgument));
    assert!(error.to_string().contains("fake: bad option"), "{error}");
    assert_eq!(fake.counter("client_create_calls"), 1);
    assert_eq!(fake.counter("errors_created"), 1);
    assert_eq!(fake.counter("errors_destroyed"), 1);
    fake.assert_nothing_leaked();
}

#[test]
fn initialize_failure_is_a_load_error() {
    let fake = Fake::new("initialize_error");
    match load_error(fake.load()) {
        LoadError::Initialize(inner) => match *inner {
            Error::Pjrt { function: "PJRT_Plugin_Initialize", code: ErrorCode::Internal, ref message } => {
                assert!(message.contains("fake: initialize failed"), "{message}");
            }
            other => panic!("expected a PJRT_Plugin_Initialize error, got {other:?}"),
        },
        other => panic!("expected LoadError::Initialize, got {other:?}"),
    }
    assert_eq!(fake.counter("initialize_calls"), 1);
    assert_eq!(fake.counter("errors_created"), 1);
    assert_eq!(fake.counter("errors_destroyed"), 1);
}

/// A shared library that is surely not a PJRT plugin: libm, already loaded in this process.
fn libm_path() -> PathBuf {
    let candidates = [
        "/lib/x86_64-linux-gnu/libm.so.6",
        "/usr/lib/x86_64-linux-gnu/libm.so.6",
        "/lib/aarch64-linux-gnu/libm.so.6",
        "/usr/lib/aarch64-linux-gnu/libm.so.6",
        "/lib64/libm.so.6",
        "/usr/lib64/libm.so.6",
        "/usr/lib/libm.so.6",
        "/lib/libm.so.6",
    ];
    if let Some(found) = candidates.iter().map(PathBuf::from).find(|p| p.is_file()) {
        return found;
    }
    // Else whatever libm (or libc) this process mapped.
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    maps.lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .find(|path| path.contains("/libm.so") || path.contains("/libc.so"))
        .map(PathBuf::from)
        .expect("no libm or libc found to use as a shared library without GetPjrtApi")
}

#[test]
fn not_a_plugin() {
    fake_library();
    let dir = scenario_dir();
    std::fs::create_dir_all(&dir).unwrap();

    let missing = dir.join("no-such-plugin.so");
    assert!(matches!(load_error(Plugin::load(&missing)), LoadError::NotFound));

    let text = dir.join("not-a-library.so");
    std::fs::write(&text, "this is a text file, not a shared library\n").unwrap();
    let error = load_error(Plugin::load(&text));
    let _ = std::fs::remove_file(&text);
    assert!(matches!(error, LoadError::Open(_)), "{error:?}");

    let libm = libm_path();
    let error = load_error(Plugin::load(&libm));
    assert!(matches!(error, LoadError::MissingGetPjrtApi), "{}: {error:?}", libm.display());

    let fake = Fake::new("null_api");
    assert!(matches!(load_error(fake.load()), LoadError::NullApi));

    let fake = Fake::new("tiny_table");
    match load_error(fake.load()) {
        LoadError::TableTooSmall { struct_size: 16, min } => assert_eq!(min, 40 + 3 * 8),
        other => panic!("expected TableTooSmall, got {other:?}"),
    }
    assert_eq!(fake.counter("initialize_calls"), 0);
}

#[test]
fn panicking_on_ready_callback_is_caught() {
    quiet_expected_panics();
    let fake = Fake::new("working");
    let client = working_client(&fake);
    let buffer = client.buffer_from_slice(&[1f32, 2., 3., 4.], &[4], Placement::Default).unwrap();
    assert_eq!(buffer.element_type().unwrap(), ElementType::F32);
    assert_eq!(buffer.dimensions().unwrap(), [4]);
    let event = buffer.ready_event().unwrap();

    let (sender, receiver) = mpsc::channel();
    let on_ready = event
        .on_ready(move |status| {
            let _ = sender.send((std::thread::current().id(), status.is_ok()));
            panic!("{}", EXPECTED_PANIC);
        })
        .unwrap();
    match on_ready.wait() {
        Err(Error::CallbackPanicked(message)) => assert!(message.contains("boom"), "{message}"),
        other => panic!("expected CallbackPanicked, got {other:?}"),
    }
    assert!(on_ready.is_done());
    let (callback_thread, status_ok) = receiver.recv().unwrap();
    assert!(status_ok, "the event completed without an error");
    assert_ne!(callback_thread, std::thread::current().id(), "the fake runs callbacks on its own thread");
    // The callback returned into the plugin normally (an unwind there would have aborted).
    fake.wait_for_counter("callbacks_returned", 1);

    // Still alive and usable: a second callback runs normally.
    let second = event.on_ready(|status| assert!(status.is_ok())).unwrap();
    second.wait().unwrap();
    fake.wait_for_counter("callbacks_returned", 2);
    event.wait().unwrap();
    assert!(event.is_ready().unwrap());

    drop(event);
    drop(buffer);
    drop(client);
    assert_eq!(fake.counter("on_ready_calls"), 2);
    assert_eq!(fake.counter("clients_destroyed"), 1);
    fake.assert_nothing_leaked();
}

#[test]
fn on_ready_callback_receives_the_event_error() {
    quiet_expected_panics();
    let fake = Fake::new("event_error");
    let client = working_client(&fake);
    let buffer = client.buffer_from_slice(&[1f32, 2., 3., 4.], &[4], Placement::Default).unwrap();
    let event = buffer.ready_event().unwrap();

    let (sender, receiver) = mpsc::channel();
    let on_ready = event
        .on_ready(move |status| {
            let _ = sender.send(status);
        })
        .unwrap();
    on_ready.wait().unwrap();
    match receiver.recv().unwrap() {
        Err(Error::Pjrt { function: "PJRT_Event", code: ErrorCode::Internal, message }) => {
            assert_eq!(message, "fake: transfer failed");
        }
        other => panic!("expected the event's error in the callback, got {other:?}"),
    }

    // A callback that panics on the error: the panic is caught and the error still freed.
    let on_ready = event
        .on_ready(|status| {
            assert!(status.is_err());
            panic!("{}", EXPECTED_PANIC);
        })
        .unwrap();
    assert!(matches!(on_ready.wait(), Err(Error::CallbackPanicked(_))));
    fake.wait_for_counter("callbacks_returned", 2);

    match event.wait() {
        Err(Error::Pjrt { function: "PJRT_Event_Await", code: ErrorCode::Internal, message }) => {
            assert_eq!(message, "fake: transfer failed");
        }
        other => panic!("expected the event's error from wait, got {other:?}"),
    }
    assert!(matches!(event.error(), Err(Error::Pjrt { function: "PJRT_Event_Error", .. })));

    drop(event);
    drop(buffer);
    drop(client);
    assert_eq!(fake.counter("errors_created"), 4);
    fake.assert_nothing_leaked();
}

#[test]
fn newer_element_type_is_refused_before_the_call() {
    let fake = Fake::new("working_0_106");
    let client = working_client(&fake);
    assert_eq!(client.plugin().api_version().minor, 106);
    let dense = HostLayout::default();

    // F6E2M3FN is 0.114: the real 0.106 plugin segfaults on it.
    match client.buffer_from_bytes(&[0u8; 4], ElementType::F6E2M3FN, &[4], &dense, Placement::Default) {
        Err(Error::Unsupported { since_minor: 114, plugin_minor: 106, .. }) => {}
        other => panic!("expected Unsupported for f6e2m3fn on 0.106, got {other:?}"),
    }
    // INVALID aborts every real plugin.
    match client.buffer_from_bytes(&[0u8; 4], ElementType::INVALID, &[4], &dense, Placement::Default) {
        Err(Error::InvalidArgument(_)) => {}
        other => panic!("expected InvalidArgument for INVALID, got {other:?}"),
    }
    // 8 bytes for an f32[4] (16 bytes): the plugin would read past the slice.
    match client.buffer_from_bytes(&[0u8; 8], ElementType::F32, &[4], &dense, Placement::Default) {
        Err(Error::InvalidArgument(_)) => {}
        other => panic!("expected InvalidArgument for a short slice, got {other:?}"),
    }
    assert_eq!(fake.counter("buffer_from_host_calls"), 0);

    // Control: a valid upload does reach the plugin.
    let buffer = client.buffer_from_bytes(&[0u8; 16], ElementType::F32, &[4], &dense, Placement::Default).unwrap();
    assert_eq!(fake.counter("buffer_from_host_calls"), 1);
    drop(buffer);
    drop(client);
    fake.assert_nothing_leaked();
}

#[test]
fn wrong_client_option_type_is_refused_before_the_call() {
    let fake = Fake::new("working");
    let plugin = fake.plugin();
    match Client::new(&plugin, &ClientOptions::new().set("cpu_device_count", "4")) {
        Err(Error::InvalidArgument(message)) => assert!(message.contains("cpu_device_count"), "{message}"),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    assert_eq!(fake.counter("client_create_calls"), 0);

    // Control: the right type reaches the plugin.
    let client = Client::new(&plugin, &ClientOptions::new().cpu_device_count(4)).unwrap();
    assert_eq!(fake.counter("client_create_calls"), 1);
    assert_eq!(fake.counter("client_create_options"), 1);
    drop(client);
    fake.assert_nothing_leaked();
}
