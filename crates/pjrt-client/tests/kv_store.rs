//! Key-value stores: the `InMemoryStore`, the C trampolines called directly (as a plugin would,
//! with a fake error factory), and clients created with a store and a process index on both CPU
//! plugins.
//!
//! What the CPU plugins do with a store (observed, asserted below): nothing. Neither plugin calls
//! get, try-get or put while creating a client, compiling or running a 2-replica all-reduce, with
//! or without `process_id`. The 0.115 plugin takes `process_id` (process 1's devices are 2048 and
//! 2049, and it reports process index 1); the 0.106 plugin ignores it. Two clients with process 0
//! and 1 sharing one store in one process each see only their own devices and work independently.
//!
//! A test binary of its own: its global allocator keeps every thread's allocation balance (not a module of `tests/client`, see its `main.rs`).

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ffi::c_char;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use pjrt_client::sys::{self, Args};
use pjrt_client::{
    Buffer, Client, ClientOptions, CompileOptions, ErrorCode, ExecuteOptions, HostSource, InMemoryStore, KeyValueStore,
    KvCallCounts, KvCallbacks, KvError, Program, UploadOptions,
};

// ---- a per-thread allocation balance, to prove the value deleter frees what get allocated ----

struct Balance;

thread_local! {
    static LIVE_BYTES: Cell<isize> = const { Cell::new(0) };
}

fn add_live(delta: isize) {
    // `try_with`: during thread teardown the slot may be gone; those allocations are not ours.
    let _ = LIVE_BYTES.try_with(|b| b.set(b.get() + delta));
}

fn live_bytes() -> isize {
    LIVE_BYTES.with(|b| b.get())
}

// SAFETY: forwards to the system allocator; only keeps a per-thread tally.
unsafe impl GlobalAlloc for Balance {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        add_live(layout.size() as isize);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        add_live(-(layout.size() as isize));
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        add_live(new_size as isize - layout.size() as isize);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Balance = Balance;

// ---- a fake plugin side: the error factory and how to read what it made ----

/// What our fake `PJRT_CallbackError` makes: the plugin's `PJRT_Error` is opaque, so any layout will do.
struct FakeError {
    code: i32,
    message: String,
}

unsafe extern "C" fn fake_error_factory(
    code: sys::PJRT_Error_Code,
    message: *const c_char,
    size: usize,
) -> *mut sys::PJRT_Error {
    // SAFETY: the trampoline passes a message readable for `size` bytes.
    let bytes = unsafe { std::slice::from_raw_parts(message as *const u8, size) };
    let error = FakeError { code: code.0, message: String::from_utf8_lossy(bytes).into_owned() };
    Box::into_raw(Box::new(error)) as *mut sys::PJRT_Error
}

/// Takes back a `PJRT_Error` made by the fake factory: `None` for success (NULL).
fn take_error(error: *mut sys::PJRT_Error) -> Option<(ErrorCode, String)> {
    if error.is_null() {
        return None;
    }
    // SAFETY: every non-NULL error in these tests comes from `fake_error_factory`.
    let error = unsafe { Box::from_raw(error as *mut FakeError) };
    Some((ErrorCode::from_raw(sys::PJRT_Error_Code(error.code)), error.message))
}

/// Calls the get trampoline as a plugin would; returns the value (copied, then freed through the
/// deleter) or the error.
fn call_get(cb: &KvCallbacks, key: &[u8], timeout_ms: i32) -> Result<Vec<u8>, (ErrorCode, String)> {
    let mut factory: sys::PJRT_CallbackError = Some(fake_error_factory);
    let mut args = sys::PJRT_KeyValueGetCallback_Args::new();
    args.key = key.as_ptr() as *const c_char;
    args.key_size = key.len();
    args.timeout_in_ms = timeout_ms;
    args.callback_error = &mut factory;
    args.user_arg = cb.user_arg();
    // SAFETY: a valid args struct, a live KvCallbacks.
    let error = unsafe { cb.get_callback().unwrap()(&mut args) };
    if let Some(e) = take_error(error) {
        assert!(args.value.is_null() && args.value_deleter_callback.is_none(), "no value on error");
        return Err(e);
    }
    Ok(copy_and_free(args.value, args.value_size, args.value_deleter_callback))
}

fn call_try_get(cb: &KvCallbacks, key: &[u8]) -> Result<Vec<u8>, (ErrorCode, String)> {
    let mut factory: sys::PJRT_CallbackError = Some(fake_error_factory);
    let mut args = sys::PJRT_KeyValueTryGetCallback_Args::new();
    args.key = key.as_ptr() as *const c_char;
    args.key_size = key.len();
    args.callback_error = &mut factory;
    args.user_arg = cb.user_arg();
    // SAFETY: a valid args struct, a live KvCallbacks.
    let error = unsafe { cb.try_get_callback().unwrap()(&mut args) };
    if let Some(e) = take_error(error) {
        return Err(e);
    }
    Ok(copy_and_free(args.value, args.value_size, args.value_deleter_callback))
}

fn call_put(cb: &KvCallbacks, key: &[u8], value: &[u8]) -> Result<(), (ErrorCode, String)> {
    let mut factory: sys::PJRT_CallbackError = Some(fake_error_factory);
    let mut args = sys::PJRT_KeyValuePutCallback_Args::new();
    args.key = key.as_ptr() as *const c_char;
    args.key_size = key.len();
    args.value = value.as_ptr() as *const c_char;
    args.value_size = value.len();
    args.callback_error = &mut factory;
    args.user_arg = cb.user_arg();
    // SAFETY: a valid args struct, a live KvCallbacks.
    let error = unsafe { cb.put_callback().unwrap()(&mut args) };
    take_error(error).map_or(Ok(()), Err)
}

/// What the plugin does with a returned value: copy it, then call the deleter.
fn copy_and_free(value: *mut c_char, size: usize, deleter: sys::PJRT_KeyValueGetCallback_ValueDeleter) -> Vec<u8> {
    assert!(!value.is_null(), "a returned value is never NULL, even when empty");
    // SAFETY: the trampoline returned `size` readable bytes.
    let copy = unsafe { std::slice::from_raw_parts(value as *const u8, size) }.to_vec();
    // SAFETY: the value came from the trampoline and is freed once.
    unsafe { deleter.expect("a value deleter")(value) };
    copy
}

fn callbacks(store: impl KeyValueStore) -> KvCallbacks {
    KvCallbacks::new(Arc::new(store))
}

// ---- stores for the tests ----

/// Panics in every method.
struct PanickingStore;

impl KeyValueStore for PanickingStore {
    fn get(&self, key: &str, _: Duration) -> Result<Vec<u8>, KvError> {
        panic!("boom in get({key})")
    }
    fn try_get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        panic!("boom in try_get({key})")
    }
    fn put(&self, key: &str, _: &[u8]) -> Result<(), KvError> {
        panic!("boom in put({key})")
    }
}

/// Fails every call with UNAVAILABLE.
struct DownStore;

impl KeyValueStore for DownStore {
    fn get(&self, _: &str, _: Duration) -> Result<Vec<u8>, KvError> {
        Err(KvError::unavailable("store is down"))
    }
    fn try_get(&self, _: &str) -> Result<Option<Vec<u8>>, KvError> {
        Err(KvError::unavailable("store is down"))
    }
    fn put(&self, _: &str, _: &[u8]) -> Result<(), KvError> {
        Err(KvError::unavailable("store is down"))
    }
}

/// An in-memory store that counts its calls and records every key it was asked about.
#[derive(Default)]
struct CountingStore {
    inner: InMemoryStore,
    calls: AtomicUsize,
    keys: std::sync::Mutex<Vec<String>>,
}

impl CountingStore {
    fn record(&self, op: &str, key: &str) {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.keys.lock().unwrap().push(format!("{op} {key}"));
    }
}

impl KeyValueStore for CountingStore {
    fn get(&self, key: &str, timeout: Duration) -> Result<Vec<u8>, KvError> {
        self.record("get", key);
        self.inner.get(key, timeout)
    }
    fn try_get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        self.record("try_get", key);
        self.inner.try_get(key)
    }
    fn put(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
        self.record("put", key);
        self.inner.put(key, value)
    }
}

// ---- InMemoryStore ----

#[test]
fn in_memory_store_basics() {
    let store = InMemoryStore::new();
    assert!(store.is_empty());
    assert_eq!(store.try_get("a").unwrap(), None);
    store.put("a", b"1").unwrap();
    store.put("b", b"").unwrap();
    assert_eq!(store.try_get("a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(store.get("b", Duration::ZERO).unwrap(), b"");
    // A put replaces; clones share the map.
    let other = store.clone();
    other.put("a", b"2").unwrap();
    assert_eq!(store.get("a", Duration::from_secs(1)).unwrap(), b"2");
    assert_eq!(store.entries(), vec![("a".to_owned(), b"2".to_vec()), ("b".to_owned(), Vec::new())]);
    assert_eq!(store.len(), 2);
}

#[test]
fn in_memory_get_times_out_with_deadline_exceeded() {
    let store = InMemoryStore::new();
    let start = Instant::now();
    let e = store.get("missing", Duration::from_millis(150)).unwrap_err();
    let waited = start.elapsed();
    assert_eq!(e.code(), ErrorCode::DeadlineExceeded, "{e}");
    assert!(e.message().contains("missing"), "{e}");
    assert!(waited >= Duration::from_millis(150), "returned early, after {waited:?}");
    assert!(waited < Duration::from_secs(5), "waited {waited:?}");
    assert_eq!(store.get("missing", Duration::ZERO).unwrap_err().code(), ErrorCode::DeadlineExceeded);
}

#[test]
fn in_memory_get_wakes_when_another_thread_puts() {
    let store = InMemoryStore::new();
    let waiters: Vec<_> = (0..4)
        .map(|_| {
            let store = store.clone();
            // Duration::MAX: no deadline at all (the plugin's "forever").
            thread::spawn(move || store.get("topology/1", Duration::MAX))
        })
        .collect();
    thread::sleep(Duration::from_millis(50));
    store.put("unrelated", b"x").unwrap();
    thread::sleep(Duration::from_millis(50));
    let start = Instant::now();
    store.put("topology/1", b"proto bytes").unwrap();
    for w in waiters {
        assert_eq!(w.join().unwrap().unwrap(), b"proto bytes");
    }
    assert!(start.elapsed() < Duration::from_secs(5));
}

// ---- the trampolines, called as a plugin calls them ----

#[test]
fn trampolines_round_trip_values_and_the_deleter_frees_them() {
    let store = InMemoryStore::new();
    let cb = callbacks(store.clone());
    call_put(&cb, b"k", b"v1").unwrap();
    assert_eq!(store.try_get("k").unwrap(), Some(b"v1".to_vec()));
    let big: Vec<u8> = (0..100_000u32).map(|i| (i * 7) as u8).collect();
    call_put(&cb, b"big", &big).unwrap();
    call_put(&cb, b"empty", b"").unwrap();
    assert_eq!(call_get(&cb, b"k", 1000).unwrap(), b"v1");
    assert_eq!(call_try_get(&cb, b"k").unwrap(), b"v1");
    assert_eq!(call_get(&cb, b"big", 0).unwrap(), big);
    assert_eq!(call_try_get(&cb, b"empty").unwrap(), b"");
    assert_eq!(cb.call_counts(), KvCallCounts { get: 2, try_get: 2, put: 3 });
    assert_eq!(cb.outstanding_values(), 0);

    // Hand a value out without freeing it: it is counted as outstanding, then the deleter frees
    // exactly what get allocated (this thread's allocation balance comes back to where it was).
    let key = b"big";
    let before = live_bytes();
    let mut factory: sys::PJRT_CallbackError = Some(fake_error_factory);
    let mut args = sys::PJRT_KeyValueGetCallback_Args::new();
    args.key = key.as_ptr() as *const c_char;
    args.key_size = key.len();
    args.timeout_in_ms = 0;
    args.callback_error = &mut factory;
    args.user_arg = cb.user_arg();
    // SAFETY: a valid args struct, a live KvCallbacks.
    let error = unsafe { cb.get_callback().unwrap()(&mut args) };
    assert!(error.is_null());
    assert_eq!(args.value_size, big.len());
    assert_eq!(cb.outstanding_values(), 1);
    let held = live_bytes() - before;
    assert!(held >= big.len() as isize, "the value is allocated: {held} bytes held");
    // SAFETY: as a plugin would: read, then delete once.
    unsafe {
        assert_eq!(std::slice::from_raw_parts(args.value as *const u8, args.value_size), &big[..]);
        args.value_deleter_callback.unwrap()(args.value);
    }
    assert_eq!(cb.outstanding_values(), 0);
    assert_eq!(live_bytes(), before, "the deleter frees everything get allocated");

    // A value may outlive the callbacks (and the client): the deleter still works.
    let cb2 = callbacks(store.clone());
    let mut args = sys::PJRT_KeyValueTryGetCallback_Args::new();
    args.key = key.as_ptr() as *const c_char;
    args.key_size = key.len();
    args.callback_error = &mut factory;
    args.user_arg = cb2.user_arg();
    // SAFETY: a valid args struct, a live KvCallbacks.
    assert!(unsafe { cb2.try_get_callback().unwrap()(&mut args) }.is_null());
    drop(cb2);
    // SAFETY: the value is freed once.
    unsafe { args.value_deleter_callback.unwrap()(args.value) };
    // NULL is ignored.
    // SAFETY: NULL is allowed.
    unsafe { args.value_deleter_callback.unwrap()(std::ptr::null_mut()) };
}

#[test]
fn trampoline_try_get_of_a_missing_key_is_not_found() {
    let cb = callbacks(InMemoryStore::new());
    let (code, message) = call_try_get(&cb, b"cpu:local_topology/cpu/1").unwrap_err();
    assert_eq!(code, ErrorCode::NotFound);
    assert!(message.contains("cpu:local_topology/cpu/1"), "{message}");
    assert_eq!(cb.outstanding_values(), 0);
}

#[test]
fn trampoline_get_times_out_with_deadline_exceeded() {
    let cb = callbacks(InMemoryStore::new());
    let start = Instant::now();
    let (code, message) = call_get(&cb, b"never", 100).unwrap_err();
    assert_eq!(code, ErrorCode::DeadlineExceeded, "{message}");
    assert!(start.elapsed() >= Duration::from_millis(100));
    assert!(start.elapsed() < Duration::from_secs(5));
    // 0 ms: an immediate answer.
    assert_eq!(call_get(&cb, b"never", 0).unwrap_err().0, ErrorCode::DeadlineExceeded);
}

#[test]
fn trampoline_get_with_a_negative_timeout_waits_without_limit() {
    // XLA passes its infinite duration truncated to `int`, which is negative.
    let store = InMemoryStore::new();
    let cb = callbacks(store.clone());
    let putter = {
        let store = store.clone();
        thread::spawn(move || {
            thread::sleep(Duration::from_millis(100));
            store.put("late", b"here").unwrap();
        })
    };
    assert_eq!(call_get(&cb, b"late", -1).unwrap(), b"here");
    putter.join().unwrap();
}

#[test]
fn trampolines_turn_a_panicking_store_into_internal_errors() {
    let cb = callbacks(PanickingStore);
    for (op, result) in [
        ("get", call_get(&cb, b"key1", 10).map(|_| ())),
        ("try_get", call_try_get(&cb, b"key2").map(|_| ())),
        ("put", call_put(&cb, b"key3", b"v")),
    ] {
        let (code, message) = result.unwrap_err();
        assert_eq!(code, ErrorCode::Internal, "{op}: {message}");
        assert!(message.contains("panicked") && message.contains("boom in"), "{op}: {message}");
    }
    assert_eq!(cb.call_counts(), KvCallCounts { get: 1, try_get: 1, put: 1 });
    // Still usable after the panics.
    assert!(call_put(&cb, b"again", b"v").is_err());
}

#[test]
fn trampolines_pass_store_errors_through_with_their_code() {
    let cb = callbacks(DownStore);
    assert_eq!(call_get(&cb, b"k", 10).unwrap_err(), (ErrorCode::Unavailable, "store is down".to_owned()));
    assert_eq!(call_try_get(&cb, b"k").unwrap_err().0, ErrorCode::Unavailable);
    assert_eq!(call_put(&cb, b"k", b"v").unwrap_err().0, ErrorCode::Unavailable);
    // Code OK is not an error: it becomes UNKNOWN.
    assert_eq!(KvError::new(ErrorCode::Other(0), "odd").code(), ErrorCode::Unknown);
}

#[test]
fn trampolines_refuse_keys_that_are_not_utf8_and_bad_args() {
    let store = InMemoryStore::new();
    let cb = callbacks(store.clone());
    let (code, message) = call_put(&cb, b"bad\xff", b"v").unwrap_err();
    assert_eq!(code, ErrorCode::InvalidArgument);
    assert!(message.contains("UTF-8"), "{message}");
    assert!(store.is_empty(), "a refused key never reaches the store");
    assert_eq!(call_try_get(&cb, b"\xc3").unwrap_err().0, ErrorCode::InvalidArgument);

    // A struct_size smaller than the fields we write is refused, not overrun.
    let mut factory: sys::PJRT_CallbackError = Some(fake_error_factory);
    let mut args = sys::PJRT_KeyValueGetCallback_Args::new();
    args.struct_size = 40;
    args.callback_error = &mut factory;
    args.user_arg = cb.user_arg();
    // SAFETY: a valid (if short-declared) args struct.
    let (code, message) = take_error(unsafe { cb.get_callback().unwrap()(&mut args) }).unwrap();
    assert_eq!(code, ErrorCode::InvalidArgument, "{message}");
    // A NULL user_arg is an error, not a crash.
    let mut args = sys::PJRT_KeyValuePutCallback_Args::new();
    args.callback_error = &mut factory;
    // SAFETY: a valid args struct.
    let (code, _) = take_error(unsafe { cb.put_callback().unwrap()(&mut args) }).unwrap();
    assert_eq!(code, ErrorCode::InvalidArgument);
}

#[test]
fn trampolines_serve_many_threads_at_once() {
    let store = InMemoryStore::new();
    let cb = Arc::new(callbacks(store.clone()));
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let cb = Arc::clone(&cb);
            thread::spawn(move || {
                for i in 0..200 {
                    let key = format!("t{t}/k{i}");
                    call_put(&cb, key.as_bytes(), key.as_bytes()).unwrap();
                    // Wait for the neighbouring thread's key: gets block until it is put.
                    let other = format!("t{}/k{i}", (t + 1) % 8);
                    assert_eq!(call_get(&cb, other.as_bytes(), 10_000).unwrap(), other.as_bytes());
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(store.len(), 1600);
    assert_eq!(cb.call_counts(), KvCallCounts { get: 1600, try_get: 0, put: 1600 });
    assert_eq!(cb.outstanding_values(), 0);
}

// ---- clients on the real CPU plugins ----

fn device_ids(client: &Client) -> Vec<i32> {
    client.devices().iter().map(|d| d.id().unwrap()).collect()
}

fn add_on(client: &Client) -> Vec<f32> {
    let exe = client.compile(&Program::mlir_text(support::ADD_F32).unwrap(), &CompileOptions::new()).unwrap();
    let a = client.upload(&[1f32, 2., 3., 4.], &[4]).unwrap();
    let b = client.upload(&[10f32, 20., 30., 40.], &[4]).unwrap();
    exe.execute(&[&a, &b], &ExecuteOptions::new()).unwrap()[0].to_vec::<f32>().unwrap()
}

const PSUM_2_REPLICAS: &str = r#"
func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "stablehlo.all_reduce"(%x) <{replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}"#;

#[test]
fn clients_with_a_store_work_and_the_cpu_plugins_never_call_it() {
    for name in support::PLUGINS {
        let plugin = support::plugin(name);
        let store = Arc::new(CountingStore::default());
        let client = Client::builder(&plugin)
            .options(ClientOptions::new().cpu_device_count(2))
            .kv_store(Arc::clone(&store))
            .build()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(device_ids(&client), [0, 1], "{name}");
        assert_eq!(add_on(&client), [11., 22., 33., 44.], "{name}");

        // A collective across the client's two devices does not go through the store either.
        let exe = client
            .compile(&Program::mlir_text(PSUM_2_REPLICAS).unwrap(), &CompileOptions::new().num_replicas(2))
            .unwrap();
        let devices = client.addressable_devices();
        let x0 = client
            .upload_with(HostSource::slice(&[1f32, 2., 3.], &[3]), &UploadOptions::new().device(&devices[0]))
            .unwrap();
        let x1 = client
            .upload_with(HostSource::slice(&[10f32, 20., 30.], &[3]), &UploadOptions::new().device(&devices[1]))
            .unwrap();
        let run = exe.execute_sharded(&[vec![&x0], vec![&x1]], &ExecuteOptions::new()).unwrap();
        for outputs in &run {
            assert_eq!(outputs[0].to_vec::<f32>().unwrap(), [11., 22., 33.], "{name}");
        }

        let callbacks = client.kv_callbacks().expect("the client keeps its callbacks");
        assert_eq!(callbacks.call_counts(), KvCallCounts::default(), "{name}: the plugin called the store");
        assert_eq!(store.calls.load(Ordering::SeqCst), 0, "{name}: {:?}", store.keys.lock().unwrap());
        assert_eq!(callbacks.outstanding_values(), 0);

        // The client owns the store until it is destroyed, even after the handle is dropped
        // while a buffer still holds the client.
        assert!(Arc::strong_count(&store) >= 2);
        let keep: Buffer = x0;
        drop(devices);
        drop((run, exe, x1, client));
        assert!(Arc::strong_count(&store) >= 2, "the buffer keeps the client, and so the store");
        drop(keep);
        assert_eq!(Arc::strong_count(&store), 1, "destroying the client released the store");
    }
}

#[test]
fn client_new_still_has_no_store() {
    let client = support::client("cpu", 1);
    assert!(client.kv_callbacks().is_none());
}

#[test]
fn process_index_on_the_0_115_plugin_and_two_clients_sharing_a_store() {
    let plugin = support::plugin("cpu");
    let store = InMemoryStore::new();
    let clients: Vec<Client> = (0..2)
        .map(|id| {
            Client::builder(&plugin)
                .options(ClientOptions::new().cpu_device_count(2))
                .kv_store(store.clone())
                .process(id, 2)
                .build()
                .unwrap_or_else(|e| panic!("process {id}: {e}"))
        })
        .collect();
    // Process k's devices are k*2048 + i; each client sees only its own (the CPU plugin does not
    // exchange topologies through the store).
    assert_eq!(clients[0].process_index(), 0);
    assert_eq!(clients[1].process_index(), 1);
    assert_eq!(device_ids(&clients[0]), [0, 1]);
    assert_eq!(device_ids(&clients[1]), [2048, 2049]);
    for client in &clients {
        let addressable: Vec<i32> = client.addressable_devices().iter().map(|d| d.id().unwrap()).collect();
        assert_eq!(addressable, device_ids(client));
        assert_eq!(add_on(client), [11., 22., 33., 44.]);
        assert_eq!(client.kv_callbacks().unwrap().call_counts(), KvCallCounts::default());
    }
    assert!(store.is_empty(), "the 0.115 plugin put nothing: {:?}", store.entries());
}

#[test]
fn the_0_106_plugin_ignores_the_process_index() {
    let plugin = support::plugin("cpu-0.106");
    let store = InMemoryStore::new();
    let client = Client::builder(&plugin)
        .option("cpu_device_count", 2i64)
        .kv_store(store.clone())
        .process(1, 2)
        .build()
        .unwrap();
    assert_eq!(client.process_index(), 0);
    assert_eq!(device_ids(&client), [0, 1]);
    assert_eq!(client.kv_callbacks().unwrap().call_counts(), KvCallCounts::default());
    assert!(store.is_empty());
}

#[test]
fn builder_rejects_bad_process_arguments() {
    let plugin = support::plugin("cpu");
    for (id, count) in [(2, 2), (-1, 2), (0, 0)] {
        let e = Client::builder(&plugin).process(id, count).build().unwrap_err();
        assert!(e.to_string().contains("0 <= id < count"), "{e}");
    }
    let e = Client::builder(&plugin).option("process_id", 1i64).process(0, 2).build().unwrap_err();
    assert!(e.to_string().contains("process_id"), "{e}");
    // Options are still type-checked.
    let e = Client::builder(&plugin).option("cpu_device_count", "two").build().unwrap_err();
    assert!(e.to_string().contains("cpu_device_count"), "{e}");
}
