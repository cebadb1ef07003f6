//! Execute options on every execute path (issue 13, item 2) and Rust values owned by an execute
//! context for FFI handlers (item 8c), on both CPU plugins.
//!
//! The paths: `execute` with `ExecuteOptions::device` (portable and single-device executables),
//! the non-blocking `execute_async` (with and without a device), and `execute_sharded` /
//! `execute_sharded_async` (taken device by device with `into_per_device`). Both CPU plugins have `PJRT_ExecuteContext_Create` (0.52) and read
//! `PJRT_ExecuteOptions.context` (0.64), so contexts work on both.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use pjrt_client::{
    Buffer, Client, CompileOptions, Device, Error, ExecuteContext, ExecuteOptions, HostSource, LoadedExecutable,
    Program, UploadOptions,
};

use crate::support;

fn compile(client: &Client, source: &str, options: &CompileOptions) -> LoadedExecutable {
    client.compile(&Program::mlir_text(source).unwrap(), options).unwrap()
}

fn upload_to(client: &Client, device: &Device<'_>, values: [f32; 4]) -> Buffer {
    client.upload_with(HostSource::slice(&values, &[4]), &UploadOptions::new().device(device)).unwrap()
}

fn portable() -> CompileOptions {
    CompileOptions::new().compile_portable_executable(true)
}

/// The names of the threads something was dropped on.
type DropThreads = Arc<Mutex<Vec<Option<String>>>>;

/// Drops count themselves and record the thread they were dropped on.
struct DropProbe {
    drops: Arc<AtomicUsize>,
    threads: DropThreads,
}

impl DropProbe {
    fn new() -> (DropProbe, Arc<AtomicUsize>, DropThreads) {
        let (drops, threads) = (Arc::new(AtomicUsize::new(0)), Arc::new(Mutex::new(Vec::new())));
        (DropProbe { drops: drops.clone(), threads: threads.clone() }, drops, threads)
    }
}

impl Drop for DropProbe {
    fn drop(&mut self) {
        self.threads.lock().unwrap().push(std::thread::current().name().map(str::to_owned));
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

/// The drops happened on the test's own thread or on the crate's release thread, never on a
/// thread of the plugin.
fn dropped_outside_the_plugin(threads: &Mutex<Vec<Option<String>>>, name: &str) {
    let test_thread = std::thread::current().name().map(str::to_owned);
    for thread in threads.lock().unwrap().iter() {
        assert!(
            *thread == test_thread || thread.as_deref() == Some("pjrt-release"),
            "{name}: dropped on {thread:?}, a plugin thread"
        );
    }
}

#[test]
fn execute_on_with_options_on_portable_and_single_device_executables() {
    for name in support::PLUGINS {
        let client = support::client(name, 2);
        let device = client.addressable_devices()[1];
        let context = ExecuteContext::new(client.plugin()).unwrap();

        // Portable, on a device chosen at launch: launch id, context, non-donatable input.
        let exe = compile(&client, support::DONATING, &portable());
        let x = upload_to(&client, &device, [1., 2., 3., 4.]);
        let options = ExecuteOptions::new().launch_id(11).non_donatable_inputs([0]).context(&context);
        for _ in 0..2 {
            let out = exe.execute(&[&x], &options.clone().device(&device)).unwrap();
            assert_eq!(out[0].to_vec::<f32>().unwrap(), [2., 4., 6., 8.], "{name}");
            assert_eq!(out[0].device().unwrap().id().unwrap(), device.id().unwrap(), "{name}: ran where asked");
        }
        assert!(!x.is_deleted().unwrap(), "{name}: listed as non-donatable, kept");
        // Without the option the plugin donates it: the options reached the plugin.
        let out = exe.execute(&[&x], &ExecuteOptions::new().launch_id(12).device(&device)).unwrap();
        assert_eq!(out[0].to_vec::<f32>().unwrap(), [2., 4., 6., 8.], "{name}");
        assert!(x.is_deleted().unwrap(), "{name}: donated");

        // A single-device executable on its own device.
        let single = compile(&client, support::ADD_F32, &CompileOptions::new());
        let own = single.addressable_devices()[0];
        let a = upload_to(&client, &own, [1., 2., 3., 4.]);
        let out = single.execute(&[&a, &a], &options.clone().device(&own)).unwrap();
        assert_eq!(out[0].to_vec::<f32>().unwrap(), [2., 4., 6., 8.], "{name}");

        // Refused before the plugin: an index beyond the arguments, a device or a context of
        // another client or plugin.
        let e = exe.execute(&[&a], &ExecuteOptions::new().non_donatable_inputs([1]).device(&device)).unwrap_err();
        assert!(matches!(&e, Error::InvalidArgument(m) if m.contains("non-donatable input 1")), "{name}: {e}");
        let other_client = support::client(name, 1);
        let foreign_device = other_client.addressable_devices()[0];
        let e = exe.execute(&[&a], &ExecuteOptions::new().device(&foreign_device)).unwrap_err();
        assert!(matches!(&e, Error::InvalidArgument(m) if m.contains("another client")), "{name}: {e}");
        let other_plugin = support::plugin(if *name == "cpu" { "cpu-0.106" } else { "cpu" });
        let foreign_context = ExecuteContext::new(&other_plugin).unwrap();
        let e = exe.execute(&[&a], &ExecuteOptions::new().context(&foreign_context).device(&own)).unwrap_err();
        assert!(matches!(&e, Error::ForeignObject { what: "the execute context", .. }), "{name}: {e}");
    }
}

#[test]
fn non_blocking_execute_on_and_execute_async_with() {
    for name in support::PLUGINS {
        let client = support::client(name, 2);
        let exe = compile(&client, support::ADD_F32, &portable());
        let devices = client.addressable_devices();

        // Launches on both devices in flight together, then awaited.
        let inputs: Vec<Buffer> =
            devices.iter().enumerate().map(|(k, d)| upload_to(&client, d, [k as f32, 1., 2., 3.])).collect();
        let mut pending = Vec::new();
        for (device, x) in devices.iter().zip(&inputs) {
            pending.push(exe.execute_async(&[x, x], &ExecuteOptions::new().device(device)).unwrap());
            let options = ExecuteOptions::new().launch_id(3);
            pending.push(exe.execute_async(&[x, x], &options.clone().device(device)).unwrap());
        }
        let results: Vec<Vec<f32>> = futures::executor::block_on(async {
            let mut results = Vec::new();
            for execution in pending {
                results.push(execution.await.unwrap()[0].to_vec::<f32>().unwrap());
            }
            results
        });
        assert_eq!(results, [[0., 2., 4., 6.], [0., 2., 4., 6.], [2., 2., 4., 6.], [2., 2., 4., 6.]], "{name}");

        // execute_async with options on a single-device, donating program: the option keeps the input.
        let donating = compile(&client, support::DONATING, &CompileOptions::new());
        let x = upload_to(&client, &donating.addressable_devices()[0], [1., 2., 3., 4.]);
        let keep = ExecuteOptions::new().non_donatable_inputs([0]);
        let pending: Vec<_> = (0..3).map(|_| donating.execute_async(&[&x], &keep).unwrap()).collect();
        for execution in pending {
            assert_eq!(execution.wait().unwrap()[0].to_vec::<f32>().unwrap(), [2., 4., 6., 8.], "{name}");
        }
        assert!(!x.is_deleted().unwrap(), "{name}");

        // A portable executable needs a device: the error names ExecuteOptions::device.
        let e = exe.execute_async(&[&x, &x], &ExecuteOptions::new()).unwrap_err();
        assert!(matches!(&e, Error::InvalidArgument(m) if m.contains("ExecuteOptions::device")), "{name}: {e}");
    }
}

#[test]
fn sharded_async_gives_one_pending_execution_per_device() {
    for name in support::PLUGINS {
        let client = support::client(name, 2);
        let context = ExecuteContext::new(client.plugin()).unwrap();
        let exe = compile(&client, support::DONATING, &CompileOptions::new().num_replicas(2));
        let devices = exe.addressable_devices();
        let inputs: Vec<Buffer> =
            devices.iter().enumerate().map(|(k, d)| upload_to(&client, d, [k as f32, 1., 1., 1.])).collect();
        let arguments: Vec<[&Buffer; 1]> = inputs.iter().map(|x| [x]).collect();
        let options = ExecuteOptions::new().launch_id(21).non_donatable_inputs([0]).context(&context);

        let pending = exe.execute_sharded_async(&arguments, &options).unwrap().into_per_device();
        assert_eq!(pending.len(), 2, "{name}");
        // Taken device by device, in reverse: each holds its own device's outputs.
        for (k, execution) in pending.into_iter().enumerate().rev() {
            let outputs = execution.wait().unwrap();
            assert_eq!(outputs[0].to_vec::<f32>().unwrap(), [2. * k as f32, 2., 2., 2.], "{name}: device {k}");
            assert_eq!(outputs[0].device().unwrap().id().unwrap(), devices[k].id().unwrap(), "{name}");
        }
        assert!(inputs.iter().all(|x| !x.is_deleted().unwrap()), "{name}: kept");

        // The blocking sharded form with the same options, then without: donated.
        exe.execute_sharded(&arguments, &options).unwrap();
        assert!(inputs.iter().all(|x| !x.is_deleted().unwrap()), "{name}");
        let pending = exe.execute_sharded_async(&arguments, &ExecuteOptions::new()).unwrap();
        for execution in pending.into_per_device() {
            execution.wait().unwrap();
        }
        assert!(inputs.iter().all(|x| x.is_deleted().unwrap()), "{name}: donated without the option");

        // Wrong list counts are refused before the plugin.
        let e = exe.execute_sharded_async(&arguments[..1], &options).unwrap_err();
        assert!(matches!(&e, Error::InvalidArgument(m) if m.contains("one argument list per device")), "{name}: {e}");
    }
}

#[test]
fn callbacks_outlive_non_blocking_launches_and_are_dropped_outside_the_plugin() {
    for name in support::PLUGINS {
        let client = support::client(name, 2);
        let single = compile(&client, support::ADD_F32, &CompileOptions::new());
        let replicated = compile(&client, support::ADD_F32, &CompileOptions::new().num_replicas(2));
        let devices = replicated.addressable_devices();
        let inputs: Vec<Buffer> = devices.iter().map(|d| upload_to(&client, d, [1., 2., 3., 4.])).collect();
        let (probe, drops, threads) = DropProbe::new();
        let options = ExecuteOptions::new().on_send(1, move |_| {
            let _ = &probe;
            Ok(())
        });
        // Pending executions dropped at once, on the non-blocking paths: what the plugin was
        // given stays alive until each launch completes.
        for _ in 0..4 {
            drop(single.execute_async(&[&inputs[0], &inputs[0]], &options).unwrap());
            let arguments = [[&inputs[0], &inputs[0]], [&inputs[1], &inputs[1]]];
            drop(replicated.execute_sharded_async(&arguments, &options).unwrap());
        }
        let last = single.execute_async(&[&inputs[0], &inputs[0]], &options).unwrap();
        assert_eq!(last.wait().unwrap()[0].to_vec::<f32>().unwrap(), [2., 4., 6., 8.], "{name}");
        assert_eq!(drops.load(Ordering::SeqCst), 0, "{name}: the options still hold the closure");
        drop(options);
        support::wait_for("the launches to release the callbacks", || {
            pjrt_client::flush_released();
            drops.load(Ordering::SeqCst) == 1
        });
        pjrt_client::flush_released();
        assert_eq!(drops.load(Ordering::SeqCst), 1, "{name}: dropped exactly once");
        dropped_outside_the_plugin(&threads, name);

        // With a chosen device (`execute_device`) both plugins refuse host callbacks; the
        // closure the failed launch was given lives on with its options (the client keeps only
        // what the plugin reaches), then is dropped once.
        let portable_exe = compile(&client, support::ADD_F32, &portable());
        let (probe, drops, threads) = DropProbe::new();
        let options = ExecuteOptions::new().on_send(1, move |_| {
            let _ = &probe;
            Ok(())
        });
        for device in [&devices[1], &single.addressable_devices()[0]] {
            let x = upload_to(&client, device, [1., 2., 3., 4.]);
            let e = portable_exe.execute_async(&[&x, &x], &options.clone().device(device)).unwrap_err();
            assert_eq!(e.code(), Some(pjrt_client::ErrorCode::Unimplemented), "{name}: {e}");
            assert!(e.to_string().contains("execute_device"), "{name}: {e}");
        }
        drop(devices);
        drop((options, portable_exe, single, replicated, inputs, client));
        pjrt_client::flush_released();
        assert_eq!(drops.load(Ordering::SeqCst), 1, "{name}: dropped exactly once, with the client");
        dropped_outside_the_plugin(&threads, name);
    }
}

#[test]
fn owned_user_data_reaches_the_plugin_and_is_dropped_once_after_the_context() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let plugin = client.plugin();
        let ffi = plugin.ffi_extension().expect("both CPU plugins have the FFI extension");
        let suffix = name.replace('-', "_");
        let probe_type =
            ffi.register_user_data_type::<DropProbe>(&format!("execute_everywhere::Probe_{suffix}")).unwrap();
        assert!(probe_type.id() > 0, "{name}");
        let number_type = ffi.register_user_data_type::<u64>(&format!("execute_everywhere::U64_{suffix}")).unwrap();
        assert_ne!(probe_type.id(), number_type.id(), "{name}");
        // The name is taken: registering it again is the plugin's error, not a second deleter.
        let e = ffi.register_user_data_type::<u64>(&format!("execute_everywhere::U64_{suffix}")).unwrap_err();
        assert!(matches!(e, Error::Pjrt { .. }), "{name}: {e}");

        // Dropped with the context alone.
        let (probe, drops, threads) = DropProbe::new();
        let context = ExecuteContext::new(plugin).unwrap();
        ffi.add_owned_user_data(&context, probe_type, probe).unwrap();
        ffi.add_owned_user_data(&context, number_type, 7).unwrap();
        pjrt_client::flush_released();
        assert_eq!(drops.load(Ordering::SeqCst), 0, "{name}: owned by the live context");
        drop(context);
        pjrt_client::flush_released();
        assert_eq!(drops.load(Ordering::SeqCst), 1, "{name}: dropped once, with the context");
        dropped_outside_the_plugin(&threads, name);

        // Carried by executions: the context (and its data) outlives the caller's handle until
        // the launches complete.
        let exe = compile(&client, support::ADD_F32, &CompileOptions::new());
        let device = exe.addressable_devices()[0];
        let a = upload_to(&client, &device, [1., 2., 3., 4.]);
        let (probe, drops, threads) = DropProbe::new();
        let context = ExecuteContext::new(plugin).unwrap();
        ffi.add_owned_user_data(&context, probe_type, probe).unwrap();
        // A second value of the same type is refused by the plugin; it is still dropped once.
        let (second, second_drops, _) = DropProbe::new();
        let e = ffi.add_owned_user_data(&context, probe_type, second).unwrap_err();
        assert!(matches!(e, Error::Pjrt { .. }), "{name}: {e}");
        let options = ExecuteOptions::new().context(&context);
        let pending = exe.execute_async(&[&a, &a], &options.clone().device(&device)).unwrap();
        drop((context, options));
        assert_eq!(pending.wait().unwrap()[0].to_vec::<f32>().unwrap(), [2., 4., 6., 8.], "{name}");
        support::wait_for("the execution to release the context", || {
            pjrt_client::flush_released();
            drops.load(Ordering::SeqCst) == 1
        });
        pjrt_client::flush_released();
        assert_eq!(drops.load(Ordering::SeqCst), 1, "{name}: dropped exactly once");
        assert_eq!(second_drops.load(Ordering::SeqCst), 1, "{name}: the refused value too");
        dropped_outside_the_plugin(&threads, name);

        // A context of another plugin is refused before anything is adopted.
        let other = support::plugin(if *name == "cpu" { "cpu-0.106" } else { "cpu" });
        let foreign = ExecuteContext::new(&other).unwrap();
        let (probe, drops, _) = DropProbe::new();
        let e = ffi.add_owned_user_data(&foreign, probe_type, probe).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{name}: {e}");
        assert_eq!(drops.load(Ordering::SeqCst), 1, "{name}: given back (dropped) at once");
    }
}

/// A plugin older than an option (the fake plugin claiming 0.60, before
/// `PJRT_ExecuteOptions.context` at 0.64, or 0.38, before the non-donatable inputs at 0.39)
/// would not read it: every path refuses the option with the typed error, before the plugin.
#[test]
fn options_newer_than_the_plugin_are_refused_on_every_path() {
    use crate::fake_support::{self, Fake};
    use pjrt_client::ClientOptions;

    for (scenario, feature, since) in [
        ("minor_60", "PJRT_ExecuteOptions.context", 64),
        ("minor_38", "PJRT_ExecuteOptions.non_donatable_input_indices", 39),
    ] {
        let fake = Fake::new(scenario);
        let plugin = fake.plugin();
        {
            let client = Client::new(&plugin, &ClientOptions::new()).unwrap();
            let exe = fake_support::compile(&client, 1).unwrap();
            let device = exe.addressable_devices()[0];
            let a = upload_to(&client, &device, [1., 2., 3., 4.]);
            let options = if since == 64 {
                // ExecuteContext_Create itself is older (0.52): the context exists, only the
                // option to pass it does not.
                ExecuteOptions::new().context(&ExecuteContext::new(&plugin).unwrap())
            } else {
                let e = ExecuteContext::new(&plugin).unwrap_err();
                assert!(matches!(e, Error::Unsupported { function: "PJRT_ExecuteContext_Create", .. }), "{e}");
                ExecuteOptions::new().non_donatable_inputs([0])
            };
            let refused = |result: pjrt_client::Result<()>, path: &str| match result {
                Err(Error::Unsupported { function, since_minor, .. }) => {
                    assert_eq!((function, since_minor), (feature, since), "{scenario}: {path}")
                }
                other => panic!("{scenario}: {path}: expected Unsupported, got {other:?}"),
            };
            refused(exe.execute(&[&a, &a], &options).map(drop), "execute");
            refused(exe.execute_async(&[&a, &a], &options).map(drop), "execute_async");
            refused(exe.execute(&[&a, &a], &options.clone().device(&device)).map(drop), "execute with a device");
            refused(
                exe.execute_async(&[&a, &a], &options.clone().device(&device)).map(drop),
                "execute_async with a device",
            );
            refused(exe.execute_sharded(&[[&a, &a]], &options).map(drop), "execute_sharded");
            refused(exe.execute_sharded_async(&[[&a, &a]], &options).map(drop), "execute_sharded_async");
            // Without the option, every path runs.
            let plain = ExecuteOptions::new().launch_id(1);
            assert_eq!(exe.execute(&[&a, &a], &plain.clone().device(&device)).unwrap().len(), 1, "{scenario}");
            assert_eq!(
                exe.execute_async(&[&a, &a], &ExecuteOptions::new().device(&device)).unwrap().wait().unwrap().len(),
                1,
                "{scenario}"
            );
            for pending in exe.execute_sharded_async(&[[&a, &a]], &plain).unwrap().into_per_device() {
                pending.wait().unwrap();
            }
        }
        fake.assert_nothing_leaked();
    }
}

#[test]
fn call_location_and_task_incarnations_reach_every_path() {
    for name in support::PLUGINS {
        let client = support::client(name, 2);
        let device = client.addressable_devices()[1];
        let exe = compile(&client, support::ADD_F32, &portable());
        let a = upload_to(&client, &device, [1., 2., 3., 4.]);
        let options =
            ExecuteOptions::new().call_location("execute_everywhere.rs:1").task_incarnations([(0, 7), (1, 3), (0, 8)]);
        let debug = format!("{options:?}");
        assert!(debug.contains("[(0, 8), (1, 3)]"), "a task given twice keeps its last incarnation: {debug}");
        let sum = exe.execute(&[&a, &a], &options.clone().device(&device)).unwrap();
        assert_eq!(sum[0].to_vec::<f32>().unwrap(), [2., 4., 6., 8.], "{name}");
        let pending = exe.execute_async(&[&a, &a], &options.clone().device(&device)).unwrap();
        assert_eq!(pending.wait().unwrap()[0].to_vec::<f32>().unwrap(), [2., 4., 6., 8.], "{name}");
        let bad = ExecuteOptions::new().call_location("a\0b");
        let e = exe.execute(&[&a, &a], &bad.clone().device(&device)).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }) && e.to_string().contains("NUL"), "{name}: {e}");
    }
}

#[test]
fn call_location_and_task_incarnations_are_refused_by_older_plugins() {
    use crate::fake_support::{self, Fake};
    use pjrt_client::ClientOptions;

    let fake = Fake::new("minor_60");
    let plugin = fake.plugin();
    {
        let client = Client::new(&plugin, &ClientOptions::new()).unwrap();
        let exe = fake_support::compile(&client, 1).unwrap();
        let device = exe.addressable_devices()[0];
        let a = upload_to(&client, &device, [1., 2., 3., 4.]);
        for (options, feature, since) in [
            (ExecuteOptions::new().call_location("here"), "PJRT_ExecuteOptions.call_location", 76),
            (ExecuteOptions::new().task_incarnations([(0, 1)]), "PJRT_ExecuteOptions.task_ids", 78),
        ] {
            match exe.execute(&[&a, &a], &options) {
                Err(Error::Unsupported { function, since_minor, .. }) => {
                    assert_eq!((function, since_minor), (feature, since))
                }
                other => panic!("{feature}: expected Unsupported, got {other:?}"),
            }
        }
    }
    fake.assert_nothing_leaked();
}
