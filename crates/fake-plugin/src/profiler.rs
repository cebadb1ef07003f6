//! The Profiler extension (scenario `profiler`): a `PLUGIN_Profiler_Api` table whose profiler
//! records the wall-clock time of every `PJRT_LoadedExecutable_Execute` while it runs and hands
//! them out as an XSpace: plane `/device:FAKE:0`, line `fake stream`, one `fake_execute` event
//! (1 µs) per execution, with an `execution` stat. `CollectData` answers as XLA's
//! implementation does: on the first call it hands out its own buffer, one zero byte longer than
//! the message.

use std::collections::HashMap;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use pjrt_client::extensions::profiler::{
    XEvent, XEventData, XEventMetadata, XLine, XPlane, XSpace, XStat, XStatMetadata, XStatValue,
};
use pjrt_client_sys::{self as sys, Args as _, Extension};
use prost::Message;

use crate::calls::lock;

/// The fake's profiler error: a message.
struct FakeProfilerError(String);

/// One profiler (`PLUGIN_Profiler_Create`).
struct FakeProfiler {
    running: bool,
    /// The serialized XSpace plus one zero byte, once collected.
    data: Vec<u8>,
}

/// Whether some profiler is running (then executions are noted).
static PROFILING: AtomicBool = AtomicBool::new(false);
/// Wall-clock times (ns since the Unix epoch) of the executions seen while profiling.
static EXECUTIONS: Mutex<Vec<i64>> = Mutex::new(Vec::new());

fn now_unix_ns() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as i64).unwrap_or(0)
}

/// Called by every execution: noted when a profiler runs.
pub(crate) fn note_execute() {
    if PROFILING.load(Ordering::SeqCst) {
        lock(&EXECUTIONS).push(now_unix_ns());
    }
}

fn error(message: &str) -> *mut sys::PLUGIN_Profiler_Error {
    Box::into_raw(Box::new(FakeProfilerError(message.to_owned()))).cast()
}

/// Runs a profiler function's body; a panic or a NULL args struct becomes an error.
fn guarded<A: sys::Args>(
    args: *mut A,
    body: impl FnOnce(&mut A) -> *mut sys::PLUGIN_Profiler_Error,
) -> *mut sys::PLUGIN_Profiler_Error {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if args.is_null() {
            return error("fake profiler: NULL args");
        }
        // SAFETY: the caller passes a live args struct; its size is checked before use.
        let args = unsafe { &mut *args };
        if args_size(args) < A::STRUCT_SIZE {
            return error("fake profiler: args too small");
        }
        body(args)
    }))
    .unwrap_or_else(|_| error("fake profiler: panicked"))
}

fn args_size<A: sys::Args>(args: &A) -> usize {
    // SAFETY: every args struct starts with `struct_size: usize`.
    unsafe { (args as *const A).cast::<usize>().read() }
}

fn profiler<'a>(raw: *mut sys::PLUGIN_Profiler) -> Option<&'a mut FakeProfiler> {
    // SAFETY: handles come from `create` and live until `destroy` (the client's contract).
    (!raw.is_null()).then(|| unsafe { &mut *raw.cast::<FakeProfiler>() })
}

unsafe extern "C" fn error_destroy(args: *mut sys::PLUGIN_Profiler_Error_Destroy_Args) {
    let _ = guarded(args, |args| {
        if !args.error.is_null() {
            // SAFETY: an error this table made, destroyed once by the client.
            drop(unsafe { Box::from_raw(args.error.cast::<FakeProfilerError>()) });
        }
        null_mut()
    });
}

unsafe extern "C" fn error_message(args: *mut sys::PLUGIN_Profiler_Error_Message_Args) {
    let _ = guarded(args, |args| {
        // SAFETY: a live error this table made.
        let message = &unsafe { &*args.error.cast::<FakeProfilerError>() }.0;
        args.message = message.as_ptr().cast();
        args.message_size = message.len();
        null_mut()
    });
}

unsafe extern "C" fn error_get_code(
    args: *mut sys::PLUGIN_Profiler_Error_GetCode_Args,
) -> *mut sys::PLUGIN_Profiler_Error {
    guarded(args, |args| {
        args.code = sys::PJRT_Error_Code::INTERNAL.0;
        null_mut()
    })
}

unsafe extern "C" fn create(args: *mut sys::PLUGIN_Profiler_Create_Args) -> *mut sys::PLUGIN_Profiler_Error {
    guarded(args, |args| {
        args.profiler = Box::into_raw(Box::new(FakeProfiler { running: false, data: Vec::new() })).cast();
        null_mut()
    })
}

unsafe extern "C" fn destroy(args: *mut sys::PLUGIN_Profiler_Destroy_Args) -> *mut sys::PLUGIN_Profiler_Error {
    guarded(args, |args| {
        if !args.profiler.is_null() {
            // SAFETY: a profiler `create` made, destroyed once.
            let profiler = unsafe { Box::from_raw(args.profiler.cast::<FakeProfiler>()) };
            if profiler.running {
                PROFILING.store(false, Ordering::SeqCst);
            }
        }
        null_mut()
    })
}

unsafe extern "C" fn start(args: *mut sys::PLUGIN_Profiler_Start_Args) -> *mut sys::PLUGIN_Profiler_Error {
    guarded(args, |args| {
        let Some(profiler) = profiler(args.profiler) else { return error("fake profiler: NULL profiler") };
        profiler.running = true;
        lock(&EXECUTIONS).clear();
        PROFILING.store(true, Ordering::SeqCst);
        null_mut()
    })
}

unsafe extern "C" fn stop(args: *mut sys::PLUGIN_Profiler_Stop_Args) -> *mut sys::PLUGIN_Profiler_Error {
    guarded(args, |args| {
        let Some(profiler) = profiler(args.profiler) else { return error("fake profiler: NULL profiler") };
        profiler.running = false;
        PROFILING.store(false, Ordering::SeqCst);
        null_mut()
    })
}

/// The XSpace of the executions seen.
fn space(executions: &[i64]) -> XSpace {
    let line_start = executions.first().copied().unwrap_or_else(now_unix_ns);
    let events = executions
        .iter()
        .enumerate()
        .map(|(i, at)| XEvent {
            metadata_id: 1,
            data: Some(XEventData::OffsetPs((at - line_start) * 1000)),
            duration_ps: 1_000_000,
            stats: vec![XStat { metadata_id: 2, value: Some(XStatValue::Int64(i as i64)) }],
        })
        .collect();
    let plane = XPlane {
        id: 1,
        name: "/device:FAKE:0".into(),
        lines: vec![XLine {
            id: 1,
            name: "fake stream".into(),
            timestamp_ns: line_start,
            events,
            ..Default::default()
        }],
        event_metadata: HashMap::from([(
            1,
            XEventMetadata { id: 1, name: "fake_execute".into(), ..Default::default() },
        )]),
        stat_metadata: HashMap::from([(2, XStatMetadata { id: 2, name: "execution".into(), ..Default::default() })]),
        stats: Vec::new(),
    };
    XSpace { planes: vec![plane], ..Default::default() }
}

unsafe extern "C" fn collect_data(args: *mut sys::PLUGIN_Profiler_CollectData_Args) -> *mut sys::PLUGIN_Profiler_Error {
    guarded(args, |args| {
        let Some(profiler) = profiler(args.profiler) else { return error("fake profiler: NULL profiler") };
        if profiler.running {
            return error("fake profiler: stop the profiler before collecting");
        }
        if args.buffer.is_null() {
            profiler.data = space(&lock(&EXECUTIONS)).encode_to_vec();
            // XLA's quirk: one zero byte past the message, counted in the size.
            profiler.data.push(0);
            args.buffer = profiler.data.as_mut_ptr();
        }
        args.buffer_size_in_bytes = profiler.data.len();
        null_mut()
    })
}

/// The chain of the `profiler` scenario: one Profiler node.
pub(crate) fn profiler_chain() -> *mut sys::PJRT_Extension_Base {
    static NODE: OnceLock<usize> = OnceLock::new();
    *NODE.get_or_init(|| {
        let mut api = sys::PLUGIN_Profiler_Api::new();
        api.error_destroy = Some(error_destroy);
        api.error_message = Some(error_message);
        api.error_get_code = Some(error_get_code);
        api.create = Some(create);
        api.destroy = Some(destroy);
        api.start = Some(start);
        api.stop = Some(stop);
        api.collect_data = Some(collect_data);
        let api = Box::leak(Box::new(api));
        let node = Box::leak(Box::new(sys::PJRT_Profiler_Extension {
            base: sys::PJRT_Extension_Base {
                struct_size: sys::PJRT_Profiler_Extension::STRUCT_SIZE,
                type_: sys::PJRT_Extension_Type::Profiler,
                next: null_mut(),
            },
            profiler_api: api,
            traceme_context_id: 0,
        }));
        node as *mut sys::PJRT_Profiler_Extension as usize
    }) as *mut sys::PJRT_Extension_Base
}
