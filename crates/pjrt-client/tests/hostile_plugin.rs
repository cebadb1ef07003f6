//! Tests against the fake plugin's hostile scenarios, and for the soundness findings that real
//! CPU plugins cannot reach.
//!
//! The hostile scenarios (see `fake-plugin`'s docs) answer with what the C API allows or a buggy
//! plugin could do: PRED bytes other than 0 and 1, NULL events from every slot that hands out
//! one, sizes that disagree with the data, extension structs of older forms. Every operation of
//! the library must then give the right answer or a typed error: never a panic, an abort, an
//! invalid `bool`, or a read or write outside memory; and nothing the plugin may still use is
//! freed (the destinations of downloads the plugin may still write are leaked: an allocation
//! watcher, this binary's global allocator, checks that they are).
//!
//! The second half covers findings of the soundness review that need a plugin to misbehave or
//! to run things on its own threads: destruction inside plugin callbacks, one callback per
//! waited event, children that keep their client, failed launches that keep their context
//! (and their callbacks only while their options live: a callback owning the client lets it go),
//! version gates, the major-to-minor callback flag, and NULL completion events per path.
//!
//! `tools/leakcheck.sh` runs this binary under valgrind too; the deliberate leaks all happen
//! inside [`watch_allocation`], which its suppression file names.
//!
//! A test binary of its own, for its global allocator (not a module of `tests/client`, see its
//! `main.rs`).

mod fake_support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fake_support::{compile, Fake};
use futures::FutureExt;
use pjrt_client::{
    Buffer, Client, ClientOptions, CopyToDeviceStream, DownloadOptions, ElementType, Error, ErrorCode, ExecuteContext,
    ExecuteOptions, HostBufferSemantics, HostSource, Placement, ShapeSpec, UploadOptions, UserEvent,
};

// ---------------------------------------------------------------------------------------------
// An allocation watcher: did the library free a destination, or leak it?

/// The global allocator of this test binary: the system allocator, watching (on the threads
/// that ask, see [`watch_allocation`]) the first allocation of one size.
struct Watcher;

thread_local! {
    /// The size to watch on this thread (0: none).
    static WATCH_SIZE: Cell<usize> = const { Cell::new(0) };
    /// The address of the first allocation of that size made while watching (0: none yet).
    static WATCHED: Cell<usize> = const { Cell::new(0) };
    /// Whether that allocation was freed (on this thread) while watching.
    static WATCHED_FREED: Cell<bool> = const { Cell::new(false) };
}

fn note_alloc(ptr: *mut u8, size: usize) {
    let _ = WATCH_SIZE.try_with(|watch| {
        if watch.get() != 0 && watch.get() == size && !ptr.is_null() {
            let _ = WATCHED.try_with(|watched| {
                if watched.get() == 0 {
                    watched.set(ptr as usize);
                }
            });
        }
    });
}

fn note_free(ptr: *mut u8) {
    let _ = WATCHED.try_with(|watched| {
        if watched.get() != 0 && watched.get() == ptr as usize {
            let _ = WATCHED_FREED.try_with(|freed| freed.set(true));
        }
    });
}

// SAFETY: every call is forwarded to the system allocator unchanged; the bookkeeping only reads
// and writes thread-local cells (no allocation, no reentry).
unsafe impl GlobalAlloc for Watcher {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        let ptr = unsafe { System.alloc(layout) };
        note_alloc(ptr, layout.size());
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        note_alloc(ptr, layout.size());
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note_free(ptr);
        // SAFETY: forwarded: `ptr` came from this allocator (the system's) with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's arguments.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            note_free(ptr);
            note_alloc(new, new_size);
        }
        new
    }
}

#[global_allocator]
static WATCHER: Watcher = Watcher;

/// What became of the first allocation of the watched size.
#[derive(Debug)]
struct Watched {
    allocated: bool,
    freed: bool,
}

impl Watched {
    /// Allocated and never freed: leaked, as a destination the plugin may still write must be.
    fn leaked(&self) -> bool {
        self.allocated && !self.freed
    }
}

/// Runs `f`, watching the first allocation of `size` bytes it makes on this thread (none for
/// 0). Every deliberate leak of these tests happens in here (`tools/leakcheck.supp` names this
/// function).
#[inline(never)]
fn watch_allocation<T>(size: usize, f: impl FnOnce() -> T) -> (T, Watched) {
    WATCHED.with(|w| w.set(0));
    WATCHED_FREED.with(|f| f.set(false));
    WATCH_SIZE.with(|w| w.set(size));
    let result = f();
    WATCH_SIZE.with(|w| w.set(0));
    let watched = Watched { allocated: WATCHED.with(Cell::get) != 0, freed: WATCHED_FREED.with(Cell::get) };
    WATCHED.with(|w| w.set(0));
    (result, watched)
}

// ---------------------------------------------------------------------------------------------
// Helpers

const A: [f32; 4] = [1., 2., 3., 4.];
const B: [f32; 4] = [10., 20., 30., 40.];
const SUM: [f32; 4] = [11., 22., 33., 44.];
/// The size of the downloads whose destinations are watched: no other allocation of the
/// library's calls has it.
const ODD: usize = 1237;

fn client_of(fake: &Fake) -> Client {
    Client::new(&fake.plugin(), &ClientOptions::new()).unwrap()
}

fn upload(client: &Client, data: &[f32; 4], device: usize) -> Buffer {
    let devices = client.devices();
    client.upload_with(HostSource::slice(data, &[4]), &UploadOptions::new().device(&devices[device])).unwrap()
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_ne_bytes()).collect()
}

/// An f32[4] buffer's values read in place (the fake's device memory is its host memory), for
/// scenarios in which every download is refused.
fn device_values(buffer: &Buffer) -> [f32; 4] {
    let ptr = buffer.unsafe_pointer().unwrap() as *const f32;
    assert!(!ptr.is_null());
    // SAFETY: the fake's buffer holds 16 bytes at this address while `buffer` lives.
    std::array::from_fn(|i| unsafe { ptr.add(i).read_unaligned() })
}

extern "C" {
    fn pthread_self() -> std::ffi::c_ulong;
    fn pthread_getname_np(thread: std::ffi::c_ulong, name: *mut std::ffi::c_char, len: usize) -> std::ffi::c_int;
}

/// The name the operating system knows the current thread by (the fake names its threads with
/// its own copy of `std`, which this binary's `std::thread::current()` does not see).
fn os_thread_name() -> String {
    let mut name = [0 as std::ffi::c_char; 64];
    // SAFETY: `name` has room for the 16 bytes Linux thread names take, NUL included.
    let status = unsafe { pthread_getname_np(pthread_self(), name.as_mut_ptr(), name.len()) };
    assert_eq!(status, 0);
    // SAFETY: NUL-terminated by `pthread_getname_np` on success.
    unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned()
}

/// Checks that the bytes behind `bools` are 0 or 1 (anything else would be an invalid `bool`).
fn assert_valid_bools(bools: &[bool]) {
    // SAFETY: reading the bytes of `bools` as `u8` (same size and alignment).
    let bytes = unsafe { std::slice::from_raw_parts(bools.as_ptr().cast::<u8>(), bools.len()) };
    assert!(bytes.iter().all(|b| *b <= 1), "bools with invalid bytes: {bytes:?}");
}

/// The message of an `Error::InvalidArgument`, or a panic naming what came instead.
#[track_caller]
fn invalid<T: std::fmt::Debug>(result: pjrt_client::Result<T>) -> String {
    match result {
        Err(Error::InvalidArgument(message)) => message,
        other => panic!("expected Error::InvalidArgument, got {other:?}"),
    }
}

/// The function of an `Error::Unsupported`, or a panic naming what came instead.
#[track_caller]
fn unsupported<T: std::fmt::Debug>(result: pjrt_client::Result<T>) -> &'static str {
    match result {
        Err(Error::Unsupported { function, .. }) => function,
        other => panic!("expected Error::Unsupported, got {other:?}"),
    }
}

/// Checks that `result` is an error that leaked the watched destination.
#[track_caller]
fn refused_and_leaked<T: std::fmt::Debug>((result, watched): (pjrt_client::Result<T>, Watched)) -> String {
    assert!(watched.leaked(), "the destination must be leaked, not freed: {watched:?}");
    invalid(result)
}

// ---------------------------------------------------------------------------------------------
// Part 1: the hostile scenarios

/// `bool` answers the plugin writes as the byte 2 (C code may leave any nonzero byte in a
/// `bool`) come out as valid `true`s: the library reads such fields as bytes, never as `bool`.
#[test]
fn bool_answers_other_than_one_are_read_as_true() {
    let fake = Fake::new("hostile_bools");
    let client = client_of(&fake);
    let device = &client.devices()[0];
    let buffer = upload(&client, &[1., 2., 3., 4.], 0);
    let event = buffer.ready_event().unwrap();
    event.wait().unwrap();
    let answers = [
        event.is_ready().unwrap(),
        device.is_addressable().unwrap(),
        buffer.is_on_cpu().unwrap(),
        device.memory_stats().unwrap().peak_bytes_in_use.is_some(),
    ];
    assert_valid_bools(&answers);
    assert_eq!(answers, [true; 4]);
    assert_eq!(device.memory_stats().unwrap().peak_bytes_in_use, Some(4096));
    assert_eq!(device.memory_stats().unwrap().num_allocs, None, "0 is still false");
}

#[test]
fn pred_bytes_other_than_one_are_read_as_true() {
    let fake = Fake::new("hostile_pred");
    let client = client_of(&fake);
    let values = [true, false, true, true, false, true, false, false, true];
    let n = values.len();
    let buffer = client.upload(&values, &[n as i64]).unwrap();
    let truth = |bytes: &[u8]| bytes.iter().map(|b| *b != 0).collect::<Vec<bool>>();

    // Bytes come back as the plugin gives them (2 and 0xff for true here)...
    let raw = buffer.to_bytes(DownloadOptions::new()).unwrap();
    assert_eq!(truth(&raw), values);
    assert!(raw.contains(&2) && raw.contains(&0xff), "the fake said true with 2 and 0xff: {raw:?}");
    let mut into = vec![false; n];
    buffer.copy_to_slice(&mut into).unwrap();
    assert_eq!(into, truth(&raw));
    assert_eq!(buffer.to_bytes_async(DownloadOptions::new().destination(vec![0; n])).unwrap().wait().unwrap(), raw);
    assert_eq!(futures::executor::block_on(buffer.to_bytes_async(DownloadOptions::new()).unwrap()).unwrap(), raw);
    let part = buffer.to_bytes(DownloadOptions::new().raw(1, 6)).unwrap();
    assert_eq!(truth(&part), values[1..7]);
    assert!(part.iter().any(|b| *b > 1), "{part:?}");
    let later = buffer.raw_copy_request(2, 5).unwrap().fulfill(vec![0; 5]).unwrap().wait().unwrap();
    assert_eq!(truth(&later), values[2..7]);

    // ... but never as `bool`s: those are 0 or 1, read as numpy reads bytes (nonzero is true).
    let bools = buffer.to_vec::<bool>().unwrap();
    assert_eq!(bools, values);
    assert_valid_bools(&bools);
    let mut slice = [false; 9];
    buffer.copy_to_slice(&mut slice).unwrap();
    assert_eq!(slice, values);
    assert_valid_bools(&slice);
    let npy = buffer.to_host_array().unwrap().to_vec::<bool>().unwrap();
    assert_eq!(npy, values);
    assert_valid_bools(&npy);
    buffer.ready_event().unwrap().wait().unwrap();

    // Uploaded bytes other than 0 and 1 are what the plugin keeps; read back, they are `true`.
    let odd = [2u8, 0, 7, 0xff, 1, 0x80];
    let uploaded = client.upload_with(HostSource::bytes(&odd, ElementType::PRED, &[6]), &UploadOptions::new()).unwrap();
    let bools = uploaded.to_vec::<bool>().unwrap();
    assert_eq!(bools, [true, false, true, true, true, true]);
    assert_valid_bools(&bools);
    let mut slice = [true; 6];
    uploaded.copy_to_slice(&mut slice).unwrap();
    assert_eq!(slice, [true, false, true, true, true, true]);
    assert_valid_bools(&slice);
    // A `bool` slice of the wrong type or size is refused before any copy.
    invalid(uploaded.copy_to_slice(&mut [0u8; 6]));
    invalid(uploaded.copy_to_slice(&mut [false; 5]));

    assert!(fake.counter("hostile_pred_bytes") > 0);
    drop((buffer, uploaded, client));
    fake.assert_nothing_leaked();
}

#[test]
fn null_events_from_every_slot_are_never_read_as_done() {
    let fake = Fake::new("hostile_events");
    let client = client_of(&fake);

    // An upload copied during the call needs no event; its data is there.
    let a = upload(&client, &A, 0);
    let b = upload(&client, &B, 0);
    assert_eq!(device_values(&a), A);
    // One the plugin may read later (until its done event) cannot be seen to end: refused, and
    // the buffer destroyed only after its (absent) ready event was looked for.
    let until_done = UploadOptions::new().semantics(HostBufferSemantics::CopyUntilTransferCompletes);
    invalid(client.upload_with(HostSource::bytes(&f32_bytes(&A), ElementType::F32, &[4]), &until_done));
    // An owned upload with a done callback: refused, its data leaked (the plugin may read it).
    refused_and_leaked(watch_allocation(ODD, || {
        let source = HostSource::owned(vec![3u8; ODD], ElementType::U8, &[ODD as i64]).on_done(|_, _| {});
        client.upload_with(source, &UploadOptions::new())
    }));
    invalid(a.ready_event());

    // Owned downloads: refused, and the destination leaked (never handed out, never freed).
    let odd = client.upload(&vec![5u8; ODD], &[ODD as i64]).unwrap();
    refused_and_leaked(watch_allocation(ODD, || odd.to_bytes(DownloadOptions::new())));
    refused_and_leaked(watch_allocation(ODD, || odd.to_vec::<u8>()));
    refused_and_leaked(watch_allocation(ODD, || odd.to_bytes_async(DownloadOptions::new())));
    refused_and_leaked(watch_allocation(ODD, || odd.to_bytes_async(DownloadOptions::new().destination(vec![0; ODD]))));
    refused_and_leaked(watch_allocation(ODD, || odd.to_bytes(DownloadOptions::new().raw(0, ODD))));
    refused_and_leaked(watch_allocation(ODD, || {
        odd.to_bytes_async(DownloadOptions::new().raw(0, ODD).destination(vec![0; ODD]))
    }));
    // Borrowed downloads: refused (after looking for the buffer's ready event).
    invalid(odd.copy_to_slice(&mut vec![0u8; ODD]));
    // A raw copy whose destination comes later: refused, the request handed back (cancelled).
    invalid(odd.raw_copy_request(0, 16));
    assert_eq!(fake.counter("raw_copy_requests_created"), fake.counter("raw_copy_requests_destroyed"));

    // Executions: the outputs are the plugin's buffers, with the right data; there is no event
    // to wait for.
    let exe = compile(&client, 1).unwrap();
    let out = exe.execute(&[&a, &b], &ExecuteOptions::new()).unwrap();
    assert_eq!(device_values(&out[0]), SUM);
    let pending = exe.execute_async(&[&a, &b], &ExecuteOptions::new()).unwrap();
    assert_eq!(device_values(&pending.wait().unwrap()[0]), SUM);
    let with = exe.execute(&[&a, &b], &ExecuteOptions::new().launch_id(1)).unwrap();
    assert_eq!(device_values(&with[0]), SUM);
    let exe2 = compile(&client, 2).unwrap();
    let (a1, b1) = (upload(&client, &A, 1), upload(&client, &B, 1));
    let mut execution = exe2.execute_sharded_async(&[[&a, &b], [&a1, &b1]], &ExecuteOptions::new()).unwrap();
    assert!(execution.events().next().is_none());
    let outputs = execution.wait_timeout(Duration::from_millis(10)).unwrap();
    assert!(outputs.iter().all(|o| device_values(&o[0]) == SUM));
    let again = exe2.execute_sharded_async(&[[&a, &b], [&a1, &b1]], &ExecuteOptions::new()).unwrap();
    assert!(again.wait().unwrap().iter().all(|o| device_values(&o[0]) == SUM));

    // The transfer manager: an owned piece is refused and leaked; a borrowed one (or a literal)
    // is refused after the call, which is all that can be done with memory that is not ours.
    let manager = client
        .create_buffers_for_async_host_to_device(&[ShapeSpec::new(ElementType::U8, &[ODD as i64])], Placement::Default)
        .unwrap();
    refused_and_leaked(watch_allocation(ODD, || manager.transfer_data_async(0, vec![9u8; ODD], 0, false)));
    invalid(manager.transfer_data(0, &[1; 4], 0, false));
    let literal = client
        .create_buffers_for_async_host_to_device(&[ShapeSpec::new(ElementType::F32, &[4])], Placement::Default)
        .unwrap();
    invalid(literal.transfer_literal(0, &f32_bytes(&A)));
    assert_eq!(device_values(&literal.retrieve_buffer(0).unwrap()), A);

    // A user event: none to hand out.
    invalid(UserEvent::new(client.plugin()));

    // A host receive: the chunk is the plugin's from the call on; no event, no wait.
    let received = Arc::new(Mutex::new(None));
    let options = {
        let received = received.clone();
        ExecuteOptions::new().on_recv(1, move |stream| {
            let event = stream.add_chunk(vec![7; 16])?;
            *received.lock().unwrap() = Some((event.is_none(), stream.current_bytes()?));
            Ok(())
        })
    };
    let received_out = exe.execute(&[&a, &b], &options).unwrap();
    assert!(options.take_callback_failures().is_empty());
    assert_eq!(*received.lock().unwrap(), Some((true, 16)));
    assert_eq!(device_values(&received_out[0]), SUM);

    assert_eq!(fake.counter("events_created"), 0, "no event was handed out");
    assert!(fake.counter("null_events_returned") >= 20);
    drop((
        a,
        b,
        a1,
        b1,
        odd,
        out,
        outputs,
        with,
        received_out,
        execution,
        exe,
        exe2,
        manager,
        literal,
        options,
        client,
    ));
    fake.assert_nothing_leaked();
}

#[test]
fn sizes_that_disagree_are_refused_before_any_copy() {
    for scenario in ["hostile_sizes", "hostile_sizes_fewer"] {
        let fake = Fake::new(scenario);
        let client = client_of(&fake);
        let a = upload(&client, &A, 0);
        let b = upload(&client, &B, 0);

        // The size query disagrees with the dense size of f32[4]: every dense download is
        // refused before the plugin sees a destination.
        let message = invalid(a.host_size());
        assert!(message.contains("16"), "{message}");
        invalid(a.to_bytes(DownloadOptions::new()));
        invalid(a.to_vec::<f32>());
        invalid(a.to_bytes_async(DownloadOptions::new()));
        invalid(a.to_bytes_async(DownloadOptions::new().destination(vec![0; 16])));
        invalid(a.copy_to_slice(&mut [0f32; 4]));
        assert_eq!(fake.counter("faults_injected"), 0);

        // Raw copies stay inside the on-device size the plugin reports (half the data).
        assert_eq!(a.on_device_size().unwrap(), 8);
        assert_eq!(a.to_bytes(DownloadOptions::new().raw(0, 8)).unwrap(), f32_bytes(&A[..2]));
        assert_eq!(a.to_bytes(DownloadOptions::new().raw(4, 4)).unwrap(), f32_bytes(&A[1..2]));
        invalid(a.to_bytes(DownloadOptions::new().raw(0, 16)));
        invalid(a.to_bytes(DownloadOptions::new().raw(8, 4)));
        invalid(a.to_bytes(DownloadOptions::new().raw(usize::MAX, 2)));
        invalid(a.to_bytes_async(DownloadOptions::new().raw(4, 8).destination(vec![0; 8])));
        invalid(a.raw_copy_request(0, 9));

        // A transfer manager's buffer that claims 8 more bytes than it holds: a piece past its
        // real end reaches the plugin, which refuses it; a literal is sized by the shape.
        let manager = client
            .create_buffers_for_async_host_to_device(&[ShapeSpec::new(ElementType::F32, &[4])], Placement::Default)
            .unwrap();
        assert_eq!(manager.buffer_size(0).unwrap(), 24);
        match manager.transfer_data(0, &[0; 8], 16, true) {
            Err(Error::Pjrt { code: ErrorCode::InvalidArgument, .. }) => {}
            other => panic!("expected the plugin's refusal, got {other:?}"),
        }
        invalid(manager.transfer_data(0, &[0; 8], 20, true));
        let literal = client
            .create_buffers_for_async_host_to_device(&[ShapeSpec::new(ElementType::F32, &[4])], Placement::Default)
            .unwrap();
        invalid(literal.transfer_literal(0, &[0; 24]));
        literal.transfer_literal(0, &f32_bytes(&B)).unwrap();
        assert_eq!(device_values(&literal.retrieve_buffer(0).unwrap()), B);

        // Execution is unaffected.
        let out = compile(&client, 1).unwrap().execute(&[&a, &b], &ExecuteOptions::new()).unwrap();
        assert_eq!(device_values(&out[0]), SUM);
        drop((a, b, out, manager, literal, client));
        fake.assert_nothing_leaked();
    }

    // Counts that disagree between NumOutputs, OutputElementTypes and OutputDimensions (the
    // `bad_count` directive): the executable is refused before any array is read.
    for slot in ["PJRT_Executable_NumOutputs", "PJRT_Executable_OutputElementTypes", "PJRT_Executable_OutputDimensions"]
    {
        let fake = Fake::with_sidecar("hostile_counts", &format!("hostile_sizes\nbad_count {slot}"));
        let client = client_of(&fake);
        invalid(compile(&client, 1));
        drop(client);
        fake.assert_nothing_leaked();
    }
}

/// Checks what a client sees of the `old_extensions` chain (also part of `hostile`).
fn check_old_extensions(fake: &Fake, client: &Client) {
    use pjrt_client::extensions::ExtensionKind;
    let plugin = client.plugin();
    let listed: Vec<(ExtensionKind, usize, bool)> =
        plugin.extensions().iter().map(|e| (e.kind, e.struct_size, e.older_form)).collect();
    assert_eq!(
        listed,
        [
            (ExtensionKind::Ffi, 32, true),
            (ExtensionKind::MemoryDescriptions, 40, false),
            (ExtensionKind::Layouts, 32, true),
        ]
    );
    let buffer = upload(client, &A, 0);
    let exe = compile(client, 1).unwrap();

    // The early Layouts form: its one function is not any declared member.
    let layouts = plugin.layouts_extension().unwrap();
    assert!(layouts.is_older_form());
    assert!(layouts.members().is_empty());
    assert!(!layouts.has("PJRT_Layouts_MemoryLayout_Destroy"));
    assert!(unsupported(layouts.buffer_layout(&buffer)).contains("early form"));
    unsupported(layouts.client_default_layout(client, ElementType::F32, &[4]));
    unsupported(layouts.executable_output_layouts(&exe));
    unsupported(layouts.executable_parameter_layouts(&exe));

    // FFI version 1: listed, never called.
    let ffi = plugin.ffi_extension().unwrap();
    assert!(ffi.is_older_form());
    assert!(ffi.members().is_empty());
    assert!(unsupported(ffi.register_type("hostile")).contains("version 1"));
    let context = ExecuteContext::new(plugin).unwrap();
    // SAFETY: refused before the plugin sees the (NULL) data.
    unsupported(unsafe { ffi.add_user_data(&context, 1, std::ptr::null_mut()) });

    // MemoryDescriptions version 0: same size as version 1, so usable, but no default index is
    // written: no description is the default.
    let descriptions = plugin.memory_descriptions_extension().unwrap();
    assert!(!descriptions.is_older_form());
    assert_eq!(descriptions.members(), ["PJRT_DeviceDescription_MemoryDescriptions", "PJRT_MemoryDescription_Kind"]);
    for device in client.devices() {
        let found: Vec<(String, i32, bool)> = descriptions
            .device_memory_descriptions(&device)
            .unwrap()
            .into_iter()
            .map(|d| (d.kind, d.kind_id, d.is_default))
            .collect();
        assert_eq!(found, [("device".to_owned(), 0, false), ("pinned_host".to_owned(), 1, false)]);
    }

    assert_eq!(fake.counter("early_layouts_calls"), 0, "the early Layouts function was called");
    assert_eq!(fake.counter("ffi_v1_calls"), 0, "the FFI version-1 function was called");
    assert_eq!(fake.counter("memory_descriptions_v0_calls"), 2);
}

#[test]
fn older_extension_forms_are_listed_but_never_called() {
    let fake = Fake::new("old_extensions");
    let client = client_of(&fake);
    check_old_extensions(&fake, &client);
    drop(client);
    fake.assert_nothing_leaked();
}

#[test]
fn everything_hostile_at_once() {
    let fake = Fake::new("hostile");
    let client = client_of(&fake);
    check_old_extensions(&fake, &client);

    let a = upload(&client, &A, 0);
    let b = upload(&client, &B, 0);
    let pred = client.upload(&vec![true; 2 * ODD], &[2 * ODD as i64]).unwrap();
    // Sizes first: every dense download is refused on the size, before any destination exists.
    for buffer in [&a, &pred] {
        invalid(buffer.to_bytes(DownloadOptions::new()));
        invalid(buffer.to_bytes_async(DownloadOptions::new()));
    }
    invalid(pred.to_vec::<bool>());
    invalid(pred.copy_to_slice(&mut vec![false; 2 * ODD]));
    invalid(a.copy_to_slice(&mut [0f32; 4]));
    invalid(a.to_vec::<f32>());
    // Raw copies inside the (halved) on-device size: no event, so refused, destination leaked.
    assert_eq!(pred.on_device_size().unwrap(), ODD);
    refused_and_leaked(watch_allocation(ODD, || pred.to_bytes(DownloadOptions::new().raw(0, ODD))));
    invalid(pred.to_bytes(DownloadOptions::new().raw(0, ODD + 1)));
    invalid(pred.raw_copy_request(0, 2));
    invalid(a.ready_event());

    // Executions give their outputs (right data), without events to wait for.
    let exe = compile(&client, 1).unwrap();
    assert_eq!(device_values(&exe.execute(&[&a, &b], &ExecuteOptions::new()).unwrap()[0]), SUM);
    let mut pending = exe.execute_async(&[&a, &b], &ExecuteOptions::new()).unwrap();
    assert_eq!(device_values(&pending.wait_timeout(Duration::from_millis(1)).unwrap()[0]), SUM);
    let exe2 = compile(&client, 2).unwrap();
    let (a1, b1) = (upload(&client, &A, 1), upload(&client, &B, 1));
    let mut execution = exe2.execute_sharded_async(&[[&a, &b], [&a1, &b1]], &ExecuteOptions::new()).unwrap();
    let outputs = execution.wait_timeout(Duration::MAX).unwrap();
    assert!(outputs.iter().all(|o| device_values(&o[0]) == SUM));

    // The transfer manager: a piece past the real end is the plugin's to refuse; one inside is
    // refused for want of a done event.
    let manager = client
        .create_buffers_for_async_host_to_device(&[ShapeSpec::new(ElementType::F32, &[4])], Placement::Default)
        .unwrap();
    assert!(matches!(manager.transfer_data(0, &[0; 8], 12, false), Err(Error::Pjrt { .. })));
    invalid(manager.transfer_data(0, &[0; 8], 0, false));
    invalid(manager.transfer_literal(0, &f32_bytes(&A)));
    invalid(UserEvent::new(client.plugin()));

    assert!(fake.counter("null_events_returned") > 0);
    drop((a, b, a1, b1, pred, exe, exe2, pending, execution, outputs, manager, client));
    fake.assert_nothing_leaked();
}

// ---------------------------------------------------------------------------------------------
// Part 2: findings that real CPU plugins cannot reach

/// A closure run by the plugin (an event's on-ready callback, on a thread of the fake) that owns
/// the last `Client` and a buffer: both are destroyed, but not on the plugin's thread.
#[test]
fn handles_dropped_in_plugin_callbacks_are_destroyed_off_the_plugins_threads() {
    let fake = Fake::with_sidecar("late_ready", "working\nevent late 30ms for PJRT_Buffer_ReadyEvent");
    let client = client_of(&fake);
    let buffer = upload(&client, &A, 0);
    let event = buffer.ready_event().unwrap();
    let ran_on = Arc::new(Mutex::new(None));
    let on_ready = {
        let ran_on = ran_on.clone();
        event
            .on_ready(move |status| {
                *ran_on.lock().unwrap() = Some(os_thread_name());
                status.unwrap();
                drop(client);
                drop(buffer);
            })
            .unwrap()
    };
    drop(event);
    on_ready.wait().unwrap();
    let thread = ran_on.lock().unwrap().clone().unwrap_or_default();
    assert!(thread.starts_with("fake-pjrt"), "the callback ran on {thread:?}, not a thread of the fake");
    fake.settle();
    assert_eq!(fake.counter("clients_destroyed"), 1);
    assert_eq!(fake.counter("buffers_destroyed"), 1);
    assert_eq!(fake.counter("clients_destroyed_on_fake_threads"), 0);
    assert_eq!(fake.counter("buffers_destroyed_on_fake_threads"), 0);

    // A buffer alone (the client lives on in this thread).
    let client = client_of(&fake);
    let buffer = upload(&client, &B, 1);
    let event = buffer.ready_event().unwrap();
    let on_ready = event.on_ready(move |_| drop(buffer)).unwrap();
    drop(event);
    on_ready.wait().unwrap();
    fake.settle();
    assert_eq!(fake.counter("buffers_destroyed"), 2);
    assert_eq!(fake.counter("buffers_destroyed_on_fake_threads"), 0);
    assert!(fake.counter("callbacks_invoked") >= 2);
    drop(client);
    fake.assert_nothing_leaked();
    assert_eq!(fake.counter("clients_destroyed_on_fake_threads"), 0);
}

#[test]
fn waits_register_one_callback_and_duration_max_waits_without_limit() {
    let fake = Fake::with_sidecar("never_ready", "working\nevent never for PJRT_Buffer_ReadyEvent");
    let client = client_of(&fake);
    let buffer = upload(&client, &A, 0);
    let before = fake.counter("on_ready_calls");
    // The one callback registered on an event that never completes stays with the plugin, which
    // drops it uncalled when the event goes: its closure is leaked, deliberately (see
    // `watch_allocation`).
    let ((), _) = watch_allocation(0, || {
        let mut event = buffer.ready_event().unwrap();
        for _ in 0..100 {
            assert!(matches!(event.wait_timeout(Duration::from_millis(1)), Err(Error::Timeout { .. })));
        }
        for _ in 0..100 {
            assert!((&mut event).now_or_never().is_none());
        }
    });
    assert_eq!(fake.counter("on_ready_calls") - before, 1);
    assert_eq!(fake.counter("callbacks_dropped"), 1);

    // `Duration::MAX` means no limit (it used to overflow `Instant + Duration` and panic).
    fake.set_faults("event late 30ms");
    let event = buffer.ready_event().unwrap();
    event.wait_timeout(Duration::MAX).unwrap();
    let exe = compile(&client, 1).unwrap();
    let b = upload(&client, &B, 0);
    let mut pending = exe.execute_async(&[&buffer, &b], &ExecuteOptions::new()).unwrap();
    assert_eq!(pending.wait_timeout(Duration::MAX).unwrap()[0].to_vec::<f32>().unwrap(), SUM);
    let exe2 = compile(&client, 2).unwrap();
    let (a1, b1) = (upload(&client, &A, 1), upload(&client, &B, 1));
    let mut execution = exe2.execute_sharded_async(&[[&buffer, &b], [&a1, &b1]], &ExecuteOptions::new()).unwrap();
    execution.wait_timeout(Duration::MAX).unwrap();
    let on_ready = buffer.ready_event().unwrap().on_ready(|_| {}).unwrap();
    assert!(on_ready.wait_timeout(Duration::MAX).unwrap());
    let bytes = buffer.to_bytes_async(DownloadOptions::new()).unwrap().wait_timeout(Duration::MAX).unwrap();
    assert_eq!(bytes, f32_bytes(&A));
    drop((event, exe, exe2, b, a1, b1, pending, execution, buffer, client));
    fake.assert_nothing_leaked();
}

#[test]
fn a_kept_receive_stream_keeps_its_client() {
    let fake = Fake::new("working");
    let client = client_of(&fake);
    let exe = compile(&client, 1).unwrap();
    let (a, b) = (upload(&client, &A, 0), upload(&client, &B, 0));
    let kept: Arc<Mutex<Option<CopyToDeviceStream>>> = Arc::default();
    let options = {
        let kept = kept.clone();
        ExecuteOptions::new().on_recv(1, move |stream| {
            *kept.lock().unwrap() = Some(stream);
            Ok(())
        })
    };
    let out = exe.execute(&[&a, &b], &options).unwrap();
    assert_eq!(out[0].to_vec::<f32>().unwrap(), SUM);
    drop((out, a, b, exe, options, client));
    fake.settle();
    assert_eq!(fake.counter("clients_destroyed"), 0, "the stream still needs its client");

    let stream = kept.lock().unwrap().take().expect("the receive callback ran");
    assert_eq!(stream.total_bytes().unwrap(), 16);
    let done = stream.add_chunk(vec![1; 16]).unwrap().expect("the fake gives an event");
    done.wait().unwrap();
    assert_eq!(stream.current_bytes().unwrap(), 16);
    drop(stream);
    fake.settle();
    assert_eq!(fake.counter("streams_destroyed"), 1);
    assert_eq!(fake.counter("clients_destroyed"), 0, "the chunk's event still needs the client");
    drop(done);
    fake.settle();
    assert_eq!(fake.counter("clients_destroyed"), 1);
    fake.assert_nothing_leaked();
}

#[test]
fn a_control_dependency_keeps_its_client() {
    let fake = Fake::new("working");
    let client = client_of(&fake);
    let buffer = upload(&client, &A, 0);
    let (donated, dependency) = buffer.donate_with_control_dependency().unwrap();
    drop((donated, buffer, client));
    fake.settle();
    assert_eq!(fake.counter("clients_destroyed"), 0, "the dependency still needs its client");
    assert_eq!(fake.counter("dependencies_destroyed"), 0);
    dependency.ready();
    fake.settle();
    assert_eq!(fake.counter("dependencies_destroyed"), 1);
    assert_eq!(fake.counter("clients_destroyed"), 1);
    fake.assert_nothing_leaked();
}

/// Options holding a send callback (which owns `token`) and an execute context.
fn options_holding(token: &Arc<()>, context: &ExecuteContext) -> ExecuteOptions {
    let token = token.clone();
    ExecuteOptions::new().context(context).on_send(1, move |_chunk| {
        let _held = &token;
        Ok(())
    })
}

#[test]
fn a_failed_launch_keeps_its_context_until_the_client_goes_and_its_callbacks_while_their_options_live() {
    // (scenario, directives, whether the launch returns outputs)
    let cases = [
        ("working", "fail PJRT_LoadedExecutable_Execute", false),
        ("working", "null_output PJRT_LoadedExecutable_Execute", false),
        ("hostile_events", "", true),
    ];
    for (scenario, directives, succeeds) in cases {
        let fake = Fake::new(scenario);
        let client = client_of(&fake);
        let exe = compile(&client, 1).unwrap();
        let (a, b) = (upload(&client, &A, 0), upload(&client, &B, 0));
        let token = Arc::new(());
        let context = ExecuteContext::new(client.plugin()).unwrap();
        let options = options_holding(&token, &context);
        fake.set_faults(directives);
        let result = exe.execute(&[&a, &b], &options);
        assert_eq!(result.is_ok(), succeeds, "{scenario} {directives}: {result:?}");
        if let Ok(out) = &result {
            assert_eq!(device_values(&out[0]), SUM);
        }
        pjrt_client::flush_released();
        // Nothing says when the devices stop using them: the closure stays while its options do.
        assert_eq!(Arc::strong_count(&token), 2, "{scenario} {directives}: the callback was freed");
        drop((result, options, context));
        pjrt_client::flush_released();
        // ... and no longer: the client does not keep it (it may own the client: a cycle).
        assert_eq!(Arc::strong_count(&token), 1, "{scenario} {directives}: the client keeps the callback");
        // The context, which the plugin reaches itself, is kept until the client is destroyed.
        assert_eq!(fake.counter("execute_contexts_destroyed"), 0, "{scenario} {directives}");
        drop((exe, a, b, client));
        fake.settle();
        assert_eq!(fake.counter("clients_destroyed"), 1);
        assert_eq!(fake.counter("execute_contexts_destroyed"), 1, "{scenario} {directives}");
        fake.assert_nothing_leaked();
    }
}

#[test]
fn a_failed_launch_whose_callback_owns_the_client_lets_the_client_go() {
    for (scenario, directives) in [("working", "fail PJRT_LoadedExecutable_Execute"), ("hostile_events", "")] {
        let fake = Fake::new(scenario);
        let client = client_of(&fake);
        let exe = compile(&client, 1).unwrap();
        let (a, b) = (upload(&client, &A, 0), upload(&client, &B, 0));
        let owned = client.clone();
        let options = ExecuteOptions::new().on_send(1, move |_chunk| {
            let _held = &owned;
            Ok(())
        });
        fake.set_faults(directives);
        let result = exe.execute(&[&a, &b], &options);
        drop((result, options, exe, a, b, client));
        fake.settle();
        // It used to be kept by the client it owns: never destroyed.
        assert_eq!(fake.counter("clients_destroyed"), 1, "{scenario} {directives}: the client was never destroyed");
        fake.assert_nothing_leaked();
    }
}

#[test]
fn version_gates_stop_what_older_plugins_cannot_read() {
    // A view placed in a memory needs the `memory` field of the view args (0.66).
    for (minor, reaches) in [(65, false), (66, true)] {
        let fake = Fake::new(&format!("minor_{minor}"));
        let client = client_of(&fake);
        let memories = client.addressable_memories().unwrap();
        let host = A.to_vec();
        let deleted = Arc::new(AtomicBool::new(false));
        let on_delete = {
            let deleted = deleted.clone();
            Box::new(move || deleted.store(true, Ordering::SeqCst))
        };
        // SAFETY: `host` holds an f32[4] and outlives the view (dropped first).
        let view = unsafe {
            client.view_of_device_pointer(
                host.as_ptr() as *mut c_void,
                ElementType::F32,
                &[4],
                Placement::Memory(&memories[2]),
                Some(on_delete),
            )
        };
        if reaches {
            let view = view.unwrap();
            assert_eq!(view.memory().unwrap(), memories[2]);
            assert_eq!(fake.counter("view_calls"), 1);
            drop(view);
            assert!(deleted.load(Ordering::SeqCst));
        } else {
            assert!(unsupported(view).contains("memory"));
            assert_eq!(fake.counter("view_calls"), 0, "an 0.{minor} plugin has no memory field");
        }
        // A view on a device is fine on both.
        // SAFETY: as above.
        let on_device = unsafe {
            client.view_of_device_pointer(
                host.as_ptr() as *mut c_void,
                ElementType::F32,
                &[4],
                Placement::Default,
                None,
            )
        };
        drop(on_device.unwrap());
        drop(memories);
        drop(client);
        fake.assert_nothing_leaked();
    }

    // Inputs that must not be donated need `non_donatable_input_indices` (0.39).
    for (minor, reaches) in [(38, false), (39, true)] {
        let fake = Fake::new(&format!("minor_{minor}"));
        let client = client_of(&fake);
        let exe = compile(&client, 1).unwrap();
        let (a, b) = (upload(&client, &A, 0), upload(&client, &B, 0));
        let options = ExecuteOptions::new().non_donatable_inputs([0]);
        let result = exe.execute(&[&a, &b], &options);
        if reaches {
            assert_eq!(result.unwrap()[0].to_vec::<f32>().unwrap(), SUM);
            assert_eq!(fake.counter("execute_calls"), 1);
        } else {
            assert!(unsupported(result).contains("non_donatable"));
            assert_eq!(fake.counter("execute_calls"), 0, "an 0.{minor} plugin would donate anyway");
        }
        // Without the option, both run.
        assert_eq!(exe.execute(&[&a, &b], &ExecuteOptions::new()).unwrap()[0].to_vec::<f32>().unwrap(), SUM);
        drop((exe, a, b, client));
        fake.assert_nothing_leaked();
    }
}

#[test]
fn every_execute_variant_asks_for_major_to_minor_callback_chunks() {
    let fake = Fake::new("working");
    let client = client_of(&fake);
    let devices = client.devices();
    let exe = compile(&client, 1).unwrap();
    let exe2 = compile(&client, 2).unwrap();
    let (a, b) = (upload(&client, &A, 0), upload(&client, &B, 0));
    let (a1, b1) = (upload(&client, &A, 1), upload(&client, &B, 1));
    let callbacks = ExecuteOptions::new().on_send(2, |_| Ok(()));
    exe.execute(&[&a, &b], &ExecuteOptions::new()).unwrap();
    exe.execute(&[&a, &b], &ExecuteOptions::new()).unwrap();
    exe.execute(&[&a, &b], &callbacks).unwrap();
    exe.execute_async(&[&a, &b], &ExecuteOptions::new()).unwrap().wait().unwrap();
    exe.execute(&[&a, &b], &ExecuteOptions::new().device(&devices[0])).unwrap();
    exe2.execute_sharded_async(&[[&a, &b], [&a1, &b1]], &ExecuteOptions::new()).unwrap().wait().unwrap();
    exe2.execute_sharded_async(&[[&a, &b], [&a1, &b1]], &ExecuteOptions::new().launch_id(3)).unwrap().wait().unwrap();
    exe2.execute_sharded_async(&[[&a, &b], [&a1, &b1]], &callbacks).unwrap().wait().unwrap();
    assert_eq!(fake.counter("execute_calls"), 8);
    assert_eq!(fake.counter("executions_major_to_minor"), 8);
    drop(devices);
    drop((exe, exe2, a, b, a1, b1, callbacks, client));
    fake.assert_nothing_leaked();
}

/// Each upload and download path, with its slot's event NULL (`null_output`, or the
/// `hostile_events` scenario where the slot's fault would take something else away): the result
/// is the documented error, an owned destination is leaked, and nothing is read as done.
#[test]
fn null_completion_events_are_never_read_as_done() {
    let fake = Fake::new("working");
    let client = client_of(&fake);
    let odd = client.upload(&vec![5u8; ODD], &[ODD as i64]).unwrap();

    fake.set_faults("null_output PJRT_Buffer_ToHostBuffer");
    refused_and_leaked(watch_allocation(ODD, || odd.to_bytes(DownloadOptions::new())));
    refused_and_leaked(watch_allocation(ODD, || odd.to_vec::<u8>()));
    refused_and_leaked(watch_allocation(ODD, || odd.to_bytes_async(DownloadOptions::new().destination(vec![0; ODD]))));
    refused_and_leaked(watch_allocation(ODD, || odd.to_bytes_async(DownloadOptions::new())));
    // Borrowed: the buffer's ready event is waited for (here 50 ms late), then refused.
    fake.set_faults("null_output PJRT_Buffer_ToHostBuffer\nevent late 50ms for PJRT_Buffer_ReadyEvent");
    let start = Instant::now();
    invalid(odd.copy_to_slice(&mut vec![0u8; ODD]));
    assert!(start.elapsed() >= Duration::from_millis(45), "returned after {:?}", start.elapsed());
    invalid(odd.copy_to_slice(&mut vec![0u8; ODD]));

    fake.set_faults("null_output PJRT_Buffer_CopyRawToHost");
    refused_and_leaked(watch_allocation(ODD, || odd.to_bytes(DownloadOptions::new().raw(0, ODD))));
    refused_and_leaked(watch_allocation(ODD, || {
        odd.to_bytes_async(DownloadOptions::new().raw(0, ODD).destination(vec![0; ODD]))
    }));
    fake.set_faults("null_output PJRT_Buffer_CopyRawToHostFuture");
    invalid(odd.raw_copy_request(0, ODD));

    let manager = client
        .create_buffers_for_async_host_to_device(&[ShapeSpec::new(ElementType::U8, &[ODD as i64])], Placement::Default)
        .unwrap();
    fake.set_faults("null_output PJRT_AsyncHostToDeviceTransferManager_TransferData");
    refused_and_leaked(watch_allocation(ODD, || manager.transfer_data_async(0, vec![1u8; ODD], 0, false)));
    invalid(manager.transfer_data(0, &[1; 8], 8, false));
    let literal = client
        .create_buffers_for_async_host_to_device(&[ShapeSpec::new(ElementType::F32, &[4])], Placement::Default)
        .unwrap();
    fake.set_faults("null_output PJRT_AsyncHostToDeviceTransferManager_TransferLiteral");
    invalid(literal.transfer_literal(0, &f32_bytes(&A)));

    fake.set_faults("null_output PJRT_Buffer_ReadyEvent");
    invalid(odd.ready_event());
    fake.set_faults("null_output PJRT_Event_Create");
    invalid(UserEvent::new(client.plugin()));
    fake.set_faults("");
    assert_eq!(odd.to_vec::<u8>().unwrap(), vec![5u8; ODD], "the buffer is still fine");
    drop((odd, manager, literal, client));
    fake.assert_nothing_leaked();

    // The upload's done event (the upload's `null_output` takes the buffer instead).
    let fake = Fake::new("hostile_events");
    let client = client_of(&fake);
    let until_done = UploadOptions::new().semantics(HostBufferSemantics::CopyUntilTransferCompletes);
    invalid(client.upload_with(HostSource::bytes(&[1; ODD], ElementType::U8, &[ODD as i64]), &until_done));
    refused_and_leaked(watch_allocation(ODD, || {
        let source = HostSource::owned(vec![1u8; ODD], ElementType::U8, &[ODD as i64]).on_done(|_, _| {});
        client.upload_with(source, &UploadOptions::new())
    }));
    drop(client);
    fake.assert_nothing_leaked();
}

/// A copy whose event is pending while the plugin refuses both ways of waiting for it (`Await`
/// fails at once, `OnReady` fails): the destination is freed only once the copy is seen to be
/// over (here, by asking `IsReady` until it says so), and leaked when even that cannot be
/// asked. It used to be freed at once, while a real plugin could still write into it.
#[test]
fn a_copy_whose_end_cannot_be_awaited_never_frees_its_destination_early() {
    let fake = Fake::new("working");
    let client = client_of(&fake);
    let odd = client.upload(&vec![5u8; ODD], &[ODD as i64]).unwrap();
    let late = "event late 100ms for PJRT_Buffer_ToHostBuffer\nfail PJRT_Event_Await\nfail PJRT_Event_OnReady";
    let expect_await_failure = |result: pjrt_client::Result<Vec<u8>>| match result {
        Err(Error::Pjrt { function: "PJRT_Event_Await", .. }) => {}
        other => panic!("expected the injected Await failure, got {other:?}"),
    };

    // Owned destinations: freed only after the copy completed.
    fake.set_faults(late);
    let start = Instant::now();
    let (result, watched) = watch_allocation(ODD, || odd.to_bytes(DownloadOptions::new()));
    expect_await_failure(result);
    assert!(watched.allocated);
    assert!(watched.leaked() || start.elapsed() >= Duration::from_millis(95), "freed after {:?}", start.elapsed());
    fake.set_faults(late);
    let start = Instant::now();
    let (result, watched) = watch_allocation(ODD, || odd.to_bytes_async(DownloadOptions::new()).unwrap().wait());
    expect_await_failure(result);
    assert!(watched.leaked() || start.elapsed() >= Duration::from_millis(95), "freed after {:?}", start.elapsed());
    // Dropped without waiting: the same.
    fake.set_faults(late);
    let start = Instant::now();
    let ((), watched) = watch_allocation(ODD, || drop(odd.to_bytes_async(DownloadOptions::new()).unwrap()));
    assert!(watched.leaked() || start.elapsed() >= Duration::from_millis(95), "freed after {:?}", start.elapsed());

    // A borrowed destination cannot be leaked: the call returns only once the copy is over.
    fake.set_faults(late);
    let start = Instant::now();
    match odd.copy_to_slice(&mut vec![0u8; ODD]) {
        Err(Error::Pjrt { function: "PJRT_Event_Await", .. }) => {}
        other => panic!("expected the injected Await failure, got {other:?}"),
    }
    assert!(start.elapsed() >= Duration::from_millis(95), "returned after {:?}", start.elapsed());

    // Nothing tells when the copy ends (IsReady fails as well): the destination is leaked.
    fake.set_faults(&format!("{late}\nfail PJRT_Event_IsReady"));
    let (result, watched) = watch_allocation(ODD, || odd.to_bytes(DownloadOptions::new()));
    expect_await_failure(result);
    assert!(watched.leaked(), "{watched:?}");
    fake.set_faults(&format!("{late}\nfail PJRT_Event_IsReady"));
    let ((), watched) = watch_allocation(ODD, || drop(odd.to_bytes_async(DownloadOptions::new()).unwrap()));
    assert!(watched.leaked(), "{watched:?}");

    fake.set_faults("");
    drop((odd, client));
    fake.assert_nothing_leaked();
}
