//! Key-value stores for multi-process clients: the `kv_get` / `kv_try_get` / `kv_put` callbacks of
//! `PJRT_Client_Create`.
//!
//! A plugin that spans several processes (or hosts) exchanges data through a store that every
//! process can reach: each process puts what it knows (for example its local topology) and gets
//! what the others put. Implement [`KeyValueStore`] over whatever the processes share (etcd, a
//! coordination service, a file system; the `pjrt-etcd` crate has one for etcd), or use
//! [`InMemoryStore`] for tests and for several clients inside one process; hand it to
//! [`crate::ClientBuilder::kv_store`].
//!
//! ## Keys and values
//! Values are bytes (plugins store serialized protobufs). Keys are `&str`: XLA's plugins build
//! their keys from text (`"cpu:local_topology/cpu/0"` and the like). A key from a plugin that is
//! not valid UTF-8 never reaches the store: the callback fails with `INVALID_ARGUMENT`. The plugin
//! is responsible for keys that do not collide between its processes; the caller (you) is
//! responsible for keys that do not collide between plugins sharing one store (use one store, or
//! one key prefix, per plugin and job).
//!
//! ## What crosses the C boundary
//! The callbacks are `extern "C"` trampolines ([`KvCallbacks`]). Each runs the store inside
//! `catch_unwind`: a store error becomes a `PJRT_Error` with the error's code, and a panic becomes
//! an `INTERNAL` error with the panic message, both made through the `callback_error` factory the
//! plugin passes in the args. Nothing unwinds into the plugin and nothing is silently dropped.
//!
//! Values handed to the plugin are copies this crate keeps in a table, by the address the plugin
//! is given; the plugin frees them by calling the `value_deleter_callback` we set, which takes
//! the value out of the table (once: a second call, or an address we never gave, frees nothing).
//! The value pointer is never NULL (an empty value still has an allocation of its own).

use std::collections::HashMap;
use std::ffi::{c_char, c_void};
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::call::release::CallbackScope;
use crate::error::ErrorCode;
use crate::sys;

/// A store shared by the processes of one multi-process client.
///
/// Every method may be called from any thread, concurrently, including plugin threads (hence
/// `Send + Sync + 'static`). Implementations should not panic; a panic is caught and reported to
/// the plugin as an `INTERNAL` error, which usually fails client creation.
///
/// Give one to [`crate::Client::builder`] with [`crate::ClientBuilder::kv_store`]. A store of
/// your own needs only these three methods:
///
/// ```
/// use std::collections::HashMap;
/// use std::sync::Mutex;
/// use std::time::Duration;
/// use pjrt_client::{KeyValueStore, KvError};
///
/// /// A store that never blocks: `get` of a missing key fails at once.
/// #[derive(Default)]
/// struct MapStore(Mutex<HashMap<String, Vec<u8>>>);
///
/// impl KeyValueStore for MapStore {
///     fn get(&self, key: &str, timeout: Duration) -> Result<Vec<u8>, KvError> {
///         self.try_get(key)?.ok_or_else(|| KvError::deadline_exceeded(key, timeout))
///     }
///     fn try_get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
///         Ok(self.0.lock().unwrap().get(key).cloned())
///     }
///     fn put(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
///         self.0.lock().unwrap().insert(key.to_owned(), value.to_vec());
///         Ok(())
///     }
/// }
///
/// let store = MapStore::default();
/// store.put("topology/0", b"...").unwrap();
/// assert_eq!(store.get("topology/0", Duration::ZERO).unwrap(), b"...");
/// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
/// let client = pjrt_client::Client::builder(&plugin).kv_store(store).process(0, 1).build()?;
/// assert_eq!(client.process_index(), 0);
/// # Ok::<(), pjrt_client::Error>(())
/// ```
pub trait KeyValueStore: Send + Sync + 'static {
    /// The value of `key`, waiting until some process puts it or `timeout` passes (then
    /// [`KvError::deadline_exceeded`]). A plugin that asks to wait forever passes
    /// [`Duration::MAX`].
    fn get(&self, key: &str, timeout: Duration) -> Result<Vec<u8>, KvError>;

    /// The value of `key` if it is there now, `Ok(None)` if not (the plugin then sees
    /// `NOT_FOUND`). Never waits for the key.
    fn try_get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError>;

    /// Stores `value` under `key`.
    fn put(&self, key: &str, value: &[u8]) -> Result<(), KvError>;
}

impl<T: KeyValueStore + ?Sized> KeyValueStore for Arc<T> {
    fn get(&self, key: &str, timeout: Duration) -> Result<Vec<u8>, KvError> {
        (**self).get(key, timeout)
    }
    fn try_get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        (**self).try_get(key)
    }
    fn put(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
        (**self).put(key, value)
    }
}

/// A store's failure, with the PJRT status code the plugin will see.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct KvError {
    code: ErrorCode,
    message: String,
}

impl KvError {
    /// An error with any code. Code 0 (`OK`) is not an error and becomes `UNKNOWN`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        let code = if code.to_raw().0 == 0 { ErrorCode::Unknown } else { code };
        Self { code, message: message.into() }
    }

    /// `NOT_FOUND`: the key is absent.
    pub fn not_found(key: &str) -> Self {
        Self::new(ErrorCode::NotFound, format!("key {key:?} not found"))
    }

    /// `DEADLINE_EXCEEDED`: the key did not appear within `timeout`.
    pub fn deadline_exceeded(key: &str, timeout: Duration) -> Self {
        Self::new(ErrorCode::DeadlineExceeded, format!("key {key:?} did not appear within {timeout:?}"))
    }

    /// `UNAVAILABLE`: the store cannot be reached (the plugin may retry).
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Unavailable, message)
    }

    /// `INVALID_ARGUMENT`: a key or value the store cannot take.
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidArgument, message)
    }

    /// `INTERNAL`: anything else that went wrong inside the store.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Internal, message)
    }

    /// The status code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// An in-process store: a map behind a mutex, with a condition variable that wakes blocked `get`s
/// when a key is put (no polling).
///
/// A cheap, cloneable handle: clones share one map, so several clients in one process (say, one
/// per simulated process) can use the same store. For tests and single-host use; processes on
/// different hosts need a store they can all reach. A `put` to an existing key replaces its value.
///
/// ```
/// use std::time::Duration;
/// use pjrt_client::{ErrorCode, InMemoryStore, KeyValueStore};
///
/// let store = InMemoryStore::new();
/// let other_process = store.clone(); // shares the map
/// let waiter = std::thread::spawn(move || other_process.get("ready", Duration::from_secs(60)));
/// store.put("ready", b"yes").unwrap();
/// assert_eq!(waiter.join().unwrap().unwrap(), b"yes"); // woken by the put
/// assert_eq!(store.try_get("missing").unwrap(), None);
/// let e = store.get("missing", Duration::from_millis(1)).unwrap_err();
/// assert_eq!(e.code(), ErrorCode::DeadlineExceeded);
/// ```
#[derive(Clone, Default)]
pub struct InMemoryStore {
    shared: Arc<InMemoryShared>,
}

#[derive(Default)]
struct InMemoryShared {
    map: Mutex<HashMap<String, Vec<u8>>>,
    changed: Condvar,
}

impl InMemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no key was put.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Every key and value, sorted by key: what the plugins have put so far.
    pub fn entries(&self) -> Vec<(String, Vec<u8>)> {
        let mut entries: Vec<_> = self.lock().iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        entries.sort();
        entries
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Vec<u8>>> {
        // A panic while holding the lock cannot leave the map half-updated (every update is one
        // insert), so a poisoned lock is still usable.
        self.shared.map.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl KeyValueStore for InMemoryStore {
    fn get(&self, key: &str, timeout: Duration) -> Result<Vec<u8>, KvError> {
        // No deadline if `now + timeout` overflows: wait without a limit.
        let deadline = Instant::now().checked_add(timeout);
        let mut map = self.lock();
        loop {
            if let Some(value) = map.get(key) {
                return Ok(value.clone());
            }
            map = match deadline {
                None => self.shared.changed.wait(map).unwrap_or_else(|p| p.into_inner()),
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(KvError::deadline_exceeded(key, timeout));
                    }
                    self.shared.changed.wait_timeout(map, left).unwrap_or_else(|p| p.into_inner()).0
                }
            };
        }
    }

    fn try_get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        Ok(self.lock().get(key).cloned())
    }

    fn put(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
        self.lock().insert(key.to_owned(), value.to_vec());
        self.shared.changed.notify_all();
        Ok(())
    }
}

impl fmt::Debug for InMemoryStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InMemoryStore").field("keys", &self.len()).finish()
    }
}

/// The C side of a [`KeyValueStore`]: the three `extern "C"` callbacks of
/// `PJRT_Client_Create_Args` and the state they share.
///
/// [`crate::ClientBuilder`] makes one and keeps it in the client until after
/// `PJRT_Client_Destroy`. Use it directly only when calling `PJRT_Client_Create` through
/// [`crate::sys`] yourself: [`KvCallbacks::install`] fills the args, and the `KvCallbacks` must
/// then outlive the raw client.
pub struct KvCallbacks {
    state: Arc<KvState>,
    // The `user_arg` the plugin is given: an id in the hand-off table (see `crate::call::handoff`)
    // holding a clone of `state`, taken out when this is dropped; a callback after that, or
    // with another argument, finds nothing.
    id: usize,
}

struct KvState {
    store: Arc<dyn KeyValueStore>,
    calls: CallCounts,
    // Values handed to the plugin and not yet freed; each value's table entry holds a clone.
    outstanding: Arc<AtomicUsize>,
}

#[derive(Default)]
struct CallCounts {
    get: AtomicUsize,
    try_get: AtomicUsize,
    put: AtomicUsize,
}

/// How often a plugin called each callback of a [`KvCallbacks`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KvCallCounts {
    /// Calls of the blocking get.
    pub get: usize,
    /// Calls of try-get.
    pub try_get: usize,
    /// Calls of put.
    pub put: usize,
}

impl KvCallbacks {
    /// Callbacks serving `store`.
    pub fn new(store: Arc<dyn KeyValueStore>) -> Self {
        let state =
            Arc::new(KvState { store, calls: CallCounts::default(), outstanding: Arc::new(AtomicUsize::new(0)) });
        let id = crate::call::handoff::give(state.clone()) as usize;
        Self { state, id }
    }

    /// The store the callbacks serve.
    pub fn store(&self) -> &Arc<dyn KeyValueStore> {
        &self.state.store
    }

    /// How often each callback has been called so far.
    pub fn call_counts(&self) -> KvCallCounts {
        let c = &self.state.calls;
        KvCallCounts {
            get: c.get.load(Ordering::Relaxed),
            try_get: c.try_get.load(Ordering::Relaxed),
            put: c.put.load(Ordering::Relaxed),
        }
    }

    /// Values returned to the plugin by get / try-get that it has not yet freed through the value
    /// deleter. 0 once the plugin has copied and released every value.
    pub fn outstanding_values(&self) -> usize {
        self.state.outstanding.load(Ordering::SeqCst)
    }

    /// The `user_arg` every callback expects (the same for all three).
    pub fn user_arg(&self) -> *mut c_void {
        self.id as *mut c_void
    }

    /// The blocking-get callback.
    pub fn get_callback(&self) -> sys::PJRT_KeyValueGetCallback {
        Some(kv_get_trampoline)
    }

    /// The try-get callback.
    pub fn try_get_callback(&self) -> sys::PJRT_KeyValueTryGetCallback {
        Some(kv_try_get_trampoline)
    }

    /// The put callback.
    pub fn put_callback(&self) -> sys::PJRT_KeyValuePutCallback {
        Some(kv_put_trampoline)
    }

    /// Sets the three callbacks and their user args in `args`.
    pub fn install(&self, args: &mut sys::PJRT_Client_Create_Args) {
        args.kv_get_callback = self.get_callback();
        args.kv_get_user_arg = self.user_arg();
        args.kv_try_get_callback = self.try_get_callback();
        args.kv_try_get_user_arg = self.user_arg();
        args.kv_put_callback = self.put_callback();
        args.kv_put_user_arg = self.user_arg();
    }
}

impl Drop for KvCallbacks {
    fn drop(&mut self) {
        drop(crate::call::handoff::take::<Arc<KvState>>(self.id as *mut c_void));
    }
}

impl fmt::Debug for KvCallbacks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KvCallbacks")
            .field("calls", &self.call_counts())
            .field("outstanding_values", &self.outstanding_values())
            .finish()
    }
}

// ---- values handed to the plugin ----

/// A value handed to a plugin: its bytes (read by the plugin through the address it was given;
/// a vector's heap bytes stay where they are while it sits in the table) and the counter of
/// values still out of the callbacks that made it.
struct LiveValue {
    _bytes: Vec<u8>,
    outstanding: Arc<AtomicUsize>,
}

/// Every value handed to a plugin and not freed yet, by the address the plugin was given. The
/// deleter frees only what is here, once: a plugin freeing a value twice, or something else,
/// frees nothing; and nothing the deleter relies on lies where the plugin could overwrite it.
fn live_values() -> MutexGuard<'static, HashMap<usize, LiveValue>> {
    static LIVE: std::sync::OnceLock<Mutex<HashMap<usize, LiveValue>>> = std::sync::OnceLock::new();
    // An insert or a remove cannot be left half done by a panic: a poisoned lock is still usable.
    LIVE.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner())
}

/// Copies `bytes` into a value the plugin releases with [`free_value`]. `None` if the
/// allocation fails (the caller reports `RESOURCE_EXHAUSTED`).
fn alloc_value(bytes: &[u8], outstanding: &Arc<AtomicUsize>) -> Option<*mut c_char> {
    // Never an empty allocation: the address must be non-NULL and this value's own (a key of
    // the table), also for an empty value.
    let mut copy = Vec::new();
    copy.try_reserve_exact(bytes.len().max(1)).ok()?;
    copy.extend_from_slice(bytes);
    let address = copy.as_mut_ptr();
    outstanding.fetch_add(1, Ordering::SeqCst);
    live_values().insert(address as usize, LiveValue { _bytes: copy, outstanding: Arc::clone(outstanding) });
    Some(address as *mut c_char)
}

/// The `value_deleter_callback` set on every value: frees what [`alloc_value`] made, once. A
/// pointer it did not make, or one freed before (a plugin's bug), is ignored.
///
/// # Safety
/// None beyond the C ABI: `value` is only looked up, never dereferenced.
unsafe extern "C" fn free_value(value: *mut c_char) {
    let freed = live_values().remove(&(value as usize));
    if let Some(freed) = freed {
        freed.outstanding.fetch_sub(1, Ordering::SeqCst);
    }
}

// ---- the trampolines ----

/// Makes a `PJRT_Error` through the plugin's factory.
///
/// # Safety
/// `factory` must be NULL or point to the plugin's `PJRT_CallbackError`, valid for this call.
unsafe fn plugin_error(factory: *mut sys::PJRT_CallbackError, error: &KvError) -> *mut sys::PJRT_Error {
    // SAFETY: per the contract.
    let make = if factory.is_null() { None } else { unsafe { *factory } };
    match make {
        // SAFETY: the plugin's factory copies the message, which only needs to live for the call.
        Some(make) => unsafe {
            make(error.code.to_raw(), error.message.as_ptr() as *const c_char, error.message.len())
        },
        None => {
            // The plugin broke the API's contract: there is no way to report the failure to it, and
            // returning "success" would hand it an undefined value. Stop loudly.
            eprintln!(
                "pjrt_client: the plugin called a key-value callback without an error factory \
                 (callback_error is NULL) and the store failed: {error}; aborting"
            );
            std::process::abort()
        }
    }
}

/// Reads the key the plugin passed.
///
/// # Safety
/// `ptr` must be NULL with `len` 0, or readable for `len` bytes during the call.
unsafe fn key_from_raw<'a>(ptr: *const c_char, len: usize) -> Result<&'a str, KvError> {
    let bytes: &[u8] = if len == 0 {
        &[]
    } else if ptr.is_null() {
        return Err(KvError::invalid_argument(format!("the plugin passed a NULL key of {len} bytes")));
    } else {
        // SAFETY: per the contract.
        unsafe { std::slice::from_raw_parts(ptr as *const u8, len) }
    };
    std::str::from_utf8(bytes).map_err(|_| {
        KvError::invalid_argument(format!(
            "key {:?} is not valid UTF-8; this crate's key-value stores take text keys",
            String::from_utf8_lossy(bytes)
        ))
    })
}

/// Runs `body` so that nothing unwinds: a panic becomes an `INTERNAL` error naming `op`.
fn guarded<T>(op: &str, body: impl FnOnce() -> Result<T, KvError>) -> Result<T, KvError> {
    crate::call::panic::catch(body)
        .unwrap_or_else(|message| Err(KvError::internal(format!("the key-value store panicked in {op}: {message}"))))
}

/// The state behind a callback's `user_arg`: an id from [`KvCallbacks::user_arg`] whose
/// `KvCallbacks` is alive, else an error (never a dereference of what the plugin passed).
fn state_from(user_arg: *mut c_void) -> Result<Arc<KvState>, KvError> {
    crate::call::handoff::get::<Arc<KvState>>(user_arg).ok_or_else(|| {
        KvError::invalid_argument(format!(
            "the plugin passed a user_arg ({user_arg:p}) to a key-value callback that is not one of a live client's"
        ))
    })
}

/// Converts a negative `timeout_in_ms` (XLA's infinite duration, truncated to `int`) to "no limit".
fn timeout_from_ms(ms: i32) -> Duration {
    u64::try_from(ms).map(Duration::from_millis).unwrap_or(Duration::MAX)
}

/// Checks the args struct is large enough for every field we read or write.
fn check_size(struct_size: usize, needed: usize, name: &str) -> Result<(), KvError> {
    if struct_size < needed {
        return Err(KvError::invalid_argument(format!(
            "{name}.struct_size is {struct_size}, expected at least {needed}"
        )));
    }
    Ok(())
}

/// The args of the two callbacks that hand a value back (blocking get and try-get): the same
/// fields under the same names, so [`serve_value`] serves both.
trait ValueArgs: sys::Args {
    /// The C struct's name, for errors.
    const NAME: &'static str;
    /// The callback's name, for errors (as the store method it calls).
    const OP: &'static str;
    /// The callback's counter in [`CallCounts`].
    fn counter(calls: &CallCounts) -> &AtomicUsize;
    fn struct_size(&self) -> usize;
    fn user_arg(&self) -> *mut c_void;
    /// The key's pointer and length.
    fn key(&self) -> (*const c_char, usize);
    fn callback_error(&self) -> *mut sys::PJRT_CallbackError;
    /// Hands `value` (from [`alloc_value`]) to the plugin, with [`free_value`] as its deleter.
    fn set_value(&mut self, value: *mut c_char, value_size: usize);
}

/// Implements [`ValueArgs`] for args structs that name the shared fields alike; `$op` is both the
/// callback's name and its field in [`CallCounts`].
macro_rules! value_args {
    ($($args:ident => $op:ident),+) => {$(
        impl ValueArgs for sys::$args {
            const NAME: &'static str = stringify!($args);
            const OP: &'static str = stringify!($op);
            fn counter(calls: &CallCounts) -> &AtomicUsize {
                &calls.$op
            }
            fn struct_size(&self) -> usize {
                self.struct_size
            }
            fn user_arg(&self) -> *mut c_void {
                self.user_arg
            }
            fn key(&self) -> (*const c_char, usize) {
                (self.key, self.key_size)
            }
            fn callback_error(&self) -> *mut sys::PJRT_CallbackError {
                self.callback_error
            }
            fn set_value(&mut self, value: *mut c_char, value_size: usize) {
                self.value = value;
                self.value_size = value_size;
                self.value_deleter_callback = Some(free_value);
            }
        }
    )+};
}

value_args!(PJRT_KeyValueGetCallback_Args => get, PJRT_KeyValueTryGetCallback_Args => try_get);

/// The body of the get and try-get callbacks: checks the args, counts the call, looks the key up
/// with `lookup` and hands the value to the plugin. Runs under [`guarded`]: a store error or a
/// panic becomes the error returned to the plugin.
///
/// # Safety
/// As [`kv_get_trampoline`].
unsafe fn serve_value<A: ValueArgs>(
    args: *mut A,
    lookup: impl FnOnce(&dyn KeyValueStore, &str, &A) -> Result<Vec<u8>, KvError>,
) -> *mut sys::PJRT_Error {
    if args.is_null() {
        let error = KvError::invalid_argument(format!("NULL {} args", A::OP));
        // SAFETY: a NULL factory reports the broken contract.
        return unsafe { plugin_error(std::ptr::null_mut(), &error) };
    }
    let _scope = CallbackScope::enter();
    // SAFETY: the plugin passes a valid args struct for the duration of the call.
    let args = unsafe { &mut *args };
    let outcome = guarded(A::OP, || {
        check_size(args.struct_size(), A::STRUCT_SIZE, A::NAME)?;
        let state = state_from(args.user_arg())?;
        A::counter(&state.calls).fetch_add(1, Ordering::Relaxed);
        let (key, key_size) = args.key();
        // SAFETY: the key lives for the call.
        let key = unsafe { key_from_raw(key, key_size) }?;
        let value = lookup(&*state.store, key, args)?;
        let ptr = alloc_value(&value, &state.outstanding)
            .ok_or_else(|| KvError::new(ErrorCode::ResourceExhausted, "cannot allocate the value"))?;
        Ok((ptr, value.len()))
    });
    match outcome {
        Ok((ptr, len)) => {
            args.set_value(ptr, len);
            std::ptr::null_mut()
        }
        // SAFETY: the factory pointer comes from the plugin, valid for the call.
        Err(error) => unsafe { plugin_error(args.callback_error(), &error) },
    }
}

/// The blocking-get callback.
///
/// # Safety
/// Called by the plugin with a valid args struct whose `user_arg` is a [`KvCallbacks::user_arg`]
/// that is still alive.
unsafe extern "C" fn kv_get_trampoline(args: *mut sys::PJRT_KeyValueGetCallback_Args) -> *mut sys::PJRT_Error {
    // SAFETY: per this function's contract.
    unsafe { serve_value(args, |store, key, args| store.get(key, timeout_from_ms(args.timeout_in_ms))) }
}

/// The try-get callback: `NOT_FOUND` when the key is absent.
///
/// # Safety
/// As [`kv_get_trampoline`].
unsafe extern "C" fn kv_try_get_trampoline(args: *mut sys::PJRT_KeyValueTryGetCallback_Args) -> *mut sys::PJRT_Error {
    // SAFETY: per this function's contract.
    unsafe { serve_value(args, |store, key, _| store.try_get(key)?.ok_or_else(|| KvError::not_found(key))) }
}

/// The put callback.
///
/// # Safety
/// As [`kv_get_trampoline`]; `value` must be readable for `value_size` bytes during the call.
unsafe extern "C" fn kv_put_trampoline(args: *mut sys::PJRT_KeyValuePutCallback_Args) -> *mut sys::PJRT_Error {
    if args.is_null() {
        // SAFETY: a NULL factory reports the broken contract.
        return unsafe { plugin_error(std::ptr::null_mut(), &KvError::invalid_argument("NULL put args")) };
    }
    let _scope = CallbackScope::enter();
    // SAFETY: the plugin passes a valid args struct for the duration of the call.
    let args = unsafe { &*args };
    let outcome = guarded("put", || {
        use sys::Args;
        check_size(args.struct_size, sys::PJRT_KeyValuePutCallback_Args::STRUCT_SIZE, "PJRT_KeyValuePutCallback_Args")?;
        let state = state_from(args.user_arg)?;
        state.calls.put.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the key lives for the call.
        let key = unsafe { key_from_raw(args.key, args.key_size) }?;
        let value: &[u8] = if args.value_size == 0 {
            &[]
        } else if args.value.is_null() {
            return Err(KvError::invalid_argument(format!(
                "the plugin passed a NULL value of {} bytes",
                args.value_size
            )));
        } else {
            // SAFETY: the value lives for the call.
            unsafe { std::slice::from_raw_parts(args.value as *const u8, args.value_size) }
        };
        state.store.put(key, value)
    });
    match outcome {
        Ok(()) => std::ptr::null_mut(),
        // SAFETY: the factory pointer comes from the plugin, valid for the call.
        Err(error) => unsafe { plugin_error(args.callback_error, &error) },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_the_plugin_wrote_over_is_still_freed_once() {
        // Nothing the deleter needs lies in or next to the value, so whatever the plugin writes
        // into it cannot mislead the deleter (a panic there could not unwind out of `extern "C"`).
        let outstanding = Arc::new(AtomicUsize::new(0));
        let value = alloc_value(b"abc", &outstanding).expect("an allocation");
        assert_eq!(outstanding.load(Ordering::SeqCst), 1);
        // SAFETY: the value's own 3 bytes, written as a plugin may.
        unsafe { std::ptr::write_bytes(value, 0xff, 3) };
        // SAFETY: a value from `alloc_value`, freed once.
        unsafe { free_value(value) };
        assert_eq!(outstanding.load(Ordering::SeqCst), 0);
        // Empty values get addresses of their own.
        let (a, b) = (alloc_value(b"", &outstanding).unwrap(), alloc_value(b"", &outstanding).unwrap());
        assert!(!a.is_null() && a != b);
        // SAFETY: as above.
        unsafe { (free_value(a), free_value(b)) };
        assert_eq!(outstanding.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn values_freed_twice_or_never_allocated_are_ignored() {
        let outstanding = Arc::new(AtomicUsize::new(0));
        let value = alloc_value(b"abcdef", &outstanding).expect("an allocation");
        // SAFETY: the deleter takes any pointer; only live values are dereferenced.
        unsafe {
            free_value(value);
            free_value(value); // a plugin's double free: nothing happens
            let mut not_ours = [0 as c_char; 64];
            free_value(not_ours.as_mut_ptr());
        }
        assert_eq!(outstanding.load(Ordering::SeqCst), 0);
        assert!(state_from(std::ptr::null_mut()).is_err());
        assert!(state_from(0x40 as *mut c_void).is_err());
    }
}
