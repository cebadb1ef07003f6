//! The GPU plugins' create options in `ClientOptions`: what reaches the plugin (the fake records
//! every `PJRT_Client_Create` option), what is refused before it, and the CPU plugins with them.

use pjrt_client::{Client, ClientOptions, Error, ErrorCode, GpuAllocator, Value};

use crate::fake_support::Fake;
use crate::support;

/// Every GPU option, set through its setter, reaches the plugin as one NamedValue of the type
/// XLA's GPU plugin reads (`pjrt_c_api_gpu_internal.cc`), with the value given, in order.
#[test]
fn every_gpu_option_reaches_the_plugin_with_its_type() {
    let fake = Fake::new("working");
    let plugin = fake.plugin();
    let options = ClientOptions::new()
        .platform_name("cuda")
        .allocator(GpuAllocator::CudaAsync)
        .memory_fraction(0.25)
        .preallocate(false)
        .collective_memory_size(64 << 20)
        .visible_devices([3, 0, 1])
        .node_id(1)
        .num_nodes(2)
        .stage_host_to_device_transfers(false)
        .abort_collectives_on_failure(true)
        .use_tfrt_gpu_client(false)
        .enable_mock_nccl(true)
        .mock_gpu_topology(1, 2, 4)
        .partition_index(0);
    let client = Client::new(&plugin, &options).unwrap();
    assert_eq!(
        fake.last_client_create_options(),
        [
            "platform_name=string:cuda",
            "allocator=string:cuda_async",
            "memory_fraction=float:0.25",
            "preallocate=bool:false",
            "collective_memory_size=int64:67108864",
            "visible_devices=int64_list:[3,0,1]",
            "node_id=int64:1",
            "num_nodes=int64:2",
            "should_stage_host_to_device_transfers=bool:false",
            "abort_collectives_on_failure=bool:true",
            "use_tfrt_gpu_client=bool:false",
            "enable_mock_nccl=bool:true",
            "mock_gpu_topology=string:1x2x4",
            "partition_index=int64:0",
        ]
    );
    drop(client);

    // Setting a name again replaces its value (and moves it last); the bounds are inclusive.
    let options = ClientOptions::new().memory_fraction(0.5).allocator(GpuAllocator::Bfc).memory_fraction(1.0);
    let client = Client::new(&plugin, &options).unwrap();
    assert_eq!(fake.last_client_create_options(), ["allocator=string:bfc", "memory_fraction=float:1"]);
    drop(client);

    // Every allocator name, and the same options set by name, encode alike.
    for allocator in GpuAllocator::ALL {
        let by_name = ClientOptions::new().set("allocator", allocator.name());
        let client = Client::new(&plugin, &by_name).unwrap();
        assert_eq!(fake.last_client_create_options(), [format!("allocator=string:{}", allocator.name())]);
        drop(client);
    }
    fake.assert_nothing_leaked();
}

/// Values no GPU plugin could use are refused with InvalidArgument before `PJRT_Client_Create`
/// (the 0.11.2 CUDA plugin checks none of these ranges itself), whether set with a setter or
/// with `set`; each message names the option.
#[test]
fn out_of_range_gpu_options_are_refused_before_the_plugin() {
    let fake = Fake::new("working");
    let plugin = fake.plugin();
    let cases: Vec<(ClientOptions, &str)> = vec![
        (ClientOptions::new().memory_fraction(0.0), "memory_fraction must be in (0, 1], got 0"),
        (ClientOptions::new().memory_fraction(1.01), "memory_fraction must be in (0, 1]"),
        (ClientOptions::new().memory_fraction(-0.5), "memory_fraction must be in (0, 1]"),
        (ClientOptions::new().memory_fraction(f32::NAN), "memory_fraction must be in (0, 1], got NaN"),
        (ClientOptions::new().set("allocator", "malloc"), "allocator `malloc` is not one of default, platform, bfc"),
        (ClientOptions::new().set("allocator", "BFC"), "allocator `BFC`"),
        (ClientOptions::new().collective_memory_size(-1), "collective_memory_size must be >= 0 bytes, got -1"),
        (ClientOptions::new().visible_devices([]), "visible_devices is empty"),
        (ClientOptions::new().visible_devices([0, -1]), "visible_devices: device -1 is not a GPU ordinal"),
        (ClientOptions::new().visible_devices([1 << 40]), "visible_devices: device 1099511627776"),
        (ClientOptions::new().visible_devices([2, 0, 2]), "visible_devices names device 2 twice"),
        (ClientOptions::new().num_nodes(0), "num_nodes must be >= 1, got 0"),
        (ClientOptions::new().node_id(1), "node_id must be in 0..num_nodes (num_nodes 1, the default), got 1"),
        (ClientOptions::new().node_id(2).num_nodes(2), "node_id must be in 0..num_nodes (num_nodes 2), got 2"),
        (ClientOptions::new().node_id(-1).num_nodes(2), "got -1"),
        (ClientOptions::new().mock_gpu_topology(0, 1, 8), "mock_gpu_topology must be `PARTITIONSxHOSTSxDEVICES`"),
        (ClientOptions::new().set("mock_gpu_topology", "2x8"), "got `2x8`"),
        (ClientOptions::new().set("mock_gpu_topology", "1x1x8x1"), "got `1x1x8x1`"),
        (ClientOptions::new().set("mock_gpu_topology", "1 x 1 x 8"), "got `1 x 1 x 8`"),
        (ClientOptions::new().partition_index(-3), "partition_index must be >= 0, got -3"),
    ];
    for (options, expected) in cases {
        match Client::new(&plugin, &options) {
            Err(Error::InvalidArgument(message)) => assert!(message.contains(expected), "{message} / {expected}"),
            other => panic!("{options:?}: expected InvalidArgument, got {other:?}"),
        }
        // The builder checks the same way.
        let built = Client::builder(&plugin).options(options.clone()).build();
        assert!(matches!(built, Err(Error::InvalidArgument(_))), "{options:?}: {built:?}");
    }
    assert_eq!(fake.counter("client_create_calls"), 0);
}

/// A wrong type is refused before the plugin for every GPU name: older GPU plugins read options
/// with `std::get` unchecked, which aborts the process on a wrong type.
#[test]
fn wrongly_typed_gpu_options_are_refused_before_the_plugin() {
    let fake = Fake::new("working");
    let plugin = fake.plugin();
    let wrong: [(&str, Value, &str); 14] = [
        ("platform_name", Value::Int64(1), "string"),
        ("allocator", Value::Bool(true), "string"),
        ("memory_fraction", Value::Int64(1), "float"),
        ("preallocate", Value::Int64(1), "bool"),
        ("collective_memory_size", Value::Float(1.0), "int64"),
        ("visible_devices", Value::Int64(0), "int64 list"),
        ("node_id", Value::String("0".into()), "int64"),
        ("num_nodes", Value::Int64List(vec![2]), "int64"),
        ("should_stage_host_to_device_transfers", Value::Int64(0), "bool"),
        ("abort_collectives_on_failure", Value::String("yes".into()), "bool"),
        ("use_tfrt_gpu_client", Value::Float(0.0), "bool"),
        ("enable_mock_nccl", Value::Int64(1), "bool"),
        ("mock_gpu_topology", Value::Bool(true), "string"),
        ("partition_index", Value::Bool(false), "int64"),
    ];
    for (name, value, expected) in wrong {
        match Client::new(&plugin, &ClientOptions::new().set(name, value.clone())) {
            Err(Error::InvalidArgument(message)) => {
                assert!(message.contains(&format!("client option `{name}` must be of type {expected}")), "{message}")
            }
            other => panic!("{name} = {value:?}: expected InvalidArgument, got {other:?}"),
        }
    }
    assert_eq!(fake.counter("client_create_calls"), 0);
}

/// The CPU plugins with GPU options: the 0.115 plugin refuses the name (INVALID_ARGUMENT from
/// the plugin, not an abort), the 0.106 plugin ignores it; `cpu_device_count` works as before.
#[test]
fn the_cpu_plugins_with_gpu_options() {
    for name in support::PLUGINS {
        let plugin = support::plugin(name);
        let client = Client::new(&plugin, &ClientOptions::new().cpu_device_count(3)).unwrap();
        assert_eq!(client.addressable_devices().len(), 3, "{name}");
        drop(client);
        let gpu = ClientOptions::new().cpu_device_count(2).memory_fraction(0.5);
        match (*name, Client::new(&plugin, &gpu)) {
            ("cpu", Err(Error::Pjrt { function, code: ErrorCode::InvalidArgument, message, .. })) => {
                assert_eq!(function, "PJRT_Client_Create");
                assert_eq!(message, "Unexpected option name passed to PJRT_Client_Create: memory_fraction");
            }
            ("cpu-0.106", Ok(client)) => assert_eq!(client.addressable_devices().len(), 2),
            (_, other) => panic!("{name}: {other:?}"),
        }
        // Out of range: refused by us on either, before the plugin decides anything.
        let bad = ClientOptions::new().cpu_device_count(2).visible_devices([-1]);
        assert!(matches!(Client::new(&plugin, &bad), Err(Error::InvalidArgument(_))), "{name}");
    }
}
