//! The harness around `fake-plugin`, shared by the tests that use it.
//!
//! The fake is built once per test process (`cargo build -p fake-plugin` into
//! `target/fake-plugin`). Each [`Fake`] copies the library to a file of its own (plugins are
//! cached by path and never unloaded, and a copy has its own statics) and writes the scenario
//! (its name, then fault directives) into `<copy>.scenario`, which the fake reads when
//! `GetPjrtApi` is first called. The fake's counters and its run-time fault directives are
//! reached through its exported `fake_counter` and `fake_set_faults`, found with
//! `dlopen`/`dlsym` on the copy.

#![allow(dead_code)]

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use pjrt_client::{Plugin, Value};

extern "C" {
    fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn dlerror() -> *mut c_char;
}

const RTLD_NOW: c_int = 2;

type FakeCounterFn = unsafe extern "C" fn(name: *const c_char) -> i64;
type FakeSetFaultsFn = unsafe extern "C" fn(text: *const c_char) -> i64;
type FakeClientCreateOptionsFn = unsafe extern "C" fn(buffer: *mut u8, capacity: usize) -> i64;

fn workspace_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap_or(root)
}

fn fake_target_dir() -> PathBuf {
    workspace_root().join("target").join("fake-plugin")
}

/// This process's folder for scenario copies.
pub fn scenario_dir() -> PathBuf {
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
pub fn fake_library() -> &'static Path {
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

/// The kinds of objects the fake hands out, as (created counter, destroyed counter).
pub const OBJECT_KINDS: &[(&str, &str)] = &[
    ("errors_created", "errors_destroyed"),
    ("clients_created", "clients_destroyed"),
    ("buffers_created", "buffers_destroyed"),
    ("events_created", "events_destroyed"),
    ("loaded_executables_created", "loaded_executables_destroyed"),
    ("executables_created", "executables_destroyed"),
    ("dma_maps", "dma_unmaps"),
    ("device_attributes_created", "device_attributes_destroyed"),
    ("tracking_events_created", "tracking_events_destroyed"),
    ("serialized_created", "serialized_destroyed"),
    ("execute_contexts_created", "execute_contexts_destroyed"),
    ("transfer_managers_created", "transfer_managers_destroyed"),
    ("topologies_created", "topologies_destroyed"),
    ("dependencies_created", "dependencies_destroyed"),
    ("aliases_created", "aliases_destroyed"),
    ("raw_copy_requests_created", "raw_copy_requests_destroyed"),
    ("streams_created", "streams_destroyed"),
];

/// One copy of the fake plugin, configured with one scenario.
pub struct Fake {
    pub path: PathBuf,
    counter: FakeCounterFn,
    set_faults: FakeSetFaultsFn,
    client_create_options: FakeClientCreateOptionsFn,
}

impl Fake {
    /// A copy running `scenario` (see `Config::from_name` in the fake), without fault directives.
    pub fn new(scenario: &str) -> Fake {
        Fake::with_sidecar(scenario, scenario)
    }

    /// A copy whose sidecar file holds `sidecar`: a scenario name, then fault directives.
    pub fn with_sidecar(label: &str, sidecar_text: &str) -> Fake {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let library = fake_library();
        let dir = scenario_dir();
        std::fs::create_dir_all(&dir).unwrap();
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let path = dir.join(format!("{label}-{n}.so"));
        // Copy under a temporary name and rename: the copy is a new file (new inode), so the
        // loader never mistakes it for another copy.
        let partial = dir.join(format!("{label}-{n}.so.partial"));
        std::fs::copy(library, &partial).unwrap();
        std::fs::rename(&partial, &path).unwrap();
        std::fs::write(sidecar(&path), sidecar_text).unwrap();
        let path = path.canonicalize().unwrap();

        // Open the copy ourselves first and never close it: the counters stay readable even when
        // `Plugin::load` fails and drops (dlcloses) its own handle.
        let c_path = CString::new(path.as_os_str().as_bytes()).unwrap();
        // SAFETY: loading the fake runs only its (Rust std) initialisers; the path is a valid
        // C string.
        let handle = unsafe { dlopen(c_path.as_ptr(), RTLD_NOW) };
        assert!(!handle.is_null(), "dlopen {}: {}", path.display(), last_dl_error());
        let symbol = |name: &CStr| {
            // SAFETY: `handle` is a live handle and the symbol name a C string.
            let symbol = unsafe { dlsym(handle, name.as_ptr()) };
            assert!(!symbol.is_null(), "dlsym {name:?}: {}", last_dl_error());
            symbol
        };
        // SAFETY: the fake exports these functions with exactly these signatures; the library is
        // never unloaded (our handle is never closed), so the pointers stay valid.
        let (counter, set_faults, client_create_options) = unsafe {
            (
                std::mem::transmute::<*mut c_void, FakeCounterFn>(symbol(c"fake_counter")),
                std::mem::transmute::<*mut c_void, FakeSetFaultsFn>(symbol(c"fake_set_faults")),
                std::mem::transmute::<*mut c_void, FakeClientCreateOptionsFn>(symbol(c"fake_client_create_options")),
            )
        };
        Fake { path, counter, set_faults, client_create_options }
    }

    pub fn load(&self) -> pjrt_client::Result<Plugin> {
        Plugin::load(&self.path)
    }

    /// Loads the copy and checks that the fake runs the intended scenario.
    pub fn plugin(&self) -> Plugin {
        let plugin = self.load().unwrap_or_else(|e| panic!("loading the fake plugin: {e}"));
        let sidecar_text = std::fs::read_to_string(sidecar(&self.path)).unwrap();
        let scenario = sidecar_text.lines().next().unwrap_or("").trim().to_owned();
        assert_eq!(plugin.attribute("fake_scenario"), Some(&Value::String(scenario)));
        plugin
    }

    pub fn counter(&self, name: &str) -> i64 {
        let c_name = CString::new(name).unwrap();
        // SAFETY: `fake_counter` reads a NUL-terminated string and returns a number.
        let value = unsafe { (self.counter)(c_name.as_ptr()) };
        assert!(value >= 0, "the fake plugin has no counter `{name}`");
        value
    }

    /// The options the last `PJRT_Client_Create` call handed the fake, one `name=type:value`
    /// each (`string:TEXT`, `int64:N`, `int64_list:[A,B]`, `float:X`, `bool:B`), in order.
    pub fn last_client_create_options(&self) -> Vec<String> {
        // SAFETY: with a NULL buffer and capacity 0 the fake only returns the length.
        let len = unsafe { (self.client_create_options)(std::ptr::null_mut(), 0) };
        let mut buffer = vec![0u8; usize::try_from(len).expect("a length")];
        // SAFETY: `buffer` is writable for its length.
        let copied = unsafe { (self.client_create_options)(buffer.as_mut_ptr(), buffer.len()) };
        assert_eq!(copied, len, "the options changed while being read");
        String::from_utf8(buffer).unwrap().lines().map(str::to_owned).collect()
    }

    /// Replaces the fake's fault directives (and resets its per-slot call counts).
    pub fn set_faults(&self, directives: &str) {
        let text = CString::new(directives).unwrap();
        // SAFETY: `fake_set_faults` reads a NUL-terminated string.
        let n = unsafe { (self.set_faults)(text.as_ptr()) };
        assert!(n >= 0, "the fake refused the directives {directives:?} (see stderr)");
    }

    /// Waits (up to 10 s) until a counter reaches `value`; for work on the fake's own threads.
    pub fn wait_for_counter(&self, name: &str, value: i64) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.counter(name) < value {
            assert!(Instant::now() < deadline, "counter `{name}` stayed at {} (expected {value})", self.counter(name));
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(self.counter(name), value, "counter `{name}`");
    }

    /// Waits (up to 10 s) until no thread of the fake (late events, callbacks) runs any more,
    /// and until the library's release thread has dropped what it was handed.
    pub fn settle(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.counter("threads_running") > 0 {
            assert!(Instant::now() < deadline, "the fake's threads did not finish");
            std::thread::sleep(Duration::from_millis(1));
        }
        // And what the library handed to its release thread (handles dropped inside callbacks).
        pjrt_client::flush_released();
    }

    /// created − destroyed for every kind of object, in the order of [`OBJECT_KINDS`].
    pub fn live_objects(&self) -> Vec<i64> {
        OBJECT_KINDS.iter().map(|(created, destroyed)| self.counter(created) - self.counter(destroyed)).collect()
    }

    /// Every error, client, buffer, event and executable the fake handed out was destroyed.
    pub fn assert_nothing_leaked(&self) {
        self.settle();
        for (created, destroyed) in OBJECT_KINDS {
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

/// The program every fake executable runs: the sum of two `f32[4]`.
pub fn program() -> pjrt_client::Program {
    pjrt_client::Program::mlir_text(
        "func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {\n\
         %0 = stablehlo.add %a, %b : tensor<4xf32>\n\
         return %0 : tensor<4xf32>\n}",
    )
    .unwrap()
}

/// [`program`] compiled for `replicas` replicas.
pub fn compile(client: &pjrt_client::Client, replicas: usize) -> pjrt_client::Result<pjrt_client::LoadedExecutable> {
    client.compile(&program(), &pjrt_client::CompileOptions::new().num_replicas(replicas))
}
