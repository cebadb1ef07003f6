//! The seed's graceful fallbacks on older or partial plugins (XLA's C API client): UNIMPLEMENTED
//! memories mean "no memories", UNIMPLEMENTED dynamic dimensions "not dynamic", an UNIMPLEMENTED
//! (or absent) buffer memory "none", and before 0.48 a memory's kind id is the FarmHash
//! `Fingerprint32` of its kind. Other errors stay errors.

use pjrt_client::{Client, ClientOptions, ErrorCode};

use crate::fake_support::Fake;
use crate::support;

const PARTIAL: &str = "working
unimplemented PJRT_Client_AddressableMemories
unimplemented PJRT_Device_AddressableMemories
unimplemented PJRT_Buffer_DynamicDimensionIndices
unimplemented PJRT_Buffer_Memory
";

#[test]
fn unimplemented_queries_read_as_nothing_to_report() {
    let fake = Fake::with_sidecar("partial", PARTIAL);
    let plugin = fake.plugin();
    {
        let client = Client::new(&plugin, &ClientOptions::new()).unwrap();
        assert!(client.addressable_memories().unwrap().is_empty());
        let device = client.addressable_devices()[0];
        assert!(device.memories().unwrap().is_empty());
        assert!(device.memory_by_kind("device").unwrap().is_none());
        let buffer = client.upload(&[1f32, 2., 3., 4.], &[4]).unwrap();
        assert_eq!(buffer.dynamic_dimension_indices().unwrap(), Vec::<usize>::new());
        assert!(buffer.memory_if_reported().unwrap().is_none());
        // The strict query says why it has no answer.
        let err = buffer.memory().unwrap_err();
        assert_eq!(err.code(), Some(ErrorCode::Unimplemented), "{err}");
    }
    // Every query reached the plugin and met its injected answer.
    assert_eq!(fake.counter("faults_injected"), 6);
    fake.assert_nothing_leaked();
}

#[test]
fn the_same_queries_answer_normally_without_the_faults() {
    let fake = Fake::new("working");
    let plugin = fake.plugin();
    let client = Client::new(&plugin, &ClientOptions::new()).unwrap();
    assert_eq!(client.addressable_memories().unwrap().len(), 3);
    let buffer = client.upload(&[1f32, 2., 3., 4.], &[4]).unwrap();
    let memory = buffer.memory_if_reported().unwrap().expect("the fake reports a buffer's memory");
    assert_eq!(memory, buffer.memory().unwrap());
}

#[test]
fn other_errors_stay_errors_and_no_memory_reads_as_none() {
    let fake = Fake::with_sidecar(
        "failing",
        "working
fail PJRT_Client_AddressableMemories
fail PJRT_Device_AddressableMemories
fail PJRT_Buffer_DynamicDimensionIndices
null_output PJRT_Buffer_Memory
",
    );
    let plugin = fake.plugin();
    {
        let client = Client::new(&plugin, &ClientOptions::new()).unwrap();
        assert_eq!(client.addressable_memories().unwrap_err().code(), Some(ErrorCode::Internal));
        let device = client.addressable_devices()[0];
        assert_eq!(device.memories().unwrap_err().code(), Some(ErrorCode::Internal));
        let buffer = client.upload(&[1f32, 2., 3., 4.], &[4]).unwrap();
        assert_eq!(buffer.dynamic_dimension_indices().unwrap_err().code(), Some(ErrorCode::Internal));
        // A NULL memory without an error: none, as XLA reads it; the strict query refuses it.
        assert!(buffer.memory_if_reported().unwrap().is_none());
        assert!(buffer.memory().is_err());
    }
    fake.assert_nothing_leaked();
}

#[test]
fn kind_ids_before_0_48_are_fingerprints_of_the_kind() {
    // The fake's own kind ids are 0 (device) and 1 (pinned_host): a fingerprint is told apart.
    let fake = Fake::new("minor_47");
    let plugin = fake.plugin();
    let client = Client::new(&plugin, &ClientOptions::new()).unwrap();
    let mut kinds = Vec::new();
    for memory in client.addressable_memories().unwrap() {
        kinds.push((memory.kind().unwrap(), memory.kind_id().unwrap()));
    }
    // tsl::Fingerprint32 of the kinds (as XLA computes them for plugins before 0.48).
    assert!(kinds.contains(&("device".to_owned(), 42097224)), "{kinds:?}");
    assert!(kinds.contains(&("pinned_host".to_owned(), 1756073601)), "{kinds:?}");

    // From 0.48 on, the plugin's own answer.
    let fake = Fake::new("minor_48");
    let plugin = fake.plugin();
    let client = Client::new(&plugin, &ClientOptions::new()).unwrap();
    let ids: Vec<i32> = client.addressable_memories().unwrap().iter().map(|m| m.kind_id().unwrap()).collect();
    assert_eq!(ids, [0, 0, 1]);
}

#[test]
fn the_cpu_plugins_kind_ids_agree_with_the_fallback_fingerprint() {
    // Both CPU plugins have `PJRT_Memory_Kind_Id`; their ids are the same fingerprints, so the
    // fallback gives old plugins the ids new ones report.
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let memories = client.addressable_memories().unwrap();
        assert!(!memories.is_empty(), "{name}");
        for memory in memories {
            let kind = memory.kind().unwrap();
            let expected = match kind.as_str() {
                "device" => 42097224,
                "pinned_host" => 1756073601,
                "unpinned_host" => -272058569,
                other => panic!("{name}: unexpected memory kind {other}"),
            };
            assert_eq!(memory.kind_id().unwrap(), expected, "{name}: {kind}");
        }
        // The real answers of the fallback queries: memories present, no dynamic dimensions, a
        // buffer's memory reported.
        let buffer = client.upload(&[1f32, 2.], &[2]).unwrap();
        assert_eq!(buffer.dynamic_dimension_indices().unwrap(), Vec::<usize>::new(), "{name}");
        assert_eq!(buffer.memory_if_reported().unwrap().unwrap().kind().unwrap(), "device", "{name}");
    }
}

#[test]
fn platform_ids_and_versions_match_the_seed() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        // xla::CpuId() = tsl::Fingerprint64("cpu").
        assert_eq!(client.platform_id(), 0xf88d_a91c_978c_8500, "{name}");
        assert_eq!(client.topology().unwrap().platform_id().unwrap(), client.platform_id(), "{name}");
        assert_eq!(client.xla_platform_version(), format!("PJRT C API\n{}", client.platform_version()), "{name}");
        assert!(!client.platform_version().starts_with("PJRT C API"), "{name}: the plugin's own string");
    }
    let fake = Fake::new("working");
    let client = Client::new(&fake.plugin(), &ClientOptions::new()).unwrap();
    assert_eq!(client.platform_name(), "fake");
    // tsl::Fingerprint64("fake"), computed by Google's FarmHash.
    assert_eq!(client.platform_id(), FAKE_PLATFORM_ID);
    assert_eq!(client.xla_platform_version(), "PJRT C API\nfake 0.1");
}

#[test]
fn the_custom_partitioner_extension_is_reachable() {
    // Neither CPU plugin has one (the real answer).
    for name in support::PLUGINS {
        assert!(support::plugin(name).custom_partitioner_extension().is_none(), "{name}");
    }
    let fake = Fake::new("custom_partitioner");
    let plugin = fake.plugin();
    let ext = plugin.custom_partitioner_extension().expect("the fake lists one");
    assert_eq!(ext.members(), ["register_custom_partitioner", "register_batch_partitionable"]);
    ext.register_batch_partitionable("my_call").unwrap();
    assert_eq!(fake.counter("batch_partitionable_registered"), 1);
    assert!(ext.register_batch_partitionable("").is_err(), "an empty name is refused before the call");
    assert_eq!(fake.counter("batch_partitionable_registered"), 1);

    use std::sync::atomic::{AtomicUsize, Ordering};
    static DTOR_CALLS: AtomicUsize = AtomicUsize::new(0);
    unsafe extern "C" fn dtor(_data: *mut pjrt_client::sys::JAX_CustomCallPartitioner_Callbacks) {
        DTOR_CALLS.fetch_add(1, Ordering::SeqCst);
    }
    let mut callbacks = pjrt_client::sys::JAX_CustomCallPartitioner_Callbacks {
        version: 1,
        private_data: std::ptr::null_mut(),
        dtor: Some(dtor),
        partition: None,
        infer_sharding: None,
        propagate_user_sharding: None,
        can_side_effecting_have_replicated_sharding: false,
    };
    // SAFETY: the fake only calls `dtor`, at once; `callbacks` outlives the call.
    unsafe { ext.register_custom_partitioner("my_partitioner", &mut callbacks) }.unwrap();
    assert_eq!(fake.counter("custom_partitioners_registered"), 1);
    assert_eq!(DTOR_CALLS.load(Ordering::SeqCst), 1, "the plugin took the callbacks over");
    // SAFETY: refused before the plugin sees it.
    assert!(unsafe { ext.register_custom_partitioner("x", std::ptr::null_mut()) }.is_err());
    assert_eq!(fake.counter("custom_partitioners_registered"), 1);
}

/// tsl::Fingerprint64("fake"), computed by Google's FarmHash (the `pyfarmhash` binding).
const FAKE_PLATFORM_ID: u64 = 0xfc4c_84df_cab0_d3a1;
