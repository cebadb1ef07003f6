//! The optimised program and execute options (launch id, non-donatable inputs), on both CPU
//! plugins.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use pjrt_client::{Client, CompileOptions, Error, ExecuteOptions, LoadedExecutable, Placement, Program};

fn compile(client: &Client, source: &str, options: &CompileOptions) -> LoadedExecutable {
    client.compile(&Program::mlir_text(source).unwrap(), options).unwrap()
}

fn add(client: &Client) -> LoadedExecutable {
    compile(client, support::ADD_F32, &CompileOptions::new())
}

fn upload(client: &Client, values: [f32; 4]) -> pjrt_client::Buffer {
    client.buffer_from_slice(&values, &[4], Placement::Default).unwrap()
}

#[test]
fn optimized_program_is_hlo_with_config() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let exe = add(&client);
        let program = exe.optimized_program().unwrap();
        assert_eq!(program.format, "hlo_with_config", "{name}");
        assert!(program.code.len() > 500, "{name}: {} bytes", program.code.len());
        // The same bytes give the parameter shapes used to check arguments.
        assert_eq!(exe.parameter_shapes().unwrap().iter().map(|s| s.to_string()).collect::<Vec<_>>(), ["f32[4]"; 2]);
    }
}

/// A program that may donate its first argument (aliased to its output).
const DONATING_ADD: &str = r#"
module @donating_add {
  func.func public @main(%a: tensor<4xf32> {tf.aliasing_output = 0 : i32}, %b: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %a, %b : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}"#;

#[test]
fn inputs_are_donated_per_the_program_unless_listed_as_non_donatable() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let exe = compile(&client, DONATING_ADD, &CompileOptions::new());
        let b = upload(&client, [10., 20., 30., 40.]);

        // Plain execute, and execute_with default options: the aliased input is consumed.
        for options in [None, Some(ExecuteOptions::new())] {
            let a = upload(&client, [1., 2., 3., 4.]);
            let out = match &options {
                None => exe.execute(&[&a, &b]).unwrap(),
                Some(options) => exe.execute_with(&[&a, &b], options).unwrap(),
            };
            assert_eq!(out[0].to_vec::<f32>().unwrap(), [11., 22., 33., 44.]);
            assert!(a.is_deleted().unwrap(), "{name}: the donated input is gone");
        }

        // Listed as non-donatable: kept, and still readable.
        let a = upload(&client, [1., 2., 3., 4.]);
        let keep = ExecuteOptions::new().non_donatable_inputs([0]);
        for _ in 0..2 {
            let out = exe.execute_with(&[&a, &b], &keep).unwrap();
            assert_eq!(out[0].to_vec::<f32>().unwrap(), [11., 22., 33., 44.]);
        }
        assert!(!a.is_deleted().unwrap(), "{name}");
        assert_eq!(a.to_vec::<f32>().unwrap(), [1., 2., 3., 4.]);

        // An index beyond the arguments is refused before the plugin.
        let e = exe.execute_with(&[&a, &b], &ExecuteOptions::new().non_donatable_inputs([2])).unwrap_err();
        assert!(matches!(&e, Error::InvalidArgument(m) if m.contains("non-donatable input 2")), "{e}");
    }
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn options_state_is_released_once_every_device_completed() {
    for name in support::PLUGINS {
        let client = support::client(name, 2);
        let replicated = compile(&client, support::ADD_F32, &CompileOptions::new().num_replicas(2));
        let devices = replicated.addressable_devices();
        let a = upload(&client, [1., 2., 3., 4.]);
        let a1 = a.copy_to_device(&devices[1]).unwrap();
        let token = Arc::new(());
        let held = token.clone();
        let options = ExecuteOptions::new().on_send(1, move |_| {
            let _ = &held;
            Ok(())
        });
        for _ in 0..5 {
            // Dropped at once: the launch keeps what the plugin was given until it completes.
            drop(replicated.execute_sharded_with(&[[&a, &a], [&a1, &a1]], &options).unwrap());
        }
        let run = replicated.execute_sharded_with(&[[&a, &a], [&a1, &a1]], &options).unwrap();
        run.wait().unwrap();
        assert_eq!(run.outputs[1][0].to_vec::<f32>().unwrap(), [2., 4., 6., 8.]);
        // Once the options are gone and every launch has completed, the closure is freed.
        assert!(Arc::strong_count(&token) >= 2);
        drop(options);
        wait_for("the launches to release the callbacks", || Arc::strong_count(&token) == 1);
    }
}

#[test]
fn launch_ids() {
    for name in support::PLUGINS {
        let client = support::client(name, 2);
        let options = ExecuteOptions::new().launch_id(42);
        let (a, b) = (upload(&client, [1., 2., 3., 4.]), upload(&client, [10., 20., 30., 40.]));
        let exe = add(&client);
        for _ in 0..3 {
            assert_eq!(
                exe.execute_with(&[&a, &b], &options).unwrap()[0].to_vec::<f32>().unwrap(),
                [11., 22., 33., 44.]
            );
        }
        // Two replicas, sharded: every device gets the options.
        let replicated = compile(&client, support::ADD_F32, &CompileOptions::new().num_replicas(2));
        let devices = replicated.addressable_devices();
        let (a1, b1) = (a.copy_to_device(&devices[1]).unwrap(), b.copy_to_device(&devices[1]).unwrap());
        let run = replicated.execute_sharded_with(&[[&a, &b], [&b1, &a1]], &options).unwrap();
        run.wait().unwrap();
        for outputs in &run.outputs {
            assert_eq!(outputs[0].to_vec::<f32>().unwrap(), [11., 22., 33., 44.], "{name}");
        }
        // One argument list per device, as for execute_sharded.
        let e = replicated.execute_sharded_with(&[[&a, &b]], &options).unwrap_err();
        assert!(matches!(&e, Error::InvalidArgument(m) if m.contains("2 devices")), "{e}");
    }
}
