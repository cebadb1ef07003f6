//! Host send and receive callbacks: a program's `send` to the host hands its bytes to a Rust
//! closure, and its `recv` from the host asks a closure for bytes through a
//! [`CopyToDeviceStream`].
//!
//! Register closures with [`ExecuteOptions::on_send`] and [`ExecuteOptions::on_recv`] and run
//! with any launch ([`LoadedExecutable::execute`], [`LoadedExecutable::execute_sharded`], or their
//! `_async` forms). The
//! plugin calls them on its own threads, once per device and transfer; they are serialised per
//! channel (a closure is never entered twice at once). A panic is caught at the C boundary: a
//! send callback's panic (or error) becomes the error the plugin sees, and every failure is also
//! kept for [`ExecuteOptions::take_callback_failures`]. What the plugin is given stays alive
//! until every device's execution of that launch has completed, even if the pending execution
//! is dropped first.
//!
//! Whether a plugin can run host transfers at all is its own business: the XLA CPU plugins
//! (0.106 and 0.115) refuse to compile `send`/`recv` ("HLO opcode `send` is not supported by
//! XLA:CPU ThunkEmitter"), while accepting callbacks in the execute options.
//!
//! [`LoadedExecutable::execute`]: crate::LoadedExecutable::execute
//! [`LoadedExecutable::execute_sharded`]: crate::LoadedExecutable::execute_sharded

use std::ffi::{c_char, c_void};
use std::fmt;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, Weak};

use crate::call::panic::{catch, no_unwind};
use crate::call::release::{release_if_in_callback, release_later, CallbackScope};
use crate::call::{pjrt_call, slice_from_raw, Api};
use crate::client::{Client, WeakClient};
use crate::error::{Error, ErrorCode, Result};
use crate::event::Event;
use crate::sys::{self, Args};

type SendFn = dyn FnMut(SendChunk<'_>) -> Result<()> + Send;
type RecvFn = dyn FnMut(CopyToDeviceStream) -> Result<()> + Send;
/// A registered closure; `None` once it has panicked (it is not called again).
type SendSlot = Arc<Mutex<Option<Box<SendFn>>>>;
type RecvSlot = Arc<Mutex<Option<Box<RecvFn>>>>;

/// Calls the closure of a slot that a target reaches weakly (see [`CallbackTargets`]), and
/// makes sure a closure whose last holder went meanwhile is dropped on the release thread, not
/// on the plugin's.
fn with_slot<T: ?Sized + Send + 'static>(
    weak: &Weak<Mutex<Option<Box<T>>>>,
    call: impl FnOnce(&Mutex<Option<Box<T>>>) -> Result<()>,
) -> Option<Result<()>> {
    let slot = weak.upgrade()?;
    let result = call(&slot);
    if let Some(last) = Arc::into_inner(slot) {
        release_later(last);
    }
    Some(result)
}

/// Why a target found no closure: its launch kept only what the plugin can reach.
const CLOSURE_GONE: &str = "the plugin called a host callback whose closure is gone: its launch failed (or returned \
     no completion event) and the ExecuteOptions holding the closure were dropped";

/// The closures registered on an [`ExecuteOptions`]; clones share them.
#[derive(Clone, Default)]
pub(crate) struct HostCallbacks {
    send: Vec<(i64, SendSlot)>,
    recv: Vec<(i64, RecvSlot)>,
    /// Made with the first callback, so that options without callbacks allocate nothing
    /// (`ExecuteOptions::new()` is the execute fast path).
    failures: Option<Arc<Mutex<Vec<Error>>>>,
}

impl HostCallbacks {
    /// The failure list the callbacks share, made on first use.
    fn failures(&mut self) -> Arc<Mutex<Vec<Error>>> {
        self.failures.get_or_insert_with(Arc::default).clone()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.send.is_empty() && self.recv.is_empty()
    }

    /// Registers `callback` for sends on `channel_id` (replacing one registered before).
    pub(crate) fn add_send(&mut self, channel_id: i64, callback: Box<SendFn>) {
        self.failures();
        self.send.retain(|(c, _)| *c != channel_id);
        self.send.push((channel_id, Arc::new(Mutex::new(Some(callback)))));
    }

    /// Registers `callback` for receives on `channel_id` (replacing one registered before).
    pub(crate) fn add_recv(&mut self, channel_id: i64, callback: Box<RecvFn>) {
        self.failures();
        self.recv.retain(|(c, _)| *c != channel_id);
        self.recv.push((channel_id, Arc::new(Mutex::new(Some(callback)))));
    }

    /// Removes and returns the failures recorded so far.
    pub(crate) fn take_failures(&self) -> Vec<Error> {
        match &self.failures {
            Some(failures) => std::mem::take(&mut *failures.lock().unwrap_or_else(|p| p.into_inner())),
            None => Vec::new(),
        }
    }

    /// The channel ids, for `Debug`.
    pub(crate) fn channels(&self) -> (Vec<i64>, Vec<i64>) {
        (self.send.iter().map(|(c, _)| *c).collect(), self.recv.iter().map(|(c, _)| *c).collect())
    }
}

/// One chunk a device sent to the host.
#[derive(Debug, Clone, Copy)]
pub struct SendChunk<'a> {
    data: &'a [u8],
    total_size: usize,
    done: bool,
    channel_id: i64,
    device_index: usize,
}

impl<'a> SendChunk<'a> {
    /// The bytes of this chunk (valid only during the callback: copy what you keep).
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// Total size of the transfer this chunk belongs to, in bytes.
    pub fn total_size(&self) -> usize {
        self.total_size
    }

    /// Whether this is the transfer's last chunk.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The channel the device sent on.
    pub fn channel_id(&self) -> i64 {
        self.channel_id
    }

    /// Which device sent it: its position in the executable's addressable devices.
    pub fn device_index(&self) -> usize {
        self.device_index
    }
}

/// Where a stream's functions come from: the client the execution runs on (held, so the
/// stream and its events keep it alive like every other child), or (in unit tests) a
/// hand-made table.
#[derive(Clone)]
enum ApiSource {
    Client(Client),
    #[cfg(test)]
    Static(&'static Api),
}

impl ApiSource {
    fn api(&self) -> &Api {
        match self {
            ApiSource::Client(client) => client.api(),
            #[cfg(test)]
            ApiSource::Static(api) => api,
        }
    }
}

/// The stream a receive callback fills: the device's buffer for one host-to-device transfer.
/// Owned: dropping it destroys the stream (`PJRT_CopyToDeviceStream_Destroy`). It keeps the
/// client alive, like every other child of a client.
///
/// `Send + Sync`: it may be kept and filled later from another thread.
pub struct CopyToDeviceStream {
    api: ApiSource,
    raw: NonNull<sys::PJRT_CopyToDeviceStream>,
    channel_id: i64,
    device_index: usize,
}

// SAFETY: XLA's CopyToDeviceStream is thread-safe (AddChunk takes its own lock; the sizes are
// read-only or atomic); this handle owns the stream and destroys it once, in Drop.
unsafe impl Send for CopyToDeviceStream {}
// SAFETY: as above.
unsafe impl Sync for CopyToDeviceStream {}

impl CopyToDeviceStream {
    /// Total number of bytes the device expects.
    pub fn total_bytes(&self) -> Result<i64> {
        let mut args = sys::PJRT_CopyToDeviceStream_TotalBytes_Args::new();
        args.stream = self.raw.as_ptr();
        pjrt_call!(self.api.api(), PJRT_CopyToDeviceStream_TotalBytes, &mut args)?;
        Ok(args.total_bytes)
    }

    /// Every chunk's size must be a multiple of this.
    pub fn granule_size(&self) -> Result<i64> {
        let mut args = sys::PJRT_CopyToDeviceStream_GranuleSize_Args::new();
        args.stream = self.raw.as_ptr();
        pjrt_call!(self.api.api(), PJRT_CopyToDeviceStream_GranuleSize, &mut args)?;
        Ok(args.granule_size_in_bytes)
    }

    /// Bytes added so far (transferred or queued).
    pub fn current_bytes(&self) -> Result<i64> {
        let mut args = sys::PJRT_CopyToDeviceStream_CurrentBytes_Args::new();
        args.stream = self.raw.as_ptr();
        pjrt_call!(self.api.api(), PJRT_CopyToDeviceStream_CurrentBytes, &mut args)?;
        Ok(args.current_bytes)
    }

    /// Adds `data` to the stream; the plugin owns (and frees) it from here on. Returns the
    /// event that completes when the chunk has been transferred, where the plugin gives one.
    ///
    /// Refused before reaching the plugin: a size that is not a multiple of
    /// [`granule_size`](Self::granule_size), or more bytes than the stream still expects.
    pub fn add_chunk(&self, mut data: Vec<u8>) -> Result<Option<Event>> {
        let granule = self.granule_size()?;
        let len = i64::try_from(data.len()).map_err(|_| Error::invalid("the chunk is too large"))?;
        if granule > 0 && len % granule != 0 {
            return Err(Error::invalid(format!(
                "a chunk of {len} bytes is not a multiple of the stream's granule size ({granule} bytes)"
            )));
        }
        let (total, current) = (self.total_bytes()?, self.current_bytes()?);
        if current.checked_add(len).is_none_or(|end| end > total) {
            return Err(Error::invalid(format!(
                "a chunk of {len} bytes does not fit: the stream holds {current} of {total} bytes"
            )));
        }
        let (ptr, size) = (data.as_mut_ptr(), data.len());
        // The vector (its heap bytes stay where they are) goes into the hand-off table until
        // the plugin calls the deleter with its id (see `crate::call::handoff`).
        let owner = crate::call::handoff::give(data);
        let mut chunk =
            sys::PJRT_Chunk { data: ptr as *mut c_void, size, deleter: Some(free_chunk), deleter_arg: owner };
        let mut args = sys::PJRT_CopyToDeviceStream_AddChunk_Args::new();
        args.stream = self.raw.as_ptr();
        args.chunk = &mut chunk;
        match pjrt_call!(self.api.api(), PJRT_CopyToDeviceStream_AddChunk, &mut args) {
            Ok(()) => {}
            Err(e @ Error::Unsupported { .. }) => {
                // Never reached the plugin: the chunk is still ours.
                drop(crate::call::handoff::take::<Vec<u8>>(owner));
                return Err(e);
            }
            // The plugin may already own the chunk (the header says AddChunk takes it): freeing
            // it here could free it twice, so it is left to the plugin (at worst, a leak).
            Err(e) => return Err(e),
        }
        Ok(match &self.api {
            // The event keeps the client alive, like every other event.
            ApiSource::Client(client) => Event::from_raw(client.plugin(), Some(client), args.transfer_complete),
            #[cfg(test)]
            ApiSource::Static(_) => None,
        })
    }

    /// The channel the device receives on.
    pub fn channel_id(&self) -> i64 {
        self.channel_id
    }

    /// Which device waits for the data: its position in the executable's addressable devices.
    pub fn device_index(&self) -> usize {
        self.device_index
    }

    /// The raw handle, for use with [`crate::sys`]. Do not destroy it.
    pub fn as_raw(&self) -> *mut sys::PJRT_CopyToDeviceStream {
        self.raw.as_ptr()
    }
}

impl Drop for CopyToDeviceStream {
    fn drop(&mut self) {
        release_if_in_callback!(CopyToDeviceStream {
            api: self.api.clone(),
            raw: self.raw,
            channel_id: self.channel_id,
            device_index: self.device_index,
        });
        let mut args = sys::PJRT_CopyToDeviceStream_Destroy_Args::new();
        args.stream = self.raw.as_ptr();
        let _ = pjrt_call!(self.api.api(), PJRT_CopyToDeviceStream_Destroy, &mut args);
    }
}

impl fmt::Debug for CopyToDeviceStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CopyToDeviceStream")
            .field("channel_id", &self.channel_id)
            .field("device_index", &self.device_index)
            .field("total_bytes", &self.total_bytes().ok())
            .field("current_bytes", &self.current_bytes().ok())
            .finish()
    }
}

/// Frees a chunk made by [`CopyToDeviceStream::add_chunk`]: its vector is taken out of the
/// hand-off table, once; a second call (or an argument never given) frees nothing.
unsafe extern "C" fn free_chunk(_data: *mut c_void, deleter_arg: *mut c_void) {
    drop(crate::call::handoff::take::<Vec<u8>>(deleter_arg));
}

/// What one send callback's `user_arg` points to. The closure is reached weakly: see
/// [`CallbackTargets`].
struct SendTarget {
    callback: Weak<Mutex<Option<Box<SendFn>>>>,
    channel_id: i64,
    device_index: usize,
    failures: Arc<Mutex<Vec<Error>>>,
}

/// What one receive callback's `user_arg` points to (the closure reached weakly, as for
/// [`SendTarget`]).
struct RecvTarget {
    callback: Weak<Mutex<Option<Box<RecvFn>>>>,
    channel_id: i64,
    device_index: usize,
    failures: Arc<Mutex<Vec<Error>>>,
    source: TargetSource,
}

/// Where a receive target finds the client for the streams it makes. Weak: targets may be kept
/// by the client itself (after a failed launch, until the client is destroyed), and a strong
/// handle there would keep the client alive forever (the closures are reached weakly for the
/// same reason).
#[derive(Clone)]
enum TargetSource {
    Client(WeakClient),
    #[cfg(test)]
    Static(&'static Api),
}

impl TargetSource {
    fn resolve(&self) -> Option<ApiSource> {
        match self {
            TargetSource::Client(client) => client.upgrade().map(ApiSource::Client),
            #[cfg(test)]
            TargetSource::Static(api) => Some(ApiSource::Static(api)),
        }
    }
}

fn record(failures: &Mutex<Vec<Error>>, error: Error) {
    failures.lock().unwrap_or_else(|p| p.into_inner()).push(error);
}

/// A channel id no program uses, for the padding entries (see [`HostCallbacks::prepare`]).
const UNUSED_CHANNEL: i64 = i64::MIN;

/// The `user_arg`s handed to the plugin for one launch: ids in the hand-off table (see
/// `crate::call::handoff`), each holding one target. They must outlive the launch: dropping this
/// takes them out of the table, so it is dropped only once every device has completed; a
/// plugin calling back after that finds nothing.
///
/// A target reaches its closure weakly: the closures are held by [`CallbackClosures`] (until
/// every device has completed) and by the `ExecuteOptions` they were registered on. So when
/// nothing says when the plugin is done (a failed launch) the client can keep the targets
/// without keeping the closures, which may own the client: that would be a cycle, and the
/// client would never be destroyed.
pub(crate) struct CallbackTargets {
    send: Vec<usize>,
    recv: Vec<usize>,
}

impl Drop for CallbackTargets {
    fn drop(&mut self) {
        // The targets own user closures: never dropped on a plugin thread.
        release_if_in_callback!(CallbackTargets {
            send: std::mem::take(&mut self.send),
            recv: std::mem::take(&mut self.recv),
        });
        for id in self.send.drain(..) {
            drop(crate::call::handoff::take::<Arc<SendTarget>>(id as *mut c_void));
        }
        for id in self.recv.drain(..) {
            drop(crate::call::handoff::take::<Arc<RecvTarget>>(id as *mut c_void));
        }
    }
}

/// The closures one launch's targets point to, held until every device has completed. Dropped
/// inside a plugin callback, they go to the release thread (they are the user's).
pub(crate) struct CallbackClosures {
    send: Vec<SendSlot>,
    recv: Vec<RecvSlot>,
}

impl Drop for CallbackClosures {
    fn drop(&mut self) {
        release_if_in_callback!(CallbackClosures {
            send: std::mem::take(&mut self.send),
            recv: std::mem::take(&mut self.recv),
        });
    }
}

/// The per-device callback lists of one launch; they need to live only during the Execute call.
pub(crate) struct CallbackLists {
    send_lists: Vec<Vec<sys::PJRT_SendCallbackInfo>>,
    send_heads: Vec<*mut sys::PJRT_SendCallbackInfo>,
    recv_lists: Vec<Vec<sys::PJRT_RecvCallbackInfo>>,
    recv_heads: Vec<*mut sys::PJRT_RecvCallbackInfo>,
}

impl CallbackLists {
    /// Points `raw` at the lists (which must then stay alive, unmoved in memory, until the
    /// Execute call returns: they live on the heap, so moving `self` is fine).
    pub(crate) fn apply(&mut self, raw: &mut sys::PJRT_ExecuteOptions) {
        self.send_heads = self.send_lists.iter_mut().map(|l| l.as_mut_ptr()).collect();
        self.recv_heads = self.recv_lists.iter_mut().map(|l| l.as_mut_ptr()).collect();
        raw.num_send_ops = self.send_lists.first().map_or(0, Vec::len);
        raw.num_recv_ops = self.recv_lists.first().map_or(0, Vec::len);
        raw.send_callbacks = self.send_heads.as_mut_ptr() as *mut *mut c_void;
        raw.recv_callbacks = self.recv_heads.as_mut_ptr() as *mut *mut c_void;
    }
}

impl HostCallbacks {
    /// Builds the per-device lists for `num_devices` devices, and the targets they point to.
    ///
    /// When only one kind is registered, the other list gets one entry on an unused channel:
    /// some plugins read the receive lists with the send count (fixed upstream in
    /// openxla/xla#37129), and an entry no program op refers to is never called.
    pub(crate) fn prepare(
        &self,
        client: &Client,
        num_devices: usize,
    ) -> (CallbackLists, CallbackTargets, CallbackClosures) {
        self.prepare_with(TargetSource::Client(client.downgrade()), num_devices)
    }

    fn prepare_with(
        &self,
        source: TargetSource,
        num_devices: usize,
    ) -> (CallbackLists, CallbackTargets, CallbackClosures) {
        let mut targets = CallbackTargets { send: Vec::new(), recv: Vec::new() };
        // Made with the first callback (see `failures`); options without callbacks are never
        // prepared, so this default is only a fallback.
        let failures = self.failures.clone().unwrap_or_default();
        let unused_send: Vec<(i64, SendSlot)>;
        let unused_recv: Vec<(i64, RecvSlot)>;
        let send: &[(i64, SendSlot)] = if self.send.is_empty() {
            let f: Box<SendFn> = Box::new(|_| Err(Error::invalid("no send callback is registered for this channel")));
            unused_send = vec![(UNUSED_CHANNEL, Arc::new(Mutex::new(Some(f))))];
            &unused_send
        } else {
            &self.send
        };
        let recv: &[(i64, RecvSlot)] = if self.recv.is_empty() {
            let f: Box<RecvFn> =
                Box::new(|_| Err(Error::invalid("no receive callback is registered for this channel")));
            unused_recv = vec![(UNUSED_CHANNEL, Arc::new(Mutex::new(Some(f))))];
            &unused_recv
        } else {
            &self.recv
        };
        // The padding closures made here live only in `closures`.
        let closures = CallbackClosures {
            send: send.iter().map(|(_, slot)| slot.clone()).collect(),
            recv: recv.iter().map(|(_, slot)| slot.clone()).collect(),
        };
        let mut send_lists = Vec::with_capacity(num_devices);
        let mut recv_lists = Vec::with_capacity(num_devices);
        for device_index in 0..num_devices {
            let mut list = Vec::with_capacity(send.len());
            for (channel_id, callback) in send {
                let target = Arc::new(SendTarget {
                    callback: Arc::downgrade(callback),
                    channel_id: *channel_id,
                    device_index,
                    failures: failures.clone(),
                });
                let id = crate::call::handoff::give(target);
                targets.send.push(id as usize);
                list.push(sys::PJRT_SendCallbackInfo {
                    channel_id: *channel_id,
                    user_arg: id,
                    send_callback: Some(send_trampoline),
                });
            }
            send_lists.push(list);
            let mut list = Vec::with_capacity(recv.len());
            for (channel_id, callback) in recv {
                let target = Arc::new(RecvTarget {
                    callback: Arc::downgrade(callback),
                    channel_id: *channel_id,
                    device_index,
                    failures: failures.clone(),
                    source: source.clone(),
                });
                let id = crate::call::handoff::give(target);
                targets.recv.push(id as usize);
                list.push(sys::PJRT_RecvCallbackInfo {
                    channel_id: *channel_id,
                    user_arg: id,
                    recv_callback: Some(recv_trampoline),
                });
            }
            recv_lists.push(list);
        }
        let lists = CallbackLists { send_lists, send_heads: Vec::new(), recv_lists, recv_heads: Vec::new() };
        (lists, targets, closures)
    }
}

/// Calls the closure in `slot` with `input`, catching a panic. A closure that panicked is dropped
/// and never called again (its state may be broken): later calls fail at once, and their input
/// (a stream) is dropped.
fn call_once_unless_panicked<T, F: FnMut(T) -> Result<()> + ?Sized>(
    slot: &Mutex<Option<Box<F>>>,
    input: T,
    what: impl Fn() -> String,
) -> Result<()> {
    // The guard is never held across an unwind (panics are caught below), so the lock is never
    // poisoned by the closure; a poisoned lock is still usable.
    let mut guard = slot.lock().unwrap_or_else(|p| p.into_inner());
    let Some(callback) = guard.as_mut() else {
        drop(input);
        return Err(Error::CallbackPanicked(format!("{} panicked in an earlier call", what())));
    };
    match catch(|| callback(input)) {
        Ok(result) => result,
        Err(panic) => {
            let message = format!("{} panicked: {panic}", what());
            let broken = guard.take();
            // Dropping the closure may panic too: never past this point.
            no_unwind(move || drop(broken));
            Err(Error::CallbackPanicked(message))
        }
    }
}

/// The status code and message a failure is reported to the plugin with.
fn status_of(error: &Error) -> (sys::PJRT_Error_Code, String) {
    let code = match error {
        Error::CallbackPanicked(_) => ErrorCode::Internal,
        Error::InvalidArgument(_) => ErrorCode::InvalidArgument,
        other => other.code().unwrap_or(ErrorCode::Unknown),
    };
    let raw = code.to_raw();
    // A plugin error must never carry OK.
    let raw = if raw == sys::PJRT_Error_Code::OK { sys::PJRT_Error_Code::UNKNOWN } else { raw };
    (raw, error.to_string())
}

/// The C send callback: hands the chunk to the channel's closure, frees the chunk, reports a
/// failure through `callback_error`. Never unwinds.
unsafe extern "C" fn send_trampoline(
    chunk: *mut sys::PJRT_Chunk,
    callback_error: *mut sys::PJRT_CallbackError,
    total_size_in_bytes: usize,
    // C's `bool` as the byte the plugin passed (any byte; nonzero is true, as C reads it).
    done: u8,
    user_arg: *mut c_void,
) -> *mut sys::PJRT_Error {
    let done = done != 0;
    let _scope = CallbackScope::enter();
    // SAFETY: the plugin passes the chunk it owns and hands to us (read once, freed below).
    let owned = if chunk.is_null() { None } else { Some(unsafe { chunk.read() }) };
    let outcome = catch(|| {
        // The target stays in the hand-off table until every device of the launch has
        // completed (CallbackTargets is dropped only then); a call after that, or with an
        // argument this crate never gave, finds none.
        let Some(target) = crate::call::handoff::get::<Arc<SendTarget>>(user_arg) else {
            let message = "the plugin called a send callback of an execution that is over (or an unknown one)";
            return Some((sys::PJRT_Error_Code::INTERNAL, message.to_owned()));
        };
        // SAFETY: the chunk's bytes stay valid until its deleter runs, after this closure.
        let data = owned.map(|c| unsafe { slice_from_raw(c.data as *const u8, c.size) }).unwrap_or(&[]);
        let chunk = SendChunk {
            data,
            total_size: total_size_in_bytes,
            done,
            channel_id: target.channel_id,
            device_index: target.device_index,
        };
        let result = with_slot(&target.callback, |slot| {
            call_once_unless_panicked(slot, chunk, || format!("the send callback for channel {}", target.channel_id))
        });
        match result.unwrap_or_else(|| Err(Error::invalid(CLOSURE_GONE))) {
            Ok(()) => None,
            Err(error) => {
                let status = status_of(&error);
                record(&target.failures, error);
                Some(status)
            }
        }
    });
    if let Some(c) = owned {
        if let Some(deleter) = c.deleter {
            // SAFETY: the chunk is ours to free, once, with its own deleter and argument.
            unsafe { deleter(c.data, c.deleter_arg) };
        }
    }
    let (code, message) = match outcome {
        Ok(None) => return std::ptr::null_mut(),
        Ok(Some(status)) => status,
        Err(panic) => (sys::PJRT_Error_Code::INTERNAL, panic),
    };
    if callback_error.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: the plugin passes a readable pointer to its error constructor.
    match unsafe { callback_error.read() } {
        // SAFETY: the constructor copies the message during the call.
        Some(make_error) => unsafe { make_error(code, message.as_ptr() as *const c_char, message.len()) },
        None => std::ptr::null_mut(),
    }
}

/// The C receive callback: gives the stream to the channel's closure. Never unwinds.
unsafe extern "C" fn recv_trampoline(stream: *mut sys::PJRT_CopyToDeviceStream, user_arg: *mut c_void) {
    let _scope = CallbackScope::enter();
    no_unwind(|| {
        // See `send_trampoline`: an unknown or finished target is not called.
        let Some(target) = crate::call::handoff::get::<Arc<RecvTarget>>(user_arg) else { return };
        let Some(raw) = NonNull::new(stream) else {
            record(&target.failures, Error::invalid("the plugin called a receive callback without a stream"));
            return;
        };
        let Some(api) = target.source.resolve() else {
            // The client is gone (it cannot be while one of its executions runs): nothing can
            // destroy the stream; it is left to the plugin.
            record(&target.failures, Error::invalid("a receive callback ran after its client was destroyed"));
            return;
        };
        // From here on the stream is owned (destroyed on drop, also while unwinding).
        let stream = CopyToDeviceStream { api, raw, channel_id: target.channel_id, device_index: target.device_index };
        let mut unused = Some(stream);
        let result = with_slot(&target.callback, |slot| {
            let stream = unused.take().expect("called once");
            call_once_unless_panicked(slot, stream, || {
                format!("the receive callback for channel {}", target.channel_id)
            })
        });
        // No closure: the stream is destroyed (on the release thread), like a panicked one's.
        drop(unused);
        if let Err(error) = result.unwrap_or_else(|| Err(Error::invalid(CLOSURE_GONE))) {
            record(&target.failures, error);
        }
    });
}

#[cfg(test)]
mod tests {
    //! The trampolines called directly, as a plugin would, with a hand-made function table for
    //! the stream functions: no plugin needed.

    use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};

    use super::*;
    use crate::executable::execute_options::ExecuteOptions;

    // ---- a fake plugin error, made by the fake `callback_error` ----
    struct FakeError {
        code: sys::PJRT_Error_Code,
        message: String,
    }

    unsafe extern "C" fn make_error(
        code: sys::PJRT_Error_Code,
        message: *const c_char,
        size: usize,
    ) -> *mut sys::PJRT_Error {
        // SAFETY: the trampoline passes `size` readable bytes.
        let bytes = unsafe { std::slice::from_raw_parts(message as *const u8, size) };
        let error = FakeError { code, message: String::from_utf8_lossy(bytes).into_owned() };
        Box::into_raw(Box::new(error)) as *mut sys::PJRT_Error
    }

    fn take_error(error: *mut sys::PJRT_Error) -> Option<FakeError> {
        // SAFETY: made by `make_error`.
        (!error.is_null()).then(|| *unsafe { Box::from_raw(error as *mut FakeError) })
    }

    // ---- chunks that count their frees ----
    // Per thread: the trampoline frees a chunk on the thread that calls it, and each test runs
    // on its own thread, so the tests that send chunks concurrently do not count each other's.
    thread_local! {
        static FREED_ON_THIS_THREAD: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// The chunks freed so far on this thread.
    fn freed() -> usize {
        FREED_ON_THIS_THREAD.with(std::cell::Cell::get)
    }

    unsafe extern "C" fn count_free(data: *mut c_void, arg: *mut c_void) {
        assert_eq!(arg as usize, 0x5eed);
        // SAFETY: made by `plugin_chunk`.
        drop(unsafe { Box::from_raw(data as *mut [u8; 6]) });
        FREED_ON_THIS_THREAD.with(|freed| freed.set(freed.get() + 1));
    }

    fn plugin_chunk() -> sys::PJRT_Chunk {
        let data = Box::into_raw(Box::new(*b"abcdef"));
        sys::PJRT_Chunk {
            data: data as *mut c_void,
            size: 6,
            deleter: Some(count_free),
            deleter_arg: 0x5eed as *mut c_void,
        }
    }

    /// A target in the hand-off table, as `prepare` makes them, and the closure it reaches
    /// weakly (held here, as the launch holds it); taken out again on drop.
    struct Given<T: Send + Sync + 'static>(*mut c_void, std::marker::PhantomData<T>, Option<Arc<dyn Send + Sync>>);

    impl<T: Send + Sync + 'static> Given<T> {
        fn new(target: T, closure: Arc<dyn Send + Sync>) -> Self {
            Given(crate::call::handoff::give(Arc::new(target)), std::marker::PhantomData, Some(closure))
        }

        /// Drops the closure, as a failed launch whose options are gone does.
        fn drop_closure(&mut self) {
            self.2 = None;
        }
    }

    impl<T: Send + Sync + 'static> Drop for Given<T> {
        fn drop(&mut self) {
            drop(crate::call::handoff::take::<Arc<T>>(self.0));
        }
    }

    fn send_target(callback: Box<SendFn>) -> (Given<SendTarget>, Arc<Mutex<Vec<Error>>>) {
        let failures = Arc::new(Mutex::new(Vec::new()));
        let slot: SendSlot = Arc::new(Mutex::new(Some(callback)));
        let target = Given::new(
            SendTarget { callback: Arc::downgrade(&slot), channel_id: 7, device_index: 1, failures: failures.clone() },
            slot,
        );
        (target, failures)
    }

    fn call_send(target: &Given<SendTarget>, done: bool) -> Option<FakeError> {
        call_send_byte(target, done as u8)
    }

    fn call_send_byte(target: &Given<SendTarget>, done: u8) -> Option<FakeError> {
        let mut chunk = plugin_chunk();
        let mut constructor: sys::PJRT_CallbackError = Some(make_error);
        // SAFETY: the arguments a plugin would pass.
        let error = unsafe { send_trampoline(&mut chunk, &mut constructor, 12, done, target.0) };
        take_error(error)
    }

    // The send cases in one test (they count frees in order).
    #[test]
    fn send_trampoline_delivers_frees_and_reports() {
        let before = freed();
        // Delivered: bytes, sizes, flags and ids reach the closure; the chunk is freed once.
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let (target, failures) = send_target(Box::new(move |c: SendChunk<'_>| {
            sink.lock().unwrap().push((
                c.data().to_vec(),
                c.total_size(),
                c.is_done(),
                c.channel_id(),
                c.device_index(),
            ));
            Ok(())
        }));
        assert!(call_send(&target, false).is_none());
        assert!(call_send(&target, true).is_none());
        // C's `bool` arrives as a byte: any nonzero byte is `true`, never an invalid `bool`.
        assert!(call_send_byte(&target, 2).is_none());
        assert!(call_send_byte(&target, 0xff).is_none());
        assert_eq!(
            *seen.lock().unwrap(),
            [
                (b"abcdef".to_vec(), 12, false, 7, 1),
                (b"abcdef".to_vec(), 12, true, 7, 1),
                (b"abcdef".to_vec(), 12, true, 7, 1),
                (b"abcdef".to_vec(), 12, true, 7, 1)
            ]
        );
        assert!(failures.lock().unwrap().is_empty());
        assert_eq!(freed(), before + 4);

        // An error becomes the plugin's error, with its code, and is recorded.
        let (target, failures) = send_target(Box::new(|_| Err(Error::invalid("disk full"))));
        let error = call_send(&target, true).expect("an error for the plugin");
        assert_eq!(error.code, sys::PJRT_Error_Code::INVALID_ARGUMENT);
        assert_eq!(error.message, "invalid argument: disk full");
        assert_eq!(failures.lock().unwrap().len(), 1);
        assert_eq!(freed(), before + 5);

        // A panic is caught (never unwinds into the plugin), reported as INTERNAL, and the chunk
        // is still freed; later calls say the closure panicked before.
        let (target, failures) = send_target(Box::new(|_| panic!("boom in send")));
        let error = call_send(&target, true).expect("an error for the plugin");
        assert_eq!(error.code, sys::PJRT_Error_Code::INTERNAL);
        assert!(error.message.contains("boom in send") && error.message.contains("channel 7"), "{}", error.message);
        let again = call_send(&target, true).expect("an error for the plugin");
        assert!(again.message.contains("earlier call"), "{}", again.message);
        assert_eq!(failures.lock().unwrap().len(), 2);
        assert!(matches!(failures.lock().unwrap()[0], Error::CallbackPanicked(_)));
        assert_eq!(freed(), before + 7);

        // A plugin error code passes through unchanged; without an error constructor the error
        // is only recorded.
        let (target, failures) = send_target(Box::new(|_| {
            Err(Error::Pjrt {
                function: "x",
                code: ErrorCode::ResourceExhausted,
                message: "m".into(),
                payloads: vec![],
            })
        }));
        assert_eq!(call_send(&target, true).unwrap().code, sys::PJRT_Error_Code::RESOURCE_EXHAUSTED);
        let mut chunk = plugin_chunk();
        // SAFETY: a NULL callback_error, as a careless plugin might pass.
        let error = unsafe { send_trampoline(&mut chunk, std::ptr::null_mut(), 6, 1, target.0) };
        assert!(error.is_null());
        assert_eq!(failures.lock().unwrap().len(), 2);
        assert_eq!(freed(), before + 9);

        // A NULL chunk gives the closure an empty slice.
        let (target, _) = send_target(Box::new(|c: SendChunk<'_>| {
            assert!(c.data().is_empty());
            Ok(())
        }));
        let mut constructor: sys::PJRT_CallbackError = Some(make_error);
        // SAFETY: as a plugin would call it, with no chunk.
        let error = unsafe { send_trampoline(std::ptr::null_mut(), &mut constructor, 0, 1, target.0) };
        assert!(error.is_null());
    }

    // ---- a fake stream behind a hand-made function table ----
    struct FakeStream {
        total: i64,
        granule: i64,
        current: AtomicI64,
        chunks: Mutex<Vec<Vec<u8>>>,
        destroyed: AtomicUsize,
    }

    fn fake(stream: *mut sys::PJRT_CopyToDeviceStream) -> &'static FakeStream {
        // SAFETY: the tests pass leaked FakeStreams as stream handles.
        unsafe { &*(stream as *const FakeStream) }
    }

    unsafe extern "C" fn fake_destroy(args: *mut sys::PJRT_CopyToDeviceStream_Destroy_Args) -> *mut sys::PJRT_Error {
        // SAFETY: args from the checked call path.
        fake(unsafe { (*args).stream }).destroyed.fetch_add(1, Ordering::SeqCst);
        std::ptr::null_mut()
    }

    unsafe extern "C" fn fake_add_chunk(args: *mut sys::PJRT_CopyToDeviceStream_AddChunk_Args) -> *mut sys::PJRT_Error {
        // SAFETY: args from the checked call path; the chunk is ours now: copy, then free it.
        unsafe {
            let stream = fake((*args).stream);
            let chunk = (*args).chunk.read();
            let bytes = std::slice::from_raw_parts(chunk.data as *const u8, chunk.size).to_vec();
            stream.current.fetch_add(bytes.len() as i64, Ordering::SeqCst);
            stream.chunks.lock().unwrap().push(bytes);
            (chunk.deleter.unwrap())(chunk.data, chunk.deleter_arg);
            (*args).transfer_complete = std::ptr::null_mut();
        }
        std::ptr::null_mut()
    }

    unsafe extern "C" fn fake_total(args: *mut sys::PJRT_CopyToDeviceStream_TotalBytes_Args) -> *mut sys::PJRT_Error {
        // SAFETY: args from the checked call path.
        unsafe { (*args).total_bytes = fake((*args).stream).total };
        std::ptr::null_mut()
    }

    unsafe extern "C" fn fake_granule(
        args: *mut sys::PJRT_CopyToDeviceStream_GranuleSize_Args,
    ) -> *mut sys::PJRT_Error {
        // SAFETY: args from the checked call path.
        unsafe { (*args).granule_size_in_bytes = fake((*args).stream).granule };
        std::ptr::null_mut()
    }

    unsafe extern "C" fn fake_current(
        args: *mut sys::PJRT_CopyToDeviceStream_CurrentBytes_Args,
    ) -> *mut sys::PJRT_Error {
        // SAFETY: args from the checked call path.
        unsafe { (*args).current_bytes = fake((*args).stream).current.load(Ordering::SeqCst) };
        std::ptr::null_mut()
    }

    unsafe extern "C" fn no_error_destroy(_: *mut sys::PJRT_Error_Destroy_Args) {}
    unsafe extern "C" fn no_error_message(_: *mut sys::PJRT_Error_Message_Args) {}
    unsafe extern "C" fn no_error_code(_: *mut sys::PJRT_Error_GetCode_Args) -> *mut sys::PJRT_Error {
        std::ptr::null_mut()
    }

    fn fake_api() -> &'static Api {
        static API: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        let addr = *API.get_or_init(|| {
            // SAFETY: PJRT_Api is a header plus Option<fn> slots: all-zero is valid.
            let mut table: Box<sys::PJRT_Api> = Box::new(unsafe { std::mem::zeroed() });
            table.struct_size = std::mem::size_of::<sys::PJRT_Api>();
            table.pjrt_api_version.minor_version = 115;
            table.PJRT_Error_Destroy = Some(no_error_destroy);
            table.PJRT_Error_Message = Some(no_error_message);
            table.PJRT_Error_GetCode = Some(no_error_code);
            table.PJRT_CopyToDeviceStream_Destroy = Some(fake_destroy);
            table.PJRT_CopyToDeviceStream_AddChunk = Some(fake_add_chunk);
            table.PJRT_CopyToDeviceStream_TotalBytes = Some(fake_total);
            table.PJRT_CopyToDeviceStream_GranuleSize = Some(fake_granule);
            table.PJRT_CopyToDeviceStream_CurrentBytes = Some(fake_current);
            let table = NonNull::from(Box::leak(table));
            // SAFETY: a leaked, complete table.
            let api = unsafe { Api::new(table) }.expect("a valid fake table");
            Box::leak(Box::new(api)) as *const Api as usize
        });
        // SAFETY: leaked above, lives forever.
        unsafe { &*(addr as *const Api) }
    }

    fn fake_stream(total: i64, granule: i64) -> (&'static FakeStream, *mut sys::PJRT_CopyToDeviceStream) {
        let stream = Box::leak(Box::new(FakeStream {
            total,
            granule,
            current: AtomicI64::new(0),
            chunks: Mutex::new(Vec::new()),
            destroyed: AtomicUsize::new(0),
        }));
        let raw = stream as *mut FakeStream as *mut sys::PJRT_CopyToDeviceStream;
        (stream, raw)
    }

    fn recv_target(callback: Box<RecvFn>) -> (Given<RecvTarget>, Arc<Mutex<Vec<Error>>>) {
        let failures = Arc::new(Mutex::new(Vec::new()));
        let slot: RecvSlot = Arc::new(Mutex::new(Some(callback)));
        let target = Given::new(
            RecvTarget {
                callback: Arc::downgrade(&slot),
                channel_id: 3,
                device_index: 0,
                failures: failures.clone(),
                source: TargetSource::Static(fake_api()),
            },
            slot,
        );
        (target, failures)
    }

    fn call_recv(target: &Given<RecvTarget>, stream: *mut sys::PJRT_CopyToDeviceStream) {
        // SAFETY: the arguments a plugin would pass.
        unsafe { recv_trampoline(stream, target.0) }
    }

    #[test]
    fn callbacks_after_the_launch_or_with_unknown_arguments_call_nothing() {
        let called = Arc::new(AtomicUsize::new(0));
        let seen = called.clone();
        let (target, failures) = send_target(Box::new(move |_| {
            seen.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }));
        let id = target.0;
        assert!(call_send(&target, false).is_none());
        drop(target); // the launch is over: its targets are taken out of the table
        let mut chunk = plugin_chunk();
        let mut constructor: sys::PJRT_CallbackError = Some(make_error);
        // SAFETY: what a plugin would pass, but after the execution completed.
        let before = freed();
        let late = take_error(unsafe { send_trampoline(&mut chunk, &mut constructor, 6, 1, id) });
        assert_eq!(freed(), before + 1, "the chunk is freed either way");
        assert!(late.is_some_and(|e| e.code == sys::PJRT_Error_Code::INTERNAL));
        // An argument never handed out, and NULL.
        for bogus in [std::ptr::null_mut(), 0x1234 as *mut c_void] {
            let mut chunk = plugin_chunk();
            // SAFETY: as above.
            assert!(take_error(unsafe { send_trampoline(&mut chunk, &mut constructor, 6, 1, bogus) }).is_some());
            let (fake, raw) = fake_stream(4, 1);
            // SAFETY: as above, for a receive.
            unsafe { recv_trampoline(raw, bogus) };
            assert_eq!(fake.destroyed.load(Ordering::SeqCst), 0, "an unknown target touches nothing");
        }
        assert_eq!(called.load(Ordering::SeqCst), 1);
        assert!(failures.lock().unwrap().is_empty());
    }

    #[test]
    fn recv_trampoline_fills_and_destroys_the_stream_once() {
        let (fake, raw) = fake_stream(8, 4);
        let (target, failures) = recv_target(Box::new(|stream: CopyToDeviceStream| {
            assert_eq!((stream.total_bytes()?, stream.granule_size()?, stream.current_bytes()?), (8, 4, 0));
            assert_eq!((stream.channel_id(), stream.device_index()), (3, 0));
            // Refused before the plugin: not a granule multiple, then too much.
            assert!(matches!(stream.add_chunk(vec![1; 3]), Err(Error::InvalidArgument(_))));
            assert!(stream.add_chunk(vec![1, 2, 3, 4])?.is_none());
            assert!(matches!(stream.add_chunk(vec![0; 8]), Err(Error::InvalidArgument(m)) if m.contains("4 of 8")));
            stream.add_chunk(vec![5, 6, 7, 8])?;
            assert_eq!(stream.current_bytes()?, 8);
            Ok(())
        }));
        call_recv(&target, raw);
        // Streams dropped inside the callback are destroyed on the release thread.
        crate::call::release::flush_released();
        assert!(failures.lock().unwrap().is_empty(), "{:?}", failures.lock().unwrap());
        assert_eq!(*fake.chunks.lock().unwrap(), [vec![1, 2, 3, 4], vec![5, 6, 7, 8]]);
        assert_eq!(fake.destroyed.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_kept_stream_is_destroyed_when_dropped_later() {
        let (fake, raw) = fake_stream(4, 1);
        let kept = Arc::new(Mutex::new(None));
        let slot = kept.clone();
        let (target, _) = recv_target(Box::new(move |stream| {
            *slot.lock().unwrap() = Some(stream);
            Ok(())
        }));
        call_recv(&target, raw);
        // Streams dropped inside the callback are destroyed on the release thread.
        crate::call::release::flush_released();
        assert_eq!(fake.destroyed.load(Ordering::SeqCst), 0);
        let stream = kept.lock().unwrap().take().unwrap();
        std::thread::spawn(move || stream.add_chunk(vec![9; 4]).map(|_| ())).join().unwrap().unwrap();
        assert_eq!(fake.destroyed.load(Ordering::SeqCst), 1);
        assert_eq!(*fake.chunks.lock().unwrap(), [vec![9; 4]]);
    }

    #[test]
    fn recv_panics_and_errors_are_caught_recorded_and_destroy_the_stream() {
        let (fake, raw) = fake_stream(4, 1);
        let (target, failures) = recv_target(Box::new(|_stream| panic!("boom in recv")));
        call_recv(&target, raw);
        // Streams dropped inside the callback are destroyed on the release thread.
        crate::call::release::flush_released();
        assert_eq!(fake.destroyed.load(Ordering::SeqCst), 1);
        {
            let failures = failures.lock().unwrap();
            assert!(
                matches!(&failures[0], Error::CallbackPanicked(m) if m.contains("boom in recv") && m.contains("channel 3"))
            );
        }
        // The closure's mutex is poisoned now: the next stream is refused and still destroyed.
        let (fake2, raw2) = fake_stream(4, 1);
        call_recv(&target, raw2);
        // Streams dropped inside the callback are destroyed on the release thread.
        crate::call::release::flush_released();
        assert_eq!(fake2.destroyed.load(Ordering::SeqCst), 1);
        assert!(matches!(&failures.lock().unwrap()[1], Error::CallbackPanicked(m) if m.contains("earlier call")));

        let (fake3, raw3) = fake_stream(4, 1);
        let (target, failures) = recv_target(Box::new(|_stream| Err(Error::invalid("no data"))));
        call_recv(&target, raw3);
        // Streams dropped inside the callback are destroyed on the release thread.
        crate::call::release::flush_released();
        assert_eq!(fake3.destroyed.load(Ordering::SeqCst), 1);
        assert!(matches!(&failures.lock().unwrap()[0], Error::InvalidArgument(m) if m == "no data"));

        // A NULL stream is recorded, not dereferenced.
        let (target, failures) = recv_target(Box::new(|_stream| Ok(())));
        call_recv(&target, std::ptr::null_mut());
        assert_eq!(failures.lock().unwrap().len(), 1);
    }

    #[test]
    fn prepared_lists_cover_every_device_pad_the_missing_kind_and_free_their_targets() {
        let alive = Arc::new(());
        let held = alive.clone();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let options = ExecuteOptions::new()
            .on_send(5, |_| Ok(()))
            .on_send(6, move |c: SendChunk<'_>| {
                let _ = &held;
                sink.lock().unwrap().push((c.channel_id(), c.device_index()));
                Ok(())
            })
            .on_send(5, |_| Err(Error::invalid("replaced")));
        assert_eq!(options.callback_channels(), (vec![6, 5], vec![]));
        let (mut lists, targets, closures) =
            options.callbacks().unwrap().prepare_with(TargetSource::Static(fake_api()), 2);
        let mut raw = sys::PJRT_ExecuteOptions::new();
        lists.apply(&mut raw);
        assert_eq!((raw.num_send_ops, raw.num_recv_ops), (2, 1));
        // SAFETY: `apply` pointed raw at 2 device lists of the sizes just checked.
        let (send, recv) = unsafe {
            let send = std::slice::from_raw_parts(raw.send_callbacks as *const *mut sys::PJRT_SendCallbackInfo, 2);
            let recv = std::slice::from_raw_parts(raw.recv_callbacks as *const *mut sys::PJRT_RecvCallbackInfo, 2);
            (
                send.iter().map(|l| std::slice::from_raw_parts(*l, 2).to_vec()).collect::<Vec<_>>(),
                recv.iter().map(|l| std::slice::from_raw_parts(*l, 1).to_vec()).collect::<Vec<_>>(),
            )
        };
        for device in 0..2 {
            assert_eq!(send[device].iter().map(|i| i.channel_id).collect::<Vec<_>>(), [6, 5]);
            assert_eq!(recv[device][0].channel_id, UNUSED_CHANNEL);
            // Call each device's channel-6 entry as the plugin would.
            let info = send[device][0];
            let mut chunk = plugin_chunk();
            let mut constructor: sys::PJRT_CallbackError = Some(make_error);
            // SAFETY: the entry's own function and user_arg, with a plugin-owned chunk.
            let error = unsafe { (info.send_callback.unwrap())(&mut chunk, &mut constructor, 6, 1, info.user_arg) };
            assert!(error.is_null());
            // The replaced channel-5 closure answers.
            let info = send[device][1];
            let mut chunk = plugin_chunk();
            // SAFETY: as above.
            let error = unsafe { (info.send_callback.unwrap())(&mut chunk, &mut constructor, 6, 1, info.user_arg) };
            assert_eq!(take_error(error).unwrap().message, "invalid argument: replaced");
        }
        assert_eq!(*seen.lock().unwrap(), [(6, 0), (6, 1)]);
        assert_eq!(options.take_callback_failures().len(), 2);
        assert!(options.take_callback_failures().is_empty());
        // The padding receive entry destroys a stream it is given and records why.
        let (fake, raw_stream) = fake_stream(4, 1);
        // SAFETY: the entry's own function and user_arg.
        unsafe { (recv[1][0].recv_callback.unwrap())(raw_stream, recv[1][0].user_arg) };
        crate::call::release::flush_released();
        assert_eq!(fake.destroyed.load(Ordering::SeqCst), 1);
        assert_eq!(options.take_callback_failures().len(), 1);
        // The launch's closures and the options hold the closures, the targets only reach them:
        // dropping the targets frees nothing, dropping both holders frees them.
        drop(lists);
        drop(targets);
        assert_eq!(Arc::strong_count(&alive), 2);
        drop(closures);
        assert_eq!(Arc::strong_count(&alive), 2);
        drop(options);
        assert_eq!(Arc::strong_count(&alive), 1);
    }

    #[test]
    fn targets_whose_closures_are_gone_answer_with_an_error() {
        // What a failed launch leaves the plugin: targets whose closures its options held.
        let (mut send, send_failures) = send_target(Box::new(|_| Ok(())));
        send.drop_closure();
        let error = call_send(&send, true).expect("an error for the plugin");
        assert!(error.message.contains("closure is gone"), "{}", error.message);
        assert!(
            matches!(&send_failures.lock().unwrap()[..], [Error::InvalidArgument(m)] if m.contains("closure is gone"))
        );

        let (mut recv, recv_failures) = recv_target(Box::new(|_stream| Ok(())));
        recv.drop_closure();
        let (fake, raw_stream) = fake_stream(4, 1);
        call_recv(&recv, raw_stream);
        crate::call::release::flush_released();
        assert_eq!(fake.destroyed.load(Ordering::SeqCst), 1, "the stream is destroyed, not left to the plugin");
        assert!(
            matches!(&recv_failures.lock().unwrap()[..], [Error::InvalidArgument(m)] if m.contains("closure is gone"))
        );
    }
}
