//! Everything an executable can say about itself, loading serialized executables with options,
//! and execute options (launch id, non-donatable inputs, execute context), on both CPU plugins.
//! Where the 0.106 plugin lacks a feature, the exact error is asserted.

use std::sync::Arc;

use pjrt_client::{
    Client, CompileOptions, DeviceAssignment, Error, ErrorCode, ExecuteContext, ExecuteOptions, LoadOptions,
    LoadedExecutable, LogicalDeviceId, Program,
};

use crate::support;

fn compile(client: &Client, source: &str, options: &CompileOptions) -> LoadedExecutable {
    client.compile(&Program::mlir_text(source).unwrap(), options).unwrap()
}

fn add(client: &Client) -> LoadedExecutable {
    compile(client, support::ADD_F32, &CompileOptions::new())
}

fn assert_unimplemented(result: Result<impl std::fmt::Debug, Error>, function: &str, message: &str) {
    match result {
        Err(Error::Pjrt { function: f, code: ErrorCode::Unimplemented, message: m, .. }) => {
            assert_eq!((f, m.as_str()), (function, message));
        }
        other => panic!("expected UNIMPLEMENTED from {function}, got {other:?}"),
    }
}

#[test]
fn basic_facts() {
    for name in support::PLUGINS {
        let client = support::client(name, 4);
        let exe = add(&client);
        assert_eq!(exe.name(), "add_module");
        assert_eq!((exe.num_replicas(), exe.num_partitions(), exe.num_outputs()), (1, 1, 1));
        assert_eq!(exe.output_shapes()[0].to_string(), "f32[4]");
        assert_eq!(exe.generated_code_size().unwrap(), 0, "{name}: the CPU plugins report no code size");
    }
}

#[test]
fn memory_kinds_exist_on_0_115_and_are_unimplemented_on_0_106() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let exe = add(&client);
        if *name == "cpu" {
            assert_eq!(exe.output_memory_kinds().unwrap(), ["device"]);
            assert_eq!(exe.parameter_memory_kinds().unwrap(), ["device", "device"]);
        } else {
            assert_unimplemented(
                exe.output_memory_kinds(),
                "PJRT_Executable_OutputMemoryKinds",
                "GetOutputMemoryKinds is not supported.",
            );
            assert_unimplemented(
                exe.parameter_memory_kinds(),
                "PJRT_Executable_ParameterMemoryKinds",
                "GetParameterMemoryKinds is not supported.",
            );
        }
    }
}

#[test]
fn cost_analysis_is_unimplemented_on_cpu() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        assert_unimplemented(
            add(&client).cost_analysis(),
            "PJRT_Executable_GetCostAnalysis",
            "GetCostAnalysis is not implemented.",
        );
    }
}

#[test]
fn compiled_memory_stats_have_every_field_both_plugins_write() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let stats = add(&client).compiled_memory_stats().unwrap();
        // Two f32[4] arguments, one f32[4] output, nothing else; both plugins are newer than
        // 0.104, so every field is present.
        assert_eq!(
            (stats.generated_code_size_in_bytes, stats.argument_size_in_bytes, stats.output_size_in_bytes),
            (0, 32, 16),
            "{name}"
        );
        assert_eq!((stats.alias_size_in_bytes, stats.temp_size_in_bytes), (0, 0), "{name}");
        assert_eq!(stats.host_argument_size_in_bytes, Some(0), "{name}");
        assert_eq!(stats.peak_memory_in_bytes, Some(48), "{name}");
        assert_eq!(stats.total_size_in_bytes, Some(0), "{name}");
        assert_eq!(
            (stats.total_allocation_bytes, stats.indefinite_allocations, stats.peak_unpadded_heap_bytes),
            (Some(48), Some(48), Some(48)),
            "{name}"
        );
    }
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

#[test]
fn compile_options_come_back_as_the_plugin_used_them() {
    for name in support::PLUGINS {
        let client = support::client(name, 4);
        let exe = add(&client);
        let bytes = exe.compile_options_bytes().unwrap();
        let options = exe.compile_options().unwrap();
        assert_eq!(options, CompileOptions::from_proto_bytes(&bytes).unwrap());
        assert_eq!((options.num_replicas_requested(), options.num_partitions_requested()), (1, 1));
        // 0.115 fills in the device assignment it chose; 0.106 leaves it out.
        let expected = (*name == "cpu").then(|| DeviceAssignment::new(vec![vec![0]]).unwrap());
        assert_eq!(options.assignment().unwrap(), expected, "{name}");
        // The options reproduce the executable.
        let again = client.compile(&Program::mlir_text(support::ADD_F32).unwrap(), &options).unwrap();
        assert_eq!(again.device_assignment().unwrap(), exe.device_assignment().unwrap());

        let replicated = compile(&client, support::ADD_F32, &CompileOptions::new().num_replicas(2));
        assert_eq!(replicated.compile_options().unwrap().num_replicas_requested(), 2, "{name}");
    }
}

#[test]
fn device_assignment_and_logical_ids() {
    for name in support::PLUGINS {
        let client = support::client(name, 4);
        let exe = add(&client);
        assert_eq!(exe.device_assignment().unwrap(), DeviceAssignment::new(vec![vec![0]]).unwrap(), "{name}");
        assert_eq!(exe.addressable_device_logical_ids().unwrap(), [LogicalDeviceId { replica: 0, partition: 0 }]);

        let replicated = compile(&client, support::ADD_F32, &CompileOptions::new().num_replicas(2));
        assert_eq!(replicated.device_assignment().unwrap(), DeviceAssignment::new(vec![vec![0], vec![1]]).unwrap());
        assert_eq!(
            replicated.addressable_device_logical_ids().unwrap(),
            [LogicalDeviceId { replica: 0, partition: 0 }, LogicalDeviceId { replica: 1, partition: 0 }]
        );

        let on_three = DeviceAssignment::new(vec![vec![3]]).unwrap();
        let placed = compile(&client, support::ADD_F32, &CompileOptions::new().device_assignment(&on_three));
        assert_eq!(placed.device_assignment().unwrap(), on_three, "{name}");
        assert_eq!(placed.addressable_devices()[0].id().unwrap(), 3);
    }
}

#[test]
fn fingerprints_identify_the_compiled_program() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let first = add(&client).fingerprint().unwrap();
        assert!(!first.is_empty() && first.bytes().all(|b| b.is_ascii_digit()), "{name}: {first:?}");
        assert_eq!(add(&client).fingerprint().unwrap(), first, "{name}: same program, same fingerprint");
        let other =
            compile(&client, &support::ADD_F32.replace("stablehlo.add", "stablehlo.subtract"), &CompileOptions::new());
        assert_ne!(other.fingerprint().unwrap(), first, "{name}");
    }
}

#[test]
fn delete_and_is_deleted() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let exe = add(&client);
        assert!(!exe.is_deleted().unwrap());
        exe.delete().unwrap();
        // The 0.106 plugin never reports deletion.
        assert_eq!(exe.is_deleted().unwrap(), *name == "cpu", "{name}");
    }
}

#[test]
fn deserialize_and_load_with_overrides_and_load_options() {
    for name in support::PLUGINS {
        let client = support::client(name, 4);
        let exe = add(&client);
        let serialized = exe.serialize().unwrap();
        let (a, b) =
            (client.upload(&[1f32, 2., 3., 4.], &[4]).unwrap(), client.upload(&[10f32, 20., 30., 40.], &[4]).unwrap());

        let plain = client.deserialize_and_load_with(&serialized, None, None).unwrap();
        assert_eq!(
            plain.execute(&[&a, &b], &ExecuteOptions::new()).unwrap()[0].to_vec::<f32>().unwrap(),
            [11., 22., 33., 44.]
        );

        // Compile-option overrides move the executable to device 2.
        let on_two = DeviceAssignment::new(vec![vec![2]]).unwrap();
        let moved = client
            .deserialize_and_load_with(&serialized, Some(&CompileOptions::new().device_assignment(&on_two)), None)
            .unwrap();
        assert_eq!(moved.device_assignment().unwrap(), on_two, "{name}");
        let device = moved.addressable_devices()[0];
        assert_eq!(device.id().unwrap(), 2);
        let (a2, b2) = (a.copy_to_device(&device).unwrap(), b.copy_to_device(&device).unwrap());
        assert_eq!(
            moved.execute(&[&a2, &b2], &ExecuteOptions::new()).unwrap()[0].to_vec::<f32>().unwrap(),
            [11., 22., 33., 44.]
        );

        // Load options exist from 0.111 on: 0.106 would ignore them, so they are refused.
        for load in [LoadOptions::new(), LoadOptions::new().computation_origin(&[0, 0, 0])] {
            let loaded = client.deserialize_and_load_with(&serialized, None, Some(&load));
            if *name == "cpu" {
                let loaded = loaded.unwrap();
                assert_eq!(
                    loaded.execute(&[&a, &b], &ExecuteOptions::new()).unwrap()[0].to_vec::<f32>().unwrap(),
                    [11., 22., 33., 44.]
                );
            } else {
                match loaded {
                    Err(Error::Unsupported { function, since_minor, plugin_major: 0, plugin_minor: 106 }) => {
                        assert_eq!((function, since_minor), ("PJRT_LoadOptions", 111));
                    }
                    other => panic!("expected Unsupported on 0.106, got {other:?}"),
                }
            }
        }
        assert!(matches!(client.deserialize_and_load_with(&[], None, None), Err(Error::InvalidArgument(_))));
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
        let b = client.upload(&[10f32, 20., 30., 40.], &[4]).unwrap();

        // Plain execute, and execute with default options: the aliased input is consumed.
        for options in [None, Some(ExecuteOptions::new())] {
            let a = client.upload(&[1f32, 2., 3., 4.], &[4]).unwrap();
            let out = match &options {
                None => exe.execute(&[&a, &b], &ExecuteOptions::new()).unwrap(),
                Some(options) => exe.execute(&[&a, &b], options).unwrap(),
            };
            assert_eq!(out[0].to_vec::<f32>().unwrap(), [11., 22., 33., 44.]);
            assert!(a.is_deleted().unwrap(), "{name}: the donated input is gone");
        }

        // Listed as non-donatable: kept, and still readable.
        let a = client.upload(&[1f32, 2., 3., 4.], &[4]).unwrap();
        let keep = ExecuteOptions::new().non_donatable_inputs([0]);
        for _ in 0..2 {
            let out = exe.execute(&[&a, &b], &keep).unwrap();
            assert_eq!(out[0].to_vec::<f32>().unwrap(), [11., 22., 33., 44.]);
        }
        assert!(!a.is_deleted().unwrap(), "{name}");
        assert_eq!(a.to_vec::<f32>().unwrap(), [1., 2., 3., 4.]);

        // An index beyond the arguments is refused before the plugin.
        let e = exe.execute(&[&a, &b], &ExecuteOptions::new().non_donatable_inputs([2])).unwrap_err();
        assert!(matches!(&e, Error::InvalidArgument(m) if m.contains("non-donatable input 2")), "{e}");
    }
}

#[test]
fn launch_id_and_execute_context() {
    for name in support::PLUGINS {
        let client = support::client(name, 2);
        let context = ExecuteContext::new(client.plugin()).unwrap();
        assert!(!context.as_raw().is_null());
        let options = ExecuteOptions::new().launch_id(42).context(&context);
        let (a, b) =
            (client.upload(&[1f32, 2., 3., 4.], &[4]).unwrap(), client.upload(&[10f32, 20., 30., 40.], &[4]).unwrap());

        let exe = add(&client);
        for _ in 0..3 {
            assert_eq!(exe.execute(&[&a, &b], &options).unwrap()[0].to_vec::<f32>().unwrap(), [11., 22., 33., 44.]);
        }

        // Two replicas, sharded: every device gets the options.
        let replicated = compile(&client, support::ADD_F32, &CompileOptions::new().num_replicas(2));
        let devices = replicated.addressable_devices();
        let (a1, b1) = (a.copy_to_device(&devices[1]).unwrap(), b.copy_to_device(&devices[1]).unwrap());
        let run = replicated.execute_sharded(&[[&a, &b], [&b1, &a1]], &options).unwrap();
        for outputs in &run {
            assert_eq!(outputs[0].to_vec::<f32>().unwrap(), [11., 22., 33., 44.]);
        }

        // The executions hold the context: it outlives the caller's handles.
        let weak = {
            let context = ExecuteContext::new(client.plugin()).unwrap();
            let run =
                replicated.execute_sharded_async(&[[&a, &b], [&b1, &a1]], &ExecuteOptions::new().context(&context));
            drop(context);
            run.unwrap()
        };
        weak.wait().unwrap();

        // A context of another plugin is refused.
        let other = support::plugin(if *name == "cpu" { "cpu-0.106" } else { "cpu" });
        let foreign = ExecuteContext::new(&other).unwrap();
        let e = exe.execute(&[&a, &b], &ExecuteOptions::new().context(&foreign)).unwrap_err();
        assert!(matches!(&e, Error::ForeignObject { what: "the execute context", .. }), "{e}");
    }
}

#[test]
fn options_state_is_released_once_every_device_completed() {
    for name in support::PLUGINS {
        let client = support::client(name, 2);
        let replicated = compile(&client, support::ADD_F32, &CompileOptions::new().num_replicas(2));
        let devices = replicated.addressable_devices();
        let a = client.upload(&[1f32, 2., 3., 4.], &[4]).unwrap();
        let a1 = a.copy_to_device(&devices[1]).unwrap();
        let token = Arc::new(());
        let held = token.clone();
        let options = ExecuteOptions::new().on_send(1, move |_| {
            let _ = &held;
            Ok(())
        });
        for _ in 0..5 {
            // Dropped at once: the launch keeps what the plugin was given until it completes.
            drop(replicated.execute_sharded_async(&[[&a, &a], [&a1, &a1]], &options).unwrap());
        }
        let run = replicated.execute_sharded(&[[&a, &a], [&a1, &a1]], &options).unwrap();
        assert_eq!(run[1][0].to_vec::<f32>().unwrap(), [2., 4., 6., 8.]);
        // Once the options are gone and every launch has completed, the closure is freed.
        assert!(Arc::strong_count(&token) >= 2);
        drop(options);
        support::wait_for("the launches to release the callbacks", || Arc::strong_count(&token) == 1);
    }
}
