//! What code run by the plugin (callbacks) and by the release thread may do, on both CPU
//! plugins ("Trust, round 2", findings 2 and 3 and the failed-launch cycle):
//!
//! - a call that waits for the plugin, made inside a plugin callback, is refused with
//!   `Error::BlockingInCallback` instead of hanging (the 0.106 plugin's workers parked in
//!   `PJRT_Event_Await` for good), while the non-blocking calls work there;
//! - `flush_released` called by a `Drop` that runs on the release thread returns, and the
//!   release thread goes on releasing;
//! - the closures of a failed launch no longer keep the client they capture alive forever.
//!
//! The deadlock tests run their scenario where a hang cannot stop the suite (a thread of their
//! own, or a child process) and fail after a generous bound: a deadlock detector, not a timing
//! assertion.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Weak};
use std::time::Duration;

use pjrt_client::{
    Client, CompileOptions, DownloadOptions, ElementType, Error, ExecuteOptions, HostSource, LoadedExecutable,
    Placement, Program, UploadOptions, UserEvent,
};

use crate::support;

/// How long a scenario may take before it counts as hung. Far above what any run takes (well
/// under a second), so only a deadlock reaches it.
const HUNG_AFTER: Duration = Duration::from_secs(60);

fn compile(client: &Client, options: &CompileOptions) -> LoadedExecutable {
    client.compile(&Program::mlir_text(support::ADD_F32).unwrap(), options).unwrap()
}

fn f32_bytes(values: [f32; 4]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_ne_bytes()).collect()
}

/// Runs `scenario` on a thread of its own and returns its result, or fails the test naming
/// `what` (and what `progress` says then) if it has not finished after [`HUNG_AFTER`] (the
/// thread is then left behind).
fn without_hanging<T: Send + 'static>(
    what: &str,
    progress: impl Fn() -> String,
    scenario: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (done, finished) = mpsc::channel();
    let runner = std::thread::spawn(move || {
        let _ = done.send(scenario());
    });
    match finished.recv_timeout(HUNG_AFTER) {
        Ok(result) => {
            runner.join().unwrap();
            result
        }
        // The scenario panicked: its own message says why.
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            std::panic::resume_unwind(runner.join().expect_err("the scenario ended without a result"))
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!(
                "{what}: not finished after {HUNG_AFTER:?} ({}): a deadlock (a wait inside a plugin callback?)",
                progress()
            )
        }
    }
}

fn refused_as<T: std::fmt::Debug>(result: Result<T, Error>, call: &str, context: &str) {
    match result {
        Err(Error::BlockingInCallback { call: refused, instead }) => {
            assert_eq!(refused, call, "{context}");
            assert!(!instead.is_empty(), "{context}: the error says what to do instead");
        }
        other => panic!("{context}: {call} inside a callback gave {other:?}, not Error::BlockingInCallback"),
    }
}

/// What one `on_done` callback saw.
struct Seen {
    execute: Result<Vec<f32>, Error>,
    to_vec: Result<Vec<f32>, Error>,
    event_wait: Result<(), Error>,
    on_ready_wait: Result<(), Error>,
    launched: Result<pjrt_client::PendingExecution, Error>,
}

#[test]
fn waiting_calls_inside_callbacks_are_refused_instead_of_hanging() {
    for name in support::PLUGINS {
        let executed = Arc::new(AtomicUsize::new(0));
        let counted = executed.clone();
        let progress = move || format!("{} of 8 on_done callbacks got past execute", counted.load(Ordering::SeqCst));
        let seen = without_hanging(&format!("{name}: eight uploads whose on_done executes"), progress, move || {
            let client = support::client(name, 1);
            let exe = Arc::new(compile(&client, &CompileOptions::new()));
            let x = Arc::new(client.upload(&[1f32, 2., 3., 4.], &[4]).unwrap());
            // Never set while the callbacks run: waiting for it could only end by a deadlock.
            let never = Arc::new(UserEvent::new(client.plugin()).unwrap());
            let tracked = Arc::new(never.event().on_ready(|_| ()).unwrap());
            let (tx, rx) = mpsc::channel();
            let mut uploads = Vec::new();
            for k in 0..8 {
                let (exe, x, never, tracked, tx) = (exe.clone(), x.clone(), never.clone(), tracked.clone(), tx.clone());
                let executed = executed.clone();
                let on_done = move |status: pjrt_client::Result<()>, _data| {
                    status.unwrap();
                    let execute = exe
                        .execute(&[&x, &x], &ExecuteOptions::new())
                        .map(|out| out[0].to_vec::<f32>().unwrap_or_default());
                    executed.fetch_add(1, Ordering::SeqCst);
                    let seen = Seen {
                        execute,
                        to_vec: x.to_vec::<f32>(),
                        event_wait: never.event().wait(),
                        on_ready_wait: tracked.wait(),
                        launched: exe.execute_async(&[&x, &x], &ExecuteOptions::new()),
                    };
                    tx.send(seen).unwrap();
                };
                let bytes = f32_bytes([k as f32; 4]);
                let source = HostSource::owned(bytes, ElementType::F32, &[4]).on_done(on_done);
                uploads.push(client.upload_with(source, &UploadOptions::new()).unwrap());
            }
            // Every on_done has run once all eight have sent what they saw.
            let seen: Vec<Seen> = (0..8).map(|_| rx.recv().unwrap()).collect();
            never.set_ok().unwrap();
            tracked.wait().unwrap();
            for (k, buffer) in uploads.into_iter().enumerate() {
                assert_eq!(buffer.to_vec::<f32>().unwrap(), [k as f32; 4]);
            }
            seen
        });
        assert_eq!(seen.len(), 8);
        for (k, seen) in seen.into_iter().enumerate() {
            let context = format!("{name}, upload {k}");
            refused_as(seen.execute, "LoadedExecutable::execute", &context);
            refused_as(seen.to_vec, "Buffer::to_vec", &context);
            refused_as(seen.event_wait, "Event::wait", &context);
            refused_as(seen.on_ready_wait, "OnReady::wait", &context);
            // The non-blocking launch works there; its result is waited for here.
            let outputs = seen.launched.unwrap_or_else(|e| panic!("{context}: execute_async: {e}")).wait().unwrap();
            assert_eq!(outputs[0].to_vec::<f32>().unwrap(), [2., 4., 6., 8.], "{context}");
        }
    }
}

#[test]
fn waits_for_what_has_completed_return_inside_callbacks() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let x = client.upload(&[1f32, 2., 3., 4.], &[4]).unwrap();
        // A copy, complete before its transfer is handed to a callback.
        let transfer = x.to_bytes_async(DownloadOptions::new()).unwrap();
        transfer.event().expect("both CPU plugins give an event").wait().unwrap();
        // The event's own callback runs once it has completed: waiting for it returns at once,
        // and so does waiting for the completed transfer.
        let ready = Arc::new(x.ready_event().unwrap());
        let inside = ready.clone();
        let (tx, rx) = mpsc::channel();
        let callback = ready
            .on_ready(move |status| {
                status.unwrap();
                tx.send((inside.wait(), transfer.wait())).unwrap();
            })
            .unwrap();
        let what = format!("{name}: waits for what is complete");
        let (event_wait, transfer_wait) = without_hanging(&what, String::new, move || {
            callback.wait().unwrap();
            rx.recv().unwrap()
        });
        event_wait.unwrap_or_else(|e| panic!("{name}: the wait for a completed event was refused: {e}"));
        let bytes = transfer_wait.unwrap_or_else(|e| panic!("{name}: the wait for a completed copy was refused: {e}"));
        assert_eq!(bytes, f32_bytes([1., 2., 3., 4.]), "{name}");
    }
}

/// Calls `flush_released` when dropped (as the docs suggest a closure's captures might), and
/// counts the drop.
struct FlushesOnDrop(Arc<AtomicUsize>);

impl Drop for FlushesOnDrop {
    fn drop(&mut self) {
        pjrt_client::flush_released();
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Launches with a send callback owning `probe` on an input that is not ready yet (an alias
/// buffer), drops the options, then fulfils the input: the launch's copy of the closure, the
/// last one, is then dropped on the release thread once the execution is over.
fn release_a_callback_owning(client: &Client, exe: &LoadedExecutable, probe: impl Send + 'static, name: &str) {
    let (alias, fulfiller) = client.create_alias_buffer(ElementType::F32, &[4], Placement::Default).unwrap();
    let options = ExecuteOptions::new().on_send(1, move |_| {
        let _ = &probe;
        Ok(())
    });
    let pending = exe.execute_async(&[&alias, &alias], &options).unwrap();
    drop(options);
    fulfiller.fulfill(&client.upload(&[1f32, 2., 3., 4.], &[4]).unwrap()).unwrap();
    assert_eq!(pending.wait().unwrap()[0].to_vec::<f32>().unwrap(), [2., 4., 6., 8.], "{name}");
}

/// The child of `flush_released_on_the_release_thread_returns_and_releasing_goes_on`.
#[test]
#[ignore = "run by flush_released_on_the_release_thread_returns_and_releasing_goes_on in a child process"]
fn child_flushes_on_the_release_thread() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let exe = compile(&client, &CompileOptions::new());
        let flushed = Arc::new(AtomicUsize::new(0));
        release_a_callback_owning(&client, &exe, FlushesOnDrop(flushed.clone()), name);
        support::wait_for("the closure that flushes to be dropped", || {
            pjrt_client::flush_released();
            flushed.load(Ordering::SeqCst) == 1
        });
        // The release thread goes on: a later flush returns, later values are dropped.
        let later = Arc::new(());
        release_a_callback_owning(&client, &exe, later.clone(), name);
        support::wait_for("a later closure to be dropped", || {
            pjrt_client::flush_released();
            Arc::strong_count(&later) == 1
        });
        pjrt_client::flush_released();
        assert_eq!(flushed.load(Ordering::SeqCst), 1, "{name}: dropped once");
        println!("CHILD-FLUSHED {name}");
    }
    println!("CHILD-DONE");
}

/// A `Drop` run by the release thread that calls `flush_released` used to wait for the release
/// thread, i.e. for itself, forever: nothing was released after it and every later flush hung.
/// A failure would stop the release thread of the whole process, so the scenario runs in a
/// child process (this test binary again), killed if it has not finished in time.
#[test]
fn flush_released_on_the_release_thread_returns_and_releasing_goes_on() {
    for name in support::PLUGINS {
        support::plugin(name); // installed before the child needs it
    }
    let stdout = support::run_child_test(
        "callback_threads::child_flushes_on_the_release_thread",
        &[],
        HUNG_AFTER,
        "flush_released waiting for the release thread on the release thread?",
    );
    for name in support::PLUGINS {
        assert!(stdout.contains(&format!("CHILD-FLUSHED {name}\n")), "{name}:\n{stdout}");
    }
}

#[test]
fn a_failed_launch_whose_callback_owns_the_client_lets_the_client_go() {
    for name in support::PLUGINS {
        let client = support::client(name, 2);
        let exe = compile(&client, &CompileOptions::new().compile_portable_executable(true));
        let device = client.addressable_devices()[1];
        let x = client
            .upload_with(HostSource::slice(&[1f32, 2., 3., 4.], &[4]), &UploadOptions::new().device(&device))
            .unwrap();
        let token = Arc::new(());
        let probe: Weak<()> = Arc::downgrade(&token);
        // The closure owns the client (and the token, which shows when the closure is gone).
        let owned = client.clone();
        let options = ExecuteOptions::new().on_send(1, move |_| {
            let _ = (&owned, &token);
            Ok(())
        });
        // Both CPU plugins refuse host callbacks with a chosen device: a failed launch.
        let e = exe.execute_async(&[&x, &x], &options.clone().device(&device)).unwrap_err();
        assert_eq!(e.code(), Some(pjrt_client::ErrorCode::Unimplemented), "{name}: {e}");
        drop((options, x, exe, client));
        pjrt_client::flush_released();
        assert!(
            probe.upgrade().is_none(),
            "{name}: the failed launch still holds the closure, and so the client it owns: they are never freed"
        );
    }
}
