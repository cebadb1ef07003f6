//! Regression tests for the soundness findings (no undefined behaviour, no abort and no silent
//! data loss from the safe API), on the real CPU plugins wherever a case reaches them.
//!
//! `tools/memcheck.sh` runs this module (the tests named `soundness::`) under valgrind on the
//! 0.115 plugin: the over-read and lifetime cases here must also be free of invalid reads and
//! writes.

use std::sync::Arc;

use pjrt_client::{
    AlignedHostBuffer, CompileOptions, DownloadOptions, ElementType, Error, ExecuteOptions, HostBufferSemantics,
    HostSource, Placement, Program, UploadOptions,
};

use crate::support;

fn upload(
    client: &pjrt_client::Client,
    data: &[u8],
    t: ElementType,
    dims: &[i64],
) -> pjrt_client::Result<pjrt_client::Buffer> {
    client.upload_with(HostSource::bytes(data, t, dims), &UploadOptions::new())
}

/// Sub-byte types are one element per byte on the host: S4[5] takes 5 bytes (not the 3 a packed
/// buffer has, which the plugin would read past) and comes back with exactly its values.
#[test]
fn odd_counts_of_sub_byte_types_round_trip_exactly() {
    let cases: [(ElementType, Vec<i8>); 4] = [
        (ElementType::S4, vec![-8, -1, 0, 5, 7]),
        (ElementType::U4, vec![0, 1, 9, 15, 3]),
        (ElementType::S2, vec![-2, -1, 1]),
        (ElementType::U2, vec![3, 0, 2, 1, 3, 3, 1]),
    ];
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        for (t, values) in &cases {
            let bytes: Vec<u8> = values.iter().map(|v| *v as u8).collect();
            let dims = [values.len() as i64];
            let buffer = upload(&client, &bytes, *t, &dims).unwrap_or_else(|e| panic!("{name}: {t}: {e}"));
            assert_eq!(buffer.host_size().unwrap(), values.len(), "{name}: {t}: one byte per element");
            let mut back = buffer.to_bytes(DownloadOptions::new()).unwrap();
            t.sign_extend_host_values(&mut back);
            let back: Vec<i8> = back.iter().map(|b| *b as i8).collect();
            assert_eq!(&back, values, "{name}: {t}");
            // The packed size is refused before the plugin could read past it.
            let packed = t.packed_bytes(values.len()).unwrap();
            let short = upload(&client, &bytes[..packed], *t, &dims);
            assert!(
                matches!(&short, Err(Error::InvalidArgument(m)) if m.contains("one byte per element")),
                "{name}: {t}: {short:?}"
            );
            // A byte with bits the type does not have is refused, not silently truncated.
            let mut bad = bytes.clone();
            bad[0] = 0x40;
            assert!(matches!(upload(&client, &bad, *t, &dims), Err(Error::InvalidArgument(_))), "{name}: {t}");
        }
    }
}

/// A PRED buffer holds whatever bytes it was given (the plugins pass them through); reading it as
/// `bool` maps them as numpy does (nonzero is true), so no `bool` ever holds another byte.
#[test]
fn pred_bytes_other_than_0_and_1_read_as_valid_bools() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let buffer = upload(&client, &[2, 1, 0, 255], ElementType::PRED, &[4]).unwrap();
        // The plugin keeps the bytes as they are...
        assert_eq!(buffer.to_bytes(DownloadOptions::new()).unwrap(), [2, 1, 0, 255], "{name}");
        // ...and every way of reading them as bool gives valid bools.
        let values = buffer.to_vec::<bool>().unwrap();
        assert_eq!(values, [true, true, false, true], "{name}");
        let mut slice = [false; 4];
        buffer.copy_to_slice(&mut slice).unwrap();
        assert_eq!(slice, [true, true, false, true], "{name}");
        // The bytes behind the bools are 0 or 1 (a bool holding 2 would be undefined behaviour).
        for b in values.iter().chain(&slice) {
            // SAFETY: reading the byte behind a bool (a valid, initialised byte).
            let byte: u8 = unsafe { (b as *const bool).cast::<u8>().read() };
            assert!(byte <= 1, "{name}: {byte}");
        }
        // The same through a bitcast from bytes.
        let raw = upload(&client, &[7, 0, 0, 0], ElementType::U8, &[4]).unwrap();
        let pred = raw.bitcast(ElementType::PRED, &[4]).unwrap();
        assert_eq!(pred.to_vec::<bool>().unwrap(), [true, false, false, false], "{name}");
    }
}

/// `CopyDuringCall` (`kImmutableOnlyDuringCall`) uploads return without a done event to wait
/// for: the plugin must have copied the data before returning. Checked: the source is
/// overwritten right after the upload, and the buffer still holds the original values.
#[test]
fn copy_during_call_copies_during_the_call() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        for len in [4usize, 1 << 16] {
            let mut data: Vec<f32> = (0..len).map(|i| i as f32).collect();
            let layout = UploadOptions::new().semantics(HostBufferSemantics::CopyDuringCall);
            // SAFETY: viewing f32s as bytes.
            let bytes = unsafe { std::slice::from_raw_parts(data.as_ptr() as *const u8, len * 4) };
            let buffer =
                client.upload_with(HostSource::bytes(bytes, ElementType::F32, &[len as i64]), &layout).unwrap();
            data.iter_mut().for_each(|x| *x = -1.);
            drop(data);
            let back = buffer.to_vec::<f32>().unwrap();
            assert!(back.iter().enumerate().all(|(i, x)| *x == i as f32), "{name}: {len}");
        }
    }
}

/// A zero-copy upload may read the caller's `Arc<AlignedHostBuffer>` in place; donating it to an
/// execution would write the result into memory the caller still shares. It is never donated.
#[test]
fn zero_copy_uploads_are_never_donated() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let exe = client.compile(&Program::mlir_text(support::DONATING).unwrap(), &CompileOptions::new()).unwrap();
        let host = Arc::new(AlignedHostBuffer::from_slice(&[1f32, 2., 3., 4.]).unwrap());
        let buffer =
            client.upload_with(HostSource::aligned(&host, ElementType::F32, &[4]), &UploadOptions::new()).unwrap();
        let out = exe.execute(&[&buffer], &ExecuteOptions::new()).unwrap();
        assert_eq!(out[0].to_vec::<f32>().unwrap(), [2., 4., 6., 8.], "{name}");
        assert!(!buffer.is_deleted().unwrap(), "{name}: not donated");
        assert_eq!(buffer.to_vec::<f32>().unwrap(), [1., 2., 3., 4.], "{name}");
        let expected: Vec<u8> = [1f32, 2., 3., 4.].iter().flat_map(|x| x.to_le_bytes()).collect();
        assert_eq!(host.as_bytes(), expected, "{name}: the caller's memory is unchanged");
    }
}

/// Objects of one plugin never reach another plugin's functions: a topology of the 0.115
/// plugin compiling with a client of the 0.106 plugin aborted the process
/// (`std::length_error`), and loading one plugin's executable on another's client was refused
/// only because the options happened not to parse.
#[test]
fn objects_of_another_plugin_are_refused_before_the_call() {
    let new = support::client("cpu", 1);
    let old = support::client("cpu-0.106", 1);
    let program = Program::mlir_text(support::ADD_F32).unwrap();
    let options = CompileOptions::new();
    let topology = new.topology().unwrap();
    let e = topology.compile(&program, &options, Some(&old)).unwrap_err();
    assert!(matches!(&e, Error::ForeignObject { what: "the client", .. }), "{e}");
    assert!(e.to_string().contains("fastatomstruct") && e.to_string().contains("lammps"), "names both plugins: {e}");
    // With its own plugin's client (or none) it compiles; that executable cannot be loaded on
    // the other plugin's client.
    let compiled = topology.compile(&program, &options, Some(&new)).unwrap();
    let e = old.load(&compiled, &options).unwrap_err();
    assert!(matches!(&e, Error::ForeignObject { what: "the executable", .. }), "{e}");
    let loaded = new.load(&compiled, &options).unwrap();
    let x = new.upload(&[1f32, 2., 3., 4.], &[4]).unwrap();
    assert_eq!(
        loaded.execute(&[&x, &x], &ExecuteOptions::new()).unwrap()[0].to_vec::<f32>().unwrap(),
        [2., 4., 6., 8.]
    );
    // Buffers of the other plugin are refused as arguments too; copies go through the host.
    let foreign = old.upload(&[1f32, 2., 3., 4.], &[4]).unwrap();
    assert!(matches!(loaded.execute(&[&x, &foreign], &ExecuteOptions::new()), Err(Error::InvalidArgument(_))));
    let copied = foreign.copy_to_client(&new, Placement::Default).unwrap();
    assert_eq!(
        loaded.execute(&[&x, &copied], &ExecuteOptions::new()).unwrap()[0].to_vec::<f32>().unwrap(),
        [2., 4., 6., 8.]
    );
}

/// A key-value store that records when it is dropped: the client owns its store and drops it
/// right after `PJRT_Client_Destroy`, so this tells when the client is gone.
struct DropProbe(Arc<std::sync::atomic::AtomicBool>);

impl Drop for DropProbe {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

impl pjrt_client::KeyValueStore for DropProbe {
    fn get(&self, key: &str, timeout: std::time::Duration) -> Result<Vec<u8>, pjrt_client::KvError> {
        Err(pjrt_client::KvError::deadline_exceeded(key, timeout))
    }
    fn try_get(&self, _key: &str) -> Result<Option<Vec<u8>>, pjrt_client::KvError> {
        Ok(None)
    }
    fn put(&self, _key: &str, _value: &[u8]) -> Result<(), pjrt_client::KvError> {
        Ok(())
    }
}

/// A `ControlDependency` holds the plugin's callback, which is valid only while the client is:
/// it keeps the client alive, so signalling it after every other handle is gone is fine (the
/// client used to be destroyed first, and the callback then ran on a destroyed client). The
/// 0.115 plugin implements donation with a control dependency (0.106 says UNIMPLEMENTED).
#[test]
fn a_control_dependency_keeps_its_client_alive() {
    let destroyed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let client = pjrt_client::Client::builder(&support::plugin("cpu"))
        .options(pjrt_client::ClientOptions::new().cpu_device_count(1))
        .kv_store(DropProbe(destroyed.clone()))
        .build()
        .unwrap();
    let source = client.upload(&[1f32, 2., 3., 4.], &[4]).unwrap();
    let (donated, dependency) = source.donate_with_control_dependency().unwrap();
    drop((source, donated, client));
    assert!(!destroyed.load(std::sync::atomic::Ordering::SeqCst), "the dependency keeps the client");
    dependency.ready();
    assert!(destroyed.load(std::sync::atomic::Ordering::SeqCst), "the client goes with the last handle");
}

/// `Duration::MAX` means "wait without a limit" everywhere a timeout is taken (it used to
/// panic adding it to `Instant::now()`).
#[test]
fn the_longest_timeout_waits_instead_of_panicking() {
    use std::time::Duration;
    let client = support::client("cpu", 2);
    let x = client.upload(&[1f32, 2., 3., 4.], &[4]).unwrap();
    x.ready_event().unwrap().wait_timeout(Duration::MAX).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let on_ready = x.ready_event().unwrap().on_ready(move |status| tx.send(status.is_ok()).unwrap()).unwrap();
    assert!(on_ready.wait_timeout(Duration::MAX).unwrap());
    assert!(rx.recv().unwrap());
    let exe = client.compile(&Program::mlir_text(support::ADD_F32).unwrap(), &CompileOptions::new()).unwrap();
    let mut pending = exe.execute_async(&[&x, &x], &ExecuteOptions::new()).unwrap();
    assert_eq!(pending.wait_timeout(Duration::MAX).unwrap()[0].to_vec::<f32>().unwrap(), [2., 4., 6., 8.]);
    let replicated =
        client.compile(&Program::mlir_text(support::ADD_F32).unwrap(), &CompileOptions::new().num_replicas(2)).unwrap();
    let devices = replicated.addressable_devices();
    let y = x.copy_to_device(&devices[1]).unwrap();
    let mut run = replicated.execute_sharded_async(&[[&x, &x], [&y, &y]], &ExecuteOptions::new()).unwrap();
    let outputs = run.wait_timeout(Duration::MAX).unwrap();
    let transfer = outputs[1][0].to_bytes_async(DownloadOptions::new()).unwrap();
    assert_eq!(transfer.wait_timeout(Duration::MAX).unwrap().len(), 16);
}

/// A 1024×1024 matrix product: big enough that the 0.115 CPU plugin, asked to be
/// `asynchronous`, runs it on its own threads (a small program runs inline in `Execute`), so a
/// callback registered on its completion runs on one of the plugin's threads.
const BIG_DOT: &str = r#"
module @big_dot {
  func.func public @main(%a: tensor<1024x1024xf32>) -> tensor<1024x1024xf32> {
    %0 = stablehlo.dot_general %a, %a, contracting_dims = [1] x [0] : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
    return %0 : tensor<1024x1024xf32>
  }
}"#;

/// The child of `the_last_client_dropped_by_a_callback_is_destroyed_outside_the_plugin`.
#[test]
#[ignore = "run by the_last_client_dropped_by_a_callback_is_destroyed_outside_the_plugin in a child process"]
fn child_drops_the_last_client_inside_a_callback() {
    // The 0.115 CPU plugin runs executions on its own threads when asked to (`asynchronous`);
    // otherwise `Execute` returns after the work and the callback runs inline, proving nothing.
    let client = pjrt_client::Client::new(
        &support::plugin("cpu"),
        &pjrt_client::ClientOptions::new().cpu_device_count(1).set("asynchronous", true),
    )
    .unwrap();
    let exe = client.compile(&Program::mlir_text(BIG_DOT).unwrap(), &CompileOptions::new()).unwrap();
    let n = client.upload(&vec![1f32; 1024 * 1024], &[1024, 1024]).unwrap();
    let mut run = exe.execute_sharded_async(&[[&n]], &ExecuteOptions::new()).unwrap();
    let outputs = run.take_outputs();
    let main_thread = std::thread::current().id();
    let (tx, rx) = std::sync::mpsc::channel();
    // The callback owns the last client (through the outputs and its own handle).
    let owned = client.clone();
    let _on_ready = run
        .events()
        .next()
        .unwrap()
        .on_ready(move |status| {
            // A download waits for the plugin: refused here, where it could wait for itself.
            let refused = matches!(outputs[0][0].to_vec::<f32>(), Err(pjrt_client::Error::BlockingInCallback { .. }));
            let on_plugin_thread = std::thread::current().id() != main_thread;
            drop(outputs);
            drop(owned);
            tx.send((status.is_ok(), refused, on_plugin_thread)).unwrap();
        })
        .unwrap();
    drop((run, exe, n, client));
    let (ok, refused, on_plugin_thread) = rx.recv().unwrap();
    assert!(ok);
    assert!(refused, "to_vec inside the callback was not refused");
    pjrt_client::flush_released();
    println!("CHILD-DONE on_plugin_thread={on_plugin_thread}");
}

/// A closure run by the plugin that owns the last `Client` would destroy the client from
/// inside the plugin's own worker thread (whose pool the client's destructor joins). The
/// client is destroyed on the library's release thread instead. Run in a child process, with
/// a time limit, so that a regression (a hang or an abort) fails this test instead of the run.
#[test]
fn the_last_client_dropped_by_a_callback_is_destroyed_outside_the_plugin() {
    {
        let name = "cpu";
        support::plugin(name); // installed before the child needs it

        let stdout = support::run_child_test(
            "soundness::child_drops_the_last_client_inside_a_callback",
            &[],
            std::time::Duration::from_secs(120),
            "a client destroyed from inside the plugin?",
        );
        assert!(stdout.contains("on_plugin_thread=true"), "{name}: the callback ran inline: BIG_DOT ran synchronously");
    }
}
